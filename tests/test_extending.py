"""What docs/extending.md promises, done from a test file (the toys: tests/toy_rules.py), compiled build
or not: a new MCTS tree rule is a class and one line in :data:`search.mcts_config.TREE_RULES`, after
which it is an engine option value (``score_formula=NAME``) that plays games; a new stopper is a class
and one line in :data:`search.mcts_stop.STOPPERS`, after which every MCTS move asks it; a new Q
transform is a function and one line in :data:`search.mcts_config.Q_TRANSFORMS`, after which it is
an engine option value (``q_transform=NAME``) that the tree rules of both games read."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from experiments.cli import main as cli
from board.variants import new_position
from board.variants import CHESS
from engines import factory
from search import mcts_config, mcts_stop
from search.base import Limits
from tests.toy_rules import PESSIMISTIC_CALLS, CannotBeOvertaken, FewestVisits


def test_a_tree_rule_is_one_file_and_one_registry_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(mcts_config.TREE_RULES, "fewest-visits", "tests.toy_rules:FewestVisits")
    before = FewestVisits.selections
    db = tmp_path / "toy.sqlite"
    assert cli.main(["match", "material-mcts:score_formula=fewest-visits", "material-mcts", "--nodes", "32",
                     "--games", "2", "--workers", "1", "--max-plies", "40", "--db", str(db), "--quiet"]) == 0
    assert FewestVisits.selections > before  # the toy rule chose the edges of one side's searches
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from games").fetchone() == (2,)
    # unknown rules are still refused with one line
    assert cli.main(["match", "material-mcts:score_formula=nope", "material-mcts", "--nodes", "8", "--games", "2",
                     "--db", str(tmp_path / "x.sqlite"), "--quiet"]) == 2


def test_a_tree_rule_with_a_run_selection_serves_bughouse_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that also selects within a run of edges (TreeRule.select_run) plays bughouse with one more
    line, in search.two_board.BOARD_RULES: LazyBug's board choice wraps it (search.two_board_rules.BoardChoice)."""
    import random

    from board.bughouse import BughouseGame
    from evaluators.bughouse_classical import BughouseClassicalEvaluator
    from search import two_board
    from search.two_board import BughouseLimits, TwoBoardConfig, TwoBoardMCTS
    from search.two_board_rules import board_range

    monkeypatch.setitem(mcts_config.TREE_RULES, "fewest-visits", "tests.toy_rules:FewestVisits")
    monkeypatch.setitem(two_board.BOARD_RULES, "fewest-visits", "tests.toy_rules:fewest_visits_run")
    before = FewestVisits.selections
    game = BughouseGame(base_ms=60_000)
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), TwoBoardConfig.of(score_formula="fewest-visits"), random.Random(1))
    r = s.run(game, 0, BughouseLimits(nodes=120))
    assert FewestVisits.selections > before and r.move in game.legal_moves(0) and r.nodes >= 120
    lo, hi = board_range(s.tree, s.root, 0)  # our board's edges: the root chose among them with the toy rule
    visits = [s.tree.edge_n(e) for e in range(int(lo), int(hi))]
    assert max(visits) - min(visits) <= 2  # fewest visits first: spread evenly
    db = tmp_path / "bh.sqlite"
    assert cli.main(["bughouse-match", "bughouse-mcts:nodes=20,score_formula=fewest-visits", "bughouse-mcts:nodes=20",
                     "--games", "1", "--tc", "5+0", "--max-plies", "12", "--db", str(db), "--quiet"]) == 0


def test_a_stopper_is_one_class_and_one_line() -> None:
    def searched() -> tuple[int, int]:
        engine = factory.create("material-mcts", CHESS.name)
        try:
            r = engine.play(new_position(CHESS.name), Limits(nodes=2000))
            assert r.info is not None
            return r.info.nodes, r.move
        finally:
            engine.close()

    alone, _ = searched()
    mcts_stop.STOPPERS.append("tests.toy_rules:CannotBeOvertaken")
    try:
        fired = CannotBeOvertaken.fired
        pruned, move = searched()
    finally:
        mcts_stop.STOPPERS.remove("tests.toy_rules:CannotBeOvertaken")
    assert CannotBeOvertaken.fired == fired + 1 and pruned < alone == 2000 and move
    assert searched()[0] == 2000  # gone from the chain, gone from the search


def _searches(**cfg: object) -> list[tuple[int, float, list[int]]]:
    """Move, value and root visits of fixed-seed searches: chess and crazyhouse MCTS (PUCT, with check
    urgency, SixtyFour's rule) and the two-board seat."""
    import random

    from board.bughouse import BughouseGame
    from evaluators.bughouse_classical import BughouseClassicalEvaluator
    from evaluators.classical import ClassicalEvaluator
    from search.mcts import MCTS, MCTSConfig
    from search.two_board import BughouseLimits, TwoBoardConfig, TwoBoardMCTS
    from search.two_board_rules import board_range

    out = []
    for variant in ("chess", "crazyhouse"):
        for extra in ({}, {"check_urgency": True}, {"score_formula": "sixtyfour", "fpu": 0.0}):
            s = MCTS(ClassicalEvaluator(), MCTSConfig.of(**extra, **cfg), random.Random(3))  # type: ignore[arg-type]
            r = s.run(new_position(variant), Limits(nodes=300))
            out.append((r.best_move, r.value, [n for _, n, _, _ in s.root_stats()]))
    seat = TwoBoardMCTS(BughouseClassicalEvaluator(), TwoBoardConfig.of(**cfg), random.Random(3))  # type: ignore[arg-type]
    br = seat.run(BughouseGame(), 0, BughouseLimits(nodes=300))
    t, root = seat.tree, seat.root
    out.append((br.move, br.value, [t.edge_n(e) for e in range(int(t.nd_edge0[root]), int(t.nd_edge0[root] + t.nd_nedges[root]))]))
    return out


def test_a_q_transform_is_one_function_and_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the default's arithmetic as a function call: the same searches, in both games
    monkeypatch.setitem(mcts_config.Q_TRANSFORMS, "mean-called", "search.qtransforms:mean")
    assert _searches(q_transform="mean-called") == _searches()
    # a toy from a test file: the rules read it, the searches change, and it plays games
    monkeypatch.setitem(mcts_config.Q_TRANSFORMS, "pessimistic", "tests.toy_rules:pessimistic")
    calls = PESSIMISTIC_CALLS[0]
    assert _searches(q_transform="pessimistic") != _searches()
    assert PESSIMISTIC_CALLS[0] > calls
    db = tmp_path / "toy.sqlite"
    assert cli.main(["match", "material-mcts:q_transform=pessimistic", "material-mcts", "--nodes", "32",
                     "--games", "2", "--workers", "1", "--max-plies", "40", "--db", str(db), "--quiet"]) == 0
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from games").fetchone() == (2,)
    assert cli.main(["match", "material-mcts:q_transform=nope", "material-mcts", "--nodes", "8", "--games", "2",
                     "--db", str(tmp_path / "x.sqlite"), "--quiet"]) == 2



def test_a_variant_is_a_position_class_a_record_and_openings() -> None:
    """King of the hill from a test file (tests/toy_variant.py and tests/data/koth.epd), compiled build
    or not: found by name, its openings load, its end agrees with python-chess's KingOfTheHillBoard in
    random games, and MCTS and alpha-beta find the hill through Position.search_end, where the same
    kings in chess are a draw."""
    import random

    import chess.variant

    from board.variants import variant_of
    from evaluators.classical import ClassicalEvaluator
    from experiments.harness.openings import default_suite, load_suite
    from search.alphabeta import MATE_BOUND, AlphaBeta
    from search.mcts import MCTS, MCTSConfig
    from tests.toy_variant import KING_OF_THE_HILL, KingOfTheHill

    assert variant_of("koth") is KING_OF_THE_HILL and isinstance(new_position("kingofthehill"), KingOfTheHill)
    suite = load_suite(default_suite("koth"), "kingofthehill")
    assert len(suite) == 4 and all(isinstance(o.position("kingofthehill"), KingOfTheHill) for o in suite)
    rng = random.Random(5)
    ends = set()
    for _ in range(30):
        pos, ref = new_position("kingofthehill"), chess.variant.KingOfTheHillBoard()
        for _ in range(300):
            ours, theirs = pos.outcome(claim_draw=False), ref.outcome(claim_draw=False)
            assert (ours is None) == (theirs is None), ref.fen()
            if ours is not None and theirs is not None:
                assert ours == (theirs.result(), theirs.termination.name.lower()), ref.fen()
                ends.add(ours[1])
                break
            m = rng.choice(pos.legal_moves())
            ref.push(chess.Move.from_uci(pos.uci(m)))
            pos.push(m)
    assert "variant_loss" in ends  # random kings do walk up the hill
    ev = ClassicalEvaluator()
    ev.variants = ev.variants | {KING_OF_THE_HILL.name}  # an evaluator lists the variants it plays
    one_step = KingOfTheHill("8/8/8/8/8/4K3/8/k7 w - - 0 1")
    r = MCTS(ev, MCTSConfig.of(), random.Random(1)).run(one_step, Limits(nodes=200))
    assert one_step.uci(r.best_move) in ("e3e4", "e3d4") and r.value > 0.9
    two_steps = "8/8/8/8/8/8/4K3/k7 w - - 0 1"  # chess: insufficient material; here White walks up
    won = AlphaBeta(ev).run(KingOfTheHill(two_steps), Limits(depth=4))
    assert won.cp is not None and won.cp > MATE_BOUND
    assert AlphaBeta(ClassicalEvaluator()).run(new_position("chess", two_steps), Limits(depth=4)).cp == 0
