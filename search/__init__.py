"""Searches: PUCT MCTS with CrazyAra's modifications, alpha-beta, DeepChess comparator alpha-beta."""
import board  # noqa: F401  (first: installs the pure-Python import hook when SEARCHBENCH_PURE=1)

# isort: split
from search.ab_config import ABConfig
from search.alphabeta import AlphaBeta
from search.base import Limits, Search, SearchResult
from search.comparator import ComparatorAlphaBeta, ComparatorConfig
from search.mcts import MCTS, MCTSConfig
from search.timeman import TimeConfig

__all__ = ["ABConfig", "AlphaBeta", "ComparatorAlphaBeta", "ComparatorConfig", "Limits", "MCTS", "MCTSConfig",
           "Search", "SearchResult", "TimeConfig"]
