"""The shared training recipe: the papers' recipes (below), the settings (:class:`TrainConfig`), the data
helpers and the run's bookkeeping (:class:`Run`); the families are registered in
:mod:`evaluators.families`, ``searchbench train`` dispatches in :mod:`experiments.training.train`.

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
epoch (policy accuracy for rise/sixtyfour, or with ``select = "value"`` the lowest value loss; pair
accuracy for DeepChess), which is what ``model.pt``
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

Devices: ``device`` (``auto``: CUDA when there is one) runs the network, its inputs and its targets
on that device; ``bf16`` autocasts the forward pass to bfloat16 there (CPU or GPU); on a GPU the next
batches are encoded on a background thread and copied from pinned memory while the GPU works.
``large_batch`` (rise) is CrazyAra's recipe: batch 1024, lr 0.35, one-cycle.  ``metrics.csv`` has
the training positions per second of every epoch.

Code: this module holds the settings, the data helpers and the run's bookkeeping (:class:`Run`:
checkpoint, metrics, best epoch, ``model.pt``); each family trains in its own module
(:mod:`experiments.training.policy_value` for rise and sixtyfour, through the evaluators' own
encoding hooks, :mod:`experiments.training.deepchess_train`).

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
from torch import nn

import board
from board.position import RAW_CASTLING, RAW_EP, RAW_PROMOTED, RAW_TURN
from evaluators import encodings as enc
from evaluators import nets
from experiments.paths import OutputError, save_atomic
from experiments.training import datagen
from experiments.training.datagen import DataSet
from evaluators.families import FAMILIES

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
    #: rise/sixtyfour: a budget of process CPU seconds (every thread), as ``minutes`` shortens the
    #: schedule on wall time (the self-play loop's control arm: equal CPU, not equal wall seconds)
    cpu_seconds: float | None = None
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
    score_weight: float = 0.0  # DeepChess: share of the engine-score ordering in the pair target; rise/sixtyfour:
    # value target (1 - score_weight) z + score_weight v(score) where a position has an engine score and no root_q
    optimizer: str = "sgd"  # DeepChess comparator: "sgd" (momentum 0.9, the paper) or "adam" (the seeds' report)
    patience: int | None = None  # stop after this many epochs without a better selection score
    #: rise/sixtyfour: what picks the best epoch on the selection games: "policy" (top-1 accuracy) or
    #: "value" (the lowest value loss: a control early-stopped on its value, as a searched player needs)
    select: str = "policy"
    bf16: bool = False  # rise/sixtyfour: bfloat16 autocast for the training forward pass (CPU speed)
    mirror: bool = False  # rise/sixtyfour: mirror half of the castling-free training positions (a <-> h file)
    device: str = "auto"  # auto (CUDA when there is one), cpu, cuda, cuda:N
    large_batch: bool = False  # rise: CrazyAra's large-batch recipe (batch 1024, lr 0.35, one-cycle)
    init: str | None = None  # rise/sixtyfour: start from these weights (their size), e.g. the loop's best network
    q_weight: float = 0.0  # rise/sixtyfour: value target (1 - q_weight) z + q_weight root_q where the data have root_q
    #: rise/sixtyfour: "family" (the family's own: one-cycle SGD or Adam) or "constant" (SGD, Nesterov momentum
    #: 0.9, the learning rate held: continued training, lc0/KataGo's self-play loop)
    schedule: str = "family"
    #: rise/sixtyfour: a checkpoint whose optimizer state a fresh run starts from (the loop's previous round:
    #: one network trained continuously, its momentum kept across rounds)
    optimizer_from: str | None = None
    #: two-board (bughouse, ``searchbench bughouse-train``): SGD momentum (Nesterov), the policy loss's
    #: weight (None: the family's) and the held-out positions scored at most
    momentum: float = 0.9
    policy_weight: float | None = None
    val_max: int = 4000
    extra: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> "TrainConfig":
        if self.model not in FAMILIES:
            raise TrainError(f"unknown model {self.model!r}; known: {', '.join(FAMILIES)}")
        fam = FAMILIES[self.model]
        if self.size not in fam.sizes:
            raise TrainError(f"unknown size {self.size!r} for {self.model}; known: {', '.join(fam.sizes)}")
        if not 0.0 < self.val_fraction < 1.0:
            raise TrainError("--val-fraction must be in (0, 1)")
        if not 0.0 < self.select_fraction < 1.0 - self.val_fraction:
            raise TrainError("--select-fraction must be in (0, 1 - val_fraction)")
        if not (0.0 <= self.dropout < 1.0 and 0.0 <= self.input_dropout < 1.0):
            raise TrainError("--dropout and --input-dropout must be in [0, 1)")
        if self.select not in ("policy", "value"):
            raise TrainError(f"unknown --select {self.select!r}; known: policy, value")
        if self.select != "policy" and fam.kind == "comparator":
            raise TrainError("--select value is for networks with a value head (rise, sixtyfour)")
        if self.optimizer not in ("sgd", "adam"):
            raise TrainError(f"unknown optimizer {self.optimizer!r}; known: sgd, adam")
        if not 0.0 <= self.score_weight <= 1.0:
            raise TrainError("--score-weight must be in [0, 1]")
        if not 0.0 <= self.q_weight <= 1.0:
            raise TrainError("--q-weight must be in [0, 1]")
        if self.init is not None and fam.kind == "comparator":
            raise TrainError(f"--init (start from saved weights) is for "
                             f"{', '.join(f for f in FAMILIES if FAMILIES[f].kind != 'comparator')}")
        if self.schedule not in ("family", "constant"):
            raise TrainError(f"unknown schedule {self.schedule!r}; known: family, constant")
        if (self.schedule != "family" or self.optimizer_from) and fam.kind != "policy_value":
            raise TrainError("schedule and optimizer_from are for the policy-value families")
        if self.large_batch and not fam.large_batch:
            raise TrainError(f"--large-batch is CrazyAra's recipe: {self.model} has none")
        d = {**fam.defaults, **(fam.large_batch if self.large_batch else {})}
        c = TrainConfig(**{**asdict(self)})
        c.epochs = int(d["epochs"]) if self.epochs is None else self.epochs
        c.batch = int(d["batch"]) if self.batch is None else self.batch
        c.lr = float(d["lr"]) if self.lr is None else self.lr
        c.value_weight = float(d["value_weight"]) if self.value_weight is None else self.value_weight
        c.ae_epochs = int(d.get("ae_epochs", 0)) if self.ae_epochs is None else self.ae_epochs
        c.policy_weight = float(d.get("policy_weight", 1.0)) if self.policy_weight is None else self.policy_weight
        if c.value_weight < 0 or c.policy_weight < 0 or c.value_weight + c.policy_weight == 0:
            raise TrainError("loss weights must be >= 0 and not both 0")
        if not 0.0 <= self.momentum < 1.0 or self.val_max < 1 or c.threads < 1:
            raise TrainError("momentum must be in [0, 1), val_max and threads >= 1")
        if c.epochs < 1 or c.batch < 1 or not 0 < c.lr < math.inf:  # NaN fails the comparison too
            raise TrainError("epochs, batch and lr must be positive (lr finite)")
        if c.minutes is not None and not 0 < c.minutes < math.inf:
            raise TrainError("--minutes must be a positive number")
        if c.cpu_seconds is not None and not 0 < c.cpu_seconds < 1e9:
            raise TrainError("cpu_seconds must be a positive number below 1e9")
        for name in ("value_weight", "weight_decay", "score_weight", "dropout", "input_dropout"):
            if not math.isfinite(float(getattr(c, name))):
                raise TrainError(f"{name} must be a finite number")
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
    moves[rows] = mirror_moves(moves[rows]).astype(moves.dtype)
    return raw, moves


def mirror_moves(moves: np.ndarray) -> np.ndarray:
    """Moves (board.moves layout) mirrored a-file <-> h-file: both squares ``sq ^ 7``."""
    m = moves.astype(np.int64)
    out: np.ndarray = (m & ~0xFFF) | ((m & 63) ^ 7) | ((((m >> 6) & 63) ^ 7) << 6)
    return out


# --------------------------------------------------------------------------- the run

def split(ds: DataSet, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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



def write_metrics_row(path: str, row: dict[str, Any]) -> None:
    """Append a row to a metrics CSV (header on the first; every row of a run has the same columns)."""
    new = not os.path.lexists(path)
    # never through a link planted in the run folder (O_NOFOLLOW: one line instead)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with open(fd, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def save_checkpoint(path: str, state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (a kill or a full disk leaves the previous one whole, and no
    temporary file); one line (:class:`TrainError`) if it cannot be written."""
    try:
        save_atomic(path, lambda tmp: torch.save(state, tmp), "checkpoint")
    except OutputError as e:
        raise TrainError(str(e)) from None


class Run:
    """The bookkeeping every family's training shares: ``out/checkpoint.pt`` (model, optimizer and
    the family's progress, written atomically every epoch and every ``CHECKPOINT_SECONDS``),
    ``out/metrics.csv`` (a row per epoch), the best epoch on the selection games, and at the end
    ``out/model.pt`` (the best epoch's weights with their metadata)."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.ck_path = os.path.join(cfg.out, "checkpoint.pt")
        self.metrics_path = os.path.join(cfg.out, "metrics.csv")
        self.best_score, self.best_epoch = -math.inf, 0
        self.best_state: dict[str, torch.Tensor] = {}
        self.best_metrics: dict[str, float] = {}
        self.last_save = time.monotonic()

    def resume(self, net: nn.Module, opt: torch.optim.Optimizer | None = None) -> dict[str, Any]:
        """The saved progress (empty for a fresh run, whose old metrics.csv is removed); the
        network (and optimizer) are restored from the checkpoint."""
        if not (self.cfg.resume and os.path.exists(self.ck_path)):
            if os.path.exists(self.metrics_path):
                os.remove(self.metrics_path)
            return {}
        try:
            ck: dict[str, Any] = torch.load(self.ck_path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - a torn or foreign file
            raise TrainError(f"cannot read checkpoint {self.ck_path}: {type(e).__name__}") from None
        try:
            net.load_state_dict(ck["model"])
            if opt is not None and "optimizer" in ck:
                opt.load_state_dict(ck["optimizer"])
        except (KeyError, RuntimeError, ValueError, TypeError):
            raise TrainError(f"{self.ck_path} is the checkpoint of another network (model or --size differ); "
                             f"give another --out, or --no-resume to start this one afresh") from None
        self.best_score, self.best_epoch = ck.get("best_score", -math.inf), ck.get("best_epoch", 0)
        self.best_state, self.best_metrics = ck.get("best_state", {}), ck.get("best_metrics", {})
        return dict(ck.get("progress", {}))

    def save(self, net: nn.Module, opt: torch.optim.Optimizer | None, **progress: Any) -> None:
        state = {"model": net.state_dict(), "progress": progress, "best_score": self.best_score,
                 "best_epoch": self.best_epoch, "best_state": self.best_state, "best_metrics": self.best_metrics}
        if opt is not None:
            state["optimizer"] = opt.state_dict()
        save_checkpoint(self.ck_path, state)
        self.last_save = time.monotonic()

    def due(self) -> bool:
        """Time for a checkpoint within an epoch."""
        return time.monotonic() - self.last_save > CHECKPOINT_SECONDS

    def consider(self, score: float, epoch: int, net: nn.Module, metrics: dict[str, float]) -> None:
        """Keep the epoch's weights if its selection score is the best so far."""
        if score > self.best_score:
            self.best_score, self.best_epoch, self.best_metrics = score, epoch, dict(metrics)
            self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in net.state_dict().items()}

    def patience_over(self, epoch: int) -> bool:
        """Early stopping: ``patience`` epochs without a better selection score."""
        return self.cfg.patience is not None and self.best_epoch > 0 and epoch - self.best_epoch >= self.cfg.patience

    def write_row(self, row: dict[str, Any]) -> None:
        write_metrics_row(self.metrics_path, row)

    def finish(self, family: str, net: nn.Module, meta: dict[str, Any]) -> dict[str, Any]:
        """Write ``model.pt``: the best epoch's weights (if any epoch finished) and ``meta`` with the
        recipe and data; returns the metadata."""
        if self.best_state:
            net.load_state_dict(self.best_state)
        bad = nets.nonfinite(net)
        if bad:
            raise TrainError(f"training diverged: {bad} (try a smaller --lr); model.pt not written")
        net = net.to("cpu", memory_format=torch.contiguous_format)  # type: ignore[call-overload]
        meta = {**meta, "best_epoch": self.best_epoch,
                "recipe": {k: v for k, v in asdict(self.cfg).items() if k not in ("data", "out", "extra")},
                "data": list(self.cfg.data)}
        nets.save_model(os.path.join(self.cfg.out, "model.pt"), family, net, meta, half=self.cfg.half)
        return meta


