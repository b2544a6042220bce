"""The SixtyFour ResNet as an evaluator: POLICY_VALUE for MCTS, SCORE for alpha-beta.

Input: SixtyFour's 15 planes (:func:`evaluators.encodings.sixtyfour_planes`, absolute board);
policy: the 2308-move output, renormalised over the legal moves; ``v`` (tanh) is the value for the
side to move in [-1, 1] (the paper's 1 / 0.5 / 0 target is ``(v + 1) / 2``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from board import Position
from evaluators import encodings as enc
from evaluators.base import POLICY_VALUE, SCORE, Evaluation, Evaluator, EvaluatorError, Leaf
from evaluators.nets import SixtyFourNet
from evaluators.neural import flatten_moves, legal_softmax, load_net, value_to_centipawns

DEFAULT_WEIGHTS = "sixtyfour_crazyhouse.pt"


class SixtyFourEvaluator(Evaluator):
    """A SixtyFour residual network behind the evaluator interface."""

    name = "sixtyfour"

    def __init__(self, net: SixtyFourNet, threads: int = 1, meta: dict[str, Any] | None = None,
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
    def load(cls, path: str | None = None, threads: int = 1) -> "SixtyFourEvaluator":
        """Load weights (None: the shipped ``evaluators/weights/sixtyfour_crazyhouse.pt``)."""
        net, d, p = load_net(path, DEFAULT_WEIGHTS, "sixtyfour", threads)
        assert isinstance(net, SixtyFourNet)
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
        with torch.inference_mode():
            v, logp = self.net(torch.from_numpy(enc.sixtyfour_planes(raw, self.variant)))
        moves, seg, counts = flatten_moves(leaves)
        idx = enc.sixtyfour_move_indices(moves)
        if (idx < 0).any():
            bad = int(moves[np.flatnonzero(idx < 0)[0]])
            raise EvaluatorError(f"move {bad} cannot be encoded in the SixtyFour output")
        priors = legal_softmax(logp.numpy(), seg, idx, counts)
        return [Evaluation(float(val), pr) for val, pr in zip(v.tolist(), priors)]

    def value(self, pos: Position) -> float:
        """The network's value of ``pos`` for the side to move, in [-1, 1]."""
        self._check_variant(pos.variant)
        raw = enc.raw_array([pos.raw_state()])
        with torch.inference_mode():
            v, _ = self.net(torch.from_numpy(enc.sixtyfour_planes(raw, self.variant)))
        return float(v[0])

    def score(self, pos: Position) -> int:
        return value_to_centipawns(self.value(pos), self.variant)
