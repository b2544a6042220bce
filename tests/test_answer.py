"""A report opens with its answer: the finding paragraph (with intervals) and the command, its notes
at the end; no report, config, model card or doc cites a ticket number."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments.harness.answer import (HISTORY, REGENERATE, AblationRow, Difference, Rated, TeamRow, ablation_finding,
                                         history, opening, scale_finding, team_finding)

ROOT = Path(__file__).resolve().parents[1]
REPORTS = sorted(p for name in ("ablation.md", "elo_vs_nodes.md", "teams.md", "README.md")
                 for p in (ROOT / "reports").rglob(name)
                 if p.parent != ROOT / "reports" and "state" not in p.parts and "cards" not in p.parts)


def test_ablation_finding_says_only_what_intervals_allow() -> None:
    rows = [AblationRow("up", "nodes 100", 40, 60, 10, 110), AblationRow("up", "nodes 400", 40, 20, -30, 70),
            AblationRow("down", "nodes 100", 40, -90, -150, -30), AblationRow("flat", "nodes 100", 40, 5, -45, 55),
            AblationRow("flat", "nodes 400", 40, -5, -55, 45)]
    text = ablation_finding("base", rows)
    assert text == ("Against `base` (0 Elo), 40 games a variant and budget: `up` stronger at nodes 100 (+60 [+10, +110]); "
                    "`down` weaker at nodes 100 (-90 [-150, -30]); not distinguishable from it at any budget played: "
                    "`flat` nodes 100 +5 [-45, +55], nodes 400 -5 [-55, +45].")
    assert "stronger" not in text.split("`up` stronger at nodes 100")[1]  # nodes 400 is not claimed
    assert ablation_finding("base", []) == "No games yet against `base`."


def test_an_sprt_row_is_worded_as_its_bound_at_its_budget() -> None:
    text = ablation_finding("f32", [AblationRow("int8", "nodes 100", 1000, -17, -38.2, 4.0, "continue")], (-30, 0))
    assert "`int8` at nodes 100: -17 [-38, +4] over 1000 games" in text
    assert "costs at most 38 Elo at this budget" in text and "is undecided" in text
    assert "holds at the budgets played here and no other" in text
    ok = ablation_finding("f32", [AblationRow("q", "nodes 100", 649, 8.6, -14.9, 32.2, "H1")], (-30, 0))
    assert "costs at most 15 Elo" in ok and "is accepted" in ok and "equivalent" not in ok


def test_scale_finding_leaves_the_anchors_out_of_the_headline() -> None:
    rated = [Rated("ab", "64", 0, 0, 0, 50), Rated("mcts", "64", 300, 200, 400, 50),
             Rated("anchor:fsf", "", 900, 800, 1000, 40)]
    text = scale_finding("ab@64", rated, [Difference(64, "mcts − ab", 300, 200, 400)], 100, 30)
    assert text.startswith("Strongest engine under test: mcts at 64 nodes, +300 [+200, +400] Elo over the anchor "
                           "ab@64 (100 games on 30 distinct openings")
    assert "mcts − ab: stronger at 64 (+300 [+200, +400])" in text


def test_team_finding_counts_time_wins_apart_and_pools_a_teams_rows() -> None:
    rows = [TeamRow("kd", "bughouse-ab-kd", "sjeng", 40, 13, 0, 27, "-127", "[-241, -35]", 11),
            TeamRow("kd-q", "bughouse-ab-kd:king_danger=0.25", "sjeng", 40, 17, 0, 23, "-53", "[-163, +48]", 16)]
    text = team_finding(rows)
    assert "`kd` 32.5% (13-0-27) against `sjeng`, Elo -127 [-241, -35], 40 games, 11 of its 13 wins on time" in text
    assert "`bughouse-ab-kd`'s 2 rows against `sjeng` pooled: 30-0-50, 37.5%, 27 of the 30 wins on time" in text


def test_opening_and_history_lines() -> None:
    assert opening("It works.", "searchbench x") == ["**Finding.** It works.", "", REGENERATE, "", "```",
                                                      "searchbench x", "```", ""]
    assert history("") == [] and history(" old ") == ["", HISTORY, "", "old"]


@pytest.mark.parametrize("md", REPORTS, ids=lambda p: p.parent.relative_to(ROOT / "reports").as_posix())
def test_every_shipped_report_opens_with_its_finding_and_command(md: Path) -> None:
    lines = md.read_text().split("\n")
    assert lines[0].startswith("# ")
    assert re.match(r"\*\*Findings?\.\*\*", lines[2]), lines[2][:80]
    assert re.search(r"\[[-+]?(\d|inf)|(below|above) [-+]?\d+, every game", "\n".join(lines[2:lines.index("```")])), \
        "the finding gives an interval (or a sweep's bound)"
    fence = lines.index("```")
    assert lines[fence - 2].startswith("Regenerate") and lines[fence + 1].startswith("searchbench ")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


@pytest.mark.parametrize("md", [p for p in REPORTS if p.name == "ablation.md"],
                         ids=lambda p: p.parent.relative_to(ROOT / "reports").as_posix())
def test_a_shipped_ablations_finding_is_what_its_table_says(md: Path) -> None:
    text = md.read_text()
    lines = text.split("\n")
    i = next(i for i, x in enumerate(lines) if x.startswith("| variant | budget |"))
    head = _cells(lines[i])
    rows = []
    for x in lines[i + 2:]:
        if not x.startswith("|"):
            break
        c = _cells(x)
        lo, hi = (float(v.replace("+", "")) for v in c[6].strip("[]").split(","))
        v = c[head.index("verdict")] if "verdict" in head else ""
        at = re.fullmatch(r"(\w+) at pair (\d+)", v)
        rows.append(AblationRow(c[0], c[1], int(c[2].split()[0]), float(c[5]), lo, hi,
                                at.group(1) if at else v, int(at.group(2)) if at else None))
    m = re.search(r"^sprt = \{ elo0 = (-?[\d.]+), elo1 = (-?[\d.]+)", text, re.M)
    sprt = (float(m.group(1)), float(m.group(2))) if m and "LLR" in head else None
    base = re.search(r"baseline `([^`]+)`", text.split("```")[2]).group(1)
    assert lines[2] == "**Finding.** " + ablation_finding(base, rows, sprt)


TICKET = re.compile(r"\b[Ii]ssues? #?\d+")


def test_no_report_config_model_card_or_doc_cites_a_ticket_number() -> None:
    files = [*REPORTS, *(ROOT / "experiments" / "configs").glob("*.toml"), *(ROOT / "evaluators" / "weights").glob("*.md"),
             *(ROOT / "reports").rglob("cards/*.md"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md",
             ROOT / "CHANGELOG.md", *(ROOT / "engines").glob("*.toml")]
    cited = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in TICKET.finditer(p.read_text())]
    assert not cited, cited[:5]


def test_the_paragraph_rounds_as_its_table_does() -> None:
    # a scale table prints whole numbers straight from the float; an ablation table one decimal
    d = scale_finding("a", [Rated("x", "8", 10, 5, 15, 4)], [Difference(8, "x − a", 44.2, -163.46, 22.4)], 4, 2)
    assert "(+44 [-163, +22])" in d
    a = ablation_finding("b", [AblationRow("v", "nodes 8", 4, -52.53, -119.0, 10.4)])
    assert "-53 [-119, +10]" in a  # the table's -52.5 rounds away from 0, as the bullet's -52.53 does
