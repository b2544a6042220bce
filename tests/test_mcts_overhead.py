"""The MCTS's speed shortcuts give exactly the results of the plain formulas they replace.

``counters_hash`` (transposition-table key without big-int arithmetic) against the formula, and
the PUCT rule's ``select`` (skips the division for unvisited edges that cannot win, and scores only one
edge of the never-touched tail) against a plain implementation of the selection rule of the module
docstring, on random trees with tied and near-tied priors, virtual losses, proven children and odd
settings.
"""
from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from search.mcts import LOSS, UNKNOWN, WIN, MCTSConfig, counters_hash, cpuct, u_divisor
from search.mcts_rules import make_rule
from search.puct import PUCTParams
from search.sixtyfour import SixtyFourParams
from search.mcts_tree import _Tree

C1 = 0x9E3779B97F4A7C15
C2 = 0xC2B2AE3D27D4EB4F
C3 = 0x165667B19E3779F9


def formula(h: int, f: int, r: int) -> int:
    return (h * C1 + f * C2 + r * C3) & 0x7FFFFFFFFFFFFFFF


@given(st.integers(-10, 1 << 22), st.integers(-10, 1 << 22), st.integers(0, 2))
def test_counters_hash_is_the_formula(h: int, f: int, r: int) -> None:
    assert counters_hash(h, f, r) == formula(h, f, r)


def test_counters_hash_at_the_fast_path_edges() -> None:
    for h in (0, 1, 99, 100, (1 << 20) - 1, 1 << 20):
        for f in (1, 2, (1 << 20) - 1, 1 << 20, 1 << 40):
            for r in (0, 1, 2):
                assert counters_hash(h, f, r) == formula(h, f, r)


def reference_select(tree: _Tree, cfg: MCTSConfig, node: int) -> int:
    """The selection rule as written before the speed-up (every edge scored)."""
    e0 = int(tree.nd_edge0[node])
    k = int(tree.nd_nedges[node])
    sum_n = tree.nd_sum_n[node]
    pp = cfg.settings(PUCTParams)
    solver = cfg.tree.solver or cfg.tree.fix_checkmates
    sixtyfour = cfg.score_formula == "sixtyfour"
    if sixtyfour:
        c = cfg.settings(SixtyFourParams).sixtyfour_c * math.sqrt(sum_n + 1.0)
        ud = 1.0
    else:
        c = cpuct(pp, sum_n) * math.sqrt(max(sum_n, 1.0))
        ud = u_divisor(pp, sum_n)
    best, best_e, win_e, lose_e = -1e30, -1, -1, -1
    for e in range(e0, e0 + k):
        if not sixtyfour and tree.edge_n(e) == 0 and tree.edge_vl(e) == 0:
            q0 = pp.check_q_init if pp.check_urgency and tree.ed_check[e] else pp.fpu
            score = q0 + c * tree.ed_prior[e] / ud
            if score > best:
                best, best_e = score, e
            continue
        child = int(tree.ed_child[e])
        if solver and child >= 0:
            pr = tree.nd_proven[child]
            if pr == LOSS:
                if tree.nd_plies[child] == 0:
                    return e
                if win_e < 0 or tree.nd_plies[child] < tree.nd_plies[int(tree.ed_child[win_e])]:
                    win_e = e
                continue
            if pr == WIN and cfg.tree.solver:
                if lose_e < 0 or tree.nd_plies[child] > tree.nd_plies[int(tree.ed_child[lose_e])]:
                    lose_e = e
                continue
        inflight = float(tree.edge_vl(e)) * cfg.batching.virtual_loss
        n = float(tree.edge_n(e)) + inflight
        if sixtyfour:
            q = 0.5 * (-tree.nd_value[child] + (tree.edge_w(e) - inflight) / n) if n > 0.0 and child >= 0 else pp.fpu
            score = q + c * tree.ed_prior[e] / (1.0 + n)
        else:
            q = (tree.edge_w(e) - inflight) / n if n > 0.0 else pp.fpu
            score = q + c * tree.ed_prior[e] / (ud + n)
        if score > best:
            best, best_e = score, e
    if best_e >= 0:
        return best_e
    if win_e >= 0:
        return win_e
    return lose_e if lose_e >= 0 else e0


CONFIGS = [MCTSConfig(), MCTSConfig.vanilla(), MCTSConfig.sixtyfour(), MCTSConfig.of(cpuct_init=0.0, cpuct_schedule=False),
           MCTSConfig.of(cpuct_init=-1.0, cpuct_schedule=False), MCTSConfig.of(u_divisor=True, u_init=-0.5, u_final=-0.25),
           MCTSConfig.of(fpu=0.0, solver=False), MCTSConfig.of(check_urgency=True), MCTSConfig.of(check_urgency=True, check_q_init=-1.0),
           MCTSConfig.of(check_urgency=True, fpu=0.0, check_q_init=0.0)]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(CONFIGS))))
def test_select_is_the_plain_rule(seed: int, which: int) -> None:
    rng = random.Random(seed)
    cfg = CONFIGS[which]
    tree = _Tree(cfg, make_rule(cfg).check_urgency)
    root = tree.new_node(0)
    k = rng.randint(1, 60)
    pool = [0.0, 1.0 / k, 0.5, rng.random(), rng.random() * 1e-9, 1.0]
    style = rng.randrange(4)
    if style == 0:
        priors = [1.0 / k] * k
    elif style == 1:
        priors = [rng.choice(pool) for _ in range(k)]  # many ties
    elif style == 2:
        priors = [rng.random() for _ in range(k)]
    else:
        priors = [(1.0 / k) * (1.0 + 1e-16 * rng.randint(0, 3)) for _ in range(k)]  # near-ties
    tree.expand(root, list(range(1, k + 1)), priors, rng.uniform(-1, 1))
    checks_style = rng.randrange(3)  # no checks, some, all
    for e in range(k):
        if checks_style == 2 or (checks_style == 1 and rng.random() < 0.3):
            tree.ed_check[e] = 1
    visited = 0
    for e in range(k):
        kind = rng.randrange(6)
        if kind == 1:
            child = tree.child_of(e)  # an edge's statistics live in its child (made before reading
            tree.nd_vl[child] = rng.randint(1, 3)  # tree.nd_vl: child_of grows the node vecs)
        elif kind >= 2:
            n = rng.randint(1, 50)
            child = tree.child_of(e)
            tree.nd_n[child] = n
            tree.nd_w[child] = rng.uniform(-n, n)
            visited += n
            tree.nd_value[child] = rng.uniform(-1, 1)
            if kind == 5:
                tree.nd_proven[child] = rng.choice([LOSS, WIN, UNKNOWN])
                tree.nd_plies[child] = rng.randint(0, 6)
    tree.nd_sum_n[root] = float(visited) + rng.choice([0.0, 3.0, 6.0])
    # The search marks an edge touched when it first gets a virtual loss (add_virtual_loss); this
    # tree was filled by hand, so it sets the same invariant: nd_touched is one past the last edge
    # with N > 0 or a virtual loss.
    touched = [e for e in range(k) if tree.edge_n(e) > 0 or tree.edge_vl(e) > 0]
    tree.nd_touched[root] = touched[-1] + 1 if touched else 0
    assert make_rule(tree.cfg).select(tree, root) == reference_select(tree, cfg, root)


def test_expand_gives_fresh_edges_their_defaults_beyond_the_constant_slices() -> None:
    tree = _Tree(MCTSConfig(), make_rule(MCTSConfig()).check_urgency)
    for k in (1, 37, 512, 513, 700):
        node = tree.new_node(0)
        priors = [1.0 / k] * k
        tree.expand(node, list(range(k)), priors, 0.25)
        e0 = int(tree.nd_edge0[node])
        assert int(tree.nd_nedges[node]) == k and tree.n_edges == e0 + k == len(tree.ed_move)
        for arr in (tree.ed_prior, tree.ed_child, tree.ed_check):
            assert len(arr) == tree.n_edges
        assert [int(tree.ed_move[e]) for e in range(e0, e0 + k)] == list(range(k))
        assert [tree.ed_prior[e] for e in range(e0, e0 + k)] == priors
        assert all(tree.ed_child[e] == -1 and tree.ed_check[e] == 0 and tree.edge_n(e) == 0
                   and tree.edge_w(e) == 0.0 and tree.edge_vl(e) == 0 for e in range(e0, e0 + k))
        assert tree.nd_value[node] == 0.25


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(CONFIGS))))
def test_select_stays_the_plain_rule_as_edges_get_visited(seed: int, which: int) -> None:
    """The cached best edges of the untouched tail (nd_tail_best) follow the visits: each selected
    edge is visited as the search does (virtual loss, then a backed-up value), and the next
    selection is checked against the plain rule again."""
    rng = random.Random(seed)
    cfg = CONFIGS[which]
    tree = _Tree(cfg, make_rule(cfg).check_urgency)
    root = tree.new_node(0)
    k = rng.randint(1, 50)
    pool = [1.0 / k, 0.5 / k, 2.0 / k, (1.0 / k) * (1.0 + 1e-16)]
    priors = [rng.choice(pool) if rng.random() < 0.5 else rng.random() / k for _ in range(k)]
    tree.expand(root, list(range(1, k + 1)), priors, 0.0)
    for e in range(k):
        if rng.random() < 0.3:
            tree.ed_check[e] = 1
    for _ in range(3 * k):
        e = make_rule(tree.cfg).select(tree, root)
        assert e == reference_select(tree, cfg, root)
        child = tree.child_of(e)  # as the search does before the virtual loss
        tree.add_virtual_loss(root, e)
        if rng.random() < 0.2:
            continue  # left in flight
        tree.nd_vl[child] -= 1
        tree.nd_sum_n[root] -= cfg.batching.virtual_loss
        tree.nd_n[child] += 1
        tree.nd_w[child] += rng.uniform(-1, 1)
        tree.nd_sum_n[root] += 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(0, 10**6)), max_size=3000),
       st.integers(0, 2**32 - 1))
def test_key_index_is_a_dict(pairs: list[tuple[int, int]], seed: int) -> None:
    """The transposition table's open-addressing index answers as a dict would (growth, negative
    keys, keys equal modulo the capacity, replaced slots)."""
    from search.transpositions import KeyIndex
    rng = random.Random(seed)
    pairs = pairs + [((k * 1024 + rng.randint(0, 3) + 2**63) % 2**64 - 2**63, s) for k, s in pairs[:200]]  # collisions
    idx = KeyIndex()
    ref: dict[int, int] = {}
    for key, slot in pairs:
        idx.put(key, slot)
        ref[key] = slot
    assert idx.size == len(ref)
    for key, slot in ref.items():
        assert idx.get(key) == slot
    for _ in range(200):
        key = rng.randint(-(2**63), 2**63 - 1)
        assert idx.get(key) == ref.get(key, -1)
