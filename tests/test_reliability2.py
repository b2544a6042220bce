"""Reliability, round 2 (issue 20): never delete, overwrite or write into a file that is not the run's
own, and refuse every bad value before any work.  One test (or one parametrised case) per numbered
defect; each failed before its fix."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import board
from experiments.cli import main as cli
from experiments.harness import match as M
from experiments.harness import pgn as pgn_out
from experiments.harness.openings import default_suite, load_suite
from experiments.harness.store import Store, StoreBusyError, StoreError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_fakes import Factory  # noqa: E402
from test_reliability import QUICK, game_ids, one_line_error, run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fakes" / "fake_uci.py"
pytestmark = pytest.mark.timeout(300)


def play_small(db: Path, pgn: Path | None = None, games: int = 2) -> Store:
    """A few fake games stored in ``db`` (and the PGN); the store is returned open."""
    ops = load_suite(default_suite("crazyhouse"), "crazyhouse")[:2]
    tasks = M.match_tasks("t", "crazyhouse", M.Player("stepped", "stepped", nodes=4),
                          M.Player("random", "random", nodes=4), ops, games)
    st = Store(db, lock=True)
    M.play(tasks, st, Factory(), adjudication=M.Adjudication(max_plies=12), pgn_path=pgn, progress=False)
    return st


def foreign_db(path: Path) -> bytes:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO customers (name) VALUES ('Ada')")
    return path.read_bytes()


def write_config(path: Path, body: str, name: str = "r2", engines: str | None = None) -> Path:
    engines = engines if engines is not None else (
        '[[engines]]\nname = "a"\nengine = "material-ab"\nnodes = 8\n'
        '[[engines]]\nname = "b"\nengine = "material-mcts"\nnodes = 8\n')
    path.write_text(f'name = "{name}"\nvariant = "crazyhouse"\ngames = 2\n{body}\n'
                    f'[adjudication]\nmax_plies = 12\n{engines}')
    return path


# ------------------------------------------------------------------ 1. a refused run deletes nothing

def test_a_refused_run_never_deletes_the_database_another_run_writes(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Run B creates the file but is slow to lock it; run A locks it meanwhile; B is refused and
    must leave A's database alone."""
    db = tmp_path / "shared.sqlite"
    real = fcntl.flock
    held: dict[str, Store] = {}

    def racing(fd: int, op: int) -> None:
        if "a" not in held and op & fcntl.LOCK_EX:
            held["a"] = None  # type: ignore[assignment]
            held["a"] = Store(db, lock=True)  # run A, in the gap between B's open and B's lock
        real(fd, op)

    monkeypatch.setattr(fcntl, "flock", racing)
    with pytest.raises(StoreBusyError):
        Store(db, lock=True)  # run B
    monkeypatch.setattr(fcntl, "flock", real)
    a = held["a"]
    assert db.exists()
    ops = load_suite(default_suite("crazyhouse"), "crazyhouse")[:1]
    tasks = M.match_tasks("t", "crazyhouse", M.Player("stepped", "stepped", nodes=4),
                          M.Player("random", "random", nodes=4), ops, 2)
    M.play(tasks, a, Factory(), adjudication=M.Adjudication(max_plies=12), progress=False)
    a.close()
    assert db.exists()
    with Store(db, readonly=True) as r:
        assert len(r) == 2


# ------------------------------------------------------------------ 2. torn PGN games

def test_a_failed_pgn_append_is_cut_back_to_where_it_began(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pgn = tmp_path / "g.pgn"
    st = play_small(tmp_path / "g.sqlite", pgn)
    before = pgn.read_bytes()
    games = st.games()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 40:
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(pgn_out.os, "write", half_then_full)
    with pytest.raises(OSError):
        pgn_out.append(pgn, games[0], "another-db")
    monkeypatch.setattr(pgn_out.os, "write", real_write)
    assert pgn.read_bytes() == before  # no half game left behind
    pgn_out.append(pgn, games[0], "another-db")  # the rerun writes it whole
    assert game_ids(pgn).count(f"another-db/{games[0].key}") == 1
    st.close()


# ------------------------------------------------------------------ 3. openings --out

def test_openings_out_refuses_a_file_that_is_not_an_epd_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "results.sqlite"
    play_small(precious).close()
    before = precious.read_bytes()
    rc, _, err = run_cli(capsys, "openings", "--count", "1", "--out", str(precious), "--quiet")
    assert rc == 2 and "not an EPD" in one_line_error(err)
    assert precious.read_bytes() == before
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    rc, _, err = run_cli(capsys, "openings", "--count", "1", "--out", str(notes), "--quiet")
    assert rc == 2 and notes.read_text() == "my notes\n"


def test_openings_are_written_whole_by_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.cli import harness as cli_harness
    from experiments.harness import openings as openings_mod

    suite = tmp_path / "mine.epd"
    suite.write_text(default_suite("crazyhouse").read_text())  # an EPD suite may be replaced
    lines = default_suite("crazyhouse").read_text().splitlines()[:3]
    monkeypatch.setattr(openings_mod, "generate", lambda *a, **k: lines)
    ns = cli.build_parser().parse_args(["openings", "--count", "3", "--out", str(suite), "--quiet"])
    assert cli_harness.cmd_openings(ns) == 0
    assert suite.read_text().splitlines() == lines
    assert [p.name for p in tmp_path.iterdir()] == ["mine.epd"]  # no temporary file left


# ------------------------------------------------------------------ 4. other programs' databases

def test_match_refuses_a_foreign_sqlite_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other_app.sqlite"
    before = foreign_db(other)
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--db", str(other), *QUICK)
    assert rc == 2 and "not a searchbench results database" in one_line_error(err)
    assert other.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_app.sqlite"]


def test_ratings_reads_without_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other_app.sqlite"
    before = foreign_db(other)
    rc, _, err = run_cli(capsys, "ratings", str(other))
    assert rc == 2 and "not a searchbench results database" in one_line_error(err)
    assert other.read_bytes() == before
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    rc, _, err = run_cli(capsys, "ratings", str(empty))
    assert rc == 2 and "empty" in one_line_error(err) and empty.read_bytes() == b""
    ours = tmp_path / "ours.sqlite"
    play_small(ours).close()
    os.chmod(ours, 0o444)
    before = ours.read_bytes()
    listing = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = run_cli(capsys, "ratings", str(ours), "--bootstrap", "0")
    assert rc == 0, err
    assert "stepped" in out
    assert ours.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no -wal/-shm left behind


def test_bughouse_training_reads_its_input_database_read_only(tmp_path: Path) -> None:
    from experiments.training.bughouse_data import BughouseDataError, samples_from_db

    ours = tmp_path / "chess-games.sqlite"
    play_small(ours).close()
    before = ours.read_bytes()
    with pytest.raises(BughouseDataError, match="no bughouse games"):
        samples_from_db([ours])
    assert ours.read_bytes() == before


# ------------------------------------------------------------------ 5. the PGN check

@pytest.mark.parametrize("text", ['[1, 2, 3]\n', '["a", "b"]\n', '[tool.x]\nkey = 1\n', '[section]\n'])
def test_pgn_check_wants_tag_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    target = tmp_path / "not.pgn"
    target.write_text(text)
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--db",
                         str(tmp_path / "r.sqlite"), "--pgn", str(target), *QUICK)
    assert rc == 2 and "not a PGN" in one_line_error(err)
    assert target.read_text() == text
    assert not (tmp_path / "r.sqlite").exists()


# ------------------------------------------------------------------ 6. names that break PGN keys

@pytest.mark.parametrize("name", ['a"b', "a\nb", "a\\b", "tab\there"])
def test_player_names_that_break_pgn_tags_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      name: str) -> None:
    cfg = write_config(tmp_path / "t.toml", f'db = "{tmp_path / "t.sqlite"}"',
                       engines=f'[[engines]]\nname = {json.dumps(name)}\nengine = "material-ab"\nnodes = 8\n'
                               '[[engines]]\nname = "b"\nengine = "material-mcts"\nnodes = 8\n')
    rc, _, err = run_cli(capsys, "tournament", str(cfg), "--quiet")
    assert rc == 2 and "name" in one_line_error(err)
    assert not (tmp_path / "t.sqlite").exists()
    with pytest.raises(M.MatchError):
        M.Player(name, "material-ab", nodes=8)


# ------------------------------------------------------------------ 7. output folders found late

def test_pgn_in_a_new_folder_is_created_before_the_first_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pgn = tmp_path / "newdir" / "x.pgn"
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--db",
                         str(tmp_path / "r.sqlite"), "--pgn", str(pgn), *QUICK)
    assert rc == 0, err
    assert len(game_ids(pgn)) == 2


def test_config_default_pgn_in_a_missing_runs_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = write_config(tmp_path / "t.toml", f'db = "{tmp_path / "elsewhere.sqlite"}"')
    rc, _, err = run_cli(capsys, "tournament", str(cfg), "--quiet")
    assert rc == 0, err
    assert len(game_ids(tmp_path / "runs" / "r2.pgn")) == 2


def test_dangling_symlink_pgn_is_refused_before_any_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "link.pgn"
    link.symlink_to(tmp_path / "nowhere" / "target.pgn")
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--db",
                         str(tmp_path / "r.sqlite"), "--pgn", str(link), *QUICK)
    assert rc == 2 and "symbolic link" in one_line_error(err)
    assert not (tmp_path / "r.sqlite").exists()


def test_report_dir_that_cannot_be_made_is_refused_before_any_game(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'name = "s"\nvariant = "crazyhouse"\ngames = 2\ndb = "{tmp_path / "s.sqlite"}"\n'
                   'report_dir = "/proc/x"\nanchor = "a"\n[adjudication]\nmax_plies = 12\n'
                   '[[families]]\nname = "a"\nengine = "material-ab"\nnodes = [8]\n')
    rc, _, err = run_cli(capsys, "scale", str(cfg), "--quiet")
    assert rc == 2 and "report_dir" in one_line_error(err)
    assert not (tmp_path / "s.sqlite").exists()
    rc, _, err = run_cli(capsys, "scale", str(cfg).replace("s.toml", "s.toml"), "--quiet", "--report-dir", "/proc/y")
    assert rc == 2


# ------------------------------------------------------------------ 8. only regular files are databases

def test_dev_null_is_no_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--db", "/dev/null", *QUICK)
    assert rc == 2 and "not a regular file" in one_line_error(err)
    assert not os.path.exists("/dev/null-journal") and not os.path.exists("/dev/null-wal")


# ------------------------------------------------------------------ 9. perft depth

def test_perft_depth_beyond_reason_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "perft", "--depth", "100000", board.STARTING_FEN)
    assert rc == 2 and "--depth" in one_line_error(err)
    with pytest.raises(ValueError, match="maximum"):
        board.perft(board.new_position("chess"), 100000)
    with pytest.raises(ValueError, match="maximum"):
        board.perft_bulk(board.new_position("chess"), board.MAX_PERFT_DEPTH + 1)
    assert board.perft(board.new_position("chess"), 2) == 400


# ------------------------------------------------------------------ 10. numbers that cannot work

@pytest.mark.parametrize("argv", [
    ["match", "material-ab", "material-mcts", "--tc", "inf+0"],
    ["match", "material-ab", "material-mcts", "--tc", "nan+1"],
    ["match", "material-ab", "material-mcts", "--tc", "10+inf"],
    ["match", "material-ab", "material-mcts", "--movetime", "inf"],
    ["match", "material-ab", "material-mcts", "--nodes", "99999999999999999999999"],
    ["match", "material-ab", "material-mcts", "--nodes", "8", "--seed", str(2**64)],
    ["match", "material-ab", "material-mcts", "--nodes", "8", "--seed", "-1"],
    ["match", "material-mcts:nodes=99999999999999", "material-ab", "--nodes", "8"],
    ["match", "bughouse-mcts:nodes=8", "bughouse-mcts:nodes=16", "--variant", "bughouse", "--tc", "inf+0"],
    ["sprt", "material-ab", "material-mcts", "--nodes", "8", "--elo0", "nan"],
    ["sprt", "material-ab", "material-mcts", "--nodes", "8", "--elo1", "inf"],
    ["train", "rise", "--data", "x", "--out", "y", "--lr", "nan"],
    ["train", "rise", "--data", "x", "--out", "y", "--minutes", "0"],
    ["train", "rise", "--data", "x", "--out", "y", "--value-weight", "inf"],
    ["bughouse-train", "--db", "x", "--out", "y", "--lr", "nan"],
])
def test_bad_numbers_are_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 argv: list[str]) -> None:
    db = tmp_path / "r.sqlite"
    extra = ["--db", str(db), "--games", "2", "--quiet"] if argv[0] == "match" else (
        ["--db", str(db), "--max-games", "4", "--quiet"] if argv[0] == "sprt" else [])
    t0 = time.monotonic()
    rc, _, err = run_cli(capsys, *argv, *extra)
    assert rc == 2, err
    one_line_error(err)
    assert time.monotonic() - t0 < 30
    assert not db.exists()


def test_ratings_anchor_elo_must_be_finite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours = tmp_path / "ours.sqlite"
    play_small(ours).close()
    rc, _, err = run_cli(capsys, "ratings", str(ours), "--anchor-elo", "nan")
    assert rc == 2 and "finite" in one_line_error(err)


@pytest.mark.parametrize("body", [
    "anchor_elo = inf", "anchor_elo = nan", "seed = 99999999999999999", "seed = -3",
])
def test_config_numbers_that_cannot_work(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> None:
    cfg = write_config(tmp_path / "t.toml", f'db = "{tmp_path / "t.sqlite"}"\n{body}')
    rc, _, err = run_cli(capsys, "tournament", str(cfg), "--quiet")
    assert rc == 2 and "t.toml:" in one_line_error(err)
    assert not (tmp_path / "t.sqlite").exists()


@pytest.mark.parametrize("limit", ["movetime = inf", "movetime = nan", 'tc = "inf+0"', "nodes = 99999999999"])
def test_config_player_limits_that_cannot_work(tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str) -> None:
    cfg = write_config(tmp_path / "t.toml", f'db = "{tmp_path / "t.sqlite"}"',
                       engines=f'[[engines]]\nname = "a"\nengine = "material-ab"\n{limit}\n'
                               '[[engines]]\nname = "b"\nengine = "material-mcts"\nnodes = 8\n')
    rc, _, err = run_cli(capsys, "tournament", str(cfg), "--quiet")
    assert rc == 2, err
    one_line_error(err)
    assert not (tmp_path / "t.sqlite").exists()


@pytest.mark.parametrize("ladder", ["{ start = 8, factor = 2, steps = 600 }", "{ start = 8, factor = inf, steps = 3 }",
                                    "{ start = 8, factor = 1e300, steps = 3 }"])
def test_scale_ladders_that_overflow(tmp_path: Path, capsys: pytest.CaptureFixture[str], ladder: str) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'name = "s"\nvariant = "crazyhouse"\ngames = 2\ndb = "{tmp_path / "s.sqlite"}"\n'
                   f'report_dir = "{tmp_path}"\nanchor = "a"\n'
                   f'[[families]]\nname = "a"\nengine = "material-ab"\nladder = {ladder}\n')
    rc, _, err = run_cli(capsys, "scale", str(cfg), "--quiet")
    assert rc == 2 and "ladder" in one_line_error(err)


# ------------------------------------------------------------------ 11. engine options that cannot work

@pytest.mark.parametrize("option", ["cpuct_base=0", "u_base=0", "q_thresh_base=0", "cpuct_base=-5",
                                    "batch_size=100000000", "virtual_loss=inf", "prior_noise_decay=0"])
def test_engine_options_that_divide_by_zero_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         option: str) -> None:
    db = tmp_path / "r.sqlite"
    rc, _, err = run_cli(capsys, "match", f"material-mcts:{option}", "material-ab", "--nodes", "8", "--db", str(db),
                         *QUICK)
    assert rc == 2 and option.split("=")[0] in one_line_error(err)
    assert not db.exists()


# ------------------------------------------------------------------ 12. files that lie

def test_weights_header_that_lies_is_refused_before_allocating(tmp_path: Path) -> None:
    import resource

    import torch

    from evaluators import nets
    from evaluators.neural import WEIGHTS_DIR

    d = torch.load(os.path.join(WEIGHTS_DIR, "rise_crazyhouse.pt"), map_location="cpu", weights_only=True)
    for channels in (6000, 10**7):
        d["config"] = {**d["config"], "channels": channels}
        liar = tmp_path / f"liar{channels}.pt"
        torch.save(d, liar)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(ValueError, match="shape"):
            nets.load_model(str(liar), "rise")
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 200_000  # KB: nothing near 1.5 GB


def test_damaged_shard_is_refused_by_name(tmp_path: Path) -> None:
    from experiments.training import datagen

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_train import make_dataset

    make_dataset(str(tmp_path / "d"), "crazyhouse", games=20)
    shard = datagen.shard_paths(str(tmp_path / "d"))[0]
    with np.load(shard, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["raw"] = arrays["raw"][:-5]
    np.savez_compressed(shard, **arrays)
    with pytest.raises(datagen.DataError, match="damaged shard"):
        datagen.load_dataset(str(tmp_path / "d"))


def test_training_into_a_folder_of_another_network(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_train import make_dataset

    data = str(tmp_path / "d")
    make_dataset(data, "crazyhouse", games=40)
    out = str(tmp_path / "run")
    common = ["--data", data, "--out", out, "--size", "tiny", "--epochs", "1", "--batch", "64", "--quiet"]
    assert cli.main(["train", "rise", *common]) == 0
    capsys.readouterr()
    rc = cli.main(["train", "sixtyfour", *common])
    _, err = capsys.readouterr()
    assert rc == 2 and "checkpoint of another network" in one_line_error(err)


def test_openings_dev_zero_and_non_utf8_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--openings", "/dev/zero",
                         "--db", str(tmp_path / "r.sqlite"), *QUICK)
    assert rc == 2 and "/dev/zero" in one_line_error(err) and time.monotonic() - t0 < 30
    latin = tmp_path / "latin1.epd"
    latin.write_bytes("# d\xe9but\n".encode("latin-1"))
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--openings", str(latin),
                         "--db", str(tmp_path / "r.sqlite"), *QUICK)
    assert rc == 2 and "latin1.epd" in one_line_error(err) and "UTF-8" in err
    cfg = tmp_path / "c.toml"
    cfg.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    rc, _, err = run_cli(capsys, "tournament", str(cfg))
    assert rc == 2 and "c.toml" in one_line_error(err) and "UTF-8" in err
    assert not (tmp_path / "r.sqlite").exists()


# ------------------------------------------------------------------ 13. leftovers

def test_refused_training_leaves_no_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_train import make_dataset

    data = str(tmp_path / "d")
    make_dataset(data, "crazyhouse", games=2)  # too few games for a three-way split
    out = tmp_path / "runs" / "new"
    rc = cli.main(["train", "rise", "--data", data, "--out", str(out), "--size", "tiny", "--quiet"])
    _, err = capsys.readouterr()
    assert rc == 2 and "split" in one_line_error(err)
    assert not out.exists() and not (tmp_path / "runs").exists()
    ours = tmp_path / "chess.sqlite"
    play_small(ours).close()
    rc = cli.main(["bughouse-train", "--db", str(ours), "--out", str(out), "--quiet"])
    _, err = capsys.readouterr()
    assert rc == 2 and "bughouse" in one_line_error(err)
    assert not out.exists() and not (tmp_path / "runs").exists()


# ------------------------------------------------------------------ 14. processes

def _alive_with(marker: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd and b"pytest" not in cmd:
                stat = Path(f"/proc/{d}/stat").read_text()
                if stat.split(")")[-1].split()[0] != "Z":
                    out.append(int(d))
    return out


def test_hung_wrapper_script_engine_is_killed_with_its_children(tmp_path: Path) -> None:
    from engines import factory
    from engines.base import EngineSpec
    from search.base import Limits

    marker = str(tmp_path / "marker-state")
    wrapper = tmp_path / "engine.sh"
    wrapper.write_text(f"#!/bin/sh\n{sys.executable} {FAKE} hang {marker}\n")  # not exec: a child process
    wrapper.chmod(0o755)
    e = factory.create(EngineSpec("wrapped", str(wrapper), "uci", {"timeout": "0.5"}), "chess")
    r = e.play(board.new_position("chess"), Limits(nodes=10))
    assert r.forfeit is not None and r.forfeit.startswith("hang")
    e.close()
    deadline = time.monotonic() + 10
    while _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with(marker) == []


def test_engine_that_is_not_an_engine_gives_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "experiments.cli", "match", "/bin/cat+uci", "material-ab",
                          "--variant", "chess", "--nodes", "8", "--games", "2", "--quiet", "--db", "/tmp/unused.sqlite"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**os.environ, "SEARCHBENCH_TEST_STARTUP": "1"})
    assert out.returncode == 2
    one_line_error(out.stderr)
    assert "Loop" not in out.stderr


# ------------------------------------------------------------------ security

def test_no_external_programs(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from engines import catalog, registry

    monkeypatch.delenv(catalog.NO_EXTERNAL_ENV, raising=False)
    db = tmp_path / "r.sqlite"
    rc, _, err = run_cli(capsys, "--no-external-programs", "match", f"{sys.executable}+uci:args={FAKE} ok",
                         "material-ab", "--nodes", "8", "--variant", "chess", "--db", str(db), *QUICK)
    assert rc == 2 and "external programs are disabled" in one_line_error(err)
    monkeypatch.setenv(catalog.NO_EXTERNAL_ENV, "1")
    with pytest.raises(Exception, match="Debug Log File"):
        registry.resolve(f"stockfish:Debug Log File={tmp_path / 'x.log'}")
    registry.resolve("stockfish:nodes=100,threads=1")  # the built-in engines and the adapter's options stay
    monkeypatch.delenv(catalog.NO_EXTERNAL_ENV)
    registry.resolve(f"{sys.executable}+uci:args={FAKE} ok")
    assert not db.exists()


def test_local_ray_listens_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    from experiments.harness import backends

    seen: dict[str, Any] = {}

    def fake_init(**kw: Any) -> None:
        seen.update(kw)
        raise RuntimeError("stop here")

    from ray._private import ray_constants

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "1")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    with pytest.raises(M.MatchError, match="stop here"):
        backends.play_ray([], Factory(), "crazyhouse", 1, 1, M.Adjudication(), {}, lambda g: None, lambda: False,
                          M.RunStats())
    assert seen.get("_node_ip_address") == "127.0.0.1"
    assert ray_constants.ENABLE_RAY_CLUSTER is False and os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
