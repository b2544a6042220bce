"""Reliability, round 3 (issue 30): the self-play and training paths, the ONNX cache, the results
database.  Nothing run that the user did not allow, nothing written outside the folder the user
named, nothing lost or stored twice; bad input is one line and exit code 2 before any work.  One test
(or one parametrised case) per numbered case of the issue (g01 ... g27, and the UCI and clock cases);
each failed before its fix."""
from __future__ import annotations

import json
import os
from contextlib import closing
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from experiments.harness.store import Store, StoreError
from experiments.harness.tomlconfig import ConfigError
from experiments.paths import DirLock, OutputError, append_line
from experiments.selfplay import games as selfplay, loop as rl
from experiments.training import datagen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_reliability import QUICK, one_line_error, run_cli  # noqa: E402
from test_rl import _config  # noqa: E402
from test_selfplay import _cfg, tiny_weights  # noqa: E402

pytestmark = pytest.mark.timeout(300)
VICTIM = "precious: not the run's to write\n"


def victim(tmp_path: Path, name: str = "victim.txt") -> Path:
    """A file outside every run folder, which no run may change."""
    p = tmp_path / name
    p.write_text(VICTIM)
    return p


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def one_game_db(path: Path, white: str = "material-ab", **row: Any) -> Path:
    """A results database with one stored game (``row``: columns to set afterwards, as text)."""
    import chess

    from experiments.harness.store import GameRecord

    with Store(path, lock=True) as st:
        st.add(GameRecord(key="k0", run="r", match="m", pair=0, variant="chess", white="a", black="b",
                          white_settings={"engine": white, "limits": "nodes=10"},
                          black_settings={"engine": "material-ab", "limits": "nodes=10"}, opening="o",
                          opening_fen=chess.STARTING_FEN, opening_moves=[], moves=["e2e4"], result="1-0", reason="x"))
    if row:
        with closing(sqlite3.connect(path)) as db, db:
            for k, v in row.items():
                db.execute(f"UPDATE games SET {k} = ?", (v,))
    return path


# ------------------------------------------------------------------ g01 nothing run that was not allowed

@pytest.fixture
def script(tmp_path: Path) -> tuple[Path, Path]:
    """An executable that records every start in a file."""
    ran = tmp_path / "ran.txt"
    exe = tmp_path / "engine.sh"
    exe.write_text(f"#!/bin/sh\necho ran >> {ran}\n")
    exe.chmod(0o755)
    return exe, ran


@pytest.mark.parametrize("command", ["datagen", "agreement"])
def test_g01_no_external_programs_refuses_a_program_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         script: tuple[Path, Path], command: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.catalog import NO_EXTERNAL_ENV

    monkeypatch.setenv(NO_EXTERNAL_ENV, "0")  # restored after the test (the command sets it to 1)
    exe, ran = script
    data = tmp_path / "data"
    if command == "agreement":
        from test_train import make_dataset

        make_dataset(str(data), "chess", games=20)
        args = ["agreement", "--data", str(data), "--nodes", "10", "--positions", "2"]
    else:
        args = ["datagen", "--out", str(data), "--games", "1"]
    rc, _, err = run_cli(capsys, "--no-external-programs", *args, "--engine", str(exe))
    assert rc == 2 and "external programs are disabled" in one_line_error(err)
    assert not ran.exists()


def test_g01_replay_refuses_a_stored_program_before_any_game(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             script: tuple[Path, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.catalog import NO_EXTERNAL_ENV

    monkeypatch.setenv(NO_EXTERNAL_ENV, "0")  # restored after the test (the command sets it to 1)
    exe, ran = script
    db = one_game_db(tmp_path / "x.sqlite", white=f"{exe}+uci")
    rc, _, err = run_cli(capsys, "--no-external-programs", "replay", str(db), "--quiet")
    assert rc == 2 and "external programs are disabled" in one_line_error(err)
    assert not ran.exists()


# ------------------------------------------------------------------ g02 nothing written through a planted link

def test_g02_links_planted_in_a_selfplay_folder_are_never_written_through(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, games=3, shard_games=2)
    out = Path(cfg.out)
    targets = [victim(tmp_path, f"v{i}.txt") for i in range(3)]
    plant(out / "pending.jsonl.tmp", targets[0])
    plant(out / "selfplay.json.tmp", targets[1])
    plant(out / "shard-00000.npz.tmp.npz", targets[2])
    assert selfplay.play(cfg, progress=False)["games"] == 3
    assert all(t.read_text() == VICTIM for t in targets)
    assert len(datagen.load_dataset(cfg.out).game_uid) == 3


def test_g02_links_planted_in_an_rl_folder_are_never_written_through(tmp_path: Path) -> None:
    cfg = rl.parse(_config(tmp_path, generations="1"))
    arm = Path(cfg.arm_dir("gumbel"))
    gen = Path(cfg.gen_dir("gumbel", 1))
    links = {arm / "state.json.tmp", gen / "card.md", gen / "train" / "command.txt", arm / "loop.json.tmp"}
    targets = {link: victim(tmp_path, f"v{i}.txt") for i, link in enumerate(sorted(links))}
    for link, t in targets.items():
        plant(link, t)
    rl.run(cfg, progress=False, until="gate")
    assert all(t.read_text() == VICTIM for t in targets.values())
    assert "gate against generation" in (gen / "card.md").read_text()
    assert "searchbench train" in (gen / "train" / "command.txt").read_text()


def test_g02_a_planted_journal_link_is_refused_not_followed(tmp_path: Path) -> None:
    t = victim(tmp_path)
    link = tmp_path / "j" / "pending.jsonl"
    plant(link, t)
    with pytest.raises(OutputError, match="cannot append"):
        append_line(link, '{"uid": 1}')
    assert t.read_text() == VICTIM


# ------------------------------------------------------------------ g03 a name that climbs out

@pytest.mark.parametrize("name", ['".."', '"."', '".hidden"'])
def test_g03_an_rl_name_that_names_no_folder_of_its_own_is_refused(tmp_path: Path, name: str) -> None:
    path = _config(tmp_path)
    text = Path(path).read_text().replace('name = "tiny"', f"name = {name}")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("out =", "report_dir =")))
    Path(path).write_text(text)
    with pytest.raises(ConfigError, match="not starting with '.'"):
        rl.parse(path)


# ------------------------------------------------------------------ g04 one run a folder

def test_g04_two_selfplay_runs_on_one_folder_the_second_is_refused(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, games=2)
    os.makedirs(cfg.out)
    with DirLock(cfg.out, "self-play directory"):  # the first run, still playing
        with pytest.raises(OutputError, match=f"in use by another run \\(pid {os.getpid()}\\)"):
            selfplay.play(cfg, progress=False)
    assert not datagen.shard_paths(cfg.out) and not os.path.exists(os.path.join(cfg.out, selfplay.JOURNAL))


def test_g04_two_rl_runs_on_one_folder_the_second_is_refused(tmp_path: Path) -> None:
    cfg = rl.parse(_config(tmp_path))
    os.makedirs(cfg.out)
    with DirLock(cfg.out, "loop folder"):
        with pytest.raises(OutputError, match="in use by another run"):
            rl.run(cfg, progress=False)
    assert not os.path.exists(cfg.arm_dir("gumbel"))


# ------------------------------------------------------------------ g05 g15 g22 g23 g27: configs refused at once

def _edit(path: str, old: str, new: str) -> str:
    text = Path(path).read_text()
    assert old in text
    Path(path).write_text(text.replace(old, new))
    return path


ANCHORS = 'anchors = [{ name = "material", engine = "material-ab", nodes = 20 }]'


@pytest.mark.parametrize("old, new, match", [
    # g05: two anchors with one name, or an anchor named as a generation
    (ANCHORS, 'anchors = [{ name = "m", engine = "material-ab", nodes = 20 }, '
              '{ name = "m", engine = "material-mcts", nodes = 20 }]', "names another player"),
    (ANCHORS, 'anchors = [{ name = "gumbel-g1", engine = "material-ab", nodes = 20 }]', "names another player"),
    # g15: no anchor at all
    (ANCHORS, "anchors = []", "at least one anchor"),
    (ANCHORS, 'anchors = [{ name = "x", engine = "nosuch", nodes = 20 }]', "unknown engine"),
    # g22: held-out data that are not folder names
    ("bootstrap = 10", "bootstrap = 10\nheldout = [{ a = 1 }]", "array of strings"),
    # g23: values that cannot work, refused before self-play
    ("lr = 0.01", "lr = 0.01\nminutes = 0", "minutes"),
    ("batch = 32", "batch = 0", "positive"),
    ("lr = 0.01", "lr = -1.0", "positive"),
    ("threshold = 0.5", 'threshold = 0.5\nopenings = "/no/such.epd"', "no such file"),
    ("threshold = 0.5", "threshold = 0.5\nsprt = true\nalpha = 2.0", "alpha"),
    ("threshold = 0.5", "threshold = 0.5\nsprt = true\nelo0 = 5.0\nelo1 = 0.0", "elo1"),
    ("[gate]\ngames = 4", "[gate]\ngames = 4000", "distinct openings"),
    ("bootstrap = 10", "bootstrap = -1", "at least 0"),
    # g27: an arm engine that names its own weights
    ('engine = "rise-gumbel:batch_size=2"', 'engine = "rise-gumbel:batch_size=2,weights=rise_crazyhouse.pt"',
     "names its own weights"),
])
def test_configs_that_cannot_work_are_refused_before_any_work(tmp_path: Path, old: str, new: str, match: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.cli.main import main

    path = _edit(_config(tmp_path), old, new)
    with pytest.raises(ConfigError, match=match):
        rl.parse(path)
    assert main(["rl", path, "--quiet"]) == 2
    assert match.split()[0] in one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ g06 a full disk during self-play

def _full_disk_once(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    """``module.name`` writes part of its file, then fails as a full disk does (once)."""
    real = getattr(module, name)
    state = {"failed": False}

    def failing(file: Any, *args: Any, **kw: Any) -> Any:
        if state["failed"]:
            return real(file, *args, **kw)
        state["failed"] = True
        Path(str(file)).write_bytes(b"PK\x03\x04 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module, name, failing)


def test_g06_a_full_disk_while_a_shard_is_written_leaves_nothing_that_blocks_a_rerun(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _cfg(tmp_path, games=3, shard_games=3)
    _full_disk_once(monkeypatch, np, "savez_compressed")
    with pytest.raises(ValueError, match="cannot write data shard .*No space left"):
        selfplay.play(cfg, progress=False)
    assert not [n for n in os.listdir(cfg.out) if "tmp" in n]  # no temporary file left to be taken for a shard
    again = selfplay.play(cfg, progress=False)  # the journal kept the games: none is played again
    assert again["games"] == 0 and again["existing_games"] == 3
    assert len(datagen.load_dataset(cfg.out).game_uid) == 3


def test_g06_a_temporary_file_an_older_version_left_is_not_a_shard(tmp_path: Path) -> None:
    (tmp_path / "shard-00000.npz.tmp.npz").write_bytes(b"half")
    (tmp_path / ".shard-00001.npz.x.tmp.npz").write_bytes(b"half")
    assert datagen.shard_paths(str(tmp_path)) == []


# ------------------------------------------------------------------ g07 a torn journal line

def test_g07_a_torn_journal_line_is_cut_before_the_next_game_is_appended(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _cfg(tmp_path, games=4, shard_games=10)
    real_flush = selfplay.Journal.flush
    monkeypatch.setattr(selfplay.Journal, "flush", lambda self: 0)  # killed before any shard
    selfplay.play(selfplay.SelfPlayConfig(**{**cfg.__dict__, "games": 2}), progress=False)
    monkeypatch.setattr(selfplay.Journal, "flush", real_flush)
    journal = Path(cfg.out) / selfplay.JOURNAL
    lines = journal.read_text().splitlines()
    assert len(lines) == 2
    with open(journal, "a") as f:  # a full disk or a kill mid-line
        f.write(lines[0][:40])
    monkeypatch.setattr(selfplay.Journal, "flush", lambda self: 0)
    selfplay.play(cfg, progress=False)
    after = journal.read_text().splitlines()
    assert len(after) == 4 and all(json.loads(x)["uid"] for x in after)
    assert selfplay.Journal(cfg.out, cfg.variant).done == {selfplay.game_uid(cfg.seed, i) for i in range(4)}


# ------------------------------------------------------------------ g08 g25 the ONNX cache

def _tiny_net(seed: int) -> torch.nn.Module:
    from evaluators import nets
    from evaluators.families import FAMILIES

    torch.manual_seed(seed)
    net = nets.build("rise", {**FAMILIES["rise"].sizes["tiny"], "variant": "crazyhouse"})
    net.eval()
    return net


def _input_shape() -> tuple[int, int, int]:
    net = _tiny_net(0)
    first = next(m for m in net.modules() if isinstance(m, torch.nn.Conv2d))
    return (first.in_channels, 8, 8)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    pytest.importorskip("onnxruntime")
    from evaluators import onnx_runtime

    return onnx_runtime.cache_dir()


def test_g08_a_planted_cache_entry_is_never_run(cache: Path) -> None:
    from evaluators import onnx_runtime as ort_mod

    net, other = _tiny_net(0), _tiny_net(1)
    x = torch.rand(3, *_input_shape())
    path = cache / f"{ort_mod.weights_key(net)}.onnx"
    planted = ort_mod.export(other, (x[:2],))
    path.parent.mkdir(parents=True)
    path.write_bytes(planted)  # another network's graph under this one's key, no record
    s = ort_mod.OrtForward(net, x[:2], 1)
    assert not s.cached and torch.allclose(s(x)[0], net(x)[0], atol=1e-4)
    assert path.read_bytes() != planted  # overwritten by the real export, with its record
    # a planted entry with a record that fits it (the cache folder is the attacker's): loaded, then
    # refused by the load check and rebuilt, never run and never a reason to fall back
    import hashlib

    path.write_bytes(planted)
    path.with_name(path.name + ".sha1").write_text(hashlib.sha1(planted).hexdigest())
    session, why = ort_mod.checked_session(net, x[:2], [(x,)], 1, 1e-3)
    assert why is None and session is not None and not session.cached
    assert torch.allclose(session(x)[0], net(x)[0], atol=1e-4)
    assert ort_mod.OrtForward(net, x[:2], 1).cached  # the rebuilt entry is trusted again


def test_g25_a_failed_cache_write_leaves_no_temporary_file(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluators import onnx_runtime as ort_mod

    net = _tiny_net(0)
    x = torch.rand(2, *_input_shape())
    real = os.replace

    def full(src: Any, dst: Any) -> None:
        if str(dst).startswith(str(cache)):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", full)
    s = ort_mod.OrtForward(net, x, 1)
    assert torch.allclose(s(x)[0], net(x)[0], atol=1e-4)
    assert [p.name for p in cache.iterdir()] == []


# ------------------------------------------------------------------ g09 a resume with other settings

def test_g09_an_rl_resume_with_another_engine_or_network_is_refused(tmp_path: Path) -> None:
    path = _config(tmp_path)
    cfg = rl.parse(path)
    os.makedirs(cfg.out)
    rl.check_run(cfg)
    rl.check_run(cfg)  # the same settings resume
    other = rl.parse(_edit(path, 'engine = "rise-gumbel:batch_size=2"', 'engine = "rise-gumbel:batch_size=4"'))
    with pytest.raises(ConfigError, match="arms.gumbel.engine 'rise-gumbel:batch_size=2', not 'rise-gumbel:batch_size=4'"):
        rl.check_run(other)
    tiny_weights(cfg.initial.replace("tiny.pt", "other.pt"))
    os.replace(cfg.initial.replace("tiny.pt", "other.pt"), cfg.initial)  # the initial network's file changed
    torch.manual_seed(5)
    from evaluators import nets

    net, meta = nets.load_model(cfg.initial, "rise")
    with torch.no_grad():
        next(net.parameters()).add_(1.0)
    nets.save_model(cfg.initial, "rise", net, meta["meta"])
    with pytest.raises(ConfigError, match="initial_file"):
        rl.check_run(cfg)
    more = rl.parse(_edit(path, 'engine = "rise-gumbel:batch_size=4"', 'engine = "rise-gumbel:batch_size=2"'))
    more.generations = 5  # more generations (and other [rate] keys) go on with the same run
    more.rate["games"] = 16
    with pytest.raises(ConfigError, match="initial_file"):
        rl.check_run(more)


# ------------------------------------------------------------------ g10 non-finite weights

def test_g10_training_that_diverges_or_starts_from_nan_writes_no_model(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from evaluators import nets
    from test_train import make_dataset

    data = tmp_path / "data"
    make_dataset(str(data), "crazyhouse", games=30)
    nan = tiny_weights(str(tmp_path / "nan.pt"))
    net, meta = nets.load_model(nan, "rise")
    with torch.no_grad():
        next(net.parameters())[0] = float("nan")
    nets.save_model(nan, "rise", net, meta["meta"])
    rc, _, err = run_cli(capsys, "train", "rise", "--data", str(data), "--out", str(tmp_path / "a"), "--init", nan,
                         "--quiet")
    assert rc == 2 and "NaN" in one_line_error(err) and not (tmp_path / "a" / "model.pt").exists()
    rc, _, err = run_cli(capsys, "train", "rise", "--data", str(data), "--out", str(tmp_path / "b"), "--size", "tiny",
                         "--lr", "100", "--batch", "16", "--epochs", "2", "--quiet")
    assert rc == 2 and "diverged" in one_line_error(err) and not (tmp_path / "b" / "model.pt").exists()
    # and an engine refuses such weights at load
    rc, _, err = run_cli(capsys, "match", f"rise-mcts:weights={nan}", "material-ab", "--nodes", "8",
                         "--db", str(tmp_path / "m.sqlite"), *QUICK)
    assert rc == 2 and "NaN" in one_line_error(err)


# ------------------------------------------------------------------ g11 a refused self-play leaves nothing behind

def test_g11_a_refused_selfplay_does_not_block_the_corrected_command(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, games=2, engine="rise-gumbel:weights=/no/such.pt,batch_size=2")
    with pytest.raises(ValueError, match="no/such.pt"):
        selfplay.play(cfg, progress=False)
    assert not os.path.exists(os.path.join(cfg.out, selfplay.RUN_FILE))
    fixed = _cfg(tmp_path, games=2)
    assert selfplay.play(fixed, progress=False)["games"] == 2


# ------------------------------------------------------------------ g12 the PGN beside the database

def test_g12_a_link_planted_at_the_pgn_beside_the_database_is_refused(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    t = victim(tmp_path, "other.pgn")
    t.write_text('[Event "someone else\'s"]\n\n1. e4 *\n')
    before = t.read_text()
    plant(tmp_path / "run.pgn", t)
    rc, _, err = run_cli(capsys, "match", "material-ab", "material-mcts", "--nodes", "8", "--db",
                         str(tmp_path / "run.sqlite"), *QUICK)
    assert rc == 2 and "symbolic link" in one_line_error(err)
    assert t.read_text() == before and not (tmp_path / "run.sqlite").exists()


# ------------------------------------------------------------------ g13 an engine that exits at once

def test_g13_datagen_with_an_engine_that_exits_at_once_is_one_line(tmp_path: Path) -> None:
    exe = tmp_path / "dies.sh"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "searchbench", "datagen", "--engine", str(exe), "--out",
                          str(tmp_path / "d"), "--games", "4", "--quiet"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "does not answer as a UCI engine" in one_line_error(out.stderr)
    assert time.monotonic() - t0 < 60 and not (tmp_path / "d").exists()


def test_g13_datagen_stops_after_games_failing_in_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine that answers the handshake, then fails every game: stopped with one line."""
    exe = tmp_path / "half.sh"
    exe.write_text("#!/bin/sh\nwhile read line; do case \"$line\" in uci) echo uciok;; isready) echo readyok;; "
                   "go*) exit 1;; esac; done\n")
    exe.chmod(0o755)
    out = subprocess.run([sys.executable, "-m", "searchbench", "datagen", "--engine", str(exe), "--out",
                          str(tmp_path / "d"), "--games", "40", "--quiet"], capture_output=True, text=True, timeout=240)
    assert out.returncode == 2
    last = [ln for ln in out.stderr.splitlines() if ln.startswith("searchbench: error")]
    assert len(last) == 1 and "games in a row" in last[0] and "Traceback" not in out.stderr


# ------------------------------------------------------------------ g14 a benchmark that would eat the memory

@pytest.mark.parametrize("argv", [["bench", "net", "--batches", "99999999"], ["bench", "encode", "--batches", "99999999"],
                                  ["bench", "encode", "--batches", "8,x"]])
def test_g14_huge_benchmark_batches_are_refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    rc, _, err = run_cli(capsys, *argv)
    assert rc == 2 and "4" in one_line_error(err)


# ------------------------------------------------------------------ g16 g17 damaged state and journal

@pytest.mark.parametrize("content", ["[]", "null", '{"gens": {}}', '{"1": 5}', '{"best": 2, "gens": {}}',
                                     '{"best": 0, "gens": {"1": {"gate": {"seconds": 1}}}}',
                                     '{"best": 0, "gens": {"x": {}}}'])
def test_g16_a_state_file_of_the_wrong_shape_is_one_line_naming_it(tmp_path: Path, content: str) -> None:
    p = tmp_path / "state.json"
    p.write_text(content)
    with pytest.raises(ConfigError, match="state.json is not a loop state file"):
        rl.State(str(p))


@pytest.mark.parametrize("line", ['{"uid": 5}', '{"uid": 99999999999999999999999}', "[1, 2]", '{"uid": "a"}',
                                  '{"uid": 5, "opening": [], "moves": ["e2e4"], "result": "2-0", "reason": "", '
                                  '"targets": [[[1], [1.0], 0.0]]}'])
def test_g17_journal_lines_with_wrong_content_are_one_line_naming_the_journal(tmp_path: Path, line: str) -> None:
    out = tmp_path / "sp"
    out.mkdir()
    (out / selfplay.JOURNAL).write_text(line + "\n" + line + "\n")
    with pytest.raises(selfplay.SelfPlayError, match="pending.jsonl:1"):
        selfplay.Journal(str(out), "crazyhouse")


def test_g17_a_journal_game_that_does_not_replay_names_the_journal(tmp_path: Path) -> None:
    out = tmp_path / "sp"
    out.mkdir()
    line = {"uid": 5, "opening": [], "moves": ["e2e5"], "result": "1-0", "reason": "x", "targets": [[[1], [1.0], 0.0]]}
    (out / selfplay.JOURNAL).write_text(json.dumps(line) + "\n")
    with pytest.raises(selfplay.SelfPlayError, match="pending.jsonl: game 5 does not replay"):
        selfplay.Journal(str(out), "crazyhouse").flush()


# ------------------------------------------------------------------ g18 a full disk while a checkpoint is saved

def test_g18_a_full_disk_while_a_checkpoint_is_saved_is_one_line_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.training import recipe

    ck = tmp_path / "checkpoint.pt"
    recipe.save_checkpoint(str(ck), {"model": {"w": torch.zeros(2)}})
    before = ck.read_bytes()
    real = torch.save

    def full(obj: Any, f: Any, *a: Any, **kw: Any) -> None:
        real(obj, f, *a, **kw)
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 4096 vs 2048")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(recipe.TrainError, match="cannot write checkpoint"):
        recipe.save_checkpoint(str(ck), {"model": {"w": torch.ones(2)}})
    assert ck.read_bytes() == before and os.listdir(tmp_path) == ["checkpoint.pt"]


# ------------------------------------------------------------------ g19 g20 damaged results databases

def test_g19_damaged_pages_are_one_line_in_replay_ratings_and_match(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "d.sqlite"
    with Store(db, lock=True) as st:
        from experiments.harness.store import GameRecord

        for i in range(300):
            st.add(GameRecord(key=f"k{i}", run="r", match="m", pair=i, variant="chess", white="a", black="b",
                              white_settings={"engine": "material-ab", "limits": "nodes=10"},
                              black_settings={"engine": "material-ab", "limits": "nodes=10"}, opening="o",
                              opening_fen="", opening_moves=["e2e4"] * 20, moves=["e7e5"] * 40, result="1-0",
                              reason="x" * 50))
    with closing(sqlite3.connect(db)) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = con.execute("PRAGMA page_count").fetchone()[0]
    data = bytearray(db.read_bytes())
    page = len(data) // pages
    for p in range(pages // 2, pages - 1):  # the games table's leaves, overwritten; the schema page kept
        data[p * page + 8:(p + 1) * page] = b"\xa5" * (page - 8)
    db.write_bytes(bytes(data))
    for argv in (["replay", str(db), "--quiet"], ["ratings", str(db)],
                 ["match", "material-ab", "material-mcts", "--nodes", "8", "--db", str(db), *QUICK]):
        rc, _, err = run_cli(capsys, *argv)
        assert rc == 2 and str(db) in one_line_error(err), argv


@pytest.mark.parametrize("column, value, match", [
    ("move_stats", '{"a": 1}', "move_stats is not a JSON array"),
    ("move_stats", '["x"]', "move_stats holds an entry"),
    ("white_settings", "[]", "white_settings is not a JSON object"),
    ("white_settings", "not json", "white_settings is not JSON"),
    ("seed", "abc", "seed is 'abc', not an integer"),
    ("versions", "5", "versions is not a JSON object"),
])
def test_g20_rows_of_the_wrong_type_are_one_line_naming_file_and_game(tmp_path: Path, column: str, value: str,
                                                                     match: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    db = one_game_db(tmp_path / "x.sqlite", **{column: value})
    with Store(db, readonly=True) as st, pytest.raises(StoreError, match=f"game 'k0': {match}"):
        st.games()
    for argv in (["replay", str(db), "--quiet"], ["ratings", str(db)]):
        rc, _, err = run_cli(capsys, *argv)
        line = one_line_error(err)
        assert rc == 2 and str(db) in line and "k0" in line


# ------------------------------------------------------------------ g21 a shard with an impossible move

def test_g21_a_shard_with_an_out_of_range_policy_move_is_refused_naming_it(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _cfg(tmp_path, games=2, shard_games=2)
    selfplay.play(cfg, progress=False)
    shard = datagen.shard_paths(cfg.out)[0]
    with np.load(shard) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["policy_move"][3] = 10_000_000
    np.savez_compressed(shard, **arrays)
    with pytest.raises(datagen.DataError, match="policy_move"):
        datagen.load_shard(shard)
    rc, _, err = run_cli(capsys, "train", "rise", "--data", cfg.out, "--out", str(tmp_path / "t"), "--quiet")
    assert rc == 2 and shard in one_line_error(err)


# ------------------------------------------------------------------ g24 a read-only results folder

def test_g24_a_database_on_a_read_only_file_system_is_readable(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    src, mnt = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    mnt.mkdir()
    one_game_db(src / "x.sqlite")
    with closing(sqlite3.connect(src / "x.sqlite")) as con:  # a WAL database, as every run leaves it
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    ok = subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True).returncode == 0
    ok = ok and subprocess.run(["mount", "-o", "remount,ro,bind", str(mnt)], capture_output=True).returncode == 0
    if not ok:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        pytest.skip("cannot make a read-only bind mount here (needs root and mount permission)")
    try:
        with pytest.raises(OSError):
            (mnt / "probe").write_text("x")
        rc, out, err = run_cli(capsys, "ratings", str(mnt / "x.sqlite"))
        assert rc == 0 and "a " in out, err
        with Store(mnt / "x.sqlite", readonly=True) as st:
            assert [g.key for g in st.games()] == ["k0"]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert sorted(os.listdir(src)) == ["x.sqlite"]


# ------------------------------------------------------------------ g26 replay of a run that is not there

def test_g26_replay_of_a_run_that_is_not_there_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = one_game_db(tmp_path / "x.sqlite")
    rc, out, err = run_cli(capsys, "replay", str(db), "--run", "nosuch", "--quiet")
    assert rc == 2 and "no games of run 'nosuch'" in one_line_error(err) and "agrees" not in out


# ------------------------------------------------------------------ UCI: a refused position is never searched

def test_uci_a_refused_position_is_said_and_never_answered_for_the_one_before() -> None:
    from test_uci import make_server

    s, out = make_server()
    for line in ("position startpos moves e2e4", "position startpos moves e2e4 e7e5 e1e8", "go nodes 20"):
        s.handle(line)
        s.stop_search()
    lines = out.lines()
    assert any(x.startswith("info string position refused") for x in lines)
    assert [x for x in lines if x.startswith("bestmove")] == ["bestmove 0000"]
    s.handle("position fen not/a/fen")
    s.handle("go nodes 20")
    s.stop_search()
    assert out.lines()[-1] == "bestmove 0000"
    s.handle("position startpos moves e2e4 e7e5")  # a valid position: searched again
    s.handle("go nodes 20")
    s.stop_search()
    best = out.lines()[-1]
    assert best.startswith("bestmove ") and best != "bestmove 0000"
    s.shutdown()


# ------------------------------------------------------------------ the cost of a run killed and resumed

def test_stage_clocks_count_every_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rl.StageClock, "TICK", 0.05)
    with rl.StageClock(str(tmp_path), "selfplay"):
        time.sleep(0.3)
    first = json.loads((tmp_path / "clock-selfplay.json").read_text())["seconds"]
    assert first >= 0.3
    killed = rl.StageClock(str(tmp_path), "selfplay")  # a second attempt, killed: only its ticks remain
    killed.__enter__()
    time.sleep(0.3)
    killed._stop.set()  # the process died: no __exit__
    time.sleep(0.1)
    ticked = json.loads((tmp_path / "clock-selfplay.json").read_text())["seconds"]
    assert first + 0.15 <= ticked
    with rl.StageClock(str(tmp_path), "selfplay") as clock:
        pass
    assert clock.seconds >= ticked >= 0.45


def test_the_loop_records_the_seconds_of_an_interrupted_stage(tmp_path: Path) -> None:
    cfg = rl.parse(_config(tmp_path, generations="1"))
    gen = Path(cfg.gen_dir("gumbel", 1))
    gen.mkdir(parents=True)
    (gen / "clock-selfplay.json").write_text('{"seconds": 1000.0}')  # an earlier attempt, killed
    rl.run(cfg, progress=False, until="selfplay")
    state = json.loads((Path(cfg.arm_dir("gumbel")) / rl.STATE).read_text())
    assert state["gens"]["1"]["selfplay"]["seconds"] >= 1000.0
