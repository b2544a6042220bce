"""The ONNX Runtime inference backend (``inference=onnxruntime``) of the network evaluators.

A network (RISE, SixtyFour; the bughouse net's two inputs; DeepChess's Pos2Vec tower and its
comparator head, two graphs) is exported from its loaded weights to ONNX (opset :data:`OPSET`, a
dynamic batch dimension on every input) with torch's TorchScript-based exporter, and
run by an ``onnxruntime.InferenceSession`` on the CPU execution provider with every graph
optimisation on and ``intra_op_num_threads`` = the evaluator's threads.  The export is cached outside
git (``$SEARCHBENCH_CACHE`` or ``~/.cache/searchbench``, ``onnx/<sha1>.onnx``), keyed by the SHA-1 of
the weights' tensors and the torch and opset versions, written to a temporary file and renamed, with
the SHA-1 of the exported file recorded beside it (``<sha1>.onnx.sha1``): an entry is used only if it
still hashes to its record, so a planted or damaged file (even one correct at the checked batches)
is rebuilt, never trusted, and so is one that onnxruntime cannot load or that fails the load check.  The caller
(:class:`evaluators.neural.NeuralEvaluator`) checks the session's outputs against eager torch before
it uses them, as it does for TorchScript.

``inference=onnxruntime-int8``: the float32 export quantised statically to int8 (QDQ format: uint8
activations, int8 weights per output channel, ``onnxruntime.quantization.quantize_static`` with
MinMax calibration) on the input planes of sample positions the evaluator supplies, cached beside it
(``<sha1>-int8-<calibration sha1>.onnx``).  An int8 model is accepted by strength, as fishtest accepts
a changed network: ``searchbench accept-int8 CONFIG`` plays it against its float32 self at equal nodes
with a pentanomial SPRT and records the verdict under the same key (:func:`int8_verdicts`: the shipped
networks' in ``evaluators/weights/int8-verdicts.json``, any other network's in the cache), which
``inference=auto`` reads at load (:mod:`evaluators.neural`).  OpenVINO was measured as well and is not offered: at
float32 it was 0.7x ONNX Runtime's rate at batch 1 and 1.0x at batch 8 (its default on a CPU with
bfloat16 units is bfloat16, which moved policy logits by 0.2).

Measured side by side in one process (one thread, the 2-core development machine, RISE 5x64
crazyhouse, ``searchbench bench net``): about 4x TorchScript's evaluations per second at batch 1 and
1.6x at batch 8.
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from evaluators.base import EvaluatorError

OPSET = 17


def available() -> str | None:
    """None if onnxruntime imports and onnx is installed, else why not (one line).  onnx is only found,
    not imported: torch's exporter writes the protobuf through it on an export (a cache miss), and its
    import (0.6 s here) would otherwise be part of every process's start-up, a self-play worker's and
    ``searchbench uci``'s included."""
    if importlib.util.find_spec("onnx") is None:
        return "inference=onnxruntime needs the onnxruntime and onnx packages (onnx is missing)"
    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        return f"inference=onnxruntime needs the onnxruntime and onnx packages ({e.name} is missing)"
    return None


def cache_dir() -> Path:
    root = os.environ.get("SEARCHBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "searchbench")
    return Path(root) / "onnx"


#: the int8 verdicts of the shipped networks (written by ``searchbench accept-int8``, kept in git)
SHIPPED_VERDICTS = Path(__file__).resolve().parent / "weights" / "int8-verdicts.json"


def user_verdicts() -> Path:
    """The int8 verdicts of networks that are not shipped (in the cache, beside their models)."""
    return cache_dir() / "int8-verdicts.json"


def _read_verdicts(path: Path) -> dict[str, dict[str, Any]]:
    import json

    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:  # a damaged file counts as no verdict: float32 runs
        warnings.warn(f"ignoring int8 verdicts in {path}: {type(e).__name__}", stacklevel=2)
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}


def int8_verdicts() -> dict[str, dict[str, Any]]:
    """Every recorded int8 verdict by its model's key (``<weights sha1>-int8-<calibration sha1>``):
    the shipped file's, then the cache's (a user's own run of a shipped network overrides it)."""
    return {**_read_verdicts(SHIPPED_VERDICTS), **_read_verdicts(user_verdicts())}


def verdicts_file(shipped: bool) -> Path:
    """The verdicts file a network's verdict goes to: the shipped one (in git) or the cache's."""
    return SHIPPED_VERDICTS if shipped else user_verdicts()


def read_verdicts_strict(path: Path) -> dict[str, dict[str, Any]]:
    """The verdicts of ``path`` for a writer: a file that is not a verdicts file is refused with one
    line naming it (ValueError), never read as empty and overwritten (every verdict in it would go)."""
    import json

    if not os.path.lexists(path):
        return {}
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file: not a verdicts file; nothing written")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a verdicts file ({type(e).__name__}: {str(e).splitlines()[0]}): fix or move "
                         "it; nothing written") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in data.items()):
        raise ValueError(f"{path} is not a verdicts file (not an object of verdicts): fix or move it; nothing written")
    return data


def record_int8_verdict(key: str, entry: dict[str, Any], shipped: bool) -> Path:
    """Write ``entry`` as the verdict of ``key`` into the shipped file (``shipped``) or the cache's,
    atomically (a temporary file renamed, with the mode ``open`` would give it); a file that does not
    parse is refused (:func:`read_verdicts_strict`); returns the file."""
    import json
    import tempfile

    path = verdicts_file(shipped)
    data = read_verdicts_strict(path)
    data[key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".verdicts-")
    mask = os.umask(0o022)
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)
    try:
        with os.fdopen(fd, "w") as f:
            f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(data.items()))
                    + "\n}\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def calibration_key(calibration: np.ndarray) -> str:
    """The 16 hex digits of the calibration planes' SHA-1 that name an int8 model."""
    return hashlib.sha1(np.ascontiguousarray(calibration, dtype=np.float32).tobytes()).hexdigest()[:16]


def weights_key(net: nn.Module) -> str:
    """SHA-1 of the network's tensors (names, shapes, values) with the torch and opset versions."""
    h = hashlib.sha1(f"{torch.__version__}/{OPSET}/{type(net).__name__}".encode())
    for name, t in net.state_dict().items():
        h.update(name.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def input_names(n: int) -> list[str]:
    """The graph's input names: ``x`` for one input, ``x0``, ``x1``, ... for several."""
    return ["x"] if n == 1 else [f"x{i}" for i in range(n)]


def export(net: nn.Module, examples: tuple[torch.Tensor, ...]) -> bytes:
    """The ONNX model of ``net`` (inputs :func:`input_names`, each with a dynamic batch dimension)."""
    buf = io.BytesIO()
    names = input_names(len(examples))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer warnings
        torch.onnx.export(net, examples, buf,  # type: ignore[arg-type]  # a BytesIO is written like a file
                          input_names=names, dynamic_axes={k: {0: "batch"} for k in names}, opset_version=OPSET,
                          dynamo=False)
    data = buf.getvalue()
    if not data:
        raise EvaluatorError("the ONNX export wrote nothing")
    return data


def quantize_int8(model: bytes, calibration: np.ndarray, **options: Any) -> bytes:
    """``model`` (float32 ONNX) statically quantised to int8 (module docstring), calibrated on the
    input planes ``calibration`` (one row per position); ``options`` override
    ``quantize_static``'s arguments (the calibration alternatives ``bench int8-calibration`` measures)."""
    import logging
    import tempfile

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Planes(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.rows = iter(range(0, len(calibration), 16))

        def get_next(self) -> dict[str, np.ndarray] | None:
            i = next(self.rows, None)
            return None if i is None else {"x": np.ascontiguousarray(calibration[i:i + 16], dtype=np.float32)}

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to pre-process the model goes to the root logger
    try:
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "fp32.onnx"), os.path.join(d, "int8.onnx")
            Path(src).write_bytes(model)
            args: dict[str, Any] = {"quant_format": QuantFormat.QDQ, "activation_type": QuantType.QUInt8,
                                    "weight_type": QuantType.QInt8, "per_channel": True}
            quantize_static(src, dst, Planes(), **{**args, **options})
            return Path(dst).read_bytes()
    finally:
        root.setLevel(level)


def read_cached(path: Path) -> bytes | None:
    """The cache entry ``path`` if it is the file this cache wrote: its SHA-1 must equal the one
    recorded beside it at export (``KEY.onnx.sha1``).  An entry without its record, or one that differs
    from it (a planted or damaged file, even one that passes the load check), is not used; the caller
    exports afresh and overwrites it."""
    try:
        data = path.read_bytes()
        recorded = path.with_name(path.name + ".sha1").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return data if hashlib.sha1(data).hexdigest() == recorded else None


def write_cached(path: Path, data: bytes) -> None:
    """Store an export in the cache with the SHA-1 record :func:`read_cached` checks (each file written
    to a fresh temporary name and renamed; a failed write leaves no temporary file, and no cache)."""
    import tempfile

    record = path.with_name(path.name + ".sha1")
    for target, content in ((path, data), (record, hashlib.sha1(data).hexdigest().encode() + b"\n")):
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=path.parent)
        except OSError:
            return  # no cache then: the next load exports again
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.replace(tmp, target)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return


def session_options(threads: int) -> Any:
    """The CPU session settings of every session here: ``threads`` intra-op threads, one inter-op
    thread, every graph optimisation, errors only in the log."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    return opts


class OrtForward:
    """A callable with the network's signature: torch tensors in, a tuple of torch tensors out
    (``example``: one input tensor or a tuple of them; ``calibration``: the planes to quantise a
    one-input network to int8 with, None: float32).  :meth:`run` is the same on numpy arrays."""

    def __init__(self, net: nn.Module, example: torch.Tensor | tuple[torch.Tensor, ...], threads: int,
                 calibration: np.ndarray | None = None, fresh: bool = False) -> None:
        import onnxruntime as ort

        opts = session_options(threads)
        key = weights_key(net)
        if calibration is not None:
            key += "-int8-" + calibration_key(calibration)
        path = cache_dir() / f"{key}.onnx"
        examples = example if isinstance(example, tuple) else (example,)
        if calibration is not None and len(examples) != 1:
            raise EvaluatorError("int8 calibration is for one-input networks")
        self.names = input_names(len(examples))
        self.session: Any = None
        self.cached = False
        data = None if fresh else read_cached(path)
        if data is not None:
            try:
                self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
                self.cached = True
            except Exception:  # noqa: BLE001 - a stale or corrupt cache entry is rebuilt
                self.session = None
        if self.session is None:
            data = export(net, examples)
            if calibration is not None:
                data = quantize_int8(data, calibration)
            self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
            write_cached(path, data)
        self.path = path

    @classmethod
    def of_model(cls, data: bytes, threads: int, inputs: int = 1) -> OrtForward:
        """A session of the ONNX model ``data`` as it is (not cached): what a measurement compares."""
        import onnxruntime as ort

        self = cls.__new__(cls)
        self.session = ort.InferenceSession(data, session_options(threads), providers=["CPUExecutionProvider"])
        self.names, self.cached, self.path = input_names(inputs), False, Path()
        return self

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        """The outputs for numpy inputs (float32, C-contiguous)."""
        outs: list[np.ndarray] = self.session.run(None, {k: np.ascontiguousarray(x) for k, x in zip(self.names, xs, strict=True)})
        return outs

    def __call__(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(torch.from_numpy(o) for o in self.run(*(x.detach().cpu().numpy() for x in xs)))


def _worst(net: nn.Module, session: OrtForward, checks: Sequence[tuple[torch.Tensor, ...]]) -> float:
    """The largest absolute difference between ``session``'s outputs and eager torch's on ``checks``."""
    worst = 0.0
    with torch.inference_mode():
        for inputs in checks:
            ref = net(*inputs)
            for a, b in zip(ref if isinstance(ref, (tuple, list)) else (ref,), session(*inputs), strict=True):
                worst = max(worst, float((a.float() - b.float()).abs().max()) if a.numel() else 0.0)
    return worst


def checked_session(net: nn.Module, example: torch.Tensor | tuple[torch.Tensor, ...], checks: Sequence[tuple[torch.Tensor, ...]],
                    threads: int, atol: float) -> tuple[OrtForward | None, str | None]:
    """(session, None) if an :class:`OrtForward` of ``net`` gives every output of eager torch within
    ``atol`` (absolute) on each input tuple of ``checks``; else (None, why, one line) - an export or
    session failure included: the load check every network evaluator runs before it uses the backend."""
    try:
        session = OrtForward(net, example, threads)
        worst = _worst(net, session, checks)
        if worst > atol and session.cached:  # a wrong cache entry is rebuilt, never a reason to fall back
            session = OrtForward(net, example, threads, fresh=True)
            worst = _worst(net, session, checks)
        if worst <= atol:
            return session, None
        return None, f"onnxruntime outputs differ from eager by {worst:.2g} > {atol:g}"
    except Exception as e:  # noqa: BLE001 - an export or session failure: the caller falls back
        return None, f"cannot run onnxruntime: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
