"""Our engines: an evaluator + a search + settings, behind :class:`engines.base.InProcessEngine`.

Settings come from the engine spec as text (``nodes=800,q_value_selection=off``) and reach two places:

*engine options* (:data:`ENGINE_OPTIONS`)
    ``nodes``, ``evals`` (evaluator calls), ``depth``, ``movetime`` (seconds) fill the fields of the caller's :class:`Limits` that
    the caller left unset (a caller's ``Limits(nodes=400)`` wins over a spec's ``nodes=800``; a
    spec's ``nodes`` also caps a clock-limited search); ``seed`` seeds the search's random state;
    ``threads``, ``weights``, ``inference`` (``frozen`` or ``eager``, see :mod:`evaluators.neural`) and
    ``device`` (``auto``, ``cpu``, ``cuda``, ``cuda:N``) go to the evaluator's loader (evaluators without a network ignore them).
*config options*
    every field of the search's config dataclass (``MCTSConfig``, ``ABConfig``,
    ``ComparatorConfig``), found generically by :func:`config_options` from the field's name and
    type, so that a new switch in a config is at once a spec option and a UCI ``setoption``.

Option names match case-insensitively with ``_``, ``-`` and spaces ignored, and a unique prefix of a
name is accepted (``qvalue`` finds ``q_value_selection`` if no other option starts that way).

Hard stop: besides the search's own time management, :class:`OurEngine` stops a search that runs
past ``movetime`` or past half of its own clock (``movestogo == 1``: all of it but 50 ms), so a
search that ignores the clock cannot lose on time by a wide margin.

Failures of the search or the evaluator during a move (an exception, an illegal best move) do not
propagate: :meth:`OurEngine.finish` returns ``MoveResult(forfeit=reason)`` as the engine interface
requires, and the exception is logged.
"""
from __future__ import annotations

import dataclasses
import enum
import logging
import math
import random
import sys
import time
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from board import Position, move_to_uci
from engines.base import EngineError, EngineSpec, InProcessEngine, MoveResult
from evaluators.base import Evaluation, Evaluator, Leaf
from search.base import Limits, Search, SearchResult

log = logging.getLogger(__name__)

_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})
_NONE = frozenset({"none", "null", ""})

#: seconds kept back from the clock by the hard stop
CLOCK_MARGIN = 0.05


def norm_key(name: str) -> str:
    """Option names compare case-insensitively, ignoring ``_``, ``-`` and spaces."""
    return name.lower().replace("_", "").replace("-", "").replace(" ", "")


@dataclass(frozen=True)
class OptionInfo:
    """One settable option: its name, a parser from text, its default and its UCI form.

    ``kind`` is the UCI option type: ``check`` (bool), ``spin`` (int), ``combo`` (choices),
    ``string`` (float, text, optional values) or ``button`` (an action, no value).
    """

    name: str
    kind: str
    default: object
    parse: Callable[[str], object]
    choices: tuple[str, ...] = ()
    help: str = ""
    minimum: int = -(10**9)
    maximum: int = 10**9

    def format(self, value: object) -> str:
        """Canonical text of a value (what specs record)."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "none"
        if isinstance(value, enum.Enum):
            return str(value.name)
        return str(value)

    def check(self, text: str) -> str:
        """Parse ``text`` and return its canonical form; :class:`EngineError` if it does not parse."""
        try:
            value = self.parse(text)
        except (ValueError, TypeError) as e:
            raise EngineError(f"bad value {text!r} for option {self.name!r}: {e}") from None
        if isinstance(value, int) and not isinstance(value, bool) and not self.minimum <= value <= self.maximum:
            raise EngineError(f"option {self.name!r} must be in [{self.minimum}, {self.maximum}], got {value}")
        return self.format(value)

    def uci_line(self) -> str:
        """The ``option name ... type ...`` line announced after ``uci``."""
        d = self.format(self.default)
        if self.kind == "button":
            return f"option name {self.name} type button"
        if self.kind == "spin" and self.default is None:  # an unset optional number: text
            return f"option name {self.name} type string default <empty>"
        if self.kind == "check":
            return f"option name {self.name} type check default {d}"
        if self.kind == "spin":
            return f"option name {self.name} type spin default {d} min {self.minimum} max {self.maximum}"
        if self.kind == "combo":
            return f"option name {self.name} type combo default {d} " + " ".join(f"var {c}" for c in self.choices)
        return f"option name {self.name} type string default {d if d != '' else '<empty>'}"


# ---- parsing text into typed values -------------------------------------------------------------

def parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise ValueError("expected on/off, true/false, yes/no or 1/0")


def parse_int(text: str) -> int:
    return int(text.strip())


def parse_float(text: str) -> float:
    v = float(text.strip())
    if not math.isfinite(v):
        raise ValueError("not a finite number")
    return v


def parse_str(text: str) -> str:
    return text.strip()


def parse_device(text: str) -> str:
    """A device name (auto, cpu, cuda, cuda:N), checked for form only: whether the device exists is
    the evaluator's question when it loads (one line if not)."""
    t = text.strip().lower()
    if t in ("auto", "cpu", "cuda") or (t.startswith("cuda:") and t[5:].isdigit()):
        return t
    raise ValueError("expected auto, cpu, cuda or cuda:N")


def _optional(inner: Callable[[str], object]) -> Callable[[str], object]:
    def parse(text: str) -> object:
        return None if text.strip().lower() in _NONE else inner(text)
    return parse


def _choice(choices: Sequence[object]) -> Callable[[str], object]:
    def parse(text: str) -> object:
        t = text.strip()
        for c in choices:
            name = c.name if isinstance(c, enum.Enum) else str(c)
            value = str(c.value) if isinstance(c, enum.Enum) else name
            if t.lower() in (name.lower(), value.lower()):
                return c
        raise ValueError("expected one of " + ", ".join(c.name if isinstance(c, enum.Enum) else str(c) for c in choices))
    return parse


_SIMPLE: dict[str, tuple[str, Callable[[str], object]]] = {
    "bool": ("check", parse_bool),
    "int": ("spin", parse_int),
    "float": ("string", parse_float),
    "str": ("string", parse_str),
}


def _type_of(cls: type, f: dataclasses.Field[Any]) -> object:
    """The field's type as an object when it can be resolved, else its annotation text."""
    try:
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        if f.name in hints:
            return hints[f.name]
    except Exception:  # noqa: BLE001 - unresolvable annotations fall back to text
        pass
    return f.type


def _kind_and_parser(tp: object, default: object) -> tuple[str, Callable[[str], object], tuple[str, ...]]:
    """UCI kind, parser and choices for a field type (object or annotation text)."""
    if isinstance(tp, str):
        text = tp.replace(" ", "")
        optional = False
        if text.startswith("Optional[") and text.endswith("]"):
            text, optional = text[9:-1], True
        parts = [p for p in text.split("|") if p != "None"]
        optional = optional or len(parts) < len(text.split("|"))
        if len(parts) == 1 and parts[0] in _SIMPLE:
            kind, parse = _SIMPLE[parts[0]]
            return ("string", _optional(parse), ()) if optional else (kind, parse, ())
        tp = type(default) if default is not None else str
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        kind, parse, choices = _kind_and_parser(args[0] if len(args) == 1 else str, default)
        return "string", _optional(parse), choices
    if origin is typing.Literal:
        values = typing.get_args(tp)
        return "combo", _choice(values), tuple(str(v) for v in values)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "combo", _choice(list(tp)), tuple(m.name for m in tp)
    for simple in (bool, int, float, str):  # bool before int: bool is an int
        if tp is simple:
            return _SIMPLE[simple.__name__][0], _SIMPLE[simple.__name__][1], ()
    raise EngineError(f"config field type {tp!r} cannot be set from text")


def config_options(config_cls: type, prefix: str = "") -> list[OptionInfo]:
    """An :class:`OptionInfo` per settable field of a config dataclass (in field order).

    A field holding a nested config dataclass (``MCTSConfig.time: TimeConfig``) contributes its own
    fields under dotted names (``time.move_overhead``)."""
    if not dataclasses.is_dataclass(config_cls):
        raise EngineError(f"{config_cls.__name__} is not a dataclass")
    out: list[OptionInfo] = []
    defaults = config_cls()
    # the bounds of integer fields, kept next to the class (the module's SPIN_RANGES, which validate checks)
    ranges: dict[str, tuple[int, int]] = getattr(sys.modules[config_cls.__module__], "SPIN_RANGES", {})
    for f in dataclasses.fields(config_cls):
        if not f.init or f.name.startswith("_"):
            continue
        default = getattr(defaults, f.name)
        if not prefix and dataclasses.is_dataclass(default) and not isinstance(default, type):
            out += config_options(type(default), prefix + f.name + ".")
            continue
        try:
            kind, parse, choices = _kind_and_parser(_type_of(config_cls, f), default)
        except EngineError:
            continue  # a field that text cannot express (a table, a callable) is not an option
        help_text = str(f.metadata.get("help", "")) if f.metadata else ""
        lo, hi = ranges.get(f.name, (OptionInfo.minimum, OptionInfo.maximum))
        out.append(OptionInfo(prefix + f.name, kind, default, parse, choices, help_text, minimum=lo, maximum=hi))
    return out


def presets(config_cls: type) -> dict[str, Callable[[], object]]:
    """Named configurations: the config's class methods that take no argument and return a config
    (``MCTSConfig.vanilla()``, ``MCTSConfig.sixtyfour()``); chosen with the ``preset`` option."""
    out: dict[str, Callable[[], object]] = {}
    fields = {f.name for f in dataclasses.fields(config_cls)} if dataclasses.is_dataclass(config_cls) else set()
    for name in dir(config_cls):
        if name.startswith("_") or name in fields or name == "validate":
            continue
        attr = getattr(config_cls, name, None)
        if callable(attr) and getattr(attr, "__self__", None) is config_cls:
            out[name] = attr
    return out


def build_config(config_cls: type, settings: dict[str, str], preset: str | None = None) -> object:
    """An instance of ``config_cls`` (or of its ``preset``) with ``settings`` (canonical option
    name -> text, dotted names for nested configs) applied, then validated."""
    infos = {o.name: o for o in config_options(config_cls)}
    if preset is not None:
        named = presets(config_cls)
        if preset not in named:
            raise EngineError(f"unknown preset {preset!r} for {config_cls.__name__}; known: "
                              f"{', '.join(named) or 'none'}")
        config = named[preset]()
    else:
        config = config_cls()
    try:
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, object]] = {}
        for name, text in settings.items():
            value = infos[name].parse(text)
            outer, dot, inner = name.partition(".")
            if dot:
                nested.setdefault(outer, {})[inner] = value
            else:
                top[name] = value
        for outer, values in nested.items():
            top[outer] = dataclasses.replace(getattr(config, outer), **values)
        config = dataclasses.replace(config, **top)  # type: ignore[type-var]
        validate = getattr(config, "validate", None)
        if callable(validate):
            validate()
    except (TypeError, ValueError, AttributeError) as e:
        raise EngineError(f"bad {config_cls.__name__} settings: {e}") from None
    return config


#: options every in-process engine understands (the rest are fields of the search's config)
ENGINE_OPTIONS: tuple[OptionInfo, ...] = (
    OptionInfo("nodes", "spin", None, _optional(parse_int), help="default node limit (unset fields of the caller's limits)",
               minimum=0),
    OptionInfo("depth", "spin", None, _optional(parse_int), help="default depth limit", minimum=0, maximum=1000),
    OptionInfo("evals", "spin", None, _optional(parse_int), help="default evaluator-call limit", minimum=0),
    OptionInfo("playouts", "spin", None, _optional(parse_int),
               help="default limit on new MCTS simulations a move (lc0's playouts: reused visits not counted)",
               minimum=0),
    OptionInfo("movetime", "string", None, _optional(parse_float), help="default seconds per move"),
    OptionInfo("threads", "spin", 1, parse_int, help="evaluator threads (neural evaluators)", minimum=1, maximum=256),
    OptionInfo("weights", "string", None, _optional(parse_str), help="weights file for the evaluator"),
    OptionInfo("inference", "combo", "frozen", _choice(("frozen", "eager")), choices=("frozen", "eager"),
               help="how a network runs: frozen TorchScript (default, faster) or eager (evaluators.neural)"),
    OptionInfo("device", "string", "auto", parse_device,
               help="where a network runs: auto (CUDA when there is one), cpu, cuda, cuda:N"),
    OptionInfo("seed", "spin", 0, parse_int, help="seed of the search's random state", minimum=0, maximum=2**31 - 1),
    OptionInfo("preset", "string", None, _optional(parse_str), help="a named config of the search (e.g. vanilla)"),
)


def find_option(options: Sequence[OptionInfo], key: str, prefix: bool = True) -> OptionInfo:
    """The option named ``key`` (normalised, exact match or a unique prefix); EngineError if none."""
    k = norm_key(key)
    exact = [o for o in options if norm_key(o.name) == k]
    if exact:
        return exact[0]
    prefixed = [o for o in options if prefix and k and norm_key(o.name).startswith(k)]
    if len(prefixed) == 1:
        return prefixed[0]
    known = ", ".join(o.name for o in options)
    if len(prefixed) > 1:
        raise EngineError(f"option {key!r} is ambiguous ({', '.join(o.name for o in prefixed)})")
    raise EngineError(f"unknown option {key!r}; known: {known}")


# ---- the engine ---------------------------------------------------------------------------------

def merge_limits(limits: Limits, nodes: int | None, depth: int | None, movetime: float | None,
                 evals: int | None = None, playouts: int | None = None) -> Limits:
    """``limits`` with its unset node, evaluator-call, playout, depth and movetime fields filled from
    the spec's defaults."""
    return dataclasses.replace(
        limits,
        nodes=limits.nodes if limits.nodes is not None else (nodes or None),
        playouts=limits.playouts if limits.playouts is not None else (playouts or None),
        evals=limits.evals if limits.evals is not None else (evals or None),
        depth=limits.depth if limits.depth is not None else (depth or None),
        movetime=limits.movetime if limits.movetime is not None else (movetime or None),
    )


def hard_stop_after(limits: Limits, turn: int) -> float | None:
    """Seconds after which a search is stopped whatever it says (None: never, e.g. infinite)."""
    if limits.infinite:
        return None
    caps: list[float] = []
    if limits.movetime is not None:
        caps.append(max(0.0, limits.movetime))
    own = limits.wtime if turn == 0 else limits.btime
    if own is not None:
        own = max(0.0, own)
        caps.append(max(0.01, own - CLOCK_MARGIN) if limits.movestogo == 1 else max(0.01, own / 2))
    return min(caps) if caps else None


class OurEngine(InProcessEngine):
    """An evaluator + a search; ``make_search()`` builds a fresh search (new game = new search)."""

    def __init__(self, spec: EngineSpec, variant: str, evaluator: Evaluator,
                 make_search: Callable[[], Search], *, nodes: int | None = None,
                 depth: int | None = None, movetime: float | None = None, evals: int | None = None,
                 playouts: int | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.variant = variant
        self.variants = frozenset({variant})
        self.evaluator = evaluator
        self._make_search = make_search
        self.search = make_search()
        self.default_nodes, self.default_depth, self.default_movetime = nodes, depth, movetime
        self.default_evals = evals
        self.default_playouts = playouts
        self._pos: Position | None = None
        self._legal: list[int] = []
        self._error: str | None = None
        self._t0 = 0.0
        self._deadline: float | None = None
        self._stopped = False
        self._steps = 0

    def new_game(self, seed: int | None = None) -> None:
        reset = getattr(self.search, "new_game", None)
        if callable(reset):
            reset()
        else:
            self.search = self._make_search()
        rng = getattr(self.search, "rng", None)
        if seed is not None and isinstance(rng, random.Random):
            rng.seed(game_seed(int(self.spec.settings.get("seed", 0) or 0), seed))

    # -- ask/tell steps for the harness --
    def start(self, pos: Position, limits: Limits) -> None:
        if pos.variant != self.variant:
            raise EngineError(f"engine {self.name} was created for {self.variant}, not {pos.variant}")
        self._pos = pos.copy()
        self._legal = self._pos.legal_moves()
        if not self._legal:
            raise EngineError(f"no legal moves in {pos.fen()}")
        lim = merge_limits(limits, self.default_nodes, self.default_depth, self.default_movetime, self.default_evals,
                           self.default_playouts)
        self._error = None
        self._stopped = False
        self._steps = 0
        self._t0 = time.perf_counter()
        cap = hard_stop_after(lim, self._pos.turn)
        self._deadline = None if cap is None else self._t0 + cap
        try:
            self.search.start(self._pos, lim)
        except Exception as e:  # noqa: BLE001 - a failing search is a forfeit, not a crash
            self._fail(e)

    def _fail(self, e: BaseException) -> None:
        self._error = f"crash: {type(e).__name__}: {e}".splitlines()[0]
        # One line (the game records the forfeit); the traceback only with debug logging on.
        log.error("engine %s failed: %s", self.name, self._error)
        log.debug("engine %s traceback", self.name, exc_info=e)

    def ask(self) -> list[Leaf]:
        if self._error is not None:
            return []
        self._steps += 1
        try:
            return self.search.ask()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return []

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        if self._error is not None:
            return
        try:
            self.search.tell(evaluations)
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def step(self) -> None:
        """One ask, evaluate, tell (the single-game loop; evaluator failures become forfeits)."""
        leaves = self.ask()
        if leaves:
            try:
                answers = self.evaluator.evaluate(leaves)
            except Exception as e:  # noqa: BLE001
                self._fail(e)
                return
            self.tell(answers)

    def done(self) -> bool:
        if self._error is not None:
            return True
        if self._steps > 0:  # the search's result is valid after one step
            if self._stopped:
                return True
            if self._deadline is not None and time.perf_counter() >= self._deadline:
                self.stop()
                return True
        try:
            return self.search.done()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return True

    def stop(self) -> None:
        """Finish as soon as possible (UCI ``stop``); the move is then the best found so far.  Before
        the first step the search is not told: it takes that step (an MCTS root must be evaluated
        before it has a move), then :meth:`done` ends it."""
        self._stopped = True
        if self._steps == 0:
            return
        try:
            self.search.stop()
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def progress(self) -> SearchResult | None:
        """The search's statistics so far (None before the first step, or if the search cannot say;
        after a failure: what it had found before)."""
        try:
            return self.search.result()
        except Exception:  # noqa: BLE001 - not ready yet
            return None

    def finish(self) -> MoveResult:
        elapsed = time.perf_counter() - self._t0
        if self._error is not None:
            return MoveResult(0, forfeit=self._error, time=elapsed)
        try:
            info = self.search.result()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return MoveResult(0, forfeit=self._error, time=elapsed)
        if info.best_move not in self._legal:
            return MoveResult(0, info=info, forfeit=f"illegal move {move_to_uci(info.best_move)}", time=elapsed)
        return MoveResult(info.best_move, info=info, time=elapsed)

    def close(self) -> None:
        self.evaluator.close()


def game_seed(engine_seed: int, seed: int) -> int:
    """The random state's seed for one game: the engine's own ``seed`` option and the game's seed
    (two engines with different seeds differ in the same game; the same engine replays a game)."""
    return (engine_seed * 0x9E3779B97F4A7C15 + seed) % (1 << 63)


def make_rng(seed: int) -> random.Random:
    """The injected random state of a search (OpenSpiel style: never a module-level generator)."""
    return random.Random(seed)
