"""A Q transform with a parameter of its own, from a test file (tests/test_extending.py adds it with
one line in :data:`search.parts.PARTS`): the mean shrunk toward 0 by ``N / (N + q_shrink)``, a
visited edge trusted in proportion to its visits.  Its settings class makes ``q_shrink`` an engine
option; the factory gets them once per search (mctx's partials)."""
from __future__ import annotations

from dataclasses import dataclass

from search.mcts_config import MCTSConfigError
from search.mcts_tree import _Tree
from search.qtransforms import QTransform


@dataclass
class ShrinkParams:
    q_shrink: float = 0.0  # 0: the mean itself

    def validate(self) -> None:
        if not self.q_shrink >= 0.0:
            raise MCTSConfigError(f"q_shrink must be >= 0, got {self.q_shrink}")


def shrunk(p: ShrinkParams) -> QTransform:
    k = p.q_shrink

    def q(tree: _Tree, child: int, inflight: float) -> float:
        n = float(tree.nd_n[child]) + inflight
        return (tree.nd_w[child] - inflight) / (n + k)  # the mean times n / (n + k)

    return q
