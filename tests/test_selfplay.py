"""Self-play: the search's policy targets, the shards they go into, and resuming after a kill."""
from __future__ import annotations

import json
import math
import os
import random

import numpy as np
import pytest
import torch

from board import new_position
from engines import factory
from evaluators import nets
from experiments.selfplay import games as selfplay
from experiments.training import datagen
from evaluators.families import FAMILIES
from search.base import Limits
from search.gumbel import GumbelParams, improved_policy


def _searched(engine: object, nodes: int = 48, seed: int = 3) -> tuple[object, object]:
    eng = factory.create(engine, "crazyhouse")  # type: ignore[arg-type]
    pos = new_position("crazyhouse")
    for u in ("e2e4", "d7d5", "e4d5"):
        pos.push_uci(u)
    eng.new_game(seed)
    eng.play(pos, Limits(nodes=nodes))
    return eng, pos


def test_puct_target_is_the_root_visit_distribution() -> None:
    """Without pruning the visit shares; self-play's own (KataGo's pruning) in test_katago_selfplay."""
    eng, pos = _searched(selfplay.selfplay_engine("rise-mcts:policy_target_pruning=false", "crazyhouse"))
    target = eng.policy_target()
    assert target is not None
    moves = [m for m, _ in target]
    assert sorted(moves) == sorted(pos.legal_moves())
    assert math.isclose(sum(p for _, p in target), 1.0, abs_tol=1e-9)
    stats = {m: n for m, n, _, _ in eng.search.root_stats()}
    total = sum(stats.values())
    assert total >= 40  # the search ran
    for m, p in target:
        assert p == pytest.approx(stats[m] / total, abs=1e-12)


def test_gumbel_target_is_the_improved_policy() -> None:
    eng, pos = _searched(selfplay.selfplay_engine("rise-gumbel", "crazyhouse"))
    target = eng.policy_target()
    assert target is not None
    s = eng.search
    stats = s.root_stats()
    want = improved_policy([p for _, _, _, p in stats], [q if n else 0.0 for _, n, q, _ in stats],
                           [float(n) for _, n, _, _ in stats], s.tree.nd_value[s.root],
                           s.config.settings(GumbelParams).c_visit, s.config.settings(GumbelParams).c_scale)
    assert [m for m, _ in target] == [m for m, _, _, _ in stats]
    assert sorted(m for m, _ in target) == sorted(pos.legal_moves())
    assert math.isclose(sum(p for _, p in target), 1.0, abs_tol=1e-9)
    assert np.allclose([p for _, p in target], want, atol=1e-12)
    # the improved policy moves mass towards the moves the search found good: not the visit shares
    visits = np.array([n for _, n, _, _ in stats], dtype=float)
    assert not np.allclose([p for _, p in target], visits / visits.sum(), atol=1e-3)


def test_exploration_defaults_and_refusals() -> None:
    assert selfplay.selfplay_engine("rise-mcts", "chess").name == (
        "rise-mcts:dirichlet_epsilon=0.25,dirichlet_alpha=0.3,temperature=1.0,temperature_moves=15,forced_playouts=2,policy_target_pruning=true,temperature_visits=true")
    assert "dirichlet_alpha=0.2" in selfplay.selfplay_engine("rise-mcts", "crazyhouse").name
    assert selfplay.selfplay_engine("rise-mcts:temperature=0.5", "crazyhouse").name.count("temperature=") == 1
    assert "temperature_moves=" not in selfplay.selfplay_engine("rise-mcts:temperature_mo=3", "crazyhouse").name  # a prefix counts
    assert selfplay.selfplay_engine("rise-gumbel", "crazyhouse").name == "rise-gumbel:gumbel_scale=1.0"
    assert selfplay.selfplay_engine("rise-mcts", "crazyhouse", explore=False).name == "rise-mcts"
    with pytest.raises(selfplay.SelfPlayError, match="MCTS-family"):
        selfplay.selfplay_engine("material-ab", "chess")
    with pytest.raises(selfplay.SelfPlayError, match="unknown engine"):
        selfplay.selfplay_engine("no-such-engine", "chess")


def tiny_weights(path: str, variant: str = "crazyhouse") -> str:
    torch.manual_seed(0)
    net = nets.build("rise", {**FAMILIES["rise"].sizes["tiny"], "variant": variant})
    nets.save_model(path, "rise", net, {"variant": variant, "size": "tiny"})
    return path


def _cfg(tmp_path, **kw) -> selfplay.SelfPlayConfig:  # type: ignore[no-untyped-def]
    w = tiny_weights(str(tmp_path / "tiny.pt"))
    base = dict(engine=f"rise-gumbel:weights={w},batch_size=2", out=str(tmp_path / "sp"), games=6, nodes=8,
                concurrency=3, max_plies=30, shard_games=4, seed=5)
    base.update(kw)
    return selfplay.SelfPlayConfig(**base)  # type: ignore[arg-type]


def test_selfplay_shards_resume_without_losing_or_repeating_games(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cfg = _cfg(tmp_path)
    added = [0]
    real_add, real_flush = selfplay.Journal.add, selfplay.Journal.flush

    def add(self, line):  # type: ignore[no-untyped-def]
        real_add(self, line)
        added[0] += 1

    # a kill -9 after 3 games: they are in the journal only (no shard written), the rest never finished
    monkeypatch.setattr(selfplay.Journal, "add", add)
    monkeypatch.setattr(selfplay.Journal, "flush", lambda self: 0)
    selfplay.play(cfg, progress=False, stop=lambda: added[0] >= 3)
    monkeypatch.setattr(selfplay.Journal, "flush", real_flush)
    journal = os.path.join(cfg.out, selfplay.JOURNAL)
    with open(journal) as f:
        lines = f.read().splitlines()
    first = len(lines)
    assert 3 <= first < cfg.games and not datagen.shard_paths(cfg.out)
    with open(journal, "a") as f:  # the same game twice, and a last line torn by the kill
        f.write(lines[0] + "\n" + '{"uid": 12, "open')
    again = selfplay.play(cfg, progress=False)
    assert again["existing_games"] == first and again["games"] == cfg.games - first
    ds = datagen.load_dataset(cfg.out)
    assert len(ds.game_uid) == cfg.games == len(set(ds.game_uid.tolist()))
    assert sorted(ds.game_uid.tolist()) == sorted(selfplay.game_uid(cfg.seed, i) for i in range(cfg.games))
    # a kill between writing a shard and emptying the journal: the game is taken once
    with open(journal, "a") as f:
        f.write(lines[0] + "\n")
    assert selfplay.play(cfg, progress=False)["games"] == 0
    assert len(datagen.load_dataset(cfg.out).game_uid) == cfg.games
    with pytest.raises(selfplay.SelfPlayError, match="nodes 8, not 16"):
        selfplay.play(selfplay.SelfPlayConfig(**{**cfg.__dict__, "nodes": 16}), progress=False)
    with open(journal, "w") as f:
        f.write("not json\n" + lines[0] + "\n")
    with pytest.raises(selfplay.SelfPlayError, match="damaged journal"):
        selfplay.play(cfg, progress=False)
    # every position's target: a distribution over its legal moves, the played move among them
    rows, moves, probs = ds.policy_targets(np.arange(len(ds)))
    assert np.allclose(np.bincount(rows, weights=probs), 1.0, atol=1e-4)
    for i in random.Random(0).sample(range(len(ds)), 12):
        from evaluators import encodings as enc

        legal = set(new_position("crazyhouse", enc.raw_to_fen(ds.raw[i], "crazyhouse")).legal_moves())
        assert set(moves[rows == i].tolist()) <= legal and int(ds.move[i]) in legal
    assert np.all(np.abs(ds.root_q) <= 1.0)


def test_selfplay_shards_train_and_mix_with_engine_games(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from experiments.training import train

    cfg = _cfg(tmp_path, games=16, engine=f"rise-mcts:weights={tiny_weights(str(tmp_path / 'w.pt'))},batch_size=2")
    selfplay.play(cfg, progress=False)
    # an engine-game shard beside it: one-hot targets, no search value
    ds = datagen.load_dataset(cfg.out)
    rec = datagen.GameRecord(7, "crazyhouse", new_position("crazyhouse").fen(), [], result=1)
    pos = new_position("crazyhouse")
    for u in ("e2e4", "e7e5", "g1f3"):
        m = pos.parse_uci(u)
        rec.raw.append(pos.raw_state())
        rec.moves.append(m)
        rec.scores.append(0)
        pos.push(m)
    datagen.write_shard(str(tmp_path / "engine"), [rec])
    both = datagen.load_dataset([cfg.out, str(tmp_path / "engine")])
    assert len(both) == len(ds) + 3 and np.isnan(both.root_q[-3:]).all()
    rows, moves, probs = both.policy_targets(np.arange(len(ds), len(both)))
    assert rows.tolist() == [0, 1, 2] and moves.tolist() == rec.moves and probs.tolist() == [1.0] * 3
    meta = train.train(train.TrainConfig(model="rise", data=[cfg.out, str(tmp_path / "engine")], out=str(tmp_path / "run"),
                                         epochs=1, batch=16, val_fraction=0.25, select_fraction=0.25, q_weight=0.5,
                                         init=str(tmp_path / "w.pt")), progress=False)
    assert meta["train_positions"] > 0 and os.path.exists(tmp_path / "run" / "model.pt")
    with pytest.raises(train.TrainError, match="not a rise model|not found"):
        train.train(train.TrainConfig(model="rise", data=[cfg.out], out=str(tmp_path / "r2"), init=str(tmp_path / "nope.pt"),
                                      val_fraction=0.25, select_fraction=0.25), progress=False)


def test_selfplay_command_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from experiments.cli.main import main

    w = tiny_weights(str(tmp_path / "tiny.pt"))
    assert main(["selfplay", "--engine", f"rise-mcts:weights={w}", "--games", "2", "--nodes", "4", "--max-plies", "12",
                 "--out", str(tmp_path / "d"), "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["games"] == 2 and out["shards"] == 1
    # every shard records the backend that made its games; the explicitly asked one here
    assert main(["selfplay", "--engine", f"rise-mcts:weights={w},inference=onnxruntime-int8", "--games", "2", "--nodes",
                 "4", "--max-plies", "12", "--out", str(tmp_path / "q"), "--quiet"]) == 0
    capsys.readouterr()
    for d, want in (("d", {"onnxruntime", "onnxruntime-int8"}), ("q", {"onnxruntime-int8"})):
        with np.load(datagen.shard_paths(str(tmp_path / d))[0]) as z:
            assert set(z["game_backend"].tolist()) <= want and len(z["game_backend"]) == 2
    assert main(["selfplay", "--engine", "material-ab", "--out", str(tmp_path / "e"), "--quiet"]) == 2
    assert "MCTS-family" in capsys.readouterr().err


def test_playout_cap_randomisation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """KataGo's playout-cap randomisation: a quarter of the moves searched at full nodes with a
    policy target, the rest fast with a value target only; the draw repeats from the seed; training
    leaves the value-only positions out of the policy loss."""
    from evaluators.encodings import POLICY_SIZE
    from experiments.training.policy_value import PolicyValueTask

    w = tiny_weights(str(tmp_path / "w.pt"))
    cfg = _cfg(tmp_path, games=8, engine=f"rise-mcts:weights={w},batch_size=2", full_fraction=0.25, fast_nodes=2)
    selfplay.play(cfg, progress=False)
    ds = datagen.load_dataset(cfg.out)
    counts = np.diff(ds.policy_offset)
    full = counts > 0
    assert 0.1 < full.mean() < 0.45 and len(ds) > 40  # about a quarter, every position kept for its value
    # the search's value joins the value target from full searches only: a fast search's is NaN
    assert np.all(np.isnan(ds.root_q[~full])) and np.all(np.abs(ds.root_q[full]) <= 1.0)
    # the same draw in another folder from the same seed (a replay, a resume)
    again = _cfg(tmp_path, games=8, engine=f"rise-mcts:weights={w},batch_size=2", full_fraction=0.25, fast_nodes=2,
                 out=str(tmp_path / "sp2"))
    selfplay.play(again, progress=False)
    assert np.array_equal(np.diff(datagen.load_dataset(again.out).policy_offset) > 0, full)
    with pytest.raises(selfplay.SelfPlayError, match="playout_cap"):
        selfplay.play(_cfg(tmp_path, games=8, engine=f"rise-mcts:weights={w},batch_size=2", full_fraction=0.5,
                           fast_nodes=2), progress=False)
    with pytest.raises(selfplay.SelfPlayError, match="fast_nodes"):
        _cfg(tmp_path, full_fraction=0.5, fast_nodes=0).check()
    # the policy loss is the mean over the positions with a target only
    pv = PolicyValueTask("rise", "crazyhouse", 1.0)
    idx = np.arange(len(ds))
    v = torch.zeros(len(idx))
    p = torch.randn(len(idx), POLICY_SIZE, generator=torch.Generator().manual_seed(1))
    _, parts = pv.loss_of(v, p, ds, idx)
    _, parts_full = pv.loss_of(v[full], p[full], ds, idx[full])
    assert parts["policy_loss"] == pytest.approx(parts_full["policy_loss"], rel=1e-5)


@pytest.mark.parametrize("engine", ["rise-mcts", "rise-gumbel:considered_actions=4,c_scale=0.1"])
def test_selfplay_at_equal_evaluator_calls(tmp_path, engine) -> None:  # type: ignore[no-untyped-def]
    """``evals``: each move limited to evaluator calls (PUCT's reused visits and transpositions are
    free under a nodes limit, Gumbel's are not): the games' network leaves stay within the budget."""
    w = tiny_weights(str(tmp_path / "w.pt"))
    cfg = _cfg(tmp_path, games=4, engine=f"{engine},weights={w},batch_size=1" if ":" in engine
               else f"{engine}:weights={w},batch_size=1", evals=4)
    stats = selfplay.play(cfg, progress=False)
    assert stats["games"] == 4 and 0 < stats["eval_leaves"] <= 4 * stats["positions"]
    assert stats["eval_leaves"] >= 2 * stats["positions"]  # the budget was used
    run = json.loads(open(os.path.join(cfg.out, selfplay.RUN_FILE)).read())
    assert run["evals"] == 4 and run["nodes"] is None
    with pytest.raises(selfplay.SelfPlayError, match="nodes None, not 8"):  # a resume at another limit
        selfplay.play(_cfg(tmp_path, games=4, engine=cfg.engine), progress=False)


def test_selfplay_games_replay_from_their_seeds(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``searchbench replay SELFPLAY_DIR``: every game played again from the run file and its uid
    agrees move for move (other concurrency than the run's); a changed stored move is the first
    divergence, exit 1; --game is refused in one line."""
    from experiments.cli.main import main as cli

    cfg = _cfg(tmp_path, engine=f"rise-mcts:weights={tiny_weights(str(tmp_path / 'w.pt'))},batch_size=2",
               games=4, nodes=8, full_fraction=0.5, fast_nodes=2, min_random_plies=2, max_random_plies=4)
    selfplay.play(cfg, progress=False)
    assert cli(["replay", cfg.out, "--quiet"]) == 0
    assert "4 games replayed, every move agrees" in capsys.readouterr().out
    shard = datagen.shard_paths(cfg.out)[0]
    arrays = dict(np.load(shard))
    first = new_position("crazyhouse")
    for u in str(arrays["game_opening"][0]).split():
        first.push_uci(u)
    legal = [m for m in first.legal_moves() if m != int(arrays["move"][0])]
    arrays["move"][0] = legal[0]  # the first game's first move, another legal one
    np.savez_compressed(shard, **arrays)
    assert cli(["replay", cfg.out, "--quiet"]) == 1
    assert "diverges at ply 1" in capsys.readouterr().out
    assert cli(["replay", cfg.out, "--game", "x", "--quiet"]) == 2


def test_replay_refuses_a_run_file_that_does_not_produce_its_shards(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 81, j03 and j08: a run file whose seed is not the shards' is an error naming how many
    stored games no game of it produces (it replayed none and said every move agreed), and a field
    of the wrong type (random_plies = 5) is one line, exit 2, not a TypeError."""
    from experiments.cli.main import main as cli

    cfg = _cfg(tmp_path, engine=f"rise-mcts:weights={tiny_weights(str(tmp_path / 'w.pt'))},batch_size=2",
               games=4, nodes=4)
    selfplay.play(cfg, progress=False)
    path = os.path.join(cfg.out, selfplay.RUN_FILE)
    good = json.loads(open(path).read())
    for change, needle in (({"seed": good["seed"] + 1}, "4 of the 4 stored games"),
                           ({"random_plies": 5}, "random_plies must be a pair"),
                           ({"max_plies": "many"}, "max_plies must be a positive integer"),
                           ({"playout_cap": [2.0, 3]}, "playout_cap must be null or a pair")):
        with open(path, "w") as f:
            json.dump({**good, **change}, f)
        capsys.readouterr()
        assert cli(["replay", cfg.out, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err
