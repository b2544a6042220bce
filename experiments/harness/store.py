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

One run per database: a command that plays games opens its store with ``lock=True``, which holds an
exclusive ``flock`` on the database file for the run's life (released by the kernel when the process
ends, ``kill -9`` included) and records the owner's pid in ``meta``; a second run on the same file
is refused at once with that pid (:class:`StoreBusyError`).  Readers (``ratings``, reports) take no
lock.  Each database has a random ``uid`` (``meta``), which the PGN export writes into every game's
``GameId`` so that games of different databases are never mistaken for one another.

A database file created by a run that fails before storing anything (a bad engine, a bad option) is
removed again when the store is closed: failed validation leaves no empty file behind.
"""
from __future__ import annotations

import fcntl
import json
import os
import platform
import sqlite3
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from engines.base import MoveStat as MoveStat  # re-exported: a stored game's per-move statistics

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


class StoreBusyError(StoreError):
    """Another run holds the database (one-line message with its pid)."""


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


def file_id(path: str | Path) -> str:
    """A file's identity in records and keys: ``name:`` and the first 10 hex digits of its SHA-1 (the
    content, not the path: the same file elsewhere has the same id, a changed one another). OSError
    if it cannot be read."""
    import hashlib

    p = Path(path)
    return f"{p.name}:{hashlib.sha1(p.read_bytes()).hexdigest()[:10]}"


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
    """Fail now (before any game) if ``path`` cannot be created or written (nothing is created)."""
    from experiments.paths import OutputError, check_file

    try:
        check_file(path)
    except OutputError as e:
        raise StoreError(str(e)) from None


class Store:
    """The SQLite store of a run (see module doc); ``lock``: hold the database for this run."""

    def __init__(self, path: str | Path, lock: bool = False) -> None:
        self.path = Path(path)
        check_writable(self.path)
        self._created = not self.path.exists()
        self._lock_fd: int | None = None
        self._open = False
        self._new_dirs = [d for d in reversed(self.path.parents) if not d.exists()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create directory {str(self.path.parent)!r}: {e.strerror}") from None
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self._open = True
            if lock:
                self._lock()
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise StoreError(f"{str(self.path)!r} has schema {row[0]}, this searchbench writes {SCHEMA_VERSION}")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('uid', ?)", (uuid.uuid4().hex,))
            self.uid: str = self.db.execute("SELECT value FROM meta WHERE key='uid'").fetchone()[0]
            if lock:
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('owner_pid', ?)", (str(os.getpid()),))
        except sqlite3.DatabaseError as e:
            self.close()
            raise StoreError(f"cannot use {str(self.path)!r} as a results database: {e}") from None
        except BaseException:
            self.close()
            raise

    def _lock(self) -> None:
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = "?"
            try:
                row = self.db.execute("SELECT value FROM meta WHERE key='owner_pid'").fetchone()
                pid = row[0] if row else "?"
            except sqlite3.DatabaseError:
                pass
            raise StoreBusyError(f"database {str(self.path)!r} is in use by another run (pid {pid}); "
                                 "wait for it to finish or give another --db") from None
        self._lock_fd = fd

    def close(self) -> None:
        """Close (and unlock); a file this store created and never stored a game in is removed."""
        empty = False
        if self._open:
            try:
                empty = self._created and self.db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 0
            except sqlite3.DatabaseError:
                empty = self._created
            self.db.close()
            self._open = False
        if empty:
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(str(self.path) + suffix)
                except OSError:
                    pass
            for d in reversed(self._new_dirs):
                try:
                    d.rmdir()  # only if empty
                except OSError:
                    break
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


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

