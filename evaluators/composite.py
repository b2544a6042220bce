"""One network's policy with another's value: the head-swap evaluator.

``CompositeEvaluator(policy, value)`` answers ``POLICY_VALUE`` with the priors ``P`` of ``policy``
and the value ``v`` of ``value`` for every leaf (two network calls a leaf batch), and ``SCORE`` with
``value``'s score.  An engine asks for it with the evaluator option ``value_weights`` beside
``weights`` (``rise-mcts:weights=A.pt,value_weights=B.pt``: A's policy, B's value), so it serves
every search its family serves.  It answers the question of a self-play study directly: is a
searched player's gain its policy's or its value's?  (Rate A's policy with B's value against A and
against B under the same search.)

Evaluator calls count as one per leaf, as for a single network (the search's currency); the wall
cost is two forward passes.  Everything else (name, variant, family, inference settings) reads as
the policy network's; the tuning a harness sets (``max_batch``, ``pad_single``, threads, inference
mode) goes to both.
"""
from __future__ import annotations

from typing import Any, Sequence

from board import Position
from evaluators.base import Evaluation, Evaluator, Leaf

#: attributes a harness sets on an evaluator: set on both networks
_SHARED = ("max_batch", "pad_single")


class CompositeEvaluator(Evaluator):
    """``policy``'s priors, ``value``'s value (module docstring)."""

    policy: Evaluator
    value: Evaluator

    def __init__(self, policy: Evaluator, value: Evaluator) -> None:
        if getattr(policy, "variant", None) != getattr(value, "variant", None):
            raise ValueError(f"the value network plays {getattr(value, 'variant', None)}, the policy network "
                             f"{getattr(policy, 'variant', None)}")
        object.__setattr__(self, "policy", policy)
        object.__setattr__(self, "value", value)

    def __getattr__(self, name: str) -> Any:  # what the composite does not define reads as the policy network's
        return getattr(object.__getattribute__(self, "policy"), name)

    def __setattr__(self, name: str, v: Any) -> None:
        if name in _SHARED:
            setattr(self.policy, name, v)
            setattr(self.value, name, v)
        else:
            object.__setattr__(self, name, v)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.policy.name}+value"

    @property
    def variants(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset(self.policy.variants) & frozenset(self.value.variants)

    def serves(self) -> frozenset[str]:
        return self.policy.serves() & self.value.serves()

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        priors = self.policy.evaluate(leaves)
        values = self.value.evaluate(leaves)
        return [Evaluation(v.value, p.priors) for p, v in zip(priors, values)]

    def score(self, pos: Position) -> int:
        return self.value.score(pos)

    def score_many(self, positions: Sequence[Position]) -> list[int]:
        return self.value.score_many(positions)

    def set_threads(self, threads: int) -> None:
        for ev in (self.policy, self.value):
            if hasattr(ev, "set_threads"):
                ev.set_threads(threads)

    def set_inference(self, mode: str) -> None:
        for ev in (self.policy, self.value):
            if hasattr(ev, "set_inference"):
                ev.set_inference(mode)

    def warm_up(self) -> None:
        for ev in (self.policy, self.value):
            if hasattr(ev, "warm_up"):
                ev.warm_up()

    def close(self) -> None:
        for ev in (self.policy, self.value):
            ev.close()
