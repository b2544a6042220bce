"""DeepChess's modified alpha-beta: alpha and beta are *positions*, ordered by a comparator
(SPEC.md section 4; David, Netanyahu and Wolf 2016; the report in the seeds).

Notation: the search is minimax from **White**'s point of view (the comparator's convention:
``compare(a, b)`` = P(a is better than b for White)).  An *item* is what a subtree returns:

- a position at the depth limit (its raw state), compared to others by the evaluator;
- a finished game: White mated / Black mated after ``p`` plies (below every position / above every
  position; a quicker win and a slower loss are better), or a draw, which is represented by the
  bare-kings position (the canonical dead draw) and compared like a position;
- the sentinels -inf / +inf that start alpha and beta.

``a ≻ b`` (a better than b for White) means ``compare(a, b) > 1/2``; ``a ⪰ b`` means ``>= 1/2``.
At a White (max) node: ``v = child`` if ``child ≻ v``, ``α = v`` if ``v ≻ α``, cut when ``α ⪰ β``;
at a Black (min) node the mirror.  Ties keep the first item (move-ordering order), as alpha-beta.

Iterative deepening to ``Limits.depth`` (default ``ABConfig``-like ``depth`` 3, DeepChess's); every
:meth:`ComparatorAlphaBeta.ask` runs one iteration and returns no leaves (compare is called
synchronously, pairs are memoised within a move).  Moves are ordered previous-PV first, then captures
by MVV-LVA.  Node accounting: ``nodes`` = positions visited; ``evals`` = pairs sent to ``compare``.
The reported value is ``2 P - 1`` (side to move) with P = P(best leaf ≻ draw), ``cp`` its logistic
inverse at 400 cp (the scale alpha-beta uses).  Final move: the first move of the principal
variation of the deepest completed iteration.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from mypy_extensions import i64, mypyc_attr
from librt.vecs import vec

from board.position import END_DRAWN, END_LOST, END_NONE, Position
from board.variants import new_position
from board.variants import CHESS
from evaluators.base import COMPARE, Evaluator, require, value_to_cp
from search.base import Limits, SearchResult, range_error
from search.iterative import Budget, IterativeDeepening

# Item kinds (ordered for the numeric comparisons of non-positions).
NEG_INF: Final = 0
WHITE_MATED: Final = 1
POSITION: Final = 2
BLACK_MATED: Final = 3
POS_INF: Final = 4

DRAW_FEN: Final = "4k3/8/8/8/8/8/8/4K3 w - - 0 1"
_MVV: Final = vec[i64]([0, 1, 3, 3, 5, 9, 20])


class ComparatorConfigError(ValueError):
    """A bad comparator-search setting (one-line message)."""


#: the bounds of every integer field (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {"depth": (1, 32), "default_nodes": (1, 10**9), "time_check_interval": (1, 1 << 20)}


@dataclass
class ComparatorConfig:
    """Settings of :class:`ComparatorAlphaBeta`."""

    depth: int = 3
    default_nodes: int = 1_000_000
    order_captures: bool = True
    time_check_interval: int = 256

    def validate(self) -> None:
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            raise ComparatorConfigError(bad)


class Item:
    """What a subtree returns: a kind, a raw state (positions and draws), plies (mates)."""

    def __init__(self, kind: int, state: tuple[int, ...], plies: int) -> None:
        self.kind = kind
        self.state = state
        self.plies = plies


class _Core(Budget):
    def __init__(self, evaluator: Evaluator, variant: str, cfg: ComparatorConfig) -> None:
        super().__init__(cfg.time_check_interval)
        self.evaluator = evaluator
        self.variant = variant
        self.cfg = cfg
        self.cache: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = {}
        self.seldepth = 0
        self.pos: Position = Position()
        self.draw_state = new_position(variant, DRAW_FEN).raw_state()
        self.pv_moves: list[int] = []
        # the best root move of the running iteration so far (searched completely), its item and line
        self.root_move = 0
        self.root_item: Item | None = None
        self.root_pv: list[int] = []
        self.neg_inf = Item(NEG_INF, (), 0)
        self.pos_inf = Item(POS_INF, (), 0)

    def begin_iteration(self) -> None:
        """Forget the last iteration's best root move (a method: assigned in the caller, mypy would
        keep the attribute narrowed to None across the search)."""
        self.root_move = 0
        self.root_item = None
        self.root_pv = []

    def p_better(self, a: tuple[int, ...], b: tuple[int, ...]) -> float:
        if a == b:
            return 0.5
        key = (a, b)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        self.evals += 1
        p = float(self.evaluator.compare([(a, b)], self.variant)[0])
        self.cache[key] = p
        self.cache[(b, a)] = 1.0 - p
        return p

    def order_key(self, a: Item) -> int:
        """Numeric rank of non-position items: mates by distance (quicker win, slower loss better)."""
        if a.kind == WHITE_MATED:
            return -100000 + a.plies
        if a.kind == BLACK_MATED:
            return 100000 - a.plies
        return 0

    def cmp(self, a: Item, b: Item) -> float:
        """P(a ≻ b) for White: exact 0, 1/2 or 1 unless both are positions."""
        if a.kind == POSITION and b.kind == POSITION:
            return self.p_better(a.state, b.state)
        if a.kind == POSITION:
            return 1.0 if b.kind < POSITION else 0.0
        if b.kind == POSITION:
            return 1.0 if a.kind > POSITION else 0.0
        if a.kind != b.kind:
            return 1.0 if a.kind > b.kind else 0.0
        ka = self.order_key(a)
        kb = self.order_key(b)
        return 1.0 if ka > kb else (0.5 if ka == kb else 0.0)

    def ordered(self, moves: list[int], first: int) -> list[int]:
        if not self.cfg.order_captures:
            if first and first in moves:
                return [first] + [m for m in moves if m != first]
            return moves
        mailbox = self.pos.mailbox
        keys: list[int] = []
        for m in moves:
            if m == first:
                k = 1 << 12
            elif not m >> 15 and mailbox[(m >> 6) & 63]:
                k = 64 + int(_MVV[mailbox[(m >> 6) & 63] & 7]) * 8 - int(_MVV[mailbox[m & 63] & 7])
            elif (m >> 12) & 7:
                k = 63
            else:
                k = 0
            keys.append((k << 18) | m)
        keys.sort(reverse=True)
        return [k & ((1 << 18) - 1) for k in keys]

    def search(self, depth: int, alpha: Item, beta: Item, ply: int, pv: list[int]) -> Item:
        """Returns the item minimax reaches; ``pv`` receives the line to it."""
        pos = self.pos
        self.nodes += 1
        if ply > self.seldepth:
            self.seldepth = ply
        self.check_limits()
        if self.aborted:
            return self.neg_inf
        moves = pos.legal_moves()
        end = pos.search_end(len(moves) > 0, ply > 0)
        if end == END_DRAWN:
            return Item(POSITION, self.draw_state, 0)
        if end != END_NONE:  # the side to move lost (or won): a mate for the comparator's order
            white_lost = (end == END_LOST) == (pos.turn == 0)
            return Item(WHITE_MATED if white_lost else BLACK_MATED, (), ply)
        if depth <= 0:
            return Item(POSITION, pos.raw_state(), 0)
        white = pos.turn == 0
        first = self.pv_moves[ply] if ply < len(self.pv_moves) else 0
        v = self.neg_inf if white else self.pos_inf
        child_pv: list[int] = []
        for m in self.ordered(moves, first):
            child_pv.clear()
            pos.push(m)
            child = self.search(depth - 1, alpha, beta, ply + 1, child_pv)
            pos.pop()
            if self.aborted:
                return self.neg_inf
            if white:
                improved = self.cmp(child, v) > 0.5
            else:
                improved = self.cmp(child, v) < 0.5
            if improved:
                v = child
                pv.clear()
                pv.append(m)
                pv.extend(child_pv)
                if ply == 0:
                    self.root_move = m
                    self.root_item = child
                    self.root_pv = list(pv)
                if white:
                    if self.cmp(v, alpha) > 0.5:
                        alpha = v
                else:
                    if self.cmp(v, beta) < 0.5:
                        beta = v
                if self.cmp(alpha, beta) >= 0.5:
                    break
        return v


@mypyc_attr(allow_interpreted_subclasses=True)
class ComparatorAlphaBeta(IterativeDeepening):
    """Alpha-beta over positions ordered by ``evaluator.compare`` (an evaluator serving ``COMPARE``)."""

    def __init__(self, evaluator: Evaluator, config: ComparatorConfig | None = None) -> None:
        require(evaluator, COMPARE)
        self.evaluator = evaluator
        self.config = config if config is not None else ComparatorConfig()
        self.config.validate()
        self._core = _Core(evaluator, CHESS.name, self.config)
        super().__init__(self._core)
        self._depth = 0
        self._max_depth = self.config.depth
        self._best_move = 0
        self._best_item: Item | None = None
        self._pv: list[int] = []

    def start(self, pos: Position, limits: Limits) -> None:
        require(self.evaluator, COMPARE, pos.variant)
        if self._core.variant != pos.variant:
            self._core = _Core(self.evaluator, pos.variant, self.config)
            self._budget = self._core
        core = self._core
        core.pos = pos
        core.cache = {}
        core.seldepth = 0
        core.pv_moves = []
        moves = pos.legal_moves()
        if not moves:
            raise ComparatorConfigError(f"no legal moves in {pos.fen()}")
        self._max_depth = limits.depth if limits.depth is not None else self.config.depth
        self._t0 = time.perf_counter()
        self._elapsed = 0.0
        core.arm(pos, limits, self.config.default_nodes, self._t0)
        self._depth = 0
        self._best_move = core.ordered(moves, 0)[0]
        self._best_item = None
        self._pv = [self._best_move]
        self._done = False

    def _iterate(self) -> None:
        core = self._core
        depth = self._depth + 1
        pv: list[int] = []
        core.begin_iteration()
        item = core.search(depth, core.neg_inf, core.pos_inf, 0, pv)
        self._elapsed = time.perf_counter() - self._t0
        if core.aborted:
            if core.root_move:  # the unfinished iteration's best completed move
                self._best_move = core.root_move
                self._best_item = core.root_item
                self._pv = list(core.root_pv)
            self._done = True
            return
        self._depth = depth
        self._best_item = item
        if pv:
            self._pv = list(pv)
            self._best_move = pv[0]
            core.pv_moves = list(pv)
        if depth >= self._max_depth or item.kind in (WHITE_MATED, BLACK_MATED):
            self._done = True

    @property
    def best_item(self) -> Item | None:
        """The item (leaf position or finished game) the principal variation ends in."""
        return self._best_item

    def result(self) -> SearchResult:
        core = self._core
        item = self._best_item
        white = core.pos.turn == 0
        value = 0.0
        mate: int | None = None
        cp = 0
        if item is not None:
            if item.kind == POSITION:
                v = 2.0 * core.p_better(item.state, core.draw_state) - 1.0
                value = v if white else -v
                cp = value_to_cp(value, core.pos.variant)
            elif item.kind in (WHITE_MATED, BLACK_MATED):
                we_win = (item.kind == BLACK_MATED) == white
                value = 1.0 if we_win else -1.0
                mate = (item.plies + 1) // 2 if we_win else -(item.plies // 2)
                cp = 30000 - item.plies if we_win else -30000 + item.plies
        return SearchResult(best_move=self._best_move, value=value, cp=cp, mate=mate, nodes=core.nodes,
                            evals=core.evals, time=self._elapsed, depth=self._depth, seldepth=core.seldepth,
                            pv=list(self._pv))
