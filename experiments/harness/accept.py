"""A quantised network accepted by playing it, as fishtest accepts a changed network:
``searchbench accept-int8 CONFIG.toml``.

CONFIG is an ablation (:mod:`experiments.harness.ablate`) whose baseline runs a network in float32
(``inference=onnxruntime``) and one of whose variants runs the same network in int8
(``inference=onnxruntime-int8``, or ``onnxruntime-int8-qat``: quantised from the network's
quantisation-tuned copy, :mod:`experiments.training.qat`), with an ``sprt`` table: a pentanomial SPRT of non-regression on
normalised Elo (e.g. ``elo0 = -30, elo1 = 0``) at equal nodes, played on distinct openings.  Other
budgets (equal ``movetime``, where int8's speed counts) are reported beside it and do not decide.

Once the ablation has played (resumably, as any ablation), the verdict of the nodes-axis SPRT is
recorded under the int8 model's key, the SHA-1 of the weights and of the calibration planes
(:meth:`evaluators.neural.PolicyValueEvaluator.int8_key`): ``accepted`` (H1: no regression beyond
``elo0``), ``rejected`` (H0), or ``undecided`` (the games ran out first).  A shipped network's verdict
goes into ``evaluators/weights/int8-verdicts.json`` (in git), any other network's into the cache.
``inference=auto`` (the default) runs int8 only where the verdict is ``accepted``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from engines import registry
from experiments.harness import ablate
from experiments.harness.tomlconfig import ConfigError

from evaluators.base import INT8_MODES

INT8 = INT8_MODES[0]
FLOAT32 = "onnxruntime"
VERDICTS = {"H1": "accepted", "H0": "rejected", "continue": "undecided"}


@dataclass
class Verdict:
    network: str
    variant: str
    key: str
    verdict: str
    entry: dict[str, Any]
    path: Path


def _inference(spec: str) -> tuple[str, str | None, str | None]:
    """(evaluator, weights, inference) of an in-process engine spec."""
    s = registry.resolve(spec)
    weights, _, inference, _ = registry.evaluator_settings(s)
    return s.evaluator, weights, inference


def int8_variant(ab: ablate.Ablation) -> ablate.Variant:
    """The config's int8 variant of a float32 baseline (one line of ConfigError otherwise)."""
    where = str(ab.config_path)
    if ab.sprt is None:
        raise ConfigError(f"{where}: sprt: missing: accept-int8 decides by an SPRT (e.g. sprt = {{ elo0 = -30, elo1 = 0 }})")
    if not any(axis == "nodes" for axis, _ in ab.budgets):
        raise ConfigError(f"{where}: nodes: missing: the SPRT that decides is played at equal nodes")
    ev, weights, inference = _inference(ab.baseline)
    if inference != FLOAT32:
        # auto runs int8 itself where a verdict holds: a verdict must compare int8 with float32
        raise ConfigError(f"{where}: baseline: must name inference={FLOAT32} (float32), not "
                          f"{inference or 'auto'}: a verdict compares int8 with float32 of the same network")
    found = [v for v in ab.variants if _inference(v.engine) in [(ev, weights, m) for m in INT8_MODES]]
    if len(found) != 1:
        raise ConfigError(f"{where}: variants: need exactly one variant that is the baseline's network with "
                          f"inference=onnxruntime-int8 or onnxruntime-int8-qat (found {len(found)})")
    other = _other_settings(ab.baseline, found[0].engine)
    if other:
        raise ConfigError(f"{where}: variants: {found[0].name} differs from the baseline in {other}, not only in "
                          "inference: a verdict is for int8 against float32 of the same network, search and settings")
    return found[0]


def _other_settings(a: str, b: str) -> str:
    """What two in-process engine specs differ in besides ``inference`` ("" if nothing)."""
    x, y = registry.resolve(a), registry.resolve(b)
    if (x.evaluator, x.search) != (y.evaluator, y.search):
        return "evaluator or search"
    if x.config != y.config:
        return "search settings"
    ox = {k: v for k, v in x.options.items() if k != "inference"}
    oy = {k: v for k, v in y.options.items() if k != "inference"}
    diff = sorted(k for k in ox.keys() | oy.keys() if ox.get(k) != oy.get(k))
    return ", ".join(diff)


def stronger(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the recorded verdict ``old`` says more than ``new``: a decided test (accepted, rejected)
    over an undecided one, else more games."""
    def decided(e: dict[str, Any]) -> bool:
        return e.get("verdict") in ("accepted", "rejected")

    if decided(old) != decided(new):
        return decided(old)
    return int(old.get("games", 0)) > int(new.get("games", 0))


def record(ab: ablate.Ablation, rows: list[ablate.Row], replace: bool = False) -> Verdict:
    """Record the nodes-axis SPRT verdict of the int8 variant (module docstring); a verdict already
    recorded for the same model that says more (:func:`stronger`) is kept unless ``replace``."""
    from evaluators.neural import PolicyValueEvaluator  # deferred: loads torch
    from evaluators.onnx_runtime import SHIPPED_VERDICTS, record_int8_verdict  # deferred: loads torch

    v = int8_variant(ab)
    ev_name, weights, _ = _inference(ab.baseline)
    variant = ab.settings.variant
    mode = _inference(v.engine)[2]
    ev = registry.load_evaluator(ev_name, weights, 1, mode, device="cpu", variant=variant)
    if not isinstance(ev, PolicyValueEvaluator):
        raise ConfigError(f"{ab.config_path}: baseline: int8 is offered for policy-value networks (rise, sixtyfour)")
    tuned = mode == INT8_MODES[1]
    if tuned and not ev.has_tuned_copy():
        raise ConfigError(f"{ab.config_path}: variants: {v.name} runs onnxruntime-int8-qat, but the network has no "
                          f"quantisation-tuned copy (searchbench qat makes it)")
    key = ev.int8_key(tuned)
    mine = [r for r in rows if r.variant == v.name and r.axis == "nodes"]
    decided = [r for r in mine if r.verdict in ("H1", "H0")]
    row = (decided or mine)[0]
    assert ab.sprt is not None
    path = Path(ev.path or "")
    shipped = path.resolve().parent == SHIPPED_VERDICTS.parent
    entry: dict[str, Any] = {
        "verdict": VERDICTS[row.verdict], "network": path.name, "variant": variant, "inference": mode, "nodes": int(row.budget),
        "elo0": ab.sprt["elo0"], "elo1": ab.sprt["elo1"], "alpha": ab.sprt["alpha"], "beta": ab.sprt["beta"],
        "llr": round(row.llr or 0.0, 3), **({"decided_at_pairs": row.decided_at} if row.decided_at else {}),
        "games": row.games, "openings": row.openings, "ptnml": row.ptnml,
        "elo": [round(row.elo, 1), round(row.lo, 1), round(row.hi, 1)],
        "report": ablate._shown_path(ab.out_dir), "config": ablate._shown_path(ab.config_path),
        "date": date.today().isoformat()}
    others = [r for r in rows if r.variant == v.name and r.axis != "nodes" and r.games]
    if others:
        entry["other_budgets"] = [{"axis": r.axis, "budget": r.budget, "games": r.games,
                                   "elo": [round(r.elo, 1), round(r.lo, 1), round(r.hi, 1)]} for r in others]
    from evaluators.onnx_runtime import read_verdicts_strict, verdicts_file  # deferred: loads torch

    have = read_verdicts_strict(verdicts_file(shipped)).get(key)
    if have is not None and stronger(have, entry) and not replace:
        raise ConfigError(f"{verdicts_file(shipped)} holds a stronger verdict for this model ({have.get('verdict')} over "
                          f"{have.get('games')} games) than this run's ({entry['verdict']} over {entry['games']}): "
                          "kept; give --replace-verdict to replace it")
    out = record_int8_verdict(key, entry, shipped)
    return Verdict(path.name, variant, key, entry["verdict"], entry, out)


__all__ = ["FLOAT32", "INT8", "VERDICTS", "Verdict", "int8_variant", "record", "stronger"]
