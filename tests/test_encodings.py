"""Encodings against hand-worked positions, plus batch/per-position and move-map consistency."""
import random

import numpy as np
import pytest

import board
from board import Position, new_position
from evaluators import encodings as enc
from evaluators.neural import flatten_moves, legal_softmax
from evaluators.scale import cp_to_value, value_to_cp
from evaluators.base import Leaf

POCKET_FEN = "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22"
PROMOTED_FEN = "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1"
EP_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"


def planes(fen: str, variant: str = "crazyhouse") -> np.ndarray:
    return enc.crazyara_planes(enc.raw_array([new_position(variant, fen).raw_state()]), variant)[0]


def random_positions(variant: str, n: int, seed: int) -> list[Position]:
    rng = random.Random(seed)
    out = []
    pos = new_position(variant)
    while len(out) < n:
        moves = pos.legal_moves()
        if not moves or pos.ply() > 120:
            pos = new_position(variant)
            continue
        pos.push(rng.choice(moves))
        out.append(pos.copy())
    return out


# --------------------------------------------------------------------------- CrazyAra input

def test_crazyara_start_position_planes():
    x = planes(board.CRAZYHOUSE_STARTING_FEN)
    assert x.shape == (34, 8, 8)
    assert x[0, 1].tolist() == [1.0] * 8 and x[0].sum() == 8      # own pawns on rank 2
    assert x[6, 6].tolist() == [1.0] * 8 and x[6].sum() == 8      # opponent pawns on rank 7
    assert x[5, 0, 4] == 1 and x[11, 7, 4] == 1                    # kings on e1 / e8
    assert x[12:27].sum() == 0                                     # no repetition, pockets, promoted, ep
    assert (x[27] == 1).all()                                      # White to move
    assert np.allclose(x[28], 1 / 500)
    assert (x[29:33] == 1).all() and (x[33] == 0).all()


def test_crazyara_flips_for_black():
    pos = new_position("crazyhouse")
    pos.push_uci("e2e4")
    x = enc.crazyara_planes(enc.raw_array([pos.raw_state()]))[0]
    assert x[0, 1].tolist() == [1.0] * 8          # black's own pawns, mirrored to rank 2
    assert x[6, 6].tolist() == [1, 1, 1, 1, 0, 1, 1, 1]  # White's pawns mirrored, e-pawn missing
    assert x[6, 4, 4] == 1                          # e4 mirrored is e5
    assert x[5, 0, 4] == 1 and x[11, 7, 4] == 1     # own king e8 -> e1
    assert (x[27] == 0).all()


def test_crazyara_pockets_clocks_castling():
    x = planes(POCKET_FEN)
    assert np.allclose(x[14:19, 0, 0], [0, 0, 0, 1 / 32, 0])          # own: R
    assert np.allclose(x[19:24, 0, 0], [1 / 32, 2 / 32, 2 / 32, 0, 0])  # opponent: p n n b b
    assert np.allclose(x[28], 22 / 500) and np.allclose(x[33], 4 / 40)
    assert (x[29:33] == 0).all()


def test_crazyara_promoted_and_en_passant():
    x = planes(PROMOTED_FEN)  # Black to move: White's Q~ on b7 is the opponent's, mirrored to b2
    assert x[25, 1, 1] == 1 and x[25].sum() == 1 and x[24].sum() == 0
    y = planes(EP_FEN, "chess")
    assert y.shape == (22, 8, 8)
    assert y[14, 5, 5] == 1 and y[14].sum() == 1  # en-passant square f6
    assert (y[15] == 1).all() and (y[17:21] == 1).all()


def test_crazyara_repetition_planes():
    pos = new_position("crazyhouse")
    for u in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        pos.push_uci(u)
    x = enc.crazyara_planes(enc.raw_array([pos.raw_state()]))[0]
    assert (x[12] == 1).all() and (x[13] == 0).all()
    for u in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        pos.push_uci(u)
    x = enc.crazyara_planes(enc.raw_array([pos.raw_state()]))[0]
    assert (x[12] == 1).all() and (x[13] == 1).all()


@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_batch_equals_single_encodings(variant):
    ps = random_positions(variant, 40, 3)
    raw = enc.raw_array([p.raw_state() for p in ps])
    for f in (enc.crazyara_planes, enc.sixtyfour_planes, enc.deepchess_bits):
        batch = f(raw, variant)
        single = np.concatenate([f(raw[i:i + 1], variant) for i in range(len(ps))])
        assert np.array_equal(batch, single)
        assert batch.min() >= 0 and batch.max() <= 1


def test_bad_batches_are_errors():
    with pytest.raises(enc.EncodingError):
        enc.raw_array([(1, 2, 3)])
    with pytest.raises(enc.EncodingError):
        enc.crazyara_planes(np.zeros((2, 16), dtype=np.int64), "bughouse")


# --------------------------------------------------------------------------- CrazyAra policy

@pytest.mark.parametrize("uci,black,index", [
    ("e2e4", False, 1 * 64 + 12),          # N, length 2, from e2
    ("e7e5", True, 1 * 64 + 12),           # mirrored: the same
    ("g1f3", False, (56 + 7) * 64 + 6),    # knight (-1, +2)
    ("P@e4", False, 76 * 64 + 28),         # pawn drop at e4
    ("N@f6", True, 77 * 64 + 21),          # knight drop, f6 mirrored to f3
    ("a7b8n", False, 66 * 64 + 48),        # promotion N, dx +1
    ("a2a1q", True, 74 * 64 + 48),         # promotion Q, dx 0, mirrored a7
    ("e1g1", False, 15 * 64 + 4),          # castling = king E, length 2
    ("h1a8", False, (7 * 7 + 6) * 64 + 7), # NW, length 7
])
def test_crazyara_policy_hand_worked(uci, black, index):
    assert enc.crazyara_label_to_policy_index(uci, black) == index


def test_crazyara_label_list():
    labels = enc.CRAZYARA_LABELS
    assert len(labels) == 2272 and len(set(labels)) == 2272
    for black in (False, True):
        idx = [enc.crazyara_label_to_policy_index(lab, black) for lab in labels]
        assert min(idx) >= 0 and max(idx) < enc.POLICY_SIZE and len(set(idx)) == 2272


@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_legal_moves_map_to_distinct_indices(variant):
    labels = set(enc.CRAZYARA_LABELS)
    for pos in random_positions(variant, 150, 11):
        moves = np.array(pos.legal_moves(), dtype=np.int64)
        if not len(moves):
            continue
        ca = enc.crazyara_policy_indices(moves, np.full(len(moves), pos.turn == board.BLACK))
        sf = enc.sixtyfour_move_indices(moves)
        assert (ca >= 0).all() and len(set(ca.tolist())) == len(moves)
        assert (sf >= 0).all() and len(set(sf.tolist())) == len(moves)
        assert all(board.move_to_uci(int(m)) in labels for m in moves)


# --------------------------------------------------------------------------- SixtyFour

def test_sixtyfour_output_layout():
    t = enc.sixtyfour_move_table()
    ix = lambda u: int(t[board.move_from_uci(u)])  # noqa: E731
    assert ix("P@a2") == 0 and ix("P@h7") == 47 and ix("N@a1") == 48 and ix("Q@h8") == 303
    assert ix("a1a2") == 304                      # first linear entry: N, length 1, to a2
    assert ix("a7a8q") == ix("a7a8")              # queen promotion = the linear move
    assert ix("a1b3") == 1821                     # knight (+1, +2): to a3 kept (rank rule), to b3 next
    assert ix("b7a8n") == 2236 == ix("b2a1n")     # first under-promotion: N, left capture, file a
    assert ix("g7h8r") == 2307
    assert len(set(t[t >= 0].tolist())) == 304 + 1456 + 336 + 66  # every reachable output
    assert t.max() == 2307


def test_sixtyfour_planes_hand_worked():
    x = enc.sixtyfour_planes(enc.raw_array([new_position("crazyhouse", POCKET_FEN).raw_state()]))[0]
    assert x.shape == (15, 8, 8)
    p13 = x[13].reshape(64)
    assert np.flatnonzero(p13).tolist() == [16, 36, 37, 44, 45, 48, 60]  # p, nn, bb, R, White to move
    assert x[14].sum() == 0
    assert x[0, 1].sum() == 6 and x[7, 5, 2] == 1  # White pawns on rank 2 (PPP2PPP); Black knight c6
    y = enc.sixtyfour_planes(enc.raw_array([new_position("crazyhouse", PROMOTED_FEN).raw_state()]))[0]
    assert y[12, 6, 1] == 1 and y[12].sum() == 1 and y[13].reshape(64)[61] == 1
    s = enc.sixtyfour_planes(enc.raw_array([new_position("crazyhouse").raw_state()]))[0]
    assert s[14].reshape(64)[:6].tolist() == [1, 1, 1, 1, 0, 0]


# --------------------------------------------------------------------------- DeepChess

def test_deepchess_bits():
    x = enc.deepchess_bits(enc.raw_array([new_position("chess").raw_state()]), "chess")[0]
    assert x.shape == (773,) and x.sum() == 32 + 1 + 4
    assert x[5 * 64 + 4] == 1 and x[384 + 48] == 1 and x[768] == 1
    y = enc.deepchess_bits(enc.raw_array([new_position("crazyhouse", POCKET_FEN).raw_state()]), "crazyhouse")[0]
    assert y.shape == (897,)
    assert np.flatnonzero(y[837:]).tolist() == [16 + 4 + 4, 30, 30 + 16, 30 + 17, 30 + 20, 30 + 21]
    z = enc.deepchess_bits(enc.raw_array([new_position("crazyhouse", PROMOTED_FEN).raw_state()]), "crazyhouse")[0]
    assert z[773 + 49] == 1 and z[768] == 0


def test_raw_to_fen_round_trip():
    for variant in ("crazyhouse", "chess"):
        for pos in random_positions(variant, 60, 5):
            assert enc.raw_to_fen(pos.raw_state(), variant) == pos.fen()


# --------------------------------------------------------------------------- helpers

def test_legal_softmax_matches_per_leaf_softmax():
    rng = np.random.default_rng(0)
    ps = random_positions("crazyhouse", 12, 8)
    leaves = [Leaf.of(p) for p in ps] + [Leaf(ps[0].raw_state(), [], "crazyhouse")]
    moves, seg, counts = flatten_moves(leaves)
    logits = rng.normal(size=(len(leaves), 50)).astype(np.float32)
    idx = rng.integers(0, 50, size=len(moves))
    pri = legal_softmax(logits, seg, idx, counts)
    assert pri[-1] == []
    start = 0
    for i, c in enumerate(counts[:-1]):
        x = logits[i, idx[start:start + c]].astype(np.float64)
        e = np.exp(x - x.max())
        assert np.allclose(pri[i], e / e.sum())
        start += c


def test_value_to_centipawns():
    assert value_to_cp(0.0, "crazyhouse") == 0
    assert value_to_cp(0.5, "crazyhouse") == 380 and value_to_cp(-0.5, "crazyhouse") == -380
    assert value_to_cp(1.0, "crazyhouse") == 9999 and value_to_cp(-1.0, "chess") == -9999
    assert value_to_cp(0.5, "chess") == 206 and value_to_cp(0.5, "bughouse") == 380
    for variant in ("chess", "crazyhouse"):
        assert cp_to_value(600, variant) == pytest.approx(1 - {"chess": 1.4, "crazyhouse": 1.2}[variant] ** -6)
        for cp in (-2000, -600, -1, 0, 3, 20, 600, 5000):
            assert value_to_cp(cp_to_value(cp, variant), variant) == cp  # one scale, both ways
        assert cp_to_value(30000, variant) == 1.0 and cp_to_value(-9999, variant) == -1.0


@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_crazyara_planes_match_square_by_square_reference(variant):
    """The vectorised encoder equals an obvious python-chess loop (experiments/bench_encode.py)."""
    from board.convert import to_python_chess
    from experiments.bench.encode import reference_crazyara_planes

    ps = random_positions(variant, 120, 21)
    raw = enc.raw_array([p.raw_state() for p in ps])
    x = enc.crazyara_planes(raw, variant)
    for i, p in enumerate(ps):
        ref = reference_crazyara_planes(to_python_chess(p), int(raw[i, 15]))
        assert np.array_equal(x[i], ref), p.fen()
