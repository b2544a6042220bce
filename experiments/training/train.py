"""``searchbench train MODEL``: the papers' training recipes on data shards (experiments/datagen.py).

Recipes (SPEC.md section 3; every number is a default that the command line can change):

rise (CrazyAra)
    SGD with Nesterov momentum, weight decay 1e-4, one-cycle schedule: the learning rate rises
    linearly from lr/25 to ``lr`` over the first 30% and anneals (cosine) to 1e-5, momentum moves
    0.95 -> 0.85 -> 0.95 against it; loss ``value_weight * (z - v)^2 - log p(played move)`` with
    value_weight 0.01, z the game result for the side to move.  The paper used lr 0.35 at batch
    1024; our default batch is 256 and lr 0.1 (the learning rate scaled down with the batch).
sixtyfour
    Adam lr 0.001, 8 epochs; Poisson NLL between the policy (log-probabilities) and the
    outcome-scaled one-hot target (winner's move 1, draw 0.5, loser's 0.1) plus MSE between
    (v + 1) / 2 and the 1 / 0.5 / 0 value target (value_weight 1).
deepchess
    Positions: up to 10 random positions per decisive game (``positions_per_game``; validation
    always samples 10), skipping the first 5 moves and positions whose played move is a capture.  Pos2Vec pretrained layer by layer as a stacked
    autoencoder (SGD momentum 0.9, lr 0.005 x 0.98 per epoch, ``ae_epochs`` per layer), then the
    siamese comparator on fresh random (White-won, Black-won) pairs every epoch in both orders,
    cross-entropy, lr 0.01 x 0.99 per epoch (SGD momentum 0.9, ``weight_decay``; ``optimizer="adam"``:
    Adam as the reimplementation report in the seeds, which used lr 0.0005), optional
    ``dropout`` in the comparator head and ``input_dropout`` on the input bits (training only),
    ``antisymmetric`` comparator (evaluators/nets.py).  Extension: ``score_weight`` blends the
    outcome label with the engine's score ordering of the pair (:func:`pair_target`); 0 = the paper.

The split is by game: validation games (``datagen.is_validation``, ``val_fraction``) are only
reported on; selection games (``datagen.is_selection``, ``select_fraction``, disjoint) pick the best
epoch (policy accuracy for rise/sixtyfour, pair accuracy for DeepChess), which is what ``model.pt``
holds (``meta["best_epoch"]``); ``patience`` stops early after that many epochs without a better
selection score.  ``bf16`` runs the training forward pass of rise/sixtyfour under bfloat16 autocast
with channels-last tensors (about twice the CPU speed; the weights and metrics stay float32).
``mirror`` (rise/sixtyfour, our extension, off by default) mirrors half of the training positions
that have no castling rights left from the a-file to the h-file (:func:`mirror_files`): without
castling the rules of chess and crazyhouse are symmetric under that mirror, so a mirrored position
with its mirrored move is as good a sample as the original (AlphaZero used no augmentation for
chess because of castling; positions with castling rights are left as they are).  A time budget (``minutes``) shortens the
schedule: the one-cycle progress is ``max(step / total_steps, elapsed / budget)``, so the schedule
completes when the budget runs out.  ``out/checkpoint.pt`` is written every epoch and every few
minutes (model, optimizer, epoch, step in epoch, elapsed time) and a rerun resumes from it;
``out/metrics.csv`` gets one row per epoch; ``out/model.pt`` is the best-epoch model with its metadata
(the validation metrics of that epoch).

Metrics: policy accuracy (top-1 among the legal moves = the played move), value sign accuracy
(sign of v = sign of z on decisive games), comparator pair accuracy (DeepChess), and mate-in-one
accuracy top-1/top-5 on the validation positions whose played move mates (a top-k move that mates
counts; mates are checked with the rules core).
"""
from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import board
from board.position import RAW_CASTLING, RAW_EP, RAW_PROMOTED, RAW_TURN
from evaluators import encodings as enc
from evaluators import nets
from experiments.training import datagen
from experiments.training.datagen import DataSet

SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "rise": {
        "tiny": dict(channels=16, blocks=1, expansion_base=16, expansion_step=8, se_blocks=1, value_hidden=16),
        "small": dict(channels=64, blocks=5, expansion_base=64, expansion_step=32, se_blocks=2, value_hidden=128),
        "medium": dict(channels=128, blocks=7, expansion_base=128, expansion_step=64, se_blocks=3, value_hidden=256),
        "paper": dict(),
        "resnet-small": dict(channels=64, blocks=6, value_hidden=128, arch="resnet"),
    },
    "sixtyfour": {
        "tiny": dict(channels=16, blocks=1, value_hidden=16),
        "small": dict(channels=64, blocks=4, value_hidden=64),
        "medium": dict(channels=128, blocks=8, value_hidden=128),
        "paper": dict(),
    },
    "deepchess": {
        "tiny": dict(pos2vec=[32, 16], comparator=[16]),
        "small": dict(pos2vec=[100, 100, 100], comparator=[100, 100]),  # the paper's distilled size
        "paper": dict(),
    },
}

DEFAULTS: dict[str, dict[str, float]] = {
    "rise": dict(epochs=7, batch=256, lr=0.1, value_weight=0.01),
    "sixtyfour": dict(epochs=8, batch=256, lr=0.001, value_weight=1.0),
    "deepchess": dict(epochs=100, batch=256, lr=0.01, value_weight=0.0, ae_epochs=10),
}
MAX_VALIDATION = 20000
MAX_SELECTION = 5000
CHECKPOINT_SECONDS = 120.0


class TrainError(ValueError):
    """Bad training input (unknown model or size, unusable data, corrupt checkpoint)."""


@dataclass
class TrainConfig:
    model: str
    data: list[str]
    out: str
    size: str = "small"
    epochs: int | None = None
    batch: int | None = None
    lr: float | None = None
    val_fraction: float = 0.1
    value_weight: float | None = None
    threads: int = 1
    seed: int = 0
    minutes: float | None = None
    max_positions: int | None = None
    resume: bool = True
    ae_epochs: int | None = None
    weight_decay: float = 1e-4  # RISE's SGD (CrazyAra) and DeepChess's comparator SGD; SixtyFour's Adam uses none
    half: bool = False  # save model.pt with float16 tensors (shipped weights)
    positions_per_game: int = 10  # DeepChess training sampling (validation always uses the paper's 10)
    select_fraction: float = 0.05  # share of games held out (besides validation) to pick the best epoch
    dropout: float = 0.0  # DeepChess comparator dropout (training only)
    input_dropout: float = 0.0  # DeepChess input-bit dropout (training only)
    antisymmetric: bool = False  # DeepChess: P(a > b) = 1 - P(b > a) by construction
    score_weight: float = 0.0  # DeepChess: share of the engine-score ordering in the pair target
    optimizer: str = "sgd"  # DeepChess comparator: "sgd" (momentum 0.9, the paper) or "adam" (the seeds' report)
    patience: int | None = None  # stop after this many epochs without a better selection score
    bf16: bool = False  # rise/sixtyfour: bfloat16 autocast for the training forward pass (CPU speed)
    mirror: bool = False  # rise/sixtyfour: mirror half of the castling-free training positions (a <-> h file)
    extra: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> "TrainConfig":
        if self.model not in SIZES:
            raise TrainError(f"unknown model {self.model!r}; known: {', '.join(SIZES)}")
        if self.size not in SIZES[self.model]:
            raise TrainError(f"unknown size {self.size!r} for {self.model}; known: {', '.join(SIZES[self.model])}")
        if not 0.0 < self.val_fraction < 1.0:
            raise TrainError("--val-fraction must be in (0, 1)")
        if not 0.0 < self.select_fraction < 1.0 - self.val_fraction:
            raise TrainError("--select-fraction must be in (0, 1 - val_fraction)")
        if not (0.0 <= self.dropout < 1.0 and 0.0 <= self.input_dropout < 1.0):
            raise TrainError("--dropout and --input-dropout must be in [0, 1)")
        if self.optimizer not in ("sgd", "adam"):
            raise TrainError(f"unknown optimizer {self.optimizer!r}; known: sgd, adam")
        if not 0.0 <= self.score_weight <= 1.0:
            raise TrainError("--score-weight must be in [0, 1]")
        d = DEFAULTS[self.model]
        c = TrainConfig(**{**asdict(self)})
        c.epochs = int(d["epochs"]) if self.epochs is None else self.epochs
        c.batch = int(d["batch"]) if self.batch is None else self.batch
        c.lr = float(d["lr"]) if self.lr is None else self.lr
        c.value_weight = float(d["value_weight"]) if self.value_weight is None else self.value_weight
        c.ae_epochs = int(d.get("ae_epochs", 0)) if self.ae_epochs is None else self.ae_epochs
        if c.epochs < 1 or c.batch < 1 or c.lr <= 0:
            raise TrainError("epochs, batch and lr must be positive")
        return c


# --------------------------------------------------------------------------- data helpers

def side_result(ds: DataSet, idx: np.ndarray) -> np.ndarray:
    """Game result for the side to move at positions idx: +1 win, 0 draw, -1 loss."""
    z = ds.result[idx].astype(np.int64)
    out: np.ndarray = np.where(ds.raw[idx, RAW_TURN] == 0, z, -z)
    return out


def is_capture(raw: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """Whether each move captures (to-square holds an opponent piece, or en passant)."""
    to = (moves.astype(np.int64) >> 6) & 63
    drop = moves.astype(np.int64) >> 15
    them = np.where(raw[:, RAW_TURN] == 0, raw[:, 1], raw[:, 0])
    occupied = ((them >> to) & 1) != 0
    frm = moves.astype(np.int64) & 63
    pawn_from = ((raw[:, 2] >> frm) & 1) != 0
    ep = (raw[:, RAW_EP] == to) & pawn_from
    out: np.ndarray = (occupied | ep) & (drop == 0)
    return out


def mate_in_one_set(ds: DataSet, idx: np.ndarray, variant: str) -> tuple[np.ndarray, list[set[int]], list[list[int]]]:
    """Positions among idx whose played move mates: (indices, mating moves, legal moves)."""
    moves = ds.move[idx]
    z = side_result(ds, idx)
    cand = idx[z == 1]
    # a mating move ends the game: it is the last position of its game
    last = np.ones(len(ds), dtype=bool)
    last[:-1] = ds.game[1:] != ds.game[:-1]
    cand = cand[last[cand]]
    out_idx: list[int] = []
    mates: list[set[int]] = []
    legal: list[list[int]] = []
    for i in cand:
        pos = board.new_position(variant, enc.raw_to_fen(ds.raw[i], variant))
        lm = pos.legal_moves()
        mating = set()
        for m in lm:
            pos.push(m)
            if not pos.has_legal_moves() and pos.is_check():
                mating.add(m)
            pos.pop()
        if int(ds.move[i]) in mating:
            out_idx.append(int(i))
            mates.append(mating)
            legal.append(lm)
    del moves
    return np.array(out_idx, dtype=np.int64), mates, legal


def legal_moves_of(ds: DataSet, idx: np.ndarray, variant: str) -> list[list[int]]:
    return [board.new_position(variant, enc.raw_to_fen(ds.raw[i], variant)).legal_moves() for i in idx]


# --------------------------------------------------------------------------- schedules

def one_cycle(progress: float, lr_max: float, lr_min: float = 1e-5, warm: float = 0.3,
              mom: tuple[float, float] = (0.95, 0.85)) -> tuple[float, float]:
    """(learning rate, momentum) at ``progress`` in [0, 1] of a one-cycle schedule."""
    p = min(max(progress, 0.0), 1.0)
    if p < warm:
        t = p / warm
        return lr_max / 25 + (lr_max - lr_max / 25) * t, mom[0] + (mom[1] - mom[0]) * t
    t = (p - warm) / (1 - warm)
    c = 0.5 * (1 + math.cos(math.pi * t))
    return lr_min + (lr_max - lr_min) * c, mom[1] + (mom[0] - mom[1]) * (1 - c)


# --------------------------------------------------------------------------- policy-value training

# Each byte of a bitboard is one rank, bit k of it file k: reversing the bits of every byte mirrors
# the board from the a-file to the h-file.
_BYTE_REVERSED = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)


def mirror_files(raw: np.ndarray, moves: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``raw`` (Position.raw_state rows) and ``moves`` with the rows where ``which`` is
    true mirrored a-file <-> h-file: the bitboards (colours, pieces, promoted) bit-reversed per
    rank, the en-passant square and the move's squares ``sq ^ 7``.  Only for positions without
    castling rights (a mirrored castling right does not exist); pockets, turn and counters stay."""
    raw = raw.copy()
    moves = moves.copy()
    rows = np.flatnonzero(which)
    if len(rows) == 0:
        return raw, moves
    if np.any(raw[rows, RAW_CASTLING] != 0):
        raise ValueError("mirror_files: a position with castling rights has no mirror image")
    bbs = np.ascontiguousarray(raw[rows, :RAW_PROMOTED + 1])
    raw[rows, :RAW_PROMOTED + 1] = _BYTE_REVERSED[bbs.view(np.uint8)].view(np.int64).reshape(bbs.shape)
    ep = raw[rows, RAW_EP]
    raw[rows, RAW_EP] = np.where(ep >= 0, ep ^ 7, ep)
    m = moves[rows].astype(np.int64)
    moves[rows] = ((m & ~0xFFF) | ((m & 63) ^ 7) | ((((m >> 6) & 63) ^ 7) << 6)).astype(moves.dtype)
    return raw, moves


class PolicyValueTask:
    """Batches, loss and metrics for rise and sixtyfour."""

    def __init__(self, model: str, variant: str, value_weight: float) -> None:
        self.model = model
        self.variant = variant
        self.value_weight = value_weight

    def inputs(self, ds: DataSet, idx: np.ndarray) -> torch.Tensor:
        return self.encode(ds.raw[idx])

    def encode(self, raw: np.ndarray) -> torch.Tensor:
        x = enc.crazyara_planes(raw, self.variant) if self.model == "rise" else enc.sixtyfour_planes(raw, self.variant)
        return torch.from_numpy(x)

    def move_index(self, raw: np.ndarray, moves: np.ndarray) -> np.ndarray:
        if self.model == "rise":
            return enc.crazyara_policy_indices(moves, raw[:, RAW_TURN] == 1)
        return enc.sixtyfour_move_indices(moves)

    def loss_of(self, v: torch.Tensor, p: torch.Tensor, ds: DataSet, idx: np.ndarray,
                raw: np.ndarray | None = None, moves: np.ndarray | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """The loss of positions idx (``raw``/``moves``: their rows as given to the net, if changed)."""
        raw = ds.raw[idx] if raw is None else raw
        moves = ds.move[idx] if moves is None else moves
        t = torch.from_numpy(self.move_index(raw, moves).astype(np.int64))
        z = torch.from_numpy(side_result(ds, idx).astype(np.float32))
        if self.model == "rise":
            lp = F.cross_entropy(p, t)
            lv = F.mse_loss(v, z)
        else:
            scale = torch.tensor([enc.SIXTYFOUR_POLICY_SCALE[int(r)] for r in z.tolist()], dtype=torch.float32)
            # Poisson NLL with log-rate p: sum_j exp(p_j) - target_j * p_j, target = scale * onehot
            lp = (p.exp().sum(dim=1) - scale * p.gather(1, t[:, None]).squeeze(1)).mean()
            lv = F.mse_loss((v + 1) / 2, (z + 1) / 2)
        loss = lp + self.value_weight * lv
        return loss, {"policy_loss": float(lp.detach()), "value_loss": float(lv.detach())}

    @torch.inference_mode()
    def metrics(self, net: nn.Module, ds: DataSet, idx: np.ndarray, legal: list[list[int]],
                mates: tuple[np.ndarray, list[set[int]], list[list[int]]], batch: int) -> dict[str, float]:
        net.eval()
        correct = 0
        sign_ok = 0
        decisive = 0
        lp_sum = 0.0
        lv_sum = 0.0
        for s in range(0, len(idx), batch):
            b = idx[s:s + batch]
            v, p = net(self.inputs(ds, b))
            loss, parts = self.loss_of(v, p, ds, b)
            lp_sum += parts["policy_loss"] * len(b)
            lv_sum += parts["value_loss"] * len(b)
            z = side_result(ds, b)
            dec = z != 0
            decisive += int(dec.sum())
            sign_ok += int(((v.numpy() > 0) == (z > 0))[dec].sum())
            top = self._ranked(p.numpy(), ds.raw[b], legal[s:s + batch], 1)
            correct += sum(int(t[0] == int(m)) for t, m in zip(top, ds.move[b]))
        m_idx, m_sets, m_legal = mates
        top1 = top5 = 0
        for s in range(0, len(m_idx), batch):
            b = m_idx[s:s + batch]
            _, p = net(self.inputs(ds, b))
            ranked = self._ranked(p.numpy(), ds.raw[b], m_legal[s:s + batch], 5)
            for r, ms in zip(ranked, m_sets[s:s + batch]):
                top1 += int(r[0] in ms)
                top5 += int(any(m in ms for m in r))
        n = max(1, len(idx))
        return {"val_policy_acc": correct / n, "val_value_sign_acc": sign_ok / max(1, decisive),
                "val_policy_loss": lp_sum / n, "val_value_loss": lv_sum / n,
                "mate1_top1": top1 / max(1, len(m_idx)), "mate1_top5": top5 / max(1, len(m_idx)),
                "mate1_positions": float(len(m_idx)), "val_positions": float(n)}

    def _ranked(self, logits: np.ndarray, raw: np.ndarray, legal: list[list[int]], k: int) -> list[list[int]]:
        out = []
        for row, r, lm in zip(logits, raw, legal):
            mv = np.array(lm, dtype=np.int64)
            ix = self.move_index(np.repeat(r[None, :], len(mv), axis=0), mv)
            order = np.argsort(-row[ix], kind="stable")[:k]
            out.append([int(mv[o]) for o in order])
        return out


# --------------------------------------------------------------------------- main loop

def _write_metrics(path: str, row: dict[str, Any]) -> None:
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def _split(ds: DataSet, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position indices (training, validation, selection), split by game: validation games are
    only reported on, selection games only pick the best epoch, training uses neither."""
    val_game = datagen.is_validation(ds.game_uid, cfg.val_fraction)
    sel_game = datagen.is_selection(ds.game_uid, cfg.val_fraction, cfg.select_fraction)
    val_pos = val_game[ds.game]
    sel_pos = sel_game[ds.game]
    tr = np.flatnonzero(~val_pos & ~sel_pos)
    va = np.flatnonzero(val_pos)
    se = np.flatnonzero(sel_pos)
    if len(tr) == 0 or len(va) == 0 or len(se) == 0:
        raise TrainError(f"the split left {len(tr)} training, {len(va)} validation and {len(se)} selection "
                         "positions; need more games or other --val-fraction/--select-fraction")
    rng = np.random.default_rng(cfg.seed)
    if cfg.max_positions is not None and len(tr) > cfg.max_positions:
        tr = np.sort(rng.choice(tr, cfg.max_positions, replace=False))
    if len(va) > MAX_VALIDATION:
        va = np.sort(rng.choice(va, MAX_VALIDATION, replace=False))
    if len(se) > MAX_SELECTION:
        se = np.sort(rng.choice(se, MAX_SELECTION, replace=False))
    return tr, va, se


def _load_checkpoint(path: str) -> dict[str, Any]:
    try:
        ck: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
        return ck
    except Exception as e:
        raise TrainError(f"cannot read checkpoint {path}: {type(e).__name__}") from None


def train(cfg: TrainConfig, progress: bool = True) -> dict[str, Any]:
    """Train ``cfg.model`` and write ``cfg.out``/{checkpoint.pt, metrics.csv, model.pt}."""
    cfg = cfg.resolved()
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    ds = datagen.load_dataset(cfg.data)
    os.makedirs(cfg.out, exist_ok=True)
    if cfg.model == "deepchess":
        return _train_deepchess(cfg, ds, progress)
    return _train_policy_value(cfg, ds, progress)


def _train_policy_value(cfg: TrainConfig, ds: DataSet, progress: bool) -> dict[str, Any]:
    from tqdm import tqdm

    assert cfg.epochs is not None and cfg.batch is not None and cfg.lr is not None and cfg.value_weight is not None
    variant = ds.variant
    net = nets.build(cfg.model, {**SIZES[cfg.model][cfg.size], "variant": variant})
    task = PolicyValueTask(cfg.model, variant, cfg.value_weight)
    tr, va, se = _split(ds, cfg)
    if cfg.bf16:
        net = net.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    if cfg.model == "rise":
        opt: torch.optim.Optimizer = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.95, nesterov=True,
                                                     weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    steps_per_epoch = max(1, len(tr) // cfg.batch)
    total_steps = steps_per_epoch * cfg.epochs
    budget = None if cfg.minutes is None else 60.0 * cfg.minutes
    ck_path = os.path.join(cfg.out, "checkpoint.pt")
    metrics_path = os.path.join(cfg.out, "metrics.csv")
    epoch, step_in_epoch, step, elapsed = 0, 0, 0, 0.0
    # the best epoch by policy accuracy on the selection games (validation games are only reported)
    best_score, best_epoch = -1.0, 0
    best_state: dict[str, torch.Tensor] = {}
    best_metrics: dict[str, float] = {}
    if cfg.resume and os.path.exists(ck_path):
        ck = _load_checkpoint(ck_path)
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        epoch, step_in_epoch, step, elapsed = ck["epoch"], ck["step_in_epoch"], ck["step"], ck["elapsed"]
        best_score, best_epoch = ck.get("best_score", -1.0), ck.get("best_epoch", 0)
        best_state, best_metrics = ck.get("best_state", {}), ck.get("best_metrics", {})
    elif os.path.exists(metrics_path):
        os.remove(metrics_path)
    legal_va = legal_moves_of(ds, va, variant)
    mates = mate_in_one_set(ds, va, variant)
    legal_se = legal_moves_of(ds, se, variant)
    no_mates: tuple[np.ndarray, list[set[int]], list[list[int]]] = (np.zeros(0, dtype=np.int64), [], [])
    last: dict[str, float] = {}

    def save_ck() -> None:
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch,
                    "step_in_epoch": step_in_epoch, "step": step, "elapsed": elapsed,
                    "best_score": best_score, "best_epoch": best_epoch, "best_state": best_state,
                    "best_metrics": best_metrics}, ck_path + ".tmp")
        os.replace(ck_path + ".tmp", ck_path)

    t0 = time.monotonic() - elapsed
    last_ck = time.monotonic()
    done = False
    bar = tqdm(total=total_steps, initial=step, desc=f"train {cfg.model}", unit="batch", disable=not progress)
    try:
        while epoch < cfg.epochs and not done:
            perm = np.random.default_rng(cfg.seed * 1000 + epoch).permutation(tr)
            net.train()
            run_loss = 0.0
            n_loss = 0
            while step_in_epoch < steps_per_epoch:
                elapsed = time.monotonic() - t0
                prog = step / total_steps if budget is None else max(step / total_steps, elapsed / budget)
                if prog >= 1.0:
                    done = True
                    break
                if cfg.model == "rise":
                    lr, mom = one_cycle(prog, cfg.lr)
                    for g in opt.param_groups:
                        g["lr"], g["momentum"] = lr, mom
                b = np.sort(perm[step_in_epoch * cfg.batch:(step_in_epoch + 1) * cfg.batch])
                raw_b, moves_b = ds.raw[b], ds.move[b]
                if cfg.mirror:
                    coin = np.random.default_rng([cfg.seed, step]).random(len(b)) < 0.5
                    raw_b, moves_b = mirror_files(raw_b, moves_b, coin & (raw_b[:, RAW_CASTLING] == 0))
                if cfg.bf16:
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        v, p = net(task.encode(raw_b).contiguous(memory_format=torch.channels_last))
                    v, p = v.float(), p.float()
                else:
                    v, p = net(task.encode(raw_b))
                loss, parts = task.loss_of(v, p, ds, b, raw_b, moves_b)
                opt.zero_grad(set_to_none=True)
                loss.backward()  # type: ignore[no-untyped-call]
                opt.step()
                run_loss += float(loss.detach())
                n_loss += 1
                step += 1
                step_in_epoch += 1
                bar.update(1)
                bar.set_postfix(loss=f"{run_loss / n_loss:.3f}", epoch=epoch)
                if time.monotonic() - last_ck > CHECKPOINT_SECONDS:
                    save_ck()
                    last_ck = time.monotonic()
            elapsed = time.monotonic() - t0
            last = task.metrics(net, ds, va, legal_va, mates, 512)
            sel = task.metrics(net, ds, se, legal_se, no_mates, 512)
            if sel["val_policy_acc"] > best_score:
                best_score, best_epoch, best_metrics = sel["val_policy_acc"], epoch + 1, dict(last)
                best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            row = {"epoch": epoch + 1, "step": step, "elapsed_s": round(elapsed, 1),
                   "train_loss": round(run_loss / max(1, n_loss), 5),
                   "sel_policy_acc": round(sel["val_policy_acc"], 5),
                   "sel_value_sign_acc": round(sel["val_value_sign_acc"], 5),
                   **{k: round(v, 5) for k, v in last.items()}}
            _write_metrics(metrics_path, row)
            bar.write(" ".join(f"{k}={v}" for k, v in row.items()))
            if not done:
                epoch += 1
                step_in_epoch = 0
            save_ck()
            if cfg.patience is not None and epoch - best_epoch >= cfg.patience:
                break  # early stopping: no better selection policy accuracy for `patience` epochs
    except KeyboardInterrupt:
        elapsed = time.monotonic() - t0
        save_ck()
        raise
    finally:
        bar.close()
    if best_state:  # the shipped model is the best epoch on the selection games
        net.load_state_dict(best_state)
        last = best_metrics
    net = net.to(memory_format=torch.contiguous_format)  # type: ignore[call-overload]
    meta = {"train_positions": int(len(tr)), "val_positions": int(len(va)), "sel_positions": int(len(se)),
            "games": int(len(ds.game_uid)), "positions": int(len(ds)),
            "variant": variant, "size": cfg.size, "steps": step, "training_seconds": round(elapsed, 1),
            "best_epoch": best_epoch, "sel_policy_acc": float(best_score),
            "recipe": {k: v for k, v in asdict(cfg).items() if k not in ("data", "out", "extra")},
            "data": list(cfg.data), **{k: float(v) for k, v in last.items()}}
    nets.save_model(os.path.join(cfg.out, "model.pt"), cfg.model, net, meta, half=cfg.half)
    return meta


# --------------------------------------------------------------------------- DeepChess

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
    with torch.inference_mode():
        net.eval()
        feats = net.features(torch.from_numpy(x))
        logits = net.compare_features(feats[f], feats[s])
    return float((logits.argmax(dim=1).numpy() == y).mean())


def _train_deepchess(cfg: TrainConfig, ds: DataSet, progress: bool) -> dict[str, Any]:
    from tqdm import tqdm

    assert cfg.epochs is not None and cfg.batch is not None and cfg.lr is not None and cfg.ae_epochs is not None
    variant = ds.variant
    net = nets.build("deepchess", {**SIZES["deepchess"][cfg.size], "variant": variant, "dropout": cfg.dropout,
                                     "input_dropout": cfg.input_dropout, "antisymmetric": cfg.antisymmetric})
    assert isinstance(net, nets.DeepChessNet)
    rng = np.random.default_rng(cfg.seed)
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
    x_tr = enc.deepchess_bits(ds.raw[tr_pos], variant)
    x_va = enc.deepchess_bits(ds.raw[va_pos], variant)
    x_se = enc.deepchess_bits(ds.raw[se_pos], variant)
    tw, tb = np.flatnonzero(tr_res == 1), np.flatnonzero(tr_res == -1)
    tr_score = white_scores(ds, tr_pos) if cfg.score_weight > 0 else np.zeros(len(tr_pos))
    vw, vb = np.flatnonzero(va_res == 1), np.flatnonzero(va_res == -1)
    sw, sb = np.flatnonzero(se_res == 1), np.flatnonzero(se_res == -1)
    budget = None if cfg.minutes is None else 60.0 * cfg.minutes
    ck_path = os.path.join(cfg.out, "checkpoint.pt")
    metrics_path = os.path.join(cfg.out, "metrics.csv")
    n_layers = len(net.pos2vec.layers)
    phase, epoch, elapsed = 0, 0, 0.0  # phase i < n_layers: autoencoder layer i; n_layers: comparator
    # the best comparator epoch by pair accuracy on the selection games (validation is only reported)
    best_score, best_epoch = -1.0, 0
    best_state: dict[str, torch.Tensor] = {}
    if cfg.resume and os.path.exists(ck_path):
        ck = _load_checkpoint(ck_path)
        net.load_state_dict(ck["model"])
        phase, epoch, elapsed = ck["phase"], ck["epoch"], ck["elapsed"]
        best_score, best_epoch, best_state = ck.get("best_score", -1.0), ck.get("best_epoch", 0), ck.get("best_state", {})
    elif os.path.exists(metrics_path):
        os.remove(metrics_path)
    t0 = time.monotonic() - elapsed
    # time shares: the autoencoder gets 30% of a time budget, the comparator the rest
    ae_budget = None if budget is None else 0.3 * budget / n_layers
    xt = torch.from_numpy(x_tr)
    last_acc = 0.0
    total = n_layers * cfg.ae_epochs + cfg.epochs
    bar = tqdm(total=total, initial=min(phase, n_layers) * cfg.ae_epochs + (epoch if phase == n_layers else 0),
               desc="train deepchess", unit="epoch", disable=not progress)

    def save_ck() -> None:
        torch.save({"model": net.state_dict(), "phase": phase, "epoch": epoch, "elapsed": elapsed,
                    "best_score": best_score, "best_epoch": best_epoch, "best_state": best_state}, ck_path + ".tmp")
        os.replace(ck_path + ".tmp", ck_path)

    try:
        while phase < n_layers:
            enc_layer, dec = net.pos2vec.autoencoder_layer(phase)
            opt = torch.optim.SGD(list(enc_layer.parameters()) + list(dec.parameters()), lr=0.005, momentum=0.9)
            phase_start = time.monotonic()
            with torch.no_grad():
                h_all = net.pos2vec(xt, upto=phase)
            for e in range(epoch, cfg.ae_epochs):
                for g in opt.param_groups:
                    g["lr"] = 0.005 * 0.98 ** e
                perm = torch.from_numpy(rng.permutation(len(h_all)))
                tot = 0.0
                for s in range(0, len(perm), cfg.batch):
                    h = h_all[perm[s:s + cfg.batch]]
                    rec = dec(torch.relu(enc_layer(h)))
                    loss = F.binary_cross_entropy_with_logits(rec, h) if phase == 0 else F.mse_loss(rec, h)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()  # type: ignore[no-untyped-call]
                    opt.step()
                    tot += float(loss.detach()) * len(h)
                epoch = e + 1
                elapsed = time.monotonic() - t0
                _write_metrics(metrics_path, {"phase": f"ae{phase}", "epoch": epoch, "elapsed_s": round(elapsed, 1),
                                              "train_loss": round(tot / len(perm), 5), "sel_pair_acc": "",
                                              "val_pair_acc": "", "train_pair_acc": ""})
                bar.update(1)
                if ae_budget is not None and time.monotonic() - phase_start > ae_budget:
                    break
            bar.update(cfg.ae_epochs - epoch)
            phase += 1
            epoch = 0
            save_ck()
        copt: torch.optim.Optimizer
        if cfg.optimizer == "adam":  # the reimplementation report in the seeds: Adam, lr 0.0005
            copt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        else:
            copt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay)
        pairs_per_epoch = max(cfg.batch, min(200000, 2 * len(tr_pos)))
        while epoch < cfg.epochs:
            if budget is not None and time.monotonic() - t0 > budget:
                break
            if cfg.patience is not None and best_epoch > 0 and epoch - best_epoch >= cfg.patience:
                break  # early stopping: no better selection pair accuracy for `patience` epochs
            for g in copt.param_groups:
                g["lr"] = cfg.lr * 0.99 ** epoch
            net.train()
            f, s2, y = _pairs(tw, tb, pairs_per_epoch, rng)
            target = torch.from_numpy(pair_target(y, tr_score[f], tr_score[s2], cfg.score_weight))
            tot = 0.0
            for s in range(0, pairs_per_epoch, cfg.batch):
                logits = net(xt[f[s:s + cfg.batch]], xt[s2[s:s + cfg.batch]])
                t = target[s:s + cfg.batch]
                lsm = F.log_softmax(logits, dim=1)  # soft cross-entropy; = cross_entropy(y) when score_weight 0
                loss = -(t * lsm[:, 0] + (1 - t) * lsm[:, 1]).mean()
                copt.zero_grad(set_to_none=True)
                loss.backward()  # type: ignore[no-untyped-call]
                copt.step()
                tot += float(loss.detach()) * len(logits)
            epoch += 1
            elapsed = time.monotonic() - t0
            sel_acc = pair_accuracy(net, x_se, sw, sb, 20000, cfg.seed + 3)
            last_acc = pair_accuracy(net, x_va, vw, vb, 20000, cfg.seed + 1)
            train_acc = pair_accuracy(net, x_tr, tw, tb, 20000, cfg.seed + 2)
            if sel_acc > best_score:
                best_score, best_epoch = sel_acc, epoch
                best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            _write_metrics(metrics_path, {"phase": "comparator", "epoch": epoch, "elapsed_s": round(elapsed, 1),
                                          "train_loss": round(tot / pairs_per_epoch, 5),
                                          "sel_pair_acc": round(sel_acc, 5),
                                          "val_pair_acc": round(last_acc, 5), "train_pair_acc": round(train_acc, 5)})
            bar.update(1)
            bar.set_postfix(val_pair_acc=f"{last_acc:.3f}")
            save_ck()
    except KeyboardInterrupt:
        elapsed = time.monotonic() - t0
        save_ck()
        raise
    finally:
        bar.close()
    if best_state:  # the shipped model is the best comparator epoch on the selection games
        net.load_state_dict(best_state)
    last_acc = pair_accuracy(net, x_va, vw, vb, 20000, cfg.seed + 1)
    meta = {"train_positions": int(len(tr_pos)), "val_positions": int(len(va_pos)),
            "sel_positions": int(len(se_pos)), "games": int(len(ds.game_uid)), "positions": int(len(ds)),
            "variant": variant, "size": cfg.size, "best_epoch": best_epoch, "sel_pair_acc": float(best_score),
            "training_seconds": round(time.monotonic() - t0, 1), "val_pair_acc": last_acc,
            "recipe": {k: v for k, v in asdict(cfg).items() if k not in ("data", "out", "extra")},
            "data": list(cfg.data)}
    nets.save_model(os.path.join(cfg.out, "model.pt"), "deepchess", net, meta, half=cfg.half)
    return meta
