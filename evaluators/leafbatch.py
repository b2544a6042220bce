"""The Python side of a network leaf, compiled (mypyc): a batch of :class:`~evaluators.leaf.Leaf`
records read straight from their native arrays into what numpy needs to build the network's input
and to pick the legal moves' logits, and the answers built back without per-leaf numpy.

:func:`encode` walks each leaf's raw state (``Leaf.raw_vec``, the 16 words of
``Position.raw_state()``) and legal moves (``Leaf.move_vec``) once and returns an :class:`Encoded`:

- ``ones``: flat indices into the input ``[B, planes * 64]`` that are 1 (the bit planes, and every
  0/1 plane of SixtyFour's encoding);
- ``consts``: ``[B, C]`` values of the planes that are constant over the board (CrazyAra's
  repetition, pocket, colour, move-number, castling and half-move planes, :data:`CRAZYARA_CONSTS`);
- ``keys``: each legal move's row in the policy lookup table (``move`` or, for a mirrored encoding
  and Black to move, ``MOVE_TABLE_SIZE + move``; :data:`OUTSIDE` for a move int outside the table);
- ``rows``: the leaf each move belongs to; ``counts``: the moves per leaf.

The caller (:meth:`evaluators.neural.NeuralEvaluator._encode`) then needs four numpy operations:
zeros, ``planes[ones] = 1``, ``planes[:, CONST_PLANES] = consts``, ``table[keys]``.  The encodings
are those of :mod:`evaluators.encodings` bit for bit (the numpy encoders stay the reference, and the
path of training, the GPU and pure-Python runs; ``tests/test_leafbatch.py`` compares the two).
:func:`evaluations` splits the legal softmax (computed by numpy, as before) into one
:class:`~evaluators.leaf.Evaluation` per leaf.
"""
from __future__ import annotations

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

from board.variants import ONE_BOARD
from evaluators.encodings import EncodingError
from evaluators.leaf import Evaluation, Leaf

MOVE_TABLE_SIZE: Final = 1 << 18
#: the key of a move int outside the table: the policy tables get a last entry -1 there
OUTSIDE: Final = 2 * MOVE_TABLE_SIZE
#: whether this module runs compiled (the evaluators use it only then: interpreted, numpy is faster)
COMPILED: Final = __file__.endswith((".so", ".pyd"))
#: CrazyAra planes that are constant over the board, in ``consts`` order (with pockets, without)
_CONSTS_POCKETS: Final = (12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 27, 28, 29, 30, 31, 32, 33)
_CONSTS_PLAIN: Final = (12, 13, 15, 16, 17, 18, 19, 20, 21)
CRAZYARA_CONSTS: Final = {v.name: _CONSTS_POCKETS if v.pockets else _CONSTS_PLAIN for v in ONE_BOARD}
POCKET_CAPS: Final = (16, 4, 4, 4, 2)


class Encoded:
    """One batch, encoded (module docstring)."""

    def __init__(self) -> None:
        self.ones = vec[i64]()
        self.consts = vec[float]()
        self.keys = vec[i64]()
        self.rows = vec[i64]()
        self.counts: list[int] = []


def _bits(out: vec[i64], bb: i64, base: i64, flip: i64) -> vec[i64]:
    """``out`` with ``base + (square ^ flip)`` appended for every square of ``bb``."""
    for half in range(2):
        w: i64 = (bb >> (32 * half)) & 0xFFFFFFFF  # non-negative: the loop ends at its top bit
        s: i64 = 32 * half
        while w != 0:
            if w & 1:
                out = append(out, base + (s ^ flip))
            w >>= 1
            s += 1
    return out


def _raw(lf: Leaf) -> vec[i64]:
    raw = lf.raw_vec
    if len(raw) != 16:
        raise EncodingError(f"raw states must be 16-tuples, got {len(raw)} values")
    return raw


def _moves(e: Encoded, lf: Leaf, row: i64, offset: i64) -> None:
    """The keys, rows and count of a leaf's moves (``offset`` added to every in-table key)."""
    mv = lf.move_vec
    keys = e.keys
    rows = e.rows
    n: i64 = len(mv)
    for j in range(n):
        m = mv[j]
        keys = append(keys, offset + m if 0 <= m < MOVE_TABLE_SIZE else OUTSIDE)
        rows = append(rows, row)
    e.keys = keys
    e.rows = rows
    e.counts.append(n)


def crazyara(leaves: list[Leaf], crazyhouse: bool) -> Encoded:
    """CrazyAra's input (34 planes for crazyhouse, 22 for chess: :func:`evaluators.encodings.crazyara_planes`)
    and policy-table keys (``[2, 2^18]`` table, Black's moves mirrored)."""
    e = Encoded()
    nplanes: i64 = 34 if crazyhouse else 22
    ones = e.ones
    consts = e.consts
    for b in range(len(leaves)):
        lf = leaves[b]
        raw = _raw(lf)
        black = raw[10] == 1
        flip: i64 = 56 if black else 0
        us = raw[1] if black else raw[0]
        them = raw[0] if black else raw[1]
        base: i64 = b * nplanes * 64
        for pt in range(6):
            ones = _bits(ones, raw[2 + pt] & us, base + pt * 64, flip)
            ones = _bits(ones, raw[2 + pt] & them, base + (6 + pt) * 64, flip)
        if crazyhouse:
            ones = _bits(ones, raw[8] & us, base + 24 * 64, flip)
            ones = _bits(ones, raw[8] & them, base + 25 * 64, flip)
        ep = raw[12]
        if 0 <= ep < 64:
            ones = append(ones, base + (26 if crazyhouse else 14) * 64 + (ep ^ flip))
        reps = raw[15]
        consts = append(consts, 1.0 if reps >= 1 else 0.0)
        consts = append(consts, 1.0 if reps >= 2 else 0.0)
        if crazyhouse:
            pockets = raw[9]
            own: i64 = 5 if black else 0
            opp: i64 = 0 if black else 5
            for i in range(5):
                consts = append(consts, float((pockets >> ((own + i) * 6)) & 63) / 32.0)
            for i in range(5):
                consts = append(consts, float((pockets >> ((opp + i) * 6)) & 63) / 32.0)
        cr = raw[11]
        us_cr = (cr >> 2 if black else cr) & 3
        them_cr = (cr if black else cr >> 2) & 3
        consts = append(consts, 0.0 if black else 1.0)
        consts = append(consts, float(raw[14]) / 500.0)
        consts = append(consts, float(us_cr & 1))
        consts = append(consts, float(us_cr >> 1))
        consts = append(consts, float(them_cr & 1))
        consts = append(consts, float(them_cr >> 1))
        consts = append(consts, float(raw[13]) / 40.0)
        _moves(e, lf, b, MOVE_TABLE_SIZE if black else 0)
    e.ones = ones
    e.consts = consts
    return e


def sixtyfour(leaves: list[Leaf]) -> Encoded:
    """SixtyFour's input (15 planes of 0/1, :func:`evaluators.encodings.sixtyfour_planes`; no
    mirroring, no constant planes) and policy-table keys (``[2^18]`` table)."""
    e = Encoded()
    ones = e.ones
    for b in range(len(leaves)):
        lf = leaves[b]
        raw = _raw(lf)
        base: i64 = b * 15 * 64
        for pt in range(6):
            ones = _bits(ones, raw[2 + pt] & raw[0], base + pt * 64, 0)
            ones = _bits(ones, raw[2 + pt] & raw[1], base + (6 + pt) * 64, 0)
        ones = _bits(ones, raw[8], base + 12 * 64, 0)
        pockets = raw[9]
        k: i64 = 0
        p13: i64 = base + 13 * 64
        for pt in range(5):
            cap: i64 = POCKET_CAPS[pt]
            for color in range(2):
                count = (pockets >> ((color * 5 + pt) * 6)) & 63
                for j in range(min(count, cap)):
                    ones = append(ones, p13 + k + j)
                k += cap
        ones = append(ones, p13 + k + (0 if raw[10] == 0 else 1))
        cr = raw[11]
        reps = raw[15]
        p14: i64 = base + 14 * 64
        for i in range(4):  # White K, Black K, White Q, Black Q castling: bits 0, 2, 1, 3
            if (cr >> ((i >> 1) | ((i & 1) << 1))) & 1:
                ones = append(ones, p14 + i)
        if reps >= 1:
            ones = append(ones, p14 + 4)
        if reps >= 2:
            ones = append(ones, p14 + 5)
        _moves(e, lf, b, 0)
    e.ones = ones
    return e


def evaluations(values: list[float], priors: list[float], counts: list[int]) -> list[Evaluation]:
    """One :class:`Evaluation` per leaf: ``values[i]`` and the next ``counts[i]`` of ``priors``."""
    out: list[Evaluation] = []
    s = 0
    for i in range(len(counts)):
        k = counts[i]
        out.append(Evaluation(values[i], priors[s:s + k]))
        s += k
    return out
