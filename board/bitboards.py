"""Squares, bitboards and precomputed attack tables.

Notation (as in python-chess): a ``Square`` is an int 0..63 (a1 = 0, b1 = 1, ..., h8 = 63); a
``Bitboard`` is a set of squares with bit ``s`` standing for square ``s``.  Functions that return a
bitboard end in ``_mask``.

Bitboards are **signed** 64-bit integers (``i64``) so that mypyc keeps them unboxed: h8 is the sign
bit.  The same source runs uncompiled, where ``i64`` is a plain ``int``; to give identical results in
both modes the hot code never relies on overflow: no left shift that could reach bit 63, no ``b - 1``
or ``-b`` on a lone h8 bit.  Every table here is built with :func:`signed` and single squares are
removed with ``b ^= BB_SQUARES[s]``.  Sliding attacks use per-direction rays and the first blocker
(lsb for increasing directions, msb for decreasing ones), which needs no multiplication.
"""
from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

Square = int
Bitboard = i64
Color = int
PieceType = int

WHITE: Final = 0
BLACK: Final = 1
COLOR_NAMES: Final = ["white", "black"]

PAWN: Final = 1
KNIGHT: Final = 2
BISHOP: Final = 3
ROOK: Final = 4
QUEEN: Final = 5
KING: Final = 6
PIECE_SYMBOLS: Final = ".pnbrqk"
PIECE_NAMES: Final = ["", "pawn", "knight", "bishop", "rook", "queen", "king"]

FILE_NAMES: Final = "abcdefgh"
RANK_NAMES: Final = "12345678"
SQUARE_NAMES: Final = [f + r for r in RANK_NAMES for f in FILE_NAMES]

A1: Final = 0
C1: Final = 2
D1: Final = 3
E1: Final = 4
F1: Final = 5
G1: Final = 6
H1: Final = 7
A8: Final = 56
C8: Final = 58
D8: Final = 59
E8: Final = 60
F8: Final = 61
G8: Final = 62
H8: Final = 63

MASK64: Final = (1 << 64) - 1
INT64_MIN: Final[i64] = -9223372036854775807 - 1


def signed(x: int) -> i64:
    """Two's-complement view of the low 64 bits of ``x`` (table construction only)."""
    x &= MASK64
    return i64(x - (1 << 64) if x >= (1 << 63) else x)


def square(file: int, rank: int) -> Square:
    return rank * 8 + file


def square_file(sq: Square) -> int:
    return sq & 7


def square_rank(sq: Square) -> int:
    return sq >> 3


def square_mirror(sq: Square) -> Square:
    """The square with the rank flipped (a1 <-> a8), used to encode positions for black."""
    return sq ^ 56


def parse_square(name: str) -> Square:
    """``"e4"`` -> 28.  Raises ``ValueError`` for anything that is not a square name."""
    if len(name) != 2 or name[0] not in FILE_NAMES or name[1] not in RANK_NAMES:
        raise ValueError(f"invalid square name: {name!r}")
    return FILE_NAMES.index(name[0]) + 8 * RANK_NAMES.index(name[1])


BB_EMPTY: Final[i64] = 0
BB_ALL: Final[i64] = -1
BB_SQUARES: Final = vec[i64]([signed(1 << s) for s in range(64)])
BB_FILES: Final = vec[i64]([signed(sum(1 << (r * 8 + f) for r in range(8))) for f in range(8)])
BB_RANKS: Final = vec[i64]([signed(0xFF << (8 * r)) for r in range(8)])
BB_RANK_1: Final[i64] = signed(0xFF)
BB_RANK_8: Final[i64] = signed(0xFF << 56)
BB_BACKRANKS: Final[i64] = BB_RANK_1 | BB_RANK_8
BB_LIGHT_SQUARES: Final[i64] = signed(0x55AA55AA55AA55AA)
BB_DARK_SQUARES: Final[i64] = signed(0xAA55AA55AA55AA55)


def lsb(b: Bitboard) -> Square:
    """Index of the least significant set bit of a non-empty bitboard."""
    return int(b & -b).bit_length() - 1


def msb(b: Bitboard) -> Square:
    """Index of the most significant set bit of a non-empty bitboard."""
    if b < 0:
        return 63
    return int(b).bit_length() - 1


def popcount(b: Bitboard) -> int:
    return int(b & 0xFFFFFFFF).bit_count() + int((b >> 32) & 0xFFFFFFFF).bit_count()


# --- step attacks ------------------------------------------------------------------------------

def _step_mask(sq: int, deltas: list[tuple[int, int]]) -> i64:
    f, r = sq & 7, sq >> 3
    out = 0
    for df, dr in deltas:
        if 0 <= f + df < 8 and 0 <= r + dr < 8:
            out |= 1 << ((r + dr) * 8 + f + df)
    return signed(out)


_KNIGHT_D: Final = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]
_KING_D: Final = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]
BB_KNIGHT_ATTACKS: Final = vec[i64]([_step_mask(s, _KNIGHT_D) for s in range(64)])
BB_KING_ATTACKS: Final = vec[i64]([_step_mask(s, _KING_D) for s in range(64)])
# Squares attacked by a pawn of colour c on square s, at index c * 64 + s.
BB_PAWN_ATTACKS: Final = vec[i64](
    [_step_mask(s, [(-1, 1), (1, 1)]) for s in range(64)]
    + [_step_mask(s, [(-1, -1), (1, -1)]) for s in range(64)])


# --- rays --------------------------------------------------------------------------------------
# Directions 0..3 increase the square index (first blocker = lsb), 4..7 decrease it (msb).
# Rook directions: N, E, S, W = 0, 1, 4, 5; bishop directions: NE, NW, SW, SE = 2, 3, 6, 7.
_DIRS: Final = [(0, 1), (1, 0), (1, 1), (-1, 1), (0, -1), (-1, 0), (-1, -1), (1, -1)]


def _ray(sq: int, df: int, dr: int) -> int:
    f, r = (sq & 7) + df, (sq >> 3) + dr
    out = 0
    while 0 <= f < 8 and 0 <= r < 8:
        out |= 1 << (r * 8 + f)
        f += df
        r += dr
    return out


# BB_RAYS[d * 64 + s]: squares from s (exclusive) to the edge in direction d.
BB_RAYS: Final = vec[i64]([signed(_ray(s, df, dr)) for df, dr in _DIRS for s in range(64)])


def _line_between() -> tuple[list[int], list[int]]:
    line = [0] * 4096
    between = [0] * 4096
    for a in range(64):
        for df, dr in _DIRS:
            f, r = (a & 7) + df, (a >> 3) + dr
            path = 0
            while 0 <= f < 8 and 0 <= r < 8:
                b = r * 8 + f
                between[a * 64 + b] = path
                line[a * 64 + b] = _ray(a, df, dr) | _ray(a, -df, -dr) | (1 << a)
                path |= 1 << b
                f += df
                r += dr
    return line, between


_LINE, _BETWEEN = _line_between()
# Whole line (edge to edge) through two aligned squares, else empty; index a * 64 + b.
BB_LINE: Final = vec[i64]([signed(x) for x in _LINE])
# Squares strictly between two aligned squares, else empty; index a * 64 + b.
BB_BETWEEN: Final = vec[i64]([signed(x) for x in _BETWEEN])


def _slide(sq: int, occ: i64, d0: int) -> i64:
    """Attacks along the two directions ``d0`` (increasing) and ``d0 + 4`` (decreasing)."""
    ray = BB_RAYS[d0 * 64 + sq]
    blk = ray & occ
    attacks = ray
    if blk:
        attacks ^= BB_RAYS[d0 * 64 + lsb(blk)]
    ray = BB_RAYS[(d0 + 4) * 64 + sq]
    blk = ray & occ
    attacks |= ray
    if blk:
        attacks ^= BB_RAYS[(d0 + 4) * 64 + msb(blk)]
    return attacks


def rook_attacks_mask(sq: Square, occ: Bitboard) -> Bitboard:
    return _slide(sq, occ, 0) | _slide(sq, occ, 1)


def bishop_attacks_mask(sq: Square, occ: Bitboard) -> Bitboard:
    return _slide(sq, occ, 2) | _slide(sq, occ, 3)


def queen_attacks_mask(sq: Square, occ: Bitboard) -> Bitboard:
    return _slide(sq, occ, 0) | _slide(sq, occ, 1) | _slide(sq, occ, 2) | _slide(sq, occ, 3)
