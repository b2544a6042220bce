"""The rules core: chess and crazyhouse positions, moves, hashing, FEN, perft."""
from board._purepy import install_if_requested

install_if_requested()

# isort: split
from board.bitboards import (
    BISHOP, BLACK, KING, KNIGHT, PAWN, QUEEN, ROOK, SQUARE_NAMES, WHITE, Bitboard, Color,
    PieceType, Square, parse_square, square_mirror,
)
from board.moves import (
    NULL_MOVE, Move, make_drop, make_move, move_drop, move_from, move_from_uci, move_promotion,
    move_to, move_to_uci,
)
from board.position import CRAZYHOUSE_STARTING_FEN, STARTING_FEN, CrazyhousePosition, Position
from board.perft import MAX_PERFT_DEPTH, divide, perft, perft_bulk
from board.variants import VARIANTS, new_position

__all__ = [
    "BISHOP", "BLACK", "KING", "KNIGHT", "PAWN", "QUEEN", "ROOK", "SQUARE_NAMES", "WHITE",
    "Bitboard", "Color", "PieceType", "Square", "parse_square", "square_mirror",
    "NULL_MOVE", "Move", "make_drop", "make_move", "move_drop", "move_from", "move_from_uci",
    "move_promotion", "move_to", "move_to_uci",
    "CRAZYHOUSE_STARTING_FEN", "STARTING_FEN", "VARIANTS", "CrazyhousePosition", "Position",
    "new_position", "MAX_PERFT_DEPTH", "divide", "perft", "perft_bulk",
]
