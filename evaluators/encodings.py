"""Batch encoders for the neural evaluators: numpy over raw bitboards (``Position.raw_state()``).

Every encoder takes ``raw``, an ``int64`` array ``[B, 16]`` of raw states (:func:`raw_array`), and
works on whole batches: bitboards become planes with one ``np.unpackbits`` (square ``s`` = bit
``s``, so a plane reshaped to 8x8 is ``[rank][file]``, rank 0 = rank 1), a vertical flip is a byte
swap of the 64-bit word.  Moves become indices through lookup tables indexed by the move int
(``from | to << 6 | promo << 12 | drop << 15``, below 2^18).

CrazyAra (SPEC.md section 2), board flipped so that the side to move is at the bottom
    crazyhouse, 34 planes: 0-5 own P N B R Q K; 6-11 opponent's; 12-13 repetition (>= 1, >= 2
    earlier occurrences); 14-18 own pocket P N B R Q / 32; 19-23 opponent's; 24/25 own/opponent
    promoted pieces; 26 en-passant square; 27 colour (ones if White is to move); 28 full-move
    number / 500; 29-30 own castling K, Q; 31-32 opponent's; 33 half-move clock / 40.
    chess, 22 planes: the same scheme without pockets and promoted pieces: 0-11 pieces, 12-13
    repetition, 14 en passant, 15 colour, 16 move number, 17-20 castling, 21 half-move clock.
    Policy: 81 planes x 64 = 5184 logits, ``plane * 64 + square`` (square = rank * 8 + file after
    mirroring for Black); planes 0-55 queen-like ``dir * 7 + (len - 1)`` with dirs N NE E SE S SW W
    NW, 56-63 knight moves (order of ``KNIGHT_DIRS``), 64-75 promotions ``64 + piece * 3 + (dx + 1)``
    with N=0 B=1 R=2 Q=3, 76-80 drops P N B R Q.  Moves are indexed at the from-square, drops at
    the to-square.  ``CRAZYARA_LABELS`` is the 2272-move list in UCI form (1792 queen-like and
    knight moves, 176 promotions of both colours, 304 drops); our order is
    queen/knight moves by from-square, then promotions, then drops.

SixtyFour (paper section 3.1-3.2): 15 planes, board *not* flipped (P1 = White, P2 = Black, as the
    paper's table; the turn is an input): 0-5 White P N B R Q K, 6-11 Black, 12 promoted pieces,
    13 unary pocket counts in the table's order (White P x16, Black P x16, White N x4, Black N x4,
    B, B, R, R x4, White Q x2, Black Q x2) then White-to-move, Black-to-move, 2 zeros;
    14: White K-castle, Black K-castle, White Q-castle, Black Q-castle, repetition >= 1, >= 2,
    58 zeros.  Output 2308 = 304 drops (pawn on ranks 2-7, then N B R Q on all squares) + 1516
    queen-like moves by destination square (dir, distance, destination; off-board origins removed
    except for length-one diagonals, as the paper) + 416 knight moves by destination (removing the
    ranks no knight move of that direction reaches) + 72 under-promotions (piece N B R x way
    left-capture/straight/right-capture x destination file).  Queen promotions are the pawn's
    linear move.  Targets: winner's move 1.0, draw 0.5, loser's 0.1 (``SIXTYFOUR_POLICY_SCALE``).

DeepChess: 773 bits = White P N B R Q K x 64, Black P..K x 64, side to move (1 = White), castling
    WK WQ BK BQ; absolute orientation (the comparator answers "better for White").
    Crazyhouse extension (897 bits): + promoted-piece mask (64) + unary pockets (White P x16, N, B,
    R x4, Q x2, then Black the same: 60).
"""
from __future__ import annotations

from typing import Final, Sequence

import numpy as np

from board.moves import move_from_uci
from board.position import (
    RAW_CASTLING, RAW_EP, RAW_FULLMOVE, RAW_HALFMOVE, RAW_POCKETS, RAW_PROMOTED, RAW_REPETITIONS,
    RAW_TURN,
)
from board.variants import CHESS, CRAZYHOUSE, ONE_BOARD, variant_of

RAW_LEN: Final = 16
MOVE_TABLE_SIZE: Final = 1 << 18

CRAZYARA_PLANES: Final = {v.name: 34 if v.pockets else 22 for v in ONE_BOARD}
POLICY_PLANES: Final = 81
POLICY_SIZE: Final = POLICY_PLANES * 64  # 5184
SIXTYFOUR_PLANES: Final = 15
SIXTYFOUR_MOVES: Final = 2308
DEEPCHESS_BITS: Final = {v.name: 897 if v.pockets else 773 for v in ONE_BOARD}
SIXTYFOUR_POLICY_SCALE: Final = {1: 1.0, 0: 0.5, -1: 0.1}  # game result for the mover -> target

# N NE E SE S SW W NW (dx, dy)
QUEEN_DIRS: Final = ((0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1))
KNIGHT_DIRS: Final = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
POCKET_CAPS: Final = (16, 4, 4, 4, 2)  # unary pocket capacity for P N B R Q (SixtyFour, DeepChess)
FILES: Final = "abcdefgh"
PIECE_LETTERS: Final = " pnbrqk"


class EncodingError(ValueError):
    """A batch that cannot be encoded (wrong shape, unknown variant)."""


def raw_array(states: Sequence[tuple[int, ...]]) -> np.ndarray:
    """Raw states (``Position.raw_state()`` tuples) as an ``int64 [B, 16]`` array."""
    arr = np.array(states, dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != RAW_LEN:
        raise EncodingError(f"raw states must be {RAW_LEN}-tuples, got shape {arr.shape}")
    return arr


def _check(raw: np.ndarray) -> np.ndarray:
    if raw.ndim != 2 or raw.shape[1] != RAW_LEN:
        raise EncodingError(f"raw batch must be [B, {RAW_LEN}], got {raw.shape}")
    return np.ascontiguousarray(raw, dtype=np.int64)


def bitboard_planes(bbs: np.ndarray, mirror: np.ndarray | None = None) -> np.ndarray:
    """``int64 [B, K]`` bitboards -> ``uint8 [B, K, 64]`` bits (index = square), flipped vertically
    (square ^ 56) where ``mirror`` is true."""
    bbs = np.ascontiguousarray(bbs, dtype=np.int64)
    if mirror is not None:
        bbs = np.where(mirror[:, None], bbs.byteswap(), bbs)
        bbs = np.ascontiguousarray(bbs)
    b, k = bbs.shape
    bits = np.unpackbits(bbs.view(np.uint8).reshape(b, k, 8), axis=-1, bitorder="little")
    return bits.reshape(b, k, 64)


def pocket_counts(raw: np.ndarray) -> np.ndarray:
    """``int64 [B, 2, 5]``: pocket counts of (White, Black) x (P, N, B, R, Q)."""
    shifts = np.arange(10, dtype=np.int64) * 6
    return ((raw[:, RAW_POCKETS, None] >> shifts) & 63).reshape(-1, 2, 5)


def _unary(counts: np.ndarray, cap: int) -> np.ndarray:
    """``[B] -> [B, cap]`` with the first min(count, cap) entries 1."""
    return (np.arange(cap)[None, :] < counts[:, None]).astype(np.float32)


# --------------------------------------------------------------------------- CrazyAra

def crazyara_planes(raw: np.ndarray, variant: str = CRAZYHOUSE.name) -> np.ndarray:
    """CrazyAra input planes ``float32 [B, 34 or 22, 8, 8]`` (see the module docstring)."""
    if variant not in CRAZYARA_PLANES:
        raise EncodingError(f"no CrazyAra encoding for variant {variant!r}")
    raw = _check(raw)
    n = raw.shape[0]
    turn = raw[:, RAW_TURN]
    black = turn == 1
    us_occ = np.where(black, raw[:, 1], raw[:, 0])
    them_occ = np.where(black, raw[:, 0], raw[:, 1])
    pcs = raw[:, 2:8]
    ep = raw[:, RAW_EP]
    ep_bb = np.where(ep >= 0, np.left_shift(np.int64(1), np.maximum(ep, 0)), 0).astype(np.int64)
    bbs = np.concatenate([pcs & us_occ[:, None], pcs & them_occ[:, None],
                          (raw[:, RAW_PROMOTED] & us_occ)[:, None], (raw[:, RAW_PROMOTED] & them_occ)[:, None],
                          ep_bb[:, None]], axis=1)
    bits = bitboard_planes(bbs, black).astype(np.float32)
    reps = raw[:, RAW_REPETITIONS]
    cr = raw[:, RAW_CASTLING]
    us_cr = np.where(black, cr >> 2, cr) & 3
    them_cr = np.where(black, cr, cr >> 2) & 3
    const: list[np.ndarray] = [(reps >= 1), (reps >= 2)]
    if variant_of(variant).pockets:
        pk = pocket_counts(raw)
        own = np.where(black[:, None], pk[:, 1], pk[:, 0]) / 32.0
        opp = np.where(black[:, None], pk[:, 0], pk[:, 1]) / 32.0
        const += [own[:, i] for i in range(5)] + [opp[:, i] for i in range(5)]
    tail = [turn == 0, raw[:, RAW_FULLMOVE] / 500.0, us_cr & 1, us_cr >> 1, them_cr & 1, them_cr >> 1,
            raw[:, RAW_HALFMOVE] / 40.0]
    nplanes = CRAZYARA_PLANES[variant]
    out = np.empty((n, nplanes, 64), dtype=np.float32)
    out[:, 0:12] = bits[:, 0:12]
    out[:, 12:12 + len(const)] = np.stack(const, axis=1).astype(np.float32)[:, :, None]
    k = 12 + len(const)
    if variant_of(variant).pockets:
        out[:, k:k + 3] = bits[:, 12:15]  # promoted own, promoted opponent, en passant
        k += 3
    else:
        out[:, k] = bits[:, 14]
        k += 1
    out[:, k:k + 7] = np.stack(tail, axis=1).astype(np.float32)[:, :, None]
    assert k + 7 == nplanes
    return out.reshape(n, nplanes, 8, 8)


def queen_knight_index(frm: int, dx: int, dy: int) -> int:
    """Policy-map index of a queen-like (planes 0-55: direction x 7 + length - 1) or knight move
    (planes 56-63) from ``frm`` by ``(dx, dy)``; -1 for neither.  Shared by the CrazyAra and the
    LazyBug maps."""
    if (abs(dx), abs(dy)) in ((1, 2), (2, 1)):
        return (56 + KNIGHT_DIRS.index((dx, dy))) * 64 + frm
    if (dx == 0 and dy == 0) or not (dx == 0 or dy == 0 or abs(dx) == abs(dy)):
        return -1
    length = max(abs(dx), abs(dy))
    d = QUEEN_DIRS.index((int(np.sign(dx)), int(np.sign(dy))))
    return (d * 7 + length - 1) * 64 + frm


def _crazyara_index(frm: int, to: int, promo: int, drop: int) -> int:
    """Policy-map index (from the mover's side, squares already mirrored for Black)."""
    if drop:
        return (76 + drop - 1) * 64 + to
    dx = (to & 7) - (frm & 7)
    dy = (to >> 3) - (frm >> 3)
    if promo:
        if abs(dx) > 1 or abs(dy) != 1:
            return -1
        return (64 + (promo - 2) * 3 + dx + 1) * 64 + frm
    return queen_knight_index(frm, dx, dy)


def _move_int(frm: int, to: int, promo: int = 0, drop: int = 0) -> int:
    return frm | (to << 6) | (promo << 12) | (drop << 15)


def _all_moves() -> list[tuple[int, int, int, int]]:
    """Every (from, to, promo, drop) a move int can name on a board: moves between two distinct
    squares (with promo 0 or N B R Q) and drops."""
    out = []
    for frm in range(64):
        for to in range(64):
            if frm != to:
                for promo in (0, 2, 3, 4, 5):
                    out.append((frm, to, promo, 0))
    for drop in range(1, 6):
        for to in range(64):
            out.append((to, to, 0, drop))
    return out


_CRAZYARA_TABLE: np.ndarray | None = None
_SIXTYFOUR_TABLE: np.ndarray | None = None


def crazyara_move_table() -> np.ndarray:
    """``int32 [2, 2^18]``: policy-map index of a move int for White / Black to move (-1: none)."""
    global _CRAZYARA_TABLE
    if _CRAZYARA_TABLE is None:
        t = np.full((2, MOVE_TABLE_SIZE), -1, dtype=np.int32)
        for frm, to, promo, drop in _all_moves():
            m = _move_int(frm, to, promo, drop)
            t[0, m] = _crazyara_index(frm, to, promo, drop)
            t[1, m] = _crazyara_index(frm ^ 56, to ^ 56, promo, drop)
        _CRAZYARA_TABLE = t
    return _CRAZYARA_TABLE


def crazyara_policy_indices(moves: np.ndarray, black: np.ndarray) -> np.ndarray:
    """Flat policy-map indices (0..5183) of move ints; ``black`` says whose move (mirrors)."""
    t = crazyara_move_table()
    return t[black.astype(np.int64), moves.astype(np.int64)]


def _square_name(sq: int) -> str:
    return FILES[sq & 7] + str((sq >> 3) + 1)


def _crazyara_labels() -> list[str]:
    labels: list[str] = []
    for frm in range(64):
        f, r = frm & 7, frm >> 3
        for dx, dy in QUEEN_DIRS:
            for length in range(1, 8):
                tf, tr = f + dx * length, r + dy * length
                if 0 <= tf < 8 and 0 <= tr < 8:
                    labels.append(_square_name(frm) + _square_name(tr * 8 + tf))
        for dx, dy in KNIGHT_DIRS:
            tf, tr = f + dx, r + dy
            if 0 <= tf < 8 and 0 <= tr < 8:
                labels.append(_square_name(frm) + _square_name(tr * 8 + tf))
    for from_rank, to_rank in ((6, 7), (1, 0)):
        for f in range(8):
            for df in (-1, 0, 1):
                if 0 <= f + df < 8:
                    for p in "nbrq":
                        labels.append(_square_name(from_rank * 8 + f) + _square_name(to_rank * 8 + f + df) + p)
    for p in "PNBRQ":
        for to in range(64):
            if p == "P" and (to < 8 or to >= 56):
                continue
            labels.append(f"{p}@{_square_name(to)}")
    return labels


#: CrazyAra's 2272-move output list in UCI form (absolute squares, both colours' promotions).
CRAZYARA_LABELS: Final = _crazyara_labels()


def crazyara_label_to_policy_index(label: str, black: bool) -> int:
    """Policy-map index of a UCI label when ``black`` (True) or White is to move (-1 if none)."""
    return int(crazyara_move_table()[int(black), move_from_uci(label)])


# --------------------------------------------------------------------------- SixtyFour

def _sixtyfour_layout() -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """The 2308 outputs as (from, to, promo, drop) and the move-int lookup table."""
    entries: list[tuple[int, int, int, int]] = []  # (from, to, promo, drop); from=-1: never legal
    for drop in range(1, 6):
        for to in range(64):
            if drop == 1 and (to < 8 or to >= 56):
                continue
            entries.append((to, to, 0, drop))
    for dx, dy in QUEEN_DIRS:
        for length in range(1, 8):
            for to in range(64):
                ff, fr = (to & 7) - dx * length, (to >> 3) - dy * length
                if 0 <= ff < 8 and 0 <= fr < 8:
                    entries.append((fr * 8 + ff, to, 0, 0))
                elif length == 1 and dx != 0 and dy != 0:
                    entries.append((-1, to, 0, 0))  # kept by the paper, never legal
    for dx, dy in KNIGHT_DIRS:
        for to in range(64):
            if 0 <= (to >> 3) - dy < 8:
                ff, fr = (to & 7) - dx, (to >> 3) - dy
                entries.append((fr * 8 + ff if 0 <= ff < 8 else -1, to, 0, 0))
    for promo in (2, 3, 4):
        for way in (-1, 0, 1):
            for f in range(8):
                entries.append((-2 - way, f, promo, 0))  # resolved per colour below
    table = np.full(MOVE_TABLE_SIZE, -1, dtype=np.int32)
    for i, (frm, to, promo, drop) in enumerate(entries):
        if drop:
            table[_move_int(to, to, 0, drop)] = i
        elif promo:
            way = -2 - frm
            f = to
            for from_rank, to_rank in ((6, 7), (1, 0)):
                ff = f - way
                if 0 <= ff < 8:
                    table[_move_int(from_rank * 8 + ff, to_rank * 8 + f, promo, 0)] = i
        elif frm >= 0:
            table[_move_int(frm, to)] = i
            if (to >> 3) in (0, 7) and abs((to & 7) - (frm & 7)) <= 1 and abs((to >> 3) - (frm >> 3)) == 1:
                table[_move_int(frm, to, 5, 0)] = i  # queen promotion = the linear move
    return table, entries


def sixtyfour_move_table() -> np.ndarray:
    """``int32 [2^18]``: SixtyFour output index (0..2307) of a move int (-1: none)."""
    global _SIXTYFOUR_TABLE
    if _SIXTYFOUR_TABLE is None:
        table, entries = _sixtyfour_layout()
        if len(entries) != SIXTYFOUR_MOVES:
            raise AssertionError(f"SixtyFour layout has {len(entries)} outputs, not {SIXTYFOUR_MOVES}")
        _SIXTYFOUR_TABLE = table
    return _SIXTYFOUR_TABLE


def sixtyfour_move_indices(moves: np.ndarray) -> np.ndarray:
    """SixtyFour output indices of move ints (absolute squares, no mirroring)."""
    return sixtyfour_move_table()[moves.astype(np.int64)]


def sixtyfour_planes(raw: np.ndarray, variant: str = CRAZYHOUSE.name) -> np.ndarray:
    """SixtyFour input ``float32 [B, 15, 8, 8]`` (960 values, see the module docstring)."""
    raw = _check(raw)
    n = raw.shape[0]
    pcs = raw[:, 2:8]
    bbs = np.concatenate([pcs & raw[:, 0:1], pcs & raw[:, 1:2], raw[:, RAW_PROMOTED:RAW_PROMOTED + 1]], axis=1)
    out = np.zeros((n, 15, 64), dtype=np.float32)
    out[:, 0:13] = bitboard_planes(bbs)
    pk = pocket_counts(raw)
    k = 0
    for pt, cap in enumerate(POCKET_CAPS):
        for color in (0, 1):
            out[:, 13, k:k + cap] = _unary(pk[:, color, pt], cap)
            k += cap
    turn = raw[:, RAW_TURN]
    out[:, 13, k] = turn == 0
    out[:, 13, k + 1] = turn == 1
    cr = raw[:, RAW_CASTLING]
    reps = raw[:, RAW_REPETITIONS]
    for i, v in enumerate((cr & 1, (cr >> 2) & 1, (cr >> 1) & 1, (cr >> 3) & 1, reps >= 1, reps >= 2)):
        out[:, 14, i] = v
    return out.reshape(n, 15, 8, 8)


# --------------------------------------------------------------------------- DeepChess

def deepchess_bits(raw: np.ndarray, variant: str = CHESS.name) -> np.ndarray:
    """DeepChess input ``float32 [B, 773]`` (chess) or ``[B, 897]`` (crazyhouse extension)."""
    if variant not in DEEPCHESS_BITS:
        raise EncodingError(f"no DeepChess encoding for variant {variant!r}")
    raw = _check(raw)
    n = raw.shape[0]
    pcs = raw[:, 2:8]
    extra = [raw[:, RAW_PROMOTED:RAW_PROMOTED + 1]] if variant_of(variant).pockets else []
    bits = bitboard_planes(np.concatenate([pcs & raw[:, 0:1], pcs & raw[:, 1:2]] + extra, axis=1))
    out = np.zeros((n, DEEPCHESS_BITS[variant]), dtype=np.float32)
    out[:, :768] = bits[:, :12].reshape(n, 768)
    cr = raw[:, RAW_CASTLING]
    out[:, 768] = raw[:, RAW_TURN] == 0
    for i in range(4):
        out[:, 769 + i] = (cr >> i) & 1
    if variant_of(variant).pockets:
        out[:, 773:837] = bits[:, 12]
        pk = pocket_counts(raw)
        k = 837
        for color in (0, 1):
            for pt, cap in enumerate(POCKET_CAPS):
                out[:, k:k + cap] = _unary(pk[:, color, pt], cap)
                k += cap
    return out


# --------------------------------------------------------------------------- back to FEN

def raw_to_fen(state: Sequence[int], variant: str = CRAZYHOUSE.name) -> str:
    """The FEN of a raw state (pockets in brackets and ``~`` for promoted pieces in crazyhouse);
    used to rebuild positions from data shards (mate-in-one sets, tests)."""
    s = [int(v) for v in state]
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for file in range(8):
            bit = 1 << (rank * 8 + file)
            pt = next((p for p in range(1, 7) if (s[1 + p] & 0xFFFFFFFFFFFFFFFF) & bit), 0)
            if not pt:
                empty += 1
                continue
            if empty:
                row, empty = row + str(empty), 0
            ch = PIECE_LETTERS[pt]
            row += ch.upper() if (s[0] & 0xFFFFFFFFFFFFFFFF) & bit else ch
            if (s[RAW_PROMOTED] & 0xFFFFFFFFFFFFFFFF) & bit:
                row += "~"
        rows.append(row + (str(empty) if empty else ""))
    fen = "/".join(rows)
    if variant_of(variant).pockets:
        pk = s[RAW_POCKETS]
        pocket = ""
        for color in (0, 1):
            for pt in range(5, 0, -1):
                n = (pk >> ((color * 5 + pt - 1) * 6)) & 63
                pocket += (PIECE_LETTERS[pt].upper() if color == 0 else PIECE_LETTERS[pt]) * n
        fen += f"[{pocket}]"
    cr = s[RAW_CASTLING]
    castling = "".join(c for i, c in enumerate("KQkq") if cr >> i & 1) or "-"
    ep = _square_name(s[RAW_EP]) if s[RAW_EP] >= 0 else "-"
    return f"{fen} {'w' if s[RAW_TURN] == 0 else 'b'} {castling} {ep} {s[RAW_HALFMOVE]} {s[RAW_FULLMOVE]}"
