"""CrazyAra's RISE network as an evaluator: POLICY_VALUE for MCTS, SCORE for alpha-beta.

Input: CrazyAra planes (:func:`evaluators.encodings.crazyara_planes`); policy: the 81-plane map,
mirrored for Black, softmax over the legal moves only.  ``v`` is the value for the side to move;
``score`` converts it to centipawns with CrazyAra's formula (:func:`evaluators.neural.value_to_centipawns`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from board import Position
from board.position import RAW_TURN
from evaluators import encodings as enc
from evaluators.base import POLICY_VALUE, SCORE, Evaluation, Evaluator, EvaluatorError, Leaf
from evaluators.nets import RiseNet
from evaluators.neural import flatten_moves, legal_softmax, load_net, value_to_centipawns

DEFAULT_WEIGHTS = "rise_crazyhouse.pt"


class RiseEvaluator(Evaluator):
    """A RISE (or AlphaZero-style ResNet) network behind the evaluator interface."""

    name = "rise"

    def __init__(self, net: RiseNet, threads: int = 1, meta: dict[str, Any] | None = None,
                 path: str | None = None, max_batch: int = 256) -> None:
        net.eval()
        self.net = net
        self.variant = net.cfg.variant
        self.variants = frozenset({self.variant})
        self.threads = threads
        self.meta = dict(meta or {})
        self.path = path
        self.max_batch = max_batch
        torch.set_num_threads(threads)

    @classmethod
    def load(cls, path: str | None = None, threads: int = 1) -> "RiseEvaluator":
        """Load weights (None: the shipped ``evaluators/weights/rise_crazyhouse.pt``)."""
        net, d, p = load_net(path, DEFAULT_WEIGHTS, "rise", threads)
        assert isinstance(net, RiseNet)
        return cls(net, threads, d.get("meta"), p)

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE, SCORE})

    def _check_variant(self, variant: str) -> None:
        if variant != self.variant:
            raise EvaluatorError(f"evaluator {self.name!r} was trained for {self.variant}, not {variant}")

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
        x = torch.from_numpy(enc.crazyara_planes(raw, self.variant))
        with torch.inference_mode():
            v, logits = self.net(x)
        moves, seg, counts = flatten_moves(leaves)
        idx = enc.crazyara_policy_indices(moves, raw[seg, RAW_TURN] == 1)
        if (idx < 0).any():
            bad = int(moves[np.flatnonzero(idx < 0)[0]])
            raise EvaluatorError(f"move {bad} cannot be encoded in the CrazyAra policy map")
        priors = legal_softmax(logits.numpy(), seg, idx, counts)
        return [Evaluation(float(val), pr) for val, pr in zip(v.tolist(), priors)]

    def value(self, pos: Position) -> float:
        """The network's value of ``pos`` for the side to move, in [-1, 1]."""
        self._check_variant(pos.variant)
        raw = enc.raw_array([pos.raw_state()])
        with torch.inference_mode():
            v, _ = self.net(torch.from_numpy(enc.crazyara_planes(raw, self.variant)))
        return float(v[0])

    def score(self, pos: Position) -> int:
        return value_to_centipawns(self.value(pos), self.variant)
