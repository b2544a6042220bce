"""A self-play loop's settings and records (:mod:`experiments.selfplay.loop`), shared by the loop, its
gates (:mod:`~experiments.selfplay.gates`) and its report (:mod:`~experiments.selfplay.report`):
the parsed config (:class:`LoopConfig`, its arms), an arm's ``state.json`` (:class:`State`), where a
round's network lies (:func:`weights_of`) and the engine that plays it (:func:`with_weights`,
:func:`selfplay_search`).  It imports none of the three, so they import it and not each other.
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from typing import Any

from board.variants import CHESS, CRAZYHOUSE, variant_of
from engines import registry
from engines.base import EngineSpec
from engines.registry import as_given, extend
from experiments.harness import openings as openings_mod
from experiments.harness.store import file_id
from experiments.harness.tomlconfig import ConfigError, Section
from experiments.paths import InputError, read_json, write_atomic
from search.mcts_config import MCTSConfig
from search.mcts_rules import root_rule_class

STATE = "state.json"


#: rounds or generations a loop may ask for (each is minutes of work: more is a typo, not a plan)
MAX_GENERATIONS = 10_000


@dataclass
class Arm:
    name: str
    engine: str
    gate_engine: str
    #: "selfplay", or "control" (rounds: no self-play, the supervised data only, for the CPU time the
    #: self-play arm before it spent on that round: what self-play must beat)
    kind: str = "selfplay"
    #: the arm's own seed of its self-play games (two arms of one search with two seeds: a replicate)
    seed: int | None = None

    @functools.cached_property
    def spec(self) -> EngineSpec:
        """The self-play engine, resolved once (named by the text as given): the loop derives every
        engine the arm plays from this value (:func:`with_weights`, :func:`selfplay_search`)."""
        return as_given(self.engine)

    @functools.cached_property
    def gate_spec(self) -> EngineSpec:
        """The gate's and the rating's engine, resolved once."""
        return self.spec if self.gate_engine == self.engine else as_given(self.gate_engine)


@dataclass
class LoopConfig:
    """A parsed ``rl`` config (module docstring)."""

    name: str
    initial: str
    arms: list[Arm]
    variant: str = CRAZYHOUSE.name
    model: str = "rise"
    generations: int = 3
    seed: int = 1
    out: str = ""
    mode: str = "generations"  # or "rounds" (module docstring)
    selfplay: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    rate: dict[str, Any] = field(default_factory=dict)
    gate0: dict[str, Any] = field(default_factory=dict)
    gate1: dict[str, Any] = field(default_factory=dict)
    calibrate: dict[str, Any] = field(default_factory=dict)
    offline: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def two_board(self) -> bool:
        """Bughouse: four-seat games on a clock, the two-board trainer, a four-seat gate match."""
        return variant_of(self.variant).boards > 1

    def arm_dir(self, arm: str) -> str:
        return os.path.join(self.out, arm)

    def gen_dir(self, arm: str, gen: int) -> str:
        return os.path.join(self.out, arm, f"gen-{gen:03d}")


def check_suite(sec: Section, key: str, path: str, variant: str, pairs: int) -> None:
    """The opening suite ``path`` ("": the variant's own) loads and has ``pairs`` distinct openings."""
    try:
        n = len(openings_mod.load_suite(path or str(openings_mod.default_suite(variant)), variant))
    except ValueError as e:
        raise sec.error(key, str(e)) from None
    if n < pairs:
        raise sec.error(key, f"{pairs} game pairs need {pairs} distinct openings; the suite has {n}")


#: ``[train]`` keys the loop reads itself (the rest are the trainer's, :class:`TrainConfig`)
LOOP_TRAIN_KEYS = ("window", "supervised", "supervised_games", "window_positions", "supervised_fraction",
                   "supervised_taper", "reanalyse_fraction", "reanalyse_nodes")


#: the Fairy-Stockfish games the shipped loop configs train and measure on (``data/`` is not in git)
DATAGEN = {CRAZYHOUSE.name: f"--variant {CRAZYHOUSE.name} --games 100000 --nodes 3000 --workers 1 --minutes 105 --seed 20261201",
           CHESS.name: f"--variant {CHESS.name} --games 100000 --nodes 3000 --workers 1 --minutes 95 --seed 20261202"}


def no_data(path: str, variant: str) -> str:
    """The one line for a data folder that is not there: the command that makes it."""
    how = DATAGEN.get(variant, f"--variant {variant} --games 5000 --nodes 3000")
    return (f"no data at {path!r}: make it with `searchbench datagen --out {path} {how}` "
            "(Fairy-Stockfish games; docs/selfplay.md, \"Training data\")")


def list_of(sec: Section, k: str, kind: type, default: list[Any]) -> list[Any]:
    v = sec.get(k, list, default)
    if not all(isinstance(x, kind) and not isinstance(x, bool) for x in v):
        raise sec.error(k, f"must be an array of {kind.__name__}")
    return list(v)


class State:
    """``OUT/ARM/state.json``: the best generation and what finished, per generation."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {"best": 0, "gens": {}}
        if os.path.lexists(path):
            try:
                self.data = read_json(path, "loop state file")  # type: ignore[assignment]  # checked below
            except InputError as e:
                raise ConfigError(f"{path} is not a loop state file ({e})") from None
            why = _bad_state(self.data)
            if why:
                raise ConfigError(f"{path} is not a loop state file: {why} (move it away to run the arm afresh)")

    @property
    def best(self) -> int:
        return int(self.data["best"])

    def gen(self, g: int) -> dict[str, Any]:
        out: dict[str, Any] = self.data["gens"].setdefault(str(g), {})
        return out

    def save(self) -> None:
        write_atomic(self.path, json.dumps(self.data, indent=1), "loop state file")


#: what each stage's record in ``state.json`` holds (name: type), besides ``seconds`` and ``cores``
_STAGE_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "selfplay": {"games": int, "positions": int, "network": int, "engine": str},
    "train": {"init": int, "data": list},
    "gate": {"against": int, "games": int, "wins": int, "draws": int, "losses": int, "score": (int, float),
             "accepted": bool, "rule": str, "nodes": int},
}


def _bad_state(d: Any) -> str | None:
    """Why ``d`` is not the content of a ``state.json`` (None: it is)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if not isinstance(d, dict) or not isinstance(d.get("gens"), dict):
        return "expected an object with 'best' and 'gens'"
    best = d.get("best")
    if not isinstance(best, int) or isinstance(best, bool) or best < 0:
        return f"'best' is {best!r}, not a generation"
    for g, rec in d["gens"].items():
        if not (isinstance(g, str) and g.isdigit() and int(g) >= 1 and isinstance(rec, dict)):
            return f"generation {g!r} is not a generation's record"
        for stage, want in _STAGE_FIELDS.items():
            if stage not in rec:
                continue
            r = rec[stage]
            if not isinstance(r, dict) or not number(r.get("seconds")) or not number(r.get("cores")):
                return f"generation {g}: the {stage} record has no seconds and cores"
            for k, kind in want.items():
                kinds = kind if isinstance(kind, tuple) else (kind,)
                if not isinstance(r.get(k), kinds) or (bool not in kinds and isinstance(r.get(k), bool)):
                    return f"generation {g}: the {stage} record's {k!r} is {r.get(k)!r}"
    if best and not d["gens"].get(str(best), {}).get("gate", {}).get("accepted"):
        return f"'best' is generation {best}, which no gate accepted"
    return None


FREE_KEYS = {"concurrency", "workers", "backend", "ray_address", "threads"}


def first_difference(old: Any, new: Any, key: str = "") -> tuple[str, Any, Any] | None:
    """The first key (dotted) where ``new`` differs from ``old``, with both values; None if none."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in new:
            d = first_difference(old.get(k), new[k], f"{key}.{k}" if key else str(k))
            if d:
                return d
        return None
    return None if old == new else (key, old, new)


def weights_of(cfg: LoopConfig, arm: str, gen: int) -> str:
    """The network of generation ``gen`` of an arm (0: the initial one, as the config names it: a
    shipped name stays a name, so engine strings and game keys do not depend on the checkout's path)."""
    return cfg.initial if gen == 0 else os.path.join(cfg.gen_dir(arm, gen), "train", "model.pt")


def with_weights(engine: EngineSpec, weights: str) -> EngineSpec:
    """``engine`` playing the network ``weights`` (named ``ENGINE,weights=W`` in games and keys)."""
    return extend(engine, {"weights": weights})


def selfplay_search(cfg: "LoopConfig", engine: EngineSpec) -> EngineSpec:
    """The arm's self-play engine: in rounds, with what its root rule adds for the loop's rounds
    (``ROUNDS``; PUCT's: check enhancement off) where the spec sets none of it."""
    if cfg.mode != "rounds" or not isinstance(engine.config, MCTSConfig):
        return engine
    add = {k: v for k, v in root_rule_class(engine.config).ROUNDS.items() if k not in engine.options}
    return registry.extend(engine, add) if add else engine


_ADDED = {("selfplay", "full_fraction"): 1.0, ("selfplay", "fast_nodes"): 0, ("selfplay", "evals"): 0,
          ("train", "policy_weight"): None, ("train", "reanalyse_fraction"): 0.0, ("train", "reanalyse_nodes"): 0}


def run_record(cfg: LoopConfig) -> dict[str, Any]:
    """What a loop folder's ``loop.json`` records of the settings its games and networks depend on."""
    from evaluators.neural import weights_path  # deferred: loads torch

    return {"variant": cfg.variant, "model": cfg.model, "seed": cfg.seed, "initial": cfg.initial, "mode": cfg.mode,
            "initial_file": file_id(weights_path(cfg.initial)),
            "arms": {a.name: {"engine": a.engine, "gate_engine": a.gate_engine, "kind": a.kind,
                              **({"seed": a.seed} if a.seed is not None else {})} for a in cfg.arms},
            **{sec: {k: v for k, v in getattr(cfg, sec).items() if k not in FREE_KEYS}
               for sec in ("selfplay", "train", "gate")}}


def same_run(cfg: LoopConfig, path: str, where: str, remedy: str) -> dict[str, Any]:
    """The run record of ``cfg`` merged with the one in ``path`` (a ``loop.json``: arms may be added);
    :class:`ConfigError` naming the first setting that differs (``WHERE holds a loop run with seed 1,
    not 2: REMEDY``)."""
    want = run_record(cfg)
    try:
        have = read_json(path, "loop run file")
    except InputError as e:
        raise ConfigError(f"{path} is not a loop run file ({e}); give another out") from None
    if not isinstance(have, dict) or not isinstance(have.get("arms"), dict):
        raise ConfigError(f"{path} is not a loop run file; give another out")
    for arm, rec in want["arms"].items():  # an arm's recorded keys (its seed) must all be given again
        old = have["arms"].get(arm)
        if isinstance(old, dict) and set(old) != set(rec):
            k = sorted(set(old) ^ set(rec))[0]
            raise ConfigError(f"{where} holds a loop run whose arm {arm!r} has {k} {old.get(k)!r}, not "
                              f"{rec.get(k)!r}: {remedy}")
    want["arms"] = {**have["arms"], **want["arms"]}  # arms may be added; the old ones must match
    for (sec, k), v in _ADDED.items():
        if isinstance(have.get(sec), dict):
            have[sec].setdefault(k, v)
    diff = first_difference(have, want)
    if diff:
        k, a, b = diff
        raise ConfigError(f"{where} holds a loop run with {k} {a!r}, not {b!r}: {remedy}")
    return want


def cached_record(path: str, key: dict[str, Any], make: Any, kind: type = object, indent: int | None = 1) -> Any:
    """``make()``'s result, kept in the JSON record ``path`` under ``key`` (measured once; another key,
    or a stored value that is not a ``kind``, measures again)."""
    if os.path.lexists(path):
        try:
            have = read_json(path, "loop record")
            if isinstance(have, dict) and have.get("key") == key and isinstance(have.get("value"), kind):
                return have["value"]
        except InputError:
            pass
    value = make()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomic(path, json.dumps({"key": key, "value": value}, indent=indent), "loop record")
    return value
