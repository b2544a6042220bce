"""``searchbench refresh``: a stale toy report listed with its config and cost, played again under
today's engines (its old games set aside, its old finding kept in its config's notes, the answer page
redrawn), and a refresh killed midway resumes where it stopped."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from experiments.cli import main as cli
from experiments.harness import refresh
from reports import played

CONFIG = """name = "toy"
variant = "chess"
baseline = "material-mcts"
nodes = [8]
games = {games}
seed = 5
concurrency = 1
workers = 1
report_dir = "reports"
db = "runs/toy.sqlite"
pgn = false

[adjudication]
max_plies = 40

[[variants]]
name = "alpha-beta"
engine = "material-ab"
"""


def _toy(tmp: Path, games: int = 2) -> Path:
    cfg = tmp / "toy.toml"
    cfg.write_text(CONFIG.format(games=games))
    return cfg


def _age(db: Path | None, report: Path) -> None:
    """Make the report (and the games in ``db``) look played by an older material-mcts: cpuct_init 9.0."""
    rec = json.loads((report / played.FILE).read_text())
    (base,) = [k for k in rec if k.startswith("baseline")]
    rec[base]["effective"]["cpuct_init"] = "9.0"
    (report / played.FILE).write_text(json.dumps(rec))
    if db is not None:
        with sqlite3.connect(db) as con:
            for col in ("white_settings", "black_settings"):
                rows = con.execute(f"SELECT id, {col} FROM games").fetchall()
                for gid, text in rows:
                    st = json.loads(text)
                    if st.get("engine") == "material-mcts":
                        st["effective"]["cpuct_init"] = "9.0"
                        con.execute(f"UPDATE games SET {col} = ? WHERE id = ?", (json.dumps(st, sort_keys=True), gid))


def test_a_stale_report_is_listed_then_played_again_with_its_old_finding_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = _toy(tmp_path)
    assert cli.main(["ablate", "toy.toml", "--quiet"]) == 0
    report, db = tmp_path / "reports" / "toy", tmp_path / "runs" / "toy.sqlite"
    assert played.status(report) == ("current", [])
    capsys.readouterr()
    assert cli.main(["refresh", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("0 stale report(s)")
    _age(db, report)
    old_finding = refresh.find([tmp_path / "reports"], tmp_path)[0].finding
    assert cli.main(["refresh", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 stale report(s)" in out and "reports/toy: 2 games, about" in out
    assert "searchbench ablate toy.toml" in out and "baseline@nodes=8: cpuct_init 9.0 → " in out
    assert "**Before**" not in cfg.read_text() and db.is_file()  # a dry run changes nothing
    assert cli.main(["refresh", "--only", "toy", "--quiet"]) == 0
    out = capsys.readouterr().out
    aside = list((tmp_path / "runs").glob("toy.before-*.sqlite"))
    assert len(aside) == 1 and "the old games kept in" in out  # the old engines' games, set aside
    assert played.status(report) == ("current", [])
    notes = cfg.read_text()
    assert notes.count("**Before**") == 1 and old_finding in notes and "cpuct_init 9.0" in notes
    assert "**Before**" in (report / "ablation.md").read_text()
    assert (tmp_path / "reports" / "index.html").is_file()  # the answer page redrawn
    assert cli.main(["refresh", "--dry-run"]) == 0 and capsys.readouterr().out.startswith("0 stale report(s)")


def test_a_report_whose_config_is_gone_is_named_and_a_bad_name_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = _toy(tmp_path)
    assert cli.main(["ablate", "toy.toml", "--quiet"]) == 0
    _age(None, tmp_path / "reports" / "toy")
    cfg.unlink()
    capsys.readouterr()
    assert cli.main(["refresh", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "reports/toy: 2 games" in out and "CANNOT BE PLAYED AGAIN: its config toy.toml is not here" in out
    for name in ("toy", "reports/toy", "reports/toy/"):  # by name, or by folder as the dry run lists it
        assert cli.main(["refresh", "--only", name, "--dry-run"]) == 0
        assert capsys.readouterr().out.startswith("1 stale report(s)")
    assert cli.main(["refresh", "--only", "other"]) == 2
    assert "no stale report named other" in capsys.readouterr().err
    assert cli.main(["refresh", "no-such-folder"]) == 2


def test_a_refresh_killed_midway_resumes(tmp_path: Path) -> None:
    """SIGTERM after some games: the games played stay; a second refresh keeps that database (its
    games are today's), plays only the rest, and adds no second Before paragraph."""
    cfg = _toy(tmp_path, games=2)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    run = [sys.executable, "-m", "experiments.cli", "ablate", "toy.toml", "--quiet"]
    assert subprocess.run(run, cwd=tmp_path, env=env, capture_output=True).returncode == 0
    report, db = tmp_path / "reports" / "toy", tmp_path / "runs" / "toy.sqlite"
    _age(None, report)
    db.unlink()  # the old games are gone (a fresh clone): every game is played again
    total = 400  # enough that the run cannot finish between the poll that sees 2 games and the signal
    cfg.write_text(CONFIG.format(games=total))
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli", "refresh", "--quiet"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def stored() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                return int(con.execute("SELECT COUNT(*) FROM games").fetchone()[0])
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 120
    while stored() < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    first = stored()
    assert 2 <= first < total and played.status(report)[0] == "stale"
    done = subprocess.run([sys.executable, "-m", "experiments.cli", "refresh", "--quiet"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{total - first} games played, {first} already stored" in done.stdout and stored() == total
    assert not list((tmp_path / "runs").glob("toy.before-*"))  # today's games were kept, not set aside
    assert cfg.read_text().count("**Before**") == 1
    assert played.status(report) == ("current", [])


def test_the_estimate_counts_the_games_the_config_plays_now(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale report whose config was raised (more games, or variants added) is estimated at the
    config's games, each at the table's mean cost a game, not at the table's own; its seconds a move
    are divided by the games pooled as the table was played (the page's config), not as now."""
    monkeypatch.chdir(tmp_path)
    cfg = _toy(tmp_path)
    assert cli.main(["ablate", "toy.toml", "--quiet"]) == 0
    _age(None, tmp_path / "reports" / "toy")
    (before,) = refresh.find([tmp_path / "reports"], tmp_path)
    assert before.games == 2 and before.cpu_seconds > 0
    cfg.write_text(CONFIG.format(games=6))
    (after,) = refresh.find([tmp_path / "reports"], tmp_path)
    assert after.games == 6 and after.cpu_seconds == pytest.approx(3 * before.cpu_seconds)
    # the seconds a move were recorded with the games pooled as played (concurrency 1), not as today's
    cfg.write_text(CONFIG.format(games=6).replace("concurrency = 1", "concurrency = 4"))
    (pooled,) = refresh.find([tmp_path / "reports"], tmp_path)
    assert pooled.cpu_seconds == pytest.approx(after.cpu_seconds)


def _age_variant(db: Path, report: Path, engine: str) -> None:
    """Make ``engine``'s games (and its record in the report) look played with an older setting."""
    rec = json.loads((report / played.FILE).read_text())
    for name, r in rec.items():
        if r["engine"] == engine:
            key = sorted(r["effective"])[0]
            r["effective"][key] = "older"
    (report / played.FILE).write_text(json.dumps(rec))
    with closing(sqlite3.connect(db)) as con, con:
        for col in ("white_settings", "black_settings"):
            for gid, text in con.execute(f"SELECT id, {col} FROM games").fetchall():
                st = json.loads(text)
                if st.get("engine") == engine:
                    st["effective"][sorted(st["effective"])[0]] = "older"
                    con.execute(f"UPDATE games SET {col} = ? WHERE id = ?", (json.dumps(st, sort_keys=True), gid))


def test_a_refresh_plays_again_only_the_rows_whose_engines_moved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Two rows, one variant's engine moved: the estimate counts its row alone, the other row's games
    are copied back beside the set-aside database and found done, so only the moved row is played."""
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "toy.toml"
    cfg.write_text(CONFIG.format(games=2) + '\n[[variants]]\nname = "greedy"\nengine = "material-ab:depth=1"\n')
    assert cli.main(["ablate", "toy.toml", "--quiet"]) == 0
    report, db = tmp_path / "reports" / "toy", tmp_path / "runs" / "toy.sqlite"
    full = refresh.estimate(report, cfg)
    _age_variant(db, report, "material-ab:depth=1")
    (s,) = refresh.find([tmp_path / "reports"], tmp_path)
    assert all(w.startswith("greedy@nodes=8: ") for w in s.why)
    assert s.games == 2 and full[0] == 4 and 0 < s.cpu_seconds < full[1]
    with closing(sqlite3.connect(db)) as con, con:
        kept = {k for (k,) in con.execute("SELECT key FROM games WHERE white = 'alpha-beta@nodes=8' "
                                          "OR black = 'alpha-beta@nodes=8'")}
    capsys.readouterr()
    assert cli.main(["refresh", "--only", "toy", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "2 games played, 2 already stored" in out
    aside = list((tmp_path / "runs").glob("toy.before-*.sqlite"))
    assert len(aside) == 1
    with closing(sqlite3.connect(aside[0])) as con:
        assert con.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 4  # every old game kept aside
    with closing(sqlite3.connect(db)) as con, con:
        assert {k for (k,) in con.execute("SELECT key FROM games")} >= kept
        assert con.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 4
    assert played.status(report) == ("current", [])


TUNE = """name = "toytune"
variant = "chess"
engine = "material-mcts"
nodes = 8
iterations = 2
algorithm = "spsa"
pairs = 1
concurrency = 4
workers = 1
seed = 3
db = "runs/toytune.sqlite"
pgn = false
report_dir = "reports"

[adjudication]
max_plies = 40

[[params]]
name = "cpuct_init"
min = 0.5
max = 5.0
start = 2.5
c_end = 0.4
r_end = 0.002

[verify]
games = 2
budgets = [8]
"""


def test_a_stale_tuning_is_played_again_from_a_fresh_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A tuning whose engine moved: its games and its own folder (runs/tune/NAME: the old θ) go aside
    together, so the SPSA starts afresh instead of resuming the old engine's run; the same holds
    where only the folder is left (its database gone)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "toytune.toml").write_text(TUNE)
    assert cli.main(["tune", "toytune.toml", "--quiet"]) == 0
    report, db, state = tmp_path / "reports" / "toytune", tmp_path / "runs" / "toytune.sqlite", \
        tmp_path / "runs" / "tune" / "toytune"
    assert state.is_dir() and played.status(report) == ("current", [])
    _age(db, report)
    capsys.readouterr()
    assert cli.main(["refresh", "--only", "toytune", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "the old tuning's state in" in out and (tmp_path / "runs" / "tune" / "toytune.before-").parent.is_dir()
    assert len(list((tmp_path / "runs" / "tune").glob("toytune.before-*"))) == 1
    assert state.is_dir() and played.status(report) == ("current", [])
    _age(db, report)  # again, with the database gone: the folder alone still goes aside
    db.unlink()
    assert cli.main(["refresh", "--only", "toytune", "--quiet"]) == 0
    assert len(list((tmp_path / "runs" / "tune").glob("toytune.before-*"))) == 2
    assert played.status(report) == ("current", [])
