"""Data and networks: Fairy-Stockfish data generation, training per evaluator family, quantisation-aware
training, the teacher's agreement ceiling, model cards, bughouse data and training (the self-play loop that
trains on them is :mod:`experiments.selfplay`)."""
