"""The classical evaluator: material + piece-square tables + pockets + king safety (mypyc).

It is the baseline of every comparison and the evaluator the search tests use.  It serves all three
questions of :mod:`evaluators.base`, all derived from one static score ``S`` in centipawns for
**White** (:func:`white_score`), computed from raw bitboards so that it works on a ``Position`` and on
a raw state (``Position.raw_state()``) alike:

``S = material + PST + pockets + king safety`` (White minus Black), no side-to-move bonus, so the
bare-kings position scores exactly 0 (the comparator search uses it as the canonical draw).

- material: chess P 100, N 320, B 330, R 500, Q 900; crazyhouse P 100, N 260, B 280, R 400,
  Q 750 on the board (pieces are worth less relative to pawns when every capture returns as a
  drop) and the same plus 20% in the pocket (a piece in hand can be dropped anywhere);
- PST: the "simplified evaluation function" tables (T. Michniewski, chessprogramming wiki), middle
  game, mirrored for Black;
- king safety: +12 per own pawn in the king's zone (the 8 squares around it); per enemy piece
  attacking the zone a penalty of 10 (minor), 15 (rook), 30 (queen); in crazyhouse also
  ``-(8 + enemy pocket material / 50)`` per empty square in the zone (drops land there).

King danger (:func:`king_features`, :func:`king_danger`, :func:`king_danger_score`) is not part of
``S``: the alpha-beta bughouse seats add it (``bughouse-board-kd``). Per king, in units: each zone
square the opponent attacks 1, each *hole* (an empty zone square no own piece but the king guards)
0.10 x min(pieces in the opponent's pocket, 3), each unguarded knight-check square 0.49 (0.78 with a
knight in the opponent's pocket), each piece in the opponent's pocket 0.03; ``KD_WEIGHT`` = 278
centipawns of ``S`` a unit. The weights were fitted to Fairy-Stockfish's scores of 124,753 crazyhouse
positions (``searchbench fit-king-danger --data data/zh-fsf3000-b``: validation MSE of
the logistic 0.0606 with ``S`` scaled alone, 0.0502 with the king danger).

``score(pos)`` is ``S`` from the side to move; ``evaluate`` gives value ``v = 2/(1+e^(-s/400)) - 1``
(a logistic of the side-to-move score, = tanh(s/800)) and priors = softmax of cheap move scores
(capture gain MVV-LVA, promotion, PST gain, direct checks) at temperature 100 cp; ``compare(a, b)``
is ``1/(1+e^(-(S_a-S_b)/100))`` so that ``compare > 1/2`` exactly when ``S_a > S_b``.
"""
from __future__ import annotations

import math
from typing import Final, Sequence

from librt.vecs import vec
from mypy_extensions import i64, mypyc_attr

from board.bitboards import (
    BB_KING_ATTACKS, BB_KNIGHT_ATTACKS, BB_PAWN_ATTACKS, BB_SQUARES, bishop_attacks_mask, lsb,
    rook_attacks_mask,
)
from board.position import Position
from board.variants import ONE_BOARD, POCKET_VARIANTS
from evaluators.base import COMPARE, POLICY_VALUE, SCORE, Evaluation, Evaluator, Leaf
from evaluators.scale import cp_to_value

# Piece values by piece type (index 0 unused): board chess, board crazyhouse, pocket crazyhouse.
CHESS_VALUES: Final = vec[i64]([0, 100, 320, 330, 500, 900, 0])
ZH_VALUES: Final = vec[i64]([0, 100, 260, 280, 400, 750, 0])
ZH_POCKET_VALUES: Final = vec[i64]([0, 120, 312, 336, 480, 900, 0])
# Ordering values for MVV-LVA (king large so it is never a cheap attacker).
ORDER_VALUES: Final = vec[i64]([0, 100, 300, 300, 500, 900, 2000])

VALUE_SCALE: Final = 400.0
PRIOR_TEMPERATURE: Final = 100.0
COMPARE_SCALE: Final = 100.0

# Simplified-evaluation PSTs, written rank 8 first (as seen by White); index (sq ^ 56) for White,
# sq for Black.
_PST_TEXT: Final = [
    [0] * 64,
    [0, 0, 0, 0, 0, 0, 0, 0,
     50, 50, 50, 50, 50, 50, 50, 50,
     10, 10, 20, 30, 30, 20, 10, 10,
     5, 5, 10, 25, 25, 10, 5, 5,
     0, 0, 0, 20, 20, 0, 0, 0,
     5, -5, -10, 0, 0, -10, -5, 5,
     5, 10, 10, -20, -20, 10, 10, 5,
     0, 0, 0, 0, 0, 0, 0, 0],
    [-50, -40, -30, -30, -30, -30, -40, -50,
     -40, -20, 0, 0, 0, 0, -20, -40,
     -30, 0, 10, 15, 15, 10, 0, -30,
     -30, 5, 15, 20, 20, 15, 5, -30,
     -30, 0, 15, 20, 20, 15, 0, -30,
     -30, 5, 10, 15, 15, 10, 5, -30,
     -40, -20, 0, 5, 5, 0, -20, -40,
     -50, -40, -30, -30, -30, -30, -40, -50],
    [-20, -10, -10, -10, -10, -10, -10, -20,
     -10, 0, 0, 0, 0, 0, 0, -10,
     -10, 0, 5, 10, 10, 5, 0, -10,
     -10, 5, 5, 10, 10, 5, 5, -10,
     -10, 0, 10, 10, 10, 10, 0, -10,
     -10, 10, 10, 10, 10, 10, 10, -10,
     -10, 5, 0, 0, 0, 0, 5, -10,
     -20, -10, -10, -10, -10, -10, -10, -20],
    [0, 0, 0, 0, 0, 0, 0, 0,
     5, 10, 10, 10, 10, 10, 10, 5,
     -5, 0, 0, 0, 0, 0, 0, -5,
     -5, 0, 0, 0, 0, 0, 0, -5,
     -5, 0, 0, 0, 0, 0, 0, -5,
     -5, 0, 0, 0, 0, 0, 0, -5,
     -5, 0, 0, 0, 0, 0, 0, -5,
     0, 0, 0, 5, 5, 0, 0, 0],
    [-20, -10, -10, -5, -5, -10, -10, -20,
     -10, 0, 0, 0, 0, 0, 0, -10,
     -10, 0, 5, 5, 5, 5, 0, -10,
     -5, 0, 5, 5, 5, 5, 0, -5,
     0, 0, 5, 5, 5, 5, 0, -5,
     -10, 5, 5, 5, 5, 5, 0, -10,
     -10, 0, 5, 0, 0, 0, 0, -10,
     -20, -10, -10, -5, -5, -10, -10, -20],
    [-30, -40, -40, -50, -50, -40, -40, -30,
     -30, -40, -40, -50, -50, -40, -40, -30,
     -30, -40, -40, -50, -50, -40, -40, -30,
     -30, -40, -40, -50, -50, -40, -40, -30,
     -20, -30, -30, -40, -40, -30, -30, -20,
     -10, -20, -20, -20, -20, -20, -20, -10,
     20, 20, 0, 0, 0, 0, 20, 20,
     20, 30, 10, 0, 0, 10, 30, 20],
]
# PST[(color * 7 + pt) * 64 + sq]: the bonus of a piece of ``color`` and type ``pt`` on ``sq``.
PST: Final = vec[i64]([_PST_TEXT[pt][sq ^ 56] if c == 0 else _PST_TEXT[pt][sq]
                       for c in range(2) for pt in range(7) for sq in range(64)])
KING_ATTACK_WEIGHT: Final = vec[i64]([0, 0, 10, 10, 15, 30, 0])
SHIELD_BONUS: Final = 12


def _piece_attacks(pt: int, color: int, sq: int, occ: i64) -> i64:
    if pt == 1:
        return BB_PAWN_ATTACKS[color * 64 + sq]
    if pt == 2:
        return BB_KNIGHT_ATTACKS[sq]
    if pt == 3:
        return bishop_attacks_mask(sq, occ)
    if pt == 4:
        return rook_attacks_mask(sq, occ)
    if pt == 5:
        return bishop_attacks_mask(sq, occ) | rook_attacks_mask(sq, occ)
    return BB_KING_ATTACKS[sq]


def _bits(b: i64) -> int:
    n = 0
    while b:
        b ^= BB_SQUARES[lsb(b)]
        n += 1
    return n


def _side_score(zh: bool, color: int, own: i64, opp: i64, p: i64, n: i64, b: i64, r: i64, q: i64,
                k: i64, pockets: int) -> int:
    """Material + PST + own pocket + own king safety of one side (positive = good for it)."""
    occ = own | opp
    s = 0
    base = color * 7 * 64
    kbb = k & own
    ksq = lsb(kbb) if kbb else -1
    ekbb = k & opp
    ezone: i64 = BB_KING_ATTACKS[lsb(ekbb)] if ekbb else 0
    for pt in range(1, 7):
        if pt == 1:
            bb = p & own
        elif pt == 2:
            bb = n & own
        elif pt == 3:
            bb = b & own
        elif pt == 4:
            bb = r & own
        elif pt == 5:
            bb = q & own
        else:
            bb = k & own
        val = ZH_VALUES[pt] if zh else CHESS_VALUES[pt]
        while bb:
            sq = lsb(bb)
            bb ^= BB_SQUARES[sq]
            s += int(val + PST[base + pt * 64 + sq])
            # Pressure on the enemy king's zone (counted as a bonus for the attacker).
            if 2 <= pt <= 5 and ezone and _piece_attacks(pt, color, sq, occ) & ezone:
                s += int(KING_ATTACK_WEIGHT[pt])
    if zh:
        for pt in range(1, 6):
            s += ((pockets >> ((color * 5 + pt - 1) * 6)) & 63) * int(ZH_POCKET_VALUES[pt])
    if ksq >= 0:
        zone = BB_KING_ATTACKS[ksq]
        s += SHIELD_BONUS * _bits(zone & p & own)
        if zh:
            epocket = 0
            for pt in range(1, 6):
                epocket += ((pockets >> (((color ^ 1) * 5 + pt - 1) * 6)) & 63) * int(ZH_POCKET_VALUES[pt])
            s -= (8 + epocket // 50) * _bits(zone & ~occ)
    return s


def white_score_bb(zh: bool, white: i64, black: i64, p: i64, n: i64, b: i64, r: i64, q: i64, k: i64,
                   pockets: int) -> int:
    """``S``: the static score in centipawns for White, from raw bitboards."""
    return (_side_score(zh, 0, white, black, p, n, b, r, q, k, pockets)
            - _side_score(zh, 1, black, white, p, n, b, r, q, k, pockets))


def white_score_raw(state: tuple[int, ...], zh: bool) -> int:
    """``S`` of a raw state (``Position.raw_state()``)."""
    return white_score_bb(zh, state[0], state[1], state[2], state[3], state[4], state[5], state[6],
                          state[7], state[9])


def white_score(pos: Position) -> int:
    """``S`` of a position."""
    pc = pos.pieces
    co = pos.colors
    return white_score_bb(pos.has_pockets, co[0], co[1], pc[1], pc[2], pc[3], pc[4], pc[5], pc[6],
                          int(pos.pockets))


def stm_score(pos: Position) -> int:
    """``S`` from the side to move's point of view."""
    s = white_score(pos)
    return s if pos.turn == 0 else -s


def _piece_on(state: tuple[int, ...], sq: int) -> int:
    bit = BB_SQUARES[sq]
    for pt in range(1, 7):
        if state[1 + pt] & bit:
            return pt
    return 0


def least_attacker(state: tuple[int, ...], color: int, sq: int, occ: i64) -> int:
    """Piece type of the least valuable piece of ``color`` attacking ``sq`` (0 if none)."""
    cbb: i64 = state[color] & occ
    if BB_PAWN_ATTACKS[(color ^ 1) * 64 + sq] & state[2] & cbb:
        return 1
    if BB_KNIGHT_ATTACKS[sq] & state[3] & cbb:
        return 2
    diag = bishop_attacks_mask(sq, occ)
    if diag & state[4] & cbb:
        return 3
    orth = rook_attacks_mask(sq, occ)
    if orth & state[5] & cbb:
        return 4
    if (diag | orth) & state[6] & cbb:
        return 5
    if BB_KING_ATTACKS[sq] & state[7] & cbb:
        return 6
    return 0


def move_scores(state: tuple[int, ...], moves: list[int], zh: bool) -> list[float]:
    """Cheap scores of moves (centipawns) for the priors: capture gain, promotion, PST gain, the
    loss when the piece lands en prise (static, one exchange), checks (more if the checker is safe)."""
    us = state[10]
    them = us ^ 1
    own: i64 = state[us]
    opp: i64 = state[them]
    occ = own | opp
    ekbb: i64 = state[7] & opp
    eksq = lsb(ekbb) if ekbb else -1
    values = ZH_VALUES if zh else CHESS_VALUES
    base = us * 7 * 64
    out: list[float] = []
    for m in moves:
        frm = m & 63
        to = (m >> 6) & 63
        drop = m >> 15
        s = 0
        if drop:
            pt = drop
            s += int(PST[base + pt * 64 + to]) - 10
            new_occ = occ | BB_SQUARES[to]
        else:
            pt = _piece_on(state, frm)
            s += int(PST[base + pt * 64 + to] - PST[base + pt * 64 + frm])
            victim = _piece_on(state, to)
            if victim:
                s += int(values[victim]) + 50 - int(ORDER_VALUES[pt]) // 10
            elif pt == 1 and to == state[12]:
                s += 100
            promo = (m >> 12) & 7
            if promo:
                s += int(values[promo] - values[1])
                pt = promo
            new_occ = (occ & ~BB_SQUARES[frm]) | BB_SQUARES[to]
        loss = 0
        if pt != 6:
            lav = least_attacker(state, them, to, new_occ)
            if lav:
                if not least_attacker(state, us, to, new_occ):
                    loss = int(values[pt])
                elif lav != 6:  # a defended piece cannot be taken by the king
                    loss = max(0, int(values[pt] - values[lav]))
            s -= loss
        if eksq >= 0 and _piece_attacks(pt, us, to, new_occ) & BB_SQUARES[eksq]:
            s += 100 if loss == 0 else 30
        out.append(float(s))
    return out


def softmax(scores: list[float], temperature: float) -> list[float]:
    if not scores:
        return []
    top = max(scores)
    ex = [math.exp((x - top) / temperature) for x in scores]
    total = 0.0
    for e in ex:
        total += e
    return [e / total for e in ex]


@mypyc_attr(allow_interpreted_subclasses=True)
class ClassicalEvaluator(Evaluator):
    """Material, piece-square tables, pockets and king safety; serves value/priors, score, compare."""

    def __init__(self, value_scale: float = VALUE_SCALE, prior_temperature: float = PRIOR_TEMPERATURE,
                 compare_scale: float = COMPARE_SCALE) -> None:
        if value_scale <= 0 or prior_temperature <= 0 or compare_scale <= 0:
            raise ValueError("classical evaluator scales must be positive")
        self.name = "classical"
        self.variants = frozenset(v.name for v in ONE_BOARD)
        self.value_scale = value_scale
        self.prior_temperature = prior_temperature
        self.compare_scale = compare_scale

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE, SCORE, COMPARE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        out: list[Evaluation] = []
        for leaf in leaves:
            zh = leaf.variant in POCKET_VARIANTS
            st = leaf.state
            s = white_score_raw(st, zh)
            if st[10] != 0:
                s = -s
            value = cp_to_value(s * (VALUE_SCALE / self.value_scale), leaf.variant)
            priors = softmax(move_scores(st, leaf.moves, zh), self.prior_temperature)
            out.append(Evaluation(value, priors))
        return out

    def score(self, pos: Position) -> int:
        return stm_score(pos)

    def compare(self, pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], variant: str) -> list[float]:
        zh = variant in POCKET_VARIANTS
        out: list[float] = []
        for a, b in pairs:
            d = (white_score_raw(a, zh) - white_score_raw(b, zh)) / self.compare_scale
            if d > 40.0:
                out.append(1.0)
            elif d < -40.0:
                out.append(0.0)
            else:
                out.append(1.0 / (1.0 + math.exp(-d)))
        return out


# ------------------------------------------------------------------------- king danger (drops)

def attacked_by(color: int, own: i64, occ: i64, p: i64, n: i64, b: i64, r: i64, q: i64, k: i64,
                with_king: bool) -> i64:
    """Squares attacked by the pieces of ``color`` (``own``: its occupancy), its king's included
    only ``with_king``."""
    out: i64 = 0
    for pt in range(1, 7):
        if pt == 1:
            bb = p & own
        elif pt == 2:
            bb = n & own
        elif pt == 3:
            bb = b & own
        elif pt == 4:
            bb = r & own
        elif pt == 5:
            bb = q & own
        else:
            if not with_king:
                break
            bb = k & own
        while bb:
            sq = lsb(bb)
            bb ^= BB_SQUARES[sq]
            out |= _piece_attacks(pt, color, sq, occ)
    return out


def king_features(color: int, white: i64, black: i64, p: i64, n: i64, b: i64, r: i64, q: i64,
                  k: i64, pockets: int) -> tuple[int, int, int, int, int]:
    """The drop-danger facts about the king of ``color`` (the defender; ``e`` its opponent), from
    raw bitboards: ``(attacked, holes, knight_checks, pocket, pocket_knights)``.

    - ``attacked``: squares of the king's zone (its 8 neighbours) that ``e`` attacks;
    - ``holes``: empty squares of the zone no piece of the defender but its king guards, where
      ``e`` can drop a piece next to the king;
    - ``knight_checks``: empty squares a knight's jump from the king that no defender's piece
      guards, where a dropped knight gives an unblockable check;
    - ``pocket``, ``pocket_knights``: pieces (all, knights) in ``e``'s pocket."""
    own = white if color == 0 else black
    opp = black if color == 0 else white
    kbb = k & own
    if not kbb:
        return (0, 0, 0, 0, 0)
    ksq = lsb(kbb)
    occ = own | opp
    zone = BB_KING_ATTACKS[ksq]
    e = color ^ 1
    e_att = attacked_by(e, opp, occ, p, n, b, r, q, k, True)
    guard = attacked_by(color, own, occ, p, n, b, r, q, k, False)
    free = ~occ & ~guard
    pocket = 0
    for pt in range(1, 6):
        pocket += (pockets >> ((e * 5 + pt - 1) * 6)) & 63
    knights = (pockets >> ((e * 5 + 1) * 6)) & 63
    return (_bits(zone & e_att), _bits(zone & free), _bits(BB_KNIGHT_ATTACKS[ksq] & free), pocket, knights)


#: king danger units (x100) per fact of :func:`king_features`, fitted to Fairy-Stockfish's scores of
#: crazyhouse positions (``searchbench fit-king-danger``): an attacked zone square 100, a hole
#: times min(pieces in the opponent's pocket, 3) 10, an unguarded knight-check square 49 (78 with a
#: knight in the opponent's pocket), a piece in the opponent's pocket 3
KD_ATTACKED: Final = 100
KD_HOLE: Final = 10
KD_KNIGHT_CHECK: Final = 49
KD_KNIGHT_IN_HAND: Final = 29
KD_POCKET: Final = 3
#: centipawns of ``S`` per king danger unit (the same fit)
KD_WEIGHT: Final = 278


def king_danger(color: int, white: i64, black: i64, p: i64, n: i64, b: i64, r: i64, q: i64, k: i64,
                pockets: int) -> int:
    """King danger of ``color``'s king in units x 100: the weighted sum of :func:`king_features`."""
    att, holes, checks, pocket, knights = king_features(color, white, black, p, n, b, r, q, k, pockets)
    return (KD_ATTACKED * att + KD_HOLE * holes * min(pocket, 3)
            + (KD_KNIGHT_CHECK + (KD_KNIGHT_IN_HAND if knights else 0)) * checks + KD_POCKET * pocket)


def king_danger_score(pos: Position, weight: int) -> int:
    """``weight`` x (the opponent's king danger - the side to move's), in centipawns / 100 units."""
    pc = pos.pieces
    co = pos.colors
    pk = int(pos.pockets)
    us = pos.turn
    d = (king_danger(us ^ 1, co[0], co[1], pc[1], pc[2], pc[3], pc[4], pc[5], pc[6], pk)
         - king_danger(us, co[0], co[1], pc[1], pc[2], pc[3], pc[4], pc[5], pc[6], pk))
    return weight * d // 100
