"""Bughouse training data: four-seat games played through the match server, replayed into samples.

Generation (:func:`generate`, ``searchbench bughouse-datagen``)
    Games are played by :func:`experiments.harness.bughouse.run_match` (real clocks, every game stored
    in one SQLite file with its BPGN beside it), between the given pairs of teams in turn, a few
    games at a time, until ``games`` are stored or ``minutes`` have passed. Because games are keyed
    ``<match>:<index>``, running the command again resumes (finished games are never replayed).
    Sjeng (``sjeng:depth=N``) is the default player: its opening book and the asynchronous timing
    of the two boards make every game different. With ``workers`` > 1 that many processes play at
    once, each into a shard of its own beside the database (``NAME.wK.sqlite``, seed ``seed + K``:
    one writer per SQLite file, as every run here), until the database and its shards hold
    ``games``; :func:`shard_paths` lists them for training, which reads a database with its shards.

Samples (:func:`samples_from_db`)
    Every stored game is replayed ply by ply. Before each ply (board ``b``, move ``m`` by seat
    ``s``) two samples are made, both in the network's view of :mod:`evaluators.bughouse_net`:

    * focus ``b`` (the mover's own view): policy target ``m`` on the own half (files 0-7);
    * focus ``1 - b`` (the view of the side to move on the other board): policy target ``m`` on
      the partner half (files 8-15), i.e. the network also learns what happens on the other board.

    The value target ``z`` is the game result for the team of the focus board's side to move
    (+1 win, -1 loss, 0 draw). A sample is ``state`` (the evaluator's 37-int leaf state:
    both raw boards, the focus board and the four seats' clocks in ms at that moment), the flat
    policy index, ``z`` and the game number (for the split by game). Forfeited and ``max_plies``
    games are skipped (their results say nothing about the positions).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from board.bughouse import BughouseGame, leaf_state, team_of
from board.variants import BUGHOUSE
from engines.factory import make_seat
from engines.registry import EvaluatorPool
from engines.seats import parse_team
from experiments.harness import bughouse as bm
from experiments.harness.bughouse import BughouseStore
from experiments.harness.openings import suite_id
from experiments.harness.store import Store, StoreError
from experiments.harness.workers import PoolError, run_pool

DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (("sjeng:depth=3", "sjeng:depth=4"), ("sjeng:depth=4", "sjeng:depth=4"))


class BughouseDataError(ValueError):
    """Bad generation settings, or a database without usable games (one line)."""


def shard(db: str | Path, k: int) -> Path:
    """Worker ``k``'s database: ``db`` itself for worker 0, ``NAME.wK.sqlite`` beside it for the others."""
    p = Path(db)
    return p if k == 0 else p.with_name(f"{p.stem}.w{k}{p.suffix}")


def shard_paths(db: str | Path) -> list[Path]:
    """``db`` (where it exists) and the shards that parallel generation wrote beside it."""
    p = Path(db)
    out = [p] if p.exists() else []
    found = [(int(m.group(1)), q) for q in p.parent.glob(f"{p.stem}.w*{p.suffix}")
             if (m := re.fullmatch(re.escape(p.stem) + r"\.w(\d+)" + re.escape(p.suffix), q.name))]
    return out + [q for _, q in sorted(found)]


def count_all(db: str | Path) -> int:
    """Games stored in ``db`` and its shards."""
    return sum(count_games(p) for p in shard_paths(db))


def generate(db: str | Path, pairs: Sequence[tuple[str, str]], games: int, base_ms: int, inc_ms: int,
             minutes: float | None = None, chunk: int = 4, seed: int = 1, progress: bool = True,
             max_plies: int = 600, workers: int = 1, openings: str | Path | None = None) -> int:
    """Play until ``db`` and its shards hold ``games`` games (resumable; whole chunks, so up to
    ``chunk - 1`` more per worker); ``workers`` processes at once, worker ``k`` into :func:`shard`
    ``(db, k)``, the games still missing shared out equally; ``openings``: a crazyhouse suite, each game
    pair from its own bughouse opening (:func:`experiments.harness.openings.bughouse_openings`).
    Returns the games stored in all of them."""
    if games < 1 or chunk < 1 or not pairs or workers < 1:
        raise BughouseDataError("need games >= 1, chunk >= 1, workers >= 1 and at least one pair of teams")

    for a, b in pairs:  # a bad team is one line here, not one per worker
        parse_team(a), parse_team(b)
    Path(db).parent.mkdir(parents=True, exist_ok=True)
    if workers > 1:
        _check_seats(pairs)
    if workers == 1:
        _generate(db, pairs, games - (count_all(db) - count_games(db)), base_ms, inc_ms, minutes, chunk, seed,
                  progress, max_plies, openings)
        return count_all(db)
    import threading

    from tqdm import tqdm

    left = max(0, games - count_all(db))
    # one task a shard: worker k's database, its quota, its seed (a task is played where it lands)
    tasks = [(str(shard(db, k)), count_games(shard(db, k)) + left // workers + (1 if k < left % workers else 0),
              seed + k) for k in range(workers)]
    bar = tqdm(total=games, initial=min(games, count_all(db)), desc=f"bughouse datagen ({workers} workers)",
               disable=not progress, dynamic_ncols=True)
    over = threading.Event()

    def watch() -> None:  # the games stored so far, read from the shards every 2 s
        while not over.wait(2.0):
            bar.n = min(games, count_all(db))
            bar.refresh()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run_pool(_serve, (list(pairs), base_ms, inc_ms, minutes, chunk, max_plies,
                          None if openings is None else str(openings)),
                 tasks, workers, on_result=lambda _: None)
    except PoolError as e:
        raise BughouseDataError(f"a datagen worker failed: {e}; the finished games are kept: run the command again "
                                "to resume") from None
    finally:
        over.set()
        watcher.join()
        bar.n = min(games, count_all(db))
        bar.close()
    return count_all(db)


def _serve(arg: tuple[list[tuple[str, str]], int, int, float | None, int, int, str | None],
           tasks: Iterator[tuple[str, int, int]], put: Callable[[int], None], stop: Callable[[], bool]) -> None:
    """A worker of :func:`experiments.harness.workers.run_pool`: each shard handed to it played to its quota."""
    pairs, base_ms, inc_ms, minutes, chunk, max_plies, openings = arg
    for db, quota, seed in tasks:
        put(_generate(db, pairs, quota, base_ms, inc_ms, minutes, chunk, seed, False, max_plies, openings))


def _check_seats(pairs: Sequence[tuple[str, str]]) -> None:
    """Every seat of the pairs made once (a program started, a network loaded) and closed: an engine
    that cannot start is one line here, before any worker starts, not a traceback from each."""
    pool = EvaluatorPool()
    try:
        for spec in dict.fromkeys(s for pair in pairs for team in pair for s in parse_team(team).seat_specs):
            make_seat(spec, 0, pool).close()
    finally:
        pool.close()


def _generate(db: str | Path, pairs: Sequence[tuple[str, str]], games: int, base_ms: int, inc_ms: int,
              minutes: float | None, chunk: int, seed: int, progress: bool, max_plies: int,
              openings: str | Path | None = None) -> int:
    """One process: play until ``db`` holds ``games`` games; returns the games stored there."""
    from tqdm import tqdm

    if chunk % 2:
        chunk += 1  # colours alternate per pair of games
    t0 = time.monotonic()
    stored = count_games(db)
    # resume each pairing after its stored games (its games are keyed "<match>:<index>")
    done = _done_keys(db)
    per_pair = []
    for a, b in pairs:
        suite = "" if openings is None else suite_id(openings)
        prefix = bm.match_key(parse_team(a), parse_team(b), base_ms, inc_ms, seed, suite) + ":"
        n = sum(1 for k in done if k.startswith(prefix))
        per_pair.append(n + n % 2)
    bar = tqdm(total=games, initial=min(stored, games), desc="bughouse datagen", disable=not progress,
               dynamic_ncols=True)
    i = 0
    while stored < games:
        if minutes is not None and time.monotonic() - t0 >= minutes * 60:
            break
        k = i % len(pairs)
        per_pair[k] += chunk
        a, b = pairs[k]
        bm.run_match(a, b, per_pair[k], base_ms, inc_ms, db, None, seed=seed, run="bughouse-datagen",
                     max_plies=max_plies, progress=False, openings=openings)
        now = count_games(db)
        bar.update(max(0, min(now, games) - min(stored, games)))
        stored = now
        i += 1
    bar.close()
    return stored


def _done_keys(db: str | Path) -> set[str]:
    if not Path(db).exists():
        return set()

    s = Store(db, readonly=True)
    try:
        return s.done_keys()
    finally:
        s.close()


def not_a_bughouse_db(path: str | Path) -> str | None:
    """Why ``path`` is no bughouse game database (None: it is one): a folder (one-board shards), a
    file that is not a results database, or one whose games are all of another variant."""
    if not Path(path).is_file():
        return f"{path} is not a bughouse game database (a folder: one-board data shards?); give the SQLite file bughouse-datagen wrote"
    try:
        store = BughouseStore(path, readonly=True)
    except (StoreError, OSError, ValueError) as e:
        return f"{path} is not a bughouse game database: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    try:
        variants = {rec.variant for rec in store.store.games()}
    except Exception as e:  # noqa: BLE001 - a damaged database: one line
        return f"{path} is not a readable game database: {type(e).__name__}"
    finally:
        store.close()
    if variants and BUGHOUSE.name not in variants:
        return f"{path} holds {', '.join(sorted(variants))} games, not bughouse: give the database bughouse-datagen wrote"
    return None


def count_games(db: str | Path) -> int:
    return len(_done_keys(db))


@dataclass
class Samples:
    """Training samples (see the module docstring)."""

    states: np.ndarray    # int64 [N, 37]
    policy: np.ndarray    # int64 [N] flat policy index
    value: np.ndarray     # float32 [N] result for the focus board's side to move's team
    game: np.ndarray      # int64 [N] game number
    games: int
    own: np.ndarray       # bool [N]: the focus board is the moving board (the policy target is ours)
    legal_start: np.ndarray  # int64 [N + 1]: sample i's legal moves are legal[legal_start[i]:legal_start[i+1]]
    legal: np.ndarray     # int64 [L]: policy indices of the moving board's legal moves, per sample

    def __len__(self) -> int:
        return int(self.policy.shape[0])

    def subset(self, mask: np.ndarray) -> "Samples":
        rows = np.flatnonzero(mask)
        counts = np.diff(self.legal_start)[rows]
        starts = self.legal_start[rows]
        take = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(int(counts.sum()))
        return Samples(self.states[rows], self.policy[rows], self.value[rows], self.game[rows],
                       int(len(np.unique(self.game[rows]))), self.own[rows],
                       np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), self.legal[take])


def _result_value(result: str) -> int | None:
    """Team-0 result: +1, -1, 0, or None for an unfinished game."""
    return {"1-0": 1, "0-1": -1, "1/2-1/2": 0}.get(result)


def samples_from_db(paths: Sequence[str | Path], both_views: bool = True) -> Samples:
    """Samples of every usable game stored in the given match databases."""
    from evaluators.bughouse_net import policy_indices_np  # deferred: loads torch

    states: list[tuple[int, ...]] = []
    moves: list[int] = []
    values: list[float] = []
    game_ids: list[int] = []
    own: list[bool] = []
    legal_moves: list[list[int]] = []
    n_games = 0
    for path in paths:
        if not Path(path).exists():
            raise BughouseDataError(f"no such game database: {path}")
        try:
            store = BughouseStore(path, readonly=True)  # an input: never written to
        except StoreError as e:
            raise BughouseDataError(str(e)) from None
        try:
            for rec in store.store.games():
                z0 = _result_value(rec.result)
                if rec.variant != BUGHOUSE.name or z0 is None or rec.reason.startswith(("forfeit", "max_")):
                    continue
                details = store.details(rec.key)
                if details is None:
                    continue
                base = details["seats"][0].get("base_ms", -1) if details["seats"] else -1
                inc = details["seats"][0].get("inc_ms", 0) if details["seats"] else 0
                g = BughouseGame(details["fen"], base, inc)
                gid = n_games
                n_games += 1
                for text, t in zip(rec.moves, details["times"]):
                    bid, m = g.parse(text)
                    clocks = [g.time_left(s, t) for s in range(4)]
                    views = (bid, 1 - bid) if both_views else (bid,)
                    legal = [(bid << 18) | x for x in g.legal_moves(bid)]
                    for focus in views:
                        st = leaf_state(g, focus, clocks)
                        states.append(st)
                        moves.append((bid << 18) | m)
                        team = team_of(focus, g.boards[focus].turn)
                        values.append(float(z0 if team == 0 else -z0))
                        game_ids.append(gid)
                        own.append(focus == bid)
                        legal_moves.append(legal)
                    g.push(bid, m, t)
        finally:
            store.close()
    if not states:
        raise BughouseDataError(f"no finished bughouse games in {', '.join(str(p) for p in paths)}")
    st_arr = np.array(states, dtype=np.int64)
    mv = np.array(moves, dtype=np.int64)
    idx = policy_indices_np(st_arr, mv)
    counts = np.array([len(x) for x in legal_moves], dtype=np.int64)
    flat = np.fromiter((m for x in legal_moves for m in x), dtype=np.int64, count=int(counts.sum()))
    legal_idx = policy_indices_np(st_arr, flat, np.repeat(np.arange(len(states)), counts))
    if (idx < 0).any() or (legal_idx < 0).any():
        raise BughouseDataError("a stored move cannot be encoded in the bughouse policy map")
    return Samples(st_arr, idx, np.array(values, dtype=np.float32), np.array(game_ids, dtype=np.int64), n_games,
                   np.array(own, dtype=bool), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), legal_idx)
