"""The bughouse strength report (experiments/harness/bughouse_report.py): bughouse openings, the
XBoard seats' start from an opening, game pairs on their own openings, how a game's end reads
from our side, the figures of a row, the config's errors, and the report written from stored games."""
from pathlib import Path

import pytest

from board.bughouse import BughouseGame
from engines.base import EngineSpec, MoveStat
from engines.seats import GameContext, SeatError
from experiments.cli import main as cli
from experiments.harness import bughouse_report as br
from experiments.harness.bughouse import BughouseStore, play_game, run_match
from experiments.harness.openings import OpeningError, bughouse_openings, default_suite
from experiments.harness.store import GameRecord
from experiments.harness.tomlconfig import ConfigError
from tests.test_bughouse_match import RecordingSeat, ShuffleSeat

ZH = default_suite("crazyhouse")


def test_bughouse_openings_are_distinct_quiet_and_reproducible():
    ops = bughouse_openings(30, 1, "k")
    assert len({o.name for o in ops}) == 30 and len({o.fen for o in ops}) == 30
    assert ops == bughouse_openings(30, 1, "k") and ops != bughouse_openings(30, 1, "other")
    for o in ops:
        g = BughouseGame(o.fen)
        a, b = o.name.removeprefix("bughouse:").split("+")
        assert a != b
        for board in g.boards:
            assert board.turn == 0 and "[]" in board.fen()  # White to move, empty pockets
        assert g.material(0) == g.material(1) == [0, 16, 4, 4, 4, 2, 2]  # nothing was captured
    # a match that grows keeps the openings of its first pairs (datagen extends matches chunk by chunk)
    assert bughouse_openings(3, 1, "k") == ops[:3] and bughouse_openings(300, 1, "k")[:30] == ops
    with pytest.raises(OpeningError, match="distinct bughouse openings"):
        bughouse_openings(10**6, 1, "k")


def test_xboard_seats_start_from_an_opening():
    fen = bughouse_openings(1, 2, "x")[0].fen
    game = BughouseGame(fen, base_ms=60000)
    seats = [RecordingSeat(n) for n in ("aw", "ab", "bw", "bb")]
    ctx = GameContext(game, seats, 0.0)
    for s in range(4):
        seats[s].start_game(ctx, s, seats[3 - s].name)
    aw, ab, bw, bb = seats
    board_a = fen.split(" | ")[0].replace("[]", "")
    # White: as after a claimed result (force, black, setboard, holding, clocks, go); not a restart
    i = aw.sent.index("force")
    assert aw.sent[i + 1:i + 4] == ["black", "setboard " + board_a, "holding [] []"] and aw.sent[-1] == "go"
    assert aw.restarts == 0
    # Black: new (it plays Black), setboard, and it answers White's first move
    assert ab.sent[0] == "new" and "force" not in ab.sent and "go" not in ab.sent
    assert ab.sent[-2:] == ["setboard " + board_a, "holding [] []"]
    black_to_move = BughouseGame(fen.replace(" w ", " b ", 1))
    with pytest.raises(SeatError, match="White to move"):
        RecordingSeat("x").start_game(GameContext(black_to_move, seats, 0.0), 0, "y")


def test_game_pairs_start_from_their_own_openings(tmp_path: Path):
    db = tmp_path / "o.sqlite"

    def factory(spec: EngineSpec, seed: int, pool: object) -> ShuffleSeat:
        return ShuffleSeat(spec.name, delay_ms=1)

    s = run_match("bughouse-mcts", "sjeng", 4, 60000, 0, db, seed=1, max_plies=12, progress=False,
                  seat_factory=factory, openings=ZH)
    assert s.played == 4
    store = BughouseStore(db)
    try:
        games = store.store.games()
        assert [g.opening for g in games][0::2] == [g.opening for g in games][1::2]  # a pair shares its opening
        assert len({g.opening for g in games}) == 2 and all(g.opening.startswith("bughouse:") for g in games)
        assert all(g.opening_fen == bughouse_openings(2, 1, g.match)[g.pair].fen for g in games)
        assert all("|o:crazyhouse.epd:" in g.match for g in games)
        bpgn = store.details(games[0].key)["bpgn"]
        assert '[SetUp "1"]' in bpgn and f'[FEN "{games[0].opening_fen}"]' in bpgn
    finally:
        store.close()
    # the same match from the initial position is another match (its own keys)
    again = run_match("bughouse-mcts", "sjeng", 2, 60000, 0, db, seed=1, max_plies=12, progress=False,
                      seat_factory=factory)
    assert again.played == 2
    # openings_as: another team's draw (a paired comparison); the games are this match's
    paired = run_match("bughouse-mcts:stall=true", "sjeng", 4, 60000, 0, db, seed=1, max_plies=12, progress=False,
                       seat_factory=factory, openings=ZH, openings_as="bughouse-mcts")
    assert paired.played == 4
    store = BughouseStore(db)
    try:
        fens: dict[str, list[str]] = {}
        for g in sorted(store.store.games(), key=lambda g: g.key):
            if "|o:" in g.match:
                fens.setdefault(g.match.split("|")[0], []).append(g.opening_fen)
        assert fens["bughouse:bughouse-mcts:stall=true"] == fens["bughouse:bughouse-mcts"]
    finally:
        store.close()
    res = play_game([ShuffleSeat("s", 1) for _ in range(4)], 60000, 0, max_plies=4,
                    fen=bughouse_openings(1, 1, "p")[0].fen)
    assert res.game.root_fen == bughouse_openings(1, 1, "p")[0].fen and res.game.ply() == 4


def record(key: str, pair: int, team0: str, team1: str, result: str, reason: str, moves: list[str],
           stats: list[MoveStat] | None = None) -> GameRecord:
    return GameRecord(key=key, run="r", match="m", pair=pair, variant="bughouse", white=team0, black=team1,
                      white_settings={}, black_settings={}, opening=f"op{pair}", opening_fen="", opening_moves=[],
                      moves=moves, result=result, reason=reason, move_stats=stats or [], started=0.0, finished=30.0)


def test_how_a_game_ends_from_our_side():
    g = record("k", 0, "ours", "sjeng", "0-1", "checkmate on board B", [])
    assert br.end_of(g, True, [0, 0, 0, 0]) == "mated on B"
    assert br.end_of(g, False, [0, 0, 0, 0]) == "mate given on B"
    flag = record("k", 0, "ours", "sjeng", "0-1", "flag on board A", [])
    # team 0 lost on A: its A seat (A-white, seat 0) flagged
    assert br.end_of(flag, True, [0, 0, 0, 0]) == "flag lost on A"
    assert br.end_of(flag, True, [2, 0, 0, 0]) == "flag lost on A (after sitting)"
    assert br.end_of(flag, True, [0, 0, 0, 3]) == "flag lost on A"  # our B seat sat, our A seat flagged
    assert br.end_of(flag, False, [0, 0, 0, 0]) == "flag won on A"
    # team 1 won on A: its seat on B (B-white, seat 2) sat or stalled while A-white waited
    assert br.end_of(flag, False, [0, 0, 1, 0]) == "flag won on A (after sitting)"
    assert br.end_of(flag, False, [0, 1, 0, 0]) == "flag won on A"
    assert br.end_of(record("k", 0, "a", "b", "1/2-1/2", "max_plies", []), True, [0] * 4) == "draw (max_plies)"
    forfeit = record("k", 0, "a", "b", "1-0", "forfeit: B-white (sjeng) crash: sjeng exited", [])
    assert br.end_of(forfeit, True, [0] * 4) == "forfeit won"


def test_what_our_last_move_did_before_a_mate():
    mate = ["A:e2e4", "A:e7e5", "A:f1c4", "A:b8c6", "A:d1h5", "A:g8f6", "A:h5f7"]
    g = record("k", 0, "sjeng", "ours", "1-0", "checkmate on board A", mate)
    start = BughouseGame().fen()
    assert br.mate_cause(g, start) == "allowed mate in one"  # ...Nf6?? let Qxf7 mate; ...g6 would not have
    assert br.mate_cause(record("k", 0, "a", "b", "1-0", "flag on board A", mate), start) is None
    # the summary counts our mates by cause
    r = br.summarize(br.RowSpec("r", "ours", "sjeng", "60+0", 60000, 0, 2), [g], {})
    assert r.ends == {"mated on A": 1} and r.mates == {"allowed mate in one": 1}


def test_moves_made_while_waiting_would_have_won_on_time():
    """The stall's condition replayed from move times: at 10 s our A seat moves while B-white (its
    partner's opponent) has been on move 10 s without a move and has 50 s left against our 58 s."""
    moves = ["A:e2e4", "A:e7e5", "A:g1f3", "B:e2e4"]
    g = record("k", 0, "ours", "sjeng", "1-0", "flag on board B", moves)
    spec = br.RowSpec("r", "ours", "sjeng", "60+0", 60000, 0, 2)
    times = [1000, 9000, 10000, 11000]
    assert br.stall_chances(spec, g, times, {0, 3}) == 1
    assert br.stall_chances(spec, g, times, {1, 2}) == 0  # their seats' partners were the ones on move
    assert br.stall_chances(spec, g, [1000, 3000, 6000, 11000], {0, 3}) == 0  # 56 s left against 54 s
    untimed = br.RowSpec("r", "ours", "sjeng", "none", -1, 0, 2)
    assert br.stall_chances(untimed, g, times, {0, 3}) == 0
    r = br.summarize(spec, [g], {"k": {"times": times}})
    assert (r.waits, r.wait_games, r.wait_wins) == (1, 1, 1)


def test_seat_time_from_move_times():
    # A-white 100 ms, B-white 300, A-black 150 (250 - 100), B-black 400 (700 - 300)
    assert br._seat_used_ms(["A:e2e4", "B:d2d4", "A:e7e5", "B:d7d5"], [100, 300, 250, 700]) == [100, 150, 300, 400]


def test_a_rows_figures():
    spec = br.RowSpec("r", "ours", "sjeng", "60+0", 60000, 0, 4)
    a, b, z = MoveStat(nodes=100, evals=80, time=1.0), MoveStat(nodes=300, evals=200, time=3.0), MoveStat()
    moves = ["A:e2e4", "A:e7e5", "B:d2d4", "B:d7d5"]
    as0, as1 = [a, z, z, b], [z, a, b, z]  # our moves: team 0 holds A-white and B-black, team 1 the others
    games = [record("0", 0, "ours", "sjeng", "1-0", "checkmate on board A", moves, as0),
             record("1", 0, "sjeng", "ours", "1-0", "checkmate on board B", moves, as1),
             record("2", 1, "ours", "sjeng", "1/2-1/2", "max_plies", moves, as0),
             record("3", 1, "sjeng", "ours", "0-1", "checkmate on board A", moves, as1)]
    details = {g.key: {"times": [1000, 3000, 2000, 5000], "seats": [{"sits": 0}] * 4} for g in games}
    r = br.summarize(spec, games, details)
    assert (r.wins, r.draws, r.losses, r.games, r.openings) == (2, 1, 1, 4, 2)
    assert r.ptnml == [0, 0, 1, 1, 0]  # pair 0: 1 + 0; pair 1: 0.5 + 1
    assert r.score == 0.625 and r.lo < r.elo < r.hi and r.elo > 0
    assert (r.moves, r.nodes, r.evals, r.seconds) == (8, 200.0, 140.0, 2.0)
    # a reference program reports no counts ("-"); a reference of ours does
    assert (r.ref_nodes, r.ref_evals) == (0.0, 0.0) and br._per_move(r.ref_nodes) == "-"
    ours_ref = br.summarize(spec, [record("0", 0, "ours", "sjeng", "1-0", "checkmate on board A", moves, [a, b, b, a])],
                            details)
    assert (ours_ref.nodes, ours_ref.ref_nodes, ours_ref.ref_evals) == (100.0, 300.0, 200.0)
    assert br._per_move(ours_ref.ref_nodes) == "300"
    assert r.ends == {"mate given on A": 2, "mated on B": 1, "draw (max_plies)": 1}
    # seat times a game: A-white 1.0 s, A-black 2.0, B-white 2.0, B-black 3.0; ours alternate
    assert r.used == {"ours A": 1.5, "ours B": 2.5, "reference A": 1.5, "reference B": 2.5}
    assert r.minutes == pytest.approx(2.0) and r.plies == 4.0
    assert br.elo_text(r)[0] == f"{r.elo:+.0f}"
    # a sweep has no finite Elo: the table gives the bound of its interval
    lost = br.summarize(spec, [record(str(i), i // 2, "ours" if i % 2 == 0 else "sjeng", "sjeng" if i % 2 == 0 else "ours",
                                      "0-1" if i % 2 == 0 else "1-0", "checkmate on board A", moves, as0) for i in range(4)],
                        details)
    assert lost.score == 0.0 and br.elo_text(lost) == (f"< {lost.hi:+.0f}", f"[-inf, {lost.hi:+.0f}]")
    assert br.elo_text(br.summarize(spec, [], {})) == ("-", "-")


def test_config_errors(tmp_path: Path):
    def cfg(text: str) -> Path:
        p = tmp_path / "c.toml"
        p.write_text(text)
        return p

    ok = 'name = "x"\n[[rows]]\nname = "a"\nteam = "bughouse-mcts"\n'
    c = br.load(cfg(ok))
    assert c.rows[0].opponent == "sjeng" and (c.rows[0].base_ms, c.rows[0].games) == (60000, 40)
    for text, words in [(ok + 'tc = "0+1"\n', "0 < BASE"), (ok + 'tc = "fast"\n', "tc"),
                        (ok.replace("bughouse-mcts", "stockfish"), "does not play bughouse"),
                        (ok + "games = 3\n", "even"), ('name = "x"\n', "rows"),
                        (ok + "colour = 1\n", "unknown key"), (ok.replace('"x"', '"a b"'), "letters"),
                        (ok + '[[rows]]\nname = "a"\nteam = "sjeng"\n', "another row"),
                        (ok + 'tc = "none"\n', "without clocks"),  # Sjeng, the default opponent, needs a clock
                        (ok + 'workers = 0\n', "workers")]:
        with pytest.raises(ConfigError, match=words):
            br.load(cfg(text))
    untimed = br.load(cfg(ok.replace("[[rows]]", 'opponent = "bughouse-mcts:nodes=20"\ntc = "none"\nworkers = 2\n[[rows]]')))
    assert (untimed.rows[0].base_ms, untimed.rows[0].inc_ms, untimed.workers) == (-1, 0, 2)
    assert br.load(cfg(ok + 'openings_as = "bughouse-ab"\n')).rows[0].openings_as == "bughouse-ab"
    with pytest.raises(ConfigError, match="openings_as"):
        br.load(cfg(ok + 'openings_as = "stockfish"\n'))
    assert cli.main(["bughouse-report", str(cfg(ok + "games = 3\n"))]) == 2
    assert cli.main(["bughouse-report", str(tmp_path / "missing.toml")]) == 2


def test_report_from_stored_games(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    from experiments.harness import bughouse as bm

    def factory(spec: EngineSpec, seed: int, pool: object) -> ShuffleSeat:
        return ShuffleSeat(spec.name, delay_ms=1)

    monkeypatch.setattr(bm, "make_seat", factory)
    real = bm.run_match
    monkeypatch.setattr(bm, "run_match", lambda *a, **k: real(*a, **dict(k, seat_factory=factory)))
    p = tmp_path / "c.toml"
    p.write_text(f'name = "bh"\ngames = 2\nmax_plies = 8\ndb = "{tmp_path / "bh.sqlite"}"\n'
                 f'report_dir = "{tmp_path / "rep"}"\n[[rows]]\nname = "a"\nteam = "bughouse-mcts"\n')
    assert cli.main(["bughouse-report", str(p), "--quiet"]) == 0
    out = tmp_path / "rep" / "bh"
    for f in ("teams.md", "teams.csv", "ends.csv", "teams.png", "teams.svg", "index.html"):
        assert (out / f).is_file(), f
    md = (out / "teams.md").read_text()
    assert "searchbench bughouse-report" in md and "| a | `bughouse-mcts` | `sjeng` | 60+0 | 2 (1) | 0-2-0 |" in md
    assert "draw (max_plies) 2" in md
    head = md.split("\n")  # the answer first: the finding, then the command
    assert head[2].startswith("**Finding.** `a` 50.0% (0-2-0) against `sjeng`, Elo ") and head[2].endswith("], 2 games.")
    assert head[7].startswith("searchbench bughouse-report")
    html = (out / "index.html").read_text()
    assert "Elo against the reference team" in html
    # a second run plays nothing and writes the same table
    assert cli.main(["bughouse-report", str(p), "--quiet"]) == 0
    assert (out / "teams.md").read_text() == md
    # what each seat's engine ran with is recorded, per seat spec, as one-board reports record theirs:
    # the answer page can tell when today's engine of that name runs differently
    import json

    from reports import played

    players = json.loads((out / "engines.json").read_text())
    assert set(players) == {"bughouse-mcts", "sjeng"}
    assert players["sjeng"]["effective"] is None  # an external program: its spec text only
    eff = players["bughouse-mcts"]["effective"]
    assert {k: v for k, v in eff.items() if k not in played.NOT_COMPARED} == played.today("bughouse-mcts")
    assert played.status(out) == ("current", [])
    option = sorted(set(eff) - set(played.NOT_COMPARED))[0]
    eff[option] = eff[option] + "-then"
    (out / "engines.json").write_text(json.dumps(players))
    state, why = played.status(out)
    assert state == "stale" and why == [f"bughouse-mcts: {option} {eff[option]} → {played.today('bughouse-mcts')[option]}"]
