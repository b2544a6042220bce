"""Alpha-beta's report (mypyc-compiled; the notation is in :mod:`search.alphabeta`): mate scores as
moves to mate, and the principal variation walked through the transposition table."""
from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from board.position import Position
from search.ab_order import MOVE_MASK

MATE: Final = 30000
MATE_BOUND: Final = MATE - 1000  # scores beyond this are mates


def mate_in_moves(score: int) -> int | None:
    """Moves to mate for a mate score (negative when the side to move is mated), else None."""
    if score >= MATE_BOUND:
        return (MATE - score + 1) // 2
    if score <= -MATE_BOUND:
        return -((MATE + score) // 2)
    return None


def extract_pv(pos: Position, first: int, most: int, keys: vec[i64], data: vec[i64], mask: i64) -> list[int]:
    """``first`` and then each position's table move while it is legal, at most ``most`` moves and
    never into a repeated position (the table: ``keys``/``data`` slots at ``zobrist & mask``);
    ``pos`` is left as it was."""
    pv = [first]
    pos.push(first)
    seen = {pos.zobrist}
    while len(pv) < most:
        idx = pos.zobrist & mask
        d = data[idx] if keys[idx] == pos.zobrist else 0
        m = int(d & MOVE_MASK)
        if not d or not m or m not in pos.legal_moves():
            break
        pos.push(m)
        pv.append(m)
        if pos.zobrist in seen:
            break
        seen.add(pos.zobrist)
    for _ in pv:
        pos.pop()
    return pv


__all__ = ["MATE", "MATE_BOUND", "extract_pv", "mate_in_moves"]
