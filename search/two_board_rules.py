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
from dataclasses import dataclass
from typing import Any, Callable, Final

from mypy_extensions import i64

from board.bughouse import BOARD_SHIFT, SIT, split_move
from search import parts
from search.base import range_error
from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_rules import RootRule, TreeRule
from search.mcts_tree import _Tree
from search.puct import PUCTParams

#: the bounds of LazyBug's integer settings (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {"recent_moves": (1, 100), "default_move_ms": (1, 10**7)}

#: where a bughouse config starts (the seat's record in :data:`search.parts.PARTS`): LazyBug's PUCT
#: (cpuct_init 2, no u-divisor, no check enhancement), the switches the two-board walk has not off,
#: and a hard clock (the seat gives a move its time: no overhead, no early or late stops)
LAZYBUG_DEFAULTS: Final[dict[str, Any]] = {
    "cpuct_init": 2.0, "u_divisor": False, "check_enhancement": False, "q_value_selection": False, "q_pv": False,
    "transposition_table": False, "fix_checkmates": False, "solver": False, "stop_single_move": False,
    "time.move_overhead": 0.0, "time.stop_easy": False, "time.extend_critical": False}


def serves_two_boards(score_formula: str) -> bool:
    """Does the tree rule play below a bughouse root: a two-board form in its record, or its own
    selection within a run of edges?"""
    p = parts.part("tree", score_formula)
    return bool(p.two_board) or parts.load(p.impl).select_run is not TreeRule.select_run


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


@dataclass
class LazyBugParams:
    """LazyBug's board choice and seat: the cpuct factor of its PUCT, the root's share of our board,
    when to sit, the moves' clock."""

    cpuct_factor: float = 1.5
    root_own_p: float = 0.9
    sit_ratio: float = 1.4
    recent_moves: int = 5
    default_move_ms: int = 1000
    mate_guard: bool = False

    def validate(self) -> None:
        if not 0.0 <= self.root_own_p <= 1.0:
            raise MCTSConfigError(f"root_own_p must be in [0, 1], got {self.root_own_p}")
        if self.sit_ratio <= 0 or self.cpuct_factor < 0:
            raise MCTSConfigError("sit_ratio must be positive and cpuct_factor >= 0")
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            raise MCTSConfigError(bad)

    def refusal(self, cfg: MCTSConfig) -> str | None:
        """What the config asks that the two-board walk cannot do (each assumes one side to move a
        node, or values that alternate by ply; KataGo's self-play pieces act through
        ``VisitsRoot.select``, which the seat does not call), as one line; None when nothing."""
        ex = cfg.exploration
        pp = cfg.settings(PUCTParams)
        off = [name for name, on in (
            ("solver", cfg.tree.solver), ("fix_checkmates", cfg.tree.fix_checkmates),
            ("transposition_table", cfg.tree.transposition_table),
            ("q_value_selection", cfg.choice.q_value_selection), ("q_pv", cfg.choice.q_pv),
            ("check_enhancement", pp.check_enhancement), ("check_urgency", pp.check_urgency),
            ("epsilon_greedy", ex.epsilon_greedy > 0 or ex.epsilon_checks > 0),
            (f"score_formula={cfg.score_formula}", not serves_two_boards(cfg.score_formula)),
            ("multipv", cfg.choice.multipv != 1),
            ("forced_playouts", ex.forced_playouts > 0), ("policy_target_pruning", ex.policy_target_pruning),
            ("temperature_visits", cfg.choice.temperature_visits)) if on]
        return f"the two-board search has no {', '.join(off)} (leave them at their defaults)" if off else None


class LazyBugPUCT(TreeRule):
    """LazyBug's PUCT over a run of edges (module docstring): its own cpuct formula, per-board visit
    counts, ``1 + N(s, b, a)`` below the prior."""

    def __init__(self, cfg: MCTSConfig, cpuct_factor: float) -> None:
        super().__init__(cfg)
        self.cpuct_factor = cpuct_factor
        self.pp = cfg.settings(PUCTParams)  # LazyBug's cpuct_init, cpuct_base and FPU

    def select_run(self, tree: _Tree, node: int, lo: i64, hi: i64) -> int:
        cfg = self.cfg
        vl = cfg.batching.virtual_loss
        total = 0.0
        for e in range(lo, hi):
            total += tree.edge_n(e) + tree.edge_vl(e) * vl
        pp = self.pp
        c = (self.cpuct_factor * math.log((1.0 + total + pp.cpuct_base) / pp.cpuct_base) + pp.cpuct_init) \
            * math.sqrt(max(total, 1.0))
        best = lo
        best_score = -1e18
        for e in range(lo, hi):
            virtual = tree.edge_vl(e) * vl
            n = tree.edge_n(e) + virtual
            if n <= 0:
                q = pp.fpu
            elif self.q_of is None:
                q = (tree.edge_w(e) - virtual) / n
            else:
                q = self.q_of(tree, int(tree.ed_child[e]), virtual)
            s = q + c * tree.ed_prior[e] / (1.0 + n)
            if s > best_score:
                best_score = s
                best = e
        return int(best)


def lazybug_puct(cfg: MCTSConfig, lazybug: LazyBugParams) -> TreeRule:
    """The run rule ``score_formula="crazyara"`` names on two boards (:data:`search.two_board.BOARD_RULES`)."""
    return LazyBugPUCT(cfg, lazybug.cpuct_factor)


class BoardChoice(TreeRule):
    """LazyBug's board choice wrapped around any rule that selects within a run of edges
    (:meth:`TreeRule.select_run`: LazyBug's PUCT, Gumbel's interior rule): first a board (each with
    1/2 below the root; the root rule, :class:`SeatRoot`, prefers our own), then the rule among that
    board's edges."""

    def __init__(self, cfg: MCTSConfig, rng: random.Random, run: TreeRule) -> None:
        super().__init__(cfg)
        self.rng = rng
        self.run = run

    def board_edges(self, tree: _Tree, node: int, first: int, p_first: float) -> tuple[i64, i64]:
        """The run of edges of the board chosen at ``node`` (``first`` with probability ``p_first``)."""
        e0: i64 = tree.nd_edge0[node]
        end: i64 = e0 + tree.nd_nedges[node]
        split = board_split(tree, node)
        if split == e0 or split == end:  # one board has edges
            return e0, end
        b = first if self.rng.random() < p_first else 1 - first
        return (e0, split) if b == 0 else (split, end)

    def board_select(self, tree: _Tree, node: int, lo: i64, hi: i64) -> int:
        """The edge among the chosen board's ``lo .. hi - 1``: the wrapped rule's."""
        return self.run.select_run(tree, node, lo, hi)

    def select(self, tree: _Tree, node: int) -> int:
        lo, hi = self.board_edges(tree, node, 0, 0.5)
        return self.board_select(tree, node, lo, hi)


class SeatRoot(RootRule):
    """The root's board choice for our seat (our board with ``root_own_p``) and the seat's decision,
    sit or move (:meth:`decide`: LazyBug's rule): the base of the generic seat (:class:`SeatWrap`)
    and of Gumbel's (:class:`search.two_board_gumbel.SeatGumbel`)."""

    def __init__(self, cfg: MCTSConfig, tree_rule: BoardChoice, own_board: int, root_own_p: float) -> None:
        super().__init__(cfg, tree_rule)
        self.board_rule = tree_rule
        self.own_board = own_board
        self.root_own_p = root_own_p
        #: +1 when team 0 moves on our board (the search sets it each move): the root's value is team 0's
        self.own_sign = 1.0

    def select(self, tree: _Tree, root: int) -> int:
        lo, hi = self.board_rule.board_edges(tree, root, self.own_board, self.root_own_p)
        return self.board_rule.board_select(tree, root, lo, hi)

    def decide(self, tree: _Tree, root: int, actions: list[int], own: int, other: int, sit_ratio: float,
               guard: Callable[[int], bool] | None) -> int:
        """The seat's move on our board, or SIT (LazyBug's rule): sit when the other board got more
        than ``sit_ratio`` times our board's visits (``other`` counts our sit's) and sitting is
        allowed, or when our board has no move; else our board's most visited move (ties: the
        higher prior); with a ``guard`` (the mate guard: True when a move lets our board's opponent
        mate at once) the most visited move it passes, if any.  ``actions``: our board's edges."""
        best = -1
        has_sit = False
        moves: list[int] = []
        for e in actions:
            if split_move(int(tree.ed_move[e]))[1] == SIT:
                has_sit = True
                continue
            moves.append(e)
            if best < 0 or (tree.edge_n(e), tree.ed_prior[e]) > (tree.edge_n(best), tree.ed_prior[best]):
                best = e
        if best < 0:
            return SIT
        if has_sit and other > sit_ratio * own:
            return SIT
        move = split_move(int(tree.ed_move[best]))[1]
        if guard is not None and guard(move):
            for e in sorted(moves, key=lambda e: (tree.edge_n(e), tree.ed_prior[e]), reverse=True):
                m = split_move(int(tree.ed_move[e]))[1]
                if not guard(m):
                    return m
        return move

    def action_value(self, tree: _Tree, root: int, bm: int) -> float | None:
        """Our team's value of playing ``bm`` when this rule has one of its own (None: the root's)."""
        return None

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        best = candidates[0]
        for e in candidates:
            if tree.edge_n(e) > tree.edge_n(best):
                best = e
        return best


class SeatWrap(SeatRoot):
    """Any root rule at our seat, the root twin of :class:`BoardChoice` (a root rule whose record in
    :data:`search.parts.PARTS` names no two-board form): a simulation starts on our board with
    ``root_own_p`` (LazyBug's root), where the wrapped rule chooses among that board's edges
    (:meth:`search.mcts_rules.RootRule.select_run`), else on the other board by the interior rule;
    the seat's decision, sit or move, is LazyBug's (:meth:`SeatRoot.decide`)."""

    def __init__(self, cfg: MCTSConfig, tree_rule: BoardChoice, own_board: int, root_own_p: float,
                 inner: RootRule) -> None:
        super().__init__(cfg, tree_rule, own_board, root_own_p)
        self.inner = inner

    def begin(self, tree: _Tree, root: int, budget: int, rng: random.Random) -> None:
        self.inner.fast = self.fast
        self.inner.begin(tree, root, budget, rng)

    def select(self, tree: _Tree, root: int) -> int:
        lo, hi = self.board_rule.board_edges(tree, root, self.own_board, self.root_own_p)
        own_lo, own_hi = board_range(tree, root, self.own_board)
        if lo == own_lo and hi == own_hi:
            return self.inner.select_run(tree, root, lo, hi)
        return self.board_rule.board_select(tree, root, lo, hi)

