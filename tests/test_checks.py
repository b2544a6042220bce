"""search.checks.checking_moves (used by MCTS's check enhancement) equals making each move."""
import os

from hypothesis import given, settings
from hypothesis import strategies as st

import board
from search.checks import checking_moves
from tests.positions import random_position

PURE = os.environ.get("SEARCHBENCH_PURE") == "1"
# Positions with full pockets, so that drops (and drop checks) are plentiful.
POCKET_FENS = [
    "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[QRBNPqrbnp] b KQkq - 0 1",
    "2k5/8/8/8/8/8/8/4K3[QRBNPqrbnp] w - - 0 1",
    "4k3/1Q~6/8/8/4b3/8/Kpp5/8[PNBRQ] b - - 0 1",
]


@settings(max_examples=25 if PURE else 120)
@given(st.sampled_from(["chess", "crazyhouse"]), st.integers(0, 10**6), st.integers(0, 120))
def test_checking_moves_equals_push_and_is_check(variant: str, seed: int, plies: int) -> None:
    pos = random_position(variant, seed, plies)
    moves = pos.legal_moves()
    assert checking_moves(pos, moves) == [pos.gives_check(m) for m in moves]


def test_drop_checks() -> None:
    for fen in POCKET_FENS:
        pos = board.CrazyhousePosition(fen)
        moves = pos.legal_moves()
        expected = [pos.gives_check(m) for m in moves]
        assert any(expected) and checking_moves(pos, moves) == expected
