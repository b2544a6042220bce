"""Data and networks: Fairy-Stockfish data generation, training per evaluator family, the teacher's
agreement ceiling, model cards, bughouse data and training."""
