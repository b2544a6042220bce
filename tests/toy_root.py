"""A root rule with a parameter of its own, from a test file (tests/test_extending.py adds it with
one line in :data:`search.parts.PARTS`): UCB1 at the root (Auer et al. 2002), ``argmax Q(a) +
ucb1_c · sqrt(ln N / N(a))`` after one visit of every move (highest prior first), the most visited
move played.  It explores in self-play by a temperature over the visits (``SELFPLAY``, ``QUIET``)
and plays bughouse through the generic seat (:class:`search.two_board_rules.SeatWrap`) by
selecting within a run of edges."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar

from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_rules import RootRule, TreeRule
from search.mcts_tree import UNKNOWN, _Tree


@dataclass
class UCB1Params:
    ucb1_c: float = 1.4

    def validate(self) -> None:
        if not self.ucb1_c >= 0.0:
            raise MCTSConfigError(f"ucb1_c must be >= 0, got {self.ucb1_c}")


class UCB1Root(RootRule):
    SELFPLAY: ClassVar[dict[str, str | None]] = {"temperature": "1.0", "temperature_moves": "15"}
    QUIET: ClassVar[dict[str, str]] = {"temperature": "0"}
    #: selections made by any instance (the tests check the rule ran)
    selections = 0

    def __init__(self, cfg: MCTSConfig, tree_rule: TreeRule) -> None:
        super().__init__(cfg, tree_rule)
        self.c = cfg.settings(UCB1Params).ucb1_c

    def select(self, tree: _Tree, root: int) -> int:
        e0 = int(tree.nd_edge0[root])
        return self.select_run(tree, root, e0, e0 + int(tree.nd_nedges[root]))

    def select_run(self, tree: _Tree, root: int, lo: int, hi: int) -> int:
        UCB1Root.selections += 1
        best_e, best = int(lo), -math.inf
        total = max(1.0, float(sum(tree.edge_n(e) for e in range(int(lo), int(hi)))))
        for e in range(int(lo), int(hi)):
            child = int(tree.ed_child[e])
            if child >= 0 and tree.nd_proven[tree.target(child)] != UNKNOWN:
                continue  # the solver's verdicts: a decided move needs no more visits
            n = float(tree.edge_n(e))
            score = (1e9 + tree.ed_prior[e]) if n == 0 else tree.edge_q(e) + self.c * math.sqrt(math.log(total) / n)
            if score > best:
                best_e, best = e, score
        return best_e

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        tau = self.cfg.choice.temperature
        if tau > 0.0 and (self.cfg.choice.temperature_moves <= 0 or fullmove <= self.cfg.choice.temperature_moves):
            weights = [float(tree.edge_n(e)) ** (1.0 / tau) + 1e-9 for e in candidates]
            return rng.choices(candidates, weights)[0]
        return max(candidates, key=lambda e: (tree.edge_n(e), tree.ed_prior[e]))
