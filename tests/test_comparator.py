"""DeepChess comparator alpha-beta: agrees with alpha-beta when compare comes from the same scores."""
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import board
from evaluators.base import SCORE, Evaluator, EvaluatorError
from evaluators.classical import ClassicalEvaluator, white_score_raw
from search.alphabeta import ABConfig, AlphaBeta
from search.base import Limits
from search.comparator import BLACK_MATED, POSITION, WHITE_MATED, ComparatorAlphaBeta, ComparatorConfig
from tests.positions import random_position

EV = ClassicalEvaluator()
PURE = os.environ.get("SEARCHBENCH_PURE") == "1"
EXACT = ABConfig(quiescence=False, check_extension=False)


def item_score(search: ComparatorAlphaBeta, pos: board.Position) -> int:
    """The alpha-beta score (side to move) of the item the comparator search ended in."""
    item = search.best_item
    assert item is not None
    if item.kind == POSITION:
        s = white_score_raw(item.state, pos.variant == "crazyhouse")
        return s if pos.turn == board.WHITE else -s
    assert item.kind in (WHITE_MATED, BLACK_MATED)
    we_win = (item.kind == BLACK_MATED) == (pos.turn == board.WHITE)
    return 30000 - item.plies if we_win else -30000 + item.plies


@settings(max_examples=10 if PURE else 30)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 50), st.integers(1, 3))
def test_agrees_with_alphabeta(variant: str, seed: int, plies: int, depth: int) -> None:
    pos = random_position(variant, seed, plies)
    if not pos.legal_moves():
        return
    if variant == "crazyhouse" or PURE:
        depth = min(depth, 2)
    fen, stack = pos.fen(), pos.move_stack
    cs = ComparatorAlphaBeta(EV)
    r = cs.run(pos, Limits(depth=depth))
    assert pos.fen() == fen and pos.move_stack == stack
    ab = AlphaBeta(EV, EXACT).run(pos, Limits(depth=depth))
    assert item_score(cs, pos) == ab.cp
    # Iterative deepening stops early once it has proven a mate (e.g. a mate in one at depth 1).
    assert (r.depth == depth or (r.mate is not None and r.depth < depth)) and r.best_move == r.pv[0]
    # The principal variation is legal and really ends in that item.
    end = pos.copy()
    for m in r.pv:
        assert m in end.legal_moves()
        end.push(m)


@pytest.mark.parametrize("variant,fen,n", [
    ("chess", "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", 1),
    ("chess", "7k/8/5K2/8/8/8/8/6R1 w - - 0 1", 2),
    ("crazyhouse", "6rk/6pp/8/8/8/8/8/6K1[N] w - - 0 1", 1),
    ("crazyhouse", "5rk1/5p1p/6p1/8/8/8/8/6K1[QB] w - - 0 1", 2),
    ("chess", "k7/8/1K6/8/8/8/8/7R b - - 0 1", -1),
])
def test_mates(variant: str, fen: str, n: int) -> None:
    pos = board.new_position(variant, fen)
    r = ComparatorAlphaBeta(EV).run(pos, Limits(depth=2 * abs(n) if n > 0 else 3))
    assert r.mate == n
    assert r.value == (1.0 if n > 0 else -1.0)


def test_node_limit_determinism_and_errors() -> None:
    pos = random_position("crazyhouse", 11, 16)
    a = ComparatorAlphaBeta(EV).run(pos, Limits(nodes=500))
    b = ComparatorAlphaBeta(EV).run(pos, Limits(nodes=500))
    assert a.best_move in pos.legal_moves()
    assert (a.best_move, a.nodes, a.evals, a.pv) == (b.best_move, b.nodes, b.evals, b.pv)
    assert a.nodes <= 500

    class ScoreOnly(Evaluator):
        def serves(self) -> frozenset[str]:
            return frozenset({SCORE})

    with pytest.raises(EvaluatorError):
        ComparatorAlphaBeta(ScoreOnly())
    with pytest.raises(ValueError):
        ComparatorAlphaBeta(EV, ComparatorConfig(depth=0))
    with pytest.raises(ValueError):
        ComparatorAlphaBeta(EV).run(pos, Limits(depth=0))
