"""Quantisation-aware fine-tuning (experiments/training/qat.py) and the int8 model quantised from its
tuned copy (evaluators/neural.py: ``int8_source``, ``int8_key``)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from evaluators import nets, onnx_runtime
from evaluators.neural import qat_path
from evaluators.rise import RiseEvaluator
from experiments.training import qat
from tests.test_train import make_dataset

pytestmark = pytest.mark.skipif(onnx_runtime.available() is not None, reason="onnxruntime/onnx not installed")


def _randomised(net: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """``net`` with random batch-norm statistics and affine maps (a fresh net's are the identity)."""
    g = torch.Generator().manual_seed(seed)
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.3)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.2)
    return net.eval()


def _tiny_rise(variant: str = "chess", seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return _randomised(nets.RiseNet(nets.RiseConfig(channels=16, blocks=2, expansion_base=16, expansion_step=8,
                                                     se_blocks=1, value_hidden=8, variant=variant)), seed)


def test_fake_quantisation_is_int8_per_output_channel_and_uint8_over_the_range() -> None:
    w = torch.tensor([[1.0, -0.5, 0.26], [0.01, 0.02, -0.04]])
    q = qat.fake_int8_weight(w)
    for row, qrow in zip(w, q):  # each row on its own grid of 255 steps, its largest weight exact
        scale = float(row.abs().max()) / 127
        assert torch.allclose(qrow / scale, torch.round(qrow / scale), atol=1e-4)
        assert float(qrow.abs().max()) == pytest.approx(float(row.abs().max()))
    x = torch.linspace(-1, 3, 9)
    y = qat.fake_uint8(x, 0.0, 2.0)  # the range always holds 0; beyond it, clipped
    assert float(y.min()) == 0.0 and float(y.max()) == pytest.approx(2.0, abs=1e-6)
    assert len(torch.unique(qat.fake_uint8(torch.rand(10_000) * 2, 0.0, 2.0))) <= 256
    # straight-through gradients: the rounding passes the gradient unchanged inside the range
    xs = torch.tensor([0.3, 0.7], requires_grad=True)
    qat.fake_uint8(xs, 0.0, 1.0).sum().backward()
    assert xs.grad is not None and torch.equal(xs.grad, torch.ones(2))


@pytest.mark.parametrize("make", [_tiny_rise, lambda: _randomised(nets.SixtyFourNet(nets.SixtyFourConfig(
    channels=8, blocks=1, variant="chess")))], ids=["rise", "sixtyfour"])
def test_folding_and_writing_back_keep_the_networks_function(make) -> None:
    net = make()
    student, layers = qat.quantised_copy(net)
    planes = net.stem[0].in_channels
    x = torch.rand(5, planes, 8, 8)
    convs_and_linears = sum(isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) for m in net.modules())
    assert len(layers) == convs_and_linears
    with torch.no_grad():
        v0, p0 = net(x)
        v1, p1 = qat.restored(layers, net)(x)
        vs, ps = student(x)  # fake-quantised: near, not equal
    assert torch.allclose(v0, v1, atol=1e-5) and torch.allclose(p0, p1, atol=1e-4)
    assert float((p0 - ps).abs().max()) < 0.5 and not torch.equal(p0, ps)


def test_qat_writes_a_tuned_copy_that_int8_is_quantised_from_and_resumes(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    make_dataset(str(data), "chess", games=20)
    weights = str(tmp_path / "net.pt")
    nets.save_model(weights, "rise", _tiny_rise())
    cfg = qat.QATConfig(weights=weights, data=[str(data)], steps=6, batch=16, save_every=3, threads=1)

    calls = []
    real = qat.distillation_loss

    def killed_after_four(*a, **k):  # the run is killed at its fifth step, after the checkpoint at 3
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(qat, "distillation_loss", killed_after_four)
    with pytest.raises(KeyboardInterrupt):
        qat.run_qat(cfg, progress=False)
    partial = qat_path(weights) + ".partial"
    assert os.path.exists(partial) and torch.load(partial, weights_only=False)["step"] == 3
    monkeypatch.setattr(qat, "distillation_loss", real)
    summary = qat.run_qat(cfg, progress=False)
    assert summary["steps"] == 6 and summary["out"] == qat_path(weights) and not os.path.exists(partial)

    # inference=onnxruntime-int8-qat quantises int8 from the tuned copy; onnxruntime-int8 and float32 keep the network
    ev = RiseEvaluator.load(path=weights, inference="onnxruntime-int8-qat")
    plain_key = f"{onnx_runtime.weights_key(ev.net)}-int8-{onnx_runtime.calibration_key(ev.int8_calibration())}"
    assert ev.int8_source() is ev.net and ev.int8_key() == plain_key
    assert ev.has_tuned_copy() and ev.int8_key(tuned=True).startswith(plain_key + "-qat-")
    tuned, d = nets.load_model(qat_path(weights), "rise")
    assert d["meta"]["qat"]["source_key"] == onnx_runtime.weights_key(ev.net)
    assert ev.int8_key(tuned=True).endswith(onnx_runtime.weights_key(tuned)[:16])
    ev.warm_up()
    assert ev.inference == "onnxruntime-int8-qat" and ev.inference_error is None
    # auto runs the tuned int8 model once its verdict accepts it, and nothing else changes
    monkeypatch.setattr(onnx_runtime, "SHIPPED_VERDICTS", tmp_path / "shipped.json")
    onnx_runtime.record_int8_verdict(ev.int8_key(tuned=True), {"verdict": "accepted"}, shipped=False)
    auto = RiseEvaluator.load(path=weights)
    auto.warm_up()
    assert auto.inference == "onnxruntime-int8-qat" and auto.int8_verdict() is None
    # a tuned copy made from other weights is ignored (with a warning), never quantised: float32 runs
    nets.save_model(weights, "rise", _tiny_rise(seed=1))  # the network changed under its tuned copy
    other = RiseEvaluator.load(path=weights, inference="onnxruntime-int8-qat")
    assert not other.has_tuned_copy() and "-qat-" not in other.int8_key(tuned=True)
    other.warm_up()
    assert other.inference == "onnxruntime" and "no quantisation-tuned copy" in (other.inference_error or "")
    summary.update(qat.agreement(weights, qat_path(weights), 32, 1))
    assert 0.0 <= summary["tuned_top_move"] <= 1.0 and "quantised from the tuned copy" in qat.format_summary(summary)


def test_the_shipped_tuned_copy_is_used_and_bench_net_shows_its_int8_row(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from engines import registry
    from experiments.bench import net as bench_net

    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    ev = registry.load_evaluator("rise", None, 1, "onnxruntime-int8-qat", device="cpu", variant="chess")
    assert ev.has_tuned_copy() and "-qat-" in ev.int8_key(tuned=True)  # type: ignore[attr-defined]
    r = bench_net.run([("rise", "chess")], batches=[1], seconds=0.01, graphs=[])
    rows = {row["backend"]: row for row in r["rows"]}
    assert rows["onnxruntime-int8-qat"]["running"] == "onnxruntime-int8-qat"
    assert 0.5 < rows["onnxruntime-int8-qat"]["int8_agreement"] <= 1.0
    assert "onnxruntime-int8-qat" in bench_net.format_table(r)
