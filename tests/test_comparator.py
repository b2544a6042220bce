"""DeepChess comparator alpha-beta: agrees with alpha-beta when compare comes from the same scores."""
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import board
from evaluators.base import SCORE, Evaluator, EvaluatorError
from evaluators.classical import ClassicalEvaluator, white_score_raw
from search.ab_config import ABConfig
from search.alphabeta import AlphaBeta
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


class _Recording(ClassicalEvaluator):
    """The classical evaluator, remembering every position it was asked to compare."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, ...]] = set()

    def compare(self, pairs, variant):  # type: ignore[no-untyped-def]
        for a, b in pairs:
            self.seen.add(tuple(a))
            self.seen.add(tuple(b))
        return super().compare(pairs, variant)


@pytest.mark.parametrize("budget", [8, 16, 40])
def test_a_budget_below_the_legal_moves_plays_an_evaluated_move(budget: int) -> None:
    """Depth 1 cannot finish: the move played is the best of the root moves searched, and its
    position was compared (not the first capture-ordered move, unevaluated)."""
    pos = board.new_position("crazyhouse", "r1bqkb1r/pppp1ppp/2n2n2/4p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R[Pp] w KQkq - 0 4")
    assert len(pos.legal_moves()) > budget
    ev = _Recording()
    s = ComparatorAlphaBeta(ev)
    r = s.run(pos, Limits(nodes=budget))
    after = pos.copy()
    after.push(r.best_move)
    assert tuple(after.raw_state()) in ev.seen
    assert r.evals > 0 and r.depth == 0
    # the best (for White, by the comparator's own scores) of the root moves it completed
    searched = s._core.ordered(pos.legal_moves(), 0)[: r.nodes - 1]
    def score(m: int) -> int:
        p = pos.copy()
        p.push(m)
        return white_score_raw(p.raw_state(), True)
    assert score(r.best_move) == max(score(m) for m in searched)


def test_a_cut_second_iteration_keeps_a_move_that_beat_the_first() -> None:
    """A budget that ends inside depth 2 plays the best move depth 2 completed, which is at least
    the depth-1 move searched first (so never worse by depth 2's own judgement)."""
    pos = random_position("chess", 5, 12)
    full1 = ComparatorAlphaBeta(EV).run(pos, Limits(depth=1))
    full2 = ComparatorAlphaBeta(EV).run(pos, Limits(depth=2))
    r = ComparatorAlphaBeta(EV).run(pos, Limits(nodes=full1.nodes + (full2.nodes - full1.nodes) // 2))
    assert r.depth == 1 and r.best_move == r.pv[0]

    def value2(m: int) -> int:  # the move's depth-2 value for the side to move (alpha-beta = comparator here)
        p = pos.copy()
        p.push(m)
        return -AlphaBeta(EV, EXACT).run(p, Limits(depth=1)).cp if p.legal_moves() else 0

    assert value2(r.best_move) >= value2(full1.best_move)


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_more_nodes_play_stronger_in_matches(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The comparator is monotone in its budget again (issue 21): with the shipped crazyhouse
    DeepChess network, 256 nodes scores above 50% against 64, and 1,024 against 256 (24 games each,
    colour-reversed pairs on distinct openings)."""
    from experiments.harness import match as M
    from experiments.harness.openings import default_suite, load_suite, order
    from experiments.harness.store import Store

    ops = order(load_suite(default_suite("crazyhouse"), "crazyhouse"), 12, 7)
    for low, high in ((64, 256), (256, 1024)):
        a = M.Player(f"dc@{high}", "deepchess-ab", nodes=high)
        b = M.Player(f"dc@{low}", "deepchess-ab", nodes=low)
        tasks = M.match_tasks("mono", "crazyhouse", a, b, ops, 24, seed=1)
        with Store(tmp_path / f"{low}-{high}.sqlite") as st:
            M.play(tasks, st, concurrency=4, adjudication=M.Adjudication(max_plies=300), progress=False)
            score = sum(g.score_for(a.name) for g in st.games())
        assert score > 12, (low, high, score)
