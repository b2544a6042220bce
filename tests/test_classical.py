"""The classical evaluator: symmetry, raw-state agreement, priors, compare, capabilities."""
import random

import chess
import chess.variant
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import board
from board.convert import from_python_chess, to_python_chess
from evaluators.base import COMPARE, POLICY_VALUE, SCORE, Evaluator, EvaluatorError, Leaf, require
from evaluators.classical import ClassicalEvaluator, stm_score, white_score, white_score_raw
from evaluators.scale import cp_to_value
from tests.positions import random_position


def mirrored(pos: board.Position) -> board.Position:
    b = to_python_chess(pos)
    m = b.mirror()
    cls = chess.variant.CrazyhouseBoard if pos.variant == "crazyhouse" else chess.Board
    return from_python_chess(cls(m.fen()))


EV = ClassicalEvaluator()


def test_serves_everything_and_start_is_level() -> None:
    assert EV.serves() == frozenset({POLICY_VALUE, SCORE, COMPARE})
    for cap in (POLICY_VALUE, SCORE, COMPARE):
        require(EV, cap, "crazyhouse")
    for variant in ("chess", "crazyhouse"):
        assert white_score(board.new_position(variant)) == 0
    # Bare kings: exactly 0 (the comparator search's draw reference relies on it).
    assert white_score(board.new_position("crazyhouse", "4k3/8/8/8/8/8/8/4K3[] w - - 0 1")) == 0


@settings(max_examples=40)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 60))
def test_colour_symmetry_and_raw_state(variant: str, seed: int, plies: int) -> None:
    pos = random_position(variant, seed, plies)
    s = white_score(pos)
    assert white_score(mirrored(pos)) == -s
    assert white_score_raw(pos.raw_state(), variant == "crazyhouse") == s
    assert EV.score(pos) == stm_score(pos) == (s if pos.turn == board.WHITE else -s)
    moves = pos.legal_moves()
    if moves:
        ev = EV.evaluate([Leaf.of(pos)])[0]
        assert len(ev.priors) == len(moves)
        assert abs(sum(ev.priors) - 1.0) < 1e-9
        assert all(p > 0 for p in ev.priors)
        assert -1.0 <= ev.value <= 1.0
        assert ev.value == pytest.approx(cp_to_value(EV.score(pos), pos.variant))


def test_material_and_pockets_count() -> None:
    up_queen = board.new_position("chess", "4k3/8/8/8/8/8/8/3QK3 w - - 0 1")
    assert white_score(up_queen) > 800
    assert EV.score(board.new_position("chess", "4k3/8/8/8/8/8/8/3QK3 b - - 0 1")) < -800
    empty = board.new_position("crazyhouse", "4k3/pppppppp/8/8/8/8/PPPPPPPP/4K3[] w - - 0 1")
    knight = board.new_position("crazyhouse", "4k3/pppppppp/8/8/8/8/PPPPPPPP/4K3[N] w - - 0 1")
    assert white_score(knight) - white_score(empty) >= 300  # a piece in hand is worth at least a piece


def test_king_safety_prefers_shelter() -> None:
    sheltered = board.new_position("chess", "4k3/8/8/8/8/8/5PPP/6K1 w - - 0 1")
    exposed = board.new_position("chess", "4k3/8/8/8/8/5PPP/8/6K1 w - - 0 1")
    assert white_score(sheltered) > white_score(exposed)


def test_priors_prefer_winning_a_queen_and_safe_checks() -> None:
    pos = board.new_position("chess", "4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1")
    leaf = Leaf.of(pos)
    ev = EV.evaluate([leaf])[0]
    best = leaf.moves[max(range(len(leaf.moves)), key=lambda i: ev.priors[i])]
    assert board.move_to_uci(best) == "d2d5"
    # A drop giving check beats a quiet drop of the same piece elsewhere.
    zh = board.new_position("crazyhouse", "6k1/5ppp/8/8/8/8/5PPP/6K1[R] w - - 0 1")
    leaf = Leaf.of(zh)
    ev = EV.evaluate([leaf])[0]
    p = dict(zip((board.move_to_uci(m) for m in leaf.moves), ev.priors))
    assert p["R@a8"] > p["R@a4"]
    # A queen dropped where a pawn takes it is a bad idea.
    assert p["R@e5"] > p["R@g3"] or p["R@g3"] < max(p.values())


@settings(max_examples=25)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 40), st.integers(0, 40))
def test_compare_is_ordered_by_the_score(variant: str, seed: int, pa: int, pb: int) -> None:
    a = random_position(variant, seed, pa)
    b = random_position(variant, seed + 1, pb)
    p_ab, p_ba = EV.compare([(a.raw_state(), b.raw_state()), (b.raw_state(), a.raw_state())], variant)
    assert p_ab + p_ba == pytest.approx(1.0)
    sa, sb = white_score(a), white_score(b)
    assert (p_ab > 0.5) == (sa > sb)
    assert (p_ab == 0.5) == (sa == sb)


def test_bad_parameters_and_missing_capability() -> None:
    with pytest.raises(ValueError):
        ClassicalEvaluator(value_scale=0)

    class ValueOnly(Evaluator):
        def serves(self) -> frozenset[str]:
            return frozenset({POLICY_VALUE})

    with pytest.raises(EvaluatorError):
        require(ValueOnly(), SCORE)
