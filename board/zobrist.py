"""Zobrist keys: fixed pseudo-random 64-bit numbers (splitmix64, seed 2026) so hashes are stable
across runs and between the compiled and pure-Python builds.

A position's hash is the XOR of
  * ``Z_PIECE[code * 64 + sq]`` for each piece (``code = color << 3 | piece_type``),
  * ``Z_PROMOTED[sq]`` for each promoted piece (crazyhouse and bughouse only),
  * ``Z_POCKET[(color * 8 + piece_type) * 64 + n]`` for each pocket holding n > 0 pieces of a type
    (the keys for n = 0 are 0, so an empty pocket adds nothing and chess positions are unaffected),
  * ``Z_CASTLING[rights]`` (rights as the 4-bit mask of :mod:`board.position`),
  * ``Z_EP_FILE[file]`` when an en-passant capture is legal,
  * ``Z_TURN`` when black is to move.
"""
from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from board.bitboards import signed


def _splitmix64(n: int, seed: int = 2026) -> list[int]:
    out = []
    x = seed
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        out.append(z ^ (z >> 31))
    return out


_R: Final = _splitmix64(16 * 64 + 64 + 16 * 64 + 16 + 8 + 1)
Z_PIECE: Final = vec[i64]([signed(x) for x in _R[0:1024]])
Z_PROMOTED: Final = vec[i64]([signed(x) for x in _R[1024:1088]])
Z_POCKET: Final = vec[i64]([0 if i % 64 == 0 else signed(x) for i, x in enumerate(_R[1088:2112])])
Z_CASTLING: Final = vec[i64]([signed(x) for x in _R[2112:2128]])
Z_EP_FILE: Final = vec[i64]([signed(x) for x in _R[2128:2136]])
Z_TURN: Final[i64] = signed(_R[2136])
