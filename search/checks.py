"""Which moves give check, found from attack tables without making the moves (mypyc-compiled).

Used by MCTS's check enhancement and alpha-beta's move ordering.  A move checks directly when the
moved (or promoted, or dropped) piece attacks the enemy king from its destination with the new
occupancy, or by discovery when it leaves a line between the king and one of our sliders; castling
and en passant, rare, are made and unmade (``Position.gives_check``).
"""
from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from board.bitboards import (
    BB_KING_ATTACKS, BB_KNIGHT_ATTACKS, BB_PAWN_ATTACKS, BB_SQUARES, bishop_attacks_mask, lsb, rook_attacks_mask,
)
from board.position import Position

_DIAG_RAYS: Final = vec[i64]([bishop_attacks_mask(s, 0) for s in range(64)])
_ORTH_RAYS: Final = vec[i64]([rook_attacks_mask(s, 0) for s in range(64)])


def checking_moves(pos: Position, moves: list[int]) -> list[bool]:
    """For each legal move of ``pos``: does it give check?"""
    us = pos.turn
    them = us ^ 1
    kbb = pos.pieces[6] & pos.colors[them]
    out: list[bool] = []
    if not kbb:
        return [False for _ in moves]
    ek = lsb(kbb)
    own = pos.colors[us]
    occ = own | pos.colors[them]
    diag = (pos.pieces[3] | pos.pieces[5]) & own
    orth = (pos.pieces[4] | pos.pieces[5]) & own
    # Own pieces that could uncover a slider's line to the king.
    lines = (_DIAG_RAYS[ek] if diag else 0) | (_ORTH_RAYS[ek] if orth else 0)
    kb = BB_SQUARES[ek]
    # Squares from which a dropped piece checks (drops never uncover a line).
    drop_bb = vec[i64]([0, BB_PAWN_ATTACKS[them * 64 + ek], BB_KNIGHT_ATTACKS[ek], 0, 0, 0, 0])
    if pos.pockets:
        kd = bishop_attacks_mask(ek, occ)
        ko = rook_attacks_mask(ek, occ)
        drop_bb[3] = kd
        drop_bb[4] = ko
        drop_bb[5] = kd | ko
    for m in moves:
        frm = m & 63
        to = (m >> 6) & 63
        drop = m >> 15
        if drop:
            out.append((drop_bb[drop] & BB_SQUARES[to]) != 0)
            continue
        else:
            pt = int(pos.mailbox[frm] & 7)
            fb = BB_SQUARES[frm]
            if (pt == 6 and (to - frm == 2 or frm - to == 2)) or (pt == 1 and to == pos.ep_square):
                out.append(pos.gives_check(m))  # castling and en passant: make the move
                continue
            promo = (m >> 12) & 7
            if promo:
                pt = promo
        new_occ = (occ & ~fb) | BB_SQUARES[to]
        tb = BB_SQUARES[to]
        if pt == 1:
            check = (BB_PAWN_ATTACKS[us * 64 + to] & kb) != 0
        elif pt == 2:
            check = (BB_KNIGHT_ATTACKS[to] & kb) != 0
        elif pt == 3:
            check = (_DIAG_RAYS[to] & kb) != 0 and (bishop_attacks_mask(to, new_occ) & kb) != 0
        elif pt == 4:
            check = (_ORTH_RAYS[to] & kb) != 0 and (rook_attacks_mask(to, new_occ) & kb) != 0
        elif pt == 5:
            check = (((_DIAG_RAYS[to] & kb) != 0 and (bishop_attacks_mask(to, new_occ) & kb) != 0)
                     or ((_ORTH_RAYS[to] & kb) != 0 and (rook_attacks_mask(to, new_occ) & kb) != 0))
        else:
            check = False
        if not check and fb & lines:
            check = ((bishop_attacks_mask(ek, new_occ) & diag & ~tb & ~fb) != 0
                     or (rook_attacks_mask(ek, new_occ) & orth & ~tb & ~fb) != 0)
        out.append(check)
    return out


def king_can_step(pos: Position) -> bool:
    """Does the side to move have a king move to a square no enemy piece attacks?"""
    us = pos.turn
    kbb = pos.pieces[6] & pos.colors[us]
    if not kbb:
        return False
    ksq = lsb(kbb)
    occ = (pos.colors[0] | pos.colors[1]) ^ kbb
    t = BB_KING_ATTACKS[ksq] & ~pos.colors[us]
    while t:
        to = lsb(t)
        t ^= BB_SQUARES[to]
        if not pos.attackers_mask(us ^ 1, to, occ):
            return True
    return False


def mates_in_one(pos: Position, moves: list[int], checks: list[bool]) -> list[int]:
    """Indices of the moves that checkmate at once (only checking moves can; a king step out of
    check rules a move out before the full move generation)."""
    out: list[int] = []
    for i in range(len(moves)):
        if checks[i]:
            pos.push(moves[i])
            if not king_can_step(pos) and not pos.has_legal_moves():
                out.append(i)
            pos.pop()
    return out
