"""Bughouse seats: one player of the four, in-process or an XBoard program, as the four-seat
server of :mod:`experiments.harness.bughouse` drives them.

A seat sees the running game through a :class:`GameContext` (the game, the clocks in real time, the
other seats) and acts on it: it submits a move with a :class:`MoveStat`, a forfeit, or a
partner message.  Seats are engines of the registry: ``factory.create(spec, "bughouse", kind=Seat)``
(:func:`make_seat` for a spec text) makes one, through the registry's one spec parser
(:func:`engines.registry.resolve`) and its evaluator pool: ``bughouse-mcts`` (classical evaluator),
``rise-bughouse-mcts`` (the LazyBug-style network; ``weights=FILE``), ``sjeng`` or
``PROGRAM+xboard``; a team is one spec for both seats or two joined by ``/`` (:func:`parse_team`).

Seats
-----
:class:`OurSeat` (in-process): :class:`search.two_board.TwoBoardMCTS` with the classical
bughouse evaluator (``bughouse-mcts``) or the LazyBug-style network (``rise-bughouse-mcts``,
``weights=PATH``; seats with the same weights share one evaluator), stepped cooperatively by the loop (no threads: the two cores are shared). When
it is to move it searches with ``movetime = min(spec movetime, left / clock_moves + 0.7 · increment)``
(``clock_moves`` a spec option, 30 unless set: :func:`allocate`; and
the spec's node cap); any move on either board restarts the search from the new position (pockets
changed) within the same time allocation. A "sit" decision makes it wait: it searches again after
the next move on either board or after ``SIT_RECHECK_MS`` (untimed: ``SIT_RECHECK_PASSES`` server passes). With no legal move it waits too.

Both boards' clocks (spec option ``stall``, any seat of ours): a team loses when either board
flags, so a seat holds the move it found while the partner's opponent is stuck on move (on move
for 3 s and three times its usual move, as a seat waiting for a piece is) and would flag at least
5 s before it (:meth:`ClockWatch.stalls`): our move would let our opponent move and perhaps capture
the piece the stuck seat waits for. A mating move is played at once; when the stall ends the held
move is played, or the board searched again if its pockets changed.

:class:`engines.xboard_seat.XBoardSeat`: a program speaking CECP (Sjeng 11.2, ``PROGRAM+xboard``) on the
one line driver of :mod:`engines.process`; its dialogue and what was found about Sjeng by hand are
documented in that module.

Failures (forfeit for the seat's team, the game ends at once; a crashed program is started again
for the next game): the program exits or closes its output (crash), sends a malformed or illegal
move, resigns, or our search raises. A hung program runs out of its real clock (flag). A game
longer than ``max_plies`` is drawn (``max_plies``).
"""
from __future__ import annotations

import logging
import random
import re
import time
import dataclasses
from dataclasses import dataclass
from typing import Any, Final, Sequence

from board import move_to_uci
from board.bughouse import BughouseBoard, BughouseGame, partner_seat
from board.variants import BUGHOUSE
from engines import catalog, registry
from engines.base import EngineError, EngineSpec, MoveStat
from evaluators.base import Evaluator, value_to_cp
from search.alphabeta import AlphaBeta
from search.base import Limits, flat_view
from search.two_board import BughouseLimits

log = logging.getLogger(__name__)

#: an untimed game's sit recheck, in server passes (each seat one tick a pass), not milliseconds: so a
#: game without clocks does not depend on the machine's speed, and replays
SIT_RECHECK_PASSES = 200
#: partner messages relayed between seats (Sjeng's partner commands: :mod:`engines.xboard_seat`)
PTELL_COMMAND = re.compile(r"^(sit|go|move|fast|slow|dead|abort|flag|x|=|[+-]{1,3}([pnbrqdh]|trades))(\s|$)",
                           re.IGNORECASE)
SIT_RECHECK_MS = 1000


class SeatError(EngineError):
    """A bad seat spec, or a seat program that cannot start (one line)."""


# ---------------------------------------------------------------------------------------- context

class GameContext:
    """What a seat sees of the running game and how it acts on it."""

    def __init__(self, game: BughouseGame, seats: Sequence["Seat"], t0: float, seed: int = 0) -> None:
        self.game = game
        self.seats = seats
        self.t0 = t0
        self.seed = seed                       # the game's seed: our seats' random state starts from it
        self.passes = 0                        # server loop passes so far (the untimed game's clock)
        self.version = 0                       # moves made so far (changes on every move)
        self.sitting = [False, False, False, False]
        self.actions: list[tuple[str, int, Any]] = []
        self.ptells: list[tuple[int, int, str]] = []

    def now_ms(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def submit(self, seat: int, uci: str, report: MoveStat | None = None) -> None:
        self.actions.append(("move", seat, (uci, report or MoveStat())))

    def forfeit(self, seat: int, reason: str) -> None:
        self.actions.append(("forfeit", seat, reason))

    def ptell(self, seat: int, text: str) -> None:
        """Log a partner message; relay it if it is a partner command (:data:`PTELL_COMMAND`):
        chatter ("Hello!", "Sorry, but I don't understand that command.") is only logged, else two
        Sjeng partners answer each other's replies forever."""
        self.ptells.append((self.now_ms(), seat, text))
        if PTELL_COMMAND.match(text.strip()):
            self.seats[partner_seat(seat)].on_ptell(self, text.strip())

    def to_move(self, seat: int) -> bool:
        return self.game.boards[seat >> 1].turn == (seat & 1)


class Seat:
    """One player. Subclasses: :class:`OurSeat`, :class:`engines.xboard_seat.XBoardSeat`."""

    name: str = "seat"
    kind: str = "seat"

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}

    def start_game(self, ctx: GameContext, seat: int, partner_name: str) -> None:
        self.seat = seat

    def on_move(self, ctx: GameContext, board_id: int, mover: int) -> None:
        """A move was made on ``board_id`` by seat ``mover`` (possibly this one)."""

    def on_ptell(self, ctx: GameContext, text: str) -> None:
        """The partner said ``text``."""

    def tick(self, ctx: GameContext) -> bool:
        """Do a little work; True if the seat is computing (the loop should not sleep)."""
        return False

    def end_game(self, ctx: GameContext, result: str, reason: str) -> None:
        pass

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------- ours

#: a timed move of our seats takes the clock left / CLOCK_MOVES (+ 0.7 increment) unless the spec's
#: ``clock_moves`` says otherwise
CLOCK_MOVES: Final = 30


def allocate(ctx: GameContext, seat: int, movetime: float | None, clock_moves: int | None = None) -> float:
    """Seconds for one of our seats' move: ``left / clock_moves + 0.7 · increment`` of its clock
    (``clock_moves`` default :data:`CLOCK_MOVES`; at least 20 ms), capped by the spec's ``movetime``;
    untimed: ``movetime`` or no limit."""
    game = ctx.game
    if not game.timed:
        return movetime if movetime is not None else float("inf")
    left = game.time_left(seat, ctx.now_ms()) / 1000.0
    alloc = max(0.02, left / (clock_moves or CLOCK_MOVES) + 0.7 * game.inc_ms / 1000.0)
    return min(alloc, movetime) if movetime is not None else alloc


#: the stall (spec option ``stall``: :meth:`ClockWatch.stalls`): the enemy to move on the other board
#: has been on move at least STALL_WAIT_MS and STALL_FACTOR times its median recent move, and its clock
#: runs out at least STALL_RESERVE_MS before ours
STALL_WAIT_MS: Final = 3000
STALL_FACTOR: Final = 3
STALL_RESERVE_MS: Final = 5000


class ClockWatch:
    """A seat's view of both boards' clocks, kept from the moves it is told of: since when each
    board's side has been to move, and each seat's last five move times (ms)."""

    def __init__(self) -> None:
        self.moved_ms = [0, 0]
        self.think_ms: list[list[int]] = [[], [], [], []]

    def on_move(self, board_id: int, mover: int, now: int) -> None:
        self.think_ms[mover] = (self.think_ms[mover] + [now - self.moved_ms[board_id]])[-5:]
        self.moved_ms[board_id] = now

    def stalls(self, ctx: GameContext, seat: int, now: int) -> bool:
        """Waiting wins on time (LazyBug's "waiting wins on time", played by the seat rather than
        searched): the partner's opponent is to move on the other board and stuck (on move for
        :data:`STALL_WAIT_MS` and :data:`STALL_FACTOR` times its median move, as a seat waiting for
        a piece is), and its clock runs out :data:`STALL_RESERVE_MS` or more before ours. A move of
        ours would let our opponent move, perhaps capture, and so hand it the piece it waits for;
        waiting hands it nothing, and the game ends at its flag (a team loses when either board
        flags). Untimed games never stall."""
        game = ctx.game
        other = 1 - (seat >> 1)
        enemy = game.to_move_seat(other)
        if not game.timed or enemy == partner_seat(seat):
            return False
        usual = sorted(self.think_ms[enemy])[len(self.think_ms[enemy]) // 2] if self.think_ms[enemy] else 0
        if now - self.moved_ms[other] < max(STALL_WAIT_MS, STALL_FACTOR * usual):
            return False
        return game.time_left(seat, now) - game.time_left(enemy, now) >= STALL_RESERVE_MS

    def holds(self, ctx: GameContext, seat: int, now: int, uci: str) -> bool:
        """The seat holds ``uci`` now: waiting wins on time (:meth:`stalls`) and ``uci`` does not mate."""
        return self.stalls(ctx, seat, now) and not gives_mate(ctx.game.boards[seat >> 1], uci)


def gives_mate(b: BughouseBoard, uci: str) -> bool:
    """``uci`` mates at once on ``b`` (a real bughouse mate)."""
    p = b.copy()
    try:
        p.push(p.parse_uci(uci))
    except ValueError:
        return False
    return p.is_checkmate()


class OurSeat(Seat):
    """Our engine: the bughouse MCTS with an injected evaluator, stepped by the server loop."""

    kind = "ours"

    def __init__(self, name: str, evaluator: Evaluator, config: Any = None, nodes: int | None = None,
                 movetime: float | None = None, seed: int = 1, options: dict[str, str] | None = None,
                 playouts: int | None = None, evals: int | None = None, clock_moves: int | None = None,
                 search: str = "two-board-mcts", stall: bool = False) -> None:
        self.name = name
        #: the two-board search's registry name (:data:`engines.registry.SEAT_SEARCHES`)
        self.search_name = search
        self.evaluator = evaluator
        #: limits a move, in :mod:`search.base`'s units (:class:`search.two_board.BughouseLimits`)
        self.nodes, self.playouts, self.evals = nodes, playouts, evals
        self.movetime = movetime
        self.clock_moves = clock_moves
        self.stall = stall
        self.watch = ClockWatch()
        #: a move found and held while the seat stalls (:meth:`ClockWatch.stalls`): uci, report, board FEN
        self._held: tuple[str, MoveStat, str] | None = None
        self.options = dict(options or {})
        self.seed = seed
        self.config = config
        self.search = self._new_search(random.Random(seed))
        self.seat = -1
        self._searching = False
        self._searched_version = -1
        self._turn_started = -1
        self._alloc_s = 0.0
        self._sit_since = -1
        self._sit_version = -1
        self._turn_nodes = 0
        self._turn_evals = 0
        self.sits = 0  # sit decisions (all games)
        self.game_sits = 0  # sit decisions in the current (or last) game

    def settings(self) -> dict[str, Any]:
        """Spec and search settings; for the game just played, its sit decisions."""
        return {"name": self.name, "kind": self.kind, "evaluator": self.evaluator.name,
                "search": self.search_name, "options": self.options, "seed": self.seed,
                "config": flat_view(self.search.config), "sits": self.game_sits}

    def _new_search(self, rng: random.Random) -> Any:
        return registry.search_class(self.search_name)(self.evaluator, self.config, rng)

    def start_game(self, ctx: GameContext, seat: int, partner_name: str) -> None:
        # a fresh search whose random state comes from the seat's seed and the game's: a game does
        # not depend on the games this seat played before it (workers, resumes, replays)
        self.search = self._new_search(random.Random(f"{self.seed}:{ctx.seed}"))
        self.seat = seat
        self.game_sits = 0
        self._searching = False
        self._turn_started = -1
        self._sit_since = -1
        self.watch, self._held = ClockWatch(), None

    def on_move(self, ctx: GameContext, board_id: int, mover: int) -> None:
        self.watch.on_move(board_id, mover, ctx.now_ms())
        if mover == self.seat:
            self._turn_started = -1

    def _release(self, ctx: GameContext, now: int) -> bool:
        """While the stall holds, wait (True); then play the held move, or, if the pockets changed
        meanwhile, let the seat search again with half a move's allocation (False)."""
        assert self._held is not None
        if self.watch.stalls(ctx, self.seat, now):
            return True
        uci, stat, fen = self._held
        self._held = None
        ctx.sitting[self.seat] = False
        if ctx.game.boards[self.seat >> 1].fen() != fen:
            self._alloc_s = (now - self._turn_started) / 1000.0 + self._allocate(ctx) / 2
            return False
        ctx.submit(self.seat, uci, dataclasses.replace(stat, time=(now - self._turn_started) / 1000.0))
        return True

    def _allocate(self, ctx: GameContext) -> float:
        return allocate(ctx, self.seat, self.movetime, self.clock_moves)

    def tick(self, ctx: GameContext) -> bool:
        game = ctx.game
        b = self.seat >> 1
        if not ctx.to_move(self.seat):
            self._searching = False
            ctx.sitting[self.seat] = False
            return False
        now = ctx.now_ms()
        if self._turn_started < 0:
            self._turn_started = now
            self._turn_nodes = self._turn_evals = 0
            self._alloc_s = self._allocate(ctx)
        if self._held is not None and self._release(ctx, now):
            return False
        if ctx.sitting[self.seat]:
            waited = now - self._sit_since < SIT_RECHECK_MS if game.timed else ctx.passes - self._sit_since < SIT_RECHECK_PASSES
            if ctx.version == self._sit_version and waited:
                return False
            ctx.sitting[self.seat] = False
        if not game.boards[b].has_legal_moves():
            self._searching = False
            return False
        try:
            if not self._searching or self._searched_version != ctx.version:
                # a move on either board changed the position: search again with what is left of
                # this turn's time, playouts and evals (at least a quarter of each budget); a root
                # visit target (nodes) stands, the visits the tree keeps counting towards it
                if self._searching and self.search.root_evaluated():
                    done = self.search.result()
                    self._turn_nodes += done.nodes
                    self._turn_evals += done.evals
                spent = (now - self._turn_started) / 1000.0
                left = max(0.01, self._alloc_s - spent)
                movetime = None if left == float("inf") else left
                playouts = None if self.playouts is None else max(self.playouts // 4, self.playouts - self._turn_nodes, 1)
                evals = None if self.evals is None else max(self.evals // 4, self.evals - self._turn_evals, 1)
                self.search.start(game, b, BughouseLimits(self.nodes, movetime, playouts, evals), at_ms=now,
                                  partner_sitting=ctx.sitting[partner_seat(self.seat)])
                self._searching = True
                self._searched_version = ctx.version
            if not self.search.done():
                leaves = self.search.ask()
                if leaves:
                    self.search.tell(self.evaluator.evaluate(leaves))
            if not self.search.done():
                return True
            r = self.search.result()
        except Exception as e:  # noqa: BLE001 - a failing search forfeits, never crashes the server
            log.exception("bughouse search failed")
            self._searching = False
            ctx.forfeit(self.seat, f"search error: {type(e).__name__}: {e}")
            return False
        self._searching = False
        if r.sit:
            self.sits += 1
            self.game_sits += 1
            ctx.sitting[self.seat] = True
            self._turn_started = -1  # a new allocation when it searches again
            self._sit_since = now if game.timed else ctx.passes
            self._sit_version = ctx.version
            return False
        # the turn's totals (searches restarted by moves on the other board included)
        uci = move_to_uci(r.move)
        stat = MoveStat(nodes=self._turn_nodes + r.nodes, time=(now - self._turn_started) / 1000.0,
                        cp=value_to_cp(r.value, BUGHOUSE.name), depth=len(r.pv), evals=self._turn_evals + r.evals)
        if self.stall and self.watch.holds(ctx, self.seat, now, uci):
            self._held = (uci, stat, game.boards[b].fen())
            self.sits += 1
            self.game_sits += 1
            ctx.sitting[self.seat] = True
            return False
        ctx.submit(self.seat, uci, stat)
        return False


# ---------------------------------------------------------------------------------------- alpha-beta

def _alphabeta_worker(conn: Any, spec_text: str) -> None:
    """The process of an :class:`AlphaBetaSeat`: jobs ``(job, fen, board_id, movetime, nodes,
    depth)`` in, ``(job, uci, nodes, evals, depth, cp, seconds)`` out; ``None`` ends it."""
    try:
        spec = registry.resolve(spec_text)
        if spec.search != "alphabeta":
            raise SeatError(f"{spec.name}: an alpha-beta seat needs the alphabeta search, not {spec.search}")

        evaluator = registry.evaluator_for(spec, BUGHOUSE.name)
        board_of = getattr(evaluator, "board", None)
        if board_of is None:
            boards = ", ".join(n for n in registry.EVALUATORS if n.startswith("bughouse-board"))
            raise SeatError(f"{spec.name}: an alpha-beta seat needs a bughouse board evaluator "
                            f"({boards}), not {spec.evaluator}")
        search = AlphaBeta(evaluator, spec.config)
    except Exception as e:  # noqa: BLE001 - told to the seat as one line
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", ""))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        n, fen, board_id, movetime, nodes, depth = job
        t0 = time.monotonic()
        pos = board_of(fen, board_id)
        r = search.run(pos, Limits(nodes=nodes, depth=depth, movetime=movetime))
        conn.send((n, move_to_uci(r.best_move), r.nodes, r.evals, r.depth, r.cp, time.monotonic() - t0))


class AlphaBetaSeat(Seat):
    """Our alpha-beta on the seat's board alone (``bughouse-ab``): the board and its pockets as
    they are when the seat is to move, captures feeding a stand-in partner
    (:func:`evaluators.bughouse_classical.lone_board`), scored by the board evaluator (crazyhouse
    material, PST, pockets, king safety, material sent to the partners). The search runs in a
    process of its own, as an external program would, so it neither holds up the server loop (the
    other seats' moves keep their times) nor shares a core with the partner seat. Time: as
    :class:`OurSeat` (:func:`allocate`), with the spec's ``nodes`` and ``depth``. The board does
    not change while the seat is to move, but both pockets can grow (captures on the other board):
    a search is not restarted by them, but when the move it found lets the opponent mate at once with
    the pockets as they are now (:meth:`board.bughouse.BughouseBoard.allows_mate_in_one`), the seat
    searches the new position again (once a move, with half a move's allocation). With no legal
    move it waits for a piece. With the spec option ``stall`` it holds a move it found while waiting
    wins on time (:meth:`ClockWatch.stalls`), unless the move mates; when the stall ends it plays
    it, or searches again if the pockets changed meanwhile."""

    kind = "alphabeta"

    def __init__(self, name: str, spec_text: str, nodes: int | None = None, movetime: float | None = None,
                 depth: int | None = None, options: dict[str, str] | None = None, startup_s: float = 60.0,
                 clock_moves: int | None = None, stall: bool = False) -> None:
        import multiprocessing

        self.name = name
        self.spec_text = spec_text
        self.nodes = nodes
        self.movetime = movetime
        self.depth = depth
        self.clock_moves = clock_moves
        self.stall = stall
        self.options = dict(options or {})
        self.seat = -1
        self.job = 0
        self.watch = ClockWatch()
        #: a move found and held while the seat stalls: (uci, nodes, evals, depth, cp, the board's FEN)
        self.held: tuple[str, int, int, int, int, str] | None = None
        self.game_stalls = 0
        self.thinking = False
        self.turn_started = -1
        self.sent_fen, self.rechecked = "", False  # the board the running search saw; searched again this move
        self.turn_cost, self.game_rechecks = (0, 0), 0  # nodes and evals of this move so far; moves searched again
        mp = multiprocessing.get_context("spawn")  # no fork of a process with reader threads
        self.conn, child = mp.Pipe()
        self.proc = mp.Process(target=_alphabeta_worker, args=(child, spec_text), daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(startup_s):
            self.close()
            raise SeatError(f"{name}: the alpha-beta process did not start within {startup_s:g} s")
        kind, msg = self.conn.recv()
        if kind != "ready":
            self.close()
            raise SeatError(f"{name}: {msg}")

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "search": "alphabeta", "options": self.options,
                "rechecks": self.game_rechecks, "sits": self.game_stalls}

    def start_game(self, ctx: GameContext, seat: int, partner_name: str) -> None:
        self.seat = seat
        self.game_rechecks = self.game_stalls = 0
        self.thinking = False  # an answer still coming from the last game is dropped (its job number)
        self.turn_started = -1
        self.watch, self.held = ClockWatch(), None

    def on_move(self, ctx: GameContext, board_id: int, mover: int) -> None:
        self.watch.on_move(board_id, mover, ctx.now_ms())

    def tick(self, ctx: GameContext) -> bool:
        if not ctx.to_move(self.seat):
            return False
        b = ctx.game.boards[self.seat >> 1]
        now = ctx.now_ms()
        if self.held is not None:
            return self._release(ctx, b, now)
        if not self.thinking:
            if not b.has_legal_moves():
                return False
            self.turn_started, self.rechecked, self.turn_cost = now, False, (0, 0)
            return self._send(ctx, b.fen(), allocate(ctx, self.seat, self.movetime, self.clock_moves))
        try:
            if not self.conn.poll():
                return False
            n, uci, nodes, evals, depth, cp, _ = self.conn.recv()
        except (EOFError, OSError):
            ctx.forfeit(self.seat, f"crash: {self.name}: the alpha-beta process is gone")
            self.thinking = False
            return False
        if n != self.job:
            return False
        self.thinking = False
        nodes, evals = self.turn_cost[0] + nodes, self.turn_cost[1] + evals
        if self._stale_blunder(b, uci):  # the pockets changed under the search: search again
            self.rechecked, self.turn_cost = True, (nodes, evals)
            self.game_rechecks += 1
            return self._send(ctx, b.fen(), allocate(ctx, self.seat, self.movetime, self.clock_moves) / 2)
        if self.stall and self.watch.holds(ctx, self.seat, now, uci):
            self.held = (uci, nodes, evals, depth, cp, b.fen())
            self.game_stalls += 1
            ctx.sitting[self.seat] = True
            return False
        return self._play(ctx, uci, nodes, evals, depth, cp, now)

    def _play(self, ctx: GameContext, uci: str, nodes: int, evals: int, depth: int, cp: int, now: int) -> bool:
        """Submit the move with the turn's cost and time (the stall's wait included)."""
        ctx.submit(self.seat, uci, MoveStat(nodes=nodes, time=(now - self.turn_started) / 1000.0, cp=cp,
                                            depth=depth, evals=evals))
        return False

    def _release(self, ctx: GameContext, b: BughouseBoard, now: int) -> bool:
        """While the stall holds, wait; then play the held move, or search again (half a move's
        allocation) if the pockets changed meanwhile."""
        assert self.held is not None
        if self.watch.stalls(ctx, self.seat, now):
            return False
        uci, nodes, evals, depth, cp, fen = self.held
        self.held = None
        ctx.sitting[self.seat] = False
        if b.fen() != fen:
            self.turn_cost = (nodes, evals)
            return self._send(ctx, b.fen(), allocate(ctx, self.seat, self.movetime, self.clock_moves) / 2)
        return self._play(ctx, uci, nodes, evals, depth, cp, now)

    def _stale_blunder(self, b: BughouseBoard, uci: str) -> bool:
        """The move lets the opponent mate at once with the pockets as they are now (changed since the search began)."""
        if self.rechecked or b.fen() == self.sent_fen:
            return False
        try:
            return b.allows_mate_in_one(b.parse_uci(uci))
        except ValueError:  # no legal move found: the server forfeits it as it is
            return False

    def _send(self, ctx: GameContext, fen: str, alloc: float) -> bool:
        """Start a search of ``fen`` in the seat's process (``alloc`` seconds, inf: none)."""
        self.job += 1
        self.sent_fen = fen
        try:
            self.conn.send((self.job, fen, self.seat >> 1, None if alloc == float("inf") else alloc,
                            self.nodes, self.depth))
        except (OSError, ValueError):
            ctx.forfeit(self.seat, f"crash: {self.name}: the alpha-beta process is gone")
            return False
        self.thinking = True
        return False

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=2)
        self.conn.close()


# ---------------------------------------------------------------------------------------- specs

@dataclass
class TeamSpec:
    """A team: one engine spec for both seats (``bughouse-mcts:nodes=400``, ``sjeng``,
    ``/path/prog+xboard``), or two joined by ``/`` (A-seat spec / B-seat spec)."""

    text: str
    seat_specs: tuple[str, str]
    #: the two seats' specs, resolved once (:func:`parse_team`) and named by their text as given: what
    #: the seats are made of (:func:`engines.factory.make_seat`); ``seat_specs`` is what games store
    resolved: tuple[EngineSpec, EngineSpec] = dataclasses.field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.text


def bughouse_spec(text: str) -> Any:
    """The resolved spec of a seat (:func:`engines.registry.resolve`), refused unless it plays bughouse."""
    return plays_bughouse(registry.resolve(text))


def plays_bughouse(spec: EngineSpec) -> EngineSpec:
    if BUGHOUSE.name not in registry.variants_of(spec) and not (catalog.is_external(spec) and spec.search == "xboard"):
        raise SeatError(f"{spec.name} does not play bughouse: use bughouse-mcts[:opts], rise-bughouse-mcts[:opts], "
                        f"sjeng[:opts] or PROGRAM+xboard")
    return spec


def parse_team(text: str) -> TeamSpec:
    """A team spec; ``/`` separates the two seats' specs only before an engine name, so that option
    values may be paths (``rise-bughouse-mcts:weights=runs/x/model.pt``)."""
    def is_head(piece: str) -> bool:
        try:
            registry.resolve(piece.partition(":")[0])
            return True
        except EngineError:
            return False

    if "+xboard" in text:
        parts = [text.strip()]
    else:
        pieces = text.split("/")
        parts = [pieces[0]]
        for piece in pieces[1:]:
            if is_head(piece) or not piece.strip():
                parts.append(piece)
            else:
                parts[-1] += "/" + piece
        parts = [p.strip() for p in parts]
    if not parts or any(not p for p in parts) or len(parts) > 2:
        raise SeatError(f"a team is 'SPEC' or 'SPEC_A/SPEC_B', got {text!r}")
    specs = (parts[0], parts[-1])
    a = dataclasses.replace(bughouse_spec(specs[0]), name=specs[0])  # the name games store: the text as given
    b = a if specs[1] == specs[0] else dataclasses.replace(bughouse_spec(specs[1]), name=specs[1])
    return TeamSpec(text.strip(), specs, (a, b))


