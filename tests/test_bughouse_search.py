"""Bughouse search and evaluation: the classical bughouse evaluator (team values, pockets of both
boards, capture flow, per-board priors with the sit move) and the LazyBug-style MCTS (both boards
in one tree, the sit move and its rules, the final-move rule, simulated clocks, node accounting)."""
import math
import random

import pytest

from board import move_from_uci
from board.bughouse import BughouseGame, sit_move, split_move, two_board_move
from evaluators.base import EvaluatorError, Leaf
from evaluators.bughouse_classical import (
    SIT_PRIOR, BughouseClassicalEvaluator, capture_flow,
)
from tests.oracles.bughouse_mcts import (
    SIT, BughouseLimits, BughouseMCTS, BughouseMCTSConfig, BughouseSearchError, cpuct, recent_move_ms,
)

KINGS_W = "k7/8/8/8/8/8/8/K7[] w - - 0 1"
KINGS_B = "k7/8/8/8/8/8/8/K7[] b - - 0 1"
# Board A: N@f7 is a smothered mate (a knight check cannot be blocked: a real bughouse mate).
SMOTHER = "6rk/6pp/8/8/8/8/8/K7[N] w - - 0 1"


def leaf_of(game: BughouseGame, focus: int, sit: tuple[int, ...] = ()) -> Leaf:
    moves = [two_board_move(b, m) for b in (0, 1) for m in game.legal_moves(b)]
    moves += [sit_move(b) for b in sit]
    state = game.boards[0].raw_state() + game.boards[1].raw_state() + (focus, -1, -1, -1, -1)
    return Leaf(state, moves, "bughouse")


def value(game: BughouseGame, focus: int) -> float:
    return BughouseClassicalEvaluator().evaluate([leaf_of(game, focus)])[0].value


def search(game: BughouseGame, board_id: int, nodes: int = 400, seed: int = 1, **cfg: object):
    s = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(**cfg), random.Random(seed))  # type: ignore[arg-type]
    return s, s.run(game, board_id, BughouseLimits(nodes=nodes))


# ------------------------------------------------------------------------------------ evaluator

def test_start_position_is_even_for_both_teams():
    g = BughouseGame()
    assert value(g, 0) == pytest.approx(0.0, abs=1e-12)
    assert value(g, 1) == pytest.approx(0.0, abs=1e-12)


def test_team_value_counts_board_material_and_both_boards_pockets():
    # team 0 = A-white + B-black. Black's queen missing on board A: good for team 0.
    g = BughouseGame("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | "
                     "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1")
    assert value(g, 0) > 0.2
    # focus board B: White to move there is team 1, so the same position has the opposite value
    assert value(g, 1) == pytest.approx(-value(g, 0))
    # a queen in B-black's pocket (team 0) on the other board also counts for team 0
    h = BughouseGame("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | "
                     "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[q] w KQkq - 0 1")
    assert value(h, 0) > 0.2
    # and more than the same queen on the board (a piece in hand is worth 20% more)
    assert value(h, 0) > value(g, 0) * 0.9


def test_capture_flow_counts_the_piece_twice_and_respects_defenders():
    hanging = BughouseGame("k7/8/8/3n4/8/8/8/K2Q4[] w - - 0 1 | " + KINGS_W)
    b = hanging.boards[0]
    assert capture_flow(b.raw_state(), b.legal_moves()) == 260 + 312  # knight off the board + in hand
    defended = BughouseGame("k7/8/4p3/3n4/8/8/8/K2Q4[] w - - 0 1 | " + KINGS_W)
    b = defended.boards[0]
    assert capture_flow(b.raw_state(), b.legal_moves()) == 0  # Qxd5 exd5 loses the queen
    # the side to move's flow is credited to its team
    no_flow = BughouseGame("k7/8/8/3n4/8/8/8/K2Q4[] b - - 0 1 | " + KINGS_W)
    assert value(hanging, 0) > value(no_flow, 0)


def test_priors_are_one_distribution_per_board_with_the_sit_prior():
    g = BughouseGame("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | "
                     "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] b KQkq - 0 1")
    leaf = leaf_of(g, 0, sit=(0,))
    ev = BughouseClassicalEvaluator().evaluate([leaf])[0]
    assert len(ev.priors) == len(leaf.moves)
    per_board = [0.0, 0.0]
    for bm, p in zip(leaf.moves, ev.priors):
        b, m = split_move(bm)
        per_board[b] += p
        if m == 0:
            assert b == 0 and p == pytest.approx(SIT_PRIOR)
    assert per_board == [pytest.approx(1.0), pytest.approx(1.0)]


def test_evaluator_refuses_other_leaves():
    ev = BughouseClassicalEvaluator()
    g = BughouseGame()
    with pytest.raises(EvaluatorError):
        ev.evaluate([Leaf(g.boards[0].raw_state(), g.legal_moves(0), "crazyhouse")])
    with pytest.raises(EvaluatorError):
        BughouseClassicalEvaluator(sit_prior=1.5)


# ------------------------------------------------------------------------------------ search

def test_cpuct_is_lazybugs():
    cfg = BughouseMCTSConfig()
    assert cpuct(cfg, 0) == pytest.approx(2.0 + 1.5 * math.log(19653 / 19652))
    assert cpuct(cfg, 19652) == pytest.approx(2.0 + 1.5 * math.log((1 + 2 * 19652) / 19652))


def test_finds_a_drop_mate_and_values_it_as_won():
    g = BughouseGame(SMOTHER + " | " + KINGS_W)
    _, r = search(g, 0, nodes=300)
    assert r.board_id == 0 and r.move == move_from_uci("N@f7")
    assert r.value > 0.8


def test_node_accounting_and_determinism():
    g = BughouseGame()
    _, r1 = search(g, 1, nodes=250, seed=7)
    _, r2 = search(g, 1, nodes=250, seed=7)
    assert r1.nodes == 250 and r1.evals >= 250
    assert (r1.move, r1.own_visits, r1.other_visits, r1.pv) == (r2.move, r2.own_visits, r2.other_visits, r2.pv)
    assert r1.own_visits + r1.other_visits <= 250
    assert r1.own_visits > r1.other_visits  # root: own board with p = 0.9


def test_a_batch_spreads_over_distinct_leaves_with_virtual_loss():
    s = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(batch_size=8), random.Random(3))
    s.start(BughouseGame(), 0, BughouseLimits(nodes=100))
    s.tell(s.evaluator.evaluate(s.ask()))  # the root
    leaves = s.ask()
    assert len(leaves) == 8
    assert len({(lf.state, tuple(lf.moves)) for lf in leaves}) == 8
    assert sum(sum(v) for v in s.root.vl) == 8  # one virtual loss per leaf in flight at the root
    s.tell(s.evaluator.evaluate(leaves))
    assert sum(sum(v) for v in s.root.vl) == 0
    leaves = s.ask()
    assert len(leaves) > 1
    with pytest.raises(BughouseSearchError):
        s.tell(s.evaluator.evaluate(leaves[:1]))  # fewer answers than leaves in flight


def test_sit_when_the_partners_board_gets_the_visits():
    # A-white (team 0) to move; on board B Black (the partner, team 0) is to move: sit is allowed.
    g = BughouseGame(KINGS_W + " | " + KINGS_B)
    s, r = search(g, 0, nodes=200, root_own_p=0.0)
    assert SIT in s.root.moves[0]
    assert r.sit and r.other_visits > 1.4 * r.own_visits
    # with the visits on our own board we move
    _, r = search(g, 0, nodes=200, root_own_p=1.0)
    assert not r.sit


def test_no_sit_when_an_opponent_is_to_move_on_the_other_board_untimed():
    g = BughouseGame(KINGS_W + " | " + KINGS_W)  # B-white is team 1
    s, r = search(g, 0, nodes=200, root_own_p=0.0)
    assert SIT not in s.root.moves[0]
    assert not r.sit and r.move in g.legal_moves(0)


def test_sit_allowed_when_waiting_wins_on_time():
    def root_moves(our_ms: int, their_ms: int) -> list[int]:
        g = BughouseGame(KINGS_W + " | " + KINGS_W, base_ms=60000)
        g.set_clock(0, our_ms)    # A-white, us
        g.set_clock(2, their_ms)  # B-white, an opponent, to move
        s = BughouseMCTS(BughouseClassicalEvaluator(), rng=random.Random(1))
        s.start(g, 0, BughouseLimits(nodes=1), at_ms=0)
        s.tell(s.evaluator.evaluate(s.ask()))
        return s.root.moves[0]

    assert SIT in root_moves(30000, 10000)
    assert SIT not in root_moves(10000, 30000)


def test_partner_sitting_blocks_our_sit_and_the_partner_board():
    g = BughouseGame(KINGS_W + " | " + KINGS_B)
    s = BughouseMCTS(BughouseClassicalEvaluator(), rng=random.Random(1))
    r = s.run(g, 0, BughouseLimits(nodes=100), partner_sitting=True)
    assert SIT not in s.root.moves[0] and s.root.moves[1] == []
    assert not r.sit and r.other_visits == 0


def test_simulated_clocks_make_flags_terminal():
    g = BughouseGame(KINGS_W + " | " + KINGS_W, base_ms=60000)
    g.set_clock(0, 50)  # we have 50 ms, every simulated move takes 1000 ms
    _, r = search(g, 0, nodes=100)
    assert r.value < -0.95
    g.set_clock(0, 60000)
    g.set_clock(1, 50)  # our opponent on board A flags after our move
    _, r = search(g, 0, nodes=100)
    assert r.value > 0.9


def test_recent_move_times_per_seat():
    g = BughouseGame(base_ms=60000)
    for text, t in (("A:e2e4", 1000), ("B:d2d4", 1500), ("A:e7e5", 4000), ("A:g1f3", 4100)):
        g.push_str(text, t)
    times = recent_move_ms(g)
    assert times == [[1000, 100], [3000], [1500], []]
    assert recent_move_ms(BughouseGame()) == [[], [], [], []]


def test_bad_settings_are_errors():
    with pytest.raises(BughouseSearchError):
        BughouseMCTSConfig(root_own_p=1.5).validate()
    s = BughouseMCTS(BughouseClassicalEvaluator())
    with pytest.raises(BughouseSearchError):
        s.start(BughouseGame(), 2)
    with pytest.raises(BughouseSearchError):
        s.ask()


# ------------------------------------------------------------------------------------ tree reuse

def test_tree_reuse_follows_moves_on_both_boards():
    g = BughouseGame()
    s = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(), random.Random(2))
    r = s.run(g, 1, BughouseLimits(nodes=300))     # B-white; board A (white to move) is explored too
    old_root = s.root
    assert s.reused_visits == 0
    # a visited move on the other board, then our chosen move and a visited reply
    a_moves, a_n = old_root.moves[0], old_root.n[0]
    a_best = a_moves[max(range(len(a_n)), key=a_n.__getitem__)]
    g.push(0, a_best)
    s.start(g, 1, BughouseLimits(nodes=50))
    assert s.root is old_root.children[0][a_moves.index(a_best)]
    kept = s.reused_visits
    assert kept > 0 and kept == s.root.board_visits(0) + s.root.board_visits(1)
    r2 = s.run(g, 1, BughouseLimits(playouts=50))      # playouts: new simulations
    assert r2.nodes >= 50 and r2.move in g.legal_moves(1)
    assert r2.own_visits + r2.other_visits >= kept        # the kept visits still count for the decision
    # an unrelated game (a move the tree never saw as a prefix): a fresh root
    h = BughouseGame()
    h.push(1, move_from_uci("a2a3"))
    s.start(h, 1, BughouseLimits(nodes=10))
    assert s.reused_visits == 0 and s.root.state == 0
    # switched off
    t = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(reuse_tree=False), random.Random(2))
    t.run(BughouseGame(), 1, BughouseLimits(nodes=100))
    g2 = BughouseGame()
    g2.push(0, t.root.moves[0][0])
    t.start(g2, 1, BughouseLimits(nodes=10))
    assert t.reused_visits == 0


def test_limits_count_root_visits_playouts_and_evals_as_the_one_board_searches():
    # search.base's units: nodes = the root's visits (reused ones included), playouts = new
    # simulations, evals = evaluator calls (leaves in flight included)
    def reused_search(seed: int) -> tuple[BughouseMCTS, BughouseGame]:
        g = BughouseGame()
        s = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(), random.Random(seed))
        s.run(g, 1, BughouseLimits(nodes=300))
        a_n = s.root.n[0]
        g.push(0, s.root.moves[0][max(range(len(a_n)), key=a_n.__getitem__)])
        return s, g

    s, g = reused_search(2)
    s.start(g, 1, BughouseLimits(nodes=10))
    kept = s.reused_visits
    assert kept > 10
    r = s.run(g, 1, BughouseLimits(nodes=kept + 40))
    assert 40 <= r.nodes < 40 + s.config.batch_size      # only the visits the root still lacked
    s, g = reused_search(2)
    r = s.run(g, 1, BughouseLimits(nodes=10))
    assert r.nodes == 0 and r.move in g.legal_moves(1)   # the kept tree already holds them
    s, g = reused_search(2)
    r = s.run(g, 1, BughouseLimits(playouts=40))
    assert 40 <= r.nodes < 40 + s.config.batch_size
    s, g = reused_search(2)
    r = s.run(g, 1, BughouseLimits(evals=25))
    assert r.evals == 25 and r.nodes >= 25
    fresh = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(default_nodes=60), random.Random(1))
    assert fresh.run(BughouseGame(), 0).nodes >= 60           # nothing set: default_nodes root visits


def test_tree_reuse_enters_the_partner_sit_edge():
    # A-white to move (our partner), B-black (us): our search may go through A's moves; when the
    # partner declares a sit, the new root is the node below A's sit edge if it was expanded.
    g = BughouseGame()
    g.push_str("B:e2e4")
    # an optimistic first-play value visits every root edge, the sit edge included
    s = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(root_own_p=0.5, fpu=1.0), random.Random(4))
    s.run(g, 1, BughouseLimits(nodes=400))
    root = s.root
    sit = root.moves[0].index(SIT)
    assert root.n[0][sit] > 0 and root.children[0][sit].state == 2
    s.start(g, 1, BughouseLimits(nodes=10), partner_sitting=True)
    child = root.children[0][sit]
    assert s.root is child and s.root.sit_board == 0
    assert s.reused_visits == child.board_visits(1) and child.board_visits(0) == 0  # only board B moves
    r = s.run(g, 1, BughouseLimits(nodes=30), partner_sitting=True)
    assert r.move in g.legal_moves(1) and s.root.sit_board == 0


def test_mate_guard_keeps_the_most_visited_move_that_allows_no_mate_in_one():
    import random as _random

    from board import move_to_uci
    from board.bughouse import BughouseGame
    from evaluators.bughouse_classical import BughouseClassicalEvaluator
    from tests.oracles.bughouse_mcts import BughouseLimits, BughouseMCTS, BughouseMCTSConfig

    game = BughouseGame()
    for text in ("A:e2e4", "A:e7e5", "A:f1c4", "A:b8c6", "A:d1h5"):
        game.push(*game.parse(text))
    for guard in (False, True):
        s = BughouseMCTS(BughouseClassicalEvaluator(), BughouseMCTSConfig(mate_guard=guard, root_own_p=1.0),
                         _random.Random(1))
        s.run(game, 0, BughouseLimits(nodes=60))
        root = s.root
        moves = [move_to_uci(m) for m in root.moves[0]]
        root.n[0][moves.index("g8f6")] = 10**6  # the search's favourite: ...Nf6?? allows Qxf7 mate
        root.n[0][moves.index("g7g6")] = 10**5
        move, _, _ = s.choose_move()
        assert move_to_uci(move) == ("g7g6" if guard else "g8f6")
        assert s._allows_mate(root.moves[0][moves.index("g8f6")]) and not s._allows_mate(root.moves[0][moves.index("g7g6")])
