"""Perft: count the leaf nodes of the legal move tree, making and unmaking every move."""
from __future__ import annotations

from mypy_extensions import i64

from board.position import Position

# Deeper is beyond any computer (perft 15 of the start position is 2e21 leaves) and would only
# exhaust the stack; the public functions refuse it.
MAX_PERFT_DEPTH = 20


def _check_depth(depth: int) -> None:
    if depth > MAX_PERFT_DEPTH:
        raise ValueError(f"perft depth {depth} is above the maximum {MAX_PERFT_DEPTH}")


def perft(pos: Position, depth: int) -> int:
    """Leaves at ``depth`` plies; every node, leaves included, is made and unmade."""
    _check_depth(depth)
    return _perft(pos, depth)


def _perft(pos: Position, depth: int) -> int:
    if depth <= 0:
        return 1
    moves = pos.legal_moves_vec()  # (speed: native ints, no boxing)
    k: i64 = len(moves)
    if depth == 1:
        n = 0
        for i in range(k):
            pos.push(int(moves[i]))
            n += 1
            pos.pop()
        return n
    total = 0
    for i in range(k):
        pos.push(int(moves[i]))
        total += _perft(pos, depth - 1)
        pos.pop()
    return total


def perft_bulk(pos: Position, depth: int) -> int:
    """Leaves at ``depth`` plies, counting the last ply from the move list (no make/unmake)."""
    _check_depth(depth)
    return _perft_bulk(pos, depth)


def _perft_bulk(pos: Position, depth: int) -> int:
    if depth <= 0:
        return 1
    moves = pos.legal_moves_vec()
    k: i64 = len(moves)
    if depth == 1:
        return int(k)
    total = 0
    for i in range(k):
        pos.push(int(moves[i]))
        total += _perft_bulk(pos, depth - 1)
        pos.pop()
    return total


def divide(pos: Position, depth: int) -> dict[str, int]:
    """Perft per root move, keyed by UCI string (for locating a movegen bug)."""
    _check_depth(depth)
    out: dict[str, int] = {}
    for m in pos.legal_moves():
        pos.push(m)
        out[pos.uci(m)] = perft_bulk(pos, depth - 1)
        pos.pop()
    return out
