"""What docs/extending.md promises, done from a test file: a new MCTS tree rule is one file
(tests/toy_rules.py) and one line in :data:`search.mcts_config.TREE_RULES`, after which it is an engine
option value (``score_formula=NAME``) that plays games, compiled build or not."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from experiments.cli import main as cli
from search import mcts_config
from tests.toy_rules import FewestVisits


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
