"""Build: the hot modules are compiled with mypyc in one group unless SEARCHBENCH_PURE=1.

The same .py files stay importable uncompiled; tests run in both modes (see tests/conftest.py).
"""
import os

from setuptools import setup

# Modules compiled together (one shared library, so calls between them are native).
MYPYC_MODULES = [
    "board/bitboards.py",
    "board/moves.py",
    "board/zobrist.py",
    "board/position.py",
    "board/perft.py",
    "board/bughouse.py",
    "evaluators/scale.py",
    "evaluators/leaf.py",
    "evaluators/leafbatch.py",
    "evaluators/classical.py",
    "search/timeman.py",
    "search/checks.py",
    "search/iterative.py",
    "search/ab_config.py",
    "search/ab_order.py",
    "search/ab_quiesce.py",
    "search/ab_report.py",
    "search/alphabeta.py",
    "search/comparator.py",
    "search/ubfm_config.py",
    "search/ubfm_tree.py",
    "search/ubfm_expand.py",
    "search/ubfm.py",
    "search/parts.py",
    "search/mcts_config.py",
    "search/transpositions.py",
    "search/mcts_tree.py",
    "search/mcts_rules.py",
    "search/puct.py",
    "search/sixtyfour.py",
    "search/halving.py",
    "search/gumbel.py",
    "search/mcts_stop.py",
    "search/mcts_explore.py",
    "search/mcgs.py",
    "search/mcts_report.py",
    "search/qtransforms.py",
    "search/walk.py",
    "search/mcts.py",
    "search/two_board_walk.py",
    "search/two_board_rules.py",
    "search/two_board_gumbel.py",
    "search/two_board.py",
]

ext_modules = []
if os.environ.get("SEARCHBENCH_PURE") != "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(MYPYC_MODULES, opt_level="3", debug_level="0", group_name="searchbench_native")

setup(ext_modules=ext_modules)
