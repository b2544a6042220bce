"""Tournaments from a TOML config: round robin or gauntlet, stored, resumable, rated.

Config (every key is checked; a bad one is reported with its line)::

    name = "cz-rr"                 # run name: the database rows and the PGN event
    variant = "crazyhouse"
    mode = "round-robin"           # or "gauntlet" (the first engine, or `gauntlet = NAME`, meets all)
    games = 10                     # games per pairing (even: openings in colour-reversed pairs)
    concurrency = 4                # games at once (pooled evaluation across them)
    workers = 1                    # processes (each runs concurrency/workers games)
    seed = 1
    db = "runs/cz-rr.sqlite"       # default runs/<name>.sqlite
    pgn = "runs/cz-rr.pgn"         # default runs/<name>.pgn
    openings = "experiments/openings/crazyhouse.epd"   # default: the shipped suite of the variant
    random_openings = false        # accepted for old configs; every pairing draws its own openings
    anchor = "material-ab"         # rating anchor (a player name) and its Elo
    anchor_elo = 0
    bootstrap = 200                # bootstrap samples for the error bars
    backend = "local"              # or "ray" (Ray actors; ray_address = "..." for a cluster)
                                   # (the run's page, reports.html, is written beside the database: DB.html)
    notes = "..."                  # Markdown at the end of the report, under "Notes and history"
    inference = "frozen"           # every network engine that names no inference mode runs in this one
                                   # (default: the evaluators' own, ONNX Runtime; reports played with
                                   # TorchScript pin "frozen" so they replay game for game)

    [adjudication]                 # SPEC.md section 5 defaults; 0 disables a rule
    resign_moves = 5
    resign_cp = 600
    draw_from_move = 30
    draw_moves = 4
    draw_cp = 20
    max_plies = 400

    [[engines]]
    name = "ab"                    # display name (default: the engine string)
    engine = "material-ab"         # registry name or spec
    nodes = 2000                   # limits: nodes (MCTS: root visits, reused included), playouts (MCTS:
                                   # new simulations), evals, depth, movetime (s), tc = "60+0.6"
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import board
from engines import catalog, registry
from engines.base import EngineError
from engines.registry import pin_inference
from evaluators.base import INFERENCE_MODES
from experiments.harness import openings as openings_mod, tomlconfig
from experiments.harness import pgn as pgn_out
from experiments.harness.match import play
from experiments.harness.ratings import Standings
from experiments.paths import OutputError, check_file
from experiments.harness.runner import RunStats
from experiments.harness.store import GameRecord, Store
from experiments.harness.tasks import (
    BACKENDS, SEED_RANGE, Adjudication, GameTask, MatchError, Player, check_name, match_id, match_tasks, parse_tc,
)
from experiments.harness.tomlconfig import ConfigError, Section, even_games

RUNS_DIR = Path("runs")


@dataclass
class RunSettings:
    """What every config run shares: where results go, how games are played."""

    name: str
    variant: str
    games: int = 10
    concurrency: int = 2
    workers: int = 1
    seed: int = 1
    db: Path = Path()
    pgn: Path | None = None
    openings: Path = Path()
    random_openings: bool = False
    anchor: str | None = None
    anchor_elo: float = 0.0
    bootstrap: int = 200
    backend: str = "local"
    ray_address: str | None = None
    notes: str = ""
    #: the inference mode of every network engine that names none (None: the evaluators' default)
    inference: str | None = None
    adjudication: Adjudication = field(default_factory=Adjudication)
    _suite: list[openings_mod.Opening] | None = field(default=None, repr=False, compare=False)
    _suite_id: str = field(default="", repr=False, compare=False)

    def pairing_tasks(self, a: Player, b: Player, games: int) -> list[GameTask]:
        """The games of one pairing: ``games // 2`` colour-reversed pairs on as many distinct openings,
        drawn for this pairing without replacement (:func:`experiments.harness.openings.draw`)."""
        if self._suite is None:
            self._suite = openings_mod.load_suite(self.openings, self.variant)
            self._suite_id = openings_mod.suite_id(self.openings) + "/" + openings_mod.DRAWN
        if self.inference is not None:
            a = replace(a, engine=pin_inference(a.engine, self.inference))
            b = replace(b, engine=pin_inference(b.engine, self.inference))
        key = match_id(self.variant, a, b, self._suite_id)
        try:
            ops = openings_mod.draw(self._suite, (games + 1) // 2, self.seed, key)
        except openings_mod.OpeningError as e:
            raise MatchError(f"{a.name} vs {b.name}: {e}") from None
        return match_tasks(self.name, self.variant, a, b, ops, games, self.seed, self._suite_id)


def _name_check(v: str) -> str | None:
    if not v or any(c in v for c in "/\\\0") or v.startswith("."):
        return "must be a non-empty name without slashes"
    return check_name(v, "name")


def run_settings(cfg: Section) -> RunSettings:
    name = cfg.get("name", str, check=_name_check)
    variant = cfg.choice("variant", tuple(board.VARIANTS))
    games = cfg.get("games", int, 10, even_games)
    s = RunSettings(name=name, variant=variant, games=games)
    s.concurrency = cfg.positive("concurrency", 2)
    s.workers = cfg.positive("workers", 1)
    s.seed = cfg.get("seed", int, 1, lambda v: None if 0 <= v < SEED_RANGE else "must be from 0 to 2**63 - 1")
    s.db = Path(cfg.get("db", str, str(RUNS_DIR / f"{name}.sqlite")))
    pgn = cfg.get("pgn", (str, bool), str(RUNS_DIR / f"{name}.pgn"))
    s.pgn = None if pgn is False else Path(str(pgn)) if pgn is not True else RUNS_DIR / f"{name}.pgn"
    try:  # outputs checked now, before any game
        check_file(s.db, "database", regular=True)
        if s.pgn is not None:
            pgn_out.check(s.pgn)
    except OutputError as e:
        raise cfg.error("pgn" if s.pgn is not None and str(s.pgn) in str(e) else "db", str(e)) from None
    ops = cfg.get("openings", str, str(openings_mod.default_suite(variant)))
    s.openings = openings_mod.resolve_suite(ops)  # a shipped suite by name or checkout path, from any folder
    if not s.openings.exists():
        raise cfg.error("openings", f"no such file {ops!r}")
    s.random_openings = cfg.get("random_openings", bool, False)
    s.anchor = cfg.get("anchor", str, None)
    s.anchor_elo = cfg.get("anchor_elo", float, 0.0, lambda v: None if abs(v) <= 1e5 else "must be within +-100000")
    s.bootstrap = cfg.get("bootstrap", int, 200, lambda v: None if v >= 0 else "must be >= 0")
    s.backend = cfg.choice("backend", BACKENDS, "local")
    s.ray_address = cfg.get("ray_address", str, None)
    s.notes = cfg.get("notes", str, "").strip()
    s.inference = cfg.get("inference", str, None,
                          lambda v: None if v in INFERENCE_MODES else f"must be one of {', '.join(INFERENCE_MODES)}")
    adj = cfg.table("adjudication")
    d = Adjudication()
    nonneg = lambda v: None if v >= 0 else "must be >= 0"  # noqa: E731
    s.adjudication = Adjudication(
        resign_moves=adj.get("resign_moves", int, d.resign_moves, nonneg),
        resign_cp=adj.get("resign_cp", int, d.resign_cp, nonneg),
        draw_from_move=adj.get("draw_from_move", int, d.draw_from_move, nonneg),
        draw_moves=adj.get("draw_moves", int, d.draw_moves, nonneg),
        draw_cp=adj.get("draw_cp", int, d.draw_cp, nonneg),
        max_plies=adj.get("max_plies", int, d.max_plies, nonneg))
    adj.done()
    return s


def player(sec: Section, name: str | None = None, nodes: int | None = None, evals: int | None = None,
           movetime: float | None = None) -> Player:
    """A player from a config table (``engine`` and limits); ``nodes``, ``evals`` and ``movetime``
    override the table's."""
    engine = sec.get("engine", str, check=lambda v: None if v.strip() else "must not be empty")
    nm = name if name is not None else sec.get("name", str, engine, _name_check)
    tc_text = sec.get("tc", str, None)
    try:
        tc = parse_tc(tc_text) if tc_text is not None else None
        return Player(nm, engine,
                      nodes=nodes if nodes is not None else sec.get("nodes", int, None),
                      evals=evals if evals is not None else sec.get("evals", int, None),
                      playouts=sec.get("playouts", int, None),
                      depth=sec.get("depth", int, None),
                      movetime=movetime if movetime is not None else sec.get("movetime", float, None), tc=tc)
    except MatchError as e:
        raise sec.error(None, str(e)) from None


@dataclass
class Tournament:
    settings: RunSettings
    mode: str
    players: list[Player]
    gauntlet: str | None = None

    def pairings(self) -> list[tuple[Player, Player]]:
        ps = self.players
        if self.mode == "gauntlet":
            g = next(p for p in ps if p.name == self.gauntlet)
            return [(g, p) for p in ps if p is not g]
        return [(ps[i], ps[j]) for i in range(len(ps)) for j in range(i + 1, len(ps))]

    def tasks(self) -> list[GameTask]:
        return interleave([self.settings.pairing_tasks(a, b, self.settings.games) for a, b in self.pairings()])


def _options_now(engine: str, cache: dict[str, dict[str, str] | None]) -> dict[str, str] | None:
    """The options ``engine`` resolves to now (None for an external engine or one that cannot
    resolve), remembered in ``cache`` (one run's)."""
    if engine not in cache:
        try:
            spec = registry.resolve(engine)
            cache[engine] = None if catalog.is_external(spec) else dict(spec.options)
        except EngineError:
            cache[engine] = None
    return cache[engine]


def _check_same_options(g: GameRecord, t: GameTask, db: Any, cache: dict[str, dict[str, str] | None]) -> None:
    """A stored game resumes a run only if its players' engines still resolve to the options it was
    played with: a built-in engine's default changed since (``engines/builtin.toml``) would otherwise
    mix two engines under one name (MatchError, one line)."""
    for p, st in ((t.white, g.white_settings), (t.black, g.black_settings)):
        stored, now = st.get("options"), _options_now(p.engine, cache)
        if isinstance(stored, dict) and now is not None and {k: str(v) for k, v in stored.items()} != now:
            raise MatchError(f"{db}: game {g.key} of {p.name} ({p.engine}) was played with options {stored}, "
                             f"which the engine no longer has ({now}: a built-in default changed); "
                             "give the run another database (db = ...) or pin the options in the spec")


def play_run(s: RunSettings, tasks: Sequence[GameTask], players: Sequence[str], factory: Any = None,
             progress: bool = True, backend: str | None = None, ray_address: str | None = None,
             on_game: Callable[[GameRecord], None] | None = None, skip: Callable[[GameTask], bool] | None = None
             ) -> tuple[RunStats, list[GameRecord]]:
    """Play what is missing of a config run (its database held for the run), the standings on the
    progress bar; returns the stats and every stored game of the run between ``players``.
    ``on_game`` sees every game of the tasks, the stored ones first; ``skip`` (see
    :func:`experiments.harness.match.play`) drops tasks not yet started."""
    standings = Standings()
    keys = {t.key for t in tasks}
    names = set(players)

    def seen(g: GameRecord) -> None:
        standings.add(g)
        if on_game is not None:
            on_game(g)

    with Store(s.db, lock=True) as store:
        by_key = {t.key: t for t in tasks}
        resolved: dict[str, dict[str, str] | None] = {}
        for g in store.games(run=s.name):
            if g.key in keys:
                _check_same_options(g, by_key[g.key], s.db, resolved)
                seen(g)
        st = play(tasks, store, factory, concurrency=s.concurrency, workers=s.workers, adjudication=s.adjudication,
                  pgn_path=s.pgn, progress=progress, desc=s.name, on_game=seen, postfix=standings.text,
                  backend=backend or s.backend, ray_address=ray_address or s.ray_address, skip=skip)
        print(f"{st.played} games played, {st.skipped} already stored ({st.seconds:.0f} s); database {s.db}")
        games = [g for g in store.games(run=s.name) if g.white in names and g.black in names]
    return st, games


def interleave(matches: Sequence[Sequence[GameTask]]) -> list[GameTask]:
    """Round by round: pair 0 of every match, then pair 1, ... (an interrupted run stays balanced)."""
    out: list[GameTask] = []
    longest = max((len(m) for m in matches), default=0)
    for k in range(0, longest, 2):
        for m in matches:
            out.extend(m[k:k + 2])
    return out


def parse(cfg: Section) -> Tournament:
    s = run_settings(cfg)
    mode = cfg.choice("mode", ("round-robin", "gauntlet"), "round-robin")
    secs = cfg.tables("engines", required=True)
    if len(secs) < 2:
        raise cfg.error("engines", "a tournament needs at least 2 engines")
    for sec in secs:
        sec.only("name", "engine", "nodes", "evals", "playouts", "depth", "movetime", "tc")
    players = [player(sec) for sec in secs]
    seen: dict[str, int] = {}
    for i, (p, sec) in enumerate(zip(players, secs)):
        if p.name in seen:
            raise sec.error("name", f"duplicate player name {p.name!r} (give each [[engines]] a distinct name)")
        seen[p.name] = i
        sec.done()
    gauntlet = None
    if mode == "gauntlet":
        gauntlet = cfg.get("gauntlet", str, players[0].name,
                           lambda v: None if v in seen else f"no engine named {v!r}")
    if s.anchor is not None and s.anchor not in seen:
        raise cfg.error("anchor", f"no engine named {s.anchor!r}")
    cfg.done()
    return Tournament(s, mode, players, gauntlet)


def load(path: str | Path) -> Tournament:
    try:
        return parse(tomlconfig.load(path))
    except openings_mod.OpeningError as e:
        raise ConfigError(f"{path}: {e}") from None
