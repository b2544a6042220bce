"""The results store: one SQLite file per run, one row per finished game, committed at once.

Every game has a deterministic ``key`` (what is played, not when: match, opening pair, colours),
declared ``UNIQUE``.  The harness asks :meth:`Store.done_keys` before it schedules anything and
skips what is there, so running the same command again resumes where the last run stopped, and a
game is never stored twice even if two runs race (``INSERT OR IGNORE``).  The database runs in WAL
mode and commits each game in its own transaction: killing the process at any moment loses at most
the games in flight.

A row keeps everything needed to rebuild the game and its PGN: the variant, the opening (name, FEN,
moves that reach it), the game's moves in UCI, result, reason, both players with their full
settings (engine spec and limits, as JSON), per-move statistics (``move_stats``: a JSON array with one
object per move, ``{"nodes", "time" (s), "cp", "mate", "depth", "evals"}``, readable with SQLite's
``json_each``/``json_extract`` or pandas; databases written before the names were stored hold arrays
``[nodes, time, cp, mate, depth, evals]`` and are read the same), the seed and the software versions.

One run per database: a command that plays games opens its store with ``lock=True``, which holds an
exclusive ``flock`` on the database file for the run's life (released by the kernel when the process
ends, ``kill -9`` included) and records the owner's pid in ``meta``; a second run on the same file
is refused at once with that pid (:class:`StoreBusyError`).  Readers (``ratings``, reports) take no
lock and open the file read-only (``readonly=True``).  Each database has a random ``uid`` (``meta``), which the PGN export writes into every game's
``GameId`` so that games of different databases are never mistaken for one another.

A database file created by a run that fails before storing anything (a bad engine, a bad option) is
removed again when the store is closed: failed validation leaves no empty file behind.  Only a file
the run created *and* locked is ever removed (checked by inode), so a refused run never deletes the
database another run is writing.  A writer refuses a SQLite file that holds tables but not
searchbench's schema (another program's database); readers open read-only and change nothing.
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
from evaluators.families import file_id as file_id  # re-exported: a file's identity in records and keys
from experiments.paths import OutputError, check_file

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
    #: self-play only (never stored in the database): per move the mover's policy training target
    #: (moves, probabilities) and its root value for the side to move (:class:`~experiments.harness.runner.Runner`)
    targets: list[tuple[list[int], list[float], float]] | None = field(default=None, compare=False, repr=False)

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

        v = {"searchbench": "0.1.0", "python": platform.python_version(), "python-chess": chess.__version__,
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
    """Fail now (before any game) if ``path`` cannot be created or written (nothing is created);
    an existing path must be a regular file (``/dev/null`` is no database)."""
    try:
        check_file(path, "database", regular=True)
    except OutputError as e:
        raise StoreError(str(e)) from None


def _unlink_quietly(paths: list[str]) -> None:
    """Remove each file that is there (one that is gone already is no error)."""
    for f in paths:
        try:
            os.unlink(f)
        except OSError:
            pass


def _readonly_uri(path: Path) -> str:
    """SQLite's URI that opens ``path`` read-only (quoted: a ``?`` or ``#`` in a name stays a name)."""
    from urllib.parse import quote

    return f"file:{quote(str(path.resolve()))}?mode=ro"


def _readonly_fs(folder: Path) -> bool:
    """Whether ``folder`` is on a file system mounted read-only (where even root writes nothing)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _ours(db: sqlite3.Connection, path: Path, empty_ok: bool = True) -> None:
    """Refuse a database that is not searchbench's (another program's file); one without tables is
    a new database to a writer (``empty_ok``), nothing to read to a reader."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables and empty_ok:
        return
    schema = None
    if {"meta", "games"} <= tables:
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        schema = row[0] if row else None
    if schema is None:
        shown = (", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")) or "none"
        raise StoreError(f"{str(path)!r} is not a searchbench results database (tables: {shown}); "
                         "refusing to touch it: give another --db")
    if int(schema) != SCHEMA_VERSION:
        raise StoreError(f"{str(path)!r} has schema {schema}, this searchbench writes {SCHEMA_VERSION}")


class Store:
    """The SQLite store of a run (see module doc).

    ``lock``: hold the database for this run (writers).  ``readonly``: open it read-only (``mode=ro``;
    readers such as ``ratings`` and the reports): nothing in the file is changed, a file that is not
    a searchbench database (empty, foreign) is refused, and SQLite's ``-wal``/``-shm`` side files
    that the reader itself made are removed again when it closes.
    """

    def __init__(self, path: str | Path, lock: bool = False, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._created = False
        self._lock_fd: int | None = None
        self._open = False
        self._new_dirs: list[Path] = []
        self._side_files: list[str] = []
        self._copy_dir: str | None = None
        if readonly:
            self._open_readonly()
            return
        check_writable(self.path)
        self._new_dirs = [d for d in reversed(self.path.parents) if not d.exists()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create directory {str(self.path.parent)!r}: {e.strerror}") from None
        try:
            if lock:
                self._lock()
            else:
                self._created = not self.path.exists()
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self._open = True
            _ours(self.db, self.path)
            check = self.db.execute("PRAGMA quick_check(1)").fetchone()
            if check and check[0] != "ok":  # a run appends to a whole database only (its games would be lost)
                raise StoreError(f"{str(self.path)!r} is damaged ({check[0]}): give another --db (sqlite3's "
                                 f".recover copies out what is left)")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
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

    def _open_readonly(self) -> None:
        p = self.path
        if not p.exists():
            raise StoreError(f"no such database {str(p)!r}")
        if not p.is_file():
            raise StoreError(f"{str(p)!r} is not a regular file, so not a results database")
        if p.stat().st_size == 0:
            raise StoreError(f"{str(p)!r} is empty: not a searchbench results database")
        self._side_files = [str(p) + s for s in ("-wal", "-shm") if not os.path.exists(str(p) + s)]
        try:
            try:
                self.db = sqlite3.connect(_readonly_uri(p), uri=True, timeout=30.0, isolation_level=None)
                self._open = True
                _ours(self.db, p, empty_ok=False)
            except sqlite3.OperationalError:
                if os.access(p.parent, os.W_OK) and not _readonly_fs(p.parent):
                    raise
                self._open_copy(p)  # a folder that cannot be written (an archive, a read-only mount)
            row = self.db.execute("SELECT value FROM meta WHERE key='uid'").fetchone()
            self.uid = row[0] if row else ""
        except sqlite3.DatabaseError as e:
            self.close()
            raise StoreError(f"cannot read {str(p)!r} as a results database: {e}") from None
        except BaseException:
            self.close()
            raise

    def _open_copy(self, p: Path) -> None:
        """Open a private copy of ``p`` (and its ``-wal``): SQLite cannot read a WAL database in a
        folder where it may not make its ``-shm`` (a read-only file system); the copy is removed when
        the store closes."""
        import shutil
        import tempfile

        if self._open:
            self.db.close()
            self._open = False
        self._side_files = []
        self._copy_dir = tempfile.mkdtemp(prefix="searchbench-ro-")
        copy = Path(self._copy_dir) / p.name
        shutil.copyfile(p, copy)
        if os.path.exists(str(p) + "-wal"):
            shutil.copyfile(str(p) + "-wal", str(copy) + "-wal")
        self.db = sqlite3.connect(_readonly_uri(copy), uri=True, timeout=30.0, isolation_level=None)
        self._open = True
        _ours(self.db, p, empty_ok=False)

    def _lock(self) -> None:
        """Create (``O_EXCL``: ``_created`` says whether this run made the file) or open the file and
        take the run's exclusive lock on it before SQLite writes anything."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self._created = True
        except FileExistsError:
            fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = "?"
            try:
                with sqlite3.connect(_readonly_uri(self.path), uri=True) as db:
                    row = db.execute("SELECT value FROM meta WHERE key='owner_pid'").fetchone()
                    pid = row[0] if row else "?"
            except sqlite3.Error:
                pass
            raise StoreBusyError(f"database {str(self.path)!r} is in use by another run (pid {pid}); "
                                 "wait for it to finish or give another --db") from None
        self._lock_fd = fd

    def _still_ours(self) -> bool:
        """The file at ``path`` is the one this run created and holds locked (never another run's)."""
        if not self._created or self._lock_fd is None:
            return False
        try:
            a, b = os.stat(self.path), os.fstat(self._lock_fd)
        except OSError:
            return False
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    def close(self) -> None:
        """Close (and unlock).  A file this run created *and* locked and never stored a game in is
        removed; nothing else ever is (a refused run leaves another run's database alone)."""
        empty = False
        if self._open:
            if self._still_ours():
                try:
                    empty = self.db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 0
                except sqlite3.DatabaseError:
                    empty = True
            self.db.close()
            self._open = False
        if empty:
            _unlink_quietly([str(self.path) + suffix for suffix in ("-wal", "-shm", "")])
            for d in reversed(self._new_dirs):
                try:
                    d.rmdir()  # only if empty
                except OSError:
                    break
        if self._side_files:
            self._remove_reader_side_files()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._copy_dir is not None:
            import shutil

            shutil.rmtree(self._copy_dir, ignore_errors=True)
            self._copy_dir = None

    def _remove_reader_side_files(self) -> None:
        """The empty ``-wal`` and the ``-shm`` a read-only open made, unless a writer holds the file now."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return  # a run is writing: its side files are in use
        try:
            wal = str(self.path) + "-wal"
            if wal in self._side_files and os.path.exists(wal) and os.path.getsize(wal) > 0:
                return
            _unlink_quietly(self._side_files)
        finally:
            os.close(fd)
        self._side_files = []

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        """(column names, rows) of a query; a damaged file is one line (:class:`StoreError`) naming it."""
        try:
            cur = self.db.execute(sql, args)
            return [d[0] for d in cur.description], cur.fetchall()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot read {str(self.path)!r}: {e} (a damaged results database)") from None

    def done_keys(self) -> set[str]:
        return {r[0] for r in self._rows("SELECT key FROM games")[1]}

    def add(self, g: GameRecord) -> bool:
        """Commit one finished game; False (and nothing written) if its key is already stored."""
        if g.result not in RESULTS:
            raise StoreError(f"game {g.key!r}: result {g.result!r} is not one of {', '.join(RESULTS)}")
        row = (g.key, g.run, g.match, g.pair, g.variant, g.white, g.black,
               json.dumps(g.white_settings, sort_keys=True), json.dumps(g.black_settings, sort_keys=True),
               g.opening, g.opening_fen, " ".join(g.opening_moves), " ".join(g.moves), g.result, g.reason,
               len(g.moves), json.dumps([s.to_json() for s in g.move_stats]), g.seed,
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
        names, rows = self._rows(q, args)
        return [self._record(dict(zip(names, r))) for r in rows]

    def __iter__(self) -> Iterator[GameRecord]:
        return iter(self.games())

    def __len__(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM games")[1][0][0])

    def _record(self, r: dict[str, Any]) -> GameRecord:
        """A row as a game; a field of the wrong type (an edited or damaged row) is one line
        (:class:`StoreError`) naming the file, the game and the field."""
        def bad(name: str, why: str) -> StoreError:
            return StoreError(f"{str(self.path)!r}: game {r.get('key')!r}: {name} {why} (a damaged row)")

        def json_of(name: str, kind: type) -> Any:
            try:
                v = json.loads(r[name])
            except (TypeError, ValueError):
                raise bad(name, "is not JSON") from None
            if not isinstance(v, kind):
                raise bad(name, f"is not a JSON {'object' if kind is dict else 'array'}")
            return v

        for name in ("key", "run", "match", "variant", "white", "black", "opening", "opening_fen", "opening_moves",
                     "moves", "result", "reason"):
            if not isinstance(r[name], str):
                raise bad(name, f"is {r[name]!r}, not text")
        for name in ("pair", "seed", "id"):
            if not isinstance(r[name], int) or isinstance(r[name], bool):
                raise bad(name, f"is {r[name]!r}, not an integer")
        for name in ("started", "finished"):
            if not isinstance(r[name], (int, float)):
                raise bad(name, f"is {r[name]!r}, not a number")
        stats = json_of("move_stats", list)
        try:
            move_stats = [MoveStat.from_json(v) for v in stats]
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise bad("move_stats", f"holds an entry that is not a move's statistics ({e})") from None
        return GameRecord(
            key=r["key"], run=r["run"], match=r["match"], pair=r["pair"], variant=r["variant"],
            white=r["white"], black=r["black"], white_settings=json_of("white_settings", dict),
            black_settings=json_of("black_settings", dict), opening=r["opening"], opening_fen=r["opening_fen"],
            opening_moves=r["opening_moves"].split(), moves=r["moves"].split(), result=r["result"],
            reason=r["reason"], move_stats=move_stats, seed=r["seed"], versions=json_of("versions", dict),
            started=r["started"], finished=r["finished"], id=r["id"])

