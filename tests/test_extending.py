"""What docs/extending.md promises, done from a test file (the toys: tests/toy_rules.py), compiled build
or not: a new MCTS tree rule is a class and one line in :data:`search.mcts_config.TREE_RULES`, after
which it is an engine option value (``score_formula=NAME``) that plays games; a new stopper is a class
and one line in :data:`search.mcts_stop.STOPPERS`, after which every MCTS move asks it."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from experiments.cli import main as cli
from board.position import new_position
from board.variants import CHESS
from engines import factory
from search import mcts_config, mcts_stop
from search.base import Limits
from tests.toy_rules import CannotBeOvertaken, FewestVisits


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
