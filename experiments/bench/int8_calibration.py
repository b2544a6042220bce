"""``searchbench bench int8-calibration``: would a better calibration keep int8 closer to float32?

A shipped policy-value network's float32 ONNX export is quantised statically to int8 once for each
calibration alternative of :data:`ALTERNATIVES` (``onnxruntime.quantization.quantize_static``
options; the first is what ``inference=onnxruntime-int8`` ships: MinMax on 512 sample positions,
int8 weights per output channel, uint8 activations), and each model is compared with float32 on
other sample positions: the share on which int8 keeps float32's top legal move, the largest value
difference, and evaluations per second at batch 8 (one thread) beside float32's in the same run.
What decides whether int8 plays is strength, not these figures (``searchbench accept-int8``); they
say whether another calibration is worth an SPRT.
"""
from __future__ import annotations

import contextlib
import io
import time
from typing import Any, Callable

import numpy as np

from board.variants import CRAZYHOUSE
from engines import registry
from evaluators import encodings as enc
from evaluators.neural import PolicyValueEvaluator
from evaluators.onnx_runtime import OrtForward, export, quantize_int8


def _alternatives() -> dict[str, Callable[[Any, np.ndarray, np.ndarray], tuple[np.ndarray, dict[str, Any]]]]:
    """name -> (onnx model, 512 shipped calibration planes, 2,048 planes) -> (planes, quantize_static options)."""
    from onnxruntime.quantization import CalibrationMethod, QuantType

    def gemms(model: Any) -> list[str]:
        return [n.name for n in model.graph.node if n.op_type in ("Gemm", "MatMul")]

    return {
        "shipped (MinMax, 512)": lambda m, c, c4: (c, {}),
        "MinMax, 2,048 positions": lambda m, c, c4: (c4, {}),
        "percentile 99.999": lambda m, c, c4: (c4, {"calibrate_method": CalibrationMethod.Percentile}),
        "entropy": lambda m, c, c4: (c4, {"calibrate_method": CalibrationMethod.Entropy}),
        "7-bit weights (reduce_range)": lambda m, c, c4: (c, {"reduce_range": True}),
        "uint8 weights (U8U8)": lambda m, c, c4: (c, {"weight_type": QuantType.QUInt8}),
        "fully connected layers float": lambda m, c, c4: (c, {"nodes_to_exclude": gemms(m)}),
    }


ALTERNATIVES: tuple[str, ...] = ("shipped (MinMax, 512)", "MinMax, 2,048 positions", "percentile 99.999", "entropy",
                                 "7-bit weights (reduce_range)", "uint8 weights (U8U8)", "fully connected layers float")


def _rate(f: Callable[[np.ndarray], Any], x: np.ndarray, seconds: float) -> float:
    f(x)
    best = 0.0
    for _ in range(3):
        n, t = 0, time.perf_counter()
        while time.perf_counter() - t < seconds:
            f(x)
            n += 1
        best = max(best, n * len(x) / (time.perf_counter() - t))
    return best


def run(family: str = "rise", variant: str = CRAZYHOUSE.name, positions: int = 2000, seconds: float = 0.3,
        alternatives: tuple[str, ...] = ALTERNATIVES) -> dict[str, Any]:
    import onnx

    ev = registry.load_evaluator(family, None, 1, "eager", device="cpu", variant=variant)
    assert isinstance(ev, PolicyValueEvaluator)
    examples = ev.example_inputs()
    assert examples is not None
    fp32 = export(ev.net, (examples[0],))
    model = onnx.load_from_string(fp32)
    shipped = ev.int8_calibration()
    more = ev._planes(enc.raw_array([p.raw_state() for p in ev.sample_positions(4 * len(shipped), seed=1)]))
    x8 = ev.example_planes(8)
    ref = OrtForward.of_model(fp32, 1)
    rows = []
    table = _alternatives()
    for name in alternatives:
        planes, options = table[name](model, shipped, more)
        with contextlib.redirect_stdout(io.StringIO()):  # the histogram methods print their progress
            session = OrtForward.of_model(quantize_int8(fp32, planes, **options), 1)
        agree, worst = ev.int8_agreement_of(session, count=positions)
        rows.append({"calibration": name, "agreement": agree, "value_diff": worst,
                     "evals_per_s": _rate(session.run, x8, seconds),
                     "fp32_evals_per_s": _rate(ref.run, x8, seconds)})
    return {"network": f"{family}_{variant}", "positions": positions, "rows": rows}


def format_table(r: dict[str, Any]) -> str:
    lines = [f"{r['network']}: int8 against float32 on {r['positions']:,} sample positions (one thread, batch 8)", "",
             f"{'calibration':<32}{'top move kept':>14}{'max value diff':>16}{'int8 evals/s':>14}{'float32':>10}"]
    for row in r["rows"]:
        lines.append(f"{row['calibration']:<32}{100 * row['agreement']:>13.1f}%{row['value_diff']:>16.3f}"
                     f"{row['evals_per_s']:>14,.0f}{row['fp32_evals_per_s']:>10,.0f}")
    return "\n".join(lines)
