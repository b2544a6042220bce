"""The four-seat bughouse match server: two teams, four engines, real clocks, every game stored.

Seats, boards, teams and results as :mod:`board.bughouse` (seat ``board_id * 2 + color``; team 0
= A-white + B-black, "1-0" = team 0 wins). A match between teams X and Y plays games in pairs: in
the first game of a pair X holds the team-0 seats (A-white, B-black), in the second Y does.

Server loop (one game, :func:`play_game`)
-----------------------------------------
Game time is real time (ms since the game started, ``time.monotonic``); a game without clocks
(``base_ms`` < 0, our MCTS seats only) is decided by node limits and counts its loop passes instead,
so it does not depend on the machine's speed. The loop, until
:meth:`BughouseGame.outcome` at the current time gives a result:

1. every seat gets a :meth:`Seat.tick`: an XBoard seat reads what its program wrote; one of our
   seats does one batch of its search (ask, evaluate, tell). A seat hands moves, partner messages
   and failures to the server (:class:`GameContext`);
2. a move is checked before it is made: a move after the mover's flag fell is too late (the flag
   decides), an illegal or malformed move forfeits the game for the mover's team; a legal move is
   pushed with its time (the mover's clock is charged) and every seat is told (:meth:`Seat.on_move`);
Seats (:mod:`engines.seats`: ours and XBoard programs, made from engine specs by the registry's
parser) see the game through a :class:`~engines.seats.GameContext` and hand moves, partner
messages and failures back to this loop.

Failures (forfeit for the seat's team, the game ends at once; a crashed program is started again
for the next game): the program exits or closes its output (crash), sends a malformed or illegal
move, resigns, or our search raises. A hung program runs out of its real clock (flag). A game
longer than ``max_plies`` is drawn (``max_plies``).

Known limit: writes to a program's stdin block; a program that stops reading its input would
stall the server only after filling the pipe (64 KiB, thousands of moves).

Storage
-------
Each game is one row of :class:`experiments.harness.store.Store` (variant ``bughouse``; ``white`` and
``black`` are the team-0 and team-1 team names; ``moves`` are ``A:e2e4``-style moves in play
order; ``move_stats`` per move) plus a row of ``bughouse_games`` in the same SQLite file (the
four seats' engines with their settings and, for XBoard seats, the mid-game restarts; each move's
game time in ms; the partner messages; the BPGN text), written
before the store row so that a stored game always has its details. A BPGN file (``[WhiteA]``,
``[BlackA]``, ``[WhiteB]``, ``[BlackB]`` tags, :func:`board.bughouse.bpgn_movetext` move text with
clock comments) is rebuilt from the database when a match starts and appended after each game.
Games are keyed ``<match>:<index>``, so a match run again skips the stored games (resume). Game
``index`` has its own seed (:func:`game_seed`, stored with it), where our seats' random state
starts, so ``workers`` processes (each with its own four seats) store the games one would, and a
game without clocks replays (:mod:`experiments.harness.replay`).
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from board.bughouse import (
    BOARD_LETTERS, BughouseError, BughouseGame, bpgn_movetext, format_move, partner_seat, team_of,
)
from board.variants import BUGHOUSE
from engines import catalog, registry
from engines.seats import (  # noqa: F401 - re-exported: what a bughouse match is made of
    GameContext, OurSeat, Seat, SeatError, TeamSpec, parse_team,
)
from engines.base import EngineSpec
from engines.factory import make_seat
from engines.registry import EvaluatorPool
from experiments.harness import openings as op_mod
from experiments.harness.match import parse_tc
from experiments.harness.openings import Opening
from experiments.harness.pgn import append_text, game_id, ids_in
from experiments.harness.pgn import check as pgn_check
from experiments.harness.stats import score_text
from experiments.harness.store import GameRecord, MoveStat, Store, StoreError, file_id, versions
from experiments.harness.workers import PoolError, run_pool

log = logging.getLogger(__name__)

POLL_S = 0.002
SEAT_NAMES = ("A-white", "A-black", "B-white", "B-black")
BPGN_TABLE = """
CREATE TABLE IF NOT EXISTS bughouse_games (
    key TEXT PRIMARY KEY,
    seats TEXT NOT NULL,
    times TEXT NOT NULL,
    ptells TEXT NOT NULL,
    fen TEXT NOT NULL,
    bpgn TEXT NOT NULL
);
"""


class BughouseMatchError(ValueError):
    """A bad team spec, time control or output path, or an engine that cannot start (one line)."""



@dataclass
class PlayedMove:
    seat: int
    text: str          # "A:e2e4"
    at_ms: int
    stat: MoveStat


# ---------------------------------------------------------------------------------------- one game

@dataclass
class GameResult:
    result: str
    reason: str
    game: BughouseGame
    moves: list[PlayedMove]
    ptells: list[tuple[int, int, str]]
    duration_s: float


def play_game(seats: Sequence[Seat], base_ms: int, inc_ms: int, max_plies: int = 600,
              max_seconds: float | None = None, fen: str | None = None, seed: int = 0) -> GameResult:
    """One game between four seats (index = seat number) under real clocks (see module doc; no
    clocks if ``base_ms`` < 0), from the initial position or ``fen`` (both boards, ``A | B``);
    ``seed``: the game's seed, where our seats' random state starts."""
    if len(seats) != 4:
        raise BughouseMatchError("a bughouse game needs four seats")
    try:
        game = BughouseGame(fen, base_ms=base_ms, inc_ms=inc_ms)
    except BughouseError as e:
        raise BughouseMatchError(f"bad start position {fen!r}: {e}") from None
    t0 = time.monotonic()
    ctx = GameContext(game, seats, t0, seed)
    for s in range(4):
        seats[s].start_game(ctx, s, seats[partner_seat(s)].name)
    played: list[PlayedMove] = []
    outcome: tuple[str, str] | None = None
    if max_seconds is None:
        max_seconds = (4 * base_ms + max_plies * inc_ms) / 1000.0 + 30.0 if base_ms >= 0 else 3600.0
    while outcome is None:
        busy = False
        ctx.passes += 1
        for s in range(4):
            busy = seats[s].tick(ctx) or busy
            outcome = _apply_actions(ctx, played, max_plies)
            if outcome is not None:
                break
        if outcome is not None:
            break
        now = ctx.now_ms()
        o = game.outcome(now)
        if o is not None:
            outcome = (o[0], _reason(o, game))
        elif max_plies and game.ply() >= max_plies:
            outcome = ("1/2-1/2", "max_plies")
        elif now / 1000.0 > max_seconds:
            outcome = ("1/2-1/2", "max_seconds")
        elif not busy:
            time.sleep(POLL_S)
    for s in range(4):
        try:
            seats[s].end_game(ctx, outcome[0], outcome[1])
        except Exception:  # noqa: BLE001 - a seat failing at the end changes nothing
            log.exception("end_game failed")
    return GameResult(outcome[0], outcome[1], game, played, ctx.ptells, time.monotonic() - t0)


def _reason(o: tuple[str, str, int], game: BughouseGame) -> str:
    result, term, board_id = o
    return term if board_id < 0 else f"{term} on board {BOARD_LETTERS[board_id]}"


def _apply_actions(ctx: GameContext, played: list[PlayedMove], max_plies: int = 0) -> tuple[str, str] | None:
    """Apply the seats' queued actions in order; a game stops at ``max_plies`` even when both boards'
    moves arrive in one pass."""
    game = ctx.game
    while ctx.actions:
        kind, seat, payload = ctx.actions.pop(0)
        team = team_of(seat >> 1, seat & 1)
        who = f"{SEAT_NAMES[seat]} ({ctx.seats[seat].name})"
        if kind == "forfeit":
            return ("1-0" if team == 1 else "0-1", f"forfeit: {who} {payload}")
        uci, report = payload
        now = ctx.now_ms()
        o = game.outcome(now)
        if o is not None:  # the flag fell before the move arrived
            return (o[0], _reason(o, game))
        if max_plies and game.ply() >= max_plies:
            return ("1/2-1/2", "max_plies")
        if not ctx.to_move(seat):
            continue
        board_id = seat >> 1
        text = f"{BOARD_LETTERS[board_id]}:{uci}"
        try:
            bid, m = game.parse(text)
        except BughouseError:
            fen = game.boards[board_id].fen()
            return ("1-0" if team == 1 else "0-1", f"forfeit: {who} illegal move {uci!r} in {fen}")
        game.push(bid, m, now)
        ctx.version += 1
        ctx.sitting[seat] = False
        played.append(PlayedMove(seat, format_move(bid, m), now, report))
        for s in range(4):
            ctx.seats[s].on_move(ctx, bid, seat)
    return None


# ---------------------------------------------------------------------------------------- storing

def bpgn_text(key: str, run: str, rnd: int, names: Sequence[str], res: GameResult, started: float,
              source: str = "") -> str:
    game = res.game
    date = _dt.datetime.fromtimestamp(started, _dt.timezone.utc).strftime("%Y.%m.%d")
    tc = "-" if not game.timed else f"{game.base_ms / 1000:g}+{game.inc_ms / 1000:g}"
    tags = [("Event", run), ("Site", "searchbench"), ("Date", date), ("Round", str(rnd)),
            ("WhiteA", names[0]), ("BlackA", names[1]), ("WhiteB", names[2]), ("BlackB", names[3]),
            ("TimeControl", tc), ("Result", res.result), ("Termination", res.reason), ("GameId", game_id(source, key))]
    if game.root_fen != BughouseGame().root_fen:
        tags[1:1] = [("SetUp", "1"), ("FEN", game.root_fen)]
    head = "".join(f'[{k} "{str(v).replace(chr(34), chr(39))}"]\n' for k, v in tags)
    movetext = bpgn_movetext(game)
    return head + "\n" + (movetext + " " if movetext else "") + res.result + "\n\n"


class BughouseStore:
    """:class:`Store` plus the ``bughouse_games`` table, in one SQLite file."""

    def __init__(self, path: str | Path, lock: bool = False, readonly: bool = False) -> None:
        self.store = Store(path, lock=lock, readonly=readonly)
        if readonly:
            has = self.store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'bughouse_games'").fetchone()
            if has is None:
                self.store.close()
                raise StoreError(f"{str(path)!r} holds no bughouse games (no bughouse_games table)")
        else:
            self.store.db.executescript(BPGN_TABLE)

    def close(self) -> None:
        self.store.close()

    def done_keys(self) -> set[str]:
        return self.store.done_keys()

    def add(self, record: GameRecord, seats: list[dict[str, Any]], times: list[int],
            ptells: list[tuple[int, int, str]], fen: str, bpgn: str) -> bool:
        self.store.db.execute("INSERT OR REPLACE INTO bughouse_games VALUES (?,?,?,?,?,?)",
                              (record.key, json.dumps(seats, sort_keys=True), json.dumps(times),
                               json.dumps(ptells), fen, bpgn))
        return self.store.add(record)

    def details(self, key: str) -> dict[str, Any] | None:
        row = self.store.db.execute("SELECT seats, times, ptells, fen, bpgn FROM bughouse_games WHERE key = ?",
                                    (key,)).fetchone()
        if row is None:
            return None
        return {"seats": json.loads(row[0]), "times": json.loads(row[1]), "ptells": json.loads(row[2]),
                "fen": row[3], "bpgn": row[4]}

    def bpgn_of(self, keys: Sequence[str]) -> list[str]:
        out = []
        for k in keys:
            d = self.details(k)
            if d is not None:
                out.append(d["bpgn"])
        return out


def rebuild_game(record: GameRecord, details: dict[str, Any]) -> BughouseGame:
    """The stored game replayed (moves and their times): a check that what is stored is complete."""
    base = details["seats"][0].get("base_ms", -1) if details["seats"] else -1
    inc = details["seats"][0].get("inc_ms", 0) if details["seats"] else 0
    g = BughouseGame(details["fen"], base, inc)
    for text, t in zip(record.moves, details["times"]):
        bid, m = g.parse(text)
        g.push(bid, m, t)
    return g


# ---------------------------------------------------------------------------------------- match

@dataclass
class MatchSummary:
    played: int = 0
    skipped: int = 0
    wins: int = 0       # for team A
    draws: int = 0
    losses: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def line(self, a: str, b: str) -> str:
        return (f"{a} vs {b}: {score_text(self.wins, self.draws, self.losses)}; "
                f"played {self.played}, resumed past {self.skipped}")


def match_key(a: TeamSpec, b: TeamSpec, base_ms: int, inc_ms: int, seed: int, suite: str = "") -> str:
    """The match's key; ``suite``: the opening suite's id when game pairs start from openings."""
    clock = f"{base_ms}+{inc_ms}" if base_ms >= 0 else "untimed"
    key = f"bughouse:{a.name}|{b.name}|{clock}|s{seed}"
    return key + (f"|o:{suite}" if suite else "")


def parse_clock(text: str) -> tuple[int, int]:
    """A bughouse time control in ms a seat, ``(base, increment)``: ``BASE+INC`` seconds
    (:func:`experiments.harness.match.parse_tc`), or ``none``, no clocks ``(-1, 0)``
    (:func:`check_untimed` says which seats may play so)."""
    if text.strip().lower() == "none":
        return -1, 0
    base_s, inc_s = parse_tc(text)
    return int(round(base_s * 1000)), int(round(inc_s * 1000))


def game_seed(seed: int, index: int) -> int:
    """The seed of game ``index`` of a match played with ``seed`` (stored with the game): where our
    seats' random state starts in it, so a game does not depend on the games played before it."""
    return seed * 1_000_003 + index


def check_untimed(team: TeamSpec) -> None:
    """A game without clocks (``--tc none``) is for our MCTS seats, whose searches stop at their
    node, playout or evaluator-call limits and whose games then replay move for move: an XBoard
    program needs a clock, and our alpha-beta seat answers from a process of its own, when it
    answers, so its games depend on the machine's speed."""
    for text, spec in zip(team.seat_specs, team.resolved):
        if spec.search not in registry.SEAT_SEARCHES or spec.settings.get("movetime"):
            raise BughouseMatchError(f"{text}: a game without clocks takes our MCTS seats (bughouse-mcts, "
                                     f"rise-bughouse-mcts) with node, playout or eval limits and no movetime")
        if spec.settings.get("stall") is True:
            raise BughouseMatchError(f"{text}: stall holds a move while the other board's clock runs: a game "
                                     "without clocks has none (leave stall out)")


@dataclass
class _Job:
    """What every game of a match needs (sent to worker processes)."""

    a: TeamSpec
    b: TeamSpec
    base_ms: int
    inc_ms: int
    max_plies: int
    seed: int
    run: str
    match: str
    uid: str
    starts: list[Opening | None]
    seat_factory: Callable[[EngineSpec, int, EvaluatorPool], Seat]


@dataclass
class _Played:
    """One finished game, ready to store."""

    index: int
    record: GameRecord
    seat_settings: list[dict[str, Any]]
    times: list[int]
    ptells: list[tuple[int, int, str]]
    fen: str
    bpgn: str


def _make_seats(job: _Job, cache: EvaluatorPool) -> dict[str, list[Seat]]:
    """Two seats per team, created once for the whole match (or worker)."""
    f, sd = job.seat_factory, job.seed
    return {"a": [f(job.a.resolved[0], sd, cache), f(job.a.resolved[1], sd + 1, cache)],
            "b": [f(job.b.resolved[0], sd + 2, cache), f(job.b.resolved[1], sd + 3, cache)]}


def _play_index(job: _Job, i: int, seats_of: dict[str, list[Seat]]) -> _Played:
    """Game ``i`` of the match: team A holds the team-0 seats in even games."""
    a, b = job.a, job.b
    t0_team, t1_team = (a, b) if i % 2 == 0 else (b, a)
    s0, s1 = (seats_of["a"], seats_of["b"]) if i % 2 == 0 else (seats_of["b"], seats_of["a"])
    # team 0 = A-white + B-black; a team's first spec sits on board A
    seats = [s0[0], s1[0], s1[1], s0[1]]
    started = time.time()
    start = job.starts[i // 2]
    seed = game_seed(job.seed, i)
    res = play_game(seats, job.base_ms, job.inc_ms, job.max_plies, fen=None if start is None else start.fen, seed=seed)
    names = [s.name for s in seats]
    teams = [t0_team, t1_team, t1_team, t0_team]
    boards = [0, 0, 1, 1]  # a team's first spec sits on board A
    seat_settings = [dict(s.settings(), seat=SEAT_NAMES[n], base_ms=job.base_ms, inc_ms=job.inc_ms, **network_of(s),
                          **engine_record(teams[n].seat_specs[boards[n]], teams[n].resolved[boards[n]]))
                     for n, s in enumerate(seats)]
    key = f"{job.match}:{i}"
    rec = GameRecord(
        key=key, run=job.run, match=job.match, pair=i // 2, variant=BUGHOUSE.name, white=t0_team.name,
        black=t1_team.name,
        white_settings={"team": t0_team.name, "seats": [seat_settings[0], seat_settings[3]]},
        black_settings={"team": t1_team.name, "seats": [seat_settings[1], seat_settings[2]]},
        opening="startpos" if start is None else start.name, opening_fen=res.game.root_fen, opening_moves=[],
        moves=[p.text for p in res.moves], result=res.result, reason=res.reason,
        move_stats=[p.stat for p in res.moves], seed=seed, versions=versions(), started=started,
        finished=time.time())
    text = bpgn_text(key, job.run, i + 1, names, res, started, job.uid)
    return _Played(i, rec, seat_settings, [p.at_ms for p in res.moves], res.ptells, res.game.root_fen, text)


def engine_record(text: str, spec: EngineSpec) -> dict[str, Any]:
    """What a seat's engine was, as one-board games record theirs (:mod:`reports.played`): ``engine``
    (its spec text) and, for an in-process engine, ``effective`` (every option's value as it ran,
    presets applied), so that a report knows when today's engine of that name runs differently."""
    out: dict[str, Any] = {"engine": text}
    if not catalog.is_external(spec):
        out["effective"] = registry.effective_values(spec)
    return out


def network_of(seat: Seat) -> dict[str, str]:
    """Which network a seat of ours played with, as one-board games record it: ``weights`` (the
    file's name and SHA-1 prefix, :func:`experiments.harness.store.file_id`) and ``inference`` (the
    backend it ran in); nothing for a seat without a network."""
    import os

    ev = getattr(seat, "evaluator", None)
    path, inference = getattr(ev, "path", None), getattr(ev, "inference", None)
    out: dict[str, str] = {}
    if isinstance(path, str) and os.path.isfile(path):
        out["weights"] = file_id(path)
    if isinstance(inference, str):
        out["inference"] = inference
    return out


def _serve(job: _Job, tasks: Any, put: Callable[[_Played], None], stop: Callable[[], bool]) -> None:
    """A worker of :func:`run_match` (:mod:`experiments.harness.workers`): its own four seats (and
    evaluators), each game index handed to it played and sent back."""
    cache = EvaluatorPool()
    seats_of: dict[str, list[Seat]] = {}
    try:
        seats_of = _make_seats(job, cache)
        for i in tasks:
            put(_play_index(job, i, seats_of))
    finally:
        for lst in seats_of.values():
            for seat in lst:
                seat.close()
        cache.close()


def run_match(team_a: str, team_b: str, games: int, base_ms: int, inc_ms: int, db: str | Path,
              bpgn: str | Path | None = None, seed: int = 1, run: str = "bughouse-match",
              max_plies: int = 600, progress: bool = True,
              seat_factory: Callable[[EngineSpec, int, EvaluatorPool], Seat] = make_seat,
              openings: str | Path | None = None, workers: int = 1, openings_as: str | None = None) -> MatchSummary:
    """Play ``games`` games of team A vs team B (colours alternating per pair), storing each.
    ``base_ms`` < 0: no clocks (our MCTS seats only, :func:`check_untimed`).
    ``openings``: a crazyhouse EPD suite; each game pair then starts from its own bughouse opening
    (:func:`experiments.harness.openings.bughouse_openings`), else every game from the initial position;
    ``openings_as``: a team text whose match against team B draws the openings (the same openings as
    that match, for a paired comparison; the games' keys stay this match's). ``workers``: processes
    playing games at once, each with its own four seats; a game's moves do not depend on the worker
    that plays it (untimed games: the same games with any number)."""
    if games < 1:
        raise BughouseMatchError(f"--games must be >= 1, got {games}")
    if base_ms == 0 or inc_ms < 0 or (base_ms < 0 and inc_ms):
        raise BughouseMatchError("the time control needs a positive base time and a non-negative increment")
    if workers < 1:
        raise BughouseMatchError(f"--workers must be >= 1, got {workers}")
    a, b = parse_team(team_a), parse_team(team_b)
    if base_ms < 0:
        check_untimed(a)
        check_untimed(b)
    bpgn_path = Path(bpgn) if bpgn else Path(str(db)).with_suffix(".bpgn")
    pgn_check(bpgn_path, "BPGN file")
    suite = ""
    starts: list[Opening | None] = [None] * ((games + 1) // 2)
    if openings is not None:
        try:
            suite = op_mod.suite_id(openings)
            drawn_by = a if openings_as is None else parse_team(openings_as)
            starts = list(op_mod.bughouse_openings((games + 1) // 2, seed,
                                                   match_key(drawn_by, b, base_ms, inc_ms, seed, suite), openings))
        except op_mod.OpeningError as e:
            raise BughouseMatchError(str(e)) from None
    match = match_key(a, b, base_ms, inc_ms, seed, suite)
    store = BughouseStore(db, lock=True)
    keys = [f"{match}:{i}" for i in range(games)]
    done = store.done_keys()
    summary = MatchSummary()
    seats_of: dict[str, list[Seat]] = {}
    cache = EvaluatorPool()
    job = _Job(a, b, base_ms, inc_ms, max_plies, seed, run, match, store.store.uid, starts, seat_factory)
    try:
        stored_keys = [k for k in keys if k in done]
        have = ids_in(bpgn_path)  # the BPGN is appended to, never rewritten (see experiments/pgn.py)
        missing = [k for k in stored_keys if game_id(store.store.uid, k) not in have]
        if missing:
            append_text(bpgn_path, "".join(store.bpgn_of(missing)))
        stored = {r.key: r for r in store.store.games(match=match)} if stored_keys else {}
        for k in stored_keys:
            rec = stored[k]
            _count(summary, rec.result, rec.white == a.name, rec.reason)
        summary.skipped = len(stored_keys)
        todo = [i for i in range(games) if keys[i] not in done]
        from tqdm import tqdm

        bar = tqdm(total=games, initial=summary.skipped, desc=BUGHOUSE.name, disable=not progress, dynamic_ncols=True)

        def commit(g: _Played) -> None:
            store.add(g.record, g.seat_settings, g.times, g.ptells, g.fen, g.bpgn)
            append_text(bpgn_path, g.bpgn)
            summary.played += 1
            _count(summary, g.record.result, g.index % 2 == 0, g.record.reason)
            bar.update(1)
            bar.set_postfix_str(f"+{summary.wins}={summary.draws}-{summary.losses}")

        if todo and workers == 1:
            seats_of = _make_seats(job, cache)
            for i in todo:
                commit(_play_index(job, i, seats_of))
        elif todo:
            try:
                run_pool(_serve, job, todo, min(workers, len(todo)), on_result=commit)
            except PoolError as e:
                raise BughouseMatchError(f"a match worker failed: {e}") from None
        bar.close()
    finally:
        for lst in seats_of.values():
            for s in lst:
                s.close()
        cache.close()
        store.close()
    return summary


def _count(summary: MatchSummary, result: str, a_is_team0: bool, reason: str) -> None:
    key = reason.split(":")[0].split(" on board")[0]
    summary.reasons[key] = summary.reasons.get(key, 0) + 1
    if result == "1/2-1/2":
        summary.draws += 1
    elif (result == "1-0") == a_is_team0:
        summary.wins += 1
    else:
        summary.losses += 1
