"""The self-play loop's gates (:mod:`experiments.selfplay.loop`, rounds): gate 0 before any game (the
target self-play will write against a deep search of the same network), the learning-rate
calibration (control rounds at a few rates), and gate 1 after every round (held-out NLL, prior
entropy, value loss against round 0).  The keys and the rules are in :mod:`experiments.selfplay.loop`'s
docstring; each records its figures in the loop's folder, measured once."""
from __future__ import annotations

import json
import os
from typing import Any, Callable

from experiments.harness.tomlconfig import ConfigError, Section
from experiments.paths import InputError, read_json, write_atomic
from experiments.selfplay import offline, targets
from experiments.selfplay.config import (FREE_KEYS, LOOP_TRAIN_KEYS, Arm, LoopConfig, State, cached_record, list_of, no_data,
                                            selfplay_search, weights_of, with_weights)
from experiments.selfplay.reanalyse import reanalyse_engine


TARGETS = "targets.json"


def measure_targets(cfg: LoopConfig, progress: bool) -> list[dict[str, Any]]:
    """Each arm's self-play target against generation 0's prior on the held-out positions of
    ``[rate] heldout`` (:mod:`experiments.selfplay.targets`), before any self-play: kept in
    ``OUT/targets.json`` (measured once), quoted by the report, and a warning for every target that
    is not better than the prior (training on it teaches the network nothing it does not say)."""
    import sys

    data = [d for d in cfg.rate.get("heldout", []) if os.path.exists(d)]
    n = int(cfg.rate.get("target_positions", 0))
    if not data or n <= 0:
        return []
    path = os.path.join(cfg.out, TARGETS)
    engines = [with_weights(selfplay_search(cfg, a.spec), weights_of(cfg, a.name, 0)) for a in cfg.arms
               if a.kind == "selfplay"]
    key = {"engines": [e.name for e in engines], "data": data, "positions": n, "nodes": cfg.selfplay["nodes"],
           "explore": cfg.selfplay["explore"], **({"evals": cfg.selfplay["evals"]} if cfg.selfplay.get("evals") else {})}
    rows: list[dict[str, Any]] = []
    if os.path.lexists(path):
        try:
            have = read_json(path, "targets file")
            if isinstance(have, dict) and have.get("key") == key and isinstance(have.get("rows"), list):
                rows = have["rows"]
        except InputError:
            rows = []
    if not rows:
        measured = targets.measure(engines, data, positions=n, nodes=cfg.selfplay["nodes"], seed=cfg.seed,
                                   explore=cfg.selfplay["explore"], progress=progress,
                                   evals=cfg.selfplay.get("evals", 0))
        rows = [r.as_dict() for r in measured]
        write_atomic(path, json.dumps({"key": key, "rows": rows}, indent=1), "targets file")
    for r in rows:
        for note in r["notes"]:
            if note.startswith(("not better", "Sequential Halving")):
                print(f"rl: warning: {r['name']}: {note}", file=sys.stderr)
    return rows


class GateError(ConfigError):
    """A gate of the loop refused (one line naming the gate and the figures)."""


GATE0 = "gate0.json"
CALIBRATION = "calibration.json"
HELDOUT0 = "heldout-0.json"


def heldout_figures(weights: str, data: list[str]) -> dict[str, float]:
    """Held-out policy NLL, value loss, prior entropy and top-1 of a network (``searchbench heldout``)."""
    from experiments.training.policy_value import heldout  # deferred: loads torch

    r = heldout([weights], data)[0]
    return {k: round(float(r[f"val_{k}"]), 5) for k in ("policy_loss", "value_loss", "policy_entropy", "policy_acc")}


def run_gate0(cfg: LoopConfig, progress: bool) -> list[dict[str, Any]]:
    """Gate 0, before any self-play game: each self-play arm's target as self-play writes it against a
    deep search of generation 0 (:func:`experiments.selfplay.targets.measure_reference`), kept in
    ``OUT/gate0.json``; :class:`GateError` naming the figures unless every target passes."""
    g = cfg.gate0
    if not g["enabled"]:
        return []
    sp = cfg.selfplay
    cap = (sp["full_fraction"], sp["fast_nodes"]) if sp["full_fraction"] < 1 else None
    engines = [with_weights(selfplay_search(cfg, a.spec), weights_of(cfg, a.name, 0)) for a in cfg.arms
               if a.kind == "selfplay"]
    key = {"engines": [e.name for e in engines], "data": g["data"], "positions": g["positions"], "reference": g["reference"],
           "nodes": sp["nodes"], **({"evals": sp["evals"]} if sp["evals"] else {}), "cap": list(cap) if cap else None, "explore": sp["explore"], "reuse": g["reuse"],
           "seed": cfg.seed}
    re_frac, re_nodes = float(cfg.train.get("reanalyse_fraction") or 0.0), int(cfg.train.get("reanalyse_nodes") or sp["nodes"])
    if re_frac > 0:
        key["reanalyse_nodes"] = re_nodes

    def measure() -> list[dict[str, Any]]:
        rows = targets.measure_reference(
            engines, g["data"], g["reference"], positions=g["positions"], nodes=sp["nodes"], seed=cfg.seed,
            explore=sp["explore"], progress=progress, playout_cap=cap, reuse=g["reuse"], evals=sp["evals"])
        if re_frac > 0 and re_nodes < g["reference"]:  # Reanalyse's target passes the same gate
            re_engines = [reanalyse_engine(cfg, a, 0) for a in cfg.arms if a.kind == "selfplay"]
            rows += targets.measure_reference(re_engines, g["data"], g["reference"], positions=g["positions"],
                                              nodes=re_nodes, seed=cfg.seed, explore=False, progress=progress,
                                              reuse=False)
        return rows

    rows: list[dict[str, Any]] = cached_record(os.path.join(cfg.out, GATE0), key, measure)
    why = targets.gate0(rows, g["min_entropy_ratio"])
    if why:
        raise GateError(f"gate 0 refuses the loop before any game: {why[0]}" + (f" (and {len(why) - 1} more)" if len(why) > 1 else ""))
    return rows


def calibrate(cfg: LoopConfig, progress: bool) -> dict[str, Any]:
    """The learning rate of the loop: one control round (generation 0's network on the supervised
    data alone, the constant schedule, ``[calibrate] cpu_seconds`` of process CPU) at each of
    ``[calibrate] lrs``; the largest whose network's held-out policy NLL is below generation 0's is
    kept (none: :class:`GateError`).  Kept in ``OUT/calibration.json`` with every try's figures."""
    from experiments.training import train  # deferred: loads torch

    c = cfg.calibrate
    if not c["lrs"]:
        return {}
    base = _heldout0(cfg, c["data"])
    tries = []
    t = {k: v for k, v in cfg.train.items() if k not in LOOP_TRAIN_KEYS}
    for lr in c["lrs"]:
        out = os.path.join(cfg.out, "calibrate", f"lr-{lr:g}")
        key = {"lr": lr, "cpu_seconds": c["cpu_seconds"], "data": c["data"], "supervised": cfg.train["supervised"],
               "initial": cfg.initial, "train": {k: v for k, v in t.items() if k not in FREE_KEYS}}

        def one(lr: float = lr, out: str = out) -> dict[str, Any]:
            tc = train.TrainConfig(model=cfg.model, data=list(cfg.train["supervised"]), out=out, init=cfg.initial,
                                   seed=cfg.seed, **{**t, "lr": lr, "epochs": 100_000, "minutes": None,
                                                      "cpu_seconds": c["cpu_seconds"], "schedule": "constant"})
            meta = train.train(tc, progress=progress)
            return {"lr": lr, "samples": int(meta.get("steps", 0)) * int(tc.resolved().batch or 0),
                    **heldout_figures(os.path.join(out, "model.pt"), c["data"])}

        tries.append(cached_record(os.path.join(out, "calibration.json"), key, one))
    ok = [x for x in tries if x["policy_loss"] < base["policy_loss"]]
    result = {"round0": base, "tries": tries, "chosen": max(x["lr"] for x in ok) if ok else None,
              "cpu_seconds": c["cpu_seconds"]}
    write_atomic(os.path.join(cfg.out, CALIBRATION), json.dumps(result, indent=1), "calibration record")
    if not ok:
        raise GateError("calibration: no learning rate lowers the held-out policy NLL of generation 0 ("
                        + ", ".join(f"lr {x['lr']:g}: {x['policy_loss']:.4f}" for x in tries)
                        + f" against {base['policy_loss']:.4f}); try smaller ones")
    if c["value_weights"]:
        result.update(_calibrate_value_weight(cfg, float(result["chosen"]), base, t, progress))
        write_atomic(os.path.join(cfg.out, CALIBRATION), json.dumps(result, indent=1), "calibration record")
    return result


def _calibrate_value_weight(cfg: LoopConfig, lr: float, base: dict[str, float], t: dict[str, Any],
                            progress: bool) -> dict[str, Any]:
    """The value loss weight: one control round at the chosen rate for each of ``[calibrate]
    value_weights``, each network's offline value error against Fairy-Stockfish measured
    (:mod:`experiments.selfplay.offline`, paired with generation 0's); the weight of the lowest
    value error whose held-out policy NLL stays below generation 0's is kept (none: the configured
    ``value_weight``)."""
    from experiments.training import train  # deferred: loads torch

    c = cfg.calibrate
    round0 = offline.figures_of(cfg, cfg.initial, os.path.join(cfg.out, "offline-round0"), progress)
    tries = []
    for vw in c["value_weights"]:
        out = os.path.join(cfg.out, "calibrate", f"lr-{lr:g}-vw-{vw:g}")
        key = {"lr": lr, "value_weight": vw, "cpu_seconds": c["cpu_seconds"], "data": c["data"],
               "supervised": cfg.train["supervised"], "initial": cfg.initial,
               "train": {k: v for k, v in t.items() if k not in FREE_KEYS and k != "value_weight"}}

        def one(vw: float = vw, out: str = out) -> dict[str, Any]:
            tc = train.TrainConfig(model=cfg.model, data=list(cfg.train["supervised"]), out=out, init=cfg.initial,
                                   seed=cfg.seed, **{**t, "lr": lr, "value_weight": vw, "epochs": 100_000,
                                                      "minutes": None, "cpu_seconds": c["cpu_seconds"],
                                                      "schedule": "constant"})
            meta = train.train(tc, progress=progress)
            weights = os.path.join(out, "model.pt")
            fig = offline.summary(offline.figures_of(cfg, weights, out, progress), round0, round0)
            return {"value_weight": vw, "samples": int(meta.get("steps", 0)) * int(tc.resolved().batch or 0),
                    **heldout_figures(weights, c["data"]), "offline": fig}

        tries.append(cached_record(os.path.join(out, "calibration.json"), key, one))
    ok = [x for x in tries if x["policy_loss"] < base["policy_loss"]]
    chosen = min(ok, key=lambda x: x["offline"]["value_sq"][0])["value_weight"] if ok else None
    return {"value_tries": tries, "value_weight": chosen}


def _heldout0(cfg: LoopConfig, data: list[str]) -> dict[str, float]:
    key = {"initial": cfg.initial, "data": data}
    return dict(cached_record(os.path.join(cfg.out, HELDOUT0), key, lambda: heldout_figures(cfg.initial, data)))


def check_gate1(cfg: LoopConfig, arm: Arm, gen: int, state: State) -> str | None:
    """Gate 1 after a round's training (self-play arms; with ``controls`` every arm): the new network's held-out policy NLL at most
    ``max_nll_rise`` above generation 0's, its mean prior entropy at least ``min_entropy_ratio`` times
    generation 0's, its value loss at most ``max_value_rise`` above generation 0's (the NLL and value
    rules only with ``heldout_stops``); with ``[offline]`` first the offline value gate
    (:func:`experiments.selfplay.offline.verdict`), whose figures every arm's round records.  The
    figures go into the round's record (``gate1``, ``offline``); returns why it fails (None: it passes)."""

    g = cfg.gate1
    rec = state.gen(gen)
    off = offline.record(cfg, arm, gen, state, progress=False) if cfg.offline else None
    if not g["enabled"] or (arm.kind != "selfplay" and not g["controls"]):
        return None
    base = _heldout0(cfg, g["data"])
    fig = rec.get("gate1") or heldout_figures(weights_of(cfg, arm.name, gen), g["data"])
    why = offline.verdict(off) if off is not None else None
    if why is not None:
        pass
    elif g["heldout_stops"] and fig["policy_loss"] > base["policy_loss"] + g["max_nll_rise"]:
        why = (f"held-out policy NLL {fig['policy_loss']:.4f} is more than {g['max_nll_rise']:g} above round 0's "
               f"{base['policy_loss']:.4f}")
    elif fig["policy_entropy"] < g["min_entropy_ratio"] * base["policy_entropy"]:
        why = (f"mean prior entropy {fig['policy_entropy']:.3f} is below {g['min_entropy_ratio']:g} x round 0's "
               f"{base['policy_entropy']:.3f}")
    elif g["heldout_stops"] and fig["value_loss"] > base["value_loss"] + g["max_value_rise"]:
        why = f"held-out value loss {fig['value_loss']:.4f} is above round 0's {base['value_loss']:.4f}"
    rec["gate1"] = {**fig, "passed": why is None, **({"why": why} if why else {})}
    state.save()
    return why


def train_gated(cfg: LoopConfig, arm: Arm, gen: int, state: State, progress: bool,
                train: Callable[[LoopConfig, Arm, int, State, bool], None]) -> None:
    """Train the round (``train``: the loop's trainer), then gate 1: a failing round stops the loop (:class:`GateError`; the round's
    record keeps why, so a resume stops there too), or with ``on_fail = "halve"`` is trained again at
    half the learning rate (``retries`` times), the rate kept for the rounds after it."""
    import shutil


    rec = state.gen(gen)
    if rec.get("gate1_stopped"):
        raise GateError(str(rec["gate1_stopped"]))
    for attempt in range(cfg.gate1["retries"] + 1):
        train(cfg, arm, gen, state, progress)
        why = check_gate1(cfg, arm, gen, state)
        if why is None:
            return
        lr = float(state.gen(gen)["train"].get("lr") or 0.0)
        if cfg.gate1["on_fail"] != "halve" or attempt == cfg.gate1["retries"]:
            state.gen(gen)["gate1_stopped"] = f"gate 1 stops the loop: {arm.name} round {gen} (lr {lr:g}): {why}"
            state.save()
            raise GateError(state.gen(gen)["gate1_stopped"])
        state.gen(gen).setdefault("gate1_failed", []).append({**state.gen(gen)["gate1"], "lr": lr})
        state.data["lr"] = lr / 2
        for k in ("train", "gate1", "offline"):
            state.gen(gen).pop(k, None)
        state.save()
        shutil.rmtree(os.path.join(cfg.gen_dir(arm.name, gen), "train"), ignore_errors=True)
        for f in ("clock-train.json", offline.FIGURES, offline.PROBES):
            if os.path.exists(os.path.join(cfg.gen_dir(arm.name, gen), f)):
                os.remove(os.path.join(cfg.gen_dir(arm.name, gen), f))


def parse_gates(root: Section, cfg: LoopConfig) -> None:
    """``[gate0]``, ``[gate1]`` and ``[calibrate]`` (the module docstring), checked before anything runs."""

    heldout = list(cfg.rate.get("heldout", [])) if cfg.rate else []
    ratio = lambda v: None if 0.0 <= v <= 2.0 else "must be from 0 to 2"  # noqa: E731
    rounds = cfg.mode == "rounds"
    g0 = root.table("gate0")
    data = list_of(g0, "data", str, heldout)
    cfg.gate0 = dict(enabled=g0.get("enabled", bool, bool(data) and rounds), positions=g0.positive("positions", 400),
                     reference=g0.positive("reference", 400), min_entropy_ratio=g0.get("min_entropy_ratio", float, 0.8, ratio),
                     data=data, reuse=g0.get("reuse", bool, True))
    if cfg.gate0["enabled"]:
        if not data:
            raise g0.error("data", "gate 0 needs held-out data: give [gate0] data or [rate] heldout")
        budget = cfg.selfplay["evals"] or cfg.selfplay["nodes"]
        if cfg.gate0["reference"] <= budget or cfg.gate0["reference"] > 100_000:
            raise g0.error("reference", f"the reference search needs more nodes than self-play's budget ({budget}) "
                                        "and at most 100000")
    for d in data:
        if not os.path.exists(d):
            raise g0.error("data", no_data(d, cfg.variant))
    g0.done()
    g1 = root.table("gate1")
    data1 = list_of(g1, "data", str, heldout)
    cfg.gate1 = dict(enabled=g1.get("enabled", bool, bool(data1) and rounds), data=data1,
                     max_nll_rise=g1.get("max_nll_rise", float, 0.02, lambda v: None if 0 <= v <= 10 else "must be from 0 to 10"),
                     min_entropy_ratio=g1.get("min_entropy_ratio", float, 0.8, ratio),
                     max_value_rise=g1.get("max_value_rise", float, 0.0, lambda v: None if 0 <= v <= 10 else "must be from 0 to 10"),
                     on_fail=g1.choice("on_fail", ("stop", "halve"), "stop"),
                     heldout_stops=g1.get("heldout_stops", bool, True),
                     controls=g1.get("controls", bool, False),
                     retries=g1.get("retries", int, 2, lambda v: None if 0 <= v <= 10 else "must be from 0 to 10"))
    if cfg.gate1["enabled"] and not data1:
        raise g1.error("data", "gate 1 needs held-out data: give [gate1] data or [rate] heldout")
    for d in data1:
        if not os.path.exists(d):
            raise g1.error("data", no_data(d, cfg.variant))
    g1.done()
    c = root.table("calibrate")
    lrs = list_of(c, "lrs", float, [])
    if any(not 0 < v < 10 for v in lrs) or len(set(lrs)) != len(lrs):
        raise c.error("lrs", "must be distinct learning rates between 0 and 10")
    vws = list_of(c, "value_weights", float, [])
    if any(not 0 < v <= 100 for v in vws) or len(set(vws)) != len(vws):
        raise c.error("value_weights", "must be distinct value loss weights above 0 and at most 100")
    cfg.calibrate = dict(lrs=sorted(lrs, reverse=True), data=list_of(c, "data", str, heldout), value_weights=vws,
                         cpu_seconds=c.get("cpu_seconds", float, 600.0,
                                           lambda v: None if 1 <= v <= 1e6 else "must be from 1 to 1e6"))
    if lrs and (not rounds or not cfg.train["supervised"] or not cfg.calibrate["data"]):
        raise c.error("lrs", "calibration trains control rounds: it needs mode = \"rounds\", [train] supervised and "
                             "held-out data ([calibrate] data or [rate] heldout)")
    for d in cfg.calibrate["data"] if lrs else []:
        if not os.path.exists(d):
            raise c.error("data", no_data(d, cfg.variant))
    c.done()

    offline.parse(root, cfg, heldout)
    if vws and (not lrs or not cfg.offline["enabled"]):
        raise c.error("value_weights", "the value weight is calibrated after the learning rate, by the offline value "
                                       "gate: give [calibrate] lrs and [offline] enabled = true")


__all__ = ["CALIBRATION", "GATE0", "GateError", "HELDOUT0", "TARGETS", "measure_targets", "calibrate", "check_gate1", "heldout_figures",
           "parse_gates", "run_gate0", "train_gated"]
