"""``searchbench tune`` (:mod:`experiments.harness.tune`): fishtest's SPSA schedule, both optimisers
finding a known optimum from simulated games, resumption, the verification report, bad config."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Sequence

import pytest

from experiments.cli.main import main
from experiments.harness import tune
from experiments.harness.tasks import Player

CONFIG = """
name = "{name}"
variant = "chess"
engine = "material-mcts"
nodes = 16
iterations = {iterations}
algorithm = "{algorithm}"
pairs = 1
concurrency = 8
workers = 1
seed = 3
db = "{tmp}/t.sqlite"
pgn = false
report_dir = "{tmp}/reports"
out = "{tmp}/run-{name}"

[[params]]
name = "cpuct_init"
min = 0.5
max = 5.0
start = {start}
c_end = 0.4
r_end = {r_end}

[verify]
games = 4
budgets = [16, 24]
"""


def _cfg(tmp: Path, name: str = "t", iterations: int = 8, algorithm: str = "spsa", start: float = 2.5,
         r_end: float = 0.002) -> Path:
    p = tmp / f"{name}.toml"
    p.write_text(CONFIG.format(name=name, iterations=iterations, algorithm=algorithm, tmp=tmp, start=start, r_end=r_end))
    return p


def test_spsa_gains_are_fishtests_schedule() -> None:
    p = tune.Param("x", 0, 100, 50, c_end=4.0, r_end=0.002)
    n = 1000
    c_1, r_1 = tune.spsa_gains(p, n, 1)
    c_n, r_n = tune.spsa_gains(p, n, n)
    assert c_n == pytest.approx(4.0) and c_1 == pytest.approx(4.0 * n ** 0.101)
    a_n = r_n * c_n ** 2
    assert a_n == pytest.approx(0.002 * 16)  # a_end = r_end c_end^2 at the last iteration
    a_1 = r_1 * c_1 ** 2
    assert a_1 == pytest.approx(a_n * ((0.1 * n + n) / (0.1 * n + 1)) ** 0.602)


def _simulated(optimum: float, width: float, seed: int) -> Any:
    """A stand-in for the games: a player's Elo is -1000 ((cpuct - optimum) / width)^2, each game drawn
    from the logistic expectation of the two players' Elo difference."""
    rng = random.Random(seed)

    def elo(spec: str) -> float:
        v = float(spec.split("cpuct_init=")[1].split(",")[0]) if "cpuct_init=" in spec else 2.5  # the default
        return -1000 * ((v - optimum) / width) ** 2

    def play(t: tune.Tune, matches: Sequence[tuple[Player, Player]], progress: bool, desc: str) -> list[float]:
        out = []
        for a, b in matches:
            e = 1 / (1 + 10 ** ((elo(b.engine) - elo(a.engine)) / 400))
            out.append(sum(1.0 if rng.random() < e else -1.0 for _ in range(2 * t.pairs)))
        return out

    return play


@pytest.mark.parametrize("algorithm, iterations, r_end", [("spsa", 600, 0.2), ("optuna", 60, 0.002)])
def test_both_optimisers_find_a_known_optimum_from_simulated_games(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algorithm: str, iterations: int, r_end: float) -> None:
    """From 1.0, with the strength peaked at 3.5 (200 Elo down at 1.5 and 5.5), both end nearer the
    peak than the start, within 0.8 of it."""
    monkeypatch.setattr(tune, "_play", _simulated(3.5, 4.5, 7))
    t = tune.load(_cfg(tmp_path, algorithm, iterations, algorithm, start=1.0, r_end=r_end))
    theta = tune.run_optuna(t, False) if algorithm == "optuna" else tune.run_spsa(t, False)
    assert abs(theta["cpuct_init"] - 3.5) < 0.8, theta
    assert len(t.history) == (iterations if algorithm == "optuna" else iterations // t.pairs)


def test_smoothed_best_prefers_a_good_region_to_a_lucky_trial() -> None:
    t = tune.Tune.__new__(tune.Tune)
    t.params = [tune.Param("x", 0, 10, 5)]
    trials = [({"x": 1.0}, 0.95)] + [({"x": 7 + 0.1 * i}, 0.6) for i in range(10)] + [({"x": 2 + 0.2 * i}, 0.3) for i in range(10)]
    best, score = tune.smoothed_best(t, trials)
    assert 7 <= best["x"] <= 8 and score == pytest.approx(0.6)


def test_spsa_resumes_where_it_stopped_and_replays_no_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    sim = _simulated(3.0, 4.0, 1)

    def counting(t: tune.Tune, matches: Sequence[tuple[Player, Player]], progress: bool, desc: str) -> list[float]:
        calls.append(len(matches))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return sim(t, matches, progress, desc)  # type: ignore[no-any-return]

    monkeypatch.setattr(tune, "_play", counting)
    t = tune.load(_cfg(tmp_path, iterations=24))
    assert t.batch == 4
    with pytest.raises(KeyboardInterrupt):
        tune.run_spsa(t, False)
    state = json.loads((tmp_path / "run-t" / "state.json").read_text())
    assert state["k"] == 8 and len(state["history"]) == 8
    calls.clear()
    t2 = tune.load(_cfg(tmp_path, iterations=24))
    monkeypatch.setattr(tune, "_play", sim)
    tune.run_spsa(t2, False)
    assert len(t2.history) == 24 and [h["step"] for h in t2.history] == list(range(24))
    assert t2.history[:8] == state["history"]
    other = tune.load(_cfg(tmp_path, iterations=30))
    with pytest.raises(tune.ConfigError, match="holds another tuning run"):
        tune.run_spsa(other, False)


def test_a_real_tuning_run_stores_its_games_and_writes_the_verification_report(tmp_path: Path) -> None:
    from experiments.harness.store import Store

    assert main(["tune", str(_cfg(tmp_path)), "--quiet"]) == 0
    folder = tmp_path / "reports" / "t"
    for f in ("theta.png", "theta.svg", "theta.csv", "ablation.md", "ablation.csv", "index.html", "engines.json"):
        assert (folder / f).is_file(), f
    with Store(str(tmp_path / "t.sqlite"), readonly=True) as st:
        tuning, verify = st.games(run="t-tuning"), st.games(run="t")
    assert len(tuning) == 16 and len(verify) == 8  # 8 pairs; 4 games at each of two budgets
    md = (folder / "ablation.md").read_text()
    assert "**Tuning.** `material-mcts` at nodes 16: SPSA" in md and "![θ against games](theta.png)" in md
    steps = (tmp_path / "run-t" / "steps.csv").read_text().splitlines()
    assert steps[0] == "step,games,result,cpuct_init" and len(steps) == 9
    # a rerun plays nothing: every game is stored
    assert main(["tune", str(_cfg(tmp_path)), "--quiet"]) == 0
    with Store(str(tmp_path / "t.sqlite"), readonly=True) as st:
        assert len(st.games()) == 24


def test_optuna_resumes_its_study_and_plays_trials_left_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = _simulated(3.0, 4.0, 2)
    n = {"calls": 0}

    def once(t: tune.Tune, matches: Sequence[tuple[Player, Player]], progress: bool, desc: str) -> list[float]:
        n["calls"] += 1
        if n["calls"] == 2:
            raise KeyboardInterrupt  # trials 4-7 asked, not told
        return sim(t, matches, progress, desc)  # type: ignore[no-any-return]

    monkeypatch.setattr(tune, "_play", once)
    with pytest.raises(KeyboardInterrupt):
        tune.run_optuna(tune.load(_cfg(tmp_path, "o", 12, "optuna")), False)
    monkeypatch.setattr(tune, "_play", sim)
    t = tune.load(_cfg(tmp_path, "o", 12, "optuna"))
    tune.run_optuna(t, False)
    assert len(t.history) == 12 and t.history[0]["theta"] == {"cpuct_init": 2.5}  # the start is trial 0
    paths = tune._write_tuning(t, {"cpuct_init": 2.5})
    assert tmp_path / "reports" / "o" / "slices.png" in paths and "slices.png" in tune._notes(t, {"cpuct_init": 2.5})


@pytest.mark.parametrize("edit, match", [
    (("engine = \"material-mcts\"", "engine = \"no-such\""), "key 'engine'"),
    (("name = \"cpuct_init\"", "name = \"no_such_option\""), "no_such_option"),
    (("start = 2.5", "start = 9.0"), "must lie in"),
    (("nodes = 16", "nodes = 16\nmovetime = 0.1"), "exactly one budget"),
    (("pairs = 1", "pairs = 1\ngames = 10"), "iterations and pairs"),
    (("algorithm = \"spsa\"", "algorithm = \"cma\""), "must be one of spsa, optuna"),
    (("budgets = [16, 24]", "budgets = []"), "non-empty array"),
    (("min = 0.5\nmax = 5.0", "min = 1e308\nmax = 1.7e308"), "magnitude at most"),  # issue 81, j07
    (("min = 0.5\nmax = 5.0", "min = 0.5\nmax = inf"), "finite number"),
    (("min = 0.5\nmax = 5.0", "min = 2.5\nmax = 2.5000000000000004"), "a range SPSA can step"),
])
def test_bad_tuning_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str],
                                       match: str) -> None:
    p = _cfg(tmp_path)
    p.write_text(p.read_text().replace(*edit))
    assert main(["tune", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0], err


@pytest.mark.parametrize("damage", ["torn", "foreign"])
def test_a_damaged_study_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    """Issue 81, j06: a torn ``optuna.sqlite`` (its first half) or a file that is no study is named in
    one line with what to do, exit 2, on every resume (it was a sqlalchemy DatabaseError traceback)."""
    import sqlite3
    p = _cfg(tmp_path, "o", 4, "optuna")
    t = tune.load(p)
    store = t.out / "optuna.sqlite"
    store.parent.mkdir(parents=True, exist_ok=True)
    if damage == "torn":
        with sqlite3.connect(store) as db:
            db.execute("create table t (x)")
            db.executemany("insert into t values (?)", [("x" * 1000,)] * 200)
        data = store.read_bytes()
        store.write_bytes(data[: len(data) // 2])
    else:
        store.write_bytes(b"this is not a database, just text " * 200)
    for _ in range(2):
        assert main(["tune", str(p)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "optuna.sqlite is damaged" in err[0] and "start the study afresh" in err[0], err


def test_tune_killed_mid_step_resumes_with_no_pair_lost_or_counted_twice(tmp_path: Path) -> None:
    """SIGKILL of a running ``searchbench tune`` (SPSA) in the middle of a step, then the same
    command again: every step is recorded once, in order, and the database holds each game pair of
    each step exactly once (issue 81: the kill was never tried)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from experiments.harness.store import Store

    cfg = _cfg(tmp_path, iterations=16)
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli", "tune", str(cfg), "--quiet"], cwd=root,
                            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = tmp_path / "t.sqlite"
    deadline = time.time() + 300
    n = 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with Store(str(db), readonly=True) as st:
                    n = len(st.games(run="t-tuning"))
            except Exception:  # noqa: BLE001 - the database being created
                n = 0
            if 8 < n < 32 and n % 8:  # past the first batch (4 steps of a pair each), inside a later one
                break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert main(["tune", str(cfg), "--quiet"]) == 0
    with Store(str(db), readonly=True) as st:
        games = st.games(run="t-tuning")
    assert len(games) == 32 and len({g.key for g in games}) == 32
    pairs: dict[tuple[str, int], int] = {}
    for g in games:
        pairs[(g.match, g.pair)] = pairs.get((g.match, g.pair), 0) + 1
    assert len(pairs) == 16 and set(pairs.values()) == {2}
    state = json.loads((tmp_path / "run-t" / "state.json").read_text())
    assert [h["step"] for h in state["history"]] == list(range(16))


def test_a_tuning_whose_knobs_never_act_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 78: knobs that change no game (chess has no drops: qs_max_drops never acts) are found
    from the tuning games themselves, every pair's two games alike, and said in a warning line and
    at the head of the report's notes."""
    cfg = _cfg(tmp_path, iterations=2).read_text().replace('engine = "material-mcts"', 'engine = "material-ab"')
    cfg = cfg.replace('name = "cpuct_init"\nmin = 0.5\nmax = 5.0\nstart = 2.5\nc_end = 0.4',
                      'name = "qs_max_drops"\nmin = 1\nmax = 16\nstart = 8\ninteger = true\nc_end = 2')
    cfg = cfg.replace("games = 4\nbudgets = [16, 24]", "games = 2\nbudgets = [16]")
    p = tmp_path / "inert.toml"
    p.write_text(cfg)
    assert main(["tune", str(p), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: Warning. In all 2 tuning pairs both games had the same moves" in err
    assert "(qs_max_drops) never acted at nodes 16" in err
    md = (tmp_path / "reports" / "t" / "ablation.md").read_text()
    assert "**Warning.** In all 2 tuning pairs" in md
    # knobs that act: no warning
    (tmp_path / "x").mkdir()
    assert main(["tune", str(_cfg(tmp_path / "x", iterations=2)), "--quiet"]) == 0
    assert "never acted" not in capsys.readouterr().err
