"""Positions: state, legal move generation, make/unmake, hashing, game end, FEN.

State of a :class:`Position` (every field an unboxed int under mypyc)::

    colors[c]       occupancy of colour c (WHITE = 0, BLACK = 1)
    pieces[pt]      occupancy of piece type pt (PAWN = 1 .. KING = 6), both colours
    mailbox[sq]     piece code ``color << 3 | piece_type`` on sq, 0 if empty
    promoted        pieces that were pawns (crazyhouse: they go back to a pocket as pawns)
    pockets         packed counts, 6 bits per (colour, piece type): see ``_pocket_shift``
    turn, castling (bits WK=1 WQ=2 BK=4 BK=8), ep_square (-1 unless an en-passant capture is
    *legal*, as python-chess prints FENs), halfmove_clock, fullmove_number, zobrist

The undo stack holds three words per ply: the move, a packed state word (castling, ep, halfmove,
captured piece, promoted flags) and the hash before the move; ``pop`` restores from it, nothing is
copied per move.

Variants are subclasses with small hooks (as in python-chess): ``has_pockets`` turns on drops,
promoted-piece tracking in the hash and the crazyhouse draw rules; ``_capture_to_pocket`` is where a
captured piece goes (own pocket in crazyhouse, the partner's board in bughouse).

Rules choices: chess has the 50-move rule (claimable at 100 plies, as ``is_fifty_moves``),
crazyhouse has none (as python-chess and lichess); threefold repetition compares hashes, which
include pockets and promoted pieces in crazyhouse.
"""
from __future__ import annotations

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64, mypyc_attr, trait

from board.bitboards import (
    BB_BACKRANKS, BB_BETWEEN, BB_DARK_SQUARES, BB_FILES, BB_KING_ATTACKS, BB_KNIGHT_ATTACKS,
    BB_LIGHT_SQUARES, BB_LINE, BB_PAWN_ATTACKS, BB_RANKS, BB_SQUARES, BISHOP, BLACK, INT64_MIN,
    KING, KNIGHT, PAWN, PIECE_SYMBOLS, QUEEN, ROOK, SQUARE_NAMES, WHITE, bishop_attacks_mask, lsb,
    Bitboard, Color, PieceType, Square, popcount, rook_attacks_mask, parse_square,
)
from board.moves import Move, move_from_uci, move_to_uci
from board.zobrist import Z_CASTLING, Z_EP_FILE, Z_PIECE, Z_POCKET, Z_PROMOTED, Z_TURN

STARTING_FEN: Final = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
STARTING_BOARD: Final = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"

CASTLE_WK: Final = 1
CASTLE_WQ: Final = 2
CASTLE_BK: Final = 4
CASTLE_BQ: Final = 8
# Castling rights lost when a move touches a square (from or to).
_CASTLE_CLEAR: Final = vec[i64](
    [{0: CASTLE_WQ, 4: CASTLE_WK | CASTLE_WQ, 7: CASTLE_WK,
      56: CASTLE_BQ, 60: CASTLE_BK | CASTLE_BQ, 63: CASTLE_BK}.get(s, 0) for s in range(64)])
_ROOK_PSEUDO: Final = vec[i64]([rook_attacks_mask(s, 0) for s in range(64)])
_BISHOP_PSEUDO: Final = vec[i64]([bishop_attacks_mask(s, 0) for s in range(64)])
# Squares (f, g) / (b, c, d) that must be empty, and (f, g) / (d, c) that must not be attacked.
_CASTLE_EMPTY: Final = vec[i64]([BB_SQUARES[5] | BB_SQUARES[6], BB_SQUARES[1] | BB_SQUARES[2] | BB_SQUARES[3],
                                 BB_SQUARES[61] | BB_SQUARES[62], BB_SQUARES[57] | BB_SQUARES[58] | BB_SQUARES[59]])

# Packed undo word: castling 4 bits | ep+1 7 bits | captured code 4 bits | flags 3 bits | halfmove.
_F_CAP_PROMOTED: Final = 1 << 15
_F_MOVED_PROMOTED: Final = 1 << 16
_F_EN_PASSANT: Final = 1 << 17
_HALFMOVE_SHIFT: Final = 18
#: the largest half-move clock and move number a FEN may give (a game of that many moves cannot be
#: played; the counters are packed into 64-bit words, where 10^20 overflowed)
MAX_FEN_COUNTER: Final = 100_000


# Indices into Position.raw_state().
#: :meth:`Position.search_end`'s answers, for the side to move
END_NONE: Final = 0
END_LOST: Final = 1
END_DRAWN: Final = 2
END_WON: Final = 3

RAW_WHITE: Final = 0
RAW_BLACK: Final = 1
RAW_PIECES: Final = 1  # RAW_PIECES + pt for pt in PAWN..KING
RAW_PROMOTED: Final = 8
RAW_POCKETS: Final = 9
RAW_TURN: Final = 10
RAW_CASTLING: Final = 11
RAW_EP: Final = 12
RAW_HALFMOVE: Final = 13
RAW_FULLMOVE: Final = 14
RAW_REPETITIONS: Final = 15


def _pocket_shift(color: int, pt: int) -> int:
    return (color * 5 + pt - 1) * 6


def more_than_one(b: i64) -> bool:
    """True if the bitboard has two or more squares (overflow-safe for a lone h8)."""
    return b != INT64_MIN and (b & (b - 1)) != 0


@mypyc_attr(allow_interpreted_subclasses=True)  # a variant's position may live outside board/ (tests/toy_variant.py)
class Position:
    """A chess position with its move history since the FEN it was set from."""

    has_pockets: bool
    colors: vec[i64]
    pieces: vec[i64]
    mailbox: vec[i64]
    promoted: i64
    pockets: i64
    turn: int
    castling: int
    ep_square: int
    halfmove_clock: int
    fullmove_number: int
    zobrist: i64
    root_fen: str
    _stack: vec[i64]
    _sp: int

    def __init__(self, fen: str | None = None) -> None:
        self.has_pockets = False
        self._init_empty()
        self.set_fen(STARTING_FEN if fen is None else fen)

    # ------------------------------------------------------------------ basic state

    def _init_empty(self) -> None:
        self.colors = vec[i64]([0, 0])
        self.pieces = vec[i64]([0] * 7)
        self.mailbox = vec[i64]([0] * 64)
        self.promoted = 0
        self.pockets = 0
        self.turn = WHITE
        self.castling = 0
        self.ep_square = -1
        self.halfmove_clock = 0
        self.fullmove_number = 1
        self.zobrist = 0
        self._stack = vec[i64]([0] * 768)
        self._sp = 0

    @property
    def variant(self) -> str:
        return "chess"

    @property
    def occupied(self) -> Bitboard:
        return self.colors[0] | self.colors[1]

    def piece_type_at(self, sq: Square) -> PieceType:
        return int(self.mailbox[sq] & 7)

    def color_at(self, sq: Square) -> Color:
        """Colour of the piece on sq, or -1 if the square is empty."""
        code = self.mailbox[sq]
        return int(code >> 3) if code else -1

    def pieces_mask(self, pt: PieceType, color: Color) -> Bitboard:
        return self.pieces[pt] & self.colors[color]

    def king(self, color: Color) -> Square:
        k = self.pieces[KING] & self.colors[color]
        return lsb(k) if k else -1

    def pocket_count(self, color: Color, pt: PieceType) -> int:
        return int((self.pockets >> _pocket_shift(color, pt)) & 63)

    def ply(self) -> int:
        return self._sp // 3

    @property
    def move_stack(self) -> list[Move]:
        return [int(self._stack[i]) for i in range(0, self._sp, 3)]

    def peek(self) -> Move:
        return int(self._stack[self._sp - 3]) if self._sp else 0

    def raw_state(self) -> tuple[int, ...]:
        """A snapshot for batch encoders (numpy over raw bitboards), see ``RAW_*`` indices:
        (white, black, P, N, B, R, Q, K occupancy, promoted, pockets, turn, castling, ep_square,
        halfmove_clock, fullmove_number, repetitions) with bitboards as signed 64-bit ints and
        ``repetitions`` the number of earlier occurrences of this position (0, 1 or 2+)."""
        reps = 2 if self.is_repetition(3) else (1 if self.is_repetition(2) else 0)
        return (int(self.colors[0]), int(self.colors[1]), int(self.pieces[1]), int(self.pieces[2]),
                int(self.pieces[3]), int(self.pieces[4]), int(self.pieces[5]), int(self.pieces[6]),
                int(self.promoted), int(self.pockets), self.turn, self.castling, self.ep_square,
                self.halfmove_clock, self.fullmove_number, reps)

    # ------------------------------------------------------------------ piece updates (hashed)

    def _put(self, sq: int, code: int) -> None:
        b = BB_SQUARES[sq]
        self.colors[code >> 3] |= b
        self.pieces[code & 7] |= b
        self.mailbox[sq] = code
        self.zobrist ^= Z_PIECE[code * 64 + sq]

    def _remove(self, sq: int, code: int) -> None:
        b = BB_SQUARES[sq]
        self.colors[code >> 3] ^= b
        self.pieces[code & 7] ^= b
        self.mailbox[sq] = 0
        self.zobrist ^= Z_PIECE[code * 64 + sq]

    def _shift(self, frm: int, to: int, code: int) -> None:
        b = BB_SQUARES[frm] | BB_SQUARES[to]
        self.colors[code >> 3] ^= b
        self.pieces[code & 7] ^= b
        self.mailbox[frm] = 0
        self.mailbox[to] = code
        self.zobrist ^= Z_PIECE[code * 64 + frm] ^ Z_PIECE[code * 64 + to]

    def _toggle_promoted(self, b: i64, sq: int) -> None:
        self.promoted ^= b
        if self.has_pockets:
            self.zobrist ^= Z_PROMOTED[sq]

    def _pocket_add(self, color: int, pt: int, delta: int) -> None:
        """Variant hook: a piece of type pt enters (delta 1) or leaves (-1) colour's pocket."""
        sh = _pocket_shift(color, pt)
        n = (self.pockets >> sh) & 63
        idx = (color * 8 + pt) * 64
        self.zobrist ^= Z_POCKET[idx + n] ^ Z_POCKET[idx + n + delta]
        d: i64 = delta
        self.pockets += d << sh

    def _capture_to_pocket(self, color: int, pt: int, delta: int) -> None:
        """Variant hook: colour captured a piece of type pt (promoted pieces come as pawns), which
        enters (delta 1, push) or leaves again (-1, pop) a pocket: the capturer's own here, the
        partner's on the other board in bughouse (board/bughouse.py)."""
        self._pocket_add(color, pt, delta)

    # ------------------------------------------------------------------ attacks

    def attackers_mask(self, color: Color, sq: Square, occ: Bitboard) -> Bitboard:
        """Pieces of ``color`` attacking ``sq`` given occupancy ``occ``."""
        pieces = self.pieces
        att = ((BB_KNIGHT_ATTACKS[sq] & pieces[KNIGHT]) | (BB_KING_ATTACKS[sq] & pieces[KING])
               | (BB_PAWN_ATTACKS[(color ^ 1) * 64 + sq] & pieces[PAWN]))
        cbb = self.colors[color]
        diag = (pieces[BISHOP] | pieces[QUEEN]) & cbb
        if _BISHOP_PSEUDO[sq] & diag:
            att |= bishop_attacks_mask(sq, occ) & diag
        orth = (pieces[ROOK] | pieces[QUEEN]) & cbb
        if _ROOK_PSEUDO[sq] & orth:
            att |= rook_attacks_mask(sq, occ) & orth
        return att & cbb

    def is_attacked_by(self, color: Color, sq: Square) -> bool:
        return self.attackers_mask(color, sq, self.colors[0] | self.colors[1]) != 0

    def checkers_mask(self) -> Bitboard:
        k = self.pieces[KING] & self.colors[self.turn]
        if not k:
            return 0
        return self.attackers_mask(self.turn ^ 1, lsb(k), self.colors[0] | self.colors[1])

    def is_check(self) -> bool:
        return self.checkers_mask() != 0

    def _pinned_mask(self, us: int, ksq: int) -> i64:
        them = us ^ 1
        pieces = self.pieces
        opp = self.colors[them]
        occ = self.colors[0] | self.colors[1]
        snipers = ((_ROOK_PSEUDO[ksq] & (pieces[ROOK] | pieces[QUEEN]))
                   | (_BISHOP_PSEUDO[ksq] & (pieces[BISHOP] | pieces[QUEEN]))) & opp
        pinned: i64 = 0
        while snipers:
            s = lsb(snipers)
            snipers ^= BB_SQUARES[s]
            b = BB_BETWEEN[ksq * 64 + s] & occ
            if b and not more_than_one(b):
                pinned |= b
        return pinned & self.colors[us]

    def _ep_is_legal(self, frm: int, ep: int) -> bool:
        """Would the side to move's pawn on frm capturing en passant on ep leave its king safe?"""
        us = self.turn
        them = us ^ 1
        ksq = self.king(us)
        if ksq < 0:
            return True
        cap = ep - 8 if us == WHITE else ep + 8
        occ = ((self.colors[0] | self.colors[1]) ^ BB_SQUARES[frm] ^ BB_SQUARES[cap]) | BB_SQUARES[ep]
        pieces = self.pieces
        opp = self.colors[them] ^ BB_SQUARES[cap]
        if (BB_KNIGHT_ATTACKS[ksq] & pieces[KNIGHT] & opp) or (BB_PAWN_ATTACKS[us * 64 + ksq] & pieces[PAWN] & opp):
            return False
        if bishop_attacks_mask(ksq, occ) & (pieces[BISHOP] | pieces[QUEEN]) & opp:
            return False
        return not (rook_attacks_mask(ksq, occ) & (pieces[ROOK] | pieces[QUEEN]) & opp)

    def _legal_ep_square(self, ep: int) -> int:
        """ep if some pawn of the side to move can legally capture there, else -1."""
        cands = BB_PAWN_ATTACKS[(self.turn ^ 1) * 64 + ep] & self.pieces[PAWN] & self.colors[self.turn]
        while cands:
            s = lsb(cands)
            cands ^= BB_SQUARES[s]
            if self._ep_is_legal(s, ep):
                return ep
        return -1

    # ------------------------------------------------------------------ move generation

    def legal_moves(self) -> list[Move]:
        """All legal moves (drops included in crazyhouse), as ints (see :mod:`board.moves`)."""
        v = self.legal_moves_vec()
        return [int(v[i]) for i in range(len(v))]

    def legal_moves_vec(self) -> vec[i64]:
        """:meth:`legal_moves` as a native ``vec[i64]`` (same order; no boxed ints: for searches)."""
        return self.generate_legal_vec(vec[i64](capacity=64))  # room for most positions at once

    def generate_legal(self, moves: list[int]) -> None:
        """Append the legal moves to ``moves``."""
        v = self.generate_legal_vec(vec[i64]())
        for i in range(len(v)):
            moves.append(int(v[i]))

    def generate_legal_vec(self, moves: vec[i64]) -> vec[i64]:
        """Append the legal moves to ``moves`` and return it (a vec is a value: use the result)."""
        us = self.turn
        them = us ^ 1
        colors = self.colors
        pieces = self.pieces
        own = colors[us]
        opp = colors[them]
        occ = own | opp
        kbb = pieces[KING] & own
        if not kbb:
            return moves
        ksq = lsb(kbb)
        checkers = self.attackers_mask(them, ksq, occ)

        # King moves (the king is removed from the occupancy so sliders see through it).
        occ_nok = occ ^ kbb
        t = BB_KING_ATTACKS[ksq] & ~own
        while t:
            to = lsb(t)
            t ^= BB_SQUARES[to]
            if not self.attackers_mask(them, to, occ_nok):
                moves = append(moves, ksq | (to << 6))
        if checkers:
            if more_than_one(checkers):
                return moves
            c = lsb(checkers)
            block = BB_BETWEEN[ksq * 64 + c]
            target = block | checkers
        else:
            block = ~occ
            target = ~own
            moves = self._gen_castling(moves, us, ksq, occ)
        pinned = self._pinned_mask(us, ksq)

        # Knights (a pinned knight never moves).
        bb = pieces[KNIGHT] & own & ~pinned
        while bb:
            s = lsb(bb)
            bb ^= BB_SQUARES[s]
            t = BB_KNIGHT_ATTACKS[s] & target
            while t:
                to = lsb(t)
                t ^= BB_SQUARES[to]
                moves = append(moves, s | (to << 6))

        # Sliders.
        bb = (pieces[BISHOP] | pieces[QUEEN] | pieces[ROOK]) & own
        while bb:
            s = lsb(bb)
            sb = BB_SQUARES[s]
            bb ^= sb
            if pieces[ROOK] & sb:
                t = rook_attacks_mask(s, occ)
            elif pieces[BISHOP] & sb:
                t = bishop_attacks_mask(s, occ)
            else:
                t = rook_attacks_mask(s, occ) | bishop_attacks_mask(s, occ)
            t &= target
            if pinned & sb:
                t &= BB_LINE[ksq * 64 + s]
            while t:
                to = lsb(t)
                t ^= BB_SQUARES[to]
                moves = append(moves, s | (to << 6))

        # Pawns.
        empty = ~occ
        bb = pieces[PAWN] & own
        step = 8 if us == WHITE else -8
        start_rank = BB_RANKS[1] if us == WHITE else BB_RANKS[6]
        while bb:
            s = lsb(bb)
            sb = BB_SQUARES[s]
            bb ^= sb
            t = BB_PAWN_ATTACKS[us * 64 + s] & opp & target
            one = s + step
            if BB_SQUARES[one] & empty:
                t |= BB_SQUARES[one] & target
                if sb & start_rank and BB_SQUARES[one + step] & empty:
                    t |= BB_SQUARES[one + step] & target
            if pinned & sb:
                t &= BB_LINE[ksq * 64 + s]
            while t:
                to = lsb(t)
                t ^= BB_SQUARES[to]
                m = s | (to << 6)
                if BB_SQUARES[to] & BB_BACKRANKS:
                    moves = append(moves, m | (5 << 12))
                    moves = append(moves, m | (4 << 12))
                    moves = append(moves, m | (3 << 12))
                    moves = append(moves, m | (2 << 12))
                else:
                    moves = append(moves, m)
        ep = self.ep_square
        if ep >= 0:
            cands = BB_PAWN_ATTACKS[them * 64 + ep] & pieces[PAWN] & own
            while cands:
                s = lsb(cands)
                cands ^= BB_SQUARES[s]
                if self._ep_is_legal(s, ep):
                    moves = append(moves, s | (ep << 6))

        if self.has_pockets and self.pockets:
            moves = self._gen_drops(moves, us, block)
        return moves

    def _gen_castling(self, moves: vec[i64], us: int, ksq: int, occ: i64) -> vec[i64]:
        cr = self.castling >> (2 * us)
        if not cr & 3:
            return moves
        them = us ^ 1
        base = 56 * us
        if cr & 1 and not (_CASTLE_EMPTY[2 * us] & occ):
            if not self.attackers_mask(them, base + 5, occ) and not self.attackers_mask(them, base + 6, occ):
                moves = append(moves, ksq | ((base + 6) << 6))
        if cr & 2 and not (_CASTLE_EMPTY[2 * us + 1] & occ):
            if not self.attackers_mask(them, base + 3, occ) and not self.attackers_mask(them, base + 2, occ):
                moves = append(moves, ksq | ((base + 2) << 6))
        return moves

    def _gen_drops(self, moves: vec[i64], us: int, squares: i64) -> vec[i64]:
        """Drops onto ``squares`` (all empty squares, or the blocking squares when in check)."""
        for pt in range(1, 6):
            if not (self.pockets >> _pocket_shift(us, pt)) & 63:
                continue
            t = squares & ~BB_BACKRANKS if pt == PAWN else squares
            code = pt << 15
            while t:
                to = lsb(t)
                t ^= BB_SQUARES[to]
                moves = append(moves, code | to | (to << 6))
        return moves

    def has_legal_moves(self) -> bool:
        return len(self.generate_legal_vec(vec[i64]())) > 0

    def is_legal(self, m: Move) -> bool:
        return m in self.legal_moves()

    # ------------------------------------------------------------------ make / unmake

    def push(self, m: Move) -> None:
        """Make a legal move (not checked: use :meth:`push_uci` or :meth:`is_legal` for input)."""
        us = self.turn
        them = us ^ 1
        frm = m & 63
        to = (m >> 6) & 63
        sp = self._sp
        if sp + 3 > len(self._stack):
            self._stack = vec[i64]([self._stack[i] for i in range(sp)] + [0] * (sp + 768))
        old_ep = self.ep_square
        state = self.castling | ((old_ep + 1) << 4) | (self.halfmove_clock << _HALFMOVE_SHIFT)
        self._stack[sp] = m
        self._stack[sp + 2] = self.zobrist
        self._sp = sp + 3
        z = self.zobrist
        if old_ep >= 0:
            z ^= Z_EP_FILE[old_ep & 7]
        z ^= Z_TURN
        self.zobrist = z
        self.ep_square = -1
        self.halfmove_clock += 1
        if us == BLACK:
            self.fullmove_number += 1
        drop = m >> 15

        if m == 0:
            pass
        elif drop:
            self._put(to, (us << 3) | drop)
            self._pocket_add(us, drop, -1)  # drops never reset the half-move clock (as python-chess)
        else:
            code = int(self.mailbox[frm])
            pt = code & 7
            fb = BB_SQUARES[frm]
            tb = BB_SQUARES[to]
            cap = int(self.mailbox[to])
            if cap:
                state |= cap << 11
                self._remove(to, cap)
                self.halfmove_clock = 0
                cpt = cap & 7
                if self.promoted & tb:
                    state |= _F_CAP_PROMOTED
                    self._toggle_promoted(tb, to)
                    cpt = PAWN
                if self.has_pockets:
                    self._capture_to_pocket(us, cpt, 1)
            self._shift(frm, to, code)
            if self.promoted & fb:
                state |= _F_MOVED_PROMOTED
                self._toggle_promoted(fb, frm)
                self._toggle_promoted(tb, to)
            if pt == PAWN:
                self.halfmove_clock = 0
                promo = (m >> 12) & 7
                if promo:
                    self._remove(to, code)
                    self._put(to, (us << 3) | promo)
                    self._toggle_promoted(tb, to)
                elif to == old_ep:
                    state |= _F_EN_PASSANT
                    cap_sq = to - 8 if us == WHITE else to + 8
                    self._remove(cap_sq, (them << 3) | PAWN)
                    if self.has_pockets:
                        self._capture_to_pocket(us, PAWN, 1)
                elif to - frm == 16 or frm - to == 16:
                    self.turn = them
                    ep = self._legal_ep_square((frm + to) >> 1)
                    if ep >= 0:
                        self.ep_square = ep
                        self.zobrist ^= Z_EP_FILE[ep & 7]
            elif pt == KING and (to - frm == 2 or frm - to == 2):
                rook = (us << 3) | ROOK
                if to > frm:
                    self._shift(frm + 3, frm + 1, rook)
                else:
                    self._shift(frm - 4, frm - 1, rook)
            cr = self.castling & ~(_CASTLE_CLEAR[frm] | _CASTLE_CLEAR[to])
            if cr != self.castling:
                self.zobrist ^= Z_CASTLING[self.castling] ^ Z_CASTLING[cr]
                self.castling = int(cr)
        self._stack[sp + 1] = state
        self.turn = them

    def pop(self) -> Move:
        """Unmake the last move and return it."""
        sp = self._sp - 3
        if sp < 0:
            raise IndexError("pop from empty move stack")
        self._sp = sp
        m = int(self._stack[sp])
        state = self._stack[sp + 1]
        them = self.turn
        us = them ^ 1
        self.turn = us
        if us == BLACK:
            self.fullmove_number -= 1
        self.castling = int(state & 15)
        self.ep_square = int((state >> 4) & 127) - 1
        self.halfmove_clock = int(state >> _HALFMOVE_SHIFT)
        frm = m & 63
        to = (m >> 6) & 63
        drop = m >> 15
        if m == 0:
            pass
        elif drop:
            self._remove(to, (us << 3) | drop)
            self._pocket_add(us, drop, 1)
        else:
            tb = BB_SQUARES[to]
            code = int(self.mailbox[to])
            if (m >> 12) & 7:
                self._remove(to, code)
                self.promoted ^= tb
                code = (us << 3) | PAWN
                self._put(frm, code)
            else:
                self._shift(to, frm, code)
                if state & _F_MOVED_PROMOTED:
                    self.promoted ^= tb | BB_SQUARES[frm]
                if code & 7 == KING and (to - frm == 2 or frm - to == 2):
                    rook = (us << 3) | ROOK
                    if to > frm:
                        self._shift(frm + 1, frm + 3, rook)
                    else:
                        self._shift(frm - 1, frm - 4, rook)
            cap = int((state >> 11) & 15)
            if cap:
                self._put(to, cap)
                cpt = cap & 7
                if state & _F_CAP_PROMOTED:
                    self.promoted |= tb
                    cpt = PAWN
                if self.has_pockets:
                    self._capture_to_pocket(us, cpt, -1)
            elif state & _F_EN_PASSANT:
                self._put(to - 8 if us == WHITE else to + 8, (them << 3) | PAWN)
                if self.has_pockets:
                    self._capture_to_pocket(us, PAWN, -1)
        self.zobrist = self._stack[sp + 2]
        return m

    def push_uci(self, uci: str) -> Move:
        """Parse, check and make a UCI move; ``ValueError`` if malformed or illegal."""
        m = self.parse_uci(uci)
        self.push(m)
        return m

    def parse_uci(self, uci: str) -> Move:
        m = move_from_uci(uci)
        if m == 0 or not self.is_legal(m):
            raise ValueError(f"illegal move {uci!r} in {self.fen()}")
        return m

    def gives_check(self, m: Move) -> bool:
        self.push(m)
        check = self.is_check()
        self.pop()
        return check

    def is_capture(self, m: Move) -> bool:
        if m >> 15:
            return False
        to = (m >> 6) & 63
        if self.mailbox[to]:
            return True
        return to == self.ep_square and self.mailbox[m & 63] & 7 == PAWN

    def is_zeroing(self, m: Move) -> bool:
        """Does the move reset the half-move clock (a capture or pawn move; drops never do)?"""
        return (m >> 15) == 0 and (self.is_capture(m) or self.mailbox[m & 63] & 7 == PAWN)

    # ------------------------------------------------------------------ game end

    def variant_end(self) -> int:
        """The variant's own end, asked before the move list (python-chess's ``is_variant_end``:
        king of the hill, three-check): :data:`END_LOST` or :data:`END_WON` for the side to move,
        :data:`END_DRAWN`, or :data:`END_NONE` (chess and crazyhouse have none)."""
        return END_NONE

    def search_end(self, has_moves: bool, in_tree: bool) -> int:
        """The game's end as every search sees it, for the side to move: the one terminal test of
        MCTS's walk, alpha-beta and its quiescence, and the comparator search.  The variant's end
        first (:meth:`variant_end`); no legal move: checkmated (:data:`END_LOST`) or stalemate
        (:data:`END_DRAWN`); below the root (``in_tree``) also :meth:`is_search_draw`."""
        end = self.variant_end()
        if end != END_NONE:
            return end
        if not has_moves:
            return END_LOST if self.is_check() else END_DRAWN
        if in_tree and self.is_search_draw():
            return END_DRAWN
        return END_NONE

    def is_checkmate(self) -> bool:
        return self.is_check() and not self.has_legal_moves()

    def is_stalemate(self) -> bool:
        return not self.is_check() and not self.has_legal_moves()

    def has_insufficient_material(self, color: Color) -> bool:
        """As python-chess: True only if ``color`` cannot possibly mate."""
        own = self.colors[color]
        p = self.pieces
        if own & (p[PAWN] | p[ROOK] | p[QUEEN]):
            return False
        if own & p[KNIGHT]:
            return popcount(own) <= 2 and not (self.colors[color ^ 1] & ~p[KING] & ~p[QUEEN])
        if own & p[BISHOP]:
            same = not (p[BISHOP] & BB_DARK_SQUARES) or not (p[BISHOP] & BB_LIGHT_SQUARES)
            return same and not p[PAWN] and not p[KNIGHT]
        return True

    def is_insufficient_material(self) -> bool:
        return self.has_insufficient_material(WHITE) and self.has_insufficient_material(BLACK)

    def is_fifty_moves(self) -> bool:
        return self.halfmove_clock >= 100 and self.has_legal_moves()

    def is_repetition(self, count: int = 3) -> bool:
        """Has the current position occurred ``count`` times (this one included) since the root?"""
        z = self.zobrist
        seen = 1
        i = self._sp - 6 + 2
        stop = self._repetition_horizon()
        while i >= stop:
            if self._stack[i] == z:
                seen += 1
                if seen >= count:
                    return True
            i -= 6
        return False

    def _repetition_horizon(self) -> int:
        """Stack index below which no earlier position can repeat (zeroing moves are final)."""
        return max(0, self._sp - 3 * self.halfmove_clock)

    def is_search_draw(self) -> bool:
        """The draw rule inside a search tree (the hook every search asks; variants override its
        parts): the fifty-move rule where the variant has one (``_fifty_rule``), a position that
        occurred before (twofold repetition: a search cannot do better than repeat), insufficient
        material.  Checkmate and stalemate are the caller's: they need the move list."""
        return ((self._fifty_rule() and self.halfmove_clock >= 100) or self.is_repetition(2)
                or self.is_insufficient_material())

    def outcome(self, claim_draw: bool = True) -> tuple[str, str] | None:
        """``(result, termination)`` if the game is over, else None.

        result is "1-0", "0-1" or "1/2-1/2"; termination one of variant_win, variant_loss,
        variant_draw (:meth:`variant_end`), checkmate, stalemate, insufficient_material, fifty_moves,
        threefold_repetition (the last two only with ``claim_draw``, as engines and match servers
        apply them), seventyfive_moves, fivefold_repetition.
        """
        end = self.variant_end()
        if end == END_DRAWN:
            return ("1/2-1/2", "variant_draw")
        if end != END_NONE:  # python-chess's terminations, for the side to move
            won = end == END_WON
            return ("1-0" if won == (self.turn == WHITE) else "0-1", "variant_win" if won else "variant_loss")
        has_moves = self.has_legal_moves()
        if not has_moves and self.is_check():
            return ("0-1" if self.turn == WHITE else "1-0", "checkmate")
        if self.is_insufficient_material():
            return ("1/2-1/2", "insufficient_material")
        if not has_moves:
            return ("1/2-1/2", "stalemate")
        if self._fifty_rule() and self.halfmove_clock >= 150:
            return ("1/2-1/2", "seventyfive_moves")
        if self.is_repetition(5):
            return ("1/2-1/2", "fivefold_repetition")
        if claim_draw:
            if self._fifty_rule() and self.halfmove_clock >= 100:
                return ("1/2-1/2", "fifty_moves")
            if self.is_repetition(3):
                return ("1/2-1/2", "threefold_repetition")
        return None

    def _fifty_rule(self) -> bool:
        return True

    def is_game_over(self, claim_draw: bool = True) -> bool:
        return self.outcome(claim_draw) is not None

    def result(self, claim_draw: bool = True) -> str:
        o = self.outcome(claim_draw)
        return "*" if o is None else o[0]

    # ------------------------------------------------------------------ hashing

    def compute_zobrist(self) -> i64:
        """The hash from scratch (the incremental one must always equal it)."""
        z: i64 = 0
        for sq in range(64):
            code = int(self.mailbox[sq])
            if code:
                z ^= Z_PIECE[code * 64 + sq]
                if self.has_pockets and self.promoted & BB_SQUARES[sq]:
                    z ^= Z_PROMOTED[sq]
        for color in range(2):
            for pt in range(1, 6):
                z ^= Z_POCKET[(color * 8 + pt) * 64 + self.pocket_count(color, pt)]
        z ^= Z_CASTLING[self.castling]
        if self.ep_square >= 0:
            z ^= Z_EP_FILE[self.ep_square & 7]
        if self.turn == BLACK:
            z ^= Z_TURN
        return z

    # ------------------------------------------------------------------ FEN

    def set_fen(self, fen: str) -> None:
        """Set the position from a FEN (pockets as ``[...]`` or a ninth ``/`` rank, empty as ``[]`` or
        ``[-]``; ``~`` marks promoted pieces).  Raises ``ValueError`` saying what is wrong."""
        parts = fen.split()
        if not parts:
            raise ValueError("empty FEN")
        if len(parts) > 6:
            raise ValueError(f"FEN has {len(parts)} fields, expected at most 6: {fen!r}")
        board = parts[0]
        pocket = ""
        if board.endswith("]"):
            if "[" not in board:
                raise ValueError(f"unbalanced pocket brackets in FEN: {fen!r}")
            board, pocket = board[:-1].split("[", 1)
            if pocket == "-":  # empty pockets as cutechess-cli writes them (``[-]``; ``[]`` elsewhere)
                pocket = ""
        elif board.count("/") == 8:
            board, pocket = board.rsplit("/", 1)
        if pocket and not self.has_pockets:
            raise ValueError(f"pockets are not allowed in {self.variant}: {fen!r}")
        rows = board.split("/")
        if len(rows) != 8:
            raise ValueError(f"expected 8 ranks in FEN board part, got {len(rows)}: {fen!r}")
        self._init_empty()
        for i, row in enumerate(rows):
            rank = 7 - i
            f = 0
            prev_digit = False
            for ch in row:
                if ch.isdigit():
                    if prev_digit or ch == "0" or ch == "9":
                        raise ValueError(f"bad empty-square count in rank {rank + 1} of FEN: {fen!r}")
                    f += int(ch)
                    prev_digit = True
                    continue
                prev_digit = False
                if ch == "~":
                    if f == 0 or not self.mailbox[rank * 8 + f - 1]:
                        raise ValueError(f"'~' must follow a piece in FEN: {fen!r}")
                    self.promoted |= BB_SQUARES[rank * 8 + f - 1]
                    continue
                pt = PIECE_SYMBOLS.find(ch.lower())
                if pt <= 0:
                    raise ValueError(f"invalid piece {ch!r} in FEN: {fen!r}")
                if f > 7:
                    raise ValueError(f"rank {rank + 1} has more than 8 squares in FEN: {fen!r}")
                self._put(rank * 8 + f, ((0 if ch.isupper() else 1) << 3) | pt)
                f += 1
            if f != 8:
                raise ValueError(f"rank {rank + 1} has {f} squares, expected 8, in FEN: {fen!r}")
        for ch in pocket:
            pt = PIECE_SYMBOLS.find(ch.lower())
            if pt <= 0 or pt == KING:
                raise ValueError(f"invalid pocket piece {ch!r} in FEN: {fen!r}")
            color = WHITE if ch.isupper() else BLACK
            if self.pocket_count(color, pt) >= 63:
                raise ValueError(f"too many pieces in pocket in FEN: {fen!r}")
            self._pocket_add(color, pt, 1)
        turn = parts[1] if len(parts) > 1 else "w"
        if turn not in ("w", "b"):
            raise ValueError(f"side to move must be 'w' or 'b', got {turn!r}: {fen!r}")
        self.turn = WHITE if turn == "w" else BLACK
        castling = parts[2] if len(parts) > 2 else "-"
        cr = 0
        if castling != "-":
            for ch in castling:
                bit = "KQkq".find(ch)
                if bit < 0:
                    raise ValueError(f"invalid castling rights {castling!r} in FEN: {fen!r}")
                cr |= 1 << bit
        # Keep only rights whose king and rook stand on their squares (python-chess cleans too).
        rooks = self.pieces[ROOK] & ~self.promoted
        for bit, ksq, rsq in ((1, 4, 7), (2, 4, 0), (4, 60, 63), (8, 60, 56)):
            color = WHITE if bit < 4 else BLACK
            code = (color << 3)
            if not (self.mailbox[ksq] == code | KING and rooks & BB_SQUARES[rsq] and self.mailbox[rsq] == code | ROOK):
                cr &= ~bit
        self.castling = cr
        for color in (WHITE, BLACK):
            n = popcount(self.pieces[KING] & self.colors[color])
            if n != 1:
                raise ValueError(f"{'white' if color == WHITE else 'black'} must have exactly one king, has {n}: {fen!r}")
        if self.pieces[PAWN] & BB_BACKRANKS:
            raise ValueError(f"pawns on the first or last rank in FEN: {fen!r}")
        if self.attackers_mask(self.turn, self.king(self.turn ^ 1), self.occupied):
            raise ValueError(f"the side not to move is in check in FEN: {fen!r}")
        ep = parts[3] if len(parts) > 3 else "-"
        ep_sq = -1
        if ep != "-":
            try:
                ep_sq = parse_square(ep)
            except ValueError:
                raise ValueError(f"invalid en-passant square {ep!r} in FEN: {fen!r}") from None
            if ep_sq >> 3 != (5 if self.turn == WHITE else 2):
                raise ValueError(f"en-passant square {ep!r} is on the wrong rank in FEN: {fen!r}")
            ep_sq = self._legal_ep_square(ep_sq)
        self.ep_square = ep_sq
        try:
            self.halfmove_clock = int(parts[4]) if len(parts) > 4 else 0
            self.fullmove_number = int(parts[5]) if len(parts) > 5 else 1
        except ValueError:
            raise ValueError(f"half-move clock and move number must be integers: {fen!r}") from None
        if self.halfmove_clock < 0 or self.fullmove_number < 1:
            raise ValueError(f"negative half-move clock or move number below 1 in FEN: {fen!r}")
        if self.halfmove_clock > MAX_FEN_COUNTER or self.fullmove_number > MAX_FEN_COUNTER:
            raise ValueError(f"half-move clock and move number must be at most {MAX_FEN_COUNTER:,} in FEN: {fen!r}")
        self.fullmove_number = max(1, self.fullmove_number)
        self.zobrist = self.compute_zobrist()
        self.root_fen = self.fen()

    def board_fen(self) -> str:
        out = []
        for rank in range(7, -1, -1):
            empty = 0
            row = ""
            for f in range(8):
                sq = rank * 8 + f
                code = int(self.mailbox[sq])
                if not code:
                    empty += 1
                    continue
                if empty:
                    row += str(empty)
                    empty = 0
                sym = PIECE_SYMBOLS[code & 7]
                row += sym if code >> 3 else sym.upper()
                if self.has_pockets and self.promoted & BB_SQUARES[sq]:
                    row += "~"
            if empty:
                row += str(empty)
            out.append(row)
        board = "/".join(out)
        if self.has_pockets:
            pocket = ""
            for color in (WHITE, BLACK):
                for pt in (QUEEN, ROOK, BISHOP, KNIGHT, PAWN):
                    sym = PIECE_SYMBOLS[pt]
                    pocket += (sym.upper() if color == WHITE else sym) * self.pocket_count(color, pt)
            board += "[" + pocket + "]"
        return board

    def fen(self) -> str:
        cr = "".join(ch for bit, ch in ((1, "K"), (2, "Q"), (4, "k"), (8, "q")) if self.castling & bit) or "-"
        ep = SQUARE_NAMES[self.ep_square] if self.ep_square >= 0 else "-"
        return (f"{self.board_fen()} {'w' if self.turn == WHITE else 'b'} {cr} {ep} "
                f"{self.halfmove_clock} {self.fullmove_number}")

    def copy(self) -> Position:
        """A copy of the current position with the same history (so repetitions still count and
        :meth:`pop` goes back to the root): the state and the undo stack copied as they are, which
        is what replaying the moves from ``root_fen`` gives (only :meth:`set_fen`, :meth:`push` and
        :meth:`pop` change a position; entries past the stack pointer are never read)."""
        other = self._new()
        other.colors = vec[i64](self.colors)
        other.pieces = vec[i64](self.pieces)
        other.mailbox = vec[i64](self.mailbox)
        other.promoted = self.promoted
        other.pockets = self.pockets
        other.turn = self.turn
        other.castling = self.castling
        other.ep_square = self.ep_square
        other.halfmove_clock = self.halfmove_clock
        other.fullmove_number = self.fullmove_number
        other.zobrist = self.zobrist
        other._stack = vec[i64](self._stack)
        other._sp = self._sp
        other.root_fen = self.root_fen
        return other

    def _new(self) -> Position:
        return Position()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fen()!r})"

    def __str__(self) -> str:
        rows = []
        for rank in range(7, -1, -1):
            row = []
            for f in range(8):
                code = int(self.mailbox[rank * 8 + f])
                sym = PIECE_SYMBOLS[code & 7]
                row.append(sym if code >> 3 or not code else sym.upper())
            rows.append(" ".join(row))
        return "\n".join(rows)

    def uci(self, m: Move) -> str:
        return move_to_uci(m)


class CrazyhousePosition(Position):
    """Crazyhouse: captures go to the capturer's pocket (promoted pieces as pawns), drops."""

    def __init__(self, fen: str | None = None) -> None:
        self.has_pockets = True
        self._init_empty()
        self.set_fen(CRAZYHOUSE_STARTING_FEN if fen is None else fen)

    @property
    def variant(self) -> str:
        return "crazyhouse"

    def _fifty_rule(self) -> bool:
        return False

    def is_fifty_moves(self) -> bool:
        return False

    def _repetition_horizon(self) -> int:
        # Captures and pawn moves are not irreversible in crazyhouse: look back to the root.
        return 2

    def has_insufficient_material(self, color: Color) -> bool:
        p = self.pieces
        if p[PAWN] | p[ROOK] | p[QUEEN]:
            return False  # (speed: the usual case, before counting pockets)
        n_pocket = 0
        for c in range(2):
            for pt in range(1, 6):
                n_pocket += self.pocket_count(c, pt)
        return (popcount(self.colors[0] | self.colors[1]) + n_pocket <= 3 and not self.promoted
                and not (p[PAWN] | p[ROOK] | p[QUEEN])
                and not any(self.pocket_count(c, pt) for c in range(2) for pt in (PAWN, ROOK, QUEEN)))

    def _new(self) -> Position:
        return CrazyhousePosition()


CRAZYHOUSE_STARTING_FEN: Final = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"
