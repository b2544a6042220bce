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
  (AlphaZero); moves drawn in proportion to the visits (temperature 1) for the first 15 moves of
  each side (30 plies, AlphaZero), then the most visited.
- Gumbel: its own Gumbel noise at the root (``gumbel_scale`` 1, mctx's default); the move is the
  search's (Sequential Halving's winner), no temperature.

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
import os
import random
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import board
from board import new_position
from evaluators.base import value_to_cp
from experiments.harness.openings import Opening
from experiments.harness.runner import RegistryFactory, RunStats, check_players
from experiments.harness.store import GameRecord
from experiments.harness.tasks import BACKENDS, SEED_RANGE, Adjudication, GameTask, MatchError, Player
from experiments.training import datagen

JOURNAL = "pending.jsonl"
RESULT_CODES = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}


class SelfPlayError(ValueError):
    """Bad self-play input (not an MCTS-family engine, bad numbers, a damaged journal): one line."""


#: the papers' exploration, by root rule (``search.mcts_config.ROOT_RULES``); ``None``: by variant
EXPLORATION: dict[str, dict[str, Any]] = {
    "puct": {"dirichlet_epsilon": "0.25", "dirichlet_alpha": None, "temperature": "1.0", "temperature_moves": "15"},
    "gumbel": {"gumbel_scale": "1.0"},
}
DIRICHLET_ALPHA = {"chess": "0.3", "crazyhouse": "0.2"}


@dataclass
class SelfPlayConfig:
    engine: str
    out: str
    variant: str = "crazyhouse"
    games: int = 100  # games in the run in all (a rerun plays the missing ones)
    nodes: int = 16  # the root's visits per move (search.base's node limit)
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

    def check(self) -> None:
        if self.variant not in ("chess", "crazyhouse"):
            raise SelfPlayError(f"self-play plays chess or crazyhouse, not {self.variant!r}")
        for name in ("games", "nodes", "concurrency", "workers", "shard_games", "max_plies"):
            if getattr(self, name) < 1:
                raise SelfPlayError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.min_random_plies <= self.max_random_plies:
            raise SelfPlayError("random plies: need 0 <= min <= max")
        if self.backend not in BACKENDS:
            raise SelfPlayError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        if not 0 <= self.seed < SEED_RANGE:
            raise SelfPlayError("seed must be from 0 to 2**63 - 1")


def selfplay_engine(engine: str, variant: str, explore: bool = True) -> str:
    """The engine string self-play runs: ``engine`` with the exploration of its root rule added for
    the options the spec does not set; :class:`SelfPlayError` unless it is an MCTS-family engine."""
    from engines import registry
    from engines.base import EngineError
    from search.mcts_config import MCTSConfig

    try:
        spec = registry.resolve(engine)
    except EngineError as e:
        raise SelfPlayError(str(e)) from None
    if not isinstance(spec.config, MCTSConfig):
        raise SelfPlayError(f"self-play needs an MCTS-family engine (its search gives the policy targets); "
                            f"{engine!r} runs {spec.search}")
    if not explore:
        return engine
    add = {k: (v if v is not None else DIRICHLET_ALPHA[variant])
           for k, v in EXPLORATION[spec.config.root_rule].items() if k not in spec.options}
    return registry.join_spec(engine, add)


def game_uid(seed: int, index: int) -> int:
    """The 63-bit uid (and seed) of game ``index`` of a run with ``seed``."""
    return (seed * 0x9E3779B97F4A7C15 + zlib.crc32(f"selfplay/{index}".encode()) * 0xBF58476D1CE4E5B9 + index) % (1 << 63)


def _opening(cfg: SelfPlayConfig, uid: int) -> Opening:
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
                             result=RESULT_CODES[line["result"]], termination=line["reason"])
    for uci, (moves, probs, q) in zip(line["moves"], line["targets"]):
        m = pos.parse_uci(uci)
        rec.raw.append(pos.raw_state())
        rec.moves.append(m)
        rec.scores.append(max(-datagen.MATE_SCORE, min(datagen.MATE_SCORE, value_to_cp(float(q), variant))))
        rec.policy.append((list(moves), list(probs)))
        rec.root_q.append(float(q))
        pos.push(m)
    return rec


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
        if os.path.exists(self.path):
            with open(self.path) as f:
                lines = f.read().splitlines()
        seen = set(self.in_shards)
        for n, text in enumerate(lines, 1):
            try:
                line = json.loads(text)
                uid = int(line["uid"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                if n == len(lines):  # the last line, torn by a kill: that game is played again
                    continue
                raise SelfPlayError(f"{self.path}:{n} is not a journal line (a damaged journal)") from None
            if uid not in seen:
                seen.add(uid)
                self.pending.append(line)

    @property
    def done(self) -> set[int]:
        return self.in_shards | {int(p["uid"]) for p in self.pending}

    def add(self, line: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.pending.append(line)

    def flush(self) -> int:
        """Write the pending games as a shard; returns how many."""
        if not self.pending:
            return 0
        datagen.write_shard(self.out, [to_record(p, self.variant) for p in self.pending])
        self.in_shards.update(int(p["uid"]) for p in self.pending)
        n = len(self.pending)
        self.pending = []
        tmp = self.path + ".tmp"
        open(tmp, "w").close()
        os.replace(tmp, self.path)
        return n


# --------------------------------------------------------------------------- playing

RUN_FILE = "selfplay.json"


def _check_run(cfg: SelfPlayConfig, engine: str) -> None:
    """``OUT/selfplay.json`` records what the run plays; a rerun with other settings is refused (its
    games would be mixed with games of another engine, budget or seed under the same uids)."""
    want = {"engine": engine, "variant": cfg.variant, "nodes": cfg.nodes, "seed": cfg.seed,
            "random_plies": [cfg.min_random_plies, cfg.max_random_plies], "max_plies": cfg.max_plies}
    path = os.path.join(cfg.out, RUN_FILE)
    if os.path.exists(path):
        try:
            with open(path) as f:
                have = json.load(f)
        except (OSError, json.JSONDecodeError):
            raise SelfPlayError(f"{path} is not a self-play run file; give another --out") from None
        diff = [k for k in want if have.get(k) != want[k]]
        if diff:
            k = diff[0]
            raise SelfPlayError(f"{cfg.out} holds self-play games with {k} {have.get(k)!r}, not {want[k]!r}: "
                                f"give the same settings to resume, or another --out")
        return
    if datagen.shard_paths(cfg.out) or os.path.exists(os.path.join(cfg.out, JOURNAL)):
        return  # games of a run from before the run file: taken as they are
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(want, f)
    os.replace(tmp, path)

def play(cfg: SelfPlayConfig, progress: bool = True, stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Play the run's missing games and write them; returns counts and timings."""
    from tqdm import tqdm

    from experiments.harness.backends import play_on
    from experiments.paths import check_dir

    cfg.check()
    engine = selfplay_engine(cfg.engine, cfg.variant, cfg.explore)
    check_dir(cfg.out, "self-play directory")
    os.makedirs(cfg.out, exist_ok=True)
    _check_run(cfg, engine)
    journal = Journal(cfg.out, cfg.variant)
    player = Player("selfplay", engine, nodes=cfg.nodes)
    done = journal.done
    todo = []
    for i in range(cfg.games):
        uid = game_uid(cfg.seed, i)
        if uid not in done:
            todo.append(GameTask(f"selfplay/{i}", "selfplay", "selfplay", i, cfg.variant, player, player,
                                 _opening(cfg, uid), uid))
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
                     "reason": g.reason, "targets": [[m, [round(p, 6) for p in ps], round(q, 6)]
                                                      for m, ps, q in g.targets]})
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
            settings = check_players([player], cfg.variant, factory)
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


__all__ = ["EXPLORATION", "Journal", "SelfPlayConfig", "SelfPlayError", "game_uid", "play", "selfplay_engine",
           "to_record"]
