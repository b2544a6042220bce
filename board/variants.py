"""Each variant's facts in one record, as python-chess's variant classes carry theirs.

Code outside ``board/`` asks a :class:`Variant` (``variant_of(name).pockets``, ``.board_class()``,
``.pgn_tag``) instead of comparing names, so a new one-board variant is a record here (or one
:func:`register` call), its position class (:class:`board.position.Position` with its rules
overridden: :meth:`~board.position.Position.variant_end` for an end of its own, which every search
asks through :meth:`~board.position.Position.search_end`) and its openings: nothing else tests for a
name.

============  =========================  =======  ======  ==============  ====================
name          python-chess class         pockets  boards  PGN ``Variant``  UCI / XBoard name
============  =========================  =======  ======  ==============  ====================
chess         ``chess.Board``            no       1       (no tag)        chess / normal
crazyhouse    ``chess.variant.Crazyhouse  yes      1       Crazyhouse      crazyhouse
              Board``
bughouse      ``chess.variant.Crazyhouse  yes      2       Bughouse        bughouse (XBoard)
              Board`` per board
============  =========================  =======  ======  ==============  ====================
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from board.bughouse import BUGHOUSE_STARTING_FEN
from board.position import CRAZYHOUSE_STARTING_FEN, STARTING_FEN, CrazyhousePosition, Position


@dataclass(frozen=True)
class Variant:
    """One variant: ``name`` (ours, everywhere: databases, specs, CLI), other spellings it is known by
    (``aliases``: PGN tags, UCI names, lower case), the UCI ``UCI_Variant`` / XBoard name, the start
    FEN, pockets (drops), the number of boards, the PGN ``Variant`` tag ("" for standard chess) and
    the python-chess board class (``module:Class``) of one board; ``cp_base``, the base of the
    value <-> centipawn conversion (:mod:`evaluators.scale`), ``dirichlet_alpha``, the root
    noise of self-play (AlphaZero's 0.3 for chess, CrazyAra's 0.2 for crazyhouse), ``position``,
    the class of one position (``position(fen)``; None for a game of two boards, whose position is
    :class:`board.bughouse.BughouseGame`), and ``openings``, its opening suite: a shipped suite's
    name or an EPD file's path (:func:`experiments.harness.openings.default_suite`)."""

    name: str
    aliases: tuple[str, ...]
    uci_name: str
    xboard_name: str
    start_fen: str
    pockets: bool
    boards: int
    pgn_tag: str
    python_chess: str
    cp_base: float
    dirichlet_alpha: float
    position: Callable[[str | None], Position] | None
    openings: str

    def board_class(self) -> Any:
        """The python-chess class of one board (imported on first use)."""
        module, _, cls = self.python_chess.partition(":")
        return getattr(importlib.import_module(module), cls)

    def python_board(self, fen: str | None = None) -> Any:
        """A python-chess board of this variant (one board) at ``fen`` (default: the start)."""
        cls = self.board_class()
        return cls() if fen is None else cls(fen)


CHESS = Variant("chess", ("standard", "normal"), "chess", "normal", STARTING_FEN, False, 1, "",
                "chess:Board", 1.4, 0.3, Position, "chess")
CRAZYHOUSE = Variant("crazyhouse", ("zh",), "crazyhouse", "crazyhouse", CRAZYHOUSE_STARTING_FEN, True, 1,
                     "Crazyhouse", "chess.variant:CrazyhouseBoard", 1.2, 0.2, CrazyhousePosition, "crazyhouse")
BUGHOUSE = Variant("bughouse", ("bug",), "bughouse", "bughouse", BUGHOUSE_STARTING_FEN, True, 2, "Bughouse",
                   "chess.variant:CrazyhouseBoard", 1.2, 0.2, None, "crazyhouse")  # each board from a crazyhouse opening

#: every variant, one-board ones first
ALL: tuple[Variant, ...] = (CHESS, CRAZYHOUSE, BUGHOUSE)
#: the variants one ``board.Position`` plays (``board.VARIANTS`` holds their names)
ONE_BOARD: tuple[Variant, ...] = tuple(v for v in ALL if v.boards == 1)
#: their names (``board.VARIANTS``: the CLI's choices)
VARIANTS: tuple[str, ...] = tuple(v.name for v in ONE_BOARD)
#: names of the variants with pockets (a set for the compiled hot paths' membership tests)
POCKET_VARIANTS: frozenset[str] = frozenset(v.name for v in ALL if v.pockets)

_BY_NAME: dict[str, Variant] = {}
for _v in ALL:
    for _n in (_v.name, *_v.aliases):
        _BY_NAME[_n] = _v


def register(v: Variant) -> Variant:
    """Make a variant defined outside this module (a plug-in's, a test's) known by its name and
    aliases to :func:`variant_of` and :func:`new_position`; ``ValueError`` if a name is taken.  The
    shipped lists (:data:`ALL`, :data:`ONE_BOARD`) stay the shipped variants."""
    taken = [n for n in (v.name, *v.aliases) if n in _BY_NAME]
    if taken:
        raise ValueError(f"variant name {taken[0]!r} is taken")
    for n in (v.name, *v.aliases):
        _BY_NAME[n] = v
    return v


def new_position(variant: str = "chess", fen: str | None = None) -> Position:
    """A position of the named one-board variant (its record's class); ``ValueError`` for an unknown
    variant, one of two boards, or a bad FEN."""
    v = variant_of(variant)
    if v.position is None:
        raise ValueError(f"{v.name} is a game of {v.boards} boards: board.bughouse.BughouseGame holds its position")
    return v.position(fen)


def variant_of(name: str) -> Variant:
    """The record of ``name`` (ours or an alias, any case); ``ValueError`` (one line) if unknown."""
    v = (_BY_NAME.get(name) or _BY_NAME.get(name.lower())) if isinstance(name, str) else None
    if v is None:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(v.name for v in ALL)}")
    return v


def of_pgn_tag(tag: str) -> Variant:
    """The variant of a PGN ``Variant`` tag ("" or "Standard": chess)."""
    return CHESS if tag.strip() == "" else variant_of(tag.strip())


def of_python_board(b: Any) -> Variant:
    """The one-board variant of a python-chess board (its ``uci_variant``)."""
    return variant_of(getattr(b, "uci_variant", "chess"))
