"""Shared machinery of the torch evaluators (rise, sixtyfour, deepchess).

* weights load through :func:`evaluators.nets.load_model`; any problem with the file becomes one
  :class:`~evaluators.base.EvaluatorError` line naming it;
* networks run in eval mode under ``torch.inference_mode()``, in chunks of at most ``max_batch``
  leaves, with ``torch.set_num_threads(threads)`` (a process-wide torch setting);
* priors are a softmax over the logits of the *legal* moves only (SPEC.md section 2), computed for
  a whole batch at once with segment operations (``np.maximum.reduceat``/``np.add.reduceat``);
* values become centipawns with CrazyAra's conversion (:func:`value_to_centipawns`).
"""
from __future__ import annotations

import math
import os
from typing import Any, ClassVar, Final, Self, Sequence

import numpy as np
import torch
from torch import nn

from board import Position
from evaluators import encodings as enc
from evaluators import nets
from evaluators.base import POLICY_VALUE, SCORE, Evaluation, Evaluator, EvaluatorError, Leaf

WEIGHTS_DIR: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights")
#: CrazyAra's VALUE_TO_CENTI_PARAM: log base of the value -> centipawn conversion
VALUE_TO_CENTI_PARAM: Final = {"crazyhouse": 1.2, "chess": 1.4}


def value_to_centipawns(v: float, variant: str = "crazyhouse") -> int:
    """CrazyAra's conversion ``cp = -sgn(v) * log(1 - |v|) / log(base) * 100`` (base 1.2 in
    crazyhouse, 1.4 in chess); +-9999 at |v| >= 1."""
    if abs(v) >= 1.0:
        return 9999 if v > 0 else -9999
    if v == 0.0:
        return 0
    base = VALUE_TO_CENTI_PARAM.get(variant, 1.2)
    return int(-math.copysign(1.0, v) * math.log(1.0 - abs(v)) / math.log(base) * 100.0)


def load_net(path: str | None, default_name: str, family: str, threads: int) -> tuple[nn.Module, dict[str, Any], str]:
    """(network in eval mode, saved dict, resolved path); EvaluatorError naming the file on failure."""
    if threads < 1:
        raise EvaluatorError(f"threads must be >= 1, got {threads}")
    p = path if path is not None else os.path.join(WEIGHTS_DIR, default_name)
    try:
        net, d = nets.load_model(p, family)
    except ValueError as e:
        raise EvaluatorError(str(e)) from None
    torch.set_num_threads(threads)
    return net, d, p


def legal_softmax(logits: np.ndarray, seg: np.ndarray, idx: np.ndarray, counts: np.ndarray) -> list[list[float]]:
    """Softmax over each leaf's legal moves: ``logits [B, K]``, ``seg`` the leaf of each move,
    ``idx`` the move's output index, ``counts`` the moves per leaf (leaves with none get [])."""
    out: list[list[float]] = [[] for _ in range(len(counts))]
    if len(idx) == 0:
        return out
    x = logits[seg, idx].astype(np.float64)
    nz = np.flatnonzero(counts)
    starts = np.concatenate([[0], np.cumsum(counts[nz])[:-1]])
    mx = np.maximum.reduceat(x, starts)
    e = np.exp(x - np.repeat(mx, counts[nz]))
    tot = np.add.reduceat(e, starts)
    p = e / np.repeat(tot, counts[nz])
    for j, (i, s) in enumerate(zip(nz, starts)):
        out[i] = p[s:s + counts[i]].tolist()
    return out


def flatten_moves(leaves: list[Leaf] | tuple[Leaf, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(moves, leaf index of each move, move count per leaf) as int64 arrays."""
    counts = np.fromiter((len(lf.moves) for lf in leaves), dtype=np.int64, count=len(leaves))
    moves = np.fromiter((m for lf in leaves for m in lf.moves), dtype=np.int64, count=int(counts.sum()))
    seg = np.repeat(np.arange(len(leaves)), counts)
    return moves, seg, counts


class NeuralEvaluator(Evaluator):
    """Plumbing shared by the network evaluators: weights, threads, variant, batching limits.

    Subclasses set ``family`` (the :mod:`evaluators.nets` family), ``net_type`` and
    ``default_weights`` (a file in ``evaluators/weights/``)."""

    family: ClassVar[str]
    net_type: ClassVar[type[nn.Module]]
    default_weights: ClassVar[str]
    default_max_batch: ClassVar[int] = 256

    def __init__(self, net: Any, threads: int = 1, meta: dict[str, Any] | None = None,
                 path: str | None = None, max_batch: int | None = None) -> None:
        net.eval()
        self.net = net
        self.variant: str = net.cfg.variant
        self.variants = frozenset({self.variant})
        self.threads = threads
        self.meta = dict(meta or {})
        self.path = path
        self.max_batch = max_batch or self.default_max_batch
        torch.set_num_threads(threads)

    @classmethod
    def load(cls, path: str | None = None, threads: int = 1) -> Self:
        """Load weights (None: the shipped file ``evaluators/weights/<default_weights>``)."""
        net, d, p = load_net(path, cls.default_weights, cls.family, threads)
        assert isinstance(net, cls.net_type)
        return cls(net, threads, d.get("meta"), p)

    def _check_variant(self, variant: str) -> None:
        if variant != self.variant:
            raise EvaluatorError(f"evaluator {self.name!r} was trained for {self.variant}, not {variant}")


class PolicyValueEvaluator(NeuralEvaluator):
    """A value + policy network (RISE, SixtyFour): batched POLICY_VALUE, and SCORE from the value.

    Subclasses give the input planes and the policy index of each move; ``policy_name`` names the
    policy layout in errors."""

    policy_name: ClassVar[str]

    def _planes(self, raw: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _move_indices(self, moves: np.ndarray, raw: np.ndarray, seg: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE, SCORE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        out: list[Evaluation] = []
        for s in range(0, len(leaves), self.max_batch):
            out += self._evaluate(list(leaves[s:s + self.max_batch]))
        return out

    def _evaluate(self, leaves: list[Leaf]) -> list[Evaluation]:
        if not leaves:
            return []
        for lf in leaves:
            self._check_variant(lf.variant)
        raw = enc.raw_array([lf.state for lf in leaves])
        with torch.inference_mode():
            v, logits = self.net(torch.from_numpy(self._planes(raw)))
        moves, seg, counts = flatten_moves(leaves)
        idx = self._move_indices(moves, raw, seg)
        if (idx < 0).any():
            bad = int(moves[np.flatnonzero(idx < 0)[0]])
            raise EvaluatorError(f"move {bad} cannot be encoded in the {self.policy_name}")
        priors = legal_softmax(logits.numpy(), seg, idx, counts)
        return [Evaluation(float(val), pr) for val, pr in zip(v.tolist(), priors)]

    def value(self, pos: Position) -> float:
        """The network's value of ``pos`` for the side to move, in [-1, 1]."""
        self._check_variant(pos.variant)
        raw = enc.raw_array([pos.raw_state()])
        with torch.inference_mode():
            v, _ = self.net(torch.from_numpy(self._planes(raw)))
        return float(v[0])

    def score(self, pos: Position) -> int:
        return value_to_centipawns(self.value(pos), self.variant)
