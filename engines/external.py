"""External engines (Fairy-Stockfish, Stockfish, Sjeng, any UCI or XBoard program) with a watchdog.

Each :class:`ExternalEngine` runs one subprocess through python-chess ``chess.engine``.  Every call
into it is bounded: python-chess's ``SimpleEngine.play`` never times out under node, depth or clock
limits (SPEC.md section 6), so :meth:`ExternalEngine.play` submits the protocol's coroutine to the
engine's event loop itself and waits at most :meth:`ExternalEngine.watchdog_seconds`.

Failure policy (the engine interface: failures are results, not exceptions):

- hang (no move in time), crash (the process died), illegal move, protocol error (a malformed
  move, no move in a position with legal moves, an unexpected protocol failure):
  ``MoveResult(0, forfeit="<kind>: <detail>")``; the process is killed and a fresh one started,
  so the caller's next game goes on.  Each reason is also kept in :attr:`ExternalEngine.forfeits`.
- resignation (XBoard ``resign``): ``forfeit="resigned"``; the process is kept.
- configuration errors (program not installed, unknown option, a variant or limit the engine
  cannot play, Sjeng with a crazyhouse position that has pieces in hand): :class:`EngineError`.

Engine-specific rules (SPEC.md section 6):

- python-chess sets ``UCI_Variant`` from the board class; the adapter never configures it.
- Stockfish ``elo=N`` sets ``UCI_LimitStrength`` and ``UCI_Elo`` (1350..2850; calibrated at 60+0.6 s,
  not at fixed nodes).  ``skill=N`` sets ``Skill Level`` (Fairy-Stockfish -20..20).
- Sjeng (XBoard) has no node limit: python-chess would turn ``nodes`` into ``st N`` seconds, so a
  node limit is dropped for XBoard engines and depth or time must be given.  XBoard's ``st`` is
  honoured in whole seconds only (Sjeng reads ``st 0.2`` as several seconds: 4.8 s measured), so
  an XBoard engine's movetime must be a whole number of seconds (at least 1), else
  :meth:`ExternalEngine.check_limits` refuses it before the match; use a clock (``--tc``) for less.
- Overrun: a move that takes more than ``overrun`` times its movetime plus
  :data:`OVERRUN_MARGIN` seconds is a forfeit (``overrun: ...``, recorded in the game), not
  silently accepted; ``overrun=0`` turns the check off.  Its ``setboard``
  ignores pockets: crazyhouse games must start from the initial position (plus moves); the
  adapter refuses a root position with pieces in hand.

``cp`` in the reported :class:`SearchResult` is the engine's centipawn score as it reports it;
``value`` its value on the suite's one scale (:func:`evaluators.scale.cp_to_value`, +-1 for a mate).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import shlex
import signal
import sys
import threading
import time
import weakref
from typing import Any, Sequence

import chess
import chess.engine

from board import Position, move_from_uci
from board.convert import to_python_chess
from board.variants import CHESS, variant_of
from engines.base import Engine, EngineError, EngineSpec, MoveResult
from engines.catalog import find_program
from engines.process import die_with_parent
from evaluators.scale import cp_to_value
from engines.options import ADAPTER_KEYS, EXTERNAL_OPTIONS, check_external_options
from search.base import Limits, SearchResult

log = logging.getLogger(__name__)
# python-chess logs a warning for every line it does not parse; Sjeng prints dozens per move.
logging.getLogger("chess.engine").setLevel(logging.ERROR)

#: seconds a move may exceed ``overrun`` times its movetime (process and pipe latency)
OVERRUN_MARGIN = 0.5

# python-chess runs each engine's event loop on a non-daemon thread, so an engine nobody closed
# would keep the interpreter from exiting (the program waits on stdin forever).  Kill the ones still
# running when the main thread ends, before the interpreter joins the threads.
_LIVE: weakref.WeakSet[ExternalEngine] = weakref.WeakSet()


def _kill_all() -> None:
    for e in list(_LIVE):
        try:
            e.kill()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


_register = getattr(threading, "_register_atexit", None)
if callable(_register):
    _register(_kill_all)

_previous_unraisable_hook = sys.unraisablehook


def _quiet_closed_loop(u: Any) -> None:
    """Drop the "Event loop is closed" noise of asyncio subprocess transports collected after
    python-chess closed their loop (an engine that never finished starting: CPython bpo-39232);
    the one-line error about the engine has been given already.  Anything else is reported."""
    if isinstance(u.exc_value, RuntimeError) and str(u.exc_value) == "Event loop is closed":
        return
    _previous_unraisable_hook(u)


sys.unraisablehook = _quiet_closed_loop


class _DropClosedLoopWarning(logging.Filter):
    """asyncio's child watcher logs "Loop ... that handles pid N is closed" when an engine that never
    finished starting exits after python-chess closed its loop: a second line after ours."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "that handles pid" not in record.getMessage()


logging.getLogger("asyncio").addFilter(_DropClosedLoopWarning())

def info_to_result(move: int, info: dict[str, Any], turn: chess.Color, elapsed: float, variant: str) -> SearchResult:
    """Our :class:`SearchResult` from a python-chess info dict (missing fields stay 0): the
    engine's centipawns as it reports them, their value on the suite's scale."""
    r = SearchResult(best_move=move, time=float(info.get("time", elapsed) or elapsed))
    score = info.get("score")
    if score is not None:
        pov = score.pov(turn)
        mate = pov.mate()
        if mate is not None:
            r.mate = mate
            r.value = 1.0 if mate > 0 else -1.0
            r.cp = 100_000 if mate > 0 else -100_000
        else:
            r.cp = int(pov.score())
            r.value = cp_to_value(r.cp, variant)
    r.nodes = int(info.get("nodes", 0) or 0)
    r.depth = int(info.get("depth", 0) or 0)
    r.seldepth = int(info.get("seldepth", 0) or 0)
    pv = [move_from_uci(m.uci()) for m in info.get("pv", [])]
    # A strength-limited Stockfish plays a weaker move than its reported line: keep the PV only when
    # it belongs to the move played.
    r.pv = pv if pv and pv[0] == move else [move]
    return r


class ExternalEngine(Engine):
    """One external program, restarted after every failure (see the module docstring)."""

    def __init__(self, spec: EngineSpec, variant: str, command: Sequence[str] | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.variant = variant
        self.protocol = spec.search
        if self.protocol not in ("uci", "xboard"):
            raise EngineError(f"unknown protocol {self.protocol!r}; known: uci, xboard")
        opts = check_external_options(spec.options)
        adapter = spec.settings or {o.name: o.parse(opts.get(o.name, o.format(o.default))) for o in EXTERNAL_OPTIONS}
        self.default_nodes: int | None = adapter["nodes"]
        self.default_depth: int | None = adapter["depth"]
        self.default_movetime: float | None = adapter["movetime"]
        self.timeout = float(adapter["timeout"])
        self.startup_timeout = float(adapter["startup"])
        self.overrun = float(adapter["overrun"])
        if command is None:
            command = [find_program(spec.evaluator)] + shlex.split(str(adapter["args"]))
        self.command = list(command)
        self.engine_options = self._engine_options(adapter, {k: v for k, v in opts.items() if k not in ADAPTER_KEYS})
        self.variants = frozenset({variant})
        self.forfeits: list[str] = []
        self.restarts = 0
        self._engine: chess.engine.SimpleEngine | None = None
        self._game = object()
        self._engine = self._start()
        _LIVE.add(self)
        self._check_variant(self._engine)

    # ---- process management ----
    def _engine_options(self, adapter: dict[str, object], passthrough: dict[str, str]) -> dict[str, str | int | bool]:
        out: dict[str, str | int | bool] = dict(passthrough)
        if adapter["elo"] is not None:
            out["UCI_LimitStrength"] = True
            out["UCI_Elo"] = int(adapter["elo"])  # type: ignore[call-overload]
        if adapter["skill"] is not None:
            out["Skill Level"] = int(adapter["skill"])  # type: ignore[call-overload]
        if adapter["threads"] is not None:
            out["Threads"] = int(adapter["threads"])  # type: ignore[call-overload]
        if adapter["hash"] is not None:
            out["Hash"] = int(adapter["hash"])  # type: ignore[call-overload]
        return out

    def _start(self) -> chess.engine.SimpleEngine:
        popen = (chess.engine.SimpleEngine.popen_uci if self.protocol == "uci"
                 else chess.engine.SimpleEngine.popen_xboard)
        try:
            # its own process group: a wrapper script's children are killed with it (see _kill); and
            # it dies with this process (a run killed outright runs no clean-up)
            eng = popen(self.command, timeout=self.startup_timeout, stderr=asyncio.subprocess.DEVNULL,
                        start_new_session=True, preexec_fn=die_with_parent())
        except (asyncio.TimeoutError, concurrent.futures.TimeoutError):
            raise EngineError(f"engine {self.name} did not finish starting within {self.startup_timeout:g}s") from None
        except (OSError, chess.engine.EngineError) as e:
            raise EngineError(f"engine {self.name} could not start: {type(e).__name__}: {e}") from None
        try:
            self._configure(eng)
        except EngineError:
            self._kill(eng)
            raise
        return eng

    def _configure(self, eng: chess.engine.SimpleEngine) -> None:
        if not self.engine_options:
            return
        known = {name.lower(): name for name in eng.options}
        options: dict[str, str | int | bool] = {}
        for name, value in self.engine_options.items():
            if name.lower() in chess.engine.MANAGED_OPTIONS:
                raise EngineError(f"option {name!r} is set by the adapter itself; do not configure it")
            real = known.get(name.lower())
            if real is None:
                adapter = ", ".join(o.name for o in EXTERNAL_OPTIONS)
                raise EngineError(f"unknown option {name!r} for {self.name}; known: {adapter}, "
                                  f"and the engine's own: {', '.join(eng.options)}")
            options[real] = value
        try:
            eng.configure(options)
        except (asyncio.TimeoutError, concurrent.futures.TimeoutError):
            raise EngineError(f"engine {self.name} did not accept its options within {self.startup_timeout:g}s") from None
        except chess.engine.EngineError as e:
            raise EngineError(f"engine {self.name}: bad option: {e}") from None

    def _check_variant(self, eng: chess.engine.SimpleEngine) -> None:
        record = variant_of(self.variant)
        if record is CHESS:
            return
        if self.protocol == "uci":
            opt = eng.options.get("UCI_Variant")
            ok = opt is not None and record.uci_name in [v.lower() for v in (opt.var or [])]
        else:
            ok = record.xboard_name in str(eng.protocol.features.get("variants", "")).split(",")  # type: ignore[attr-defined]
        if not ok:
            self._kill(eng)
            self._engine = None
            raise EngineError(f"engine {self.name} does not play {self.variant}")

    def _kill(self, eng: chess.engine.SimpleEngine) -> None:
        pid = None
        try:
            pid = eng.transport.get_pid()
        except Exception:  # noqa: BLE001 - transport already gone
            pass
        try:
            eng.close()  # closes the transport: kills the process if it still runs
        except Exception:  # noqa: BLE001
            pass
        try:
            eng.returncode.result(timeout=2.0)
        except Exception:  # noqa: BLE001 - did not exit in time: kill it ourselves
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if pid is not None:  # and whatever it started (a wrapper script's engine): the whole group
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass

    def _restart(self) -> None:
        if self._engine is not None:
            self._kill(self._engine)
            self._engine = None
        self.restarts += 1
        try:
            self._engine = self._start()
        except EngineError as e:
            log.warning("%s: restart failed: %s (will retry at the next move)", self.name, e)
            self._engine = None

    @property
    def pid(self) -> int | None:
        """The current process id (None if no process is running)."""
        return self._engine.transport.get_pid() if self._engine is not None else None

    # ---- playing ----
    def new_game(self, seed: int | None = None) -> None:
        """A new game: python-chess sends ``ucinewgame`` / ``new`` for a new game object.  With a
        ``seed`` (a harness game, which must replay from the database) the process is started afresh
        as well: ``ucinewgame`` clears Stockfish's hash and histories but not its node-check counter
        (``callsCnt``), so a node-limited search stopped a few nodes earlier or later depending on the
        games the process had played before, and 6 of 41 sampled games of the quick-crazyhouse run
        diverged at a Fairy-Stockfish move when replayed.  A restart costs some 30 ms a game."""
        self._game = object()
        if seed is not None and self._engine is not None:
            self._kill(self._engine)
            self._engine = None  # started again by the first move (not counted as a restart)
            try:
                self._engine = self._start()
            except EngineError as e:
                log.warning("%s: start for a new game failed: %s (will retry at the first move)", self.name, e)

    def to_limit(self, pos: Position, limits: Limits) -> chess.engine.Limit:
        """python-chess limits for ``limits`` (spec defaults fill unset fields); EngineError if none fit."""
        if limits.infinite:
            raise EngineError(f"{self.name}: an infinite search cannot be played as a move")
        nodes = limits.nodes if limits.nodes is not None else self.default_nodes
        depth = limits.depth if limits.depth is not None else self.default_depth
        if limits.evals is not None:
            raise EngineError(f"{self.name}: an external engine has no evaluator-call limit (give nodes, depth or time)")
        movetime = limits.movetime if limits.movetime is not None else self.default_movetime
        if self.protocol == "xboard":
            nodes = None  # XBoard engines (Sjeng) have no node limit; python-chess would send `st N`
        clock = limits.wtime is not None or limits.btime is not None
        if nodes is None and depth is None and movetime is None and not clock:
            need = "depth or time" if self.protocol == "xboard" else "nodes, depth or time"
            raise EngineError(f"{self.name}: no limit it can use (give {need})")
        return chess.engine.Limit(
            nodes=nodes, depth=depth, time=movetime,
            white_clock=limits.wtime, black_clock=limits.btime,
            white_inc=limits.winc if limits.wtime is not None else None,
            black_inc=limits.binc if limits.btime is not None else None,
            remaining_moves=limits.movestogo)

    def check_limits(self, limits: Limits) -> None:
        """EngineError now (before a game) for limits this engine cannot honour."""
        if limits.evals is not None:
            raise EngineError(f"{self.name}: an external engine has no evaluator-call limit (give nodes, depth or time)")
        movetime = limits.movetime if limits.movetime is not None else self.default_movetime
        if self.protocol == "xboard" and movetime is not None and (movetime < 1 or movetime != int(movetime)):
            raise EngineError(f"{self.name}: XBoard engines are given whole seconds per move (st), got movetime "
                              f"{movetime:g}: use a whole number of seconds (>= 1) or a time control")

    def watchdog_seconds(self, pos: Position, limit: chess.engine.Limit) -> float:
        """How long a move may take before it counts as a hang."""
        caps: list[float] = []
        if limit.time is not None:
            caps.append(limit.time)
        own = limit.white_clock if pos.turn == 0 else limit.black_clock
        if own is not None:
            inc = (limit.white_inc if pos.turn == 0 else limit.black_inc) or 0.0
            caps.append(max(0.0, own) + inc)
        return (min(caps) if caps else 0.0) + self.timeout

    def _board(self, pos: Position) -> chess.Board:
        b = to_python_chess(pos)
        if self.protocol == "xboard" and variant_of(pos.variant).pockets:
            root = b.root()
            if any(len(p) for p in root.pockets) or root.promoted:  # type: ignore[attr-defined]
                raise EngineError(f"{self.name}: XBoard setboard ignores pockets; start crazyhouse games "
                                  f"from the initial position plus moves (root {root.fen()})")
        return b

    def play(self, pos: Position, limits: Limits) -> MoveResult:
        if pos.variant != self.variant:
            raise EngineError(f"engine {self.name} was created for {self.variant}, not {pos.variant}")
        board = self._board(pos)
        self.check_limits(limits)
        limit = self.to_limit(pos, limits)
        if not pos.legal_moves():
            raise EngineError(f"no legal moves in {pos.fen()}")
        t0 = time.perf_counter()
        if self._engine is None:
            self._restart()
            if self._engine is None:
                return self._forfeit("crash: engine could not be restarted", t0, restart=False)
        eng = self._engine
        wait = self.watchdog_seconds(pos, limit)
        try:
            coro = asyncio.wait_for(
                eng.protocol.play(board, limit, game=self._game, info=chess.engine.INFO_ALL), wait)
            future = asyncio.run_coroutine_threadsafe(coro, eng.protocol.loop)
            try:
                played = future.result(wait + 2.0)
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise
        except (asyncio.TimeoutError, concurrent.futures.TimeoutError):
            return self._forfeit(f"hang: no move within {wait:.1f}s", t0)
        except chess.engine.EngineTerminatedError as e:
            return self._forfeit(f"crash: {self._exit_detail(eng, e)}", t0)
        except chess.engine.EngineError as e:
            cause = e.args[0] if e.args else e
            if isinstance(cause, chess.IllegalMoveError):
                return self._forfeit(f"illegal move: {cause}", t0)
            return self._forfeit(f"protocol error: {cause}", t0)
        except RuntimeError as e:  # the engine's event loop is gone
            return self._forfeit(f"crash: {type(e).__name__}: {e}", t0)
        elapsed = time.perf_counter() - t0
        if self.overrun > 0 and limit.time is not None and elapsed > self.overrun * limit.time + OVERRUN_MARGIN:
            return self._forfeit(f"overrun: {elapsed:.2f}s for a {limit.time:g}s move (more than {self.overrun:g}x "
                                 f"+ {OVERRUN_MARGIN:g}s)", t0, restart=False)
        if played.resigned:
            return self._forfeit("resigned", t0, restart=False)
        if played.move is None:
            return self._forfeit("protocol error: no move in a position with legal moves", t0)
        try:
            move = pos.parse_uci(played.move.uci())
        except ValueError:
            return self._forfeit(f"illegal move: {played.move.uci()} in {pos.fen()}", t0)
        info = info_to_result(move, dict(played.info), board.turn, elapsed, self.variant)
        return MoveResult(move, info=info, time=elapsed)

    def _exit_detail(self, eng: chess.engine.SimpleEngine, e: Exception) -> str:
        try:
            code = eng.returncode.result(timeout=1.0)
            return f"process exited with code {code}"
        except Exception:  # noqa: BLE001
            return f"{type(e).__name__}: {e}"

    def _forfeit(self, reason: str, t0: float, restart: bool = True) -> MoveResult:
        reason = reason.splitlines()[0] if reason else "unknown failure"
        log.warning("%s forfeits: %s", self.name, reason)
        self.forfeits.append(reason)
        if restart:
            self._restart()
        return MoveResult(0, forfeit=reason, time=time.perf_counter() - t0)

    def close(self) -> None:
        eng, self._engine = self._engine, None
        if eng is None:
            return
        try:
            coro = asyncio.wait_for(eng.protocol.quit(), min(self.startup_timeout, 5.0))
            asyncio.run_coroutine_threadsafe(coro, eng.protocol.loop).result(6.0)
        except Exception:  # noqa: BLE001 - a dead or hung engine is killed below
            pass
        self._kill(eng)

    def kill(self) -> None:
        """Stop the process at once (no ``quit``)."""
        eng, self._engine = self._engine, None
        if eng is not None:
            self._kill(eng)

    def __del__(self) -> None:
        try:
            self.kill()
        except Exception:  # noqa: BLE001
            pass
