"""The SixtyFour ResNet as an evaluator: POLICY_VALUE for MCTS, SCORE for alpha-beta.

Input: SixtyFour's 15 planes (:func:`evaluators.encodings.sixtyfour_planes`, absolute board);
policy: the 2308-move output, renormalised over the legal moves; ``v`` (tanh) is the value for the
side to move in [-1, 1] (the paper's 1 / 0.5 / 0 target is ``(v + 1) / 2``).
"""
from __future__ import annotations

import numpy as np

from evaluators import encodings as enc
from evaluators import leafbatch
from evaluators.nets import SixtyFourNet
from evaluators.neural import CompiledEncoder, PolicyValueEvaluator, keyed_table

DEFAULT_WEIGHTS = "sixtyfour_crazyhouse.pt"


class SixtyFourEvaluator(PolicyValueEvaluator):
    """A SixtyFour residual network behind the evaluator interface."""

    name = "sixtyfour"
    family = "sixtyfour"
    net_type = SixtyFourNet
    default_weights = DEFAULT_WEIGHTS
    policy_name = "SixtyFour output"

    policy_loss = "poisson"

    @classmethod
    def planes(cls, raw: np.ndarray, variant: str) -> np.ndarray:
        return enc.sixtyfour_planes(raw, variant)

    @classmethod
    def policy_indices(cls, moves: np.ndarray, raw: np.ndarray, seg: np.ndarray) -> np.ndarray:
        return enc.sixtyfour_move_indices(moves)

    def compiled_encoder(self) -> CompiledEncoder:
        return CompiledEncoder(leafbatch.sixtyfour, enc.SIXTYFOUR_PLANES, (), keyed_table(enc.sixtyfour_move_table()))
