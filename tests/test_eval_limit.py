"""The evaluator-call limit (``Limits.evals``): the cost axis on which networks are compared."""
from __future__ import annotations

import pytest

import board
from engines import factory
from evaluators.classical import ClassicalEvaluator
from search.ab_config import ABConfig
from search.alphabeta import AlphaBeta
from search.base import Limits
from search.comparator import ComparatorAlphaBeta
from search.mcts import MCTS, MCTSConfig
from tests.positions import random_position


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
@pytest.mark.parametrize("budget", [1, 7, 100, 333])
def test_mcts_spends_exactly_its_evaluations(variant: str, budget: int) -> None:
    pos = random_position(variant, 5, 10)
    r = MCTS(ClassicalEvaluator(), MCTSConfig()).run(pos, Limits(evals=budget))
    assert r.evals == budget and r.nodes >= r.evals


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_alpha_beta_searches_stop_at_their_evaluations(variant: str) -> None:
    pos = random_position(variant, 9, 16)
    for budget in (50, 500, 3000):
        r = AlphaBeta(ClassicalEvaluator(), ABConfig()).run(pos.copy(), Limits(evals=budget))
        assert budget <= r.evals <= budget + 1 and r.best_move in pos.legal_moves()
    r = ComparatorAlphaBeta(ClassicalEvaluator()).run(pos.copy(), Limits(evals=40))
    assert 40 <= r.evals <= 41


def test_evals_as_an_engine_option_and_a_player_limit() -> None:
    e = factory.create("material-mcts:evals=64", "chess")
    r = e.play(board.new_position("chess"), Limits())
    assert r.info is not None and r.info.evals == 64
    with pytest.raises(Exception, match="evaluator-call limit"):
        factory.create("fairy-stockfish", "chess").check_limits(Limits(evals=10))
