"""Alpha-beta: agreement with brute-force minimax, mates (drop mates too), limits, determinism."""
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import board
from evaluators.base import POLICY_VALUE, Evaluator, EvaluatorError
from evaluators.classical import ClassicalEvaluator
from search.ab_config import ABConfig
from search.alphabeta import MATE, AlphaBeta
from search.base import Limits
from tests.positions import MATES, random_position

EV = ClassicalEvaluator()
PURE = os.environ.get("SEARCHBENCH_PURE") == "1"

DROP_MATE_IN_3 = ("crazyhouse", "8/6k1/8/8/8/8/8/7K[QR] w - - 0 1", 3)


def game_end(pos: board.Position, moves: list[int], ply: int) -> int | None:
    """The score of a game's end as AlphaBeta scores it (mated, stalemate, a draw inside the tree), or None."""
    if not moves:
        return -MATE + ply if pos.is_check() else 0
    if ply > 0 and (pos.is_insufficient_material() or pos.is_repetition(2)
                    or (pos.variant == "chess" and pos.halfmove_clock >= 100)):
        return 0
    return None


def minimax(pos: board.Position, depth: int, ply: int) -> int:
    """Plain negamax, no pruning, same terminal rules and leaf score as AlphaBeta."""
    moves = pos.legal_moves()
    end = game_end(pos, moves, ply)
    if end is not None:
        return end
    if depth == 0:
        return EV.score(pos)
    best = -10**9
    for m in moves:
        pos.push(m)
        best = max(best, -minimax(pos, depth - 1, ply + 1))
        pos.pop()
    return best


EXACT = ABConfig(quiescence=False, check_extension=False)


@settings(max_examples=12 if PURE else 40)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 50), st.integers(1, 3))
def test_agrees_with_minimax(variant: str, seed: int, plies: int, depth: int) -> None:
    pos = random_position(variant, seed, plies)
    if not pos.legal_moves():
        return
    if variant == "crazyhouse" or PURE:
        depth = min(depth, 2)
    fen, stack = pos.fen(), pos.move_stack
    r = AlphaBeta(EV, EXACT).run(pos, Limits(depth=depth))
    assert pos.fen() == fen and pos.move_stack == stack
    expected = minimax(pos, depth, 0)
    assert r.cp == expected
    # The best move really reaches that score.
    pos.push(r.best_move)
    assert -minimax(pos, depth - 1, 1) == expected
    pos.pop()


@pytest.mark.parametrize("variant,fen,n", MATES)
def test_finds_mates(variant: str, fen: str, n: int) -> None:
    pos = board.new_position(variant, fen)
    r = AlphaBeta(EV).run(pos, Limits(depth=2 * n))
    assert pos.fen() == board.new_position(variant, fen).fen()
    assert r.mate == n, (board.move_to_uci(r.best_move), r.cp)
    assert r.cp == MATE - (2 * n - 1)
    assert r.value == 1.0
    assert_forced_mate(pos, r.best_move, n)


def assert_forced_mate(pos: board.Position, move: int, n: int) -> None:
    """After ``move`` the opponent is mated at once (n = 1) or gets mated in n - 1."""
    pos.push(move)
    try:
        if n == 1:
            assert pos.is_checkmate()
        else:
            reply = AlphaBeta(EV).run(pos, Limits(depth=2 * n - 2))
            assert reply.mate == -(n - 1)
    finally:
        pos.pop()


@pytest.mark.slow
def test_finds_drop_mate_in_three() -> None:
    variant, fen, n = DROP_MATE_IN_3
    pos = board.new_position(variant, fen)
    r = AlphaBeta(EV).run(pos, Limits(depth=2 * n))
    assert r.mate == n


def test_mated_side_reports_negative_mate() -> None:
    pos = board.new_position("chess", "k7/8/1K6/8/8/8/8/7R b - - 0 1")  # Kb8 Rh8#
    r = AlphaBeta(EV).run(pos, Limits(depth=3))
    assert r.mate == -1 and r.value == -1.0


def test_limits_restore_and_determinism() -> None:
    pos = random_position("crazyhouse", 7, 20)
    fen, stack = pos.fen(), pos.move_stack
    a = AlphaBeta(EV).run(pos, Limits(nodes=3000))
    assert pos.fen() == fen and pos.move_stack == stack
    assert 3000 <= a.nodes <= 3001
    assert a.best_move in pos.legal_moves()
    b = AlphaBeta(EV).run(pos, Limits(nodes=3000))
    assert (a.best_move, a.cp, a.nodes, a.evals, a.pv) == (b.best_move, b.cp, b.nodes, b.evals, b.pv)
    assert a.pv[0] == a.best_move
    c = AlphaBeta(EV).run(pos, Limits(depth=2))
    assert c.depth == 2 and c.evals > 0 and c.seldepth >= 2
    t = AlphaBeta(EV).run(pos, Limits(movetime=0.05))
    assert t.best_move in pos.legal_moves() and t.pv[0] == t.best_move
    assert pos.fen() == fen and pos.move_stack == stack


def test_pv_is_legal_and_quiescence_sees_captures() -> None:
    # White to move can take a hanging queen; a depth-1 search with quiescence keeps the
    # recapture in mind (the queen is defended by a pawn: Rxd5 exd5 loses the exchange, not a queen).
    pos = board.new_position("chess", "4k3/4p3/3p4/3q4/8/8/3R4/3RK3 w - - 0 1")
    r = AlphaBeta(EV).run(pos, Limits(depth=1))
    assert board.move_to_uci(r.best_move) == "d2d5"
    check = pos.copy()
    for m in r.pv:
        assert m in check.legal_moves()
        check.push(m)


def test_options_change_nothing_but_speed() -> None:
    pos = random_position("chess", 3, 12)
    base = AlphaBeta(EV, EXACT).run(pos, Limits(depth=3))
    for cfg in (ABConfig(quiescence=False, check_extension=False, use_tt=False),
                ABConfig(quiescence=False, check_extension=False, pvs=False, killers=False, history=False),
                ABConfig(quiescence=False, check_extension=False, order_checks=True, root_priors=True)):
        r = AlphaBeta(EV, cfg).run(pos, Limits(depth=3))
        assert r.cp == base.cp


def test_errors() -> None:
    class PolicyOnly(Evaluator):
        def serves(self) -> frozenset[str]:
            return frozenset({POLICY_VALUE})

    with pytest.raises(EvaluatorError):
        AlphaBeta(PolicyOnly())
    with pytest.raises(ValueError):
        AlphaBeta(EV, ABConfig(tt_size=1000))
    with pytest.raises(ValueError):
        AlphaBeta(EV).run(board.new_position("chess"), Limits(depth=0))
    with pytest.raises(ValueError):
        AlphaBeta(EV).run(board.new_position("chess", "7k/5QQ1/8/8/8/8/8/K7 b - - 0 1"), Limits(depth=1))


def test_the_deadline_is_kept_with_a_slow_evaluator() -> None:
    # The clock is read about every millisecond at the nodes/s seen so far, not every 512 nodes: with a
    # network (a few ms a node) a fixed interval overran a 0.1 s move by several times.
    import time as _time

    import board as _board
    from search.base import Limits as _Limits
    from search.iterative import Budget

    b = Budget(512)
    b.arm(_board.new_position("chess"), _Limits(movetime=0.03), 800, _time.perf_counter())
    while not b.aborted and b.nodes < 512:
        _time.sleep(0.002)  # a node costs at least 2 ms: at most ~15 fit in the 30 ms
        b.nodes += 1
        b.check_limits()
    assert b.aborted and b.nodes < 100
    fast = Budget(512)
    fast.arm(_board.new_position("chess"), _Limits(nodes=100_000), 800, _time.perf_counter())
    for _ in range(5000):
        fast.nodes += 1
        fast.check_limits()
    assert not fast.aborted and fast.next_check > fast.nodes  # a fast core reads the clock now and then


@pytest.mark.parametrize("variant, fen", [
    ("chess", "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"),
    ("crazyhouse", "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/2N2N2/PPPP1PPP/R1BQK2R[] w KQkq - 6 5"),
])
def test_batched_leaves_search_the_same_tree(variant: str, fen: str) -> None:
    """batch_leaves sends a frontier node's children (and a quiescence node's captures) in one call:
    the move, score, PV and nodes equal the one-at-a-time search; only the evaluator calls grow."""
    from evaluators.classical import ClassicalEvaluator
    from search.ab_config import ABConfig

    ev = ClassicalEvaluator()
    one = AlphaBeta(ev, ABConfig()).run(board.new_position(variant, fen), Limits(depth=4))
    many = AlphaBeta(ev, ABConfig(batch_leaves=True)).run(board.new_position(variant, fen), Limits(depth=4))
    assert (many.best_move, many.cp, many.pv, many.nodes) == (one.best_move, one.cp, one.pv, one.nodes)
    assert many.evals >= one.evals


def test_batched_leaves_with_a_network_search_the_same_tree() -> None:
    """With RISE (TorchScript padded to whole blocks, so a position's value does not depend on its batch)
    the batched search equals the one-at-a-time search."""
    from engines import registry
    from search.ab_config import ABConfig

    rise = registry.load_evaluator("rise", None, 1, "frozen", device="cpu", variant="crazyhouse")
    rise.pad_single = True  # type: ignore[attr-defined]
    p = board.new_position("crazyhouse")
    one = AlphaBeta(rise, ABConfig()).run(p.copy(), Limits(depth=2))
    many = AlphaBeta(rise, ABConfig(batch_leaves=True)).run(p.copy(), Limits(depth=2))
    assert (many.best_move, many.cp, many.pv, many.nodes) == (one.best_move, one.cp, one.pv, one.nodes)


DEEP = ABConfig(null_move=True, lmr=True)


@pytest.mark.parametrize("variant,fen,n", MATES)
def test_null_move_and_reductions_keep_the_mates(variant: str, fen: str, n: int) -> None:
    """Null-move pruning (never in check, never twice in a row) and late-move reductions (never of a
    check, a capture or a killer) still find every mate of the suite at its depth, and the first move
    really mates."""
    pos = board.new_position(variant, fen)
    r = AlphaBeta(EV, DEEP).run(pos, Limits(depth=2 * n))
    assert r.mate == n, (board.move_to_uci(r.best_move), r.cp)
    assert_forced_mate(pos, r.best_move, n)


def test_null_move_and_reductions_reach_a_depth_with_fewer_nodes() -> None:
    """The point of both: the same nominal depth for fewer nodes (chess depth 5, crazyhouse depth 4,
    over seeded middlegame positions; measured 2-3x fewer in chess, 1.1-1.5x in crazyhouse)."""
    plain = deep = 0
    for variant, depth in (("chess", 4 if PURE else 5), ("crazyhouse", 3 if PURE else 4)):
        for seed in range(3):
            pos = random_position(variant, seed, 16)
            a = AlphaBeta(EV).run(pos, Limits(depth=depth))
            b = AlphaBeta(EV, DEEP).run(pos, Limits(depth=depth))
            assert b.depth == a.depth == depth and b.best_move in pos.legal_moves()
            plain, deep = plain + a.nodes, deep + b.nodes
    assert deep < 0.8 * plain, (deep, plain)


def test_no_null_move_with_only_pawns() -> None:
    """Zugzwang guard: with only king and pawns (none in hand) the null move is never tried, so the
    search equals the plain one node for node."""
    for variant, fen in (("chess", "8/5k2/3p4/3P4/2K5/8/8/8 w - - 0 1"),
                         ("crazyhouse", "8/5k2/3p4/3P4/2K5/8/8/8[] w - - 0 1")):
        pos = board.new_position(variant, fen)
        a = AlphaBeta(EV).run(pos, Limits(depth=6))
        b = AlphaBeta(EV, ABConfig(null_move=True)).run(pos, Limits(depth=6))
        assert (a.best_move, a.cp, a.nodes) == (b.best_move, b.cp, b.nodes)
    # a knight in hand is a piece: now the null move cuts nodes
    pos = board.new_position("crazyhouse", "8/5k2/3p4/3P4/2K5/8/8/8[Nn] w - - 0 1")
    a = AlphaBeta(EV).run(pos, Limits(depth=5))
    b = AlphaBeta(EV, ABConfig(null_move=True)).run(pos, Limits(depth=5))
    assert b.nodes < a.nodes


def test_gil_handed_over_only_where_another_thread_waits(monkeypatch):
    """The compiled search releases the GIL (``time.sleep(0)``) every ``YIELD_PERIOD`` while another
    Python thread is alive (UCI input, a watchdog), and never when it runs alone: a sleep(0) costs
    tens of microseconds. The thread count is patched (a test process may hold threads of its own)."""
    import threading
    import time

    from board.variants import CRAZYHOUSE

    calls: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda s: calls.append(s))
    pos = board.new_position(CRAZYHOUSE.name, CRAZYHOUSE.start_fen)

    def sleeps_in(seconds: float, threads: int) -> list[float]:
        calls.clear()
        monkeypatch.setattr(threading, "active_count", lambda: threads)
        AlphaBeta(ClassicalEvaluator(), ABConfig()).run(pos.copy(), Limits(movetime=seconds))
        return list(calls)

    assert sleeps_in(0.1, 1) == []
    got = sleeps_in(0.1, 2)
    assert 5 <= len(got) <= 30 and set(got) == {0}  # every 5 ms of a 0.1 s search


# ---- the policy-guided alpha-beta (policy_order, policy_prune, qs_eval) ---------------------------

def _pv_score(pos: board.Position) -> int:
    """A leaf's score as the policy-guided search takes it: the evaluator's value in centipawns."""
    from evaluators.base import Leaf, value_to_cp
    return value_to_cp(EV.evaluate([Leaf.of(pos)])[0].value, pos.variant)


def _pruned_minimax(pos: board.Position, depth: int, ply: int, share: float) -> int:
    """Negamax to ``depth`` with the leaves scored by ``_pv_score`` and, at a node one ply above the
    frontier and not in check, only the moves whose prior is at least ``share`` of the node's top
    prior (and the first by prior) searched: the rule ``policy_prune`` states."""
    from evaluators.base import Leaf
    moves = pos.legal_moves()
    end = game_end(pos, moves, ply)
    if end is not None:
        return end
    if depth == 0:
        return _pv_score(pos)
    if depth == 1 and share > 0 and ply > 0 and not pos.is_check():
        priors = EV.evaluate([Leaf.of(pos, moves)])[0].priors
        order = sorted(range(len(moves)), key=lambda i: -priors[i])
        top = max(priors)
        moves = [moves[i] for k, i in enumerate(order) if k == 0 or priors[i] >= share * top]
    best = -10**9
    for m in moves:
        pos.push(m)
        best = max(best, -_pruned_minimax(pos, depth - 1, ply + 1, share))
        pos.pop()
    return best


@settings(max_examples=6 if PURE else 20, deadline=None)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 40), st.sampled_from([0.0, 0.3]))
def test_policy_ordering_keeps_minimax_and_pruning_follows_its_rule(variant: str, seed: int, plies: int,
                                                                     share: float) -> None:
    """Ordering by the policy changes no score (the same minimax); pruning by prior share gives
    exactly the minimax of the pruned tree (depth 2, no quiescence: the rule alone)."""
    pos = random_position(variant, seed, plies)
    if not pos.legal_moves():
        return
    cfg = ABConfig(quiescence=False, check_extension=False, policy_order=True, policy_prune=share)
    r = AlphaBeta(EV, cfg).run(pos, Limits(depth=2))
    assert r.cp == _pruned_minimax(pos, 2, 0, share)


def test_quiescence_at_its_root_calls_the_network_once_a_frontier_node() -> None:
    """qs_eval = "root": the captures below a frontier node are scored by material from the one
    evaluation of that node, so the search makes fewer evaluator calls a position visited (the
    trees differ: the scores do)."""
    fewer = 0
    for seed in range(6):
        pos = random_position("crazyhouse", seed, 30)
        if not pos.legal_moves():
            continue
        full = AlphaBeta(EV, ABConfig(policy_order=True)).run(pos.copy(), Limits(depth=2))
        root = AlphaBeta(EV, ABConfig(policy_order=True, qs_eval="root")).run(pos.copy(), Limits(depth=2))
        assert root.best_move in pos.legal_moves()
        fewer += root.evals / root.nodes < full.evals / full.nodes
    assert fewer >= 5


def test_policy_settings_are_checked() -> None:
    from search.ab_config import SearchConfigError
    for bad in ({"policy_prune": 0.3}, {"policy_order": True, "policy_prune": 1.5}, {"qs_eval": "classical"}):
        with pytest.raises(SearchConfigError):
            AlphaBeta(EV, ABConfig(**bad))  # type: ignore[arg-type]
