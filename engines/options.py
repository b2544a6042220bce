"""The option system: every setting of an engine as text (spec ``nodes=800,q_value_selection=off``,
UCI ``setoption``, config keys), parsed, validated and announced the same way everywhere.

*engine options* (:data:`ENGINE_OPTIONS`)
    ``nodes``, ``evals``, ``playouts``, ``depth``, ``movetime`` (default limits), ``seed``, the
    evaluator's loader settings ``threads``, ``weights``, ``inference``, ``device``, and the bughouse
    seats' clock share ``clock_moves`` and ``stall`` (a one-board engine refuses them).
*evaluator options*
    the constructor parameters an evaluator's registry entry declares
    (:attr:`engines.registry.EvaluatorEntry.options`, e.g. ``king_danger``), with that entry's defaults.
*config options*
    every field of a search's config dataclass (``MCTSConfig``, ``ABConfig``, ``ComparatorConfig``),
    found by :func:`config_options` from the field's name and type, with the integer bounds the
    config's module declares (``SPIN_RANGES``), so that a new switch in a config is at once a spec
    option and a UCI ``setoption``.

Option names match case-insensitively with ``_``, ``-`` and spaces ignored, and a unique prefix of a
name is accepted (``qvalue`` finds ``q_value_selection`` if no other option starts that way).
Used by :mod:`engines.ours`, :mod:`engines.external` (the external engines' options),
:mod:`engines.uci` and :mod:`engines.registry`.
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from engines.base import EngineError
from evaluators.base import INFERENCE_MODES
from search.base import changes, class_and_instance, with_settings

_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})
_NONE = frozenset({"none", "null", ""})


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


def optional(inner: Callable[[str], object]) -> Callable[[str], object]:
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
        nullable = False
        if text.startswith("Optional[") and text.endswith("]"):
            text, nullable = text[9:-1], True
        parts = [p for p in text.split("|") if p != "None"]
        nullable = nullable or len(parts) < len(text.split("|"))
        if len(parts) == 1 and parts[0] in _SIMPLE:
            kind, parse = _SIMPLE[parts[0]]
            return ("string", optional(parse), ()) if nullable else (kind, parse, ())
        tp = type(default) if default is not None else str
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        kind, parse, choices = _kind_and_parser(args[0] if len(args) == 1 else str, default)
        return "string", optional(parse), choices
    if origin is typing.Literal:
        values = typing.get_args(tp)
        return "combo", _choice(values), tuple(str(v) for v in values)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "combo", _choice(list(tp)), tuple(m.name for m in tp)
    for simple in (bool, int, float, str):  # bool before int: bool is an int
        if tp is simple:
            return _SIMPLE[simple.__name__][0], _SIMPLE[simple.__name__][1], ()
    raise EngineError(f"config field type {tp!r} cannot be set from text")


def config_options(config: object, prefix: str = "", outer_ranges: dict[str, tuple[int, int]] | None = None) -> list[OptionInfo]:
    """An :class:`OptionInfo` per settable field of a config dataclass (in field order), defaults from
    ``config`` (an instance: a game's config, :meth:`search.mcts_config.MCTSConfig.for_game`) or its
    class.

    A field holding a nested config dataclass (``MCTSConfig.time: TimeConfig``) contributes its own
    fields under dotted names (``time.move_overhead``)."""
    config_cls = config if isinstance(config, type) else type(config)
    if not dataclasses.is_dataclass(config_cls):
        raise EngineError(f"{config_cls.__name__} is not a dataclass")
    out: list[OptionInfo] = []
    defaults = class_and_instance(config)[1]
    # the bounds of integer fields, kept next to the class (the module's SPIN_RANGES, which validate checks)
    ranges: dict[str, tuple[int, int]] = {**getattr(sys.modules[config_cls.__module__], "SPIN_RANGES", {}),
                                          **(outer_ranges or {})}  # a nested config's: its module's and its owner's
    for f in dataclasses.fields(config_cls):
        if not f.init or f.name.startswith("_"):
            continue
        default = getattr(defaults, f.name)
        if f.metadata.get("own"):  # the parts' own settings (search.base.OWN): each group's fields by their names
            for group in default.values():
                out += config_options(group, prefix, ranges)
            continue
        if f.metadata.get("flat"):  # a group set by its fields' own names (search.base.FLAT)
            out += config_options(default, prefix, ranges)
            continue
        if not prefix and dataclasses.is_dataclass(default) and not isinstance(default, type):
            out += config_options(default, prefix + f.name + ".", ranges)
            continue
        try:
            kind, parse, choices = _kind_and_parser(_type_of(config_cls, f), default)
        except EngineError:
            continue  # a field that text cannot express (a table, a callable) is not an option
        help_text = str(f.metadata.get("help", "")) if f.metadata else ""
        lo, hi = ranges.get(f.name, (OptionInfo.minimum, OptionInfo.maximum))
        out.append(OptionInfo(prefix + f.name, kind, default, parse, choices, help_text, minimum=lo, maximum=hi))
    return out


def _needs_arguments(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` has a parameter without a default (``MCTSConfig.for_game(game)``: no preset)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def presets(config_cls: type) -> dict[str, Callable[[], object]]:
    """Named configurations: the config's class methods that take no argument and return a config
    (``MCTSConfig.vanilla()``, ``MCTSConfig.sixtyfour()``); chosen with the ``preset`` option."""
    out: dict[str, Callable[[], object]] = {}
    fields = {f.name for f in dataclasses.fields(config_cls)} if dataclasses.is_dataclass(config_cls) else set()
    for name in dir(config_cls):
        if name.startswith("_") or name in fields or name == "validate":
            continue
        attr = getattr(config_cls, name, None)
        if callable(attr) and getattr(attr, "__self__", None) is config_cls and not _needs_arguments(attr):
            out[name] = attr
    return out


def build_config(config: object, settings: dict[str, str], preset: str | None = None) -> object:
    """A config from ``config`` (an instance, or a class at its defaults) with ``preset`` (the settings
    it changes from its class's defaults) and then ``settings`` (canonical option name -> text,
    dotted names for nested configs) applied, then validated."""
    config_cls, base = class_and_instance(config)
    infos = {o.name: o for o in config_options(base)}
    named = presets(config_cls) if preset is not None else {}
    if preset is not None and preset not in named:
        raise EngineError(f"unknown preset {preset!r} for {config_cls.__name__}; known: {', '.join(named) or 'none'}")
    try:
        if preset is not None:
            base = with_settings(base, changes(named[preset]()))
        built = with_settings(base, {name: infos[name].parse(text) for name, text in settings.items()})
        validate = getattr(built, "validate", None)
        if callable(validate):
            validate()
    except (TypeError, ValueError, AttributeError) as e:
        raise EngineError(f"bad {config_cls.__name__} settings: {e}") from None
    return built


#: options every in-process engine understands (the rest are fields of the search's config)
ENGINE_OPTIONS: tuple[OptionInfo, ...] = (
    OptionInfo("nodes", "spin", None, optional(parse_int), help="default node limit (unset fields of the caller's limits)",
               minimum=0),
    OptionInfo("depth", "spin", None, optional(parse_int), help="default depth limit", minimum=0, maximum=1000),
    OptionInfo("evals", "spin", None, optional(parse_int), help="default evaluator-call limit", minimum=0),
    OptionInfo("playouts", "spin", None, optional(parse_int),
               help="default limit on new MCTS simulations a move (lc0's playouts: reused visits not counted)",
               minimum=0),
    OptionInfo("movetime", "string", None, optional(parse_float), help="default seconds per move"),
    OptionInfo("threads", "spin", 1, parse_int, help="evaluator threads (neural evaluators)", minimum=1, maximum=256),
    OptionInfo("weights", "string", None, optional(parse_str), help="weights file for the evaluator"),
    OptionInfo("inference", "combo", INFERENCE_MODES[0], _choice(INFERENCE_MODES), choices=INFERENCE_MODES,
               help="how a network runs: auto (int8 where its SPRT accepted it, else onnxruntime float32), onnxruntime, frozen TorchScript, eager torch, onnxruntime-int8, onnxruntime-int8-qat (evaluators.neural)"),
    OptionInfo("device", "string", "auto", parse_device,
               help="where a network runs: auto (CUDA when there is one), cpu, cuda, cuda:N"),
    OptionInfo("seed", "spin", 0, parse_int, help="seed of the search's random state", minimum=0, maximum=2**31 - 1),
    OptionInfo("preset", "string", None, optional(parse_str), help="a named config of the search (e.g. vanilla)"),
    OptionInfo("clock_moves", "spin", None, optional(parse_int), minimum=2, maximum=1000,
               help="bughouse seats only: a timed move takes the clock left / clock_moves + 0.7 increment "
                    "(unset: 30; engines.seats.allocate)"),
    OptionInfo("stall", "check", False, parse_bool,
               help="bughouse seats only: hold the move found while the partner's opponent is stuck on move and "
                    "would flag first (engines.seats.ClockWatch.stalls)"),
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


#: options the adapter itself understands; any other name must be an option the program announces
EXTERNAL_OPTIONS: tuple[OptionInfo, ...] = (
    OptionInfo("nodes", "spin", None, optional(parse_int), help="default node limit (UCI engines only)", minimum=1),
    OptionInfo("depth", "spin", None, optional(parse_int), help="default depth limit", minimum=1),
    OptionInfo("movetime", "string", None, optional(parse_float), help="default seconds per move"),
    OptionInfo("elo", "spin", None, optional(parse_int), help="UCI_LimitStrength + UCI_Elo"),
    OptionInfo("skill", "spin", None, optional(parse_int), help="Skill Level", minimum=-20, maximum=20),
    OptionInfo("threads", "spin", None, optional(parse_int), help="Threads", minimum=1, maximum=512),
    OptionInfo("hash", "spin", None, optional(parse_int), help="Hash (MB)", minimum=1, maximum=1 << 20),
    OptionInfo("timeout", "string", 30.0, parse_float,
               help="watchdog: seconds allowed beyond the time limit, or per move under node/depth limits"),
    OptionInfo("startup", "string", 10.0, parse_float, help="seconds allowed to start and configure"),
    OptionInfo("overrun", "string", 3.0, parse_float,
               help="forfeit a move that takes more than this many times its movetime (+0.5 s); 0: off"),
    OptionInfo("args", "string", "", parse_str, help="extra command-line arguments (space separated)"),
)
ADAPTER_KEYS = frozenset(o.name for o in EXTERNAL_OPTIONS)


def check_external_options(options: dict[str, str]) -> dict[str, str]:
    """Canonical names and values for the adapter's options; other names pass through unchanged
    (checked against the program's own options by :class:`ExternalEngine`)."""
    out: dict[str, str] = {}
    for key, text in options.items():
        try:
            o = find_option(EXTERNAL_OPTIONS, key, prefix=False)
        except EngineError:
            out[key] = text
            continue
        out[o.name] = o.check(text)
    return out
