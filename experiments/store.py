"""The results store: one SQLite file per run, one row per finished game, committed at once.

Every game has a deterministic ``key`` (what is played, not when: match, opening pair, colours),
declared ``UNIQUE``.  The harness asks :meth:`Store.done_keys` before it schedules anything and
skips what is there, so running the same command again resumes where the last run stopped, and a
game is never stored twice even if two runs race (``INSERT OR IGNORE``).  The database runs in WAL
mode and commits each game in its own transaction: killing the process at any moment loses at most
the games in flight.

A row keeps everything needed to rebuild the game and its PGN: the variant, the opening (name, FEN,
moves that reach it), the game's moves in UCI, result, reason, both players with their full
settings (engine spec and limits, as JSON), per-move statistics (nodes, time, score, depth), the
seed and the software versions.
"""
from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL,
    match TEXT NOT NULL,
    pair INTEGER NOT NULL,
    variant TEXT NOT NULL,
    white TEXT NOT NULL,
    black TEXT NOT NULL,
    white_settings TEXT NOT NULL,
    black_settings TEXT NOT NULL,
    opening TEXT NOT NULL,
    opening_fen TEXT NOT NULL,
    opening_moves TEXT NOT NULL,
    moves TEXT NOT NULL,
    result TEXT NOT NULL,
    reason TEXT NOT NULL,
    plies INTEGER NOT NULL,
    move_stats TEXT NOT NULL,
    seed INTEGER NOT NULL,
    versions TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS games_run ON games(run);
CREATE INDEX IF NOT EXISTS games_match ON games(match);
"""

RESULTS = ("1-0", "0-1", "1/2-1/2")


class StoreError(ValueError):
    """The database cannot be opened or written (one-line message)."""


@dataclass
class MoveStat:
    """What the mover reported for one move (score in centipawns for the mover)."""

    nodes: int = 0
    time: float = 0.0
    cp: int | None = None
    mate: int | None = None
    depth: int = 0
    evals: int = 0

    def to_list(self) -> list[Any]:
        return [self.nodes, round(self.time, 4), self.cp, self.mate, self.depth, self.evals]

    @staticmethod
    def from_list(v: list[Any]) -> "MoveStat":
        return MoveStat(int(v[0]), float(v[1]), v[2], v[3], int(v[4]), int(v[5]))


@dataclass
class GameRecord:
    """One finished game."""

    key: str
    run: str
    match: str
    pair: int
    variant: str
    white: str
    black: str
    white_settings: dict[str, Any]
    black_settings: dict[str, Any]
    opening: str
    opening_fen: str
    opening_moves: list[str]
    moves: list[str]
    result: str
    reason: str
    move_stats: list[MoveStat] = field(default_factory=list)
    seed: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0
    id: int | None = None

    @property
    def plies(self) -> int:
        return len(self.moves)

    def score_for(self, player: str) -> float:
        """1, 0.5 or 0 for ``player`` (a name of one of the two sides)."""
        white = 1.0 if self.result == "1-0" else 0.0 if self.result == "0-1" else 0.5
        if player == self.white:
            return white
        if player == self.black:
            return 1.0 - white
        raise KeyError(f"{player!r} did not play game {self.key!r}")


_versions_cache: dict[str, str] | None = None


def versions() -> dict[str, str]:
    """Versions recorded with every game: searchbench, its git commit, Python and key libraries."""
    global _versions_cache
    if _versions_cache is None:
        import chess
        import numpy

        v = {"searchbench": "0.1.0", "python": platform.python_version(), "chess": chess.__version__,
             "numpy": numpy.__version__}
        try:
            import importlib.metadata as md

            v["searchbench"] = md.version("searchbench")
            v["torch"] = md.version("torch")
        except Exception:  # noqa: BLE001 - a missing distribution only leaves the field out
            pass
        root = Path(__file__).resolve().parent.parent
        try:
            sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                 timeout=5).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            if sha:
                v["git"] = sha + ("-dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass
        _versions_cache = v
    return dict(_versions_cache)


def check_writable(path: str | Path) -> None:
    """Fail now (before any game) if ``path`` cannot be created or written."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create directory {str(parent)!r}: {e.strerror}") from None
    if p.exists():
        if p.is_dir() or not os.access(p, os.W_OK):
            raise StoreError(f"output path {str(p)!r} is not writable")
    elif not os.access(parent, os.W_OK):
        raise StoreError(f"output directory {str(parent)!r} is not writable")


class Store:
    """The SQLite store of a run (see module doc)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        check_writable(self.path)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise StoreError(f"{str(self.path)!r} has schema {row[0]}, this searchbench writes {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot use {str(self.path)!r} as a results database: {e}") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done_keys(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT key FROM games")}

    def add(self, g: GameRecord) -> bool:
        """Commit one finished game; False (and nothing written) if its key is already stored."""
        if g.result not in RESULTS:
            raise StoreError(f"game {g.key!r}: result {g.result!r} is not one of {', '.join(RESULTS)}")
        row = (g.key, g.run, g.match, g.pair, g.variant, g.white, g.black,
               json.dumps(g.white_settings, sort_keys=True), json.dumps(g.black_settings, sort_keys=True),
               g.opening, g.opening_fen, " ".join(g.opening_moves), " ".join(g.moves), g.result, g.reason,
               len(g.moves), json.dumps([s.to_list() for s in g.move_stats]), g.seed,
               json.dumps(g.versions, sort_keys=True), g.started, g.finished or time.time())
        try:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO games (key, run, match, pair, variant, white, black, white_settings, "
                "black_settings, opening, opening_fen, opening_moves, moves, result, reason, plies, move_stats, "
                "seed, versions, started, finished) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot write game {g.key!r} to {str(self.path)!r}: {e}") from None
        if cur.rowcount == 1:
            g.id = cur.lastrowid
            return True
        return False

    def games(self, run: str | None = None, match: str | None = None) -> list[GameRecord]:
        """Stored games in the order they finished, optionally of one run or one match."""
        q = "SELECT * FROM games"
        cond, args = [], []
        if run is not None:
            cond.append("run = ?")
            args.append(run)
        if match is not None:
            cond.append("match = ?")
            args.append(match)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        q += " ORDER BY id"
        cur = self.db.execute(q, args)
        names = [d[0] for d in cur.description]
        return [self._record(dict(zip(names, r))) for r in cur]

    def __iter__(self) -> Iterator[GameRecord]:
        return iter(self.games())

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM games").fetchone()[0])

    @staticmethod
    def _record(r: dict[str, Any]) -> GameRecord:
        return GameRecord(
            key=r["key"], run=r["run"], match=r["match"], pair=r["pair"], variant=r["variant"],
            white=r["white"], black=r["black"], white_settings=json.loads(r["white_settings"]),
            black_settings=json.loads(r["black_settings"]), opening=r["opening"], opening_fen=r["opening_fen"],
            opening_moves=r["opening_moves"].split(), moves=r["moves"].split(), result=r["result"],
            reason=r["reason"], move_stats=[MoveStat.from_list(v) for v in json.loads(r["move_stats"])],
            seed=r["seed"], versions=json.loads(r["versions"]), started=r["started"], finished=r["finished"],
            id=r["id"])


def as_dict(g: GameRecord) -> dict[str, Any]:
    return asdict(g)
