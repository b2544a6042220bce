"""Inference modes of the network evaluators (frozen TorchScript vs eager), their fallback, thread
settings, the pooled runner's tuning settings and the harness bench's tuning and tables."""
from __future__ import annotations

import io
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from board import new_position
from engines import factory, registry
from engines.base import EngineError
from engines.uci import UCIServer
from evaluators import encodings as enc
from evaluators import neural
from evaluators.base import EvaluatorError, Leaf
from evaluators.rise import RiseEvaluator
from evaluators.sixtyfour import SixtyFourEvaluator
from experiments.bench import harness as BH
from experiments.harness.match import MatchError, Player, RegistryFactory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_nets import positions, tiny  # noqa: E402

SHIPPED_RISE = os.path.join(neural.WEIGHTS_DIR, "rise_crazyhouse.pt")
CLASSES = {"rise": RiseEvaluator, "sixtyfour": SixtyFourEvaluator}
#: frozen vs eager: measured differences are ~1e-7 (values) and ~1e-6 (logits); the load-time check
#: accepts up to neural.FROZEN_ATOL, the tests ask for much less
TOL = 1e-4


def random_leaves(n: int, seed: int = 0) -> list[Leaf]:
    rng = np.random.default_rng(seed)
    out = [Leaf.of(p) for p in positions()]
    while len(out) < n:
        p = new_position("crazyhouse")
        for _ in range(int(rng.integers(0, 30))):
            moves = p.legal_moves()
            if not moves:
                break
            p.push(moves[int(rng.integers(len(moves)))])
        if p.legal_moves():
            out.append(Leaf.of(p))
    return out[:n]


def pair(family: str) -> tuple[neural.PolicyValueEvaluator, neural.PolicyValueEvaluator]:
    """The same tiny network behind a frozen and an eager evaluator."""
    cls = CLASSES[family]
    frozen, eager = cls(tiny(family)), cls(tiny(family))
    frozen.set_inference("frozen")
    eager.set_inference("eager")
    return frozen, eager


@pytest.mark.parametrize("family", ["rise", "sixtyfour"])
@pytest.mark.parametrize("batch", [1, 3, 8, 33])
def test_frozen_equals_eager_at_any_batch_size(family: str, batch: int) -> None:
    frozen, eager = pair(family)
    x = torch.from_numpy(frozen._planes(enc.raw_array([lf.state for lf in random_leaves(batch)])))
    with torch.inference_mode():
        fv, fp = frozen.forward(x)
        ev, ep = eager.forward(x)
    assert frozen.inference == "frozen" and frozen.inference_error is None
    assert eager.inference == "eager"
    assert fv.shape == ev.shape == (batch,) and fp.shape == ep.shape
    assert float((fv - ev).abs().max()) < TOL and float((fp - ep).abs().max()) < TOL


@pytest.mark.parametrize("family", ["rise", "sixtyfour"])
def test_frozen_evaluations_match_eager(family: str) -> None:
    frozen, eager = pair(family)
    leaves = random_leaves(20, seed=3)
    for max_batch in (256, 7):  # one call, and chunks of 7 (a different batch size per chunk)
        frozen.max_batch = max_batch
        a, b = frozen.evaluate(leaves), eager.evaluate(leaves)
        for x, y in zip(a, b):
            assert abs(x.value - y.value) < TOL
            assert len(x.priors) == len(y.priors) and max(abs(p - q) for p, q in zip(x.priors, y.priors)) < 1e-5
    p = positions()[1]
    assert abs(frozen.value(p) - eager.value(p)) < TOL


@pytest.mark.skipif(not os.path.exists(SHIPPED_RISE), reason="no shipped RISE weights")
def test_shipped_rise_frozen_matches_eager_and_onnxruntime_is_the_default() -> None:
    assert RiseEvaluator.load().inference_requested == "auto"  # ONNX Runtime, int8 where its SPRT accepted it
    frozen, eager = RiseEvaluator.load(inference="frozen"), RiseEvaluator.load(inference="eager")
    assert frozen.inference_requested == "frozen" and eager.inference_requested == "eager"
    leaves = random_leaves(12, seed=5)
    for x, y in zip(frozen.evaluate(leaves), eager.evaluate(leaves)):
        assert abs(x.value - y.value) < TOL and max(abs(p - q) for p, q in zip(x.priors, y.priors)) < 1e-5
    assert frozen.inference == "frozen"


def test_a_network_that_cannot_be_frozen_runs_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(net: object, examples: object) -> object:
        raise RuntimeError("tracing is not supported here\nsecond line")

    ev = RiseEvaluator(tiny("rise"))
    ev.set_inference("frozen")
    reference = RiseEvaluator(tiny("rise"))
    reference.set_inference("eager")
    monkeypatch.setattr(neural, "freeze_network", broken)
    leaves = random_leaves(4)
    got = ev.evaluate(leaves)
    assert ev.inference == "eager" and ev.inference_error == "cannot freeze: RuntimeError: tracing is not supported here"
    assert [e.value for e in got] == [e.value for e in reference.evaluate(leaves)]


def test_a_frozen_network_that_disagrees_runs_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    ev = RiseEvaluator(tiny("rise"))
    ev.set_inference("frozen")
    monkeypatch.setattr(neural, "freeze_network", lambda net, ex: (lambda x: (x, x), 0.5))
    ev.evaluate(random_leaves(2))
    assert ev.inference == "eager" and "differ from eager by 0.5" in str(ev.inference_error)
    ev.set_inference("frozen")  # asking again rebuilds (and checks) the graph
    assert ev.inference is None


def test_a_frozen_graph_that_fails_later_falls_back_to_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(x: torch.Tensor) -> object:
        raise RuntimeError("oneDNN says no")

    ev, reference = pair("rise")
    monkeypatch.setattr(neural, "freeze_network", lambda net, ex: (fails, 0.0))
    ev.set_inference("frozen")
    leaves = random_leaves(3)
    got = ev.evaluate(leaves)
    assert ev.inference == "eager" and ev.inference_error == "frozen graph failed: RuntimeError: oneDNN says no"
    assert [e.value for e in got] == [e.value for e in reference.evaluate(leaves)]
    assert [e.value for e in ev.evaluate(leaves)] == [e.value for e in got]


def test_the_real_freeze_reports_its_worst_difference() -> None:
    ev = RiseEvaluator(tiny("rise"))
    examples = ev.example_inputs()
    assert examples is not None and [len(x) for x in examples] == [8, 3]
    frozen, worst = neural.freeze_network(ev.net, examples)
    assert 0.0 <= worst < TOL
    with torch.inference_mode():
        assert frozen(examples[1])[1].shape == (3, 81 * 64)


def test_bad_modes_threads_and_batches_are_one_line_errors() -> None:
    ev = RiseEvaluator(tiny("rise"))
    with pytest.raises(EvaluatorError, match="unknown inference mode 'fast'; known: auto, onnxruntime, frozen, eager"):
        ev.set_inference("fast")
    with pytest.raises(EvaluatorError):
        RiseEvaluator.load(inference="fast")
    with pytest.raises(EvaluatorError, match="threads must be >= 1"):
        ev.set_threads(0)
    with pytest.raises(EvaluatorError, match="batch must be >= 1"):
        ev.network_throughput(0)


def test_threads_are_set_and_throughput_restores_them() -> None:
    old = torch.get_num_threads()
    try:
        ev = RiseEvaluator(tiny("rise"), threads=1)
        assert torch.get_num_threads() == 1
        ev.set_threads(2)
        assert ev.threads == 2 and torch.get_num_threads() == 2
        torch.set_num_threads(1)
        rate = ev.network_throughput(4, threads=2, seconds=0.02, trials=2)
        assert rate > 0 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(old)


@pytest.mark.skipif(not os.path.exists(SHIPPED_RISE), reason="no shipped RISE weights")
def test_inference_option_through_the_registry_and_uci() -> None:
    spec = registry.resolve("rise-mcts:inference=eager")
    assert spec.options["inference"] == "eager"
    assert registry.evaluator_settings(spec) == (None, 1, "eager", "auto")
    ev = registry.evaluator_for(spec)
    assert isinstance(ev, RiseEvaluator) and ev.inference_requested == "eager"
    with pytest.raises(EngineError, match="inference"):
        registry.resolve("rise-mcts:inference=fast")
    # classical evaluators have no network: the option is accepted and changes nothing
    assert registry.evaluator_for(registry.resolve("material-mcts:inference=eager")).name == "classical"

    base = registry.resolve("rise-mcts:nodes=20")
    out = io.StringIO()
    server = UCIServer(base, out, lambda s, v, e: factory.create(s, v, evaluator=e), registry.option_infos(base),
                       variant="crazyhouse")
    try:
        server.handle("uci")
        assert "option name inference type combo default auto var auto var onnxruntime var frozen var eager" in out.getvalue()
        assert "option name Threads type spin default 1 min 1 max 256" in out.getvalue()
        server.handle("isready")
        first = server._engine
        assert first is not None and first.evaluator.inference_requested == "auto"
        server.handle("setoption name inference value eager")
        server.handle("setoption name Threads value 2")
        server.handle("isready")
        second = server._engine
        assert second is not None and second.evaluator is not first.evaluator
        assert second.evaluator.inference_requested == "eager" and second.evaluator.threads == 2
        server.handle("setoption name cpuct value 3.0")  # a search option keeps the evaluator
        server.handle("isready")
        assert server._engine is not None and server._engine.evaluator is second.evaluator
    finally:
        server.shutdown()
        torch.set_num_threads(1)


@pytest.mark.skipif(not os.path.exists(SHIPPED_RISE), reason="no shipped RISE weights")
def test_registry_factory_overrides_threads_and_batch_and_survives_pickling() -> None:
    f = RegistryFactory(threads=2, max_batch=24)
    try:
        e1 = f(Player("A", "rise-mcts", nodes=5), "crazyhouse")
        e2 = f(Player("B", "rise-mcts:inference=eager", nodes=5), "crazyhouse")
        assert list(f.evaluators) == [("rise", None, 2, "auto", "auto", "crazyhouse", (("value_weights", None),)),
                                      ("rise", None, 2, "eager", "auto", "crazyhouse", (("value_weights", None),))]
        assert e1.evaluator.max_batch == 24 and e2.evaluator.inference_requested == "eager"  # type: ignore[attr-defined]
        g = pickle.loads(pickle.dumps(f))
        assert (g.threads, g.max_batch, g.evaluators) == (2, 24, {})
    finally:
        f.close()
        torch.set_num_threads(1)
    with pytest.raises(MatchError):
        RegistryFactory(threads=0)


TABLE = [
    {"kind": "threads", "n": 1, "batch": 8, "evals_per_s": 4000.0},
    {"kind": "threads", "n": 1, "batch": 32, "evals_per_s": 3700.0},
    {"kind": "threads", "n": 2, "batch": 8, "evals_per_s": 5500.0},
    {"kind": "threads", "n": 2, "batch": 32, "evals_per_s": 9300.0},
    {"kind": "processes", "n": 2, "batch": 8, "evals_per_s": 7000.0},
    {"kind": "processes", "n": 2, "batch": 32, "evals_per_s": 7400.0},
]


def test_tune_picks_the_measured_best_point_and_keeps_given_settings() -> None:
    p = BH.tune(TABLE, 8, games=100)
    assert (p.workers, p.threads, p.max_batch, p.concurrency) == (1, 2, 32, 8)
    assert "9300" in p.why
    p = BH.tune(TABLE, 8, games=100, threads=1)  # one thread each: processes win
    assert (p.workers, p.threads, p.max_batch) == (2, 1, 32)
    p = BH.tune(TABLE, 8, games=6, workers=2)  # 6 games over 2 processes: 3 each
    assert (p.workers, p.threads, p.max_batch, p.concurrency) == (2, 1, 32, 3)
    p = BH.tune(TABLE, 8, games=100, max_batch=8, workers=1)
    assert (p.workers, p.threads, p.max_batch, p.concurrency) == (1, 2, 8, 2)
    p = BH.tune([], 8, games=100, concurrency=5)  # nothing measured: the given or plain settings
    assert (p.workers, p.threads, p.max_batch, p.concurrency) == (1, 1, 32, 5)
    assert BH.rate_at(TABLE, "processes", 2, 8) == 7000.0 and BH.rate_at(TABLE, "threads", 4, 8) is None


@pytest.mark.skipif(not os.path.exists(SHIPPED_RISE), reason="no shipped RISE weights")
def test_network_table_measures_every_setting() -> None:
    rows = BH.network_table("rise-mcts", [1], [1, 8], seconds=0.01, rounds=1, eager_threads=[1])
    assert [(r["kind"], r["n"], r["batch"]) for r in rows] == [
        ("threads", 1, 1), ("threads", 1, 8), ("eager", 1, 1), ("eager", 1, 8)]
    assert all(r["evals_per_s"] > 0 for r in rows)
    assert BH.tune(rows, 8, 4).threads == 1  # eager rows are for comparison only
    # an engine that runs eager itself gets no second eager sweep
    assert {r["kind"] for r in BH.network_table("rise-mcts:inference=eager", [1], [8], seconds=0.01, rounds=1,
                                                eager_threads=[1])} == {"threads"}
    assert BH.engine_inference("rise-mcts") == "auto" and BH.engine_inference("rise-mcts:inference=eager") == "eager"
    assert BH.network_table("material-mcts", [1], [8]) == []  # no network
    assert BH.search_batch("rise-mcts") == 8 and BH.search_batch("rise-mcts:batch_size=3") == 3
    assert BH.search_batch("material-ab") == 1


def test_bench_runs_and_prints_every_row() -> None:
    r = BH.run("material-mcts", "crazyhouse", games=2, nodes=8, max_plies=6, uci_threads="", table=False, rounds=2)
    assert [row["key"] for row in r["rows"]] == ["pooled", "single"]
    for row in r["rows"]:
        assert len(row["rounds"]) == 2 and row["plies_per_second"] == max(row["rounds"])
    assert "rounds " in BH.format_table(r)
    assert all(row["games"] == 2 and row["forfeits"] == 0 for row in r["rows"])
    text = BH.format_table(r)
    assert "pooled 1x2 games, 1 thr" in text and "pooled vs in-process, one game, 1 thr" in text
    with pytest.raises(BH.BenchError, match="--uci-threads"):
        BH.run("material-mcts", "crazyhouse", games=2, nodes=8, uci_threads="1,x")
    with pytest.raises(BH.BenchError, match="rounds"):
        BH.run("material-mcts", "crazyhouse", games=2, nodes=8, rounds=0)
    with pytest.raises(BH.BenchError, match="--pool-batch"):
        BH.run("material-mcts", "crazyhouse", games=2, nodes=8, pool_batch="0")


def test_bench_harness_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from experiments.cli import main as cli

    args = ["bench", "harness", "--engine", "material-mcts", "--games", "2", "--nodes", "8", "--max-plies", "6",
            "--uci-threads", "", "--no-table", "--no-single", "--concurrency", "2", "--json"]
    assert cli.main(args) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["plan"]["concurrency"] == 2 and [row["key"] for row in r["rows"]] == ["pooled"]
    assert cli.main(args[:-3] + ["--concurrency", "none"]) == 2
    assert "--concurrency must be a positive integer or 'auto'" in capsys.readouterr().err
