"""Match statistics in one place: Elo from a score, intervals of scores, the pentanomial pairing of
colour-reversed games.  Ratings (:mod:`ratings`), ablations (:mod:`ablate`), the SPRT (:mod:`sprt`)
and the scale reports use these and nothing else.

Notation.  A score ``s`` in [0, 1] (draws half a point) maps to an Elo difference by the logistic
``elo(s) = -400 log10(1/s - 1)`` (SPEC.md section 5).  A perfect score has no finite Elo: every
estimate here clamps ``s`` to ``[1/(4n), 1 - 1/(4n)]`` for ``n`` scored units (games, or game
pairs), a quarter of a unit short of perfect, which is the one clamp of the suite.

A *game pair* is the two colour-reversed games of one opening; its score for a player is 0, 1/2,
1, 3/2 or 2 points, and the five counts are the *pentanomial* (fishtest, fastchess).  Pairs, not
games, are the independent units: the two games of an opening are correlated.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Protocol, Sequence

Z95 = 1.96


class StatsError(ValueError):
    """Results that cannot be summarised (one-line message)."""


class PairedGame(Protocol):
    """What pairing needs of a stored game."""

    match: str
    pair: int

    def score_for(self, player: str) -> float: ...


def clamp_score(s: float, n: float | None = None) -> float:
    """``s`` within a quarter of a unit of 0 and 1 (``n`` units; 1e-6 when unknown)."""
    eps = 1.0 / (4.0 * n) if n else 1e-6
    return min(max(s, eps), 1.0 - eps)


def elo_of_score(s: float, n: float | None = None) -> float:
    """The logistic Elo difference of a score (clamped: :func:`clamp_score`)."""
    s = clamp_score(s, n)
    return -400.0 * math.log10(1.0 / s - 1.0)


def expected_score(d: Any) -> Any:
    """The logistic expected score of an Elo difference ``d`` (a number or a numpy array)."""
    import numpy as np

    return 1.0 / (1.0 + np.power(10.0, -np.asarray(d) / 400.0))


def wilson(points: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a score share (draws as half points), (0, 1) for no games."""
    if n <= 0:
        return 0.0, 1.0
    p = points / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def trinomial_elo(wins: int, draws: int, losses: int, z: float = Z95) -> tuple[float, float]:
    """Elo of a head-to-head score and the half width of its interval (games as independent);
    ``(±inf, inf)`` for a perfect score, ``(0, inf)`` for none."""
    n = wins + draws + losses
    if n == 0:
        return 0.0, math.inf
    s = (wins + 0.5 * draws) / n
    if s in (0.0, 1.0):
        return (math.inf if s == 1.0 else -math.inf), math.inf
    var = (wins * (1 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s ** 2) / n
    se = math.sqrt(var / n)
    lo, hi = elo_of_score(s - z * se, n), elo_of_score(s + z * se, n)
    return elo_of_score(s, n), (hi - lo) / 2


def score_text(wins: int, draws: int, losses: int) -> str:
    """``+7=2-1 80.0% [49.0%, 94.3%]`` and, once its interval is finite, the Elo with that interval
    (``Elo +241 [-4, +487]``): at a perfect score or a handful of games the Elo is not printed as
    +-inf or +-1234, only the score and the Wilson interval of the score."""
    n = wins + draws + losses
    head = f"+{wins}={draws}-{losses}"
    if n == 0:
        return head
    s = (wins + 0.5 * draws) / n
    lo, hi = wilson(wins + 0.5 * draws, n)
    text = f"{head} {100 * s:.1f}% [{100 * lo:.1f}%, {100 * hi:.1f}%]"
    if 0.0 < lo and hi < 1.0 and 0.0 < s < 1.0:
        text += f" Elo {elo_of_score(s, n):+.0f} [{elo_of_score(lo, n):+.0f}, {elo_of_score(hi, n):+.0f}]"
    return text


def pair_index(score_a: float) -> int:
    """Pentanomial cell of A's points in a pair (0, 0.5, ..., 2)."""
    k = int(round(score_a * 2))
    if not 0 <= k <= 4 or abs(score_a * 2 - k) > 1e-9:
        raise StatsError(f"a pair score must be one of 0, 0.5, ..., 2, got {score_a}")
    return k


class Pairing:
    """Games fed one at a time, counted by pair once both games of a pair are in (the pentanomial)."""

    def __init__(self, player: str) -> None:
        self.player = player
        self.counts = [0, 0, 0, 0, 0]
        self._half: dict[tuple[str, int], float] = {}

    def add(self, g: PairedGame) -> int | None:
        """Add a game; the cell of its pair when the pair is complete, else None."""
        key = (g.match, g.pair)
        s = g.score_for(self.player)
        if key in self._half:
            k = pair_index(self._half.pop(key) + s)
            self.counts[k] += 1
            return k
        self._half[key] = s
        return None


def pentanomial(games: Iterable[PairedGame], player: str) -> list[int]:
    """Counts of ``player``'s pair scores 0, 1/2, 1, 3/2, 2 over complete game pairs."""
    p = Pairing(player)
    for g in games:
        p.add(g)
    return p.counts


def pentanomial_elo(counts: Sequence[int], z: float = Z95) -> tuple[float, float, float, float]:
    """(score, Elo, low, high) of pentanomial counts: the normal interval of the mean pair score
    (fishtest/fastchess), or, when every pair scored the same (a sweep), the Wilson interval of the
    pair scores, which does not collapse to a point; NaNs without pairs."""
    n = sum(counts)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    scores = (0.0, 0.25, 0.5, 0.75, 1.0)
    mu = sum(c * s for c, s in zip(counts, scores)) / n
    var = sum(c * (s - mu) ** 2 for c, s in zip(counts, scores)) / n
    if var == 0.0:
        lo, hi = wilson(mu * n, n, z)
    else:
        se = math.sqrt(var / n)
        lo, hi = mu - z * se, mu + z * se
    return mu, elo_of_score(mu, n), elo_of_score(lo, n), elo_of_score(hi, n)


def percentile_interval(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` interval of bootstrap samples (percentile method)."""
    import numpy as np

    a = np.asarray(samples, dtype=np.float64)
    tail = 100.0 * (1.0 - level) / 2.0
    return float(np.percentile(a, tail)), float(np.percentile(a, 100.0 - tail))
