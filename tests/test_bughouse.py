"""Bughouse rules (board/bughouse.py): capture routing, make/unmake across boards, clocks, real vs
temporary checkmate, results, FEN and move notation (ours, python-chess-bughouse's, BPGN); random
two-board games checked against python-chess's CrazyhouseBoard fed with each board's position;
two-board perft counts from python-chess-bughouse; Sjeng's XBoard bughouse behaviour (slow)."""
import random
from pathlib import Path
from typing import Any, Callable

import chess
import chess.variant
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from board import BLACK, KNIGHT, PAWN, QUEEN, ROOK, WHITE, make_drop, move_from_uci, move_to_uci
from engines.xboard_seat import xboard_holding
from board.bughouse import (
    AGREEMENT, BLOCKED, BUGHOUSE_STARTING_FEN, CHECKMATE, FLAG, RESIGNATION, STARTING_MATERIAL,
    BughouseBoard, BughouseError, BughouseGame, bpgn_movetext, bpgn_token, format_move,
    from_bugchess_str, parse_bpgn_movetext, parse_bpgn_token, parse_move, partner_seat, perft,
    seat_of, team_of, to_bugchess_str,
)
from board.position import CrazyhousePosition

DATA = Path(__file__).parent / "data"



def _choices(seed: int, length: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(2), rng.randrange(1 << 16)) for _ in range(length)]


# A game is a list of (preferred board, move index) choices, see play(); long games (up to 250
# plies, ~150 on average before a real mate ends one in ten) reach crowded pockets and promotions.
CHOICES = st.builds(_choices, st.integers(0, 2**32 - 1), st.integers(1, 250))


def play(game: BughouseGame, choices: list[tuple[int, int]], at_step: int = 0,
         on_ply: Callable[[BughouseGame], None] | None = None) -> None:
    """Play a random game: each choice picks a board (the other one if it has no legal move) and
    a move index; stops at the end of the game. ``at_step`` > 0: each move comes that many ms
    after the previous one. ``on_ply(game)`` runs before every move."""
    t = 0
    for pref, idx in choices:
        if game.outcome() is not None:
            return
        for bid in (pref, 1 - pref):
            moves = game.legal_moves(bid)
            if moves:
                break
        else:
            return
        if on_ply is not None:
            on_ply(game)
        t += at_step
        game.push(bid, moves[idx % len(moves)], t if at_step else -1)


def python_chess_kind(fen: str) -> str:
    """python-chess-bughouse's definitions on a python-chess CrazyhouseBoard: ``is_temporary_checkmate``
    is a crazyhouse mate; ``is_checkmate`` additionally needs that no drop of any piece type helps."""
    b = chess.variant.CrazyhouseBoard(fen)
    if not b.is_checkmate():
        return "none"
    for pt in (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
        b.pockets[b.turn].add(pt)
    return "temporary" if any(True for _ in b.legal_moves) else "real"


def kind(b: BughouseBoard) -> str:
    return "real" if b.is_checkmate() else ("temporary" if b.is_temporary_checkmate() else "none")


# ---------------------------------------------------------------------- capture routing


def test_capture_goes_to_partner_pocket() -> None:
    g = BughouseGame()
    for s in ("A:e2e4", "A:d7d5", "A:e4d5"):          # A-white takes a black pawn
        g.push_str(s)
    a, b = g.boards
    assert a.pocket_count(WHITE, PAWN) == 0 and a.pocket_count(BLACK, PAWN) == 0
    assert b.pocket_count(BLACK, PAWN) == 1              # B-black, A-white's partner, gets it
    assert b.fen().startswith("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[p] w")
    g.push_str("A:d8d5")                                 # A-black takes back: B-white gets a pawn
    assert b.pocket_count(WHITE, PAWN) == 1
    g.push_str("B:P@e4")                                 # B-white drops it
    assert b.pocket_count(WHITE, PAWN) == 0 and b.piece_type_at(28) == PAWN
    for _ in range(5):
        g.pop()
    assert g.fen() == BUGHOUSE_STARTING_FEN
    assert [x.zobrist for x in g.boards] == [x.compute_zobrist() for x in g.boards]


def test_promoted_piece_and_en_passant_go_as_pawns() -> None:
    fen = "8/1P5k/8/8/8/8/K7/6r1[] w - - 0 1 | 4k3/8/8/3pP3/8/8/8/4K3[] w - d6 0 2"
    g = BughouseGame(fen)
    a, b = g.boards
    for s in ("A:b7b8q", "A:g1g8", "A:b8g8"):           # the promoted queen takes a rook
        g.push_str(s)
    assert b.pocket_count(BLACK, ROOK) == 1              # B-black, A-white's partner
    g.push_str("A:h7g8")                                 # A-black takes the promoted queen
    assert b.pocket_count(WHITE, PAWN) == 1 and b.pocket_count(WHITE, QUEEN) == 0
    g.push_str("B:e5d6")                                 # B-white takes en passant
    assert a.pocket_count(BLACK, PAWN) == 1              # A-black, B-white's partner
    for s in ("B:e8d7", "B:e1e2", "B:d7d6"):            # B-black takes the pawn
        g.push_str(s)
    assert a.pocket_count(WHITE, PAWN) == 1
    for x in g.boards:
        assert x.zobrist == x.compute_zobrist()
    while g.ply():
        g.pop()
        for x in g.boards:
            assert x.zobrist == x.compute_zobrist()
    assert g.fen() == fen


def test_lone_board_drops_captures_and_crazyhouse_is_unchanged() -> None:
    lone = BughouseBoard("4k3/8/8/3p4/4P3/8/8/4K3[] w - - 0 1")
    lone.push(lone.parse_uci("e4d5"))
    assert lone.pockets == 0 and lone.zobrist == lone.compute_zobrist()
    lone.pop()
    assert lone.fen() == "4k3/8/8/3p4/4P3/8/8/4K3[] w - - 0 1"
    zh = CrazyhousePosition("4k3/8/8/3p4/4P3/8/8/4K3[] w - - 0 1")
    zh.push(zh.parse_uci("e4d5"))
    assert zh.pocket_count(WHITE, PAWN) == 1             # the hook's default: own pocket


# ---------------------------------------------------------------------- random games


@given(CHOICES)
def test_random_games_conserve_material_and_unmake_exactly(choices: list[tuple[int, int]]) -> None:
    g = BughouseGame(base_ms=60_000, inc_ms=1_000)
    snapshots = []

    def record(game: BughouseGame) -> None:
        a, b = game.boards
        for color in (WHITE, BLACK):
            assert game.material(color) == list(STARTING_MATERIAL)
        assert a.zobrist == a.compute_zobrist() and b.zobrist == b.compute_zobrist()
        snapshots.append((game.fen(), game.key(), [game.time_left(s) for s in range(4)], game.ply()))

    play(g, choices, at_step=700, on_ply=record)
    record(g)
    moves = g.move_stack
    copy = g.copy()
    assert copy.fen() == g.fen() and copy.key() == g.key() and copy.move_stack == moves
    for expected in reversed(snapshots[:-1]):
        g.pop()
        assert (g.fen(), g.key(), [g.time_left(s) for s in range(4)], g.ply()) == expected
    assert g.fen() == BUGHOUSE_STARTING_FEN and g.ply() == 0
    with pytest.raises(IndexError):
        g.pop()


@settings(max_examples=12)
@given(CHOICES)
def test_random_games_agree_with_python_chess(choices: list[tuple[int, int]]) -> None:
    def check(game: BughouseGame) -> None:
        for b in game.boards:
            fen = b.fen()
            ours = sorted(move_to_uci(m) for m in b.legal_moves())
            theirs = sorted(m.uci() for m in chess.variant.CrazyhouseBoard(fen).legal_moves)
            assert ours == theirs, fen
            if not ours:
                assert kind(b) == python_chess_kind(fen), fen
        for bid in (0, 1):
            moves = game.legal_moves(bid)
            if moves:
                m = moves[len(moves) // 2]
                assert parse_bpgn_token(game, bpgn_token(game, bid, m)) == (bid, m)

    g = BughouseGame()
    play(g, choices, on_ply=check)
    check(g)


def _perft_cases() -> list[Any]:
    out = []
    for line in (DATA / "bughouse_perft.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            fen, *depths = (p.strip() for p in line.split(";"))
            for d in depths:
                depth, nodes = d[1:].split()
                marks = [pytest.mark.slow] if int(nodes) > 200_000 else []
                out.append(pytest.param(fen, int(depth), int(nodes), marks=marks, id=f"{fen[:20]}-d{depth}"))
    return out


@pytest.mark.parametrize("fen,depth,nodes", _perft_cases())
def test_two_board_perft(fen: str, depth: int, nodes: int) -> None:
    g = BughouseGame(fen)
    before = (g.fen(), g.key())
    assert perft(g, depth) == nodes
    assert (g.fen(), g.key(), g.ply()) == before + (0,)


# ---------------------------------------------------------------------- checkmate


def _mate_cases() -> list[Any]:
    out = []
    for line in (DATA / "bughouse_mates.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            fen, k = (p.strip() for p in line.split(";"))
            out.append(pytest.param(fen, k, id=fen[:30]))
    return out


@pytest.mark.parametrize("fen,expected", _mate_cases())
def test_real_and_temporary_checkmate(fen: str, expected: str) -> None:
    b = BughouseBoard(fen)
    assert kind(b) == expected == python_chess_kind(fen)
    assert not b.is_stalemate() and not b.has_insufficient_material(WHITE)
    assert (b.outcome() is not None) == (expected == "real")


def test_game_ends_only_on_a_real_mate() -> None:
    # A-white is mated by crazyhouse rules only: the partner's capture on B brings a rook to block.
    g = BughouseGame("6k1/5ppp/8/8/8/8/5PPP/r5K1[] w - - 0 1 | 3qk3/8/8/8/8/8/8/3RK3[] b - - 0 1")
    assert g.legal_moves(0) == [] and g.outcome() is None
    assert g.boards[0].is_temporary_checkmate() and not g.boards[0].is_checkmate()
    g.push_str("B:d8d1")
    assert g.boards[0].pocket_count(WHITE, ROOK) == 1
    assert "R@f1" in [move_to_uci(m) for m in g.legal_moves(0)] and g.outcome() is None
    g.push_str("A:R@f1")
    g.pop()
    g.pop()
    assert g.legal_moves(0) == []
    # Board B: Black (team 0 with A-white) is mated for real: team 1 wins.
    g2 = BughouseGame("4k3/8/8/8/8/8/8/4K3[] w - - 0 1 | 6rk/5Np1/8/8/8/8/8/6KR[] b - - 0 1")
    assert g2.outcome() == ("0-1", CHECKMATE, 1)
    assert team_of(1, BLACK) == 0 and team_of(0, WHITE) == 0 and team_of(0, BLACK) == 1


def test_blocked_boards() -> None:
    fen = "6k1/5ppp/8/8/8/8/5PPP/r5K1[] w - - 0 1 | 7k/5Q2/6K1/8/8/8/8/8[] b - - 0 1"
    assert BughouseGame(fen).outcome() == ("1/2-1/2", BLOCKED, -1)
    # Timed: nobody can move, so the first clock to run out decides (A-white has less time).
    g = BughouseGame(fen, base_ms=10_000)
    g.set_clock(seat_of(0, WHITE), 4_000)
    assert g.outcome() == ("0-1", FLAG, 0)


# ---------------------------------------------------------------------- clocks and results


def test_clocks_flag_and_undo() -> None:
    g = BughouseGame(base_ms=1_000, inc_ms=100)
    g.push_str("A:e2e4", at_ms=300)                      # A-white used 300, gets 100 back
    assert g.time_left(seat_of(0, WHITE)) == 800
    assert g.time_left(seat_of(0, BLACK), at_ms=500) == 800   # running since 300
    assert g.time_left(seat_of(1, WHITE), at_ms=500) == 500   # running since 0
    assert g.flag_seat(999) == -1 and g.outcome(at_ms=999) is None
    assert g.flag_seat(1_000) == seat_of(1, WHITE)
    assert g.outcome(at_ms=1_000) == ("1-0", FLAG, 1)    # B-white is team 1
    with pytest.raises(BughouseError):
        g.push_str("B:e2e4", at_ms=200)                  # before the previous event
    g.push_str("B:e2e4", at_ms=900)
    assert g.time_left(seat_of(1, WHITE)) == 200
    assert g.flag_seat(1_300) == seat_of(0, BLACK)
    g.pop()
    g.pop()
    assert [g.time_left(s) for s in range(4)] == [1_000] * 4
    assert BughouseGame().time_left(0) == -1 and BughouseGame().flag_seat(10**9) == -1


def test_declared_results() -> None:
    g = BughouseGame()
    g.resign(1)
    assert g.outcome() == ("1-0", RESIGNATION, -1) and g.result() == "1-0"
    g = BughouseGame()
    g.agree_draw()
    assert g.is_game_over() and g.outcome() == ("1/2-1/2", AGREEMENT, -1)
    assert BughouseGame().result() == "*"


def test_repetition_only_when_claimed() -> None:
    g = BughouseGame()
    for _ in range(2):
        for s in ("A:g1f3", "A:g8f6", "A:f3g1", "A:f6g8"):
            g.push_str(s)
    assert g.outcome() is None
    assert g.outcome(claim_draw=True) == ("1/2-1/2", "threefold_repetition", 0)


# ---------------------------------------------------------------------- notation and input


def test_fen_and_notation() -> None:
    g = BughouseGame()
    # python-chess-bughouse's BughouseBoards.starting_fen, character for character.
    assert g.fen() == ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | "
                       "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1")
    assert parse_move("A:e2e4") == (0, move_from_uci("e2e4")) == parse_move("a:e2e4")
    assert parse_move("B:N@f7") == (1, make_drop(KNIGHT, 53))
    assert format_move(1, make_drop(KNIGHT, 53)) == "B:N@f7"
    assert format_move(0, move_from_uci("e7e8q")) == "A:e7e8q"
    assert to_bugchess_str(0, move_from_uci("e2e4")) == "B1 e2e4"
    assert from_bugchess_str("B2 N@f7") == (1, make_drop(KNIGHT, 53))
    m = move_from_uci("e2e4")
    assert bpgn_token(g, 0, m) == "1A. e4"
    g.push(0, m)
    assert bpgn_token(g, 0, move_from_uci("e7e5")) == "1a. e5"
    assert parse_bpgn_token(g, "1a. e5") == (0, move_from_uci("e7e5")) == parse_bpgn_token(g, "a. e5")
    assert parse_bpgn_token(g, "B. Nf3") == (1, move_from_uci("g1f3"))
    g2 = BughouseGame(g.fen())
    assert g2.root_fen == g.fen() and g2.boards[0].turn == BLACK


@settings(max_examples=10)
@given(CHOICES)
def test_bpgn_movetext_round_trip(choices: list[tuple[int, int]]) -> None:
    g = BughouseGame(base_ms=120_000)
    play(g, choices[:80], at_step=1_500)
    text = bpgn_movetext(g)
    back = parse_bpgn_movetext(text + " " + g.result())
    assert back.move_stack == g.move_stack and back.fen() == g.fen()


def test_bpgn_movetext_format_and_errors() -> None:
    g = BughouseGame(base_ms=60_000)
    for s, t in (("A:e2e4", 700), ("B:d2d4", 900), ("A:e7e5", 2_000)):
        g.push_str(s, at_ms=t)
    assert bpgn_movetext(g) == "1A. e4 {59.3} 1B. d4 {59.1} 1a. e5 {58.7}"
    assert parse_bpgn_movetext("1A. e4 {59.3} 1B. d4 1a. e5 *").fen() == g.fen()
    for bad in ("1A. e5", "1A.", "e4 e5", "1A. e4 1A. e5"):
        with pytest.raises(BughouseError):
            parse_bpgn_movetext(bad)


def test_seats_teams_and_xboard_holding() -> None:
    assert [partner_seat(s) for s in range(4)] == [3, 2, 1, 0]
    for board_id in (0, 1):
        for color in (WHITE, BLACK):
            seat = seat_of(board_id, color)
            assert team_of(board_id, color) == team_of(partner_seat(seat) >> 1, partner_seat(seat) & 1)
    g = BughouseGame("4k3/8/8/8/8/8/8/4K3[QPPnb] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3[] w - - 0 1")
    assert xboard_holding(g.boards[0]) == "holding [QPP] [bn]"
    assert xboard_holding(g.boards[1]) == "holding [] []"


@pytest.mark.parametrize("bad", [
    "", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "8/8/8/8/8/8/8/8 w - - | 4k3/8/8/8/8/8/8/4K3 w - -",
    "a | b | c", " | 4k3/8/8/8/8/8/8/4K3 w - -",
])
def test_bad_fens_raise_one_clear_error(bad: str) -> None:
    with pytest.raises(BughouseError):
        BughouseGame(bad)


@pytest.mark.parametrize("bad", ["e2e4", "C:e2e4", "A:", "A:e2e9", "A-e2e4", "A:e2e5", "B:P@e4"])
def test_bad_moves_raise_one_clear_error(bad: str) -> None:
    g = BughouseGame()
    with pytest.raises(BughouseError):
        g.push_str(bad)
    assert g.fen() == BUGHOUSE_STARTING_FEN
    assert issubclass(BughouseError, ValueError)


def test_bad_bpgn_and_bugchess_input() -> None:
    g = BughouseGame()
    for bad in ("1a. e5", "1A e4", "1A. e5", "1C. e4"):
        with pytest.raises(BughouseError):
            parse_bpgn_token(g, bad)
    for bad in ("B3 e2e4", "e2e4", "B1 zz"):
        with pytest.raises(BughouseError):
            from_bugchess_str(bad)


# ---------------------------------------------------------------------- Sjeng over XBoard (notes)


class _XBoard:
    """A bare CECP pipe with a reader thread, enough to check the Sjeng notes in board/bughouse.py."""

    def __init__(self, path: str) -> None:
        import queue
        import subprocess
        import tempfile
        import threading

        self.lines: "queue.Queue[str]" = queue.Queue()
        self.cwd = tempfile.TemporaryDirectory()    # Sjeng writes its learn files into the cwd
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1, cwd=self.cwd.name)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def send(self, *cmds: str) -> None:
        assert self.proc.stdin is not None
        for c in cmds:
            self.proc.stdin.write(c + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 15.0) -> str | None:
        """The first line starting with ``prefix`` within ``timeout`` seconds, else None."""
        import queue
        import time

        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line.startswith(prefix):
                return line
        return None

    def close(self) -> None:
        self.send("quit")
        try:
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
        self.cwd.cleanup()


@pytest.mark.slow
def test_sjeng_plays_bughouse_over_xboard_as_documented() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from engines_path import find_engine

    path = find_engine("sjeng")
    if path is None:
        pytest.skip("sjeng is not installed (make sysdeps)")
    sj = _XBoard(path)
    try:
        sj.send("xboard", "protover 2")
        assert "bughouse" in (sj.expect("feature variants=") or "")
        # Sjeng plays White on board A; no holding before its first go (see the notes).
        g = BughouseGame()
        sj.send("new", "variant bughouse", "partner ourbot", "st 1", "time 6000", "otim 6000", "go")
        assert sj.expect("tellics ptell Hello!") is not None
        reply = sj.expect("move ")
        assert reply is not None
        g.push_str("A:" + reply.split()[1])
        g.push_str("A:e7e5")
        g.push_str("B:e2e4")
        g.push_str("B:d7d5")
        g.push_str("B:e4d5")                      # B-white's capture gives A-black a pawn; then
        g.push_str("B:d8d5")                      # B-black's capture gives A-white (Sjeng) one
        sj.send(xboard_holding(g.boards[0]), "e7e5")
        reply = sj.expect("move ")
        assert reply is not None
        g.push_str("A:" + reply.split()[1])       # legal in our rules (a drop or a move)
        sj.send("ptell sit")
        assert sj.expect("tellics ptell Ok, I sit") is not None
        black = [move_to_uci(m) for m in g.legal_moves(0) if not m >> 15][0]
        g.push_str("A:" + black)
        sj.send(xboard_holding(g.boards[0]), black)
        assert sj.expect("move ", timeout=3.0) is None   # sitting
        sj.send("ptell go")
        reply = sj.expect("move ")
        assert reply is not None
        g.push_str("A:" + reply.split()[1])
        # A temporary mate: Sjeng claims the game (crazyhouse rules), our rules play on.
        fen = "6k1/5ppp/8/8/8/8/5PPP/r5K1[] w - - 0 1"
        sj.send("new", "variant bughouse", "st 1", "force", "black", "setboard " + fen.replace("[]", ""),
                "holding [] []", "go")
        assert sj.expect("0-1 {Black Mates}") is not None
        assert kind(BughouseBoard(fen)) == "temporary"
    finally:
        sj.close()


def test_bpgn_writes_standard_pawn_drops_and_reads_both():
    g = BughouseGame("4k3/8/8/8/8/8/8/4K3[P] w - - 0 1 | 4k3/8/8/8/8/8/8/4K3[] w - - 0 1")
    m = move_from_uci("P@d5")
    assert g.san(0, m) == "P@d5" and bpgn_token(g, 0, m) == "1A. P@d5"
    assert parse_bpgn_token(g, "1A. P@d5") == (0, m) == parse_bpgn_token(g, "1A. @d5")
    g.push(0, m)
    assert bpgn_movetext(g) == "1A. P@d5"
    fen = g.root_fen
    assert parse_bpgn_movetext("1A. @d5", fen).fen() == parse_bpgn_movetext("1A. P@d5", fen).fen() == g.fen()
