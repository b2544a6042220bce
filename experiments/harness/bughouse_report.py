"""Bughouse strength against a reference program (``searchbench bughouse-report CONFIG``).

A config lists rows; a row is one of our teams against the reference team (Sjeng on both seats
by default) under one clock, ``games`` games of the four-seat server
(:mod:`experiments.harness.bughouse`): game pairs with the teams' seats swapped (colour- and
board-reversed: the team that held A-white and B-black holds A-black and B-white), each pair from
its own bughouse opening (:func:`experiments.harness.openings.bughouse_openings`). Every game goes
into one SQLite database and its BPGN (a row's ``openings_as``, a team text, plays the openings
that team's row draws against the same opponent: a paired comparison); running the command again
plays only the missing games, then writes ``REPORT_DIR/NAME/``: ``teams.md``, ``teams.csv``,
``ends.csv``, a forest plot (PNG and SVG) and the HTML page with the games.

What a row reports, for our team:

- W-D-L, score, the pentanomial pair counts and Elo against the reference with the 95% interval
  of the pair statistics (fishtest/fastchess; :func:`experiments.harness.stats.pentanomial_elo`;
  a sweep gets the Wilson interval of the pair scores): the reference is the anchor at 0;
- how games end, from our side: mates given and taken on each board, flags (ours on each board,
  and those of a seat that had sat that game: sit-induced; the reference's, and those that came
  while our seat on the other board had sat or stalled), forfeits, draws;
- nodes, evaluator calls and seconds per move of our seats, and the seconds each seat used in a
  game by board (from the move times, the reference's too).
"""
from __future__ import annotations

import csv
import io
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from board.bughouse import BOARD_LETTERS, BughouseBoard, BughouseGame, team_of
from board.variants import BUGHOUSE, CRAZYHOUSE
from engines.seats import STALL_RESERVE_MS, ClockWatch, GameContext, SeatError, parse_team
from experiments.harness import bughouse as bm, tomlconfig
from experiments.harness.answer import TeamRow, opening, team_finding
from experiments.harness.bughouse import BughouseMatchError, BughouseStore, check_untimed, match_key, parse_clock
from experiments.harness.match import MatchError
from experiments.harness.openings import OpeningError, default_suite, load_suite, suite_id
from experiments.harness.stats import pentanomial, pentanomial_elo
from experiments.harness.store import GameRecord
from experiments.harness.tomlconfig import ConfigError, Section, even_games, writable_dir
from experiments.harness.webpage import report_page
from experiments.paths import write_atomic

SEATS = ("A-white", "A-black", "B-white", "B-black")


@dataclass
class RowSpec:
    name: str
    team: str
    opponent: str
    tc: str
    base_ms: int
    inc_ms: int
    games: int
    openings_as: str | None = None  # a team whose row's openings this row plays (a paired comparison)


@dataclass
class Config:
    name: str
    rows: list[RowSpec]
    seed: int
    openings: Path
    max_plies: int
    db: Path
    report_dir: Path
    path: Path
    text: str
    workers: int = 1


def parse(cfg: Section, path: Path, text: str) -> Config:
    name = cfg.get("name", str, check=lambda v: None if v and v.replace("-", "").replace("_", "").isalnum()
                   else "letters, digits, - and _ only")
    opponent = cfg.get("opponent", str, "sjeng")
    tc = cfg.get("tc", str, "60+0")
    games = cfg.get("games", int, 40, even_games)
    seed = cfg.get("seed", int, 1)
    max_plies = cfg.positive("max_plies", 600)
    openings = Path(cfg.get("openings", str, str(default_suite(CRAZYHOUSE.name))))
    try:
        load_suite(openings, CRAZYHOUSE.name)
    except OpeningError as e:
        raise cfg.error("openings", str(e)) from None
    db = Path(cfg.get("db", str, f"runs/{name}.sqlite"))
    report_dir = Path(cfg.get("report_dir", str, "reports", writable_dir))
    workers = cfg.get("workers", int, 1, lambda n: None if 1 <= n <= 64 else "must be in 1..64")
    rows: list[RowSpec] = []
    for sec in cfg.tables("rows", required=True):
        sec.only("name", "team", "opponent", "tc", "games", "openings_as")
        rname = sec.get("name", str, check=lambda v: None if v.strip() else "must not be empty")
        if rname in {r.name for r in rows}:
            raise sec.error("name", f"{rname!r} is used by another row")
        team = sec.get("team", str)
        opp = sec.get("opponent", str, opponent)
        openings_as = sec.get("openings_as", str, "") or None
        for key, spec in (("team", team), ("opponent", opp), ("openings_as", openings_as or team)):
            try:
                parse_team(spec)
            except SeatError as e:
                raise sec.error(key if sec.has(key) else None, str(e)) from None
        rtc = sec.get("tc", str, tc)
        try:
            base_ms, inc_ms = parse_clock(rtc)
        except MatchError as e:
            raise sec.error("tc", str(e)) from None
        if base_ms < 0:  # no clocks: our MCTS seats at their node limits (games replay)
            try:
                check_untimed(parse_team(team))
                check_untimed(parse_team(opp))
            except BughouseMatchError as e:
                raise sec.error("tc" if sec.has("tc") else None, str(e)) from None
        rows.append(RowSpec(rname, team, opp, rtc, base_ms, inc_ms, sec.get("games", int, games, even_games), openings_as))
        sec.done()
    if not rows:
        raise cfg.error("rows", "give at least one [[rows]] table")
    cfg.done()
    return Config(name, rows, seed, openings, max_plies, db, report_dir, path, text, workers)


def load(path: str | Path) -> Config:
    return parse(tomlconfig.load(path), Path(path), tomlconfig.resolve_config(path).read_text())


def match_of(cfg: Config, row: RowSpec) -> str:
    return match_key(parse_team(row.team), parse_team(row.opponent), row.base_ms, row.inc_ms, cfg.seed,
                     suite_id(cfg.openings))


def play(cfg: Config, progress: bool = True) -> None:
    """Play every row's missing games (the stored ones are skipped)."""
    cfg.db.parent.mkdir(parents=True, exist_ok=True)
    for row in cfg.rows:
        s = bm.run_match(row.team, row.opponent, row.games, row.base_ms, row.inc_ms, cfg.db,
                         cfg.db.with_suffix(".bpgn"), seed=cfg.seed, run=cfg.name, max_plies=cfg.max_plies,
                         progress=progress, openings=cfg.openings, workers=cfg.workers, openings_as=row.openings_as)
        if progress:
            print(f"{row.name}: {s.line(row.team, row.opponent)}", flush=True)


# --------------------------------------------------------------------------- one row's figures

@dataclass
class Row:
    spec: RowSpec
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    openings: int = 0
    ptnml: list[int] = field(default_factory=lambda: [0] * 5)
    score: float = math.nan
    elo: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    ends: dict[str, int] = field(default_factory=dict)
    mates: dict[str, int] = field(default_factory=dict)  # our mates by what our last move there did
    moves: int = 0
    nodes: float = 0.0        # per move of our seats
    evals: float = 0.0
    ref_nodes: float = 0.0    # per move of the reference's seats (0: it reports none, as an external program)
    ref_evals: float = 0.0
    seconds: float = 0.0
    used: dict[str, float] = field(default_factory=dict)  # "ours A" ... -> seconds a game
    plies: float = 0.0
    minutes: float = 0.0      # wall time of the row's games
    waits: int = 0            # our moves made while waiting would have won on time (stall_chances)
    wait_games: int = 0       # games with at least one
    wait_wins: int = 0        # of those, games we won


def _movers(moves: Sequence[str]) -> list[int]:
    """The seat (index as :data:`SEATS`) that made each move (``A:e2e4``): White moves first on
    both boards, so a board's moves alternate from its White seat."""
    turn = [0, 0]
    out = []
    for text in moves:
        b = BOARD_LETTERS.index(text[0])
        out.append(2 * b + turn[b])
        turn[b] ^= 1
    return out


def _seat_used_ms(moves: Sequence[str], times: Sequence[int]) -> list[int]:
    """Milliseconds each seat (index as :data:`SEATS`) spent on its moves: a move's time runs from
    the previous move on its board (or the start)."""
    used = [0, 0, 0, 0]
    last = [0, 0]
    for seat, t in zip(_movers(moves), times):
        used[seat] += max(0, t - last[seat >> 1])
        last[seat >> 1] = t
    return used


def end_of(rec: GameRecord, ours_team0: bool, sits: Sequence[int]) -> str:
    """How a game ended, from our side: ``mate given on A``, ``mated on B``, ``flag lost on A
    (after sitting)`` (our flagged seat had sat that game), ``flag won on B (after sitting)`` (our
    seat on the other board had sat or stalled), ``forfeit lost``, ``draw (max_plies)``..."""
    if rec.result == "1/2-1/2":
        return f"draw ({rec.reason})"
    won = (rec.result == "1-0") == ours_team0
    reason = rec.reason
    if reason.startswith("forfeit"):
        return "forfeit " + ("won" if won else "lost")
    board = reason.rsplit(" ", 1)[-1] if " on board " in reason else "?"
    if reason.startswith("checkmate"):
        return ("mate given on " if won else "mated on ") + board
    if reason.startswith("flag"):
        text = ("flag won on " if won else "flag lost on ") + board
        if board in BOARD_LETTERS:
            # lost: our flagged seat, on that board; won: our seat on the other board, which may have
            # sat or stalled (engines.seats.ClockWatch.stalls) while the flagged seat waited
            b = BOARD_LETTERS.index(board) ^ won
            seat = next(s for s in (2 * b, 2 * b + 1) if team_of(b, s & 1) == (0 if ours_team0 else 1))
            if sits[seat] > 0:
                text += " (after sitting)"
        return text
    return ("won: " if won else "lost: ") + reason


def mate_cause(rec: GameRecord, fen: str) -> str | None:
    """For a game lost by checkmate: what our mated seat's last move on that board did, with the
    pockets as they were when it was made. ``allowed mate in one`` (a blunder: the opponent could
    mate at once and another move would not have allowed it), ``no move avoided mate in one``, or
    ``mate not in one`` (the mate came later or needed material that arrived afterwards); None for
    another end or a mate without a move of ours on that board."""
    if not rec.reason.startswith("checkmate on board "):
        return None
    bid = BOARD_LETTERS.index(rec.reason[-1])
    game = BughouseGame(fen)
    mated = _mated_color(rec, bid)
    before: str | None = None
    played = ""
    for text in rec.moves[:-1]:
        b = BOARD_LETTERS.index(text[0])
        if b == bid and game.boards[b].turn == mated:
            before, played = game.boards[b].fen(), text[2:]
        game.push(*game.parse(text))
    if before is None:
        return None
    pos = BughouseBoard(before, bid)
    m = pos.parse_uci(played)
    pos.push(m)
    allowed = pos.can_mate_at_once()
    pos.pop()
    if not allowed:
        return "mate not in one"
    return "allowed mate in one" if pos.allows_mate_in_one(m) else "no move avoided mate in one"


def _mated_color(rec: GameRecord, bid: int) -> int:
    """The colour mated on board ``bid``: the losing team's seat there (team = board ^ colour)."""
    losing_team = 1 if rec.result == "1-0" else 0
    return losing_team ^ bid


def stall_chances(row: RowSpec, rec: GameRecord, times: Sequence[int], ours: set[int]) -> int:
    """Our seats' moves made while waiting would have won on time: the stall's condition
    (:meth:`engines.seats.ClockWatch.stalls`) at the move's time, replayed from the stored move
    times; a seat that stalls holds its move then, so with the stall on only a mate is played so."""
    if row.base_ms < 0 or len(times) != len(rec.moves):
        return 0
    game = BughouseGame(rec.opening_fen or None, row.base_ms, row.inc_ms)
    ctx, watch, n = GameContext(game, [], 0.0), ClockWatch(), 0
    for text, t in zip(rec.moves, times):
        bid, m = game.parse(text)
        seat = game.to_move_seat(bid)
        n += seat in ours and watch.stalls(ctx, seat, t)
        game.push(bid, m, t)
        watch.on_move(bid, seat, t)
    return n


def shared_draws(rs: Sequence["Row"]) -> str:
    """The rows that play another team's openings (``openings_as``), said as a clause."""
    said = [f"row {r.spec.name} plays the openings of `{r.spec.openings_as}` against the same opponent"
            for r in rs if r.spec.openings_as]
    return "; " + "; ".join(said) if said else ""


def summarize(row: RowSpec, games: Sequence[GameRecord], details: dict[str, dict[str, Any]]) -> Row:
    r = Row(row)
    r.games = len(games)
    if not games:
        return r
    ops = set()
    moves = ref_moves = 0
    nodes = evals = secs = ref_nodes = ref_evals = 0.0
    used_sum: dict[str, float] = {}
    for g in games:
        ours_team0 = g.white == row.team
        s = g.score_for(row.team)
        r.wins += s == 1.0
        r.draws += s == 0.5
        r.losses += s == 0.0
        ops.add(g.opening)
        d = details.get(g.key, {})
        seats = d.get("seats", [{}] * 4)
        sits = [int(x.get("sits", 0)) for x in seats]
        end = end_of(g, ours_team0, sits)
        r.ends[end] = r.ends.get(end, 0) + 1
        if end.startswith("mated"):
            cause = mate_cause(g, g.opening_fen or BughouseGame().fen())
            if cause is not None:
                r.mates[cause] = r.mates.get(cause, 0) + 1
        ours = {0, 3} if ours_team0 else {1, 2}
        for seat, st in zip(_movers(g.moves), g.move_stats):
            if seat in ours:
                moves += 1
                nodes += st.nodes
                evals += st.evals
                secs += st.time
            else:
                ref_moves += 1
                ref_nodes += st.nodes
                ref_evals += st.evals
        used = _seat_used_ms(g.moves, d.get("times", []))
        for seat in range(4):
            who = "ours" if seat in ours else "reference"
            k = f"{who} {SEATS[seat][0]}"
            used_sum[k] = used_sum.get(k, 0.0) + used[seat] / 1000.0
        r.plies += len(g.moves)
        r.minutes += max(0.0, g.finished - g.started) / 60.0
        waits = stall_chances(row, g, d.get("times", []), ours)
        r.waits += waits
        r.wait_games += waits > 0
        r.wait_wins += waits > 0 and s == 1.0
    r.openings = len(ops)
    r.moves = moves
    r.nodes, r.evals, r.seconds = (x / moves if moves else 0.0 for x in (nodes, evals, secs))
    r.ref_nodes, r.ref_evals = (x / ref_moves if ref_moves else 0.0 for x in (ref_nodes, ref_evals))
    r.used = {k: v / len(games) for k, v in sorted(used_sum.items())}
    r.plies /= len(games)
    r.ptnml = pentanomial(games, row.team)
    n = r.games
    r.score = (r.wins + 0.5 * r.draws) / n
    if sum(r.ptnml):
        _, r.elo, r.lo, r.hi = pentanomial_elo(r.ptnml)
    return r


def rows(cfg: Config) -> tuple[list[Row], list[GameRecord]]:
    if not cfg.db.exists():
        return [summarize(spec, [], {}) for spec in cfg.rows], []
    store = BughouseStore(cfg.db, readonly=True)
    try:
        out: list[Row] = []
        every: list[GameRecord] = []
        for spec in cfg.rows:
            games = store.store.games(match=match_of(cfg, spec))[: spec.games]
            details = {g.key: store.details(g.key) or {} for g in games}
            out.append(summarize(spec, games, details))
            every += games
        return out, every
    finally:
        store.close()


# --------------------------------------------------------------------------- the report

CSV_FIELDS = ("row", "team", "opponent", "tc", "games", "openings", "wins", "draws", "losses", "score", "elo",
              "elo_low", "elo_high", "ptnml_LL", "ptnml_LD", "ptnml_DD_WL", "ptnml_WD", "ptnml_WW",
              "nodes_per_move", "evals_per_move", "seconds_per_move", "plies_per_game", "minutes",
              "ref_nodes_per_move", "ref_evals_per_move")


def _csv_row(r: Row) -> dict[str, Any]:
    return {"row": r.spec.name, "team": r.spec.team, "opponent": r.spec.opponent, "tc": r.spec.tc, "games": r.games,
            "openings": r.openings, "wins": r.wins, "draws": r.draws, "losses": r.losses,
            "score": f"{r.score:.4f}", "elo": f"{r.elo:.1f}", "elo_low": f"{r.lo:.1f}", "elo_high": f"{r.hi:.1f}",
            **dict(zip(CSV_FIELDS[13:18], r.ptnml)),
            "nodes_per_move": f"{r.nodes:.1f}", "evals_per_move": f"{r.evals:.1f}",
            "seconds_per_move": f"{r.seconds:.3f}", "plies_per_game": f"{r.plies:.1f}", "minutes": f"{r.minutes:.1f}",
            "ref_nodes_per_move": f"{r.ref_nodes:.1f}", "ref_evals_per_move": f"{r.ref_evals:.1f}"}


def _per_move(x: float) -> str:
    """A reference's count a move; "-" where it reports none (an external program)."""
    return f"{x:.0f}" if x > 0 else "-"


def _fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:+.0f}"


def elo_text(r: Row) -> tuple[str, str]:
    """(Elo, 95% interval) as the table shows them: a sweep has no finite Elo, only a bound."""
    if not r.games or math.isnan(r.elo):
        return "-", "-"
    if r.score == 0.0:
        return f"< {_fmt(r.hi)}", f"[-inf, {_fmt(r.hi)}]"
    if r.score == 1.0:
        return f"> {_fmt(r.lo)}", f"[{_fmt(r.lo)}, +inf]"
    return _fmt(r.elo), f"[{_fmt(r.lo)}, {_fmt(r.hi)}]"


def _ends_text(r: Row) -> str:
    return "; ".join(f"{k} {v}" for k, v in sorted(r.ends.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def findings(rs: Sequence[Row]) -> list[str]:
    out = []
    for r in rs:
        if not r.games:
            out.append(f"`{r.spec.name}`: no games yet.")
            continue
        taken = sum(v for k, v in r.ends.items() if k.startswith(("mated", "flag lost", "forfeit lost", "lost")))
        where = ", ".join(f"{k} {v}" for k, v in sorted(r.ends.items(), key=lambda kv: -kv[1])
                          if k.startswith(("mated", "flag lost", "forfeit lost", "lost")))
        elo, interval = elo_text(r)
        out.append(f"`{r.spec.name}` scores {100 * r.score:.1f}% ({r.wins}-{r.draws}-{r.losses}) against "
                   f"`{r.spec.opponent}` {'without clocks' if r.spec.base_ms < 0 else 'at ' + r.spec.tc}: Elo {elo} {interval} "
                   f"over {r.games} games on {r.openings} openings; its {taken} lost games: {where or 'none'}.")
    return out


def finding(rs: Sequence[Row]) -> str:
    """The report's opening paragraph (:func:`experiments.harness.answer.team_finding`)."""
    rows = []
    for r in rs:
        elo, interval = elo_text(r)
        rows.append(TeamRow(r.spec.name, r.spec.team, r.spec.opponent, r.games, r.wins, r.draws, r.losses, elo, interval,
                            sum(v for k, v in r.ends.items() if k.startswith("flag won"))))
    return team_finding(rows)


def write_report(cfg: Config, rs: list[Row], games: Sequence[GameRecord], command: str) -> list[Path]:
    out = cfg.report_dir / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_FIELDS), lineterminator="\n")
    w.writeheader()
    for r in rs:
        w.writerow(_csv_row(r))
    csv_path = out / "teams.csv"
    write_atomic(csv_path, buf.getvalue(), "report CSV")
    ends = io.StringIO()
    ew = csv.writer(ends, lineterminator="\n")
    ew.writerow(["row", "end", "games"])
    for r in rs:
        for k, v in sorted(r.ends.items()):
            ew.writerow([r.spec.name, k, v])
    ends_path = out / "ends.csv"
    write_atomic(ends_path, ends.getvalue(), "report CSV")
    figs = plot_forest(csv_path, "Bughouse: our teams against the reference team")
    total = sum(r.games for r in rs)
    opponents = ", ".join(dict.fromkeys(f"`{r.spec.opponent}`" for r in rs))
    untimed = all(r.spec.base_ms < 0 for r in rs)
    clocks = ("without clocks (`none`: our MCTS seats search to their node limits, so the games replay: "
              f"`searchbench replay {cfg.db.as_posix()}`)" if untimed else
              "under real clocks (`BASE+INC` seconds a seat" +
              ("; `none`: no clocks, node limits)" if any(r.spec.base_ms < 0 for r in rs) else ")"))
    lines = [f"# Bughouse against {'Sjeng' if opponents == '`sjeng`' else opponents}: {cfg.name}", "",
             *opening(finding(rs), command),
             f"Variant bughouse; each row is one of our teams against the reference team on the other two "
             f"seats, played by the four-seat server {clocks}. Games come "
             f"in colour- and board-reversed pairs (the team on A-white and B-black takes A-black and B-white), "
             f"each pair from its own bughouse opening: two capture-free lines of "
             f"`{cfg.openings.as_posix() if not cfg.openings.is_absolute() else cfg.openings.name}`, one a board, "
             f"White to move on both; each row draws its own openings (the draw is keyed by the seed and the two teams"
             f"{shared_draws(rs)}). "
             f"Elo is our team's against the reference (the anchor, 0), with the 95% "
             f"interval of the pentanomial pair statistics (fishtest/fastchess; a sweep, every pair lost or "
             f"every pair won, has no finite Elo: the table gives the bound of the Wilson interval of the pair "
             f"scores). {total} games in all.", "",
             "![forest plot](teams.png)", "",
             "| row | team | opponent | clock | games (openings) | W-D-L | score | Elo | 95% interval | pentanomial "
             "| nodes/move | evals/move | reference nodes/move | reference evals/move | s/move | plies/game |",
             "|---|---|---|---|---:|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rs:
        elo, interval = elo_text(r)
        score = f"{100 * r.score:.1f}%" if r.games else "-"
        lines.append(f"| {r.spec.name} | `{r.spec.team}` | `{r.spec.opponent}` | {r.spec.tc} | {r.games} ({r.openings}) "
                     f"| {r.wins}-{r.draws}-{r.losses} | {score} | {elo} | {interval} | "
                     f"{' '.join(map(str, r.ptnml))} | {r.nodes:.0f} | {r.evals:.0f} | {_per_move(r.ref_nodes)} | "
                     f"{_per_move(r.ref_evals)} | {r.seconds:.2f} | {r.plies:.0f} |")
    lines += ["", "Findings:", ""] + [f"- {f}" for f in findings(rs)]
    lines += ["", "How games end, from our team's side (mates given and taken on each board; flags, "
                  "marked *after sitting* where our flagged seat had sat that game, or, for a flag won, where "
                  "our seat on the other board had sat or stalled; forfeits; draws):", "",
              "| row | ends |", "|---|---|"]
    for r in rs:
        lines.append(f"| {r.spec.name} | {_ends_text(r)} |")
    lines += ["", "Our mates, by what our mated seat's last move on that board did (replayed with the pockets "
                  "as they were when it was made): *allowed mate in one*, a blunder (the opponent could mate at "
                  "once, and another move would not have let it); *no move avoided mate in one*; *mate not in "
                  "one* (a longer mate, or one with material that reached the pocket afterwards):", "",
              "| row | mates | allowed mate in one | no move avoided mate in one | mate not in one |",
              "|---|---:|---:|---:|---:|"]
    for r in rs:
        total_m = sum(r.mates.values())
        lines.append(f"| {r.spec.name} | {total_m} | {r.mates.get('allowed mate in one', 0)} | "
                     f"{r.mates.get('no move avoided mate in one', 0)} | {r.mates.get('mate not in one', 0)} |")
    seat_keys = ["ours A", "ours B", "reference A", "reference B"]
    lines += ["", "Seconds each seat used a game, by board (from the stored move times; a seat's move takes "
                  "from the previous move on its board to its own):", "",
              "| row | " + " | ".join(seat_keys) + " |", "|---|" + "---:|" * len(seat_keys)]
    for r in rs:
        lines.append(f"| {r.spec.name} | " + " | ".join(f"{r.used.get(k, 0.0):.1f}" for k in seat_keys) + " |")
    if any(r.spec.base_ms >= 0 for r in rs):
        lines += ["", "Clock play across the boards: our moves made while waiting would have won on time (the "
                      f"partner's opponent stuck on move and flagging at least {STALL_RESERVE_MS / 1000:g} s before "
                      "our seat: the condition of the spec option `stall`, `engines.seats.ClockWatch.stalls`, "
                      "replayed from the move times; a stalling seat holds its move then), and the games they "
                      "came in:", "",
                  "| row | moves | games | of them won |", "|---|---:|---:|---:|"]
        lines += [f"| {r.spec.name} | {r.waits} | {r.wait_games} | {r.wait_wins} |" for r in rs if r.spec.base_ms >= 0]
    lines += ["", "Nodes: simulations of the bughouse MCTS for the move (those of searches restarted by a move "
                  "on the other board included); evaluator calls: leaves sent to the evaluator (classical or "
                  "network), ours and, where the reference is one of our engines, the reference's "
                  "(an external program reports neither: -). Games, with their move times, in "
                  f"`{cfg.db.with_suffix('.bpgn').as_posix()}` (BPGN) and `{cfg.db.as_posix()}`; "
                  f"{sum(r.minutes for r in rs):.0f} minutes of play on this machine (2 cores; "
                  "the four seats share them).", "",
              "Config:", "", "```toml", cfg.text.rstrip(), "```", ""]
    md_path = out / "teams.md"
    write_atomic(md_path, "\n".join(lines), "report")
    return [csv_path, ends_path, md_path] + figs + [report_page(out, games, BUGHOUSE.name, cfg.db)]


def plot_forest(csv_path: Path, title: str) -> list[Path]:
    """Elo against the reference per row, with its interval (PNG and SVG beside the CSV)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(csv_path, newline="") as f:
        data = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(7.5, 0.6 * max(2, len(data)) + 1.2))
    for i, d in enumerate(reversed(data)):
        e, lo, hi, score = float(d["elo"]), float(d["elo_low"]), float(d["elo_high"]), float(d["score"])
        if math.isnan(e):
            continue
        if score in (0.0, 1.0):  # a sweep: only a bound, drawn as an arrow from it
            e = hi if score == 0.0 else lo
            ax.errorbar([e], [i], xerr=[[60.0], [0.0]] if score == 0.0 else [[0.0], [60.0]], fmt="|", color="C3",
                        xuplims=score == 0.0, xlolims=score == 1.0, capsize=4)
        else:
            ax.errorbar([e], [i], xerr=[[e - lo], [hi - e]], fmt="o", color="C0", capsize=4)
        ax.annotate(f"{d['wins']}-{d['draws']}-{d['losses']} ({d['games']} games)", (e, i), xytext=(0, 7),
                    textcoords="offset points", ha="center", fontsize=8)
    ax.axvline(0.0, color="grey", ls="--", lw=1)
    ax.set_yticks(range(len(data)))
    ax.set_yticklabels([f"{d['row']} ({d['tc']})" for d in reversed(data)])
    ax.set_xlabel("Elo against the reference (95%, pentanomial pairs; arrow: a sweep's bound)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    paths = [csv_path.with_name("teams.png"), csv_path.with_name("teams.svg")]
    for p in paths:
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return paths


def cli_command(config: str) -> str:
    return f"searchbench bughouse-report {shlex.quote(config)}"


__all__ = ["Config", "ConfigError", "Row", "RowSpec", "end_of", "load", "play", "rows", "summarize",
           "write_report"]
