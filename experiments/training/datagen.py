"""Training data: Fairy-Stockfish games and PGN imports, stored as compact shards.

A *data set* is a directory of shards ``shard-00000.npz``, ``shard-00001.npz``, ... Each shard
holds whole games (a game never spans two shards), so a train/validation split by game is a split
by ``game_uid`` (:func:`is_validation`; :func:`is_selection` carves a model-selection split out of
the remaining games), never by position.  Arrays of a shard (N positions,
G games)::

    raw          int64 [N, 16]  Position.raw_state() before the move (indices RAW_* in board.position)
    move         int32 [N]      the move played (board.moves layout)
    score        int16 [N]      engine score for the side to move in centipawns; mates are
                                +-(MATE_SCORE - plies); SCORE_UNKNOWN for imported games
    game         int32 [N]      index of the position's game in the game_* arrays of this shard
    game_uid     int64 [G]      random 63-bit id (the split key)
    game_result  int8  [G]      +1 White won, 0 draw, -1 Black won
    game_opening str   [G]      UCI moves of the randomised opening (space separated)
    game_fen     str   [G]      start FEN of the game
    variant      str   []       "chess" or "crazyhouse"

Self-play shards (:mod:`experiments.selfplay.games`) add the search's targets, position i's
policy target being entries ``policy_offset[i] .. policy_offset[i + 1] - 1`` (M entries in all)::

    policy_offset int64   [N + 1]  where each position's entries begin (policy_offset[0] = 0)
    policy_move   int32   [M]      a legal move (board.moves layout)
    policy_prob   float32 [M]      its probability (a position's entries sum to 1; none: a position
                                   with a value target only, a fast search under playout-cap randomisation)
    root_q        float32 [N]      the search's value of the position for the side to move
    score                          holds the root value in centipawns, as the engine reported it
    game_backend  str     [G]      the inference backend the network ran in ("onnxruntime",
                                   "onnxruntime-int8", ...; shards written before it was recorded lack it)

A data set that mixes shards with and without targets gives the others a one-hot target (the
played move) and ``root_q`` NaN (no search value: the value target is the result alone).

Appending and resuming: a run reads the shards already in the directory, skips the openings they
used (openings are de-duplicated by the position they reach) and writes new shards after them.
Finished games are flushed every ``shard_games`` games and on interrupt, so an interrupted run
loses at most the games in progress.  Shards are written to a temporary name and renamed.

Games: Fairy-Stockfish plays both sides at a fixed node budget (``go nodes N``) from an opening of
a random number of uniformly random legal plies; games run to mate, a draw by the rules (threefold
repetition, insufficient material, stalemate; the 50-move rule in chess only, as board.position)
or ``max_plies`` (then adjudicated a draw).
"""
from __future__ import annotations

import glob
import re
import multiprocessing as mp
import os
import queue
import random
import signal
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

import board
from board import Position, new_position
from board.variants import CHESS, CRAZYHOUSE, ONE_BOARD, Variant, of_pgn_tag, variant_of
from engines.base import EngineError
from engines.catalog import find_program
from engines.process import LineProcess
from experiments.harness.workers import PoolError, run_pool
from experiments.paths import OutputError, save_atomic

MATE_SCORE = 32000
SCORE_UNKNOWN = -32768
RESULT_CODES = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}


#: datagen stops (one line, the finished games kept) when the engine fails this many games in a row
MAX_FAILURES_IN_A_ROW = 8


class DataError(ValueError):
    """Bad data-generation input: missing engine, unreadable shard or PGN, bad option."""


# --------------------------------------------------------------------------- engine process

def find_engine(name: str) -> str:
    """Path of an external engine (:func:`engines.catalog.find_program`: a path, PATH, then /usr/games;
    under ``--no-external-programs`` a built-in engine's program only)."""
    try:
        return find_program(name)
    except EngineError as e:
        raise DataError(str(e)) from None


class UciProcess:
    """A minimal UCI dialogue with a watchdog on every read (python-chess never times out on node
    limits, see SPEC.md section 6), on the one line driver (:class:`engines.process.LineProcess`).
    One process per worker; ``ucinewgame`` per game."""

    def __init__(self, path: str, variant: str, options: dict[str, str] | None = None,
                 timeout: float = 30.0) -> None:
        self.timeout = timeout
        try:
            self.process = LineProcess([path])
        except EngineError as e:
            raise DataError(str(e)) from None
        try:
            self.send("uci")
            self.wait_for("uciok")
            opts = {"Threads": "1", "Hash": "16"}
            record = variant_of(variant)
            if record is not CHESS:
                opts["UCI_Variant"] = record.uci_name
            opts.update(options or {})
            for k, v in opts.items():
                self.send(f"setoption name {k} value {v}")
            self.send("isready")
            self.wait_for("readyok")
        except DataError:
            self.process.kill()  # a hung or broken engine is not left running
            raise

    def send(self, line: str) -> None:
        if not self.process.send(line):
            raise DataError("engine exited unexpectedly")

    def readline(self) -> str:
        try:
            line = self.process.read(self.timeout)
        except queue.Empty:
            raise DataError(f"engine did not answer within {self.timeout:.0f} s") from None
        if line is None:
            raise DataError("engine exited unexpectedly")
        return line

    def wait_for(self, token: str) -> None:
        while not self.readline().startswith(token):
            pass

    def new_game(self, seed: int | None = None) -> None:
        self.send("ucinewgame")
        self.send("isready")
        self.wait_for("readyok")

    def go_nodes(self, start_fen: str | None, moves: list[str], nodes: int) -> tuple[str, int]:
        """Best move (UCI) and the last reported score (side to move, centipawns/mate score)."""
        pos = "position startpos" if start_fen is None else f"position fen {start_fen}"
        self.send(pos + (" moves " + " ".join(moves) if moves else ""))
        self.send(f"go nodes {nodes}")
        score = 0
        while True:
            line = self.readline()
            if line.startswith("bestmove"):
                return line.split()[1], score
            if line.startswith("info") and " score " in line:
                toks = line.split()
                i = toks.index("score")
                if toks[i + 1] == "cp":
                    score = int(toks[i + 2])
                elif toks[i + 1] == "mate":
                    m = int(toks[i + 2])
                    score = MATE_SCORE - abs(m) if m > 0 else -(MATE_SCORE - abs(m))

    def close(self) -> None:
        self.process.kill()


# --------------------------------------------------------------------------- games

@dataclass
class GameRecord:
    """One finished game: positions before each engine move, the moves, scores and result."""

    uid: int
    variant: str
    start_fen: str
    opening: list[str]
    raw: list[tuple[int, ...]] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)
    scores: list[int] = field(default_factory=list)
    result: int = 0
    termination: str = ""
    #: self-play: each position's policy target (moves, probabilities) and root value
    policy: list[tuple[list[int], list[float]]] = field(default_factory=list)
    root_q: list[float] = field(default_factory=list)
    #: self-play: the inference backend the network ran in ("onnxruntime", "onnxruntime-int8", ...)
    backend: str = ""


def random_opening(variant: str, rng: random.Random, min_plies: int, max_plies: int) -> tuple[list[str], int] | None:
    """Uniformly random legal plies (a random count in [min_plies, max_plies]); returns the UCI
    moves and the zobrist key of the position they reach, or None if the game ended on the way."""
    pos = new_position(variant)
    plies = rng.randint(min_plies, max_plies)
    ucis: list[str] = []
    for _ in range(plies):
        moves = pos.legal_moves()
        if not moves:
            return None
        m = rng.choice(moves)
        ucis.append(board.move_to_uci(m))
        pos.push(m)
    if pos.is_game_over():
        return None
    return ucis, pos.zobrist


_ENGINE: UciProcess | None = None
_ENGINE_ARGS: tuple[str, str] = ("", "")


def _worker_init(engine_path: str, variant: str) -> None:
    """Pool initializer: one engine per worker; Ctrl-C is left to the parent, which flushes the
    finished games and stops the pool (so a worker never prints a traceback)."""
    global _ENGINE, _ENGINE_ARGS
    if mp.parent_process() is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _ENGINE_ARGS = (engine_path, variant)
    try:
        _ENGINE = UciProcess(engine_path, variant)
    except DataError:
        _ENGINE = None  # play_game tries again, and reports a game it cannot play (never a pool restart loop)


def _restart_engine() -> None:
    """After a crash or a timeout: a fresh engine process for the next game (this one is lost)."""
    global _ENGINE
    if _ENGINE is not None:
        _ENGINE.close()
    try:
        _ENGINE = UciProcess(*_ENGINE_ARGS)
    except DataError:
        _ENGINE = None


def play_game(job: tuple[int, str, list[str], int, int]) -> GameRecord | str:
    """Worker entry: play one game (uid, variant, opening, nodes, max_plies). Returns the record, or
    an error line (a bad engine answer forfeits the game, it never stops the run)."""
    uid, variant, opening, nodes, max_plies = job
    if _ENGINE is None:
        _restart_engine()
        if _ENGINE is None:
            return f"game {uid:x}: engine cannot be started"
    eng = _ENGINE
    pos = new_position(variant)
    rec = GameRecord(uid, variant, pos.fen(), list(opening))
    try:
        for u in opening:
            pos.push_uci(u)
        ucis = list(opening)
        eng.new_game()
        while True:
            out = pos.outcome(claim_draw=True)
            if out is not None:
                rec.result, rec.termination = RESULT_CODES[out[0]], out[1]
                return rec
            if pos.ply() >= max_plies:
                rec.result, rec.termination = 0, "max_plies"
                return rec
            best, score = eng.go_nodes(None, ucis, nodes)
            m = pos.parse_uci(best)
            rec.raw.append(pos.raw_state())
            rec.moves.append(m)
            rec.scores.append(max(-MATE_SCORE, min(MATE_SCORE, score)))
            pos.push(m)
            ucis.append(best)
    except DataError as e:  # engine crash or timeout: the game is forfeited, the engine restarted
        _restart_engine()
        return f"game {uid:x}: {e}"
    except ValueError as e:  # an illegal engine move
        return f"game {uid:x}: {e}"


# --------------------------------------------------------------------------- shards

def shard_paths(directory: str) -> list[str]:
    """The shards of a data directory in order (``shard-NNNNN.npz``; a temporary file a failed write
    left behind, such as an older version's ``shard-N.npz.tmp.npz``, is not a shard)."""
    return sorted(p for p in glob.glob(os.path.join(directory, "shard-*.npz"))
                  if re.fullmatch(r"shard-\d{5,}\.npz", os.path.basename(p)))


def write_shard(directory: str, games: list[GameRecord]) -> str:
    """Write games as the next shard of ``directory`` (atomic rename); returns its path."""
    os.makedirs(directory, exist_ok=True)
    existing = shard_paths(directory)
    k = 1 + max((int(os.path.basename(p)[6:11]) for p in existing), default=-1)
    path = os.path.join(directory, f"shard-{k:05d}.npz")
    raw = [r for g in games for r in g.raw]
    n = len(raw)
    arrays: dict[str, np.ndarray] = {
        "raw": np.array(raw, dtype=np.int64).reshape(n, 16),
        "move": np.array([m for g in games for m in g.moves], dtype=np.int32),
        "score": np.array([s for g in games for s in g.scores], dtype=np.int16),
        "game": np.array([i for i, g in enumerate(games) for _ in g.moves], dtype=np.int32),
        "game_uid": np.array([g.uid for g in games], dtype=np.int64),
        "game_result": np.array([g.result for g in games], dtype=np.int8),
        "game_opening": np.array([" ".join(g.opening) for g in games], dtype=np.str_),
        "game_fen": np.array([g.start_fen for g in games], dtype=np.str_),
        "variant": np.array(games[0].variant if games else CRAZYHOUSE.name),
    }
    if any(g.backend for g in games):  # self-play: which backend made each game's targets
        arrays["game_backend"] = np.array([g.backend for g in games], dtype=np.str_)
    if any(g.policy for g in games):
        if any(len(g.policy) != len(g.moves) or len(g.root_q) != len(g.moves) for g in games):
            raise DataError("a shard's games must all carry a policy target and a root value for every position")
        targets = [t for g in games for t in g.policy]
        arrays["policy_offset"] = np.concatenate([[0], np.cumsum([len(m) for m, _ in targets])]).astype(np.int64)
        arrays["policy_move"] = np.array([m for ms, _ in targets for m in ms], dtype=np.int32)
        arrays["policy_prob"] = np.array([p for _, ps in targets for p in ps], dtype=np.float32)
        arrays["root_q"] = np.array([q for g in games for q in g.root_q], dtype=np.float32)

    try:  # a full disk: one line, and no temporary file left to be taken for a shard
        save_atomic(path, lambda tmp: np.savez_compressed(tmp, **arrays), "data shard")  # type: ignore[arg-type]
    except OutputError as e:
        raise DataError(str(e)) from None
    return path


@dataclass
class DataSet:
    """All shards of one or more directories, concatenated (positions and games)."""

    variant: str
    raw: np.ndarray
    move: np.ndarray
    score: np.ndarray
    game: np.ndarray          # global game index into game_uid/game_result
    game_uid: np.ndarray
    game_result: np.ndarray
    game_opening: np.ndarray
    #: search targets (self-play shards; None when no shard has them): see the module docstring
    policy_offset: np.ndarray | None = None
    policy_move: np.ndarray | None = None
    policy_prob: np.ndarray | None = None
    root_q: np.ndarray | None = None

    def policy_targets(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The policy targets of positions ``idx`` as flat arrays (row in ``idx``, move, probability);
        the played move with probability 1 where the data have no search targets."""
        if self.policy_offset is None or self.policy_move is None or self.policy_prob is None:
            return np.arange(len(idx)), self.move[idx].astype(np.int64), np.ones(len(idx), dtype=np.float32)
        lo, hi = self.policy_offset[idx], self.policy_offset[np.asarray(idx) + 1]
        counts = hi - lo
        rows = np.repeat(np.arange(len(idx)), counts)
        flat = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(int(counts.sum()))
        return rows, self.policy_move[flat].astype(np.int64), self.policy_prob[flat]

    @property
    def result(self) -> np.ndarray:
        """Result of each position's game from White's view (+1, 0, -1)."""
        out: np.ndarray = self.game_result[self.game]
        return out

    def __len__(self) -> int:
        return len(self.move)


SHARD_KEYS = ("variant", "raw", "move", "score", "game", "game_uid", "game_result", "game_opening")


def _check_shard(path: str, d: dict[str, np.ndarray]) -> None:
    """The arrays of a shard agree with each other (a truncated or edited shard is refused here,
    not met as an IndexError in the middle of training)."""
    n, games = len(d["move"]), len(d["game_uid"])
    if d["raw"].ndim != 2 or d["raw"].shape[1] != 16:
        raise DataError(f"{path}: 'raw' has shape {d['raw'].shape}, expected (positions, 16)")
    for k in ("raw", "score", "game"):
        if len(d[k]) != n:
            raise DataError(f"{path}: '{k}' holds {len(d[k])} positions, 'move' {n}: a damaged shard")
    for k in ("game_result", "game_opening"):
        if len(d[k]) != games:
            raise DataError(f"{path}: '{k}' holds {len(d[k])} games, 'game_uid' {games}: a damaged shard")
    if n and (d["game"].min() < 0 or d["game"].max() >= games):
        raise DataError(f"{path}: 'game' refers to games outside 0..{games - 1}: a damaged shard")
    if n and not _valid_moves(d["move"]):
        raise DataError(f"{path}: 'move' holds values that are not moves: a damaged shard")
    if "policy_offset" in d:
        off = d["policy_offset"]
        if (len(off) != n + 1 or len(d.get("root_q", ())) != n or off[0] != 0 or np.any(np.diff(off) < 0)
                or off[-1] != len(d.get("policy_move", ())) or off[-1] != len(d.get("policy_prob", ()))):
            raise DataError(f"{path}: the policy targets do not match the positions: a damaged shard")
        if len(d["policy_move"]) and not _valid_moves(d["policy_move"]):
            raise DataError(f"{path}: 'policy_move' holds values that are not moves: a damaged shard")


def _valid_moves(m: np.ndarray) -> bool:
    """Every entry a move of board.moves' layout (below 2**18; promotion 0 or N..Q; drop 0 or P..Q)."""
    m = m.astype(np.int64)
    promo, drop = (m >> 12) & 7, m >> 15
    return bool(np.all((m > 0) & (m < 1 << 18) & (promo != 1) & (promo <= 5) & (drop <= 5)))


def load_shard(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
        missing = [k for k in SHARD_KEYS if k not in d]
        if missing:
            raise DataError(f"{path} is not a data shard (no {', '.join(missing)})")
        _check_shard(path, d)
        return d
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - zip, npy, pickle or missing-key errors all mean the same here
        detail = "" if "pickle" in str(e) else f" ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
        raise DataError(f"{path} is not a data shard{detail}") from None


def load_dataset(directories: list[str] | str) -> DataSet:
    """Load every shard of the given data directories (or single .npz files)."""
    dirs = [directories] if isinstance(directories, str) else list(directories)
    paths: list[str] = []
    for d in dirs:
        if os.path.isfile(d):
            paths.append(d)
        else:
            found = shard_paths(d)
            if not found:
                raise DataError(f"no shards (shard-*.npz) in {d}")
            paths += found
    parts = [load_shard(p) for p in paths]
    variants = {str(p["variant"]) for p in parts}
    if len(variants) != 1:
        raise DataError(f"data mixes variants {sorted(variants)}")
    offsets = np.cumsum([0] + [len(p["game_uid"]) for p in parts[:-1]])
    targets: dict[str, np.ndarray] = {}
    if any("policy_offset" in p for p in parts):
        for p in parts:  # a shard without search targets: the played move, no search value
            if "policy_offset" not in p:
                n = len(p["move"])
                p.update(policy_offset=np.arange(n + 1, dtype=np.int64), policy_move=p["move"].astype(np.int32),
                         policy_prob=np.ones(n, dtype=np.float32), root_q=np.full(n, np.nan, dtype=np.float32))
        starts = np.cumsum([0] + [len(p["policy_move"]) for p in parts[:-1]])
        targets = dict(policy_offset=np.concatenate([parts[0]["policy_offset"][:1]] + [
                           p["policy_offset"][1:] + s0 for p, s0 in zip(parts, starts)]),
                       policy_move=np.concatenate([p["policy_move"] for p in parts]),
                       policy_prob=np.concatenate([p["policy_prob"] for p in parts]),
                       root_q=np.concatenate([p["root_q"] for p in parts]))
    return DataSet(
        variant=variants.pop(),
        raw=np.concatenate([p["raw"] for p in parts]),
        move=np.concatenate([p["move"] for p in parts]),
        score=np.concatenate([p["score"] for p in parts]),
        game=np.concatenate([p["game"] + o for p, o in zip(parts, offsets)]).astype(np.int64),
        game_uid=np.concatenate([p["game_uid"] for p in parts]),
        game_result=np.concatenate([p["game_result"] for p in parts]),
        game_opening=np.concatenate([p["game_opening"] for p in parts]),
        **targets,
    )


def split_hash(game_uid: np.ndarray) -> np.ndarray:
    """A uniform number in [0, 1) per game, from a hash of its uid (the split key)."""
    h = (game_uid.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    out: np.ndarray = h.astype(np.float64) / float(1 << 24)
    return out


def is_validation(game_uid: np.ndarray, fraction: float) -> np.ndarray:
    """Deterministic split by game: a game is in the validation set iff a hash of its uid falls
    below ``fraction`` (the same game is always on the same side, whatever the shard order)."""
    out: np.ndarray = split_hash(game_uid) < fraction
    return out


def is_selection(game_uid: np.ndarray, val_fraction: float, fraction: float) -> np.ndarray:
    """The model-selection split (early stopping, best epoch): the games whose hash falls in
    ``[val_fraction, val_fraction + fraction)``, so disjoint from the validation games; training
    uses neither, and the validation games are only used to report."""
    h = split_hash(game_uid)
    out: np.ndarray = (h >= val_fraction) & (h < val_fraction + fraction)
    return out


def _used_openings(directory: str, variant: str) -> tuple[set[int], int]:
    """Zobrist keys of the openings already in the directory's shards, and their game count."""
    keys: set[int] = set()
    n = 0
    for p in shard_paths(directory):
        s = load_shard(p)
        if str(s["variant"]) != variant:
            raise DataError(f"{p} holds {s['variant']} games, not {variant}")
        for op, fen in zip(s["game_opening"], s["game_fen"]):
            pos = new_position(variant, str(fen))
            for u in str(op).split():
                pos.push_uci(u)
            keys.add(pos.zobrist)
        n += len(s["game_uid"])
    return keys, n


# --------------------------------------------------------------------------- generation

@dataclass
class GenConfig:
    out: str
    variant: str = CRAZYHOUSE.name
    games: int = 100
    nodes: int = 2000
    workers: int = 1
    min_plies: int = 2
    max_opening_plies: int = 8
    max_plies: int = 400
    shard_games: int = 50
    seed: int | None = None
    minutes: float | None = None
    engine: str = "fairy-stockfish"


def _jobs(cfg: GenConfig, used: set[int], rng: random.Random, count: int) -> Iterator[tuple[int, str, list[str], int, int]]:
    made = 0
    failures = 0
    while made < count:
        op = random_opening(cfg.variant, rng, cfg.min_plies, cfg.max_opening_plies)
        if op is None or op[1] in used:
            failures += 1
            if failures > 1000 + 50 * count:
                raise DataError("ran out of distinct openings; allow more random plies")
            continue
        used.add(op[1])
        made += 1
        yield rng.getrandbits(63), cfg.variant, op[0], cfg.nodes, cfg.max_plies


def generate(cfg: GenConfig, progress: bool = True) -> dict[str, int]:
    """Play ``cfg.games`` new games (on top of those already in ``cfg.out``) and write shards."""
    from tqdm import tqdm

    if cfg.variant not in board.VARIANTS:
        raise DataError(f"unknown variant {cfg.variant!r}; known: {', '.join(board.VARIANTS)}")
    if cfg.games < 1 or cfg.nodes < 1 or cfg.workers < 1 or cfg.shard_games < 1:
        raise DataError("games, nodes, workers and shard size must be positive")
    if not 0 <= cfg.min_plies <= cfg.max_opening_plies:
        raise DataError("opening plies: need 0 <= min <= max")
    path = find_engine(cfg.engine)
    try:  # an engine that cannot finish its handshake: one line here, before any worker starts
        UciProcess(path, cfg.variant, timeout=10.0).close()
    except (DataError, OSError) as e:
        raise DataError(f"engine {cfg.engine!r} ({path}) does not answer as a UCI engine: {e}") from None
    used, before = _used_openings(cfg.out, cfg.variant)
    rng = random.Random(cfg.seed)
    deadline = None if cfg.minutes is None else time.monotonic() + 60 * cfg.minutes
    buf: list[GameRecord] = []
    stats = {"games": 0, "positions": 0, "errors": 0, "shards": 0, "existing_games": before}
    bar = tqdm(total=cfg.games, desc=f"datagen {cfg.variant}", unit="game", disable=not progress)

    def flush() -> None:
        if buf:
            write_shard(cfg.out, buf)
            stats["shards"] += 1
            buf.clear()

    failed_in_a_row = 0

    def on_result(rec: GameRecord | str) -> None:
        nonlocal failed_in_a_row
        bar.update(1)
        if isinstance(rec, str):
            stats["errors"] += 1
            failed_in_a_row += 1
            bar.write(f"datagen: skipped {rec}")
            if failed_in_a_row >= MAX_FAILURES_IN_A_ROW:
                raise DataError(f"the engine failed {failed_in_a_row} games in a row (last: {rec}); stopped "
                                f"({stats['games']} games kept)")
            return
        failed_in_a_row = 0
        if rec.moves:
            buf.append(rec)
            stats["games"] += 1
            stats["positions"] += len(rec.moves)
            bar.set_postfix(positions=stats["positions"])
        if len(buf) >= cfg.shard_games:
            flush()

    try:
        run_pool(_serve, (path, cfg.variant), _jobs(cfg, used, rng, cfg.games), cfg.workers, on_result=on_result,
                 stop=lambda: deadline is not None and time.monotonic() > deadline)
    except PoolError as e:
        raise DataError(f"a datagen worker failed: {e} ({stats['games']} games kept)") from None
    finally:
        flush()  # interrupted too: the finished games are kept
        bar.close()
    if stats["errors"] and not stats["games"]:
        raise DataError(f"the engine failed every game it was given ({stats['errors']}): no game was stored; "
                        "see the lines above")
    return stats


def _serve(arg: tuple[str, str], jobs: Iterator[tuple[int, str, list[str], int, int]],
           put: Callable[[GameRecord | str], None], stop: Callable[[], bool]) -> None:
    """A worker of :func:`experiments.harness.workers.run_pool`: one engine, the games handed to it."""
    _worker_init(*arg)
    try:
        for job in jobs:
            put(play_game(job))
    finally:
        if _ENGINE is not None:
            _ENGINE.close()


# --------------------------------------------------------------------------- PGN import

def import_pgn(pgn_path: str, out: str, variant: str | None = None, min_elo: int = 0,
               shard_games: int = 500, progress: bool = True, seed: int | None = None) -> dict[str, int]:
    """Import decided and drawn games of a PGN file whose players are both rated >= min_elo
    (games without ratings are skipped when min_elo > 0).  Positions get SCORE_UNKNOWN."""
    import chess.pgn
    import chess.variant
    from tqdm import tqdm

    if not os.path.isfile(pgn_path):
        raise DataError(f"no such PGN file: {pgn_path}")
    rng = random.Random(seed)
    stats = {"games": 0, "positions": 0, "skipped_elo": 0, "skipped_other": 0, "shards": 0}
    buf: list[GameRecord] = []
    with open(pgn_path, encoding="utf-8", errors="replace") as f, \
            tqdm(desc="import pgn", unit="game", disable=not progress) as bar:
        while True:
            try:
                g = chess.pgn.read_game(f)
            except (ValueError, UnicodeDecodeError) as e:
                raise DataError(f"{pgn_path}: unreadable PGN ({e})") from None
            if g is None:
                break
            bar.update(1)
            h = g.headers
            try:
                tagged: Variant | None = of_pgn_tag(h.get("Variant", ""))
            except ValueError:
                tagged = None
            v = variant or (tagged.name if tagged in ONE_BOARD else CHESS.name)
            if variant is not None and (tagged is None or (tagged is not CHESS and tagged.name != variant)):
                stats["skipped_other"] += 1
                continue
            if min_elo > 0:
                try:
                    ok = int(h.get("WhiteElo", "0")) >= min_elo and int(h.get("BlackElo", "0")) >= min_elo
                except ValueError:
                    ok = False
                if not ok:
                    stats["skipped_elo"] += 1
                    continue
            res = h.get("Result", "*")
            if res not in RESULT_CODES or g.errors:
                stats["skipped_other"] += 1
                continue
            try:
                pos: Position = new_position(v, h.get("FEN"))
            except ValueError:
                stats["skipped_other"] += 1
                continue
            rec = GameRecord(rng.getrandbits(63), v, pos.fen(), [], result=RESULT_CODES[res],
                             termination=h.get("Termination", ""))
            try:
                for mv in g.mainline_moves():
                    m = pos.parse_uci(mv.uci())
                    rec.raw.append(pos.raw_state())
                    rec.moves.append(m)
                    rec.scores.append(SCORE_UNKNOWN)
                    pos.push(m)
            except ValueError:
                stats["skipped_other"] += 1
                continue
            if not rec.moves:
                stats["skipped_other"] += 1
                continue
            if buf and buf[0].variant != v:
                write_shard(out, buf)
                stats["shards"] += 1
                buf.clear()
            buf.append(rec)
            stats["games"] += 1
            stats["positions"] += len(rec.moves)
            if len(buf) >= shard_games:
                write_shard(out, buf)
                stats["shards"] += 1
                buf.clear()
    if buf:
        write_shard(out, buf)
        stats["shards"] += 1
    return stats
