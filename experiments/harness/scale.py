"""Elo versus cost, the main job: budget ladders per engine family, rated together, plotted.

Config: everything of :mod:`experiments.harness.tournament`'s run settings (name, variant, games,
concurrency, workers, seed, db, pgn, openings, adjudication, anchor, anchor_elo, bootstrap,
backend, ray_address), plus::

    report_dir = "reports"          # figures go to <report_dir>/<name>/elo_vs_nodes.{png,svg,csv,md}
                                    # and elo_vs_cost.{png,svg} (Elo against seconds and evaluator
                                    # calls per move, the CSV's cost columns)
    cross_games = 6                 # games per pairing between families (default: games)
    top_games = 8                   # at most this many games in a pairing with a family's highest
                                    # rung (its dearest games: 40 there where the rest have 100)
    unit = "nodes"                  # what every family's ladder counts: "nodes", "evals" (evaluator
                                    # calls a move) or "movetime" (seconds a move); one unit a report

    [[families]]
    name = "ab-material"            # one line on the plot
    engine = "material-ab"          # registry name or spec
    nodes = [64, 256, 1024]         # an explicit ladder (the key is the unit: evals = [...],
                                    # movetime = [0.1, 0.3, 1.0]), or a geometric one:
    # ladder = { start = 64, factor = 4, steps = 3 }   -> 64, 256, 1024

    [[anchors]]                     # optional fixed opponents (e.g. external engine levels)
    name = "fsf-d1"
    engine = "fairy-stockfish"
    depth = 1                       # any limit but nodes ladder: nodes, depth, movetime, tc
    games = 6                       # against the lowest and highest rung of every family

A player is a family at a budget, named ``family@N`` on a nodes ladder, ``family@evals=N`` and
``family@movetime=S`` on the others; the report's CSV names its budget column by the unit
(``nodes``, ``evals``, ``movetime``) and its figure draws Elo against it.  Scheduling keeps the graph of games
connected, which the joint rating needs: (1) each rung plays its ladder neighbour; (2) for every two
families, each rung of the one plays the rung of the other nearest in log budget (both directions);
(3) each anchor plays the lowest and the highest rung of every family; ``top_games`` caps the games
of every pairing with a family's highest rung (a ladder's dearest point, sized apart).  Tasks are interleaved pair
by pair across all pairings, so an interrupted run is still connected and balanced, and a rerun
resumes.  The ratings use every stored game of the run between current players, anchored at
``anchor`` (default: the lowest rung of the first family at 0 Elo).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from experiments.harness import openings as openings_mod, ratings as ratings_mod, tomlconfig
from experiments.harness.answer import BUDGET_WORDS, Difference, Rated, history, opening, rung, scale_finding, verdict
from experiments.harness.webpage import report_page
from reports.paradigms import SCALE_BUDGETS, budget_column, scale_player
from experiments.paths import csv_text, save_figure, write_atomic
from experiments.harness.costs import NODE_CAPTION, Cost, batch_text, costs
from experiments.harness.store import GameRecord, check_writable
from experiments.harness.match import GameTask, Player
from experiments.harness.ratings import SWEEP_MARK, SWEEP_NOTE, Rating
from experiments.harness.tasks import MAX_BUDGET
from experiments.harness.tomlconfig import ConfigError, Section, even_games, writable_dir
from experiments.harness.tournament import RunSettings, _name_check, interleave, play_run, player, run_settings


#: the longest ``movetime`` rung (seconds a move): more is a typo, not a plan
MAX_MOVETIME = 600.0


@dataclass
class Family:
    name: str
    engine: str
    budgets: list[float]  # the ladder, in the scale's unit
    players: list[Player] = field(default_factory=list)


@dataclass
class Anchor:
    player: Player
    games: int


@dataclass
class Scale:
    settings: RunSettings
    families: list[Family]
    anchors: list[Anchor]
    cross_games: int
    report_dir: Path
    unit: str = "nodes"
    top_games: int | None = None  # the cap on a pairing's games where a family's highest rung plays

    @property
    def players(self) -> list[Player]:
        return [p for f in self.families for p in f.players] + [a.player for a in self.anchors]

    @property
    def out_dir(self) -> Path:
        return self.report_dir / self.settings.name

    def pairings(self) -> list[tuple[Player, Player, int]]:
        """(a, b, games) of every scheduled pairing (see module doc)."""
        out: list[tuple[Player, Player, int]] = []
        seen: set[frozenset[str]] = set()
        tops = {f.players[-1].name for f in self.families if len(f.players) > 1}

        def add(a: Player, b: Player, games: int) -> None:
            k = frozenset((a.name, b.name))
            if a.name != b.name and k not in seen:
                seen.add(k)
                if self.top_games is not None and k & tops:
                    games = min(games, self.top_games)
                out.append((a, b, games))

        g = self.settings.games
        for f in self.families:
            for a, b in zip(f.players, f.players[1:]):
                add(a, b, g)
        for i, f in enumerate(self.families):
            for h in self.families[i + 1:]:
                for src, dst in ((f, h), (h, f)):
                    for p, n in zip(src.players, src.budgets):
                        k = min(range(len(dst.budgets)), key=lambda j: (abs(math.log(dst.budgets[j] / n)), j))
                        a, b = (p, dst.players[k]) if src is f else (dst.players[k], p)
                        add(a, b, self.cross_games)
        for an in self.anchors:
            for f in self.families:
                for p in {f.players[0].name: f.players[0], f.players[-1].name: f.players[-1]}.values():
                    add(an.player, p, an.games)
        return out

    def tasks(self) -> list[GameTask]:
        s = self.settings
        return interleave([s.pairing_tasks(a, b, games) for a, b, games in self.pairings()])


def _ladder(sec: Section, unit: str) -> list[float]:
    """A family's budgets in ``unit``: the key named by the unit (``nodes = [...]``) or ``ladder``."""
    ints = unit != "movetime"
    top = MAX_BUDGET if ints else MAX_MOVETIME
    what = "positive integers" if ints else "positive numbers of seconds"
    if sec.has(unit) and sec.has("ladder"):
        raise sec.error("ladder", f"give either {unit} or ladder, not both")
    if sec.has(unit):
        vals = sec.get(unit, list)
        ok = all((isinstance(n, int) or (not ints and isinstance(n, float))) and not isinstance(n, bool)
                 and 0 < n <= top and (not ints or n >= 1) for n in vals)
        if not vals or not ok:
            raise sec.error(unit, f"must be a non-empty array of {what} up to {top:,g}")
        if sorted(set(vals)) != list(vals):
            raise sec.error(unit, "must be strictly increasing")
        return list(vals)
    lad = sec.table("ladder")
    if not lad.data:
        raise sec.error(unit, f"missing: give {unit} = [...] or ladder = {{start, factor, steps}}")
    start = lad.positive("start") if ints else lad.get(
        "start", float, check=lambda v: None if 0 < v <= top else f"must be above 0 and at most {top:g}")
    factor = lad.get("factor", float, check=lambda v: None if 1 < v <= 1000 else "must be above 1 and at most 1000")
    steps = lad.get("steps", int, check=lambda v: None if 1 <= v <= 64 else "must be from 1 to 64")
    lad.done()
    last = start * factor ** (steps - 1)
    if last > top:
        raise lad.error(None, f"the ladder's last rung {last:.3g} is above {top:,g} {unit}")
    if ints:
        return sorted({int(round(start * factor ** k)) for k in range(steps)})
    return sorted({float(f"{start * factor ** k:.3g}") for k in range(steps)})


def parse(cfg: Section) -> Scale:
    s = run_settings(cfg)
    cross = cfg.get("cross_games", int, s.games, even_games)
    report_dir = Path(cfg.get("report_dir", str, "reports", writable_dir))
    unit = cfg.choice("unit", SCALE_BUDGETS, "nodes")
    top = cfg.get("top_games", int, None, even_games)
    families: list[Family] = []
    names: dict[str, str] = {}
    for sec in cfg.tables("families", required=True):
        sec.only("name", "engine", "nodes", "evals", "ladder", "depth", "movetime", "tc")
        fname = sec.get("name", str, check=_name_check)
        if "@" in fname:
            raise sec.error("name", "must not contain '@'")
        if fname in names:
            raise sec.error("name", f"duplicate family {fname!r}")
        others = [u for u in SCALE_BUDGETS if u not in (unit, "movetime") and sec.has(u)]  # movetime: also a limit
        if others:
            raise sec.error(others[0], f"this scale counts {unit} (unit = {unit!r}): give the ladder as {unit} = [...]")
        budgets = _ladder(sec, unit)
        fam = Family(fname, "", budgets)
        for n in budgets:
            p = player(sec, name=scale_player(fname, unit, rung(n)), nodes=int(n) if unit == "nodes" else None,
                       evals=int(n) if unit == "evals" else None, movetime=float(n) if unit == "movetime" else None)
            fam.players.append(p)
            names[p.name] = fname
        fam.engine = fam.players[0].engine
        sec.used.update({unit, "ladder"})
        sec.done()
        names[fname] = fname
        families.append(fam)
    if not families:
        raise cfg.error("families", "give at least one [[families]] table")
    anchors: list[Anchor] = []
    for sec in cfg.tables("anchors"):
        sec.only("name", "engine", "nodes", "playouts", "evals", "depth", "movetime", "tc", "games")
        p = player(sec)
        if p.name in names:
            raise sec.error("name", f"duplicate player name {p.name!r}")
        games = sec.get("games", int, s.games, even_games)
        sec.done()
        names[p.name] = p.name
        anchors.append(Anchor(p, games))
    if len(families) == 1 and len(families[0].budgets) == 1 and not anchors:
        raise cfg.error("families", "one family with one budget has no one to play")
    if s.anchor is None:
        s.anchor = families[0].players[0].name
    elif s.anchor not in names or s.anchor in {f.name for f in families}:
        raise cfg.error("anchor", f"no player named {s.anchor!r} (players are family@nodes or anchor names)")
    cfg.done()
    return Scale(s, families, anchors, cross, report_dir, unit, top)


def load(path: str | Path) -> Scale:
    try:
        return parse(tomlconfig.load(path))
    except openings_mod.OpeningError as e:
        raise ConfigError(f"{path}: {e}") from None


@dataclass
class Row:
    family: str
    engine: str
    budget: float | None  # in the scale's unit; None for an anchor
    rating: Rating
    cost: Cost = field(default_factory=Cost)


def rows(sc: Scale, ratings: list[Rating], games: Sequence[GameRecord] = ()) -> list[Row]:
    by = {r.name: r for r in ratings}
    cost = costs(games)
    out: list[Row] = []
    for f in sc.families:
        for p, n in zip(f.players, f.budgets):
            if p.name in by:
                out.append(Row(f.name, f.engine, n, by[p.name], cost.get(p.name, Cost())))
    for a in sc.anchors:
        if a.player.name in by:
            out.append(Row("anchor:" + a.player.name, a.player.engine, None, by[a.player.name],
                           cost.get(a.player.name, Cost())))
    return out


ANCHOR_NOTE = """How to read it: every player is rated from all games of the run together, with `{anchor}` fixed
at {anchor_elo:g}; an Elo difference is a difference in expected score (+100 Elo = 64%). The anchors
are external engines at fixed limits ({anchors}), rated with everything else and drawn as dotted
lines with their intervals: a family's point above an anchor's line is the stronger player, and
the distance between a point and a line is the Elo gap between them, whatever the anchor's own
number. Compare our Elo with other reports only through these engines and limits, never as
absolute numbers."""


def difference_rows(sc: Scale, fit: Any) -> list[Difference]:
    """At every budget two or more families share, each family against the first one there, with the
    bootstrap interval of the difference itself (from the same replicates)."""
    out: list[Difference] = []
    first = sc.families[0] if sc.families else None
    for f in sc.families[1:]:
        for p, n in zip(f.players, f.budgets):
            if first is None or n not in first.budgets:
                continue
            q = first.players[first.budgets.index(n)]
            d, lo, hi = fit.difference(p.name, q.name)
            out.append(Difference(n, f"{f.name} − {first.name}", d, lo, hi))
    return out


def differences(rows: Sequence[Difference], unit: str = "nodes") -> list[str]:
    """Markdown rows of :func:`difference_rows`, with a verdict each."""
    rows_md = [f"| {rung(r.budget)} | {r.pair} | {r.elo:+.0f} | [{r.lo:+.0f}, {r.hi:+.0f}] | {verdict(r.lo, r.hi)} |"
               for r in rows]
    if not rows_md:
        return []
    return ["", f"Differences at equal {BUDGET_WORDS[unit][2]} (each family against the first, the 95% bootstrap "
            "interval of the difference itself, from the same replicates as the table):", "",
            f"| {unit} | difference | Elo | 95% interval | verdict |", "|---:|---|---:|---|---|"] + rows_md


#: the columns of ``elo_vs_nodes.csv`` that depend on the machine, not on the games
MACHINE_COLUMNS = ("seconds_per_move",)
#: the columns that measure what the moves cost (nodes, evaluator calls): compared apart from the games'
COST_COLUMNS = ("nodes_per_move", "evals_per_move")


def compare_tables(new: Path, shipped: Path) -> tuple[list[str], list[str]]:
    """Where two ``elo_vs_nodes.csv`` tables differ (one line each): (in what the games decide: the
    rows, Elo, interval, games, score; in the cost columns, with the relative difference).  Both
    empty: the same games gave the same table (:data:`MACHINE_COLUMNS` aside)."""
    def read(p: Path) -> dict[tuple[str, str], dict[str, str]]:
        with open(p, newline="") as f:
            return {(r["engine"], r[budget_column(r)]): r for r in csv.DictReader(f)}

    a, b = read(new), read(shipped)
    games = [f"{e} at {n or '-'}: only in {'this run' if (e, n) in a else 'the shipped report'}"
             for e, n in sorted(a.keys() ^ b.keys())]
    cost = []
    for k in sorted(a.keys() & b.keys()):
        for col in a[k]:
            x, y = a[k][col], b[k].get(col, "")
            if col in MACHINE_COLUMNS or x == y:
                continue
            where = f"{k[0]} at {k[1] or '-'}: {col} {x} here, {y} shipped"
            if col in COST_COLUMNS:
                try:
                    cost.append(f"{where} ({100 * abs(float(x) - float(y)) / max(abs(float(y)), 1e-9):.2f}%)")
                    continue
                except (TypeError, ValueError):
                    pass
            games.append(where)
    return games, cost


def write_report(sc: Scale, ratings: list[Rating], command: str, games: int,
                 game_records: Sequence[GameRecord] = (), fit: Any = None) -> list[Path]:
    """``elo_vs_nodes.{csv,md,png,svg}``, ``elo_vs_cost.{png,svg}`` and the page ``index.html``
    (:mod:`reports.html`, with the games) in :attr:`Scale.out_dir`."""
    from reports.plot import plot, plot_cost  # deferred: loads matplotlib

    out = sc.out_dir
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create report directory {str(out)!r}: {e.strerror}") from None
    rs = rows(sc, ratings, game_records)
    csv_path = out / "elo_vs_nodes.csv"
    # every file through a fresh temporary name and a rename: a planted link is replaced, not followed
    unit = sc.unit
    write_atomic(csv_path, csv_text([["family", "engine", unit, "elo", "lo", "hi", "games", "score", "nodes_per_move",
                                      "evals_per_move", "seconds_per_move"]] + [
        [r.family, r.engine, "" if r.budget is None else rung(r.budget), f"{r.rating.elo:.1f}", f"{r.rating.lo:.1f}",
         f"{r.rating.hi:.1f}", r.rating.games, f"{r.rating.score:.4f}", f"{r.cost.nodes:.1f}", f"{r.cost.evals:.1f}",
         f"{r.cost.seconds:.4f}"] for r in rs]), "report table")
    s = sc.settings
    n_open = len({g.opening_fen for g in game_records})
    diffs = difference_rows(sc, fit) if fit is not None else []  # once: the finding and the table read them
    word = BUDGET_WORDS[unit][0]
    md = [f"# Elo versus {word}: {s.name}", "",
          *opening(scale_finding(str(s.anchor), [Rated(r.family, "" if r.budget is None else rung(r.budget), r.rating.elo,
                                                  r.rating.lo, r.rating.hi, r.rating.games) for r in rs],
                                 diffs, games, n_open, unit), command),
          f"Variant {s.variant}; {games} games on {n_open} distinct openings "
          f"(each pairing draws its own, one per colour-reversed pair); anchor {s.anchor} = {s.anchor_elo:g} Elo; "
          f"95% intervals from {s.bootstrap} bootstrap samples over game pairs; "
          f"logistic Bradley-Terry fit (draws = half points).", "",
          f"![Elo versus {word}](elo_vs_nodes.png)", "",
          "What a move costs (means per move over the stored games: nodes, evaluator calls = positions sent to "
          "a network or static evaluations, 0 for external engines; seconds on this machine):", "",
          "![Elo versus seconds and evaluator calls per move](elo_vs_cost.png)", "", NODE_CAPTION, "",
          f"| family | engine | {unit} | Elo | 95% interval | games | score | nodes/move | evals/move | ms/move |",
          "|---|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rs:
        mark = f" {SWEEP_MARK}" if r.rating.sweep_bounded else ""
        md.append(f"| {r.family} | `{r.engine}`{batch_text(r.engine)} | {'' if r.budget is None else rung(r.budget)} | {r.rating.elo:+.0f} | "
                  f"[{r.rating.lo:+.0f}, {r.rating.hi:+.0f}]{mark} | {r.rating.games} | {100 * r.rating.score:.1f}% | "
                  f"{r.cost.nodes:.0f} | {r.cost.evals:.0f} | {1000 * r.cost.seconds:.1f} |")
    if any(r.rating.sweep_bounded for r in rs):
        md += ["", SWEEP_NOTE]
    md += differences(diffs, unit)
    if sc.anchors:
        md += ["", ANCHOR_NOTE.format(anchor=s.anchor, anchor_elo=s.anchor_elo,
                                      anchors=", ".join(f"`{a.player.name}` = `{a.player.engine}` "
                                                        f"{a.player.limits_text()}" for a in sc.anchors))]
    md += ["", f"To narrow the intervals raise `games` / `cross_games` in the config and run the command again "
           "(only new games are played); `workers` and `backend = \"ray\"` spread the games over more cores or "
           "a cluster.", *history(s.notes)]
    md_path = out / "elo_vs_nodes.md"
    write_atomic(md_path, "\n".join(md) + "\n", "report")
    figs = plot(csv_path, f"Elo versus {word}: {s.name} ({s.variant})", save=save_figure)
    figs += plot_cost(csv_path, f"Elo versus cost per move: {s.name} ({s.variant})", save=save_figure)

    return [csv_path, md_path] + figs + [report_page(out, game_records, s.variant, s.db)]


def run(sc: Scale, command: str, factory: object | None = None, progress: bool = True) -> tuple[list[Rating], list[Path]]:
    """Play what is missing, rate every stored game of the run, write the report (see module doc)."""
    s = sc.settings
    check_writable(sc.out_dir / "elo_vs_nodes.csv")
    _, games = play_run(s, sc.tasks(), [p.name for p in sc.players], factory, progress)
    fit = ratings_mod.fit(ratings_mod.from_games(games), s.anchor, s.anchor_elo, s.bootstrap, s.seed,
                          progress=progress)
    print(ratings_mod.format_table(fit.ratings))
    return fit.ratings, write_report(sc, fit.ratings, command, len(games), games, fit)
