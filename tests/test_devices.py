"""Devices: the ``device`` option and ``--device`` on the CPU (selection, one-line errors), the GPU
code path exercised on the CPU (padding to buckets, legal logits gathered and soft-maxed with torch),
and CPU/GPU equivalence (marked ``cuda``: skipped without CUDA)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import board
from engines import factory, registry
from engines.base import EngineError
from evaluators.base import EvaluatorError, Leaf
from evaluators.devices import resolve_device
from evaluators.neural import bucket, legal_softmax, legal_softmax_torch
from evaluators.rise import RiseEvaluator
from experiments.cli import main as cli
from search.base import Limits
from tests.positions import random_position

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_device_names() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == (torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))
    with pytest.raises(EvaluatorError, match="unknown device"):
        resolve_device("gpu")
    if not torch.cuda.is_available():
        for name in ("cuda", "cuda:0", "cuda:3"):
            with pytest.raises(EvaluatorError, match="CUDA is not available") as err:
                resolve_device(name)
            assert "\n" not in str(err.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_without_cuda_is_one_line_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(EngineError, match="CUDA is not available"):
        factory.create("rise-mcts:device=cuda", "crazyhouse")
    with pytest.raises(EngineError, match="bad value"):
        registry.resolve("rise-mcts:device=gpu")
    for argv in (["match", "rise-mcts:device=cuda", "material-ab", "--nodes", "8", "--games", "2", "--db",
                  str(tmp_path / "m.sqlite")],
                 ["train", "rise", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--device", "cuda"],
                 ["bench", "harness", "--device", "cuda", "--games", "2"]):
        assert cli.main(argv) == 2
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and "CUDA is not available" in err[0], argv


def test_device_option_reaches_the_evaluator() -> None:
    e = factory.create("rise-mcts:device=cpu", "crazyhouse")
    assert e.evaluator.device == torch.device("cpu")  # type: ignore[attr-defined]
    assert "device" in {o.name for o in registry.option_infos(registry.resolve("rise-mcts"))}
    e.close()


def test_legal_softmax_on_the_device_equals_numpy() -> None:
    rng = np.random.default_rng(1)
    counts = np.array([3, 0, 7, 1, 30])
    logits = rng.normal(0, 3, size=(len(counts), 64)).astype(np.float32)
    seg = np.repeat(np.arange(len(counts)), counts)
    idx = rng.integers(0, 64, size=len(seg))
    ref = legal_softmax(logits, seg, idx, counts)
    got = legal_softmax_torch(torch.from_numpy(logits), torch.from_numpy(seg), torch.from_numpy(idx),
                              len(counts)).numpy()
    start = 0
    for i, c in enumerate(counts):
        assert np.allclose(got[start:start + c], ref[i], atol=1e-6)
        start += c


def test_buckets() -> None:
    assert [bucket(n) for n in (1, 2, 3, 8, 9, 100, 256, 1000, 5000)] == [1, 2, 4, 8, 16, 128, 256, 1024, 5000]


class _AsIfOnGPU(RiseEvaluator):
    """The GPU path (padding, gather and softmax with torch, values copied back) run on the CPU."""

    @property
    def on_gpu(self) -> bool:
        return True


def _leaves(variant: str, n: int) -> list[Leaf]:
    out = []
    for s in range(n):
        p = random_position(variant, s, 10 + s % 23)
        if p.legal_moves():
            out.append(Leaf.of(p, p.legal_moves()))
    return out


@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_the_gpu_code_path_gives_the_cpu_answers(variant: str) -> None:
    ref = RiseEvaluator.load(variant=variant, device="cpu", inference="eager")
    gpu_path = _AsIfOnGPU(ref.net, device="cpu", half="off")
    gpu_path.set_inference("eager")
    leaves = _leaves(variant, 21)  # 21: padded to 32 on the GPU path
    a, b = ref.evaluate(leaves), gpu_path.evaluate(leaves)
    for x, y in zip(a, b):
        assert x.value == pytest.approx(y.value, abs=1e-5)
        assert np.allclose(x.priors, y.priors, atol=1e-5)
        assert int(np.argmax(x.priors)) == int(np.argmax(y.priors))


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_cpu_and_gpu_evaluations_agree(variant: str) -> None:
    cpu = RiseEvaluator.load(variant=variant, device="cpu", inference="eager")
    gpu = RiseEvaluator.load(variant=variant, device="cuda", half="off")
    leaves = _leaves(variant, 100)
    a, b = cpu.evaluate(leaves), gpu.evaluate(leaves)
    top = np.mean([int(np.argmax(x.priors)) == int(np.argmax(y.priors)) for x, y in zip(a, b)])
    assert top >= 0.99
    assert max(abs(x.value - y.value) for x, y in zip(a, b)) < 1e-2
    half = RiseEvaluator.load(variant=variant, device="cuda", half="auto")
    half.evaluate(leaves[:4])
    assert half.half_agreement is not None


@cuda
@pytest.mark.cuda
def test_gpu_search_and_training_step(tmp_path: Path) -> None:
    e = factory.create("rise-mcts:device=cuda", "crazyhouse")
    r = e.play(board.new_position("crazyhouse"), Limits(nodes=64))
    assert r.forfeit is None
    e.close()
    from experiments.training import train
    from tests.test_train import make_dataset

    make_dataset(str(tmp_path / "data"), "crazyhouse")
    for model in ("rise", "deepchess"):
        m = train.train(train.TrainConfig(model=model, data=[str(tmp_path / "data")], out=str(tmp_path / model),
                                          size="tiny", epochs=1, ae_epochs=1, val_fraction=0.3, select_fraction=0.2,
                                          device="cuda", bf16=True), progress=False)
        assert m["device"].startswith("cuda")
    cpu = RiseEvaluator.load(str(tmp_path / "rise" / "model.pt"), device="cpu")
    assert cpu.evaluate(_leaves("crazyhouse", 3))  # trained on the GPU, played on the CPU
