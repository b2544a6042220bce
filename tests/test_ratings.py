"""Bradley-Terry ratings recover known Elo from simulated results; bootstrap intervals cover them."""
from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.harness import ratings as R

TRUE = {"p0": 0.0, "p1": 120.0, "p2": 250.0, "p3": -180.0, "p4": 60.0, "p5": 400.0}


def simulate(true: dict[str, float], pairs: list[tuple[str, str]], games: int, seed: int,
             draw: float = 0.35) -> list[R.Result]:
    """Games in colour-reversed pairs; draws at rate ``draw`` of the possible, expected score exact."""
    rng = np.random.default_rng(seed)
    out = []
    for a, b in pairs:
        e = float(R.expected(true[a] - true[b]))
        d = draw * 2 * min(e, 1 - e)
        for k in range(games):
            u = rng.random()
            s = 1.0 if u < e - d / 2 else 0.5 if u < e + d / 2 else 0.0
            white, black, sw = (a, b, s) if k % 2 == 0 else (b, a, 1 - s)
            out.append(R.Result(white, black, sw, (a, b, k // 2)))
    return out


def test_recovers_known_ratings_round_robin() -> None:
    names = list(TRUE)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    res = simulate(TRUE, pairs, 600, seed=1)
    rs = {r.name: r for r in R.rate(res, anchor="p0", anchor_elo=0.0, bootstrap=100, seed=3, prior=0.0)}
    assert rs["p0"].elo == 0.0 and rs["p0"].lo == rs["p0"].hi == 0.0
    for n, elo in TRUE.items():
        assert abs(rs[n].elo - elo) < 25, (n, rs[n].elo, elo)
        assert rs[n].lo <= rs[n].elo <= rs[n].hi
    covered = sum(rs[n].lo - 5 <= TRUE[n] <= rs[n].hi + 5 for n in TRUE)
    assert covered >= 5
    assert [r.name for r in R.rate(res, anchor="p0", bootstrap=0)] == sorted(TRUE, key=lambda n: -TRUE[n])


def test_recovers_a_chain_with_an_offset_anchor() -> None:
    # a ladder: each player meets only its neighbours (like node budgets of one family)
    true = {f"n{k}": 150.0 * k for k in range(5)}
    pairs = [(f"n{k}", f"n{k + 1}") for k in range(4)]
    rs = {r.name: r for r in R.rate(simulate(true, pairs, 800, seed=2), anchor="n2", anchor_elo=1000.0,
                                    bootstrap=60, seed=1)}
    for n, elo in true.items():
        assert abs(rs[n].elo - (elo - 300 + 1000)) < 40
    # errors grow with the distance from the anchor along the chain
    assert rs["n0"].err > rs["n1"].err > 0 and rs["n4"].err > rs["n3"].err > 0


def test_no_anchor_means_mean_zero_and_perfect_scores_stay_finite() -> None:
    res = [R.Result("a", "b", 1.0, k // 2) for k in range(10)] + [R.Result("b", "c", 0.5, 10 + k) for k in range(4)]
    rs = R.rate(res, bootstrap=20)
    assert abs(sum(r.elo for r in rs)) < 1e-6
    assert all(math.isfinite(r.elo) and math.isfinite(r.lo) for r in rs)
    assert rs[0].name == "a" and rs[0].score == 1.0


def test_errors() -> None:
    with pytest.raises(R.RatingError, match="groups"):
        R.rate([R.Result("a", "b", 1.0), R.Result("c", "d", 0.0)])
    with pytest.raises(R.RatingError, match="anchor"):
        R.rate([R.Result("a", "b", 1.0)], anchor="z")
    with pytest.raises(R.RatingError):
        R.rate([])


def test_match_elo() -> None:
    elo, err = R.match_elo(50, 0, 50)
    assert elo == pytest.approx(0.0) and 0 < err < 200
    elo, _ = R.match_elo(60, 30, 10)  # 75%
    assert elo == pytest.approx(-400 * math.log10(1 / 0.75 - 1))
    # without a bootstrap the interval has no spread: marked as a bound, with the note (never a bare zero width)
    table = R.format_table(R.rate([R.Result("a", "b", 1.0), R.Result("b", "a", 0.5)], bootstrap=0))
    assert table.count("\n") == 3 and table.count(R.SWEEP_MARK) == 3 and R.SWEEP_NOTE in table


def test_a_sweep_and_an_interval_with_no_spread_are_marked() -> None:
    """A 4-0 match on two openings gave +382 [+382, +382] unmarked: every replicate is the same sweep."""
    games = [R.Result("a", "b", 1.0, unit=u) for u in (1, 1, 2, 2)]
    fit = R.fit(games, anchor="b", bootstrap=200, seed=1)
    a = next(r for r in fit.ratings if r.name == "a")
    assert a.sweep_bounded and a.elo > 0
    b = next(r for r in fit.ratings if r.name == "b")
    assert b.lo == b.hi == 0.0  # the anchor: zero width by definition
    # a measured interval is not marked
    mixed = [R.Result("a", "b", s, unit=u) for u, s in enumerate([1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.5, 1.0] * 4)]
    m = next(r for r in R.fit(mixed, anchor="b", bootstrap=200, seed=1).ratings if r.name == "a")
    assert not m.sweep_bounded and m.lo < m.elo < m.hi


def test_standings_for_progress_bars() -> None:
    from experiments.harness.store import GameRecord

    st = R.Standings()
    assert st.text() == ""

    def game(w: str, b: str, res: str) -> GameRecord:
        return GameRecord("k", "r", "m", 0, "chess", w, b, {}, {}, "o", "", [], [], res, "x")

    st.add(game("a", "b", "1-0"))
    for _ in range(9):
        st.add(game("c", "b", "1-0"))
    st.add(game("b", "c", "1-0"))
    assert st.text().startswith("leader c 9/10")


def test_bootstrap_intervals_do_not_depend_on_the_order_games_were_stored() -> None:
    # Concurrent games finish in any order; the same games must give the same intervals.
    rng = np.random.default_rng(3)
    results = []
    for k in range(60):
        a, b = ("A", "B") if k % 3 else ("B", "C")
        score = float(rng.choice([0.0, 0.5, 1.0]))
        results += [R.Result(a, b, score, unit=("pair", k)), R.Result(b, a, float(rng.choice([0.0, 0.5, 1.0])), unit=("pair", k))]
    first = R.rate(results, anchor="A", bootstrap=50)
    shuffled = [results[i] for i in rng.permutation(len(results))]
    again = R.rate(shuffled, anchor="A", bootstrap=50)
    assert [(r.name, round(r.elo, 6), round(r.lo, 6), round(r.hi, 6)) for r in first] == \
        [(r.name, round(r.elo, 6), round(r.lo, 6), round(r.hi, 6)) for r in again]
    assert any(r.hi - r.lo > 1.0 for r in first)  # the intervals are real, not collapsed
