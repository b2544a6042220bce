"""The ONNX Runtime inference backend (``inference=onnxruntime``) of the network evaluators.

A network with one input (RISE, SixtyFour, the bughouse net) is exported from its loaded weights to
ONNX (opset :data:`OPSET`, a dynamic batch dimension) with torch's TorchScript-based exporter, and
run by an ``onnxruntime.InferenceSession`` on the CPU execution provider with every graph
optimisation on and ``intra_op_num_threads`` = the evaluator's threads.  The export is cached outside
git (``$SEARCHBENCH_CACHE`` or ``~/.cache/searchbench``, ``onnx/<sha1>.onnx``), keyed by the SHA-1 of
the weights' tensors and the torch and opset versions, written to a temporary file and renamed; a
cached file that onnxruntime cannot load is rebuilt, never trusted.  The caller
(:class:`evaluators.neural.NeuralEvaluator`) checks the session's outputs against eager torch before
it uses them, as it does for TorchScript.

Measured side by side in one process (one thread, the 2-core development machine, RISE 5x64
crazyhouse, ``searchbench bench net``): about 4x TorchScript's evaluations per second at batch 1 and
1.6x at batch 8.
"""
from __future__ import annotations

import hashlib
import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from evaluators.base import EvaluatorError

OPSET = 17


def available() -> str | None:
    """None if onnxruntime and onnx import, else why not (one line)."""
    try:
        import onnx  # noqa: F401  (torch's exporter writes the protobuf through it)
        import onnxruntime  # noqa: F401
    except ImportError as e:
        return f"inference=onnxruntime needs the onnxruntime and onnx packages ({e.name} is missing)"
    return None


def cache_dir() -> Path:
    root = os.environ.get("SEARCHBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "searchbench")
    return Path(root) / "onnx"


def weights_key(net: nn.Module) -> str:
    """SHA-1 of the network's tensors (names, shapes, values) with the torch and opset versions."""
    h = hashlib.sha1(f"{torch.__version__}/{OPSET}/{type(net).__name__}".encode())
    for name, t in net.state_dict().items():
        h.update(name.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def export(net: nn.Module, example: torch.Tensor) -> bytes:
    """The ONNX model of ``net`` (one input ``x``, batch dimension dynamic)."""
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer warnings
        torch.onnx.export(net, (example,), buf,  # type: ignore[arg-type]  # a BytesIO is written like a file
                          input_names=["x"], dynamic_axes={"x": {0: "batch"}}, opset_version=OPSET, dynamo=False)
    data = buf.getvalue()
    if not data:
        raise EvaluatorError("the ONNX export wrote nothing")
    return data


class OrtForward:
    """A callable with the network's signature: torch tensors in, a tuple of torch tensors out."""

    def __init__(self, net: nn.Module, example: torch.Tensor, threads: int) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        path = cache_dir() / f"{weights_key(net)}.onnx"
        self.session: Any = None
        if path.is_file():
            try:
                self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                self.cached = True
            except Exception:  # noqa: BLE001 - a stale or corrupt cache entry is rebuilt
                self.session = None
        if self.session is None:
            data = export(net, example)
            self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
            self.cached = False
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)
            except OSError:
                pass  # no cache then: the next load exports again
        self.path = path

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outs = self.session.run(None, {"x": np.ascontiguousarray(x.detach().cpu().numpy())})
        return tuple(torch.from_numpy(o) for o in outs)
