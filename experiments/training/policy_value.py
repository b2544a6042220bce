"""Training of the value + policy networks (rise, sixtyfour): the recipes of
:mod:`experiments.training.train`, through each evaluator's own encoding hooks
(:meth:`evaluators.neural.PolicyValueEvaluator.planes` and ``policy_indices``) and its policy loss,
on any device."""
from __future__ import annotations

import contextlib
import math
import queue
import threading
import time
from typing import Any, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import board
from board.position import RAW_CASTLING
from board.variants import variant_of
from engines import registry
from evaluators import classical, encodings as enc
from evaluators import nets
from evaluators.base import INT8_MODES
from evaluators.neural import PolicyValueEvaluator, weights_path
from evaluators.scale import cp_to_value
from experiments.training import datagen
from experiments.training.datagen import SCORE_UNKNOWN, DataSet
from evaluators.families import FAMILIES, policy_value_families, resolve
from experiments.training.recipe import (
    Run, TrainConfig, TrainError, legal_moves_of, mate_in_one_set, mirror_files, mirror_moves, one_cycle, side_result,
    split,
)

#: positions per evaluation batch of the per-epoch metrics
METRICS_BATCH = 512


def evaluator_class(model: str) -> type[PolicyValueEvaluator]:
    """The evaluator class of a family (its encoding hooks are the training's)."""
    cls: type[PolicyValueEvaluator] = resolve(FAMILIES[model].evaluator)
    return cls


def engine_values(score: np.ndarray, variant: str) -> np.ndarray:
    """Engine scores (centipawns for the side to move, mates ``+-(MATE_SCORE - plies)``) as values on
    the suite's one scale (:func:`evaluators.scale.cp_to_value`, +-1 for a mate); NaN where the score
    is unknown (imported games)."""
    v = np.array([cp_to_value(float(c), variant) for c in score.tolist()], dtype=np.float32)
    return np.where(score == SCORE_UNKNOWN, np.float32(np.nan), v).astype(np.float32)


class PolicyValueTask:
    """Inputs, targets, loss and metrics of one family on one device."""

    def __init__(self, model: str, variant: str, value_weight: float, device: torch.device | str = "cpu",
                 q_weight: float = 0.0, score_weight: float = 0.0) -> None:
        self.model = model
        self.variant = variant
        self.value_weight = value_weight
        self.q_weight = q_weight
        self.score_weight = score_weight
        self.device = torch.device(device)
        self.ev = evaluator_class(model)

    def encode(self, raw: np.ndarray) -> torch.Tensor:
        """Input planes of raw states (on the CPU; see :meth:`to_device`)."""
        return torch.from_numpy(self.ev.planes(raw, self.variant))

    def to_device(self, x: torch.Tensor) -> torch.Tensor:
        if self.device.type == "cpu":
            return x
        return x.pin_memory().to(self.device, non_blocking=True)

    def move_index(self, raw: np.ndarray, moves: np.ndarray) -> np.ndarray:
        """The policy index of each row's move."""
        return self.ev.policy_indices(moves, raw, np.arange(len(moves)))

    def loss_of(self, v: torch.Tensor, p: torch.Tensor, ds: DataSet, idx: np.ndarray,
                raw: np.ndarray | None = None, moves: np.ndarray | None = None,
                mirrored: np.ndarray | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """The loss of positions idx (``raw``/``moves``: their rows as given to the net, if changed;
        ``mirrored``: which rows were mirrored, so that search targets are mirrored with them).

        Policy target: the search's distribution π where the data have one (self-play shards), else
        the played move; a position whose π is empty (a fast search under playout-cap randomisation)
        has no policy loss, only its value loss.  Cross entropy ``-Σ_a π(a) log p(a)`` (rise; with a
        one-hot π the usual cross entropy) or SixtyFour's Poisson NLL against the outcome-scaled target.  Value target:
        the result z for the side to move, or ``(1 - q_weight) z + q_weight root_q``; where a position
        has no search value but an engine score (engine games), ``(1 - score_weight) z + score_weight
        v(score)``, the score on the suite's one scale (:func:`engine_values`)."""
        raw = ds.raw[idx] if raw is None else raw
        if ds.policy_offset is None:
            rows = np.arange(len(idx))
            tm = ds.move[idx] if moves is None else moves
            tp = np.ones(len(idx), dtype=np.float32)
        else:
            rows, tm, tp = ds.policy_targets(idx)
            if mirrored is not None and mirrored.any():
                tm = np.where(mirrored[rows], mirror_moves(tm), tm)
        # positions with a policy target (playout-cap randomisation leaves fast searches' positions without)
        has = np.zeros(len(idx), dtype=bool)
        has[rows] = True
        n_pol = max(1, int(has.sum()))
        ix = torch.from_numpy(self.ev.policy_indices(tm, raw, rows).astype(np.int64)).to(p.device)
        rows_t = torch.from_numpy(rows.astype(np.int64)).to(p.device)
        prob = torch.from_numpy(np.ascontiguousarray(tp, dtype=np.float32)).to(p.device)
        z_np = side_result(ds, idx).astype(np.float32)
        if self.q_weight > 0.0 and ds.root_q is not None:
            q = ds.root_q[idx]
            z_np = np.where(np.isnan(q), z_np, (1.0 - self.q_weight) * z_np + self.q_weight * q).astype(np.float32)
        if self.score_weight > 0.0:
            sv = engine_values(ds.score[idx], self.variant)
            if ds.root_q is not None:  # a search value, where there is one, is the target's second part
                sv = np.where(np.isnan(ds.root_q[idx]), sv, np.nan)
            z_np = np.where(np.isnan(sv), z_np, (1.0 - self.score_weight) * z_np + self.score_weight * sv).astype(np.float32)
        z = torch.from_numpy(z_np).to(v.device)
        if self.ev.policy_loss == "cross_entropy":
            if ds.policy_offset is None:
                lp = F.cross_entropy(p, ix)
            else:
                lp = -(prob * F.log_softmax(p, dim=1)[rows_t, ix]).sum() / n_pol
            lv = F.mse_loss(v, z)
        else:
            scale = torch.tensor([enc.SIXTYFOUR_POLICY_SCALE[int(round(r))] for r in side_result(ds, idx).tolist()],
                                 dtype=torch.float32, device=p.device)
            # Poisson NLL with log-rate p: sum_j exp(p_j) - target_j * p_j, target = scale * π
            picked = torch.zeros(len(idx), device=p.device).index_add(0, rows_t, prob * p[rows_t, ix])
            per = p.exp().sum(dim=1) - scale * picked
            lp = per[torch.from_numpy(has).to(p.device)].sum() / n_pol
            lv = F.mse_loss((v + 1) / 2, (z + 1) / 2)
        loss = lp + self.value_weight * lv
        return loss, {"policy_loss": float(lp.detach()), "value_loss": float(lv.detach())}

    @torch.inference_mode()
    def metrics(self, net: nn.Module, ds: DataSet, idx: np.ndarray, legal: list[list[int]],
                mates: tuple[np.ndarray, list[set[int]], list[list[int]]], batch: int = METRICS_BATCH) -> dict[str, float]:
        net.eval()
        correct = sign_ok = decisive = 0
        lp_sum = lv_sum = ent_sum = 0.0
        for s in range(0, len(idx), batch):
            b = idx[s:s + batch]
            v, p = net(self.to_device(self.encode(ds.raw[b])))
            _, parts = self.loss_of(v, p, ds, b)
            lp_sum += parts["policy_loss"] * len(b)
            lv_sum += parts["value_loss"] * len(b)
            z = side_result(ds, b)
            dec = z != 0
            decisive += int(dec.sum())
            sign_ok += int(((v.float().cpu().numpy() > 0) == (z > 0))[dec].sum())
            logits = p.float().cpu().numpy()
            top = self._ranked(logits, ds.raw[b], legal[s:s + batch], 1)
            correct += sum(int(t[0] == int(m)) for t, m in zip(top, ds.move[b]))
            ent_sum += self._legal_entropy(logits, ds.raw[b], legal[s:s + batch])
        m_idx, m_sets, m_legal = mates
        top1 = top5 = 0
        for s in range(0, len(m_idx), batch):
            b = m_idx[s:s + batch]
            _, p = net(self.to_device(self.encode(ds.raw[b])))
            ranked = self._ranked(p.float().cpu().numpy(), ds.raw[b], m_legal[s:s + batch], 5)
            for r, ms in zip(ranked, m_sets[s:s + batch]):
                top1 += int(r[0] in ms)
                top5 += int(any(m in ms for m in r))
        n = max(1, len(idx))
        return {"val_policy_acc": correct / n, "val_value_sign_acc": sign_ok / max(1, decisive),
                "val_policy_loss": lp_sum / n, "val_value_loss": lv_sum / n, "val_policy_entropy": ent_sum / n,
                "mate1_top1": top1 / max(1, len(m_idx)), "mate1_top5": top5 / max(1, len(m_idx)),
                "mate1_positions": float(len(m_idx)), "val_positions": float(n)}

    def _legal_entropy(self, logits: np.ndarray, raw: np.ndarray, legal: list[list[int]]) -> float:
        """The summed entropy (nats) of the network's prior over each position's legal moves (the
        distribution a search starts from: the self-play loop's gate 1 keeps it from collapsing)."""
        total = 0.0
        for row, r, lm in zip(logits, raw, legal):
            if not lm:
                continue
            mv = np.array(lm, dtype=np.int64)
            x = row[self.move_index(np.repeat(r[None, :], len(mv), axis=0), mv)].astype(np.float64)
            x = x - x.max()
            q = np.exp(x)
            q /= q.sum()
            total += float(-(q[q > 0] * np.log(q[q > 0])).sum())
        return total

    def _ranked(self, logits: np.ndarray, raw: np.ndarray, legal: list[list[int]], k: int) -> list[list[int]]:
        out = []
        for row, r, lm in zip(logits, raw, legal):
            mv = np.array(lm, dtype=np.int64)
            ix = self.move_index(np.repeat(r[None, :], len(mv), axis=0), mv)
            order = np.argsort(-row[ix], kind="stable")[:k]
            out.append([int(mv[o]) for o in order])
        return out


def _batches(cfg: TrainConfig, task: PolicyValueTask, ds: DataSet, perm: np.ndarray, first: int, steps: int,
             base_step: int, prefetch: bool) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, torch.Tensor]]:
    """(positions, raw rows, moves, which rows are mirrored, input planes) of steps ``first`` .. ``steps - 1`` of an epoch
    whose first step is the run's step ``base_step`` (mirrored as ``cfg.mirror`` says, seeded by
    the run's step); with ``prefetch`` encoded two batches ahead on a thread."""
    def make(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, torch.Tensor]:
        b = np.sort(perm[k * cfg.batch:(k + 1) * cfg.batch])  # type: ignore[operator]
        raw_b, moves_b = ds.raw[b], ds.move[b]
        flip = np.zeros(len(b), dtype=bool)
        if cfg.mirror:
            coin = np.random.default_rng([cfg.seed, base_step + k]).random(len(b)) < 0.5
            flip = coin & (raw_b[:, RAW_CASTLING] == 0)
            raw_b, moves_b = mirror_files(raw_b, moves_b, flip)
        x = task.encode(raw_b)
        return b, raw_b, moves_b, flip, (x.pin_memory() if prefetch else x)

    if not prefetch:
        for k in range(first, steps):
            yield make(k)
        return
    q: queue.Queue[Any] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def work() -> None:
        for k in range(first, steps):
            if stop.is_set():
                return
            q.put(make(k))
        q.put(None)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    try:
        while (item := q.get()) is not None:
            yield item
    finally:
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                q.get_nowait()


def initial_network(cfg: TrainConfig, variant: str) -> nn.Module:
    """A fresh network of ``cfg.size``, or the weights ``cfg.init`` (their own size) to go on from."""
    if cfg.init is None:
        return nets.build(cfg.model, {**FAMILIES[cfg.model].sizes[cfg.size], "variant": variant})
    try:
        net, d = nets.load_model(weights_path(cfg.init), cfg.model)
    except ValueError as e:
        raise TrainError(str(e)) from None
    if d["config"].get("variant", variant) != variant:
        raise TrainError(f"--init {cfg.init} is a {d['config'].get('variant')} network; the data are {variant}")
    net = net.float()
    net.train()
    return net


def carry_optimizer(opt: torch.optim.Optimizer, path: str) -> None:
    """Start ``opt`` from the optimizer state (momentum buffers) of the checkpoint ``path`` (the loop's
    previous round), keeping this run's learning rate and momentum; :class:`TrainError` if it is the
    optimizer of another network or kind."""
    groups: list[dict[str, Any]] = [{k: g[k] for k in ("lr", "momentum") if k in g} for g in opt.param_groups]
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
        opt.load_state_dict(ck["optimizer"])
    except FileNotFoundError:
        raise TrainError(f"optimizer_from: no checkpoint {path}") from None
    except Exception as e:  # noqa: BLE001 - a torn file, another optimizer, other shapes: all one line
        raise TrainError(f"optimizer_from: {path} holds no optimizer state for this network "
                         f"({type(e).__name__})") from None
    for g, keep in zip(opt.param_groups, groups):
        g.update(keep)


def train_policy_value(cfg: TrainConfig, ds: DataSet, run: Run, device: torch.device, progress: bool) -> dict[str, Any]:
    """Train rise or sixtyfour (the recipe of :mod:`experiments.training.train`); returns model.pt's metadata."""
    from tqdm import tqdm

    assert cfg.epochs is not None and cfg.batch is not None and cfg.lr is not None and cfg.value_weight is not None
    variant = ds.variant
    net = initial_network(cfg, variant).to(device)
    task = PolicyValueTask(cfg.model, variant, cfg.value_weight, device, cfg.q_weight, cfg.score_weight)
    tr, va, se = split(ds, cfg)
    if cfg.bf16:
        net = net.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    one_cycle_schedule = FAMILIES[cfg.model].schedule == "one_cycle" and cfg.schedule == "family"
    if cfg.schedule == "constant":  # continued training: SGD with the learning rate held, momentum 0.9
        opt: torch.optim.Optimizer = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True,
                                                     weight_decay=cfg.weight_decay)
    elif one_cycle_schedule:
        opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.95, nesterov=True,
                              weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    steps_per_epoch = max(1, len(tr) // cfg.batch)
    total_steps = steps_per_epoch * cfg.epochs
    budget = None if cfg.minutes is None else 60.0 * cfg.minutes
    cpu_budget = cfg.cpu_seconds
    ck = run.resume(net, opt)
    if not ck and cfg.optimizer_from:
        carry_optimizer(opt, cfg.optimizer_from)
    epoch, step_in_epoch, step, elapsed = (ck.get("epoch", 0), ck.get("step_in_epoch", 0), ck.get("step", 0),
                                           ck.get("elapsed", 0.0))
    legal_va, mates, legal_se = legal_moves_of(ds, va, variant), mate_in_one_set(ds, va, variant), legal_moves_of(ds, se, variant)
    no_mates: tuple[np.ndarray, list[set[int]], list[list[int]]] = (np.zeros(0, dtype=np.int64), [], [])
    last: dict[str, float] = dict(run.best_metrics)
    t0 = time.monotonic() - elapsed
    cpu0 = time.process_time() - float(ck.get("cpu", 0.0))
    done = False
    bar = tqdm(total=total_steps, initial=step, desc=f"train {cfg.model} ({device.type})", unit="batch",
               disable=not progress)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.bf16 else contextlib.nullcontext()

    def save() -> None:
        run.save(net, opt, epoch=epoch, step_in_epoch=step_in_epoch, step=step, elapsed=time.monotonic() - t0,
                 cpu=time.process_time() - cpu0)

    try:
        while epoch < cfg.epochs and not done:
            perm = np.random.default_rng(cfg.seed * 1000 + epoch).permutation(tr)
            net.train()
            run_loss, n_loss, n_pos, e0 = 0.0, 0, 0, time.monotonic()
            for b, raw_b, moves_b, flip, x in _batches(cfg, task, ds, perm, step_in_epoch, steps_per_epoch,
                                                  step - step_in_epoch, prefetch=device.type == "cuda"):
                elapsed = time.monotonic() - t0
                prog = step / total_steps if budget is None else max(step / total_steps, elapsed / budget)
                if cpu_budget is not None:
                    prog = max(prog, (time.process_time() - cpu0) / cpu_budget)
                if prog >= 1.0:
                    done = True
                    break
                if one_cycle_schedule:
                    lr, mom = one_cycle(prog, cfg.lr)
                    for g in opt.param_groups:
                        g["lr"], g["momentum"] = lr, mom
                x = task.to_device(x)
                with autocast:
                    v, p = net(x.contiguous(memory_format=torch.channels_last) if cfg.bf16 else x)
                loss, _ = task.loss_of(v.float(), p.float(), ds, b, raw_b, moves_b, flip)
                if not math.isfinite(float(loss.detach())):
                    raise TrainError(f"training diverged at step {step + 1}: the loss is {float(loss.detach())} "
                                     f"(lr {cfg.lr:g}: try a smaller --lr); model.pt not written")
                opt.zero_grad(set_to_none=True)
                loss.backward()  # type: ignore[no-untyped-call]
                opt.step()
                run_loss += float(loss.detach())
                n_loss += 1
                n_pos += len(b)
                step += 1
                step_in_epoch += 1
                bar.update(1)
                bar.set_postfix(loss=f"{run_loss / n_loss:.3f}", epoch=epoch)
                if run.due():
                    save()
            elapsed = time.monotonic() - t0
            rate = n_pos / max(1e-9, time.monotonic() - e0)
            last = task.metrics(net, ds, va, legal_va, mates)
            sel = task.metrics(net, ds, se, legal_se, no_mates)
            run.consider(sel["val_policy_acc"] if cfg.select == "policy" else -sel["val_value_loss"], epoch + 1, net,
                         {**last, "sel_policy_acc": sel["val_policy_acc"], "sel_value_loss": sel["val_value_loss"]})
            row = {"epoch": epoch + 1, "step": step, "elapsed_s": round(elapsed, 1),
                   "positions_per_s": round(rate, 1), "train_loss": round(run_loss / max(1, n_loss), 5),
                   "sel_policy_acc": round(sel["val_policy_acc"], 5),
                   "sel_value_sign_acc": round(sel["val_value_sign_acc"], 5),
                   "sel_value_loss": round(sel["val_value_loss"], 5),
                   **{k: round(v, 5) for k, v in last.items()}}
            run.write_row(row)
            if progress:  # the epoch line belongs with the bar: quiet runs keep metrics.csv only
                bar.write(" ".join(f"{k}={v}" for k, v in row.items()))
            if not done:
                epoch += 1
                step_in_epoch = 0
            save()
            if run.patience_over(epoch):
                break
    except KeyboardInterrupt:
        save()
        raise
    finally:
        bar.close()
    last = run.best_metrics or last
    meta = {"train_positions": int(len(tr)), "val_positions": int(len(va)), "sel_positions": int(len(se)),
            "games": int(len(ds.game_uid)), "positions": int(len(ds)), "variant": variant,
            "size": cfg.size if cfg.init is None else f"that of {cfg.init}",
            "steps": step, "training_seconds": round(time.monotonic() - t0, 1), "device": str(device),
            "selection": cfg.select, **{k: float(v) for k, v in last.items()}}
    return run.finish(cfg.model, net, meta)


def classical_metrics(ds: DataSet, idx: np.ndarray, legal: list[list[int]]) -> dict[str, float]:
    """The classical evaluator as a reference on the same positions: value sign = the sign of its
    side-to-move score, policy top-1 = its highest move score (the priors it gives MCTS)."""
    zh = variant_of(ds.variant).pockets
    z = side_result(ds, idx)
    correct = sign_ok = decisive = 0
    for k, i in enumerate(idx):
        pos = board.new_position(ds.variant, enc.raw_to_fen(ds.raw[i], ds.variant))
        if z[k] != 0:
            decisive += 1
            sign_ok += int((classical.stm_score(pos) > 0) == (z[k] > 0))
        ms = classical.move_scores(pos.raw_state(), legal[k], zh)
        correct += int(legal[k][int(np.argmax(ms))] == int(ds.move[i]))
    return {"val_policy_acc": correct / max(1, len(idx)), "val_value_sign_acc": sign_ok / max(1, decisive),
            "val_positions": float(len(idx))}


def heldout(weights: list[str], data: list[str], val_fraction: float = 0.1, select_fraction: float = 0.05,
            seed: int = 0, threads: int = 1, classical: bool = False, inference: str | None = None) -> list[dict[str, Any]]:
    """The validation metrics of saved rise/sixtyfour models on one held-out set: the validation games
    of ``data`` exactly as ``train`` splits them with the same fractions and seed (by game uid, so a
    model trained on other data never saw them). Compares a new network with a shipped one fairly.
    Returns one row per weights file: its path, family and :meth:`PolicyValueTask.metrics`; with
    ``classical`` first a row for the classical evaluator (:func:`classical_metrics`).  ``inference``
    (an evaluator inference mode; None: eager torch) runs each network as an engine would, so
    ``onnxruntime-int8`` shows what quantisation costs."""
    torch.set_num_threads(max(1, threads))
    ds = datagen.load_dataset(data)
    cfg = TrainConfig(model="rise", data=data, out="", val_fraction=val_fraction, select_fraction=select_fraction,
                      seed=seed).resolved()
    _, va, _ = split(ds, cfg)
    legal_va, mates = legal_moves_of(ds, va, ds.variant), mate_in_one_set(ds, va, ds.variant)
    rows: list[dict[str, Any]] = []
    if classical:
        rows.append({"weights": "classical", "family": "classical", **classical_metrics(ds, va, legal_va)})
    for path in weights:
        net = family = None
        for fam in policy_value_families():
            try:
                net, d = nets.load_model(weights_path(path), fam)
                family = fam
                break
            except ValueError as e:
                err = str(e)
        if net is None or family is None:
            raise ValueError(err)
        if d["config"].get("variant", ds.variant) != ds.variant:
            raise ValueError(f"{path} is a {d['config'].get('variant')} network; the data are {ds.variant}")
        net = net.float()
        if inference is not None:
            net = _EngineForward(family, path, ds.variant, threads, inference)
        task = PolicyValueTask(family, ds.variant, 1.0)
        with torch.inference_mode():
            rows.append({"weights": path, "family": family, **({"inference": inference} if inference else {}),
                         **task.metrics(net, ds, va, legal_va, mates)})
    return rows


class _EngineForward(nn.Module):
    """A network run through its evaluator's inference mode, as (value, policy logits) like the module."""

    def __init__(self, family: str, path: str, variant: str, threads: int, inference: str) -> None:
        super().__init__()
        self.ev = registry.load_evaluator(family, path, threads, "eager", device="cpu", variant=variant)
        if inference in INT8_MODES:
            self.f = self.ev.int8_session(tuned=inference == INT8_MODES[1])  # type: ignore[attr-defined]
        else:
            self.ev.set_inference(inference)  # type: ignore[attr-defined]
            self.f = self.ev.forward  # type: ignore[attr-defined]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.f(x)
        return out[0], out[1]
