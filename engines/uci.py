"""The UCI front end: ``searchbench uci --engine NAME`` speaks UCI on stdin/stdout.

Threads: the main thread reads commands; a ``go`` starts the search on a worker thread, so ``stop``,
``isready`` (answered ``readyok`` at once, even while searching) and ``quit`` are handled while it
thinks.  Output lines are written under a lock and flushed one by one.

Commands: ``uci``, ``debug``, ``isready``, ``setoption name N [value V]``, ``ucinewgame``,
``position startpos|fen FEN [moves m1 m2 ...]`` (drops as ``P@e4``), ``go`` with ``nodes``,
``depth``, ``movetime``, ``wtime``/``btime``/``winc``/``binc`` (milliseconds), ``movestogo``,
``infinite``; ``stop``, ``ponderhit`` (no pondering: ignored), ``quit``.  Anything malformed or
unknown is answered with ``info string`` and otherwise ignored; the loop never dies of input.

The contract of ``go``: every ``go`` is answered by exactly one ``bestmove``, whatever its
arguments, and never ``bestmove 0000`` in a position with a legal move.  A malformed or
out-of-range limit (``go nodes abc``, ``go nodes 0``, ``go depth -3``) is reported in an
``info string`` and the engine's default limit is used instead; huge values are clamped
(:data:`GO_MAX`).  A ``go`` that arrives while a search runs stops that search first (its
``bestmove`` is written) and starts the new one.  If the engine cannot be built from the current
options, or the search fails, the error goes to an ``info string`` and the answer is the best move
found so far, or else a legal move chosen by a one-ply classical evaluation (:func:`fallback_move`).

Options: ``UCI_Variant`` (chess, crazyhouse), ``Threads`` (evaluator threads: torch intra-op threads
of a network evaluator; default 1), ``inference`` (``onnxruntime``, the default; ``frozen`` TorchScript; ``eager``; ``onnxruntime-int8``), ``Nodes`` (node limit
for a ``go`` without one; 0 = the search's default), UCI's usual ``Move Overhead`` (ms), ``MultiPV``,
``Hash`` (MB: the MCTS tree or the alpha-beta table) and ``Clear Hash`` where the search has them
(:data:`ALIASES`), and every other option of the engine (its engine options and every field of its
search config with its real bounds, see :mod:`engines.ours`) under its own name.
Option changes take effect at the next ``isready``, ``ucinewgame`` or ``go`` (the engine is rebuilt;
the evaluator is kept unless the variant, weights, threads or inference mode changed).  Options may be
sent in any order: each ``setoption`` only records its value, and the whole set is validated
together when the engine is built; an invalid set is reported (``info string error: ...``) and kept,
so the next ``setoption`` can repair it.

Search output: ``info depth D seldepth S [multipv I] score cp X|mate M nodes N nps R time T pv ...``
(one per PV with MultiPV) about once a second from a reporter thread and once at the end, then
``bestmove``; with ``go infinite`` the bestmove waits for ``stop``.
``bestmove 0000`` only when the position has no legal move.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TextIO

import board
from board import Position, move_to_uci
from board.variants import CHESS
from engines import registry
from engines.base import EngineError, EngineSpec, InProcessEngine
from engines.options import OptionInfo, find_option, norm_key, parse_int
from engines.ours import OurEngine
from evaluators.base import Evaluation, Evaluator, Leaf
from evaluators.classical import ClassicalEvaluator
from search.ab_config import TT_SLOT_BYTES
from search.base import Limits, PVLine, SearchResult
from search.mcts_config import TREE_NODE_BYTES

INFO_INTERVAL = 1.0  # seconds between periodic info lines
AUTHOR = "searchbench"

EngineFactory = Callable[[EngineSpec, str, "object | None"], InProcessEngine]

_GO_INT = ("nodes", "depth", "movestogo", "mate")
_GO_MS = ("movetime", "wtime", "btime", "winc", "binc")
_GO_FLAGS = ("infinite", "ponder")
_GO_WORDS = frozenset(_GO_INT + _GO_MS + _GO_FLAGS + ("searchmoves",))
_EVALUATOR_KEYS = frozenset({"threads", "weights", "inference", "device"})
#: the largest value a ``go`` limit keeps (larger ones are clamped): counts, and milliseconds
GO_MAX = {"nodes": 10**12, "depth": 1000, "movestogo": 10**4, "mate": 1000, "movetime": 10**10, "wtime": 10**10,
          "btime": 10**10, "winc": 10**10, "binc": 10**10}


MB = 1 << 20


@dataclass(frozen=True)
class Alias:
    """A UCI option under its usual name that sets one of the engine's own options in other units."""

    uci: str  # UCI's name
    option: str  # the engine option it sets (the alias exists where the engine has it)
    to_option: Callable[[int], str]  # the UCI value -> the option's text
    from_option: Callable[[str], int]  # the option's text -> the UCI value (the announced default)
    minimum: int
    maximum: int


#: bytes per slot while a transposition table is built (its two arrays, and one list the size of an
#: array that each is built from)
TT_BUILD_BYTES = 24


def _available_bytes() -> int:
    """Memory the system can give now (MemAvailable; without /proc, the free pages)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _tt_mb_that_fits(mb: int) -> int:
    """``mb``, or the largest Hash (MB) whose alpha-beta table can be built in three quarters of the
    memory available now: a table of 2^30 slots asked for on a small machine would otherwise swap
    for minutes before ``readyok`` (a GUI waits forever)."""
    budget = _available_bytes() * 3 // 4
    while mb > 1 and int(_tt_slots(mb)) * TT_BUILD_BYTES > budget:
        mb //= 2
    return mb


def _tt_slots(mb: int) -> str:
    return str(1 << ((mb * MB // TT_SLOT_BYTES).bit_length() - 1))  # the largest power of two that fits


#: UCI's usual options: Move Overhead (ms) is the time manager's move_overhead (s); MultiPV the
#: search's multipv; Hash (MB) sizes the MCTS tree (max_tree_nodes, TREE_NODE_BYTES a node: the
#: search stops when it is full) or the alpha-beta transposition table (tt_size, TT_SLOT_BYTES a slot)
ALIASES: tuple[Alias, ...] = (
    Alias("Move Overhead", "time.move_overhead", lambda ms: str(ms / 1000.0), lambda t: round(float(t) * 1000), 0, 60_000),
    Alias("MultiPV", "multipv", str, int, 1, 500),
    Alias("Hash", "max_tree_nodes", lambda mb: str(max(1000, mb * MB // TREE_NODE_BYTES)),
          lambda t: max(1, int(t) * TREE_NODE_BYTES // MB), 1, (1 << 31) * TREE_NODE_BYTES // MB),
    Alias("Hash", "tt_size", _tt_slots, lambda t: max(1, int(t) * TT_SLOT_BYTES // MB), 1, (1 << 30) * TT_SLOT_BYTES // MB),
)


def fallback_move(pos: Position) -> int:
    """A legal move when no search result can be had: the best by a one-ply classical evaluation
    (0 only when there is no legal move)."""
    moves = pos.legal_moves()
    if not moves:
        return 0
    try:
        ev = ClassicalEvaluator()
        best, best_score = moves[0], None
        for m in moves:
            p = pos.copy()
            p.push(m)
            s = -ev.score(p)
            if best_score is None or s > best_score:
                best, best_score = m, s
        return best
    except Exception:  # noqa: BLE001 - the fallback of a fallback: the first legal move
        return moves[0]


def printable(text: str, limit: int = 80) -> str:
    """``text`` made safe for one output line (no control characters, at most ``limit`` chars)."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


class UCIServer:
    """One UCI session.  ``factory(spec, variant, evaluator_or_None)`` builds the engine."""

    def __init__(self, spec: EngineSpec, out: TextIO, factory: EngineFactory, option_infos: list[OptionInfo],
                 variant: str = CHESS.name, variants: Iterable[str] = board.VARIANTS) -> None:
        self.spec = spec
        self.out = out
        self.factory = factory
        self.variants = tuple(variants)
        self.variant = variant
        self._infos = option_infos
        self._settings: dict[str, str] = dict(spec.options)
        #: each option's value as the engine runs it (a built-in's preset applied): announced as its
        #: default, so a GUI that sends every option back at its default changes nothing
        self._effective: dict[str, str] = _effective(spec)
        self._engine: InProcessEngine | None = None
        self._engine_key: tuple[str, ...] | None = None
        self._cold = True  # the evaluator has not run yet (warm_up at isready)
        self._dirty = True
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._warm_thread: threading.Thread | None = None  # the networks' load and warm-up after uciok
        #: evaluators loaded for other variants (by :meth:`_evaluator_key`), each already run once:
        #: a client that switches the variant right before its first go finds its network ready
        self._spare: dict[tuple[str, ...], Evaluator] = {}
        self._busy = False  # a search runs and has not written its bestmove (changed under _lock)
        self._stop_event = threading.Event()
        self._pos: Position = board.new_position(variant)
        #: why the last ``position`` was refused (None: ``_pos`` is the position the GUI set); a ``go``
        #: then answers ``bestmove 0000``, never for the position before the refused one
        self._pos_error: str | None = None
        self.quit = False

    # ---- output ----
    def send(self, line: str) -> None:
        with self._lock:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (OSError, ValueError):  # the GUI closed the pipe
                self.quit = True

    def note(self, text: str) -> None:
        self.send("info string " + printable(text, 200))

    # ---- engine (re)building ----
    def _aliases(self) -> list[Alias]:
        """The :data:`ALIASES` this engine has (one per UCI name)."""
        names = {o.name for o in self._infos}
        out: list[Alias] = []
        for a in ALIASES:
            if a.option in names and all(b.uci != a.uci for b in out):
                out.append(a)
        return out

    def _uci_options(self) -> list[OptionInfo]:
        aliases = self._aliases()
        hidden = {"threads", "nodes"} | {a.option for a in aliases}
        own: list[OptionInfo] = []
        for o in self._infos:  # one line a name: setoption reaches the first of two (deepchess-ab's depth)
            if o.name not in hidden and all(norm_key(o.name) != norm_key(p.name) for p in own):
                own.append(o)
        threads = self._settings.get("threads", "1")
        nodes = self._settings.get("nodes", "none")
        return [
            OptionInfo("UCI_Variant", "combo", self.variant, str, self.variants),
            OptionInfo("Threads", "spin", int(threads) if threads.isdigit() else 1, parse_int, minimum=1, maximum=256),
            OptionInfo("Nodes", "spin", int(nodes) if nodes.isdigit() else 0, parse_int, minimum=0, maximum=10**9),
        ] + [OptionInfo(a.uci, "spin", self._alias_value(a), parse_int, minimum=a.minimum, maximum=a.maximum)
             for a in aliases] + ([OptionInfo("Clear Hash", "button", None, str)] if aliases else []) + [
            dataclasses.replace(o, default=o.parse(self._settings[o.name])) if o.name in self._settings else
            dataclasses.replace(o, default=o.parse(self._effective[o.name])) if o.name in self._effective else o
            for o in own]

    def _alias_value(self, a: Alias) -> int:
        """The current value of the option behind ``a`` in UCI's units."""
        text = self._settings.get(a.option, self._effective.get(a.option))
        if text is None:
            info = next(o for o in self._infos if o.name == a.option)
            text = info.format(info.default)
        try:
            return max(a.minimum, min(a.maximum, a.from_option(text)))
        except ValueError:
            return a.minimum

    def _evaluator_key(self) -> tuple[str, ...]:
        """What the evaluator depends on: a change rebuilds it (other options keep it): the loader's
        settings and the evaluator's own options (the head swap's ``value_weights``, the king danger)."""
        entry = registry.EVALUATORS.get(registry.ALIASES.get(self.spec.evaluator, self.spec.evaluator))
        own = {o.name for o in entry.options} if entry is not None else set()
        return (self.variant,) + tuple(self._settings.get(k, "") for k in sorted(_EVALUATOR_KEYS | own))

    def set_engine(self, engine: InProcessEngine) -> None:
        """Use ``engine`` (built by the caller for the current settings and variant)."""
        self._engine, self._dirty = engine, False
        self._engine_key = self._evaluator_key()
        self._cold = True

    def preload(self) -> None:
        """Start loading and warming the networks in the background (from :func:`serve`, before the
        first command is read; ``uci`` waits for it)."""
        if self._warm_thread is None and self._engine is not None and not self.searching():
            self._warm_thread = threading.Thread(target=self._preload, name="uci-warm-up", daemon=True)
            self._warm_thread.start()

    def _preload(self) -> None:
        """Warm the current network, then load and warm the network of every other variant the engine
        plays with the current options (background, after ``uciok``)."""
        self.warm_up()

        for v in self.variants:
            key = (v,) + self._evaluator_key()[1:]
            if v == self.variant or key in self._spare or self.quit:
                continue
            try:
                spec = registry.with_options(self.spec, self._settings)
                engine = self.factory(spec, v, None)
                warm = getattr(engine.evaluator, "warm_up", None)
                if callable(warm):
                    warm()
            except Exception:  # noqa: BLE001 - only a head start: the variant's first go loads it as before
                continue
            self._spare[key] = engine.evaluator

    def warm_up(self) -> None:
        """Trace and run a new evaluator's network once (at ``isready``: a GUI's first ``go`` would
        otherwise pay the load, 785 ms measured for RISE against a 100 ms movetime)."""
        if not self._cold or self._engine is None:
            return
        self._cold = False
        warm = getattr(self._engine.evaluator, "warm_up", None)
        if callable(warm):
            try:
                warm()
            except Exception as e:  # noqa: BLE001 - the first go meets it again and reports it
                self.note(f"warm-up failed: {printable(str(e), 160)}")

    def _join_warm(self) -> None:
        """Wait for the background warm-up (it must not meet an engine being rebuilt or searching)."""
        t = self._warm_thread
        if t is not None:
            t.join()
            self._warm_thread = None

    def ensure_engine(self) -> InProcessEngine | None:
        """Build the engine if options changed; errors become an ``info string`` (None returned)."""
        self._join_warm()
        if not self._dirty and self._engine is not None:
            return self._engine
        key = self._evaluator_key()
        evaluator = self._engine.evaluator if self._engine is not None and key == self._engine_key else None
        spare = evaluator is None and key in self._spare
        if spare:
            evaluator = self._spare.pop(key)
        try:
            spec = registry.with_options(self.spec, self._settings)  # every option validated together
            engine = self.factory(spec, self.variant, evaluator)
        except (EngineError, ValueError, OSError) as e:
            # The settings stay as they were sent (a later setoption may complete them); no engine
            # until they work together.
            self.note(f"error: {printable(str(e), 160)}")
            return None
        except MemoryError:
            self.note("error: out of memory building the engine for these options (a smaller Hash?)")
            return None
        if self._engine is not None and (evaluator is None or spare):
            if self._engine_key is not None and self._engine_key not in self._spare and len(self._spare) < 4:
                self._spare[self._engine_key] = self._engine.evaluator  # kept warm: the client may switch back
            else:
                self._engine.close()
        self._cold = (self._cold or evaluator is None) and not spare
        self._engine, self._engine_key, self._dirty = engine, key, False
        self._pos = self._pos if self._pos.variant == self.variant else board.new_position(self.variant)
        return engine

    # ---- the loop ----
    def run(self, lines: Iterable[str]) -> None:
        """Handle commands until ``quit`` or the end of input."""
        for line in lines:
            self.run_one(line)
            if self.quit:
                break
        self.shutdown()

    def run_one(self, line: str) -> None:
        """Handle one command; an unexpected exception becomes an ``info string``."""
        try:
            self.handle(line)
        except Exception as e:  # noqa: BLE001 - input must never kill the loop
            self.note(f"error: {type(e).__name__}: {e}")

    def shutdown(self) -> None:
        self._join_warm()
        self.stop_search()
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        for ev in self._spare.values():
            close = getattr(ev, "close", None)
            if callable(close):
                close()
        self._spare.clear()

    def handle(self, line: str) -> None:
        tokens = line.split()
        if not tokens:
            return
        cmd, args = tokens[0], tokens[1:]
        handler = getattr(self, "cmd_" + cmd, None) if cmd.isidentifier() and cmd.islower() else None
        if handler is None:
            self.note(f"unknown command: {line.strip()}")
            return
        handler(args)

    def searching(self) -> bool:
        """True from ``go`` until the search's ``bestmove`` is written (not until its thread exits:
        a GUI may send the next ``go`` the moment it reads ``bestmove``)."""
        return self._busy

    def cmd_uci(self, args: list[str]) -> None:
        self.send(f"id name searchbench {self.spec.name}")
        self.send(f"id author {AUTHOR}")
        for o in self._uci_options():
            self.send(o.uci_line())
        # The networks, loaded and run once from the start of the process (:meth:`preload`), are ready
        # before uciok: a client that sends no isready (python-chess) and its first go at once would
        # otherwise pay the load inside its first movetime.
        self.preload()
        self._join_warm()
        self.send("uciok")

    def cmd_debug(self, args: list[str]) -> None:
        pass

    def cmd_register(self, args: list[str]) -> None:
        pass

    def cmd_isready(self, args: list[str]) -> None:
        if not self.searching():
            self.ensure_engine()
            self.warm_up()
        self.send("readyok")

    def cmd_quit(self, args: list[str]) -> None:
        self.quit = True

    def cmd_stop(self, args: list[str]) -> None:
        self.stop_search()

    def cmd_ponderhit(self, args: list[str]) -> None:
        pass

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self.stop_search()
        engine = self.ensure_engine()
        if engine is not None:
            engine.new_game()
            self.warm_up()  # between games, not inside the first move's time
        self._pos = board.new_position(self.variant)
        self._pos_error = None

    def cmd_setoption(self, args: list[str]) -> None:
        if self.searching():
            self.note("setoption ignored while searching")
            return
        if not args or args[0] != "name":
            self.note("setoption: expected 'setoption name <name> [value <value>]'")
            return
        if "value" in args:
            i = args.index("value")
            name, value = " ".join(args[1:i]), " ".join(args[i + 1:])
        else:
            name, value = " ".join(args[1:]), ""
        if not name:
            self.note("setoption: missing name")
            return
        key = name.lower()
        if key == "uci_variant":
            v = value.lower()
            if v not in self.variants:
                self.note(f"setoption: unknown variant {value!r}; known: {', '.join(self.variants)}")
                return
            if v != self.variant:
                self.variant, self._dirty = v, True
                self._pos = board.new_position(v)
            return
        alias = next((a for a in self._aliases() if norm_key(a.uci) == norm_key(name)), None)
        if alias is not None:  # Move Overhead, MultiPV, Hash: in UCI's units
            try:
                n = parse_int(value)
            except ValueError:
                self.note(f"setoption: {alias.uci} must be an integer, got {printable(value)!r}")
                return
            if not alias.minimum <= n <= alias.maximum:
                self.note(f"setoption: {alias.uci} {n} clamped to [{alias.minimum}, {alias.maximum}]")
                n = max(alias.minimum, min(alias.maximum, n))
            if n == self._alias_value(alias):  # its value already (UCI's units round): nothing changes
                return
            if alias.option == "tt_size":
                fit = _tt_mb_that_fits(n)
                if fit < n:
                    self.note(f"setoption: Hash {n} MB does not fit in the memory available now: {fit} MB, the "
                              "largest that does")
                    n = fit
            self._settings[alias.option] = alias.to_option(n)
            self._dirty = True
            return
        if key == "clear hash":
            engine = self.ensure_engine()
            if engine is not None:
                engine.new_game()  # forgets the tree or the transposition table
            return
        if key in ("uci_chess960", "ponder", "uci_analysemode"):
            self.note(f"setoption: {name} is not supported; ignored")
            return
        if key == "nodes":
            try:
                n = parse_int(value)
            except ValueError:
                self.note(f"setoption: Nodes must be an integer, got {value!r}")
                return
            self._settings["nodes"] = str(n) if n > 0 else "none"
            self._dirty = True
            return
        try:
            o = find_option(self._infos, name, prefix=False)
            self._settings[o.name] = o.check(value)
        except EngineError as e:
            self.note(f"setoption: {e}")
            return
        self._dirty = True

    def cmd_position(self, args: list[str]) -> None:
        i = args.index("moves") if "moves" in args else len(args)
        try:
            if args and args[0] == "startpos" and i == 1:
                pos = board.new_position(self.variant)
            elif args and args[0] == "fen" and i > 1:
                pos = board.new_position(self.variant, " ".join(args[1:i]))
            else:
                raise ValueError("expected 'startpos' or 'fen <fen>' (then optionally 'moves ...')")
            for m in args[i + 1:]:
                pos.push_uci(m)
        except ValueError as e:
            self._pos_error = printable(str(e))
            self.note(f"position refused: {self._pos_error}; a go answers bestmove 0000 until the next valid position")
            return
        self._pos, self._pos_error = pos, None

    def parse_go(self, args: list[str]) -> Limits:
        """The limits of a ``go``; a malformed or out-of-range value is noted and left unset (the
        engine's default limit applies), a huge one clamped to :data:`GO_MAX`."""
        limits = Limits()
        i = 0
        while i < len(args):
            word = args[i]
            if word in _GO_FLAGS:
                if word == "infinite":
                    limits.infinite = True
                else:
                    self.note("go: pondering is not supported; searching normally")
                i += 1
            elif word == "searchmoves":
                j = i + 1
                while j < len(args) and args[j] not in _GO_WORDS:
                    j += 1
                self.note("go: searchmoves is not supported; ignored")
                i = j
            elif word in _GO_INT or word in _GO_MS:
                if i + 1 >= len(args) or args[i + 1] in _GO_WORDS:
                    self.note(f"go: {word} needs a value; using the engine's default limit")
                    i += 1
                    continue
                text = args[i + 1]
                i += 2
                try:
                    value = int(text)
                except ValueError:
                    self.note(f"go: bad value {printable(text)!r} for {word}; using the engine's default limit")
                    continue
                if value < 1 and word in ("nodes", "depth", "movestogo", "movetime"):
                    self.note(f"go: {word} must be at least 1, got {printable(text)}; using the engine's default limit")
                    continue
                if value > GO_MAX[word]:
                    self.note(f"go: {word} {printable(text, 24)} clamped to {GO_MAX[word]}")
                    value = GO_MAX[word]
                if word == "mate":
                    self.note("go: mate search is not supported; ignored")
                elif word in _GO_MS:
                    setattr(limits, word, max(0, value) / 1000.0)
                else:
                    setattr(limits, word, value)
            else:
                self.note(f"go: unknown token {printable(word)!r} ignored")
                i += 1
        return limits

    def cmd_go(self, args: list[str]) -> None:
        received = time.perf_counter()
        if self.searching():
            self.note("go while searching: the running search is stopped first")
            self.stop_search()
        limits = self.parse_go(args)
        if self._pos_error is not None:
            self.note(f"no position to search: the last position command was refused ({self._pos_error})")
            self.send("bestmove 0000")
            return
        engine = self.ensure_engine()
        pos = self._pos.copy()
        if not pos.legal_moves():
            self.note("no legal moves")
            self.send("bestmove 0000")
            return
        if engine is None:
            self.note("no engine for the current options: answering with a fallback move")
            self.send(f"bestmove {move_to_uci(fallback_move(pos))}")
            return
        if limits.depth is not None and hasattr(getattr(engine, "search", None), "root_rule"):  # the MCTS family
            self.note(f"MCTS has no search depth: go depth {limits.depth} caps how deep each simulation "
                      "descends; the node limit (Nodes, go nodes) or the clock decides when the search ends")
        if self._thread is not None:
            self._thread.join()  # it has written its bestmove and is returning
        limits = _less_time(limits, time.perf_counter() - received, pos.turn)
        self._stop_event.clear()
        self._busy = True
        self._thread = threading.Thread(target=self._search, args=(engine, pos, limits), name="uci-search",
                                        daemon=True)
        self._thread.start()

    def _bestmove(self, move: str, info: str | None = None) -> None:
        """Write the final info and ``bestmove`` and mark the search finished, atomically."""
        with self._lock:
            self._busy = False
            try:
                if info is not None:
                    self.out.write(info + "\n")
                self.out.write(f"bestmove {move}\n")
                self.out.flush()
            except (OSError, ValueError):
                self.quit = True

    def stop_search(self) -> None:
        """Stop a running search and wait for its ``bestmove``."""
        thread = self._thread
        if thread is None:
            return
        self._stop_event.set()
        engine = self._engine
        if isinstance(engine, OurEngine) and thread.is_alive():
            engine.stop()
        thread.join()
        self._thread = None

    # ---- the search thread ----
    def _search(self, engine: InProcessEngine, pos: Position, limits: Limits) -> None:
        try:
            self._search_steps(engine, pos, limits)
        except Exception as e:  # noqa: BLE001 - never leave the GUI waiting
            self.note(f"error: {type(e).__name__}: {e}")
        finally:
            if self._busy:
                self._bestmove(self._rescue(engine, pos))

    def _rescue(self, engine: InProcessEngine, pos: Position) -> str:
        """The move to answer after a failure: the best found so far if legal, else a fallback."""
        best = 0
        if isinstance(engine, OurEngine):
            progress = engine.progress()
            best = progress.best_move if progress is not None else 0
        if best not in pos.legal_moves():
            best = fallback_move(pos)
        return move_to_uci(best) if best else "0000"

    def _search_steps(self, engine: InProcessEngine, pos: Position, limits: Limits) -> None:
        finished = threading.Event()
        reporter = threading.Thread(target=self._report, args=(engine, pos, finished), name="uci-info", daemon=True)
        try:
            engine.start(pos, limits)
            reporter.start()
            while not engine.done():
                if self._stop_event.is_set() and isinstance(engine, OurEngine):
                    engine.stop()
                engine.step()
            finished.set()
            reporter.join()
            result = engine.finish()
        except Exception as e:  # noqa: BLE001 - report, answer, keep the loop alive
            finished.set()
            self.note(f"error: {type(e).__name__}: {e}")
            if limits.infinite:
                self._stop_event.wait()
            self._bestmove(self._rescue(engine, pos))
            return
        if limits.infinite:
            self._stop_event.wait()  # UCI: no bestmove before `stop` in infinite mode
        if result.forfeit is not None:
            self.note(f"error: {result.forfeit}; answering with the best move found so far")
            self._bestmove(self._rescue(engine, pos))
            return
        info = "\n".join(self.info_lines(pos, result.info, best=result.move)) if result.info is not None else None
        self._bestmove(move_to_uci(result.move), info)

    def _report(self, engine: InProcessEngine, pos: Position, finished: threading.Event) -> None:
        """The periodic ``info`` lines, every :data:`INFO_INTERVAL` seconds while the search runs, from
        a thread of their own: a compiled alpha-beta iteration can last many seconds, and its limit
        checks release the GIL about every millisecond (:class:`search.iterative.Budget`)."""
        if not isinstance(engine, OurEngine):
            return
        while not finished.wait(INFO_INTERVAL):
            progress = engine.progress()
            if progress is not None and not finished.is_set():
                for line in self.info_lines(pos, progress):
                    self.send(line)

    @staticmethod
    def info_lines(pos: Position, r: SearchResult, best: int = 0) -> list[str]:
        """The ``info`` lines of a result: one, or one per line of a multi-PV result (``multipv i``,
        best first); a PV is cut at its first illegal move, and the first starts with the best move."""
        lines = r.lines if len(r.lines) > 1 else [PVLine(r.best_move, r.value, r.cp, r.mate, list(r.pv))]
        out = []
        for i, line in enumerate(lines):
            pv = list(line.pv)
            if i == 0 and best and (not pv or pv[0] != best):
                pv = [best]
            legal_pv: list[str] = []
            p = pos.copy()
            for m in pv:
                if m not in p.legal_moves():
                    break
                legal_pv.append(move_to_uci(m))
                p.push(m)
            depth = r.depth if r.depth > 0 else max(1, len(legal_pv))
            parts = [f"info depth {depth}"]
            if r.seldepth > 0:
                parts.append(f"seldepth {max(r.seldepth, depth)}")
            if len(lines) > 1:
                parts.append(f"multipv {i + 1}")
            parts.append(f"score mate {line.mate}" if line.mate else f"score cp {line.cp}")
            parts.append(f"nodes {r.nodes} nps {int(r.nps)} time {int(r.time * 1000)}")
            if legal_pv:
                parts.append("pv " + " ".join(legal_pv))
            out.append(" ".join(parts))
        return out


class Responsive(Evaluator):
    """An interpreted pass-through around an evaluator, so that the search thread yields the GIL.

    A mypyc-compiled search with a compiled evaluator (alpha-beta + classical) never enters the
    interpreter during an iteration, so CPython never hands the GIL to the thread reading stdin:
    ``isready`` and ``stop`` would wait for the iteration to end (seconds at depth).  Each call of
    this class's methods runs bytecode, where CPython honours the request to switch threads."""

    def __init__(self, inner: Evaluator) -> None:
        self.inner = inner
        self.name = inner.name
        self.variants = inner.variants

    def serves(self) -> frozenset[str]:
        return self.inner.serves()

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        return self.inner.evaluate(leaves)

    def score(self, pos: Position) -> int:
        return self.inner.score(pos)

    def score_many(self, positions: Sequence[Position]) -> list[int]:
        return self.inner.score_many(positions)

    def compare(self, pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], variant: str) -> list[float]:
        return self.inner.compare(pairs, variant)

    def close(self) -> None:
        self.inner.close()

    def warm_up(self) -> None:
        """The inner evaluator's warm-up (:meth:`UCIServer.warm_up` at ``isready``): without this
        pass-through the wrapped network was never warmed, and a GUI's first ``go`` paid its load."""
        warm = getattr(self.inner, "warm_up", None)
        if callable(warm):
            warm()


def _less_time(limits: Limits, spent: float, turn: int) -> Limits:
    """``limits`` less the seconds ``spent`` since ``go`` arrived (building the engine for new options,
    a network's first load): the answer is due within the movetime and the clock the GUI counts."""
    if spent <= 0.0:
        return limits
    changes: dict[str, float] = {}
    if limits.movetime is not None:
        changes["movetime"] = max(0.001, limits.movetime - spent)
    own = "wtime" if turn == 0 else "btime"
    if getattr(limits, own) is not None:
        changes[own] = max(0.001, float(getattr(limits, own)) - spent)
    return dataclasses.replace(limits, **changes) if changes else limits  # type: ignore[arg-type]


def _effective(spec: EngineSpec) -> dict[str, str]:
    """:func:`engines.registry.effective_values` of ``spec``, whose values parse ({} where it has none)."""
    try:
        return {k: v for k, v in registry.effective_values(spec).items() if v != "none"}
    except (EngineError, ValueError):
        return {}


def serve(spec: EngineSpec, inp: TextIO, out: TextIO, variant: str = CHESS.name) -> None:
    """Run a UCI session for ``spec`` (an in-process engine) until ``quit`` or end of input."""
    from engines import factory, registry  # deferred: loads chess.engine

    infos = registry.option_infos(spec)

    def make(s: EngineSpec, v: str, evaluator: object | None) -> InProcessEngine:
        ev = evaluator if isinstance(evaluator, Evaluator) else Responsive(registry.evaluator_for(s, v))
        engine = factory.create(s, v, evaluator=ev)
        assert isinstance(engine, InProcessEngine)
        return engine

    server = UCIServer(spec, out, make, infos, variant=variant, variants=registry.variants_of(spec))
    server.set_engine(make(spec, variant, None))  # a bad spec fails here, before any output
    server.preload()
    server.run(iter(inp.readline, ""))
