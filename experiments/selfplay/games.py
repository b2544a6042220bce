"""``searchbench selfplay``: self-play games of any MCTS-family engine, written as training shards.

One engine plays both sides (two instances, one tree each) at a fixed node budget; games run
``concurrency`` at a time with their leaves pooled into one network call (the match harness's
:class:`~experiments.harness.runner.Runner`), in worker processes or Ray actors when asked.  Every
move records the search's **policy target** (:meth:`search.mcts.MCTS.policy_target`: the root's
visit distribution for PUCT, mctx's improved policy ``π' = softmax(logits + σ(completed Q))`` for
Gumbel) and its root value; the shards are :mod:`experiments.training.datagen`'s with those targets
added, so ``searchbench train`` reads self-play and engine games alike.

Exploration (``explore``, on by default; SPEC.md section 4, "Self-play"), added to the engine's
options unless the spec sets them itself:

- PUCT: Dirichlet noise at the root, ε 0.25, α 0.2 in crazyhouse (CrazyAra) and 0.3 in chess
  (AlphaZero); KataGo's forced playouts at the root (k 2) and policy-target pruning, so the target
  is the visit shares without the forced visits (:class:`search.puct.VisitsRoot`); moves
  drawn in proportion to those visit shares (temperature 1, ``temperature_visits``) for the first 15
  moves of each side (30 plies, AlphaZero), then the final-move rule's (``final_policy``).
- Gumbel: its own Gumbel noise at the root (``gumbel_scale`` 1, mctx's default); the move is the
  search's (Sequential Halving's winner), no temperature.

Playout-cap randomisation (KataGo; ``full_fraction`` < 1): each move is a full search (``nodes``)
with that probability, drawn from the game's seed, and its position gets the policy target; the other
moves are a fast search (``fast_nodes``; as KataGo's, no root noise and no forced playouts:
``Limits.fast``) whose position keeps only its value target (an empty policy target in the shard: :meth:`PolicyValue.loss_of` leaves it out of the policy
loss), and that the game's result alone: its root Q is stored as NaN, so ``q_weight`` mixes in the
search's value of full searches only.  More games for the same evaluations, so more value targets, without cheapening the policy
targets.

Games: from the start position (or ``random_plies`` uniformly random legal plies first, which are
not training positions), to the rules' end or ``max_plies`` (a draw); no resignation.

Durability: game ``i`` of a run has a uid and a seed fixed by (``seed``, i), so a rerun of the same
command plays exactly the games not yet written.  Each finished game is appended at once to
``OUT/pending.jsonl`` (flushed and synced), and every ``shard_games`` games the pending ones become a
shard (written to a temporary name and renamed; the journal is emptied after).  A kill loses only
the games in progress; a game in both a shard and the journal is taken once.  ``OUT/selfplay.json``
holds the run's settings (engine, variant, nodes, seed, openings, max plies): a rerun with others is
refused, so one directory never mixes two runs under the same uids.
"""
from __future__ import annotations

import json
import math
import os
import random
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import board
from board import new_position
from board.variants import CRAZYHOUSE, ONE_BOARD
from engines import registry
from engines.base import EngineError, EngineSpec
from evaluators.base import value_to_cp
from experiments.harness.backends import play_on, warm
from experiments.harness.openings import Opening
from experiments.harness.runner import RegistryFactory, RunStats, check_players
from experiments.harness.store import GameRecord
from experiments.harness.tasks import BACKENDS, SEED_RANGE, Adjudication, GameTask, MatchError, Player
from experiments.paths import DirLock, InputError, append_line, check_dir, read_json, require_regular, write_atomic
from experiments.training import datagen
from search.mcts_config import MCTSConfig
from search.mcts_rules import root_rule_class

JOURNAL = "pending.jsonl"
RESULT_CODES = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}


class SelfPlayError(ValueError):
    """Bad self-play input (not an MCTS-family engine, bad numbers, a damaged journal): one line."""


#: the Dirichlet alpha a root rule's exploration takes by variant (its ``SELFPLAY`` value None)
DIRICHLET_ALPHA = {v.name: f"{v.dirichlet_alpha:g}" for v in ONE_BOARD}


@dataclass
class SelfPlayConfig:
    engine: str | EngineSpec  # text from the command line, or a value the loop resolved
    out: str
    variant: str = CRAZYHOUSE.name
    games: int = 100  # games in the run in all (a rerun plays the missing ones)
    nodes: int = 16  # the root's visits per move (search.base's node limit)
    #: > 0: the move's limit is this many evaluator calls instead of ``nodes`` (the unit in which two
    #: searches cost the same: a PUCT tree reuses visits and transposes, Gumbel does not)
    evals: int = 0
    concurrency: int = 16
    workers: int = 1
    backend: str = "local"
    ray_address: str | None = None
    seed: int = 0
    min_random_plies: int = 0
    max_random_plies: int = 0
    max_plies: int = 300
    shard_games: int = 50
    explore: bool = True
    #: playout-cap randomisation (KataGo): this fraction of moves get the full ``nodes`` search and a
    #: policy target; the others a ``fast_nodes`` search and a value target only (1.0: every move full)
    full_fraction: float = 1.0
    fast_nodes: int = 0

    @property
    def playout_cap(self) -> tuple[float, int] | None:
        return (self.full_fraction, self.fast_nodes) if self.full_fraction < 1.0 else None

    def check(self) -> None:
        if self.variant not in board.VARIANTS:
            raise SelfPlayError(f"self-play plays chess or crazyhouse, not {self.variant!r}")
        for name in ("games", "nodes", "concurrency", "workers", "shard_games", "max_plies"):
            if getattr(self, name) < 1:
                raise SelfPlayError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0.0 < self.full_fraction <= 1.0:
            raise SelfPlayError(f"full_fraction must be in (0, 1], got {self.full_fraction}")
        if self.evals < 0:
            raise SelfPlayError(f"evals must be at least 0 (0: the nodes limit), got {self.evals}")
        if self.evals and self.full_fraction < 1.0:
            raise SelfPlayError("playout-cap randomisation works on the nodes limit: leave evals at 0")
        if self.full_fraction < 1.0 and not 1 <= self.fast_nodes <= self.nodes:
            raise SelfPlayError(f"fast_nodes must be from 1 to nodes ({self.nodes}) with full_fraction < 1, "
                                f"got {self.fast_nodes}")
        if not 0 <= self.min_random_plies <= self.max_random_plies:
            raise SelfPlayError("random plies: need 0 <= min <= max")
        if self.backend not in BACKENDS:
            raise SelfPlayError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        if not 0 <= self.seed < SEED_RANGE:
            raise SelfPlayError("seed must be from 0 to 2**63 - 1")


def selfplay_engine(engine: str | EngineSpec, variant: str, explore: bool = True) -> EngineSpec:
    """The engine self-play runs: ``engine`` (text is resolved here, once) with the exploration of its
    root rule added for the options the spec does not set (a built-in engine's play-time defaults,
    such as rise-gumbel's gumbel_scale 0, do not count); :class:`SelfPlayError` unless it is an
    MCTS-family engine."""
    try:
        spec = registry.as_given(engine) if isinstance(engine, str) else engine
    except EngineError as e:
        raise SelfPlayError(str(e)) from None
    if not isinstance(spec.config, MCTSConfig):
        raise SelfPlayError(f"self-play needs an MCTS-family engine (its search gives the policy targets); "
                            f"{spec.name!r} runs {spec.search}")
    if not explore:
        return spec
    named = registry.named_options(spec)  # the options the spec itself sets, not a built-in's
    add = {k: (v if v is not None else DIRICHLET_ALPHA[variant])
           for k, v in root_rule_class(spec.config).SELFPLAY.items() if k not in named}
    return registry.extend(spec, add)


def without_exploration(engine: EngineSpec) -> EngineSpec:
    """``engine`` with every exploration option off, whatever the spec set (a reference search: the
    same network and search without noise, temperature or forced playouts)."""
    return registry.extend(engine, root_rule_class(engine.config).QUIET if isinstance(engine.config, MCTSConfig) else {})


def game_uid(seed: int, index: int) -> int:
    """The 63-bit uid (and seed) of game ``index`` of a run with ``seed``."""
    return (seed * 0x9E3779B97F4A7C15 + zlib.crc32(f"selfplay/{index}".encode()) * 0xBF58476D1CE4E5B9 + index) % (1 << 63)


def game_opening(cfg: SelfPlayConfig, uid: int) -> Opening:
    """Game ``uid``'s random opening (drawn from the uid: a replay draws it again)."""
    rng = random.Random(uid)
    for _ in range(1000):
        op = datagen.random_opening(cfg.variant, rng, cfg.min_random_plies, cfg.max_random_plies)
        if op is not None:
            pos = new_position(cfg.variant)
            for u in op[0]:
                pos.push_uci(u)
            return Opening(f"random-{uid:x}", pos.fen(), tuple(op[0]))
    raise SelfPlayError("no random opening found that leaves the game open; allow fewer random plies")


# --------------------------------------------------------------------------- the journal and shards

def to_record(line: dict[str, Any], variant: str) -> datagen.GameRecord:
    """A journal line as a shard's game: positions replayed, targets attached (training positions
    are the engine's moves after the opening)."""
    pos = new_position(variant)
    opening = list(line["opening"])
    for u in opening:
        pos.push_uci(u)
    rec = datagen.GameRecord(int(line["uid"]), variant, new_position(variant).fen(), opening,
                             result=RESULT_CODES[line["result"]], termination=line["reason"],
                             backend=str(line.get("inference") or ""))
    for uci, (moves, probs, q) in zip(line["moves"], line["targets"]):
        m = pos.parse_uci(uci)
        rec.raw.append(pos.raw_state())
        rec.moves.append(m)
        rec.scores.append(max(-datagen.MATE_SCORE, min(datagen.MATE_SCORE, value_to_cp(float(q), variant))))
        rec.policy.append((list(moves), list(probs)))
        # the search's value joins the value target (``q_weight``) from full searches only: a fast
        # search's root Q is mostly the network's own value (16 nodes), which teaches it nothing
        rec.root_q.append(float(q) if moves else math.nan)
        pos.push(m)
    return rec


def _bad_line(line: Any) -> str | None:
    """Why a parsed journal line is not a game (None: it is one)."""
    if not isinstance(line, dict):
        return "not a JSON object"
    uid = line.get("uid")
    if not isinstance(uid, int) or isinstance(uid, bool) or not 0 <= uid < SEED_RANGE:
        return f"uid {uid!r} is not a game uid (0 to 2**63 - 1)"
    for k in ("opening", "moves"):
        if not isinstance(line.get(k), list) or not all(isinstance(u, str) for u in line[k]):
            return f"{k!r} is not a list of UCI moves"
    if line.get("result") not in RESULT_CODES:
        return f"result {line.get('result')!r} is not one of {', '.join(RESULT_CODES)}"
    if not isinstance(line.get("reason"), str):
        return "'reason' is not text"
    if not isinstance(line.get("inference", ""), str):
        return "'inference' is not text"
    targets = line.get("targets")
    if not isinstance(targets, list) or len(targets) != len(line["moves"]):
        return "'targets' is not one target per move"
    for t in targets:
        ok = (isinstance(t, list) and len(t) == 3 and isinstance(t[0], list) and isinstance(t[1], list)
              and len(t[0]) == len(t[1]) and all(isinstance(m, int) and not isinstance(m, bool) and 0 < m < 1 << 18
                                                     for m in t[0])
              and all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in t[1])
              and isinstance(t[2], (int, float)) and not isinstance(t[2], bool))
        if not ok:
            return f"target {t!r:.60} is not [moves, probabilities, value]"
    return None


class Journal:
    """``OUT/pending.jsonl``: finished games not yet in a shard (module docstring)."""

    def __init__(self, out: str, variant: str) -> None:
        self.out = out
        self.variant = variant
        self.path = os.path.join(out, JOURNAL)
        self.in_shards: set[int] = set()
        for p in datagen.shard_paths(out):
            s = datagen.load_shard(p)
            if str(s["variant"]) != variant:
                raise SelfPlayError(f"{p} holds {s['variant']} games, not {variant}")
            if "policy_offset" not in s:
                raise SelfPlayError(f"{p} is not a self-play shard (no policy targets); give another --out")
            self.in_shards.update(int(u) for u in s["game_uid"])
        self.pending: list[dict[str, Any]] = []
        lines: list[str] = []
        try:
            require_regular(self.path, "self-play journal")
        except InputError as e:
            raise SelfPlayError(str(e)) from None
        if os.path.exists(self.path):
            with open(self.path) as f:
                lines = f.read().splitlines()
        seen = set(self.in_shards)
        for n, text in enumerate(lines, 1):
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                if n == len(lines):  # the last line, torn by a kill: that game is played again
                    continue
                raise SelfPlayError(f"{self.path}:{n} is not a journal line (a damaged journal)") from None
            why = _bad_line(line)
            if why:
                raise SelfPlayError(f"{self.path}:{n}: {why} (a damaged journal; move it away to play its games again)")
            uid = int(line["uid"])
            if uid not in seen:
                seen.add(uid)
                self.pending.append(line)

    @property
    def done(self) -> set[int]:
        return self.in_shards | {int(p["uid"]) for p in self.pending}

    def add(self, line: dict[str, Any]) -> None:
        append_line(self.path, json.dumps(line), "self-play journal")
        self.pending.append(line)

    def flush(self) -> int:
        """Write the pending games as a shard; returns how many."""
        if not self.pending:
            return 0
        records = []
        for p in self.pending:
            try:
                records.append(to_record(p, self.variant))
            except (ValueError, KeyError, IndexError, TypeError) as e:
                raise SelfPlayError(f"{self.path}: game {p['uid']} does not replay ({type(e).__name__}: {e}); "
                                    "a damaged journal") from None
        datagen.write_shard(self.out, records)
        self.in_shards.update(int(p["uid"]) for p in self.pending)
        n = len(self.pending)
        self.pending = []
        write_atomic(self.path, b"", "self-play journal")
        return n


# --------------------------------------------------------------------------- playing

RUN_FILE = "selfplay.json"


def _run_settings(cfg: SelfPlayConfig, engine: str) -> dict[str, Any]:
    return {"engine": engine, "variant": cfg.variant, "nodes": None if cfg.evals else cfg.nodes,
            **({"evals": cfg.evals} if cfg.evals else {}), "seed": cfg.seed,
            "random_plies": [cfg.min_random_plies, cfg.max_random_plies], "max_plies": cfg.max_plies,
            "playout_cap": list(cfg.playout_cap) if cfg.playout_cap else None}


def _check_run(cfg: SelfPlayConfig, engine: str) -> bool:
    """``OUT/selfplay.json`` records what the run plays; a rerun with other settings is refused (its
    games would be mixed with games of another engine, budget or seed under the same uids).  True if
    the folder has no record yet (:func:`_record_run` writes it once the engine has loaded: a refused
    run leaves nothing that would refuse the corrected command)."""
    want = _run_settings(cfg, engine)
    path = os.path.join(cfg.out, RUN_FILE)
    if os.path.lexists(path):
        try:
            have = read_json(path, "self-play run file")
        except InputError:
            raise SelfPlayError(f"{path} is not a self-play run file; give another --out") from None
        if not isinstance(have, dict):
            raise SelfPlayError(f"{path} is not a self-play run file; give another --out")
        diff = [k for k in want if have.get(k) != want[k]]
        if diff:
            k = diff[0]
            raise SelfPlayError(f"{cfg.out} holds self-play games with {k} {have.get(k)!r}, not {want[k]!r}: "
                                f"give the same settings to resume, or another --out")
        return False
    # games of a run from before the run file are taken as they are
    return not (datagen.shard_paths(cfg.out) or os.path.exists(os.path.join(cfg.out, JOURNAL)))


def _record_run(cfg: SelfPlayConfig, engine: str) -> None:
    write_atomic(os.path.join(cfg.out, RUN_FILE), json.dumps(_run_settings(cfg, engine)), "self-play run file")


def play(cfg: SelfPlayConfig, progress: bool = True, stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Play the run's missing games and write them; returns counts and timings.  One run at a time
    in a folder (:class:`~experiments.paths.DirLock`)."""
    cfg.check()
    engine = selfplay_engine(cfg.engine, cfg.variant, cfg.explore)  # the one resolve of a run
    check_dir(cfg.out, "self-play directory")
    os.makedirs(cfg.out, exist_ok=True)
    with DirLock(cfg.out, "self-play directory"):
        return _play(cfg, engine, progress, stop)


def selfplay_player(cfg: SelfPlayConfig, engine: str, spec: EngineSpec) -> Player:
    """Both seats of a self-play game: ``engine`` with the run's budget (evaluator calls, or nodes and
    the playout cap)."""
    return (Player("selfplay", engine, evals=cfg.evals, resolved=spec) if cfg.evals else
            Player("selfplay", engine, nodes=cfg.nodes, playout_cap=cfg.playout_cap, resolved=spec))


def _play(cfg: SelfPlayConfig, spec: EngineSpec, progress: bool, stop: Callable[[], bool] | None) -> dict[str, Any]:
    from tqdm import tqdm

    engine = spec.name  # the text the run file, the games and their keys store
    new_run = _check_run(cfg, engine)
    journal = Journal(cfg.out, cfg.variant)
    player = selfplay_player(cfg, engine, spec)
    done = journal.done
    todo = []
    for i in range(cfg.games):
        uid = game_uid(cfg.seed, i)
        if uid not in done:
            todo.append(GameTask(f"selfplay/{i}", "selfplay", "selfplay", i, cfg.variant, player, player,
                                 game_opening(cfg, uid), uid))
    stats: dict[str, Any] = {"games": 0, "positions": 0, "existing_games": cfg.games - len(todo), "engine": engine}
    factory = RegistryFactory(exact_batches=True)
    adjudication = Adjudication(resign_moves=0, draw_moves=0, max_plies=cfg.max_plies)
    bar = tqdm(total=cfg.games, initial=cfg.games - len(todo), desc=f"selfplay {cfg.variant}", unit="game",
               disable=not progress, dynamic_ncols=True)
    t0 = time.perf_counter()

    def commit(g: GameRecord) -> None:
        if g.reason.startswith("forfeit"):  # a failing engine: nothing to learn from; say so and go on
            bar.write(f"selfplay: game {g.key} lost: {g.reason}")
            return
        if g.targets is None or len(g.targets) != len(g.moves):
            raise SelfPlayError(f"game {g.key} came back without its targets")
        journal.add({"uid": g.seed, "opening": list(g.opening_moves), "moves": g.moves, "result": g.result,
                     "reason": g.reason, "inference": g.white_settings.get("inference") or "",
                     "targets": [[m, [round(p, 6) for p in ps], round(q, 6)] for m, ps, q in g.targets]})
        stats["games"] += 1
        stats["positions"] += len(g.moves)
        bar.update(1)
        bar.set_postfix(positions=stats["positions"], refresh=False)
        if len(journal.pending) >= cfg.shard_games:
            journal.flush()

    stopper = stop or (lambda: False)
    run_stats = RunStats()
    try:
        if todo:
            warm(cfg.backend, cfg.workers)
            settings = check_players([player], cfg.variant, factory)
            if new_run:
                _record_run(cfg, engine)
            play_on(cfg.backend, todo, factory, cfg.variant, cfg.concurrency, cfg.workers, adjudication, settings,
                    commit, stopper, run_stats, address=cfg.ray_address, targets=True)
    except MatchError as e:
        raise SelfPlayError(str(e)) from None
    finally:
        bar.close()
        journal.flush()
    stats.update(seconds=round(time.perf_counter() - t0, 1), eval_calls=run_stats.eval_calls,
                 eval_leaves=run_stats.eval_leaves, shards=len(datagen.shard_paths(cfg.out)))
    return stats


__all__ = ["without_exploration", "Journal", "SelfPlayConfig", "SelfPlayError", "game_opening", "game_uid", "play",
           "selfplay_engine", "selfplay_player", "to_record"]
