"""``searchbench train MODEL``: train a registered family (:mod:`evaluators.families`) with
its recipe (:mod:`experiments.training.recipe`) on data shards (:mod:`experiments.training.datagen`,
self-play shards included: :mod:`experiments.selfplay.games`)."""
from __future__ import annotations

import importlib
from typing import Any

import torch

from evaluators.devices import resolve_device
from experiments.paths import run_dir
from experiments.training import datagen
from evaluators.families import FAMILIES
from experiments.training.recipe import (  # noqa: F401 - the command's settings and errors, re-exported
    Run, TrainConfig, TrainError, mirror_files, one_cycle, split,
)


def train(cfg: TrainConfig, progress: bool = True) -> dict[str, Any]:
    """Train ``cfg.model`` and write ``cfg.out``/{checkpoint.pt, metrics.csv, model.pt}."""
    cfg = cfg.resolved()
    if not FAMILIES[cfg.model].trains_with_train:
        known = ", ".join(f.name for f in FAMILIES.values() if f.trains_with_train)
        raise TrainError(f"{cfg.model} trains on its own game databases (searchbench {cfg.model}-train); "
                         f"searchbench train trains {known}")
    device = resolve_device(cfg.device)
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    ds = datagen.load_dataset(cfg.data)
    module, _, function = FAMILIES[cfg.model].trainer.partition(":")
    trainer = getattr(importlib.import_module(module), function)
    with run_dir(cfg.out):  # a run refused from here on leaves no folder of its own behind
        meta: dict[str, Any] = trainer(cfg, ds, Run(cfg), device, progress)
        return meta


__all__ = ["Run", "TrainConfig", "TrainError", "mirror_files", "one_cycle", "split", "train"]
