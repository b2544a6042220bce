"""Training of DeepChess (the recipe of :mod:`experiments.training.train`): positions from decisive
games, Pos2Vec pretrained layer by layer as a stacked autoencoder, then the siamese comparator on
fresh (White-won, Black-won) pairs every epoch; inputs through the evaluator's own encoding hook
(:meth:`evaluators.deepchess.DeepChessEvaluator.planes`), on any device."""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from board.position import RAW_TURN
from evaluators import nets
from evaluators.deepchess import DeepChessEvaluator
from experiments.training import datagen
from experiments.training.datagen import DataSet
from evaluators.families import FAMILIES
from experiments.training.recipe import Run, TrainConfig, TrainError, is_capture

def deepchess_positions(ds: DataSet, idx_games: np.ndarray, rng: np.random.Generator,
                        per_game: int = 10, skip_moves: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Position indices from the given decisive games (DeepChess sampling) and their game result
    (+1 White won, -1 Black won)."""
    game_set = np.zeros(len(ds.game_uid), dtype=bool)
    game_set[idx_games] = True
    res = ds.result
    # ply number inside the game: positions of a game are contiguous
    start = np.ones(len(ds), dtype=bool)
    start[1:] = ds.game[1:] != ds.game[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(ds)), 0))
    ply = np.arange(len(ds)) - first
    ok = game_set[ds.game] & (res != 0) & (ply >= 2 * skip_moves) & ~is_capture(ds.raw, ds.move)
    cand = np.flatnonzero(ok)
    rng.shuffle(cand)
    counts: dict[int, int] = {}
    keep = []
    for i in cand:
        g = int(ds.game[i])
        if counts.get(g, 0) < per_game:
            counts[g] = counts.get(g, 0) + 1
            keep.append(i)
    keep_arr = np.sort(np.array(keep, dtype=np.int64))
    return keep_arr, res[keep_arr].astype(np.int64)


SCORE_CLIP = 2000  # centipawns: mate scores and won positions are clipped to this
SCORE_SCALE = 400.0  # logistic scale of the score target (the Elo scale)


def white_scores(ds: DataSet, idx: np.ndarray) -> np.ndarray:
    """Engine score of positions idx from White's view in centipawns, clipped to +-SCORE_CLIP."""
    sc = ds.score[idx].astype(np.float64)
    if (sc == datagen.SCORE_UNKNOWN).any():
        raise TrainError("--score-weight needs engine scores; imported games have none")
    sc = np.clip(sc, -SCORE_CLIP, SCORE_CLIP)
    out: np.ndarray = np.where(ds.raw[idx, RAW_TURN] == 0, sc, -sc)
    return out


def pair_target(y: np.ndarray, score_first: np.ndarray, score_second: np.ndarray, score_weight: float) -> np.ndarray:
    """P(first position is better for White) to train on: the outcome label (1 - y, the paper) blended
    with the engine-score ordering ``1 / (1 + 10^(-(s_first - s_second) / 400))`` (weight ``score_weight``)."""
    t = 1.0 - y.astype(np.float64)
    if score_weight > 0.0:
        by_score = 1.0 / (1.0 + np.power(10.0, -(score_first - score_second) / SCORE_SCALE))
        t = (1.0 - score_weight) * t + score_weight * by_score
    out: np.ndarray = t.astype(np.float32)
    return out


def _pairs(win_w: np.ndarray, win_b: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n random pairs in both orders: (first, second, label) with label 0 if first is the White-won one."""
    a = rng.choice(win_w, n)
    b = rng.choice(win_b, n)
    flip = rng.random(n) < 0.5
    first = np.where(flip, b, a)
    second = np.where(flip, a, b)
    return first, second, flip.astype(np.int64)


def pair_accuracy(net: nets.DeepChessNet, x: np.ndarray, win_w: np.ndarray, win_b: np.ndarray,
                  n: int, seed: int) -> float:
    """Share of random (White-won, Black-won) pairs, both orders, that the comparator orders right."""
    rng = np.random.default_rng(seed)
    f, s, y = _pairs(win_w, win_b, n, rng)
    device = next(net.parameters()).device
    with torch.inference_mode():
        net.eval()
        feats = net.features(torch.from_numpy(x).to(device))
        logits = net.compare_features(feats[torch.from_numpy(f).to(device)], feats[torch.from_numpy(s).to(device)])
    return float((logits.argmax(dim=1).cpu().numpy() == y).mean())


def _samples(cfg: TrainConfig, ds: DataSet, rng: np.random.Generator) -> dict[str, Any]:
    """Training, validation and selection positions with their games' results and input bits."""
    variant = ds.variant
    val_game = datagen.is_validation(ds.game_uid, cfg.val_fraction)
    sel_game = datagen.is_selection(ds.game_uid, cfg.val_fraction, cfg.select_fraction)
    tr_pos, tr_res = deepchess_positions(ds, np.flatnonzero(~val_game & ~sel_game), rng,
                                         per_game=cfg.positions_per_game)
    # separate generators: the validation and selection samples do not depend on the training sampling
    va_pos, va_res = deepchess_positions(ds, np.flatnonzero(val_game), np.random.default_rng(cfg.seed + 7919))
    se_pos, se_res = deepchess_positions(ds, np.flatnonzero(sel_game), np.random.default_rng(cfg.seed + 104729))
    if cfg.max_positions is not None and len(tr_pos) > cfg.max_positions:
        sel = np.sort(rng.choice(len(tr_pos), cfg.max_positions, replace=False))
        tr_pos, tr_res = tr_pos[sel], tr_res[sel]
    if min(int((r == w).sum()) for r in (tr_res, va_res, se_res) for w in (1, -1)) == 0:
        raise TrainError("DeepChess needs White-won and Black-won games in the training, validation "
                         "and selection data")
    bits = DeepChessEvaluator.planes
    return {"tr_pos": tr_pos, "va_pos": va_pos, "se_pos": se_pos,
            "x_tr": bits(ds.raw[tr_pos], variant), "x_va": bits(ds.raw[va_pos], variant),
            "x_se": bits(ds.raw[se_pos], variant),
            "tw": np.flatnonzero(tr_res == 1), "tb": np.flatnonzero(tr_res == -1),
            "vw": np.flatnonzero(va_res == 1), "vb": np.flatnonzero(va_res == -1),
            "sw": np.flatnonzero(se_res == 1), "sb": np.flatnonzero(se_res == -1),
            "tr_score": white_scores(ds, tr_pos) if cfg.score_weight > 0 else np.zeros(len(tr_pos))}


def _pretrain(cfg: TrainConfig, net: nets.DeepChessNet, xt: torch.Tensor, run: Run, rng: np.random.Generator,
              state: dict[str, Any], bar: Any) -> None:
    """The stacked autoencoder, layer by layer from ``state["phase"]`` (30% of a time budget)."""
    assert cfg.ae_epochs is not None and cfg.batch is not None
    n_layers = len(net.pos2vec.layers)
    ae_budget = None if cfg.minutes is None else 0.3 * 60.0 * cfg.minutes / n_layers
    while state["phase"] < n_layers:
        phase = state["phase"]
        enc_layer, dec = net.pos2vec.autoencoder_layer(phase)
        opt = torch.optim.SGD(list(enc_layer.parameters()) + list(dec.parameters()), lr=0.005, momentum=0.9)
        phase_start = time.monotonic()
        with torch.no_grad():
            h_all = net.pos2vec(xt, upto=phase)
        for e in range(state["epoch"], cfg.ae_epochs):
            for g in opt.param_groups:
                g["lr"] = 0.005 * 0.98 ** e
            perm = torch.from_numpy(rng.permutation(len(h_all))).to(xt.device)
            tot = 0.0
            e0 = time.monotonic()
            for s in range(0, len(perm), cfg.batch):
                h = h_all[perm[s:s + cfg.batch]]
                rec = dec(torch.relu(enc_layer(h)))
                loss = F.binary_cross_entropy_with_logits(rec, h) if phase == 0 else F.mse_loss(rec, h)
                opt.zero_grad(set_to_none=True)
                loss.backward()  # type: ignore[no-untyped-call]
                opt.step()
                tot += float(loss.detach()) * len(h)
            state["epoch"] = e + 1
            run.write_row({"phase": f"ae{phase}", "epoch": state["epoch"], "elapsed_s": round(state["elapsed"](), 1),
                           "positions_per_s": round(len(perm) / max(1e-9, time.monotonic() - e0), 1),
                           "train_loss": round(tot / len(perm), 5), "sel_pair_acc": "", "val_pair_acc": "",
                           "train_pair_acc": ""})
            bar.update(1)
            if ae_budget is not None and time.monotonic() - phase_start > ae_budget:
                break
        bar.update(cfg.ae_epochs - state["epoch"])
        state["phase"] += 1
        state["epoch"] = 0
        run.save(net, None, phase=state["phase"], epoch=0, elapsed=state["elapsed"]())


def _comparator(cfg: TrainConfig, net: nets.DeepChessNet, xt: torch.Tensor, d: dict[str, Any], run: Run,
                rng: np.random.Generator, state: dict[str, Any], bar: Any) -> None:
    """The siamese comparator, epoch by epoch from ``state["epoch"]``."""
    assert cfg.epochs is not None and cfg.batch is not None and cfg.lr is not None
    budget = None if cfg.minutes is None else 60.0 * cfg.minutes
    copt: torch.optim.Optimizer
    if cfg.optimizer == "adam":  # the reimplementation report in the seeds: Adam, lr 0.0005
        copt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    else:
        copt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay)
    pairs_per_epoch = max(cfg.batch, min(200000, 2 * len(d["tr_pos"])))
    while state["epoch"] < cfg.epochs:
        epoch = state["epoch"]
        if budget is not None and state["elapsed"]() > budget:
            break
        if run.patience_over(epoch):
            break
        for g in copt.param_groups:
            g["lr"] = cfg.lr * 0.99 ** epoch
        net.train()
        f, s2, y = _pairs(d["tw"], d["tb"], pairs_per_epoch, rng)
        target = torch.from_numpy(pair_target(y, d["tr_score"][f], d["tr_score"][s2], cfg.score_weight)).to(xt.device)
        f_t, s_t = torch.from_numpy(f).to(xt.device), torch.from_numpy(s2).to(xt.device)
        tot = 0.0
        e0 = time.monotonic()
        for s in range(0, pairs_per_epoch, cfg.batch):
            logits = net(xt[f_t[s:s + cfg.batch]], xt[s_t[s:s + cfg.batch]])
            t = target[s:s + cfg.batch]
            lsm = F.log_softmax(logits, dim=1)  # soft cross-entropy; = cross_entropy(y) when score_weight 0
            loss = -(t * lsm[:, 0] + (1 - t) * lsm[:, 1]).mean()
            copt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            copt.step()
            tot += float(loss.detach()) * len(logits)
        rate = 2 * pairs_per_epoch / max(1e-9, time.monotonic() - e0)
        state["epoch"] = epoch + 1
        sel_acc = pair_accuracy(net, d["x_se"], d["sw"], d["sb"], 20000, cfg.seed + 3)
        val_acc = pair_accuracy(net, d["x_va"], d["vw"], d["vb"], 20000, cfg.seed + 1)
        train_acc = pair_accuracy(net, d["x_tr"], d["tw"], d["tb"], 20000, cfg.seed + 2)
        run.consider(sel_acc, epoch + 1, net, {"val_pair_acc": val_acc})
        run.write_row({"phase": "comparator", "epoch": epoch + 1, "elapsed_s": round(state["elapsed"](), 1),
                       "positions_per_s": round(rate, 1), "train_loss": round(tot / pairs_per_epoch, 5),
                       "sel_pair_acc": round(sel_acc, 5), "val_pair_acc": round(val_acc, 5),
                       "train_pair_acc": round(train_acc, 5)})
        bar.update(1)
        bar.set_postfix(val_pair_acc=f"{val_acc:.3f}")
        run.save(net, None, phase=state["phase"], epoch=state["epoch"], elapsed=state["elapsed"]())


def train_deepchess(cfg: TrainConfig, ds: DataSet, run: Run, device: torch.device, progress: bool) -> dict[str, Any]:
    """Train DeepChess (autoencoder, then comparator); returns model.pt's metadata."""
    from tqdm import tqdm

    assert cfg.epochs is not None and cfg.ae_epochs is not None
    net = nets.build("deepchess", {**FAMILIES["deepchess"].sizes[cfg.size], "variant": ds.variant, "dropout": cfg.dropout,
                                     "input_dropout": cfg.input_dropout, "antisymmetric": cfg.antisymmetric})
    assert isinstance(net, nets.DeepChessNet)
    rng = np.random.default_rng(cfg.seed)
    d = _samples(cfg, ds, rng)
    ck = run.resume(net)
    net = net.to(device)
    n_layers = len(net.pos2vec.layers)
    # phase i < n_layers: autoencoder layer i; n_layers: comparator
    t0 = time.monotonic() - ck.get("elapsed", 0.0)
    state: dict[str, Any] = {"phase": ck.get("phase", 0), "epoch": ck.get("epoch", 0),
                             "elapsed": lambda: time.monotonic() - t0}
    xt = torch.from_numpy(d["x_tr"]).to(device)
    bar = tqdm(total=n_layers * cfg.ae_epochs + cfg.epochs,
               initial=min(state["phase"], n_layers) * cfg.ae_epochs + (state["epoch"] if state["phase"] == n_layers else 0),
               desc=f"train deepchess ({device.type})", unit="epoch", disable=not progress)
    try:
        _pretrain(cfg, net, xt, run, rng, state, bar)
        _comparator(cfg, net, xt, d, run, rng, state, bar)
    except KeyboardInterrupt:
        run.save(net, None, phase=state["phase"], epoch=state["epoch"], elapsed=state["elapsed"]())
        raise
    finally:
        bar.close()
    if run.best_state:
        net.load_state_dict(run.best_state)
    val_acc = pair_accuracy(net, d["x_va"], d["vw"], d["vb"], 20000, cfg.seed + 1)
    meta = {"train_positions": int(len(d["tr_pos"])), "val_positions": int(len(d["va_pos"])),
            "sel_positions": int(len(d["se_pos"])), "games": int(len(ds.game_uid)), "positions": int(len(ds)),
            "variant": ds.variant, "size": cfg.size, "sel_pair_acc": float(run.best_score),
            "training_seconds": round(state["elapsed"](), 1), "val_pair_acc": val_acc, "device": str(device)}
    return run.finish("deepchess", net, meta)
