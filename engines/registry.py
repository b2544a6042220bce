"""The engine registry: names and spec strings to :class:`EngineSpec`, and specs to engines.

Grammar of a spec string (values cannot contain ``,``)::

    spec    := head [":" key "=" value ("," key "=" value)*]
    head    := BUILTIN_NAME | EVALUATOR "+" SEARCH | PROGRAM "+" ("uci" | "xboard")

Examples: ``material-ab``, ``rise-mcts:nodes=400`` (a built-in with overrides),
``rise+mcts:nodes=800,qvalue=off``, ``stockfish:elo=1500``, ``/opt/lc0+uci:threads=2``.

Built-in specs are data (``engines/builtin.toml``).  Evaluators and searches are looked up lazily
(:data:`EVALUATORS`, :data:`SEARCHES`: module and class names), so a missing or broken module is an
:class:`EngineError` naming it when an engine is created, never an ImportError at import time.
Option names of in-process engines are checked against :data:`engines.ours.ENGINE_OPTIONS` and the
fields of the search's config dataclass (see :mod:`engines.ours`); those of external engines against
:data:`engines.external.EXTERNAL_OPTIONS`, or, for any other name, against the options the program
itself announces when it starts.
"""
from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import board
from engines.base import Engine, EngineError, EngineSpec
from evaluators.base import Evaluator

BUILTIN_FILE = Path(__file__).with_name("builtin.toml")
PROTOCOLS = ("uci", "xboard")


@dataclass(frozen=True)
class EvaluatorEntry:
    """How to make an evaluator: ``module.cls()`` or ``module.cls.load(path=..., threads=...)``."""

    module: str
    cls: str
    loads_weights: bool


@dataclass(frozen=True)
class SearchEntry:
    """How to make a search: ``module.cls(evaluator, config[, rng])`` with ``module.config``."""

    module: str
    cls: str
    config: str
    takes_rng: bool


EVALUATORS: dict[str, EvaluatorEntry] = {
    "classical": EvaluatorEntry("evaluators.classical", "ClassicalEvaluator", False),
    "rise": EvaluatorEntry("evaluators.rise", "RiseEvaluator", True),
    "sixtyfour": EvaluatorEntry("evaluators.sixtyfour", "SixtyFourEvaluator", True),
    "deepchess": EvaluatorEntry("evaluators.deepchess", "DeepChessEvaluator", True),
}
SEARCHES: dict[str, SearchEntry] = {
    "mcts": SearchEntry("search.mcts", "MCTS", "MCTSConfig", True),
    "alphabeta": SearchEntry("search.alphabeta", "AlphaBeta", "ABConfig", False),
    "comparator": SearchEntry("search.comparator", "ComparatorAlphaBeta", "ComparatorConfig", False),
}
ALIASES: dict[str, str] = {"material": "classical", "ab": "alphabeta"}


@dataclass(frozen=True)
class BuiltinInfo:
    spec: EngineSpec
    variants: tuple[str, ...]
    description: str


def _load_builtins() -> dict[str, BuiltinInfo]:
    with BUILTIN_FILE.open("rb") as f:
        data = tomllib.load(f)
    out: dict[str, BuiltinInfo] = {}
    for name, entry in data.get("engines", {}).items():
        options = {str(k): _toml_text(v) for k, v in entry.get("options", {}).items()}
        spec = EngineSpec(name, str(entry["evaluator"]), str(entry["search"]), options)
        out[name] = BuiltinInfo(spec, tuple(entry.get("variants", board.VARIANTS)), str(entry.get("description", "")))
    return out


def _toml_text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_BUILTINS: dict[str, BuiltinInfo] | None = None


def builtins() -> dict[str, BuiltinInfo]:
    """Built-in engines by name, in file order."""
    global _BUILTINS
    if _BUILTINS is None:
        _BUILTINS = _load_builtins()
    return _BUILTINS


def list_engines() -> list[EngineSpec]:
    """Specs of the built-in engines (copies: callers may change them)."""
    return [_copy(b.spec) for b in builtins().values()]


def _copy(spec: EngineSpec) -> EngineSpec:
    return EngineSpec(spec.name, spec.evaluator, spec.search, dict(spec.options))


def default_variant(spec: EngineSpec) -> str:
    """The first variant a built-in engine plays (chess for other specs)."""
    info = builtins().get(spec.name.partition(":")[0])
    return info.variants[0] if info and info.variants else "chess"


def is_external(spec: EngineSpec) -> bool:
    return spec.search in PROTOCOLS


# ---- resolving ------------------------------------------------------------------------------------

def _split(text: str) -> tuple[str, dict[str, str]]:
    head, sep, rest = text.strip().partition(":")
    head = head.strip()
    if not head:
        raise EngineError(f"empty engine name in {text!r}; known: {', '.join(builtins())}")
    options: dict[str, str] = {}
    if sep and rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise EngineError(f"bad option {item.strip()!r} in {text!r}: expected key=value")
            options[key.strip()] = value.strip()
    return head, options


def resolve(name_or_spec: str) -> EngineSpec:
    """The :class:`EngineSpec` for a built-in name or a spec string (see the module docstring)."""
    head, overrides = _split(name_or_spec)
    known = builtins()
    if head in known:
        base = _copy(known[head].spec)
    elif "+" in head:
        ev, _, se = head.rpartition("+")
        ev, se = ev.strip(), se.strip().lower()
        se = ALIASES.get(se, se)
        if se in PROTOCOLS:
            base = EngineSpec(head, ev, se, {})
        else:
            ev = ALIASES.get(ev.lower(), ev.lower())
            if ev not in EVALUATORS:
                raise EngineError(f"unknown evaluator {ev!r}; known: {', '.join(EVALUATORS)}")
            if se not in SEARCHES:
                raise EngineError(f"unknown search {se!r}; known: {', '.join(SEARCHES)}, {', '.join(PROTOCOLS)}")
            base = EngineSpec(f"{ev}+{se}", ev, se, {})
    else:
        raise EngineError(f"unknown engine {head!r}; known: {', '.join(known)} "
                          f"(or EVALUATOR+SEARCH with evaluators {', '.join(EVALUATORS)} "
                          f"and searches {', '.join(SEARCHES)}, or PROGRAM+uci / PROGRAM+xboard)")
    canonical = check_options(base, overrides)
    base.options.update(canonical)
    if canonical:
        opts = ",".join(f"{k}={v}" for k, v in canonical.items())
        base.name = f"{base.name}:{opts}"
    return base


def check_options(spec: EngineSpec, options: dict[str, str]) -> dict[str, str]:
    """``options`` with canonical names and values for ``spec``; EngineError for unknown/bad ones.

    For an in-process engine whose search module cannot be imported yet, config options cannot
    be checked here; :func:`create` reports the missing module.
    """
    if not options:
        return {}
    if is_external(spec):
        from engines.external import check_external_options

        return check_external_options(options)
    from engines.ours import ENGINE_OPTIONS, config_options, find_option

    infos = list(ENGINE_OPTIONS)
    try:
        infos += config_options(search_config_class(spec.search))
    except EngineError:
        engine_keys = {o.name for o in ENGINE_OPTIONS}
        out: dict[str, str] = {}
        for k, v in options.items():
            try:
                o = find_option(ENGINE_OPTIONS, k, prefix=False)
            except EngineError:
                out[k] = v  # checked by create() once the config class exists
                continue
            out[o.name] = o.check(v) if o.name in engine_keys else v
        return out
    return {(o := find_option(infos, k)).name: o.check(v) for k, v in options.items()}


# ---- lazy lookups -----------------------------------------------------------------------------------

def _import(module: str, attr: str, what: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise EngineError(f"{what} is not available: cannot import {module} ({e})") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise EngineError(f"{what} is not available: {module} has no {attr}") from None


def search_config_class(search: str) -> type:
    entry = SEARCHES.get(search)
    if entry is None:
        raise EngineError(f"unknown search {search!r}; known: {', '.join(SEARCHES)}")
    cls: type = _import(entry.module, entry.config, f"search {search!r}")
    return cls


def load_evaluator(name: str, weights: str | None = None, threads: int = 1, inference: str | None = None) -> Evaluator:
    """A fresh evaluator by registry name (share one between engines to pool their leaves);
    ``inference`` (``frozen``/``eager``, None: the evaluator's default) applies to networks only."""
    entry = EVALUATORS.get(ALIASES.get(name, name))
    if entry is None:
        raise EngineError(f"unknown evaluator {name!r}; known: {', '.join(EVALUATORS)}")
    cls = _import(entry.module, entry.cls, f"evaluator {name!r}")
    try:
        if entry.loads_weights:
            ev: Evaluator = (cls.load(path=weights, threads=threads) if inference is None
                             else cls.load(path=weights, threads=threads, inference=inference))
        else:
            if weights is not None:
                raise EngineError(f"evaluator {name!r} takes no weights")
            ev = cls()
    except EngineError:
        raise
    except (ValueError, OSError) as e:  # EvaluatorError, missing weights file
        raise EngineError(f"cannot load evaluator {name!r}: {e}") from None
    return ev


def evaluator_for(spec: EngineSpec) -> Evaluator:
    """A fresh evaluator for an in-process spec (its ``weights``, ``threads`` and ``inference``
    options applied)."""
    return load_evaluator(spec.evaluator, *evaluator_settings(spec))


def evaluator_settings(spec: EngineSpec) -> tuple[str | None, int, str | None]:
    """(weights, threads, inference) of an in-process spec: what its evaluator is loaded with."""
    from engines import ours

    weights: str | None = None
    threads = 1
    inference: str | None = None
    for key, text in spec.options.items():
        try:
            o = ours.find_option(ours.ENGINE_OPTIONS, key, prefix=False)
        except EngineError:
            continue
        if o.name == "weights":
            w = o.parse(o.check(text))
            weights = w if isinstance(w, str) else None
        elif o.name == "threads":
            threads = int(o.check(text))
        elif o.name == "inference":
            inference = o.check(text)
    return weights, threads, inference


def spec_limits(name_or_spec: str) -> dict[str, Any]:
    """The limits written in an engine spec (``material-mcts:nodes=32``): ``nodes``, ``depth`` and
    ``movetime`` as numbers, None where the spec sets none (EngineError for a bad spec)."""
    from engines.ours import find_option

    spec = resolve(name_or_spec)
    infos: tuple[Any, ...]
    if is_external(spec):
        from engines.external import EXTERNAL_OPTIONS as infos
    else:
        from engines.ours import ENGINE_OPTIONS as infos
    out: dict[str, Any] = {"nodes": None, "depth": None, "movetime": None}
    for key, text in spec.options.items():
        try:
            o = find_option(infos, key, prefix=False)
        except EngineError:
            continue
        if o.name in out:
            out[o.name] = o.parse(text)
    return out


def option_infos(spec: EngineSpec) -> list[Any]:
    """Every option an in-process engine takes (engine options, then config fields)."""
    from engines.ours import ENGINE_OPTIONS, config_options

    if is_external(spec):
        raise EngineError(f"{spec.name} is an external engine")
    return list(ENGINE_OPTIONS) + config_options(search_config_class(spec.search))


def effective_values(spec: EngineSpec) -> dict[str, str]:
    """Every option of an in-process engine with the value it will run with (preset applied)."""
    from engines import ours

    infos = option_infos(spec)
    engine_names = {o.name for o in ours.ENGINE_OPTIONS}
    settings: dict[str, str] = {}
    values = {o.name: o.format(o.default) for o in infos}
    for key, text in spec.options.items():
        o = ours.find_option(infos, key)
        values[o.name] = o.check(text)
        if o.name not in engine_names:
            settings[o.name] = values[o.name]
    preset = ours.ENGINE_OPTIONS[-1].parse(values["preset"])
    config = ours.build_config(search_config_class(spec.search), settings, preset if isinstance(preset, str) else None)
    for o in infos:
        if o.name in engine_names:
            continue
        outer, dot, inner = o.name.partition(".")
        values[o.name] = o.format(getattr(getattr(config, outer), inner) if dot else getattr(config, o.name))
    return values


# ---- creating ---------------------------------------------------------------------------------------

def create(spec: str | EngineSpec, variant: str, *, evaluator: Evaluator | None = None) -> Engine:
    """A ready engine for ``variant``.  ``evaluator`` (in-process engines only) shares an evaluator
    already loaded (the caller then owns it: closing the engine closes it too)."""
    if isinstance(spec, str):
        spec = resolve(spec)
    if variant not in board.VARIANTS:
        raise EngineError(f"unknown variant {variant!r}; known: {', '.join(board.VARIANTS)}")
    if is_external(spec):
        from engines.external import ExternalEngine

        return ExternalEngine(spec, variant)
    return _create_ours(spec, variant, evaluator)


def _create_ours(spec: EngineSpec, variant: str, evaluator: Evaluator | None) -> Engine:
    from engines import ours

    if spec.search not in SEARCHES:
        raise EngineError(f"unknown search {spec.search!r}; known: {', '.join(SEARCHES)}")
    entry = SEARCHES[spec.search]
    config_cls = search_config_class(spec.search)
    search_cls = _import(entry.module, entry.cls, f"search {spec.search!r}")
    infos = list(ours.ENGINE_OPTIONS) + ours.config_options(config_cls)
    engine_opts: dict[str, object] = {o.name: o.default for o in ours.ENGINE_OPTIONS}
    config_settings: dict[str, str] = {}
    engine_names = {o.name for o in ours.ENGINE_OPTIONS}
    for key, text in spec.options.items():
        o = ours.find_option(infos, key)
        o.check(text)
        if o.name in engine_names:
            engine_opts[o.name] = o.parse(text)
        else:
            config_settings[o.name] = text
    preset = engine_opts["preset"]
    config = ours.build_config(config_cls, config_settings, preset if isinstance(preset, str) else None)
    if evaluator is None:
        evaluator = evaluator_for(spec)
    if variant not in evaluator.variants:
        raise EngineError(f"evaluator {spec.evaluator!r} does not play {variant} "
                          f"(it plays {', '.join(sorted(evaluator.variants))})")
    seed = int(str(engine_opts["seed"]))
    ev = evaluator

    def make_search() -> Any:
        try:
            if entry.takes_rng:
                return search_cls(ev, config, ours.make_rng(seed))
            return search_cls(ev, config)
        except EngineError:
            raise
        except ValueError as e:  # EvaluatorError: the evaluator cannot serve this search
            raise EngineError(f"cannot pair {spec.evaluator} with {spec.search}: {e}") from None

    def opt(name: str) -> Any:
        return engine_opts[name]

    return ours.OurEngine(spec, variant, evaluator, make_search, nodes=opt("nodes"), depth=opt("depth"),
                          movetime=opt("movetime"))


def describe(spec: EngineSpec) -> dict[str, str]:
    """One row of ``searchbench engines``: name, evaluator, search, variants, defaults, status."""
    info = builtins().get(spec.name.partition(":")[0])
    variants = ",".join(info.variants) if info else ",".join(board.VARIANTS)
    return {
        "name": spec.name,
        "evaluator": spec.evaluator,
        "search": spec.search,
        "variants": variants,
        "defaults": ",".join(f"{k}={v}" for k, v in spec.options.items()) or "-",
        "status": availability(spec),
        "description": info.description if info else "",
    }


def availability(spec: EngineSpec) -> str:
    """``ok`` or why the engine cannot be created here (checked without loading anything big)."""
    import importlib.util

    if is_external(spec):
        from engines.external import find_program

        try:
            find_program(spec.evaluator)
        except EngineError as e:
            return str(e)
        return "ok"
    for module in (EVALUATORS[ALIASES.get(spec.evaluator, spec.evaluator)].module, SEARCHES[spec.search].module):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            return f"missing module {module}"
    return "ok"

