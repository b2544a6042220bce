"""Gumbel AlphaZero's root search and Monte-Carlo graph search: Sequential Halving's schedule, policy
improvement, determinism, mates, exact budgets; MCGS identical to tree search without
transpositions, and consistent values on the graph."""
from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import board
from engines import factory
from evaluators.classical import ClassicalEvaluator
from search.base import Limits
from search.gumbel import GumbelParams, improved_policy
from search.halving import considered_visits
from search.mcts import EXPANDED, MCTS, MCTSConfig
from tests.golden_searches import ZeroEvaluator
from tests.positions import MATES, random_position


def halving_visits(m: int, n: int) -> list[int]:
    """Run the schedule on m actions ranked 0 (best) .. m-1: the k-th simulation goes to the best
    action whose visit count is the k-th entry (as the root rule does with fixed scores)."""
    visits = [0] * m
    for want in considered_visits(m, n):
        a = next(i for i in range(m) if visits[i] == want)  # it must exist
        visits[a] += 1
    return visits


@given(st.integers(1, 40), st.integers(1, 600))
def test_sequential_halving_spends_exactly_the_budget(m: int, n: int) -> None:
    seq = considered_visits(m, n)
    assert len(seq) == n
    visits = halving_visits(m, n)  # every entry names a count some action has
    assert sum(visits) == n
    assert visits == sorted(visits, reverse=True)  # better actions never get fewer visits
    if n <= m:
        assert visits == [1] * n + [0] * (m - n)  # a budget below m visits the n best once each


def test_sequential_halving_phases() -> None:
    # 16 actions, 100 simulations, log2(16) = 4 phases (mctx's schedule): all 16 once, the best 8
    # three times more, the best 4 six times more, the best 2 twelve times, twice (the budget left)
    assert halving_visits(16, 100) == [28, 28, 10, 10, 4, 4, 4, 4] + [1] * 8
    assert halving_visits(3, 10) == [5, 4, 1]  # m not a power of two
    assert halving_visits(16, 17) == [2] + [1] * 15
    assert halving_visits(5, 3) == [1, 1, 1, 0, 0]  # fewer simulations than actions


@given(st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(-1.0, 1.0), st.integers(1, 20)), min_size=2, max_size=12),
       st.floats(0.0, 100.0), st.floats(0.05, 2.0))
def test_improved_policy_improves_with_exact_q(edges: list[tuple[float, float, int]], c_visit: float,
                                               c_scale: float) -> None:
    total = sum(p for p, _, _ in edges)
    priors = [p / total for p, _, _ in edges]
    qs = [q for _, q, _ in edges]
    visits = [float(n) for _, _, n in edges]
    pi = improved_policy(priors, qs, visits, 0.0, c_visit, c_scale)
    assert sum(pi) == pytest.approx(1.0)
    assert sum(p * q for p, q in zip(pi, qs)) >= sum(p * q for p, q in zip(priors, qs)) - 1e-9


def test_gumbel_budget_and_determinism() -> None:
    pos = random_position("crazyhouse", 4, 12)
    def run(seed: int, scale: float = 1.0) -> tuple[int, int, list[tuple[int, int, float, float]]]:
        cfg = MCTSConfig.gumbel()
        cfg.settings(GumbelParams).gumbel_scale = scale
        m = MCTS(ClassicalEvaluator(), cfg, random.Random(seed))
        r = m.run(pos.copy(), Limits(nodes=200))
        assert r.nodes == 200 and sum(n for _, n, _, _ in m.root_stats()) == 199  # the root's own evaluation
        return r.best_move, r.nodes, m.root_stats()
    assert run(1) == run(1)  # seeded: the same search
    assert run(1, 0.0) == run(2, 0.0)  # no noise: the seed does not matter
    runs = {run(s)[2][0][1] for s in range(1, 6)} | {tuple(n for _, n, _, _ in run(s)[2]) for s in range(1, 6)}
    assert len(runs) > 2  # with noise the considered actions differ between seeds


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_gumbel_at_large_budgets(variant: str) -> None:
    # σ spans c_visit + max N: with thousands of visits e^(σ - top) underflows for most edges, and
    # the normaliser once came out 0 (a ZeroDivisionError at ~20,000 simulations from the start)
    pos = board.new_position(variant)
    m = MCTS(ClassicalEvaluator(), MCTSConfig.gumbel(), random.Random(1))  # seed 1 failed in chess
    r = m.run(pos.copy(), Limits(nodes=20000))
    assert r.nodes == 20000 and r.best_move in pos.legal_moves()


@pytest.mark.parametrize("variant, fen", [(v, f) for v, f, n in MATES if n == 1])
def test_gumbel_finds_mates_in_one_at_small_budgets(variant: str, fen: str) -> None:
    pos = board.new_position(variant, fen)
    for budget in (2, 8, 32):
        r = MCTS(ClassicalEvaluator(), MCTSConfig.gumbel(), random.Random(budget)).run(pos.copy(), Limits(nodes=budget))
        after = pos.copy()
        after.push(r.best_move)
        assert after.is_checkmate(), (budget, board.move_to_uci(r.best_move))


@pytest.mark.parametrize("engine", ["material-gumbel", "rise-gumbel", "sixtyfour-gumbel"])
def test_gumbel_engines_play(engine: str) -> None:
    e = factory.create(engine, "crazyhouse")
    pos = board.new_position("crazyhouse")
    for _ in range(4):
        r = e.play(pos, Limits(nodes=24))
        assert r.forfeit is None and r.move in pos.legal_moves()
        pos.push(r.move)
    e.close()


# ------------------------------------------------------------------------------------ MCGS

@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_mcgs_is_tree_search_without_transpositions(variant: str) -> None:
    identical = 0
    for seed in range(12):
        pos = random_position(variant, seed, 10 + seed)
        if not pos.legal_moves():
            continue
        for ev in (ZeroEvaluator(), ClassicalEvaluator()):
            graph = MCTS(ev, MCTSConfig.of(mcgs=True), random.Random(seed))
            r_graph = graph.run(pos.copy(), Limits(nodes=40))
            if graph._merges:
                continue  # a transposition was merged: the searches may differ
            tree = MCTS(ev, MCTSConfig.of(mcgs=False), random.Random(seed))
            r_tree = tree.run(pos.copy(), Limits(nodes=40))
            assert (r_graph.best_move, r_graph.nodes, r_graph.value, r_graph.pv) == \
                (r_tree.best_move, r_tree.nodes, r_tree.value, r_tree.pv)
            assert graph.root_stats() == tree.root_stats()
            identical += 1
    assert identical >= 6


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_mcgs_values_on_the_graph(variant: str) -> None:
    pos = random_position(variant, 3, 8)
    m = MCTS(ClassicalEvaluator(), MCTSConfig.of(mcgs=True, batch_size=1), random.Random(1))
    r = m.run(pos, Limits(nodes=4000))
    tree = m.tree
    assert m._merges > 0  # transpositions were shared
    assert r.best_move in pos.legal_moves()
    # every position node's value is an average of values in [-1, 1]; N(s) is the sum of its edges'
    # visits (nothing in flight after the search)
    for node in range(tree.n_nodes):
        if tree.nd_target[node] != node or tree.nd_state[node] != EXPANDED:
            continue
        assert -1.0 - 1e-9 <= tree.node_q(node) <= 1.0 + 1e-9
        e0, k = int(tree.nd_edge0[node]), int(tree.nd_nedges[node])
        assert tree.nd_sum_n[node] == pytest.approx(sum(tree.edge_n(e) for e in range(e0, e0 + k)))
    # no cycles: repetitions are terminal draws and the key holds the move number
    state: dict[int, int] = {}

    def visit(node: int) -> None:
        state[node] = 1
        if tree.nd_state[node] == EXPANDED:
            e0, k = int(tree.nd_edge0[node]), int(tree.nd_nedges[node])
            for e in range(e0, e0 + k):
                nxt = tree.node_after(e)
                if nxt >= 0:
                    assert state.get(nxt) != 1, "a cycle in the search graph"
                    if nxt not in state:
                        visit(nxt)
        state[node] = 2

    import sys
    sys.setrecursionlimit(10000)
    visit(m.root)
    linked = [c for c in range(tree.n_nodes) if tree.nd_target[c] != c]
    assert linked and all(tree.nd_target[tree.nd_target[c]] == tree.nd_target[c] for c in linked)


def test_mcgs_switch_on_every_mcts_engine() -> None:
    for name in ("material-mcts", "rise-mcts", "sixtyfour-mcts", "material-gumbel"):
        e = factory.create(f"{name}:mcgs=true", "chess")
        pos = random_position("chess", 2, 6)
        r = e.play(pos, Limits(nodes=64))
        assert r.forfeit is None and r.move in pos.legal_moves()
        e.close()


# ------------------------------------------------------------------------- ε-greedy exploration

def root_visits(m: MCTS) -> list[int]:
    return [n for _, n, _, _ in m.root_stats()]


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_epsilon_greedy_explores_below_the_policy(variant: str) -> None:
    pos = random_position(variant, 5, 10)
    plain = MCTS(ClassicalEvaluator(), MCTSConfig.of(batch_size=1), random.Random(3))
    r_plain = plain.run(pos.copy(), Limits(nodes=600))
    greedy = MCTS(ClassicalEvaluator(), MCTSConfig.of(batch_size=1, epsilon_greedy=0.3), random.Random(3))
    r_greedy = greedy.run(pos.copy(), Limits(nodes=600))
    assert r_plain.nodes == r_greedy.nodes == 600 and r_greedy.best_move in pos.legal_moves()
    # the root's statistics hold only the simulations that started there (the others started lower)
    assert sum(root_visits(plain)) == 599 and sum(root_visits(greedy)) < 599
    # and more of its moves were tried
    assert sum(n > 0 for n in root_visits(greedy)) > sum(n > 0 for n in root_visits(plain))
    again = MCTS(ClassicalEvaluator(), MCTSConfig.of(batch_size=1, epsilon_greedy=0.3), random.Random(3))
    assert again.run(pos.copy(), Limits(nodes=600)).best_move == r_greedy.best_move  # seeded
    assert root_visits(again) == root_visits(greedy)


def test_epsilon_checks_tries_every_check() -> None:
    from search.checks import checking_moves

    for seed in range(40):
        pos = random_position("crazyhouse", seed, 16)
        moves = pos.legal_moves()
        checks = [mv for mv, c in zip(moves, checking_moves(pos, moves)) if c]
        if len(checks) >= 3:
            break
    cfg = MCTSConfig.of(batch_size=1, epsilon_checks=0.5, check_enhancement=False)
    m = MCTS(ZeroEvaluator(), cfg, random.Random(1))
    m.run(pos.copy(), Limits(nodes=400))
    visited = {mv for mv, n, _, _ in m.root_stats() if n > 0}
    assert set(checks) <= visited


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_epsilon_greedy_with_the_graph_and_batches(variant: str) -> None:
    pos = random_position(variant, 7, 12)
    for cfg in (MCTSConfig.of(epsilon_greedy=0.2, epsilon_checks=0.05),
                MCTSConfig.of(epsilon_greedy=0.2, mcgs=True, batch_size=1)):
        m = MCTS(ClassicalEvaluator(), cfg, random.Random(2))
        r = m.run(pos.copy(), Limits(nodes=800))
        assert r.best_move in pos.legal_moves() and r.nodes == 800
        tree = m.tree
        for node in range(tree.n_nodes):  # nothing left in flight, N(s) = the sum of its edges' visits
            assert tree.nd_vl[node] == 0
            if tree.nd_state[node] == EXPANDED and (not tree.mcgs or tree.nd_target[node] == node):
                e0, k = int(tree.nd_edge0[node]), int(tree.nd_nedges[node])
                assert tree.nd_sum_n[node] == pytest.approx(sum(tree.edge_n(e) for e in range(e0, e0 + k)))


def test_epsilon_settings_are_checked() -> None:
    from search.mcts_config import MCTSConfigError

    for bad in (dict(epsilon_greedy=1.5), dict(epsilon_checks=-0.1), dict(epsilon_greedy=0.6, epsilon_checks=0.6),
                dict(epsilon_greedy=0.05, root_rule="gumbel", score_formula="gumbel")):
        with pytest.raises(MCTSConfigError):
            MCTSConfig.of(**bad).validate()  # type: ignore[arg-type]
    e = factory.create("material-mcts:epsilon_greedy=0.05,epsilon_checks=0.01", "crazyhouse")
    pos = board.new_position("crazyhouse")
    r = e.play(pos, Limits(nodes=64))
    assert r.forfeit is None and r.move in pos.legal_moves()
    e.close()
