"""Elo versus nodes: config parsing (errors name key and line), connected scheduling, an end-to-end
run with fake engines that writes the CSV, Markdown, PNG and SVG, then resumes."""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from experiments.harness import scale
from experiments.harness import tomlconfig
from experiments.harness import tournament
from experiments.harness.ratings import _components
from experiments.harness.tomlconfig import ConfigError

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_fakes import Factory  # noqa: E402


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


BASE = """
name = "tiny"
variant = "crazyhouse"
games = 2
concurrency = 2
db = "{db}"
pgn = "{pgn}"
report_dir = "{reports}"
bootstrap = 20

[adjudication]
max_plies = 40

[[families]]
name = "stepped"
engine = "stepped"
ladder = {{ start = 4, factor = 2, steps = 3 }}

[[families]]
name = "rand"
engine = "random"
nodes = [4, 16]

[[anchors]]
name = "loser"
engine = "loser"
depth = 1
games = 2
"""


def cfg(tmp_path: Path, extra: str = "", base: str = BASE) -> Path:
    return write(tmp_path, base.format(db=tmp_path / "s.sqlite", pgn=tmp_path / "s.pgn",
                                       reports=tmp_path / "reports") + extra)


def test_ladders_and_connected_pairings(tmp_path: Path) -> None:
    sc = scale.load(cfg(tmp_path))
    assert [f.budgets for f in sc.families] == [[4, 8, 16], [4, 16]]
    assert [p.name for p in sc.families[0].players] == ["stepped@4", "stepped@8", "stepped@16"]
    assert sc.settings.anchor == "stepped@4"
    pairs = sc.pairings()
    names = sorted({p.name for p in sc.players})
    idx = {n: i for i, n in enumerate(names)}
    a = np.array([idx[x.name] for x, _, _ in pairs])
    b = np.array([idx[y.name] for _, y, _ in pairs])
    assert len(_components(len(names), a, b)) == 1
    got = {frozenset((x.name, y.name)) for x, y, _ in pairs}
    assert frozenset(("stepped@4", "stepped@8")) in got and frozenset(("rand@4", "rand@16")) in got
    assert frozenset(("stepped@8", "rand@4")) in got or frozenset(("stepped@8", "rand@16")) in got
    assert frozenset(("stepped@16", "rand@16")) in got and frozenset(("loser", "rand@16")) in got
    ts = sc.tasks()
    assert len(ts) == sum(g for _, _, g in pairs) and len({t.key for t in ts}) == len(ts)
    # interleaved: the first round has one pair of every pairing
    assert len({t.match for t in ts[:2 * len(pairs)]}) == len(pairs)


def test_top_games_caps_every_pairing_with_a_familys_highest_rung(tmp_path: Path) -> None:
    base = BASE.replace("games = 2\nconcurrency", "games = 6\ncross_games = 4\ntop_games = 2\nconcurrency")
    base = base.replace("depth = 1\ngames = 2", "depth = 1\ngames = 4")
    sc = scale.load(cfg(tmp_path, base=base))
    got = {frozenset((a.name, b.name)): g for a, b, g in sc.pairings()}
    tops = {"stepped@16", "rand@16"}
    for k, g in got.items():
        plain = 6 if len({n.split("@")[0] for n in k}) == 1 else 4
        assert g == (2 if k & tops else plain), (sorted(k), g)
    assert got[frozenset(("stepped@4", "stepped@8"))] == 6 and got[frozenset(("loser", "stepped@4"))] == 4
    assert got[frozenset(("loser", "rand@16"))] == 2 and got[frozenset(("stepped@8", "stepped@16"))] == 2
    assert len(sc.tasks()) == sum(got.values())
    with pytest.raises(ConfigError, match="key 'top_games': must be even"):
        scale.load(cfg(tmp_path, base=base.replace("top_games = 2", "top_games = 3")))


@pytest.mark.parametrize("extra,where,key", [
    ('\n[[families]]\nname = "x"\nengine = "random"\nnodes = [16, 4]\n', 33, "families[2].nodes"),
    ('\n[[families]]\nname = "y"\nengine = "random"\nnodez = [4]\n', 33, "families[2].nodez"),
    ('\n[[families]]\nname = "stepped"\nengine = "random"\nnodes = [4]\n', 31, "families[2].name"),
])
def test_config_errors_name_key_and_line(tmp_path: Path, extra: str, where: int, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        scale.load(cfg(tmp_path, extra))
    assert f"c.toml:{where}:" in str(e.value) and repr(key) in str(e.value)


def test_more_config_errors(tmp_path: Path) -> None:
    bad_games = BASE.replace("games = 2\nconcurrency", "games = 3\nconcurrency")
    with pytest.raises(ConfigError, match=r"c.toml:4: key 'games': must be even"):
        scale.load(cfg(tmp_path, base=bad_games))
    with pytest.raises(ConfigError, match="TOML syntax error.*line 3"):
        scale.load(write(tmp_path, 'name = "x"\nvariant = "chess"\ngames = = 2\n'))
    with pytest.raises(ConfigError, match="key 'variant': must be one of"):
        scale.load(write(tmp_path, 'name = "x"\nvariant = "shogi"\n'))
    with pytest.raises(ConfigError, match="anchor"):
        scale.load(cfg(tmp_path, base=BASE.replace('bootstrap = 20', 'bootstrap = 20\nanchor = "nobody"')))
    with pytest.raises(ConfigError, match="cannot read"):
        scale.load(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="key 'families\\[0\\].ladder.factor'"):
        scale.load(cfg(tmp_path, base=BASE.replace("factor = 2", "factor = 1")))


def test_shipped_configs_parse() -> None:
    cfgs = sorted(Path(__file__).resolve().parent.parent.glob("experiments/configs/*.toml"))
    assert cfgs
    for p in cfgs:
        data = tomlconfig.load(p).data
        from experiments.harness import ablate
        from experiments.selfplay import loop as rl

        if "arms" in data:  # a self-play loop: its supervised games live in the ignored data/, not shipped
            try:
                loop = rl.parse(str(p))
            except ConfigError as e:  # a lone clone: one line naming the command that makes the data
                if "bughouse-sjeng.sqlite" in str(e):
                    assert not Path("data/bughouse-sjeng.sqlite").exists()
                else:
                    assert "no data at 'data/zh-fsf3000-b': make it with `searchbench datagen --out data/zh-fsf3000-b" in str(e)
                    assert not Path("data/zh-fsf3000-b").exists()
                continue
            assert loop.name and loop.arms and (loop.rate or loop.two_board)
            continue
        if "params" in data:  # a tuning run
            from experiments.harness import tune

            t = tune.load(p)
            assert t.params and t.verify_budgets[0] == t.budget
            continue
        if "points" in data:  # a ship test
            from experiments.harness import ship

            assert ship.load(p).points
            continue
        if "rows" in data:  # a bughouse report
            from experiments.harness import bughouse_report

            assert bughouse_report.load(p).rows
            continue
        loaded = (scale.load(p) if "families" in data else ablate.load(p) if "baseline" in data
                  else tournament.load(p))
        assert loaded.settings.name and loaded.tasks()


def test_end_to_end_with_fake_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sc = scale.load(cfg(tmp_path))
    ratings, paths = scale.run(sc, "searchbench scale c.toml", factory=Factory(), progress=False)
    out = tmp_path / "reports" / "tiny"
    for suffix in ("csv", "md", "png", "svg"):
        f = out / f"elo_vs_nodes.{suffix}"
        assert f in paths and f.stat().st_size > 100
    rows = list(csv.DictReader(open(out / "elo_vs_nodes.csv")))
    assert {r["family"] for r in rows} == {"stepped", "rand", "anchor:loser"}
    assert sorted(int(r["nodes"]) for r in rows if r["family"] == "stepped") == [4, 8, 16]
    anchor = next(r for r in rows if r["family"] == "stepped" and r["nodes"] == "4")
    assert float(anchor["elo"]) == 0.0
    loser = next(r for r in rows if r["family"] == "anchor:loser")
    assert float(loser["elo"]) < 0  # it resigns every game
    for suffix in ("png", "svg"):
        assert (out / f"elo_vs_cost.{suffix}") in paths and (out / f"elo_vs_cost.{suffix}").stat().st_size > 100
    stepped = [r for r in rows if r["family"] == "stepped"]
    # cost per move: the fake stepped engine evaluates exactly its node budget
    assert all(float(r["nodes_per_move"]) == float(r["evals_per_move"]) == int(r["nodes"]) for r in stepped)
    assert all(float(r["seconds_per_move"]) >= 0 for r in rows)
    md = (out / "elo_vs_nodes.md").read_text()
    assert "searchbench scale c.toml" in md and "| stepped |" in md and "How to read it" in md
    head = md.split("\n")  # the answer first: the finding, then the command
    assert head[2].startswith("**Finding.** Strongest engine under test: ") and "anchor:loser" not in head[2]
    assert head[7] == "searchbench scale c.toml"
    n_games = sum(r.games for r in ratings) // 2
    # a second run resumes: nothing left to play, same games rated
    ratings2, _ = scale.run(scale.load(cfg(tmp_path)), "x", factory=Factory(), progress=False)
    assert "0 games played" in capsys.readouterr().out
    assert sum(r.games for r in ratings2) // 2 == n_games


def test_tournament_round_robin_and_gauntlet(tmp_path: Path) -> None:
    text = f"""
name = "tt"
variant = "crazyhouse"
mode = "{{mode}}"
games = 2
db = "{tmp_path / 't.sqlite'}"
pgn = false

[[engines]]
engine = "stepped"
nodes = 4

[[engines]]
engine = "random"
depth = 1

[[engines]]
name = "r2"
engine = "random"
movetime = 0.5
"""
    rr = tournament.load(write(tmp_path, text.replace("{mode}", "round-robin")))
    assert rr.settings.pgn is None
    assert {(a.name, b.name) for a, b in rr.pairings()} == {("stepped", "random"), ("stepped", "r2"), ("random", "r2")}
    assert len(rr.tasks()) == 6
    g = tournament.load(write(tmp_path, text.replace('{mode}"', 'gauntlet"\ngauntlet = "r2"')))
    assert {(a.name, b.name) for a, b in g.pairings()} == {("r2", "stepped"), ("r2", "random")}
    with pytest.raises(ConfigError, match=r":11: key 'engines\[0\].nodes': expected an integer"):
        tournament.load(write(tmp_path, text.replace("{mode}", "gauntlet").replace("nodes = 4", 'nodes = "4"')))
    with pytest.raises(ConfigError, match="duplicate player name"):
        tournament.load(write(tmp_path, text.replace("{mode}", "gauntlet").replace('name = "r2"', 'name = "random"')))


def test_compare_tables_ignores_only_the_machine_columns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """make run compares its table with the shipped one (issue 35): seconds per move may differ,
    nothing else."""
    from experiments.harness.scale import compare_tables

    head = "family,engine,nodes,elo,lo,hi,games,score,nodes_per_move,evals_per_move,seconds_per_move\n"
    rows = ["ab,material-ab,64,0.0,-10.0,10.0,20,0.5000,64.0,64.0,{t}\n", "fsf,fairy-stockfish,,300.0,250.0,350.0,6,0.9,1000.0,0.0,{t}\n"]
    shipped, here = tmp_path / "a.csv", tmp_path / "b.csv"
    shipped.write_text(head + "".join(r.format(t="0.0123") for r in rows))
    here.write_text(head + "".join(r.format(t="0.0456") for r in rows))
    assert compare_tables(here, shipped) == ([], [])
    here.write_text(head + rows[0].format(t="0.1").replace("0.0,-10.0", "1.0,-10.0").replace("64.0,64.0", "64.0,64.5"))
    games, cost = compare_tables(here, shipped)
    assert games == ["fairy-stockfish at -: only in the shipped report", "material-ab at 64: elo 1.0 here, 0.0 shipped"]
    assert cost == ["material-ab at 64: evals_per_move 64.5 here, 64.0 shipped (0.78%)"]


def test_make_runs_compare_says_when_the_shipped_report_is_stale(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """A shipped report played before its players moved (a new network, a moved default) cannot match
    today's games: the comparison says so, and how to play it again."""
    from types import SimpleNamespace

    from experiments.cli import harness as cli_harness
    from experiments.cli.main import main

    shipped = tmp_path / "quick"
    shipped.mkdir()
    (shipped / "elo_vs_nodes.csv").write_text("engine,nodes,elo\nx,8,0\n")
    sc = SimpleNamespace(out_dir=tmp_path / "out", report_dir=None, settings=SimpleNamespace())
    monkeypatch.setattr(cli_harness.scale, "load", lambda path: sc)
    monkeypatch.setattr(cli_harness.scale, "run", lambda sc, command, progress: (None, []))
    monkeypatch.setattr(cli_harness.scale, "compare_tables", lambda a, b: (["x at 8: elo 5 here, 0 shipped"], []))
    monkeypatch.setattr(cli_harness.played, "status", lambda folder: ("stale", ["mcts-rise: network a.pt:1 → b.pt:2"]))
    assert main(["scale", "any.toml", "--compare", str(shipped), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"the shipped report {shipped} is stale (mcts-rise: network a.pt:1 → b.pt:2)" in out
    assert "`searchbench refresh --only quick` plays it again" in out and "DIFFERS" in out
    monkeypatch.setattr(cli_harness.played, "status", lambda folder: ("current", []))
    assert main(["scale", "any.toml", "--compare", str(shipped), "--quiet"]) == 0
    assert "is stale" not in capsys.readouterr().out


EVALS = """
name = "calls"
variant = "crazyhouse"
games = 2
concurrency = 2
workers = 1
db = "{db}"
pgn = "{pgn}"
report_dir = "{reports}"
bootstrap = 20
unit = "evals"

[adjudication]
max_plies = 16

[[families]]
name = "ab"
engine = "material-ab"
evals = [8, 32]

[[families]]
name = "mcts"
engine = "material-mcts"
ladder = {{ start = 8, factor = 4, steps = 2 }}
"""


def test_an_evals_ladder_limits_each_move_by_evaluator_calls_and_names_its_unit(tmp_path: Path) -> None:
    sc = scale.load(cfg(tmp_path, base=EVALS))
    assert sc.unit == "evals" and [f.budgets for f in sc.families] == [[8, 32], [8, 32]]
    assert [p.name for p in sc.families[0].players] == ["ab@evals=8", "ab@evals=32"]
    assert all(p.evals == n and p.nodes is None for f in sc.families for p, n in zip(f.players, f.budgets))
    _, paths = scale.run(sc, "searchbench scale c.toml", progress=False)
    out = tmp_path / "reports" / "calls"
    rows = list(csv.DictReader(open(out / "elo_vs_nodes.csv")))
    assert "nodes" not in rows[0] and sorted(r["evals"] for r in rows if r["family"] == "ab") == ["32", "8"]
    # a move of an evals player spends at most its budget (the search stops at the call that reaches it)
    assert all(0 < float(r["evals_per_move"]) <= int(r["evals"]) for r in rows)
    md = (out / "elo_vs_nodes.md").read_text()
    assert md.startswith("# Elo versus evaluator calls: calls") and "| family | engine | evals |" in md
    assert "evaluator calls" in md.split("\n")[2] and "At equal calls" in md.split("\n")[2]
    page = (out / "index.html").read_text()
    assert "evaluator calls budget" in page and "ab@evals=8" in page
    from reports import paradigms

    assert ("alpha-beta", "crazyhouse", "calls") in paradigms.cells_of(out, "crazyhouse")
    assert ("alpha-beta", "crazyhouse", "nodes") not in paradigms.cells_of(out, "crazyhouse")


def test_a_movetime_ladder_and_a_unit_mixed_up(tmp_path: Path) -> None:
    text = EVALS.replace('unit = "evals"', 'unit = "movetime"').replace("evals = [8, 32]", "movetime = [0.1, 0.3]")
    sc = scale.load(cfg(tmp_path, base=text.replace("ladder = {{ start = 8, factor = 4, steps = 2 }}",
                                                     "ladder = {{ start = 0.1, factor = 3, steps = 3 }}")))
    assert [f.budgets for f in sc.families] == [[0.1, 0.3], [0.1, 0.3, 0.9]]
    assert [p.name for p in sc.families[1].players] == ["mcts@movetime=0.1", "mcts@movetime=0.3", "mcts@movetime=0.9"]
    assert all(p.movetime == n for f in sc.families for p, n in zip(f.players, f.budgets))
    with pytest.raises(ConfigError, match=r"key 'families\[0\].nodes': this scale counts evals"):
        scale.load(cfg(tmp_path, base=EVALS.replace("evals = [8, 32]", "nodes = [8, 32]")))
    with pytest.raises(ConfigError, match=r"key 'families\[0\].evals': must be a non-empty array of positive integers"):
        scale.load(cfg(tmp_path, base=EVALS.replace("evals = [8, 32]", "evals = [0.5]")))
    with pytest.raises(ConfigError, match=r"key 'unit': must be one of"):
        scale.load(cfg(tmp_path, base=EVALS.replace('unit = "evals"', 'unit = "plies"')))
