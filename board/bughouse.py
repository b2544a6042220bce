"""Bughouse: two crazyhouse boards whose captures feed the partner's pocket.

Notation (fixed here, used by search, encoders and the match server)::

    board_id  0 = board A, 1 = board B
    color     WHITE = 0, BLACK = 1 (board.bitboards)
    seat      board_id * 2 + color: 0 A-white, 1 A-black, 2 B-white, 3 B-black
    team      board_id ^ color: team 0 = A-white + B-black, team 1 = A-black + B-white
    partner   the seat (1 - board_id, 1 - color): same team, other board, other colour
    result    "1-0" team 0 wins, "0-1" team 1 wins, "1/2-1/2" (board A's white is "White",
              as in python-chess-bughouse and BPGN)

Rules (SPEC.md section 1; FICS bughouse):

- Each board is a :class:`BughouseBoard`, a :class:`~board.position.CrazyhousePosition` whose
  capture hook ``_capture_to_pocket`` sends the captured piece to the *partner's* pocket: the other
  board, the colour the partner plays there (a promoted piece goes as a pawn). Move generation,
  drops, make/unmake and hashing are the crazyhouse ones; only the routing differs. The partner
  board's hash is updated incrementally when its pocket changes.
- Moves are asynchronous: :meth:`BughouseGame.push` names the board; :meth:`BughouseGame.pop`
  undoes in one global last-in-first-out order (a capture on A changed B's pocket, so B's later
  moves must be undone first). Make/unmake restores both boards, pockets and hashes exactly.
- Checkmate: a board is *really* mated (``is_checkmate``) when the side to move is in check, has no
  legal move, and no drop could ever block: a double check, or a contact/knight/pawn check with
  no empty square between checker and king. Otherwise a crazyhouse mate is only *temporary*
  (``is_temporary_checkmate`` and not ``is_checkmate``): the player waits for a piece from the
  partner (python-chess-bughouse's ``is_checkmate``/``is_temporary_checkmate``; its
  ``is_temporary_checkmate`` is true for real mates too, and so is ours). A side with no legal
  move and not in check also waits: no stalemate, no insufficient material in bughouse.
- The game ends at the first real checkmate on either board, a flag (a seat's clock reaches 0),
  a resignation or a draw by agreement. Untimed, if both sides to move are stuck (no legal move on
  either board) nothing can change and the game is drawn ("blocked"); timed, the stuck seat whose
  clock runs out first loses. Threefold repetition on one board (python-chess-bughouse's draw
  rule) ends the game only with ``claim_draw=True``; FICS-style bughouse servers play on.
- Clocks: one per seat, in integer milliseconds. Both boards' clocks run at once; the clock of
  the side to move on a board runs from that board's last move. ``push(..., at_ms=t)`` charges
  the mover ``t - last move time on that board`` and adds the increment; ``pop`` restores it.
  A game made with ``base_ms < 0`` is untimed and ignores times.

Formats:

- Two-board FEN ``fenA | fenB``, each a crazyhouse FEN with ``[pockets]`` and ``~`` for promoted
  pieces (python-chess-bughouse's ``BughouseBoards.fen()``).
- Our move notation names the board: ``A:e2e4``, ``B:N@f7``, ``A:e7e8q`` (board letter, colon, UCI;
  lower-case board letters accepted on input).
- python-chess-bughouse (PyPI ``python-chess-bughouse`` 0.28, which installs a package named
  ``chess`` and so cannot live beside python-chess: we convert strings instead of importing it):
  ``Move(from, to, promotion, drop, board_id)`` with ``BOARD_A = LEFT = 0``, ``BOARD_B = RIGHT = 1``;
  ``str(move)`` is ``"B1 e2e4"`` / ``"B2 N@f7"`` (board_id + 1, then UCI): :func:`to_bugchess_str`,
  :func:`from_bugchess_str`. Its colours are python-chess's (``WHITE = True``), ours are ints with
  WHITE = 0. Its BPGN move text is ``1A. e4 1a. e5 1B. d4 1b. Nf6``: move number, board letter
  upper-case for White's move and lower-case for Black's, ``". "``, SAN (drops ``N@f7``, pawn drops ``P@d5``; ``@d5`` is read too);
  ``BughouseBoards.parse_san("A. e4")`` reads the part after the number: :func:`bpgn_token`,
  :func:`parse_bpgn_token`.

Leaves of the two-board search (what :mod:`search.two_board` sends and the bughouse
evaluators read; ``Leaf.variant == "bughouse"``), defined here once:

- ``Leaf.state`` = ``raw_A + raw_B + (focus, clock_0, clock_1, clock_2, clock_3)``
  (:func:`leaf_state`): the two boards' ``Position.raw_state()`` (:data:`RAW_LEN` ints each), the
  *focus* board whose side to move's team the value is for, and the four seats' clocks in ms (-1
  untimed); :data:`STATE_LEN` ints in all.
- ``Leaf.moves`` are *two-board moves* ``board_id << BOARD_SHIFT | move`` (:func:`two_board_move`,
  :func:`split_move`; ``move`` as :mod:`board.moves`, bits 0-17), board A's first, then board B's.
  The null move on a board (:data:`SIT`, :func:`sit_move`) is that board's "sit": its side to move
  waits (for a piece from the partner, or for the opponents' clocks).
"""
from __future__ import annotations

from typing import Final

import chess
import chess.variant

from board.bitboards import (
    BB_BETWEEN, BISHOP, BLACK, KING, KNIGHT, PAWN, QUEEN, ROOK, WHITE, lsb, popcount,
)
from board.moves import move_from_uci, move_to_uci
from board.position import CrazyhousePosition, Position, more_than_one

BOARD_A: Final = 0
BOARD_B: Final = 1
#: two-board moves and leaf states (module docstring)
BOARD_SHIFT: Final = 18
MOVE_MASK: Final = (1 << BOARD_SHIFT) - 1
SIT: Final = 0
RAW_LEN: Final = 16
STATE_LEN: Final = 2 * RAW_LEN + 5
#: the prior a bughouse evaluator gives a sit move (LazyBug); the board's real moves share the rest
SIT_PRIOR: Final = 0.01
BOARD_LETTERS: Final = "AB"
CRAZYHOUSE_START: Final = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"
BUGHOUSE_STARTING_FEN: Final = ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | "
                                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1")
# Terminations reported by BughouseGame.outcome().
CHECKMATE: Final = "checkmate"
FLAG: Final = "flag"
RESIGNATION: Final = "resignation"
AGREEMENT: Final = "agreement"
BLOCKED: Final = "blocked"
REPETITION: Final = "threefold_repetition"


class BughouseError(ValueError):
    """Bad bughouse input: a malformed two-board FEN or move, an illegal move, a bad clock time."""


def seat_of(board_id: int, color: int) -> int:
    return board_id * 2 + color


def team_of(board_id: int, color: int) -> int:
    """Team 0 = A-white + B-black, team 1 = A-black + B-white."""
    return board_id ^ color


def team_result(winning_team: int) -> str:
    return "1-0" if winning_team == 0 else "0-1"


class BughouseBoard(CrazyhousePosition):
    """One board of a bughouse game: crazyhouse, but captures go to the partner board's pocket.

    ``partner`` is the other board (set by :meth:`link`); a board without a partner sends captured
    pieces out of the game (useful for looking at one board alone).
    """

    board_id: int
    partner: BughouseBoard | None

    def __init__(self, fen: str | None = None, board_id: int = BOARD_A) -> None:
        self.board_id = board_id
        self.partner = None
        self.has_pockets = True
        self._init_empty()
        self.set_fen(CRAZYHOUSE_START if fen is None else fen)

    def link(self, other: BughouseBoard) -> None:
        """Make ``self`` and ``other`` partner boards."""
        self.partner = other
        other.partner = self

    @property
    def variant(self) -> str:
        return "bughouse"

    def _capture_to_pocket(self, color: int, pt: int, delta: int) -> None:
        # The partner plays the other colour on the other board: the piece joins their pocket.
        p = self.partner
        if p is not None:
            p._pocket_add(color ^ 1, pt, delta)

    # ------------------------------------------------------------------ game end

    def is_temporary_checkmate(self) -> bool:
        """In check with no legal move now (a crazyhouse mate, real or not)."""
        return self.is_check() and not self.has_legal_moves()

    def is_checkmate(self) -> bool:
        """A real bughouse mate: a crazyhouse mate that no dropped piece could ever block."""
        checkers = self.checkers_mask()
        if not checkers or self.has_legal_moves():
            return False
        if more_than_one(checkers):
            return True
        return BB_BETWEEN[self.king(self.turn) * 64 + lsb(checkers)] == 0

    def is_stalemate(self) -> bool:
        return False

    def can_mate_at_once(self) -> bool:
        """The side to move has a move that mates at once (:meth:`is_checkmate`), with its pockets
        as they are now."""
        for m in self.legal_moves():
            self.push(m)
            mate = self.is_checkmate()
            self.pop()
            if mate:
                return True
        return False

    def allows_mate_in_one(self, move: int) -> bool:
        """``move`` is a one-move blunder: after it the opponent can mate at once (pockets as they
        are now), and another legal move would not have let it."""
        self.push(move)
        allowed = self.can_mate_at_once()
        self.pop()
        if not allowed:
            return False
        for alt in self.legal_moves():
            self.push(alt)
            safe = not self.can_mate_at_once()
            self.pop()
            if safe:
                return True
        return False

    def has_insufficient_material(self, color: int) -> bool:
        return False

    def outcome(self, claim_draw: bool = True) -> tuple[str, str] | None:
        """This board alone: a real checkmate, or a threefold repetition with ``claim_draw``
        (the game's result is :meth:`BughouseGame.outcome`; "1-0" here means this board's White won)."""
        if self.is_checkmate():
            return ("0-1" if self.turn == WHITE else "1-0", CHECKMATE)
        if claim_draw and self.is_repetition(3):
            return ("1/2-1/2", REPETITION)
        return None

    def copy(self) -> Position:
        """A lone board (no partner, no history) at the current position."""
        return BughouseBoard(self.fen(), self.board_id)

    def _new(self) -> Position:
        return BughouseBoard(None, self.board_id)


def recent_move_ms(game: BughouseGame, n: int = 5) -> list[list[int]]:
    """Per seat, the thinking times (ms) of its last ``n`` moves in a timed game ([] if untimed)."""
    out: list[list[int]] = [[], [], [], []]
    if not game.timed:
        return out
    last = [0, 0]
    replay = BughouseGame(game.root_fen)
    for (bid, m), t in zip(game.move_stack, game._times):
        seat = seat_of(bid, replay.boards[bid].turn)
        if t >= 0:
            out[seat].append(t - last[bid])
            last[bid] = t
        replay.push(bid, m)
    return [v[-n:] for v in out]


def split_fen(fen: str) -> tuple[str, str]:
    """The two board FENs of ``fenA | fenB``; ``BughouseError`` if there are not exactly two."""
    parts = fen.split("|")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise BughouseError(f"a bughouse FEN is 'fenA | fenB' (two crazyhouse FENs): {fen!r}")
    return parts[0].strip(), parts[1].strip()


def format_move(board_id: int, m: int) -> str:
    """``A:e2e4``, ``B:N@f7``."""
    return BOARD_LETTERS[board_id] + ":" + move_to_uci(m)


def parse_move(text: str) -> tuple[int, int]:
    """``(board_id, move)`` from ``A:e2e4`` / ``b:N@f7`` (syntax only; legality is the game's)."""
    s = text.strip()
    if len(s) < 3 or s[1] != ":" or s[0].upper() not in BOARD_LETTERS:
        raise BughouseError(f"a bughouse move is 'A:<uci>' or 'B:<uci>', got {text!r}")
    return BOARD_LETTERS.index(s[0].upper()), _parse_uci(s[2:], text)


def _parse_uci(uci: str, text: str) -> int:
    try:
        m = move_from_uci(uci)
    except ValueError as e:
        raise BughouseError(f"malformed move {text!r}: {e}") from None
    if m == 0:
        raise BughouseError(f"malformed move {text!r}: null moves are not bughouse moves")
    return m


def to_bugchess_str(board_id: int, m: int) -> str:
    """python-chess-bughouse's ``str(Move)``: ``B1 e2e4`` (board A), ``B2 N@f7`` (board B)."""
    return f"B{board_id + 1} {move_to_uci(m)}"


def from_bugchess_str(text: str) -> tuple[int, int]:
    """Inverse of :func:`to_bugchess_str`."""
    parts = text.split()
    if len(parts) != 2 or parts[0] not in ("B1", "B2"):
        raise BughouseError(f"expected python-chess-bughouse move 'B1 <uci>' or 'B2 <uci>', got {text!r}")
    return int(parts[0][1]) - 1, _parse_uci(parts[1], text)


def two_board_move(board_id: int, m: int) -> int:
    """The two-board move of move ``m`` (:data:`SIT` for a sit) on board ``board_id``."""
    return (board_id << BOARD_SHIFT) | m


def sit_move(board_id: int) -> int:
    """The sit move of a board."""
    return board_id << BOARD_SHIFT


def split_move(bm: int) -> tuple[int, int]:
    """(board_id, move) of a two-board move."""
    return bm >> BOARD_SHIFT, bm & MOVE_MASK


def leaf_state(game: "BughouseGame", focus: int, clocks: list[int] | None = None) -> tuple[int, ...]:
    """The leaf state of a game position for the side to move on board ``focus`` (clocks in ms per
    seat, default: the game's as of its last move; -1 untimed)."""
    if clocks is None:
        clocks = [game.time_left(s) for s in range(4)]
    return (game.boards[0].raw_state() + game.boards[1].raw_state()
            + (focus, int(clocks[0]), int(clocks[1]), int(clocks[2]), int(clocks[3])))


def partner_seat(seat: int) -> int:
    """Same team, other board, other colour."""
    return 3 - seat


def to_python_chess(b: BughouseBoard) -> chess.variant.CrazyhouseBoard:
    """python-chess's CrazyhouseBoard at this board's position (pockets included, no history:
    the pockets' history lives on the other board, so a replay from the root would not work)."""
    return chess.variant.CrazyhouseBoard(b.fen())


class BughouseGame:
    """Two linked boards, a global move order, clocks per seat, the result."""

    boards: list[BughouseBoard]
    root_fen: str
    base_ms: int
    inc_ms: int
    _clock: list[int]       # remaining ms per seat, as of that board's last move
    _last: list[int]        # per board: time of its last move (its side to move's clock runs since)
    _now: int               # time of the latest timed event
    _order: list[int]       # board id of every ply, in play order
    _times: list[int]       # at_ms of every ply (-1 untimed)
    _undo: list[int]        # per ply: mover's clock, board's last-move time, game time before it
    _declared: tuple[str, str, int] | None

    def __init__(self, fen: str | None = None, base_ms: int = -1, inc_ms: int = 0) -> None:
        fen_a, fen_b = split_fen(BUGHOUSE_STARTING_FEN if fen is None else fen)
        try:
            a = BughouseBoard(fen_a, BOARD_A)
            b = BughouseBoard(fen_b, BOARD_B)
        except ValueError as e:  # a bad board FEN: say so as a bughouse input error
            raise BughouseError(str(e)) from None
        a.link(b)
        self.boards = [a, b]
        self.root_fen = self.fen()
        self.base_ms = base_ms
        self.inc_ms = inc_ms
        self._clock = [base_ms, base_ms, base_ms, base_ms]
        self._last = [0, 0]
        self._now = 0
        self._order = []
        self._times = []
        self._undo = []
        self._declared = None

    # ------------------------------------------------------------------ state

    def fen(self) -> str:
        return self.boards[0].fen() + " | " + self.boards[1].fen()

    @property
    def timed(self) -> bool:
        return self.base_ms >= 0

    def turn(self, board_id: int) -> int:
        return self.boards[board_id].turn

    def to_move_seat(self, board_id: int) -> int:
        return seat_of(board_id, self.boards[board_id].turn)

    def ply(self) -> int:
        return len(self._order)

    @property
    def move_stack(self) -> list[tuple[int, int]]:
        """``(board_id, move)`` of every ply in play order."""
        counters = [0, 0]
        out: list[tuple[int, int]] = []
        stacks = [self.boards[0].move_stack, self.boards[1].move_stack]
        for bid in self._order:
            out.append((bid, stacks[bid][counters[bid]]))
            counters[bid] += 1
        return out

    def key(self) -> tuple[int, int]:
        """The two boards' hashes (pockets, turn, castling, en passant included)."""
        return (int(self.boards[0].zobrist), int(self.boards[1].zobrist))

    # ------------------------------------------------------------------ moves

    def legal_moves(self, board_id: int) -> list[int]:
        return self.boards[board_id].legal_moves()

    def is_legal(self, board_id: int, m: int) -> bool:
        return m in self.boards[board_id].legal_moves()

    def push(self, board_id: int, m: int, at_ms: int = -1) -> None:
        """Make a legal move on a board (not checked: see :meth:`push_str`). ``at_ms``: the game
        time of the move (ms since the start) for timed games; -1 does not touch the clocks.
        A server checks ``outcome(at_ms)`` first: a move after the mover's flag fell is too late."""
        b = self.boards[board_id]
        seat = seat_of(board_id, b.turn)
        self._undo.append(self._clock[seat])
        self._undo.append(self._last[board_id])
        self._undo.append(self._now)
        if at_ms >= 0 and self.base_ms >= 0:
            self._clock[seat] -= at_ms - self._last[board_id]
            self._clock[seat] += self.inc_ms
            self._last[board_id] = at_ms
            self._now = at_ms
        self._order.append(board_id)
        self._times.append(at_ms)
        b.push(m)

    def pop(self) -> tuple[int, int]:
        """Undo the last ply (on whichever board it was) and return ``(board_id, move)``."""
        if not self._order:
            raise IndexError("pop from an empty bughouse game")
        board_id = self._order.pop()
        self._times.pop()
        m = self.boards[board_id].pop()
        now = self._undo.pop()
        last = self._undo.pop()
        clock = self._undo.pop()
        self._now = now
        self._last[board_id] = last
        self._clock[seat_of(board_id, self.boards[board_id].turn)] = clock
        return (board_id, m)

    def parse(self, text: str) -> tuple[int, int]:
        """``(board_id, move)`` for ``A:e2e4``; ``BughouseError`` if malformed or illegal."""
        board_id, m = parse_move(text)
        if not self.is_legal(board_id, m):
            raise BughouseError(f"illegal move {text!r} on board {BOARD_LETTERS[board_id]}: "
                                f"{self.boards[board_id].fen()}")
        return (board_id, m)

    def push_str(self, text: str, at_ms: int = -1) -> tuple[int, int]:
        board_id, m = self.parse(text)
        self.check_time(at_ms)
        self.push(board_id, m, at_ms)
        return (board_id, m)

    def check_time(self, at_ms: int) -> None:
        if at_ms >= 0 and self.base_ms >= 0 and at_ms < self._now:
            raise BughouseError(f"move time {at_ms} ms is before the previous event at {self._now} ms")

    def copy(self) -> BughouseGame:
        """An independent game with the same root, moves, times and declared result."""
        g = BughouseGame(self.root_fen, self.base_ms, self.inc_ms)
        for (bid, m), t in zip(self.move_stack, self._times):
            g.push(bid, m, t)
        g._declared = self._declared
        return g

    # ------------------------------------------------------------------ clocks

    def time_left(self, seat: int, at_ms: int = -1) -> int:
        """ms left on a seat's clock at game time ``at_ms`` (its running time counted if it is to
        move); -1 for an untimed game. With ``at_ms`` -1: as of the latest event."""
        if self.base_ms < 0:
            return -1
        board_id = seat >> 1
        left = self._clock[seat]
        if self.boards[board_id].turn == (seat & 1):
            t = self._now if at_ms < 0 else at_ms
            left -= t - self._last[board_id]
        return left

    def set_clock(self, seat: int, ms: int) -> None:
        """Set a seat's remaining time (as of its board's last move), e.g. from a server."""
        self._clock[seat] = ms

    def flag_seat(self, at_ms: int) -> int:
        """The seat whose flag fell first by game time ``at_ms``, or -1."""
        if self.base_ms < 0 or at_ms < 0:
            return -1
        best = -1
        best_deadline = 0
        for board_id in range(2):
            seat = self.to_move_seat(board_id)
            deadline = self._last[board_id] + self._clock[seat]
            if deadline <= at_ms and (best < 0 or deadline < best_deadline):
                best = seat
                best_deadline = deadline
        return best

    # ------------------------------------------------------------------ results

    def resign(self, team: int) -> None:
        self._declared = (team_result(team ^ 1), RESIGNATION, -1)

    def agree_draw(self) -> None:
        self._declared = ("1/2-1/2", AGREEMENT, -1)

    def outcome(self, at_ms: int = -1, claim_draw: bool = False) -> tuple[str, str, int] | None:
        """``(result, termination, board_id)`` once the game is over, else None. ``board_id`` is
        the board where it was decided (-1 for resignation or agreement); see the module
        docstring for the rules. ``at_ms``: game time for the flag check (timed games)."""
        if self._declared is not None:
            return self._declared
        for board_id in range(2):
            b = self.boards[board_id]
            if b.is_checkmate():
                return (team_result(team_of(board_id, b.turn) ^ 1), CHECKMATE, board_id)
        flagged = self.flag_seat(at_ms)
        if flagged >= 0:
            return (team_result(team_of(flagged >> 1, flagged & 1) ^ 1), FLAG, flagged >> 1)
        if not self.boards[0].has_legal_moves() and not self.boards[1].has_legal_moves():
            if self.base_ms < 0:
                return ("1/2-1/2", BLOCKED, -1)
            # Nobody can ever move again: the first clock to run out decides.
            first = self.flag_seat(max(self._last[0] + self._clock[self.to_move_seat(0)],
                                       self._last[1] + self._clock[self.to_move_seat(1)]))
            return (team_result(team_of(first >> 1, first & 1) ^ 1), FLAG, first >> 1)
        if claim_draw:
            for board_id in range(2):
                if self.boards[board_id].is_repetition(3):
                    return ("1/2-1/2", REPETITION, board_id)
        return None

    def is_game_over(self, at_ms: int = -1, claim_draw: bool = False) -> bool:
        return self.outcome(at_ms, claim_draw) is not None

    def result(self, at_ms: int = -1, claim_draw: bool = False) -> str:
        o = self.outcome(at_ms, claim_draw)
        return "*" if o is None else o[0]

    # ------------------------------------------------------------------ material

    def material(self, color: int) -> list[int]:
        """Pieces of one colour on both boards and in both pockets, by type (index PAWN..KING;
        promoted pieces count as pawns): always [0, 16, 4, 4, 4, 2, 2] from the start position."""
        counts = [0] * 7
        for b in self.boards:
            own = b.colors[color]
            counts[PAWN] += popcount(own & b.promoted)
            for pt in range(1, 7):
                counts[pt] += popcount(b.pieces[pt] & own & ~b.promoted)
                if pt != KING:
                    counts[pt] += b.pocket_count(color, pt)
        return counts

    # ------------------------------------------------------------------ BPGN / python-chess-bughouse

    def san(self, board_id: int, m: int) -> str:
        """SAN of a legal move on a board, from python-chess; drops ``N@f7`` and, for pawns, the
        standard ``P@d5`` (python-chess writes ``@d5``; both are read back)."""
        s = to_python_chess(self.boards[board_id]).san(chess.Move.from_uci(move_to_uci(m)))
        return "P" + s if s.startswith("@") else s

    def __repr__(self) -> str:
        return f"BughouseGame({self.fen()!r})"


def perft(game: BughouseGame, depth: int) -> int:
    """Leaves of the two-board move tree ``depth`` plies deep, every node made and unmade: a node's
    children are the legal moves of board A followed by those of board B (moves are asynchronous,
    so both boards always have a side to move). Compared with python-chess-bughouse in the tests."""
    if depth <= 0:
        return 1
    total = 0
    for board_id in range(2):
        for m in game.boards[board_id].legal_moves():
            game.push(board_id, m)
            total += perft(game, depth - 1)
            game.pop()
    return total


def bpgn_token(game: BughouseGame, board_id: int, m: int) -> str:
    """The BPGN move text python-chess-bughouse writes for a legal move before it is made:
    ``1A. e4`` (board A, White), ``1a. e5`` (board A, Black), ``3B. N@f7+``."""
    b = game.boards[board_id]
    letter = BOARD_LETTERS[board_id]
    return f"{b.fullmove_number}{letter if b.turn == WHITE else letter.lower()}. {game.san(board_id, m)}"


def parse_bpgn_token(game: BughouseGame, token: str) -> tuple[int, int]:
    """``(board_id, move)`` from BPGN text ``1A. e4`` or ``A. e4`` (a move number is optional;
    the letter's case must match the side to move on that board); ``BughouseError`` if bad."""
    s = token.strip().lstrip("0123456789")
    if len(s) < 4 or s[0] not in "ABab" or s[1] != ".":
        raise BughouseError(f"a BPGN move is like '1A. e4', got {token!r}")
    board_id = BOARD_LETTERS.index(s[0].upper())
    b = game.boards[board_id]
    if (s[0].isupper()) != (b.turn == WHITE):
        raise BughouseError(f"{token!r}: it is {'White' if b.turn == WHITE else 'Black'}'s move on board {s[0].upper()}")
    san = s[2:].strip()
    try:
        mv = to_python_chess(b).parse_san(san)
    except ValueError as e:
        raise BughouseError(f"bad BPGN move {token!r}: {e}") from None
    return (board_id, move_from_uci(mv.uci()))


def bpgn_movetext(game: BughouseGame) -> str:
    """The game's moves as BPGN move text in play order, ``1A. e4 1B. d4 1a. e5 ...``; in a timed
    game each move is followed by the mover's remaining time in seconds, ``1A. e4 {59.3}``."""
    replay = BughouseGame(game.root_fen, game.base_ms, game.inc_ms)
    tokens: list[str] = []
    for (board_id, m), t in zip(game.move_stack, game._times):
        token = bpgn_token(replay, board_id, m)
        seat = replay.to_move_seat(board_id)
        replay.push(board_id, m, t)
        if t >= 0 and replay.base_ms >= 0:
            token += " {%.1f}" % (replay.time_left(seat) / 1000)
        tokens.append(token)
    return " ".join(tokens)


def parse_bpgn_movetext(text: str, fen: str | None = None) -> BughouseGame:
    """An untimed game from BPGN move text (as :func:`bpgn_movetext` writes; ``{...}`` comments and
    a trailing result are skipped); ``BughouseError`` naming the first bad move."""
    game = BughouseGame(fen)
    depth = 0
    token = ""
    words: list[str] = []
    for ch in text + " ":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            if ch.isspace():
                if token:
                    words.append(token)
                token = ""
            else:
                token += ch
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("1-0", "0-1", "1/2-1/2", "*") and i == len(words) - 1:
            break
        if i + 1 >= len(words) or not w.endswith("."):
            raise BughouseError(f"expected a BPGN move like '1A. e4' at {' '.join(words[i:i + 2])!r}")
        board_id, m = parse_bpgn_token(game, w + " " + words[i + 1])
        game.push(board_id, m)
        i += 2
    return game


# BughouseGame.material(color) from the standard start, by piece type (index PAWN..KING).
STARTING_MATERIAL: Final = (0, 16, 4, 4, 4, 2, 2)
