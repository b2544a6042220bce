"""The README's findings are the reports' own rows, from current reports only: every row of its
tables that names a variant, a baseline, a budget and an ablation report equals that report's CSV
row (Elo and interval rounded as the report's finding rounds them, games, distinct openings), its
baseline and its game; and no report the answer page marks stale is cited outside the README's
list of stale reports (nor a current one inside it)."""
from __future__ import annotations

import csv
import re
from pathlib import Path

from reports import played
from reports.html import baseline_of
from reports.paradigms import game_of

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| (\w+) \| (nodes|calls|seconds) ([\d.]+) \| ([^|]+?) \| (\d+) \((\d+)\) "
                 r"\| \[[^\]]+\]\(reports/([^)]+)/index\.html\) \|$", re.MULTILINE)
AXIS = {"nodes": "nodes", "calls": "evals", "seconds": "movetime"}
STALE_HEAD = "**Stale: "


def _whole(x: float) -> str:
    """Whole Elo as the report's finding gives it: from the table's one decimal, half away from 0."""
    v = abs(float(f"{x:.1f}"))
    n = int(v + 0.5)
    return f"{-n if x < 0 and n else n:+d}".replace("-", "−")


def _figure(r: dict[str, str]) -> str:
    lo, hi = float(r["elo_low"]), float(r["elo_high"])
    if float(r["score"]) == 0.0:
        return f"below {_whole(hi)} (every game lost)"
    if float(r["score"]) == 1.0:
        return f"above {_whole(lo)} (every game won)"
    return f"{_whole(float(r['elo']))} [{_whole(lo)}, {_whole(hi)}]"


def test_the_readme_tables_are_the_reports_rows() -> None:
    rows = ROW.findall(README)
    # the pattern still reads the tables (their rows cite current reports only, so their number falls
    # when a shipped network moves and rises as reports are played again)
    assert len(rows) >= 15, len(rows)
    for variant, against, game, unit, budget, figure, games, openings, rel in rows:
        folder = ROOT / "reports" / rel
        md = (folder / "ablation.md").read_text()
        assert baseline_of(md) == against, (rel, against)
        assert game_of(md) == game, (rel, game)
        found = [r for r in csv.DictReader(open(folder / "ablation.csv"))
                 if r["variant"] == variant and r["axis"] == AXIS[unit] and float(r["budget"]) == float(budget)]
        assert len(found) == 1, (rel, variant, unit, budget)
        (r,) = found
        assert (figure, games, openings) == (_figure(r), r["games"], r["openings"]), (rel, variant, unit, budget)


def _links(text: str) -> set[str]:
    return set(re.findall(r"\(reports/([^)]+?)/index\.html\)", text))


def test_the_readme_cites_no_stale_report() -> None:
    stale = {p.parent.relative_to(ROOT / "reports").as_posix() for p in (ROOT / "reports").rglob(played.FILE)
             if played.status(p.parent)[0] == "stale"}
    head, sep, tail = README.partition(STALE_HEAD)
    if not sep:  # no stale paragraph: there must be nothing to list
        assert not stale, f"the README lists no stale reports, and these are stale: {sorted(stale)}"
        return
    listed = tail.split("\n\n", 1)[0]
    rest = head + tail.split("\n\n", 1)[1] if "\n\n" in tail else head
    assert not _links(rest) & stale, sorted(_links(rest) & stale)  # cited with a claim
    assert _links(listed) == stale, (sorted(_links(listed) - stale), sorted(stale - _links(listed)))
