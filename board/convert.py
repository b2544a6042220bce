"""Conversion to and from python-chess boards (so SAN and PGN come from python-chess)."""
from __future__ import annotations

import chess

from board.moves import move_from_uci, move_to_uci
from board.position import Position
from board.variants import new_position, of_python_board, variant_of


def to_python_chess(pos: Position) -> chess.Board:
    """A python-chess board at the same position, with the same move stack from the same root."""
    b: chess.Board = variant_of(pos.variant).python_board(pos.root_fen)
    for m in pos.move_stack:
        b.push(chess.Move.from_uci(move_to_uci(m)))
    return b


def from_python_chess(b: chess.Board) -> Position:
    """Our position for a python-chess board (chess or crazyhouse), move stack included."""
    try:
        record = of_python_board(b)
    except ValueError:
        record = None
    if record is None or record.boards != 1 or not isinstance(b, record.board_class()):
        raise ValueError(f"unsupported python-chess board type {type(b).__name__}")
    if b.chess960:
        raise ValueError("Chess960 is not supported")
    root = b.root()
    pos = new_position(record.name, root.fen())
    for m in b.move_stack:
        pos.push(pos.parse_uci(m.uci()))
    return pos


def to_python_chess_move(m: int) -> chess.Move:
    return chess.Move.from_uci(move_to_uci(m))


def san(pos: Position, m: int) -> str:
    """Standard algebraic notation of a legal move (drops as ``N@f7+``)."""
    return to_python_chess(pos).san(to_python_chess_move(m))
