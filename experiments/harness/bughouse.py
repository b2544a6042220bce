"""The four-seat bughouse match server: two teams, four engines, real clocks, every game stored.

Seats, boards, teams and results as :mod:`board.bughouse` (seat ``board_id * 2 + color``; team 0
= A-white + B-black, "1-0" = team 0 wins). A match between teams X and Y plays games in pairs: in
the first game of a pair X holds the team-0 seats (A-white, B-black), in the second Y does.

Server loop (one game, :func:`play_game`)
-----------------------------------------
Game time is real time (ms since the game started, ``time.monotonic``). The loop, until
:meth:`BughouseGame.outcome` at the current time gives a result:

1. every seat gets a :meth:`Seat.tick`: an XBoard seat reads what its program wrote; one of our
   seats does one batch of its search (ask, evaluate, tell). A seat hands moves, partner messages
   and failures to the server (:class:`GameContext`);
2. a move is checked before it is made: a move after the mover's flag fell is too late (the flag
   decides), an illegal or malformed move forfeits the game for the mover's team; a legal move is
   pushed with its time (the mover's clock is charged) and every seat is told (:meth:`Seat.on_move`);
3. nothing to compute: the loop sleeps ``POLL_S``.

Seats
-----
:class:`OurSeat` (in-process): :class:`search.bughouse_mcts.BughouseMCTS` with the classical
bughouse evaluator (``bughouse-mcts``) or the LazyBug-style network (``rise-bughouse-mcts``, or
``bughouse-mcts:evaluator=net[,weights=PATH]``; seats with the same weights share one evaluator), stepped cooperatively by the loop (no threads: the two cores are shared). When
it is to move it searches with ``movetime = min(spec movetime, left / 30 + 0.7 · increment)`` (and
the spec's node cap); any move on either board restarts the search from the new position (pockets
changed) within the same time allocation. A "sit" decision makes it wait: it searches again after
the next move on either board or after ``SIT_RECHECK_MS``. With no legal move it waits too.

:class:`XBoardSeat`: a program speaking CECP (Sjeng 11.2) through our own small driver (python-chess's
XBoard engine has no ``holding``/``ptell``), following the conventions found by hand in
:mod:`board.bughouse`'s docstring: ``new``, ``variant bughouse``, ``partner <name>``, ``easy``
(no pondering: two shared cores), ``nopost``, ``level 0 M:SS INC``, ``ping N`` (everything the
program prints before ``pong N`` is stale, e.g. a move of the previous game printed after ``force``,
and is dropped); the White seat gets ``go`` at once;
``holding [W] [B]`` is sent whenever its board's pockets changed, before the next ``time``/``otim``/
move (never to a White seat before its first ``go``); an opponent's move goes as ``time``, ``otim``
(centiseconds) and the bare move. ``tellics ptell <text>`` is relayed as ``ptell <text>`` to the
partner seat if it is an XBoard seat (and logged with the game either way); other ``tellics`` lines
and result claims are ignored, but a claim means Sjeng has stopped playing this game ("temporary"
crazyhouse mates), so when it is next to move with a legal move the seat is restarted with the
custom-start sequence (``new``, ... , ``force``, ``black``/``white``, ``setboard <FEN without
pockets>``, ``holding``, ``time``, ``otim``, ``go``). The same restart follows an ``Illegal move``
complaint about a move we relayed.

Failures (forfeit for the seat's team, the game ends at once; a crashed program is started again
for the next game): the program exits or closes its output (crash), sends a malformed or illegal
move, resigns, or our search raises. A hung program runs out of its real clock (flag). A game
longer than ``max_plies`` is drawn (``max_plies``).

Known limit: writes to a program's stdin block; a program that stops reading its input would
stall the server only after filling the pipe (64 KiB, thousands of moves).

Storage
-------
Each game is one row of :class:`experiments.harness.store.Store` (variant ``bughouse``; ``white`` and
``black`` are the team-0 and team-1 team names; ``moves`` are ``A:e2e4``-style moves in play
order; ``move_stats`` per move) plus a row of ``bughouse_games`` in the same SQLite file (the
four seats' engines with their settings and, for XBoard seats, the mid-game restarts; each move's
game time in ms; the partner messages; the BPGN text), written
before the store row so that a stored game always has its details. A BPGN file (``[WhiteA]``,
``[BlackA]``, ``[WhiteB]``, ``[BlackB]`` tags, :func:`board.bughouse.bpgn_movetext` move text with
clock comments) is rebuilt from the database when a match starts and appended after each game.
Games are keyed ``<match>:<index>``, so a match run again skips the stored games (resume).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import queue
import random
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from board import move_to_uci
from board.bughouse import (
    BOARD_LETTERS, BughouseError, BughouseGame, bpgn_movetext, format_move, partner_seat, seat_of,
    team_of, xboard_holding,
)
from evaluators.base import Evaluator
from experiments.harness.pgn import append_text, game_id, ids_in
from experiments.harness.pgn import check as pgn_check
from experiments.harness.store import GameRecord, MoveStat, Store, versions

log = logging.getLogger(__name__)

POLL_S = 0.002
#: partner messages relayed between seats (Sjeng's partner commands, see board/bughouse.py)
PTELL_COMMAND = re.compile(r"^(sit|go|move|fast|slow|dead|abort|flag|x|=|[+-]{1,3}([pnbrqdh]|trades))(\s|$)",
                           re.IGNORECASE)
SIT_RECHECK_MS = 1000
SEAT_NAMES = ("A-white", "A-black", "B-white", "B-black")
BPGN_TABLE = """
CREATE TABLE IF NOT EXISTS bughouse_games (
    key TEXT PRIMARY KEY,
    seats TEXT NOT NULL,
    times TEXT NOT NULL,
    ptells TEXT NOT NULL,
    fen TEXT NOT NULL,
    bpgn TEXT NOT NULL
);
"""


class BughouseMatchError(ValueError):
    """A bad team spec, time control or output path, or an engine that cannot start (one line)."""


# ---------------------------------------------------------------------------------------- context

@dataclass
class PlayedMove:
    seat: int
    text: str          # "A:e2e4"
    at_ms: int
    stat: MoveStat


class GameContext:
    """What a seat sees of the running game and how it acts on it."""

    def __init__(self, game: BughouseGame, seats: Sequence["Seat"], t0: float) -> None:
        self.game = game
        self.seats = seats
        self.t0 = t0
        self.version = 0                       # moves made so far (changes on every move)
        self.sitting = [False, False, False, False]
        self.actions: list[tuple[str, int, Any]] = []
        self.ptells: list[tuple[int, int, str]] = []

    def now_ms(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def submit(self, seat: int, uci: str, stat: MoveStat | None = None) -> None:
        self.actions.append(("move", seat, (uci, stat or MoveStat())))

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
    """One player. Subclasses: :class:`OurSeat`, :class:`XBoardSeat`."""

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

class OurSeat(Seat):
    """Our engine: the bughouse MCTS with an injected evaluator, stepped by the server loop."""

    kind = "ours"

    def __init__(self, name: str, evaluator: Evaluator, config: Any = None, nodes: int | None = None,
                 movetime: float | None = None, seed: int = 1, options: dict[str, str] | None = None) -> None:
        from search.bughouse_mcts import BughouseMCTS

        self.name = name
        self.evaluator = evaluator
        self.nodes = nodes
        self.movetime = movetime
        self.options = dict(options or {})
        self.search = BughouseMCTS(evaluator, config, random.Random(seed))
        self.seat = -1
        self._searching = False
        self._searched_version = -1
        self._turn_started = -1
        self._alloc_s = 0.0
        self._sit_since = -1
        self._sit_version = -1
        self._turn_nodes = 0
        self.sits = 0  # sit decisions (all games)

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "evaluator": self.evaluator.name,
                "search": "bughouse-mcts", "options": self.options,
                "config": dataclasses.asdict(self.search.config)}

    def start_game(self, ctx: GameContext, seat: int, partner_name: str) -> None:
        self.seat = seat
        self._searching = False
        self._turn_started = -1
        self._sit_since = -1
        self._moves_ms: list[list[int]] = [[], [], [], []]

    def on_move(self, ctx: GameContext, board_id: int, mover: int) -> None:
        if mover == self.seat:
            self._turn_started = -1

    def _allocate(self, ctx: GameContext) -> float:
        game = ctx.game
        if not game.timed:
            return self.movetime if self.movetime is not None else float("inf")
        left = game.time_left(self.seat, ctx.now_ms()) / 1000.0
        alloc = max(0.02, left / 30.0 + 0.7 * game.inc_ms / 1000.0)
        return min(alloc, self.movetime) if self.movetime is not None else alloc

    def tick(self, ctx: GameContext) -> bool:
        from search.bughouse_mcts import BughouseLimits

        game = ctx.game
        b = self.seat >> 1
        if not ctx.to_move(self.seat):
            self._searching = False
            ctx.sitting[self.seat] = False
            return False
        now = ctx.now_ms()
        if self._turn_started < 0:
            self._turn_started = now
            self._turn_nodes = 0
            self._alloc_s = self._allocate(ctx)
        if ctx.sitting[self.seat]:
            if ctx.version == self._sit_version and now - self._sit_since < SIT_RECHECK_MS:
                return False
            ctx.sitting[self.seat] = False
        if not game.boards[b].has_legal_moves():
            self._searching = False
            return False
        try:
            if not self._searching or self._searched_version != ctx.version:
                # a move on either board changed the position: search again with what is left of
                # this turn's time and nodes (at least a quarter of the node budget)
                if self._searching:
                    self._turn_nodes += self.search.result().nodes if self.search.root_evaluated() else 0
                spent = (now - self._turn_started) / 1000.0
                left = max(0.01, self._alloc_s - spent)
                movetime = None if left == float("inf") else left
                nodes = None if self.nodes is None else max(self.nodes // 4, self.nodes - self._turn_nodes, 1)
                self.search.start(game, b, BughouseLimits(nodes, movetime), at_ms=now,
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
            ctx.sitting[self.seat] = True
            self._turn_started = -1  # a new allocation when it searches again
            self._sit_since = now
            self._sit_version = ctx.version
            return False
        from search.mcts import value_to_cp

        # the turn's totals (searches restarted by moves on the other board included)
        ctx.submit(self.seat, move_to_uci(r.move),
                   MoveStat(nodes=self._turn_nodes + r.nodes, time=(now - self._turn_started) / 1000.0,
                            cp=value_to_cp(r.value), depth=len(r.pv), evals=r.evals))
        return False


# ---------------------------------------------------------------------------------------- xboard

def fen_without_pockets(board_fen: str) -> str:
    """A crazyhouse FEN with its ``[pockets]`` and ``~`` marks removed (Sjeng's setboard)."""
    parts = board_fen.split(" ")
    placement = parts[0]
    if "[" in placement:
        placement = placement[:placement.index("[")]
    return " ".join([placement.replace("~", "")] + parts[1:])


def _clock_text(ms: int) -> str:
    s = max(1, ms // 1000)
    return f"{s // 60}:{s % 60:02d}"


class XBoardSeat(Seat):
    """A CECP (XBoard) program: our own driver with ``holding``, ``ptell`` and a startup watchdog."""

    kind = "xboard"

    def __init__(self, name: str, command: Sequence[str], startup_s: float = 10.0, depth: int | None = None,
                 options: dict[str, str] | None = None) -> None:
        self.name = name
        self.command = list(command)
        self.startup_s = startup_s
        self.depth = depth
        self.options = dict(options or {})
        self.seat = -1
        self.proc: subprocess.Popen[str] | None = None
        self.pings = 0
        self.awaiting_pong = ""
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.transcript: list[str] = []
        self._start_process()

    def settings(self) -> dict[str, Any]:
        """Spec and, for the game just played, how often the program was restarted mid-game."""
        return {"name": self.name, "kind": self.kind, "command": self.command, "options": self.options,
                "restarts": getattr(self, "restarts", 0)}

    # -- process
    def _start_process(self) -> None:
        try:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, bufsize=1)
        except OSError as e:
            raise BughouseMatchError(f"cannot start {self.command[0]!r}: {e.strerror}") from None
        self.lines = queue.Queue()
        threading.Thread(target=self._reader, args=(self.proc, self.lines), daemon=True).start()
        self.send("xboard")
        self.send("protover 2")
        deadline = time.monotonic() + self.startup_s
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.0, left)) if left > 0 else None
            except queue.Empty:
                line = None
            if line is None:
                self.kill()
                raise BughouseMatchError(f"{self.name}: no 'feature ... done=1' within {self.startup_s:g} s "
                                         f"of starting {' '.join(self.command)}")
            if line.startswith("feature") and "done=1" in line:
                break

    @staticmethod
    def _reader(proc: subprocess.Popen[str], q: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                q.put(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        q.put(None)

    def send(self, line: str) -> bool:
        proc = self.proc
        if proc is None or proc.stdin is None:
            return False
        self.transcript.append("> " + line)
        try:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            return True
        except (OSError, ValueError):
            return False

    def kill(self) -> None:
        proc = self.proc
        self.proc = None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                try:
                    proc.stdin.write("quit\n")  # type: ignore[union-attr]
                    proc.stdin.flush()  # type: ignore[union-attr]
                except (OSError, ValueError):
                    pass
                try:
                    proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        except (OSError, subprocess.SubprocessError):
            pass

    def close(self) -> None:
        self.kill()

    def restart_process(self) -> None:
        self.kill()
        self._start_process()

    # -- game
    def _level(self, ctx: GameContext) -> list[str]:
        game = ctx.game
        out = ["new", "variant bughouse", f"partner {self.partner_name}", "easy", "nopost"]
        if self.depth is not None:
            out.append(f"sd {self.depth}")
        if game.timed:
            out.append(f"level 0 {_clock_text(game.base_ms)} {game.inc_ms / 1000:g}")
        return out

    def start_game(self, ctx: GameContext, seat: int, partner_name: str) -> None:
        self.seat = seat
        self.partner_name = partner_name
        self.board_id = seat >> 1
        self.color = seat & 1
        self.restarts = 0
        self.dead = False          # it claimed a result: it will not move again without a restart
        self.gone = False          # a White seat has had its first go (holding is safe)
        self.thinking = False
        self.sent_holding = ""
        if self.proc is None or self.proc.poll() is not None:
            self.restart_process()
        while True:  # drop what is left from the previous game
            try:
                if self.lines.get_nowait() is None:
                    self.restart_process()
                    break
            except queue.Empty:
                break
        for line in self._level(ctx):
            self.send(line)
        self._ping()
        if ctx.to_move(seat) and ctx.game.boards[self.board_id].has_legal_moves():
            self._send_clocks(ctx)
            self.send("go")
            self.gone = True
            self.thinking = True

    def _ping(self) -> None:
        """Output before the answering ``pong`` is stale (a move of the previous game or position
        that the program printed after ``force``) and is dropped by :meth:`tick`."""
        self.pings += 1
        self.awaiting_pong = f"pong {self.pings}"
        self.send(f"ping {self.pings}")

    def _send_clocks(self, ctx: GameContext) -> None:
        game = ctx.game
        if not game.timed:
            return
        now = ctx.now_ms()
        opp = seat_of(self.board_id, self.color ^ 1)
        self.send(f"time {max(0, game.time_left(self.seat, now)) // 10}")
        self.send(f"otim {max(0, game.time_left(opp, now)) // 10}")

    def _sync_holding(self, ctx: GameContext) -> None:
        if self.color == 0 and not self.gone:
            return
        h = xboard_holding(ctx.game.boards[self.board_id])
        if h != self.sent_holding:
            self.send(h)
            self.sent_holding = h

    def on_move(self, ctx: GameContext, board_id: int, mover: int) -> None:
        if self.dead:
            return
        if board_id == self.board_id and mover != self.seat:
            game = ctx.game
            _, m = game.move_stack[-1]
            self._sync_holding(ctx)
            self._send_clocks(ctx)
            self.send(move_to_uci(m))
            self.thinking = True
            if self.color == 0:
                self.gone = True
        else:
            self._sync_holding(ctx)

    def on_ptell(self, ctx: GameContext, text: str) -> None:
        self.send("ptell " + text)

    def _restart_sequence(self, ctx: GameContext) -> None:
        b = ctx.game.boards[self.board_id]
        self.restarts += 1
        for line in self._level(ctx):
            self.send(line)
        self._ping()
        self.send("force")
        self.send("black" if self.color == 0 else "white")
        self.send("setboard " + fen_without_pockets(b.fen()))
        self.sent_holding = ""
        self.gone = True
        self._sync_holding(ctx)
        self._send_clocks(ctx)
        self.send("go")
        self.dead = False
        self.thinking = True

    def tick(self, ctx: GameContext) -> bool:
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                code = self.proc.poll() if self.proc is not None else None
                ctx.forfeit(self.seat, f"crash: {self.name} exited" + (f" with code {code}" if code is not None else ""))
                self.proc = None
                return False
            if self.awaiting_pong:
                self.transcript.append("< (stale) " + line)
                if line.strip() == self.awaiting_pong:
                    self.awaiting_pong = ""
                continue
            self._line(ctx, line)
        if (self.dead and ctx.to_move(self.seat)
                and ctx.game.boards[self.board_id].has_legal_moves()):
            self._restart_sequence(ctx)
        return False

    def _line(self, ctx: GameContext, line: str) -> None:
        self.transcript.append("< " + line)
        if len(self.transcript) > 400:
            del self.transcript[:200]
        s = line.strip()
        if s.startswith("move "):
            if not ctx.to_move(self.seat):
                log.info("%s: move %r when not to move (ignored)", self.name, s)
                return
            self.thinking = False
            ctx.submit(self.seat, s[5:].strip())
        elif s.startswith("tellics ptell "):
            ctx.ptell(self.seat, s[len("tellics ptell "):])
        elif s.startswith(("1-0", "0-1", "1/2-1/2")):
            self.dead = True
            self.thinking = False
        elif s == "resign" or s.startswith("tellics resign"):
            ctx.forfeit(self.seat, f"resigned: {self.name}")
        elif s.startswith("Illegal move"):
            log.info("%s rejected a relayed move: %s", self.name, s)
            self.dead = True
        elif s.startswith("Error"):
            log.info("%s: %s", self.name, s)

    def end_game(self, ctx: GameContext, result: str, reason: str) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.send("force")
            self.send(f"result {result} {{{reason}}}")


# ---------------------------------------------------------------------------------------- one game

@dataclass
class GameResult:
    result: str
    reason: str
    game: BughouseGame
    moves: list[PlayedMove]
    ptells: list[tuple[int, int, str]]
    duration_s: float


def play_game(seats: Sequence[Seat], base_ms: int, inc_ms: int, max_plies: int = 600,
              max_seconds: float | None = None) -> GameResult:
    """One game between four seats (index = seat number) under real clocks (see module doc)."""
    if len(seats) != 4:
        raise BughouseMatchError("a bughouse game needs four seats")
    game = BughouseGame(base_ms=base_ms, inc_ms=inc_ms)
    t0 = time.monotonic()
    ctx = GameContext(game, seats, t0)
    for s in range(4):
        seats[s].start_game(ctx, s, seats[partner_seat(s)].name)
    played: list[PlayedMove] = []
    outcome: tuple[str, str] | None = None
    if max_seconds is None:
        max_seconds = (4 * base_ms + max_plies * inc_ms) / 1000.0 + 30.0 if base_ms >= 0 else 3600.0
    while outcome is None:
        busy = False
        for s in range(4):
            busy = seats[s].tick(ctx) or busy
            outcome = _apply_actions(ctx, played)
            if outcome is not None:
                break
        if outcome is not None:
            break
        now = ctx.now_ms()
        o = game.outcome(now)
        if o is not None:
            outcome = (o[0], _reason(o, game))
        elif max_plies and game.ply() >= max_plies:
            outcome = ("1/2-1/2", "max_plies")
        elif now / 1000.0 > max_seconds:
            outcome = ("1/2-1/2", "max_seconds")
        elif not busy:
            time.sleep(POLL_S)
    for s in range(4):
        try:
            seats[s].end_game(ctx, outcome[0], outcome[1])
        except Exception:  # noqa: BLE001 - a seat failing at the end changes nothing
            log.exception("end_game failed")
    return GameResult(outcome[0], outcome[1], game, played, ctx.ptells, time.monotonic() - t0)


def _reason(o: tuple[str, str, int], game: BughouseGame) -> str:
    result, term, board_id = o
    return term if board_id < 0 else f"{term} on board {BOARD_LETTERS[board_id]}"


def _apply_actions(ctx: GameContext, played: list[PlayedMove]) -> tuple[str, str] | None:
    game = ctx.game
    while ctx.actions:
        kind, seat, payload = ctx.actions.pop(0)
        team = team_of(seat >> 1, seat & 1)
        who = f"{SEAT_NAMES[seat]} ({ctx.seats[seat].name})"
        if kind == "forfeit":
            return ("1-0" if team == 1 else "0-1", f"forfeit: {who} {payload}")
        uci, stat = payload
        now = ctx.now_ms()
        o = game.outcome(now)
        if o is not None:  # the flag fell before the move arrived
            return (o[0], _reason(o, game))
        if not ctx.to_move(seat):
            continue
        board_id = seat >> 1
        text = f"{BOARD_LETTERS[board_id]}:{uci}"
        try:
            bid, m = game.parse(text)
        except BughouseError:
            fen = game.boards[board_id].fen()
            return ("1-0" if team == 1 else "0-1", f"forfeit: {who} illegal move {uci!r} in {fen}")
        game.push(bid, m, now)
        ctx.version += 1
        ctx.sitting[seat] = False
        played.append(PlayedMove(seat, format_move(bid, m), now, stat))
        for s in range(4):
            ctx.seats[s].on_move(ctx, bid, seat)
    return None


# ---------------------------------------------------------------------------------------- teams

@dataclass
class TeamSpec:
    """A team: one engine spec for both seats (``bughouse-mcts:nodes=400``, ``sjeng``,
    ``/path/prog+xboard``), or two joined by ``/`` (A-seat spec / B-seat spec)."""

    text: str
    seat_specs: tuple[str, str]

    @property
    def name(self) -> str:
        return self.text


OURS_NAMES = ("bughouse-mcts", "ours", "rise-bughouse-mcts")
#: our bughouse engines' evaluators: ``bughouse-mcts`` uses the classical one by default,
#: ``rise-bughouse-mcts`` the LazyBug-style network (evaluators/bughouse_net.py, shipped weights)
OURS_EVALUATORS = ("classical", "net")


def _engine_head(text: str) -> bool:
    head = text.partition(":")[0].strip()
    return head in OURS_NAMES or head == "sjeng"


def parse_team(text: str) -> TeamSpec:
    """A team spec; ``/`` separates the two seats' specs only before a known engine name, so that
    option values may be paths (``rise-bughouse-mcts:weights=runs/x/model.pt``)."""
    if "+xboard" in text:
        parts = [text.strip()]
    else:
        pieces = text.split("/")
        parts = [pieces[0]]
        for piece in pieces[1:]:
            if _engine_head(piece) or not piece.strip():
                parts.append(piece)
            else:
                parts[-1] += "/" + piece
        parts = [p.strip() for p in parts]
    if not parts or any(not p for p in parts) or len(parts) > 2:
        raise BughouseMatchError(f"a team is 'SPEC' or 'SPEC_A/SPEC_B', got {text!r}")
    specs = (parts[0], parts[-1])
    for s in specs:
        _split_spec(s)
    return TeamSpec(text.strip(), specs)


def _split_spec(text: str) -> tuple[str, dict[str, str]]:
    head, sep, rest = text.partition(":")
    opts: dict[str, str] = {}
    if sep and rest.strip():
        for item in rest.split(","):
            k, eq, v = item.partition("=")
            if not eq or not k.strip():
                raise BughouseMatchError(f"bad option {item.strip()!r} in {text!r}: expected key=value")
            opts[k.strip().lower().replace("-", "_")] = v.strip()
    head = head.strip()
    if head not in OURS_NAMES and head != "sjeng" and not head.endswith("+xboard"):
        raise BughouseMatchError(f"unknown bughouse engine {head!r}: use bughouse-mcts[:opts], "
                                 f"rise-bughouse-mcts[:opts], sjeng[:opts] or PROGRAM+xboard")
    return head, opts


def make_seat(spec: str, seed: int, evaluator_cache: dict[str, Evaluator]) -> Seat:
    """A seat for an engine spec (see :class:`TeamSpec`)."""
    head, opts = _split_spec(spec)
    if head in OURS_NAMES:
        from evaluators.bughouse_classical import BughouseClassicalEvaluator
        from search.bughouse_mcts import BughouseMCTSConfig

        cfg = BughouseMCTSConfig()
        fields = {f.name: f for f in dataclasses.fields(cfg)}
        nodes: int | None = None
        movetime: float | None = None
        evaluator = "net" if head == "rise-bughouse-mcts" else "classical"
        weights: str | None = None
        threads = 1
        for k, v in opts.items():
            try:
                if k == "evaluator":
                    if v not in OURS_EVALUATORS:
                        raise BughouseMatchError(f"unknown evaluator {v!r} in {spec!r}; known: "
                                                 + ", ".join(OURS_EVALUATORS))
                    evaluator = v
                elif k == "weights":
                    weights = v
                elif k == "threads":
                    threads = int(v)
                elif k == "nodes":
                    nodes = int(v)
                elif k == "movetime":
                    movetime = float(v)
                elif k == "seed":
                    seed = int(v)
                elif k in fields:
                    cur = getattr(cfg, k)
                    setattr(cfg, k, type(cur)(float(v)) if isinstance(cur, int) else float(v))
                else:
                    raise BughouseMatchError(f"unknown option {k!r} of {head}; known: nodes, movetime, seed, "
                                             "evaluator, weights, threads, " + ", ".join(fields))
            except ValueError as e:
                if isinstance(e, BughouseMatchError):
                    raise
                raise BughouseMatchError(f"bad value {v!r} for {k} in {spec!r}") from None
        cfg.validate()
        if evaluator == "classical" and weights is not None:
            raise BughouseMatchError(f"the classical bughouse evaluator takes no weights ({spec!r})")
        key = evaluator if weights is None else f"{evaluator}:{weights}"
        if key not in evaluator_cache:
            if evaluator == "classical":
                evaluator_cache[key] = BughouseClassicalEvaluator()
            else:
                from evaluators.bughouse_net import BughouseNetEvaluator

                try:
                    evaluator_cache[key] = BughouseNetEvaluator.load(weights, threads)
                except ValueError as e:
                    raise BughouseMatchError(f"{spec}: {e}") from None
        return OurSeat(spec, evaluator_cache[key], cfg, nodes, movetime, seed, opts)
    from engines.external import find_program
    from engines.base import EngineError

    program = "sjeng" if head == "sjeng" else head[:-len("+xboard")]
    try:
        path = find_program(program)
    except EngineError as e:
        raise BughouseMatchError(str(e)) from None
    depth = None
    startup = 10.0
    for k, v in opts.items():
        try:
            if k == "depth":
                depth = int(v)
            elif k in ("startup", "timeout"):
                startup = float(v)
            else:
                raise BughouseMatchError(f"unknown option {k!r} of {head}; known: depth, startup")
        except ValueError as e:
            if isinstance(e, BughouseMatchError):
                raise
            raise BughouseMatchError(f"bad value {v!r} for {k} in {spec!r}") from None
    return XBoardSeat(spec, [path], startup, depth, opts)


# ---------------------------------------------------------------------------------------- storing

def bpgn_text(key: str, run: str, rnd: int, names: Sequence[str], res: GameResult, started: float,
              source: str = "") -> str:
    game = res.game
    date = _dt.datetime.fromtimestamp(started, _dt.timezone.utc).strftime("%Y.%m.%d")
    tc = "-" if not game.timed else f"{game.base_ms / 1000:g}+{game.inc_ms / 1000:g}"
    tags = [("Event", run), ("Site", "searchbench"), ("Date", date), ("Round", str(rnd)),
            ("WhiteA", names[0]), ("BlackA", names[1]), ("WhiteB", names[2]), ("BlackB", names[3]),
            ("TimeControl", tc), ("Result", res.result), ("Termination", res.reason), ("GameId", game_id(source, key))]
    head = "".join(f'[{k} "{str(v).replace(chr(34), chr(39))}"]\n' for k, v in tags)
    movetext = bpgn_movetext(game)
    return head + "\n" + (movetext + " " if movetext else "") + res.result + "\n\n"


class BughouseStore:
    """:class:`Store` plus the ``bughouse_games`` table, in one SQLite file."""

    def __init__(self, path: str | Path, lock: bool = False) -> None:
        self.store = Store(path, lock=lock)
        self.store.db.executescript(BPGN_TABLE)

    def close(self) -> None:
        self.store.close()

    def done_keys(self) -> set[str]:
        return self.store.done_keys()

    def add(self, record: GameRecord, seats: list[dict[str, Any]], times: list[int],
            ptells: list[tuple[int, int, str]], fen: str, bpgn: str) -> bool:
        self.store.db.execute("INSERT OR REPLACE INTO bughouse_games VALUES (?,?,?,?,?,?)",
                              (record.key, json.dumps(seats, sort_keys=True), json.dumps(times),
                               json.dumps(ptells), fen, bpgn))
        return self.store.add(record)

    def details(self, key: str) -> dict[str, Any] | None:
        row = self.store.db.execute("SELECT seats, times, ptells, fen, bpgn FROM bughouse_games WHERE key = ?",
                                    (key,)).fetchone()
        if row is None:
            return None
        return {"seats": json.loads(row[0]), "times": json.loads(row[1]), "ptells": json.loads(row[2]),
                "fen": row[3], "bpgn": row[4]}

    def bpgn_of(self, keys: Sequence[str]) -> list[str]:
        out = []
        for k in keys:
            d = self.details(k)
            if d is not None:
                out.append(d["bpgn"])
        return out


def rebuild_game(record: GameRecord, details: dict[str, Any]) -> BughouseGame:
    """The stored game replayed (moves and their times): a check that what is stored is complete."""
    base = details["seats"][0].get("base_ms", -1) if details["seats"] else -1
    inc = details["seats"][0].get("inc_ms", 0) if details["seats"] else 0
    g = BughouseGame(details["fen"], base, inc)
    for text, t in zip(record.moves, details["times"]):
        bid, m = g.parse(text)
        g.push(bid, m, t)
    return g


# ---------------------------------------------------------------------------------------- match

@dataclass
class MatchSummary:
    played: int = 0
    skipped: int = 0
    wins: int = 0       # for team A
    draws: int = 0
    losses: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def line(self, a: str, b: str) -> str:
        from experiments.harness.ratings import score_text

        return (f"{a} vs {b}: {score_text(self.wins, self.draws, self.losses)}; "
                f"played {self.played}, resumed past {self.skipped}")


def match_key(a: TeamSpec, b: TeamSpec, base_ms: int, inc_ms: int, seed: int) -> str:
    return f"bughouse:{a.name}|{b.name}|{base_ms}+{inc_ms}|s{seed}"


def run_match(team_a: str, team_b: str, games: int, base_ms: int, inc_ms: int, db: str | Path,
              bpgn: str | Path | None = None, seed: int = 1, run: str = "bughouse-match",
              max_plies: int = 600, progress: bool = True,
              seat_factory: Callable[[str, int, dict[str, Evaluator]], Seat] = make_seat) -> MatchSummary:
    """Play ``games`` games of team A vs team B (colours alternating per pair), storing each."""
    if games < 1:
        raise BughouseMatchError(f"--games must be >= 1, got {games}")
    if base_ms <= 0 or inc_ms < 0:
        raise BughouseMatchError("the time control needs a positive base time and a non-negative increment")
    a, b = parse_team(team_a), parse_team(team_b)
    bpgn_path = Path(bpgn) if bpgn else Path(str(db)).with_suffix(".bpgn")
    pgn_check(bpgn_path, "BPGN file")
    store = BughouseStore(db, lock=True)
    match = match_key(a, b, base_ms, inc_ms, seed)
    keys = [f"{match}:{i}" for i in range(games)]
    done = store.done_keys()
    summary = MatchSummary()
    seats_of: dict[str, list[Seat]] = {}
    cache: dict[str, Evaluator] = {}
    try:
        stored_keys = [k for k in keys if k in done]
        have = ids_in(bpgn_path)  # the BPGN is appended to, never rewritten (see experiments/pgn.py)
        missing = [k for k in stored_keys if game_id(store.store.uid, k) not in have]
        if missing:
            append_text(bpgn_path, "".join(store.bpgn_of(missing)))
        stored = {r.key: r for r in store.store.games(match=match)} if stored_keys else {}
        for k in stored_keys:
            rec = stored[k]
            _count(summary, rec.result, rec.white == a.name, rec.reason)
        summary.skipped = len(stored_keys)
        todo = [i for i in range(games) if keys[i] not in done]
        if todo:
            # two seats per team, created once for the whole match
            seats_of["a"] = [seat_factory(a.seat_specs[0], seed, cache), seat_factory(a.seat_specs[1], seed + 1, cache)]
            seats_of["b"] = [seat_factory(b.seat_specs[0], seed + 2, cache), seat_factory(b.seat_specs[1], seed + 3, cache)]
        from tqdm import tqdm

        bar = tqdm(total=games, initial=summary.skipped, desc="bughouse", disable=not progress, dynamic_ncols=True)
        for i in todo:
            t0_team, t1_team = (a, b) if i % 2 == 0 else (b, a)
            s0, s1 = (seats_of["a"], seats_of["b"]) if i % 2 == 0 else (seats_of["b"], seats_of["a"])
            # team 0 = A-white + B-black; a team's first spec sits on board A
            seats = [s0[0], s1[0], s1[1], s0[1]]
            started = time.time()
            res = play_game(seats, base_ms, inc_ms, max_plies)
            names = [s.name for s in seats]
            seat_settings = [dict(s.settings(), seat=SEAT_NAMES[n], base_ms=base_ms, inc_ms=inc_ms)
                             for n, s in enumerate(seats)]
            rec = GameRecord(
                key=keys[i], run=run, match=match, pair=i // 2, variant="bughouse", white=t0_team.name,
                black=t1_team.name,
                white_settings={"team": t0_team.name, "seats": [seat_settings[0], seat_settings[3]]},
                black_settings={"team": t1_team.name, "seats": [seat_settings[1], seat_settings[2]]},
                opening="startpos", opening_fen=res.game.root_fen, opening_moves=[],
                moves=[p.text for p in res.moves], result=res.result, reason=res.reason,
                move_stats=[p.stat for p in res.moves], seed=seed, versions=versions(), started=started,
                finished=time.time())
            text = bpgn_text(keys[i], run, i + 1, names, res, started, store.store.uid)
            store.add(rec, seat_settings, [p.at_ms for p in res.moves], res.ptells, res.game.root_fen, text)
            append_text(bpgn_path, text)
            summary.played += 1
            _count(summary, res.result, t0_team is a, res.reason)
            bar.update(1)
            bar.set_postfix_str(f"+{summary.wins}={summary.draws}-{summary.losses}")
        bar.close()
    finally:
        for lst in seats_of.values():
            for s in lst:
                s.close()
        for ev in cache.values():
            ev.close()
        store.close()
    return summary


def _count(summary: MatchSummary, result: str, a_is_team0: bool, reason: str) -> None:
    key = reason.split(":")[0].split(" on board")[0]
    summary.reasons[key] = summary.reasons.get(key, 0) + 1
    if result == "1/2-1/2":
        summary.draws += 1
    elif (result == "1-0") == a_is_team0:
        summary.wins += 1
    else:
        summary.losses += 1
