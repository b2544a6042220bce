"""Training: each recipe runs end to end on a small synthetic data set, resumes, writes metrics;
the data helpers (mate-in-one set, DeepChess sampling, captures, one-cycle schedule) are exact."""
import csv
import os
import random

import numpy as np
import pytest
import torch

import board
from board import new_position
from board.position import RAW_EP, RAW_PROMOTED
from evaluators import nets
from evaluators.deepchess import DeepChessEvaluator
from evaluators.rise import RiseEvaluator
from evaluators.sixtyfour import SixtyFourEvaluator
from experiments.cli import main as cli
from experiments.training import datagen
from experiments.training import deepchess_train, policy_value, recipe, train

MATES = {  # games that end in mate: (moves, result)
    "fool": (["f2f3", "e7e5", "g2g4", "d8h4"], -1),
    "scholar": (["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"], 1),
}


def _game(variant: str, moves: list[str], result: int, uid: int) -> datagen.GameRecord:
    pos = new_position(variant)
    rec = datagen.GameRecord(uid, variant, pos.fen(), [], result=result)
    for u in moves:
        m = pos.parse_uci(u)
        rec.raw.append(pos.raw_state())
        rec.moves.append(m)
        rec.scores.append(0)
        pos.push(m)
    return rec


def make_dataset(directory: str, variant: str, games: int = 60, seed: int = 0) -> None:
    """Random games (results drawn at random, 2/3 decisive) plus the two mates, repeated so that
    both halves of the split have some."""
    rng = random.Random(seed)
    recs = []
    for g in range(games):
        if g % 10 < 2:
            moves, res = MATES["fool" if g % 10 == 0 else "scholar"]
        else:
            pos = new_position(variant)
            moves = []
            for _ in range(rng.randint(24, 40)):
                lm = pos.legal_moves()
                if not lm or pos.is_game_over():
                    break
                m = rng.choice(lm)
                moves.append(board.move_to_uci(m))
                pos.push(m)
            res = rng.choice([1, -1, 0])
        recs.append(_game(variant, moves, res, rng.getrandbits(63)))
    for s in range(0, len(recs), 20):
        datagen.write_shard(directory, recs[s:s + 20])


@pytest.fixture(scope="module")
def zh_data(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("zh"))
    make_dataset(d, "crazyhouse")
    return d


def _rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_mate_in_one_set(zh_data):
    ds = datagen.load_dataset(zh_data)
    idx, mates, legal = recipe.mate_in_one_set(ds, np.arange(len(ds)), "crazyhouse")
    assert len(idx) == 12  # 6 fool's mates + 6 scholar's mates
    for i, ms in zip(idx, mates):
        assert int(ds.move[i]) in ms
    # in crazyhouse Qxf7# is the only mate of the scholar position; Qh4# the only one of the fool's
    assert all(len(ms) == 1 for ms in mates)


def test_is_capture_and_deepchess_sampling(zh_data):
    ds = datagen.load_dataset(zh_data)
    pos = new_position("crazyhouse", "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR[] w KQkq f6 0 3")
    raw = np.array([pos.raw_state()] * 3, dtype=np.int64)
    mv = np.array([pos.parse_uci(u) for u in ("e5f6", "e5e6", "d1h5")])
    assert recipe.is_capture(raw, mv).tolist() == [True, False, False]
    rng = np.random.default_rng(0)
    games = np.arange(len(ds.game_uid))
    keep, res = deepchess_train.deepchess_positions(ds, games, rng)
    assert len(keep) > 0 and set(res.tolist()) <= {1, -1}
    assert not recipe.is_capture(ds.raw[keep], ds.move[keep]).any()
    per_game = np.bincount(ds.game[keep])
    assert per_game.max() <= 10
    assert (ds.raw[keep, 14] >= 6).all()  # full-move number: the first 5 moves are skipped


def test_pair_target_blends_outcome_and_score():
    y = np.array([0, 1, 0])
    first, second = np.array([100.0, 0.0, -400.0]), np.array([-300.0, 0.0, 0.0])
    assert deepchess_train.pair_target(y, first, second, 0.0).tolist() == [1.0, 0.0, 1.0]
    by_score = [1 / (1 + 10 ** -1.0), 0.5, 1 / (1 + 10 ** 1.0)]
    assert np.allclose(deepchess_train.pair_target(y, first, second, 1.0), by_score)
    assert np.allclose(deepchess_train.pair_target(y, first, second, 0.25), [0.75 * o + 0.25 * b for o, b in zip([1, 0, 1], by_score)])


def test_score_weight_blends_the_engine_score_into_the_value_target(zh_data):
    """rise/sixtyfour with ``score_weight`` w: an engine game's position is valued (1 - w) z + w v(score),
    the score on the suite's one scale (mates +-1); an unknown score leaves the result alone."""
    from evaluators.encodings import POLICY_SIZE
    from evaluators.scale import cp_to_value

    cps = np.array([0, 35, -240, 1200, 9998, -31990, datagen.SCORE_UNKNOWN], dtype=np.int16)
    got = policy_value.engine_values(cps, "crazyhouse")
    assert np.allclose(got[:-1], [cp_to_value(float(c), "crazyhouse") for c in cps[:-1]], atol=1e-6) and np.isnan(got[-1])
    ds = datagen.load_dataset(zh_data)
    idx = np.arange(7)
    ds.score[idx] = cps
    z = policy_value.side_result(ds, idx).astype(np.float32)
    p = torch.zeros((7, POLICY_SIZE))
    for w in (0.0, 0.5, 1.0):
        task = policy_value.PolicyValueTask("rise", "crazyhouse", 1.0, score_weight=w)
        want = np.where(np.isnan(got), z, (1 - w) * z + w * np.nan_to_num(got)).astype(np.float32)
        _, parts = task.loss_of(torch.from_numpy(want), p, ds, idx)
        assert parts["value_loss"] == pytest.approx(0.0, abs=1e-10)
        _, off = task.loss_of(torch.from_numpy(z), p, ds, idx)
        assert (off["value_loss"] > 0.01) == (w > 0)


def test_white_scores_are_clipped_and_from_whites_view(zh_data):
    ds = datagen.load_dataset(zh_data)
    ds.score[:4] = np.array([50, 50, 31990, -31990], dtype=np.int16)
    got = deepchess_train.white_scores(ds, np.arange(4))
    turn = ds.raw[:4, 10]
    want = np.where(turn == 0, 1, -1) * np.array([50, 50, deepchess_train.SCORE_CLIP, -deepchess_train.SCORE_CLIP])
    assert got.tolist() == want.tolist()
    ds.score[0] = datagen.SCORE_UNKNOWN
    with pytest.raises(train.TrainError, match="engine scores"):
        deepchess_train.white_scores(ds, np.arange(4))


def test_one_cycle_schedule():
    lr0, m0 = train.one_cycle(0.0, 0.1)
    lr_peak, m_peak = train.one_cycle(0.3, 0.1)
    lr1, m1 = train.one_cycle(1.0, 0.1)
    assert abs(lr0 - 0.004) < 1e-12 and abs(lr_peak - 0.1) < 1e-12 and abs(lr1 - 1e-5) < 1e-12
    assert m0 == 0.95 and abs(m_peak - 0.85) < 1e-12 and abs(m1 - 0.95) < 1e-12


def test_rise_training_resume_and_evaluator(zh_data, tmp_path):
    out = str(tmp_path / "rise")
    cfg = train.TrainConfig(model="rise", data=[zh_data], out=out, size="tiny", epochs=1, batch=64, val_fraction=0.3)
    m1 = train.train(cfg, progress=False)
    assert m1["steps"] >= 1 and 0 <= m1["val_policy_acc"] <= 1 and m1["mate1_positions"] > 0
    # resume: one more epoch on top of the checkpoint
    m2 = train.train(train.TrainConfig(**{**cfg.__dict__, "epochs": 2}), progress=False)
    assert m2["steps"] == 2 * m1["steps"]
    rows = _rows(os.path.join(out, "metrics.csv"))
    assert [r["epoch"] for r in rows] == ["1", "2"]
    for key in ("val_policy_acc", "val_value_sign_acc", "mate1_top1", "mate1_top5"):
        assert 0 <= float(rows[-1][key]) <= 1
    ev = RiseEvaluator.load(os.path.join(out, "model.pt"))
    assert ev.meta["train_positions"] > 0 and ev.variants == {"crazyhouse"}
    from experiments.training import modelcard

    card = modelcard.render(out, "hand-written note")
    assert f"| val_policy_acc | {m2['val_policy_acc']:.4f} |" in card and "hand-written note" in card
    assert "| epoch | step |" in card


def test_heldout_scores_models_on_the_training_runs_validation_games(zh_data, tmp_path, capsys):
    out = str(tmp_path / "rise")
    m = train.train(train.TrainConfig(model="rise", data=[zh_data], out=out, size="tiny", epochs=1, batch=64,
                                      val_fraction=0.3), progress=False)
    model = os.path.join(out, "model.pt")
    capsys.readouterr()
    (row,) = policy_value.heldout([model], [zh_data], val_fraction=0.3)
    assert row["family"] == "rise" and row["val_positions"] == m["val_positions"]
    assert row["val_policy_acc"] == pytest.approx(m["val_policy_acc"])
    assert row["mate1_top1"] == pytest.approx(m["mate1_top1"])
    assert cli.main(["heldout", "--data", zh_data, "--weights", model, model, "--val-fraction", "0.3",
                     "--classical"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[1].startswith("classical") and f"{m['val_policy_acc']:.2%}" in lines[2]
    # the classical row by hand: the sign of its side-to-move score against the game's result
    ref = policy_value.heldout([], [zh_data], val_fraction=0.3, classical=True)[0]
    ds = datagen.load_dataset([zh_data])
    _, va, _ = train.split(ds, train.TrainConfig(model="rise", data=[zh_data], out="", val_fraction=0.3).resolved())
    z = recipe.side_result(ds, va)
    from evaluators import classical
    from evaluators import encodings as enc
    ok = [(classical.stm_score(board.new_position("crazyhouse", enc.raw_to_fen(ds.raw[i], "crazyhouse"))) > 0)
          == (r > 0) for i, r in zip(va, z) if r != 0]
    assert ref["val_value_sign_acc"] == pytest.approx(sum(ok) / len(ok)) and 0 <= ref["val_policy_acc"] <= 1
    # a chess network on crazyhouse data, a file that is not a network: one line, exit 2
    assert cli.main(["heldout", "--data", zh_data, "--weights", "rise_chess.pt"]) == 2
    assert "chess network" in capsys.readouterr().err
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model")
    assert cli.main(["heldout", "--data", zh_data, "--weights", str(bad)]) == 2
    assert "not a searchbench weights file" in capsys.readouterr().err


def test_best_epoch_is_kept_and_selection_games_are_held_out(zh_data, tmp_path):
    """model.pt holds the epoch with the best selection-set policy accuracy (not the last one); the
    three splits are disjoint by game."""
    out = str(tmp_path / "rise-best")
    cfg = train.TrainConfig(model="rise", data=[zh_data], out=out, size="tiny", epochs=4, batch=32, lr=0.5,
                            val_fraction=0.3, select_fraction=0.2, seed=3)
    m = train.train(cfg, progress=False)
    rows = _rows(os.path.join(out, "metrics.csv"))
    assert [r["epoch"] for r in rows] == ["1", "2", "3", "4"]
    accs = [float(r["sel_policy_acc"]) for r in rows]
    best = accs.index(max(accs))
    assert m["best_epoch"] == best + 1
    assert abs(m["val_policy_acc"] - float(rows[best]["val_policy_acc"])) < 1e-5
    # the saved weights reproduce the best epoch's selection accuracy
    ds = datagen.load_dataset(zh_data)
    tr, va, se = train.split(ds, cfg.resolved())
    g_tr, g_va, g_se = (set(ds.game[i].tolist()) for i in (tr, va, se))
    assert not (g_tr & g_va) and not (g_tr & g_se) and not (g_va & g_se)
    net, _ = nets.load_model(os.path.join(out, "model.pt"), "rise")
    task = policy_value.PolicyValueTask("rise", "crazyhouse", 0.01)
    legal = recipe.legal_moves_of(ds, se, "crazyhouse")
    got = task.metrics(net, ds, se, legal, (np.zeros(0, dtype=np.int64), [], []), 512)
    assert abs(got["val_policy_acc"] - accs[best]) < 1e-5


def test_select_value_keeps_the_epoch_of_the_lowest_selection_value_loss(zh_data, tmp_path):
    """``select = "value"``: model.pt holds the epoch whose value loss on the selection games is the
    lowest (a control early-stopped on its value), its meta says so; patience counts by that score."""
    out = str(tmp_path / "rise-value")
    cfg = train.TrainConfig(model="rise", data=[zh_data], out=out, size="tiny", epochs=4, batch=32, lr=0.5,
                            val_fraction=0.3, select_fraction=0.2, seed=3, select="value", value_weight=1.0)
    m = train.train(cfg, progress=False)
    rows = _rows(os.path.join(out, "metrics.csv"))
    losses = [float(r["sel_value_loss"]) for r in rows]
    best = losses.index(min(losses))
    assert m["best_epoch"] == best + 1 and m["selection"] == "value"
    assert m["sel_value_loss"] == pytest.approx(losses[best], abs=1e-5)
    if best + 1 < len(rows):  # patience 1 stops one epoch after the best
        stopped = train.train(train.TrainConfig(**{**cfg.__dict__, "out": str(tmp_path / "p"), "patience": 1}), progress=False)
        assert len(_rows(os.path.join(str(tmp_path / "p"), "metrics.csv"))) == stopped["best_epoch"] + 1
    with pytest.raises(train.TrainError, match="--select value is for networks with a value head"):
        train.TrainConfig(model="deepchess", data=[zh_data], out="x", select="value").resolved()
    with pytest.raises(train.TrainError, match="unknown --select"):
        train.TrainConfig(model="rise", data=[zh_data], out="x", select="loss").resolved()


def test_bf16_training_saves_float32_contiguous_weights(zh_data, tmp_path):
    out = str(tmp_path / "rise-bf16")
    m = train.train(train.TrainConfig(model="rise", data=[zh_data], out=out, size="tiny", epochs=1, batch=64,
                                      val_fraction=0.3, select_fraction=0.2, bf16=True), progress=False)
    assert m["steps"] >= 1 and 0 <= m["val_policy_acc"] <= 1 and np.isfinite(m["val_policy_loss"])
    net, d = nets.load_model(os.path.join(out, "model.pt"), "rise")
    assert all(v.dtype == torch.float32 for v in d["state_dict"].values() if v.is_floating_point())
    assert all(v.is_contiguous() for v in d["state_dict"].values())


def test_deepchess_early_stopping(zh_data, tmp_path):
    out = str(tmp_path / "dc-patience")
    m = train.train(train.TrainConfig(model="deepchess", data=[zh_data], out=out, size="tiny", epochs=60,
                                      ae_epochs=1, val_fraction=0.3, select_fraction=0.2, patience=2,
                                      dropout=0.3, lr=0.001, score_weight=0.5, antisymmetric=True,
                                      input_dropout=0.1, optimizer="adam"), progress=False)
    comp = [r for r in _rows(os.path.join(out, "metrics.csv")) if r["phase"] == "comparator"]
    assert len(comp) == min(60, m["best_epoch"] + 2)
    assert max(float(r["sel_pair_acc"]) for r in comp) == pytest.approx(m["sel_pair_acc"], abs=1e-5)


def test_sixtyfour_training(zh_data, tmp_path):
    out = str(tmp_path / "sf")
    m = train.train(train.TrainConfig(model="sixtyfour", data=[zh_data], out=out, size="tiny", epochs=1, batch=64,
                                      val_fraction=0.3, half=True), progress=False)
    assert 0 <= m["val_policy_acc"] <= 1
    SixtyFourEvaluator.load(os.path.join(out, "model.pt"))


def test_deepchess_training(zh_data, tmp_path):
    out = str(tmp_path / "dc")
    m = train.train(train.TrainConfig(model="deepchess", data=[zh_data], out=out, size="tiny", epochs=2,
                                      ae_epochs=1, val_fraction=0.3, select_fraction=0.2), progress=False)
    assert 0 <= m["val_pair_acc"] <= 1
    rows = _rows(os.path.join(out, "metrics.csv"))
    assert [r["phase"] for r in rows] == ["ae0", "ae1", "comparator", "comparator"]
    comp = [r for r in rows if r["phase"] == "comparator"]
    best = max(range(len(comp)), key=lambda i: (float(comp[i]["sel_pair_acc"]), -i))
    assert m["best_epoch"] == best + 1 and abs(m["sel_pair_acc"] - float(comp[best]["sel_pair_acc"])) < 1e-5
    DeepChessEvaluator.load(os.path.join(out, "model.pt"))
    from experiments.training import eval_deepchess

    (r,) = eval_deepchess.evaluate([zh_data], [os.path.join(out, "model.pt")], val_fraction=0.3)
    assert 0 <= r["pair_acc"] <= 1 and 0 <= r["wrapper_sign_acc"] <= 1 and r["wrapper_positions"] > 0


def test_train_cli_errors(zh_data, tmp_path, capsys):
    assert cli.main(["train", "rise", "--data", zh_data, "--out", str(tmp_path / "o"), "--size", "huge"]) == 2
    assert "unknown size" in capsys.readouterr().err
    assert cli.main(["train", "rise", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2
    assert "no shards" in capsys.readouterr().err
    assert cli.main(["train", "rise", "--data", zh_data, "--out", str(tmp_path / "o"),
                     "--val-fraction", "1.5"]) == 2
    assert cli.main(["train", "deepchess", "--data", zh_data, "--out", str(tmp_path / "o"),
                     "--select-fraction", "0.95"]) == 2
    assert "--select-fraction" in capsys.readouterr().err
    with pytest.raises(train.TrainError, match="unknown optimizer"):
        train.TrainConfig(model="deepchess", data=[zh_data], out="x", optimizer="rmsprop").resolved()


def _mirror_fen(fen: str) -> str:
    """The FEN of the position mirrored a-file <-> h-file (promoted pieces keep their '~')."""
    parts = fen.split(" ")
    placement, pocket = parts[0], ""
    if "[" in placement:
        placement, pocket = placement[:placement.index("[")], placement[placement.index("["):]
    ranks = []
    for rank in placement.split("/"):
        tokens: list[str] = []
        for ch in rank:
            if ch == "~":
                tokens[-1] += ch
            else:
                tokens.append(ch)
        ranks.append("".join(reversed(tokens)))
    ep = parts[3]
    if ep != "-":
        ep = "abcdefgh"[7 - "abcdefgh".index(ep[0])] + ep[1]
    return " ".join(["/".join(ranks) + pocket, parts[1], parts[2], ep] + parts[4:])


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_mirror_files_is_the_mirrored_position_and_move(variant):
    rng = random.Random(5)
    raws, moves, fens = [], [], []
    for _ in range(12):
        pos = new_position(variant)
        for _ in range(rng.randint(20, 90)):
            legal = pos.legal_moves()
            if not legal:
                break
            m = rng.choice(legal)
            if pos.castling == 0:
                raws.append(pos.raw_state())
                moves.append(m)
                fens.append(pos.fen())
            pos.push(m)
    assert len(raws) > 100
    raw = np.array(raws, dtype=np.int64)
    mv = np.array(moves, dtype=np.int32)
    which = np.arange(len(raw)) % 3 != 0
    mr, mm = train.mirror_files(raw, mv, which)
    assert np.array_equal(mr[~which], raw[~which]) and np.array_equal(mm[~which], mv[~which])
    for k in np.flatnonzero(which):
        mirrored = new_position(variant, _mirror_fen(fens[k]))
        want = np.array(mirrored.raw_state(), dtype=np.int64)
        # All but the repetition count, and the en-passant square, which the position keeps after
        # any double step while the FEN shows it only when a capture is possible (checked apart),
        # and in chess the promoted-piece mask, which a chess FEN does not record.
        keep = [i for i in range(15) if i != RAW_EP and (variant == "crazyhouse" or i != RAW_PROMOTED)]
        assert np.array_equal(mr[k, keep], want[keep]), (fens[k], (mr[k] - want).tolist())
        assert mr[k, RAW_EP] == (raw[k, RAW_EP] ^ 7 if raw[k, RAW_EP] >= 0 else -1)
        assert int(mm[k]) in mirrored.legal_moves(), (fens[k], board.move_to_uci(int(mv[k])))
    back, back_moves = train.mirror_files(mr, mm, which)
    assert np.array_equal(back, raw) and np.array_equal(back_moves, mv)
    with pytest.raises(ValueError, match="castling"):
        start = np.array([new_position(variant).raw_state()], dtype=np.int64)
        train.mirror_files(start, np.zeros(1, dtype=np.int32), np.ones(1, dtype=bool))
