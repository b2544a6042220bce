"""Every network family in one table (as lc0 and KataGo keep one description per net): its network
(config and module classes), the evaluator that runs it, and what training needs of it (size
presets, the paper's defaults, the schedule, the trainer).  The layers read this one table:
:mod:`evaluators.nets` builds and loads networks from it, :mod:`engines.registry` names the
evaluators from it, :mod:`experiments.training` trains with it.  Classes and trainers are named
``module:attribute`` and imported when used, so the table imports nothing above ``evaluators``.

Adding a family is one entry here, its network and evaluator module (2 files), and its trainer
``(cfg, ds, run, device, progress) -> meta`` when it trains through ``searchbench train``.
"""
from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from board.variants import BUGHOUSE, ONE_BOARD


@dataclass(frozen=True)
class Family:
    """A network family."""

    name: str
    #: ``module:Class`` of the network's config dataclass and of its ``nn.Module``
    config: str
    network: str
    #: the evaluator's registry name and its ``module:Class`` (``load(path, threads, ...)``)
    evaluator_name: str
    evaluator: str
    sizes: dict[str, dict[str, Any]]
    defaults: dict[str, float]
    #: ``module:function`` of its trainer
    trainer: str
    #: "policy_value" (value + policy heads; trains on played moves or search targets), "comparator"
    #: (DeepChess) or "two_board" (bughouse: its own data and trainer, ``searchbench bughouse-train``)
    kind: str = "policy_value"
    #: a large-batch recipe (CrazyAra's: batch 1024, lr 0.35), if the paper has one
    large_batch: dict[str, float] = field(default_factory=dict)
    #: the learning-rate schedule: "one_cycle" (SGD, Nesterov) or "adam" (constant)
    schedule: str = "adam"

    @property
    def trains_with_train(self) -> bool:
        """Trained by ``searchbench train`` (data shards of one-board positions)."""
        return self.kind in ("policy_value", "comparator")


def resolve(entry: str) -> Any:
    """The attribute a ``module:attribute`` entry names."""
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("rise", "evaluators.nets:RiseConfig", "evaluators.nets:RiseNet", "rise", "evaluators.rise:RiseEvaluator", {
        "tiny": dict(channels=16, blocks=1, expansion_base=16, expansion_step=8, se_blocks=1, value_hidden=16),
        "small": dict(channels=64, blocks=5, expansion_base=64, expansion_step=32, se_blocks=2, value_hidden=128),
        "medium": dict(channels=128, blocks=7, expansion_base=128, expansion_step=64, se_blocks=3, value_hidden=256),
        "paper": dict(),
        "resnet-small": dict(channels=64, blocks=6, value_hidden=128, arch="resnet"),
    }, dict(epochs=7, batch=256, lr=0.1, value_weight=0.01), "experiments.training.policy_value:train_policy_value",
        large_batch=dict(batch=1024, lr=0.35), schedule="one_cycle"),
    Family("sixtyfour", "evaluators.nets:SixtyFourConfig", "evaluators.nets:SixtyFourNet", "sixtyfour",
           "evaluators.sixtyfour:SixtyFourEvaluator", {
               "tiny": dict(channels=16, blocks=1, value_hidden=16),
               "small": dict(channels=64, blocks=4, value_hidden=64),
               "medium": dict(channels=128, blocks=8, value_hidden=128),
               "paper": dict(),
           }, dict(epochs=8, batch=256, lr=0.001, value_weight=1.0),
           "experiments.training.policy_value:train_policy_value"),
    Family("deepchess", "evaluators.nets:DeepChessConfig", "evaluators.nets:DeepChessNet", "deepchess",
           "evaluators.deepchess:DeepChessEvaluator", {
               "tiny": dict(pos2vec=[32, 16], comparator=[16]),
               "small": dict(pos2vec=[100, 100, 100], comparator=[100, 100]),  # the paper's distilled size
               "paper": dict(),
           }, dict(epochs=100, batch=256, lr=0.01, value_weight=0.0, ae_epochs=10),
           "experiments.training.deepchess_train:train_deepchess", kind="comparator"),
    Family(BUGHOUSE.name, "evaluators.bughouse_net:BughouseNetConfig", "evaluators.bughouse_net:BughouseNet",
           "bughouse-net", "evaluators.bughouse_net:BughouseNetEvaluator", {
               "tiny": dict(channels=16, blocks=1, value_hidden=32),
               "small": dict(channels=48, blocks=3, value_hidden=128),
               "medium": dict(channels=96, blocks=6, value_hidden=256),
               "lazybug": dict(),  # LazyBug's 13 blocks of 256 channels
           }, dict(epochs=20, batch=256, lr=0.02, value_weight=1.0, policy_weight=0.01),
           "experiments.training.bughouse_train:train", kind="two_board"),
)}


def policy_value_families() -> list[str]:
    """The families with a value and a policy head that self-play trains (one-board)."""
    return [f.name for f in FAMILIES.values() if f.kind == "policy_value"]


def sizes(name: str) -> dict[str, dict[str, Any]]:
    return FAMILIES[name].sizes


#: the shipped weights (package data, installed or not): ``<family>_<variant>.pt`` and their cards
WEIGHTS_DIR = str(resources.files("evaluators") / "weights")
#: the file in WEIGHTS_DIR naming a variant's default network where ``searchbench ship`` replaced
#: ``<family>_<variant>.pt`` (``{"rise_crazyhouse": "rise_crazyhouse-<digest>.pt"}``)
SHIPPED = "shipped.json"


def shipped_name(family: str, variant: str, weights_dir: str | None = None) -> str:
    """The file name of the default network of ``family`` in ``variant``: the one ``shipped.json``
    names, else ``<family>_<variant>.pt``."""
    import json

    key = f"{family}_{variant}"
    path = os.path.join(weights_dir or WEIGHTS_DIR, SHIPPED)
    try:
        with open(path) as f:
            named = json.load(f).get(key)
    except FileNotFoundError:
        return f"{key}.pt"
    except (OSError, ValueError, AttributeError) as e:
        raise ValueError(f"{path} is not a table of shipped networks ({e})") from None
    return named if isinstance(named, str) and named else f"{key}.pt"


#: the field a weights name may hold to name one file a variant: ``rise_{variant}_score.pt`` is
#: ``rise_crazyhouse_score.pt`` in crazyhouse and ``rise_chess_score.pt`` in chess (an engine's
#: default weights that differ by variant, as rise-ubfm's)
VARIANT_FIELD = "{variant}"


def for_variant(weights: str, variant: str) -> str:
    """``weights`` with its :data:`VARIANT_FIELD` filled with ``variant`` (unchanged without one)."""
    return weights.replace(VARIANT_FIELD, variant)


def _weights_exist(path: str) -> bool:
    """Whether ``path`` is a file here or, a bare name, in :data:`WEIGHTS_DIR`."""
    return os.path.isfile(path) or (os.path.basename(path) == path and os.path.isfile(os.path.join(WEIGHTS_DIR, path)))


def family_variants(family: Family, weights: str | None = None) -> tuple[str, ...]:
    """The variants a family's network plays: bughouse for a two-board family; else the variant of
    the shipped weights named (``<family>_<variant>.pt``), or every variant the family ships weights
    for (other weights: the family's variants, as a network file names none of its own); weights
    with a :data:`VARIANT_FIELD`: the variants whose file exists."""
    if family.kind == "two_board":
        return (BUGHOUSE.name,)
    if weights is not None and VARIANT_FIELD in weights:
        return tuple(v.name for v in ONE_BOARD if _weights_exist(for_variant(weights, v.name)))
    shipped = tuple(v.name for v in ONE_BOARD if os.path.exists(os.path.join(WEIGHTS_DIR, f"{family.name}_{v.name}.pt")))
    stem = os.path.basename(weights or "").split(".")[0]
    return tuple(v for v in shipped if stem == f"{family.name}_{v}") or shipped


def file_id(path: str | Path) -> str:
    """A file's identity in records and keys (which network played, an openings file): ``name:`` and
    the first 10 hex digits of its SHA-1 (the content, not the path: the same file elsewhere has the
    same id, a changed one another). OSError if it cannot be read or is not a regular file
    (``/dev/zero`` would never end)."""
    p = Path(path)
    if p.exists() and not p.is_file():
        raise OSError(f"{str(p)!r} is not a regular file")
    h = hashlib.sha1()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{p.name}:{h.hexdigest()[:10]}"
