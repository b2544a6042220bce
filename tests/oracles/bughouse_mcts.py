"""LazyBug-style bughouse MCTS: one tree over both boards, the "sit" move, simulated clocks.

Notation (as search/mcts.py and minigo; SPEC.md section 4, "Bughouse MCTS (LazyBug)")
----------------------------------------------------------------------------------
A node ``s`` is a two-board position (both boards, all pockets, the four seats' simulated clocks,
and which board, if any, is *sitting*). Both boards always have a side to move; an edge ``(s, b, a)``
is a move ``a`` on board ``b`` (a legal move, or ``sit``: board b's side to move waits).

- Teams, seats, boards as :mod:`board.bughouse` (team = ``board_id ^ color``). Values are **team
  values**: ``W(s, b, a)`` sums the backed-up values from the point of view of the team that moves
  on board ``b`` at ``s``; ``Q(s, b, a) = W / N``, ``Q = fpu`` (-1, LazyBug) while ``N(s, b, a) = 0``.
- ``N(s, b) = Σ_a N(s, b, a)`` per board (virtual visits included), ``P(s, b, a)`` the evaluator's
  prior (a distribution per board, see :mod:`evaluators.bughouse_classical`).
- Selection at ``s``: first the board. At the root our own board with probability ``root_own_p``
  (0.9), below the root each board with 1/2; only boards with edges, and only board ``1 - b``
  while board ``b`` sits. Then ``argmax_a Q(s, b, a) + U(s, b, a)`` with
  ``U = cpuct(N(s, b)) · P(s, b, a) · sqrt(max(N(s, b), 1)) / (1 + N(s, b, a))`` and
  ``cpuct(N) = 1.5 · ln((1 + N + 19652) / 19652) + 2.0`` (LazyBug).
- Virtual loss: an edge with ``k`` leaves in flight below it counts ``virtual_loss · k`` extra
  visits of value -1 each, so the leaves of one batch spread out.
- Leaf value: the evaluator's team value (mean of the two boards' values); terminal nodes get the
  exact +-1 (real checkmate, simulated flag) or 0 (blocked, untimed).
- ``sit`` on board ``b`` (prior 0.01 from the evaluator) leads to the same position with board ``b``
  sitting: only board ``1 - b`` moves there, and the sit edge's Q becomes the value of the best
  move on the other board (LazyBug: "valued as the best move on the other board"). It is allowed when
  the partner is to move on the other board and is not sitting, or when waiting wins on time (the
  other board's mover is an opponent with less simulated time than ours); in both cases the other
  board must have a legal move. A move on the other board ends the sit.
- Clocks (timed games): each seat's clock in ms is an input of every node. Simulating a move by
  seat ``x`` takes ``dt(x)`` = the average of ``x``'s last 5 move times (``default_move_ms`` before
  any): ``x``'s clock loses ``dt`` and gains the increment, and the clock of the side to move on
  the other board runs for the same ``dt``. A clock at or below 0 is a flag: a terminal loss.

The final-move rule is :meth:`BughouseMCTS.choose_move` (the only place it is decided): sit when the
other board got more than ``sit_ratio`` (1.4) times our board's visits (the visits through our
sit edge count for the other board) and sitting is allowed, or when our board has no legal move;
else our board's most visited move (ties: higher prior); with ``mate_guard`` the most visited one
after which our board's opponent cannot mate at once (root pockets), if any (the report's mate table).

Limits in :mod:`search.base`'s units: ``nodes`` = the root's visits, reused ones included (lc0's
visits), ``playouts`` = new simulations (leaves backed up, terminals included), ``evals`` = leaves sent
to the evaluator (in flight included); nothing set: ``default_nodes`` root visits. The result's
``nodes`` are the new simulations (the move's cost). No transposition table (a two-board key with
clocks and sit state rarely repeats within one search).

Tree reuse (``reuse_tree``, on by default): :meth:`BughouseMCTS.start` keeps the subtree of the
previous search when the new game continues the previous one (same start, the previous moves
are a prefix of the new ones, same board searched, no leaves in flight): it follows the edges of
the moves made since (on either board, in play order) and, if they all lead to expanded nodes,
that node becomes the root (through the partner board's sit edge when the partner now sits).
Its visits and values are kept; the new root gets the real clocks, the nodes below keep the
clocks simulated when they were made.

The same rules run on the shared MCTS driver and tree in :mod:`search.two_board` (``two-board-mcts``,
the suite's bughouse search).  This tree of its own left ``search/`` (issue 55) and stays here as a
test oracle (the tests play the live search against it) and for the games stored with it (search
``bughouse-mcts``), which replay with it from a checkout (README, "Old bughouse games").
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Final, Sequence

from board.bughouse import (
    SIT, BughouseBoard, BughouseGame, leaf_state, recent_move_ms, sit_move, split_move, team_of, two_board_move,
)
from board.variants import BUGHOUSE
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, Leaf, require
from search.base import range_error, step
from search.two_board import BughouseLimits, BughouseResult
from search.two_board_walk import clocks_after, game_over_value, sit_allowed, stuck_value

NEW: Final = 0
PENDING: Final = 1
EXPANDED: Final = 2
TERMINAL: Final = 3


class BughouseSearchError(ValueError):
    """A bad bughouse search setting or call (one-line message)."""


#: the bounds of every integer field (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {"virtual_loss": (0, 100), "batch_size": (1, 4096), "recent_moves": (1, 100),
                      "default_move_ms": (1, 10**7), "default_nodes": (1, 10**9)}


@dataclass
class BughouseMCTSConfig:
    """LazyBug's parameters (SPEC.md section 4)."""

    cpuct_init: float = 2.0
    cpuct_factor: float = 1.5
    cpuct_base: float = 19652.0
    fpu: float = -1.0
    virtual_loss: int = 3
    batch_size: int = 8
    root_own_p: float = 0.9
    sit_ratio: float = 1.4
    recent_moves: int = 5
    default_move_ms: int = 1000
    default_nodes: int = 800
    reuse_tree: bool = True
    mate_guard: bool = False

    def validate(self) -> None:
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            raise BughouseSearchError(bad)
        if not 0.0 <= self.root_own_p <= 1.0:
            raise BughouseSearchError(f"root_own_p must be in [0, 1], got {self.root_own_p}")
        if self.batch_size < 1 or self.virtual_loss < 0 or self.recent_moves < 1:
            raise BughouseSearchError("batch_size and recent_moves must be >= 1, virtual_loss >= 0")
        if self.sit_ratio <= 0 or self.cpuct_base <= 0 or self.default_nodes < 1:
            raise BughouseSearchError("sit_ratio, cpuct_base and default_nodes must be positive")


def cpuct(cfg: BughouseMCTSConfig, n: float) -> float:
    return cfg.cpuct_factor * math.log((1.0 + n + cfg.cpuct_base) / cfg.cpuct_base) + cfg.cpuct_init


class _Node:
    """A two-board node: per board its edges (moves, priors, N, W, virtual loss, children)."""

    __slots__ = ("state", "value", "moves", "priors", "n", "w", "vl", "children", "sit_board", "clocks",
                 "movers")

    def __init__(self, sit_board: int, clocks: list[int] | None) -> None:
        self.state = NEW
        self.value = 0.0            # team-0 value (evaluator's or exact)
        self.moves: list[list[int]] = [[], []]
        self.priors: list[list[float]] = [[], []]
        self.n: list[list[int]] = [[], []]
        self.w: list[list[float]] = [[], []]
        self.vl: list[list[int]] = [[], []]
        self.children: list[list[_Node | None]] = [[], []]
        self.sit_board = sit_board
        self.clocks = clocks
        self.movers = (0, 0)        # team of the side to move on each board

    def board_visits(self, b: int) -> int:
        return sum(self.n[b])


class BughouseMCTS:
    """LazyBug-style MCTS for one seat, ask/tell-steppable like :class:`search.base.Search`."""

    def __init__(self, evaluator: Evaluator, config: BughouseMCTSConfig | None = None,
                 rng: random.Random | None = None) -> None:
        require(evaluator, POLICY_VALUE, BUGHOUSE.name)
        self.evaluator = evaluator
        self.config = config or BughouseMCTSConfig()
        self.config.validate()
        self.rng = rng if rng is not None else random.Random(0)
        self.game: BughouseGame | None = None
        self.root: _Node | None = None
        self.own_board = 0
        self._pending: list[tuple[_Node, list[tuple[_Node, int, int]], list[int]]] = []
        self._stopped = False
        self._nodes = 0
        self._evals = 0
        self.reused_visits = 0  # root visits kept from the previous search (tree reuse)

    # ------------------------------------------------------------------ setup

    def start(self, game: BughouseGame, board_id: int, limits: BughouseLimits | None = None,
              at_ms: int = -1, partner_sitting: bool = False,
              move_ms: Sequence[Sequence[int]] | None = None) -> None:
        """Search for the side to move on ``board_id`` of ``game`` (a private copy is taken).
        ``at_ms``: the game time now (clocks of the sides to move are counted up to it);
        ``partner_sitting``: our partner has declared a sit; ``move_ms``: recent thinking times per
        seat (default: from the game's move times)."""
        if board_id not in (0, 1):
            raise BughouseSearchError(f"board_id must be 0 or 1, got {board_id}")
        partner_board = 1 - board_id
        own_team = team_of(board_id, game.boards[board_id].turn)
        sit_board = partner_board if (partner_sitting and
                                      team_of(partner_board, game.boards[partner_board].turn) == own_team) else -1
        reused = self._reusable(game, board_id, sit_board) if self.config.reuse_tree else None
        self.reused_visits = 0 if reused is None else reused.board_visits(0) + reused.board_visits(1)
        self.game = game.copy()
        self.own_board = board_id
        self.limits = limits or BughouseLimits()
        self._t0 = time.perf_counter()
        self._nodes = 0
        self._evals = 0
        self._stopped = False
        self._pending = []
        times = move_ms if move_ms is not None else recent_move_ms(game, self.config.recent_moves)
        self._dt = [self._avg(times[s]) for s in range(4)]
        clocks = [game.time_left(s, at_ms) for s in range(4)] if game.timed else None
        if reused is not None:
            reused.clocks = clocks
            self.root = reused
        else:
            self.root = _Node(sit_board, clocks)

    def _reusable(self, game: BughouseGame, board_id: int, sit_board: int) -> _Node | None:
        """The node of the previous search's tree at ``game``'s position, or None (module docstring)."""
        old_game = self.game
        node = self.root
        if (old_game is None or node is None or self._pending or board_id != self.own_board
                or old_game.root_fen != game.root_fen or old_game.base_ms != game.base_ms
                or old_game.inc_ms != game.inc_ms):
            return None
        old_moves = old_game.move_stack
        new_moves = game.move_stack
        if len(new_moves) < len(old_moves) or new_moves[:len(old_moves)] != old_moves:
            return None
        for b, m in new_moves[len(old_moves):]:
            node = self._child_of(node, b, m)
            if node is None:
                return None
        if node.sit_board != sit_board:
            if node.sit_board >= 0 or sit_board < 0:
                return None
            node = self._child_of(node, sit_board, SIT)
            if node is None or node.sit_board != sit_board:
                return None
        return node if node.state == EXPANDED else None

    @staticmethod
    def _child_of(node: _Node, b: int, m: int) -> _Node | None:
        if node.state != EXPANDED:
            return None
        for i, mv in enumerate(node.moves[b]):
            if mv == m:
                return node.children[b][i]
        return None

    def _avg(self, times: Sequence[int]) -> int:
        recent = list(times)[-self.config.recent_moves:]
        return max(1, sum(recent) // len(recent)) if recent else self.config.default_move_ms

    # ------------------------------------------------------------------ ask / tell

    def ask(self) -> list[Leaf]:
        """Up to ``batch_size`` leaves (terminals are backed up at once and not returned)."""
        if self.root is None:
            raise BughouseSearchError("ask() before start()")
        leaves: list[Leaf] = []
        if self.root.state == NEW:
            self.root.state = PENDING
            root_leaf = self._leaf(self.root)
            self._pending.append((self.root, [], root_leaf.moves))
            return [root_leaf]
        for _ in range(self.config.batch_size):
            if self._limit_reached() or self._nothing_to_choose():
                break
            leaf = self._collect()
            if leaf is None:
                if self._stuck:  # the walk met a leaf in flight: evaluate the batch first
                    break
                continue
            leaves.append(leaf)
        return leaves

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        if len(evaluations) != len(self._pending):
            raise BughouseSearchError(f"tell() got {len(evaluations)} evaluations for {len(self._pending)} leaves")
        for (node, path, leaf_moves), ev in zip(self._pending, evaluations):
            self._expand(node, leaf_moves, ev)
            self._remove_virtual_loss(path)
            self._backup(path, node.value)
            self._evals += 1
        self._pending = []
        self._check_done()

    def done(self) -> bool:
        return self._check_done()

    def stop(self) -> None:
        self._stopped = True

    def run(self, game: BughouseGame, board_id: int, limits: BughouseLimits | None = None, **kw: object) -> BughouseResult:
        self.start(game, board_id, limits, **kw)  # type: ignore[arg-type]
        while not self.done():
            step(self, self.evaluator)
        return self.result()

    def _check_done(self) -> bool:
        if self._pending:
            return False
        if self._stopped:
            return True
        root = self.root
        if root is None:
            return True
        if root.state == TERMINAL:
            return True
        if root.state != EXPANDED:
            return False
        return self._nothing_to_choose() or self._limit_reached()

    def _nothing_to_choose(self) -> bool:
        root = self.root
        if root is None or root.state == TERMINAL:
            return True
        return root.state == EXPANDED and (not root.moves[self.own_board] or root.moves[self.own_board] == [SIT])

    def _limit_reached(self) -> bool:
        """A limit is reached (leaves in flight count as simulations)."""
        lim = self.limits
        nodes = lim.nodes
        if nodes is None and lim.playouts is None and lim.evals is None and lim.movetime is None:
            nodes = self.config.default_nodes
        return (self._stopped or (nodes is not None and self.reused_visits + self._nodes >= nodes)
                or (lim.playouts is not None and self._nodes >= lim.playouts)
                or (lim.evals is not None and self._evals + len(self._pending) >= lim.evals)
                or (lim.movetime is not None and time.perf_counter() - self._t0 >= lim.movetime))

    # ------------------------------------------------------------------ tree walk

    _stuck = False

    def _choose_board(self, node: _Node, is_root: bool) -> int:
        usable = [b for b in (0, 1) if node.moves[b] and node.sit_board != b]
        if not usable:
            return -1
        if len(usable) == 1:
            return usable[0]
        p_own = self.config.root_own_p if is_root else 0.5
        first = self.own_board if is_root else 0
        return first if self.rng.random() < p_own else 1 - first

    def _select(self, node: _Node, b: int) -> int:
        cfg = self.config
        ns = node.n[b]
        vls = node.vl[b]
        total = 0
        for i in range(len(ns)):
            total += ns[i] + vls[i] * cfg.virtual_loss
        c = cpuct(cfg, total) * math.sqrt(max(total, 1))
        best = -1
        best_score = -1e18
        for i in range(len(ns)):
            n = ns[i] + vls[i] * cfg.virtual_loss
            q = (node.w[b][i] - vls[i] * cfg.virtual_loss) / n if n > 0 else cfg.fpu
            s = q + c * node.priors[b][i] / (1.0 + n)
            if s > best_score:
                best_score = s
                best = i
        return best

    def _collect(self) -> Leaf | None:
        """Walk from the root to a new node, making the moves on the private game; None when the
        walk ends in a terminal (backed up now) or in a node already in flight."""
        game = self.game
        assert game is not None and self.root is not None
        node = self.root
        path: list[tuple[_Node, int, int]] = []
        moves: list[tuple[int, int]] = []
        self._stuck = False
        try:
            while True:
                if node.state == TERMINAL:
                    self._backup(path, node.value)
                    self._nodes += 1
                    return None
                if node.state == PENDING:
                    self._stuck = True
                    return None
                if node.state == NEW:
                    node.state = PENDING
                    if self._terminal(node):
                        node.state = TERMINAL
                        self._backup(path, node.value)
                        self._nodes += 1
                        return None
                    for parent, b, i in path:
                        parent.vl[b][i] += 1
                    leaf = self._leaf(node)
                    self._pending.append((node, list(path), leaf.moves))
                    self._nodes += 1
                    return leaf
                b = self._choose_board(node, not path)
                if b < 0:  # no board can move (both stuck): decided by the clocks, else a draw
                    node.state = TERMINAL
                    node.value = self._stuck_value(node)
                    continue
                i = self._select(node, b)
                child = node.children[b][i]
                m = node.moves[b][i]
                if child is None:
                    child = self._make_child(node, b, m)
                    node.children[b][i] = child
                path.append((node, b, i))
                if m != SIT:
                    game.push(b, m)
                    moves.append((b, m))
                node = child
        finally:
            for _ in moves:
                game.pop()

    def _make_child(self, node: _Node, b: int, m: int) -> _Node:
        game = self.game
        assert game is not None
        if m == SIT:
            return _Node(b, None if node.clocks is None else list(node.clocks))
        return _Node(-1, None if node.clocks is None else clocks_after(game, b, node.clocks, self._dt))

    def _terminal(self, node: _Node) -> bool:
        """Set ``node.value`` (team 0) and return True if the game is over at ``node``."""
        assert self.game is not None
        value = game_over_value(self.game, node.clocks)
        if value is None:
            return False
        node.value = value
        return True

    def _stuck_value(self, node: _Node) -> float:
        assert self.game is not None
        return stuck_value(self.game, node.clocks)

    def _sit_allowed(self, node: _Node, b: int) -> bool:
        """May board ``b``'s side to move sit at ``node`` (position of the private game)?"""
        assert self.game is not None
        return sit_allowed(self.game, b, node.sit_board, node.clocks)

    def _leaf(self, node: _Node) -> Leaf:
        game = self.game
        assert game is not None
        moves: list[int] = []
        for b in (0, 1):
            if node.sit_board == b:
                continue
            for m in game.boards[b].legal_moves():
                moves.append(two_board_move(b, m))
            if self._sit_allowed(node, b):
                moves.append(sit_move(b))
        node.movers = (team_of(0, game.boards[0].turn), team_of(1, game.boards[1].turn))
        clocks = node.clocks if node.clocks is not None else [-1, -1, -1, -1]
        return Leaf(leaf_state(game, self.own_board, clocks), moves, BUGHOUSE.name)

    def _expand(self, node: _Node, leaf_moves: list[int], ev: Evaluation) -> None:
        if len(ev.priors) != len(leaf_moves):
            raise BughouseSearchError(f"evaluator gave {len(ev.priors)} priors for {len(leaf_moves)} moves")
        for bm, p in zip(leaf_moves, ev.priors):
            b, m = split_move(bm)
            node.moves[b].append(m)
            node.priors[b].append(p)
            node.n[b].append(0)
            node.w[b].append(0.0)
            node.vl[b].append(0)
            node.children[b].append(None)
        for b in (0, 1):  # renormalise each board's priors
            tot = sum(node.priors[b])
            if tot > 0:
                node.priors[b] = [p / tot for p in node.priors[b]]
        focus_team = node.movers[self.own_board]
        node.value = ev.value if focus_team == 0 else -ev.value
        node.state = EXPANDED

    def _remove_virtual_loss(self, path: list[tuple[_Node, int, int]]) -> None:
        for parent, b, i in path:
            parent.vl[b][i] -= 1

    def _backup(self, path: list[tuple[_Node, int, int]], value0: float) -> None:
        for parent, b, i in path:
            parent.n[b][i] += 1
            parent.w[b][i] += value0 if parent.movers[b] == 0 else -value0

    # ------------------------------------------------------------------ decision

    def choose_move(self) -> tuple[int, int, int]:
        """``(move, own_visits, other_visits)``: the final-move rule (module docstring)."""
        root = self.root
        assert root is not None
        b = self.own_board
        own_visits = 0
        sit_visits = 0
        best = -1
        for i, m in enumerate(root.moves[b]):
            if m == SIT:
                sit_visits += root.n[b][i]
                continue
            own_visits += root.n[b][i]
            if best < 0 or (root.n[b][i], root.priors[b][i]) > (root.n[b][best], root.priors[b][best]):
                best = i
        other_visits = root.board_visits(1 - b) + sit_visits
        if best < 0:
            return SIT, own_visits, other_visits
        if SIT in root.moves[b] and other_visits > self.config.sit_ratio * own_visits:
            return SIT, own_visits, other_visits
        if self.config.mate_guard and self._allows_mate(root.moves[b][best]):
            order = sorted((i for i, m in enumerate(root.moves[b]) if m != SIT),
                           key=lambda i: (root.n[b][i], root.priors[b][i]), reverse=True)
            for i in order:
                if not self._allows_mate(root.moves[b][i]):
                    return root.moves[b][i], own_visits, other_visits
        return root.moves[b][best], own_visits, other_visits

    def _allows_mate(self, m: int) -> bool:
        """``mate_guard``: after ``m`` our board's opponent mates at once, with the root's pockets."""
        game = self.game
        assert game is not None
        pos = BughouseBoard(game.boards[self.own_board].fen(), self.own_board)
        pos.push(m)
        return pos.can_mate_at_once()

    def root_evaluated(self) -> bool:
        return self.root is not None and self.root.state in (EXPANDED, TERMINAL)

    def result(self) -> BughouseResult:
        root = self.root
        if root is None or root.state not in (EXPANDED, TERMINAL):
            raise BughouseSearchError("result() before the root was evaluated")
        b = self.own_board
        own_team = root.movers[b] if root.state == EXPANDED else team_of(b, self.game.boards[b].turn)  # type: ignore[union-attr]
        move, own_v, other_v = self.choose_move() if root.state == EXPANDED else (SIT, 0, 0)
        value = root.value if own_team == 0 else -root.value
        visited = own_v + other_v
        if visited:
            w = sum(root.w[b]) + sum(root.w[1 - b]) * (1 if root.movers[1 - b] == own_team else -1)
            value = w / visited
        return BughouseResult(b, move, value, self._nodes, self._evals, time.perf_counter() - self._t0,
                              own_v, other_v, self._principal_variation())

    def _principal_variation(self, depth: int = 8) -> list[tuple[int, int]]:
        pv: list[tuple[int, int]] = []
        node = self.root
        while node is not None and node.state == EXPANDED and len(pv) < depth:
            best: tuple[int, int, int] | None = None
            for b in (0, 1):
                for i, n in enumerate(node.n[b]):
                    if n > 0 and (best is None or n > node.n[best[0]][best[1]]):
                        best = (b, i, n)
            if best is None:
                break
            pv.append((best[0], node.moves[best[0]][best[1]]))
            node = node.children[best[0]][best[1]]
        return pv
