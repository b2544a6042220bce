"""The engine registry: names and spec strings to :class:`EngineSpec`, with the
evaluators and searches they name; :mod:`engines.factory` makes engines of the specs, and
:mod:`engines.catalog` holds the built-in engines' table.

Grammar of a spec string (values cannot contain ``,``)::

    spec    := head [":" key "=" value ("," key "=" value)*]
    head    := BUILTIN_NAME | EVALUATOR "+" SEARCH | PROGRAM "+" ("uci" | "xboard")

Examples: ``material-ab``, ``rise-mcts:nodes=400`` (a built-in with overrides),
``rise+mcts:nodes=800,qvalue=off``, ``stockfish:elo=1500``, ``/opt/lc0+uci:threads=2``.

Built-in specs are data (``engines/builtin.toml``).  Evaluators and searches are looked up lazily
(:data:`EVALUATORS`, :data:`SEARCHES`: module and class names), so a missing or broken module is an
:class:`EngineError` naming it when an engine is created, never an ImportError at import time.
Option names of in-process engines are checked against :data:`engines.options.ENGINE_OPTIONS` and the
fields of the search's config dataclass (see :mod:`engines.options`); those of external engines against
:data:`engines.options.EXTERNAL_OPTIONS`, or, for any other name, against the options the program
itself announces when it starts.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, replace
from typing import Any

import board
from board.variants import ALL as ALL_VARIANTS, BUGHOUSE, CHESS
from evaluators.composite import CompositeEvaluator
from evaluators.families import FAMILIES, family_variants
from engines.base import EngineError, EngineSpec
from engines.catalog import PROTOCOLS, builtins, external_programs_allowed, find_program, is_external
from engines.options import (
    ENGINE_OPTIONS, EXTERNAL_OPTIONS, OptionInfo, build_config, check_external_options, config_options, find_option,
    norm_key as norm, optional, parse_int, parse_str,
)
from evaluators.base import Evaluator
from evaluators.classical import KD_WEIGHT
from search.base import setting


@dataclass(frozen=True)
class EvaluatorEntry:
    """How to make an evaluator: ``module.cls(**params)`` or ``module.cls.load(path=..., threads=...)``;
    ``options``: the constructor parameters an engine spec may set (``bughouse-ab-kd:king_danger=69``),
    with this entry's defaults (entries may share a class and differ only in them)."""

    module: str
    cls: str
    loads_weights: bool
    options: tuple[OptionInfo, ...] = ()


#: a network's value taken from another network of its family (evaluators.composite: the head swap)
VALUE_WEIGHTS = OptionInfo("value_weights", "string", None, optional(parse_str),
                           help="weights file whose value head replaces the network's (the policy stays weights')")


def _king_danger(weight: int) -> OptionInfo:
    return OptionInfo("king_danger", "spin", weight, parse_int, minimum=0, maximum=10_000,
                      help="centipawns per unit of king danger (evaluators.classical.king_danger; fitted: "
                           f"{KD_WEIGHT}, searchbench fit-king-danger)")


@dataclass(frozen=True)
class SearchEntry:
    """How to make a search: ``module.cls(evaluator, config[, rng])`` with ``module.config()`` (a
    config class, or a function making the game's config at its defaults); the variants it plays."""

    module: str
    cls: str
    config: str
    takes_rng: bool
    variants: tuple[str, ...] = board.VARIANTS


#: the evaluators: the classical ones here, every network's from its family (evaluators/families.py)
EVALUATORS: dict[str, EvaluatorEntry] = {
    "classical": EvaluatorEntry("evaluators.classical", "ClassicalEvaluator", False),
    "bughouse-classical": EvaluatorEntry("evaluators.bughouse_classical", "BughouseClassicalEvaluator", False),
    "bughouse-board": EvaluatorEntry("evaluators.bughouse_classical", "BoardScoreEvaluator", False),
    "bughouse-board-phantoms": EvaluatorEntry("evaluators.bughouse_classical", "PhantomBoardScoreEvaluator", False),
    # one class at three weights: half the fitted one, the fitted one, a quarter (reports/bughouse-ab-kd/)
    "bughouse-board-kd": EvaluatorEntry("evaluators.bughouse_classical", "KingDangerBoardScoreEvaluator", False,
                                        (_king_danger(KD_WEIGHT // 2),)),
    "bughouse-board-kd-fit": EvaluatorEntry("evaluators.bughouse_classical", "KingDangerBoardScoreEvaluator", False,
                                            (_king_danger(KD_WEIGHT),)),
    "bughouse-board-kd-quarter": EvaluatorEntry("evaluators.bughouse_classical", "KingDangerBoardScoreEvaluator",
                                                False, (_king_danger(KD_WEIGHT // 4),)),
    **{f.evaluator_name: EvaluatorEntry(f.evaluator.partition(":")[0], f.evaluator.partition(":")[2], True,
                                        (VALUE_WEIGHTS,) if f.kind == "policy_value" else ())
       for f in FAMILIES.values()},
    # the two-board network's priors, the classical two-board value
    "bughouse-net-classical": EvaluatorEntry("evaluators.bughouse_net", "BughouseNetClassicalEvaluator", True),
}
SEARCHES: dict[str, SearchEntry] = {
    "mcts": SearchEntry("search.mcts", "MCTS", "MCTSConfig", True),
    "alphabeta": SearchEntry("search.alphabeta", "AlphaBeta", "ABConfig", False),
    "comparator": SearchEntry("search.comparator", "ComparatorAlphaBeta", "ComparatorConfig", False),
    "ubfm": SearchEntry("search.ubfm", "UBFM", "UBFMConfig", False),
    "two-board-mcts": SearchEntry("search.two_board", "TwoBoardMCTS", "seat_config", True, (BUGHOUSE.name,)),
}
#: searches that left the suite and are kept as test oracles (tests/oracles/): a name here is
#: searchable only where its module imports, a checkout with its root on the path, so that the
#: games stored with it replay (docs/bughouse.md, "Old bughouse games")
LEGACY_SEARCHES: dict[str, SearchEntry] = {
    "bughouse-mcts": SearchEntry("tests.oracles.bughouse_mcts", "BughouseMCTS", "BughouseMCTSConfig", True,
                                 (BUGHOUSE.name,)),
}
for _name, _entry in LEGACY_SEARCHES.items():
    try:
        if importlib.util.find_spec(_entry.module) is not None:
            SEARCHES[_name] = _entry
    except ImportError:  # no tests package on the path: an installed suite
        pass
#: the two-board searches our bughouse seats run in process (the seat's interface: start with the
#: game and the board, a BughouseResult)
SEAT_SEARCHES: tuple[str, ...] = tuple(n for n, e in SEARCHES.items() if e.variants == (BUGHOUSE.name,))
ALIASES: dict[str, str] = {"material": "classical", "ab": "alphabeta"}


def list_engines() -> list[EngineSpec]:
    """Specs of the built-in engines (copies: callers may change them)."""
    return [_copy(b.spec) for b in builtins().values()]


def _copy(spec: EngineSpec) -> EngineSpec:
    return EngineSpec(spec.name, spec.evaluator, spec.search, dict(spec.options))


def default_variant(spec: EngineSpec) -> str:
    """Chess wherever the engine plays it (a GUI that plays chess never sends ``UCI_Variant``:
    cutechess calls it "standard"), else the first variant it plays."""
    variants = variants_of(spec)
    return CHESS.name if CHESS.name in variants or not variants else variants[0]


def _check_external_allowed(head: str, overrides: dict[str, str]) -> None:
    if external_programs_allowed():
        return

    if head not in builtins():
        raise EngineError(f"external programs are disabled (--no-external-programs): {head!r} is not a built-in "
                          f"engine")
    adapter = {norm(o.name) for o in EXTERNAL_OPTIONS if o.name != "args"}
    passed = [k for k in overrides if norm(k) not in adapter]
    if passed:
        raise EngineError(f"external programs are disabled (--no-external-programs): option {passed[0]!r} would be "
                          f"passed to {head!r} or its command line")


# ---- resolving: every spec is parsed here, once ------------------------------------------------------

def split_spec(text: str) -> tuple[str, dict[str, str]]:
    """``"head:k=v,k2=v2"`` -> (head, {k: v, ...}) (the one parser of spec strings; values are text)."""
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


def join_spec(text: str, options: dict[str, str]) -> str:
    """``text`` (a name or spec string) with ``options`` appended, its own options first (the one
    writer of spec strings, the inverse of :func:`split_spec`; the text is what game keys hold)."""
    if not options:
        return text
    extra = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{text},{extra}" if ":" in text else f"{text}:{extra}"


def _base(head: str) -> EngineSpec:
    """The unparsed spec a head names: a built-in (with its default options) or EVALUATOR+SEARCH."""
    known = builtins()
    if head in known:
        return _copy(known[head].spec)
    if "+" in head:
        ev, _, se = head.rpartition("+")
        ev, se = ev.strip(), se.strip().lower()
        se = ALIASES.get(se, se)
        if se in PROTOCOLS:
            return EngineSpec(head, ev, se, {})
        ev = ALIASES.get(ev.lower(), ev.lower())
        if ev not in EVALUATORS:
            raise EngineError(f"unknown evaluator {ev!r}; known: {', '.join(EVALUATORS)}")
        if se in LEGACY_SEARCHES and se not in SEARCHES:
            raise EngineError(f"search {se!r} left the suite (a test oracle now, tests/oracles/): play two-board-mcts; "
                              f"its stored games replay from a checkout (docs/bughouse.md, \"Old bughouse games\")")
        if se not in SEARCHES:
            raise EngineError(f"unknown search {se!r}; known: {', '.join(SEARCHES)}, {', '.join(PROTOCOLS)}")
        return EngineSpec(f"{ev}+{se}", ev, se, {})
    raise EngineError(f"unknown engine {head!r}; known: {', '.join(known)} "
                      f"(or EVALUATOR+SEARCH with evaluators {', '.join(EVALUATORS)} "
                      f"and searches {', '.join(SEARCHES)}, or PROGRAM+uci / PROGRAM+xboard)")


def resolve(name_or_spec: str) -> EngineSpec:
    """The resolved :class:`EngineSpec` of a built-in name or a spec string (module docstring):
    every option parsed and the search config built, once; :class:`EngineError` for anything bad."""
    head, overrides = split_spec(name_or_spec)
    base = _base(head)
    if is_external(base):
        _check_external_allowed(head, overrides)
    return complete(base, overrides)


def extend(spec: EngineSpec, options: dict[str, str]) -> EngineSpec:
    """``spec`` with ``options`` added (a later value replaces an earlier one), as a value: the engine
    ``resolve(join_spec(spec.name, options))`` gives, built from ``spec`` without parsing its text
    again; its name, the text games and keys store, is that joined text."""
    out = complete(EngineSpec(spec.name, spec.evaluator, spec.search, dict(spec.options)), options, rename=False)
    return replace(out, name=join_spec(spec.name, options))


def as_given(text: str) -> EngineSpec:
    """The resolved engine of ``text``, named by the text as given (what games store), not its
    canonical spelling."""
    spec = resolve(text)
    return spec if spec.name == text else replace(spec, name=text)


def with_options(spec: EngineSpec, options: dict[str, str]) -> EngineSpec:
    """``spec`` (its name kept) with exactly ``options`` (canonical or not), parsed anew."""
    return complete(EngineSpec(spec.name, spec.evaluator, spec.search, {}), options, rename=False)


def complete(base: EngineSpec, overrides: dict[str, str], rename: bool = True) -> EngineSpec:
    """``base`` with ``overrides`` applied and everything parsed: canonical option names and text,
    ``settings`` (engine options, defaults filled) and ``config`` (in-process engines; None while the
    search's module cannot be imported: :func:`create` then says so)."""
    options = dict(base.options)
    canonical: dict[str, str] = {}
    config = None
    if is_external(base):

        canonical = check_external_options(overrides)
        options.update(canonical)
        settings = {o.name: o.parse(options.get(o.name, o.format(o.default))) for o in EXTERNAL_OPTIONS}
    else:
        try:
            defaults: object | None = search_config(base.search)
        except EngineError:
            defaults = None  # reported by create()
        ev_options = evaluator_options(base.evaluator)
        infos = [*ENGINE_OPTIONS, *ev_options] + (config_options(defaults) if defaults is not None else [])
        for k, v in overrides.items():
            try:
                o = find_option(infos, k, prefix=defaults is not None)
            except EngineError:
                if defaults is not None:
                    raise
                canonical[k] = v
                continue
            canonical[o.name] = o.check(v)
        options.update(canonical)
        if "batch_size" in canonical and "single_leaf_nodes" not in canonical:
            options.pop("single_leaf_nodes", None)  # a batch the spec names is the batch at every budget
        engine_names = {o.name for o in (*ENGINE_OPTIONS, *ev_options)}
        settings = {o.name: o.parse(options.get(o.name, o.format(o.default))) for o in (*ENGINE_OPTIONS, *ev_options)}
        if defaults is not None:
            config_text = {find_option(infos, k).name: v for k, v in options.items() if k not in engine_names}
            preset = settings["preset"]
            config = build_config(defaults, config_text, preset if isinstance(preset, str) else None)
    name = base.name
    if rename and canonical:
        name += ":" + ",".join(f"{k}={v}" for k, v in canonical.items())
    return EngineSpec(name, base.evaluator, base.search, options, settings, config)


def parsed(spec: EngineSpec) -> EngineSpec:
    """``spec`` itself if the registry resolved it, else parsed now (a hand-made EngineSpec)."""
    return spec if spec.settings else with_options(spec, spec.options)


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


def search_class(search: str) -> type:
    """The class of a registered search (:data:`SEARCHES`)."""
    cls: type = _search_part(search, "cls")
    return cls


def search_config(search: str) -> object:
    """A registered search's config at its defaults (its game's: the bughouse seat's for two boards)."""
    made: object = _search_part(search, "config")()
    return made


def _search_part(search: str, part: str) -> Any:
    entry = SEARCHES.get(search)
    if entry is None:
        raise EngineError(f"unknown search {search!r}; known: {', '.join(SEARCHES)}")
    return _import(entry.module, getattr(entry, part), f"search {search!r}")


def load_evaluator(name: str, weights: str | None = None, threads: int = 1, inference: str | None = None,
                   device: str = "auto", variant: str | None = None, params: dict[str, Any] | None = None) -> Evaluator:
    """A fresh evaluator by registry name (share one between engines to pool their leaves).

    ``weights`` None: the shipped weights of ``variant`` (``evaluators/weights/<family>_<variant>.pt``);
    ``inference`` (``INFERENCE_MODES``, None: the evaluator's default) applies to networks only;
    ``params``: values of the entry's options (:attr:`EvaluatorEntry.options`; unset: its defaults)."""
    name = ALIASES.get(name, name)
    entry = EVALUATORS.get(name)
    if entry is None:
        raise EngineError(f"unknown evaluator {name!r}; known: {', '.join(EVALUATORS)}")
    unknown = sorted(set(params or {}) - {o.name for o in entry.options})
    if unknown:
        raise EngineError(f"evaluator {name!r} takes no option {', '.join(unknown)}")
    cls = _import(entry.module, entry.cls, f"evaluator {name!r}")
    try:
        if entry.loads_weights:
            kw: dict[str, Any] = {"path": weights, "threads": threads, "device": device}
            if inference is not None:
                kw["inference"] = inference
            if variant is not None:  # the shipped weights of the variant, or a weights name's {variant}
                kw["variant"] = variant
            ev: Evaluator = cls.load(**kw)
            value_weights = (params or {}).get("value_weights")
            if value_weights:  # the head swap: this network's priors, another's value
                ev = CompositeEvaluator(ev, cls.load(**{**kw, "path": value_weights}))
        else:
            if weights is not None:
                raise EngineError(f"evaluator {name!r} takes no weights")
            ev = cls(**{**{o.name: o.default for o in entry.options}, **(params or {})}) if entry.options else cls()
            if entry.options:
                ev.name = name  # entries that share a class are told apart by name
    except EngineError:
        raise
    except (ValueError, OSError) as e:  # EvaluatorError, missing weights file
        raise EngineError(f"cannot load evaluator {name!r}: {e}") from None
    return ev


def pin_inference(text: str, mode: str) -> str:
    """``text`` with ``inference=mode`` added when it names an in-process engine whose evaluator is a
    network and which names no inference mode itself (a config's run-wide ``inference``: the backend
    its games were played with); any other engine's text unchanged."""
    spec = resolve(text)
    if is_external(spec) or "inference" in spec.options:
        return text
    entry = EVALUATORS.get(ALIASES.get(spec.evaluator, spec.evaluator))
    return join_spec(text, {"inference": mode}) if entry is not None and entry.loads_weights else text


def evaluator_options(name: str) -> tuple[OptionInfo, ...]:
    """The options an evaluator takes from an engine spec (none for an unknown name)."""
    entry = EVALUATORS.get(ALIASES.get(name, name))
    return entry.options if entry is not None else ()


def evaluator_params(spec: EngineSpec) -> dict[str, Any]:
    """The values of the evaluator's own options in an in-process spec (defaults filled in)."""
    st = parsed(spec).settings
    return {o.name: st.get(o.name, o.default) for o in evaluator_options(spec.evaluator)}


def evaluator_settings(spec: EngineSpec) -> tuple[str | None, int, str | None, str]:
    """(weights, threads, inference, device) of an in-process spec: what its evaluator is loaded with."""
    st = parsed(spec).settings
    weights = st.get("weights")
    return ((weights if isinstance(weights, str) else None), int(st.get("threads") or 1), st.get("inference"),
            str(st.get("device") or "auto"))


def network_files(spec: EngineSpec, variant: str | None) -> list[str]:
    """The weights files an in-process engine loads in ``variant`` (its ``weights``, else the shipped
    network of the variant; its ``value_weights`` after), [] where its evaluator loads none:
    the networks a game records by digest and a report compares with today's
    (:mod:`reports.played`).  EngineError where the variant has no shipped network."""
    name = ALIASES.get(spec.evaluator, spec.evaluator)
    entry = EVALUATORS.get(name)
    if entry is None or not entry.loads_weights:
        return []
    cls = _import(entry.module, entry.cls, f"evaluator {name!r}")
    weights = evaluator_settings(spec)[0]
    value_weights = evaluator_params(spec).get("value_weights")
    try:
        files = [cls.weights_file(weights, variant)]
        if isinstance(value_weights, str) and value_weights:
            files.append(cls.weights_file(value_weights, variant))
    except ValueError as e:  # EvaluatorError: no shipped network for the variant
        raise EngineError(str(e)) from None
    return [str(f) for f in files]


#: what an evaluator is loaded with (:meth:`EvaluatorPool.key`)
PoolKey = tuple[str, str | None, int, str | None, str, str | None, tuple[tuple[str, Any], ...]]


class EvaluatorPool:
    """The one cache of loaded evaluators (the harness's pooled games, the bughouse seats): engines
    whose evaluator settings are the same share one evaluator, so their leaves go into one batch.
    The key is everything an evaluator is loaded with: (evaluator, weights, threads, inference,
    device, variant, its own options).  ``threads`` and ``max_batch`` (None: as each spec says) and ``pad_single``
    tune every network it loads (see :class:`experiments.harness.match.RegistryFactory`)."""

    def __init__(self, threads: int | None = None, max_batch: int | None = None, pad_single: bool = False) -> None:
        self.threads = threads
        self.max_batch = max_batch
        self.pad_single = pad_single
        self.evaluators: dict[PoolKey, Evaluator] = {}

    def key(self, spec: EngineSpec, variant: str | None) -> PoolKey:
        weights, threads, inference, device = evaluator_settings(spec)
        params = tuple(sorted(evaluator_params(spec).items()))
        return (spec.evaluator, weights, self.threads or threads, inference, device, variant, params)

    def get(self, spec: EngineSpec, variant: str | None) -> Evaluator:
        """The evaluator of ``spec`` in ``variant``, loaded at the first request."""
        key = self.key(spec, variant)
        ev = self.evaluators.get(key)
        if ev is None:
            ev = self.evaluators[key] = load_evaluator(*key[:5], variant=variant, params=dict(key[6]))
            if self.max_batch is not None and hasattr(ev, "max_batch"):
                ev.max_batch = self.max_batch
            if hasattr(ev, "pad_single"):
                ev.pad_single = self.pad_single
        return ev

    def close(self) -> None:
        for ev in self.evaluators.values():
            try:
                ev.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self.evaluators.clear()


def evaluator_for(spec: EngineSpec, variant: str | None = None) -> Evaluator:
    """A fresh evaluator for an in-process spec (its ``weights``, ``threads`` and ``inference``
    applied; without weights, the shipped ones of ``variant``)."""
    return load_evaluator(spec.evaluator, *evaluator_settings(spec), variant=variant, params=evaluator_params(spec))


def option_infos(spec: EngineSpec) -> list[Any]:
    """Every option an in-process engine takes (engine options, the evaluator's, then config fields)."""
    if is_external(spec):
        raise EngineError(f"{spec.name} is an external engine")
    return [*ENGINE_OPTIONS, *evaluator_options(spec.evaluator)] + config_options(search_config(spec.search))


def named_options(spec: EngineSpec) -> dict[str, str]:
    """The options ``spec``'s text itself sets (not a built-in engine's defaults), by their canonical
    names (an in-process engine)."""
    infos = option_infos(spec)
    return {find_option(infos, k).name: v for k, v in split_spec(spec.name)[1].items()}


def effective_values(spec: EngineSpec) -> dict[str, str]:
    """Every option of an in-process engine with the value it will run with (preset applied)."""
    spec = parsed(spec)
    values: dict[str, str] = {}
    for o in option_infos(spec):
        if o.name in spec.settings:
            values[o.name] = o.format(spec.settings[o.name])
        elif spec.config is not None:
            values[o.name] = o.format(setting(spec.config, o.name))
    return values


def spec_limits(spec: str | EngineSpec) -> dict[str, Any]:
    """The limits written in an engine spec (``material-mcts:nodes=32``): ``nodes``, ``depth`` and
    ``movetime`` (and ``evals`` for ours), None where the spec sets none (EngineError for a bad spec)."""
    st = (resolve(spec) if isinstance(spec, str) else parsed(spec)).settings
    return {k: st.get(k) for k in ("nodes", "evals", "playouts", "depth", "movetime")}


def evaluator_variants(evaluator: str, weights: str | None = None) -> tuple[str, ...]:
    """The variants an evaluator plays, asked of the evaluator: a network family's
    (:func:`evaluators.families.family_variants`: those of the weights it runs), any other's its
    class's ``variants``."""
    name = ALIASES.get(evaluator, evaluator)
    family = next((f for f in FAMILIES.values() if f.evaluator_name == name), None)
    if family is not None:
        return family_variants(family, weights)
    entry = EVALUATORS.get(name)
    if entry is None:
        return board.VARIANTS
    cls = getattr(importlib.import_module(entry.module), entry.cls)
    return tuple(v.name for v in ALL_VARIANTS if v.name in cls.variants)


def variants_of(spec: EngineSpec) -> tuple[str, ...]:
    """The variants an engine plays: an external program's as ``engines/builtin.toml`` lists them
    (or every one-board variant); ours, its evaluator's (:func:`evaluator_variants`)."""
    info = builtins().get(spec.name.partition(":")[0])
    if is_external(spec):
        return info.variants if info is not None else board.VARIANTS
    return evaluator_variants(spec.evaluator, spec.options.get("weights"))


# ---- creating ---------------------------------------------------------------------------------------


def describe(spec: EngineSpec) -> dict[str, str]:
    """One row of ``searchbench engines``: name, evaluator, search, variants, defaults, status."""
    info = builtins().get(spec.name.partition(":")[0])
    variants = ",".join(variants_of(spec))
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
    if is_external(spec):

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

