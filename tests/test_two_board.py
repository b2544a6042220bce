"""Bughouse MCTS on the shared driver (search/two_board.py): LazyBug's rules as the annex
(tests/oracles/bughouse_mcts.py) applies them, on the shared tree (team values), batches, limits and
tree reuse; the walk cursor (search/two_board_walk.py); the seat through the registry."""
import random

import pytest

from board import move_from_uci, move_to_uci
from board.bughouse import SIT, BughouseGame, sit_move, split_move, two_board_move
from evaluators.base import EvaluatorError
from evaluators.bughouse_classical import BughouseClassicalEvaluator
from tests.oracles.bughouse_mcts import BughouseLimits, BughouseMCTS
from search.mcts_config import MCTSConfigError
from search.mcts_tree import EXPANDED
from search.two_board import TwoBoardMCTS, seat_config
from search.two_board_walk import TwoBoardWalk

KINGS_W = "k7/8/8/8/8/8/8/K7[] w - - 0 1"
KINGS_B = "k7/8/8/8/8/8/8/K7[] b - - 0 1"
SMOTHER = "6rk/6pp/8/8/8/8/8/K7[N] w - - 0 1"  # board A: N@f7 mates (a knight check: no block)


def search(game: BughouseGame, board_id: int, nodes: int = 400, seed: int = 1, **cfg: object):
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(**cfg), random.Random(seed))  # type: ignore[arg-type]
    return s, s.run(game, board_id, BughouseLimits(nodes=nodes))


def root_edges(s: TwoBoardMCTS) -> list[tuple[int, int, int]]:
    """(board, move, N) of every root edge."""
    t = s.tree
    e0 = int(t.nd_edge0[s.root])
    return [(*split_move(int(t.ed_move[e])), t.edge_n(e)) for e in range(e0, e0 + int(t.nd_nedges[s.root]))]


def random_position(rng: random.Random) -> tuple[BughouseGame, int]:
    while True:
        g = BughouseGame(base_ms=60000)
        at = 0
        for _ in range(rng.randrange(4, 40)):
            b = rng.randrange(2)
            if g.legal_moves(b):
                at += rng.randrange(100, 3000)
                g.push(b, rng.choice(g.legal_moves(b)), at_ms=at)
        b = rng.randrange(2)
        if not g.is_game_over(at) and g.legal_moves(b):
            return g, at


def test_plays_as_the_annex_does():
    # The same rules on another tree: the random draws differ once the node counts differ by the
    # root's own visit (the shared driver counts it), so most moves, not all, are the same.
    rng = random.Random(5)
    same = 0
    for k in range(12):
        g, at = random_position(rng)
        b = k % 2
        if not g.legal_moves(b):
            b = 1 - b
        old = BughouseMCTS(BughouseClassicalEvaluator(), None, random.Random(k)).run(g, b, BughouseLimits(nodes=300), at_ms=at)
        new = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(k)).run(g, b, BughouseLimits(nodes=300), at_ms=at)
        same += old.move == new.move
        assert new.value == pytest.approx(old.value, abs=0.15)
    assert same >= 9
    # the start position: the same move, value and principal variation
    old = BughouseMCTS(BughouseClassicalEvaluator(), None, random.Random(1)).run(BughouseGame(), 0, BughouseLimits(nodes=1000))
    new = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(1)).run(BughouseGame(), 0, BughouseLimits(nodes=1000))
    assert (new.move, new.pv[:4]) == (old.move, old.pv[:4]) and new.value == pytest.approx(old.value, abs=1e-3)


def test_finds_a_drop_mate_and_values_it_as_won():
    _, r = search(BughouseGame(SMOTHER + " | " + KINGS_W), 0, nodes=300)
    assert r.board_id == 0 and r.move == move_from_uci("N@f7") and r.value > 0.8


def test_team_values_are_signed_by_the_mover_of_each_edge():
    # Board A: team 0 (A-white) mates at once; board B: B-black (team 0 too) to move. Every root
    # edge is a team-0 move, so every visited edge's Q is team 0's: the mate edge's is +1.
    s, r = search(BughouseGame(SMOTHER + " | " + KINGS_B), 0, nodes=300, root_own_p=0.5)
    t = s.tree
    e0 = int(t.nd_edge0[s.root])
    for e in range(e0, e0 + int(t.nd_nedges[s.root])):
        if t.edge_n(e) > 0:
            assert t.nd_sign[t.ed_child[e]] == 1.0
            if split_move(int(t.ed_move[e])) == (0, move_from_uci("N@f7")):
                assert t.edge_q(e) == 1.0
    # board B's mover is team 1 here: its edges carry sign -1
    s, _ = search(BughouseGame(SMOTHER + " | " + KINGS_W), 0, nodes=300, root_own_p=0.5)
    t = s.tree
    e0 = int(t.nd_edge0[s.root])
    signs = {split_move(int(t.ed_move[e]))[0]: t.nd_sign[t.ed_child[e]]
             for e in range(e0, e0 + int(t.nd_nedges[s.root])) if t.ed_child[e] >= 0}
    assert signs == {0: 1.0, 1: -1.0}


def test_node_accounting_batches_and_determinism():
    g = BughouseGame()
    s1, r1 = search(g, 1, nodes=250, seed=7)
    _, r2 = search(g, 1, nodes=250, seed=7)
    assert r1.nodes == 250 and r1.evals == 250 and s1.tree.nd_sum_n[s1.root] == 249
    assert (r1.move, r1.own_visits, r1.other_visits, r1.pv) == (r2.move, r2.own_visits, r2.other_visits, r2.pv)
    assert r1.own_visits > r1.other_visits  # root: own board with p = 0.9
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(batch_size=8), random.Random(3))
    s.start(BughouseGame(), 0, BughouseLimits(nodes=100))
    s.tell(s.evaluator.evaluate(s.ask()))  # the root
    leaves = s.ask()
    assert len(leaves) == 8 and len({(lf.state, tuple(lf.moves)) for lf in leaves}) == 8
    with pytest.raises(EvaluatorError):
        s.tell(s.evaluator.evaluate(leaves[:1]))


def test_limits_in_the_shared_units():
    fresh = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(default_nodes=60), random.Random(1))
    assert fresh.run(BughouseGame(), 0).nodes == 60  # nothing set: default_nodes root visits
    r = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(1)).run(BughouseGame(), 0, BughouseLimits(evals=25))
    assert r.evals == 25
    r = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(1)).run(BughouseGame(), 0, BughouseLimits(playouts=40))
    assert r.nodes == 40


def test_sit_rules():
    g = BughouseGame(KINGS_W + " | " + KINGS_B)  # the partner (B-black, team 0) is to move: sit allowed
    s, r = search(g, 0, nodes=200, root_own_p=0.0)
    assert (0, SIT) in [(b, m) for b, m, _ in root_edges(s)]
    assert r.sit and r.other_visits > 1.4 * r.own_visits
    _, r = search(g, 0, nodes=200, root_own_p=1.0)
    assert not r.sit
    s, r = search(BughouseGame(KINGS_W + " | " + KINGS_W), 0, nodes=200, root_own_p=0.0)  # an opponent there
    assert (0, SIT) not in [(b, m) for b, m, _ in root_edges(s)] and not r.sit
    # the partner sits: no sit for us, no edge on the partner's board
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(1))
    r = s.run(g, 0, BughouseLimits(nodes=100), partner_sitting=True)
    assert {b for b, _, _ in root_edges(s)} == {0} and (0, SIT) not in [(b, m) for b, m, _ in root_edges(s)]
    assert not r.sit and r.other_visits == 0


def test_the_walk_sits_simulates_clocks_and_undoes():
    g = BughouseGame(KINGS_W + " | " + KINGS_W, base_ms=60000)
    g.set_clock(0, 30000)   # A-white, us
    g.set_clock(2, 10000)   # B-white, an opponent, to move: waiting wins on time
    w = TwoBoardWalk(g.copy(), 0, [g.time_left(s) for s in range(4)], -1, [1000, 1000, 1000, 1000])
    key = w.key()
    assert sit_move(0) in w.moves()
    w.push(sit_move(0))
    assert w.sit_board == 0 and w.last_team == 0 and w.key() != key
    assert all(split_move(int(m))[0] == 1 for m in w.moves())
    w.push(two_board_move(1, w.game.legal_moves(1)[0]))
    assert w.sit_board == -1 and w.clocks == [29000, 60000, 9000, 60000] and w.last_team == 1
    w.pop()
    w.pop()
    assert w.key() == key and w.clocks == [30000, 60000, 10000, 60000] and w.sit_board == -1
    g.set_clock(0, 50)  # our flag falls with our next simulated move
    w = TwoBoardWalk(g.copy(), 0, [50, 60000, 10000, 60000], -1, [1000] * 4)
    w.push(two_board_move(0, w.game.legal_moves(0)[0]))
    assert w.over(True) == (True, -1.0)


def test_simulated_clocks_make_flags_terminal():
    g = BughouseGame(KINGS_W + " | " + KINGS_W, base_ms=60000)
    g.set_clock(0, 50)
    _, r = search(g, 0, nodes=100)
    assert r.value < -0.95
    g.set_clock(0, 60000)
    g.set_clock(1, 50)
    _, r = search(g, 0, nodes=100)
    assert r.value > 0.85


def test_a_root_where_the_game_is_over_ends_the_search():
    # our opponent's clock is at 0: the root is a terminal node; a time limit alone used to loop
    # until the caller gave up (the time stopper waits for an expanded root)
    g = BughouseGame(KINGS_W + " | " + KINGS_W, base_ms=60000)
    g.set_clock(1, 0)
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(1))
    s.start(g, 0, BughouseLimits(movetime=600.0))
    for _ in range(100):
        if s.done():
            break
        s.ask()
    assert s.done()
    r = s.result()
    assert r.value == 1.0 and r.sit and r.nodes < 100


def test_tree_reuse_follows_moves_on_both_boards_and_the_partner_sit():
    g = BughouseGame()
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), None, random.Random(2))
    s.run(g, 1, BughouseLimits(nodes=300))
    a_best = max((e for e in root_edges(s) if e[0] == 0), key=lambda e: e[2])
    g.push(0, a_best[1])
    s.start(g, 1, BughouseLimits(nodes=10))
    assert s.reused_visits > 0 and s.tree.nd_state[s.root] == EXPANDED
    r = s.run(g, 1, BughouseLimits(playouts=50))
    assert r.nodes == 50 and r.move in g.legal_moves(1)
    h = BughouseGame()
    h.push(1, move_from_uci("a2a3"))
    s.start(h, 1, BughouseLimits(nodes=10))
    assert s.reused_visits == 0
    # the partner (A-white) declares a sit: the node below A's sit edge
    g = BughouseGame()
    g.push_str("B:e2e4")
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(root_own_p=0.5, fpu=1.0), random.Random(4))
    s.run(g, 1, BughouseLimits(nodes=400))
    assert [n for b, m, n in root_edges(s) if (b, m) == (0, SIT)][0] > 0
    s.start(g, 1, BughouseLimits(nodes=10), partner_sitting=True)
    assert s.reused_visits > 0 and {b for b, _, _ in root_edges(s)} == {1}


def test_mate_guard():
    game = BughouseGame()
    for text in ("A:e2e4", "A:e7e5", "A:f1c4", "A:b8c6", "A:d1h5"):
        game.push(*game.parse(text))
    for guard in (False, True):
        s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(mate_guard=guard, root_own_p=1.0), random.Random(1))
        s.run(game, 0, BughouseLimits(nodes=60))
        t = s.tree
        e0 = int(t.nd_edge0[s.root])
        for e in range(e0, e0 + int(t.nd_nedges[s.root])):
            uci = move_to_uci(split_move(int(t.ed_move[e]))[1])
            if uci in ("g8f6", "g7g6"):  # the favourite ...Nf6?? allows Qxf7 mate
                child = t.child_of(e)  # made first: it grows the node arrays
                t.nd_n[child] = 10**6 if uci == "g8f6" else 10**5
        assert move_to_uci(s.result().move) == ("g7g6" if guard else "g8f6")


def test_bad_settings_are_errors():
    for bad in ({"solver": True}, {"transposition_table": True}, {"root_own_p": 1.5}, {"sit_ratio": 0.0},
                {"score_formula": "sixtyfour"}, {"multipv": 2}):
        with pytest.raises(MCTSConfigError):
            seat_config(**bad).validate()  # type: ignore[arg-type]
    with pytest.raises(MCTSConfigError):
        TwoBoardMCTS(BughouseClassicalEvaluator()).start(BughouseGame(), 2)


def test_a_seat_of_the_registry_plays_it_and_its_games_replay(tmp_path):
    """The seat made by the registry runs the shared-driver search; untimed games do not depend on
    the worker that plays them, and replay move for move."""
    from engines.registry import EvaluatorPool
    from engines.factory import make_seat
    from experiments.harness.replay import replay
    from tests.harness_fakes import bughouse_games_by_workers

    seat = make_seat("bughouse-classical+two-board-mcts:nodes=30", 1, EvaluatorPool())
    assert seat.settings()["search"] == "two-board-mcts"
    rows = bughouse_games_by_workers("bughouse-classical+two-board-mcts:nodes=30", "bughouse-mcts:nodes=30", 2, 3, 40,
                                     tmp_path)
    assert rows[0] == rows[1]
    assert [o.agrees for o in replay(tmp_path / "w2.sqlite", progress=False)] == [True, True]


def test_the_legacy_search_left_search_and_its_games_replay_from_a_checkout(tmp_path, monkeypatch, capsys):
    """docs/bughouse.md, "Old bughouse games": the own-tree search is a test oracle; where it does not
    import (an installed searchbench) its spec is refused in one line with exit 2, and its stored
    games replay from a checkout (`PYTHONPATH=. searchbench replay DB --every 8`)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from engines import registry
    from experiments.cli import main as cli
    from tests.harness_fakes import bughouse_games_by_workers

    root = Path(__file__).resolve().parent.parent
    assert not (root / "search" / "bughouse_mcts.py").exists()
    assert registry.SEARCHES["bughouse-mcts"].module == "tests.oracles.bughouse_mcts"  # the checkout's root on the path
    bughouse_games_by_workers("bughouse-classical+bughouse-mcts:nodes=30", "bughouse-classical+two-board-mcts:nodes=30",
                              2, 5, 40, tmp_path)
    with monkeypatch.context() as m:  # as installed: tests/ not there
        m.delitem(registry.SEARCHES, "bughouse-mcts")
        assert cli.main(["engines", "bughouse-classical+bughouse-mcts"]) == 2
        err = capsys.readouterr().err
        assert "left the suite" in err and "two-board-mcts" in err and len(err.strip().splitlines()) == 1
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(Path(sys.executable).parent / "searchbench"), "replay", str(tmp_path / "w2.sqlite"),
                          "--every", "8", "--quiet"], cwd=root, env={**env, "PYTHONPATH": "."},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "every move agrees" in out.stdout, out.stdout + out.stderr


def test_sixty_pinned_two_board_searches() -> None:
    """60 seats' searches (LazyBug's rules, Gumbel's, graph search, root_own_p 0.5 one leaf at a time;
    random positions, 200 nodes) give the moves, values and root visits they gave when the seat's
    roots became parts (the generic seat around PUCT's root, 2026-11-29): a refactor keeps them."""
    import hashlib
    import json

    out = []
    for mode in ({}, {"root_rule": "gumbel", "score_formula": "gumbel", "tree_reuse": False}, {"mcgs": True},
                 {"root_own_p": 0.5, "batch_size": 1}):
        rng = random.Random(7)
        for k in range(15):
            g, at = BughouseGame(base_ms=60_000), 0
            for _ in range(rng.randrange(0, 30)):
                b = rng.randrange(2)
                if g.legal_moves(b):
                    at += rng.randrange(100, 3000)
                    g.push(b, rng.choice(g.legal_moves(b)), at_ms=at)
            b = k % 2
            if g.is_game_over(at) or not g.legal_moves(b):
                continue
            s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(**mode), random.Random(k))
            r = s.run(g, b, BughouseLimits(nodes=200), at_ms=at)
            t, root = s.tree, s.root
            e0 = int(t.nd_edge0[root])
            out.append((r.board_id, r.move, round(r.value, 9), [t.edge_n(e) for e in range(e0, e0 + int(t.nd_nedges[root]))]))
    assert len(out) == 60
    assert hashlib.sha256(json.dumps(out).encode()).hexdigest()[:16] == "a487c60a44a39bb9"
