"""Searches that left the suite, kept as test oracles: the tests play the live searches against
them, and their stored games replay from a checkout (README, "Old bughouse games")."""
