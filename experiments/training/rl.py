"""``searchbench rl CONFIG.toml``: self-play reinforcement learning, SixtyFour's ``SelfLearningLoop``
with a pluggable search (and, with two arms, the Gumbel paper's own question).

One **arm** is one loop: a self-play engine (any MCTS-family engine: its search gives the policy
targets, :mod:`experiments.training.selfplay`) and the engine that gates.  Every arm starts from the
same network (``initial``, generation 0) and runs ``generations`` times:

1. **generate**: the current best network plays ``selfplay.games`` self-play games at
   ``selfplay.nodes`` simulations a move, with the papers' exploration (``OUT/ARM/gen-NNN/selfplay``);
2. **train**: from the current best weights (``--init``), on the games of the last ``train.window``
   generations (optionally mixed with supervised shards, ``train.supervised``), with the family's
   recipe and the keys of ``[train]`` (``OUT/ARM/gen-NNN/train``);
3. **gate**: the candidate plays the best at ``gate.nodes`` (the gate engine, no exploration) on
   ``gate.games / 2`` distinct openings with colours reversed; it replaces the best when it scores
   at least ``gate.threshold`` (AlphaGo Zero: 0.55; SixtyFour: a win, 0.5), or, with ``gate.sprt``,
   when a pentanomial SPRT accepts H1 (``elo0``, ``elo1``, ``alpha``, ``beta``) within the games.
   The games are in ``OUT/ARM/gen-NNN/gate.sqlite`` (+ PGN), the decision in ``OUT/ARM/state.json``
   and in the generation's model card (``OUT/ARM/gen-NNN/card.md``).

The gate keeps the best network: the loop never hands on a weaker one than it was shown.  Arms
advance generation by generation in turn.  Every stage resumes after a kill at any point: self-play
from its journal, training from its checkpoint, the gate from its database; ``state.json`` records
what finished (written atomically) with its wall time and cores, the cost axis of the report.

The rating and the report (``[rate]``, :mod:`experiments.training.rl_report`) follow the loop.

Config keys (every one optional but ``name``, ``initial`` and the arms; defaults in brackets)::

    name, variant ["crazyhouse"], model ["rise"], initial (weights), generations [3], seed [1],
    out ["runs/rl/NAME"]
    [[arms]]    name, engine (self-play), gate_engine [engine]
    [selfplay]  games [200], nodes [16], concurrency [16], workers [1], backend ["local"], ray_address,
                random_plies [[0, 0]], max_plies [300], shard_games [50], explore [true]
    [train]     window [2], epochs [1], batch, lr, value_weight, q_weight [0], weight_decay [1e-4],
                threads [1], bf16 [false], mirror [false], supervised [[]], supervised_games [0: all], minutes,
                val_fraction [0.1], select_fraction [0.05] (games held out: report, best epoch)
    [gate]      games [40], nodes [64], threshold [0.55], sprt [false], elo0 [0], elo1 [10], alpha [0.05],
                beta [0.05], concurrency [16], workers [1], openings [the variant's suite]
    [rate]      see experiments.training.rl_report
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from experiments.harness.tomlconfig import ConfigError, Section, load
from experiments.paths import write_atomic
from experiments.training.selfplay import SelfPlayConfig, SelfPlayError

STATE = "state.json"


@dataclass
class Arm:
    name: str
    engine: str
    gate_engine: str


@dataclass
class LoopConfig:
    """A parsed ``rl`` config (module docstring)."""

    name: str
    initial: str
    arms: list[Arm]
    variant: str = "crazyhouse"
    model: str = "rise"
    generations: int = 3
    seed: int = 1
    out: str = ""
    selfplay: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    rate: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    def arm_dir(self, arm: str) -> str:
        return os.path.join(self.out, arm)

    def gen_dir(self, arm: str, gen: int) -> str:
        return os.path.join(self.out, arm, f"gen-{gen:03d}")


def check_suite(sec: Section, key: str, path: str, variant: str, pairs: int) -> None:
    """The opening suite ``path`` ("": the variant's own) loads and has ``pairs`` distinct openings."""
    from experiments.harness import openings as openings_mod

    try:
        n = len(openings_mod.load_suite(path or str(openings_mod.default_suite(variant)), variant))
    except ValueError as e:
        raise sec.error(key, str(e)) from None
    if n < pairs:
        raise sec.error(key, f"{pairs} game pairs need {pairs} distinct openings; the suite has {n}")


def _check_train(t: Section, cfg: "LoopConfig") -> None:
    """The ``[train]`` values as the trainer itself checks them (before any self-play)."""
    from experiments.training.recipe import TrainConfig

    keys = {k: v for k, v in cfg.train.items() if k not in ("window", "supervised", "supervised_games")}
    try:
        TrainConfig(model=cfg.model, data=[], out="", **keys).resolved()
    except ValueError as e:
        raise t.error(None, str(e)) from None


def _list_of(sec: Section, k: str, kind: type, default: list[Any]) -> list[Any]:
    v = sec.get(k, list, default)
    if not all(isinstance(x, kind) and not isinstance(x, bool) for x in v):
        raise sec.error(k, f"must be an array of {kind.__name__}")
    return list(v)


def parse(path: str) -> LoopConfig:
    """Read and check a config; :class:`ConfigError` (file:line: key: why) for anything bad."""
    from engines import registry
    from engines.base import EngineError
    from evaluators.neural import weights_path
    from experiments.harness.tomlconfig import writable_dir
    from experiments.training.families import policy_value_families
    from experiments.training.selfplay import selfplay_engine

    root = load(path)
    name = root.get("name", str, check=lambda v: None if v and v[0] != "." and all(c.isalnum() or c in "-_." for c in v)
                    else "must be letters, digits, '-', '_' or '.', not starting with '.' (it names folders)")
    variant = root.choice("variant", ("chess", "crazyhouse"), "crazyhouse")
    model = root.choice("model", tuple(policy_value_families()), "rise")
    initial = root.get("initial", str)
    if not os.path.isfile(weights_path(initial)):
        raise root.error("initial", f"no weights file {initial!r}")
    cfg = LoopConfig(name=name, initial=initial, arms=[], variant=variant, model=model,
                     generations=root.positive("generations", 3), seed=root.get("seed", int, 1),
                     out=root.get("out", str, f"runs/rl/{name}", check=writable_dir), path=str(path))
    names = set()
    for a in root.tables("arms", required=True):
        arm = Arm(a.get("name", str), a.get("engine", str), "")
        arm.gate_engine = a.get("gate_engine", str, arm.engine)
        if arm.name in names or not arm.name.replace("-", "").replace("_", "").isalnum():
            raise a.error("name", f"arm names must be distinct letters, digits, '-' or '_' (got {arm.name!r})")
        names.add(arm.name)
        for key in ("engine", "gate_engine"):
            try:
                selfplay_engine(getattr(arm, key), variant, explore=False)
                spec = registry.resolve(getattr(arm, key))
                own = registry.split_spec(getattr(arm, key))[1]
            except (SelfPlayError, EngineError) as e:
                raise a.error(key, str(e)) from None
            if any(k.strip().lower() == "weights" for k in own):
                raise a.error(key, "names its own weights; the loop sets them (generation 0 is `initial`): "
                                   "remove weights= from the engine")
            if spec.evaluator != model:
                raise a.error(key, f"runs the {spec.evaluator} evaluator; the loop trains {model}")
        a.done()
        cfg.arms.append(arm)
    if not cfg.arms:
        raise root.error("arms", "give at least one [[arms]] table")
    s = root.table("selfplay")
    plies = _list_of(s, "random_plies", int, [0, 0])
    if len(plies) != 2 or not 0 <= plies[0] <= plies[1]:
        raise s.error("random_plies", "must be [min, max] with 0 <= min <= max")
    cfg.selfplay = dict(games=s.positive("games", 200), nodes=s.positive("nodes", 16),
                        concurrency=s.positive("concurrency", 16), workers=s.positive("workers", 1),
                        backend=s.choice("backend", ("local", "ray"), "local"),
                        ray_address=s.get("ray_address", str, None), min_random_plies=plies[0],
                        max_random_plies=plies[1], max_plies=s.positive("max_plies", 300),
                        shard_games=s.positive("shard_games", 50), explore=s.get("explore", bool, True))
    s.done()
    t = root.table("train")
    unit = lambda v: None if 0 <= v <= 1 else "must be in [0, 1]"  # noqa: E731
    cfg.train = dict(window=t.positive("window", 2), epochs=t.positive("epochs", 1), batch=t.get("batch", int, None),
                     lr=t.get("lr", float, None), value_weight=t.get("value_weight", float, None),
                     q_weight=t.get("q_weight", float, 0.0, unit), weight_decay=t.get("weight_decay", float, 1e-4),
                     threads=t.positive("threads", 1), bf16=t.get("bf16", bool, False), mirror=t.get("mirror", bool, False),
                     supervised=_list_of(t, "supervised", str, []), supervised_games=t.get("supervised_games", int, 0),
                     minutes=t.get("minutes", float, None), val_fraction=t.get("val_fraction", float, 0.1, unit),
                     select_fraction=t.get("select_fraction", float, 0.05, unit))
    for d in cfg.train["supervised"]:
        if not os.path.exists(d):
            raise t.error("supervised", f"no data at {d!r}")
    if cfg.train["supervised_games"] < 0:
        raise t.error("supervised_games", "must be at least 0 (0: all)")
    _check_train(t, cfg)
    t.done()
    g = root.table("gate")
    cfg.gate = dict(games=g.get("games", int, 40, lambda v: None if v >= 2 and v % 2 == 0 else "must be even, >= 2"),
                    nodes=g.positive("nodes", 64), threshold=g.get("threshold", float, 0.55, unit),
                    sprt=g.get("sprt", bool, False), elo0=g.get("elo0", float, 0.0), elo1=g.get("elo1", float, 10.0),
                    alpha=g.get("alpha", float, 0.05), beta=g.get("beta", float, 0.05),
                    concurrency=g.positive("concurrency", 16), workers=g.positive("workers", 1),
                    openings=g.get("openings", str, ""))
    if cfg.gate["sprt"]:
        from experiments.harness.sprt import Sprt

        try:
            Sprt("a", "b", cfg.gate["elo0"], cfg.gate["elo1"], cfg.gate["alpha"], cfg.gate["beta"])
        except ValueError as e:
            raise g.error("elo1" if "elo1" in str(e) else "alpha", str(e)) from None
    check_suite(g, "openings", cfg.gate["openings"], cfg.variant, cfg.gate["games"] // 2)
    g.done()
    from experiments.training import rl_report

    cfg.rate = rl_report.parse_rate(root.table("rate"), cfg)
    root.done()
    return cfg


# --------------------------------------------------------------------------- state

class State:
    """``OUT/ARM/state.json``: the best generation and what finished, per generation."""

    def __init__(self, path: str) -> None:
        from experiments.paths import InputError, read_text

        self.path = path
        self.data: dict[str, Any] = {"best": 0, "gens": {}}
        if os.path.lexists(path):
            try:
                self.data = json.loads(read_text(path, "loop state file"))
            except (InputError, json.JSONDecodeError) as e:
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
        from experiments.paths import write_atomic

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


class StageClock:
    """``with StageClock(folder, stage) as clock:`` the wall seconds a stage has run in all, across
    interruptions: kept in ``folder/clock-STAGE.json``, written every :attr:`TICK` seconds while the
    stage runs and at its end, so a kill loses at most that much of the run's cost (the report's CPU
    hours count every attempt, not only the one that finished)."""

    TICK = 10.0

    def __init__(self, folder: str, stage: str) -> None:
        from experiments.paths import InputError, read_text

        self.path = os.path.join(folder, f"clock-{stage}.json")
        self.base = 0.0
        if os.path.lexists(self.path):
            try:
                v = json.loads(read_text(self.path, "stage clock")).get("seconds")
                self.base = float(v) if isinstance(v, (int, float)) and 0 <= v < 1e9 else 0.0
            except (InputError, json.JSONDecodeError, AttributeError):
                self.base = 0.0  # a damaged clock only loses the time it held
        self.t0 = time.monotonic()
        self._stop: Any = None

    @property
    def seconds(self) -> float:
        return round(self.base + time.monotonic() - self.t0, 1)

    def _write(self) -> None:
        from experiments.paths import OutputError, write_atomic

        try:
            write_atomic(self.path, json.dumps({"seconds": self.seconds}), "stage clock")
        except OutputError:
            pass  # the clock is bookkeeping: a full disk is met (and reported) by the stage itself

    def __enter__(self) -> "StageClock":
        import threading

        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.t0 = time.monotonic()
        self._stop = threading.Event()

        def tick() -> None:
            while not self._stop.wait(self.TICK):
                self._write()

        threading.Thread(target=tick, daemon=True, name="stage-clock").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._write()


#: the settings a loop's games, networks and decisions depend on (``OUT/loop.json``): a rerun on the
#: same folder with others is refused; the resources (workers, concurrency, threads) may change
RUN_FILE = "loop.json"
_FREE = {"concurrency", "workers", "backend", "ray_address", "threads"}


def _run_record(cfg: "LoopConfig") -> dict[str, Any]:
    from evaluators.neural import weights_path
    from experiments.harness.store import file_id

    return {"variant": cfg.variant, "model": cfg.model, "seed": cfg.seed, "initial": cfg.initial,
            "initial_file": file_id(weights_path(cfg.initial)),
            "arms": {a.name: {"engine": a.engine, "gate_engine": a.gate_engine} for a in cfg.arms},
            **{sec: {k: v for k, v in getattr(cfg, sec).items() if k not in _FREE}
               for sec in ("selfplay", "train", "gate")}}


def _first_difference(old: Any, new: Any, key: str = "") -> tuple[str, Any, Any] | None:
    """The first key (dotted) where ``new`` differs from ``old``, with both values; None if none."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in new:
            d = _first_difference(old.get(k), new[k], f"{key}.{k}" if key else str(k))
            if d:
                return d
        return None
    return None if old == new else (key, old, new)


def check_run(cfg: "LoopConfig") -> None:
    """Refuse a rerun of ``cfg.out`` with settings other than those it was started with (its games,
    networks and decisions would mix two runs, and the report would name only the new ones); record
    them on the first run.  More generations, new arms and other ``[rate]`` keys are allowed."""
    from experiments.paths import InputError, read_text, write_atomic

    want = _run_record(cfg)
    path = os.path.join(cfg.out, RUN_FILE)
    if os.path.lexists(path):
        try:
            have = json.loads(read_text(path, "loop run file"))
        except (InputError, json.JSONDecodeError) as e:
            raise ConfigError(f"{path} is not a loop run file ({e}); give another out") from None
        if not isinstance(have, dict) or not isinstance(have.get("arms"), dict):
            raise ConfigError(f"{path} is not a loop run file; give another out")
        want["arms"] = {**have["arms"], **want["arms"]}  # arms may be added; the old ones must match
        diff = _first_difference(have, want)
        if diff:
            k, a, b = diff
            raise ConfigError(f"{cfg.out} holds a loop run with {k} {a!r}, not {b!r}: give the same settings "
                              f"to resume it, or another out")
    write_atomic(path, json.dumps(want, indent=1, sort_keys=True), "loop run file")


def weights_of(cfg: LoopConfig, arm: str, gen: int) -> str:
    """The network of generation ``gen`` of an arm (0: the initial one, as the config names it: a
    shipped name stays a name, so engine strings and game keys do not depend on the checkout's path)."""
    return cfg.initial if gen == 0 else os.path.join(cfg.gen_dir(arm, gen), "train", "model.pt")


def _with_weights(engine: str, weights: str) -> str:
    from engines.registry import join_spec

    return join_spec(engine, {"weights": weights})


# --------------------------------------------------------------------------- the stages

def generate(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    from experiments.training import selfplay

    rec = state.gen(gen)
    if "selfplay" in rec:
        return
    sp = SelfPlayConfig(engine=_with_weights(arm.engine, weights_of(cfg, arm.name, state.best)),
                        out=os.path.join(cfg.gen_dir(arm.name, gen), "selfplay"), variant=cfg.variant,
                        seed=cfg.seed * 1000 + gen, **cfg.selfplay)
    with StageClock(cfg.gen_dir(arm.name, gen), "selfplay") as clock:
        stats = selfplay.play(sp, progress=progress)
    if stats["existing_games"] + stats["games"] < sp.games:
        raise SelfPlayError(f"{arm.name} generation {gen}: self-play stopped after "
                            f"{stats['existing_games'] + stats['games']} of {sp.games} games; run again to resume")
    rec["selfplay"] = {"games": sp.games, "positions": _positions(sp.out), "seconds": clock.seconds,
                       "cores": sp.workers, "network": state.best, "engine": stats["engine"]}
    state.save()


def _positions(directory: str) -> int:
    from experiments.training import datagen

    return sum(len(datagen.load_shard(p)["move"]) for p in datagen.shard_paths(directory))


def train_candidate(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    from experiments.training import train

    rec = state.gen(gen)
    if "train" in rec:
        return
    t = dict(cfg.train)
    data = [os.path.join(cfg.gen_dir(arm.name, k), "selfplay") for k in range(max(1, gen - t.pop("window") + 1), gen + 1)]
    sup = t.pop("supervised")
    sup_games = t.pop("supervised_games")
    out = os.path.join(cfg.gen_dir(arm.name, gen), "train")
    if sup:
        data += _supervised_sample(sup, sup_games, os.path.join(cfg.gen_dir(arm.name, gen), "supervised"), cfg.seed + gen)
    init = weights_of(cfg, arm.name, state.best)
    tc = train.TrainConfig(model=cfg.model, data=data, out=out, init=init, seed=cfg.seed + gen, **t)
    os.makedirs(out, exist_ok=True)
    write_atomic(os.path.join(out, "command.txt"),
                 f"searchbench rl {cfg.path}  # arm {arm.name}, generation {gen}: searchbench train {cfg.model} "
                 f"--init {init} --data {' '.join(data)} --out {out}\n", "command file")
    with StageClock(cfg.gen_dir(arm.name, gen), "train") as clock:
        meta = train.train(tc, progress=progress)
    rec["train"] = {"seconds": clock.seconds, "cores": t["threads"], "init": state.best,
                    "positions": meta.get("train_positions"), "val_policy_acc": meta.get("val_policy_acc"),
                    "data": data}
    state.save()


def _supervised_sample(dirs: list[str], games: int, out: str, seed: int) -> list[str]:
    """The supervised shards to mix in: all of them (games 0), or ``games`` games of them drawn
    once per generation and written to ``out`` (so a resumed training sees the same)."""
    from experiments.training import datagen

    if games <= 0:
        return list(dirs)
    if datagen.shard_paths(out):
        return [out]
    import numpy as np

    records: list[datagen.GameRecord] = []
    for p in [q for d in dirs for q in (datagen.shard_paths(d) if os.path.isdir(d) else [d])]:
        s = datagen.load_shard(p)
        for gi, uid in enumerate(s["game_uid"]):
            rows = np.flatnonzero(s["game"] == gi)
            r = datagen.GameRecord(int(uid), str(s["variant"]), str(s["game_fen"][gi]), str(s["game_opening"][gi]).split(),
                                   result=int(s["game_result"][gi]))
            r.raw = [tuple(int(x) for x in s["raw"][i]) for i in rows]
            r.moves = [int(s["move"][i]) for i in rows]
            r.scores = [int(s["score"][i]) for i in rows]
            records.append(r)
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(records), min(games, len(records)), replace=False))
    datagen.write_shard(out, [records[i] for i in pick])
    return [out]


def gate(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    """Candidate against the best (module docstring); the decision goes into ``state``."""
    from experiments.harness import match as match_mod
    from experiments.harness import openings as openings_mod
    from experiments.harness import pgn as pgn_out
    from experiments.harness.sprt import Sprt
    from experiments.harness.stats import score_text
    from experiments.harness.store import Store

    rec = state.gen(gen)
    if "gate" in rec:
        return
    gt = cfg.gate
    best = state.best
    cand = match_mod.Player(f"{arm.name}-gen{gen}", _with_weights(arm.gate_engine, weights_of(cfg, arm.name, gen)),
                            nodes=gt["nodes"])
    champ = match_mod.Player(f"{arm.name}-gen{best}", _with_weights(arm.gate_engine, weights_of(cfg, arm.name, best)),
                             nodes=gt["nodes"])
    suite = gt["openings"] or str(openings_mod.default_suite(cfg.variant))
    pairs = gt["games"] // 2
    mid = match_mod.match_id(cfg.variant, cand, champ, openings_mod.suite_id(suite))
    ops = openings_mod.draw(openings_mod.load_suite(suite, cfg.variant), pairs, cfg.seed + gen, mid)
    tasks = match_mod.match_tasks(f"gate-{gen}", cfg.variant, cand, champ, ops, gt["games"], cfg.seed + gen,
                                  openings_mod.suite_id(suite))
    test = Sprt(cand.name, champ.name, gt["elo0"], gt["elo1"], gt["alpha"], gt["beta"]) if gt["sprt"] else None
    wdl = [0, 0, 0]

    def add(g: Any) -> None:
        s = g.score_for(cand.name)
        wdl[0 if s == 1 else 1 if s == 0.5 else 2] += 1
        if test is not None:
            test.add_game(g)

    db = os.path.join(cfg.gen_dir(arm.name, gen), "gate.sqlite")
    keys = {t.key for t in tasks}
    with StageClock(cfg.gen_dir(arm.name, gen), "gate") as clock, Store(db, lock=True) as store:
        for g in store.games(match=tasks[0].match):
            if g.key in keys:
                add(g)
        decided = (lambda: test.state != "continue") if test is not None else None
        match_mod.play(tasks, store, concurrency=gt["concurrency"], workers=gt["workers"],
                       adjudication=match_mod.Adjudication(max_plies=cfg.selfplay["max_plies"]),
                       pgn_path=pgn_out.beside(db), on_game=add, stop=decided, progress=progress,
                       desc=f"gate {cand.name} vs {champ.name}", postfix=lambda: f"{cand.name} {score_text(*wdl)}")
    games = sum(wdl)
    score = (wdl[0] + 0.5 * wdl[1]) / max(1, games)
    if test is not None:
        accepted, rule = test.state == "H1", f"SPRT [{gt['elo0']:g}, {gt['elo1']:g}]: {test.state} ({test.summary()})"
    else:
        accepted, rule = score >= gt["threshold"], f"score >= {gt['threshold']:g}"
    rec["gate"] = {"against": best, "games": games, "wins": wdl[0], "draws": wdl[1], "losses": wdl[2],
                   "score": round(score, 4), "accepted": accepted, "rule": rule, "nodes": gt["nodes"],
                   "seconds": clock.seconds, "cores": gt["workers"]}
    if accepted:
        state.data["best"] = gen
    state.save()


def model_card(cfg: LoopConfig, arm: Arm, gen: int, state: State) -> None:
    from experiments.training import modelcard

    rec = state.gen(gen)
    g = rec["gate"]
    sp = rec["selfplay"]
    notes = (f"Generation {gen} of arm `{arm.name}` of the self-play loop `{cfg.name}` (`{cfg.path}`).\n\n"
             f"- self-play: {sp['games']} games ({sp['positions']} positions) by generation {sp['network']} with "
             f"`{sp['engine']}` at {cfg.selfplay['nodes']} nodes a move, {sp['seconds']} s on {sp['cores']} core(s)\n"
             f"- training: from generation {rec['train']['init']}, {rec['train']['seconds']} s on "
             f"{rec['train']['cores']} core(s), data {', '.join(rec['train']['data'])}\n"
             f"- gate against generation {g['against']} at {g['nodes']} nodes: +{g['wins']} ={g['draws']} -{g['losses']}"
             f" (score {g['score']:.3f}; rule {g['rule']}): **{'accepted' if g['accepted'] else 'rejected'}**; the "
             f"games are in gate.sqlite\n")
    text = modelcard.render(os.path.join(cfg.gen_dir(arm.name, gen), "train"), notes)
    write_atomic(os.path.join(cfg.gen_dir(arm.name, gen), "card.md"), text, "model card")


STAGES = ("selfplay", "train", "gate")


def run(cfg: LoopConfig, progress: bool = True, until: str | None = None) -> dict[str, Any]:
    """The loop for every arm, generation by generation (arms in turn), then the rating and report
    (``until``: stop after that stage of the last generation: tests and partial runs)."""
    from experiments.paths import DirLock, check_dir

    check_dir(cfg.out, "loop folder")
    os.makedirs(cfg.out, exist_ok=True)
    with DirLock(cfg.out, "loop folder"):
        check_run(cfg)
        return _run(cfg, progress, until)


TARGETS = "targets.json"


def measure_targets(cfg: LoopConfig, progress: bool) -> list[dict[str, Any]]:
    """Each arm's self-play target against generation 0's prior on the held-out positions of
    ``[rate] heldout`` (:mod:`experiments.training.targets`), before any self-play: kept in
    ``OUT/targets.json`` (measured once), quoted by the report, and a warning for every target that
    is not better than the prior (training on it teaches the network nothing it does not say)."""
    import sys

    from experiments.paths import InputError, read_text
    from experiments.training import targets

    data = [d for d in cfg.rate.get("heldout", []) if os.path.exists(d)]
    n = int(cfg.rate.get("target_positions", 0))
    if not data or n <= 0:
        return []
    path = os.path.join(cfg.out, TARGETS)
    engines = [_with_weights(a.engine, weights_of(cfg, a.name, 0)) for a in cfg.arms]
    key = {"engines": engines, "data": data, "positions": n, "nodes": cfg.selfplay["nodes"],
           "explore": cfg.selfplay["explore"]}
    rows: list[dict[str, Any]] = []
    if os.path.lexists(path):
        try:
            have = json.loads(read_text(path, "targets file"))
            if isinstance(have, dict) and have.get("key") == key and isinstance(have.get("rows"), list):
                rows = have["rows"]
        except (InputError, json.JSONDecodeError):
            rows = []
    if not rows:
        measured = targets.measure(engines, data, positions=n, nodes=cfg.selfplay["nodes"], seed=cfg.seed,
                                   explore=cfg.selfplay["explore"], progress=progress)
        rows = [r.as_dict() for r in measured]
        write_atomic(path, json.dumps({"key": key, "rows": rows}, indent=1), "targets file")
    for r in rows:
        for note in r["notes"]:
            if note.startswith(("not better", "Sequential Halving")):
                print(f"rl: warning: {r['name']}: {note}", file=sys.stderr)
    return rows


def _run(cfg: LoopConfig, progress: bool, until: str | None) -> dict[str, Any]:
    measure_targets(cfg, progress)
    states = {}
    for arm in cfg.arms:
        os.makedirs(cfg.arm_dir(arm.name), exist_ok=True)
        states[arm.name] = State(os.path.join(cfg.arm_dir(arm.name), STATE))
    for gen in range(1, cfg.generations + 1):
        for arm in cfg.arms:
            st = states[arm.name]
            generate(cfg, arm, gen, st, progress)
            if until == "selfplay" and gen == cfg.generations:
                continue
            train_candidate(cfg, arm, gen, st, progress)
            if until == "train" and gen == cfg.generations:
                continue
            gate(cfg, arm, gen, st, progress)
            model_card(cfg, arm, gen, st)
    summary: dict[str, Any] = {a: {"best": s.best, "gens": s.data["gens"]} for a, s in states.items()}
    if until is None and cfg.rate:
        from experiments.training import rl_report

        summary["report"] = rl_report.rate_and_report(cfg, states, progress)
    return summary


__all__ = ["Arm", "LoopConfig", "STAGES", "State", "gate", "generate", "model_card", "parse", "run",
           "train_candidate", "weights_of"]
