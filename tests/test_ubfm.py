"""UBFM with completion (search/ubfm.py): its values are the minimax of its own tree recomputed from
the positions, completion's resolutions are sound, the shipped mate suite is solved, completion
changes the move where a proven line exists, the limits hold, the engines play over the harness."""
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import board
from engines.base import EngineError
from engines.factory import create
from engines.registry import resolve
from experiments.harness import match as M
from experiments.harness.openings import default_suite, load_suite
from experiments.harness.store import Store
from evaluators.base import Leaf
from evaluators.classical import ClassicalEvaluator
from search.base import Limits
from search.ubfm import EXPANDED, LOSS, TERMINAL, UNKNOWN, WIN, UBFM, UBFMConfig, UBFMConfigError
from search.ubfm_tree import DEFERRED
from tests.positions import MATES, random_position
from tests.test_alphabeta import assert_forced_mate

EV = ClassicalEvaluator()
PURE = os.environ.get("SEARCHBENCH_PURE") == "1"
EST_MAX = 1.0 - 1e-6


def game_over(pos: board.Position) -> bool:
    """A game's end inside the tree by the rules (the root's own history aside)."""
    return not pos.legal_moves() or pos.is_insufficient_material() or pos.is_repetition(2) or \
        (pos.variant == "chess" and pos.halfmove_clock >= 100)


def negamax_of_tree(s: UBFM, node: int, pos: board.Position, ply: int) -> float:
    """The negamax value of ``s``'s tree below ``node`` (``pos`` its position), recomputed: every
    expanded node's children are its legal moves, a leaf's value is the evaluator's of the replayed
    position (clipped as the search clips), a terminal's the game's end by the rules; a deferred
    child (progressive widening) is outside the maximum, and a node whose scored children are all
    lost is lost by them."""
    t = s.tree
    moves = pos.legal_moves()
    over = not moves or (ply > 0 and game_over(pos))
    if t.nd_state[node] == TERMINAL or (over and node != s.root):
        assert over, pos.fen()
        return -1.0 if not moves and pos.is_check() else 0.0
    if t.nd_state[node] != EXPANDED:
        v = EV.evaluate([Leaf.of(pos)])[0].value
        return max(-EST_MAX, min(EST_MAX, v))
    c0, n = int(t.nd_child0[node]), int(t.nd_nchild[node])
    assert sorted(int(t.nd_move[c]) for c in range(c0, c0 + n)) == sorted(moves)
    best = -10.0
    deferred = 0
    for c in range(c0, c0 + n):
        pos.push(int(t.nd_move[c]))
        if t.nd_state[c] == DEFERRED:
            assert not game_over(pos), "a game's end is scored, never deferred"
            deferred += 1
        else:
            best = max(best, -negamax_of_tree(s, c, pos, ply + 1))
        pos.pop()
    assert int(t.nd_defer[node]) == deferred
    assert best > -10.0, "an expanded node has a scored child"
    assert t.nd_value[node] == pytest.approx(best, abs=1e-12), pos.fen()
    return best


def check_resolutions(s: UBFM, node: int) -> None:
    """Completion's rule at every expanded node: won iff a child is lost for its side to move,
    lost iff every child is won, with the plies to the end."""
    t = s.tree
    if t.nd_state[node] != EXPANDED:
        return
    c0, n = int(t.nd_child0[node]), int(t.nd_nchild[node])
    kids = list(range(c0, c0 + n))
    for c in kids:
        check_resolutions(s, c)
    lost = [int(t.nd_plies[c]) + 1 for c in kids if t.nd_res[c] == LOSS]
    if lost:
        assert t.nd_res[node] == WIN and t.nd_plies[node] == min(lost)
    elif any(t.nd_state[c] == DEFERRED for c in kids):
        assert t.nd_res[node] == UNKNOWN and not t.nd_frozen[node]  # a deferred child may still save it
    elif all(t.nd_res[c] == WIN for c in kids):
        assert t.nd_res[node] == LOSS and t.nd_plies[node] == 1 + max(int(t.nd_plies[c]) for c in kids)
    elif any(t.nd_res[c] == UNKNOWN for c in kids):
        assert t.nd_res[node] == UNKNOWN


@settings(max_examples=8 if PURE else 30, deadline=None)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 60),
       st.integers(50, 1500), st.booleans(), st.booleans(), st.sampled_from([(0, 0), (1, 0), (4, 0), (3, 2), (6, 5)]))
def test_values_are_the_minimax_of_the_tree(variant: str, seed: int, plies: int, nodes: int, completion: bool,
                                            descent: bool, width_widen: tuple[int, int]) -> None:
    pos = random_position(variant, seed, plies)
    if not pos.legal_moves():
        return
    fen, stack = pos.fen(), pos.move_stack
    width, widen = width_widen
    s = UBFM(EV, UBFMConfig(completion=completion, descent=descent, width=width, widen=widen))
    r = s.run(pos, Limits(nodes=nodes))
    assert pos.fen() == fen and pos.move_stack == stack
    assert r.best_move in pos.legal_moves()
    value = negamax_of_tree(s, s.root, pos, 0)
    if completion:
        check_resolutions(s, s.root)
        if s.tree.nd_res[s.root] == UNKNOWN:
            assert r.mate is None
    # the move's reported value is its child's, the root's the best of them
    assert value >= r.value - 1e-12
    if UBFMConfig().final_move == "safest" and r.mate is None:
        assert r.nodes <= max(nodes, 1 + len(pos.legal_moves()))


@pytest.mark.parametrize("variant,fen,n", MATES)
def test_the_mate_suite_is_solved(variant: str, fen: str, n: int) -> None:
    """Every mate of the shipped suite is proven (completion) by one of the shipped UBFM engines
    (``rise-ubfm`` at its default width 4, at full width as the paper's UBFM, and widened every 4
    iterations), and no engine claims a mate that is not one.  Best-first minimax follows the
    evaluator's values: the classical score leads it into the sacrifices (the mates in 3), the
    network into the quiet first moves and drops of the mates in 2; width 4 alone never looks at a
    mate whose first move has a small prior (the chess knight check of the mate in 2: full width and
    the widen schedule prove it; docs/minimax.md)."""
    found = []
    for spec, limits in (("material-ubfm", Limits(nodes=20_000)), ("rise-ubfm", Limits(evals=5_000)),
                         ("rise-ubfm:width=0", Limits(evals=5_000)), ("rise-ubfm:widen=4", Limits(evals=5_000))):
        engine = create(spec, variant)
        pos = board.new_position(variant, fen)
        engine.start(pos, limits)
        while not engine.done():
            engine.step()
        r = engine.finish()
        assert r.forfeit is None
        if r.info is not None and r.info.mate is not None:
            assert r.info.mate == n, (spec, board.move_to_uci(r.move))
            assert r.info.value == 1.0
            assert_forced_mate(pos, r.move, n)
            found.append(spec)
    assert found, "neither UBFM engine proved the mate"
    if n == 1:
        assert len(found) == 4  # a mate in one is a terminal child of the root's first expansion


def test_completion_changes_the_move_where_a_proven_line_exists() -> None:
    """Without completion the descent locks onto a line that ends in a proven draw (a repetition
    that every later iteration would choose again) and plays it; with completion the draw is closed,
    the search goes on and plays a better move."""
    pos = random_position("chess", 48, 28)  # its history holds the repetition
    assert pos.fen() == "1nbqkbnr/5p1p/4p3/ppppP1p1/P2rQ1P1/2P4P/RP1P1PB1/1NBK2NR w k - 8 15"
    plain = UBFM(EV, UBFMConfig(completion=False)).run(pos, Limits(nodes=3000))
    completed = UBFM(EV, UBFMConfig(completion=True)).run(pos, Limits(nodes=3000))
    assert plain.value == 0.0 and plain.nodes < 1000  # stuck on the draw
    assert completed.nodes > 2500 and completed.value > 0.2
    assert completed.best_move != plain.best_move


def test_a_proven_win_is_played_and_the_search_stops() -> None:
    pos = board.new_position("chess", "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    for final in ("safest", "best"):
        s = UBFM(EV, UBFMConfig(final_move=final))
        r = s.run(pos, Limits(nodes=100_000))
        assert board.move_to_uci(r.best_move) == "a1a8" and r.mate == 1
        assert r.nodes < 100  # the resolved root ends the search


def test_mated_side_reports_negative_mate() -> None:
    pos = board.new_position("chess", "k7/8/1K6/8/8/8/8/7R b - - 0 1")  # Kb8 Rh8#
    r = UBFM(EV, UBFMConfig(stop_single_move=False)).run(pos, Limits(nodes=10_000))
    assert r.mate == -1 and r.value == -1.0
    assert UBFM(EV).run(pos, Limits(nodes=10_000)).nodes == 1  # the one move played at once


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_call_and_node_limits_are_never_passed_after_the_root(variant: str) -> None:
    pos = random_position(variant, 5, 12)
    n_root = len(pos.legal_moves())
    for limits in (Limits(evals=300), Limits(nodes=300), Limits(evals=5)):
        r = UBFM(EV).run(pos.copy(), limits)
        cap = limits.evals if limits.evals is not None else limits.nodes
        assert cap is not None
        assert r.evals <= max(cap, n_root) and r.nodes <= max(cap, 1 + n_root)
        assert r.best_move in pos.legal_moves()


def test_tree_reuse_keeps_the_subtree_and_counts_it() -> None:
    pos = board.new_position("crazyhouse")
    s = UBFM(EV)
    r1 = s.run(pos, Limits(nodes=2000))
    pos.push(r1.best_move)
    pos.push(r1.pv[1])
    r2 = s.run(pos, Limits(evals=1))  # no expansion fits: the kept tree decides
    assert r2.evals == 0 and r2.nodes > 1 and r2.best_move in pos.legal_moves()
    fresh = UBFM(EV, UBFMConfig(tree_reuse=False)).run(pos, Limits(evals=1))
    assert fresh.nodes == 1 + len(pos.legal_moves())  # the root's expansion alone


def test_deterministic_and_pure_of_side_effects() -> None:
    pos = random_position("crazyhouse", 9, 25)
    a = UBFM(EV).run(pos.copy(), Limits(nodes=1500))
    b = UBFM(EV).run(pos.copy(), Limits(nodes=1500))
    assert (a.best_move, a.value, a.nodes, a.evals, a.pv) == (b.best_move, b.value, b.nodes, b.evals, b.pv)


def test_settings_are_checked() -> None:
    for bad in ({"final_move": "most"}, {"prior_weight": -1.0}, {"mate_value": 0.5}, {"max_depth": 0},
                {"priors": False, "prior_weight": 0.5}, {"draw_value": 1.0}, {"width": -1}, {"widen": -2},
                {"priors": False, "width": 4}):
        with pytest.raises(UBFMConfigError):
            UBFM(EV, UBFMConfig(**bad))  # type: ignore[arg-type]
    with pytest.raises(EngineError):
        resolve("material-ubfm:final_move=most")
    spec = resolve("rise-ubfm:final_move=best,completion=false,descent=true,prior_weight=0.2,width=8,widen=4")
    assert spec.search == "ubfm"


@pytest.mark.parametrize("spec,variant", [("material-ubfm", "chess"), ("material-ubfm", "crazyhouse"),
                                          ("rise-ubfm", "crazyhouse"), ("rise-ubfm", "chess")])
def test_engines_play_full_games_in_the_harness(spec: str, variant: str, tmp_path: Path) -> None:
    """Two games (a pair) to their end against the classical alpha-beta, pooled two at a time: no
    forfeit, every move legal (the harness checks), both stored."""
    openings = load_suite(default_suite(variant), variant)[:1]
    ours = M.Player(spec, spec, evals=96) if spec.startswith("rise") else M.Player(spec, spec, nodes=300)
    tasks = M.match_tasks("t", variant, ours, M.Player("material-ab", "material-ab", nodes=300), openings, 2)
    with Store(tmp_path / "g.sqlite") as st:
        M.play(tasks, st, concurrency=2, progress=False)
        games = st.games()
    assert len(games) == 2
    assert all(not g.reason.startswith("forfeit") for g in games), [g.reason for g in games]
    assert all(g.result in ("1-0", "0-1", "1/2-1/2") for g in games)
    assert {g.white_settings.get("search") for g in games} >= {"ubfm"} or games[0].white_settings


def _scored(s: UBFM, node: int) -> list[int]:
    t = s.tree
    c0, n = int(t.nd_child0[node]), int(t.nd_nchild[node])
    return [c for c in range(c0, c0 + n) if t.nd_state[c] != DEFERRED]


def test_progressive_widening_evaluates_the_largest_priors_first() -> None:
    """With ``width`` W the root is evaluated first (its policy), then its W children of largest
    prior in one batch; every game's end among its children is scored whatever W."""
    pos = board.new_position("chess", "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8# among its moves
    s = UBFM(EV, UBFMConfig(width=3))
    r = s.run(pos, Limits(evals=1))  # nothing after the root's first expansion fits
    assert r.evals == 1 + 3 and board.move_to_uci(r.best_move) == "a1a8" and r.mate == 1
    moves = pos.legal_moves()
    priors = EV.evaluate([Leaf.of(pos)])[0].priors
    ranked = [moves[k] for k in sorted(range(len(moves)), key=lambda k: (-priors[k], k)) if moves[k] != r.best_move]
    t = s.tree
    evaluated = {int(t.nd_move[c]) for c in _scored(s, s.root) if t.nd_state[c] != TERMINAL}
    assert evaluated == set(ranked[:3])
    assert int(t.nd_defer[s.root]) == len(moves) - 1 - 3


def test_widening_follows_its_schedule_and_keeps_the_limits() -> None:
    """Each expanded node has at most W · (1 + n // K) children scored besides its ends, the root
    more than W after enough iterations; the call limit holds after the root's first expansion."""
    pos = random_position("crazyhouse", 9, 25)
    w, k = 4, 3
    s = UBFM(EV, UBFMConfig(width=w, widen=k))
    r = s.run(pos.copy(), Limits(evals=400))
    assert r.evals <= 400
    t = s.tree
    stack = [s.root]
    while stack:
        i = stack.pop()
        if t.nd_state[i] != EXPANDED:
            continue
        kids = _scored(s, i)
        evaluated = [c for c in kids if t.nd_state[c] != TERMINAL]
        assert len(evaluated) <= w * (1 + int(t.nd_n[i]) // k) or int(t.nd_defer[i]) == 0
        stack.extend(kids)
    assert len(_scored(s, s.root)) > w
    plain = UBFM(EV, UBFMConfig()).run(pos.copy(), Limits(evals=400))
    assert r.seldepth > plain.seldepth  # narrower, so deeper for the same calls


@pytest.mark.parametrize("variant,fen,n", MATES)
def test_widening_proves_the_mates_full_width_proves(variant: str, fen: str, n: int) -> None:
    """A node is widened whenever its scored children are all closed, so completion's proofs stand:
    every mate of the suite that the full-width search proves, width 4 proves too (in fewer
    positions), and it claims no mate that is not one (a deferred child keeps a node open)."""
    full = UBFM(EV).run(board.new_position(variant, fen), Limits(nodes=3000))
    narrow = UBFM(EV, UBFMConfig(width=4)).run(board.new_position(variant, fen), Limits(nodes=3000))
    assert narrow.mate is None or narrow.mate == n
    if full.mate is not None:
        assert narrow.mate == n and narrow.nodes <= full.nodes
        assert_forced_mate(board.new_position(variant, fen), narrow.best_move, n)
