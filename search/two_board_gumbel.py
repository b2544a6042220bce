"""Gumbel's rules on two boards (mypyc-compiled; notation in :mod:`search.two_board` and
:mod:`search.gumbel`): ``root_rule="gumbel"`` and ``score_formula="gumbel"`` of the two-board search.

- Root (:class:`SeatGumbel`): a simulation starts on our board with probability ``root_own_p`` (1
  when the other board has no edge), else on the other board by the interior rule, as LazyBug's
  root.  On our board Gumbel-Top-k and Sequential Halving (:class:`search.gumbel.SequentialHalving`)
  choose among its moves and its sit, planned over ``root_own_p`` of the root's budget; Q and the
  node's value ``v`` are our team's.  The move played is our board's action with the most visits,
  equals by ``g + l + σ(q̂)``: the sit is one action among the others, chosen when waiting is
  worth the most (LazyBug's ``sit_ratio`` rule is the PUCT root's).
- Interior (:class:`BoardGumbel`): a board with 1/2 (LazyBug's), then Gumbel's deterministic
  ``argmax_a π'(a) − N(a) / (1 + Σ_b N(b))`` over that board's edges, ``π' = softmax(log P +
  σ(completed Q))`` with the board's priors (renormalised per board: they sum to 1) and ``v`` for the
  team moving on that board; leaves in flight count as visits of value -1 (virtual loss).
"""
from __future__ import annotations

import math
import random
from typing import Callable

from mypy_extensions import i64

from board.bughouse import SIT, split_move
from search.gumbel import GumbelTreeRule, SequentialHalving, _Stats
from search.mcts_config import MCTSConfig
from search.mcts_tree import _Tree
from search.two_board_rules import BoardPUCT, SeatRoot, board_range


class BoardGumbel(BoardPUCT):
    """Gumbel's interior rule on the board chosen (module docstring)."""

    def __init__(self, cfg: MCTSConfig, rng: random.Random, cpuct_factor: float) -> None:
        super().__init__(cfg, rng, cpuct_factor)
        self.stats = _Stats()

    def board_select(self, tree: _Tree, node: int, lo: i64, hi: i64) -> int:
        cfg = self.cfg
        vl = cfg.batching.virtual_loss
        sign = 1.0  # the team moving on this board, from an edge's child (none: every σ is equal)
        for e in range(lo, hi):
            child = tree.ed_child[e]
            if child >= 0:
                sign = tree.nd_sign[child]
                break
        st = self.stats
        st.measure_edges(tree, lo, hi, hi, sign * tree.nd_value[node], True, cfg.gumbel_params.c_visit, cfg.gumbel_params.c_scale)
        sigmas = [GumbelTreeRule._sigma_of(tree, e, vl, st) for e in range(lo, hi)]
        top = -math.inf
        for i in range(len(sigmas)):
            if tree.ed_prior[lo + i] > 0.0 and sigmas[i] > top:
                top = sigmas[i]
        if top == -math.inf:
            top = 0.0
        xs = [tree.ed_prior[lo + i] * math.exp(sigmas[i] - top) for i in range(len(sigmas))]
        z = sum(xs)
        inv_z = 1.0 / z if z > 0.0 else 0.0  # no prior mass: the visit term alone decides
        denom = 1.0 + st.sum_n
        best = int(lo)
        best_score = -math.inf
        for i in range(len(xs)):
            n = float(tree.edge_n(int(lo) + i)) + float(tree.edge_vl(int(lo) + i)) * vl
            score = xs[i] * inv_z - n / denom
            if score > best_score:
                best_score = score
                best = int(lo) + i
        return best


class SeatGumbel(SeatRoot):
    """Gumbel at our seat's root (module docstring)."""

    def __init__(self, cfg: MCTSConfig, tree_rule: BoardPUCT, own_board: int, root_own_p: float) -> None:
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
