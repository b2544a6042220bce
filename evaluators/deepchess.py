"""DeepChess as an evaluator: COMPARE for the comparator alpha-beta, and a value-style SCORE.

``compare(pairs, variant)`` encodes every distinct raw state of the batch once
(:func:`evaluators.encodings.deepchess_bits`), runs the shared Pos2Vec tower once per state and the
comparator head once per pair: the answer is softmax[0] = P(a is better than b for White).

Value-style wrapper (so DeepChess can run under plain alpha-beta, issue 4): a position is compared
with a fixed *reference*, the variant's starting position (balanced by construction), in both
orders: ``p = (P(pos > ref) + 1 - P(ref > pos)) / 2`` is the chance that the position is better
for White than an even game, and ``cp_white = 400 * log10(p / (1 - p))`` (the logistic Elo
scale; p = 0.75 is about +190), clamped to +-9999 and negated when Black is to move.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from board import Position, new_position
from board.position import RAW_TURN
from evaluators import encodings as enc
from evaluators.base import COMPARE, SCORE, value_to_cp
from evaluators.nets import DeepChessNet
from evaluators.neural import NeuralEvaluator

DEFAULT_WEIGHTS = "deepchess_crazyhouse.pt"


class DeepChessEvaluator(NeuralEvaluator):
    """A DeepChess siamese comparator behind the evaluator interface."""

    name = "deepchess"
    family = "deepchess"
    net_type = DeepChessNet
    default_weights = DEFAULT_WEIGHTS
    default_max_batch = 1024

    def __init__(self, net: DeepChessNet, threads: int = 1, meta: dict[str, Any] | None = None,
                 path: str | None = None, max_batch: int | None = None, device: str | torch.device = "cpu",
                 half: str = "auto") -> None:
        super().__init__(net, threads, meta, path, max_batch, device, half)
        self.cache_size = 100_000
        self._cache: dict[tuple[int, ...], torch.Tensor] = {}
        ref = new_position(self.variant).raw_state()
        with torch.inference_mode():
            self._ref_feat = self.net.features(self._bits([ref]))

    @classmethod
    def planes(cls, raw: np.ndarray, variant: str) -> np.ndarray:
        """The network's input bits of raw states: the encoding hook evaluation and training share."""
        return enc.deepchess_bits(raw, variant)

    def _bits(self, states: Sequence[tuple[int, ...]]) -> torch.Tensor:
        """The input bits of raw states, on the network's device."""
        return torch.from_numpy(self.planes(enc.raw_array(list(states)), self.variant)).to(self.device)

    def serves(self) -> frozenset[str]:
        return frozenset({COMPARE, SCORE})

    def compare(self, pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], variant: str) -> list[float]:
        self._check_variant(variant)
        out: list[float] = []
        for s in range(0, len(pairs), self.max_batch):
            out += self._compare(list(pairs[s:s + self.max_batch]))
        return out

    def _compare(self, pairs: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[float]:
        if not pairs:
            return []
        index: dict[tuple[int, ...], int] = {}
        states: list[tuple[int, ...]] = []
        ia = np.empty(len(pairs), dtype=np.int64)
        ib = np.empty(len(pairs), dtype=np.int64)
        for k, (a, b) in enumerate(pairs):
            for st, arr in ((a, ia), (b, ib)):
                j = index.get(st)
                if j is None:
                    j = index[st] = len(states)
                    states.append(st)
                arr[k] = j
        f = self._features(states)
        ta, tb = torch.from_numpy(ia).to(self.device), torch.from_numpy(ib).to(self.device)
        with torch.inference_mode():
            p = torch.softmax(self.net.compare_features(f[ta], f[tb]), dim=1)[:, 0]
        return [float(v) for v in p.tolist()]

    def _features(self, states: list[tuple[int, ...]]) -> torch.Tensor:
        """Pos2Vec features of the states, through a bounded cache (the comparator search
        compares the same alpha/beta positions again and again)."""
        missing = [st for st in states if st not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > self.cache_size:
                self._cache.clear()
                missing = states  # the states that were cached are gone too (states are distinct)
            x = self._bits(missing)
            with torch.inference_mode():
                f = self.net.features(x)
            for st, row in zip(missing, f):
                self._cache[st] = row
        return torch.stack([self._cache[st] for st in states])

    def white_probability(self, states: Sequence[tuple[int, ...]]) -> list[float]:
        """P(state is better for White than the starting position), symmetrised over both orders."""
        x = self._bits(states)
        with torch.inference_mode():
            f = self.net.features(x)
            r = self._ref_feat.expand(len(f), -1)
            p1 = torch.softmax(self.net.compare_features(f, r), dim=1)[:, 0]
            p2 = torch.softmax(self.net.compare_features(r, f), dim=1)[:, 0]
        return ((p1 + 1 - p2) / 2).tolist()

    def score(self, pos: Position) -> int:
        self._check_variant(pos.variant)
        st = pos.raw_state()
        p = min(max(self.white_probability([st])[0], 1e-6), 1 - 1e-6)
        cp = value_to_cp(2.0 * p - 1.0, pos.variant)
        return cp if st[RAW_TURN] == 0 else -cp
