"""Which moves give check, found from attack tables without making the moves (mypyc-compiled).

Used by MCTS's check enhancement and alpha-beta's move ordering.  A move checks directly when the
moved (or promoted, or dropped) piece attacks the enemy king from its destination with the new
occupancy, or by discovery when it leaves a line between the king and one of our sliders; castling
and en passant, rare, are made and unmade (``Position.gives_check``).
"""
from __future__ import annotations

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

from board.bitboards import (
    BB_BETWEEN, BB_KING_ATTACKS, BB_KNIGHT_ATTACKS, BB_LINE, BB_PAWN_ATTACKS, BB_SQUARES, bishop_attacks_mask, lsb,
    rook_attacks_mask,
)
from board.position import Position, more_than_one

_DIAG_RAYS: Final = vec[i64]([bishop_attacks_mask(s, 0) for s in range(64)])
_ORTH_RAYS: Final = vec[i64]([rook_attacks_mask(s, 0) for s in range(64)])
_MAX_MOVES: Final = 512
_ZEROS: Final = vec[i64]([0] * _MAX_MOVES)


def checking_moves(pos: Position, moves: list[int]) -> list[bool]:
    """For each legal move of ``pos``: does it give check?"""
    flags = checking_moves_vec(pos, vec[i64](moves))
    return [flags[i] != 0 for i in range(len(flags))]


def checking_moves_vec(pos: Position, moves: vec[i64]) -> vec[i64]:
    """:func:`checking_moves` on native vecs: 1 where the move gives check, else 0."""
    n: i64 = len(moves)
    # Speed: start from zeros and set the few checks (no append per move).
    out = _ZEROS[0:n] if n <= _MAX_MOVES else vec[i64]([0] * n)
    us = pos.turn
    them = us ^ 1
    kbb = pos.pieces[6] & pos.colors[them]
    if not kbb:
        return out
    ek = lsb(kbb)
    own = pos.colors[us]
    occ = own | pos.colors[them]
    diag = (pos.pieces[3] | pos.pieces[5]) & own
    orth = (pos.pieces[4] | pos.pieces[5]) & own
    # Discoverers: own pieces that are the only piece between the enemy king and one of our sliders
    # on that line; such a piece gives check by leaving the line (the king is not in check now).
    snipers = (_DIAG_RAYS[ek] & diag) | (_ORTH_RAYS[ek] & orth)
    disc: i64 = 0
    while snipers:
        s = lsb(snipers)
        snipers ^= BB_SQUARES[s]
        b = BB_BETWEEN[ek * 64 + s] & occ
        if b and not more_than_one(b) and b & own:
            disc |= b
    kb = BB_SQUARES[ek]
    line_base: i64 = ek * 64
    ep: i64 = pos.ep_square
    mailbox = pos.mailbox
    # Squares from which a dropped piece checks (drops never uncover a line).
    drop_p: i64 = BB_PAWN_ATTACKS[them * 64 + ek]
    drop_n: i64 = BB_KNIGHT_ATTACKS[ek]
    drop_b: i64 = 0
    drop_r: i64 = 0
    if pos.pockets:
        drop_b = bishop_attacks_mask(ek, occ)
        drop_r = rook_attacks_mask(ek, occ)
    pawn_base: i64 = us * 64
    i: i64 = 0
    while i < n:
        m: i64 = moves[i]
        idx = i
        i += 1
        frm: i64 = m & 63
        to: i64 = (m >> 6) & 63
        drop: i64 = m >> 15
        tb = BB_SQUARES[to]
        if drop:
            if drop == 1:
                d = drop_p
            elif drop == 2:
                d = drop_n
            elif drop == 3:
                d = drop_b
            elif drop == 4:
                d = drop_r
            else:
                d = drop_b | drop_r
            if d & tb:
                out[idx] = 1
            continue
        pt: i64 = mailbox[frm] & 7
        fb = BB_SQUARES[frm]
        if (pt == 6 and (to - frm == 2 or frm - to == 2)) or (pt == 1 and to == ep):
            if pos.gives_check(int(m)):  # castling and en passant: make the move
                out[idx] = 1
            continue
        promo: i64 = (m >> 12) & 7
        if promo:
            pt = promo
        new_occ = (occ & ~fb) | tb
        if pt == 1:
            check = (BB_PAWN_ATTACKS[pawn_base + to] & kb) != 0
        elif pt == 2:
            check = (BB_KNIGHT_ATTACKS[to] & kb) != 0
        elif pt == 3:  # aligned with the king and nothing between (BB_BETWEEN: the squares between)
            check = (_DIAG_RAYS[to] & kb) != 0 and (BB_BETWEEN[to * 64 + ek] & new_occ) == 0
        elif pt == 4:
            check = (_ORTH_RAYS[to] & kb) != 0 and (BB_BETWEEN[to * 64 + ek] & new_occ) == 0
        elif pt == 5:
            check = (((_DIAG_RAYS[to] | _ORTH_RAYS[to]) & kb) != 0 and (BB_BETWEEN[to * 64 + ek] & new_occ) == 0)
        else:
            check = False
        if not check and fb & disc and not BB_LINE[line_base + frm] & tb:
            check = True
        if check:
            out[idx] = 1
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
    flags = vec[i64]([1 if c else 0 for c in checks])
    found = mates_in_one_vec(pos, vec[i64](moves), flags)
    return [int(found[i]) for i in range(len(found))]


def mates_in_one_vec(pos: Position, moves: vec[i64], checks: vec[i64]) -> vec[i64]:
    """:func:`mates_in_one` on native vecs (``checks`` as from :func:`checking_moves_vec`)."""
    out = vec[i64]()
    n: i64 = len(moves)
    i: i64 = 0
    while i < n:
        if checks[i]:
            pos.push(int(moves[i]))
            if not king_can_step(pos) and len(pos.legal_moves_vec()) == 0:
                out = append(out, i)
            pos.pop()
        i += 1
    return out



def check_enhance(priors: vec[float], checks: vec[i64], thresh: float, factor: float, cap: bool,
                  out: vec[float], at: i64) -> None:
    """CrazyAra's check enhancement: each checking move (``checks`` 1/0) whose prior is below
    ``thresh`` gains ``factor`` times the highest prior (at most 0.1 with ``cap``), then all priors
    are renormalised, written to ``out[at:]`` (a node's edges); nothing is written when no check is
    below the threshold (the priors stand as they are)."""
    boost = False
    for i in range(len(priors)):
        if checks[i] and priors[i] < thresh:
            boost = True
            break
    if not boost:
        return
    top = priors[0]
    for i in range(1, len(priors)):
        if priors[i] > top:
            top = priors[i]
    bonus = min(0.1, factor * top) if cap else factor * top
    # two passes (the sum, then the normalised priors) with the same arithmetic
    total = 0.0
    for i in range(len(priors)):
        p = priors[i]
        if checks[i] and p < thresh:
            p += bonus
        total += p
    for i in range(len(priors)):
        p = priors[i]
        if checks[i] and p < thresh:
            p += bonus
        out[at + i] = p / total
