"""LazyBug's selection on the shared tree (mypyc-compiled; notation in :mod:`search.two_board`):
first a board, then PUCT among that board's edges.

- The board: at the root our own board with probability ``root_own_p`` (0.9), below the root each
  board with 1/2; only a board with edges (a sitting board has none), so with one such board no
  random draw is made.
- The edge: ``argmax_a Q(s, b, a) + cpuct(N(s, b)) · P(s, b, a) · sqrt(max(N(s, b), 1)) / (1 + N(s, b, a))``
  with ``cpuct(N) = cpuct_factor · ln((1 + N + cpuct_base) / cpuct_base) + cpuct_init`` (LazyBug: 1.5,
  19652, 2.0), ``N(s, b) = Σ_a N(s, b, a)`` per board, ``Q = fpu`` while ``N(s, b, a) = 0``; an edge
  with ``k`` leaves in flight counts ``virtual_loss · k`` extra visits of value -1 each.

A node's edges are board A's, then board B's (:class:`search.two_board_walk.TwoBoardWalk`), so a
board's edges are one run.
"""
from __future__ import annotations

import math
import random

from mypy_extensions import i64

from board.bughouse import BOARD_SHIFT
from search.mcts_config import MCTSConfig
from search.mcts_rules import RootRule, TreeRule
from search.mcts_tree import _Tree


def board_split(tree: _Tree, node: int) -> i64:
    """The first of ``node``'s board-B edges (one past its last edge if it has none)."""
    e0: i64 = tree.nd_edge0[node]
    end: i64 = e0 + tree.nd_nedges[node]
    split = e0
    while split < end and (tree.ed_move[split] >> BOARD_SHIFT) == 0:
        split += 1
    return split


def board_range(tree: _Tree, node: int, b: int) -> tuple[i64, i64]:
    """The run of board ``b``'s edges at ``node`` (empty when that board has none)."""
    e0: i64 = tree.nd_edge0[node]
    split = board_split(tree, node)
    return (e0, split) if b == 0 else (split, e0 + tree.nd_nedges[node])


class BoardPUCT(TreeRule):
    """LazyBug's interior rule (module docstring); ``own_board`` and the probability of choosing it
    are the root rule's (:class:`SeatRoot`)."""

    def __init__(self, cfg: MCTSConfig, rng: random.Random, cpuct_factor: float) -> None:
        super().__init__(cfg)
        self.rng = rng
        self.cpuct_factor = cpuct_factor

    def board_edges(self, tree: _Tree, node: int, first: int, p_first: float) -> tuple[i64, i64]:
        """The run of edges of the board chosen at ``node`` (``first`` with probability ``p_first``)."""
        e0: i64 = tree.nd_edge0[node]
        end: i64 = e0 + tree.nd_nedges[node]
        split = board_split(tree, node)
        if split == e0 or split == end:  # one board has edges
            return e0, end
        b = first if self.rng.random() < p_first else 1 - first
        return (e0, split) if b == 0 else (split, end)

    def best_edge(self, tree: _Tree, lo: i64, hi: i64) -> int:
        cfg = self.cfg
        vl = cfg.virtual_loss
        total = 0.0
        for e in range(lo, hi):
            total += tree.edge_n(e) + tree.edge_vl(e) * vl
        c = (self.cpuct_factor * math.log((1.0 + total + cfg.cpuct_base) / cfg.cpuct_base) + cfg.cpuct_init) \
            * math.sqrt(max(total, 1.0))
        best = lo
        best_score = -1e18
        for e in range(lo, hi):
            virtual = tree.edge_vl(e) * vl
            n = tree.edge_n(e) + virtual
            if n <= 0:
                q = cfg.fpu
            elif self.q_of is None:
                q = (tree.edge_w(e) - virtual) / n
            else:
                q = self.q_of(tree, int(tree.ed_child[e]), virtual)
            s = q + c * tree.ed_prior[e] / (1.0 + n)
            if s > best_score:
                best_score = s
                best = e
        return int(best)

    def board_select(self, tree: _Tree, node: int, lo: i64, hi: i64) -> int:
        """The edge among the chosen board's ``lo .. hi - 1`` (PUCT here)."""
        return self.best_edge(tree, lo, hi)

    def select(self, tree: _Tree, node: int) -> int:
        lo, hi = self.board_edges(tree, node, 0, 0.5)
        return self.board_select(tree, node, lo, hi)


class SeatRoot(RootRule):
    """The root's board choice for our seat (our board with ``root_own_p``); the move played is the
    driver's seat rule (:meth:`search.two_board.TwoBoardMCTS.choose_move`)."""

    def __init__(self, cfg: MCTSConfig, tree_rule: BoardPUCT, own_board: int, root_own_p: float) -> None:
        super().__init__(cfg, tree_rule)
        self.board_rule = tree_rule
        self.own_board = own_board
        self.root_own_p = root_own_p
        #: +1 when team 0 moves on our board (the search sets it each move): the root's value is team 0's
        self.own_sign = 1.0

    def select(self, tree: _Tree, root: int) -> int:
        lo, hi = self.board_rule.board_edges(tree, root, self.own_board, self.root_own_p)
        return self.board_rule.board_select(tree, root, lo, hi)

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        best = candidates[0]
        for e in candidates:
            if tree.edge_n(e) > tree.edge_n(best):
                best = e
        return best
