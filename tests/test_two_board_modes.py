"""The shared driver's Gumbel and graph-search modes on two boards (search/two_board_gumbel.py, the
two-board tree with mcgs): Sequential Halving on our board, the final move among our board's
actions (the sit included), the mate guard, transpositions of the two boards' move orders, no
cycles, team signs, and registry seats whose games replay."""
from __future__ import annotations

import random

import pytest

from board import move_from_uci, move_to_uci
from board.bughouse import SIT, BughouseGame, sit_move, split_move, two_board_move
from evaluators.bughouse_classical import BughouseClassicalEvaluator
from search.two_board import BughouseLimits
from search.halving import considered_visits
from search.two_board import TwoBoardMCTS, seat_config
from search.two_board_gumbel import SeatGumbel
from search.two_board_walk import TwoBoardWalk

KINGS_W = "k7/8/8/8/8/8/8/K7[] w - - 0 1"
SMOTHER = "6rk/6pp/8/8/8/8/8/K7[N] w - - 0 1"  # board A: N@f7 mates
GUMBEL = {"root_rule": "gumbel", "score_formula": "gumbel"}


def run(game: BughouseGame, board_id: int, nodes: int = 300, seed: int = 1, **cfg: object):
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(**cfg), random.Random(seed))  # type: ignore[arg-type]
    return s, s.run(game, board_id, BughouseLimits(nodes=nodes))


def own_edges(s: TwoBoardMCTS) -> list[int]:
    t = s.tree
    e0 = int(t.nd_edge0[s.root])
    assert s.walk is not None
    return [e for e in range(e0, e0 + int(t.nd_nedges[s.root])) if split_move(int(t.ed_move[e]))[0] == s.walk.own_board]


def untimed_position(rng: random.Random) -> tuple[BughouseGame, int]:
    while True:
        g = BughouseGame()
        for _ in range(rng.randrange(4, 30)):
            b = rng.randrange(2)
            if g.legal_moves(b):
                g.push(b, rng.choice(g.legal_moves(b)))
        b = rng.randrange(2)
        if not g.is_game_over() and g.legal_moves(b):
            return g, b


@pytest.mark.parametrize("cfg", [GUMBEL, {"mcgs": True}, {**GUMBEL, "mcgs": True}])
def test_finds_a_drop_mate(cfg):
    s, r = run(BughouseGame(SMOTHER + " | " + KINGS_W), 0, **cfg)
    assert r.board_id == 0 and r.move == move_from_uci("N@f7") and r.value > 0.8


def test_sequential_halving_spreads_our_boards_budget():
    # every simulation starts on our board (root_own_p 1): its actions' visits are Sequential
    # Halving's plan for the root's budget (nodes - 1: the root's own evaluation is the first node)
    nodes = 200
    s, r = run(BughouseGame(), 0, nodes=nodes, root_own_p=1.0, gumbel_scale=0.0, batch_size=1, **GUMBEL)
    assert isinstance(s.seat_root, SeatGumbel)
    counts = [0] * len(own_edges(s))
    for want in considered_visits(min(len(counts), 16), nodes - 1):
        counts[counts.index(want)] += 1
    assert sorted(s.tree.edge_n(e) for e in own_edges(s)) == sorted(counts)
    assert r.other_visits == 0 and r.nodes == nodes
    # the move played is a most visited action of our board
    best = max(s.tree.edge_n(e) for e in own_edges(s))
    assert any(split_move(int(s.tree.ed_move[e]))[1] == r.move and s.tree.edge_n(e) == best for e in own_edges(s))


def test_the_other_board_gets_its_share_and_the_plan_ours():
    s, r = run(BughouseGame(), 1, nodes=400, seed=3, **GUMBEL)
    assert 0 < r.other_visits < r.own_visits  # root_own_p 0.9
    assert sum(s.tree.edge_n(e) for e in own_edges(s)) == r.own_visits


def test_the_sit_is_an_action_and_the_guard_holds():
    game = BughouseGame()
    game.push(*game.parse("B:e2e4"))  # our partner (B-black) to move: we may sit on board A
    s, r = run(game, 0, nodes=120, **GUMBEL)
    t = s.tree
    sit = [e for e in own_edges(s) if split_move(int(t.ed_move[e]))[1] == SIT]
    assert len(sit) == 1
    child = t.child_of(sit[0])  # made first: it grows the node arrays
    t.nd_n[child] = 10**6  # the sit now has the most visits
    assert s.result().move == SIT and s.choose_move() == sit_move(0)
    # mate guard: the favourite ...Nf6?? allows Qxf7 mate, ...g6 does not
    game = BughouseGame()
    for text in ("A:e2e4", "A:e7e5", "A:f1c4", "A:b8c6", "A:d1h5"):
        game.push(*game.parse(text))
    for guard in (False, True):
        s, _ = run(game, 0, nodes=60, root_own_p=1.0, mate_guard=guard, **GUMBEL)
        t = s.tree
        for e in own_edges(s):
            uci = move_to_uci(split_move(int(t.ed_move[e]))[1])
            if uci in ("g8f6", "g7g6"):
                child = t.child_of(e)
                t.nd_n[child] = 10**6 if uci == "g8f6" else 10**5
        assert move_to_uci(s.result().move) == ("g7g6" if guard else "g8f6")


def test_gumbel_target_and_determinism():
    s, r = run(BughouseGame(), 0, nodes=150, seed=4, batch_size=8, **GUMBEL)
    _, r2 = run(BughouseGame(), 0, nodes=150, seed=4, batch_size=8, **GUMBEL)
    assert (r.move, r.value, r.pv, r.own_visits) == (r2.move, r2.value, r2.pv, r2.own_visits)
    target = s.policy_target()
    assert sum(p for _, p in target) == pytest.approx(1.0)
    assert all(p == 0.0 for m, p in target if split_move(m)[0] != 0)


def test_graph_key_merges_move_orders_not_clocks_nor_cycles():
    def walk_after(texts: list[str], clocks: list[int] | None = None) -> TwoBoardWalk:
        w = TwoBoardWalk(BughouseGame(), 0, clocks, -1, [1000, 1500, 1200, 900])
        for text in texts:
            b, m = w.game.parse(text)
            w.push(two_board_move(b, m))
        return w

    assert walk_after(["A:e2e4", "B:d2d4"]).graph_key() == walk_after(["B:d2d4", "A:e2e4"]).graph_key()
    timed = [60000] * 4
    assert walk_after(["A:e2e4", "B:d2d4"], timed).graph_key() != walk_after(["B:d2d4", "A:e2e4"], timed).graph_key()
    shuffle = walk_after(["A:g1f3", "A:g8f6", "A:f3g1", "A:f6g8"])
    assert shuffle.key() == walk_after([]).key() and shuffle.graph_key() != walk_after([]).graph_key()
    sat = walk_after(["B:e2e4"])
    before = sat.graph_key()
    sat.push(sit_move(0))
    assert sat.graph_key() != before


def test_graph_search_merges_and_plays_as_the_tree():
    rng = random.Random(11)
    same = 0
    for k in range(8):
        g, b = untimed_position(rng)
        s, r = run(g, b, nodes=600, seed=k, mcgs=True)
        _, tree = run(g, b, nodes=600, seed=k)
        assert r.nodes == 600 and r.evals <= r.nodes
        assert r.value == pytest.approx(tree.value, abs=0.25)
        same += r.move == tree.move
        if k == 0:
            assert s.mcts._merges > 0 and r.evals < r.nodes
    assert same >= 4
    # team signs on the graph: a position node's values are team 0's, edges see them by their sign
    s, _ = run(BughouseGame(), 0, nodes=800, seed=2, mcgs=True, root_own_p=0.5)
    t = s.tree
    merged = [i for i in range(t.n_nodes) if t.nd_parents[i] > 1 and t.nd_vcnt[i] > 0]
    assert merged
    for i in merged:
        assert -1.0 <= t.node_q(i) <= 1.0


def test_registry_seats_in_both_modes_replay(tmp_path):
    from experiments.harness.replay import replay
    from tests.harness_fakes import bughouse_games_by_workers

    rows = bughouse_games_by_workers("bughouse-mcts:nodes=30,mcgs=true", "bughouse-gumbel:nodes=30", 2, 5, 40, tmp_path)
    assert rows[0] == rows[1]
    assert [o.agrees for o in replay(tmp_path / "w2.sqlite", progress=False)] == [True, True]
