"""Pentanomial generalised SPRT over game pairs, as fishtest runs it (SPEC.md section 5).

A game pair (one opening, colours reversed) scores 0, 1/4, 1/2, 3/4 or 1 for engine A; the counts
are ``[LL, LD+DL, DD+WL+LW, WD+DW, WW]``.  The hypotheses are on *normalised* Elo: with the pair
score's mean mu and variance var, the per-game standard deviation is ``sigma_g = sqrt(2 var)`` and

    nElo = (mu - 1/2) / sigma_g * 800 / ln 10.

H0: nElo = elo0 against H1: nElo = elo1.  The log-likelihood ratio is the generalised one: under
each hypothesis the pentanomial distribution is the maximum-likelihood one given the observed
frequencies subject to the hypothesis' t-value ``(mu - 1/2)/sigma_pair = nElo/(800/ln 10)*sqrt 2``
(fishtest's ``MLE_t_value``: a fixed-point iteration over a Lagrange multiplier found by a root
search), and ``LLR = N * sum_k p_k log(p1_k / p0_k)``.  Empty cells are regularised to 1e-3 so the
distribution stays in the interior.  The test stops at ``LLR <= ln(beta/(1-alpha))`` (accept H0)
or ``LLR >= ln((1-beta)/alpha)`` (accept H1): +-2.944 at alpha = beta = 0.05.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from experiments.harness.stats import Pairing, pair_index  # noqa: F401 - pair_index re-exported
from experiments.harness.store import GameRecord

NELO_PER_T = 800.0 / math.log(10.0)  # normalised Elo per unit of per-game t-value
SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


class SprtError(ValueError):
    """Bad SPRT parameters (one-line message)."""


def _secular(a: np.ndarray, p: np.ndarray) -> float:
    """The root x of sum_k p_k a_k / (1 + x a_k) = 0 with every 1 + x a_k > 0 (a has both signs)."""
    lo, hi = -1.0 / a.max(), -1.0 / a.min()
    eps = 1e-9 * (hi - lo)

    def f(x: float) -> float:
        return float(np.sum(p * a / (1.0 + x * a)))

    from scipy.optimize import brentq  # imported here: scipy costs 0.3 s at CLI start-up
    return float(brentq(f, lo + eps, hi - eps, xtol=1e-14, maxiter=500))


def _mean_var(p: np.ndarray) -> tuple[float, float]:
    mu = float(np.dot(p, SCORES))
    return mu, float(np.dot(p, (SCORES - mu) ** 2))


def mle_t_value(phat: np.ndarray, ref: float, t: float) -> np.ndarray:
    """The distribution on :data:`SCORES` closest in likelihood to ``phat`` with
    (mu - ref)/sigma = t (fixed point over sigma, multiplier by root search)."""
    p = np.full(len(phat), 1.0 / len(phat))
    for _ in range(50):
        mu, var = _mean_var(p)
        sigma = math.sqrt(var)
        a = SCORES - ref - t * sigma * (1.0 + ((mu - SCORES) / sigma) ** 2) / 2.0
        x = _secular(a, phat)
        new = phat / (1.0 + x * a)
        new = new / new.sum()
        if np.max(np.abs(new - p)) < 1e-12:
            p = new
            break
        p = new
    return p


def regularised(counts: Sequence[float]) -> tuple[float, np.ndarray]:
    c = np.array([x if x > 0 else 1e-3 for x in counts], dtype=np.float64)
    n = float(c.sum())
    return n, c / n


def llr(counts: Sequence[float], elo0: float, elo1: float) -> float:
    """Generalised log-likelihood ratio of H1 (nElo = elo1) against H0 (nElo = elo0)."""
    if len(counts) != 5:
        raise SprtError("pentanomial counts need 5 cells")
    if sum(counts) == 0:
        return 0.0
    n, phat = regularised(counts)
    t0, t1 = (e / NELO_PER_T * math.sqrt(2.0) for e in (elo0, elo1))
    p0, p1 = mle_t_value(phat, 0.5, t0), mle_t_value(phat, 0.5, t1)
    return n * float(np.dot(phat, np.log(p1) - np.log(p0)))


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    if not (0 < alpha < 0.5 and 0 < beta < 0.5):
        raise SprtError(f"alpha and beta must lie in (0, 0.5), got {alpha}, {beta}")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def decided_early(decided_at: int | None, games: int) -> bool:
    """The test crossed its bound (after ``decided_at`` pairs) before the last of ``games`` was counted:
    the games in flight then were played on and count in the figures, not in the verdict."""
    return bool(decided_at) and 2 * int(decided_at or 0) < games


def normalised_elo(counts: Sequence[float]) -> tuple[float, float]:
    """nElo of the pentanomial counts and the half width of its 95% interval."""
    n, p = regularised(counts)
    mu, var = _mean_var(p)
    sigma_g = math.sqrt(2 * var)
    nelo = (mu - 0.5) / sigma_g * NELO_PER_T
    return nelo, 1.96 * NELO_PER_T / math.sqrt(2 * n)


@dataclass
class Sprt:
    """The running test: feed finished games, ask :attr:`state`."""

    a: str
    b: str
    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05
    counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    _pairing: Pairing | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.elo1 <= self.elo0:
            raise SprtError(f"elo1 must exceed elo0, got {self.elo0} and {self.elo1}")
        self.lower, self.upper = bounds(self.alpha, self.beta)

    def add_pair(self, score_a: float) -> None:
        self.counts[pair_index(score_a)] += 1
        self._settle()

    def add_game(self, g: GameRecord) -> None:
        """Add a game; a pair counts once both of its games are in."""
        if self._pairing is None:
            self._pairing = Pairing(self.a)
        k = self._pairing.add(g)
        if k is not None:
            self.counts[k] += 1
            self._settle()

    def add_games(self, games: Iterable[GameRecord]) -> None:
        for g in games:
            self.add_game(g)

    _cache: tuple[tuple[int, ...], float] | None = field(default=None, repr=False)
    #: the bound the LLR crossed first, pair by pair: a sequential test is decided there, and the
    #: games still in flight when it stopped (counted in :attr:`counts`) do not undo it
    _decided: str | None = field(default=None, repr=False)
    #: the pairs counted when it crossed (None while undecided)
    decided_at: int | None = field(default=None, repr=False)

    def _settle(self) -> None:
        if self._decided is None:
            v = self._raw_state()
            if v != "continue":
                self._decided, self.decided_at = v, sum(self.counts)

    @property
    def llr(self) -> float:
        """The LLR of the counts so far (cached: the match runner polls :attr:`state` often)."""
        key = tuple(self.counts)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, llr(self.counts, self.elo0, self.elo1))
        return self._cache[1]

    @property
    def state(self) -> str:
        """"H1" (A is better: accept), "H0" (reject) or "continue": the first bound the LLR crossed as
        pairs were added (fishtest's rule: the pairs that finish after the stop count in the
        figures, not against the verdict), else the bound the counts' LLR is past."""
        return self._decided or self._raw_state()

    def _raw_state(self) -> str:
        v = self.llr
        if v >= self.upper:
            return "H1"
        if v <= self.lower:
            return "H0"
        return "continue"

    def summary(self) -> str:
        nelo, err = normalised_elo(self.counts)
        return (f"LLR {self.llr:+.2f} [{self.lower:+.2f}, {self.upper:+.2f}] pairs {sum(self.counts)} "
                f"penta {self.counts} nElo {nelo:+.1f}+-{err:.1f}")
