"""The HTML page of a report (:mod:`reports.html`) from stored games: ``searchbench report``.

- :func:`report_page` is what ``scale``, ``ablate``, ``rl`` and ``tournament`` call after writing
  their Markdown: ``FOLDER/index.html`` with the games they rated.
- :func:`database_page` builds a page from any results database (a match's too): every player
  rated (Bradley-Terry, the most-played player at 0), their mean cost a move, the games.
- ``searchbench report PATH`` does either (a report folder, with ``--db`` for its games; or a
  database), and ``searchbench report --index DIR`` writes ``DIR/index.html`` listing every report.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from board.variants import variant_of
from experiments.harness import ratings as ratings_mod
from experiments.harness.costs import costs
from experiments.harness.store import GameRecord, Store
from reports import html as page
from reports import played


def views(games: Sequence[GameRecord]) -> list[page.GameView]:
    """The page's view of stored games: start FEN (the opening's moves replayed where it has them),
    UCI moves, and per move nodes, evaluator calls, score, depth and milliseconds."""
    out = []
    for i, g in enumerate(games):
        fen = g.opening_fen
        if g.opening_moves:
            cls = variant_of(g.variant).board_class()
            b = cls()
            try:
                for u in g.opening_moves:
                    b.push_uci(u)
                fen = b.fen()
            except ValueError:
                pass
        stats = [(int(s.nodes), int(s.evals), None if s.cp is None else int(s.cp), int(s.depth), int(round(1000 * s.time)))
                 for s in g.move_stats]
        stats += [(0, 0, None, 0, 0)] * (len(g.moves) - len(stats))
        out.append(page.GameView(g.id if g.id is not None else i + 1, g.white, g.black, g.result, g.reason, fen,
                                 list(g.moves), stats[: len(g.moves)], g.opening))
    return out


def sample(games: Sequence[GameRecord], most: int = page.MAX_GAMES) -> list[GameRecord]:
    """The games a page holds: all of them, or where there are more than ``most`` an equal share of
    every pairing (its first games by id; at least one each, so that every player's row still lists
    games however many pairings there are, up to ``most`` of them)."""
    ordered = sorted(games, key=lambda g: (g.id or 0))
    if len(ordered) <= most:
        return ordered
    by_match: dict[str, list[GameRecord]] = {}
    for g in ordered:
        by_match.setdefault(g.match, []).append(g)
    per = max(1, most // len(by_match))  # at least 2 cut every pairing past the 750th out
    return sorted((g for gs in by_match.values() for g in gs[:per]), key=lambda g: (g.id or 0))[:most]


def report_page(folder: str | Path, games: Sequence[GameRecord], variant: str | None,
                db: str | Path | None = None) -> Path:
    """``FOLDER/index.html`` for the report just written there, with ``games`` (:func:`sample` where
    there are more than a page holds; ``variant`` None: read from the report's Markdown), and
    ``FOLDER/engines.json``: what each player's games ran with (:mod:`reports.played`)."""
    played.write(folder, played.from_games(games))
    source = f"; all of them in {db}" if db else ""
    return page.folder_page(folder, views(sample(games)), variant, total_games=len(games), source=source)


def database_page(db: str | Path, out: str | Path, run: str | None = None, bootstrap: int = 200,
                  anchor: str | None = None, anchor_elo: float = 0.0) -> Path:
    """A page for any results database: ratings of every player (``anchor`` at ``anchor_elo``; by
    default the most-played player at 0), their cost a move, the games (``tournament`` writes its
    run's page beside its database)."""
    with Store(str(db), readonly=True) as st:
        games = st.games(run=run)
    if not games:
        raise ValueError(f"{db}: no games" + (f" in run {run!r}" if run else ""))
    variants = sorted({g.variant for g in games})
    parts = ratings_mod.groups(ratings_mod.from_games(games))
    cost = costs(games)
    name = Path(db).name + (f", run {run}" if run else "")
    md = [f"# Games of {name}", "",
          f"{len(games)} games ({', '.join(variants)}) on {len({(g.opening_fen, g.match) for g in games})} distinct "
          f"(opening, pairing) pairs; Bradley-Terry with {bootstrap} bootstrap replicates over game pairs (95% "
          "intervals); costs are means per move over the stored games."
          + (f" The players form {len(parts)} groups that never met (other budgets or pools): each group is rated "
             "apart, against its own anchor, and no Elo compares two groups." if len(parts) > 1 else ""), "",
          "Regenerate:", "", "```", f"searchbench report {db}" + (f" --run {run}" if run else ""), "```", ""]
    charts = []
    for k, part in enumerate(parts, 1):
        a = ratings_mod.group_anchor(part, anchor)
        a_elo = anchor_elo if a == anchor else 0.0
        fit = ratings_mod.fit(part, a, a_elo, bootstrap, 1)
        rows: list[dict[str, Any]] = []
        for r in fit.ratings:
            c = cost.get(r.name)
            rows.append({"player": r.name, "elo": round(r.elo, 1), "lo": round(r.lo, 1), "hi": round(r.hi, 1), "games": r.games,
                         "score": r.score, "nodes_per_move": round(c.nodes, 1) if c else 0.0,
                         "evals_per_move": round(c.evals, 1) if c else 0.0,
                         "ms_per_move": round(1000 * c.seconds, 1) if c else 0.0, "bounded": r.sweep_bounded})
        head = f"group {k} of {len(parts)}: " if len(parts) > 1 else ""
        stem = f"ratings-{k}" if len(parts) > 1 else "ratings"
        md += ([f"## Group {k}: {a} = {a_elo:g} Elo", ""] if len(parts) > 1 else [f"{a} = {a_elo:g} Elo.", ""])
        md += [f"![Elo against cost]({stem}.png)", ""]
        md += ["| player | Elo | 95% interval | games | score | nodes/move | evals/move | ms/move |",
               "|---|---:|---|---:|---:|---:|---:|---:|"]
        for row in rows:
            mark = f" {ratings_mod.SWEEP_MARK}" if row["bounded"] else ""
            md.append(f"| {row['player']} | {row['elo']:+.0f} | [{row['lo']:+.0f}, {row['hi']:+.0f}]{mark} | {row['games']} | "
                      f"{100 * float(row['score']):.1f}% | {row['nodes_per_move']:.0f} | {row['evals_per_move']:.0f} | "
                      f"{row['ms_per_move']:.1f} |")
        if any(row["bounded"] for row in rows):
            md += ["", ratings_mod.SWEEP_NOTE]
        md.append("")
        chart = page.ratings_chart([{k2: v for k2, v in row.items() if k2 != "bounded"} for row in rows],
                                   f"Elo against cost: {head}{name}")
        chart["replaces"] = [stem]
        charts.append(chart)
    shown = sample(games)
    out = Path(out)
    text = page.render(f"Games of {name}", variants[0], "\n".join(md), None, charts, views(shown), len(games),
                       f"; all of them in {db}")
    page._write_text(out, text)
    return out


__all__ = ["database_page", "report_page", "sample", "views"]
