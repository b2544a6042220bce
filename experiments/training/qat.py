"""Quantisation-aware fine-tuning (QAT): a copy of a policy-value network tuned so that its int8 model
plays like the float32 network, the fix for a network whose int8 model an SPRT rejects (issue 32).

The int8 model (:func:`evaluators.onnx_runtime.quantize_int8`) is the ONNX export quantised
statically: the export folds each batch norm into its convolution, then every Conv and Gemm weight
is rounded to int8, symmetric per output channel (scale ``max|w| / 127``), and every activation
entering them to uint8 over its calibrated ``[min, max]`` (MinMax, zero included).  Fine-tuning here
simulates exactly that rounding in the forward pass (fake quantisation, straight-through gradients):

1. every ``Conv2d`` followed by a ``BatchNorm2d`` in a ``Sequential`` is folded into one convolution
   with a bias (the eval statistics, as the export folds them);
2. the weights of every ``Conv2d`` and ``Linear`` are fake-quantised per output channel to int8;
3. the input and the output of every ``Conv2d`` and ``Linear`` are fake-quantised to uint8 over a
   range that follows the batches' min and max (an exponential average, as a MinMax observer): the
   int8 model quantises a convolution's output too, the policy logits included (a step of about 0.17
   logits on the chess RISE network, where near-equal moves trade places).

The target is the float32 network itself (distillation, since the question is only whether int8
plays as float32 does): the KL divergence of the student's policy from the teacher's over all policy
outputs, plus ``value_weight`` times the squared value difference, on positions of a data
directory.  The tuned weights are written back into the original architecture (each folded batch
norm becomes gamma 1, variance ``1 - eps``, beta the folded bias: the same function, and the export
folds it to the same convolution) and saved as ``<weights>.qat.pt`` beside the network:
:class:`evaluators.neural.PolicyValueEvaluator` quantises its int8 model from that file when it
exists, while float32 play keeps the original weights.  Its verdict key names both
(:meth:`~evaluators.neural.PolicyValueEvaluator.int8_key`), so ``accept-int8`` plays the tuned int8
model against the original float32 network.

Resumable: a checkpoint (weights, optimiser, step, ranges) every ``save_every`` steps beside the
output (``<out>.partial``); the final file is written atomically.

    searchbench qat --weights runs/rise/model.pt --data data/chess-fsf3000-b --steps 3000   # runs/rise/model.qat.pt
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from evaluators import nets
from evaluators.base import EvaluatorError
from evaluators.families import WEIGHTS_DIR
from evaluators.neural import qat_path, weights_path
from evaluators.onnx_runtime import OrtForward, weights_key
from experiments.training import datagen
from experiments.training.policy_value import evaluator_class


@dataclass
class QATConfig:
    weights: str                 # the float32 network (a path or a shipped name)
    data: list[str]              # data directories (shards) whose positions it is tuned on
    out: str | None = None       # None: <weights>.qat.pt beside the network
    steps: int = 3000
    batch: int = 256
    lr: float = 2e-4
    value_weight: float = 1.0
    ema: float = 0.99            # the activation ranges' average
    seed: int = 1
    threads: int = 2
    save_every: int = 250

    def check(self) -> None:
        for name in ("steps", "batch", "threads", "save_every"):
            if getattr(self, name) < 1:
                raise EvaluatorError(f"qat: {name} must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0 or self.value_weight < 0 or not 0 <= self.ema < 1:
            raise EvaluatorError("qat: lr must be > 0, value_weight >= 0 and ema in [0, 1)")


# ---- fake quantisation ---------------------------------------------------------------------------

def _round_ste(x: torch.Tensor) -> torch.Tensor:
    return x + (torch.round(x) - x).detach()


def fake_int8_weight(w: torch.Tensor) -> torch.Tensor:
    """``w`` rounded to int8, symmetric per output channel (dim 0), gradients passed straight through."""
    flat = w.detach().reshape(w.shape[0], -1)
    scale = (flat.abs().amax(dim=1).clamp_min(1e-12) / 127.0).reshape(-1, *([1] * (w.dim() - 1)))
    return torch.clamp(_round_ste(w / scale), -127, 127) * scale


def fake_uint8(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """``x`` rounded to uint8 over ``[lo, hi]`` (zero always representable, as ONNX Runtime's MinMax)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = max(hi - lo, 1e-8) / 255.0
    zero = round(-lo / scale)
    q = torch.clamp(_round_ste(x / scale) + zero, 0, 255)
    return (q - zero) * scale


def _bn_tensors(bn: nn.BatchNorm2d) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(gamma, beta, running mean, running variance) of an affine batch norm that tracks statistics."""
    gamma, beta, mean, var = bn.weight, bn.bias, bn.running_mean, bn.running_var
    assert gamma is not None and beta is not None and mean is not None and var is not None
    return gamma, beta, mean, var


class QuantLayer(nn.Module):
    """A Conv2d (with its folded batch norm) or a Linear whose weights and input are fake-quantised."""

    def __init__(self, layer: nn.Conv2d | nn.Linear, bn: nn.BatchNorm2d | None, ema: float,
                 paths: tuple[str, str | None] = ("", None)) -> None:
        super().__init__()
        w = layer.weight.detach().clone()
        b = layer.bias.detach().clone() if layer.bias is not None else torch.zeros(w.shape[0])
        if bn is not None:
            gamma, beta, mean, var = _bn_tensors(bn)
            k = gamma.detach() / torch.sqrt(var + bn.eps)
            w = w * k.reshape(-1, *([1] * (w.dim() - 1)))
            b = beta.detach() + (b - mean) * k
        self.layer, self.bn, self.ema = layer, bn, ema
        #: where the layer and its batch norm sit in the network (``get_submodule`` names)
        self.paths = paths
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(b)
        #: the input's and the output's ranges ([lo, hi]; None until the first batch)
        self.ranges: list[list[float] | None] = [None, None]

    def _observed(self, i: int, t: torch.Tensor) -> tuple[float, float]:
        lo, hi = float(t.detach().min()), float(t.detach().max())
        r = self.ranges[i]
        r = self.ranges[i] = [lo, hi] if r is None else [self.ema * r[0] + (1 - self.ema) * lo,
                                                          self.ema * r[1] + (1 - self.ema) * hi]
        return r[0], r[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xq = fake_uint8(x, *self._observed(0, x))
        wq = fake_int8_weight(self.weight)
        if isinstance(self.layer, nn.Conv2d):
            c = self.layer
            y = F.conv2d(xq, wq, self.bias, c.stride, c.padding, c.dilation, c.groups)
        else:
            y = F.linear(xq, wq, self.bias)
        return fake_uint8(y, *self._observed(1, y))  # ONNX Runtime quantises the output too (policy logits included)

    def write_back(self) -> None:
        """The tuned weights into the original layer (and its batch norm, as an identity plus bias)."""
        with torch.no_grad():
            self.layer.weight.copy_(self.weight)
            if self.bn is None:
                assert self.layer.bias is not None, "a layer without bias or batch norm has no place for its bias"
                self.layer.bias.copy_(self.bias)
            else:
                if self.layer.bias is not None:
                    self.layer.bias.zero_()
                gamma, beta, mean, var = _bn_tensors(self.bn)
                gamma.fill_(1.0)
                var.fill_(1.0 - self.bn.eps)
                mean.zero_()
                beta.copy_(self.bias)


def quantised_copy(net: nn.Module, ema: float = 0.99) -> tuple[nn.Module, list[QuantLayer]]:
    """A deep copy of ``net`` with every Conv2d (+ its batch norm) and Linear replaced by a
    :class:`QuantLayer`; the layers, in order (each refers to the copy's original modules)."""
    student = copy.deepcopy(net).eval()
    layers: list[QuantLayer] = []

    def visit(module: nn.Module, prefix: str) -> None:
        for name, child in list(module.named_children()):
            if isinstance(module, nn.Sequential) and isinstance(child, nn.BatchNorm2d):
                continue  # folded into the convolution before it
            if isinstance(child, (nn.Conv2d, nn.Linear)):
                bn, bn_name = None, None
                if isinstance(module, nn.Sequential) and isinstance(child, nn.Conv2d):
                    names = list(module._modules)
                    nxt = names.index(name) + 1
                    if nxt < len(names) and isinstance(module._modules[names[nxt]], nn.BatchNorm2d):
                        bn_name = names[nxt]
                        bn = module._modules[bn_name]
                        module._modules[bn_name] = nn.Identity()  # its affine map lives in the QuantLayer
                q = QuantLayer(child, bn, ema, (prefix + name, None if bn_name is None else prefix + bn_name))  # type: ignore[arg-type]
                module._modules[name] = q
                layers.append(q)
            else:
                visit(child, f"{prefix}{name}.")

    visit(student, "")
    return student, layers


def restored(layers: list[QuantLayer], original: nn.Module) -> nn.Module:
    """A network of ``original``'s architecture carrying the tuned weights of ``layers``."""
    out = copy.deepcopy(original).eval()
    for q in layers:
        q.write_back()
        layer_path, bn_path = q.paths
        out.get_submodule(layer_path).load_state_dict(q.layer.state_dict())
        if q.bn is not None and bn_path is not None:
            out.get_submodule(bn_path).load_state_dict(q.bn.state_dict())
    return out


# ---- the run ---------------------------------------------------------------------------------------

def _planes_of(ev: Any, raw: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(ev.planes(raw, ev.variant), dtype=np.float32))


def _batches(raw: np.ndarray, batch: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    while True:
        perm = rng.permutation(len(raw))
        for i in range(0, len(perm) - batch + 1, batch):
            yield raw[perm[i:i + batch]]


def _shipped(path: str) -> bool:
    """Whether ``path`` lies among the shipped networks (evaluators/weights/)."""
    return os.path.realpath(os.path.dirname(path)) == os.path.realpath(WEIGHTS_DIR)


def _resume(partial: str, cfg: QATConfig, layers: list[Any], opt: torch.optim.Optimizer) -> int:
    """The step a run's partial file resumes at, its layers and optimizer restored; 0 (a fresh start,
    said in one line) where it is not this run's or does not load as tensors and plain data (a torn
    copy; a pickle planted beside the network: ``weights_only``, so no code is ever run)."""
    import sys

    try:
        ck = torch.load(partial, map_location="cpu", weights_only=True)
        if not (isinstance(ck, dict) and isinstance(ck.get("config"), dict) and ck["config"].get("weights") == cfg.weights
                and len(ck["layers"]) == len(layers)):
            raise ValueError("it is another run's")
        for q, (w, b, ranges) in zip(layers, ck["layers"]):
            q.weight.data.copy_(w)
            q.bias.data.copy_(b)
            q.ranges = ranges
        opt.load_state_dict(ck["optimizer"])
        return int(ck["step"])
    except Exception as e:  # noqa: BLE001 - whatever is wrong with it, the run starts afresh
        print(f"qat: {partial} does not resume this run ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}); "
              "starting from step 0", file=sys.stderr)
        return 0


def distillation_loss(teacher: nn.Module, student: nn.Module, x: torch.Tensor, value_weight: float
                      ) -> tuple[torch.Tensor, float, float]:
    """(loss, policy KL, value MSE) of ``student`` against ``teacher`` on the planes ``x``."""
    with torch.no_grad():
        tv, tp = teacher(x)
        t_logp = F.log_softmax(tp.float(), dim=1)
    sv, sp = student(x)
    s_logp = F.log_softmax(sp.float(), dim=1)
    kl = (t_logp.exp() * (t_logp - s_logp)).sum(dim=1).mean()
    mse = F.mse_loss(sv.float(), tv.float())
    return kl + value_weight * mse, kl.item(), mse.item()


def _lr_factor(s: int, steps: int, warm: int) -> float:
    if s < warm:
        return (s + 1) / warm
    return float(0.5 * (1 + np.cos(np.pi * min(s, steps) / steps)))


def _evaluator(weights: str, threads: int) -> Any:
    """The policy-value evaluator of the weights file ``weights`` (a path or a shipped name), eager:
    its family read from the file; one line of EvaluatorError for a file that is not one."""
    src = weights_path(weights)
    try:
        head = torch.load(src, map_location="cpu", weights_only=True) if os.path.isfile(src) else None
        family = str(head.get("family")) if isinstance(head, dict) else "rise"
        return evaluator_class(family).load(path=src, inference="eager", threads=threads)
    except ValueError as e:  # EvaluatorError or EngineError: a missing, foreign or damaged file
        raise EvaluatorError(f"qat: {e}") from None
    except Exception:  # noqa: BLE001 - a torn or foreign file
        raise EvaluatorError(f"qat: {src} is not a searchbench weights file") from None


def run_qat(cfg: QATConfig, progress: bool = True) -> dict[str, Any]:
    """Tune the int8 copy of ``cfg.weights`` (module docstring); returns a summary."""
    from tqdm import tqdm

    cfg.check()
    ev = _evaluator(cfg.weights, cfg.threads)
    src, family, original = ev.path, ev.family, ev.net
    out = cfg.out or qat_path(src)
    if not cfg.out and os.path.exists(out) and _shipped(out):
        raise EvaluatorError(f"qat: {out} is the shipped tuned copy (its int8 verdict applies to it): give --out "
                             "to write yours elsewhere")
    ds = datagen.load_dataset(cfg.data)
    if ds.variant != ev.variant:
        raise EvaluatorError(f"qat: the network plays {ev.variant}, the data are {ds.variant}")
    train_games = ~datagen.is_validation(ds.game_uid, 0.1)
    raw = ds.raw[train_games[ds.game]]
    partial = out + ".partial"
    teacher = original.eval()
    student, layers = quantised_copy(original, cfg.ema)
    params = [p for q in layers for p in (q.weight, q.bias)]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    step = 0
    if os.path.exists(partial):
        step = _resume(partial, cfg, layers, opt)
    first = step
    rng = np.random.default_rng(cfg.seed + step)
    batches = _batches(raw, cfg.batch, rng)
    warm = max(1, cfg.steps // 20)  # a linear warm-up over the first 5%, then cosine decay
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s + first, cfg.steps, warm))
    t0 = time.perf_counter()
    kl = mse = float("nan")

    def checkpoint() -> None:
        nets.save_atomically(partial, {"config": asdict(cfg), "step": step, "optimizer": opt.state_dict(),
                                       "layers": [(q.weight.data, q.bias.data, q.ranges) for q in layers]})

    with tqdm(total=cfg.steps, initial=step, disable=not progress, desc="qat", unit="step") as bar:
        while step < cfg.steps:
            x = _planes_of(ev, next(batches))
            loss, kl, mse = distillation_loss(teacher, student, x, cfg.value_weight)
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            sched.step()
            step += 1
            bar.update(1)
            bar.set_postfix(kl=f"{kl:.4f}", mse=f"{mse:.5f}")
            if step % cfg.save_every == 0 and step < cfg.steps:
                checkpoint()
    tuned = restored(layers, original)
    meta = dict(ev.meta)
    meta["qat"] = {**asdict(cfg), "source": os.path.basename(src), "source_key": weights_key(original), "final_kl": kl, "final_value_mse": mse,
                   "minutes": round((time.perf_counter() - t0) / 60, 1)}
    nets.save_model(out, family, tuned, meta, half=True)  # as the shipped weights
    if os.path.exists(partial):
        os.unlink(partial)
    return {"out": out, "steps": step, "kl": kl, "value_mse": mse, "minutes": meta["qat"]["minutes"]}


def agreement(weights: str, tuned: str, positions: int, threads: int) -> dict[str, Any]:
    """int8's top-move agreement with float32 (and the largest value difference) on ``positions``
    sample positions (not the calibration's), quantised from the network itself and from the tuned
    copy ``tuned``: what the fine-tuning bought, before any game is played."""
    ev = _evaluator(weights, threads)
    examples = ev.example_inputs()
    assert examples is not None
    calibration = ev.int8_calibration()
    out: dict[str, Any] = {"positions": positions}
    for name, path in (("plain", None), ("tuned", tuned)):
        net = ev.net if path is None else nets.load_model(path, ev.family)[0]
        session = OrtForward(net, examples[0], threads, calibration)
        top, value = ev.int8_agreement_of(session, positions)
        out[f"{name}_top_move"], out[f"{name}_value_diff"] = top, value
    return out


def format_summary(s: dict[str, Any]) -> str:
    return (f"{s['out']}: {s['steps']} steps in {s['minutes']} min, final policy KL {s['kl']:.4f}, value MSE "
            f"{s['value_mse']:.5f}\nint8 keeps the float32 top move on {s['plain_top_move']:.1%} of {s['positions']} "
            f"sample positions quantised from the network itself (value moved by at most {s['plain_value_diff']:.3f}), "
            f"on {s['tuned_top_move']:.1%} quantised from the tuned copy (at most {s['tuned_value_diff']:.3f})")
