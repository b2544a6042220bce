"""Transpositions: the position key, its open-addressing index, and the table of evaluations that
a position reached again reuses (mypyc-compiled; the notation is in :mod:`search.mcts`).

A position's key is its zobrist hash mixed with the counters a rule of the game depends on (the
half-move clock, the full-move number and how often it occurred before: 0, 1 or 2+), so two nodes
share an evaluation, or (graph search, :mod:`search.mcgs`) a node, only when every continuation
and every draw claim is the same from both.
"""
from __future__ import annotations

from librt.vecs import append, extend, vec
from mypy_extensions import i64

from board.position import Position


def counters_hash(halfmove_clock: int, fullmove_number: int, reps: int) -> i64:
    """``(halfmove_clock · C1 + fullmove_number · C2 + reps · C3) mod 2^63`` (C1..C3 odd 64-bit
    constants), mixed into the transposition-table key.  Speed: for counters below 2^20 it is
    computed from the constants' 32-bit halves, every step inside i64 (no big-int arithmetic)."""
    h = halfmove_clock
    f = fullmove_number
    r = reps
    if 0 <= h < 1048576 and 0 <= f < 1048576 and 0 <= r < 1048576:
        hb: i64 = h
        fb: i64 = f
        rb: i64 = r
        lo: i64 = hb * 0x7F4A7C15 + fb * 0x27D4EB4F + rb * 0x9E3779F9  # each term < 2^52
        hi: i64 = hb * 0x9E3779B9 + fb * 0xC2B2AE3D + rb * 0x165667B1
        top: i64 = (hi + (lo >> 32)) & 0x7FFFFFFF  # bits 32..62 of the sum
        return (top << 32) | (lo & 0xFFFFFFFF)
    return (h * 0x9E3779B97F4A7C15 + f * 0xC2B2AE3D27D4EB4F + r * 0x165667B19E3779F9) & 0x7FFFFFFFFFFFFFFF


def position_key(pos: Position, reps: int = -1) -> i64:
    """The transposition key of ``pos``: zobrist hash and the counters; ``reps`` (earlier
    occurrences: 0, 1 or 2+) when the caller knows it, else -1 (counted here)."""
    if reps < 0:
        reps = 2 if pos.is_repetition(3) else (1 if pos.is_repetition(2) else 0)
    return pos.zobrist ^ counters_hash(pos.halfmove_clock, pos.fullmove_number, reps)


class KeyIndex:
    """A map from 64-bit keys to slot numbers >= 0 (the transposition table's index): open
    addressing with linear probing in two vecs, so a lookup boxes no int (a dict did).  ``_slot1``
    holds slot + 1 (0: empty); the capacity is a power of two kept at least twice the entries."""

    def __init__(self) -> None:
        self._keys = vec[i64]([0] * 1024)
        self._slot1 = vec[i64]([0] * 1024)
        self._mask: i64 = 1023
        self.size: i64 = 0

    def _probe(self, key: i64) -> i64:
        """The position of ``key`` in the table, or of the empty place where it would go."""
        i = key & self._mask
        while self._slot1[i] != 0 and self._keys[i] != key:
            i = (i + 1) & self._mask
        return i

    def get(self, key: i64) -> i64:
        """The slot of ``key``, or -1."""
        return self._slot1[self._probe(key)] - 1

    def put(self, key: i64, slot: i64) -> None:
        """Map ``key`` to ``slot`` (replacing its slot if present)."""
        i = self._probe(key)
        if self._slot1[i] == 0:
            self._keys[i] = key
            self.size += 1
        self._slot1[i] = slot + 1
        if 2 * self.size > self._mask:
            self._grow()

    def _grow(self) -> None:
        keys = self._keys
        slot1 = self._slot1
        n = 2 * (self._mask + 1)
        self._keys = vec[i64]([0] * n)
        self._slot1 = vec[i64]([0] * n)
        self._mask = n - 1
        for j in range(len(keys)):
            if slot1[j] != 0:
                i = self._probe(keys[j])
                self._keys[i] = keys[j]
                self._slot1[i] = slot1[j]


class EvalTable:
    """The transposition table of evaluations: key -> slot; a slot's value, move count and priors
    (the evaluator's own, before check enhancement and noise) live in flat vecs, no Python object
    per entry.  A new node whose key has a slot with as many moves reuses it without an evaluator
    call (:meth:`search.mcts.MCTS._visit_new`)."""

    def __init__(self) -> None:
        self.index = KeyIndex()
        self.value = vec[float]()
        self.off = vec[i64]()
        self.length = vec[i64]()
        self.priors = vec[float]()

    def slot(self, key: i64) -> i64:
        """The slot of ``key``, or -1."""
        return self.index.get(key)

    def store(self, key: i64, value: float, priors: vec[float]) -> None:
        slot = self.index.get(key)
        if slot < 0:
            self.index.put(key, len(self.value))
            self.value = append(self.value, value)
            self.off = append(self.off, len(self.priors))
            self.length = append(self.length, len(priors))
            self.priors = extend(self.priors, priors)
        else:  # the same position evaluated twice (in one batch): the later answer wins
            self.value[slot] = value
            self.off[slot] = len(self.priors)
            self.length[slot] = len(priors)
            self.priors = extend(self.priors, priors)

    def priors_of(self, slot: i64) -> vec[float]:
        off: i64 = self.off[slot]
        return self.priors[off:off + self.length[slot]]
