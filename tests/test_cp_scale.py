"""One value <-> centipawn scale for every paradigm: an evaluator reports the same centipawns for a
position under MCTS and under alpha-beta, and every search's reported cp is its value on the scale,
so the harness's adjudication thresholds (600 cp to resign, 20 cp for a draw) mean the same for all."""
from __future__ import annotations

import random

import pytest

import board
from engines import factory
from evaluators.classical import ClassicalEvaluator
from evaluators.scale import CP_PROVEN, cp_to_value, value_to_cp
from experiments.harness.tasks import Adjudication
from search.ab_config import ABConfig
from search.alphabeta import AlphaBeta
from search.base import Limits
from search.mcts import MCTS, MCTSConfig
from tests.positions import random_position

QUIET = [("chess", board.STARTING_FEN), ("crazyhouse", board.CRAZYHOUSE_STARTING_FEN),
         ("chess", "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")]


@pytest.mark.parametrize("variant, fen", QUIET)
def test_the_same_evaluator_reports_the_same_cp_under_mcts_and_alpha_beta(variant: str, fen: str) -> None:
    """One ply, both ways: alpha-beta's max over the children's static scores, and MCTS that visits
    every child once (optimistic first-play urgency, a vanishing exploration term) and picks by Q."""
    ev = ClassicalEvaluator()
    pos = board.new_position(variant, fen)
    k = len(pos.legal_moves())
    ab = AlphaBeta(ev, ABConfig(quiescence=False, check_extension=False, use_tt=False))
    r_ab = ab.run(pos.copy(), Limits(depth=1))
    cfg = MCTSConfig.of(fpu=1.0, cpuct_init=1e-9, cpuct_schedule=False, u_divisor=False, batch_size=1,
                     check_enhancement=False, fix_checkmates=False, solver=False, transposition_table=False,
                     q_pv=False)
    mcts = MCTS(ev, cfg, random.Random(1))
    r_mcts = mcts.run(pos.copy(), Limits(nodes=k + 1))
    assert sorted(n for _, n, _, _ in mcts.root_stats()) == [1] * k  # every child exactly once
    assert abs(r_mcts.cp - r_ab.cp) <= 1, (r_mcts.cp, r_ab.cp)
    assert r_mcts.value == pytest.approx(r_ab.value, abs=2e-3)


def _assert_on_the_scale(r: object, variant: str) -> None:
    cp, value, mate = r.cp, r.value, r.mate  # type: ignore[attr-defined]
    if mate is not None or abs(cp) >= CP_PROVEN:
        assert abs(value) == pytest.approx(1.0)
        return
    assert abs(value_to_cp(value, variant) - cp) <= 1, (cp, value)
    assert cp_to_value(cp, variant) == pytest.approx(value, abs=1e-2)


@pytest.mark.parametrize("engine", ["material-ab", "material-mcts", "rise-mcts", "rise-ab", "sixtyfour-mcts",
                                    "deepchess-ab:depth=1"])
@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_every_paradigm_reports_cp_on_the_one_scale(engine: str, variant: str) -> None:
    e = factory.create(engine, variant)
    try:
        for seed in (1, 2):
            pos = random_position(variant, seed, 12)
            if not pos.legal_moves():
                continue
            r = e.play(pos, Limits(nodes=60))
            assert r.forfeit is None and r.info is not None
            _assert_on_the_scale(r.info, variant)
    finally:
        e.close()


def test_adjudication_thresholds_are_values_on_the_scale() -> None:
    adj = Adjudication()
    # the resign threshold is the same value for every paradigm of a variant
    assert cp_to_value(adj.resign_cp, "crazyhouse") == pytest.approx(1 - 1.2 ** -6)
    assert cp_to_value(adj.resign_cp, "chess") == pytest.approx(1 - 1.4 ** -6)
    assert value_to_cp(cp_to_value(adj.draw_cp, "chess"), "chess") == adj.draw_cp
