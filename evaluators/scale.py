"""The one value <-> centipawn scale of the suite (mypyc-compiled).

A value ``v`` in [-1, 1] (for the side to move: the evaluators' and searches' currency) and a score
in centipawns (what alpha-beta searches, UCI reports and the harness adjudicates on) are converted by
CrazyAra's formula (SPEC.md section 4), with one base ``b`` per variant::

    cp = -sgn(v) · ln(1 - |v|) / ln(b) · 100          v = sgn(cp) · (1 - b^(-|cp| / 100))

``b`` = 1.2 in crazyhouse and bughouse (CrazyAra) and 1.4 in chess (its chess setting, where a pawn
decides more), so 600 cp (the resign threshold of :class:`experiments.harness.tasks.Adjudication`)
is v = 0.665 in crazyhouse and 0.867 in chess, whichever paradigm reports it.  A proven result
(|v| >= 1) is :data:`CP_PROVEN` centipawns; scores beyond it (alpha-beta's mate scores) are v = +-1.
Every search, every evaluator that maps one to the other (the classical evaluator's value, a
network's ``score``, DeepChess's probability) and the UCI ``score cp`` use these two functions; an
external engine's centipawns are taken as it reports them.
"""
from __future__ import annotations

import math
from typing import Final

from board.variants import ALL, variant_of

#: the base of the conversion per variant (module docstring)
CP_BASE: Final = {v.name: v.cp_base for v in ALL}
#: the centipawns of a proven value (|v| >= 1)
CP_PROVEN: Final = 9999


_LOG_BASE: Final = {k: math.log(b) for k, b in CP_BASE.items()}


def _log_base(variant: str) -> float:
    lb = _LOG_BASE.get(variant)
    if lb is None:  # a variant registered at run time (board.variants.register); unknown: ValueError
        return math.log(variant_of(variant).cp_base)
    return lb


def value_to_cp(v: float, variant: str) -> int:
    """Centipawns of a value (module docstring), rounded; +-CP_PROVEN for |v| >= 1."""
    a = abs(v)
    if a < 1e-12:
        return 0
    if a >= 1.0:
        return CP_PROVEN if v > 0 else -CP_PROVEN
    cp = -100.0 * math.log(1.0 - a) / _log_base(variant)
    if cp > CP_PROVEN - 1:
        cp = CP_PROVEN - 1.0
    return int(round(cp)) if v > 0 else -int(round(cp))


def cp_to_value(cp: float, variant: str) -> float:
    """The value of a score in centipawns (module docstring); +-1 from CP_PROVEN on."""
    if cp >= CP_PROVEN:
        return 1.0
    if cp <= -CP_PROVEN:
        return -1.0
    v = 1.0 - math.exp(-abs(cp) / 100.0 * _log_base(variant))
    return v if cp > 0 else -v
