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

each also as the paired difference to the arm's previous round (round 0: the initial network) and
to round 0, with 95% intervals (the same positions: paired, so a small change is resolved).  The
references are measured once per loop (``OUT/offline-reference.json``); each round's per-position
figures are kept in its folder (``offline.json``) for the pairing, its summary in the round's record.

The stop rule (self-play arms; :func:`experiments.selfplay.gates.check_gate1` applies it with gate
1's ``on_fail``): a round whose value error is above its previous round's with the interval of the
difference above 0 fails.
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

import board
from board import move_to_uci
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


def network_figures(weights: str, ref: dict[str, Any], batch: int = 64) -> dict[str, list[float]]:
    """Per reference position: the network's squared value error and its prior's cross-entropy to
    round 0's deep search (the module docstring)."""
    variant = ref["variant"]
    pool = registry.EvaluatorPool()
    try:
        ev = pool.get(registry.resolve(f"rise-mcts:weights={weights}"), variant)
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
    finally:
        pool.close()
    return {"value_sq": sq, "prior_ce": ce}


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


def summary(now: dict[str, list[float]], prev: dict[str, list[float]], round0: dict[str, list[float]]) -> dict[str, Any]:
    """Means with 95% intervals, and the paired differences to the previous round and to round 0."""
    out: dict[str, Any] = {"positions": len(now["value_sq"])}
    for key in ("value_sq", "prior_ce"):
        x = np.array(now[key], dtype=np.float64)
        out[key] = [round(v, 5) for v in _mean_interval(x)]
        for name, other in (("prev", prev), ("round0", round0)):
            out[f"{key}_minus_{name}"] = [round(v, 5) for v in _mean_interval(x - np.array(other[key], dtype=np.float64))]
    return out


def record(cfg: Any, arm: Any, gen: int, state: Any, progress: bool) -> dict[str, Any] | None:
    """The round's offline figures (``state.gen(gen)["offline"]``), measured once; None when off."""
    if not cfg.offline.get("enabled"):
        return None
    rec = state.gen(gen)
    if "offline" in rec:
        return dict(rec["offline"])
    base = cfg.out
    round0 = figures_of(cfg, cfg.initial, os.path.join(base, "offline-round0"), progress)
    prev_gen = state.best
    prev = round0 if prev_gen == 0 else figures_of(cfg, weights_of(cfg, arm.name, prev_gen),
                                                   cfg.gen_dir(arm.name, prev_gen), progress)
    now = figures_of(cfg, weights_of(cfg, arm.name, gen), cfg.gen_dir(arm.name, gen), progress)
    rec["offline"] = {**summary(now, prev, round0), "prev": prev_gen}
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


__all__ = ["FIGURES", "REFERENCE", "fsf_value", "measure_reference", "network_figures", "parse", "record",
           "reference", "summary", "verdict"]
