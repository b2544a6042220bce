"""The search interface: limits, results, and the ask/tell protocol that lets a harness batch.

A search is driven in steps so that leaves of many concurrent searches can share one network call::

    search.start(pos, limits)
    while not search.done():
        leaves = search.ask()                      # positions that need an evaluation (may be [])
        search.tell(evaluator.evaluate(leaves))    # answers in the same order
    result = search.result()

:meth:`Search.run` is that loop for a single game.  Searches whose evaluator is cheap and
synchronous (alpha-beta with a classical score) may do all their work inside ``ask`` and return no
leaves; the protocol is the same.

Node accounting (one meaning of "nodes" for Elo-versus-nodes):

- MCTS family (PUCT, Gumbel, MCGS): a node is a visit of the root, as CrazyAra's node limit and
  lc0's ``VisitsStopper`` count them: ``Limits.nodes = N`` stops the search once the root holds N
  visits, *the visits kept from the previous move's tree included* (tree reuse is not free), and
  ``SearchResult.nodes`` is the root's visits.  One simulation is one visit: a leaf evaluated, a
  terminal, a proven or transposition-table hit.  ``Limits.playouts`` (lc0's playouts) caps the new
  simulations of this move instead.  With batches the search may overshoot by nothing: a batch is
  cut to the visits left (no slack).
- alpha-beta and the comparator: a node is a position visited this move (interior, leaf and
  quiescence; nothing is kept from the previous move but the transposition table).

Every search also reports ``evals``, the number of evaluator calls this move (positions sent to the
evaluator, or pairs to a comparator), the currency that is the same for every paradigm.
"""
from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, Sequence, TypeVar

from board import Position
from evaluators.base import Evaluation, Evaluator, Leaf


@dataclass
class Limits:
    """When to stop.  Unset fields do not limit; with nothing set a search uses its default nodes.
    ``evals`` caps the evaluator calls (``SearchResult.evals``; a search may visit more nodes than
    it evaluates: transpositions, terminals, quiescence without a static score)."""

    nodes: int | None = None  # MCTS: root visits, reused ones included; alpha-beta: positions visited
    evals: int | None = None  # evaluator calls (positions sent to the evaluator): the cost axis of networks
    playouts: int | None = None  # MCTS: new simulations this move (lc0's playouts)
    depth: int | None = None
    movetime: float | None = None  # seconds
    wtime: float | None = None  # seconds left on the clocks
    btime: float | None = None
    winc: float = 0.0
    binc: float = 0.0
    movestogo: int | None = None
    infinite: bool = False
    #: a playout-cap randomisation's fast search (KataGo): no root noise and no forced playouts; its
    #: position gets no policy target
    fast: bool = False


@dataclass
class PVLine:
    """One line of a multi-PV answer (UCI ``MultiPV``): a root move, its value for the side to move
    in [-1, 1] and centipawns, a mate distance when proven, and its principal variation."""

    move: int
    value: float = 0.0
    cp: int = 0
    mate: int | None = None
    pv: list[int] = field(default_factory=list)


@dataclass
class SearchResult:
    """What a search reports for one move (``value`` for the side to move, in [-1, 1])."""

    best_move: int
    value: float = 0.0
    cp: int = 0
    mate: int | None = None  # moves to mate, negative if the side to move is mated
    nodes: int = 0
    evals: int = 0
    time: float = 0.0
    depth: int = 0
    seldepth: int = 0
    pv: list[int] = field(default_factory=list)
    # with ``multipv`` > 1: the best root moves, best first (lines[0] is the move played)
    lines: list[PVLine] = field(default_factory=list)

    @property
    def nps(self) -> float:
        return self.nodes / self.time if self.time > 0 else 0.0


def range_error(config: object, ranges: dict[str, tuple[int, int]]) -> str | None:
    """The first integer field of ``config`` outside its ``ranges`` entry (a message), or None.
    Each search config module keeps its ``SPIN_RANGES`` next to the class: its ``validate`` checks
    them and the option system (:mod:`engines.ours`) announces them as UCI spin bounds."""
    for name, (lo, hi) in ranges.items():
        v = setting(config, name)
        if not lo <= v <= hi:
            return f"{name} must be from {lo:,} to {hi:,}, got {v}"
    return None


#: field metadata of a nested config whose fields are set and read by their own names (flat aliases:
#: ``cpuct_init``, not ``puct.cpuct_init``); other nested configs are named with a dot (``time.move_overhead``)
FLAT: Final = {"flat": True}
#: field metadata of a table of settings groups (``{"module:Class": instance}``: the parts' own
#: settings, :mod:`search.parts`), each group's fields set and read by their own names as a FLAT one's
OWN: Final = {"flat": True, "own": True}

C = TypeVar("C")


_GROUPS: dict[type, dict[str, str]] = {}


def class_and_instance(config: object) -> tuple[type, Any]:
    """A config given as an instance (a game's config) or as a class (at its defaults): both."""
    return (config, config()) if isinstance(config, type) else (type(config), config)


def flat_groups(config: object) -> dict[str, str]:
    """Each flat alias of a config (an instance, or a class at its defaults: a field of one of its
    :data:`FLAT` groups) -> the group (``FIELD[KEY]`` for a group of an :data:`OWN` table: the table's
    entries follow the parts the config holds, which a game's own parts add to)."""
    config_cls = config if isinstance(config, type) else type(config)  # (no instance made unless needed)
    known = _GROUPS.get(config_cls)
    own = [f for f in dataclasses.fields(config_cls) if f.metadata.get("own")]
    if known is None:
        known = {}
        defaults = config_cls()
        for f in dataclasses.fields(config_cls):
            if f.metadata.get("flat") and not f.metadata.get("own"):
                for g in dataclasses.fields(getattr(defaults, f.name)):
                    known[g.name] = f.name
        _GROUPS[config_cls] = known
    if not own:
        return known
    out = dict(known)
    instance = class_and_instance(config)[1]
    for f in own:
        for key, group in getattr(instance, f.name).items():
            for g in dataclasses.fields(group):
                out[g.name] = f"{f.name}[{key}]"
    return out


def changes(config: object) -> dict[str, Any]:
    """The settings of ``config`` (by option name: flat aliases, ``outer.inner``) that differ from its
    class's defaults: a preset as settings, to apply on another base (a game's config)."""
    base = type(config)()
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        v, d = getattr(config, f.name), getattr(base, f.name)
        if f.metadata.get("own"):
            pairs = [(g, d.get(key)) for key, g in v.items()]
        elif f.metadata.get("flat") or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
            pairs = [(v, d)]
        else:
            if v != d:
                out[f.name] = v
            continue
        prefix = "" if f.metadata.get("flat") else f.name + "."
        for g, dg in pairs:
            for gf in dataclasses.fields(g):
                x = getattr(g, gf.name)
                if dg is None or x != getattr(dg, gf.name):
                    out[prefix + gf.name] = x
    return out


def _group(config: object, group: str) -> Any:
    outer, bracket, key = group.partition("[")
    return getattr(config, outer)[key[:-1]] if bracket else getattr(config, outer)


def setting(config: object, name: str) -> Any:
    """A config's setting by its option name: a field, a flat alias or ``outer.inner``."""
    outer, dot, inner = name.partition(".")
    if dot:
        return getattr(getattr(config, outer), inner)
    group = flat_groups(config).get(name)
    return getattr(_group(config, group), name) if group is not None else getattr(config, name)


def with_settings(config: C, values: dict[str, Any]) -> C:
    """A copy of ``config`` with ``values`` (option names: fields, flat aliases, ``outer.inner``)
    set; an unknown name is a ``TypeError``."""
    groups = flat_groups(config)
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for name, v in values.items():
        outer, dot, inner = name.partition(".")
        if dot:
            nested.setdefault(outer, {})[inner] = v
        elif name in groups:
            nested.setdefault(groups[name], {})[name] = v
        else:
            top[name] = v
    for outer, vs in nested.items():
        field_name, bracket, key = outer.partition("[")
        if bracket:  # a group of an OWN table: the table copied with that group replaced
            table = dict(top.get(field_name, getattr(config, field_name)))
            table[key[:-1]] = dataclasses.replace(table[key[:-1]], **vs)
            top[field_name] = table
        else:
            top[outer] = dataclasses.replace(getattr(config, outer), **vs)
    return dataclasses.replace(config, **top)  # type: ignore[type-var]


def flat_view(config: object) -> dict[str, Any]:
    """``dataclasses.asdict`` with the flat groups inlined: every setting under its option name."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        v = getattr(config, f.name)
        if f.metadata.get("own"):
            for group in v.values():
                out.update(dataclasses.asdict(group))
        elif f.metadata.get("flat"):
            out.update(dataclasses.asdict(v))
        else:
            out[f.name] = dataclasses.asdict(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
    return out


class Steppable(Protocol):
    """Anything driven by ask/tell: a :class:`Search`, an in-process engine."""

    def ask(self) -> list[Leaf]: ...

    def tell(self, evaluations: Sequence[Evaluation]) -> None: ...


def step(s: Steppable, evaluator: Evaluator) -> None:
    """One step of the protocol: the leaves ``s`` asks for, evaluated, told back."""
    leaves = s.ask()
    if leaves:
        s.tell(evaluator.evaluate(leaves))


class Search(ABC):
    """Base class of all searches.  The evaluator is injected; so is the random state."""

    evaluator: Evaluator

    @abstractmethod
    def start(self, pos: Position, limits: Limits) -> None:
        """Begin a search from ``pos`` (the search may keep a reference; it restores it when done)."""

    @abstractmethod
    def ask(self) -> list[Leaf]:
        """Leaves that need evaluating before the search can go on ([] if none right now)."""

    @abstractmethod
    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        """Answers for the leaves of the last :meth:`ask`, in order."""

    @abstractmethod
    def done(self) -> bool:
        """True once a limit is reached or :meth:`stop` was called."""

    @abstractmethod
    def result(self) -> SearchResult:
        """The best move and statistics so far (valid after at least one step)."""

    def stop(self) -> None:
        """Ask the search to finish as soon as possible (e.g. UCI ``stop``)."""

    def run(self, pos: Position, limits: Limits) -> SearchResult:
        self.start(pos, limits)
        while not self.done():
            step(self, self.evaluator)
        return self.result()
