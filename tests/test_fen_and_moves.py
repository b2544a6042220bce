"""FEN in/out (pockets in both notations, promoted markers), UCI moves, and bad input."""
import pytest

from board import CrazyhousePosition, Position, make_drop, make_move, move_from_uci, move_to_uci, new_position


@pytest.mark.parametrize("fen", [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
])
def test_chess_fen_round_trip(fen: str) -> None:
    assert Position(fen).fen() == fen


@pytest.mark.parametrize("fen,expected", [
    ("r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22", None),
    ("r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1/Rbbnnp w - - 4 22",
     "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22"),
    ("4k3/1Q~6/8/8/4b3/8/Kpp5/8/ b - - 0 1", "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"),
    # empty pockets as cutechess-cli writes them in a crazyhouse game's FEN and EPD openings
    ("r1bqkb1r/ppp2ppp/2n1pn2/1B1p4/3P4/P1N1P3/1PP2PPP/R1BQK1NR[-] b KQkq - 0 5",
     "r1bqkb1r/ppp2ppp/2n1pn2/1B1p4/3P4/P1N1P3/1PP2PPP/R1BQK1NR[] b KQkq - 0 5"),
])
def test_crazyhouse_fen_notations(fen: str, expected: str | None) -> None:
    assert CrazyhousePosition(fen).fen() == (expected or fen)


def test_en_passant_square_printed_only_when_legal() -> None:
    # After e2e4 no black pawn can take en passant: the FEN has "-" (python-chess's default too).
    pos = Position()
    pos.push_uci("e2e4")
    assert pos.fen().split()[3] == "-"
    # A pinned pawn cannot take en passant either.
    pinned = Position("8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1")
    assert pinned.ep_square == -1 and "e4d3" not in [move_to_uci(m) for m in pinned.legal_moves()]


@pytest.mark.parametrize("fen,needle", [
    ("", "empty FEN"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "expected 8 ranks"),
    ("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "bad empty-square count"),
    ("rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "more than 8 squares"),
    ("rnbqkbnr/pppppppp/7/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "has 7 squares"),
    ("rnbqkbnr/ppxppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "invalid piece 'x'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "side to move"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQxq - 0 1", "castling"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1", "en-passant"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1", "wrong rank"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1", "integers"),
    ("rnbqqbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQ - 0 1", "exactly one king"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNP w - - 0 1", "pawns on the first or last rank"),
    ("4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "pawns on the first or last rank"),
    ("4k3/8/8/8/8/8/4R3/4K3 w - - 0 1", "not to move is in check"),
    ("4k3/8/8/8/8/8/8/4K3[Q] w - - 0 1", "pockets are not allowed"),
    ("~4k3/8/8/8/8/8/8/4K3 w - - 0 1", "'~' must follow a piece"),
    ("4k3/8/8/8/8/8/8/4K3 w - - 100000000000000000000 1", "at most 100,000"),
    ("4k3/8/8/8/8/8/8/4K3 w - - 0 100000000000000000000", "at most 100,000"),
])
def test_bad_fen_is_a_clear_value_error(fen: str, needle: str) -> None:
    variant = "crazyhouse" if "~" in fen else "chess"
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        new_position(variant, fen)


def test_bad_pocket_and_unknown_variant() -> None:
    with pytest.raises(ValueError, match="invalid pocket piece"):
        CrazyhousePosition("4k3/8/8/8/8/8/8/4K3[K] w - - 0 1")
    with pytest.raises(ValueError, match="invalid pocket piece '-'"):  # '-' alone is empty, not a piece
        CrazyhousePosition("4k3/8/8/8/8/8/8/4K3[Q-] w - - 0 1")
    with pytest.raises(ValueError, match="unknown variant"):
        new_position("atomic")


def test_uci_moves() -> None:
    assert move_from_uci("e2e4") == make_move(12, 28)
    assert move_from_uci("e7e8q") == make_move(52, 60, 5)
    assert move_from_uci("N@f7") == make_drop(2, 53)
    assert move_from_uci("0000") == 0
    for m in (make_move(12, 28), make_move(52, 60, 2), make_drop(1, 20)):
        assert move_from_uci(move_to_uci(m)) == m
    for bad in ("e2", "e2e9", "e2e4k", "K@e4", "x@e4", "e4e4", "p@e4", "hello"):
        with pytest.raises(ValueError, match="malformed UCI move"):
            move_from_uci(bad)


def test_illegal_moves_are_rejected() -> None:
    pos = Position()
    for bad in ("e2e5", "e1g1", "P@e4", "a7a6"):
        with pytest.raises(ValueError, match="illegal move"):
            pos.push_uci(bad)
    zh = CrazyhousePosition("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1")
    with pytest.raises(ValueError, match="illegal move"):
        zh.push_uci("P@e8")  # no pawn drops on the back rank
    with pytest.raises(ValueError, match="illegal move"):
        zh.push_uci("N@e4")  # no knight in the pocket
    zh.push_uci("P@d7")  # a drop may give check
    assert zh.is_check()


def test_drop_mate_is_legal_and_checkmate() -> None:
    pos = CrazyhousePosition("6rk/6pp/8/8/8/8/8/4K3[N] w - - 0 1")
    pos.push_uci("N@f7")
    assert pos.is_checkmate() and pos.outcome() == ("1-0", "checkmate")


def test_castling_through_check_and_rights() -> None:
    pos = Position("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    ucis = {move_to_uci(m) for m in pos.legal_moves()}
    assert {"e1g1", "e1c1"} <= ucis
    blocked = Position("r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1")  # f2 rook: e1 in check? no, f1 attacked
    assert "e1g1" not in {move_to_uci(m) for m in blocked.legal_moves()}
    pos.push_uci("h1h8")
    assert pos.fen().split()[2] == "Qq"
