"""CrazyAra's RISE network as an evaluator: POLICY_VALUE for MCTS, SCORE for alpha-beta.

Input: CrazyAra planes (:func:`evaluators.encodings.crazyara_planes`); policy: the 81-plane map,
mirrored for Black, softmax over the legal moves only.  ``v`` is the value for the side to move;
``score`` converts it to centipawns with the suite's one scale (:func:`evaluators.scale.value_to_cp`).
"""
from __future__ import annotations

import numpy as np

from board.position import RAW_TURN
from board.variants import variant_of
from evaluators import encodings as enc
from evaluators import leafbatch
from evaluators.nets import RiseNet
from evaluators.neural import CompiledEncoder, PolicyValueEvaluator, keyed_table

DEFAULT_WEIGHTS = "rise_crazyhouse.pt"


class RiseEvaluator(PolicyValueEvaluator):
    """A RISE (or AlphaZero-style ResNet) network behind the evaluator interface."""

    name = "rise"
    family = "rise"
    net_type = RiseNet
    default_weights = DEFAULT_WEIGHTS
    policy_name = "CrazyAra policy map"

    @classmethod
    def planes(cls, raw: np.ndarray, variant: str) -> np.ndarray:
        return enc.crazyara_planes(raw, variant)

    @classmethod
    def policy_indices(cls, moves: np.ndarray, raw: np.ndarray, seg: np.ndarray) -> np.ndarray:
        return enc.crazyara_policy_indices(moves, raw[seg, RAW_TURN] == 1)

    def compiled_encoder(self) -> CompiledEncoder:
        zh = variant_of(self.variant).pockets
        return CompiledEncoder(lambda leaves: leafbatch.crazyara(leaves, zh), enc.CRAZYARA_PLANES[self.variant],
                               leafbatch.CRAZYARA_CONSTS[self.variant], keyed_table(enc.crazyara_move_table()))
