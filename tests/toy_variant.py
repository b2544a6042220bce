"""A toy variant written outside board/, to show (tests/test_extending.py) that a one-board variant is
its position class, its record and its openings: king of the hill (python-chess's
``chess.variant.KingOfTheHillBoard``), whose end of its own every search finds through
:meth:`board.position.Position.search_end`."""
from __future__ import annotations

from pathlib import Path

from board.bitboards import BB_SQUARES, KING, Color
from board.position import END_LOST, END_NONE, END_WON, STARTING_FEN, Position
from board.variants import Variant, register

HILL = BB_SQUARES[27] | BB_SQUARES[28] | BB_SQUARES[35] | BB_SQUARES[36]  # d4, e4, d5, e5


class KingOfTheHill(Position):
    """Chess, and a king on one of the four centre squares wins."""

    @property
    def variant(self) -> str:
        return KING_OF_THE_HILL.name

    def variant_end(self) -> int:
        kings = self.pieces[KING]
        if kings & self.colors[self.turn ^ 1] & HILL:
            return END_LOST  # the side that just moved stands on the hill
        if kings & self.colors[self.turn] & HILL:
            return END_WON
        return END_NONE

    def has_insufficient_material(self, color: Color) -> bool:
        return False  # a king alone can still walk to the hill

    def _new(self) -> Position:
        return KingOfTheHill()


KING_OF_THE_HILL = register(Variant(
    "kingofthehill", ("koth",), "kingofthehill", "kingofthehill", STARTING_FEN, False, 1, "King of the Hill",
    "chess.variant:KingOfTheHillBoard", 1.4, 0.3, KingOfTheHill, str(Path(__file__).parent / "data" / "koth.epd")))
