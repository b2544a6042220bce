"""Moves as small ints, and their UCI strings.

Layout of a ``Move`` (an int below 2^18, so mypyc keeps it unboxed)::

    bits 0-5    from square (for a drop: equal to the to square, as in python-chess)
    bits 6-11   to square
    bits 12-14  promotion piece type (0 = none, 2..5 = N, B, R, Q)
    bits 15-17  dropped piece type (0 = not a drop, 1..5 = P, N, B, R, Q)

Castling is the king's two-square move (``e1g1``), en passant the pawn's diagonal move to the
en-passant square: both are recognised from the position, not flagged in the move.  0 is the null
move (``0000``).
"""
from __future__ import annotations

from typing import Final

from board.bitboards import FILE_NAMES, PIECE_SYMBOLS, RANK_NAMES, SQUARE_NAMES, PieceType, Square

Move = int
NULL_MOVE: Final = 0


def make_move(from_sq: Square, to_sq: Square, promotion: PieceType = 0) -> Move:
    return from_sq | (to_sq << 6) | (promotion << 12)


def make_drop(piece_type: PieceType, to_sq: Square) -> Move:
    return to_sq | (to_sq << 6) | (piece_type << 15)


def move_from(m: Move) -> Square:
    return m & 63


def move_to(m: Move) -> Square:
    return (m >> 6) & 63


def move_promotion(m: Move) -> PieceType:
    return (m >> 12) & 7


def move_drop(m: Move) -> PieceType:
    return m >> 15


def move_to_uci(m: Move) -> str:
    if m == 0:
        return "0000"
    drop = m >> 15
    if drop:
        return PIECE_SYMBOLS[drop].upper() + "@" + SQUARE_NAMES[(m >> 6) & 63]
    s = SQUARE_NAMES[m & 63] + SQUARE_NAMES[(m >> 6) & 63]
    promo = (m >> 12) & 7
    if promo:
        s += PIECE_SYMBOLS[promo]
    return s


def _sq(name: str, uci: str) -> int:
    if len(name) != 2 or name[0] not in FILE_NAMES or name[1] not in RANK_NAMES:
        raise ValueError(f"malformed UCI move {uci!r}: bad square {name!r}")
    return FILE_NAMES.index(name[0]) + 8 * RANK_NAMES.index(name[1])


def move_from_uci(uci: str) -> Move:
    """Parse a UCI move (``e2e4``, ``e7e8q``, ``N@f7``, ``0000``) without checking legality."""
    if uci == "0000":
        return 0
    if len(uci) == 4 and uci[1] == "@":
        pt = "pnbrq".find(uci[0].lower()) + 1
        if pt == 0 or not uci[0].isupper():
            raise ValueError(f"malformed UCI move {uci!r}: bad drop piece {uci[0]!r}")
        return make_drop(pt, _sq(uci[2:], uci))
    if len(uci) not in (4, 5):
        raise ValueError(f"malformed UCI move {uci!r}")
    promo = 0
    if len(uci) == 5:
        promo = "nbrq".find(uci[4]) + 2
        if promo == 1:
            raise ValueError(f"malformed UCI move {uci!r}: bad promotion piece {uci[4]!r}")
    f, t = _sq(uci[0:2], uci), _sq(uci[2:4], uci)
    if f == t:
        raise ValueError(f"malformed UCI move {uci!r}: from and to squares are equal")
    return make_move(f, t, promo)
