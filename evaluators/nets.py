"""Torch networks of the three evaluator families (SPEC.md section 3), each of configurable size.

RISEv2-mobile (CrazyAra "8-value-policy-map-mobile"; the paper's size is ``RiseConfig()``)
    stem: 3x3 conv C + BN + ReLU; ``blocks`` inverted-residual blocks, block i:
    1x1 conv C -> E_i + BN + ReLU, depthwise 3x3 + BN + ReLU, [squeeze-excitation, ratio 2, on
    the last ``se_blocks`` blocks, applied to the expanded E_i channels], 1x1 conv E_i -> C + BN,
    residual add with no final activation; E_i = ``expansion_base + expansion_step * i``
    (128 + 64 i in the paper).  ``arch="resnet"`` swaps the body for AlphaZero-style basic
    residual blocks (3x3 conv, BN, ReLU, 3x3 conv, BN, add, ReLU).
    value head: 1x1 conv 8 + BN + ReLU, FC ``value_hidden``, ReLU, FC 1, tanh.
    policy head: 3x3 conv C + BN + ReLU, 3x3 conv 81 -> 5184 logits (``plane * 64 + square``).
SixtyFour ResNet (12 x 256 in the paper)
    stem 3x3 conv; basic residual blocks; policy head 1x1 conv 16 + BN + PReLU + FC -> 2308
    log-probabilities; value head 1x1 conv 8 + BN + ReLU + FC [+ hidden FC] + tanh.
DeepChess
    :class:`Pos2Vec`: an MLP 773(897)-600-400-200-100 with ReLU, pretrained layer by layer as a
    stacked autoencoder (:meth:`Pos2Vec.autoencoder_layer`); :class:`DeepChessNet`: two tied
    Pos2Vec towers, concatenated (200) -> 400-200-100 -> 2 logits: softmax[0] = P(first position is
    better for White).  Distilled size: Pos2Vec 100-100-100, comparator 100-100-2.  Extensions
    (defaults off = the paper): ``dropout`` (training only) on the comparator's input features and
    hidden layers, ``input_dropout`` (training only) on the input bits, ``antisymmetric``: the
    logits of (a, b) are averaged with the swapped logits of (b, a), so P(a > b) = 1 - P(b > a).

Saved models are plain dicts ``{"family", "config", "variant", "state_dict", "meta"}`` loaded with
``torch.load(weights_only=True)`` (no pickled code).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from board.variants import CHESS, CRAZYHOUSE
from evaluators.families import FAMILIES, resolve
from evaluators.encodings import CRAZYARA_PLANES, DEEPCHESS_BITS, POLICY_PLANES, SIXTYFOUR_MOVES, SIXTYFOUR_PLANES


# --------------------------------------------------------------------------- RISE


@dataclass
class RiseConfig:
    channels: int = 256
    blocks: int = 13
    expansion_base: int = 128
    expansion_step: int = 64
    se_blocks: int = 5
    value_hidden: int = 256
    arch: str = "rise"  # "rise" (RISEv2-mobile) or "resnet" (AlphaZero-style)
    variant: str = CRAZYHOUSE.name


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, ratio: int = 2) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(channels, max(1, channels // ratio)), nn.ReLU(inplace=True),
                                nn.Linear(max(1, channels // ratio), channels), nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w: torch.Tensor = self.fc(x.mean(dim=(2, 3)))
        return x * w[:, :, None, None]


class InvertedResidual(nn.Module):
    """RISEv2-mobile block: expand 1x1, depthwise 3x3, [SE], project 1x1, add (no activation)."""

    def __init__(self, channels: int, expanded: int, se: bool) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(channels, expanded, 1, bias=False), nn.BatchNorm2d(expanded), nn.ReLU(inplace=True),
            nn.Conv2d(expanded, expanded, 3, padding=1, groups=expanded, bias=False), nn.BatchNorm2d(expanded),
            nn.ReLU(inplace=True)]
        if se:
            layers.append(SqueezeExcitation(expanded, 2))
        layers += [nn.Conv2d(expanded, channels, 1, bias=False), nn.BatchNorm2d(channels)]
        self.body = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = x + self.body(x)
        return out


class BasicResidual(nn.Module):
    """AlphaZero/ResNet basic block: conv-BN-ReLU-conv-BN, add, ReLU."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels))
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.act(x + self.body(x))
        return out


def _stem(cin: int, c: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))


class RiseNet(nn.Module):
    """Input ``[B, 34|22, 8, 8]`` -> (value ``[B]`` in [-1, 1], policy logits ``[B, 5184]``)."""

    def __init__(self, cfg: RiseConfig) -> None:
        super().__init__()
        if cfg.arch not in ("rise", "resnet"):
            raise ValueError(f"unknown RISE architecture {cfg.arch!r} (rise or resnet)")
        self.cfg = cfg
        c = cfg.channels
        self.stem = _stem(CRAZYARA_PLANES[cfg.variant], c)
        blocks: list[nn.Module] = []
        for i in range(cfg.blocks):
            if cfg.arch == "rise":
                se = i >= cfg.blocks - cfg.se_blocks
                blocks.append(InvertedResidual(c, cfg.expansion_base + cfg.expansion_step * i, se))
            else:
                blocks.append(BasicResidual(c))
        self.body = nn.Sequential(*blocks)
        self.value_head = nn.Sequential(
            nn.Conv2d(c, 8, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.Flatten(),
            nn.Linear(8 * 64, cfg.value_hidden), nn.ReLU(inplace=True), nn.Linear(cfg.value_hidden, 1), nn.Tanh())
        self.policy_head = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True),
            nn.Conv2d(c, POLICY_PLANES, 3, padding=1), nn.Flatten())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(self.stem(x))
        return self.value_head(h).squeeze(1), self.policy_head(h)


# --------------------------------------------------------------------------- SixtyFour


@dataclass
class SixtyFourConfig:
    channels: int = 256
    blocks: int = 12
    value_hidden: int = 0  # 0: the paper's single FC to the value
    variant: str = CRAZYHOUSE.name


class SixtyFourNet(nn.Module):
    """Input ``[B, 15, 8, 8]`` -> (value ``[B]`` in [-1, 1], policy log-probabilities ``[B, 2308]``).
    The paper's value target is 1 / 0.5 / 0: that is ``(v + 1) / 2``."""

    def __init__(self, cfg: SixtyFourConfig) -> None:
        super().__init__()
        self.cfg = cfg
        c = cfg.channels
        self.stem = _stem(SIXTYFOUR_PLANES, c)
        self.body = nn.Sequential(*[BasicResidual(c) for _ in range(cfg.blocks)])
        self.policy_head = nn.Sequential(
            nn.Conv2d(c, 16, 1, bias=False), nn.BatchNorm2d(16), nn.PReLU(16), nn.Flatten(),
            nn.Linear(16 * 64, SIXTYFOUR_MOVES), nn.LogSoftmax(dim=1))
        value: list[nn.Module] = [nn.Conv2d(c, 8, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.Flatten()]
        if cfg.value_hidden:
            value += [nn.Linear(8 * 64, cfg.value_hidden), nn.ReLU(inplace=True), nn.Linear(cfg.value_hidden, 1)]
        else:
            value.append(nn.Linear(8 * 64, 1))
        value.append(nn.Tanh())
        self.value_head = nn.Sequential(*value)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(self.stem(x))
        return self.value_head(h).squeeze(1), self.policy_head(h)


# --------------------------------------------------------------------------- DeepChess


@dataclass
class DeepChessConfig:
    pos2vec: list[int] = field(default_factory=lambda: [600, 400, 200, 100])
    comparator: list[int] = field(default_factory=lambda: [400, 200, 100])
    variant: str = CHESS.name
    dropout: float = 0.0  # training only: on the comparator's input features and hidden layers
    input_dropout: float = 0.0  # training only: on the input bits of both towers
    antisymmetric: bool = False  # logits(a, b) averaged with the swapped logits(b, a)


class Pos2Vec(nn.Module):
    """Stacked-autoencoder encoder: bits -> 100 features (ReLU after every layer)."""

    def __init__(self, n_in: int, sizes: list[int]) -> None:
        super().__init__()
        dims = [n_in] + list(sizes)
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])])

    def forward(self, x: torch.Tensor, upto: int | None = None) -> torch.Tensor:
        for layer in self.layers[: upto if upto is not None else len(self.layers)]:
            x = torch.relu(layer(x))
        return x

    def autoencoder_layer(self, i: int) -> tuple[nn.Linear, nn.Module]:
        """Layer i of the encoder and a fresh decoder back to its input (for layer-wise
        pretraining: sigmoid output for the binary input layer, linear for deeper ones), on the
        encoder's device."""
        enc = self.layers[i]
        assert isinstance(enc, nn.Linear)
        dec: nn.Module = nn.Linear(enc.out_features, enc.in_features).to(enc.weight.device, enc.weight.dtype)
        return enc, dec


class DeepChessNet(nn.Module):
    """Siamese comparator: ``forward(a, b)`` -> logits ``[B, 2]``; softmax[:, 0] = P(a better for White)."""

    def __init__(self, cfg: DeepChessConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.pos2vec = Pos2Vec(DEEPCHESS_BITS[cfg.variant], cfg.pos2vec)
        dims = [2 * cfg.pos2vec[-1]] + list(cfg.comparator)
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU(inplace=True)]
        layers.append(nn.Linear(dims[-1], 2))
        self.head = nn.Sequential(*layers)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.pos2vec(x)
        return out

    def compare_features(self, fa: torch.Tensor, fb: torch.Tensor) -> torch.Tensor:
        if self.cfg.antisymmetric:  # P(a > b) = 1 - P(b > a) exactly, whatever the weights
            return 0.5 * (self._head(fa, fb) + self._head(fb, fa).flip(1))
        return self._head(fa, fb)

    def _head(self, fa: torch.Tensor, fb: torch.Tensor) -> torch.Tensor:
        h = torch.cat([fa, fb], dim=1)
        if not (self.training and self.cfg.dropout > 0.0):
            out: torch.Tensor = self.head(h)
            return out
        # dropout (training only) on the concatenated features and after every hidden ReLU
        h = F.dropout(h, self.cfg.dropout, training=True)
        for m in self.head:
            h = m(h)
            if isinstance(m, nn.ReLU):
                h = F.dropout(h, self.cfg.dropout, training=True)
        return h

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.training and self.cfg.input_dropout > 0.0:
            a = F.dropout(a, self.cfg.input_dropout, training=True)
            b = F.dropout(b, self.cfg.input_dropout, training=True)
        return self.compare_features(self.features(a), self.features(b))


# --------------------------------------------------------------------------- save / load

def build(family: str, config: dict[str, Any]) -> nn.Module:
    """A fresh network of ``family`` (:data:`evaluators.families.FAMILIES`) with ``config``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown network family {family!r}; known: {', '.join(FAMILIES)}")
    f = FAMILIES[family]
    net: nn.Module = resolve(f.network)(resolve(f.config)(**config))
    return net


def model_dict(family: str, net: nn.Module, meta: dict[str, Any] | None = None, half: bool = False) -> dict[str, Any]:
    """The saved form; ``half`` stores floating-point tensors as float16 (shipped weights: half the
    size; they are loaded back into float32 parameters)."""
    cfg = getattr(net, "cfg")
    sd = {k: (v.detach().cpu().half() if half and v.is_floating_point() else v.detach().cpu())
          for k, v in net.state_dict().items()}
    return {"family": family, "config": asdict(cfg), "variant": cfg.variant, "state_dict": sd,
            "meta": dict(meta or {})}


def save_model(path: str, family: str, net: nn.Module, meta: dict[str, Any] | None = None, half: bool = False) -> None:
    save_atomically(path, model_dict(family, net, meta, half))


def save_atomically(path: str, obj: Any) -> None:
    """``torch.save(obj)`` to a fresh temporary file beside ``path`` (``O_EXCL``: a planted name or link
    is never written through), then renamed over ``path``; a failure (a full disk) removes the
    temporary file and raises OSError naming ``path``."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, RuntimeError):  # torch's word for a full disk
            raise OSError(f"cannot write {path}: {str(e).splitlines()[0] if str(e) else 'write failed'}") from None
        raise


def nonfinite(state: nn.Module | dict[str, Any]) -> str | None:
    """Why these weights cannot be used (a NaN or an infinity, named by tensor), or None."""
    sd = state.state_dict() if isinstance(state, nn.Module) else state
    for name, t in sd.items():
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all()):
            return f"the weights hold NaN or infinity ({name})"
    return None


def build_checked(make: Callable[[], nn.Module], state_dict: Any) -> nn.Module:
    """``make()`` loaded with ``state_dict``, after checking the stored tensors against the shapes the
    header's configuration asks for on the ``meta`` device (no memory): a header that lies
    (``channels=6000`` beside 64-channel tensors) is refused before gigabytes are allocated.
    ValueError (one line) if they differ."""
    if not isinstance(state_dict, dict) or not all(isinstance(v, torch.Tensor) for v in state_dict.values()):
        raise ValueError("the state dict is not a table of tensors")
    with torch.device("meta"):
        shape_net = make()
    want = {k: tuple(v.shape) for k, v in shape_net.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state_dict.items()}
    if want.keys() != got.keys():
        extra, missing = sorted(got.keys() - want.keys()), sorted(want.keys() - got.keys())
        raise ValueError(f"tensors {(missing or extra)[:3]} are {'missing' if missing else 'unexpected'}")
    bad = next((k for k in want if want[k] != got[k]), None)
    if bad is not None:
        raise ValueError(f"the header asks for {bad} of shape {want[bad]}, the file holds {got[bad]}")
    why = nonfinite(state_dict)
    if why:
        raise ValueError(why)
    net = make()
    net.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state_dict.items()})
    return net


def load_model(path: str, family: str) -> tuple[nn.Module, dict[str, Any]]:
    """Load a saved model of ``family``; raises ValueError naming the file (one line) if the file is
    missing, unreadable or of another family."""
    import os

    if not os.path.isfile(path):
        raise ValueError(f"weights file not found: {path}")
    try:
        d = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - a torn, foreign or pickled file: all "not ours"
        raise ValueError(f"{path} is not a searchbench weights file (torch.load with weights_only cannot "
                         f"read it)") from None
    if not isinstance(d, dict) or d.get("family") != family or "state_dict" not in d:
        got = d.get("family") if isinstance(d, dict) else type(d).__name__
        raise ValueError(f"weights file {path} is not a {family} model (found {got!r})")
    try:
        config = dict(d["config"])
        net = build_checked(lambda: build(family, config), d["state_dict"])
    except (TypeError, RuntimeError, KeyError, ValueError) as e:
        raise ValueError(f"weights file {path} does not match its {family} configuration: "
                         f"{str(e).splitlines()[0]}") from None
    net.eval()
    return net, d
