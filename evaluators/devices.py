"""Where a network runs: ``auto`` (CUDA when there is one, else the CPU), ``cpu``, ``cuda`` or
``cuda:N``.  One parser for the evaluators' ``device`` option and the ``--device`` of ``train``,
``bughouse-train``, ``agreement`` and ``bench``; an unusable device is one line
(:class:`~evaluators.base.EvaluatorError`), never a CUDA traceback."""
from __future__ import annotations

import re
from typing import Final

import torch

from evaluators.base import EvaluatorError

DEVICE_CHOICES: Final = ("auto", "cpu", "cuda", "cuda:N")
_CUDA = re.compile(r"^cuda(:(\d+))?$")


def resolve_device(text: str | None = "auto") -> torch.device:
    """The torch device ``text`` names (see the module docstring)."""
    t = (text or "auto").strip().lower()
    if t == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if t == "cpu":
        return torch.device("cpu")
    m = _CUDA.match(t)
    if m is None:
        raise EvaluatorError(f"unknown device {text!r}; known: {', '.join(DEVICE_CHOICES)}")
    if not torch.cuda.is_available():
        raise EvaluatorError(f"device {text!r}: CUDA is not available here (torch {torch.__version__}, "
                             f"{'a CPU build' if torch.version.cuda is None else 'no GPU found'}); use cpu or auto")
    index = int(m.group(2)) if m.group(2) is not None else 0
    if index >= torch.cuda.device_count():
        raise EvaluatorError(f"device {text!r}: only {torch.cuda.device_count()} CUDA device(s) here")
    return torch.device("cuda", index)

