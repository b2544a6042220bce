"""``searchbench rl CONFIG.toml``: self-play reinforcement learning, SixtyFour's ``SelfLearningLoop``
with a pluggable search (and, with two arms, the Gumbel paper's own question).

One **arm** is one loop: a self-play engine (any MCTS-family engine: its search gives the policy
targets, :mod:`experiments.selfplay.games`) and the engine that gates.  Every arm starts from the
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

**Rounds** (``mode = "rounds"``, as lc0 and KataGo run their loops): one network trained continuously.
Each round the latest network plays the self-play games, and training goes on from its weights *and
its optimizer state* (the previous round's checkpoint, ``--optimizer-from``) with the learning rate
held (``schedule = "constant"``: SGD, Nesterov momentum 0.9) on a replay window counted in positions
(``window_positions``: the newest rounds back until that many), with supervised positions mixed in
(``supervised_fraction`` of the training positions, times ``supervised_taper`` each round).  There is
no gate unless ``[gate] enabled``; with ``guard = true`` (an SPRT, e.g. ``elo0 = -30, elo1 = 0``) it
is a regression guard that keeps a candidate unless the test shows it worse.  A PUCT arm's self-play
search leaves check enhancement out (its target would learn the check bias that play adds back:
:func:`selfplay_search`).  A **control arm** (``kind = "control"``, after a self-play arm; in either mode) plays no
games: each round it trains on the supervised data alone, from its own latest network, for the CPU
time the first self-play arm spent on that round (self-play and training), counted as process CPU
seconds (getrusage, :func:`~experiments.selfplay.state.cpu_now`), not wall seconds: self-play must beat it to claim that it
helped.  Before the first round each self-play arm's target is measured against the prior on
held-out positions (``[rate] heldout``, ``target_positions``; :mod:`experiments.selfplay.targets`).

The rating and the report (``[rate]``, :mod:`experiments.selfplay.report`) follow the loop.

**Bughouse** (``variant = "bughouse"``, ``model = "bughouse"``: the two-board network) runs the same
arms, control, gate, states and resumption with the game's own stages: self-play is four-seat games
of the network on all four seats on a clock (``[selfplay] tc``, the engine as given: no exploration is
added), each game pair from its own bughouse opening (``openings``, a crazyhouse suite), ``workers``
games at once, into ``OUT/ARM/gen-NNN/selfplay/games.sqlite`` (:func:`experiments.training.bughouse_data.generate`);
training is the two-board trainer (:mod:`~experiments.training.bughouse_train`) on every supervised
game database first, then the window's self-play games, split by game under the loop's seed (the
supervised games held out are the same in every generation and arm: ``bughouse-heldout --seed SEED``);
the gate is a four-seat match on ``[gate] tc`` decided by ``threshold``.  It runs generations (the
two-board trainer carries no optimizer state; ``[gate] enabled = false`` takes every candidate, as
KataGo's rounds), and the one-board keys and tables (``[rate]``, the gates 0 and 1, the calibration,
the SPRT, playout caps, supervised sampling) are refused with one line: rate its networks with a
``bughouse-report`` config.

Config keys (every one optional but ``name``, ``initial`` and the arms; defaults in brackets)::

    name, variant ["crazyhouse"; or "chess", "bughouse"], model ["rise"; bughouse: "bughouse"], initial (weights),
    generations [3] (rounds), seed [1],
    out ["runs/rl/NAME"], mode ["generations"; or "rounds"]
    [[arms]]    name, engine (self-play), gate_engine [engine], kind ["selfplay"; or "control"],
                seed [the loop's] (its self-play games' seed: the same search twice is a replicate)
    [selfplay]  games [200], nodes [16], concurrency [16], workers [1], backend ["local"], ray_address,
                random_plies [[0, 0]], max_plies [300], shard_games [50], explore [true],
                full_fraction [1.0], fast_nodes (KataGo's playout-cap randomisation: that fraction of
                moves searched at ``nodes`` with a policy target, the rest at ``fast_nodes``, value only),
                evals [0] (> 0: each move limited to that many evaluator calls instead of ``nodes``: two
                searches at the same cost); bughouse: games [100], nodes [200], tc ["300+0"], workers [1],
                openings [the crazyhouse suite], max_plies [600]
    [train]     window [2], epochs [1], batch, lr, value_weight, q_weight [0], weight_decay [1e-4],
                threads [1], bf16 [false], mirror [false], supervised [[]], supervised_games [0: all], minutes,
                val_fraction [0.1], select_fraction [0.05] (games held out: report, best epoch),
                schedule ["family"; rounds: "constant"], window_positions [0: by generations],
                supervised_fraction [0], supervised_taper [1], policy_weight [the family's],
                reanalyse_fraction [0] (rounds: that share of the positions older networks made, searched
                again by the best network, :mod:`experiments.selfplay.reanalyse`), reanalyse_nodes
                [selfplay.nodes]
    [gate]      games [40], nodes [64], threshold [0.55], sprt [false], elo0 [0], elo1 [10], alpha [0.05],
                beta [0.05], concurrency [16], workers [1], openings [the variant's suite],
                enabled [true; rounds: false], guard [false]; bughouse: games [20], nodes [selfplay.nodes],
                tc [selfplay.tc], threshold, openings [selfplay.openings], workers [1], enabled [true]
    [rate]      see experiments.selfplay.report
    [gate0]     enabled [rounds with held-out data], data [rate.heldout], positions [400], reference [400],
                min_entropy_ratio [0.8], reuse [true]
    [gate1]     enabled [rounds with held-out data], data [rate.heldout], max_nll_rise [0.02],
                min_entropy_ratio [0.8], max_value_rise [0], on_fail ["stop"; or "halve"], retries [2],
                heldout_stops [true] (false: the held-out NLL and value loss are columns of the record, not
                stops: the offline value gate decides), controls [false] (true: control arms are gated and
                halved by the same rules, the control trained as the self-play arm is)
    [calibrate] lrs [[]: off], cpu_seconds [600], data [rate.heldout], value_weights [[]: off]
    [offline]   enabled [false], data [rate.heldout], positions [300], engine ["fairy-stockfish"],
                engine_nodes [50000], reference [400] (:mod:`experiments.selfplay.offline`)

**Gates** (rounds; KataGo and lc0's practice: a target is only as good as the search that made it).
*Gate 0*, before any game: each self-play arm's policy target, as self-play writes it (its nodes, its
playout cap, its noise, forced playouts and pruning, the tree kept from two plies earlier), is
compared on held-out positions with a ``reference``-node search of generation 0 without noise
(:func:`experiments.selfplay.targets.measure_reference`); the loop refuses to start (one line with
the figures) unless the target's cross-entropy to that search is below the prior's and its entropy is
at least ``min_entropy_ratio`` times the reference's.  *Calibration*: one control round at each of
``lrs`` (generation 0 on the supervised data alone, ``cpu_seconds`` of process CPU); the largest rate
whose held-out policy NLL falls below generation 0's is the loop's ``lr``.  *Gate 1*, after each
self-play round's training: held-out policy NLL at most ``max_nll_rise`` above generation 0's, mean
prior entropy at least ``min_entropy_ratio`` times generation 0's, value loss at most
``max_value_rise`` above, and with ``[offline]`` its value error against a deep Fairy-Stockfish
evaluation not above the previous round's beyond the interval of the difference
(:mod:`experiments.selfplay.offline`, measured for every arm; the prior's cross-entropy to round 0's
deep search, and the value probes, rank correlation and child agreement with the deep engine, beside
it); a failing round stops the loop with one line, or (``on_fail = "halve"``) is
trained again at half the learning rate, kept for later rounds.  With ``value_weights`` the
calibration goes on at the chosen rate: one control round at each weight, the weight of the lowest
offline value error whose held-out NLL stays below generation 0's is the loop's ``value_weight``.  The records are ``OUT/gate0.json``,
``OUT/calibration.json``, ``OUT/heldout-0.json`` and each round's ``gate1`` in ``state.json``.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

import board
from board.variants import BUGHOUSE, CRAZYHOUSE, variant_of
from engines import registry
from engines.base import EngineError, EngineSpec
from engines.registry import extend
from engines.seats import SeatError, parse_team, plays_bughouse
from evaluators.families import FAMILIES, policy_value_families
from experiments.harness import bughouse as bm, match as match_mod, openings as openings_mod, pgn as pgn_out
from experiments.harness.match import MatchError, parse_tc
from experiments.harness.openings import default_suite
from experiments.harness.sprt import Sprt
from experiments.harness.stats import score_text
from experiments.harness.store import Store
from experiments.harness.tasks import MAX_BUDGET
from experiments.harness.tomlconfig import ConfigError, Section, even_games, load, writable_dir
from experiments.paths import DirLock, check_dir, write_atomic
from experiments.selfplay import games, gates, reanalyse
from experiments.selfplay.config import (FREE_KEYS, LOOP_TRAIN_KEYS, MAX_GENERATIONS, STATE, Arm, LoopConfig, State,
                                            check_suite, list_of, no_data, run_record, same_run, selfplay_search,
                                            weights_of, with_weights)
from experiments.selfplay.report import parse_rate, rate_and_report, write_generations
from experiments.selfplay.state import StageClock, check_networks
from experiments.selfplay.games import SelfPlayConfig, SelfPlayError, selfplay_engine
from experiments.training import bughouse_data as bd, datagen


def _check_train(t: Section, cfg: LoopConfig) -> None:
    """The ``[train]`` values as the trainer itself checks them (before any self-play)."""
    from experiments.training.recipe import TrainConfig  # deferred: loads torch

    keys = {k: v for k, v in cfg.train.items() if k not in LOOP_TRAIN_KEYS}
    try:
        TrainConfig(model=cfg.model, data=[], out="", **keys).resolved()
    except ValueError as e:
        raise t.error(None, str(e)) from None


def parse(path: str) -> LoopConfig:
    """Read and check a config; :class:`ConfigError` (file:line: key: why) for anything bad."""
    from evaluators.neural import weights_path  # deferred: loads torch

    root = load(path)
    name = root.get("name", str, check=lambda v: None if v and v[0] != "." and all(c.isalnum() or c in "-_." for c in v)
                    else "must be letters, digits, '-', '_' or '.', not starting with '.' (it names folders)")
    variant = root.choice("variant", (*board.VARIANTS, BUGHOUSE.name), CRAZYHOUSE.name)
    families = ([f.name for f in FAMILIES.values() if f.kind == "two_board"] if variant_of(variant).boards > 1
                else policy_value_families())
    model = root.choice("model", tuple(families), "rise" if "rise" in families else families[0])
    initial = root.get("initial", str)
    if not os.path.isfile(weights_path(initial)):
        raise root.error("initial", f"no weights file {initial!r}")
    cfg = LoopConfig(name=name, initial=initial, arms=[], variant=variant, model=model,
                     generations=root.get("generations", int, 3, lambda v: None if 1 <= v <= MAX_GENERATIONS
                                          else f"must be from 1 to {MAX_GENERATIONS}"),
                     seed=root.get("seed", int, 1, lambda v: None if 0 <= v < 2 ** 40 else "must be from 0 to 2**40 - 1"),
                     out=root.get("out", str, f"runs/rl/{name}", check=writable_dir), path=str(path),
                     mode=root.choice("mode", ("generations", "rounds"), "generations"))
    rounds = cfg.mode == "rounds"
    if rounds and cfg.two_board:
        raise root.error("mode", "the two-board trainer carries no optimizer state from round to round: a bughouse "
                                 "loop runs generations (with [gate] enabled = false, every candidate goes on)")
    names = set()
    for a in root.tables("arms", required=True):
        arm = Arm(a.get("name", str), a.get("engine", str), "", a.choice("kind", ("selfplay", "control"), "selfplay"))
        arm.gate_engine = a.get("gate_engine", str, arm.engine)
        arm.seed = a.get("seed", int, None, lambda v: None if 0 <= v < 2 ** 40 else "must be from 0 to 2**40 - 1")
        if arm.kind == "control" and not any(x.kind == "selfplay" for x in cfg.arms):
            raise a.error("kind", "a control arm comes after a self-play arm (it trains for the CPU time that "
                                  "arm's round took)")
        if arm.name in names or not arm.name.replace("-", "").replace("_", "").isalnum():
            raise a.error("name", f"arm names must be distinct letters, digits, '-' or '_' (got {arm.name!r})")
        names.add(arm.name)
        for key in ("engine", "gate_engine"):
            try:
                spec = selfplay_engine(arm.spec if key == "engine" else arm.gate_spec, variant, explore=False)
                if cfg.two_board:
                    plays_bughouse(spec)
                own = registry.split_spec(getattr(arm, key))[1]
            except (SelfPlayError, EngineError, SeatError) as e:
                raise a.error(key, str(e)) from None
            if any(k.strip().lower() == "weights" for k in own):
                raise a.error(key, "names its own weights; the loop sets them (generation 0 is `initial`): "
                                   "remove weights= from the engine")
            if spec.evaluator != FAMILIES[model].evaluator_name:
                raise a.error(key, f"runs the {spec.evaluator} evaluator; the loop trains {model}")
        a.done()
        cfg.arms.append(arm)
    if not cfg.arms:
        raise root.error("arms", "give at least one [[arms]] table")
    (_parse_two_board if cfg.two_board else _parse_one_board)(root, cfg)
    root.done()
    return cfg


def _game_keys(sec: Section, cfg: LoopConfig, keys: tuple[str, ...]) -> None:
    """Refuse the keys of ``sec`` that only the other game's loop reads (one line each)."""
    for k in keys:
        if sec.has(k):
            raise sec.error(k, "is a one-board key: a bughouse loop does not read it" if cfg.two_board
                            else "is a bughouse key: a one-board loop does not read it")


#: keys one game's loop reads and the other's refuses: {table: (one-board only, bughouse only)}
GAME_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "selfplay": (("concurrency", "backend", "ray_address", "random_plies", "shard_games", "explore", "full_fraction",
                  "fast_nodes", "evals"), ("tc", "openings")),
    "train": (("q_weight", "bf16", "mirror", "select_fraction", "schedule", "window_positions", "supervised_fraction",
               "supervised_taper", "supervised_games", "reanalyse_fraction", "reanalyse_nodes"), ()),
    "gate": (("sprt", "guard", "elo0", "elo1", "alpha", "beta", "concurrency"), ("tc",)),
}


def _parse_train(t: Section, cfg: LoopConfig) -> None:
    unit = lambda v: None if 0 <= v <= 1 else "must be in [0, 1]"  # noqa: E731
    rounds = cfg.mode == "rounds"
    cfg.train = dict(window=t.positive("window", 2), epochs=t.positive("epochs", 1), batch=t.get("batch", int, None),
                     lr=t.get("lr", float, None), value_weight=t.get("value_weight", float, None),
                     policy_weight=t.get("policy_weight", float, None),
                     weight_decay=t.get("weight_decay", float, 1e-4), threads=t.positive("threads", 1),
                     supervised=list_of(t, "supervised", str, []), minutes=t.get("minutes", float, None),
                     val_fraction=t.get("val_fraction", float, 0.1, unit))
    if not cfg.two_board:
        cfg.train.update(
            q_weight=t.get("q_weight", float, 0.0, unit), bf16=t.get("bf16", bool, False), mirror=t.get("mirror", bool, False),
            supervised_games=t.get("supervised_games", int, 0), select_fraction=t.get("select_fraction", float, 0.05, unit),
            schedule=t.choice("schedule", ("family", "constant"), "constant" if rounds else "family"),
            window_positions=t.get("window_positions", int, 0, lambda v: None if v >= 0 else "must be >= 0"),
            supervised_fraction=t.get("supervised_fraction", float, 0.0, lambda v: None if 0 <= v < 1 else "must be in [0, 1)"),
            supervised_taper=t.get("supervised_taper", float, 1.0, unit),
            reanalyse_fraction=t.get("reanalyse_fraction", float, 0.0, unit),
            reanalyse_nodes=t.get("reanalyse_nodes", int, 0, lambda v: None if 0 <= v <= MAX_BUDGET
                                  else f"must be from 0 (self-play's nodes) to {MAX_BUDGET:,}"))
        if rounds and cfg.train["supervised_fraction"] > 0 and not cfg.train["supervised"]:
            raise t.error("supervised", "a supervised mix needs supervised data")
        if cfg.train["supervised_games"] < 0:
            raise t.error("supervised_games", "must be at least 0 (0: all)")
    if any(a.kind == "control" for a in cfg.arms) and not cfg.train["supervised"]:
        raise t.error("supervised", "a control arm trains on the supervised data alone: give some")
    for d in cfg.train["supervised"]:
        if not os.path.exists(d):
            raise t.error("supervised", no_data(d, cfg.variant))
        if cfg.two_board:  # a game database of bughouse games, not a folder of one-board shards
            why = bd.not_a_bughouse_db(d)
            if why:
                raise t.error("supervised", why)
    _check_train(t, cfg)
    t.done()


def _parse_one_board(root: Section, cfg: LoopConfig) -> None:
    """``[selfplay]``, ``[train]``, ``[gate]``, ``[rate]`` and the gates of a one-board loop."""
    rounds = cfg.mode == "rounds"
    s = root.table("selfplay")
    _game_keys(s, cfg, GAME_KEYS["selfplay"][1])
    plies = list_of(s, "random_plies", int, [0, 0])
    if len(plies) != 2 or not 0 <= plies[0] <= plies[1]:
        raise s.error("random_plies", "must be [min, max] with 0 <= min <= max")
    cfg.selfplay = dict(games=s.positive("games", 200), nodes=s.positive("nodes", 16),
                        concurrency=s.positive("concurrency", 16), workers=s.positive("workers", 1),
                        backend=s.choice("backend", ("local", "ray"), "local"),
                        ray_address=s.get("ray_address", str, None), min_random_plies=plies[0],
                        max_random_plies=plies[1], max_plies=s.positive("max_plies", 300),
                        shard_games=s.positive("shard_games", 50), explore=s.get("explore", bool, True),
                        full_fraction=s.get("full_fraction", float, 1.0,
                                            lambda v: None if 0 < v <= 1 else "must be in (0, 1]"),
                        fast_nodes=s.get("fast_nodes", int, 0),
                        evals=s.get("evals", int, 0, lambda v: None if v >= 0 else "must be at least 0 (0: the nodes limit)"))
    for k in ("nodes", "evals", "fast_nodes", "games", "concurrency", "workers", "max_plies", "shard_games"):
        if cfg.selfplay[k] > MAX_BUDGET:
            raise s.error(k, f"must be at most {MAX_BUDGET:,}")
    if cfg.selfplay["evals"] and cfg.selfplay["full_fraction"] < 1:
        raise s.error("evals", "playout-cap randomisation works on the nodes limit: leave evals at 0")
    if cfg.selfplay["full_fraction"] < 1 and not 1 <= cfg.selfplay["fast_nodes"] <= cfg.selfplay["nodes"]:
        raise s.error("fast_nodes", f"playout-cap randomisation needs fast_nodes from 1 to nodes ({cfg.selfplay['nodes']})")
    s.done()
    _parse_train(root.table("train"), cfg)
    g = root.table("gate")
    _game_keys(g, cfg, GAME_KEYS["gate"][1])
    unit = lambda v: None if 0 <= v <= 1 else "must be in [0, 1]"  # noqa: E731
    cfg.gate = dict(games=g.get("games", int, 40, even_games),
                    nodes=g.positive("nodes", 64), threshold=g.get("threshold", float, 0.55, unit),
                    sprt=g.get("sprt", bool, False), elo0=g.get("elo0", float, 0.0), elo1=g.get("elo1", float, 10.0),
                    alpha=g.get("alpha", float, 0.05), beta=g.get("beta", float, 0.05),
                    concurrency=g.positive("concurrency", 16), workers=g.positive("workers", 1),
                    openings=g.get("openings", str, ""), enabled=g.get("enabled", bool, not rounds),
                    guard=g.get("guard", bool, False))
    for k in ("games", "nodes", "concurrency", "workers"):
        if cfg.gate[k] > MAX_BUDGET:
            raise g.error(k, f"must be at most {MAX_BUDGET:,}")
    if cfg.gate["guard"] and not cfg.gate["sprt"]:
        raise g.error("guard", "a regression guard is an SPRT: set sprt = true (e.g. elo0 = -30, elo1 = 0)")
    if cfg.gate["sprt"]:
        try:
            Sprt("a", "b", cfg.gate["elo0"], cfg.gate["elo1"], cfg.gate["alpha"], cfg.gate["beta"])
        except ValueError as e:
            raise g.error("elo1" if "elo1" in str(e) else "alpha", str(e)) from None
    check_suite(g, "openings", cfg.gate["openings"], cfg.variant, cfg.gate["games"] // 2)
    g.done()
    cfg.rate = parse_rate(root.table("rate"), cfg)
    gates.parse_gates(root, cfg)


def _parse_two_board(root: Section, cfg: LoopConfig) -> None:
    """A bughouse loop's tables: four-seat games on a clock (``tc``), each game pair from its own
    bughouse opening of a crazyhouse suite (``openings``); the two-board trainer; a gate by score.
    The one-board tables (``[rate]``, ``[gate0]``, ``[gate1]``, ``[calibrate]``) are refused: rate the
    networks with a ``bughouse-report`` config."""
    for k in ("rate", "gate0", "gate1", "calibrate"):
        if root.has(k):
            raise root.error(k, "is for one-board loops: rate a bughouse loop's networks with a bughouse-report config")
    s = root.table("selfplay")
    _game_keys(s, cfg, GAME_KEYS["selfplay"][0])
    cfg.selfplay = dict(games=s.get("games", int, 100, even_games),
                        nodes=s.positive("nodes", 200), tc=_clock(s, "tc", "300+0"), workers=s.get(
                            "workers", int, 1, lambda n: None if 1 <= n <= 64 else "must be 1..64"),
                        openings=s.get("openings", str, ""), max_plies=s.positive("max_plies", 600))
    check_suite(s, "openings", cfg.selfplay["openings"], CRAZYHOUSE.name, 1)
    for k in ("games", "nodes", "max_plies"):
        if cfg.selfplay[k] > MAX_BUDGET:
            raise s.error(k, f"must be at most {MAX_BUDGET:,}")
    _check_seats(s, cfg, cfg.selfplay["nodes"])
    s.done()
    t = root.table("train")
    _game_keys(t, cfg, GAME_KEYS["train"][0])
    _parse_train(t, cfg)
    g = root.table("gate")
    _game_keys(g, cfg, GAME_KEYS["gate"][0])
    sp = cfg.selfplay
    cfg.gate = dict(games=g.get("games", int, 20, even_games),
                    nodes=g.positive("nodes", sp["nodes"]), tc=_clock(g, "tc", f"{sp['tc'][0] / 1000:g}+{sp['tc'][1] / 1000:g}"),
                    threshold=g.get("threshold", float, 0.55, lambda v: None if 0 <= v <= 1 else "must be in [0, 1]"),
                    openings=g.get("openings", str, sp["openings"]), enabled=g.get("enabled", bool, True),
                    workers=g.get("workers", int, 1, lambda n: None if 1 <= n <= 64 else "must be 1..64"),
                    sprt=False, guard=False)
    check_suite(g, "openings", cfg.gate["openings"], CRAZYHOUSE.name, 1)
    for k in ("games", "nodes"):
        if cfg.gate[k] > MAX_BUDGET:
            raise g.error(k, f"must be at most {MAX_BUDGET:,}")
    _check_seats(g, cfg, cfg.gate["nodes"])
    g.done()
    gates.parse_gates(root, cfg)  # all off: no held-out data


def _check_seats(sec: Section, cfg: LoopConfig, nodes: int) -> None:
    """Each arm's seat at ``nodes`` as the four-seat server will read it (at parse, not when its stage starts)."""
    for arm in cfg.arms:
        try:
            parse_team(_seat(arm.spec, nodes))
        except (EngineError, ValueError) as e:
            raise sec.error("nodes", f"arm {arm.name!r}: {str(e).splitlines()[0]}") from None


def _suite(path: str) -> str:
    """A bughouse loop's opening suite: ``path``, or ("") the crazyhouse suite of this checkout (the
    run record keeps "", so a loop resumes from another folder or machine)."""
    return path or str(default_suite(CRAZYHOUSE.name))


def _clock(sec: Section, key: str, default: str) -> list[int]:
    """A bughouse clock ``BASE+INC`` in seconds, as [base ms, increment ms]."""
    try:
        base, inc = parse_tc(sec.get(key, str, default))
    except MatchError as e:
        raise sec.error(key, str(e)) from None
    return [int(round(base * 1000)), int(round(inc * 1000))]


# --------------------------------------------------------------------------- state


#: the settings a loop's games, networks and decisions depend on (``OUT/loop.json``): a rerun on the
#: same folder with others is refused; the resources (workers, concurrency, threads) may change
RUN_FILE = "loop.json"
#: keys added after runs were recorded without them, with the value those runs had
def check_run(cfg: LoopConfig) -> None:
    """Refuse a rerun of ``cfg.out`` with settings other than those it was started with (its games,
    networks and decisions would mix two runs, and the report would name only the new ones); record
    them on the first run.  More generations, new arms and other ``[rate]`` keys are allowed."""
    path = os.path.join(cfg.out, RUN_FILE)
    want = same_run(cfg, path, cfg.out, "give the same settings to resume it, or another out") \
        if os.path.lexists(path) else run_record(cfg)
    write_atomic(path, json.dumps(want, indent=1, sort_keys=True), "loop run file")


# --------------------------------------------------------------------------- the stages

def generate(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    rec = state.gen(gen)
    if "selfplay" in rec:
        return
    if arm.kind == "control":  # no games: its rounds are training only
        rec["selfplay"] = {"games": 0, "positions": 0, "seconds": 0.0, "cores": 0, "network": state.best, "engine": ""}
        state.save()
        return
    if cfg.two_board:
        return _generate_two_board(cfg, arm, gen, state, progress)
    sp = SelfPlayConfig(engine=with_weights(selfplay_search(cfg, arm.spec), weights_of(cfg, arm.name, state.best)),
                        out=os.path.join(cfg.gen_dir(arm.name, gen), "selfplay"), variant=cfg.variant,
                        seed=(arm.seed if arm.seed is not None else cfg.seed) * 1000 + gen, **cfg.selfplay)
    with StageClock(cfg.gen_dir(arm.name, gen), "selfplay") as clock:
        stats = games.play(sp, progress=progress)
    if stats["existing_games"] + stats["games"] < sp.games:
        raise SelfPlayError(f"{arm.name} generation {gen}: self-play stopped after "
                            f"{stats['existing_games'] + stats['games']} of {sp.games} games; run again to resume")
    rec["selfplay"] = {"games": sp.games, "positions": _positions(sp.out), "seconds": clock.seconds,
                       "cores": sp.workers, "network": state.best, "engine": stats["engine"], "cpu": clock.cpu,
                       "evals": stats.get("eval_leaves", 0)}
    state.save()


def _seat(engine: EngineSpec, nodes: int) -> str:
    """The seat text of ``engine`` at ``nodes`` simulations a move (a bughouse team is text at the
    four-seat server's edge)."""
    return extend(engine, {"nodes": str(nodes)}).name


def _generate_two_board(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    """Bughouse self-play: the network on all four seats (the engine as given: no exploration is
    added), ``games`` games, each game pair from its own bughouse opening, into ``selfplay/games.sqlite``
    and its worker shards; ``positions`` counts the training samples (both boards' views of every ply)."""
    sp = cfg.selfplay
    team = _seat(with_weights(arm.spec, weights_of(cfg, arm.name, state.best)), sp["nodes"])
    db = os.path.join(cfg.gen_dir(arm.name, gen), "selfplay", "games.sqlite")
    with StageClock(cfg.gen_dir(arm.name, gen), "selfplay") as clock:
        n = bd.generate(db, [(team, team)], sp["games"], sp["tc"][0], sp["tc"][1], chunk=2,
                        seed=(arm.seed if arm.seed is not None else cfg.seed) * 1000 + gen, progress=progress,
                        max_plies=sp["max_plies"], workers=sp["workers"], openings=_suite(sp["openings"]))
    try:
        positions = len(bd.samples_from_db(bd.shard_paths(db)))
    except bd.BughouseDataError:  # no finished game (each reached max_plies): nothing to learn from them
        positions = 0
    state.gen(gen)["selfplay"] = {"games": n, "positions": positions,
                                  "seconds": clock.seconds, "cores": sp["workers"], "network": state.best,
                                  "engine": team, "cpu": clock.cpu}
    state.save()


def _positions(directory: str) -> int:
    return sum(len(datagen.load_shard(p)["move"]) for p in datagen.shard_paths(directory))


def train_candidate(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    """Train generation ``gen``'s candidate from the best network with the model family's trainer
    (:data:`evaluators.families.FAMILIES`): on the self-play window and the supervised data the mode
    asks for, or (a control arm) on the supervised data alone for the self-play arm's CPU seconds."""
    import importlib

    from experiments.training import train  # deferred: loads torch

    rec = state.gen(gen)
    start = state.best
    if "train" in rec:
        if os.path.exists(weights_of(cfg, arm.name, gen)):
            return
        start = int(rec["train"]["init"])  # its network was deleted: trained again from the same network
        for k in ("train", "gate1", "offline"):
            rec.pop(k, None)
        state.save()
    t = {k: v for k, v in cfg.train.items() if k not in LOOP_TRAIN_KEYS}
    if "lr" in state.data:  # gate 1 halved it (on_fail = "halve")
        t["lr"] = float(state.data["lr"])
    out = os.path.join(cfg.gen_dir(arm.name, gen), "train")
    supervised = _supervised(cfg)
    data = _window(cfg, arm, gen, state) if arm.kind == "selfplay" else []
    sup_dir = os.path.join(cfg.gen_dir(arm.name, gen), "supervised")
    if arm.kind == "control":  # the supervised data alone, for the CPU time of the self-play arm's round
        data = supervised
        t.update(epochs=100_000, minutes=None, cpu_seconds=round(_control_seconds(cfg, gen), 1))
    elif cfg.mode == "rounds":
        frac = cfg.train["supervised_fraction"] * cfg.train["supervised_taper"] ** (gen - 1)
        want = int(round(frac / (1.0 - frac) * sum(_positions(d) for d in data)))
        if want > 0:
            data += _supervised_sample(cfg.train["supervised"], 0, sup_dir, cfg.seed + gen, positions=want)
    elif cfg.two_board:  # every supervised game, first: their numbers, so the held-out games, stay the same
        data = supervised + data
    elif supervised:
        data += _supervised_sample(cfg.train["supervised"], cfg.train["supervised_games"], sup_dir, cfg.seed + gen)
    if cfg.mode == "rounds" and not cfg.two_board:  # MuZero's Reanalyse: older networks' shards searched again
        data = reanalyse.training_data(cfg, arm, gen, state, data, progress)
    init = weights_of(cfg, arm.name, start)
    carried = os.path.join(cfg.gen_dir(arm.name, start), "train", "checkpoint.pt") if start else None
    optimizer_from = carried if cfg.mode == "rounds" and carried and os.path.exists(carried) else None
    # the two-board trainer splits by game number under the loop's seed: the same held-out games every
    # generation and arm (bughouse-heldout --seed SEED measures any of the loop's networks on them)
    tc = train.TrainConfig(model=cfg.model, data=data, out=out, init=init, seed=cfg.seed + (0 if cfg.two_board else gen),
                           optimizer_from=optimizer_from, half=cfg.two_board, **t)
    family = FAMILIES[cfg.model]
    trainer = f"searchbench train {cfg.model}" if family.trains_with_train else f"{family.trainer} (the two-board trainer)"
    command = (f"searchbench rl {cfg.path}  # arm {arm.name}, generation {gen}: {trainer} "
               f"--init {init} --data {' '.join(data)} --out {out}"
               + (f" --schedule {t['schedule']}" if t.get("schedule", "family") != "family" else "")
               + (f" --optimizer-from {optimizer_from}" if optimizer_from else "")
               + (f" --minutes {t['minutes']}" if t.get("minutes") else "")
               + (f" --cpu-seconds {t['cpu_seconds']}" if t.get("cpu_seconds") else ""))
    os.makedirs(out, exist_ok=True)
    write_atomic(os.path.join(out, "command.txt"), command + "\n", "command file")
    with StageClock(cfg.gen_dir(arm.name, gen), "train") as clock:
        if family.trains_with_train:
            meta = train.train(tc, progress=progress)
        else:  # a family with its own data and trainer (the two-board network)
            module, _, function = family.trainer.partition(":")
            meta = getattr(importlib.import_module(module), function)(tc, progress=progress, command=command)
    rec["train"] = {"seconds": clock.seconds, "cores": t["threads"], "init": start, "cpu": clock.cpu,
                    "positions": meta.get("train_positions"), "val_policy_acc": meta.get("val_policy_acc"),
                    "val_value_sign_acc": meta.get("val_value_sign_acc"),
                    "lr": tc.resolved().lr, "data": data,
                    **({"samples": int(meta["steps"]) * int(tc.resolved().batch or 0)} if "steps" in meta else {})}
    state.save()


def _supervised(cfg: LoopConfig) -> list[str]:
    """The supervised data as the trainer reads it: shard folders, or (bughouse) every game database
    with the worker shards beside it."""
    sup = list(cfg.train["supervised"])
    return [str(p) for d in sup for p in bd.shard_paths(d)] if cfg.two_board else sup


def _window(cfg: LoopConfig, arm: Arm, gen: int, state: State) -> list[str]:
    """The self-play data a round trains on: the last ``window`` generations, or (``window_positions``)
    the newest rounds back until that many positions (lc0/KataGo's replay window, counted in positions)."""
    want = cfg.train.get("window_positions", 0)
    if want <= 0:
        last = [os.path.join(cfg.gen_dir(arm.name, k), "selfplay") for k in range(max(1, gen - cfg.train["window"] + 1), gen + 1)]
        if cfg.two_board:  # each generation's game database and its worker shards
            return [str(p) for d in last for p in bd.shard_paths(os.path.join(d, "games.sqlite"))]
        return last
    dirs: list[str] = []
    have = 0
    for k in range(gen, 0, -1):
        dirs.insert(0, os.path.join(cfg.gen_dir(arm.name, k), "selfplay"))
        have += int(state.gen(k).get("selfplay", {}).get("positions", 0))
        if have >= want:
            break
    return dirs


def _control_seconds(cfg: LoopConfig, gen: int) -> float:
    """Process CPU seconds the first self-play arm spent on round ``gen`` (self-play, its worker
    processes included, and training; :func:`~experiments.selfplay.state.cpu_now`): the control arm's training budget for the
    same round, counted by getrusage, not wall seconds (a shared machine's contention changes the
    wall seconds a stage takes much more than its CPU seconds).  A round recorded before the CPU was
    kept counts wall seconds times cores."""
    ref = next(a for a in cfg.arms if a.kind == "selfplay")
    rec = State(os.path.join(cfg.arm_dir(ref.name), STATE)).gen(gen)
    secs = sum(float(rec[k]["cpu"]) if "cpu" in rec[k] else float(rec[k]["seconds"]) * max(1.0, float(rec[k]["cores"]))
               for k in ("selfplay", "reanalyse", "train") if k in rec)
    if secs <= 0:
        raise ConfigError(f"control arm, round {gen}: the self-play arm {ref.name!r} has not finished that round")
    return secs


def _supervised_sample(dirs: list[str], games: int, out: str, seed: int, positions: int = 0) -> list[str]:
    """The supervised shards to mix in: all of them (games 0), or ``games`` games of them drawn once
    per generation (or, ``positions``, whole games drawn until that many positions) and written to
    ``out`` (so a resumed training sees the same)."""
    if games <= 0 and positions <= 0:
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
    order = rng.permutation(len(records))
    if positions > 0:
        n, have = 0, 0
        while n < len(order) and have < positions:
            have += len(records[order[n]].moves)
            n += 1
        pick = sorted(order[:n])
    else:
        pick = sorted(rng.choice(len(records), min(games, len(records)), replace=False))
    datagen.write_shard(out, [records[i] for i in pick])
    return [out]


def gate(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool) -> None:
    """Candidate against the best (module docstring); the decision goes into ``state``."""
    rec = state.gen(gen)
    if "gate" in rec:
        return
    gt = cfg.gate
    best = state.best
    if not gt["enabled"]:  # rounds: the latest network goes on (lc0, KataGo); no games
        return _decide(state, gen, (0, 0, 0), True, "no gate: each round goes on from the last", 0, 0.0, 0)
    cand_spec = with_weights(arm.gate_spec, weights_of(cfg, arm.name, gen))
    champ_spec = with_weights(arm.gate_spec, weights_of(cfg, arm.name, best))
    if cfg.two_board:
        return _gate_two_board(cfg, arm, gen, state, progress, cand_spec, champ_spec)
    cand = match_mod.Player(f"{arm.name}-gen{gen}", cand_spec.name, nodes=gt["nodes"], resolved=cand_spec)
    champ = match_mod.Player(f"{arm.name}-gen{best}", champ_spec.name, nodes=gt["nodes"], resolved=champ_spec)
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
    score = (wdl[0] + 0.5 * wdl[1]) / max(1, sum(wdl))
    if test is not None and gt["guard"]:  # a regression guard: kept unless the test shows it worse
        accepted, rule = test.state != "H0", f"guard SPRT [{gt['elo0']:g}, {gt['elo1']:g}]: {test.state} ({test.summary()})"
    elif test is not None:
        accepted, rule = test.state == "H1", f"SPRT [{gt['elo0']:g}, {gt['elo1']:g}]: {test.state} ({test.summary()})"
    else:
        accepted, rule = score >= gt["threshold"], f"score >= {gt['threshold']:g}"
    _decide(state, gen, (wdl[0], wdl[1], wdl[2]), accepted, rule, gt["nodes"], clock.seconds, gt["workers"])


def _decide(state: State, gen: int, wdl: tuple[int, int, int], accepted: bool, rule: str, nodes: int, seconds: float,
            cores: int) -> None:
    """Write a gate's record into generation ``gen`` (its W-D-L against the best, the rule and the
    decision) and make ``gen`` the best network if it was accepted."""
    games = sum(wdl)
    score = (wdl[0] + 0.5 * wdl[1]) / games if games else 0.0
    state.gen(gen)["gate"] = {"against": state.best, "games": games, "wins": wdl[0], "draws": wdl[1],
                              "losses": wdl[2], "score": round(score, 4), "accepted": accepted, "rule": rule,
                              "nodes": nodes, "seconds": seconds, "cores": cores}
    if accepted:
        state.data["best"] = gen
    state.save()


def _gate_two_board(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool, cand: EngineSpec,
                    champ: EngineSpec) -> None:
    """The bughouse gate: the candidate's team against the best's, four-seat games on the gate's clock,
    each pair from its own bughouse opening; accepted at a score of at least ``threshold``."""
    gt = cfg.gate
    db = os.path.join(cfg.gen_dir(arm.name, gen), "gate.sqlite")
    with StageClock(cfg.gen_dir(arm.name, gen), "gate") as clock:
        s = bm.run_match(_seat(cand, gt["nodes"]), _seat(champ, gt["nodes"]), gt["games"], gt["tc"][0], gt["tc"][1],
                         db, seed=cfg.seed + gen, run=f"{cfg.name}-gate", max_plies=cfg.selfplay["max_plies"],
                         progress=progress, openings=_suite(gt["openings"]), workers=gt["workers"])
    score = (s.wins + 0.5 * s.draws) / max(1, s.wins + s.draws + s.losses)
    _decide(state, gen, (s.wins, s.draws, s.losses), score >= gt["threshold"], f"score >= {gt['threshold']:g}",
            gt["nodes"], clock.seconds, gt["workers"])


def model_card(cfg: LoopConfig, arm: Arm, gen: int, state: State) -> None:
    from experiments.training import modelcard  # deferred: loads torch

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
    check_dir(cfg.out, "loop folder")
    os.makedirs(cfg.out, exist_ok=True)
    with DirLock(cfg.out, "loop folder"):
        check_run(cfg)
        return _run(cfg, progress, until)


def _run(cfg: LoopConfig, progress: bool, until: str | None) -> dict[str, Any]:
    gates.measure_targets(cfg, progress)
    if cfg.calibrate["lrs"]:
        chosen = gates.calibrate(cfg, progress)
        cfg.train["lr"] = chosen["chosen"]
        if chosen.get("value_weight") is not None:
            cfg.train["value_weight"] = chosen["value_weight"]
    gates.run_gate0(cfg, progress)
    states = {}
    for arm in cfg.arms:
        os.makedirs(cfg.arm_dir(arm.name), exist_ok=True)
        states[arm.name] = State(os.path.join(cfg.arm_dir(arm.name), STATE))
        check_networks(cfg, arm, states[arm.name])
    stopped = None
    for gen in range(1, cfg.generations + 1):
        for arm in cfg.arms:
            st = states[arm.name]
            generate(cfg, arm, gen, st, progress)
            if until == "selfplay" and gen == cfg.generations:
                continue
            try:
                gates.train_gated(cfg, arm, gen, st, progress, train_candidate)
            except gates.GateError as e:  # no more rounds; the rounds that passed are rated and reported
                stopped = str(e)
                break
            if until == "train" and gen == cfg.generations:
                continue
            gate(cfg, arm, gen, st, progress)
            model_card(cfg, arm, gen, st)
        if stopped:
            break
    summary: dict[str, Any] = {a: {"best": s.best, "gens": s.data["gens"]} for a, s in states.items()}
    write_generations(cfg, states)
    if stopped:
        summary["stopped"] = stopped
    if until is None and cfg.rate:
        summary["report"] = rate_and_report(cfg, states, progress)
    return summary


__all__ = ["Arm", "LoopConfig", "STAGES", "State", "gate", "generate", "model_card", "parse", "run",
           "train_candidate", "weights_of"]
