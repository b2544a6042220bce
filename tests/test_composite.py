"""The head-swap evaluator: one network's policy with another's value (``value_weights``), usable by
any search its family serves; bad value weights are one line."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import board
from engines import factory, registry
from engines.base import EngineError
from evaluators.base import Leaf
from evaluators.composite import CompositeEvaluator
from evaluators.families import FAMILIES
from evaluators import nets
from search.base import Limits


def _net(path: Path, seed: int) -> str:
    torch.manual_seed(seed)
    net = nets.build("rise", {**FAMILIES["rise"].sizes["tiny"], "variant": "crazyhouse"})
    nets.save_model(str(path), "rise", net, {"variant": "crazyhouse", "size": "tiny"})
    return str(path)


def _leaves() -> list[Leaf]:
    out = []
    for moves in ([], ["e2e4"], ["e2e4", "d7d5", "e4d5"]):
        pos = board.new_position("crazyhouse")
        for u in moves:
            pos.push_uci(u)
        out.append(Leaf(pos.raw_state(), pos.legal_moves(), "crazyhouse"))
    return out


def test_the_priors_are_one_networks_and_the_value_the_others(tmp_path: Path) -> None:
    a, b = _net(tmp_path / "a.pt", 1), _net(tmp_path / "b.pt", 2)
    ev_a = registry.evaluator_for(registry.resolve(f"rise-mcts:weights={a}"), "crazyhouse")
    ev_b = registry.evaluator_for(registry.resolve(f"rise-mcts:weights={b}"), "crazyhouse")
    both = registry.evaluator_for(registry.resolve(f"rise-mcts:weights={a},value_weights={b}"), "crazyhouse")
    assert isinstance(both, CompositeEvaluator) and both.variant == "crazyhouse"
    leaves = _leaves()
    for x, pa, vb in zip(both.evaluate(leaves), ev_a.evaluate(leaves), ev_b.evaluate(leaves)):
        assert list(x.priors) == pytest.approx(list(pa.priors)) and x.value == pytest.approx(vb.value)
    assert any(abs(pa.value - vb.value) > 1e-3 for pa, vb in zip(ev_a.evaluate(leaves), ev_b.evaluate(leaves)))
    pos = board.new_position("crazyhouse")
    pos.push_uci("e2e4")
    assert both.score(pos) == ev_b.score(pos)
    both.max_batch = 7  # a harness's tuning reaches both networks
    assert both.policy.max_batch == both.value.max_batch == 7
    for ev in (ev_a, ev_b, both):
        ev.close()


@pytest.mark.parametrize("spec", ["rise-mcts", "rise-gumbel", "rise-ab"])
def test_any_search_of_the_family_plays_with_it(tmp_path: Path, spec: str) -> None:
    a, b = _net(tmp_path / "a.pt", 1), _net(tmp_path / "b.pt", 2)
    eng = factory.create(registry.resolve(f"{spec}:weights={a},value_weights={b}"), "crazyhouse")
    pos = board.new_position("crazyhouse")
    r = eng.play(pos, Limits(nodes=16))
    assert r.move in pos.legal_moves()
    eng.close()


def test_bad_value_weights_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "torn.pt"
    bad.write_bytes(b"not a network")
    with pytest.raises(EngineError, match="cannot load evaluator 'rise'"):
        registry.evaluator_for(registry.resolve(f"rise-mcts:value_weights={bad}"), "crazyhouse")
    with pytest.raises(EngineError, match="cannot load evaluator 'rise'"):
        registry.evaluator_for(registry.resolve(f"rise-mcts:value_weights={tmp_path / 'missing.pt'}"), "crazyhouse")
    with pytest.raises(EngineError, match="takes no option"):  # a classical evaluator has no value head to swap
        registry.load_evaluator("classical", params={"value_weights": "x.pt"})
