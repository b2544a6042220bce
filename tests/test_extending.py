"""What docs/extending.md promises, done from test files (the toys: tests/toy_rules.py, tests/toy_q.py,
tests/toy_root.py), compiled build or not.  Each part is a file and one line in the table of parts
(:data:`search.parts.PARTS`, added here by :func:`added`): a tree rule is then an engine option value
(``score_formula=NAME``) that plays games, in bughouse too; a stopper is asked by every MCTS move; a Q
transform is an option value (``q_transform=NAME``) that the tree rules of both games read; a part's
settings class makes its fields engine options (``q_shrink``, ``ucb1_c``) with no edit to the config
module, ``experiments/`` or ``search/two_board.py`` and no regenerated test data; a root rule plays
matches, self-play and bughouse (through the generic seat)."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from experiments.cli import main as cli
from board.variants import new_position
from board.variants import CHESS
from engines import factory
from search import parts
from search.base import Limits
from search.parts import Part
from tests.toy_rules import PESSIMISTIC_CALLS, CannotBeOvertaken, FewestVisits


@contextmanager
def added(*new: Part) -> Iterator[None]:
    """The table of parts with ``new`` appended (the one line a part takes), as it was afterwards."""
    parts.PARTS.extend(new)
    try:
        yield
    finally:
        for p in new:
            parts.PARTS.remove(p)


FEWEST = Part("tree", "fewest-visits", "tests.toy_rules:FewestVisits")


def test_a_tree_rule_is_one_file_and_one_registry_line(tmp_path: Path) -> None:
    with added(FEWEST):
        _a_tree_rule_plays(tmp_path)


def _a_tree_rule_plays(tmp_path: Path) -> None:
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


@pytest.mark.parametrize("two_board", ["", "tests.toy_rules:fewest_visits_run"])
def test_a_tree_rule_with_a_run_selection_serves_bughouse_too(tmp_path: Path, two_board: str) -> None:
    """A rule that also selects within a run of edges (TreeRule.select_run) plays bughouse with the same
    line: LazyBug's board choice wraps it (search.two_board_rules.BoardChoice); or its record names a
    two-board form.  A rule with neither (SixtyFour's) is refused in one line."""
    with added(Part("tree", "fewest-visits", "tests.toy_rules:FewestVisits", two_board=two_board)):
        _a_tree_rule_plays_bughouse(tmp_path)
    from search.two_board import seat_config

    with pytest.raises(ValueError, match="no score_formula=sixtyfour"):
        seat_config(score_formula="sixtyfour").validate()


def _a_tree_rule_plays_bughouse(tmp_path: Path) -> None:
    import random

    from board.bughouse import BughouseGame
    from evaluators.bughouse_classical import BughouseClassicalEvaluator
    from search.two_board import BughouseLimits, TwoBoardMCTS, seat_config
    from search.two_board_rules import board_range

    before = FewestVisits.selections
    game = BughouseGame(base_ms=60_000)
    s = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(score_formula="fewest-visits"), random.Random(1))
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
    with added(Part("stop", "cannot-be-overtaken", "tests.toy_rules:CannotBeOvertaken")):
        fired = CannotBeOvertaken.fired
        pruned, move = searched()
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
    from search.two_board import BughouseLimits, TwoBoardMCTS, seat_config
    from search.two_board_rules import board_range

    out = []
    for variant in ("chess", "crazyhouse"):
        for extra in ({}, {"check_urgency": True}, {"score_formula": "sixtyfour", "fpu": 0.0}):
            s = MCTS(ClassicalEvaluator(), MCTSConfig.of(**extra, **cfg), random.Random(3))  # type: ignore[arg-type]
            r = s.run(new_position(variant), Limits(nodes=300))
            out.append((r.best_move, r.value, [n for _, n, _, _ in s.root_stats()]))
    seat = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(**cfg), random.Random(3))  # type: ignore[arg-type]
    br = seat.run(BughouseGame(), 0, BughouseLimits(nodes=300))
    t, root = seat.tree, seat.root
    out.append((br.move, br.value, [t.edge_n(e) for e in range(int(t.nd_edge0[root]), int(t.nd_edge0[root] + t.nd_nedges[root]))]))
    return out


def test_a_q_transform_is_one_function_and_one_line(tmp_path: Path) -> None:
    with added(Part("q", "mean-called", "search.qtransforms:mean"), Part("q", "pessimistic", "tests.toy_rules:pessimistic")):
        _a_q_transform_plays(tmp_path)


def _a_q_transform_plays(tmp_path: Path) -> None:
    # the default's arithmetic as a function call: the same searches, in both games
    assert _searches(q_transform="mean-called") == _searches()
    # a toy from a test file: the rules read it, the searches change, and it plays games
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



SHRUNK = Part("q", "shrunk", "tests.toy_q:shrunk", settings="tests.toy_q:ShrinkParams")
UCB1 = Part("root", "ucb1", "tests.toy_root:UCB1Root", settings="tests.toy_root:UCB1Params")


def test_a_q_transform_with_a_parameter_is_one_file_and_one_line(tmp_path: Path) -> None:
    """tests/toy_q.py and the line SHRUNK: ``q_shrink`` is an engine option (in specs, MCTSConfig.of, UCI's
    option list), checked by its own class; q_shrink 0 is the mean, another value another search; every
    stored spec keeps its pinned search."""
    from engines.options import config_options
    from search.mcts_config import MCTSConfig
    from search.parts import own_settings
    from tests.test_golden_specs import test_every_stored_spec_resolves_to_the_pinned_search as pinned
    from tests.toy_q import ShrinkParams

    with added(SHRUNK):
        assert MCTSConfig.of(q_shrink=2.0).settings(ShrinkParams) == ShrinkParams(2.0)
        assert "q_shrink" in {o.name for o in config_options(MCTSConfig)}
        assert _searches(q_transform="shrunk") == _searches()
        assert _searches(q_transform="shrunk", q_shrink=4.0) != _searches()
        db = tmp_path / "q.sqlite"
        assert cli.main(["match", "material-mcts:q_transform=shrunk,q_shrink=4", "material-mcts", "--nodes", "32",
                         "--games", "2", "--workers", "1", "--max-plies", "40", "--db", str(db), "--quiet"]) == 0
        assert cli.main(["match", "material-mcts:q_transform=shrunk,q_shrink=-1", "material-mcts", "--nodes", "8",
                         "--games", "2", "--db", str(tmp_path / "x.sqlite"), "--quiet"]) == 2
        pinned()  # no regenerated test data
    assert "tests.toy_q:ShrinkParams" not in own_settings()


def test_a_root_rule_with_a_parameter_plays_matches_selfplay_and_bughouse(tmp_path: Path) -> None:
    """tests/toy_root.py and the line UCB1: ``ucb1_c`` an engine option; the rule plays a match, self-play
    (its own SELFPLAY options: a temperature) and a bughouse seat through the generic seat
    (search.two_board_rules.SeatWrap), with no edit to experiments/ or search/two_board.py."""
    import random

    from board.bughouse import BughouseGame
    from evaluators.bughouse_classical import BughouseClassicalEvaluator
    from experiments.selfplay import games as selfplay
    from experiments.training import datagen
    from search.two_board import BughouseLimits, TwoBoardMCTS, seat_config
    from search.two_board_rules import SeatWrap
    from tests.test_golden_specs import test_every_stored_spec_resolves_to_the_pinned_search as pinned
    from tests.test_selfplay import tiny_weights
    from tests.toy_root import UCB1Params, UCB1Root

    with added(UCB1):
        before = UCB1Root.selections
        db = tmp_path / "r.sqlite"
        assert cli.main(["match", "material-mcts:root_rule=ucb1,ucb1_c=0.8", "material-mcts", "--nodes", "32",
                         "--games", "2", "--workers", "1", "--max-plies", "40", "--db", str(db), "--quiet"]) == 0
        assert UCB1Root.selections > before
        assert cli.main(["match", "material-mcts:root_rule=ucb1,ucb1_c=-1", "material-mcts", "--nodes", "8",
                         "--games", "2", "--db", str(tmp_path / "x.sqlite"), "--quiet"]) == 2
        w = tiny_weights(str(tmp_path / "tiny.pt"))
        spec = selfplay.selfplay_engine(f"rise-mcts:weights={w},root_rule=ucb1,batch_size=2", "crazyhouse")
        assert spec.config.choice.temperature == 1.0 and spec.config.settings(UCB1Params).ucb1_c == 1.4
        cfg = selfplay.SelfPlayConfig(engine=f"rise-mcts:weights={w},root_rule=ucb1,batch_size=2",
                                      out=str(tmp_path / "sp"), games=2, nodes=8, concurrency=2, max_plies=20,
                                      shard_games=2, seed=5)
        assert selfplay.play(cfg, progress=False)["games"] == 2
        assert len(datagen.load_dataset(cfg.out).game_uid) == 2
        seat = TwoBoardMCTS(BughouseClassicalEvaluator(), seat_config(root_rule="ucb1", ucb1_c=0.5),
                            random.Random(3))
        assert isinstance(seat.seat_root, SeatWrap) and isinstance(seat.seat_root.inner, UCB1Root)
        game = BughouseGame(base_ms=60_000)
        before = UCB1Root.selections
        r = seat.run(game, 0, BughouseLimits(nodes=120))
        assert UCB1Root.selections > before and (r.sit or r.move in game.legal_moves(0))
        pinned()


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
