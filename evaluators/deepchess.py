"""DeepChess as an evaluator: COMPARE for the comparator alpha-beta, and a value-style SCORE.

``compare(pairs, variant)`` encodes every distinct raw state of the batch once
(:func:`evaluators.encodings.deepchess_bits`), runs the shared Pos2Vec tower once per state and the
comparator head once per pair: the answer is softmax[0] = P(a is better than b for White).

Value-style wrapper (so DeepChess can run under plain alpha-beta, issue 4): a position is compared
with a fixed *reference*, the variant's starting position (balanced by construction), in both
orders: ``p = (P(pos > ref) + 1 - P(ref > pos)) / 2`` is the chance that the position is better
for White than an even game, and ``cp_white = 400 * log10(p / (1 - p))`` (the logistic Elo
scale; p = 0.75 is about +190), clamped to +-9999 and negated when Black is to move.

Inference: the network runs as two graphs, the Pos2Vec *tower* (input bits -> features, once per
distinct state) and the comparator *head* (two feature rows -> P(a better), once per pair).  Under
``inference=onnxruntime`` (the default) both are ONNX Runtime sessions, checked against eager torch
on sample positions when they are built (every output within ``FROZEN_ATOL``, else a warning and
eager); under ``frozen`` and ``eager`` both run as eager torch (a comparator alpha-beta sends
thousands of calls of a few rows, where a TorchScript graph saves nothing), and so on a GPU.  ONNX
Runtime's fixed cost per call is what pays here: measured by ``searchbench bench net``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from board import Position, new_position
from board.position import RAW_TURN
from evaluators import encodings as enc
from evaluators.base import COMPARE, INT8_MODES, ONNX_MODES, SCORE, value_to_cp
from evaluators.nets import DeepChessNet
from evaluators.neural import FROZEN_ATOL, NeuralEvaluator, log
from evaluators.onnx_runtime import checked_session

DEFAULT_WEIGHTS = "deepchess_crazyhouse.pt"

Tower = Callable[[torch.Tensor], torch.Tensor]
Head = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class _TowerNet(nn.Module):
    """The Pos2Vec tower alone (what is exported): bits ``[B, n]`` -> features ``[B, f]``."""

    def __init__(self, net: DeepChessNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net.features(x)


class _HeadNet(nn.Module):
    """The comparator head alone: features ``a``, ``b`` -> P(a is better for White) ``[B]``."""

    def __init__(self, net: DeepChessNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, fa: torch.Tensor, fb: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.net.compare_features(fa, fb), dim=1)[:, 0]


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
        self._graphs: tuple[Tower, Head] | None = None
        self._ref_feat: torch.Tensor | None = None

    def set_inference(self, mode: str) -> None:
        super().set_inference(mode)
        self._graphs, self._ref_feat = None, None
        self._cache.clear()  # features of one backend are not mixed with another's

    def warm_up(self) -> None:
        self._backend()

    def _backend(self) -> tuple[Tower, Head]:
        """(tower, head) in the chosen inference mode (module docstring), built at the first call."""
        if self._graphs is None:
            eager = self._graphs_eager()
            self._graphs = eager
            self.inference = "eager"
            if not self.on_gpu and self.inference_requested in ONNX_MODES:
                self._graphs = self._build_ort(eager)
            ref = new_position(self.variant).raw_state()
            with torch.inference_mode():
                self._ref_feat = self._graphs[0](self._bits([ref]))
        return self._graphs

    def _graphs_eager(self) -> tuple[nn.Module, nn.Module]:
        """The tower and the head as eager modules (what is exported, and what runs otherwise)."""
        return _TowerNet(self.net).eval(), _HeadNet(self.net).eval()

    def _build_ort(self, eager: tuple[nn.Module, nn.Module]) -> tuple[Tower, Head]:
        if self.inference_requested in INT8_MODES:
            self._build_int8()  # refused, with its warning: int8 is for the policy-value networks
        x = self._bits([p.raw_state() for p in self.sample_positions(16)])
        with torch.inference_mode():
            fx = eager[0](x)
        fy = fx.roll(1, 0).contiguous()
        tower, why = checked_session(eager[0], x[:2], [(x,)], self.threads, FROZEN_ATOL)
        head, why2 = checked_session(eager[1], (fx[:2], fy[:2]), [(fx, fy)], self.threads, FROZEN_ATOL)
        if tower is not None and head is not None:  # (an int8 refusal's reason stays in inference_error)
            self.inference = "onnxruntime"
            return (lambda t: tower(t)[0]), (lambda a, b: head(a, b)[0])
        self.inference_error = why or why2
        log.warning("evaluator %s runs eager: %s", self.name, self.inference_error)
        return eager

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
        head = self._backend()[1]
        with torch.inference_mode():
            p = head(f[ta], f[tb])
        return [float(v) for v in p.tolist()]

    def _features(self, states: list[tuple[int, ...]]) -> torch.Tensor:
        """Pos2Vec features of the states, through a bounded cache (the comparator search
        compares the same alpha/beta positions again and again)."""
        missing = [st for st in states if st not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > self.cache_size:
                self._cache.clear()
                missing = states  # the states that were cached are gone too (states are distinct)
            tower = self._backend()[0]
            x = self._bits(missing)
            with torch.inference_mode():
                f = tower(x)
            for st, row in zip(missing, f):
                self._cache[st] = row
        return torch.stack([self._cache[st] for st in states])

    def white_probability(self, states: Sequence[tuple[int, ...]]) -> list[float]:
        """P(state is better for White than the starting position), symmetrised over both orders."""
        tower, head = self._backend()
        assert self._ref_feat is not None
        x = self._bits(states)
        with torch.inference_mode():
            f = tower(x)
            r = self._ref_feat.expand(len(f), -1).contiguous()
            p1, p2 = head(f, r), head(r, f)
        return ((p1 + 1 - p2) / 2).tolist()

    def score(self, pos: Position) -> int:
        self._check_variant(pos.variant)
        st = pos.raw_state()
        p = min(max(self.white_probability([st])[0], 1e-6), 1 - 1e-6)
        cp = value_to_cp(2.0 * p - 1.0, pos.variant)
        return cp if st[RAW_TURN] == 0 else -cp
