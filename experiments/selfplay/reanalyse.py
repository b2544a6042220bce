"""MuZero's Reanalyse (Schrittwieser et al. 2021, "Online and offline reinforcement learning by
planning with a learned model"; LightZero's ``reanalyze_ratio``): a round's training data made by an
older network is searched again by the current one, and its policy targets and root values are
replaced by the new search's.

Which positions: ``[train] reanalyse_fraction`` of the positions of the round's training data,
from the data an older network made: the window's self-play shards of earlier rounds, and the
round's supervised sample (Fairy-Stockfish's moves, whose one-hot targets become the network's
search targets).  The newest round's own games are left: the network that would reanalyse them made
them.  Shards are drawn in an order from the loop's seed and the round, each whole until the last,
of which a sample (drawn from the seed, the round and the shard) makes up the fraction exactly: the
supervised sample is one large shard, and whole shards took it all (rl-crazyhouse-reanalyse's round
1 searched all 37,887 of its positions where the fraction 0.25 asked for 9,472).  A shard is the unit
of resumption.

The search: the arm's self-play search without exploration (no noise, no temperature, no forced
playouts: the targets a deep search writes, :func:`experiments.selfplay.games.without_exploration`) with
the current best network, at ``[train] reanalyse_nodes`` (default: self-play's ``nodes``), a fresh
tree for each position; each position is a one-ply game of the harness, so the positions' leaves are
pooled into batches and run on the self-play workers like any game.  The new shard keeps every array
of the old one (positions, played moves, results, scores) but ``policy_*`` (the visit shares) and
``root_q`` (the search's value: ``q_weight`` mixes it into the value target), and lands in
``gen-NNN/reanalyse/``; training reads it in place of the old one.  Resumable: a shard written is not
searched again.  Its process CPU seconds are the stage ``reanalyse`` of the round's record, counted in
the arm's budget (the control arm trains for them too).
"""
from __future__ import annotations

import math
import os
import random
from typing import Any

import numpy as np

from evaluators.encodings import raw_to_fen
from experiments.harness.backends import play_on, warm
from experiments.harness.openings import Opening
from experiments.harness.runner import RegistryFactory, RunStats, check_players
from experiments.harness.store import GameRecord
from experiments.harness.tasks import Adjudication, GameTask, MatchError, Player
from experiments.paths import OutputError, save_atomic
from experiments.selfplay.config import Arm, LoopConfig, State, selfplay_search, weights_of, with_weights
from experiments.selfplay.games import SelfPlayError, without_exploration
from experiments.selfplay.state import StageClock
from experiments.training import datagen

FOLDER = "reanalyse"


def pick(cfg: LoopConfig, gen: int, shards: list[str]) -> list[tuple[str, int]]:
    """The shards to reanalyse and how many of each one's positions: shards of ``shards`` (older
    networks' data) in an order drawn from the loop's seed and the round, whole but the last, until
    ``reanalyse_fraction`` of all their positions (rounded up) are covered."""
    frac = float(cfg.train.get("reanalyse_fraction", 0.0))
    if frac <= 0 or not shards:
        return []
    sizes = {s: _positions(s) for s in shards}
    want = math.ceil(frac * sum(sizes.values()))
    order = sorted(shards)
    random.Random(f"{cfg.seed}/reanalyse/{gen}").shuffle(order)
    out, have = [], 0
    for s in order:
        if have >= want:
            break
        take = min(sizes[s], want - have)
        out.append((s, take))
        have += take
    return out


def _positions(shard: str) -> int:
    with np.load(shard, allow_pickle=False) as z:
        return int(len(z["move"]))


def target_name(cfg: LoopConfig, arm: Arm, gen: int, shard: str) -> str:
    """Where the reanalysed copy of ``shard`` lands (a name that says which round's data it was)."""
    rel = os.path.relpath(shard, cfg.arm_dir(arm.name)).replace(os.sep, "-")
    return os.path.join(cfg.gen_dir(arm.name, gen), FOLDER, rel)


def reanalyse(cfg: LoopConfig, arm: Arm, gen: int, state: State, picks: list[tuple[str, int]],
              progress: bool) -> dict[str, str]:
    """Search ``picks``' positions (a shard and how many of its positions) again with the best network
    (module docstring); returns each shard's reanalysed copy, and records the stage (positions
    searched, seconds, process CPU) in the round."""
    counts = dict(picks)
    todo = {s: target_name(cfg, arm, gen, s) for s, _ in picks}
    if not todo:
        return {}
    rec = state.gen(gen)
    os.makedirs(os.path.join(cfg.gen_dir(arm.name, gen), FOLDER), exist_ok=True)
    spec = reanalyse_engine(cfg, arm, state.best)
    nodes = int(cfg.train.get("reanalyse_nodes") or cfg.selfplay["nodes"])
    positions = 0
    with StageClock(cfg.gen_dir(arm.name, gen), "reanalyse") as clock:
        for src, dst in todo.items():
            if os.path.exists(dst):
                positions += counts[src]
                continue
            positions += _one_shard(cfg, spec, nodes, src, dst, progress, counts[src], gen)
    rec["reanalyse"] = {"seconds": clock.seconds, "cores": cfg.selfplay["workers"], "cpu": clock.cpu,
                        "positions": positions, "shards": len(todo), "nodes": nodes, "network": state.best,
                        "engine": spec.name}
    state.save()
    return todo


def reanalyse_engine(cfg: LoopConfig, arm: Arm, network: int) -> Any:
    """The arm's self-play search without exploration, with round ``network``'s weights."""
    return without_exploration(with_weights(selfplay_search(cfg, arm.spec), weights_of(cfg, arm.name, network)))


def _one_shard(cfg: LoopConfig, spec: Any, nodes: int, src: str, dst: str, progress: bool, count: int,
               gen: int) -> int:
    """Reanalyse ``count`` positions of one shard (all, or a sample drawn from the loop's seed, the
    round and the shard) into ``dst`` (written whole or not at all); returns the positions searched."""
    from tqdm import tqdm

    arrays = datagen.load_shard(src)
    variant = str(arrays["variant"])
    n = len(arrays["move"])
    chosen = range(n) if count >= n else sorted(
        random.Random(f"{cfg.seed}/reanalyse/{gen}/{os.path.basename(dst)}").sample(range(n), count))
    player = Player("reanalyse", spec.name, nodes=nodes, resolved=spec)
    tasks = []
    for i in chosen:
        fen = raw_to_fen(tuple(int(v) for v in arrays["raw"][i]), variant)
        tasks.append(GameTask(f"reanalyse/{os.path.basename(dst)}/{i}", "reanalyse", "reanalyse", i, variant,
                              player, player, Opening(f"position-{i}", fen, ()), (cfg.seed * 1_000_003 + i) % (1 << 63)))
    found: dict[int, tuple[list[int], list[float], float]] = {}
    bar = tqdm(total=len(tasks), desc=f"reanalyse {os.path.basename(src)}", unit="position", disable=not progress,
               dynamic_ncols=True)

    def commit(g: GameRecord) -> None:
        i = int(g.key.rsplit("/", 1)[1])
        if g.targets:
            moves, probs, q = g.targets[0]
            found[i] = (list(moves), list(probs), float(q))
        bar.update(1)

    factory = RegistryFactory(exact_batches=True)
    try:
        warm(cfg.selfplay.get("backend", "local"), cfg.selfplay["workers"])
        settings = check_players([player], variant, factory)
        play_on(cfg.selfplay.get("backend", "local"), tasks, factory, variant, cfg.selfplay["concurrency"],
                cfg.selfplay["workers"], Adjudication(resign_moves=0, draw_moves=0, max_plies=1), settings, commit,
                lambda: False, RunStats(), address=cfg.selfplay.get("ray_address"), targets=True)
    except MatchError as e:
        raise SelfPlayError(f"reanalyse: {e}") from None
    finally:
        bar.close()
    _write(arrays, found, dst)
    return len(tasks)


def _write(arrays: dict[str, np.ndarray], found: dict[int, tuple[list[int], list[float], float]], dst: str) -> None:
    """``arrays`` with the positions of ``found`` given their new targets (a position the search could
    not answer, a forfeit, keeps its old target and value), written atomically to ``dst``."""
    n = len(arrays["move"])
    old_off = arrays.get("policy_offset")
    moves: list[np.ndarray] = []
    probs: list[np.ndarray] = []
    root_q = np.array(arrays["root_q"], dtype=np.float32) if "root_q" in arrays else np.full(n, np.nan, np.float32)
    for i in range(n):
        if i in found and found[i][0]:
            m, p, q = found[i]
            moves.append(np.array(m, dtype=np.int32))
            probs.append(np.array(p, dtype=np.float32))
            root_q[i] = q
        elif old_off is not None:
            moves.append(arrays["policy_move"][old_off[i]:old_off[i + 1]])
            probs.append(arrays["policy_prob"][old_off[i]:old_off[i + 1]])
        else:  # a supervised position: its played move
            moves.append(np.array([arrays["move"][i]], dtype=np.int32))
            probs.append(np.ones(1, dtype=np.float32))
    out = dict(arrays)
    out["policy_offset"] = np.concatenate([[0], np.cumsum([len(m) for m in moves])]).astype(np.int64)
    out["policy_move"] = np.concatenate(moves).astype(np.int32) if moves else np.zeros(0, np.int32)
    out["policy_prob"] = np.concatenate(probs).astype(np.float32) if probs else np.zeros(0, np.float32)
    out["root_q"] = root_q
    try:
        save_atomic(dst, lambda tmp: np.savez_compressed(tmp, **out), "reanalysed shard")  # type: ignore[arg-type]
    except OutputError as e:
        raise datagen.DataError(str(e)) from None


def training_data(cfg: LoopConfig, arm: Arm, gen: int, state: State, data: list[str], progress: bool) -> list[str]:
    """The round's training data with a ``reanalyse_fraction`` of older networks' shards replaced by
    their reanalysed copies (``data`` as it is when the fraction is 0); the newest round's self-play
    shards are never reanalysed."""
    if float(cfg.train.get("reanalyse_fraction", 0.0)) <= 0 or arm.kind != "selfplay":
        return data
    newest = os.path.join(cfg.gen_dir(arm.name, gen), "selfplay")
    files: list[str] = []
    older: list[str] = []
    for d in data:
        paths = [d] if os.path.isfile(d) else datagen.shard_paths(d)
        files += paths
        if os.path.normpath(d) != os.path.normpath(newest):
            older += paths
    chosen = reanalyse(cfg, arm, gen, state, pick(cfg, gen, older), progress)
    return [chosen.get(f, f) for f in files]


__all__ = ["FOLDER", "pick", "reanalyse", "reanalyse_engine", "target_name", "training_data"]

