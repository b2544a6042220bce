"""The answer page's forest plots: each question's measured differences at a glance.

One row a measured difference (an ablation's variant against its baseline at one budget, a bughouse
team against its reference team at one clock or budget), drawn as its Elo with the 95% interval,
rows grouped by game and budget (the game and unit each group's rows share; each row names what it
is measured against: its report's baseline, a team's opponent), a line at 0.  A row whose report is
stale (:mod:`reports.played`: an engine's default moved since) is drawn grey and says so; a sweep's
row (no finite Elo) shows the bound its interval gives.  The plot is static SVG inside the page
(no script), each row's full text in its tooltip, so it reads the same printed or offline.

Notation: Elo and its 95% interval [lo, hi] as the report's CSV gives them.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

#: x-axis limits (Elo): an interval beyond them is cut and drawn with an arrow
LIMIT = 600.0
ROW, HEAD, LABEL_W, PLOT_W, NUM_W = 17, 20, 430, 460, 150


@dataclass(frozen=True)
class Row:
    """One measured difference."""

    report: str  # its folder under reports/
    label: str  # what differs: "gumbel", "team-a vs ref"
    group: str  # the budget its group shares: "nodes 100", "60+0"
    order: float  # sorts groups: the budget's number
    elo: float
    lo: float
    hi: float
    games: int
    stale: bool = False
    sweep: int = 0  # -1: every game lost, +1: every game won (only the bound hi, resp. lo, is finite)
    game: str = ""  # chess, crazyhouse, bughouse ("" where the report does not say)
    baseline: str = ""  # what the row is measured against (an ablation's baseline; a team's opponent)


#: the CSVs that hold differences, as a report writes them
SOURCES = ("ablation.csv", "teams.csv")


def _opt(v: str | None) -> float | None:
    """A numeric cell of a checked CSV (``reports.html._read_csv``): None where it is blank."""
    return float(v) if v is not None and v.strip() else None


def _sweep(r: dict[str, str], elo: float, lo: float, hi: float) -> tuple[float, float, float, int]:
    """A row that lost (won) every game: its Elo is only a bound, the interval's finite end."""
    score = _opt(r.get("score"))
    if score == 0.0:
        return hi, -math.inf, hi, -1
    if score == 1.0:
        return lo, lo, math.inf, 1
    return elo, lo, hi, 0


def _clock(tc: str) -> float:
    """The base seconds of a clock (``60+0``) that orders the groups; 0 for anything else."""
    try:
        return float(tc.split("+")[0])
    except ValueError:
        return 0.0


def rows_of(source: str, rows: list[dict[str, str]], rel: str, stale: bool, game: str = "",
            baseline: str = "") -> list[Row]:
    """The differences in the rows of a report's ``source`` (one of :data:`SOURCES`), read and checked
    by ``reports.html._read_csv``, each naming its ``game`` and what it is measured against (an
    ablation's ``baseline``; a team row's opponent); rows without games are left out."""
    out: list[Row] = []
    for r in rows:
        games = _opt(r.get("games"))
        if not games:
            continue
        elo, lo, hi, sw = _sweep(r, float(r["elo"]), float(r["elo_low"]), float(r["elo_high"]))
        if source == "ablation.csv":
            budget = _opt(r.get("budget"))
            if budget is None:
                continue
            out.append(Row(rel, str(r.get("variant", "")), f"{r.get('axis', 'nodes')} {budget:g}", budget, elo, lo, hi,
                           int(games), stale, sw, game, baseline))
        else:
            tc = str(r.get("tc", "") or "-")
            out.append(Row(rel, str(r.get("row", "")), f"clock {tc}", _clock(tc), elo, lo,
                           hi, int(games), stale, sw, game, str(r.get("opponent", ""))))
    return out


def _x(elo: float) -> float:
    return LABEL_W + (max(-LIMIT, min(LIMIT, elo)) + LIMIT) / (2 * LIMIT) * PLOT_W


def svg(rows: list[Row], title: str) -> str:
    """The forest plot of ``rows`` (grouped by budget, in the order of the budgets) as inline SVG;
    "" where there is no row."""
    if not rows:
        return ""
    groups: dict[str, list[Row]] = {}
    for r in sorted(rows, key=lambda r: (r.game, r.group.split(" ")[0], r.order, r.baseline, r.report, r.label)):
        groups.setdefault(f"{r.game}, {r.group}" if r.game else r.group, []).append(r)
    height = HEAD + sum(HEAD + ROW * len(g) for g in groups.values()) + 24
    width = LABEL_W + PLOT_W + NUM_W
    parts = [f'<svg class="forest" role="img" aria-label="{html.escape(title)}" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{html.escape(title)}</title>"]
    for elo in range(-int(LIMIT), int(LIMIT) + 1, 200):
        x = _x(elo)
        parts.append(f'<line x1="{x:.1f}" y1="{HEAD - 6}" x2="{x:.1f}" y2="{height - 22}" stroke="{"#888" if elo == 0 else "#e4e4e4"}"/>'
                     f'<text class="tick" x="{x:.1f}" y="{height - 8}" text-anchor="middle">{elo:+d}</text>')
    parts.append(f'<text class="tick" x="{LABEL_W + PLOT_W / 2:.0f}" y="{HEAD - 8}" text-anchor="middle">'
                 "Elo difference, 95% interval</text>")
    y = HEAD
    for name, group in groups.items():
        y += HEAD
        parts.append(f'<text class="label" x="4" y="{y - 5}" font-weight="600">{html.escape(name)}</text>')
        for r in group:
            y += ROW
            mid = y - ROW / 2 + 1
            colour = "#999" if r.stale else ("#1f77b4" if r.lo > 0 else "#d62728" if r.hi < 0 else "#444")
            text = f"{r.report}: {r.label}" + (f" vs {r.baseline}" if r.baseline else "") + (" (stale)" if r.stale else "")
            figure = (f"below {r.hi:+.0f} (lost every game)" if r.sweep < 0 else f"above {r.lo:+.0f} (won every game)"
                      if r.sweep > 0 else f"{r.elo:+.0f} [{r.lo:+.0f}, {r.hi:+.0f}]")
            tip = (f"{r.report}: {r.label}" + (f" against {r.baseline}" if r.baseline else "")
                   + f" at {r.group}" + (f" in {r.game}" if r.game else "") + f": {figure}, {r.games} games"
                   + ("; stale: an engine's default moved since it was played" if r.stale else ""))
            cut = "…" if len(text) > 68 else ""
            x0, x1, xm = _x(r.lo), _x(r.hi), _x(r.elo)
            arrows = ("◂" if r.lo < -LIMIT else "") + ("▸" if r.hi > LIMIT else "")
            parts.append(f'<g><title>{html.escape(tip)}</title>'
                         f'<text class="tick" x="4" y="{mid + 4:.1f}" fill="{colour}">{html.escape(text[:68] + cut)}</text>'
                         f'<line x1="{x0:.1f}" y1="{mid:.1f}" x2="{x1:.1f}" y2="{mid:.1f}" stroke="{colour}" stroke-width="2"/>'
                         f'<rect x="{xm - 3:.1f}" y="{mid - 3:.1f}" width="6" height="6" fill="{colour}"/>'
                         f'<text class="tick" x="{LABEL_W + PLOT_W + 6}" y="{mid + 4:.1f}" fill="{colour}">'
                         f"{figure.split(' (')[0]}{arrows} {r.games}g</text></g>")
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["LIMIT", "SOURCES", "Row", "rows_of", "svg"]
