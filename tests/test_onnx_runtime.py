"""The ONNX Runtime backend (issue 23): outputs equal eager torch on every shipped policy-value
network, the export cache is keyed and rebuilt when corrupt, and bad requests are one line."""
from __future__ import annotations

import os
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from board import new_position
from engines import factory, registry
from evaluators import neural, onnx_runtime
from evaluators.base import EvaluatorError, Leaf
from search.base import Limits

pytestmark = pytest.mark.skipif(onnx_runtime.available() is not None, reason="onnxruntime/onnx not installed")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("family, variant", [("rise", "crazyhouse"), ("rise", "chess"), ("sixtyfour", "chess"),
                                             ("sixtyfour", "crazyhouse")])
def test_onnxruntime_matches_eager_on_the_shipped_weights(family: str, variant: str) -> None:
    ev = registry.load_evaluator(family, None, 1, "onnxruntime", device="cpu", variant=variant)
    eager = registry.load_evaluator(family, None, 1, "eager", device="cpu", variant=variant)
    p = new_position(variant)
    leaves = []
    for i in range(24):  # positions along a game, batched together
        moves = p.legal_moves()
        leaves.append(Leaf.of(p, moves))
        p.push(moves[(7 * i) % len(moves)])
    got, ref = ev.evaluate(leaves), eager.evaluate(leaves)
    assert ev.inference == "onnxruntime" and ev.inference_error is None
    for a, b in zip(got, ref):
        assert abs(a.value - b.value) < 1e-4
        assert np.argmax(a.priors) == np.argmax(b.priors) and np.allclose(a.priors, b.priors, atol=1e-4)


def test_the_export_is_cached_by_the_weights_and_a_corrupt_entry_is_rebuilt(_cache: Path) -> None:
    ev = registry.load_evaluator("rise", None, 1, "onnxruntime", device="cpu", variant="crazyhouse")
    ev.warm_up()
    files = list((_cache / "onnx").glob("*.onnx"))
    assert len(files) == 1 and files[0].stem == onnx_runtime.weights_key(ev.net)
    again = registry.load_evaluator("rise", None, 1, "onnxruntime", device="cpu", variant="crazyhouse")
    again.warm_up()
    assert again._forward.cached  # type: ignore[union-attr]
    files[0].write_bytes(b"not a model")
    third = registry.load_evaluator("rise", None, 1, "onnxruntime", device="cpu", variant="crazyhouse")
    third.warm_up()
    assert not third._forward.cached and third.inference == "onnxruntime"  # type: ignore[union-attr]
    assert files[0].stat().st_size > 1000  # rewritten
    other = registry.load_evaluator("rise", None, 1, "onnxruntime", device="cpu", variant="chess")
    assert onnx_runtime.weights_key(other.net) != files[0].stem


def test_a_session_that_disagrees_falls_back_to_torchscript(monkeypatch: pytest.MonkeyPatch) -> None:
    real = onnx_runtime.OrtForward.__call__

    def off(self: onnx_runtime.OrtForward, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(t + 0.5 for t in real(self, x))

    monkeypatch.setattr(onnx_runtime.OrtForward, "__call__", off)
    ev = registry.load_evaluator("rise", None, 1, "onnxruntime", device="cpu", variant="crazyhouse")
    ev.warm_up()
    assert ev.inference == "frozen" and "onnxruntime outputs differ" in str(ev.inference_error)


def test_missing_package_and_unknown_mode_are_one_line_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EvaluatorError, match="unknown inference mode 'onnx'"):
        neural.check_inference("onnx")
    monkeypatch.setattr(onnx_runtime, "available", lambda: "inference=onnxruntime needs the onnxruntime and onnx "
                                                           "packages (onnxruntime is missing)")
    with pytest.raises(EvaluatorError, match="onnxruntime is missing"):
        neural.check_inference("onnxruntime")


def test_a_match_and_uci_take_the_option() -> None:
    from experiments.cli.main import main

    assert main(["engines", "rise-mcts:inference=onnxruntime"]) == 0
    e = factory.create("rise-mcts:inference=onnxruntime", "crazyhouse")
    r = e.play(new_position("crazyhouse"), Limits(nodes=64))
    assert r.forfeit is None and e.evaluator.inference == "onnxruntime"


def test_int8_runs_when_asked_and_auto_runs_it_only_where_its_verdict_accepted_it(
        monkeypatch: pytest.MonkeyPatch, _cache: Path) -> None:
    from evaluators import onnx_runtime

    monkeypatch.setattr(onnx_runtime, "SHIPPED_VERDICTS", _cache / "shipped-verdicts.json")
    # asked for, int8 runs (no agreement gate: strength decides, accept-int8), near float32's outputs
    ev = registry.load_evaluator("rise", None, 1, "onnxruntime-int8", device="cpu", variant="crazyhouse")
    eager = registry.load_evaluator("rise", None, 1, "eager", device="cpu", variant="crazyhouse")
    p = new_position("crazyhouse")
    leaves = [Leaf.of(p, p.legal_moves())]
    got, ref = ev.evaluate(leaves)[0], eager.evaluate(leaves)[0]
    assert ev.inference == "onnxruntime-int8" and ev.inference_error is None
    assert abs(got.value - ref.value) < 0.2 and np.abs(np.array(got.priors) - np.array(ref.priors)).max() < 0.1
    assert any("-int8-" in q.name for q in (_cache / "onnx").iterdir())  # calibrated model cached by its sample
    agreement, worst = ev.int8_agreement_of()  # information for bench net
    assert 0.5 < agreement <= 1.0 and worst < 0.5
    # auto: float32 without a verdict, or with a rejecting one; int8 once one accepts it
    key = ev.int8_key()
    assert key.startswith(onnx_runtime.weights_key(ev.net) + "-int8-") and ev.int8_verdict() is None

    def auto() -> str | None:
        a = registry.load_evaluator("rise", None, 1, None, device="cpu", variant="crazyhouse")
        a.warm_up()
        return a.inference

    assert auto() == "onnxruntime"
    onnx_runtime.record_int8_verdict(key, {"verdict": "rejected"}, shipped=True)
    assert auto() == "onnxruntime"
    onnx_runtime.record_int8_verdict(key, {"verdict": "accepted"}, shipped=False)  # the cache's overrides
    assert auto() == "onnxruntime-int8" and ev.int8_verdict() == {"verdict": "accepted"}
    # a verdict for another calibration (or a damaged file) does not count
    onnx_runtime.user_verdicts().write_text("{not json")
    with pytest.warns(UserWarning, match="ignoring int8 verdicts"):
        assert auto() == "onnxruntime"


@pytest.mark.parametrize("family, variant", [("rise", "crazyhouse"), ("sixtyfour", "chess")])
def test_onnxruntime_outputs_do_not_depend_on_the_batch_so_batches_are_not_padded(family: str, variant: str) -> None:
    ev = registry.load_evaluator(family, None, 1, "onnxruntime", device="cpu", variant=variant)
    ev.pad_single = True
    x = ev.example_planes(5)
    t, n = ev.to_device(x)
    assert ev.inference in neural.BATCH_INVARIANT and (len(t), n) == (5, 5)  # no padding to a multiple of 8
    planes = torch.from_numpy(ev._planes(np.stack([p.raw_state() for p in ev.sample_positions(40)])))
    with torch.inference_mode():
        whole = [o.numpy() for o in ev.forward(planes)]
        for b in (1, 3, 7, 8, 9):
            parts = [[o.numpy() for o in ev.forward(planes[i:i + b])] for i in range(0, len(planes), b)]
            for k in range(2):  # bit-identical, whatever the batch a position came in
                assert np.array_equal(np.concatenate([p[k] for p in parts]), whole[k])
    frozen = registry.load_evaluator(family, None, 1, "frozen", device="cpu", variant=variant)
    frozen.pad_single = True
    assert len(frozen.to_device(x)[0]) == 8  # TorchScript still pads (oneDNN's blocks of 4 and 8)


def test_deepchess_runs_its_tower_and_head_in_onnxruntime_and_matches_eager() -> None:
    ort_ev = registry.load_evaluator("deepchess", None, 1, "onnxruntime", device="cpu", variant="crazyhouse")
    eager = registry.load_evaluator("deepchess", None, 1, "eager", device="cpu", variant="crazyhouse")
    frozen = registry.load_evaluator("deepchess", None, 1, "frozen", device="cpu", variant="crazyhouse")
    p = new_position("crazyhouse")
    states = []
    for i in range(20):
        states.append(p.raw_state())
        moves = p.legal_moves()
        p.push(moves[(3 * i) % len(moves)])
    pairs = [(states[i], states[(i * 7 + 3) % 20]) for i in range(20)]
    got, ref, fro = ort_ev.compare(pairs, "crazyhouse"), eager.compare(pairs, "crazyhouse"), frozen.compare(pairs, "crazyhouse")
    assert ort_ev.inference == "onnxruntime" and eager.inference == frozen.inference == "eager"
    assert fro == ref  # frozen is eager for DeepChess (the shipped reports' games)
    assert max(abs(a - b) for a, b in zip(got, ref)) < 1e-5
    assert abs(ort_ev.score(p) - eager.score(p)) <= 1
    assert max(abs(a - b) for a, b in zip(ort_ev.white_probability(states), eager.white_probability(states))) < 1e-5


def test_deepchess_falls_back_to_eager_when_the_sessions_disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    real = onnx_runtime.OrtForward.__call__

    def off(self: onnx_runtime.OrtForward, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(t + 0.5 for t in real(self, *xs))

    monkeypatch.setattr(onnx_runtime.OrtForward, "__call__", off)
    ev = registry.load_evaluator("deepchess", None, 1, "onnxruntime", device="cpu", variant="crazyhouse")
    ev.warm_up()
    assert ev.inference == "eager" and "onnxruntime outputs differ" in str(ev.inference_error)


def test_the_bughouse_net_runs_in_onnxruntime_and_matches_eager() -> None:
    from board.bughouse import BughouseGame, leaf_state, sit_move, two_board_move
    from evaluators import bughouse_net as bn

    ev, eager = bn.BughouseNetEvaluator.load(), bn.BughouseNetEvaluator.load(inference="eager")
    g = BughouseGame()
    g.push_str("A:e2e4")
    g.push_str("B:d2d4")
    leaves = [Leaf(leaf_state(g, f), [two_board_move(b, m) for b in (0, 1) for m in g.legal_moves(b)] + [sit_move(1)],
                   "bughouse") for f in (0, 1)]
    got, ref = ev.evaluate(leaves), eager.evaluate(leaves)
    assert ev.inference == "onnxruntime" and eager.inference == "eager"
    for a, b in zip(got, ref):
        assert abs(a.value - b.value) < 1e-5 and np.allclose(a.priors, b.priors, atol=1e-5)
    with pytest.raises(EvaluatorError, match="unknown inference mode"):
        bn.BughouseNetEvaluator.load(inference="fast")


def test_bench_net_measures_every_backend_and_the_other_networks(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.bench import net as bench_net
    from experiments.cli.main import main

    r = bench_net.run([("rise", "crazyhouse")], batches=[1, 2], seconds=0.01,
                      graphs=["deepchess_crazyhouse/tower", "deepchess_crazyhouse/head", "bughouse_lazybug"])
    got = {(row["network"], row["backend"]): row for row in r["rows"]}
    # the int8 model quantised from the shipped network's quantisation-tuned copy (NAME.qat.pt) is a row
    # too, where the shipped network has one
    from evaluators.families import WEIGHTS_DIR, shipped_name
    from evaluators.neural import qat_path

    qat = os.path.exists(qat_path(os.path.join(WEIGHTS_DIR, shipped_name("rise", "crazyhouse"))))
    assert {b for n, b in got if n == "rise_crazyhouse"} == {"onnxruntime", "frozen", "eager", "onnxruntime-int8",
                                                             *(["onnxruntime-int8-qat"] if qat else [])}
    for name in ("deepchess_crazyhouse/tower", "deepchess_crazyhouse/head", "bughouse_lazybug"):
        assert got[(name, "frozen")]["running"] == "eager" and got[(name, "onnxruntime")]["running"] == "onnxruntime"
        assert got[(name, "frozen")]["ratio_to_torchscript"]["1"] == 1.0 and got[(name, "onnxruntime")]["flops"] > 0
    assert got[("deepchess_crazyhouse/head", "onnxruntime")]["flops"] < got[("rise_crazyhouse", "frozen")]["flops"]
    text = bench_net.format_table(r)
    assert "deepchess_crazyhouse/head" in text and "bughouse_lazybug" in text
    assert main(["bench", "net", "--network", "deepchess_chess", "--batches", "1", "--seconds", "0.01", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {row["network"] for row in rows} == {"deepchess_chess/tower", "deepchess_chess/head"}
