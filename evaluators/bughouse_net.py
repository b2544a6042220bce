"""LazyBug's two-board bughouse network (SPEC.md section 2): encoding, network, evaluator.

Leaf state (as :mod:`evaluators.bughouse_classical`): ``raw_A + raw_B + (focus, clock_0..clock_3)``,
the two boards' ``Position.raw_state()`` (16 ints each), the *focus* board (the searching seat's
board; the value is for the team of its side to move) and the four seats' clocks in ms (-1 untimed;
seat = ``board_id * 2 + color``).

View
----
"We" are the side to move on the focus board ("own board"); our partner plays the other colour on
the other board ("partner board"). Each board is shown from the point of view of *our team's*
player on it: on the own board our pieces, on the partner board the partner's pieces come first,
and each board is mirrored vertically (``square ^ 56``) when that player is Black, so that row 0
(the top row) is that player's back rank (LazyBug mirrors "so that the moving player is always on
top"). The two boards always have opposite mirroring.

Input planes ``float32 [B, 14, 8, 16]`` (row = oriented rank, column = file; columns 0-7 the own
board, 8-15 the partner board), per board:
    0-5 our team's player's P N B R Q K, 6-11 the opponent's P N B R Q K, 12 promoted pieces (either
    colour), 13 en-passant square.
Scalars ``float32 [B, 34]``:
    0-19 pockets / 16 (P N B R Q): ours, our opponent's, our partner's, the partner's opponent's;
    20-23 clocks in minutes / 5 (same seat order; 1.0, i.e. five minutes, when untimed);
    24 partner to move on the partner board; 25 we play White;
    26-33 castling (K side, Q side): ours, our opponent's, the partner's, the partner's opponent's.
The scalars go through a dense layer (one weight per filter and scalar) added to the first
convolution's output before its activation (LazyBug's mixed first layer).

Policy: 87 planes over 8 x 16 = 11,136 logits, flat index ``plane * 128 + row * 16 + column``,
squares in the board's oriented coordinates, column + 8 for a move on the partner board. Moves are
indexed at their from-square, drops at their to-square:
    0-55 queen-like moves ``dir * 7 + (len - 1)``, dirs N NE E SE S SW W NW with N = towards higher
    rows; 56-63 knight moves (order of :data:`evaluators.encodings.KNIGHT_DIRS`); 64-72 under-promotions
    moving towards higher rows (our side's direction) ``64 + piece * 3 + (dx + 1)``, piece N=0 B=1
    R=2; 73-81 the same moving towards lower rows (the opponents: LazyBug's "for each color");
    82-86 drops P N B R Q. A queen promotion is its pawn's queen-like move.
Priors: a softmax over each board's legal moves (two distributions, as the search picks a board
first); a board's "sit" move (move 0, :func:`board.bughouse.sit_move`) gets
``SIT_PRIOR`` (0.01) and the board's real moves share the rest.

Network (:class:`BughouseNet`, size configurable, LazyBug: 256 filters, 13 blocks): 3x3 conv 14 -> C
plus the dense scalar term, BN, ReLU; residual blocks (3x3 conv, BN, ReLU, 3x3 conv, BN; the
output is the *average* of the skip connection and the block, then ReLU, as LazyBug); policy head
3x3 conv C -> 87; value head 1x1 conv C -> 1, flatten (128), dense ``value_hidden`` (256) + ReLU,
dense 1, tanh. ``v`` is the value for our team.

Saved models are the plain dicts of :mod:`evaluators.nets` with family ``"bughouse"``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass
from typing import Any, Final, Self, Sequence

import numpy as np
import torch
from torch import nn

from board.bughouse import (
    BOARD_SHIFT, MOVE_MASK, RAW_LEN, SIT_PRIOR, STATE_LEN, BughouseGame, leaf_state, two_board_move,
)
from board.variants import BUGHOUSE
from evaluators.base import DEFAULT_INFERENCE, POLICY_VALUE, Evaluation, EvaluatorError, Leaf
from evaluators.bughouse_classical import BughouseClassicalEvaluator
from evaluators.families import FAMILIES, WEIGHTS_DIR
from evaluators.neural import NeuralEvaluator
from evaluators.encodings import MOVE_TABLE_SIZE, bitboard_planes, pocket_counts, queen_knight_index

log = logging.getLogger(__name__)

FAMILY: Final = BUGHOUSE.name
DEFAULT_WEIGHTS: Final = "bughouse_lazybug.pt"
PLANES_PER_BOARD: Final = 14
N_SCALARS: Final = 34
POLICY_PLANES: Final = 87
POLICY_SIZE: Final = POLICY_PLANES * 128  # 11,136
UNTIMED_CLOCK: Final = 1.0  # clocks / (5 minutes) of an untimed game


class BughouseNetError(EvaluatorError):
    """Unusable weights or leaves for the bughouse network (one line, naming the file)."""


# --------------------------------------------------------------------------- leaf states

def _check_states(states: np.ndarray) -> np.ndarray:
    if states.ndim != 2 or states.shape[1] != STATE_LEN:
        raise BughouseNetError(f"bughouse leaf states must be {STATE_LEN}-int rows, got shape {states.shape}")
    return np.ascontiguousarray(states, dtype=np.int64)


def _views(states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(own raw [B,16], partner raw [B,16], our colour [B], focus [B])."""
    focus = states[:, 2 * RAW_LEN]
    a = states[:, :RAW_LEN]
    b = states[:, RAW_LEN:2 * RAW_LEN]
    own = np.where((focus == 0)[:, None], a, b)
    partner = np.where((focus == 0)[:, None], b, a)
    us = own[:, 10]
    return own, partner, us, focus


# --------------------------------------------------------------------------- input planes

def _board_planes(raw: np.ndarray, player: np.ndarray) -> np.ndarray:
    """``uint8 [B, 14, 64]`` planes of one board from ``player``'s side (mirrored if Black)."""
    mine = np.where(player == 1, raw[:, 1], raw[:, 0])
    theirs = np.where(player == 1, raw[:, 0], raw[:, 1])
    pcs = raw[:, 2:8]
    ep = raw[:, 12]
    ep_bb = np.where(ep >= 0, np.left_shift(np.int64(1), np.maximum(ep, 0)), 0).astype(np.int64)
    bbs = np.concatenate([pcs & mine[:, None], pcs & theirs[:, None], raw[:, 8:9], ep_bb[:, None]], axis=1)
    return bitboard_planes(bbs, player == 1)


def encode(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(planes ``float32 [B, 14, 8, 16]``, scalars ``float32 [B, 34]``) of leaf states ``int64 [B, 37]``."""
    states = _check_states(states)
    n = states.shape[0]
    own, partner, us, focus = _views(states)
    pl_own = _board_planes(own, us).reshape(n, PLANES_PER_BOARD, 8, 8)
    pl_par = _board_planes(partner, 1 - us).reshape(n, PLANES_PER_BOARD, 8, 8)
    planes = np.concatenate([pl_own, pl_par], axis=3).astype(np.float32)
    pk_own = pocket_counts(own)       # [B, 2 colours, 5]
    pk_par = pocket_counts(partner)
    ar = np.arange(n)
    scal = np.empty((n, N_SCALARS), dtype=np.float32)
    scal[:, 0:5] = pk_own[ar, us] / 16.0
    scal[:, 5:10] = pk_own[ar, 1 - us] / 16.0
    scal[:, 10:15] = pk_par[ar, 1 - us] / 16.0
    scal[:, 15:20] = pk_par[ar, us] / 16.0
    clocks = states[:, 2 * RAW_LEN + 1:]
    own_seat = focus * 2 + us
    par_seat = (1 - focus) * 2 + (1 - us)
    seats = np.stack([own_seat, own_seat ^ 1, par_seat, par_seat ^ 1], axis=1)
    c = np.take_along_axis(clocks, seats, axis=1).astype(np.float64)
    scal[:, 20:24] = np.where(c < 0, UNTIMED_CLOCK, np.maximum(c, 0.0) / 300000.0)
    scal[:, 24] = partner[:, 10] == 1 - us
    scal[:, 25] = us == 0
    cr_own = own[:, 11]
    cr_par = partner[:, 11]
    for k, (cr, color) in enumerate(((cr_own, us), (cr_own, 1 - us), (cr_par, 1 - us), (cr_par, us))):
        bits = cr >> (2 * color)
        scal[:, 26 + 2 * k] = bits & 1
        scal[:, 27 + 2 * k] = (bits >> 1) & 1
    return planes, scal


# --------------------------------------------------------------------------- policy map

def _local_index(frm: int, to: int, promo: int, drop: int) -> int:
    """``plane * 64 + square`` of a move in oriented coordinates, -1 if it has no entry."""
    if drop:
        return (82 + drop - 1) * 64 + to
    dx = (to & 7) - (frm & 7)
    dy = (to >> 3) - (frm >> 3)
    if promo and promo != 5:
        if abs(dx) > 1 or abs(dy) != 1:
            return -1
        base = 64 if dy > 0 else 73
        return (base + (promo - 2) * 3 + dx + 1) * 64 + frm
    return queen_knight_index(frm, dx, dy)


_TABLE: np.ndarray | None = None


def move_table() -> np.ndarray:
    """``int32 [2, 2^18]``: ``plane * 64 + oriented square`` of a move int on an unmirrored (0) or
    mirrored (1) board; -1 where none."""
    global _TABLE
    if _TABLE is None:
        t = np.full((2, MOVE_TABLE_SIZE), -1, dtype=np.int32)
        for frm in range(64):
            for to in range(64):
                if frm == to:
                    continue
                for promo in (0, 2, 3, 4, 5):
                    m = frm | (to << 6) | (promo << 12)
                    t[0, m] = _local_index(frm, to, promo, 0)
                    t[1, m] = _local_index(frm ^ 56, to ^ 56, promo, 0)
        for drop in range(1, 6):
            for to in range(64):
                m = to | (to << 6) | (drop << 15)
                t[0, m] = _local_index(to, to, 0, drop)
                t[1, m] = _local_index(to ^ 56, to ^ 56, 0, drop)
        _TABLE = t
    return _TABLE


def policy_indices_np(states: np.ndarray, moves: np.ndarray, seg: np.ndarray | None = None) -> np.ndarray:
    """Flat policy indices of two-board moves ``board_id << 18 | move`` (-1: not encodable, sit
    moves included); ``seg[i]`` is the row of ``states`` that move ``i`` belongs to (default: i)."""
    states = _check_states(states)
    moves = np.asarray(moves, dtype=np.int64)
    if seg is None:
        seg = np.arange(len(moves))
    focus = states[seg, 2 * RAW_LEN]
    us = np.where(focus == 0, states[seg, 10], states[seg, RAW_LEN + 10])
    bid = moves >> BOARD_SHIFT
    m = moves & MOVE_MASK
    partner = bid != focus
    # own board mirrored when we are Black; partner board when the partner (colour 1 - us) is Black
    mirror = np.where(partner, us == 0, us == 1).astype(np.int64)
    local = move_table()[mirror, m].astype(np.int64)
    plane = local >> 6
    sq = local & 63
    flat = plane * 128 + (sq >> 3) * 16 + (sq & 7) + 8 * partner
    return np.where((local < 0) | (m == 0), -1, flat)


def policy_index(game: BughouseGame, focus: int, board_id: int, move: int) -> int:
    """Flat policy index of ``move`` on ``board_id`` seen from the side to move on ``focus``."""
    st = np.array([leaf_state(game, focus)], dtype=np.int64)
    return int(policy_indices_np(st, np.array([two_board_move(board_id, move)]))[0])


# --------------------------------------------------------------------------- network

@dataclass
class BughouseNetConfig:
    channels: int = 256
    blocks: int = 13
    value_hidden: int = 256
    variant: str = BUGHOUSE.name


#: the size presets (:data:`evaluators.families.FAMILIES`)
SIZES: Final = FAMILIES[FAMILY].sizes


class _Block(nn.Module):
    """LazyBug residual block: conv-BN-ReLU-conv-BN, average with the skip connection, ReLU."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                                  nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.act((x + self.body(x)) * 0.5)
        return out


class BughouseNet(nn.Module):
    """``(planes [B, 14, 8, 16], scalars [B, 34])`` -> (value ``[B]``, policy logits ``[B, 11136]``)."""

    def __init__(self, cfg: BughouseNetConfig) -> None:
        super().__init__()
        if cfg.channels < 1 or cfg.blocks < 0 or cfg.value_hidden < 1:
            raise ValueError(f"bad bughouse network size {asdict(cfg)}")
        self.cfg = cfg
        c = cfg.channels
        self.conv_in = nn.Conv2d(PLANES_PER_BOARD, c, 3, padding=1, bias=False)
        self.scalar_in = nn.Linear(N_SCALARS, c)
        self.bn_in = nn.BatchNorm2d(c)
        self.body = nn.Sequential(*[_Block(c) for _ in range(cfg.blocks)])
        self.policy_head = nn.Sequential(nn.Conv2d(c, POLICY_PLANES, 3, padding=1), nn.Flatten())
        self.value_head = nn.Sequential(
            nn.Conv2d(c, 1, 1), nn.Flatten(), nn.Linear(128, cfg.value_hidden), nn.ReLU(inplace=True),
            nn.Linear(cfg.value_hidden, 1), nn.Tanh())

    def forward(self, planes: torch.Tensor, scalars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.conv_in(planes) + self.scalar_in(scalars)[:, :, None, None]
        h = self.body(torch.relu(self.bn_in(h)))
        return self.value_head(h).squeeze(1), self.policy_head(h)


def build(size: str | dict[str, Any]) -> BughouseNet:
    if isinstance(size, str):
        if size not in SIZES:
            raise ValueError(f"unknown bughouse network size {size!r}; known: {', '.join(SIZES)}")
        size = SIZES[size]
    return BughouseNet(BughouseNetConfig(**size))


def sample_states(count: int) -> np.ndarray:
    """``int64 [count, STATE_LEN]`` leaf states along one game, each board in turn to move and in focus
    for its first 40 plies (the load check's and the benchmark's positions)."""
    g, states = BughouseGame(), []
    for i in range(count):
        states.append(leaf_state(g, i % 2))
        moves = g.legal_moves(i % 2)
        if moves and i < 40:
            g.push(i % 2, moves[(5 * i) % len(moves)])
    return np.array(states, dtype=np.int64)


# --------------------------------------------------------------------------- evaluator

class BughouseNetEvaluator(NeuralEvaluator):
    """The two-board network behind the bughouse MCTS's evaluator interface (batched), on the
    plumbing every network evaluator shares (:class:`evaluators.neural.NeuralEvaluator`: weights
    saved and loaded by :mod:`evaluators.nets`, threads, device, the inference modes: ONNX Runtime
    runs the two-input graph on the CPU, checked against eager torch when it is built; a two-input
    graph has no frozen copy, so ``frozen`` runs eager; int8 is for the one-board policy-value
    networks, so ``onnxruntime-int8`` runs float32 with a warning)."""

    name = "bughouse-net"
    variants = frozenset({BUGHOUSE.name})
    family = FAMILY
    net_type = BughouseNet
    default_weights = DEFAULT_WEIGHTS

    def __init__(self, net: BughouseNet, threads: int = 1, meta: dict[str, Any] | None = None,
                 path: str | None = None, max_batch: int | None = None, device: str | torch.device = "cpu",
                 half: str = "auto", sit_prior: float = SIT_PRIOR) -> None:
        if threads < 1:
            raise BughouseNetError(f"threads must be >= 1, got {threads}")
        if not 0.0 < sit_prior < 1.0:
            raise BughouseNetError(f"the sit prior must be in (0, 1), got {sit_prior}")
        super().__init__(net, threads, meta, path, max_batch, device, half)
        self.sit_prior = sit_prior

    @classmethod
    def load(cls, path: str | None = None, threads: int = 1, inference: str = DEFAULT_INFERENCE,
             variant: str | None = None, device: str = "auto", half: str = "auto") -> Self:
        """Load weights (None: the shipped ``bughouse_lazybug.pt``); ``variant`` is bughouse."""
        if variant not in (None, BUGHOUSE.name):
            raise BughouseNetError(f"the bughouse network plays bughouse, not {variant}")
        try:
            return super().load(path, threads, inference, None, device, half)
        except BughouseNetError:
            raise
        except EvaluatorError as e:
            raise BughouseNetError(str(e)) from None

    @classmethod
    def weights_file(cls, path: str | None = None, variant: str | None = None) -> str:
        """The file :meth:`load` reads (None: the shipped ``bughouse_lazybug.pt``, whatever ``variant``)."""
        return super().weights_file(path, None)

    def onnx_examples(self) -> list[tuple[torch.Tensor, ...]]:
        planes, scal = (torch.from_numpy(a) for a in encode(sample_states(12)))
        return [(planes[:2], scal[:2]), (planes, scal)]

    def warm_up(self) -> None:
        self._built()

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        out: list[Evaluation] = []
        for s in range(0, len(leaves), self.max_batch):
            out += self._evaluate(list(leaves[s:s + self.max_batch]))
        return out

    def predict(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values ``[B]``, policy logits ``[B, 11136]``) of leaf states."""
        planes, scal = encode(states)
        with torch.inference_mode():
            v, logits = self.forward(torch.from_numpy(planes).to(self.device), torch.from_numpy(scal).to(self.device))
        return v.float().cpu().numpy(), logits.float().cpu().numpy()

    def _evaluate(self, leaves: list[Leaf]) -> list[Evaluation]:
        if not leaves:
            return []
        for lf in leaves:
            if lf.variant != BUGHOUSE.name or len(lf.state) != STATE_LEN:
                raise BughouseNetError(f"{self.name} evaluates two-board bughouse leaves (state of {STATE_LEN} "
                                       f"ints), got a {lf.variant} leaf of {len(lf.state)}")
        states = np.array([lf.state for lf in leaves], dtype=np.int64)
        values, logits = self.predict(states)
        counts = np.fromiter((len(lf.moves) for lf in leaves), dtype=np.int64, count=len(leaves))
        moves = np.fromiter((m for lf in leaves for m in lf.moves), dtype=np.int64, count=int(counts.sum()))
        seg = np.repeat(np.arange(len(leaves)), counts)
        idx = policy_indices_np(states, moves, seg)
        sit = (moves & MOVE_MASK) == 0
        if ((idx < 0) & ~sit).any():
            bad = int(moves[np.flatnonzero((idx < 0) & ~sit)[0]])
            raise BughouseNetError(f"move {bad} cannot be encoded in the bughouse policy map")
        # per (leaf, board) softmax over the real moves; sit moves get sit_prior
        group = seg * 2 + (moves >> BOARD_SHIFT)
        x = np.where(sit, -np.inf, logits[seg, np.maximum(idx, 0)].astype(np.float64))
        ngroups = 2 * len(leaves)
        mx = np.full(ngroups, -np.inf)
        np.maximum.at(mx, group, x)
        e = np.where(sit, 0.0, np.exp(x - np.where(np.isfinite(mx[group]), mx[group], 0.0)))
        tot = np.zeros(ngroups)
        np.add.at(tot, group, e)
        has_sit = np.zeros(ngroups, dtype=bool)
        has_sit[group[sit]] = True
        real = np.zeros(ngroups, dtype=np.int64)
        np.add.at(real, group, (~sit).astype(np.int64))
        share = np.where(has_sit, 1.0 - self.sit_prior, 1.0)
        p = np.where(sit, np.where(real[group] > 0, self.sit_prior, 1.0),
                     e / np.where(tot[group] > 0, tot[group], 1.0) * share[group])
        out: list[Evaluation] = []
        start = 0
        for i, k in enumerate(counts.tolist()):
            out.append(Evaluation(float(values[i]), p[start:start + k].tolist()))
            start += k
        return out


class BughouseNetClassicalEvaluator(BughouseNetEvaluator):
    """The two-board network's priors with the classical two-board evaluator's value
    (``bughouse-net-classical``; :class:`evaluators.bughouse_classical.BughouseClassicalEvaluator`).
    In the same MCTS the classical evaluator beats the network by some 600 Elo and the network's
    value does not see a two-queen edge (``reports/bughouse-net-vs-classical/``), while its move
    prediction on held-out Sjeng games is 53-54%: this keeps what the network learnt (where to
    look) and takes the value from material, flows and king safety."""

    name = "bughouse-net-classical"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.classical = BughouseClassicalEvaluator()

    def _evaluate(self, leaves: list[Leaf]) -> list[Evaluation]:
        return [Evaluation(c.value, n.priors)
                for n, c in zip(super()._evaluate(leaves), self.classical.evaluate(leaves))]
