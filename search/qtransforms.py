"""Q transforms (mctx's ``qtransforms``), one seam: how a visited edge's backed-up values become the
``Q`` its tree rule reads (mypyc-compiled; notation in :mod:`search.mcts`).

A Q transform is one function ``q(tree, child, inflight) -> float``: ``child`` the node the edge
leads to (its ``W`` in ``tree.nd_w[child]``, from the point of view of the side to move at the
edge's node, or of the edge's team on two boards; its visits in ``tree.nd_n[child]``), ``inflight``
the virtual losses on it (``virtual_loss`` times its leaves in flight, visits of value -1).  A new
one is a function anywhere and a line in :data:`search.mcts_config.Q_TRANSFORMS`; ``MCTSConfig.q_transform`` (an
engine option) picks it by name.  The rules that read it: CrazyAra's PUCT (:mod:`search.puct`),
SixtyFour's score (the edge's half of it, :mod:`search.sixtyfour`) and LazyBug's two-board PUCT
(:mod:`search.two_board_rules`), in both games.  Unvisited edges keep their first-play urgency
(``fpu``, ``check_q_init``); Gumbel's completed Q (mixed-value completion), Q with principal
variation and the final policy's Q are their own rules' (their settings say how).

"mean", the default, is ``(W - inflight) / (N + inflight)``: the rules compute it inline (no call
per edge), and :func:`mean` is the same arithmetic as a function (a test checks a search through it
is the same search).
"""
from __future__ import annotations

from typing import Callable

from search.mcts_tree import _Tree

#: the signature of a Q transform
QTransform = Callable[[_Tree, int, float], float]


def mean(tree: _Tree, child: int, inflight: float) -> float:
    """The mean value with virtual losses: ``(W - inflight) / (N + inflight)``."""
    return (tree.nd_w[child] - inflight) / (float(tree.nd_n[child]) + inflight)
