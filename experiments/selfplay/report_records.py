"""The loop's records as sections of its report (:mod:`experiments.selfplay.report`): the policy
targets before training, gate 0, the calibrations and each round's gate 1 with its work, and the
offline figures (value error, value probes, the prior's cross-entropy), read from the loop's folder.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from experiments.paths import InputError, read_json
from experiments.selfplay import offline, targets
from experiments.selfplay.config import STATE, LoopConfig
from experiments.selfplay.gates import CALIBRATION, GATE0, HELDOUT0, TARGETS


def _budget(cfg: LoopConfig) -> str:
    """A self-play move's budget as the config sets it: ``4 evaluator calls`` or ``16 nodes (root visits)``."""
    sp = cfg.selfplay
    return f"{sp['evals']} evaluator calls" if sp.get("evals") else f"{sp['nodes']} nodes (root visits)"



def _targets_section(cfg: LoopConfig) -> list[str]:
    """The policy targets of each arm's self-play search against generation 0's prior
    (``OUT/targets.json``, :func:`experiments.selfplay.gates.measure_targets`)."""
    path = Path(cfg.out) / TARGETS
    if not path.is_file():
        return []
    try:
        rows = read_json(path, "targets file")["rows"]  # type: ignore[index]
    except (InputError, KeyError, TypeError):
        return []
    lines = [f"## Policy targets before training (`searchbench targets`, {_budget(cfg)}, "
             f"{rows[0]['positions'] if rows else 0} held-out positions)", "",
             "Top-1: the target's most probable move is the data engine's move; KL to generation 0's prior; "
             "checks: the target's mass on checking moves; evals: evaluator calls a move.", "",
             "| target | top-1 | 95% interval | entropy | KL(prior) | checks | evals |", "|---|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| `{r['name']}` | {r['top1']:.1%} | [{r['top1_lo']:.1%}, {r['top1_hi']:.1%}] | {r['entropy']:.2f} | "
                     f"{r['kl_prior']:.2f} | {r['check_mass']:.3f} | {r['evals']:.1f} |")
    notes = [f"- `{r['name']}`: {n}" for r in rows for n in r["notes"]]
    return lines + [""] + notes + ([""] if notes else [])


def _record(cfg: LoopConfig, name: str) -> Any:
    """A JSON record of the loop's folder (None: absent or unreadable)."""
    path = Path(cfg.out) / name
    try:
        return read_json(path, "loop record") if path.is_file() else None
    except InputError:
        return None


def _gates_section(cfg: LoopConfig) -> list[str]:
    """Gate 0's table (the target against a deep search, before any game), the learning-rate
    calibration, and every round's gate 1 figures with the work each arm spent (the control's budget:
    the self-play arm's process CPU seconds), from the loop's records in ``OUT``."""
    def record(name: str) -> Any:
        return _record(cfg, name)

    lines: list[str] = []
    g0 = record(GATE0)
    if isinstance(g0, dict) and isinstance(g0.get("value"), list) and g0["value"]:
        k = g0["key"]
        cap = f", playout cap {k['cap'][0]:g} x {k['nodes']} / {k['cap'][1]}" if k.get("cap") else ""
        lines += [f"## Gate 0: the target against a deep search, before any game", "",
                  f"Each self-play arm's policy target as self-play writes it ({k['nodes']} nodes{cap}, self-play's "
                  f"noise, forced playouts and pruning{', the tree kept from its search two plies earlier' if k.get('reuse') else ''}) "
                  f"against a {k['reference']}-node search of the same network without noise on a fresh tree, on "
                  f"{g0['value'][0]['positions']} held-out positions (`searchbench targets --reference {k['reference']}`). "
                  f"The loop starts only if the target's cross-entropy to the reference is below the prior's and its "
                  f"entropy is at least {cfg.gate0['min_entropy_ratio']:g} x the reference's (point estimates).", "",
                  targets.format_reference(g0["value"], markdown=True), ""]
    cal = record(CALIBRATION)
    if isinstance(cal, dict) and cal.get("tries"):
        base = cal["round0"]
        lines += ["## Learning-rate calibration", "",
                  f"One control round at each rate (round 0's network, the supervised data alone, constant schedule, "
                  f"{cal['cpu_seconds']:g} process CPU seconds); the largest rate whose held-out policy NLL falls below "
                  f"round 0's ({base['policy_loss']:.4f}) is the loop's: **{cal['chosen']}**.", "",
                  "| learning rate | training samples | held-out policy NLL | change | value loss | prior entropy |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for t in cal["tries"]:
            lines.append(f"| {t['lr']:g} | {t['samples']:,} | {t['policy_loss']:.4f} | {t['policy_loss'] - base['policy_loss']:+.4f} | "
                         f"{t['value_loss']:.4f} | {t['policy_entropy']:.3f} |")
        lines.append("")
    rows = []
    for arm in cfg.arms:
        st = record(os.path.join(arm.name, STATE))
        for g, rec in sorted((st or {}).get("gens", {}).items(), key=lambda kv: int(kv[0])):
            tr, sp = rec.get("train", {}), rec.get("selfplay", {})
            g1 = rec.get("gate1", {})
            fails = "; ".join(f"lr {f['lr']:g}: {f.get('why', '')}" for f in rec.get("gate1_failed", []))
            rows.append(f"| {arm.name} | {g} | {sp.get('games', 0)} | {sp.get('evals', 0):,} | "
                        f"{(sp.get('cpu', 0) + tr.get('cpu', 0)) / 3600:.2f} | {tr.get('samples', 0):,} | {tr.get('lr', '')} | "
                        + (f"{g1['policy_loss']:.4f} | {g1['policy_entropy']:.3f} | {g1['value_loss']:.4f} | "
                           f"{'pass' if g1['passed'] else 'fail: ' + g1.get('why', '')}" if g1 else " | | | ")
                        + (f" (retrained after: {fails})" if fails else "") + " |")
    if rows:
        base = record(HELDOUT0)
        b = base["value"] if isinstance(base, dict) and isinstance(base.get("value"), dict) else None
        lines += ["## Rounds: work and gate 1", "",
                  "Work in process CPU seconds (getrusage: self-play's worker processes and training's threads); the "
                  "control arm trains for the CPU seconds its self-play arm spent on the same round (equal CPU, "
                  "not equal wall seconds). " + ("Gate 1 is off: no rule stops or retrains a round; the figures are columns"
                  if not cfg.gate1.get("enabled", True) else "Gate 1 after each self-play round: "
                  + (f"held-out policy NLL at most {cfg.gate1.get('max_nll_rise', 0.02):g} above round 0's, prior entropy at least "
                     f"{cfg.gate1.get('min_entropy_ratio', 0.8):g} x round 0's, value loss not above round 0's"
                     if cfg.gate1.get("heldout_stops", True) else
                     f"prior entropy at least {cfg.gate1.get('min_entropy_ratio', 0.8):g} x round 0's and the offline value "
                     "gate (below); the held-out NLL and value loss are columns, not stops"))
                  + (f" (round 0: NLL {b['policy_loss']:.4f}, entropy {b['policy_entropy']:.3f}, value loss "
                     f"{b['value_loss']:.4f})" if b else "") + ".", "",
                  "| arm | round | games | evaluator calls | CPU h | training samples | lr | held-out NLL | prior entropy | "
                  "value loss | gate 1 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|", *rows, ""]
    for arm in cfg.arms:
        st = record(os.path.join(arm.name, STATE))
        for g, rec in sorted((st or {}).get("gens", {}).items(), key=lambda kv: int(kv[0])):
            if rec.get("gate1_stopped"):
                lines += [f"**{rec['gate1_stopped']}.** No round after it was played; a fixed search that asked "
                          f"for a later round rates round {int(g) - 1}, the last every arm finished.", ""]
    return lines


def _offline_section(cfg: LoopConfig, record: Callable[[str], Any]) -> list[str]:
    """The value-weight calibration and every round's offline gates (:mod:`experiments.selfplay.offline`):
    value error against Fairy-Stockfish and the prior's cross-entropy to round 0's deep search, each
    with its change from the previous round and from round 0, and the value term's share of the
    round's training loss (its held-out split)."""
    def ci(x: list[float], sign: bool = False) -> str:
        return offline.interval(x, sign, places=4)

    def probe(o: dict[str, Any], key: str) -> str:
        """A value probe's cell: the figure, its change from the previous round and from round 0 (where measured)."""
        if key not in o:
            return "not measured (network not kept)"
        changes = [f"{ci(o[f'{key}_minus_{n}'], True)} from {w}" for n, w in (("prev", "previous"), ("round0", "round 0"))
                   if f"{key}_minus_{n}" in o]
        return ci(o[key]) + (f" ({'; '.join(changes)})" if changes else "")

    lines: list[str] = []
    cal = record(CALIBRATION)
    if isinstance(cal, dict) and cal.get("value_tries"):
        lines += ["## Value-weight calibration", "",
                  f"One control round at the chosen rate for each value loss weight ({cal['cpu_seconds']:g} process CPU "
                  f"seconds each); each network's value error against Fairy-Stockfish on the offline gate's positions, "
                  f"paired with round 0's. The lowest value error whose held-out policy NLL stays below round 0's "
                  f"({cal['round0']['policy_loss']:.4f}) is the loop's: **{cal.get('value_weight')}**.", "",
                  "| value weight | training samples | value error | change from round 0 | held-out policy NLL | value loss |",
                  "|---:|---:|---|---|---:|---:|"]
        for t in cal["value_tries"]:
            o = t["offline"]
            lines.append(f"| {t['value_weight']:g} | {t['samples']:,} | {ci(o['value_sq'])} | "
                         f"{ci(o['value_sq_minus_round0'], True)} | {t['policy_loss']:.4f} | {t['value_loss']:.4f} |")
        lines.append("")
    ref = record(offline.REFERENCE)
    rows = []
    for arm in cfg.arms:
        st = record(os.path.join(arm.name, STATE))
        for g, rec in sorted((st or {}).get("gens", {}).items(), key=lambda kv: int(kv[0])):
            o = rec.get("offline")
            if not o:
                continue
            share = _value_share(cfg, arm.name, int(g))
            rows.append(f"| {arm.name} | {g} | {ci(o['value_sq'])} | {ci(o['value_sq_minus_prev'], True)} | "
                        f"{ci(o['value_sq_minus_round0'], True)} | {ci(o['prior_ce'])} | {ci(o['prior_ce_minus_prev'], True)} | "
                        f"{ci(o['prior_ce_minus_round0'], True)} | {probe(o, 'value_rho')} | {probe(o, 'child_agree')} | "
                        f"{share} |")
    if rows and isinstance(ref, dict):
        k = ref.get("key", {})
        lines += ["## Offline gates: what the search needs of the network", "",
                  f"On {len(ref['value']['fens'])} held-out positions (the validation games of {k.get('data')}), before any "
                  f"rating game: the value error is the mean of (v - v_FSF)^2, v_FSF Fairy-Stockfish's evaluation at "
                  f"{k.get('engine_nodes', 0):,} nodes on the suite's value scale; the prior's cross-entropy (nats) is to "
                  f"round 0's {k.get('reference')}-node search without noise. Changes are paired on the same positions; "
                  f"95% intervals. "
                  + ("A self-play round whose value error rises above its previous round's beyond the interval fails "
                     "gate 1. " if cfg.gate1.get("enabled", True) else "Gate 1 is off: these are figures, not stops. ")
                  + f"Value share: the value term's share of the round's loss (value weight x value "
                  f"loss over the total, on its training run's held-out split). Value probes, what a search uses of "
                  f"the value: rho, the rank correlation of v with v_FSF over the positions (bootstrap interval); child "
                  f"agreement, how often the move whose child the value prefers is Fairy-Stockfish's best move at "
                  f"{k.get('engine_nodes', 0):,} nodes.{_round0_probes(record)}", "",
                  "| arm | round | value error | change from previous | change from round 0 | prior CE | change from previous | "
                  "change from round 0 | value rho | child agreement | value share |",
                  "|---|---:|---|---|---|---|---|---|---|---|---:|", *rows, ""]
    return lines


def _round0_probes(record: Callable[[str], Any]) -> str:
    """The initial network's value probes, as a sentence (empty where not measured)."""
    rec = record(os.path.join("offline-round0", offline.PROBES))
    val = rec.get("value") if isinstance(rec, dict) else None
    if not isinstance(val, dict) or not val.get("value"):
        return ""
    ref = record(offline.REFERENCE)
    if not isinstance(ref, dict) or len(ref["value"]["value"]) != len(val["value"]):
        return ""
    f = offline.probe_summary(val, ref["value"]["value"], {})
    rho, agree = f["value_rho"], f["child_agree"]
    return (f" Round 0: rho {rho[0]:.4f} [{rho[1]:.4f}, {rho[2]:.4f}], child agreement {agree[0]:.4f} "
            f"[{agree[1]:.4f}, {agree[2]:.4f}].")


def _value_share(cfg: LoopConfig, arm: str, gen: int) -> str:
    """The value term's share of a round's loss on its held-out split, from the network's own record."""
    import torch

    path = os.path.join(cfg.gen_dir(arm, gen), "train", "model.pt")
    try:
        meta = torch.load(path, map_location="cpu", weights_only=True).get("meta", {})
        vw = float(meta["recipe"]["value_weight"])
        lp, lv = float(meta["val_policy_loss"]), float(meta["val_value_loss"])
    except (OSError, RuntimeError, KeyError, TypeError, ValueError, AttributeError):
        return ""
    return f"{vw * lv / (lp + vw * lv):.1%} (weight {vw:g})"
