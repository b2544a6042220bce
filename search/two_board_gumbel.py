"""Gumbel's rules on two boards (mypyc-compiled; notation in :mod:`search.two_board` and
:mod:`search.gumbel`): ``root_rule="gumbel"`` and ``score_formula="gumbel"`` of the two-board search.

- Root (:class:`SeatGumbel`): a simulation starts on our board with probability ``root_own_p`` (1
  when the other board has no edge), else on the other board by the interior rule, as LazyBug's
  root.  On our board Gumbel-Top-k and Sequential Halving (:class:`search.gumbel.SequentialHalving`)
  choose among its moves and its sit, planned over ``root_own_p`` of the root's budget; Q and the
  node's value ``v`` are our team's.  The move played is our board's action with the most visits,
  equals by ``g + l + σ(q̂)``: the sit is one action among the others, chosen when waiting is
  worth the most (LazyBug's ``sit_ratio`` rule is the PUCT root's).
- Interior (:func:`gumbel_run` in :class:`~search.two_board_rules.BoardChoice`): a board with 1/2
  (LazyBug's), then Gumbel's own interior rule (:meth:`search.gumbel.GumbelTreeRule.select_run`), deterministic
  ``argmax_a π'(a) − N(a) / (1 + Σ_b N(b))`` over that board's edges, ``π' = softmax(log P +
  σ(completed Q))`` with the board's priors (renormalised per board: they sum to 1) and ``v`` for the
  team moving on that board; leaves in flight count as visits of value -1 (virtual loss).
"""
from __future__ import annotations

import random
from typing import Callable


from board.bughouse import SIT, split_move
from search.gumbel import GumbelTreeRule, SequentialHalving
from search.mcts_config import MCTSConfig
from search.mcts_tree import _Tree
from search.mcts_rules import TreeRule
from search.two_board_rules import BoardChoice, LazyBugParams, SeatRoot, board_range


def gumbel_run(cfg: MCTSConfig, lazybug: LazyBugParams) -> TreeRule:
    """The run rule ``score_formula="gumbel"`` names on two boards: Gumbel's own interior rule, over
    the chosen board's edges (:meth:`search.gumbel.GumbelTreeRule.select_run`)."""
    return GumbelTreeRule(cfg)


class SeatGumbel(SeatRoot):
    """Gumbel at our seat's root (module docstring)."""

    def __init__(self, cfg: MCTSConfig, tree_rule: BoardChoice, own_board: int, root_own_p: float) -> None:
        super().__init__(cfg, tree_rule, own_board, root_own_p)
        self.halving = SequentialHalving(cfg, tree_rule)

    def begin(self, tree: _Tree, root: int, budget: int, rng: random.Random) -> None:
        lo, hi = board_range(tree, root, self.own_board)
        both = hi - lo < tree.nd_nedges[root]
        share = max(1, int(round(budget * self.root_own_p))) if both else budget
        self.halving.begin_edges(tree, int(lo), int(hi - lo), self.own_sign, share, rng)

    def select(self, tree: _Tree, root: int) -> int:
        lo, hi = self.board_rule.board_edges(tree, root, self.own_board, self.root_own_p)
        h = self.halving
        if lo == h.lo and hi == h.lo + h.k:
            return h.select(tree, root)
        return self.board_rule.board_select(tree, root, lo, hi)

    def decide(self, tree: _Tree, root: int, actions: list[int], own: int, other: int, sit_ratio: float,
               guard: Callable[[int], bool] | None) -> int:
        """Gumbel's move on our board (or SIT): the action with the most visits, equals by ``g + l +
        σ(q̂)``; with a ``guard`` (the mate guard) the first in that order it passes, if any."""
        if not actions:
            return SIT
        ranked = [split_move(int(tree.ed_move[e]))[1] for e in self.ranked(tree, root, actions)]
        if guard is not None:
            for m in ranked:
                if m == SIT or not guard(m):
                    return m
        return ranked[0]

    def action_value(self, tree: _Tree, root: int, bm: int) -> float | None:
        """The Q of our board's action ``bm`` once visited (Gumbel's plan spreads the visits over the
        actions considered, so the root's mean is not the move's)."""
        e0 = int(tree.nd_edge0[root])
        for e in range(e0, e0 + int(tree.nd_nedges[root])):
            if tree.ed_move[e] == bm and tree.edge_n(e) > 0:
                return tree.edge_q(e)
        return None

    def ranked(self, tree: _Tree, root: int, edges: list[int]) -> list[int]:
        """Our board's ``edges`` best first: by visits, equals by ``g + l + σ(q̂)``."""
        return self.halving.ranked(tree, root, edges)

    def target(self, tree: _Tree, root: int) -> list[float]:
        """The improved policy over our board's actions (0 for the other board's edges)."""
        e0 = int(tree.nd_edge0[root])
        out = [0.0] * int(tree.nd_nedges[root])
        h = self.halving
        for i, p in enumerate(h.target(tree, root)):
            out[int(h.lo) - e0 + i] = p
        return out
