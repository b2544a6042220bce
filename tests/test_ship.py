"""``searchbench ship``: the pre-registered ship test states its points, rules and cost before any game;
a candidate that passes is shipped under a new file name (the old kept, ``shipped.json`` naming the
variant's default, a model card beside it) and every report recorded with the old network becomes
stale; one that fails is kept out; a malformed test is one line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engines import registry
from evaluators import neural
from evaluators.families import WEIGHTS_DIR, file_id
from experiments.cli import main as cli
from experiments.harness import ship
from reports import played

TOY = """name = "ship-toy"
variant = "crazyhouse"
family = "rise"
seed = 4
concurrency = 2
workers = 1

[adjudication]
max_plies = 30

[[points]]
name = "puct"
engine = "rise-mcts"
nodes = 4
games = 2
above = {above}

[[points]]
name = "gumbel"
engine = "rise-gumbel"
nodes = 4
games = 2
above = {above}
"""


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the shipped weights folder (the test ships into it) and a candidate: the
    shipped crazyhouse network saved again with another note (another file, another digest)."""
    weights = tmp_path / "weights"
    weights.mkdir()
    shutil.copy(Path(WEIGHTS_DIR) / "rise_crazyhouse.pt", weights / "rise_crazyhouse.pt")
    monkeypatch.setattr(neural, "WEIGHTS_DIR", str(weights))
    monkeypatch.setattr(ship, "WEIGHTS_DIR", str(weights))
    played.network_today.cache_clear()
    d = torch.load(weights / "rise_crazyhouse.pt", weights_only=True)
    d.setdefault("meta", {})["note"] = "a ship test candidate"
    torch.save(d, tmp_path / "candidate.pt")
    monkeypatch.chdir(tmp_path)
    yield weights
    played.network_today.cache_clear()


def test_the_test_is_stated_with_its_cost_before_any_game(shipped: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ship", "candidate.pt", "--config", str(Path(__file__).parent.parent / "experiments/configs/"
                                                              "ship-rise-crazyhouse.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "puct-64: rise-mcts at nodes 64, 400 games; ships only if lower bound above +0 (a gain)" in out
    assert "puct-400: rise-mcts at nodes 400, 200 games; ships only if lower bound above -30 (a guard" in out
    assert "cost: 1000 games, about" in out and not Path("runs").exists()


def test_a_pass_ships_under_a_new_name_and_marks_old_reports_stale(shipped: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = file_id(shipped / "rise_crazyhouse.pt")
    report = Path("zh")
    report.mkdir()
    (report / "ablation.md").write_text("# zh\n")
    effective = registry.effective_values(registry.resolve("rise-mcts"))
    played.write(report, {"baseline": {"engine": "rise-mcts", "effective": effective, "network": old,
                                       "variant": "crazyhouse"}})
    assert played.status(report) == ("current", [])
    Path("toy.toml").write_text(TOY.format(above=-1000))
    assert cli.main(["ship", "candidate.pt", "--config", "toy.toml", "--apply", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "puct (rise-mcts, nodes 4): " in out and "holds" in out and "verdict: shipped as" in out
    digest = file_id("candidate.pt").split(":")[1]
    new = shipped / f"rise_crazyhouse-{digest}.pt"
    assert new.is_file() and (shipped / "rise_crazyhouse.pt").is_file()  # the old network kept
    assert json.loads((shipped / "shipped.json").read_text()) == {"rise_crazyhouse": new.name}
    card = new.with_suffix(".md").read_text()
    assert "replaced `rise_crazyhouse.pt`" in card and "puct (rise-mcts, nodes 4)" in card
    assert registry.network_files(registry.resolve("rise-mcts"), "crazyhouse") == [str(new)]
    played.network_today.cache_clear()
    state, why = played.status(report)
    assert state == "stale" and why == [f"baseline: network {old} → {file_id(new)}"]


def test_a_failed_rule_ships_nothing(shipped: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("toy.toml").write_text(TOY.format(above=1000))
    assert cli.main(["ship", "candidate.pt", "--config", "toy.toml", "--apply", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAILS" in out and "verdict: keep rise_crazyhouse.pt" in out
    assert sorted(p.name for p in shipped.iterdir()) == ["rise_crazyhouse.pt"]


@pytest.mark.parametrize("edit, why", [
    ('engine = "rise-mcts"\nnodes = 4', 'engine = "rise-mcts:weights=x.pt"\nnodes = 4', ),
    ('engine = "rise-mcts"\nnodes = 4', 'engine = "material-mcts"\nnodes = 4'),
    ("nodes = 4\ngames = 2\nabove = 0\n\n[[points]]", "nodes = 4\nmovetime = 0.1\ngames = 2\nabove = 0\n\n[[points]]"),
])
def test_a_malformed_test_is_one_line(shipped: Path, capsys: pytest.CaptureFixture[str], edit: str, why: str) -> None:
    Path("bad.toml").write_text(TOY.format(above=0).replace(edit, why, 1))
    assert cli.main(["ship", "candidate.pt", "--config", "bad.toml", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.toml" in err[0]


def test_a_missing_or_foreign_candidate_is_one_line(shipped: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("toy.toml").write_text(TOY.format(above=0))
    assert cli.main(["ship", "none.pt", "--config", "toy.toml", "--dry-run"]) == 2
    Path("junk.pt").write_bytes(b"not a network")
    assert cli.main(["ship", "junk.pt", "--config", "toy.toml", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such file" in err[0] and "junk.pt" in err[1]


def test_the_cost_estimate_does_not_time_the_search_that_loads_the_network(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    class Slow:  # the first search of an engine pays the network's load and warm-up
        searches = 0

        def new_game(self, seed: int | None = None) -> None:
            pass

        def play(self, pos: object, limits: object) -> None:
            time.sleep(0.3 if Slow.searches == 0 else 0.001)
            Slow.searches += 1

        def close(self) -> None:
            pass

    monkeypatch.setattr(ship.factory, "create", lambda spec, variant: Slow())
    (tmp_path / "toy.toml").write_text(TOY.format(above=0))
    games, seconds = ship.estimate(ship.load(tmp_path / "toy.toml"))
    assert games == 4 and Slow.searches == 2 * (ship.TIMED_SEARCHES + 1)
    assert seconds < 4 * ship.PLIES * 0.05  # the 0.3 s load is not taken as a move's cost
