"""Ablations and paradigm comparisons: ``searchbench ablate CONFIG.toml``.

A baseline engine and variants of it (each changing options of the baseline, or another engine
altogether: alpha-beta against MCTS with the evaluator held fixed) play the baseline at each budget,
openings in colour-reversed pairs, every game in the same SQLite store as every other command
(resumable, never a game twice).  Config (every key checked; an error names the key and its line)::

    name = "zh-switches"
    variant = "crazyhouse"
    baseline = "rise-mcts"            # any engine spec
    nodes = [100, 400]                # or ladder = {start, factor, steps}; or evals = [...] /
                                      # movetime = [...] (seconds); several of them: several axes
    games = 40                        # per variant and budget (20 colour-reversed pairs); a variant
                                      # may set its own (games = 100 in its table), and play only
                                      # some of the budgets (nodes = [1600] in its table: where its
                                      # switch acts; a switch that acts only above a budget would
                                      # play the baseline's own games below it)
    seed = 1
    report_dir = "reports"            # output in <report_dir>/<name>/ablation.{csv,md,png,svg}
    db = "runs/zh-switches.sqlite"    # default runs/<name>.sqlite
    sprt = { elo0 = 0, elo1 = 10, alpha = 0.05, beta = 0.05 }   # optional: stop a variant once decided
    # and the run settings of tournaments: concurrency, workers, openings, adjudication, ...

    [[variants]]
    name = "no-q-value-selection"
    options = { q_value_selection = false }
    [[variants]]
    name = "alpha-beta"
    engine = "material-ab"            # another engine instead of the baseline (options apply to it)

A budget is the same for both players: equal nodes, equal evaluator calls (``evals``: positions
sent to a network or static evaluations) or equal seconds per move (``movetime``; then each worker
plays one game at a time, so a move's time is its own).

Statistics per variant and budget (fishtest / fastchess): the game pairs' pentanomial counts
``[LL, LD+DL, DD+WL+LW, WD+DW, WW]``, the mean pair score ``mu`` and its standard error
``sigma_pair / sqrt(N)``; the Elo difference is ``-400 log10(1/mu - 1)`` with the 95% interval
from ``mu +- 1.96 SE`` (scores held inside ``[1/(4N), 1 - 1/(4N)]``, so a perfect score gives a
finite bound, not infinity).  With ``sprt`` the generalised pentanomial SPRT of
:mod:`experiments.harness.sprt` (normalised Elo) is run per variant and budget; in one process a
decided variant stops at that budget (its remaining pairs are not played).

Output in ``<report_dir>/<name>/``: ``ablation.csv`` (columns ``variant, axis, budget, nodes,
games, wins, draws, losses, score, elo, elo_low, elo_high``, the pentanomial counts ``ptnml_LL,
ptnml_LD, ptnml_DD_WL, ptnml_WD, ptnml_WW`` (pairs scoring 0, 0.5, 1, 1.5, 2), ``llr, verdict``, the per-move
costs of both sides, the openings and ``decided_at_pairs`` (the pairs counted when the SPRT crossed its bound)), ``ablation.png``/``.svg`` (a forest plot: Elo and interval per variant, one
marker per budget, the baseline at 0), ``ablation.md`` (the table, the config, the command and
the versions).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from engines import registry
from engines.base import EngineError
from engines.registry import join_spec, split_spec
from experiments.harness import openings as openings_mod, tomlconfig
from experiments.harness.answer import AblationRow, ablation_finding, history, opening, verdict
from experiments.harness.costs import NODE_CAPTION, Cost, batch_text, costs
from experiments.harness.scale import _ladder
from experiments.harness.sprt import Sprt, decided_early
from experiments.harness.stats import pentanomial, pentanomial_elo
from experiments.harness.store import GameRecord, check_writable, versions
from experiments.harness.tasks import GameTask, MatchError, Player
from experiments.harness.tasks import MAX_BUDGET, MAX_SECONDS
from experiments.harness.tomlconfig import ConfigError, Section, even_games, writable_dir
from experiments.harness.webpage import report_page
from experiments.paths import csv_text, save_figure, write_atomic
from experiments.harness.tournament import RunSettings, _name_check, interleave, play_run, run_settings

AXES = ("nodes", "evals", "movetime")
#: the CSV's pentanomial columns: colour-reversed pairs by the variant's score in the pair (0 .. 2)
PTNML_COLUMNS = ("ptnml_LL", "ptnml_LD", "ptnml_DD_WL", "ptnml_WD", "ptnml_WW")
AXIS_LABEL = {"nodes": "nodes", "evals": "evaluator calls", "movetime": "seconds"}


@dataclass
class Variant:
    name: str
    engine: str  # the full spec played
    games: int = 0  # per budget; 0: the config's games
    budgets: list[tuple[str, float]] = field(default_factory=list)  # those it plays; empty: every one


@dataclass
class Ablation:
    settings: RunSettings
    baseline: str
    variants: list[Variant]
    budgets: list[tuple[str, float]]  # (axis, budget)
    sprt: dict[str, float] | None
    report_dir: Path
    config_path: Path
    config_text: str

    @property
    def out_dir(self) -> Path:
        return self.report_dir / self.settings.name

    def players(self, v: Variant, axis: str, budget: float) -> tuple[Player, Player]:
        """(variant, baseline) at one budget, named ``<name>@<axis>=<budget>``."""
        tag = f"{axis}={budget:g}"
        kw: dict[str, Any] = {axis: budget if axis == "movetime" else int(budget)}
        return Player(f"{v.name}@{tag}", v.engine, **kw), Player(f"baseline@{tag}", self.baseline, **kw)

    def matches(self) -> list[tuple[Variant, str, float, list[GameTask]]]:
        s = self.settings
        return [(v, axis, b, s.pairing_tasks(*self.players(v, axis, b), v.games or s.games))
                for axis, b in self.budgets for v in self.variants if not v.budgets or (axis, b) in v.budgets]

    def tasks(self) -> list[GameTask]:
        return interleave([m[3] for m in self.matches()])


def make_sprt(a: str, b: str, settings: dict[str, float]) -> Sprt:
    """The SPRT of a variant (``a``) against the baseline with a config's ``[sprt]`` settings."""
    return Sprt(a, b, elo0=settings["elo0"], elo1=settings["elo1"], alpha=settings["alpha"], beta=settings["beta"])


def _option_text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _budgets(cfg: Section) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    if cfg.has("nodes") or cfg.has("ladder"):
        out += [("nodes", float(n)) for n in _ladder(cfg, "nodes")]
    cfg.used.update({"nodes", "ladder"})
    for axis in ("evals", "movetime"):
        kind = int if axis == "evals" else float
        values = cfg.get(axis, list, [])
        cap = MAX_BUDGET if axis == "evals" else MAX_SECONDS
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= cap for x in values):
            raise cfg.error(axis, f"must be an array of positive finite numbers up to {cap:,}")
        if axis == "evals" and not all(isinstance(x, int) for x in values):
            raise cfg.error(axis, "must be an array of positive integers")
        out += [(axis, float(kind(x))) for x in values]
    if not out:
        raise cfg.error("nodes", "missing: give nodes = [...] (or ladder, evals, movetime)")
    return out


def _own_budgets(sec: Section, budgets: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """A variant's own budgets (its ``nodes``/``evals``/``movetime``): each one of the config's."""
    out: list[tuple[str, float]] = []
    for axis in AXES:
        if not sec.has(axis):
            continue
        values = sec.get(axis, list)
        theirs = [b for a, b in budgets if a == axis]
        if not values or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and float(x) in theirs
                                 for x in values):
            raise sec.error(axis, f"must be some of the config's {axis} ({', '.join(f'{b:g}' for b in theirs) or 'none'})")
        out += [(axis, float(x)) for x in values]
    return out


def parse(cfg: Section, path: Path, text: str) -> Ablation:
    s = run_settings(cfg)
    baseline = cfg.get("baseline", str, check=lambda v: None if v.strip() else "must not be empty")
    try:
        registry.resolve(baseline)
    except EngineError as e:
        raise cfg.error("baseline", str(e)) from None
    budgets = _budgets(cfg)
    report_dir = Path(cfg.get("report_dir", str, "reports", writable_dir))
    sprt: dict[str, float] | None = None
    if cfg.has("sprt"):
        t = cfg.table("sprt")
        sprt = {"elo0": t.get("elo0", float, 0.0), "elo1": t.get("elo1", float, 10.0),
                "alpha": t.get("alpha", float, 0.05), "beta": t.get("beta", float, 0.05)}
        t.done()
        try:
            make_sprt("a", "b", sprt)
        except ValueError as e:
            raise cfg.error("sprt", str(e)) from None
    variants: list[Variant] = []
    for sec in cfg.tables("variants", required=True):
        sec.only("name", "options", "engine", "games", *AXES)
        name = sec.get("name", str, check=_name_check)
        if "@" in name or name == "baseline" or name in {v.name for v in variants}:
            raise sec.error("name", "must be unique, without '@', and not 'baseline'")
        engine = sec.get("engine", str, baseline)
        opts = {str(k): _option_text(v) for k, v in sec.table("options").data.items()}
        spec = join_spec(engine, opts)
        try:
            registry.resolve(spec)
        except EngineError as e:
            raise sec.error("options" if opts else "engine", str(e)) from None
        games = sec.get("games", int, s.games, even_games)
        mine = _own_budgets(sec, budgets)
        sec.done()
        variants.append(Variant(name, spec, games, mine))
    if not variants:
        raise cfg.error("variants", "give at least one [[variants]] table")
    cfg.done()
    if any(axis == "movetime" for axis, _ in budgets):
        s.concurrency = s.workers  # one game at a time per worker: a move's time is its own
    return Ablation(s, baseline, variants, budgets, sprt, report_dir, path, text)


def load(path: str | Path) -> Ablation:
    try:
        return parse(tomlconfig.load(path), Path(path), tomlconfig.resolve_config(path).read_text())
    except openings_mod.OpeningError as e:
        raise ConfigError(f"{path}: {e}") from None


# --------------------------------------------------------------------------- statistics

elo_interval = pentanomial_elo  # (score, Elo, low, high) of pentanomial counts (experiments.harness.stats)


@dataclass
class Row:
    variant: str
    axis: str
    budget: float
    games: int
    wdl: tuple[int, int, int]
    ptnml: list[int]
    score: float
    elo: float
    lo: float
    hi: float
    llr: float | None = None
    verdict: str = ""
    decided_at: int | None = None  # the pairs counted when the SPRT crossed its bound
    cost: Cost = field(default_factory=Cost)
    base_cost: Cost = field(default_factory=Cost)
    openings: int = 0  # distinct openings of the row's games


def rows(ab: Ablation, games: Sequence[GameRecord]) -> list[Row]:
    by_match: dict[str, list[GameRecord]] = {}
    for g in games:
        by_match.setdefault(g.match, []).append(g)
    out: list[Row] = []
    for v, axis, b, tasks in ab.matches():
        gs = by_match.get(tasks[0].match, [])
        a, base = ab.players(v, axis, b)
        wdl = [0, 0, 0]
        for g in gs:
            sc = g.score_for(a.name)
            wdl[0 if sc == 1 else 1 if sc == 0.5 else 2] += 1
        counts = pentanomial(gs, a.name)
        score, elo, lo, hi = elo_interval(counts)
        row = Row(v.name, axis, b, len(gs), (wdl[0], wdl[1], wdl[2]), counts, score, elo, lo, hi,
                  openings=len({g.opening_fen for g in gs}))
        if ab.sprt is not None:
            test = make_sprt(a.name, base.name, ab.sprt)
            test.add_games(gs)
            row.llr, row.verdict, row.decided_at = test.llr, test.state, test.decided_at
        c = costs(gs)
        row.cost, row.base_cost = c.get(a.name, Cost()), c.get(base.name, Cost())
        out.append(row)
    return out


# --------------------------------------------------------------------------- running and the report

def run(ab: Ablation, command: str, progress: bool = True, factory: Any = None) -> tuple[list[Row], list[Path]]:
    """Play what is missing (with ``sprt``: not past a decided variant), write the report."""
    check_writable(ab.out_dir / "ablation.csv")
    matches = ab.matches()
    names = [p.name for v, axis, b, _ in matches for p in ab.players(v, axis, b)]
    tests: dict[str, Sprt] = {}
    if ab.sprt is not None:
        for v, axis, b, tasks in matches:
            a, base = ab.players(v, axis, b)
            tests[tasks[0].match] = make_sprt(a.name, base.name, ab.sprt)

    def decided(t: GameTask) -> bool:
        return t.match in tests and tests[t.match].state != "continue"

    def feed(g: GameRecord) -> None:
        if g.match in tests:
            tests[g.match].add_game(g)

    _, games = play_run(ab.settings, ab.tasks(), sorted(set(names)), factory, progress,
                        on_game=feed if tests else None, skip=decided if tests else None)
    rs = rows(ab, games)
    return rs, write_report(ab, rs, command, games)


def _fmt(x: float) -> str:
    return "" if x != x else f"{x:.1f}"


def _spec_text(spec: str) -> str:
    """A spec as played, each option once (a variant's option overrides the baseline's)."""
    head, opts = split_spec(spec)
    return head + (":" + ",".join(f"{k}={v}" for k, v in opts.items()) if opts else "")


def _shown_path(path: Any) -> str:
    """``path`` relative to the working directory when it lies below it (reports stay portable)."""
    p = Path(str(path))
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def findings(ab: Ablation, rs: Sequence[Row]) -> list[str]:
    """One line per variant: the budgets where it is stronger, weaker, or not distinguishable."""
    out = []
    for v in ab.variants:
        mine = [r for r in rs if r.variant == v.name and r.games]
        if not mine:
            out.append(f"- `{v.name}`: no games yet.")
            continue
        groups: dict[str, list[str]] = {"stronger": [], "weaker": [], "not distinguishable": []}
        for r in mine:
            groups[verdict(r.lo, r.hi)].append(f"{AXIS_LABEL[r.axis]} {r.budget:g} ({r.elo:+.0f} [{r.lo:+.0f}, {r.hi:+.0f}])")
        parts = [f"{k} at {', '.join(b)}" for k, b in groups.items() if b]
        width = sum(r.hi - r.lo for r in mine) / len(mine)
        out.append(f"- `{v.name}`: {'; '.join(parts)}; intervals about {width:.0f} Elo wide with "
                   f"{round(sum(r.games for r in mine) / len(mine))} games per budget.")
    return out


def finding(ab: Ablation, rs: Sequence[Row]) -> str:
    """The report's opening paragraph (:func:`experiments.harness.answer.ablation_finding`)."""
    sprt = (ab.sprt["elo0"], ab.sprt["elo1"]) if ab.sprt else None
    return ablation_finding(ab.baseline, [AblationRow(r.variant, f"{r.axis} {r.budget:g}", r.games, r.elo, r.lo, r.hi,
                                                      r.verdict, r.decided_at) for r in rs], sprt)


def write_report(ab: Ablation, rs: list[Row], command: str, games: Sequence[GameRecord] = ()) -> list[Path]:
    import csv

    out = ab.out_dir
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "ablation.csv"
    cols = ["variant", "axis", "budget", "nodes", "games", "wins", "draws", "losses", "score", "elo", "elo_low",
            "elo_high", *PTNML_COLUMNS, "llr", "verdict", "nodes_per_move", "evals_per_move", "seconds_per_move",
            "baseline_nodes_per_move", "baseline_evals_per_move", "baseline_seconds_per_move", "openings",
            "decided_at_pairs"]
    # every file through a fresh temporary name and a rename: a link planted at a report's name (a
    # committed file in a git checkout) is replaced, never written through
    write_atomic(csv_path, csv_text([cols] + [
        [r.variant, r.axis, f"{r.budget:g}", f"{r.budget:g}" if r.axis == "nodes" else "", r.games,
         *r.wdl, "" if r.score != r.score else f"{r.score:.4f}", _fmt(r.elo), _fmt(r.lo), _fmt(r.hi),
         *r.ptnml, "" if r.llr is None else f"{r.llr:.3f}", r.verdict,
         f"{r.cost.nodes:.1f}", f"{r.cost.evals:.1f}", f"{r.cost.seconds:.4f}",
         f"{r.base_cost.nodes:.1f}", f"{r.base_cost.evals:.1f}", f"{r.base_cost.seconds:.4f}", r.openings,
         r.decided_at or ""]
        for r in rs]), "report table")
    figs = plot_forest(csv_path, f"{ab.settings.name}: variants against {ab.baseline} ({ab.settings.variant})")
    s = ab.settings
    counts = sorted({v.games or s.games for v in ab.variants})
    per = f"{counts[0]} games per variant and budget" if len(counts) == 1 else \
        f"{' or '.join(map(str, counts))} games per variant and budget (see the variants)"
    md = [f"# Ablation: {s.name}", "", *opening(finding(ab, rs), command),
          f"Variant {s.variant}; baseline `{ab.baseline}`{batch_text(ab.baseline)}; {per} (colour-reversed "
          f"pairs, each pair on its own opening, drawn per variant and budget from `{_shown_path(s.openings)}`); Elo of each variant against the baseline with the 95% interval "
          f"of the pentanomial pair statistics (fishtest/fastchess); the baseline is 0.", "",
          "![forest plot](ablation.png)", "",
          "| variant | budget | games (openings) | W-D-L | score | Elo | 95% interval | pentanomial | "
          + ("LLR | verdict | " if ab.sprt else "") + "nodes/move | evals/move | s/move (variant / baseline) |",
          "|---|---|---:|---|---:|---:|---|---|" + ("---:|---|" if ab.sprt else "") + "---|---|---|"]
    for r in rs:
        at = f" at pair {r.decided_at}" if decided_early(r.decided_at, r.games) else ""
        sp = f"{r.llr:+.2f} | {r.verdict}{at} | " if ab.sprt and r.llr is not None else ("| | " if ab.sprt else "")
        md.append(f"| {r.variant} | {r.axis} {r.budget:g} | {r.games} ({r.openings}) | {r.wdl[0]}-{r.wdl[1]}-{r.wdl[2]} | "
                  f"{'' if r.score != r.score else f'{100 * r.score:.1f}%'} | {_fmt(r.elo)} | "
                  f"[{_fmt(r.lo)}, {_fmt(r.hi)}] | {' '.join(map(str, r.ptnml))} | {sp}"
                  f"{r.cost.nodes:.0f} / {r.base_cost.nodes:.0f} | {r.cost.evals:.0f} / {r.base_cost.evals:.0f} | "
                  f"{r.cost.seconds:.3f} / {r.base_cost.seconds:.3f} |")
    md += ["", NODE_CAPTION]
    md += ["", "Findings (a variant differs from the baseline where the 95% interval leaves out 0):", ""]
    md += findings(ab, rs)
    md += ["", "Variants:", ""] + [f"- `{v.name}`: `{_spec_text(v.engine)}`{batch_text(v.engine)}"
                                   + (f"; {v.games} games per budget" if len(counts) > 1 else "")
                                   + (f"; only at {', '.join(f'{a} {b:g}' for a, b in v.budgets)}" if v.budgets else "")
                                   for v in ab.variants]
    md += ["", f"To narrow the intervals, raise `games` in `{ab.config_path}` and run the command again (only the "
           "new games are played); `workers` and `backend = \"ray\"` (with `ray_address`) spread the games over more "
           "cores or a cluster.", "", "Config:", "", "```toml", ab.config_text.rstrip(), "```", "",
           "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions().items())), *history(s.notes)]
    md_path = out / "ablation.md"
    write_atomic(md_path, "\n".join(md) + "\n", "report")

    return [csv_path, md_path] + figs + [report_page(out, games, ab.settings.variant, ab.settings.db)]


def plot_forest(csv_path: Path, title: str) -> list[Path]:
    """The forest plot of an ablation CSV: one row per variant, one marker per budget."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(csv_path, newline="") as f:
        data = [r for r in csv.DictReader(f) if r["elo"]]
    variants = list(dict.fromkeys(r["variant"] for r in data))
    budgets = list(dict.fromkeys((r["axis"], r["budget"]) for r in data))
    # tall enough for one row per variant and for the legend (one line per budget) beside the axes
    fig, ax = plt.subplots(figsize=(9, 1.6 + max(0.55 * len(variants), 0.25 * len(budgets))), dpi=120)
    markers = "osD^v<>ph*"
    k = len(budgets)
    for j, (axis, b) in enumerate(budgets):
        pts = [r for r in data if (r["axis"], r["budget"]) == (axis, b)]
        y = [variants.index(r["variant"]) + (j - (k - 1) / 2) * 0.8 / max(k, 1) for r in pts]
        x = [float(r["elo"]) for r in pts]
        err = [[float(r["elo"]) - float(r["elo_low"]) for r in pts], [float(r["elo_high"]) - float(r["elo"]) for r in pts]]
        ax.errorbar(x, y, xerr=err, fmt=markers[j % len(markers)], capsize=3, label=f"{AXIS_LABEL[axis]} {b}")
    ax.axvline(0.0, color="black", linewidth=1)
    ax.set_yticks(range(len(variants)), variants)
    ax.invert_yaxis()
    ax.set_xlabel("Elo against the baseline (95% pentanomial interval)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)  # never over a bar
    fig.tight_layout()
    out = [csv_path.with_suffix(".png"), csv_path.with_suffix(".svg")]
    for o in out:
        save_figure(fig, o)
    plt.close(fig)
    return out


def cli_command(config: str) -> str:
    return "searchbench ablate " + shlex.quote(config)


__all__ = ["Ablation", "Row", "Variant", "elo_interval", "load", "parse", "pentanomial", "rows", "run", "MatchError"]
