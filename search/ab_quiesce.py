"""Alpha-beta's quiescence moves and material (mypyc-compiled; the notation is in :mod:`search.alphabeta`):
the noisy moves quiescence tries, delta pruning, the null move's guard, and the material count that
``qs_eval = "root"`` adds to the score of quiescence's root."""
from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from board.bitboards import BB_KNIGHT_ATTACKS, BB_PAWN_ATTACKS, BB_SQUARES, lsb, popcount, queen_attacks_mask
from board.position import Position
from search.ab_config import ABConfig

# Capture gains for delta pruning (centipawns; en passant finds an empty square: a pawn).
_DELTA_VALUES: Final = vec[i64]([100, 100, 320, 330, 500, 900, 0])
# Material values by piece type (qs_eval = "root": the material won below quiescence's root).
_MATERIAL: Final = vec[i64]([0, 100, 320, 330, 500, 900, 0])


def delta_pruned(pos: Position, m: int, best: int, alpha: int, delta: int) -> bool:
    """Delta pruning: a capture (not a drop or promotion) that cannot lift ``best`` to within
    ``delta_margin`` of ``alpha`` is not tried."""
    if delta <= 0 or (m >> 15) or (m >> 12) & 7:
        return False
    return best + int(_DELTA_VALUES[pos.mailbox[(m >> 6) & 63] & 7]) + delta <= alpha


def noisy_moves(pos: Position, moves: list[int], qply: int, zh: bool, cfg: ABConfig) -> list[int]:
    """Quiescence's moves: captures and promotions; in crazyhouse during its first ``qs_check_drop_plies``
    plies also drops that give check near the enemy king (at most ``qs_max_drops``)."""
    out: list[int] = []
    drops_ok = zh and qply < cfg.qs_check_drop_plies
    near: i64 = 0
    if drops_ok:
        them = pos.turn ^ 1
        kbb = pos.pieces[6] & pos.colors[them]
        if kbb:
            ek = lsb(kbb)
            near = (BB_KNIGHT_ATTACKS[ek] | queen_attacks_mask(ek, pos.colors[0] | pos.colors[1])
                    | BB_PAWN_ATTACKS[them * 64 + ek])
    drops = 0
    for m in moves:
        if m >> 15:
            if drops_ok and drops < cfg.qs_max_drops and BB_SQUARES[(m >> 6) & 63] & near:
                if pos.gives_check(m):
                    out.append(m)
                    drops += 1
        elif (m >> 12) & 7 or pos.is_capture(m):
            out.append(m)
    return out


def has_pieces(pos: Position, zh: bool) -> bool:
    """Null-move guard: the side to move has a piece besides pawns and king, or one in hand."""
    us = pos.colors[pos.turn]
    return bool((pos.pieces[2] | pos.pieces[3] | pos.pieces[4] | pos.pieces[5]) & us) or (
        zh and any(pos.pocket_count(pos.turn, pt) for pt in range(2, 6)))


def material(pos: Position, zh: bool) -> int:
    """Material for the side to move (qs_eval = "root"), pieces in hand included."""
    us = pos.colors[pos.turn]
    them = pos.colors[pos.turn ^ 1]
    total = 0
    for pt in range(1, 6):
        bb = pos.pieces[pt]
        total += int(_MATERIAL[pt]) * (popcount(bb & us) - popcount(bb & them))
        if zh:
            total += int(_MATERIAL[pt]) * (pos.pocket_count(pos.turn, pt) - pos.pocket_count(pos.turn ^ 1, pt))
    return total


__all__ = ["delta_pruned", "has_pieces", "material", "noisy_moves"]
