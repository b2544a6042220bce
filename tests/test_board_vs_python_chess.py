"""Property tests: along random games, our rules agree with python-chess after every ply, and
make/unmake restores every position and hash exactly."""
from __future__ import annotations

import os
import random

import chess
import chess.variant
from hypothesis import given, settings
from hypothesis import strategies as st

from board import new_position
from board.convert import from_python_chess, to_python_chess
from board.moves import move_to_uci

PURE = os.environ.get("SEARCHBENCH_PURE") == "1"
START = {
    "chess": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "crazyhouse": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
}
# Starting points that reach promotions, en passant, castling and drops quickly.
EXTRA = {
    "chess": [
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
        "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        "4k3/8/8/8/8/8/8/4K2R w K - 97 80",
        "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",
    ],
    "crazyhouse": [
        "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq - 0 1",
        "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1",
        "2rn1b1r/1pp2n1p/B1PBk1pP/5p1P/P5p1/2P2RP1/RP1QNP2/1NBK4[QPp] w - - 0 1",
        "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22",
    ],
}


def _pc(variant: str, fen: str) -> chess.Board:
    return chess.variant.CrazyhouseBoard(fen) if variant == "crazyhouse" else chess.Board(fen)


def _check_same(pos, b: chess.Board) -> None:
    ours = sorted(move_to_uci(m) for m in pos.legal_moves())
    theirs = sorted(m.uci() for m in b.legal_moves)
    assert ours == theirs, f"{pos.fen()}: only ours {set(ours) - set(theirs)}, only python-chess {set(theirs) - set(ours)}"
    assert pos.fen() == b.fen()
    assert pos.is_check() == b.is_check()
    assert pos.is_checkmate() == b.is_checkmate()
    assert pos.is_stalemate() == b.is_stalemate()
    assert pos.is_insufficient_material() == b.is_insufficient_material()
    assert pos.is_fifty_moves() == b.is_fifty_moves()
    assert pos.is_repetition(2) == b.is_repetition(2)
    assert pos.is_repetition(3) == b.is_repetition(3)
    o = pos.outcome(claim_draw=False)
    theirs_o = b.outcome(claim_draw=False)
    assert (o[0] if o else None) == (theirs_o.result() if theirs_o else None)
    assert pos.zobrist == pos.compute_zobrist()


@st.composite
def games(draw: st.DrawFn) -> tuple[str, str, list[int]]:
    variant = draw(st.sampled_from(["chess", "crazyhouse"]))
    fen = draw(st.sampled_from([START[variant]] + EXTRA[variant]))
    plies = draw(st.integers(min_value=1, max_value=160))
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32)))
    return variant, fen, [rng.randrange(10_000) for _ in range(plies)]


@settings(max_examples=30 if PURE else 150)
@given(games())
def test_random_games_agree_with_python_chess(game: tuple[str, str, list[int]]) -> None:
    variant, fen, choices = game
    pos = new_position(variant, fen)
    b = _pc(variant, fen)
    trail = [(pos.fen(), pos.zobrist)]
    for c in choices:
        _check_same(pos, b)
        moves = pos.legal_moves()
        if not moves:
            break
        m = sorted(moves)[c % len(moves)]
        pos.push(m)
        b.push(chess.Move.from_uci(move_to_uci(m)))
        trail.append((pos.fen(), pos.zobrist))
    _check_same(pos, b)
    # The hash depends on the position only: equal to a fresh one set from the FEN.
    assert new_position(variant, pos.fen()).zobrist == pos.zobrist
    # Conversion round trip keeps the position and the history.
    assert to_python_chess(pos).fen() == pos.fen()
    assert from_python_chess(b).fen() == pos.fen()
    # Unmake everything: every earlier position and hash comes back exactly.
    while trail:
        assert (pos.fen(), pos.zobrist) == trail.pop()
        if trail:
            pos.pop()


def _replayed(pos):
    """What ``copy`` used to be: the root position with every move played again."""
    other = new_position(pos.variant, pos.root_fen)
    for m in pos.move_stack:
        other.push(m)
    return other


def _state(pos) -> tuple[object, ...]:
    return (pos.fen(), pos.zobrist, pos.move_stack, pos.ply(), pos.root_fen, list(pos.colors), list(pos.pieces),
            list(pos.mailbox), pos.promoted, pos.pockets, pos.turn, pos.castling, pos.ep_square, pos.halfmove_clock,
            pos.fullmove_number, pos.is_repetition(2), pos.is_repetition(3), sorted(pos.legal_moves()))


@settings(max_examples=20 if PURE else 80)
@given(games())
def test_a_copy_is_the_position_replayed_from_its_root(game: tuple[str, str, list[int]]) -> None:
    """``copy`` copies the state and the undo stack; it equals the root with the moves played again,
    at every ply, and both then go on alike: the same moves forward, and pops back to the root (the
    copy's stack past its pointer holds stale entries the replay has not: never read)."""
    variant, fen, choices = game
    pos = new_position(variant, fen)
    for i, c in enumerate(choices):
        moves = pos.legal_moves()
        if not moves:
            break
        pos.push(sorted(moves)[c % len(moves)])
        if i % 7 == 3 and pos.ply() >= 2:  # a stack with entries past its pointer
            m = pos.move_stack[-1]
            pos.pop()
            pos.push(m)
        copied, replayed = pos.copy(), _replayed(pos)
        before = _state(pos)
        assert type(copied) is type(pos) and _state(copied) == _state(replayed) == before
        for p in (copied, replayed):  # two plies on, then back to the root
            for k in range(2):
                ms = p.legal_moves()
                if ms:
                    p.push(sorted(ms)[(c + k) % len(ms)])
        assert _state(copied) == _state(replayed)
        while copied.ply():
            copied.pop()
            replayed.pop()
            assert _state(copied) == _state(replayed)
        assert _state(pos) == before  # nothing shared: playing on the copy leaves the position alone


def _shuffle(pos, b, moves: list[str]) -> None:
    for u in moves:
        pos.push_uci(u)
        b.push_uci(u)


def test_threefold_and_fivefold_repetition_by_knight_shuffle() -> None:
    for variant in ("chess", "crazyhouse"):
        pos = new_position(variant)
        b = _pc(variant, START[variant])
        cycle = ["g1f3", "g8f6", "f3g1", "f6g8"]
        for i in range(4):
            _shuffle(pos, b, cycle)
            assert pos.is_repetition(3) == b.is_repetition(3)
            assert pos.is_repetition(5) == b.is_repetition(5)
        assert pos.is_repetition(5)
        assert pos.outcome(claim_draw=False) == ("1/2-1/2", "fivefold_repetition")


def test_crazyhouse_repetition_spans_captures() -> None:
    # Captures are not irreversible in crazyhouse: python-chess looks back past them.
    fen = "4k3/8/8/3p4/4P3/8/8/4K3[] w - - 0 1"
    pos = new_position("crazyhouse", fen)
    b = _pc("crazyhouse", fen)
    _shuffle(pos, b, ["e4d5", "e8d7", "e1d2", "d7e8", "d2e1", "e8d7", "e1d2", "d7e8", "d2e1"])
    assert pos.is_repetition(3) == b.is_repetition(3)


def test_fifty_move_rule_chess_only() -> None:
    fen = "4k3/8/8/8/8/8/8/4K2R w K - 99 80"
    pos = new_position("chess", fen)
    pos.push_uci("h1h2")
    assert pos.is_fifty_moves() and pos.outcome() == ("1/2-1/2", "fifty_moves")
    zh = new_position("crazyhouse", "4k3/8/8/8/8/8/8/4K2R[] w K - 99 80")
    zh.push_uci("h1h2")
    assert not zh.is_fifty_moves() and zh.outcome() is None
    assert not chess.variant.CrazyhouseBoard(zh.fen()).is_fifty_moves()


def test_transpositions_have_equal_hashes() -> None:
    orders = [
        ("chess", ["g1f3", "g8f6", "b1c3", "b8c6"], ["b1c3", "b8c6", "g1f3", "g8f6"]),
        # Crazyhouse: the same pockets reached by captures in different orders.
        ("crazyhouse", ["e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5"],
         ["b1c3", "d7d5", "e2e4", "d5e4", "c3e4", "d8d5", "e4c3", "d5a5"]),
    ]
    for variant, a, b in orders:
        pa, pb = new_position(variant), new_position(variant)
        for u in a:
            pa.push_uci(u)
        for u in b:
            pb.push_uci(u)
        assert pa.board_fen() == pb.board_fen()
        assert pa.zobrist == pb.zobrist


def test_hash_distinguishes_pockets_and_promoted_pieces() -> None:
    a = new_position("crazyhouse", "4k3/8/8/8/8/8/8/Q3K3[] w - - 0 1")
    b = new_position("crazyhouse", "4k3/8/8/8/8/8/8/Q~3K3[] w - - 0 1")
    c = new_position("crazyhouse", "4k3/8/8/8/8/8/8/Q3K3[P] w - - 0 1")
    assert len({a.zobrist, b.zobrist, c.zobrist}) == 3
    # In chess promoted status is not part of the position.
    assert new_position("chess", "4k3/8/8/8/8/8/8/Q3K3 w - - 0 1").zobrist == new_position("chess", "4k3/8/8/8/8/8/8/Q3K3 w - - 0 1").zobrist


def test_captured_promoted_piece_returns_as_pawn() -> None:
    pos = new_position("crazyhouse", "2r1k3/1Q~6/8/8/8/8/8/4K3[] b - - 0 1")
    pos.push_uci("c8c7")
    pos.push_uci("b7c7")  # white captures a real rook: a rook in the pocket
    assert pos.pocket_count(0, 4) == 1
    pos2 = new_position("crazyhouse", "4k3/3Q~4/8/8/8/8/8/4K3[] b - - 0 1")
    pos2.push_uci("e8d7")  # black captures a promoted queen: a pawn in the pocket
    assert pos2.pocket_count(1, 1) == 1 and pos2.pocket_count(1, 5) == 0
    assert pos2.fen() == "8/3k4/8/8/8/8/8/4K3[p] w - - 0 2"
    assert pos2.fen() == chess.variant.CrazyhouseBoard("4k3/3Q~4/8/8/8/8/8/4K3[] b - - 0 1").__class__(pos2.fen()).fen()
    pos2.pop()
    assert pos2.fen() == "4k3/3Q~4/8/8/8/8/8/4K3[] b - - 0 1"
