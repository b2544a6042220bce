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
from typing import Any, Final

import numpy as np
import torch
from torch import nn

from evaluators import nets
from evaluators.base import EvaluatorError, Leaf

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
