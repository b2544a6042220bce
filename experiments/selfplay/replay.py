"""Self-play games played again from their seeds: ``searchbench replay SELFPLAY_DIR``.

A self-play folder (:mod:`experiments.selfplay.games`) keeps its games as training shards, not in a
results database, but every game is a function of the run file (``selfplay.json``: the engine, its
budget and playout cap, the seed, the random plies, the ply limit) and the game's uid: the uid is
the game's seed and draws its random opening.  Each game sampled is played again as self-play
played it (the same player, opening and seed, through the same harness) and its moves compared
with the shard's; batches of other games do not change a game (the factory's exact batches).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from board.variants import new_position
from experiments.harness.backends import play_on
from experiments.harness.replay import Outcome
from experiments.harness.runner import RegistryFactory, RunStats, check_players
from experiments.harness.store import GameRecord
from experiments.harness.tasks import Adjudication, GameTask
from experiments.paths import InputError, read_json
from experiments.selfplay.games import RUN_FILE, SelfPlayConfig, game_opening, game_uid, selfplay_player
from experiments.training import datagen
from engines import registry


def is_selfplay_dir(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, RUN_FILE))


def _stored_games(folder: str) -> dict[int, list[str]]:
    """Each game uid of the folder's shards -> its moves after the opening, in UCI."""
    ds = datagen.load_dataset(folder)
    out: dict[int, list[str]] = {}
    order = np.argsort(ds.game, kind="stable")
    by_game = ds.game[order]
    for j, uid in enumerate(ds.game_uid.tolist()):
        pos = new_position(ds.variant)
        for u in str(ds.game_opening[j]).split():
            pos.push_uci(u)
        moves: list[str] = []
        for i in order[np.searchsorted(by_game, j, "left"):np.searchsorted(by_game, j, "right")]:
            m = int(ds.move[i])
            moves.append(pos.uci(m))
            pos.push(m)
        out[int(uid)] = moves
    return out


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_run_file(run: Any, where: str) -> None:
    """The run file's fields, each of the type self-play writes (one line naming the first that is not)."""
    if not isinstance(run, dict) or "engine" not in run or "seed" not in run:
        raise InputError(f"{where} is not a self-play run file")
    checks: list[tuple[str, bool, str]] = [
        ("engine", isinstance(run.get("engine"), str), "an engine spec"),
        ("variant", isinstance(run.get("variant"), str), "a variant name"),
        ("seed", _is_int(run.get("seed")) and run["seed"] >= 0, "a non-negative integer"),
        ("max_plies", _is_int(run.get("max_plies")) and run["max_plies"] > 0, "a positive integer"),
        ("nodes", run.get("nodes") is None or (_is_int(run["nodes"]) and run["nodes"] >= 0), "an integer or null"),
        ("evals", _is_int(run.get("evals", 0)) and run.get("evals", 0) >= 0, "a non-negative integer"),
    ]
    rp = run.get("random_plies", [0, 0])
    checks.append(("random_plies", isinstance(rp, list) and len(rp) == 2 and all(_is_int(x) and x >= 0 for x in rp)
                   and rp[0] <= rp[1], "a pair [low, high] of non-negative integers"))
    cap = run.get("playout_cap")
    checks.append(("playout_cap", cap is None or (isinstance(cap, list) and len(cap) == 2
                                                  and isinstance(cap[0], (int, float)) and not isinstance(cap[0], bool)
                                                  and 0.0 <= float(cap[0]) <= 1.0 and _is_int(cap[1]) and cap[1] >= 0),
                   "null or a pair [fraction, nodes]"))
    for name, ok, what in checks:
        if not ok:
            raise InputError(f"{where}: {name} must be {what}, got {run.get(name)!r}")


def replay_selfplay(folder: str, every: int = 1, progress: bool = True, concurrency: int = 8) -> list[Outcome]:
    """Play every ``every``-th game of the self-play ``folder`` again (module docstring); a stored
    game that no game of the run file produces (another seed, another run's shard) is an error."""
    from tqdm import tqdm

    where = os.path.join(folder, RUN_FILE)
    run: Any = read_json(where, "self-play run file")
    _check_run_file(run, where)
    stored = _stored_games(folder)
    lo, hi = run.get("random_plies", [0, 0])
    cap = run.get("playout_cap")
    cfg = SelfPlayConfig(engine=run["engine"], out=folder, variant=run["variant"], nodes=int(run.get("nodes") or 1),
                         evals=int(run.get("evals", 0)), seed=int(run["seed"]), min_random_plies=int(lo),
                         max_random_plies=int(hi), max_plies=int(run["max_plies"]),
                         full_fraction=float(cap[0]) if cap else 1.0, fast_nodes=int(cap[1]) if cap else 0)
    engine = str(run["engine"])
    spec = registry.resolve(engine)  # the run file names the engine as self-play resolved it
    player = selfplay_player(cfg, engine, spec)
    index: dict[int, int] = {}
    i = 0
    while len(index) < len(stored) and i < 10 * len(stored) + 100_000:
        uid = game_uid(cfg.seed, i)
        if uid in stored:
            index[uid] = i
        i += 1
    if len(index) < len(stored):
        raise InputError(f"{len(stored) - len(index)} of the {len(stored)} stored games of {folder} are no game of "
                         f"its run file {where} (seed {run['seed']}): the shards are another run's, or the run file "
                         f"was changed")
    uids = sorted(index, key=lambda u: index[u])[::max(1, every)]
    tasks = [GameTask(f"selfplay/{index[u]}", "selfplay", "selfplay", index[u], cfg.variant, player, player,
                      game_opening(cfg, u), u) for u in uids]
    factory = RegistryFactory(exact_batches=True)
    outcomes: dict[int, Outcome] = {}
    bar = tqdm(total=len(tasks), desc="replay selfplay", unit="game", disable=not progress, dynamic_ncols=True)

    def commit(g: GameRecord) -> None:
        want = stored[g.seed]
        out = Outcome(g.key, len(want))
        for ply, mine in enumerate(g.moves + [f"the end ({g.reason})"] * max(0, len(want) - len(g.moves))):
            if ply >= len(want) or mine != want[ply]:
                out.ply, out.stored, out.replayed = ply, want[ply] if ply < len(want) else "the end", mine
                break
        outcomes[g.seed] = out
        bar.update(1)

    try:
        settings = check_players([player], cfg.variant, factory)
        play_on("local", tasks, factory, cfg.variant, concurrency, 1,
                Adjudication(resign_moves=0, draw_moves=0, max_plies=cfg.max_plies), settings, commit,
                lambda: False, RunStats(), targets=True)
    finally:
        bar.close()
    return [outcomes[u] for u in uids if u in outcomes]


__all__ = ["is_selfplay_dir", "replay_selfplay"]
