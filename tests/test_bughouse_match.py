"""The four-seat bughouse server (experiments/harness/bughouse.py): our team against itself, the
XBoard driver's command sequences (holding, clocks, restarts, ptell relay), misbehaving seats
(crash, hang, illegal or malformed move, resignation, no handshake) forfeiting for their team,
storage (SQLite rows + details, BPGN, resume), the CLI, and one short real game against Sjeng."""
import sys
import textwrap
import time
from pathlib import Path

import pytest

from board import move_to_uci
from board.bughouse import BughouseGame, parse_bpgn_movetext
from evaluators.bughouse_classical import BughouseClassicalEvaluator
from experiments.cli import main as cli
from experiments.harness.ratings import from_games, rate
from engines.base import EngineError
from engines.registry import EvaluatorPool
from engines.factory import make_seat
from engines.seats import GameContext, OurSeat, Seat, SeatError, parse_team
from engines.xboard_seat import XBoardSeat, fen_without_pockets
from experiments.harness.bughouse import BughouseMatchError, BughouseStore, play_game, rebuild_game, run_match
from search.two_board import seat_config
from tests.engines_path import find_engine
from tests.harness_fakes import FakePipe, bughouse_games_by_workers

SJENG = find_engine("sjeng")

FAKE_XBOARD = textwrap.dedent(r'''
    import re, sys, time
    mode = sys.argv[1]
    MOVE = re.compile(r"^([a-h][1-8][a-h][1-8][qrbn]?|[PNBRQ]@[a-h][1-8])$")
    def out(s):
        sys.stdout.write(s + "\n"); sys.stdout.flush()
    for line in sys.stdin:
        line = line.strip()
        if line == "protover 2":
            out("feature ping=1 setboard=1 san=0 usermove=0 time=1" + ("" if mode == "nodone" else " done=1"))
        elif line.startswith("ping"):
            out("pong " + line.split()[1])
        elif line == "quit":
            break
        elif line == "go" or MOVE.match(line):
            if mode == "crash":
                sys.exit(3)
            elif mode == "illegal":
                out("move a1a8")
            elif mode == "garbage":
                out("move hello")
            elif mode == "resign":
                out("resign")
            elif mode == "ptell":
                out("tellics ptell Hello!")
                out("tellics ptell sit")
                out("tellics set f5 bughouse")
''')


class ShuffleSeat(Seat):
    """A test double: after ``delay_ms`` on its turn it moves a knight out and back (no mates)."""

    kind = "shuffle"

    def __init__(self, name: str = "shuffle", delay_ms: int = 50) -> None:
        self.name = name
        self.delay_ms = delay_ms
        self.turn_since = -1

    def tick(self, ctx: GameContext) -> bool:
        if not ctx.to_move(self.seat):
            self.turn_since = -1
            return False
        now = ctx.now_ms()
        if self.turn_since < 0:
            self.turn_since = now
        if now - self.turn_since < self.delay_ms:
            return False
        b = ctx.game.boards[self.seat >> 1]
        ok = {"g1f3", "f3g1", "g8f6", "f6g8"}
        moves = [move_to_uci(m) for m in b.legal_moves()]
        ctx.submit(self.seat, next((u for u in moves if u in ok), moves[0]))
        self.turn_since = -1
        return False


@pytest.fixture()
def fake(tmp_path: Path) -> Path:
    p = tmp_path / "fake_xboard.py"
    p.write_text(FAKE_XBOARD)
    return p


def ours(nodes: int = 20, seed: int = 1) -> OurSeat:
    return OurSeat(f"ours:{nodes}", BughouseClassicalEvaluator(), seat_config(), nodes=nodes, seed=seed)


def fake_seat(fake: Path, mode: str) -> XBoardSeat:
    return XBoardSeat(f"fake-{mode}", [sys.executable, str(fake), mode], startup_s=5.0)


# ------------------------------------------------------------------------------------ games

def test_ours_against_ours_stored_with_bpgn_and_resumed(tmp_path: Path):
    db = tmp_path / "m.sqlite"
    s = run_match("bughouse-mcts:nodes=30", "bughouse-mcts:nodes=15,seed=5", 2, 8000, 0, db, seed=3,
                  max_plies=160, progress=False)
    assert s.played == 2 and s.wins + s.draws + s.losses == 2
    store = BughouseStore(db)
    try:
        games = store.store.games()
        assert [g.key.rsplit(":", 1)[1] for g in games] == ["0", "1"]
        assert games[0].white == games[1].black == "bughouse-mcts:nodes=30"
        for g in games:
            assert g.variant == "bughouse" and g.result in ("1-0", "0-1", "1/2-1/2")
            d = store.details(g.key)
            assert d is not None and len(d["times"]) == len(g.moves) == len(g.move_stats) == g.plies
            replay = rebuild_game(g, d)
            if g.reason.startswith("checkmate"):
                assert replay.outcome() is not None and replay.result() == g.result
            elif g.reason.startswith("flag"):
                assert replay.outcome(at_ms=d["times"][-1] + 10**6)[0] == g.result
            else:
                assert g.reason == "max_plies" and g.plies == 160
            assert [s["seat"] for s in d["seats"]] == ["A-white", "A-black", "B-white", "B-black"]
            moves = d["bpgn"].split("\n\n", 1)[1].rsplit(" ", 1)[0]
            assert parse_bpgn_movetext(moves).move_stack == replay.move_stack
            assert f'[Result "{g.result}"]' in d["bpgn"]
    finally:
        store.close()
    bpgn = db.with_suffix(".bpgn").read_text()
    assert bpgn.count("[WhiteA ") == 2
    # the harness's ratings read the team rows like any other match
    names = {r.name for r in rate(from_games(games), bootstrap=5)}
    assert names == {"bughouse-mcts:nodes=30", "bughouse-mcts:nodes=15,seed=5"}
    again = run_match("bughouse-mcts:nodes=30", "bughouse-mcts:nodes=15,seed=5", 2, 8000, 0, db, seed=3,
                      max_plies=160, progress=False)
    assert again.played == 0 and again.skipped == 2
    assert (again.wins, again.draws, again.losses) == (s.wins, s.draws, s.losses)
    assert db.with_suffix(".bpgn").read_text() == bpgn


def test_alphabeta_seats_play_in_worker_processes(tmp_path: Path):
    """A worker process may start processes of its own: each alpha-beta seat searches in one."""
    s = run_match("bughouse-ab:nodes=200", "bughouse-mcts:nodes=20", 2, 20000, 0, tmp_path / "ab.sqlite",
                  max_plies=24, progress=False, workers=2)
    assert s.played == 2 and s.wins + s.draws + s.losses == 2


def test_untimed_games_are_the_same_with_one_and_two_workers_and_replay(tmp_path: Path):
    """No clocks: our MCTS seats stop at their node limits, a game's seats start from its own seed,
    so the games do not depend on the worker that plays them, and `searchbench replay` plays them again."""
    import sqlite3

    from experiments.harness.replay import replay

    a, b = "bughouse-mcts:nodes=30", "bughouse-mcts:nodes=40"
    rows = bughouse_games_by_workers(a, b, 4, 7, 50, tmp_path)
    assert rows[0] == rows[1]
    assert len({r[4] for r in rows[0]}) == 4  # a seed per game, stored with it
    assert all(r[0].split("|")[2] == "untimed" for r in rows[0])
    outs = replay(tmp_path / "w2.sqlite", progress=False)
    assert [o.agrees for o in outs] == [True] * 4
    # a changed stored move is found, at its ply
    key, moves = rows[0][1][0], list(rows[0][1][1])
    g = BughouseGame()
    for text in moves[:5]:
        g.push(*g.parse(text))
    board_id = 0 if moves[5].startswith("A:") else 1
    other = next(m for m in g.boards[board_id].legal_moves() if f"{'AB'[board_id]}:{move_to_uci(m)}" != moves[5])
    moves[5] = f"{'AB'[board_id]}:{move_to_uci(other)}"
    db = sqlite3.connect(tmp_path / "w2.sqlite")
    db.execute("UPDATE games SET moves = ? WHERE key = ?", (" ".join(moves), key))
    db.commit()
    db.close()
    out = replay(tmp_path / "w2.sqlite", key=key, progress=False)[0]
    assert (out.ply, out.stored) == (5, moves[5])


def test_network_seats_record_their_weights_and_replay_only_with_them(tmp_path: Path):
    import json
    import sqlite3

    from experiments.harness.replay import replay

    db = tmp_path / "n.sqlite"
    run_match("rise-bughouse-mcts:nodes=12", "bughouse-mcts:nodes=12", 2, -1, 0, db, max_plies=20, progress=False)
    con = sqlite3.connect(db)
    key, seats = con.execute("SELECT key, seats FROM bughouse_games ORDER BY key").fetchone()
    net = [s for s in json.loads(seats) if s["evaluator"] == "bughouse-net"]
    assert len(net) == 2 and all(s["weights"].startswith("bughouse_lazybug.pt:") and s["inference"] for s in net)
    assert [o.agrees for o in replay(db, progress=False)] == [True, True]
    other = [dict(s, weights="other.pt:0123456789") if s["evaluator"] == "bughouse-net" else s for s in json.loads(seats)]
    con.execute("UPDATE bughouse_games SET seats = ? WHERE key = ?", (json.dumps(other), key))
    con.commit()
    con.close()
    assert replay(db, key=key, progress=False)[0].skipped == "played with other weights"


def test_untimed_games_take_our_mcts_seats_only(tmp_path: Path):
    with pytest.raises(BughouseMatchError, match="without clocks"):
        run_match("bughouse-mcts:nodes=30", "sjeng", 2, -1, 0, tmp_path / "x.sqlite", progress=False)
    with pytest.raises(BughouseMatchError, match="without clocks"):
        run_match("bughouse-mcts:movetime=0.1", "bughouse-mcts", 2, -1, 0, tmp_path / "x.sqlite", progress=False)


def test_max_plies_holds_when_both_boards_move_in_one_pass():
    # With no delay both boards' moves arrive in the same pass of the loop; the game still stops at
    # exactly max_plies (an odd count, so it falls between the two moves of a pass).
    res = play_game([ShuffleSeat(f"s{i}", delay_ms=0) for i in range(4)], 60000, 0, max_plies=5)
    assert res.reason == "max_plies" and res.game.ply() == 5 and len(res.moves) == 5


def test_sit_and_partner_state_in_the_server():
    # Our A-white seat with root_own_p = 0 sits whenever its partner (B-black, who thinks 300 ms)
    # is to move, and moves while an opponent (B-white, 200 ms) is to move on board B (no sit then).
    sitter = OurSeat("sitter", BughouseClassicalEvaluator(), seat_config(root_own_p=0.0), nodes=30)
    seats = [sitter, ShuffleSeat("a-black", 100), ShuffleSeat("b-white", 200), ShuffleSeat("b-black", 300)]
    r = play_game(seats, 4000, 0, max_plies=10)
    assert r.reason == "max_plies"
    assert sitter.sits > 0
    ours_at = [p.at_ms for p in r.moves if p.seat == 0]
    partner_at = [p.at_ms for p in r.moves if p.seat == 3]
    assert len(ours_at) >= 3 and partner_at
    # we never moved while our partner was thinking (between B-white's move and B-black's answer)
    b_white_at = [p.at_ms for p in r.moves if p.seat == 2]
    for start, end in zip(b_white_at, partner_at):
        assert not any(start < t < end for t in ours_at)


# ------------------------------------------------------------------------------------ failures

@pytest.mark.parametrize("mode, words", [("crash", "crash"), ("illegal", "illegal move 'a1a8'"),
                                         ("garbage", "illegal move 'hello'"), ("resign", "resigned")])
def test_a_misbehaving_seat_forfeits_for_its_team(fake: Path, mode: str, words: str):
    bad = fake_seat(fake, mode)
    seats = [ours(), bad, ShuffleSeat(), ShuffleSeat()]
    try:
        r = play_game(seats, 5000, 0)
        assert r.result == "1-0"  # A-black is team 1
        assert r.reason.startswith("forfeit: A-black (fake-") and words in r.reason
        if mode == "crash":  # the next game starts a fresh process
            r = play_game(seats, 5000, 0)
            assert r.result == "1-0" and "crash" in r.reason
    finally:
        bad.close()


def test_a_hung_seat_loses_on_time(fake: Path):
    hung = fake_seat(fake, "hang")
    try:
        r = play_game([ours(), hung, ShuffleSeat(), ShuffleSeat()], 1500, 0)
        assert (r.result, r.reason) == ("1-0", "flag on board A")
        assert 1.4 < r.duration_s < 10
    finally:
        hung.close()


def test_no_handshake_is_a_clear_error(fake: Path):
    with pytest.raises(SeatError, match="done=1"):
        XBoardSeat("silent", [sys.executable, str(fake), "nodone"], startup_s=1.0)


def test_ptell_commands_are_relayed_and_chatter_only_logged(fake: Path):
    talker = fake_seat(fake, "ptell")
    partner = fake_seat(fake, "hang")  # B-white is A-black's partner
    try:
        seats = [ours(), talker, partner, ShuffleSeat()]
        r = play_game(seats, 1500, 0)
        texts = [t for _, seat, t in r.ptells if seat == 1]
        assert texts == ["Hello!", "sit"]
        assert "> ptell sit" in partner.transcript and "> ptell Hello!" not in partner.transcript
    finally:
        talker.close()
        partner.close()


# ------------------------------------------------------------------------------------ XBoard commands

class RecordingSeat(XBoardSeat):
    """The XBoard driver without a process: what it would send is recorded."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.command = ["none"]
        self.depth = None
        self.options = {}
        self.sent: list[str] = []
        self.transcript = []
        self.pings = 0
        self.awaiting_pong = ""
        import queue

        self.lines = queue.Queue()
        self.process = None

    def restart_process(self) -> None:
        pass

    def send(self, line: str) -> bool:
        self.sent.append(line)
        return True


def test_xboard_command_sequences():
    game = BughouseGame(base_ms=60000)
    seats = [RecordingSeat(n) for n in ("aw", "ab", "bw", "bb")]
    ctx = GameContext(game, seats, 0.0)
    for s in range(4):
        seats[s].start_game(ctx, s, seats[3 - s].name)
    aw, ab, bw, bb = seats
    assert aw.sent[:7] == ["new", "variant bughouse", "partner bb", "easy", "nopost", "level 0 1:00 0", "ping 1"]
    assert "level 0 1:00 0" in aw.sent and aw.sent[-1] == "go" and aw.sent[-3].startswith("time ")
    assert "go" not in ab.sent and not any(x.startswith("holding") for x in aw.sent)

    def move(text: str) -> None:
        bid, m = game.parse(text)
        mover = game.to_move_seat(bid)
        game.push(bid, m)
        for s in seats:
            s.on_move(ctx, bid, mover)

    for s in seats:
        s.sent.clear()
    move("A:e2e4")
    assert ab.sent[-1] == "e2e4" and ab.sent[-3].startswith("time ") and ab.sent[-2].startswith("otim ")
    for text in ("A:d7d5", "A:e4d5"):  # a capture on A feeds B-black's pocket: holding on board B
        move(text)
    assert "holding [] [p]" in bb.sent and "holding [] [p]" in bw.sent
    assert not any(x.startswith("holding [] [p]") for x in aw.sent + ab.sent)
    # an opponent's move goes after the holding: holding, time, otim, move
    for s in seats:
        s.sent.clear()
    move("B:g1f3")
    assert bb.sent[-1] == "g1f3" and bb.sent[-2].startswith("otim") and bb.sent[-3].startswith("time")
    move("B:P@e4")  # B-black drops its pawn: both B seats get the new (empty) holding
    assert "holding [] []" in bw.sent and bw.sent.index("holding [] []") < bw.sent.index("P@e4")
    # a seat that claimed a result (Sjeng after a "temporary" mate) is restarted on its turn
    bw.dead = True
    bw.sent.clear()
    bw.tick(ctx)
    i = bw.sent.index("force")
    assert bw.sent[:i] == ["new", "variant bughouse", "partner ab", "easy", "nopost", "level 0 1:00 0", "ping 2"]
    assert bw.sent[i + 1:i + 4] == ["black", "setboard " + fen_without_pockets(game.boards[1].fen()), "holding [] []"]
    assert bw.sent[i + 4].startswith("time ") and bw.sent[i + 5].startswith("otim ") and bw.sent[i + 6:] == ["go"]
    assert not bw.dead


def test_fen_without_pockets():
    assert fen_without_pockets("rnbqkb1r/pppppppp/5n2/8/4P3/8/PPPP1PPP/RNBQ~KBNR[Pn] b KQkq - 1 2") == \
        "rnbqkb1r/pppppppp/5n2/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 1 2"


# ------------------------------------------------------------------------------------ specs, CLI

def test_team_specs_and_errors():
    assert parse_team("bughouse-mcts:nodes=5/sjeng").seat_specs == ("bughouse-mcts:nodes=5", "sjeng")
    assert parse_team("sjeng").seat_specs == ("sjeng", "sjeng")
    seat = make_seat("bughouse-mcts:nodes=90,playouts=30,evals=20", 1, EvaluatorPool())  # search.base's units
    assert (seat.nodes, seat.playouts, seat.evals) == (90, 30, 20)  # type: ignore[attr-defined]
    with pytest.raises(SeatError, match="does not play bughouse"):
        parse_team("stockfish")
    with pytest.raises(EngineError, match="unknown engine"):
        parse_team("no-such-engine")
    with pytest.raises(EngineError, match="unknown option"):
        make_seat("bughouse-mcts:bogus=1", 1, EvaluatorPool())
    with pytest.raises(EngineError, match="bad value"):
        make_seat("bughouse-mcts:nodes=many", 1, EvaluatorPool())
    with pytest.raises(EngineError, match="not installed|not found"):
        make_seat("no-such-engine-xyz+xboard", 1, EvaluatorPool())
    with pytest.raises(EngineError, match="bughouse-mcts"):
        make_seat("material-mcts", 1, EvaluatorPool())  # a chess engine cannot take a bughouse seat


def test_registry_create_builds_bughouse_seats():
    """The one factory of engines makes bughouse seats too, with the one-board limit units."""
    from board.variants import BUGHOUSE
    from engines import factory
    from engines.base import Engine
    from engines.seats import OurSeat, Seat

    pool = EvaluatorPool()
    seats = [factory.create(f"{name}:nodes=90,playouts=30,evals=20", BUGHOUSE.name, kind=Seat, seed=5, pool=pool)
             for name in ("rise-bughouse-mcts", "rise-bughouse-mcts", "bughouse-mcts")]
    try:
        assert all(isinstance(s, OurSeat) for s in seats)
        ours = [s for s in seats if isinstance(s, OurSeat)]
        assert [(s.nodes, s.playouts, s.evals) for s in ours] == [(90, 30, 20)] * 3
        assert ours[0].evaluator is ours[1].evaluator  # one pool, one network: the leaves share its batch
        assert ours[2].evaluator.name == "bughouse-classical"
        assert ours[0].name == "rise-bughouse-mcts:nodes=90,playouts=30,evals=20"
    finally:
        for s in seats:
            s.close()
        pool.close()
    with pytest.raises(EngineError, match="not an engine of kind Engine"):
        factory.create("bughouse-mcts", BUGHOUSE.name)  # a seat is not a one-board engine
    with pytest.raises(EngineError, match="not an engine of kind Seat"):
        factory.create("material-ab", "chess", kind=Seat)
    assert isinstance(factory.create("material-ab", "chess", kind=Engine), Engine)
    with pytest.raises(SeatError, match="does not play bughouse"):
        factory.create("material-mcts", BUGHOUSE.name, kind=Seat)


def test_clock_moves_sets_the_share_of_the_clock_a_timed_move_takes():
    """``clock_moves`` (a bughouse seat option): a move takes the clock left / clock_moves (30 unset),
    capped by movetime; one-board engines refuse it."""
    from board.variants import BUGHOUSE
    from engines import factory, registry
    from engines.seats import CLOCK_MOVES, allocate

    ctx = GameContext(BughouseGame(base_ms=60_000, inc_ms=0), [], t0=time.monotonic())
    ctx.now_ms = lambda: 0  # type: ignore[method-assign]  # at the start: the full 60 s left
    assert allocate(ctx, 0, None) == pytest.approx(60.0 / CLOCK_MOVES) and CLOCK_MOVES == 30
    assert allocate(ctx, 0, None, 15) == pytest.approx(4.0)
    assert allocate(ctx, 0, 1.5, 15) == pytest.approx(1.5)
    untimed = GameContext(BughouseGame(), [], t0=time.monotonic())
    assert allocate(untimed, 0, None, 15) == float("inf")
    seat = factory.create("bughouse-mcts:clock_moves=12", BUGHOUSE.name, kind=Seat, pool=EvaluatorPool())
    try:
        assert isinstance(seat, OurSeat) and seat.clock_moves == 12
        assert seat.settings()["options"]["clock_moves"] == "12"  # stored with the game
    finally:
        seat.close()
    with pytest.raises(EngineError, match="clock_moves and stall are options of bughouse seats"):
        factory.create("material-ab:clock_moves=15", "chess")
    with pytest.raises(EngineError, match=r"must be in \[2, 1000\]"):
        registry.resolve("bughouse-ab:clock_moves=1")


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert cli.main(["bughouse-match", "stockfish", "sjeng", "--db", str(tmp_path / "x.sqlite")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not play bughouse" in err[0]
    assert cli.main(["bughouse-match", "bughouse-mcts", "bughouse-mcts", "--tc", "fast", "--db", str(tmp_path / "x.sqlite")]) == 2
    assert cli.main(["bughouse-match", "bughouse-mcts", "bughouse-mcts", "--games", "0", "--db", str(tmp_path / "x.sqlite")]) == 2


def test_cli_plays_and_stores(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    db = tmp_path / "c.sqlite"
    assert cli.main(["bughouse-match", "bughouse-mcts:nodes=10", "bughouse-mcts:nodes=10,seed=2", "--games", "1", "--tc", "5+0",
                     "--max-plies", "40", "--db", str(db), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "played 1" in out and db.exists() and db.with_suffix(".bpgn").exists()
    untimed = tmp_path / "u.sqlite"
    args = ["match", "bughouse-mcts:nodes=10", "bughouse-mcts:nodes=12", "--variant", "bughouse", "--games", "2",
            "--tc", "none", "--max-plies", "30", "--db", str(untimed), "--workers", "2", "--quiet"]
    assert cli.main(args) == 0
    assert "played 2" in capsys.readouterr().out
    assert cli.main(["replay", str(untimed), "--quiet"]) == 0
    assert "2 games replayed, every move agrees" in capsys.readouterr().out
    assert cli.main(["replay", str(db), "--quiet"]) == 0
    assert "skipped: 1 time-limited" in capsys.readouterr().out
    refused = ["bughouse-match", "bughouse-mcts", "sjeng", "--tc", "none", "--db", str(tmp_path / "s.sqlite"), "--quiet"]
    assert cli.main(refused) == 2
    assert "without clocks" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ Sjeng

@pytest.mark.skipif(SJENG is None, reason="sjeng is not installed")
def test_a_short_real_game_against_a_sjeng_team(tmp_path: Path):
    db = tmp_path / "sjeng.sqlite"
    s = run_match("bughouse-mcts:nodes=100", "sjeng", 1, 6000, 0, db, progress=False)
    assert s.played == 1
    store = BughouseStore(db)
    try:
        (g,) = store.store.games()
        assert g.result in ("1-0", "0-1", "1/2-1/2") and g.plies > 0
        assert not g.reason.startswith("forfeit"), g.reason  # Sjeng followed the protocol
        d = store.details(g.key)
        assert d is not None and [s["kind"] for s in d["seats"]] == ["ours", "xboard", "xboard", "ours"]
        rebuild_game(g, d)
    finally:
        store.close()


@pytest.mark.skipif(SJENG is None, reason="sjeng is not installed")
def test_match_command_with_bughouse_variant_plays_a_sjeng_team(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # The acceptance path: `searchbench match A B --variant bughouse` with every game stored.
    db = tmp_path / "m.sqlite"
    assert cli.main(["match", "bughouse-mcts:nodes=60", "sjeng", "--variant", "bughouse", "--games", "1",
                     "--tc", "5+0", "--db", str(db), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "played 1" in out
    store = BughouseStore(db)
    try:
        (g,) = store.store.games()
        assert g.result in ("1-0", "0-1", "1/2-1/2") and g.plies > 0
    finally:
        store.close()
    # Limits belong in the team specs: a node flag is a one-line error, exit 2.
    assert cli.main(["match", "bughouse-mcts", "sjeng", "--variant", "bughouse", "--nodes", "5",
                     "--db", str(tmp_path / "n.sqlite")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "team specs" in err[0]


# ------------------------------------------------------------------------------------ alpha-beta seats

def test_lone_board_counts_what_goes_to_the_partner():
    from evaluators.bughouse_classical import BoardScoreEvaluator, lone_board, sent_to_partners

    pos = lone_board("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR[Q] w KQkq - 0 2", 0)
    ev = BoardScoreEvaluator()
    before = ev.score(pos)
    pos.push(pos.parse_uci("e4d5"))
    assert sent_to_partners(pos) < 0  # Black to move: White has sent a pawn to its partner
    assert pos.pocket_count(0, 5) == 1 and pos.pocket_count(1, 1) == 0  # not into a pocket of this board
    assert ev.score(pos) < -before
    pos.pop()
    assert sent_to_partners(pos) == 0 and ev.score(pos) == before
    assert sent_to_partners(BughouseGame().boards[0].copy()) == 0  # a board without a stand-in


def test_phantom_pieces_for_the_opponent():
    from evaluators.bughouse_classical import PhantomBoardScoreEvaluator, lone_board

    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR[Pn] b KQkq - 0 1"
    assert lone_board(fen, 1).fen().startswith("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR[Pn] b")
    pos = PhantomBoardScoreEvaluator().board(fen, 1)
    assert [pos.pocket_count(0, pt) for pt in range(1, 6)] == [1, 1, 1, 1, 1]  # White, not to move: one of each
    assert [pos.pocket_count(1, pt) for pt in range(1, 6)] == [0, 1, 0, 0, 0]  # Black's own pocket as it is
    assert pos.board_id == 1 and pos.partner is not None and pos.partner.pockets == 0


def test_alpha_beta_finds_a_drop_mate_on_a_lone_board():
    from evaluators.bughouse_classical import BoardScoreEvaluator, lone_board
    from search.alphabeta import AlphaBeta
    from search.base import Limits

    # White holds a queen: Q@f7 is mate (the king's escapes are covered, the queen defended by the bishop)
    pos = lone_board("r1bqkbnr/pppp2pp/2n5/4pp2/2B1P3/8/PPPP1PPP/RNB1K1NR[Q] w KQkq - 0 4", 0)
    r = AlphaBeta(BoardScoreEvaluator()).run(pos, Limits(depth=3))
    assert move_to_uci(r.best_move) == "Q@f7" and r.mate == 1


def test_alpha_beta_seats_play_a_game_in_their_own_processes():
    seats = [make_seat("bughouse-ab:nodes=300", 1, EvaluatorPool()), ShuffleSeat("s1", 1),
             ShuffleSeat("s2", 1), make_seat("bughouse-ab-phantoms:depth=2", 1, EvaluatorPool())]
    try:
        res = play_game(seats, 60000, 0, max_plies=24)
        ours = [p for p in res.moves if p.seat in (0, 3)]
        assert len(ours) >= 10 and all(p.stat.nodes > 0 and p.stat.evals > 0 for p in ours)
        assert all(p.stat.depth == 2 for p in res.moves if p.seat == 3)
        assert seats[0].settings()["search"] == "alphabeta"
        with pytest.raises(SeatError, match="alpha-beta seat needs"):
            from engines.seats import AlphaBetaSeat

            AlphaBetaSeat("x", "bughouse-mcts", depth=1)
        # a search process that dies forfeits the game for its team
        seats[0].proc.kill()
        seats[0].proc.join()
        res = play_game(seats, 60000, 0, max_plies=24)
        assert res.reason.startswith("forfeit: A-white") and "process is gone" in res.reason and res.result == "0-1"
    finally:
        for s in seats:
            s.close()


def test_alphabeta_seat_searches_again_when_a_new_pocket_piece_makes_its_move_a_blunder():
    """The opponent's pocket grew while the seat searched (a capture on the other board): a move
    that now lets it mate at once is searched again once, with the new pockets; otherwise the move
    is played. ``allows_mate_in_one`` is the report's "allowed mate in one"."""
    from engines.seats import AlphaBetaSeat, ClockWatch

    before = "6k1/1b3ppp/8/8/4N3/6P1/5P1P/R5K1[] w - - 0 20"  # the board when the search began
    # Black got a queen: once the knight leaves the long diagonal, Q@g2 (guarded by the bishop) mates
    now = "6k1/1b3ppp/8/8/4N3/6P1/5P1P/R5K1[q] w - - 0 20"
    b = BughouseGame(f"{now} | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1").boards[0]
    assert b.allows_mate_in_one(b.parse_uci("e4c3")) and not b.allows_mate_in_one(b.parse_uci("h2h3"))

    def seat_with(answer: str, sent_fen: str) -> tuple[AlphaBetaSeat, GameContext, FakePipe]:
        seat = AlphaBetaSeat.__new__(AlphaBetaSeat)  # no worker process: the connection is faked
        conn = FakePipe()
        seat.name, seat.seat, seat.conn, seat.options = "ab", 0, conn, {}
        seat.nodes, seat.movetime, seat.depth, seat.clock_moves = 1000, None, None, None
        seat.thinking, seat.job, seat.turn_started, seat.rechecked, seat.turn_cost = True, 1, 0, False, (0, 0)
        seat.sent_fen, seat.game_rechecks = sent_fen, 0
        seat.stall, seat.held, seat.watch, seat.game_stalls = False, None, ClockWatch(), 0
        ctx = GameContext(BughouseGame(f"{now} | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"), [],
                          t0=time.monotonic())
        conn.answers.append((1, answer, 500, 400, 3, 20, 0.1))
        return seat, ctx, conn

    seat, ctx, conn = seat_with("e4c3", before)
    seat.tick(ctx)
    assert not ctx.actions and seat.thinking and seat.game_rechecks == 1
    assert conn.sent == [(2, b.fen(), 0, None, 1000, None)]  # the board as it is now
    conn.answers.append((2, "h2h3", 700, 600, 4, 10, 0.1))
    seat.tick(ctx)
    assert ctx.actions[0][:2] == ("move", 0) and ctx.actions[0][2][0] == "h2h3"
    assert (ctx.actions[0][2][1].nodes, ctx.actions[0][2][1].evals) == (1200, 1000)  # both searches' cost
    assert seat.settings()["rechecks"] == 1
    for answer, sent_fen in (("e4c3", b.fen()), ("h2h3", before)):  # the search saw the pockets / no blunder
        seat, ctx, conn = seat_with(answer, sent_fen)
        seat.tick(ctx)
        assert ctx.actions[0][2][0] == answer and not conn.sent and seat.game_rechecks == 0
