"""``searchbench bughouse-train``: supervised training of the LazyBug-style two-board network.

Recipe (LazyBug report section 2.3; every number is a default the command line can change):
loss ``value_weight * (z - v)^2 + policy_weight * CE(policy logits, played move)`` with
value_weight 1 and policy_weight 0.01, batch 256, a static learning rate of 0.02 (SGD with Nesterov
momentum 0.9 and weight decay 1e-4: the report does not name its optimizer). The cross-entropy is
over all 11,136 logits (the played move is the target); the evaluator's priors are a softmax over
the legal moves only.

Data: :func:`experiments.training.bughouse_data.samples_from_db` (both views of every ply). The split is by
game: a game is held out when ``hash(seed, game number)`` falls under ``val_fraction``. Training
stops after ``epochs`` or when the ``minutes`` budget (or ``cpu_seconds`` of process CPU: the self-play
loop's control arm) is spent (checked every batch).

Metrics (on the held-out games, at most ``val_max`` samples, a fixed random subset):
``val_policy_acc`` top-1 among the legal moves = the played move, for the mover's own view (what the
search uses for its own moves), ``val_partner_policy_acc`` the same for the other board's view,
``val_value_sign_acc`` sign(v) = sign(z) (every usable game is decisive), ``val_value_mse``,
``val_policy_ce``. ``out/metrics.csv`` has one row per epoch; ``out/checkpoint.pt`` is written every
epoch and a rerun with the same settings resumes from it; ``out/model.pt`` is the final model with
its metadata (float16 with ``half``), ``out/command.txt`` the command.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from board.variants import BUGHOUSE
from evaluators import bughouse_net as bn
from evaluators.devices import resolve_device
from evaluators.nets import load_model, save_model
from evaluators.neural import weights_path
from experiments.paths import run_dir, write_atomic
from experiments.training.bughouse_data import BughouseDataError, Samples, samples_from_db
from experiments.training.recipe import TrainConfig, TrainError, save_checkpoint, write_metrics_row


def split_by_game(samples: Samples, fraction: float, seed: int) -> tuple[Samples, Samples]:
    """(training, validation) samples; a game goes wholly to one side."""
    rng = np.random.default_rng(seed)
    held = rng.random(samples.games) < fraction
    if samples.games >= 2 and (held.all() or not held.any()):
        held[:] = False
        held[rng.integers(samples.games)] = True
    mask = held[samples.game]
    return samples.subset(~mask), samples.subset(mask)


def _batch(samples: Samples, rows: np.ndarray, device: torch.device | str = "cpu"
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    planes, scal = bn.encode(samples.states[rows])
    return tuple(torch.from_numpy(a).to(device) for a in  # type: ignore[return-value]
                 (planes, scal, samples.policy[rows], samples.value[rows]))


def evaluate(net: bn.BughouseNet, samples: Samples, batch: int = 512) -> dict[str, float]:
    """Validation metrics (module docstring) over all of ``samples``."""
    return _metrics(*_predict(net, samples, batch), samples)


#: game stages of :func:`heldout`'s breakdown: plies played on both boards before the sample
STAGES: tuple[tuple[int, int], ...] = ((0, 20), (20, 40), (40, 60), (60, 80), (80, 1 << 30))


def _plies(samples: Samples) -> np.ndarray:
    """Plies played (both boards) before each sample: samples come in play order, two a ply."""
    n = len(samples)
    first = np.ones(n, dtype=bool)
    first[1:] = samples.game[1:] != samples.game[:-1]
    starts = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return (np.arange(n) - starts) // 2


def _predict(net: bn.BughouseNet, samples: Samples, batch: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Per sample: top-1 hit among the legal moves and the value; the summed policy cross-entropy."""
    net.eval()
    device = next(net.parameters()).device
    n = len(samples)
    hit = np.zeros(n, dtype=bool)
    vals = np.zeros(n, dtype=np.float32)
    ce_sum = 0.0
    with torch.inference_mode():
        for s in range(0, n, batch):
            rows = np.arange(s, min(n, s + batch))
            planes, scal, pol, _ = _batch(samples, rows, device)
            v, logits = net(planes, scal)
            ce_sum += float(F.cross_entropy(logits, pol, reduction="sum"))
            vals[rows] = v.cpu().numpy()
            lg = logits.cpu().numpy()
            for j, r in enumerate(rows):
                legal = samples.legal[samples.legal_start[r]:samples.legal_start[r + 1]]
                hit[r] = legal[int(np.argmax(lg[j, legal]))] == samples.policy[r]
    return hit, vals, ce_sum


def _metrics(hit: np.ndarray, vals: np.ndarray, ce_sum: float, samples: Samples) -> dict[str, float]:
    n = len(samples)
    own = samples.own
    z = samples.value
    decisive = z != 0
    return {
        "val_policy_acc": float(hit[own].mean()) if own.any() else 0.0,
        "val_partner_policy_acc": float(hit[~own].mean()) if (~own).any() else 0.0,
        "val_value_sign_acc": float((np.sign(vals[decisive]) == np.sign(z[decisive])).mean()) if decisive.any() else 0.0,
        "val_value_mse": float(((vals - z) ** 2).mean()) if n else 0.0,
        "val_policy_ce": ce_sum / n if n else 0.0,
        "val_samples": float(n),
    }


def heldout(dbs: Sequence[str], weights: Sequence[str], val_fraction: float = 0.1, seed: int = 1,
            threads: int = 1) -> dict[str, Any]:
    """Every network of ``weights`` on the same held-out games: ``bughouse-train``'s validation split
    of ``dbs`` (same ``val_fraction`` and ``seed``; a game is held out by its number, so a database
    that grew keeps its earlier games on the same side), every held-out position of both views (no
    subsample). Returns the split's size and, per weights file, :func:`evaluate`'s metrics and the
    seconds it took. Held-out means unseen only for networks trained on these databases with this split."""
    torch.set_num_threads(threads)
    samples = samples_from_db(list(dbs))
    _, val_s = split_by_game(samples, val_fraction, seed)
    if len(val_s) == 0:
        raise BughouseDataError(f"no held-out games: {samples.games} games, val_fraction {val_fraction}")
    out: dict[str, Any] = {"games": samples.games, "val_games": val_s.games, "val_positions": len(val_s), "nets": {}}

    for path in weights:
        try:
            net, _ = load_model(weights_path(path), bn.FAMILY)
            assert isinstance(net, bn.BughouseNet)  # the family's network class (load_model checks the family)
        except (OSError, ValueError, RuntimeError, KeyError) as e:
            raise BughouseDataError(f"cannot load bughouse network {path!r}: {e}") from None
        t0 = time.time()
        hit, vals, ce_sum = _predict(net, val_s, 512)
        m: dict[str, Any] = dict(_metrics(hit, vals, ce_sum, val_s))
        m["seconds"] = time.time() - t0
        plies = _plies(val_s)
        m["stages"] = {}
        for lo, hi in STAGES:  # LazyBug's figures 2-4: accuracy along the game
            mask = (plies >= lo) & (plies < hi)
            if mask.any():
                sub = val_s.subset(mask)
                st = _metrics(hit[mask], vals[mask], 0.0, sub)
                m["stages"][f"{lo}-{hi - 1}" if hi < 1 << 30 else f"{lo}+"] = {
                    k: st[k] for k in ("val_policy_acc", "val_value_sign_acc", "val_samples")}
        out["nets"][path] = m
    return out


def train(cfg: TrainConfig, progress: bool = True, command: str | None = None) -> dict[str, Any]:
    """Train the two-board network on the bughouse game databases ``cfg.data`` with the one trainer
    config (:class:`experiments.training.recipe.TrainConfig`, ``model`` bughouse: the family's
    defaults fill what it leaves None), write ``cfg.out/model.pt`` (+ metrics.csv, checkpoint.pt,
    command.txt); returns the metadata."""
    if cfg.model != bn.FAMILY:
        raise BughouseDataError(f"the two-board trainer trains {bn.FAMILY}, not {cfg.model}")
    try:
        cfg = cfg.resolved()
    except TrainError as e:
        raise BughouseDataError(str(e)) from None
    device = resolve_device(cfg.device)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    with run_dir(cfg.out):  # a refused run (no bughouse games, a bad split) leaves no folder behind
        return _train(cfg.data, cfg.out, cfg, device, progress, command)


def _train(dbs: Sequence[str], out: str, cfg: TrainConfig, device: torch.device, progress: bool,
           command: str | None) -> dict[str, Any]:
    from tqdm import tqdm

    write_atomic(os.path.join(out, "command.txt"), (command or " ".join(["searchbench"] + sys.argv[1:])) + "\n")
    # the resolved config (TrainConfig.resolved) has filled every None with the family's default
    epochs, batch, lr = int(cfg.epochs or 1), int(cfg.batch or 1), float(cfg.lr or 0.0)
    value_weight, policy_weight = float(cfg.value_weight or 0.0), float(cfg.policy_weight or 0.0)
    samples = samples_from_db(list(dbs))
    train_s, val_s = split_by_game(samples, cfg.val_fraction, cfg.seed)
    if len(train_s) == 0 or len(val_s) == 0:
        raise BughouseDataError(f"need games on both sides of the split; have {samples.games} games")
    rng = np.random.default_rng(cfg.seed + 1)
    if len(val_s) > cfg.val_max:
        keep = np.zeros(len(val_s), dtype=bool)
        keep[rng.choice(len(val_s), cfg.val_max, replace=False)] = True
        val_s = val_s.subset(keep)
    size = cfg.size
    if cfg.init is not None:
        try:
            loaded, saved = load_model(cfg.init, bn.FAMILY)
            assert isinstance(loaded, bn.BughouseNet)
        except ValueError as e:
            raise BughouseDataError(str(e)) from None
        net = loaded.to(device)
        size = str(saved.get("meta", {}).get("size", size))
    else:
        net = bn.build(cfg.size).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=cfg.momentum, nesterov=cfg.momentum > 0,
                          weight_decay=cfg.weight_decay)
    ckpt_path = os.path.join(out, "checkpoint.pt")
    metrics_path = os.path.join(out, "metrics.csv")
    epoch0, elapsed0, cpu0 = 0, 0.0, 0.0
    recipe = {k: v for k, v in asdict(cfg).items() if k not in ("device", "out", "extra")}  # a run may resume on another device
    if os.path.exists(ckpt_path):
        try:
            ck = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - a torn or foreign file
            raise BughouseDataError(f"cannot read checkpoint {ckpt_path}: {type(e).__name__}") from None
        if isinstance(ck, dict) and ck.get("recipe") == recipe:
            net.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            epoch0, elapsed0, cpu0 = int(ck["epoch"]), float(ck["elapsed"]), float(ck.get("cpu", 0.0))
    elif os.path.exists(metrics_path):
        os.remove(metrics_path)
    t0 = time.monotonic() - elapsed0
    c0 = time.process_time() - cpu0  # cpu_seconds: this process's CPU (every thread), as the one-board trainer
    budget = None if cfg.minutes is None else cfg.minutes * 60.0
    n = len(train_s)
    steps = (n + batch - 1) // batch
    total = epochs * steps

    def done() -> float:  # the share of the run behind us: steps, or the budget spent (wall or CPU)
        return max((epoch * steps + seen // batch) / total,
                   0.0 if budget is None else (time.monotonic() - t0) / budget,
                   0.0 if cfg.cpu_seconds is None else (time.process_time() - c0) / cfg.cpu_seconds)

    epoch, seen = epoch0, 0
    bar = tqdm(total=100, initial=min(100, int(100 * done())), desc="bughouse train", unit="%",
               disable=not progress, dynamic_ncols=True)
    last: dict[str, float] = {}
    out_of_time = False
    while epoch < epochs and not out_of_time:
        net.train()
        order = np.random.default_rng(cfg.seed * 1000 + epoch).permutation(n)
        tot_v = tot_p = 0.0
        seen = 0
        for s in range(0, n, batch):
            rows = order[s:s + batch]
            planes, scal, pol, z = _batch(train_s, rows, device)
            v, logits = net(planes, scal)
            lv = F.mse_loss(v, z)
            lp = F.cross_entropy(logits, pol)
            loss = value_weight * lv + policy_weight * lp
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            tot_v += float(lv.detach()) * len(rows)
            tot_p += float(lp.detach()) * len(rows)
            seen += len(rows)
            bar.n = min(100, int(100 * done()))
            bar.set_postfix_str(f"mse {tot_v / seen:.3f} ce {tot_p / seen:.2f}")
            if (budget is not None and time.monotonic() - t0 >= budget) or \
                    (cfg.cpu_seconds is not None and time.process_time() - c0 >= cfg.cpu_seconds):
                out_of_time = True
                break
        epoch += 1
        last = evaluate(net, val_s)
        row = {"epoch": epoch, "train_samples": seen, "train_value_mse": tot_v / max(1, seen),
               "train_policy_ce": tot_p / max(1, seen), **last, "seconds": time.monotonic() - t0}
        write_metrics_row(metrics_path, {k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()})
        save_checkpoint(ckpt_path, {"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch,
                                    "elapsed": time.monotonic() - t0, "cpu": time.process_time() - c0, "recipe": recipe})
    bar.close()
    if not last:  # resumed after the last epoch
        last = evaluate(net, val_s)
    meta: dict[str, Any] = {
        "variant": BUGHOUSE.name, "size": size, "init": cfg.init, "data": [str(d) for d in dbs],
        "games": samples.games,
        "train_positions": len(train_s), "val_positions": len(val_s), "val_games": val_s.games,
        "recipe": recipe, "training_seconds": round(time.monotonic() - t0, 1), "epochs_done": epoch,
        "device": str(device), **last}
    save_model(os.path.join(out, "model.pt"), bn.FAMILY, net.to("cpu"), meta, half=cfg.half)
    return meta
