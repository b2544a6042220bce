"""Shared machinery of the torch evaluators (rise, sixtyfour, deepchess).

* weights load through :func:`evaluators.nets.load_model`; any problem with the file becomes one
  :class:`~evaluators.base.EvaluatorError` line naming it;
* networks run in eval mode under ``torch.inference_mode()``, in chunks of at most ``max_batch``
  leaves, with ``torch.set_num_threads(threads)`` (a process-wide torch setting);
* *inference modes* (:data:`INFERENCE_MODES`): ``onnxruntime`` (the default,
  :data:`~evaluators.base.DEFAULT_INFERENCE`) runs an ONNX export of the network in ONNX Runtime
  (:mod:`evaluators.onnx_runtime`; about 4x TorchScript's rate at batch 1 and 1.4-1.6x at batch 8,
  ``searchbench bench net``), checked against eager torch when it is built (every output within
  :data:`FROZEN_ATOL` on two batch sizes of real positions), falling back to TorchScript with a
  warning; its outputs do not depend on the batch (:data:`BATCH_INVARIANT`), so CPU batches are not
  padded.  ``frozen`` runs the network as TorchScript, traced once on real positions, frozen
  (weights folded in as constants, batch norm folded into the convolutions) and passed through
  ``torch.jit.optimize_for_inference`` (oneDNN convolutions): the default before ONNX Runtime,
  which the reports played then pin (``inference = "frozen"`` in their configs) so they replay game
  for game.  ``eager`` runs the ``nn.Module`` as it is.  ``onnxruntime-int8`` (policy-value networks)
  quantises the export to int8, calibrated on :data:`INT8_SAMPLE` sample positions, and runs it as
  asked (1.7-3.5x float32 ONNX Runtime, ``bench net``).  Whether int8 is good enough is decided by
  strength, as fishtest decides: ``searchbench accept-int8`` plays it against its float32 self at
  equal nodes with a pentanomial SPRT and records the verdict, keyed by the weights' and the
  calibration's SHA-1 (:func:`evaluators.onnx_runtime.int8_verdicts`); top-move agreement (92-96% on
  the shipped networks) is information in ``bench net``, not a gate.  ``auto``, the default, runs int8
  where a verdict accepted it and float32 ONNX Runtime elsewhere; the load reads the verdict and pays
  nothing else, and every game records the backend that ran, so a replay runs the same one
  Runtime, ``bench net``).  The forward is built lazily at the first evaluation and works for any
  batch size; if tracing or export fails, or any output differs by more than :data:`FROZEN_ATOL`, or
  if the graph later raises, the evaluator logs a warning and falls back (ONNX Runtime to
  TorchScript, TorchScript to eager; ``inference`` then says what runs and ``inference_error``
  why).  TorchScript against eager, measured on the shipped RISE net on the 2-core development
  machine, one thread: 1.4x to 1.9x the eager evaluations per second at batch 8; bf16 autocast and
  channels_last were no faster than frozen float32 and are not offered;
* ``network_throughput(batch, threads)`` measures the raw network alone (evaluations per second,
  best of a few short trials) so a pooled runner can pick its batch size and thread count;
* priors are a softmax over the logits of the *legal* moves only (SPEC.md section 2), computed for
  a whole batch at once with segment operations (``np.maximum.reduceat``/``np.add.reduceat``);
* values become centipawns with the suite's one scale (:func:`evaluators.scale.value_to_cp`).

Devices (``device``: ``auto`` = CUDA when there is one, ``cpu``, ``cuda``, ``cuda:N``;
:mod:`evaluators.devices`).  On the CPU everything above holds unchanged.  On a GPU a batch is
encoded once on the CPU, padded to the next of a few bucket sizes (:data:`BATCH_BUCKETS`, so cuDNN's
autotuner, with ``cudnn.benchmark`` on, sees few shapes), copied in one transfer from pinned memory,
run eager (TorchScript freezing is a CPU optimisation, so no frozen check meets TF32 results) under
bfloat16 autocast when ``half`` allows it, and only the logits of the legal moves are gathered and
soft-maxed on the device (:func:`legal_softmax_torch`) and copied back, with the values: not the
5,184 logits of every position.  ``half`` (``auto``: on for a GPU if, when the network is first run,
bfloat16 keeps the float32 top move on at least :data:`HALF_MIN_AGREEMENT` of sample positions,
else off; ``on``; ``off``) reports the agreement it measured in ``half_agreement``.
"""
from __future__ import annotations

import functools
import logging
import itertools
import os
import time
import warnings
from typing import Any, Callable, ClassVar, Final, NamedTuple, Self, Sequence

import numpy as np
import torch
from torch import nn

from board import Position, new_position
from evaluators import encodings as enc, onnx_runtime
from evaluators import leafbatch
from evaluators.devices import resolve_device
from evaluators.families import VARIANT_FIELD, WEIGHTS_DIR, for_variant, shipped_name
from evaluators.onnx_runtime import OrtForward, calibration_key, checked_session, int8_verdicts, weights_key
from evaluators import nets
from evaluators.base import (
    DEFAULT_INFERENCE, INFERENCE_MODES, INT8_MODES, POLICY_VALUE, SCORE, Evaluation, Evaluator, EvaluatorError, Leaf, value_to_cp,
)

log = logging.getLogger(__name__)

#: largest absolute difference between frozen and eager outputs accepted when the frozen graph is
#: built (values lie in [-1, 1]; policy logits are O(10); float32 reassociation gives ~1e-5)
FROZEN_ATOL: Final = 1e-3

#: a CPU batch of two or more positions is padded to a multiple of this (copies of its first row):
#: oneDNN's convolution kernels treat the rows of a block of 4 alike but the rows of a remainder
#: otherwise, so without padding a position's outputs changed (by up to 1.2e-6, enough to change a
#: search) with the size of the batch it came in, and a pooled run depended on which games shared a
#: batch.  Measured on rise_crazyhouse.pt: 64 positions in batches of 4, 8, 16 and 64 give bit-identical
#: outputs, batches of 5, 6, 7, 9 and 33 do not.  8 covers blocks of 4 and 8; a batch of one stays as
#: it is (padding it costs 2.3x: 2.0 ms against 4.6 ms for RISE) unless ``pad_single`` is set, which
#: the harness does for node-limited runs (a search's root is evaluated alone, or with other games'
#: leaves, as the pool falls: only padding it too makes the run independent of that).
CPU_BATCH_MULTIPLE: Final = 8
#: inference modes whose outputs for a position do not depend on the batch it comes in, so a CPU batch
#: is not padded: ONNX Runtime's kernels treat every row alike (measured: 64 positions of each shipped
#: policy-value network in batches of 1, 2, 3, 5, 7, 8, 9, 16 and 33 give bit-identical outputs;
#: tests/test_onnx_runtime.py checks it), which saves TorchScript's padding (a batch of one padded to
#: eight costs 2.3x)
BATCH_INVARIANT: Final = ("onnxruntime", *INT8_MODES)
#: batch sizes a GPU batch is padded to (the largest batch is split by max_batch first)
BATCH_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: the share of sample positions whose top move bfloat16 must keep for ``half=auto`` to use it
HALF_MIN_AGREEMENT: Final = 0.99
#: inference=onnxruntime-int8: sample positions to calibrate on (and as many others that
#: :meth:`PolicyValueEvaluator.int8_agreement_of` measures agreement with float32 on)
INT8_SAMPLE: Final = 512
HALF_MODES: Final = ("auto", "on", "off")


def bucket(n: int) -> int:
    """The padded size of a batch of ``n`` (the smallest bucket that holds it, else ``n``)."""
    for b in BATCH_BUCKETS:
        if b >= n:
            return b
    return n


def legal_softmax_torch(logits: torch.Tensor, seg: torch.Tensor, idx: torch.Tensor, n_leaves: int) -> torch.Tensor:
    """:func:`legal_softmax` on the logits' device: the legal moves' probabilities, flat, in the
    moves' order (``seg`` the leaf of each move, ``idx`` its output index)."""
    x = logits[seg, idx].float()
    mx = torch.full((n_leaves,), -torch.inf, device=x.device).scatter_reduce(0, seg, x, reduce="amax")
    e = torch.exp(x - mx[seg])
    tot = torch.zeros(n_leaves, device=x.device).index_add_(0, seg, e)
    return e / tot[seg]


def weights_path(path: str) -> str:
    """``path``, or the shipped file (evaluators/weights/) when it is a bare name that does not exist
    here: ``rise_chess.pt`` works from any working directory."""
    if not os.path.exists(path) and os.path.basename(path) == path:
        return os.path.join(WEIGHTS_DIR, path)
    return path


def _accepted(verdict: dict[str, Any] | None) -> bool:
    return verdict is not None and verdict.get("verdict") == "accepted"


def qat_path(weights: str) -> str:
    """Where the quantisation-tuned copy of the weights file ``weights`` (``NAME.pt``) lives:
    ``NAME.qat.pt`` beside it (:mod:`experiments.training.qat` writes it)."""
    root, ext = os.path.splitext(weights)
    return f"{root}.qat{ext or '.pt'}"


def load_net(path: str | None, default_name: str, family: str, threads: int) -> tuple[nn.Module, dict[str, Any], str]:
    """(network in eval mode, saved dict, resolved path); EvaluatorError naming the file on failure."""
    if threads < 1:
        raise EvaluatorError(f"threads must be >= 1, got {threads}")
    p = weights_path(path if path is not None else default_name)
    try:
        net, d = nets.load_model(p, family)
    except ValueError as e:
        raise EvaluatorError(str(e)) from None
    torch.set_num_threads(threads)
    return net, d, p


def check_inference(mode: str) -> str:
    """``mode`` if it is one of :data:`INFERENCE_MODES`, else a one-line EvaluatorError."""
    if mode not in INFERENCE_MODES:
        raise EvaluatorError(f"unknown inference mode {mode!r}; known: {', '.join(INFERENCE_MODES)}")
    if mode.startswith("onnxruntime"):
        missing = onnx_runtime.available()
        if missing is not None:
            raise EvaluatorError(missing)
    return mode


def _outputs(out: Any) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def freeze_network(net: nn.Module, examples: Sequence[torch.Tensor]) -> tuple[Callable[..., Any], float]:
    """``net`` traced on ``examples[0]``, frozen and optimised for inference, and the largest absolute
    difference from eager over all ``examples`` (give batches of different sizes: the check then
    also covers the batch dimension).  Raises whatever tracing raises."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about the frozen graph's constants
        traced = torch.jit.trace(net, examples[0], check_trace=False)  # type: ignore[no-untyped-call]
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
    worst = 0.0
    with torch.inference_mode():
        for x in examples:
            ref, got = _outputs(net(x)), _outputs(frozen(x))
            if len(ref) != len(got):
                raise RuntimeError(f"frozen network gives {len(got)} outputs, eager {len(ref)}")
            for a, b in zip(ref, got):
                if a.shape != b.shape:
                    raise RuntimeError(f"frozen output shape {tuple(b.shape)} != eager {tuple(a.shape)}")
                worst = max(worst, float((a.float() - b.float()).abs().max()) if a.numel() else 0.0)
    return frozen, worst


def best_rate(call: Callable[[], Any], batch: int, seconds: float, trials: int = 3,
              sync: Callable[[], None] = lambda: None, every: int = 1) -> float:
    """Evaluations a second of ``call`` (one batch of ``batch`` positions): the best of ``trials``
    runs of about ``seconds`` each, after one warm-up call (the best, because other processes only
    ever slow a trial down); ``sync`` waits for the device before the clock is read, every
    ``every`` calls."""
    best = 0.0
    with torch.inference_mode():
        call()
        sync()
        for _ in range(trials):
            n, t0 = 0, time.perf_counter()
            while True:
                call()
                n += 1
                if n % every == 0:
                    sync()
                    dt = time.perf_counter() - t0
                    if dt >= seconds:
                        break
            best = max(best, n * batch / dt)
    return best


def legal_softmax_flat(logits: np.ndarray, seg: np.ndarray, idx: np.ndarray, counts: Sequence[int] | np.ndarray
                       ) -> list[float]:
    """Softmax over each leaf's legal moves, as one list (leaf after leaf): ``logits [B, K]``,
    ``seg`` the leaf of each move, ``idx`` the move's output index, ``counts`` the moves per leaf."""
    if len(idx) == 0:
        return []
    x = logits.reshape(-1)[seg * logits.shape[1] + idx].astype(np.float64)
    c = np.asarray(counts, dtype=np.int64)
    cz = c[c > 0]
    ends = np.cumsum(cz)
    starts = ends - cz
    mx = np.maximum.reduceat(x, starts)
    e = np.exp(x - np.repeat(mx, cz))
    p: list[float] = (e / np.repeat(np.add.reduceat(e, starts), cz)).tolist()
    return p


def legal_softmax(logits: np.ndarray, seg: np.ndarray, idx: np.ndarray, counts: np.ndarray) -> list[list[float]]:
    """:func:`legal_softmax_flat` split per leaf (leaves with no moves get [])."""
    p = legal_softmax_flat(logits, seg, idx, counts)
    out: list[list[float]] = []
    start = 0
    for k in np.asarray(counts).tolist():
        out.append(p[start:start + k])
        start += k
    return out


def _view(v: Any, dtype: type) -> np.ndarray:
    """A native ``vec`` as a numpy array, without a copy (vecs have the buffer protocol)."""
    return np.frombuffer(v, dtype=dtype)


def keyed_table(table: np.ndarray) -> np.ndarray:
    """A policy lookup table (``[2^18]`` or ``[2, 2^18]``) flat and indexed by
    :mod:`evaluators.leafbatch`'s keys: -1 up to and at :data:`~evaluators.leafbatch.OUTSIDE`."""
    flat = np.full(leafbatch.OUTSIDE + 1, -1, dtype=np.int64)
    flat[:table.size] = table.reshape(-1)
    return flat


class CompiledEncoder(NamedTuple):
    """A network's compiled encoder (:mod:`evaluators.leafbatch`): ``encode(leaves)``, the input's
    plane count, its constant planes (in ``consts`` order) and the policy table indexed by the keys
    (a last entry -1 for a move outside the table)."""

    encode: Callable[[list[Leaf]], leafbatch.Encoded]
    planes: int
    consts: tuple[int, ...]
    table: np.ndarray


def flatten_moves(leaves: list[Leaf] | tuple[Leaf, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(moves, leaf index of each move, move count per leaf) as int64 arrays."""
    lists = [lf.moves for lf in leaves]
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    moves = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(counts.sum()))
    seg = np.repeat(np.arange(len(leaves)), counts)
    return moves, seg, counts


class NeuralEvaluator(Evaluator):
    """Plumbing shared by the network evaluators: weights, threads, variant, batching limits.

    Subclasses set ``family`` (the :mod:`evaluators.nets` family), ``net_type`` and
    ``default_weights`` (a file in ``evaluators/weights/``)."""

    family: ClassVar[str]
    net_type: ClassVar[type[nn.Module]]
    default_weights: ClassVar[str]
    default_max_batch: ClassVar[int] = 256

    def __init__(self, net: Any, threads: int = 1, meta: dict[str, Any] | None = None,
                 path: str | None = None, max_batch: int | None = None, device: str | torch.device = "cpu",
                 half: str = "auto") -> None:
        if half not in HALF_MODES:
            raise EvaluatorError(f"unknown half mode {half!r}; known: {', '.join(HALF_MODES)}")
        #: where the network runs (see the module docstring)
        self.device = resolve_device(device) if isinstance(device, str) else device
        self._on_gpu = self.device.type != "cpu"  # read twice per evaluator call: kept, not recomputed
        self.half_mode = half
        #: whether the network runs under bfloat16 autocast (decided at its first run), and the
        #: top-move agreement with float32 measured for ``half=auto``
        self.half = False
        self.half_agreement: float | None = None
        if self.device.type != "cpu":
            net = net.to(self.device)
            torch.backends.cudnn.benchmark = True
        net.eval()
        #: the eager ``nn.Module`` (what training and tests see); :meth:`forward` runs the chosen mode
        self.net = net
        self.variant: str = net.cfg.variant
        self.variants = frozenset({self.variant})
        self.threads = threads
        self.meta = dict(meta or {})
        self.path = path
        self.pad_single = False  # pad a batch of one too (CPU_BATCH_MULTIPLE)
        self.max_batch = max_batch or self.default_max_batch
        #: the mode asked for; ``inference`` is the mode in use once the network has run
        self.inference_requested: str = DEFAULT_INFERENCE
        self.inference: str | None = None
        self.inference_error: str | None = None
        self._forward: Callable[..., Any] | None = None
        self._int8_source: nn.Module | None = None
        torch.set_num_threads(threads)

    @classmethod
    def load(cls, path: str | None = None, threads: int = 1, inference: str = DEFAULT_INFERENCE,
             variant: str | None = None, device: str = "auto", half: str = "auto") -> Self:
        """Load weights; ``path`` None: the shipped weights of ``variant``
        (``evaluators/weights/<family>_<variant>.pt``), or ``default_weights`` without a variant."""
        check_inference(inference)
        net, d, p = load_net(cls.weights_file(path, variant), cls.default_weights, cls.family, threads)
        assert isinstance(net, cls.net_type)
        ev = cls(net, threads, d.get("meta"), p, device=device, half=half)
        ev.set_inference(inference)
        return ev

    @classmethod
    def weights_file(cls, path: str | None = None, variant: str | None = None) -> str:
        """The file :meth:`load` reads: ``path`` (a bare name that is not here: the shipped file of
        that name), else the shipped weights of ``variant`` (``evaluators/weights/<family>_<variant>.pt``,
        or the file ``shipped.json`` names there: :func:`evaluators.families.shipped_name`; EvaluatorError
        where there are none), else ``default_weights``.  What a game records as the
        network that played (its content's digest), and what a report compares with today's.
        A ``path`` with a :data:`~evaluators.families.VARIANT_FIELD` names one file a variant
        (``rise_{variant}_score.pt``; without a variant, that of ``default_weights``,
        ``<family>_<variant>.pt``): EvaluatorError where that file is missing."""
        if path is not None and VARIANT_FIELD in path:
            if variant is None:
                variant = os.path.splitext(cls.default_weights)[0].removeprefix(f"{cls.family}_")
            path = for_variant(path, variant)
            if not os.path.isfile(weights_path(path)):
                raise EvaluatorError(f"{cls.name} has no weights {path!r} for {variant}")
        if path is not None:
            return weights_path(path)
        if variant is None:
            return weights_path(cls.default_weights)
        default = shipped_name(cls.family, variant, WEIGHTS_DIR)
        if not os.path.exists(os.path.join(WEIGHTS_DIR, default)):
            raise EvaluatorError(f"{cls.name} has no shipped weights for {variant} (evaluators/weights/{default} "
                                 f"is missing): give weights=FILE")
        return os.path.join(WEIGHTS_DIR, default)

    @property
    def on_gpu(self) -> bool:
        return self._on_gpu

    def to_device(self, x: np.ndarray) -> tuple[torch.Tensor, int]:
        """A batch of encoded inputs as the network takes it, and its true size: on the CPU as it is
        under ONNX Runtime (:data:`BATCH_INVARIANT`), else padded to a multiple of
        :data:`CPU_BATCH_MULTIPLE` (outputs independent of the batch); on a GPU padded to its bucket
        and copied in one transfer from pinned memory."""
        t = torch.from_numpy(x)
        n = len(x)
        if not self.on_gpu:
            self._built()  # the mode decides the padding
            if self.inference in BATCH_INVARIANT:
                return t, n
            pad = -n % CPU_BATCH_MULTIPLE if n > 1 or self.pad_single else 0
            if pad:
                t = torch.cat([t, t[:1].expand(pad, *t.shape[1:])])
            return t, n
        b = bucket(n)
        if b > n:
            t = torch.cat([t, t[:1].expand(b - n, *t.shape[1:])])
        if torch.cuda.is_available():
            t = t.pin_memory()
        return t.to(self.device, non_blocking=True), n

    def sync(self) -> None:
        """Wait for the device (timings of asynchronous GPU work)."""
        if self.on_gpu:
            torch.cuda.synchronize(self.device)

    def set_inference(self, mode: str) -> None:
        """Run the network in ``mode`` (:data:`INFERENCE_MODES`) from the next evaluation on."""
        self.inference_requested = check_inference(mode)
        self.inference, self.inference_error, self._forward = None, None, None

    def set_threads(self, threads: int) -> None:
        """torch intra-op threads for this evaluator (a process-wide torch setting)."""
        if threads < 1:
            raise EvaluatorError(f"threads must be >= 1, got {threads}")
        self.threads = threads
        torch.set_num_threads(threads)

    def example_inputs(self) -> list[torch.Tensor] | None:
        """Network inputs of two batch sizes to trace and check the frozen graph on (None: the
        network has no single-input forward, and runs eager)."""
        return None

    def onnx_examples(self) -> list[tuple[torch.Tensor, ...]] | None:
        """Input tuples of two batch sizes to export an ONNX graph on and check it against eager
        torch (default: :meth:`example_inputs`, one input each; a multi-input network gives its own)."""
        examples = self.example_inputs()
        return None if examples is None else [(x,) for x in examples]

    def warm_up(self) -> None:
        """Build the forward now (tracing and freezing, a few hundred ms) and run it once at a batch
        and at one position (the default searches' first hundreds of nodes are one leaf a step, and a
        runtime's first call at a new shape costs tens of ms), so the first real evaluation does not
        pay it (the UCI front end calls this before ``readyok``)."""
        ex = self.example_inputs()
        if ex is None:
            return
        batch = ex[0].numpy()
        with torch.inference_mode():
            for x in (batch, batch, batch[:1], batch[:1], batch[:1]):  # a traced graph specialises on its second run
                self.forward(self.to_device(x)[0])

    def forward(self, *inputs: torch.Tensor) -> Any:
        """The network's forward in the chosen inference mode (built at the first call)."""
        f = self._built()
        if self.half:
            with torch.autocast(self.device.type, dtype=torch.bfloat16):
                return f(*inputs)
        if self.inference not in ("frozen", "onnxruntime", *INT8_MODES):
            return f(*inputs)
        try:
            return f(*inputs)
        except Exception as e:  # noqa: BLE001 - a frozen graph or session that fails at run time: eager from now on
            what = "frozen graph" if self.inference == "frozen" else f"{self.inference} session"
            self.inference_error = (f"{what} failed: {type(e).__name__}: "
                                    f"{str(e).splitlines()[0] if str(e) else ''}")
            log.warning("evaluator %s runs eager: %s", self.name, self.inference_error)
            self.inference, self._forward = "eager", self.net
            return self.net(*inputs)

    def _built(self) -> Callable[..., Any]:
        """The forward, built at the first call (:meth:`_build_forward`)."""
        if self._forward is None:
            self._forward = self._build_forward()
        return self._forward

    def _build_forward(self) -> Callable[..., Any]:
        if self.on_gpu:  # eager on a GPU (the module docstring); half precision if it keeps the top move
            self.inference = "eager"
            self.half = self.half_mode == "on" or (self.half_mode == "auto" and self._half_agrees())
            eager: Callable[..., Any] = self.net
            return eager
        mode = self.inference_requested
        if mode == "auto":  # int8 where its SPRT against float32 accepted it (module docstring)
            mode = next((m for m in reversed(INT8_MODES) if _accepted(self.int8_verdict(tuned=m == INT8_MODES[1]))),
                        "onnxruntime")
        if mode in INT8_MODES:
            session = self._build_int8(tuned=mode == INT8_MODES[1])
            if session is not None:
                return session
            mode = "onnxruntime"  # the warning names why; float32 instead
        if mode == "onnxruntime":
            session = self._build_onnx()
            if session is not None:
                return session
            mode = "frozen"  # the warning names why; TorchScript instead
        examples = self.example_inputs() if mode == "frozen" else None
        if mode == "frozen" and examples is None:
            self.inference_error = "the network has no single-input forward to freeze"
        elif mode == "frozen" and examples is not None:
            try:
                frozen, worst = freeze_network(self.net, examples)
                if worst <= FROZEN_ATOL:
                    self.inference = "frozen"
                    return frozen
                self.inference_error = f"frozen outputs differ from eager by {worst:.2g} > {FROZEN_ATOL:g}"
            except Exception as e:  # noqa: BLE001 - any tracing failure falls back to eager
                self.inference_error = f"cannot freeze: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            log.warning("evaluator %s runs eager: %s", self.name, self.inference_error)
        self.inference = "eager"
        net: Callable[..., Any] = self.net
        return net

    def _build_onnx(self) -> Callable[..., Any] | None:
        """An ONNX Runtime session of the network (:mod:`evaluators.onnx_runtime`) if it matches eager
        torch within :data:`FROZEN_ATOL` on two batch sizes; else None and a warning."""
        examples = self.onnx_examples()
        if examples is None:
            self.inference_error = "the network has no forward to export"
        else:
            session, why = checked_session(self.net, examples[0], examples, self.threads, FROZEN_ATOL)
            if session is not None:  # (an int8 refusal's reason stays in inference_error)
                self.inference = "onnxruntime"
                return session
            self.inference_error = why
        log.warning("evaluator %s runs TorchScript: %s", self.name, self.inference_error)
        return None

    def _half_agrees(self) -> bool:
        """Measure bfloat16 against float32 on sample positions; True if the top move agrees often enough."""
        return False

    def int8_verdict(self, tuned: bool = False) -> dict[str, Any] | None:
        """The recorded SPRT verdict of this network's int8 model (``tuned``: the one quantised from
        its quantisation-tuned copy; None: never played; int8 is for policy-value networks)."""
        return None

    def _build_int8(self, tuned: bool = False) -> Callable[..., Any] | None:
        """An int8 ONNX Runtime session calibrated on sample positions, or None and a warning
        (policy-value networks only)."""
        self.inference_error = "int8 quantisation is offered for policy-value networks (rise, sixtyfour)"
        log.warning("evaluator %s runs float32: %s", self.name, self.inference_error)
        return None

    def sample_positions(self, count: int, seed: int = 0) -> list[Position]:
        """``count`` positions of seeded random games (the load checks' samples)."""
        import random

        rng = random.Random(seed)
        out: list[Position] = []
        while len(out) < count:
            p = new_position(self.variant)
            for _ in range(rng.randint(0, 60)):
                moves = p.legal_moves()
                if not moves:
                    break
                p.push(rng.choice(moves))
            if p.legal_moves():
                out.append(p)
        return out

    def _check_variant(self, variant: str) -> None:
        if variant != self.variant:
            raise EvaluatorError(f"evaluator {self.name!r} was trained for {self.variant}, not {variant}")


class PolicyValueEvaluator(NeuralEvaluator):
    """A value + policy network (RISE, SixtyFour): batched POLICY_VALUE, and SCORE from the value.

    Subclasses give the input planes and the policy index of each move; ``policy_name`` names the
    policy layout in errors."""

    policy_name: ClassVar[str]
    #: the family's policy loss in training: "cross_entropy" (one-hot played move) or "poisson"
    #: (SixtyFour: Poisson NLL against the result-scaled one-hot target)
    policy_loss: ClassVar[str] = "cross_entropy"

    @classmethod
    def planes(cls, raw: np.ndarray, variant: str) -> np.ndarray:
        """The network's input planes of raw states (``Position.raw_state`` rows): the encoding
        hook that evaluation and training share."""
        raise NotImplementedError

    @classmethod
    def policy_indices(cls, moves: np.ndarray, raw: np.ndarray, seg: np.ndarray) -> np.ndarray:
        """The policy output index of each move; ``seg[i]`` is the row of ``raw`` move i was played
        in (-1 where a move has no index)."""
        raise NotImplementedError

    def _planes(self, raw: np.ndarray) -> np.ndarray:
        return self.planes(raw, self.variant)

    def _move_indices(self, moves: np.ndarray, raw: np.ndarray, seg: np.ndarray) -> np.ndarray:
        return self.policy_indices(moves, raw, seg)

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE, SCORE})

    def example_planes(self, batch: int) -> np.ndarray:
        """Input planes of ``batch`` real positions (the start and a few plies of play, cycled)."""
        p = new_position(self.variant)
        states = [p.raw_state()]
        for _ in range(7):
            moves = p.legal_moves()
            if not moves:
                break
            p.push(moves[len(moves) // 2])
            states.append(p.raw_state())
        return self._planes(enc.raw_array([states[i % len(states)] for i in range(batch)]))

    def example_inputs(self) -> list[torch.Tensor] | None:
        return [torch.from_numpy(self.example_planes(8)), torch.from_numpy(self.example_planes(3))]

    def network_throughput(self, batch: int, threads: int | None = None, seconds: float = 0.3,
                           trials: int = 3) -> float:
        """Raw network evaluations per second at ``batch`` (and ``threads``, restored after): the
        best of ``trials`` runs of about ``seconds`` each (the best, because other processes only
        ever slow a trial down)."""
        if batch < 1:
            raise EvaluatorError(f"batch must be >= 1, got {batch}")
        old = torch.get_num_threads()
        if threads is not None:
            torch.set_num_threads(threads)
        try:
            x, _ = self.to_device(self.example_planes(batch))
            # on a GPU the clock is read (after a sync) every 8 calls, so the calls queue up as in play
            return best_rate(lambda: self.forward(x), batch, seconds, trials, self.sync, 8 if self.on_gpu else 1)
        finally:
            torch.set_num_threads(old)

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        out: list[Evaluation] = []
        for s in range(0, len(leaves), self.max_batch):
            out += self._evaluate(list(leaves[s:s + self.max_batch]))
        return out

    def compiled_encoder(self) -> CompiledEncoder | None:
        """This network's encoder in compiled code (:mod:`evaluators.leafbatch`), None: numpy only."""
        return None

    @functools.cached_property
    def _compiled_encoder(self) -> CompiledEncoder | None:
        return self.compiled_encoder()  # built once per evaluator (its policy table is 4 MB)

    def _encode(self, leaves: list[Leaf]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """(input planes, leaf row of each legal move, the move's policy index, moves per leaf) of a
        batch: by the compiled encoder where there is one (built by mypyc, network on the CPU), else
        by the numpy encoders of :mod:`evaluators.encodings` (the same numbers, bit for bit)."""
        ce = self._compiled_encoder if leafbatch.COMPILED and not self.on_gpu else None
        if ce is None:
            raw = enc.raw_array([lf.state for lf in leaves])
            moves, seg, counts = flatten_moves(leaves)
            idx = self._move_indices(moves, raw, seg)
            x, counts_list = self._planes(raw), counts.tolist()
        else:
            e = ce.encode(leaves)
            n = len(leaves)
            x = np.zeros((n, ce.planes, 64), dtype=np.float32)
            x.reshape(-1)[_view(e.ones, np.int64)] = 1.0
            if ce.consts:
                x[:, list(ce.consts)] = _view(e.consts, np.float64).reshape(n, len(ce.consts))[:, :, None]
            x = x.reshape(n, ce.planes, 8, 8)
            idx = ce.table[_view(e.keys, np.int64)]
            seg, counts_list = _view(e.rows, np.int64), e.counts
        if (idx < 0).any():
            bad = int(flatten_moves(leaves)[0][np.flatnonzero(idx < 0)[0]])
            raise EvaluatorError(f"move {bad} cannot be encoded in the {self.policy_name}")
        return x, seg, idx, counts_list

    def _evaluate(self, leaves: list[Leaf]) -> list[Evaluation]:
        if not leaves:
            return []
        for lf in leaves:
            self._check_variant(lf.variant)
        planes, seg, idx, counts = self._encode(leaves)
        session = None if self.on_gpu else self._built()
        if isinstance(session, OrtForward):
            try:  # numpy in and out, no torch on the way (the same session, the same numbers)
                value, pol = session.run(planes)
                return leafbatch.evaluations(value.tolist(), legal_softmax_flat(pol, seg, idx, counts), counts)
            except Exception:  # noqa: BLE001 - forward() below reports the failure and runs eager
                pass
        x, n = self.to_device(planes)
        with torch.inference_mode():
            v, logits = self.forward(x)
            if not self.on_gpu:
                return leafbatch.evaluations(v.tolist(), legal_softmax_flat(logits.numpy(), seg, idx, counts), counts)
            # on the device: only the legal moves' probabilities (and the values) come back
            p = legal_softmax_torch(logits, torch.from_numpy(seg).to(self.device),
                                    torch.from_numpy(idx).to(self.device), n)
            flat = p.cpu().numpy().astype(np.float64)
            values = v[:n].float().cpu().tolist()
        return leafbatch.evaluations(values, flat.tolist(), counts)

    def int8_calibration(self) -> np.ndarray:
        """The input planes of :data:`INT8_SAMPLE` seeded sample positions that int8 is calibrated on."""
        return self._planes(enc.raw_array([p.raw_state() for p in self.sample_positions(INT8_SAMPLE, seed=1)]))

    def int8_source(self, tuned: bool = False) -> nn.Module:
        """The network the int8 model is quantised from: the network itself, or (``tuned``) its
        quantisation-tuned copy beside the weights (``NAME.qat.pt``, :mod:`experiments.training.qat`)
        when there is one made from these very weights (else the network itself, and a warning).
        Float32 play always runs the network itself."""
        net: nn.Module = self.net
        if not tuned:
            return net
        if self._int8_source is None:
            self._int8_source = net
            qat = qat_path(self.path) if self.path else None
            if qat is not None and os.path.isfile(qat):
                try:
                    copy, d = nets.load_model(qat, self.family)
                except ValueError as e:
                    log.warning("evaluator %s ignores %s: %s", self.name, qat, e)
                else:
                    made_from = (d.get("meta") or {}).get("qat", {}).get("source_key")
                    if made_from == weights_key(net):
                        self._int8_source = copy.eval()
                    else:
                        log.warning("evaluator %s ignores %s: it was tuned from other weights", self.name, qat)
        return self._int8_source

    def has_tuned_copy(self) -> bool:
        """Whether a quantisation-tuned copy of these weights exists (``inference=onnxruntime-int8-qat``)."""
        return self.int8_source(tuned=True) is not self.net

    def int8_key(self, tuned: bool = False) -> str:
        """The int8 model's key: the weights' SHA-1 and the calibration's (its cache name and its
        verdict's key), and (``tuned``, where the copy exists) the tuned copy's SHA-1
        (``-qat-<16 hex digits>``)."""
        key = f"{weights_key(self.net)}-int8-{calibration_key(self.int8_calibration())}"
        src = self.int8_source(tuned)
        return key if src is self.net else f"{key}-qat-{weights_key(src)[:16]}"

    def int8_verdict(self, tuned: bool = False) -> dict[str, Any] | None:
        verdicts = int8_verdicts()
        prefix = weights_key(self.net) + "-int8-"
        if not any(k.startswith(prefix) and ("-qat-" in k) == tuned for k in verdicts):  # no calibration then
            return None
        if tuned and not self.has_tuned_copy():
            return None
        return verdicts.get(self.int8_key(tuned))

    def int8_session(self, tuned: bool = False) -> Callable[..., Any]:
        """The int8 ONNX Runtime session, calibrated on :data:`INT8_SAMPLE` sample positions
        (``tuned``: quantised from the quantisation-tuned copy)."""
        examples = self.example_inputs()
        assert examples is not None
        return OrtForward(self.int8_source(tuned), examples[0], self.threads, self.int8_calibration())

    def int8_agreement_of(self, session: Callable[..., Any] | None = None, count: int = INT8_SAMPLE) -> tuple[float, float]:
        """(share of ``count`` other sample positions on which int8 (``session``, None: this network's
        int8 session) keeps the float32 top legal move, largest value difference): information for
        ``bench net`` and ``bench int8-calibration``, not a gate."""
        with torch.inference_mode():
            tops, values = self._top_moves([self.net, session or self.int8_session()], self.sample_positions(count, seed=0))
        return float((tops[0] == tops[1]).mean()), float(np.abs(values[0] - values[1]).max())

    def _build_int8(self, tuned: bool = False) -> Callable[..., Any] | None:
        try:
            if tuned and not self.has_tuned_copy():
                raise EvaluatorError(f"no quantisation-tuned copy of {os.path.basename(self.path or self.name)} "
                                     f"(searchbench qat makes {os.path.basename(qat_path(self.path or 'NAME.pt'))})")
            session = self.int8_session(tuned)
            self.inference = INT8_MODES[1] if tuned else INT8_MODES[0]
            return session
        except Exception as e:  # noqa: BLE001 - a quantisation or session failure: float32 instead
            self.inference_error = f"cannot quantise: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        log.warning("evaluator %s runs float32: %s", self.name, self.inference_error)
        return None

    def _top_moves(self, forwards: Sequence[Callable[..., Any]], positions: Sequence[Position]
                   ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each forward's top legal move (index among the legal moves) and value on ``positions`` (CPU)."""
        leaves = [Leaf.of(p, p.legal_moves()) for p in positions]
        raw = enc.raw_array([lf.state for lf in leaves])
        moves, seg, counts = flatten_moves(leaves)
        idx = self._move_indices(moves, raw, seg)
        x = torch.from_numpy(self._planes(raw))
        tops, values = [], []
        for f in forwards:
            v, logits = _outputs(f(x))[:2]
            p = legal_softmax(logits.float().numpy(), seg, idx, counts)
            tops.append(np.array([int(np.argmax(q)) for q in p]))
            values.append(v.float().numpy().reshape(-1))
        return tops, values

    def _half_agrees(self) -> bool:
        positions = self.sample_positions(256)
        leaves = [Leaf.of(p, p.legal_moves()) for p in positions]
        raw = enc.raw_array([lf.state for lf in leaves])
        moves, seg, counts = flatten_moves(leaves)
        idx = torch.from_numpy(self._move_indices(moves, raw, seg)).to(self.device)
        seg_t = torch.from_numpy(seg).to(self.device)
        x, n = self.to_device(self._planes(raw))
        tops = []
        with torch.inference_mode():
            for half in (False, True):
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=half):
                    _, logits = self.net(x)
                p = legal_softmax_torch(logits, seg_t, idx, n).cpu().numpy()
                starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
                tops.append(np.array([int(np.argmax(p[s:s + c])) for s, c in zip(starts, counts)]))
        self.half_agreement = float((tops[0] == tops[1]).mean())
        ok = self.half_agreement >= HALF_MIN_AGREEMENT
        log.info("evaluator %s on %s: bfloat16 keeps the top move on %.1f%% of %d positions: %s", self.name,
                 self.device, 100 * self.half_agreement, n, "half precision" if ok else "float32")
        return ok

    def value(self, pos: Position) -> float:
        """The network's value of ``pos`` for the side to move, in [-1, 1]."""
        self._check_variant(pos.variant)
        raw = enc.raw_array([pos.raw_state()])
        x, _ = self.to_device(self._planes(raw))
        with torch.inference_mode():
            v, _ = self.forward(x)
        return float(v[0].float())

    def score(self, pos: Position) -> int:
        return value_to_cp(self.value(pos), self.variant)

    def score_many(self, positions: Sequence[Position]) -> list[int]:
        """The scores of ``positions`` from batched network calls (at most ``max_batch`` a call)."""
        for p in positions:
            self._check_variant(p.variant)
        raw = enc.raw_array([p.raw_state() for p in positions])
        out: list[int] = []
        for i in range(0, len(raw), self.max_batch):
            x, n = self.to_device(self._planes(raw[i:i + self.max_batch]))
            with torch.inference_mode():
                v, _ = self.forward(x)
            out += [value_to_cp(float(t), self.variant) for t in v[:n].float().cpu()]
        return out
