"""SixtyFour's selection rule (mypyc-compiled; SPEC.md section 4; notation in :mod:`search.mcts`):

    argmax_a  0.5 (q(s') + W(s, a)/N(s, a)) + c · P(s, a) · sqrt(N(s) + 1) / (1 + N(s, a))

with ``q(s')`` the evaluator's value of the child (from s's side), ``c`` = ``sixtyfour_c``,
``fpu`` for an unvisited edge, virtual losses counted as visits of value -1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from mypy_extensions import i64

from search.mcts_config import MCTSConfig
from search.mcts_rules import TreeRule
from search.puct import PUCTParams
from search.mcts_tree import _Tree


@dataclass
class SixtyFourParams:
    """SixtyFour's rule's own settings (its record in :data:`search.parts.PARTS`): its constant.
    What else SixtyFour does is shared: mates scored 1.5 (``TreeParams.mate_value``), decaying prior
    noise (``Exploration.prior_noise``), depth-limited playouts (``Stopping.max_playout_depth``)."""

    sixtyfour_c: float = 0.5


class SixtyFourScore(TreeRule):
    """The rule of the module docstring (every edge scored: no shortcuts)."""

    def __init__(self, cfg: MCTSConfig) -> None:
        super().__init__(cfg)
        self.c = cfg.settings(SixtyFourParams).sixtyfour_c
        self.fpu = cfg.settings(PUCTParams).fpu  # PUCT's first-play urgency (the preset sets 0)

    def select(self, tree: _Tree, node: int) -> int:
        cfg = self.cfg
        nd_n = tree.nd_n
        nd_vl = tree.nd_vl
        nd_w = tree.nd_w
        ed_prior = tree.ed_prior
        ed_child = tree.ed_child
        e0: i64 = tree.nd_edge0[node]
        end: i64 = e0 + tree.nd_nedges[node]
        vl = cfg.batching.virtual_loss
        fpu = self.fpu
        c = self.c * math.sqrt(tree.nd_sum_n[node] + 1.0)
        self.win_e = -1
        self.lose_e = -1
        best = -1e30
        best_e: i64 = -1
        e: i64 = e0
        while e < end:
            child: i64 = ed_child[e]
            if child < 0:
                score = fpu + c * ed_prior[e]
            else:
                if self.solver:
                    decided = self.proven(tree, e, child)
                    if decided == 2:
                        return int(e)
                    if decided == 1:
                        e += 1
                        continue
                inflight = float(nd_vl[child]) * vl
                n = float(nd_n[child]) + inflight
                if n <= 0.0:
                    q = fpu
                else:
                    mean = (nd_w[child] - inflight) / n if self.q_of is None else self.q_of(tree, child, inflight)
                    q = 0.5 * (-tree.nd_value[tree.target(child)] + mean)
                score = q + c * ed_prior[e] / (1.0 + n)
            if score > best:
                best = score
                best_e = e
            e += 1
        return self.fallback(best_e, e0)
