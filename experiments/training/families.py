"""What training needs of each network family, registered in one place: its size presets, the
paper's defaults, its optional large-batch recipe, and the function that trains it
(:mod:`experiments.training.train` dispatches through :data:`FAMILIES`; the recipes themselves are
described in :mod:`experiments.training.recipe`).  Adding a family is one entry here, one evaluator
(:mod:`engines.registry`) and one trainer function ``(cfg, ds, run, device, progress) -> meta``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Family:
    """A trainable network family."""

    name: str
    sizes: dict[str, dict[str, Any]]
    defaults: dict[str, float]
    #: ``module:function`` of its trainer
    trainer: str
    #: "policy_value" (value + policy heads; trains on played moves or search targets) or "comparator"
    kind: str = "policy_value"
    #: a large-batch recipe (CrazyAra's: batch 1024, lr 0.35), if the paper has one
    large_batch: dict[str, float] = field(default_factory=dict)
    #: the learning-rate schedule: "one_cycle" (SGD, Nesterov) or "adam" (constant)
    schedule: str = "adam"


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("rise", {
        "tiny": dict(channels=16, blocks=1, expansion_base=16, expansion_step=8, se_blocks=1, value_hidden=16),
        "small": dict(channels=64, blocks=5, expansion_base=64, expansion_step=32, se_blocks=2, value_hidden=128),
        "medium": dict(channels=128, blocks=7, expansion_base=128, expansion_step=64, se_blocks=3, value_hidden=256),
        "paper": dict(),
        "resnet-small": dict(channels=64, blocks=6, value_hidden=128, arch="resnet"),
    }, dict(epochs=7, batch=256, lr=0.1, value_weight=0.01), "experiments.training.policy_value:train_policy_value",
        large_batch=dict(batch=1024, lr=0.35), schedule="one_cycle"),
    Family("sixtyfour", {
        "tiny": dict(channels=16, blocks=1, value_hidden=16),
        "small": dict(channels=64, blocks=4, value_hidden=64),
        "medium": dict(channels=128, blocks=8, value_hidden=128),
        "paper": dict(),
    }, dict(epochs=8, batch=256, lr=0.001, value_weight=1.0), "experiments.training.policy_value:train_policy_value"),
    Family("deepchess", {
        "tiny": dict(pos2vec=[32, 16], comparator=[16]),
        "small": dict(pos2vec=[100, 100, 100], comparator=[100, 100]),  # the paper's distilled size
        "paper": dict(),
    }, dict(epochs=100, batch=256, lr=0.01, value_weight=0.0, ae_epochs=10),
        "experiments.training.deepchess_train:train_deepchess", kind="comparator"),
)}


def policy_value_families() -> list[str]:
    """The families with a value and a policy head (the ones self-play trains)."""
    return [f.name for f in FAMILIES.values() if f.kind == "policy_value"]


def sizes(name: str) -> dict[str, dict[str, Any]]:
    return FAMILIES[name].sizes
