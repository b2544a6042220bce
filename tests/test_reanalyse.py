"""MuZero's Reanalyse in the rounds loop: a share of the positions older networks made is searched
again by the best network; the copies replace the originals in training, keep every array but the
targets, resume shard by shard, and their CPU seconds count in the arm's budget."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from experiments.harness.tomlconfig import ConfigError
from experiments.selfplay import loop as rl, reanalyse
from experiments.training import datagen
from tests.test_rl import _rounds_config


def _config(tmp_path: Path, fraction: str = "0.5", arms: str = "") -> str:
    return _rounds_config(tmp_path, f"reanalyse_fraction = {fraction}\nreanalyse_nodes = 6\nsupervised_fraction = 0.5",
                          arms=arms)


def test_reanalysed_shards_replace_older_data_with_the_best_networks_targets(tmp_path: Path) -> None:
    arms = '[[arms]]\nname = "control"\nengine = "rise-mcts:batch_size=2"\nkind = "control"\n'
    cfg = rl.parse(_config(tmp_path, arms=arms))
    assert cfg.train["reanalyse_fraction"] == 0.5 and cfg.train["reanalyse_nodes"] == 6
    rl.run(cfg, progress=False, until="gate")
    st = json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())
    for g in ("1", "2"):
        re = st["gens"][g]["reanalyse"]
        assert re["positions"] > 0 and re["cpu"] > 0 and re["nodes"] == 6 and re["network"] == int(g) - 1
        data = st["gens"][g]["train"]["data"]
        copies = [d for d in data if f"gen-00{g}/reanalyse/" in d]
        assert copies and all(os.path.isfile(c) for c in copies)
        # never the newest round's own games
        assert not any(f"gen-00{g}-selfplay" in os.path.basename(c) for c in copies)
        originals = [p for d in sorted((tmp_path / "out" / "puct").glob("gen-00*/s*")) for p in datagen.shard_paths(str(d))]
        replaced = [p for p in originals if reanalyse.target_name(cfg, cfg.arms[0], int(g), p) in copies]
        assert len(replaced) == len(copies) and not set(replaced) & set(data)  # read instead of them
    # round 2 reanalysed round 1's self-play games: same positions and results, the best network's targets
    copies = [d for d in st["gens"]["2"]["train"]["data"] if "gen-001-selfplay" in os.path.basename(d)]
    assert copies
    new = datagen.load_shard(copies[0])
    old = datagen.load_shard(str(tmp_path / "out" / "puct" / "gen-001" / "selfplay" / os.path.basename(copies[0]).split("-", 3)[3]))
    for k in ("raw", "move", "game", "game_uid", "game_result", "score"):
        assert np.array_equal(new[k], old[k])
    off = new["policy_offset"]
    sums = np.add.reduceat(new["policy_prob"], off[:-1]) if len(off) > 1 else np.zeros(0)
    assert np.allclose(sums, 1.0, atol=1e-4) and np.isfinite(new["root_q"]).all()
    assert not np.array_equal(new["policy_prob"], old["policy_prob"]) or not np.array_equal(new["root_q"], old["root_q"])
    # the control arm trains for the self-play arm's CPU, reanalyse included
    rec = st["gens"]["2"]
    budget = rec["selfplay"]["cpu"] + rec["reanalyse"]["cpu"] + rec["train"]["cpu"]
    cmd = (tmp_path / "out" / "control" / "gen-002" / "train" / "command.txt").read_text()
    assert f"--cpu-seconds {round(budget, 1)}" in cmd


def test_reanalyse_resumes_shard_by_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = rl.parse(_config(tmp_path))
    rl.run(cfg, progress=False, until="selfplay")  # round 2's games; round 1 trained (with its reanalyse)
    st = rl.State(str(tmp_path / "out" / "puct" / rl.STATE))
    older = datagen.shard_paths(str(tmp_path / "out" / "puct" / "gen-001" / "selfplay"))
    chosen = reanalyse.pick(cfg, 2, older)
    assert chosen and reanalyse.pick(cfg, 2, older) == chosen  # drawn from the seed and the round
    sizes = {p: len(datagen.load_shard(p)["move"]) for p in older}
    # the fraction exactly: whole shards but the last, of which a sample
    assert sum(c for _, c in chosen) == int(np.ceil(0.5 * sum(sizes.values())))
    assert all(c == sizes[p] for p, c in chosen[:-1]) and 0 < chosen[-1][1] <= sizes[chosen[-1][0]]
    arm = cfg.arms[0]
    part = [(chosen[0][0], max(1, sizes[chosen[0][0]] // 3))]  # a third of one shard: the rest keep their targets
    done = reanalyse.reanalyse(cfg, arm, 2, st, part, progress=False)
    assert os.path.isfile(done[chosen[0][0]])
    new, old = datagen.load_shard(done[chosen[0][0]]), datagen.load_shard(chosen[0][0])
    changed = [i for i in range(len(old["move"])) if not np.array_equal(
        new["policy_move"][new["policy_offset"][i]:new["policy_offset"][i + 1]],
        old["policy_move"][old["policy_offset"][i]:old["policy_offset"][i + 1]]) or not (
        np.isnan(new["root_q"][i]) and np.isnan(old["root_q"][i]) or new["root_q"][i] == old["root_q"][i])]
    assert 0 < len(changed) <= part[0][1] and st.gen(2)["reanalyse"]["positions"] == part[0][1]

    def searched(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("a written shard was searched again")

    monkeypatch.setattr(reanalyse, "_one_shard", searched)
    assert reanalyse.reanalyse(cfg, arm, 2, st, part, progress=False) == done


@pytest.mark.parametrize("value, match", [("1.5", "must be in"), ("-0.1", "must be in")])
def test_bad_reanalyse_fractions_are_one_line(tmp_path: Path, value: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        rl.parse(_config(tmp_path, value))


def test_reanalyses_target_passes_gate_0_like_any_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.selfplay import gates, targets

    path = _config(tmp_path)
    text = open(path).read().replace("[rate]", f"[gate0]\nenabled = true\ndata = [\"{tmp_path / 'sup'}\"]\n"
                                               f"positions = 6\nreference = 12\n\n[rate]")
    open(path, "w").write(text)
    calls: list[tuple[list[str], int, bool]] = []

    def measured(engines, data, reference, **kw):  # type: ignore[no-untyped-def]
        calls.append(([e.name for e in engines], kw["nodes"], kw["explore"]))
        return [{"name": "prior", "ce": 1.6, "entropy": 2.0}, {"name": "target", "ce": 1.5, "entropy": 1.0},
                {"name": "reference", "ce": 1.1, "entropy": 1.1}]

    monkeypatch.setattr(targets, "measure_reference", measured)
    rows = gates.run_gate0(rl.parse(path), progress=False)
    assert len(rows) == 6 and len(calls) == 2
    assert calls[1][1] == 6 and calls[1][2] is False  # reanalyse_nodes, no exploration
    assert "dirichlet_epsilon=0" in calls[1][0][0] and "forced_playouts=0" in calls[1][0][0]
