"""``searchbench targets`` (issue 31): a search's policy target measured against the network's prior
on held-out positions, before any training on it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import board
from evaluators.base import Leaf
from evaluators.encodings import raw_to_fen
from experiments.selfplay import targets
from experiments.training import datagen
from experiments.training.agreement import sample_validation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_reliability import one_line_error, run_cli  # noqa: E402
from test_selfplay import tiny_weights  # noqa: E402
from test_train import make_dataset  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("targets")
    make_dataset(str(d / "data"), "crazyhouse", games=40)
    return str(d / "data"), tiny_weights(str(d / "tiny.pt"))


def test_sequential_halving_phases() -> None:
    from search.halving import sequential_halving_phases

    assert sequential_halving_phases(16, 16) == 1  # the shipped Gumbel at 16 simulations: no halving
    assert sequential_halving_phases(16, 4) == 2
    assert sequential_halving_phases(64, 16) == 4
    assert sequential_halving_phases(63, 16) == 1
    assert sequential_halving_phases(5, 1) == 1


def test_the_prior_row_is_the_networks_policy_and_each_target_a_distribution(data: tuple[str, str]) -> None:
    d, w = data
    rows = targets.measure([f"rise-mcts:weights={w}", f"rise-gumbel:weights={w},considered_actions=4"], [d],
                           positions=12, nodes=8, seed=3, explore=False, progress=False)
    assert [r.name.split(":")[0] for r in rows] == ["prior", "rise-mcts", "rise-gumbel"]  # one network, one prior
    prior, puct, gumbel = rows
    # the prior's figures, recomputed by hand on the same positions
    from engines import registry

    ds = datagen.load_dataset(d)
    ev = registry.evaluator_for(registry.resolve(f"rise-mcts:weights={w}"), "crazyhouse")
    agree = n = 0
    entropy = 0.0
    for i in sample_validation(ds, 12, 3):
        pos = board.new_position("crazyhouse", raw_to_fen(tuple(int(v) for v in ds.raw[i]), "crazyhouse"))
        legal = pos.legal_moves()
        if len(legal) < 2:
            continue
        p = np.array(ev.evaluate([Leaf(pos.raw_state(), legal, "crazyhouse")])[0].priors)
        n += 1
        agree += legal[int(np.argmax(p))] == int(ds.move[i])
        entropy -= float((p * np.log(p)).sum())
    assert prior.positions == puct.positions == gumbel.positions == n > 0
    assert prior.agree == agree and prior.as_dict()["entropy"] == pytest.approx(entropy / n, abs=1e-3)
    assert prior.as_dict()["kl_prior"] == 0.0
    for r in (puct, gumbel):
        d_ = r.as_dict()
        assert 0 < d_["evals"] <= 8 and d_["kl_prior"] >= 0 and 0 <= d_["check_mass"] <= 1
        assert 0 <= d_["top1_lo"] <= d_["top1"] <= d_["top1_hi"] <= 1
    # 8 simulations, 4 considered actions: two phases of Sequential Halving, so no collapse note
    assert gumbel.collapsed == 0 and not any("one phase" in x for x in gumbel.notes)


def test_the_papers_gumbel_at_16_nodes_is_named_as_collapsed_and_the_shipped_one_is_not(data: tuple[str, str]) -> None:
    d, w = data
    rows = targets.measure([f"rise+mcts:preset=gumbel,weights={w}", f"rise-gumbel:weights={w}"], [d], positions=6,
                           nodes=16, progress=False)
    assert rows[1].collapsed == rows[1].positions > 0  # 16 considered actions, 16 simulations: one phase
    assert any("one phase" in x for x in rows[1].notes)
    assert rows[2].collapsed == 0  # rise-gumbel adapts them to the budget (4 at 16 nodes: two phases)
    assert "gumbel_scale=1.0" in rows[2].name  # measured with self-play's exploration by default


def test_the_command_line(data: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    d, w = data
    rc, out, _ = run_cli(capsys, "targets", "--engine", f"rise-mcts:weights={w}", "--data", d, "--positions", "4",
                         "--nodes", "4", "--json", "--quiet")
    rows = json.loads(out)
    assert rc == 0 and len(rows) == 2 and rows[1]["positions"] == rows[0]["positions"]
    rc, _, err = run_cli(capsys, "targets", "--engine", "material-ab", "--data", d, "--quiet")
    assert rc == 2 and "MCTS-family" in one_line_error(err)


def test_the_loop_measures_each_arms_target_before_self_play(tmp_path: Path, data: tuple[str, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.selfplay import gates as rl_gates, loop as rl
    from test_rl import _config

    path = _config(tmp_path, generations="1")
    text = Path(path).read_text().replace("bootstrap = 10", f'bootstrap = 10\nheldout = ["{data[0]}"]\n'
                                                             "target_positions = 6")
    Path(path).write_text(text)
    cfg = rl.parse(path)
    rl.run(cfg, progress=False, until="selfplay")
    saved = json.loads((tmp_path / "out" / rl_gates.TARGETS).read_text())
    assert [r["name"].split(":")[0] for r in saved["rows"]] == ["prior", "rise-gumbel"]
    err = capsys.readouterr().err  # rise-gumbel adapts its considered actions to the 8 simulations:
    assert "one phase" not in err and "rise-gumbel" in err  # no one-phase note (the prior comparison is there)
    mtime = (tmp_path / "out" / rl_gates.TARGETS).stat().st_mtime
    rl.run(cfg, progress=False, until="selfplay")  # measured once
    assert (tmp_path / "out" / rl_gates.TARGETS).stat().st_mtime == mtime
    from experiments.selfplay.report import _targets_section

    section = "\n".join(_targets_section(cfg))
    assert "Policy targets before training" in section and "rise-gumbel" in section
