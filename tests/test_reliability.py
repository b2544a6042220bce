"""Reliability of the command line and the harness (the defects found by trying searchbench as a new
user would): nothing overwritten, one run per database, write failures and bad paths as one line
and exit 2, per-engine limits, overrun watchdog, messages, progress.  Each test failed before its fix."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from experiments.cli import main as cli
from experiments.harness import match as M
from experiments.harness.openings import default_suite, load_suite
from experiments.harness.store import Store, StoreBusyError, StoreError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engines_path import find_engine  # noqa: E402
from harness_fakes import Factory  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fakes" / "fake_uci.py"
QUICK = ["--games", "2", "--max-plies", "16", "--quiet"]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:  # argparse errors
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and "%|" not in ln]  # progress bars aside
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def game_ids(pgn: Path) -> list[str]:
    return [ln.split('"')[1] for ln in pgn.read_text().splitlines() if ln.startswith("[GameId ")]


# ------------------------------------------------------------------------------- 1. PGN never overwritten

def test_pgn_path_that_is_a_database_is_refused_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "precious.sqlite"
    rc, _, _ = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db", str(precious), *QUICK)
    assert rc == 0
    before = precious.read_bytes()
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "32", "--db",
                         str(tmp_path / "new.sqlite"), "--pgn", str(precious), *QUICK)
    assert rc == 2 and "not a PGN" in one_line_error(err)
    assert precious.read_bytes() == before
    assert not (tmp_path / "new.sqlite").exists()  # refused before any game: no empty database left


def test_two_databases_append_to_one_pgn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pgn = tmp_path / "all.pgn"
    for db, nodes in (("a.sqlite", "16"), ("b.sqlite", "24")):
        rc, _, _ = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", nodes, "--db",
                           str(tmp_path / db), "--pgn", str(pgn), *QUICK)
        assert rc == 0
    ids = game_ids(pgn)
    assert len(ids) == 4 and len(set(ids)) == 4  # both runs' games, each once
    rc, _, _ = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db",
                       str(tmp_path / "a.sqlite"), "--pgn", str(pgn), *QUICK)
    assert rc == 0 and game_ids(pgn) == ids  # a rerun adds nothing and removes nothing


def test_stored_games_missing_from_the_pgn_are_appended(tmp_path: Path) -> None:
    """A run killed between the database commit and the PGN write: the next run adds the game."""
    ops = load_suite(default_suite("crazyhouse"), "crazyhouse")[:2]
    tasks = M.match_tasks("t", "crazyhouse", M.Player("stepped", "stepped", nodes=4),
                          M.Player("random", "random", nodes=4), ops, 4)
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks[:2], st, Factory(), adjudication=M.Adjudication(max_plies=20), progress=False)
        pgn = tmp_path / "r.pgn"
        pgn.write_text("")  # the PGN lost both games
        M.play(tasks, st, Factory(), adjudication=M.Adjudication(max_plies=20), pgn_path=pgn, progress=False)
        assert sorted(game_ids(pgn)) == sorted(f"{st.uid}/{t.key}" for t in tasks)


# ------------------------------------------------------------------------------- 2. one run per database

def test_second_run_on_a_database_in_use_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "busy.sqlite"
    with Store(db, lock=True):
        with pytest.raises(StoreBusyError, match=f"pid {os.getpid()}"):
            Store(db, lock=True)
        rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db", str(db), *QUICK)
        assert rc == 2 and f"in use by another run (pid {os.getpid()})" in one_line_error(err)
        with Store(db) as reader:  # readers are not locked out
            assert len(reader) == 0
    with Store(db, lock=True) as again:  # released with the first store
        assert len(again) == 0


# ------------------------------------------------------------------------------- 3. write failures

class FailingStore(Store):
    def __init__(self, path: Path, fail_at: int) -> None:
        super().__init__(path)
        self.fail_at, self.calls = fail_at, 0

    def add(self, g: Any) -> bool:
        self.calls += 1
        if self.calls == self.fail_at:
            raise StoreError("database is locked")
        return super().add(g)


def test_a_game_that_cannot_be_stored_stops_the_run_cleanly(tmp_path: Path) -> None:
    ops = load_suite(default_suite("crazyhouse"), "crazyhouse")[:3]
    tasks = M.match_tasks("t", "crazyhouse", M.Player("stepped", "stepped", nodes=4),
                          M.Player("random", "random", nodes=4), ops, 6)
    st = FailingStore(tmp_path / "r.sqlite", fail_at=2)
    with pytest.raises(M.CommitError, match="was not stored.*rerun|run the same command again"):
        M.play(tasks, st, Factory(), concurrency=2, adjudication=M.Adjudication(max_plies=20), progress=False)
    assert len(st) == 1
    st.close()
    with Store(tmp_path / "r.sqlite") as st2:  # the rerun resumes
        stats = M.play(tasks, st2, Factory(), concurrency=2, adjudication=M.Adjudication(max_plies=20),
                       progress=False)
        assert stats.skipped == 1 and stats.played == 5 and len(st2) == 6


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_pgn_write_failure_is_one_line_and_resumable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.sqlite"
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db", str(db),
                         "--pgn", "/dev/full", *QUICK)
    line = one_line_error(err)
    assert rc == 2 and "PGN" in line and "No space left" in line
    with Store(db) as st:
        assert len(st) == 1  # the game is in the database
    pgn = tmp_path / "r.pgn"
    rc, out, _ = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db", str(db),
                         "--pgn", str(pgn), *QUICK)
    assert rc == 0 and "1 played, 1 already stored" in out and len(game_ids(pgn)) == 2


# ------------------------------------------------------------------------------- 4. output paths

def test_output_paths_are_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.harness import openings

    def never(*a: Any, **k: Any) -> list[str]:
        raise AssertionError("generation started before the output path was checked")

    monkeypatch.setattr(openings, "generate", never)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [("train", "rise", "--data", str(tmp_path), "--out", str(a_file)),
             ("openings", "--out", str(tmp_path)),
             ("openings", "--out", str(a_file / "x.epd")),
             ("datagen", "--out", str(a_file)),
             ("bughouse-train", "--db", str(tmp_path / "b.sqlite"), "--out", str(a_file))]
    for argv in cases:
        rc, _, err = run_cli(capsys, *argv)
        assert rc == 2, argv
        assert "directory" in one_line_error(err)


def test_os_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.cli import harness as cmd_harness

    def full(args: argparse.Namespace) -> int:
        raise OSError(28, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setattr(cmd_harness, "cmd_ratings", full)
    rc, _, err = run_cli(capsys, "ratings", str(tmp_path / "x.sqlite"))
    assert rc == 2 and "No space left on device" in one_line_error(err)


# ------------------------------------------------------------------------------- 5. Ray address

def test_unreachable_ray_address_fails_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db",
                         str(tmp_path / "r.sqlite"), "--backend", "ray", "--ray-address", "127.0.0.1:1", *QUICK)
    assert rc == 2 and "cannot reach a Ray cluster" in one_line_error(err)
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "16", "--db",
                         str(tmp_path / "r.sqlite"), "--backend", "ray", "--ray-address", "nonsense", *QUICK)
    assert rc == 2 and "HOST:PORT" in one_line_error(err)


# ------------------------------------------------------------------------------- 9. values that cannot work

@pytest.mark.parametrize("argv", [
    ["match", "material-ab", "material-mcts", "--nodes", "8", "--workers", "0"],
    ["match", "material-ab", "material-mcts", "--nodes", "8", "--max-plies", "-5"],
    ["match", "material-ab", "material-mcts", "--nodes", "8", "--concurrency", "0"],
    ["match", "material-ab", "material-mcts", "--nodes", "0"],
    ["match", "material-ab", "material-mcts", "--movetime", "-1"],
    ["perft", "--depth", "-1", "startpos"],
    ["sprt", "material-ab", "material-mcts", "--nodes", "8", "--max-games", "1"],
])
def test_values_that_cannot_work_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2 and out == ""
    assert "must be" in one_line_error(err)


# ------------------------------------------------------------------------------- 10. per-engine limits

def _args(**kw: Any) -> argparse.Namespace:
    base: dict[str, Any] = {k: None for k in ("nodes", "evals", "playouts", "depth", "movetime", "tc")}
    base.update({f"{k}_{s}": None for k in ("nodes", "evals", "playouts", "depth", "movetime", "tc") for s in "ab"})
    base.update(kw)
    return argparse.Namespace(**base)


def test_per_engine_limits_take_precedence() -> None:
    from experiments.cli.harness import _players

    a, b = _players(_args(a="material-mcts:nodes=32", b="material-ab:nodes=32"))
    assert (a.nodes, b.nodes) == (32, 32)  # no --nodes needed: the specs carry the limits
    a, b = _players(_args(a="material-mcts:nodes=32", b="material-ab", nodes=64))
    assert (a.nodes, b.nodes) == (32, 64)  # the spec is not overridden by the match-wide --nodes
    a, b = _players(_args(a="material-mcts:nodes=32", b="material-ab", nodes=64, nodes_a=16, depth_b=3))
    assert (a.nodes, b.nodes, a.depth, b.depth) == (16, 64, None, 3)
    a, b = _players(_args(a="material-ab", b="material-ab", nodes=10, nodes_b=20))
    assert a.name != b.name and "nodes=10" in a.name and "nodes=20" in b.name
    with pytest.raises(M.MatchError, match="give a limit"):
        _players(_args(a="material-mcts", b="material-ab"))


def test_limits_in_specs_play_a_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, "match", "material-mcts:nodes=32", "material-ab:nodes=32", "--db",
                           str(tmp_path / "r.sqlite"), *QUICK)
    assert rc == 0, err
    with Store(tmp_path / "r.sqlite") as st:
        for g in st.games():
            assert g.white_settings["limits"] == "nodes=32" and g.black_settings["limits"] == "nodes=32"


# ------------------------------------------------------------------------------- 11. movetime overrun

def test_engine_overrunning_its_movetime_forfeits(tmp_path: Path) -> None:
    from board import new_position
    from engines import factory
    from search.base import Limits

    e = factory.create(f"{sys.executable}+uci:args={FAKE} slow", "chess")
    try:
        r = e.play(new_position("chess"), Limits(movetime=0.2))
        assert r.forfeit is not None and r.forfeit.startswith("overrun:")
        r = e.play(new_position("chess"), Limits(movetime=2.0))  # 2 s within 3 x 2 s + 0.5 s
        assert r.forfeit is None
    finally:
        e.close()


@pytest.mark.skipif(find_engine("sjeng") is None, reason="sjeng not installed")
def test_fractional_movetime_for_sjeng_is_refused_before_the_match(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "match", "material-ab", "sjeng", "--variant", "chess", "--movetime", "0.2",
                         "--db", str(tmp_path / "r.sqlite"), *QUICK)
    assert rc == 2 and "whole seconds" in one_line_error(err)
    assert not (tmp_path / "r.sqlite").exists()


# ------------------------------------------------------------------------------- 12. messages

def test_foreign_weights_and_shards_are_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(os.urandom(2000))
    rc, _, err = run_cli(capsys, "match", f"rise-mcts:weights={junk}", "material-ab", "--nodes", "8",
                         "--db", str(tmp_path / "r.sqlite"), *QUICK)
    line = one_line_error(err)
    assert rc == 2 and "not a searchbench weights file" in line and "weights_only=False" not in line
    data = tmp_path / "data"
    data.mkdir()
    (data / "shard-00000.npz").write_bytes(os.urandom(2000))
    rc, _, err = run_cli(capsys, "train", "rise", "--data", str(data), "--out", str(tmp_path / "run"), "--quiet")
    line = one_line_error(err)
    assert rc == 2 and "not a data shard" in line and "allow_pickle" not in line
    assert not (tmp_path / "r.sqlite").exists()


def test_running_score_never_prints_infinities() -> None:
    from experiments.harness.ratings import score_text

    for w, d, l in [(0, 0, 0), (1, 0, 0), (0, 0, 1), (2, 0, 0), (1, 1, 0), (3, 0, 1), (50, 20, 30)]:
        text = score_text(w, d, l)
        assert "inf" not in text and "nan" not in text
    assert "Elo" not in score_text(5, 0, 0)  # a perfect score: score and interval only
    assert "Elo +" in score_text(50, 20, 30) and "[" in score_text(50, 20, 30)


def test_help_has_no_rest_markup(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["match", "--help"], ["scale", "--help"], ["train", "--help"]):
        rc, out, _ = run_cli(capsys, *argv)
        assert rc == 0 and "``" not in out


def test_failed_validation_leaves_no_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "match", "material-ab", "nosuch-engine", "--nodes", "8", "--db",
                         str(tmp_path / "runs" / "x.sqlite"), *QUICK)
    assert rc == 2 and "nosuch" in one_line_error(err)
    assert not (tmp_path / "runs").exists()
    cfg = tmp_path / "bad.toml"
    cfg.write_text('name = "bad"\nvariant = "chess"\ngames = 2\ndb = "%s"\nreport_dir = "%s"\n'
                   '[[families]]\nname = "x"\nengine = "nosuch-engine"\nnodes = [8, 16]\n'
                   % (tmp_path / "db" / "s.sqlite", tmp_path / "reports"))
    rc, _, err = run_cli(capsys, "scale", str(cfg), "--quiet")
    assert rc == 2 and "nosuch" in one_line_error(err)
    assert not (tmp_path / "reports").exists() and not (tmp_path / "db").exists()


# ------------------------------------------------------------------------------- 13. progress

@pytest.mark.skipif(find_engine("fairy-stockfish") is None, reason="fairy-stockfish not installed")
def test_openings_shows_progress(tmp_path: Path) -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "experiments.cli", "openings", "--variant", "chess", "--count", "2",
                          "--depth", "4", "--out", str(tmp_path / "o.epd")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "chess openings" in out.stderr and "2/2" in out.stderr
    assert len((tmp_path / "o.epd").read_text().splitlines()) == 2


def test_ratings_bootstrap_reports_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm

    from experiments.harness import ratings as R

    seen: list[bool] = []
    real = tqdm.tqdm

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(not k.get("disable", False))
        return real(*a, **k)

    monkeypatch.setattr(tqdm, "tqdm", spy)
    results = [R.Result("a", "b", s, (k // 2,)) for k, s in enumerate([1.0, 0.5, 0.0, 1.0] * 5)]
    quiet = R.rate(results, "b", bootstrap=20, seed=1)
    loud = R.rate(results, "b", bootstrap=20, seed=1, progress=True)
    assert seen == [False, True]
    assert [(r.elo, r.lo, r.hi) for r in quiet] == [(r.elo, r.lo, r.hi) for r in loud]

