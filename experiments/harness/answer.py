"""A report's opening: its finding, one paragraph with intervals, then the command that regenerates it.

Every report Markdown the harness writes (``scale``, ``ablate``, ``accept-int8``, ``bughouse-report``)
starts ``# title``, then :func:`opening`: a paragraph that begins ``**Finding.**`` and states what the
table says, each figure with its 95% interval and the games behind it, then the command.  How the
games were played follows; a config's ``notes`` (the history of a report: what was played before,
what changed) go to the end, under ``## Notes and history`` (:func:`history`).

The paragraph is computed from the rows the table prints, so a report played again says what its own
games say.  What it claims is what an interval allows: *stronger* or *weaker* only where the 95%
interval leaves out 0; an SPRT row is worded as the bound its interval gives ("costs at most X Elo
at this budget"), at the budget it was played at; a bughouse row counts its wins on time apart.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from experiments.harness.sprt import decided_early

#: the line above every harness report's command
REGENERATE = "Regenerate (resumes from the database, plays only missing games):"
#: the heading of the section a config's notes go to
HISTORY = "## Notes and history"


def opening(finding: str, command: str, regenerate: str = REGENERATE) -> list[str]:
    """The lines after a report's title: the finding paragraph, then the command block."""
    return [f"**Finding.** {finding}", "", regenerate, "", "```", command, "```", ""]


def history(notes: str) -> list[str]:
    """The closing section that holds a config's notes (empty without them)."""
    return ["", HISTORY, "", notes.strip()] if notes.strip() else []


def verdict(lo: float, hi: float) -> str:
    """What a 95% interval of a difference allows: stronger or weaker only where it leaves out 0."""
    return "stronger" if lo > 0 else "weaker" if hi < 0 else "not distinguishable"


def _elo(x: float, tenths: bool = True) -> str:
    """Whole Elo as the report's table rounds it, so the paragraph and the table agree: an
    ablation's table prints one decimal (``tenths``: rounded from that, half away from 0; -0.4 reads
    +0, not -0), a scale report's whole numbers (``format``'s rounding)."""
    if not tenths:
        return f"{x:+.0f}"
    v = abs(float(f"{x:.1f}"))
    n = int(v + 0.5)
    return f"{-n if x < 0 and n else n:+d}"


def _interval(elo: float, lo: float, hi: float, tenths: bool = True) -> str:
    """``+12 [-3, +27]``; a sweep (the Elo at an end of its interval: every game lost or won, the
    estimate only the clamp's) as the bound its interval gives."""
    if elo == lo < hi:
        return f"below {_elo(hi, tenths)}, every game lost"
    if lo < hi == elo:
        return f"above {_elo(lo, tenths)}, every game won"
    return f"{_elo(elo, tenths)} [{_elo(lo, tenths)}, {_elo(hi, tenths)}]"


@dataclass(frozen=True)
class AblationRow:
    """What the finding needs of one ablation row (a variant at one budget)."""

    variant: str
    budget: str  # "nodes 100", "movetime 0.05"
    games: int
    elo: float
    lo: float
    hi: float
    verdict: str = ""  # the SPRT's state where the config has one: "H1", "H0", "continue"
    decided_at: int | None = None  # the pairs counted when the SPRT crossed its bound


def ablation_finding(baseline: str, rows: Sequence[AblationRow], sprt: tuple[float, float] | None = None) -> str:
    """Each variant against the baseline: stronger / weaker where the interval leaves out 0, and the
    variants not distinguishable anywhere named together, each with its intervals.  Under an
    SPRT of non-regression each row is a bound: at most ``-lo`` Elo weaker at that budget."""
    played = [r for r in rows if r.games and r.elo == r.elo]
    if not played:
        return f"No games yet against `{baseline}`."
    counts = sorted({r.games for r in played})
    games = f"{counts[0]} games" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} games"
    if sprt is not None:
        parts = []
        for r in played:
            state = {"H1": "accepted", "H0": "rejected"}.get(r.verdict, "undecided")
            bound = (f"costs at most {-r.lo:.0f} Elo" if r.lo < 0 else "is not weaker (the interval's lower bound is above 0)")
            parts.append(f"`{r.variant}` at {r.budget}: {_interval(r.elo, r.lo, r.hi)} over {r.games} games, so it "
                         f"{bound} at this budget (95% lower bound); the SPRT of [{sprt[0]:g}, {sprt[1]:g}] normalised Elo is {state}"
                         + (f" (its LLR crossed the bound after {r.decided_at} pairs; the games then in flight "
                            f"count in these figures)" if decided_early(r.decided_at, r.games) else ""))
        return (f"Against `{baseline}` (0 Elo): " + "; ".join(parts)
                + ". The bound holds at the budgets played here and no other.")
    order = list(dict.fromkeys(r.variant for r in played))
    said, quiet = [], []
    for v in order:
        mine = [r for r in played if r.variant == v]
        up = [r for r in mine if r.lo > 0]
        down = [r for r in mine if r.hi < 0]
        if not up and not down:
            quiet.append(v)
            continue
        bits = []
        if up:
            bits.append("stronger at " + ", ".join(f"{r.budget} ({_interval(r.elo, r.lo, r.hi)})" for r in up))
        if down:
            bits.append("weaker at " + ", ".join(f"{r.budget} ({_interval(r.elo, r.lo, r.hi)})" for r in down))
        said.append(f"`{v}` {' and '.join(bits)}")
    text = f"Against `{baseline}` (0 Elo), {games} a variant and budget: "
    if said:
        text += "; ".join(said)
    if quiet:
        text += ("; " if said else "") + "not distinguishable from it at any budget played: " + "; ".join(
            f"`{v}` " + ", ".join(f"{r.budget} {_interval(r.elo, r.lo, r.hi)}" for r in played if r.variant == v)
            for v in quiet)
    return text + "."


@dataclass(frozen=True)
class Difference:
    """One row of a scale report's table of differences at an equal budget (in the report's unit)."""

    budget: float
    pair: str  # "mcts-rise − ab-material"
    elo: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Rated:
    """One rated player of a scale report (the anchor included)."""

    family: str  # the table's family column: "mcts-rise", "anchor:fsf-1k"
    budget: str  # the rung in the report's unit ("256", "0.3"); "" for an anchor
    elo: float
    lo: float
    hi: float
    games: int


#: how a scale report names each unit (:data:`reports.paradigms.SCALE_BUDGETS`): its title's word, the word
#: after a number, and the word after "at equal"
BUDGET_WORDS = {"nodes": ("nodes", "nodes", "nodes"), "evals": ("evaluator calls", "evaluator calls", "calls"),
                "movetime": ("seconds", "s a move", "time")}


def rung(budget: str | float) -> str:
    """A budget as a table prints it: ``1000000``, ``0.3``."""
    x = float(budget)
    return str(int(x)) if x.is_integer() else f"{x:g}"


def budget_text(budget: str | float, unit: str = "nodes") -> str:
    """``256 nodes``, ``256 evaluator calls``, ``0.3 s a move``."""
    return f"{rung(budget)} {BUDGET_WORDS[unit][1]}"


def scale_finding(anchor: str, rated: Sequence[Rated], diffs: Sequence[Difference], games: int, openings: int,
                  unit: str = "nodes") -> str:
    """The top-rated player under test (the external anchors aside) against the anchor, then each family
    against the first at an equal budget (``unit``: nodes, evaluator calls or seconds a move)."""
    tested = [r for r in rated if not r.family.startswith("anchor:")] or list(rated)
    if not tested:
        return "No games yet."
    top = max(tested, key=lambda r: r.elo)
    text = (f"Strongest engine under test: {top.family}" + (f" at {budget_text(top.budget, unit)}" if top.budget else "")
            + f", {_interval(top.elo, top.lo, top.hi, False)} Elo over the anchor {anchor} ({games} games on {openings} "
            "distinct openings; 95% intervals).")
    pairs = list(dict.fromkeys(d.pair for d in diffs))
    said = []
    for p in pairs:
        mine = [d for d in diffs if d.pair == p]
        groups: dict[str, list[str]] = {}
        for d in mine:
            groups.setdefault(verdict(d.lo, d.hi), []).append(f"{rung(d.budget)} ({_interval(d.elo, d.lo, d.hi, False)})")
        said.append(f"{p}: " + "; ".join(f"{k} at {', '.join(v)}" for k, v in groups.items()))
    if said:
        text += f" At equal {BUDGET_WORDS[unit][2]} (the difference's own 95% interval): " + ". ".join(said) + "."
    return text


@dataclass(frozen=True)
class TeamRow:
    """What the finding needs of one bughouse row."""

    name: str
    team: str
    opponent: str
    games: int
    wins: int
    draws: int
    losses: int
    elo: str  # as the table prints it: "-147", "< -287"
    interval: str  # "[-249, -65]"
    flag_wins: int = 0  # wins by the opponent's flag (time losses, counted apart)


def team_finding(rows: Sequence[TeamRow]) -> str:
    """Each row's score and Elo with its interval, its wins on time counted apart, and where one team
    (the same engine text before its options) played several rows, the rows pooled."""
    played = [r for r in rows if r.games]
    if not played:
        return "No games yet."
    parts = []
    for r in played:
        s = f"`{r.name}` {100 * (r.wins + r.draws / 2) / r.games:.1f}% ({r.wins}-{r.draws}-{r.losses}) against " \
            f"`{r.opponent}`, Elo {r.elo} {r.interval}, {r.games} games"
        if r.flag_wins:
            s += f", {r.flag_wins} of its {r.wins} wins on time"
        parts.append(s)
    text = "; ".join(parts) + "."
    by_team: dict[tuple[str, str], list[TeamRow]] = {}
    for r in played:
        by_team.setdefault((r.team.split(":")[0].strip("`"), r.opponent), []).append(r)
    pooled = []
    for (team, opp), rs in by_team.items():
        if len(rs) > 1:
            w, d, lo = sum(r.wins for r in rs), sum(r.draws for r in rs), sum(r.losses for r in rs)
            n = w + d + lo
            flags = sum(r.flag_wins for r in rs)
            pooled.append(f"`{team}`'s {len(rs)} rows against `{opp}` pooled: {w}-{d}-{lo}, "
                          f"{100 * (w + d / 2) / n:.1f}%" + (f", {flags} of the {w} wins on time" if flags else ""))
    if pooled:
        text += " " + "; ".join(pooled) + "."
    return text
