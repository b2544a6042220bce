"""The self-play loop (``searchbench rl``), one board or bughouse: arms, control arm, gates, state,
rating and report (:mod:`.loop`), and the self-play games and targets it trains on."""
