"""``searchbench deep-agreement``: each engine's move against a deep reference search's, counted with
a Wilson interval; the reference agrees with itself, an engine spec without a budget is refused."""
from __future__ import annotations

import json

import pytest

from experiments.cli import main as cli
from experiments.harness import deep_agreement


def test_the_reference_agrees_with_itself_and_a_weak_search_less(capsys: pytest.CaptureFixture[str]) -> None:
    # Fairy-Stockfish with one thread, a fresh hash and the same node count plays the same move
    code = cli.main(["deep-agreement", "--variant", "chess", "--positions", "6", "--seed", "1", "--reference-nodes",
                     "2000", "fairy-stockfish:nodes=2000", "material-ab:depth=1,quiescence=false", "--json", "--quiet"])
    assert code == 0
    same, shallow = json.loads(capsys.readouterr().out)
    assert same["positions"] == 6 and same["agree"] == 6 and same["failed"] == 0
    assert shallow["positions"] == 6 and 0 <= shallow["agree"] <= 6 and all(c > 0 for c in shallow["calls"])
    lo, hi = shallow["interval"]
    assert 0.0 <= lo <= shallow["agree"] / 6 <= hi <= 1.0


def test_draw_is_seeded_and_the_interval_is_wilsons() -> None:
    from experiments.harness.openings import default_suite

    a = deep_agreement.draw(default_suite("crazyhouse"), "crazyhouse", 10, 2)
    assert a == deep_agreement.draw(default_suite("crazyhouse"), "crazyhouse", 10, 2) and len(set(a)) == 10
    assert a != deep_agreement.draw(default_suite("crazyhouse"), "crazyhouse", 10, 3)
    lo, hi = deep_agreement.Row("x", positions=100, agree=36).interval()
    assert (round(100 * lo), round(100 * hi)) == (27, 46)  # 36 of 100: the Wilson interval [27%, 46%]


def test_a_spec_without_a_budget_and_too_many_positions_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["deep-agreement", "rise-ubfm", "--quiet"]) == 2
    assert "sets no limit" in capsys.readouterr().err
    assert cli.main(["deep-agreement", "--positions", "100000", "material-ab:depth=1", "--quiet"]) == 2
    assert "the suite has" in capsys.readouterr().err
