"""Pentanomial GSPRT: against fishtest's LLRcalc, its closed-form approximation, and simulations."""
from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.harness import sprt
from experiments.harness.store import GameRecord

# (counts, elo0, elo1, LLR) computed with fishtest's server/fishtest/stats/LLRcalc.py
# LLR_normalized (scipy 1.17), the reference implementation of the test.
FISHTEST = [
    ([10, 40, 100, 45, 12], 0, 10, 0.22935755683170114),
    ([100, 800, 1500, 820, 110], 0, 2, 0.2685503701144822),
    ([3, 5, 20, 9, 6], 0, 10, 0.33974160931531766),
    ([0, 10, 30, 12, 0], -1, 3, 0.04661264322232848),
    ([30, 20, 10, 5, 1], 0, 5, -0.9825057822056233),
]


@pytest.mark.parametrize("counts,elo0,elo1,expected", FISHTEST)
def test_llr_matches_fishtest(counts: list[int], elo0: float, elo1: float, expected: float) -> None:
    assert sprt.llr(counts, elo0, elo1) == pytest.approx(expected, rel=1e-8, abs=1e-10)


def test_bounds() -> None:
    lo, hi = sprt.bounds(0.05, 0.05)
    assert lo == pytest.approx(-2.944, abs=1e-3) and hi == pytest.approx(2.944, abs=1e-3)
    with pytest.raises(sprt.SprtError):
        sprt.bounds(0.0, 0.05)
    with pytest.raises(sprt.SprtError):
        sprt.Sprt("a", "b", elo0=5, elo1=0)


def _llr_alt(counts: list[int], elo0: float, elo1: float) -> float:
    """fishtest's LLR_normalized_alt (normalized_elo_practical.pdf, section 4.2), written out here."""
    n, p = sprt.regularised(counts)
    mu = float(np.dot(p, sprt.SCORES))
    var = float(np.dot(p, (sprt.SCORES - mu) ** 2))
    nt = (mu - 0.5) / math.sqrt(2 * var)
    nt0, nt1 = elo0 / sprt.NELO_PER_T, elo1 / sprt.NELO_PER_T
    return n * math.log((1 + (nt - nt0) ** 2) / (1 + (nt - nt1) ** 2))


def test_llr_close_to_the_closed_form_for_many_pairs() -> None:
    for counts in ([400, 3000, 6000, 3100, 420], [500, 3100, 6000, 3000, 400], [800, 2000, 5000, 2500, 900]):
        exact, approx = sprt.llr(counts, 0, 5), _llr_alt(counts, 0, 5)
        assert exact == pytest.approx(approx, rel=0.05, abs=0.05)


def test_mle_distribution_has_the_asked_t_value() -> None:
    _, phat = sprt.regularised([10, 40, 100, 45, 12])
    for t in (-0.05, 0.0, 0.08):
        p = sprt.mle_t_value(phat, 0.5, t)
        mu = float(np.dot(p, sprt.SCORES))
        sd = math.sqrt(float(np.dot(p, (sprt.SCORES - mu) ** 2)))
        assert p.sum() == pytest.approx(1.0) and (mu - 0.5) / sd == pytest.approx(t, abs=1e-7)


def _pair_probs(elo: float, draw: float = 0.4) -> np.ndarray:
    e = 1 / (1 + 10 ** (-elo / 400))
    d = draw * 2 * min(e, 1 - e)
    w, l = e - d / 2, 1 - e - d / 2
    return np.array([l * l, 2 * l * d, d * d + 2 * w * l, 2 * w * d, w * w])


@pytest.mark.parametrize("elo,expected", [(40.0, "H1"), (-20.0, "H0")])
def test_simulated_tests_decide(elo: float, expected: str) -> None:
    rng = np.random.default_rng(7)
    decisions = []
    for _ in range(5):
        t = sprt.Sprt("a", "b", 0, 10)
        p = _pair_probs(elo)
        while t.state == "continue" and sum(t.counts) < 20000:
            for k in rng.choice(5, size=50, p=p):
                t.add_pair(k / 2)
        decisions.append(t.state)
    assert decisions.count(expected) >= 4


def _game(match: str, pair: int, white: str, black: str, result: str) -> GameRecord:
    return GameRecord(f"{match}/{pair}/{white}", "r", match, pair, "crazyhouse", white, black, {}, {}, "o", "", [],
                      [], result, "checkmate")


def test_games_are_counted_in_pairs() -> None:
    t = sprt.Sprt("A", "B")
    t.add_game(_game("m", 0, "A", "B", "1-0"))
    assert sum(t.counts) == 0
    t.add_game(_game("m", 1, "A", "B", "1/2-1/2"))
    t.add_game(_game("m", 0, "B", "A", "1/2-1/2"))  # pair 0: win + draw = 1.5 points
    t.add_game(_game("m", 1, "B", "A", "1-0"))  # pair 1: draw + loss = 0.5 points
    assert t.counts == [0, 1, 0, 1, 0]
    assert "LLR" in t.summary()
    from experiments.harness.stats import StatsError

    with pytest.raises(StatsError):  # pairing lives in experiments.harness.stats
        sprt.pair_index(0.7)


def test_a_crossed_bound_stays_decided_when_in_flight_pairs_pull_the_llr_back() -> None:
    t = sprt.Sprt("a", "b", -30, 0)
    while t._raw_state() == "continue":  # noqa: SLF001  (wins and losses of pairs, mostly won)
        t.add_pair(2.0)
        if t._raw_state() == "continue":  # noqa: SLF001
            t.add_pair(1.0)
    assert t.state == "H1" and t.llr >= t.upper
    for _ in range(3):  # the pairs still in flight at the stop, lost
        t.add_pair(0.0)
    assert t.llr < t.upper and t.state == "H1"
    fresh = sprt.Sprt("a", "b", -30, 0, counts=list(t.counts))  # counts alone: no path, the LLR decides
    assert fresh.state == "continue"


def test_decided_early_is_a_crossing_before_the_last_pairs() -> None:
    from experiments.harness.sprt import decided_early

    assert decided_early(195, 400) and not decided_early(200, 400) and not decided_early(None, 400)
    assert not decided_early(0, 10)
