"""experiments.notebook: a match, a config and a database's rows from Python, as the command line
plays and stores them."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from experiments import notebook as sb

sys.path.insert(0, str(Path(__file__).resolve().parent))


def test_a_match_from_python_is_stored_and_read_back(tmp_path: Path) -> None:
    db = tmp_path / "nb.sqlite"
    s = sb.match("material-ab", "material-mcts", variant="crazyhouse", games=2, nodes=12, db=db)
    assert s["wins"] + s["draws"] + s["losses"] == 2 and s["played"] == 2 and s["db"] == str(db)
    again = sb.match("material-ab", "material-mcts", variant="crazyhouse", games=2, nodes=12, db=db)
    assert again["played"] == 0 and again["stored"] == 2 and again["score"] == s["score"]  # resumed: nothing played
    rows = sb.games(db)
    assert len(rows) == 2 and {r["white"] for r in rows} == {"material-ab", "material-mcts"}
    assert all(r["plies"] > 0 and 0 < r["white_nodes"] <= 12.0 + 1e-9 for r in rows)
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(ValueError, match="needs pandas"):
            sb.frame(db)
    else:
        assert len(sb.frame(db)) == 2


def test_an_ablation_config_from_python_returns_its_rows(tmp_path: Path) -> None:
    from test_ablate import write_config

    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text().replace("nodes = [12, 24]", "nodes = [12]").replace("games = 4", "games = 2"))
    rows = sb.run(cfg)
    assert [(r["variant"], r["budget"]) for r in rows] == [("no-q-value-selection", 12), ("alpha-beta", 12)]
    assert all(r["wins"] + r["draws"] + r["losses"] == 2 for r in rows)
    with pytest.raises(ValueError, match="plays scale and ablation configs"):
        sb.run(Path(__file__).resolve().parent.parent / "experiments" / "configs" / "rl-crazyhouse.toml")
    with pytest.raises(ValueError, match="cannot read config"):
        sb.run(tmp_path / "none.toml")
