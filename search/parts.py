"""The table of the MCTS's parts (mypyc-compiled): every interior rule, root rule, Q transform and
stopper the search can be built from, one record a part (:class:`Part`), one line each in
:data:`PARTS` (mctx composes a policy from such parts; lc0 chains its stoppers).

A record says what the search and the layers above ask of a part without building it:

- ``kind``: ``"tree"`` (the interior rule, :class:`search.mcts_rules.TreeRule`; the engine option
  ``score_formula`` names it), ``"root"`` (:class:`search.mcts_rules.RootRule`; ``root_rule``),
  ``"q"`` (a Q transform, :data:`search.qtransforms.QTransform`; ``q_transform``) or ``"stop"`` (a
  :class:`search.mcts_stop.Stopper`: every one is in the chain, in the table's order);
- ``name``: its option value, unique within its kind;
- ``impl``: ``"module:name"`` of its class or function, imported when a search first needs it;
- ``settings``: ``"module:Class"`` of its own settings (a dataclass), or ``""``.  Each of their fields
  is an engine option by its own name (``q_transform=shrunk,q_shrink=0.5``), defaults from the
  class, names unique across every part and group (a test); the part reads them with
  :meth:`search.mcts_config.MCTSConfig.settings` (``cfg.settings(SixtyFourParams).sixtyfour_c``), and
  a Q transform with settings is a factory that takes them and returns the transform (mctx's
  partials).  Two parts may name the same class: they share one instance;
- ``two_board``: its bughouse form: for a tree rule ``"module:function"`` making, from the config and
  LazyBug's parameters, a rule that selects within a run of edges (LazyBug's board choice wraps it,
  :class:`search.two_board_rules.BoardChoice`); ``""`` where the rule's own ``select_run`` serves;
  for a root rule ``"module:Class"`` of a :class:`search.two_board_rules.SeatRoot` (Gumbel's, whose
  plan spans the seat's budget); ``""`` where the generic seat (:class:`search.two_board_rules.SeatWrap`)
  wraps the rule itself (PUCT's, and a new rule's);
- ``games``: the games whose configs hold the part's settings (``()``: every game's).  A ``"seat"``
  part is a game's own: LazyBug's bughouse seat (its board choice, its sit decision, the moves'
  clock) makes a config a bughouse one (:meth:`search.mcts_config.MCTSConfig.for_game`), so its
  settings are options of the bughouse engines only;
- ``defaults``: ``"module:NAME"`` of a table of shared settings by flat name that the game's config
  starts from instead of the shared defaults (LazyBug's: no solver, no transposition table, ...).

What a root rule does in self-play (its exploration, its quiet reference search) is on its class
(``SELFPLAY``, ``QUIET``, ``ROUNDS``): the loop asks the rule the config names
(:func:`search.mcts_rules.root_rule_class`).

A new part is a file of its own and a line here; nothing else changes (``tests/test_extending.py``
adds each kind from a test file).  The records live in this one table, not in the parts' modules,
so that the config's validation and the engines' option lists know every name without importing
every rule.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Final

from board.variants import BUGHOUSE

KINDS: Final = ("tree", "root", "q", "stop", "seat")


@dataclass(frozen=True)
class Part:
    """One part of the search (the module docstring)."""

    kind: str
    name: str
    impl: str
    settings: str = ""
    two_board: str = ""
    games: tuple[str, ...] = ()
    defaults: str = ""


PARTS: Final[list[Part]] = [
    Part("tree", "crazyara", "search.puct:PUCT", "search.puct:PUCTParams", "search.two_board_rules:lazybug_puct"),
    Part("tree", "sixtyfour", "search.sixtyfour:SixtyFourScore", settings="search.sixtyfour:SixtyFourParams"),
    Part("tree", "gumbel", "search.gumbel:GumbelTreeRule", "search.gumbel:GumbelParams", "search.two_board_gumbel:gumbel_run"),
    Part("root", "puct", "search.puct:VisitsRoot"),
    Part("root", "gumbel", "search.gumbel:SequentialHalving", "search.gumbel:GumbelParams", "search.two_board_gumbel:SeatGumbel"),
    Part("q", "mean", "search.qtransforms:mean"),
    Part("stop", "root-settled", "search.mcts_stop:RootSettledStopper"),
    Part("stop", "tree-full", "search.mcts_stop:TreeFullStopper"),
    Part("stop", "nodes", "search.mcts_stop:NodeLimitStopper"),
    Part("stop", "evals", "search.mcts_stop:EvalLimitStopper"),
    Part("stop", "time", "search.mcts_stop:TimeStopper"),
    Part("seat", "lazybug", "search.two_board:TwoBoardMCTS", "search.two_board_rules:LazyBugParams",
         games=(BUGHOUSE.name,), defaults="search.two_board_rules:LAZYBUG_DEFAULTS"),
]


def load(entry: str) -> Any:
    """The class or function ``"module:name"`` names, imported on first use."""
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def names(kind: str) -> list[str]:
    """The names of the parts of ``kind``, in the table's order."""
    return [p.name for p in PARTS if p.kind == kind]


def part(kind: str, name: str) -> Part:
    """The record of the part of ``kind`` called ``name`` (``KeyError`` if none: the config's
    validation refuses an unknown name first)."""
    for p in PARTS:
        if p.kind == kind and p.name == name:
            return p
    raise KeyError(f"no {kind} part {name!r}")


def implementation(kind: str, name: str) -> Any:
    """The class or function of the part of ``kind`` called ``name``."""
    return load(part(kind, name).impl)


def own_settings(game: str = "") -> dict[str, Any]:
    """The parts' own settings at their defaults, one instance a settings class (two parts may share
    one: Gumbel's root and interior rules), by ``"module:Class"``: the table
    :attr:`search.mcts_config.MCTSConfig.own` starts from; ``game`` adds that game's own parts'
    (``""``: the one-board games, which have none)."""
    return {p.settings: load(p.settings)() for p in PARTS if p.settings and (not p.games or game in p.games)}


def game_defaults(game: str) -> dict[str, Any]:
    """The shared settings (flat names) ``game``'s own parts start from instead of the defaults."""
    out: dict[str, Any] = {}
    for p in PARTS:
        if p.defaults and game in p.games:
            out.update(load(p.defaults))
    return out


__all__ = ["KINDS", "PARTS", "Part", "implementation", "load", "names", "game_defaults", "own_settings", "part"]
