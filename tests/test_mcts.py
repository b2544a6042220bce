"""PUCT MCTS: mates with the solver, never allowing a mate in one, determinism, each switch's
direction on a constructed case, tree reuse, time management, protocol errors."""
import os
import random
from typing import Any, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import board
from evaluators.scale import value_to_cp
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, EvaluatorError, Leaf
from evaluators.classical import ClassicalEvaluator
from search.alphabeta import AlphaBeta
from search.base import Limits
from search.mcts_rules import make_rule
from search.mcts_tree import _Tree
from search.mcts import (
    MCTS, MCTSConfig, cpuct, final_policy, playout_depth_for_clock, q_thresh, u_divisor,
)
from search.timeman import TimeConfig, TimeControl, move_time
from search.puct import PUCTParams
from tests.positions import MATES, random_position

EV = ClassicalEvaluator()
PURE = os.environ.get("SEARCHBENCH_PURE") == "1"



class FixedEvaluator(Evaluator):
    """The prior gives ``top`` to the first move and spreads the rest evenly; the value is 0, or with
    ``noisy`` a fixed pseudo-random number in [-0.3, 0.3] per position (so that Q differs)."""

    name = "fixed"

    def __init__(self, top: float = 0.0, noisy: bool = False) -> None:
        self.top = top
        self.noisy = noisy

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        out = []
        for leaf in leaves:
            n = len(leaf.moves)
            if n == 1 or self.top == 0.0:
                pri = [1.0 / n] * n
            else:
                pri = [self.top] + [(1.0 - self.top) / (n - 1)] * (n - 1)
            v = (random.Random(hash(leaf.state)).random() - 0.5) * 0.6 if self.noisy else 0.0
            out.append(Evaluation(v, pri))
        return out


def search(pos: board.Position, nodes: int, cfg: MCTSConfig | None = None, seed: int = 0,
           ev: Evaluator = EV) -> tuple[MCTS, object]:
    m = MCTS(ev, cfg, random.Random(seed))
    return m, m.run(pos, Limits(nodes=nodes))


# ------------------------------------------------------------------ mates and safety

@pytest.mark.parametrize("variant,fen,n", MATES)
def test_solver_finds_mates(variant: str, fen: str, n: int) -> None:
    pos = board.new_position(variant, fen)
    _, r = search(pos, 30000)
    assert pos.fen() == board.new_position(variant, fen).fen()
    assert r.mate == n, board.move_to_uci(r.best_move)
    assert r.value == 1.0 and r.cp == 9999
    pos.push(r.best_move)
    if n == 1:
        assert pos.is_checkmate()
    else:
        assert AlphaBeta(EV).run(pos, Limits(depth=2 * n - 2)).mate == -(n - 1)


# A crazyhouse mate in 3 whose proofs start with a quiet drop (R@f2, R@c6, Q@f1, ...) or a check
# (Q@e5+, Q@f5+, ...): 22 of the 127 first moves mate in 3 (alpha-beta, tests/test_alphabeta.py
# DROP_MATE_IN_3).  With the fpu of -1 alone the search stays in one line wherever White's first
# try came back with a good Q, and no mate was proven in 10^6 simulations; check urgency (unvisited
# checks start at Q = 0, a switch off by default) lets the solver see the forcing moves.  Found at
# about 16,000 simulations.
DROP_MATE_IN_3 = "8/6k1/8/8/8/8/8/7K[QR] w - - 0 1"
DROP_MATE_BUDGET = 20000


def test_solver_finds_the_drop_mate_in_three_within_budget() -> None:
    pos = board.new_position("crazyhouse", DROP_MATE_IN_3)
    m, r = search(pos, DROP_MATE_BUDGET, MCTSConfig.of(check_urgency=True))
    assert r.mate == 3 and r.value == 1.0, board.move_to_uci(r.best_move)
    assert m.tree.nd_plies[m.root] == 5
    pos.push(r.best_move)
    assert AlphaBeta(EV).run(pos, Limits(depth=4)).mate == -2  # every defence is mated in 2
    # The PV is a mating line: it ends in checkmate after White's third move.
    line = board.new_position("crazyhouse", DROP_MATE_IN_3)
    for mv in r.pv[:5]:
        assert mv in line.legal_moves()
        line.push(mv)
    assert line.is_checkmate()


@pytest.mark.skipif(PURE, reason="the same search without the switch: 20,000 simulations are slow uncompiled")
def test_without_check_urgency_the_drop_mate_in_three_is_not_found() -> None:
    pos = board.new_position("crazyhouse", DROP_MATE_IN_3)
    _, r = search(pos, DROP_MATE_BUDGET, MCTSConfig.of(check_urgency=False))
    assert r.mate is None and r.nodes == DROP_MATE_BUDGET


def test_check_urgency_explores_checks_first() -> None:
    # A node whose first move came back with Q = 0.3: with fpu -1 an unvisited check with the
    # small prior is not tried; starting it at Q = 0 (check urgency) tries it at once.
    def pick(urgent: bool) -> int:
        cfg = MCTSConfig.of(check_urgency=urgent, u_divisor=False)
        tree = _Tree(cfg, make_rule(cfg).check_urgency)
        root = tree.new_node(0)
        tree.expand(root, [1, 2, 3], [0.85, 0.05, 0.1], 0.0)
        tree.ed_check[2] = 1  # move 3 gives check
        child = tree.child_of(0)  # an edge's N and W live in its child node (made first: a vec
        tree.nd_n[child] = 20     # attribute read before child_of grew it would be a stale copy)
        tree.nd_w[child] = 0.3 * 20
        tree.nd_sum_n[root] = 20
        tree.nd_touched[root] = 1
        return make_rule(tree.cfg).select(tree, root)

    assert pick(False) == 0
    assert pick(True) == 2


def allows_mate_in_one(pos: board.Position, m: int) -> bool:
    pos.push(m)
    try:
        for reply in pos.legal_moves():
            pos.push(reply)
            mate = pos.is_checkmate()
            pos.pop()
            if mate:
                return True
        return False
    finally:
        pos.pop()


@settings(max_examples=15 if PURE else 40)
@given(st.sampled_from(["crazyhouse", "chess"]), st.integers(0, 10**6), st.integers(4, 60))
def test_never_allows_a_mate_in_one(variant: str, seed: int, plies: int) -> None:
    pos = random_position(variant, seed, plies)
    moves = pos.legal_moves()
    if not moves:
        return
    safe = [m for m in moves if not allows_mate_in_one(pos, m)]
    _, r = search(pos, len(moves) + 60)
    if safe:
        assert r.best_move in safe


def test_avoids_the_back_rank_mate() -> None:
    # White to move; a natural rook move lets Ra1 mate; any pawn move (luft) or keeping the rook
    # on the first rank does not.
    pos = board.new_position("chess", "6k1/r4ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    _, r = search(pos, 400)
    assert not allows_mate_in_one(pos, r.best_move)


# ------------------------------------------------------------------ the interface records

def test_leaf_snapshot_is_the_plain_leaf() -> None:
    import copy
    import pickle

    from evaluators.base import Leaf as BaseLeaf
    from search.checks import checking_moves

    for variant, seed, plies in (("chess", 1, 20), ("crazyhouse", 2, 30), ("crazyhouse", 3, 0)):
        pos = random_position(variant, seed, plies)
        plain = Leaf.of(pos)
        snap = Leaf.snapshot(pos, pos.legal_moves_vec(), -1)
        assert BaseLeaf is Leaf
        assert snap.n_moves == plain.n_moves == len(plain.moves)
        assert list(snap.move_vec) == plain.moves == list(plain.move_vec)
        assert snap.state == plain.state == pos.raw_state() and snap.moves == plain.moves
        assert snap == plain and hash(snap) == hash(plain) and snap.variant == variant
        for leaf in (snap, plain):
            again = pickle.loads(pickle.dumps(leaf))
            assert again == plain and copy.copy(leaf) == plain
        assert len(checking_moves(pos, plain.moves)) == plain.n_moves
    ev = Evaluation(0.25, [0.5, 0.5])
    assert pickle.loads(pickle.dumps(ev)) == ev and copy.deepcopy(ev) == ev
    assert Evaluation(1, [1.0]).value == 1.0 and isinstance(Evaluation(1, [1.0]).value, float)
    assert "Evaluation(value=0.25" in repr(ev) and "Leaf(state=" in repr(plain)


# ------------------------------------------------------------------ determinism, restore, report

def test_deterministic_with_seed_and_restores_position() -> None:
    pos = random_position("crazyhouse", 5, 14)
    fen, stack = pos.fen(), pos.move_stack
    cfg = MCTSConfig.of(dirichlet_epsilon=0.25, temperature=1.0)
    runs = [search(pos, 600, cfg, seed=42)[1] for _ in range(2)]
    assert pos.fen() == fen and pos.move_stack == stack
    a, b = runs
    assert (a.best_move, a.nodes, a.evals, a.pv, a.value) == (b.best_move, b.nodes, b.evals, b.pv, b.value)
    moves = {search(pos, 200, cfg, seed=s)[1].best_move for s in range(12)}
    assert len(moves) > 1  # temperature 1 samples
    assert len({search(pos, 200, MCTSConfig(), seed=s)[1].best_move for s in range(3)}) == 1


def test_report() -> None:
    pos = board.new_position("chess")
    m, r = search(pos, 500)
    assert r.nodes == 500 and 0 < r.evals <= r.nodes
    assert r.depth == len(r.pv) and r.pv[0] == r.best_move and r.seldepth >= r.depth - 1
    assert r.cp == value_to_cp(r.value, "chess")
    check = pos.copy()
    for mv in r.pv:
        assert mv in check.legal_moves()
        check.push(mv)
    assert sum(n for _, n, _, _ in m.root_stats()) == r.nodes - 1  # the root's own evaluation
    assert value_to_cp(0.0, "chess") == 0 and value_to_cp(0.5, "chess") == -value_to_cp(-0.5, "chess") > 0
    assert value_to_cp(0.9, "chess") > value_to_cp(0.5, "chess") and value_to_cp(1.0, "chess") == 9999


def test_single_move_and_errors() -> None:
    pos = board.new_position("chess", "7k/8/8/8/8/8/6q1/K7 w - - 0 1")  # Kb1 is the only move
    moves = pos.legal_moves()
    assert len(moves) == 1
    _, r = search(pos, 100)
    assert r.best_move == moves[0] and r.nodes == 0
    m = MCTS(EV)
    m.start(board.new_position("chess"), Limits(nodes=50))
    leaves = m.ask()
    with pytest.raises(EvaluatorError):
        m.tell([])
    m.tell(EV.evaluate(leaves))
    assert m.ask()  # a batch in flight, then abandoned: the next search starts a fresh tree
    r = m.run(board.new_position("chess"), Limits(nodes=50))
    assert r.nodes == 50 and m.tree.nd_sum_n[m.root] == 49
    with pytest.raises(ValueError):
        MCTS(EV, MCTSConfig.of(batch_size=0))
    with pytest.raises(ValueError):
        MCTS(EV).run(board.new_position("chess"), Limits(nodes=0))

    class ScoreOnly(Evaluator):
        def serves(self) -> frozenset[str]:
            return frozenset({"score"})

    with pytest.raises(EvaluatorError):
        MCTS(ScoreOnly())


# ------------------------------------------------------------------ each switch, in the paper's direction

def test_schedules() -> None:
    cfg = MCTSConfig().settings(PUCTParams)
    assert cpuct(cfg, 0) == pytest.approx(2.5 + (1 / 19652), rel=1e-3)
    assert cpuct(cfg, 100000) > cpuct(cfg, 1000) > cpuct(cfg, 0)
    assert cpuct(MCTSConfig.of(cpuct_schedule=False).settings(PUCTParams), 100000) == 2.5
    assert u_divisor(cfg, 0) == pytest.approx(1.0) and u_divisor(cfg, 10**6) == pytest.approx(0.25)
    assert u_divisor(MCTSConfig.of(u_divisor=False).settings(PUCTParams), 10**6) == 1.0
    assert q_thresh(MCTSConfig().choice, 0) == pytest.approx(0.5) and q_thresh(MCTSConfig().choice, 10**6) == pytest.approx(0.9)
    assert q_thresh(MCTSConfig().choice, 2000) > q_thresh(MCTSConfig().choice, 100)


def test_q_value_selection_prefers_a_better_q_among_well_visited_moves() -> None:
    visits, qs = [100, 90], [-0.2, 0.3]
    on = final_policy(MCTSConfig().choice, visits, qs)
    off = final_policy(MCTSConfig.of(q_value_selection=False).choice, visits, qs)
    assert on[1] > on[0] and off[0] > off[1]
    # Below Qthresh * max N the Q is ignored: a barely visited move is not trusted.
    gated = final_policy(MCTSConfig().choice, [100, 10], [-0.2, 0.9])
    assert gated[0] > gated[1]


def select_in(cfg: MCTSConfig, edges: list[tuple[float, int, float]]) -> int:
    """Build a one-node tree whose edges have (P, N, Q) and return the edge PUCT selects."""
    tree = _Tree(cfg, make_rule(cfg).check_urgency)
    root = tree.new_node(0)
    tree.expand(root, list(range(1, len(edges) + 1)), [p for p, _, _ in edges], 0.0)
    for i, (_, n, q) in enumerate(edges):
        tree.nd_sum_n[root] += n
        if n > 0:
            child = tree.child_of(i)  # an edge's N and W live in its child node
            tree.nd_n[child] = n
            tree.nd_w[child] = q * n
            tree.nd_touched[root] = i + 1  # as add_virtual_loss marks an edge the search visits
    return make_rule(tree.cfg).select(tree, root)


def test_u_divisor_schedule_explores_more() -> None:
    # A well-visited good move against an unvisited move with a small prior (Q = fpu = -1):
    # the u-divisor (0.31 at N = 5000 instead of 1) makes the unvisited move urgent.
    edges = [(0.9958, 5000, 0.1), (0.0042, 0, 0.0)]
    assert select_in(MCTSConfig.of(u_divisor=False), edges) == 0
    assert select_in(MCTSConfig.of(u_divisor=True), edges) == 1


def test_cpuct_schedule_explores_more_with_many_visits() -> None:
    # At N = 200000 the schedule nearly doubles cpuct (4.9 instead of 2.5): the weaker, less
    # visited move gets its turn.
    edges = [(0.998, 199990, 0.1), (0.002, 10, -0.2)]
    assert select_in(MCTSConfig.of(u_divisor=False, cpuct_schedule=False), edges) == 0
    assert select_in(MCTSConfig.of(u_divisor=False, cpuct_schedule=True), edges) == 1


def test_fpu_minus_one_searches_narrower() -> None:
    pos = random_position("chess", 3, 10)

    def width(fpu: float) -> int:
        m, _ = search(pos, 300, MCTSConfig.of(fpu=fpu))
        return sum(1 for _, n, _, _ in m.root_stats() if n > 0)

    assert width(-1.0) < width(0.0)


def test_check_enhancement_raises_checking_moves() -> None:
    pos = board.new_position("crazyhouse", "r1bqk2r/pppp1ppp/2n5/4p3/1bB1P3/5N2/PPPP1PPP/RNBQK2R[Nn] w KQkq - 0 1")

    def checks_prior(on: bool) -> float:
        m, _ = search(pos, 50, MCTSConfig.of(check_enhancement=on))
        total = 0.0
        for mv, _, _, p in m.root_stats():
            if pos.gives_check(mv):
                total += p
        return total

    assert checks_prior(True) > checks_prior(False)


def _root_q_pv(m: MCTS) -> list[float]:
    """Q of every root edge after the principal-variation rule (the order of root_stats)."""
    e0 = int(m.tree.nd_edge0[m.root])
    return [m.tree.q_with_pv(e) for e in range(e0, e0 + int(m.tree.nd_nedges[m.root]))]


def test_q_with_principal_variation_is_pessimistic() -> None:
    pos = random_position("crazyhouse", 9, 12)
    m, _ = search(pos, 1500, MCTSConfig.of(q_pv=True))
    stats = m.root_stats()
    qpv = _root_q_pv(m)
    assert all(qp <= q + 1e-12 for (_, n, q, _), qp in zip(stats, qpv) if n > 0)
    assert any(qp < q for (_, n, q, _), qp in zip(stats, qpv) if n > 0)
    m_off, _ = search(pos, 1500, MCTSConfig.of(q_pv=False))
    assert _root_q_pv(m_off) == [q for _, _, q, _ in m_off.root_stats()]


def test_virtual_loss_spreads_a_batch() -> None:
    def batch(vl: float) -> int:
        m = MCTS(FixedEvaluator(), MCTSConfig.of(virtual_loss=vl), random.Random(0))
        m.start(board.new_position("chess"), Limits(nodes=100))
        first = m.ask()
        assert len(first) == 1  # the root alone
        m.tell(FixedEvaluator().evaluate(first))
        return len({leaf.state for leaf in m.ask()})

    assert batch(3.0) == 8
    assert batch(0.0) == 1


def test_small_node_budgets_search_one_leaf_at_a_time() -> None:
    """single_leaf_nodes: budgets up to it collect one leaf a step (zh-defaults: batch 1 is the
    stronger at 100 nodes), larger budgets and time limits batch_size leaves."""
    def leaves_per_step(limits: Limits, single: int) -> int:
        m = MCTS(FixedEvaluator(), MCTSConfig.of(virtual_loss=1, single_leaf_nodes=single), random.Random(0))
        m.start(board.new_position("chess"), limits)
        m.tell(FixedEvaluator().evaluate(m.ask()))  # the root alone
        return len(m.ask())

    assert leaves_per_step(Limits(nodes=400), 400) == 1 and leaves_per_step(Limits(evals=100), 400) == 1
    assert leaves_per_step(Limits(nodes=401), 400) == 8 and leaves_per_step(Limits(nodes=100), 0) == 8
    assert leaves_per_step(Limits(movetime=0.05), 400) == 8
    assert MCTSConfig.of(single_leaf_nodes=400).batch_for(None) == 8


def test_transposition_table_saves_evaluations() -> None:
    pos = board.new_position("chess")
    # one leaf at a time: a hit backed up at once and the same position evaluated afresh then give
    # the same tree (with batches, a hit is backed up within the batch, which changes later walks)
    _, on = search(pos, 3000, MCTSConfig.of(transposition_table=True, batch_size=1))
    _, off = search(pos, 3000, MCTSConfig.of(transposition_table=False, batch_size=1))
    assert on.best_move == off.best_move and on.pv == off.pv and on.nodes == off.nodes  # the same tree
    assert on.evals < off.evals


def test_solver_and_fix_checkmates() -> None:
    pos = board.new_position("chess", "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1")
    _, vanilla = search(pos, 3000, MCTSConfig.vanilla())
    assert vanilla.mate is None and vanilla.nodes == 3000
    _, solved = search(pos, 3000)
    assert solved.mate == 2
    # Fix checkmates alone finds a mate in one with the first evaluation and stops.
    m1 = board.new_position("chess", "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    _, r = search(m1, 1000, MCTSConfig.of(solver=False, fix_checkmates=True))
    assert r.mate == 1 and r.nodes == 1
    _, r = search(m1, 1000, MCTSConfig.vanilla())
    assert r.mate is None and r.nodes == 1000


def test_tree_reuse_keeps_the_subtree() -> None:
    pos = board.new_position("chess")
    for reuse, expect in ((True, True), (False, False)):
        m = MCTS(EV, MCTSConfig.of(tree_reuse=reuse), random.Random(0))
        r = m.run(pos, Limits(nodes=2000))
        game = pos.copy()
        game.push(r.best_move)
        game.push(r.pv[1])
        m.start(game, Limits(nodes=2000))
        kept = m.tree.nd_sum_n[m.root] > 0
        assert kept == expect
        r2 = m.result() if kept else None
        while not m.done():
            leaves = m.ask()
            if leaves:
                m.tell(EV.evaluate(leaves))
        assert m.result().nodes == 2000
        if r2 is not None:
            assert r2.best_move in game.legal_moves()


def test_dirichlet_noise_changes_root_priors() -> None:
    pos = board.new_position("chess")
    m0, _ = search(pos, 20, MCTSConfig.of(check_enhancement=False), ev=FixedEvaluator())
    m1, _ = search(pos, 20, MCTSConfig.of(check_enhancement=False, dirichlet_epsilon=0.25), ev=FixedEvaluator())
    p0 = [p for _, _, _, p in m0.root_stats()]
    p1 = [p for _, _, _, p in m1.root_stats()]
    assert len(set(p0)) == 1 and len(set(p1)) > 1 and sum(p1) == pytest.approx(1.0)


def test_sixtyfour_variant() -> None:
    cfg = MCTSConfig.sixtyfour()
    assert cfg.score_formula == "sixtyfour" and cfg.tree.mate_value == 1.5 and cfg.exploration.prior_noise > 0
    assert [playout_depth_for_clock(s) for s in (1000, 500, 200, 90, 30, 5)] == [20, 15, 12, 10, 4, 0]
    m1 = board.new_position("crazyhouse", "6rk/6pp/8/8/8/8/8/6K1[N] w - - 0 1")
    _, r = search(m1, 200, cfg)
    assert board.move_to_uci(r.best_move) == "N@f7"
    # Depth-limited playouts: a simulation never goes deeper than the limit.
    pos = board.new_position("crazyhouse")
    m = MCTS(EV, MCTSConfig.sixtyfour(), random.Random(1))
    r = m.run(pos, Limits(nodes=800, wtime=45.0, btime=45.0))
    assert r.seldepth <= 4 and r.nodes >= 1
    r = MCTS(EV, MCTSConfig(), random.Random(1)).run(pos, Limits(nodes=800, depth=2))
    assert r.seldepth <= 2


# ------------------------------------------------------------------ time management

def test_time_shares() -> None:
    tc = TimeConfig()
    assert move_time(Limits(movetime=1.0), 0, 1) == pytest.approx(0.98)
    # movestogo keeps one move of time in reserve (movestogo_reserve)
    assert move_time(Limits(wtime=60.0, winc=1.0, movestogo=20), 0, 30) == pytest.approx((60 - 0.4) / 21 + 0.7)
    assert move_time(Limits(wtime=60.0, winc=1.0), 0, 10) == pytest.approx((60 - 0.8) / 40 + 0.7)
    assert move_time(Limits(btime=60.0, binc=1.0), 1, 45) == pytest.approx(0.05 * 60 + 0.7)
    assert move_time(Limits(wtime=0.5, winc=10.0), 0, 45) == pytest.approx(0.48)
    assert move_time(Limits(nodes=100), 0, 1) is None
    c = TimeControl(1.0, tc, 30.0)
    assert c.should_stop(0.6, easy=True, critical=False)
    assert not c.should_stop(0.6, easy=False, critical=False)
    assert not c.should_stop(1.0, easy=False, critical=True)  # extended once by half
    assert c.should_stop(1.5, easy=False, critical=True)
    assert TimeControl(1.0, tc, 30.0).should_stop(1.0, easy=False, critical=False)
    # a fixed move time (go movetime) is never extended, critical or not: the answer is due within it
    fixed = TimeControl(0.98, tc, None, fixed=True)
    assert fixed.should_stop(0.98, easy=False, critical=True) and fixed.hard_cap == 0.98


def test_movetime_is_never_overrun_by_the_critical_extension() -> None:
    # every move of a game under go movetime: the search's own stop is at movetime - overhead, the
    # critical extension never applies, and the engine's hard stop keeps the overhead too
    from engines.ours import hard_stop_after
    assert hard_stop_after(Limits(movetime=0.3), 0, 0.02) == pytest.approx(0.28)
    assert hard_stop_after(Limits(movetime=0.3), 0) == pytest.approx(0.3)
    pos = board.new_position("crazyhouse")
    search = MCTS(EV)
    search.start(pos, Limits(movetime=0.2))
    assert search._stop.time is not None and search._stop.time.hard_cap == pytest.approx(0.18)
    search.start(pos, Limits(wtime=10.0, btime=10.0))  # under a clock the extension stays
    assert search._stop.time is not None and search._stop.time.hard_cap > search._stop.time.allocated


def test_search_under_a_clock() -> None:
    pos = board.new_position("crazyhouse")
    r = MCTS(EV).run(pos, Limits(wtime=3.0, btime=3.0))
    assert r.best_move in pos.legal_moves() and r.nodes > 0
    r = MCTS(EV).run(pos, Limits(movetime=0.05))
    assert r.best_move in pos.legal_moves()


# ------------------------------------------------------------------ the benchmark command runs

def test_bench_search_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import chess.variant

    from evaluators.classical import white_score
    from experiments.bench import search as bench_search
    from experiments.cli import main as cli

    # The python-chess peer scores its leaves with the very same evaluation.
    for variant in ("chess", "crazyhouse"):
        for seed in range(5):
            pos = random_position(variant, seed, 30)
            b = chess.variant.CrazyhouseBoard(pos.fen()) if variant == "crazyhouse" else chess.Board(pos.fen())
            assert bench_search.pc_white_score(b, variant == "crazyhouse") == white_score(pos)
    rc = cli.main(["bench", "search", "--variant", "chess", "--sims", "40", "--ab-nodes", "300",
                   "--pc-depth", "1", "--nn-sims", "8", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mcts_overhead"]["chess"]["ours"]["sims"] == 3 * 40
    assert out["alphabeta"]["chess"]["python_chess"]["nodes"] > 0
    assert out["nn"] is not None
    # the two-board search on the shared driver beside its own-tree twin, same positions and limit
    tb = out["two_board"]
    assert tb["shared"]["sims"] == tb["annex"]["sims"] == tb["gumbel"]["sims"] == tb["mcgs"]["sims"] == 3 * 40
    assert tb["ratio"] > 0 and tb["gumbel_share"] > 0 and tb["mcgs_share"] > 0


class _LastMoveEvaluator(FixedEvaluator):
    """The prior puts 0.9 on the *last* legal move: a choice that the generation order cannot give."""

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        return [Evaluation(0.0, [0.1 / max(1, len(lf.moves) - 1)] * (len(lf.moves) - 1) + [0.9]) if len(lf.moves) > 1
                else Evaluation(0.0, [1.0]) for lf in leaves]


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_a_one_node_search_plays_the_raw_policy(variant: str) -> None:
    """One node is the root's expansion and nothing visited: the move is the prior's argmax (the raw
    policy player of rl's fixed rating searches), not the first move generated."""
    for seed in range(10):
        pos = random_position(variant, seed, 12)
        moves = pos.legal_moves()
        if len(moves) < 2:
            continue
        _, res = search(pos, 1, MCTSConfig.of(tree_reuse=False), ev=_LastMoveEvaluator())
        assert res.best_move == moves[-1]  # type: ignore[attr-defined]


def test_prior_noise_is_range_checked() -> None:
    """SixtyFour's prior noise b is a share of the prior's scale, from 0 to 1: -1 once meant no noise
    silently (issue 81, j09); the engine spec refuses it in one line."""
    from engines.base import EngineError
    from engines.registry import resolve
    from search.mcts_config import MCTSConfig, MCTSConfigError
    for bad in (-1.0, 1.5):
        with pytest.raises(MCTSConfigError, match="prior_noise"):
            MCTSConfig.of(prior_noise=bad).validate()
        with pytest.raises(EngineError, match="prior_noise"):
            resolve(f"rise-mcts:prior_noise={bad}")
    MCTSConfig.sixtyfour().validate()


def test_every_declared_range_of_every_engine_refuses_a_value_outside_it() -> None:
    """Issue 81, j09: each integer option an engine announces with bounds (UCI spin min/max) refuses
    the value one past each bound, and every noise and temperature option refuses a negative value."""
    from engines.base import EngineError
    from engines.registry import list_engines, option_infos, resolve
    noise = ("dirichlet_epsilon", "dirichlet_alpha", "prior_noise", "prior_noise_decay", "temperature",
             "gumbel_scale", "epsilon_greedy", "epsilon_checks")
    walked = 0
    for spec in list_engines():
        if spec.search in ("uci", "xboard"):
            continue
        infos: dict[str, Any] = {}
        for o in option_infos(spec):
            infos.setdefault(o.name, o)  # a name resolves to its first option (engine options before the config's)
        for o in infos.values():
            if o.kind != "spin":
                continue
            for outside in (o.minimum - 1, o.maximum + 1):
                with pytest.raises(EngineError):
                    resolve(f"{spec.name}:{o.name}={outside}")
                walked += 1
        for name in noise:
            if name in infos:
                with pytest.raises(EngineError):
                    resolve(f"{spec.name}:{name}=-1")
    assert walked > 100
