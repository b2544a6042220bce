"""Sequential Halving's schedule (Karnin, Koren, Somekh 2013; as Gumbel AlphaZero and mctx use it at
the root, :mod:`search.gumbel`; mypyc-compiled): how many actions a budget can consider, how many
phases it gets, and the visit count each simulation's root action must have.
"""
from __future__ import annotations

import math


def budget_considered(m: int, n: int) -> int:
    """The largest number of considered actions ``m' <= m`` with ``2 m' ceil(log2 m') <= n`` (at least
    2, at most ``m``): what ``adaptive_considered`` lets Sequential Halving consider with ``n``
    simulations, so it has at least two phases and each phase at least two visits an action
    (16 nodes: 4; 64: 8; 200 and more: 16)."""
    best = min(m, 2)
    for c in range(2, m + 1):
        if 2 * c * math.ceil(math.log2(c)) <= n:
            best = c
    return best


def sequential_halving_phases(n: int, m: int) -> int:
    """How many phases Sequential Halving gets with ``n`` simulations and ``m`` considered actions
    (mctx's budget split: each phase gives every remaining action ``max(1, n // (k·⌈log2 m⌉))``
    visits): 1 when ``n < m·⌈log2 m⌉``: with more than two actions that is a collapse (every action
    gets the same visits, none is halved away)."""
    if m <= 1:
        return 1
    rounds = math.ceil(math.log2(m))
    return rounds if n >= m * rounds else 1


def considered_visits(m: int, n: int) -> list[int]:
    """The visit count the k-th simulation's root action must have, k = 0 .. n - 1: Sequential
    Halving over ``m`` considered actions and ``n`` simulations (mctx's
    ``get_sequence_of_considered_visits``)."""
    if m <= 1:
        return list(range(n))
    log2max = int(math.ceil(math.log2(m)))
    seq: list[int] = []
    visits = [0] * m
    considered = m
    while len(seq) < n:
        extra = max(1, n // (log2max * considered))
        for _ in range(extra):
            seq.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return seq[:n]


__all__ = ["budget_considered", "considered_visits", "sequential_halving_phases"]
