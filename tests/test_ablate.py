"""``searchbench ablate``: the pentanomial interval against simulated results of known Elo, a toy
run that resumes, SPRT stopping, and config errors naming their key and line."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from experiments.cli import main as cli
from experiments.harness import ablate
from experiments.harness.store import Store
from experiments.harness.tomlconfig import ConfigError


def simulate_pairs(elo: float, draw: float, pairs: int, rng: np.random.Generator) -> list[int]:
    """Pentanomial counts of ``pairs`` game pairs between players ``elo`` apart (draw rate ``draw``)."""
    e = 1.0 / (1.0 + 10 ** (-elo / 400.0))
    w, l = e - draw / 2, 1.0 - e - draw / 2
    games = rng.choice([1.0, 0.5, 0.0], size=(pairs, 2), p=[w, draw, l])
    idx = np.rint(games.sum(axis=1) * 2).astype(int)
    return np.bincount(idx, minlength=5).tolist()


@pytest.mark.parametrize("true_elo, draw", [(0.0, 0.3), (50.0, 0.4), (-120.0, 0.2), (200.0, 0.1)])
def test_the_interval_recovers_known_elo(true_elo: float, draw: float) -> None:
    rng = np.random.default_rng(int(abs(true_elo)) + 7)
    trials, pairs = 400, 200
    covered = 0
    estimates = []
    for _ in range(trials):
        score, elo, lo, hi = ablate.elo_interval(simulate_pairs(true_elo, draw, pairs, rng))
        covered += lo <= true_elo <= hi
        estimates.append(elo)
    assert 0.90 <= covered / trials <= 0.99  # a 95% interval, honest on simulated pairs
    assert abs(float(np.median(estimates)) - true_elo) < 15


def test_interval_edge_cases() -> None:
    assert all(math.isnan(x) for x in ablate.elo_interval([0, 0, 0, 0, 0]))
    score, elo, lo, hi = ablate.elo_interval([0, 0, 0, 0, 10])  # a perfect score: finite bounds
    assert score == 1.0 and math.isfinite(elo) and lo <= elo <= hi and elo > 300
    assert lo < elo - 100  # a sweep is not a point: the Wilson interval of the pair scores
    _, elo0, lo0, hi0 = ablate.elo_interval([10, 0, 0, 0, 0])
    assert lo0 <= elo0 < hi0 and elo0 == pytest.approx(-elo) and hi0 == pytest.approx(-lo)
    _, elo, lo, hi = ablate.elo_interval([2, 5, 10, 5, 2])
    assert elo == pytest.approx(0.0, abs=1e-9) and lo < 0 < hi and lo == pytest.approx(-hi)


def test_findings_sort_budgets_by_their_interval(tmp_path: Path) -> None:
    ab = ablate.load(write_config(tmp_path))
    rs = []
    for name, counts in (("no-q-value-selection", [0, 0, 2, 4, 14]), ("alpha-beta", [14, 4, 2, 0, 0])):
        for axis, budget in ab.budgets:
            score, elo, lo, hi = ablate.elo_interval(counts if budget == 12 else [3, 4, 6, 4, 3])
            rs.append(ablate.Row(name, axis, budget, 40, (0, 0, 0), counts, score, elo, lo, hi))
    lines = ablate.findings(ab, rs)
    assert len(lines) == 2
    assert "stronger at nodes 12" in lines[0] and "not distinguishable at nodes 24" in lines[0]
    assert "weaker at nodes 12" in lines[1] and "40 games per budget" in lines[1]
    assert ablate.findings(ab, [])[0].endswith("no games yet.")


CONFIG = """name = "toy"
variant = "crazyhouse"
baseline = "material-mcts"
nodes = [12, 24]
games = 4
seed = 3
concurrency = 4
workers = 1
report_dir = "{out}"
db = "{db}"
pgn = false
{extra}
[adjudication]
max_plies = 80

[[variants]]
name = "no-q-value-selection"
options = {{ q_value_selection = false }}

[[variants]]
name = "alpha-beta"
engine = "material-ab"
"""


def write_config(tmp_path: Path, extra: str = "", **kw: str) -> Path:
    p = tmp_path / "toy.toml"
    p.write_text(CONFIG.format(out=tmp_path / "reports", db=tmp_path / "toy.sqlite", extra=extra, **kw))
    return p


def test_toy_run_writes_the_report_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write_config(tmp_path)
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "16 games played, 0 already stored" in out
    report = tmp_path / "reports" / "toy"
    for name in ("ablation.csv", "ablation.md", "ablation.png", "ablation.svg"):
        assert (report / name).stat().st_size > 0
    rows = list(csv.DictReader(open(report / "ablation.csv")))
    for col in ("variant", "nodes", "games", "wins", "draws", "losses", "score", "elo", "elo_low", "elo_high",
                "ptnml_LL", "ptnml_LD", "ptnml_DD_WL", "ptnml_WD", "ptnml_WW", "llr", "verdict"):
        assert col in rows[0]
    assert [(r["variant"], r["nodes"], r["games"]) for r in rows] == [
        ("no-q-value-selection", "12", "4"), ("alpha-beta", "12", "4"), ("no-q-value-selection", "24", "4"),
        ("alpha-beta", "24", "4")]
    for r in rows:
        assert int(r["wins"]) + int(r["draws"]) + int(r["losses"]) == 4
        assert sum(int(r[c]) for c in ablate.PTNML_COLUMNS) == 2
        assert float(r["elo_low"]) <= float(r["elo"]) <= float(r["elo_high"])
        assert float(r["nodes_per_move"]) > 0 and float(r["evals_per_move"]) > 0
    md = (report / "ablation.md").read_text()
    assert "searchbench ablate" in md and "```toml" in md and "q_value_selection" in md
    head = md.split("\n")  # the answer first: the finding, then the command
    assert head[2].startswith("**Finding.** Against `") and "`no-q-value-selection`" in head[2]
    assert head[4].startswith("Regenerate") and head[7].startswith("searchbench ablate")
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 0  # resume: nothing to play
    assert "0 games played, 16 already stored" in capsys.readouterr().out
    cfg.write_text(cfg.read_text().replace("games = 4", "games = 6"))  # extended: only the new pairs
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 0
    assert "8 games played, 16 already stored" in capsys.readouterr().out
    with Store(tmp_path / "toy.sqlite") as st:
        assert len(st) == 24 and len({g.key for g in st.games()}) == 24


@pytest.mark.parametrize("workers", [1, 2])
def test_sprt_stops_a_decided_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: int) -> None:
    """A variant far weaker than the baseline is decided (H0) long before its game budget, in one
    process or in worker processes (which get their tasks as games finish)."""
    cfg = tmp_path / "sprt.toml"
    cfg.write_text(f"""name = "sprt"
variant = "chess"
baseline = "material-ab"
nodes = [300]
games = 200
concurrency = 2
workers = {workers}
report_dir = "{tmp_path / 'reports'}"
db = "{tmp_path / 'sprt.sqlite'}"
pgn = false
sprt = {{ elo0 = 0, elo1 = 20, alpha = 0.1, beta = 0.1 }}
[adjudication]
max_plies = 120
[[variants]]
name = "one-ply"
options = {{ max_depth = 1, quiescence = false }}
""")
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 0
    rows = list(csv.DictReader(open(tmp_path / "reports" / "sprt" / "ablation.csv")))
    assert rows[0]["verdict"] == "H0" and float(rows[0]["llr"]) <= math.log(0.1 / 0.9) + 1e-9
    assert int(rows[0]["games"]) < 200


@pytest.mark.parametrize("extra, key, words", [
    ('nodes = [12, 24]\nbogus = 1', "bogus", "unknown key"),
    ('nodes = [12]\nsprt = { elo0 = 10, elo1 = 5 }', "sprt", "elo1"),
    ('nodes = [12, 0]', "nodes", "positive"),
])
def test_config_errors_name_key_and_line(tmp_path: Path, extra: str, key: str, words: str) -> None:
    text = CONFIG.format(out=tmp_path / "r", db=tmp_path / "x.sqlite", extra="").replace("nodes = [12, 24]\n", "")
    p = tmp_path / "bad.toml"
    p.write_text(text.replace("seed = 3", "seed = 3\n" + extra))
    with pytest.raises(ConfigError) as err:
        ablate.load(p)
    msg = str(err.value)
    line = next(i for i, ln in enumerate(p.read_text().splitlines(), 1) if ln.startswith(key))
    assert f"{p}:{line}" in msg and key in msg and words in msg


def test_bad_variant_options_fail_before_any_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text().replace("q_value_selection = false", "q_value_selectionn = false"))
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "q_value_selectionn" in err[0] and "toy.toml:" in err[0]
    assert not (tmp_path / "toy.sqlite").exists() and not (tmp_path / "reports").exists()


def test_a_variant_sets_its_own_games_and_the_report_prints_the_notes(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write_config(tmp_path, extra='notes = "Changed: **new code**."')
    cfg.write_text(cfg.read_text().replace('engine = "material-ab"', 'engine = "material-ab"\ngames = 2')
                   .replace("nodes = [12, 24]", "nodes = [12]"))
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 0
    assert "6 games played" in capsys.readouterr().out
    report = tmp_path / "reports" / "toy"
    rows = list(csv.DictReader(open(report / "ablation.csv")))
    assert [(r["variant"], r["games"]) for r in rows] == [("no-q-value-selection", "4"), ("alpha-beta", "2")]
    md = (report / "ablation.md").read_text()
    assert "Changed: **new code**." in md and "2 or 4 games per variant and budget" in md
    assert "`material-ab`; 2 games per budget" in md
    cfg.write_text(cfg.read_text().replace("games = 2", "games = 3"))
    with pytest.raises(ConfigError, match="even"):
        ablate.load(cfg)


def test_a_variant_plays_only_its_own_budgets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A switch that acts only at some budgets (a batch above single_leaf_nodes) plays only those:
    no rows of games identical to the baseline's; a budget the config does not play is refused."""
    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text().replace('engine = "material-ab"', 'engine = "material-ab"\nnodes = [24]'))
    ab = ablate.load(cfg)
    assert [(v.name, a, b) for v, a, b, _ in ab.matches()] == [
        ("no-q-value-selection", "nodes", 12.0), ("no-q-value-selection", "nodes", 24.0), ("alpha-beta", "nodes", 24.0)]
    assert cli.main(["ablate", str(cfg), "--quiet"]) == 0
    assert "12 games played" in capsys.readouterr().out
    report = tmp_path / "reports" / "toy"
    rows = list(csv.DictReader(open(report / "ablation.csv")))
    assert [(r["variant"], r["nodes"]) for r in rows] == [("no-q-value-selection", "12"), ("no-q-value-selection", "24"),
                                                         ("alpha-beta", "24")]
    assert "`material-ab`; only at nodes 24" in (report / "ablation.md").read_text()
    cfg.write_text(cfg.read_text().replace("nodes = [24]\n", "nodes = [48]\n"))
    with pytest.raises(ConfigError, match="some of the config's nodes"):
        ablate.load(cfg)
