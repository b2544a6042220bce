"""The self-play loop's offline gates: what a searched player needs of its network, measured on
held-out positions before any rating game (KataGo, lc0: a searched player is only as good as its
value head, and a target only as good as the search that made it).

For every round of every arm (``[offline]``, rounds mode), on ``positions`` held-out positions (the
validation games of ``data``, split by game as ``train`` splits them, so no network of the loop trained
on them):

- **value error**: the network's value ``v`` against Fairy-Stockfish's evaluation of the position at
  ``engine_nodes`` nodes, put on the suite's one value scale (:func:`evaluators.scale.cp_to_value`;
  a mate is +-1): the mean of ``(v - v_ref)^2`` with its 95% interval;
- **prior cross-entropy**: ``H(π_0, p)`` in nats, ``π_0`` the visit shares of round 0's network
  searching ``reference`` nodes afresh without exploration, ``p`` the network's prior (mixed with
  itself at :data:`experiments.selfplay.targets.SMOOTHING` as gate 0 mixes it, which leaves it as it
  is): how close the prior
  came to the deep search it is meant to learn;

- **value probes** (what a search uses of the value, not how confident it is): the rank correlation
  (Spearman's rho) of ``v`` with ``v_ref`` over the positions, and **child agreement**, how often
  the move whose child the value prefers (every child evaluated, ``-v`` of the child for the mover;
  a game's end scored by the rules) is Fairy-Stockfish's best move at ``engine_nodes`` (measured once
  per reference, ``OUT/offline-best.json``); a position with several children of the top value
  (two mates) agrees when the engine's move is among them.  rho's interval and its paired changes
  are a bootstrap over positions (:data:`BOOTSTRAP` resamples, the same draws for both networks);
  agreement's are normal, as the other figures';

each also as the paired difference to the arm's previous round (round 0: the initial network) and
to round 0, with 95% intervals (the same positions: paired, so a small change is resolved).  The
references are measured once per loop (``OUT/offline-reference.json``); each round's per-position
figures are kept in its folder (``offline.json``) for the pairing, its summary in the round's record.

The stop rule (self-play arms; :func:`experiments.selfplay.gates.check_gate1` applies it with gate
1's ``on_fail``): a round whose value error is above its previous round's with the interval of the
difference above 0 fails.
"""
from __future__ import annotations

import contextlib
import math
import os
from typing import Any, Iterator

import numpy as np

import board
from board import move_to_uci
from board.position import END_DRAWN, END_LOST, END_NONE, END_WON
from engines import registry
from evaluators.base import Leaf
from evaluators.scale import cp_to_value
from experiments.harness.store import file_id
from experiments.selfplay import targets
from experiments.selfplay.config import cached_record, list_of, no_data, weights_of
from experiments.training import datagen
from experiments.training.datagen import MATE_SCORE
from search.base import Limits

REFERENCE = "offline-reference.json"
FIGURES = "offline.json"
BEST = "offline-best.json"
PROBES = "probes.json"
BOOTSTRAP = 2000


def _mean_interval(x: np.ndarray) -> tuple[float, float, float]:
    """The mean of ``x`` with its normal 95% interval (the positions are independent draws)."""
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    h = 1.96 * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else math.inf
    return m, m - h, m + h


def fsf_value(score: int, variant: str) -> float:
    """A Fairy-Stockfish score (centipawns, or datagen's mate score) on the suite's value scale."""
    if abs(score) >= MATE_SCORE - 1000:
        return 1.0 if score > 0 else -1.0
    return cp_to_value(float(score), variant)


def measure_reference(initial: str, data: list[str], positions: int, seed: int, engine_nodes: int, reference: int,
                      engine: str = "fairy-stockfish", progress: bool = True) -> dict[str, Any]:
    """The held-out positions with Fairy-Stockfish's value at ``engine_nodes`` and the deep-search
    policy of the network ``initial`` at ``reference`` nodes (no noise, fresh tree)."""
    ds, idx = targets._held_out(data, positions, seed, 0.1)
    variant = ds.variant
    spec = registry.resolve(f"rise-mcts:weights={initial},tree_reuse=false")
    pool = registry.EvaluatorPool()
    proc = datagen.UciProcess(datagen.find_engine(engine), variant)
    out: dict[str, Any] = {"variant": variant, "fens": [], "value": [], "moves": [], "probs": []}
    try:
        eng = targets._engines([spec], variant, pool)[0]
        for n, i, pos, legal, _ in targets._positions(ds, idx, progress):
            fen = pos.fen()
            proc.new_game()
            _, score = proc.go_nodes(fen, [], engine_nodes)
            eng.new_game(seed * 1_000_003 + n)
            eng.play(pos.copy(), Limits(nodes=reference))
            shares = dict(eng.policy_target() or [])
            total = sum(shares.get(m, 0.0) for m in legal)
            if total <= 0:
                continue
            out["fens"].append(fen)
            out["value"].append(round(fsf_value(score, variant), 6))
            out["moves"].append([move_to_uci(m) for m in legal])
            out["probs"].append([round(shares.get(m, 0.0) / total, 6) for m in legal])
    finally:
        proc.close()
        pool.close()
    return out


@contextlib.contextmanager
def _network(weights: str, variant: str) -> Iterator[Any]:
    """The network ``weights`` as the evaluator a search would call, closed after."""
    pool = registry.EvaluatorPool()
    try:
        yield pool.get(registry.resolve(f"rise-mcts:weights={weights}"), variant)
    finally:
        pool.close()


def network_figures(weights: str, ref: dict[str, Any], batch: int = 64) -> dict[str, list[float]]:
    """Per reference position: the network's squared value error and its prior's cross-entropy to
    round 0's deep search (the module docstring)."""
    variant = ref["variant"]
    with _network(weights, variant) as ev:
        sq: list[float] = []
        ce: list[float] = []
        for lo in range(0, len(ref["fens"]), batch):
            leaves, dists = [], []
            for fen, moves, probs in zip(ref["fens"][lo:lo + batch], ref["moves"][lo:lo + batch],
                                         ref["probs"][lo:lo + batch]):
                pos = board.new_position(variant, fen)
                legal = [pos.parse_uci(u) for u in moves]
                leaves.append(Leaf(pos.raw_state(), legal, variant))
                dists.append(np.array(probs, dtype=np.float64))
            for k, e in enumerate(ev.evaluate(leaves)):
                sq.append((float(e.value) - float(ref["value"][lo + k])) ** 2)
                p = np.array(e.priors, dtype=np.float64)
                r = dists[k] / dists[k].sum()
                ce.append(float(-(r * np.log(p / p.sum())).sum()))  # gate 0's prior row (mixed with itself: itself)
    return {"value_sq": sq, "prior_ce": ce}


def measure_best(ref: dict[str, Any], engine_nodes: int, engine: str = "fairy-stockfish",
                 progress: bool = True) -> list[str]:
    """Fairy-Stockfish's best move (UCI) at ``engine_nodes`` in each reference position."""
    from tqdm import tqdm

    proc = datagen.UciProcess(datagen.find_engine(engine), ref["variant"])
    best: list[str] = []
    try:
        for fen in tqdm(ref["fens"], desc="best moves", unit="position", disable=not progress):
            proc.new_game()
            move, _ = proc.go_nodes(fen, [], engine_nodes)
            best.append(move)
    finally:
        proc.close()
    return best


def _child_values(pos: Any, moves: list[str], variant: str) -> tuple[list[Leaf], list[int], np.ndarray]:
    """The children of ``pos``: leaves to evaluate, their indices, and the mover's value of each child
    that ends the game (nan for the others)."""
    leaves: list[Leaf] = []
    pending: list[int] = []
    values = np.full(len(moves), np.nan)
    for k, u in enumerate(moves):
        child = pos.copy()
        child.push(child.parse_uci(u))
        legal = child.legal_moves()
        end = child.search_end(len(legal) > 0, True)
        if end == END_NONE:
            leaves.append(Leaf(child.raw_state(), legal, variant))
            pending.append(k)
        else:  # the child's end is for its side to move, the mover's opponent
            values[k] = {END_LOST: 1.0, END_WON: -1.0, END_DRAWN: 0.0}[end]
    return leaves, pending, values


def network_probes(weights: str, ref: dict[str, Any], best: list[str], batch: int = 256) -> dict[str, list[float]]:
    """Per reference position: the network's value (``value``, for the rank correlation) and whether
    the child its value prefers is Fairy-Stockfish's best move (``child_agree``, 1 or 0)."""
    variant = ref["variant"]
    with _network(weights, variant) as ev:
        value: list[float] = []
        agree: list[float] = []
        for fen, moves, engine_move in zip(ref["fens"], ref["moves"], best):
            pos = board.new_position(variant, fen)
            leaves, pending, child = _child_values(pos, moves, variant)
            root = [Leaf(pos.raw_state(), [pos.parse_uci(u) for u in moves], variant)]
            out = [e.value for lo in range(0, len(leaves) + 1, batch) for e in ev.evaluate((root + leaves)[lo:lo + batch])]
            value.append(float(out[0]))
            for k, v in zip(pending, out[1:]):
                child[k] = -float(v)
            top = np.flatnonzero(child >= child.max() - 1e-9)
            agree.append(1.0 if engine_move in {moves[k] for k in top} else 0.0)
    return {"value": value, "child_agree": agree}


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


def _draws(n: int) -> np.ndarray:
    """The bootstrap's resamples of ``n`` positions (fixed: every network is resampled alike, so a
    difference is paired)."""
    return np.random.default_rng(20261204).integers(0, n, size=(BOOTSTRAP, n))


def spearman_interval(v: np.ndarray, ref: np.ndarray, other: np.ndarray | None = None) -> tuple[float, float, float]:
    """rho(v, ref) with its 95% bootstrap (percentile) interval over positions; with ``other``, the
    paired difference rho(v, ref) - rho(other, ref) and its interval from the same resamples."""
    if len(v) < 3:
        return math.nan, math.nan, math.nan
    point = _spearman(v, ref) - (_spearman(other, ref) if other is not None else 0.0)
    boot = []
    for idx in _draws(len(v)):
        r = _spearman(v[idx], ref[idx]) - (_spearman(other[idx], ref[idx]) if other is not None else 0.0)
        if not math.isnan(r):
            boot.append(r)
    if not boot:
        return point, math.nan, math.nan
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return point, float(lo), float(hi)


def reference(cfg: Any, progress: bool) -> dict[str, Any]:
    """The loop's references (measured once; another key measures again)."""
    o = cfg.offline
    key = {"initial": cfg.initial, "data": o["data"], "positions": o["positions"], "engine": o["engine"],
           "engine_nodes": o["engine_nodes"], "reference": o["reference"], "seed": cfg.seed}
    return dict(cached_record(os.path.join(cfg.out, REFERENCE), key, lambda: measure_reference(
        cfg.initial, o["data"], o["positions"], cfg.seed, o["engine_nodes"], o["reference"], o["engine"], progress),
        dict, indent=None))


def figures_of(cfg: Any, weights: str, folder: str, progress: bool) -> dict[str, list[float]]:
    """A network's per-position figures, kept in ``folder/offline.json`` (measured once per network)."""
    from evaluators.neural import weights_path  # deferred: loads torch

    ref = reference(cfg, progress)
    key = {"weights": file_id(weights_path(weights)), "positions": len(ref["fens"]), "reference": ref["fens"][:3]}
    return dict(cached_record(os.path.join(folder, FIGURES), key, lambda: network_figures(weights, ref), dict, indent=None))


def best_moves(cfg: Any, progress: bool) -> list[str]:
    """Fairy-Stockfish's best move in each of the loop's reference positions (measured once)."""
    o = cfg.offline
    return best_moves_in(reference(cfg, progress), cfg.out, o["engine"], o["engine_nodes"], progress)


def best_moves_in(ref: dict[str, Any], out: str, engine: str, engine_nodes: int, progress: bool) -> list[str]:
    """The deep engine's best move in each of ``ref``'s positions, kept in ``out/offline-best.json``
    (measured once per engine, nodes and reference)."""
    key = {"engine": engine, "engine_nodes": engine_nodes, "positions": len(ref["fens"]), "reference": ref["fens"][:3]}
    return list(cached_record(os.path.join(out, BEST), key, lambda: measure_best(ref, engine_nodes, engine, progress),
                              list, indent=None))


def probes_of(cfg: Any, weights: str, folder: str, progress: bool) -> dict[str, list[float]] | None:
    """A network's value probes per position, kept in ``folder/probes.json`` (measured once per
    network); None when the network is not on this machine (a round of a carried state whose
    network was not kept)."""
    from evaluators.neural import weights_path  # deferred: loads torch

    if not os.path.isfile(weights_path(weights)):
        return None
    return probes_in(weights, reference(cfg, progress), best_moves(cfg, progress), cfg.offline["engine_nodes"],
                     os.path.join(folder, PROBES))


def probes_in(weights: str, ref: dict[str, Any], best: list[str], engine_nodes: int, path: str,
              extra: dict[str, Any] | None = None) -> dict[str, list[float]]:
    """A network's value probes on ``ref`` against the deep engine's ``best`` moves, kept in ``path``
    (measured once per network; ``extra`` joins the cache key)."""
    from evaluators.neural import weights_path  # deferred: loads torch

    key = {"weights": file_id(weights_path(weights)), "positions": len(ref["fens"]), "reference": ref["fens"][:3],
           "engine_nodes": engine_nodes, **(extra or {})}
    return dict(cached_record(path, key, lambda: network_probes(weights, ref, best), dict, indent=None))


def interval(x: list[float], sign: bool = False, places: int = 3) -> str:
    """``figure [low, high]`` of a (figure, low, high) triple, signed where it is a change."""
    f = f"{{:{'+' if sign else ''}.{places}f}}"
    return f"{f.format(x[0])} [{f.format(x[1])}, {f.format(x[2])}]"


def probe_summary(now: dict[str, list[float]], ref_value: list[float], others: dict[str, dict[str, list[float]] | None]
                  ) -> dict[str, Any]:
    """The probes' figures with 95% intervals, and their paired changes to each of ``others`` (by
    name; one that is None is left out)."""
    v, r = np.array(now["value"], dtype=np.float64), np.array(ref_value, dtype=np.float64)
    a = np.array(now["child_agree"], dtype=np.float64)
    out: dict[str, Any] = {"value_rho": [round(x, 5) for x in spearman_interval(v, r)],
                           "child_agree": [round(min(1.0, max(0.0, x)), 5) for x in _mean_interval(a)]}
    for name, other in others.items():
        if other is None:
            continue
        out[f"value_rho_minus_{name}"] = [round(x, 5) for x in spearman_interval(
            v, r, np.array(other["value"], dtype=np.float64))]
        out[f"child_agree_minus_{name}"] = [round(x, 5) for x in _mean_interval(
            a - np.array(other["child_agree"], dtype=np.float64))]
    return out


def summary(now: dict[str, list[float]], prev: dict[str, list[float]], round0: dict[str, list[float]]) -> dict[str, Any]:
    """Means with 95% intervals, and the paired differences to the previous round and to round 0."""
    out: dict[str, Any] = {"positions": len(now["value_sq"])}
    for key in ("value_sq", "prior_ce"):
        x = np.array(now[key], dtype=np.float64)
        out[key] = [round(v, 5) for v in _mean_interval(x)]
        for name, other in (("prev", prev), ("round0", round0)):
            out[f"{key}_minus_{name}"] = [round(v, 5) for v in _mean_interval(x - np.array(other[key], dtype=np.float64))]
    return out


def probes_record(cfg: Any, arm: Any, gen: int, prev_gen: int, progress: bool) -> dict[str, Any] | None:
    """The round's value probes with their changes from the previous round and round 0 (None: the
    round's network is not on this machine)."""
    now = probes_of(cfg, weights_of(cfg, arm.name, gen), cfg.gen_dir(arm.name, gen), progress)
    if now is None:
        return None
    round0 = probes_of(cfg, cfg.initial, os.path.join(cfg.out, "offline-round0"), progress)
    prev = round0 if prev_gen == 0 else probes_of(cfg, weights_of(cfg, arm.name, prev_gen),
                                                  cfg.gen_dir(arm.name, prev_gen), progress)
    return probe_summary(now, reference(cfg, progress)["value"], {"prev": prev, "round0": round0})


def record(cfg: Any, arm: Any, gen: int, state: Any, progress: bool) -> dict[str, Any] | None:
    """The round's offline figures (``state.gen(gen)["offline"]``), measured once; None when off."""
    if not cfg.offline.get("enabled"):
        return None
    rec = state.gen(gen)
    if "offline" in rec:
        if "value_rho" not in rec["offline"]:  # a round recorded before the probes: added where its networks are here
            probes = probes_record(cfg, arm, gen, int(rec["offline"].get("prev", 0)), progress)
            if probes is not None:
                rec["offline"] = {**rec["offline"], **probes}
                state.save()
        return dict(rec["offline"])
    base = cfg.out
    round0 = figures_of(cfg, cfg.initial, os.path.join(base, "offline-round0"), progress)
    prev_gen = state.best
    prev = round0 if prev_gen == 0 else figures_of(cfg, weights_of(cfg, arm.name, prev_gen),
                                                   cfg.gen_dir(arm.name, prev_gen), progress)
    now = figures_of(cfg, weights_of(cfg, arm.name, gen), cfg.gen_dir(arm.name, gen), progress)
    rec["offline"] = {**summary(now, prev, round0), **(probes_record(cfg, arm, gen, prev_gen, progress) or {}),
                      "prev": prev_gen}
    state.save()
    return dict(rec["offline"])


def verdict(fig: dict[str, Any]) -> str | None:
    """Why a round fails the offline value gate (None: it passes)."""
    d, lo, hi = fig["value_sq_minus_prev"]
    if lo > 0:
        return (f"held-out value error against Fairy-Stockfish {fig['value_sq'][0]:.4f} is above round "
                f"{fig['prev']}'s by {d:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    return None


def parse(root: Any, cfg: Any, heldout: list[str]) -> None:
    """``[offline]``: enabled (default: with held-out data in rounds mode), data ([rate] heldout),
    positions 300, engine "fairy-stockfish", engine_nodes 50000, reference 400."""
    o = root.table("offline")

    data = list_of(o, "data", str, heldout)
    enabled = o.get("enabled", bool, False)
    cfg.offline = dict(enabled=enabled, data=data, positions=o.positive("positions", 300),
                       engine=o.get("engine", str, "fairy-stockfish"),
                       engine_nodes=o.get("engine_nodes", int, 50_000,
                                          lambda v: None if 1 <= v <= 10_000_000 else "must be from 1 to 10000000"),
                       reference=o.get("reference", int, 400,
                                       lambda v: None if 2 <= v <= 100_000 else "must be from 2 to 100000"))
    if enabled:
        if cfg.mode != "rounds" or cfg.two_board:
            raise o.error("enabled", "the offline gates measure one-board rounds: mode = \"rounds\"")
        if not data:
            raise o.error("data", "the offline gates need held-out data: give [offline] data or [rate] heldout")
        for d in data:
            if not os.path.exists(d):
                raise o.error("data", no_data(d, cfg.variant))
    o.done()


__all__ = ["BEST", "BOOTSTRAP", "FIGURES", "PROBES", "REFERENCE", "best_moves", "fsf_value", "measure_best",
           "measure_reference", "network_figures", "network_probes", "parse", "probe_summary", "probes_of",
           "probes_record", "record", "reference", "spearman_interval", "summary", "verdict"]
