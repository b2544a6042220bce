"""``searchbench bench net``: the raw networks under each inference backend, side by side in one run.

For each shipped policy-value network (RISE and SixtyFour, chess and crazyhouse) and each backend of
:data:`evaluators.base.BACKENDS` (frozen TorchScript, eager torch, ONNX Runtime when it is
installed): evaluations per second at batch 1, 8, 32 and 64 on one thread (the best of a few short
trials, :meth:`evaluators.neural.PolicyValueEvaluator.network_throughput`), the ratio to TorchScript,
and the share of the core's float32 peak: the network's multiply-adds per evaluation (counted from
its convolutions and linear layers) against a single-thread 1024x1024x1024 SGEMM measured in the same
run, and (:func:`pooled`) the pooled NN-MCTS rate of the harness as a share of the raw rate of the
backend engines run (``inference=auto``) at the batch it forms, with the leaf's Python side compiled and by numpy alone,
side by side.  A backend that falls back (its outputs differ from eager torch) is shown with its reason; int8
is shown with its top-move agreement with float32 (information) and its recorded SPRT verdict (what
decides whether ``inference=auto`` runs it: ``searchbench accept-int8``).

The other shipped networks (:data:`GRAPHS`) are measured the same way under ``frozen`` (for them:
eager torch, what ran before ONNX Runtime) and ``onnxruntime``: DeepChess as its two graphs, the
Pos2Vec tower (positions a second) and the comparator head (comparisons a second, the unit its
alpha-beta spends), and the two-board bughouse net.
"""
from __future__ import annotations

from experiments.bench import BATCHES, GRAPHS, NETWORKS
from experiments.bench.harness import run_device
from evaluators import bughouse_net as bn, leafbatch
from evaluators.onnx_runtime import available
from evaluators.base import BACKENDS, INT8_MODES
from evaluators.neural import PolicyValueEvaluator, best_rate
from engines import registry

import time
from typing import Any, Callable, Sequence

import torch
from torch import nn


def _best_gemm_rate(product: Callable[[], Any], n: int, seconds: float) -> float:
    """Billions of operations a second (2 n^3 per ``product`` of two n x n matrices): one warm-up,
    then the best of 3 trials of ``seconds / 3`` each."""
    product()
    best = 0.0
    for _ in range(3):
        k, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / 3:
            product()
            k += 1
        best = max(best, 2.0 * n ** 3 * k / (time.perf_counter() - t0) / 1e9)
    return best


def sgemm_gflops(n: int = 1024, seconds: float = 0.5) -> float:
    """Single-thread float32 matrix-multiply rate (GFLOPS, 2 n^3 per product), best of 3 trials."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        return _best_gemm_rate(lambda: torch.mm(a, b), n, seconds)
    finally:
        torch.set_num_threads(old)


def cpu_isa() -> str:
    """The vector instruction sets the CPU has that int8 and float32 GEMMs use (from /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return "unknown"
    have = [n for n, f in (("AVX-512 VNNI", "avx512_vnni"), ("AVX-VNNI", "avx_vnni"), ("AVX-512", "avx512f"),
                           ("AVX2", "avx2"), ("FMA", "fma")) if f in flags]
    vnni = any("VNNI" in h for h in have)
    return ", ".join(have or ["no AVX"]) + ("" if vnni else " (no VNNI: int8 dot products take 3 instructions, "
                                                          "vpmaddubsw + vpmaddwd + vpaddd)")


def int8_gemm_gops(n: int = 1024, seconds: float = 0.5) -> float | None:
    """Single-thread uint8 x int8 matrix-multiply rate in ONNX Runtime (GOPS, 2 n^3 per product, a
    ``MatMulInteger`` graph: the kernel the quantised networks' convolutions run on), best of 3
    trials; None without onnxruntime."""
    try:
        import numpy as np
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [n, n])
    b = helper.make_tensor_value_info("b", TensorProto.INT8, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [n, n])
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "gemm", [a, b], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {"a": rng.integers(0, 256, (n, n), dtype=np.uint8), "b": rng.integers(-128, 128, (n, n), dtype=np.int8)}
    return _best_gemm_rate(lambda: sess.run(None, feed), n, seconds)


def flops_per_eval(net: nn.Module, x: torch.Tensor | tuple[torch.Tensor, ...]) -> float:
    """2 x the multiply-adds of one evaluation in ``net``'s Conv2d and Linear layers (input ``x``, or
    the tuple of its inputs)."""
    total = [0.0]

    def conv(m: nn.Conv2d, _inp: Any, out: torch.Tensor) -> None:
        k = m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
        total[0] += out[0].numel() * k

    def linear(m: nn.Linear, _inp: Any, out: torch.Tensor) -> None:
        total[0] += out[0].numel() * m.in_features

    hooks = [m.register_forward_hook(conv) for m in net.modules() if isinstance(m, nn.Conv2d)]
    hooks += [m.register_forward_hook(linear) for m in net.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.inference_mode():
            net(*(t[:1] for t in (x if isinstance(x, tuple) else (x,))))
    finally:
        for h in hooks:
            h.remove()
    return 2.0 * total[0]


def graph_rows(name: str, backends: Sequence[str], batches: Sequence[int], seconds: float) -> list[dict[str, Any]]:
    """Rows of one of :data:`GRAPHS` (the table's format), one per backend."""
    rows = []
    for mode in backends:
        if name.startswith("deepchess"):
            variant, graph = name.split("_")[1].split("/")
            ev: Any = registry.load_evaluator("deepchess", None, 1, mode, device="cpu", variant=variant)
            tower, head = ev._backend()
            x = ev._bits([p.raw_state() for p in ev.sample_positions(max(batches))])
            with torch.inference_mode():
                f = tower(x)
            g = f.roll(1, 0).contiguous()
            module: nn.Module = ev._graphs_eager()[0 if graph == "tower" else 1]
            inputs: tuple[torch.Tensor, ...] = (x,) if graph == "tower" else (f, g)
            run_b: Callable[[int], Callable[[], Any]] = (
                (lambda b: (lambda: tower(x[:b]))) if graph == "tower" else (lambda b: (lambda: head(f[:b], g[:b]))))
        else:
            ev = bn.BughouseNetEvaluator.load(inference=mode)
            fwd = ev._built()
            planes, scal = (torch.from_numpy(a) for a in bn.encode(bn.sample_states(max(batches))))
            module, inputs = ev.net, (planes, scal)
            run_b = lambda b: (lambda: fwd(planes[:b], scal[:b]))  # noqa: E731
        rates = {b: best_rate(run_b(b), b, seconds) for b in batches}
        why = ev.inference_error or ("no TorchScript graph: eager torch, as before ONNX Runtime"
                                     if ev.inference != mode else None)
        rows.append({"network": name, "backend": mode, "running": ev.inference, "fallback": why,
                     "flops": flops_per_eval(module, inputs), "evals_per_s": {str(b): r for b, r in rates.items()}})
    return rows


def run(networks: Sequence[tuple[str, str]] = NETWORKS, batches: Sequence[int] = BATCHES,
        seconds: float = 0.3, graphs: Sequence[str] = GRAPHS) -> dict[str, Any]:
    backends = [m for m in BACKENDS if not m.startswith("onnxruntime") or available() is None]
    peak = sgemm_gflops()
    peak8 = int8_gemm_gops() if INT8_MODES[0] in backends else None
    rows: list[dict[str, Any]] = []
    for family, variant in networks:
        for mode in backends:
            ev = registry.load_evaluator(family, None, 1, mode, device="cpu", variant=variant)
            assert isinstance(ev, PolicyValueEvaluator)
            if mode == INT8_MODES[1] and not ev.has_tuned_copy():
                continue  # no quantisation-tuned copy: the plain int8 row says it all
            ev.warm_up()
            rates = {b: ev.network_throughput(b, threads=1, seconds=seconds) for b in batches}
            x = torch.from_numpy(ev.example_planes(1))
            row = {"network": f"{family}_{variant}", "backend": mode, "running": ev.inference,
                   "fallback": ev.inference_error, "flops": flops_per_eval(ev.net, x),
                   "evals_per_s": {str(b): r for b, r in rates.items()}}
            if mode in INT8_MODES and ev.inference == mode:  # information; strength decides (accept-int8)
                tuned = mode == INT8_MODES[1]
                row["int8_agreement"], row["int8_value_diff"] = ev.int8_agreement_of(ev.int8_session(tuned) if tuned else None)
                verdict = ev.int8_verdict(tuned)
                row["int8_verdict"] = verdict.get("verdict", "") if verdict else "not played"
            rows.append(row)
    for name in graphs:
        rows += graph_rows(name, [m for m in backends if m in ("frozen", "onnxruntime")], batches, seconds)
    for r in rows:
        base = next(x for x in rows if x["network"] == r["network"] and x["backend"] == "frozen")
        r["ratio_to_torchscript"] = {b: v / base["evals_per_s"][b] for b, v in r["evals_per_s"].items()}
        p = peak8 if r["backend"] in INT8_MODES and peak8 else peak
        r["share_of_peak"] = {b: v * r["flops"] / (p * 1e9) for b, v in r["evals_per_s"].items()}
    return {"sgemm_gflops_1_thread": peak, "int8_gemm_gops_1_thread": peak8, "isa": cpu_isa(),
            "batches": list(batches), "rows": rows,
            "missing": [] if "onnxruntime" in backends else [available()]}


#: the two ways a leaf's Python side runs (:mod:`evaluators.leafbatch`): compiled, or numpy alone
LEAF_PATHS: tuple[str, ...] = ("compiled", "numpy")


def pooled(rows: list[dict[str, Any]], games: int = 8, nodes: int = 64, concurrency: int = 16,
           seconds: float = 0.3, rounds: int = 2) -> list[dict[str, Any]]:
    """NN-MCTS in the pooled harness (``rise-mcts``, ``concurrency`` games in one process, one thread)
    with each network in the backend engines run it in (``inference=auto``): its evaluations per second as a
    share of that backend's raw rate at the batch the pooled games formed (measured in the same run),
    for the leaf's Python side compiled (:mod:`evaluators.leafbatch`, the default where mypyc built it)
    and by the numpy encoders alone (its peer), ``rounds`` times alternating: the best of each counts,
    and of the raw rate; with the shares of the games' wall time spent in the network (ONNX Runtime's
    ``run``) and in encoding the leaves."""
    paths = LEAF_PATHS if leafbatch.COMPILED else LEAF_PATHS[1:]
    out = []
    for net in dict.fromkeys(r["network"] for r in rows):
        family, variant = net.split("_")
        if family != "rise":
            continue
        engine = "rise-mcts"  # the variant's shipped weights, inference=auto: as engines run them
        got: dict[str, dict[str, Any]] = {}
        raw = 0.0
        try:
            for _ in range(rounds):
                for path in paths:
                    leafbatch.COMPILED = path == "compiled"  # type: ignore[misc]  # the evaluators read it per call
                    timers: dict[str, float] = {}
                    d = run_device(engine, variant, games, nodes, "cpu", concurrency=concurrency, seconds=seconds,
                                   timers=timers)
                    d["shares"] = {k: v / d["pooled"]["seconds"] for k, v in timers.items()}
                    raw = max(raw, d["raw_evals_per_s"] or 0.0)
                    if path not in got or d["pooled_evals_per_s"] > got[path]["pooled_evals_per_s"]:
                        got[path] = d
        finally:
            leafbatch.COMPILED = "compiled" in paths  # type: ignore[misc]
        for path, d in got.items():
            out.append({"network": net, "backend": d["inference"], "engine": engine, "games": games, "nodes": nodes,
                        "leaf_path": path, "leaves_per_call": d["leaves_per_call"],
                        "pooled_evals_per_s": d["pooled_evals_per_s"], "raw_batch": d["raw_batch"],
                        **{f"{k}_share": d["shares"].get(k, 0.0) for k in ("network", "encode", "evaluate", "search")},
                        "raw_evals_per_s": raw, "share": d["pooled_evals_per_s"] / raw if raw else None,
                        "vs_numpy": d["pooled_evals_per_s"] / got["numpy"]["pooled_evals_per_s"]
                        if got["numpy"]["pooled_evals_per_s"] else None})
    return out


def format_table(r: dict[str, Any]) -> str:
    bs = [str(b) for b in r["batches"]]
    peak8 = r.get("int8_gemm_gops_1_thread")
    lines = [f"one thread; SGEMM peak {r['sgemm_gflops_1_thread']:.1f} GFLOPS"
             + (f", int8 GEMM peak {peak8:.1f} GOPS (ONNX Runtime MatMulInteger)" if peak8 else "")
             + f"; CPU: {r.get('isa', 'unknown')}",
             "evaluations per second (x TorchScript, share of the peak of the row's arithmetic: int8 rows "
             "against the int8 GEMM, the others against SGEMM)", ""]
    head = f"{'network':<28}{'backend':<18}{'MFLOP':>7}" + "".join(f"{'batch ' + b:>26}" for b in bs)
    lines += [head, "-" * len(head)]
    for row in r["rows"]:
        cells = "".join(f"{row['evals_per_s'][b]:>10,.0f} ({row['ratio_to_torchscript'][b]:.2f}x, "
                        f"{100 * row['share_of_peak'][b]:>3.0f}%)" for b in bs)
        lines.append(f"{row['network']:<28}{row['backend']:<18}{row['flops'] / 1e6:>7.1f}{cells}")
        if row["running"] != row["backend"]:
            lines.append(f"{'':<46}runs {row['running']}: {row['fallback']}")
        if "int8_agreement" in row:
            lines.append(f"{'':<46}int8 keeps the float32 top move on {100 * row['int8_agreement']:.1f}% of sample "
                         f"positions (value moved by at most {row['int8_value_diff']:.3f}); SPRT against float32: "
                         f"{row['int8_verdict']}")
    lines += [f"not measured: {m}" for m in r["missing"]]
    for p in r.get("pooled", []):
        lines.append(f"pooled NN-MCTS ({p['engine']}, {p['games']} games at {p['nodes']} nodes, one process, "
                     f"leaf path {p['leaf_path']}): {p['pooled_evals_per_s']:,.0f} evaluations/s at "
                     f"{p['leaves_per_call']:.1f} leaves a call = {100 * (p['share'] or 0):.0f}% of the raw "
                     f"{p['backend']} rate at batch {p['raw_batch']} ({p['raw_evals_per_s']:,.0f}/s); "
                     f"{p['vs_numpy'] or 0:.2f}x the numpy leaf path; of the games' wall time the network "
                     f"{100 * p['network_share']:.1f}%, encoding the leaves {100 * p['encode_share']:.1f}%, the rest "
                     f"of the evaluator {100 * (p['evaluate_share'] - p['network_share'] - p['encode_share']):.1f}%, "
                     f"the searches' ask and tell {100 * p['search_share']:.1f}%, the runner "
                     f"{100 * (1 - p['evaluate_share'] - p['search_share']):.1f}%")
    return "\n".join(lines)
