"""Reliability, round 5 (issue 67): the carried loop state, the qat partial, SIGTERM, late refusals,
and what the new options and pages take.  Each case as a careless or hostile user meets it: one
line and exit 2, a recorded fallback, never a traceback, code run, or a file written elsewhere."""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch

from evaluators import nets, onnx_runtime
from evaluators.neural import qat_path
from experiments.harness.tomlconfig import ConfigError
from experiments.training import qat
from tests.test_reliability import one_line_error, run_cli
from tests.test_train import make_dataset


class _Planted:
    """A pickle that runs code when loaded without ``weights_only``."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.mkdir, (self.marker,))


@pytest.mark.skipif(onnx_runtime.available() is not None, reason="onnxruntime/onnx not installed")
@pytest.mark.parametrize("kind", ["planted", "torn", "foreign"])
def test_i01_a_qat_partial_never_runs_code_and_a_bad_one_starts_afresh(tmp_path: Path, kind: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_qat import _tiny_rise

    data = tmp_path / "data"
    make_dataset(str(data), "chess", games=12)
    weights = str(tmp_path / "net.pt")
    nets.save_model(weights, "rise", _tiny_rise())
    partial = qat_path(weights) + ".partial"
    marker = tmp_path / "pwned"
    if kind == "planted":
        with open(partial, "wb") as f:
            pickle.dump({"config": {"weights": weights}, "step": 1, "layers": [], "x": _Planted(str(marker))}, f)
    elif kind == "torn":
        Path(partial).write_bytes(b"PK\x03\x04 torn")
    else:  # another run's checkpoint: valid tensors, another network
        torch.save({"config": {"weights": "other.pt"}, "step": 2, "layers": [], "optimizer": {}}, partial)
    cfg = qat.QATConfig(weights=weights, data=[str(data)], steps=2, batch=8, save_every=1, threads=1)
    summary = qat.run_qat(cfg, progress=False)
    assert not marker.exists()  # no code ran
    assert summary["steps"] == 2 and not os.path.exists(partial)
    err = capsys.readouterr().err
    assert f"qat: {partial} does not resume this run" in err and "starting from step 0" in err and "Traceback" not in err


def _one_round_state(tmp_path: Path) -> tuple[str, str]:
    """A tiny rounds loop of one round, its state carried to ``tmp_path/state``: (config, its text)."""
    from experiments.cli.main import main as cli
    from tests.test_rl import _rounds_config

    path = _rounds_config(tmp_path)
    text = open(path).read().replace("generations = 2", "generations = 1")
    open(path, "w").write(text)
    assert cli(["rl", path, "--quiet", "--until", "gate", "--state-to", str(tmp_path / "state")]) == 0
    return path, text


def test_i02_state_to_never_writes_through_a_link_and_is_checked_first(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.cli.main import main as cli

    path, _ = _one_round_state(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    state = tmp_path / "state"
    import shutil

    shutil.rmtree(state / "puct")
    (state / "puct").symlink_to(outside, target_is_directory=True)  # a link to a folder inside the state
    capsys.readouterr()
    rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--until", "gate", "--state-to", str(state))
    assert rc == 2 and "is a symbolic link inside the state folder" in one_line_error(err)
    assert list(outside.iterdir()) == []  # nothing written outside the state folder
    # a state folder that cannot be one is refused before the loop runs, not after it
    (tmp_path / "afile").write_text("x")
    for bad, why in ((tmp_path / "afile", "exists and is not a directory"), (tmp_path / "out", "the loop's folder"),
                     (tmp_path / "out" / "puct", "the loop's folder or inside it")):
        before = sorted(p.name for p in (tmp_path / "out").iterdir())
        rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--state-to", str(bad))
        assert rc == 2 and why in one_line_error(err)
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before
    assert cli  # the CLI the helper drove


def test_i03_state_from_compares_the_run_before_copying_anything(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path, text = _one_round_state(tmp_path)
    state = tmp_path / "state"
    other = text.replace(f'out = "{tmp_path / "out"}"', f'out = "{tmp_path / "fresh"}"').replace("seed = 1", "seed = 2")
    if "seed = 2" not in other:
        other = other.replace('mode = "rounds"', 'mode = "rounds"\nseed = 2')
    open(path, "w").write(other)
    rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--state-from", str(state))
    line = one_line_error(err)
    assert rc == 2 and f"{state} holds a loop run with seed 1, not 2" in line
    assert not (tmp_path / "fresh").exists() or not any((tmp_path / "fresh").rglob("*.pt"))  # nothing copied
    # into the loop's own folder: a state of another run is refused too (the folder's run kept)
    open(path, "w").write(text.replace("generations = 1", "generations = 2").replace('mode = "rounds"', 'mode = "rounds"\nseed = 2')
                          if "seed = " not in text else text.replace("seed = 1", "seed = 2"))
    rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--state-from", str(state))
    assert rc == 2 and "holds a loop run with seed 1, not 2" in one_line_error(err)


def test_i04_sigterm_is_ctrl_c_finished_games_are_written(tmp_path: Path) -> None:
    """datagen on two workers stopped by SIGTERM (kill, timeout, a scheduler): the finished games are
    written, no worker is left, exit 143 with one line; a rerun goes on from them."""
    import signal
    import subprocess
    import sys
    import time

    from experiments.training import datagen

    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "experiments.cli", "datagen", "--out", str(tmp_path / "d"), "--variant", "crazyhouse",
           "--games", "2000", "--nodes", "50", "--workers", "2", "--shard-games", "1000", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(12)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "searchbench: interrupted (SIGTERM)"
    assert "Traceback" not in err
    ds = datagen.load_dataset(str(tmp_path / "d"))
    assert len(set(ds.game_uid.tolist())) > 0


@pytest.mark.parametrize("edit, match", [
    (("nodes = 4\ntc", "nodes = 2000000000\ntc"), "selfplay.nodes': must be at most 1,000,000,000"),
    (("games = 2\nnodes = 4\ntc", "games = 2000000000\nnodes = 4\ntc"), "selfplay.games': must be at most"),
    (("[gate]\ngames = 2\nnodes = 4", "[gate]\ngames = 2\nnodes = 2000000000"), "gate.nodes': must be at most"),
    (("supervised = [", 'supervised = ["SHARDS", '), "is not a bughouse game database (a folder"),
])
def test_i05_bughouse_loop_settings_are_checked_at_parse(tmp_path: Path, edit: tuple[str, str], match: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Checked when the config is read, before loop.json records them: a corrected config resumes."""
    from tests.test_bughouse_net import _bughouse_loop

    cfg, out, _, _ = _bughouse_loop(tmp_path)
    make_dataset(str(tmp_path / "shards"), "crazyhouse", games=4)
    text = cfg.read_text()
    assert edit[0] in text
    cfg.write_text(text.replace(edit[0], edit[1].replace("SHARDS", str(tmp_path / "shards")), 1))
    rc, _, err = run_cli(capsys, "rl", str(cfg), "--quiet")
    assert rc == 2 and match in one_line_error(err) and not out.exists()


def test_i05_a_one_board_gate_budget_is_checked_at_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_rl import _config

    path = _config(tmp_path)
    text = open(path).read().replace("threshold = 0.5", "threshold = 0.5\n", 1).replace("[gate]\ngames = 4\nnodes = 8",
                                                                                         "[gate]\ngames = 4\nnodes = 2000000000")
    open(path, "w").write(text)
    rc, _, err = run_cli(capsys, "rl", path, "--quiet")
    assert rc == 2 and "gate.nodes': must be at most 1,000,000,000" in one_line_error(err)
    assert not (tmp_path / "out" / "loop.json").exists()


def test_i06_a_torn_network_in_a_loop_folder_is_one_line_and_the_way_back_works(tmp_path: Path,
                                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import shutil

    path, text = _one_round_state(tmp_path)
    model = tmp_path / "out" / "puct" / "gen-001" / "train" / "model.pt"
    model.write_bytes(model.read_bytes()[:300])  # a killed copy
    open(path, "w").write(text.replace("generations = 1", "generations = 2"))
    capsys.readouterr()
    rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--until", "train")
    line = one_line_error(err)
    assert rc == 2 and f"{model} is damaged" in line and f"delete {model.parent} and run again to train round 1" in line
    shutil.rmtree(model.parent)  # as the line says
    rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--until", "train")
    assert rc == 0 and model.exists()
    st = json.loads((tmp_path / "out" / "puct" / "state.json").read_text())
    assert st["gens"]["1"]["train"]["init"] == 0 and st["gens"]["2"]["train"]["init"] == 1 and st["best"] == 1


@pytest.mark.parametrize("edit, match", [
    (lambda rows: rows[:2] + [",".join(c if i != 3 else "abc" for i, c in enumerate(rows[2].split(",")))] + rows[3:],
     "row 3 column 'elo': 'abc' is not a number"),
    (lambda rows: rows[:3] + [",".join(rows[3].split(",")[:4])] + rows[4:], "row 4: too few fields for its header"),
    (lambda rows: rows[:1] + [",".join(c if i != 7 else "nan" for i, c in enumerate(rows[1].split(",")))] + rows[2:], "row 2 column 'score': 'nan' is not a finite"),
])
def test_i07_a_malformed_report_csv_is_one_line_and_the_answer_page_is_still_written(
        tmp_path: Path, edit, match: str, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    import shutil

    root = Path(__file__).resolve().parents[1]
    reports = tmp_path / "reports"
    shutil.copytree(root / "reports" / "quick-crazyhouse", reports / "quick-crazyhouse")
    csv_path = reports / "quick-crazyhouse" / "elo_vs_nodes.csv"
    csv_path.write_text("\n".join(edit(csv_path.read_text().splitlines())) + "\n")
    rc, _, err = run_cli(capsys, "report", str(reports / "quick-crazyhouse"))
    line = one_line_error(err)
    assert rc == 2 and line.startswith(f"searchbench: error: {csv_path} ") and match in line
    # the answer page: written, that report listed without a finding (its Markdown names none here)
    md = reports / "quick-crazyhouse" / "elo_vs_nodes.md"
    md.write_text("# quick-crazyhouse\n\nA table without a findings line.\n")
    rc, out, err = run_cli(capsys, "report", "--index", str(reports))
    assert rc == 0 and (reports / "index.html").is_file()
    page = (reports / "index.html").read_text()
    assert "no finding:" in page and "Traceback" not in err and match in err


def test_also_datagen_whose_engine_fails_every_game_is_one_line_not_exit_0(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from experiments.training import datagen

    fake = Path(__file__).resolve().parent / "fakes" / "fake_uci.py"
    wrapper = tmp_path / "garbage-engine"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {fake} garbage\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(datagen, "find_engine", lambda name: str(wrapper))
    cfg = datagen.GenConfig(out=str(tmp_path / "d"), variant="crazyhouse", games=3, nodes=10, workers=1)
    with pytest.raises(datagen.DataError, match=r"the engine failed every game it was given \(3\): no game was stored"):
        datagen.generate(cfg, progress=False)


def test_also_bad_values_the_new_options_take(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """i08 a two-board engine refuses KataGo's root switches it cannot run; i09 bench selfplay needs a
    network; i11 targets' entropy ratio has the config's range; a negative move overhead is refused;
    qat never replaces the shipped tuned copy by default."""
    for argv, match in (
        (["engines", "rise-bughouse-mcts:forced_playouts=2"], "the two-board search has no forced_playouts"),
        (["engines", "rise-bughouse-mcts:policy_target_pruning=true,forced_playouts=1"], "policy_target_pruning"),
        (["engines", "rise-bughouse-mcts:temperature_visits=true"], "temperature_visits"),
        (["bench", "selfplay", "--engine", "material-mcts", "--games", "2", "--rounds", "1"],
         "'material-mcts' runs no network (classical): it has no inference backends"),
        (["targets", "--engine", "rise-mcts", "--data", str(tmp_path), "--min-entropy-ratio", "-1"], "must be at least 0 and at most 2"),
        (["targets", "--engine", "rise-mcts", "--data", str(tmp_path), "--min-entropy-ratio", "100"], "at most 2"),
        (["engines", "rise-mcts:time.move_overhead=-1"], "time.move_overhead must be from 0 to 60 seconds"),
        (["qat", "--weights", "rise_crazyhouse.pt", "--data", str(tmp_path), "--steps", "1"], "is the shipped tuned copy"),
    ):
        rc, _, err = run_cli(capsys, *argv)
        assert rc == 2 and match in one_line_error(err), (argv, err)


@pytest.mark.parametrize("kwargs, match", [
    ({"variant": "atomic"}, "unknown variant 'atomic'"),
    ({"workers": 0}, "workers must be a whole number of at least 1, got 0"),
    ({"games": "2"}, "games must be a whole number of at least 1, got '2'"),
    ({"nodes": -3}, "nodes must be a whole number of at least 1"),
    ({"db": "FILE/x.sqlite"}, "cannot create the folder of database"),
    ({"db": "DIR"}, "exists and is not a file"),
])
def test_i10_the_notebooks_match_raises_one_value_error(tmp_path: Path, kwargs: dict, match: str) -> None:  # type: ignore[type-arg]
    from experiments import notebook as sb

    (tmp_path / "afile").write_text("x")
    kw = {k: (str(tmp_path / "afile") + v[4:] if isinstance(v, str) and v.startswith("FILE") else
              str(tmp_path) if v == "DIR" else v) for k, v in kwargs.items()}
    kw.setdefault("db", str(tmp_path / "nb.sqlite"))
    with pytest.raises(ValueError, match=match):
        sb.match("material-ab", "material-mcts", nodes=kw.pop("nodes", 8), **kw)
    assert not (tmp_path / "nb.sqlite").exists()


def _two_budget_db(path: Path) -> None:
    """An ablation's database at two budgets: each budget's players met only each other."""
    from experiments.harness.store import GameRecord, MoveStat, Store

    results = ["1-0", "0-1", "1/2-1/2", "1-0", "1-0", "0-1"]
    with Store(str(path)) as st:
        k = 0
        for budget in (16, 64):
            for i, res in enumerate(results * 2):
                w, b = (f"base@{budget}", f"variant@{budget}") if i % 2 == 0 else (f"variant@{budget}", f"base@{budget}")
                st.add(GameRecord(key=f"g{k}", run="ab", match=f"m{budget}", pair=i // 2, variant="crazyhouse", white=w,
                                  black=b, white_settings={"engine": w}, black_settings={"engine": b},
                                  opening=f"o{i // 2}", opening_fen="startpos", opening_moves=["e2e4"], moves=["e7e5"],
                                  result=res, reason="checkmate", move_stats=[MoveStat(budget, 0.01, 0, None, 1, budget)],
                                  seed=k))
                k += 1


def test_also_report_and_ratings_take_a_database_whose_groups_never_met(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "ab.sqlite"
    _two_budget_db(db)
    rc, out, err = run_cli(capsys, "ratings", str(db), "--bootstrap", "20")
    assert rc == 0, err
    assert "group 1 of 2" in out and "group 2 of 2" in out and "base@16" in out and "variant@64" in out
    rc, out, err = run_cli(capsys, "report", str(db), "--out", str(tmp_path / "ab.html"))
    assert rc == 0, err
    html = (tmp_path / "ab.html").read_text()
    assert "Group 1:" in html and "Group 2:" in html and "no Elo compares two groups" in html


def test_shipped_configs_and_openings_by_name_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``searchbench scale quick-crazyhouse`` and ``ablate zh-switches`` from an empty folder elsewhere:
    a shipped config by name or by its checkout path, and the suites its openings key names."""
    from experiments.harness import ablate, openings, scale, tomlconfig

    monkeypatch.chdir(tmp_path)
    assert tomlconfig.resolve_config("quick-crazyhouse").is_file()
    assert tomlconfig.resolve_config("experiments/configs/zh-switches.toml").is_file()
    assert not tomlconfig.resolve_config("no-such-config").exists()
    assert scale.load("quick-crazyhouse").tasks()
    assert ablate.load("zh-switches").tasks()
    assert openings.resolve_suite("crazyhouse-1000").is_file()
    assert len(openings.load_suite("experiments/openings/chess-1000.epd", "chess")) == 1000
    assert openings.suite_id("crazyhouse-1000") == openings.suite_id(openings.SUITE_DIR / "crazyhouse-1000.epd")
    with pytest.raises(ConfigError, match="cannot read config|no-such"):
        tomlconfig.load("no-such-config")


def test_the_carried_state_keeps_what_resuming_needs_and_no_more(tmp_path: Path) -> None:
    """Each arm's newest (and best) network, the newest round's optimizer without its weights, every
    round's records and the window's games: round 3 resumes from it on another machine."""
    import torch

    from experiments.cli.main import main as cli
    from experiments.selfplay import loop as rl
    from tests.test_rl import _rounds_config

    path = _rounds_config(tmp_path)
    assert cli(["rl", path, "--quiet", "--until", "gate", "--state-to", str(tmp_path / "state")]) == 0
    st = tmp_path / "state" / "puct"
    assert (st / "gen-002" / "train" / "model.pt").is_file() and not (st / "gen-001" / "train" / "model.pt").exists()
    assert (st / "gen-001" / "card.md").is_file() and (st / "gen-001" / "train" / "metrics.csv").is_file()
    slim = torch.load(st / "gen-002" / "train" / "checkpoint.pt", weights_only=True)
    assert set(slim) == {"optimizer"}
    whole = tmp_path / "out" / "puct" / "gen-002" / "train" / "checkpoint.pt"
    assert os.path.getsize(st / "gen-002" / "train" / "checkpoint.pt") < os.path.getsize(whole)
    text = open(path).read().replace(f'out = "{tmp_path / "out"}"', f'out = "{tmp_path / "out2"}"').replace(
        "generations = 2", "generations = 3")
    open(path, "w").write(text)
    assert cli(["rl", path, "--quiet", "--until", "train", "--state-from", str(tmp_path / "state")]) == 0
    cmd = (tmp_path / "out2" / "puct" / "gen-003" / "train" / "command.txt").read_text()
    assert "--optimizer-from" in cmd and "gen-002/train/checkpoint.pt" in cmd
    assert rl.State(str(tmp_path / "out2" / "puct" / "state.json")).gen(3)["train"]["init"] == 2
