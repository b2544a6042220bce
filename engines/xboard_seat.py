"""The XBoard (CECP) bughouse seat: a program such as Sjeng 11.2 as one player of the four
(:class:`XBoardSeat`, a :class:`engines.seats.Seat`), with the CECP lines it needs.

Our own small dialogue on the one line driver of :mod:`engines.process` (python-chess's XBoard
engine has no ``holding``/``ptell``), following the conventions found by hand (below): ``new``,
``variant bughouse``, ``partner <name>``, ``easy`` (no pondering: two shared cores), ``nopost``,
``level 0 M:SS INC``, ``ping N`` (everything the program prints before ``pong N`` is stale, e.g. a
move of the previous game printed after ``force``, and is dropped); the White seat gets ``go`` at once;
``holding [W] [B]`` is sent whenever its board's pockets changed, before the next ``time``/``otim``/
move (never to a White seat before its first ``go``); an opponent's move goes as ``time``, ``otim``
(centiseconds) and the bare move. ``tellics ptell <text>`` is relayed as ``ptell <text>`` to the
partner seat if it is an XBoard seat (and logged with the game either way); other ``tellics`` lines
and result claims are ignored, but a claim means Sjeng has stopped playing this game ("temporary"
crazyhouse mates), so when it is next to move with a legal move the seat is restarted with the
custom-start sequence (``new``, ... , ``force``, ``black``/``white``, ``setboard <FEN without
pockets>``, ``holding``, ``time``, ``otim``, ``go``). The same restart follows an ``Illegal move``
complaint about a move we relayed.

Failures are the seats' (:mod:`engines.seats`): the program exits or closes its output (crash),
sends a malformed or illegal move or resigns: a forfeit for its team; a hung program runs out of
its real clock (flag). A crashed program is started again for the next game.

Sjeng and XBoard
----------------
:func:`xboard_holding` is the CECP ``holding`` line of a board.
Sjeng 11.2 (``/usr/games/sjeng``) over XBoard, as tried by hand (and read in its partner.c/crazy.c):

- ``xboard``, ``protover 2`` -> ``feature ... san=0 usermove=0 time=1 ... variants="normal,bughouse,
  crazyhouse,suicide,giveaway,losers" ... done=1``. Moves go both ways in bare coordinate form
  (``e2e4``, ``e7e8q``, drops ``N@e3``); it answers ``move <uci>`` and ``Illegal move: <text>``.
  ``time``/``otim`` are in centiseconds; ``level 0 <min> <inc>`` or ``st <s>`` set the control.
- Per seat: ``new``, ``variant bughouse``, ``partner <name>`` (it then prints ``tellics ptell
  Hello!...``, ``tellics set f5 bughouse``, ``tellics unseek``: ICS commands, ignore all ``tellics``
  lines except ``tellics ptell``). After ``new`` it plays Black; ``go`` makes it play the side to move.
- ``holding [White] [Black]`` (letters in any case; anything after, e.g. ICS ``+P``, is ignored)
  replaces both pockets. In bughouse Sjeng never adds captured pieces itself: the server sends
  ``holding`` after every pocket change on that board (partner-board captures, drops) before the
  next ``time``/``otim``/move. It also adds one phantom piece of each type missing from the
  *opponent's* pocket, judged by the colour it plays *when the line arrives*: a White seat must not
  get ``holding`` before its first ``go`` (it would think it is Black, give the phantoms to itself
  and drop pieces it does not have: seen ``B@f1`` with empty pockets). Custom start for a White seat:
  ``force``, ``black`` (engine White, not started), ``setboard <FEN without pockets>``, ``holding``,
  ``go``. It accepts opponent drops of phantom pieces too: the server validates every move.
- Partner talk: it writes ``tellics ptell <text>`` (forward ``<text>`` to the partner seat) and reads
  ``ptell <text>``: ``sit`` (it stops moving: "Ok, I sit next move. Tell me when to go."), ``go`` or
  ``move``, ``fast``, ``slow``, ``+``/``++``/``+++`` and ``-``/``--``/``---`` with piece letters
  ``pnbrq``, ``d`` (p, b, q), ``h`` (r, q) or ``trades`` (value of getting / losing that piece; +++
  = it mates), ``x`` or ``=`` (standard values), ``dead``, ``abort``, ``flag``, ``help``. It tells
  ``---p`` ... ``---q`` when that drop by its opponent would mate it, ``p doesn't mate me anymore``.
- Mates are judged by crazyhouse rules on its own pockets: at a temporary mate it prints ``0-1
  {Black Mates}`` / ``1-0 {White Mates}`` and never moves again in that game (neither ``holding``,
  ``go``, ``undo`` nor ``setboard`` revive it; ``new`` and the custom-start sequence above do). The
  server ignores engine result claims (only a real mate, a flag or an agreement ends the game) and
  restarts such a seat when material arrives.
- It ponders whenever it is not to move (``easy`` turns that off).
"""
from __future__ import annotations

import logging
import queue
import time
from typing import TYPE_CHECKING, Any, Sequence

from board import move_to_uci
from board.bitboards import BISHOP, BLACK, KNIGHT, PAWN, QUEEN, ROOK, WHITE
from board.bughouse import BughouseGame, seat_of
from board.position import Position
from engines.base import EngineError
from engines.process import LineProcess
from engines.seats import GameContext, Seat, SeatError

if TYPE_CHECKING:
    from engines.process import LineProcess

log = logging.getLogger(__name__)


def xboard_holding(b: Position) -> str:
    """The CECP ``holding [White] [Black]`` line for a board's pockets, e.g. ``holding [QPP] [n]``."""
    parts = []
    for color in (WHITE, BLACK):
        text = ""
        for pt in (QUEEN, ROOK, BISHOP, KNIGHT, PAWN):
            sym = "pnbrq"[pt - 1]
            text += (sym.upper() if color == WHITE else sym) * b.pocket_count(color, pt)
        parts.append("[" + text + "]")
    return "holding " + " ".join(parts)




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
        self.process: LineProcess | None = None
        self.pings = 0
        self.awaiting_pong = ""
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.transcript: list[str] = []
        self._start_process()

    def settings(self) -> dict[str, Any]:
        """Spec and, for the game just played, how often the program was restarted mid-game."""
        return {"name": self.name, "kind": self.kind, "command": self.command, "options": self.options,
                "restarts": getattr(self, "restarts", 0)}

    # -- process (the one line driver, engines/process.py)
    def _start_process(self) -> None:
        try:
            self.process = LineProcess(self.command, merge_stderr=True)
        except EngineError as e:
            raise SeatError(str(e)) from None
        self.lines = self.process.lines
        self.send("xboard")
        self.send("protover 2")
        deadline = time.monotonic() + self.startup_s
        while True:
            try:
                line = self.process.read(deadline - time.monotonic())
            except queue.Empty:
                line = None
            if line is None:
                self.kill()
                raise SeatError(f"{self.name}: no 'feature ... done=1' within {self.startup_s:g} s "
                                         f"of starting {' '.join(self.command)}")
            if line.startswith("feature") and "done=1" in line:
                break

    def send(self, line: str) -> bool:
        if self.process is None:
            return False
        self.transcript.append("> " + line)
        return self.process.send(line)

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.kill()

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
        if self.process is None or not self.process.running:
            self.restart_process()
        while True:  # drop what is left from the previous game
            try:
                if self.lines.get_nowait() is None:
                    self.restart_process()
                    break
            except queue.Empty:
                break
        b = ctx.game.boards[self.board_id]
        if b.fen() != BughouseGame().boards[self.board_id].fen():
            self._custom_start(ctx)
            return
        for line in self._level(ctx):
            self.send(line)
        self._ping()
        if ctx.to_move(seat) and b.has_legal_moves():
            self._send_clocks(ctx)
            self.send("go")
            self.gone = True
            self.thinking = True

    def _custom_start(self, ctx: GameContext) -> None:
        """A game from an opening position (White to move, as found with Sjeng): the White seat
        starts as after a claimed result (:meth:`_restart_sequence`); the Black seat gets ``new``
        (it plays Black) and ``setboard``, and answers White's first move."""
        b = ctx.game.boards[self.board_id]
        if b.turn != 0:
            raise SeatError(f"{self.name}: an XBoard seat starts from a position with White to move, "
                            f"not {b.fen()!r}")
        if self.color == 0:
            self._restart_sequence(ctx)
            self.restarts = 0
            return
        for line in self._level(ctx):
            self.send(line)
        self._ping()
        self.send("setboard " + fen_without_pockets(b.fen()))
        self._sync_holding(ctx)

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
                code = self.process.exit_code() if self.process is not None else None
                ctx.forfeit(self.seat, f"crash: {self.name} exited" + (f" with code {code}" if code is not None else ""))
                self.kill()
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
        if self.process is not None and self.process.running:
            self.send("force")
            self.send(f"result {result} {{{reason}}}")
