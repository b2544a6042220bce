"""The evaluator interface: the only thing a search knows about an evaluator.

An evaluator serves some of three kinds of question (``Evaluator.serves``):

``POLICY_VALUE`` (for MCTS)
    :meth:`Evaluator.evaluate` takes a *batch* of :class:`Leaf` requests and returns, for each,
    the value ``v`` in [-1, 1] for the side to move and the prior ``P(s, a)`` over the leaf's legal
    moves (same order as ``Leaf.moves``, summing to 1).  Searches collect leaves and hand them over
    through an ask/tell API (see :mod:`search.base`), so a harness can pool the leaves of many
    concurrent games into one call.
``SCORE`` (for alpha-beta)
    :meth:`Evaluator.score` returns a static score in centipawns for the side to move.
``COMPARE`` (for the DeepChess comparator search)
    :meth:`Evaluator.compare` takes pairs of positions and returns, for each pair (a, b), the
    probability that a is better than b **for White** (the DeepChess convention).

Values and centipawns are converted by one scale per variant, :func:`value_to_cp` and
:func:`cp_to_value` (:mod:`evaluators.scale`), re-exported here for the searches.

A ``Leaf`` carries ``Position.raw_state()`` (bitboards as ints) so that neural evaluators encode a
whole batch at once with numpy instead of square by square; ``Leaf.n_moves`` and ``Leaf.move_vec``
serve evaluators that need no Python list of the moves.  ``Leaf`` and ``Evaluation`` are compiled
records defined in :mod:`evaluators.leaf` (see there for why) and imported from here.  Pairing a
search with an evaluator that does not serve what it needs is an :class:`EvaluatorError` raised by
:func:`require`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Final, Sequence

from board import Position
from board.variants import ONE_BOARD
from evaluators.leaf import Evaluation as Evaluation, Leaf as Leaf  # re-exported: part of this interface
from evaluators.scale import cp_to_value as cp_to_value, value_to_cp as value_to_cp  # noqa: F401 - the one scale

POLICY_VALUE: Final = "policy_value"
SCORE: Final = "score"
COMPARE: Final = "compare"
CAPABILITIES: Final = (POLICY_VALUE, SCORE, COMPARE)


#: how a network evaluator runs (evaluators.neural): "auto" (the default: ONNX Runtime int8 where the
#: network's int8 model passed its SPRT against float32, float32 ONNX Runtime where it did not),
#: ONNX Runtime float32, TorchScript ("frozen"), eager torch, ONNX Runtime with static int8
#: quantisation (policy-value networks), and the same quantised from the network's quantisation-tuned
#: copy (``NAME.qat.pt`` beside its weights; ``searchbench qat``)
INFERENCE_MODES: Final = ("auto", "onnxruntime", "frozen", "eager", "onnxruntime-int8", "onnxruntime-int8-qat")
#: the mode a network runs in unless told
DEFAULT_INFERENCE: Final = INFERENCE_MODES[0]
#: the backends themselves (what ``auto`` resolves to, and what a game records as played)
BACKENDS: Final = INFERENCE_MODES[1:]
#: the modes that run ONNX Runtime on a CPU
ONNX_MODES: Final = ("auto", "onnxruntime", "onnxruntime-int8", "onnxruntime-int8-qat")
#: the int8 modes: quantised from the network itself, and from its quantisation-tuned copy
INT8_MODES: Final = ("onnxruntime-int8", "onnxruntime-int8-qat")


class EvaluatorError(ValueError):
    """A search was paired with an evaluator that cannot serve it, or weights are unusable."""


class Evaluator(ABC):
    """Base class of all evaluators; subclasses override what they serve."""

    #: short name used in engine specs and reports
    name: str = "evaluator"
    #: variants the evaluator was built for
    variants: frozenset[str] = frozenset(v.name for v in ONE_BOARD)

    @abstractmethod
    def serves(self) -> frozenset[str]:
        """The subset of :data:`CAPABILITIES` this evaluator answers."""

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        """Batched value and priors (``POLICY_VALUE``)."""
        raise EvaluatorError(f"evaluator {self.name!r} does not serve {POLICY_VALUE}")

    def score(self, pos: Position) -> int:
        """Static score in centipawns for the side to move (``SCORE``)."""
        raise EvaluatorError(f"evaluator {self.name!r} does not serve {SCORE}")

    def score_many(self, positions: Sequence[Position]) -> list[int]:
        """:meth:`score` of several positions, in order (a network answers them in one call; the
        same numbers as one at a time where its outputs do not depend on the batch)."""
        return [self.score(p) for p in positions]

    def compare(self, pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], variant: str) -> list[float]:
        """For each pair of raw states (a, b): P(a is better than b for White) (``COMPARE``)."""
        raise EvaluatorError(f"evaluator {self.name!r} does not serve {COMPARE}")

    def close(self) -> None:
        """Release resources (threads, files); the default has none."""


def require(evaluator: Evaluator, capability: str, variant: str | None = None) -> None:
    """Raise :class:`EvaluatorError` unless ``evaluator`` serves ``capability`` (for ``variant``)."""
    if capability not in CAPABILITIES:
        raise EvaluatorError(f"unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}")
    if capability not in evaluator.serves():
        served = ", ".join(sorted(evaluator.serves())) or "nothing"
        raise EvaluatorError(f"evaluator {evaluator.name!r} cannot serve {capability} (it serves {served})")
    if variant is not None and variant not in evaluator.variants:
        raise EvaluatorError(f"evaluator {evaluator.name!r} does not play {variant} "
                             f"(it plays {', '.join(sorted(evaluator.variants))})")
