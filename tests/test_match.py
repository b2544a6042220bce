"""The match runner with fake engines: pairs and colours, pooling across games, forfeits,
adjudication, the store (commit per game, resume, never twice), PGN, a killed run."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Sequence

import chess.pgn
import pytest

from engines.base import EngineError
from experiments.harness import match as M
from experiments.harness.openings import Opening, default_suite, load_suite
from experiments.harness.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_fakes import Factory, RandomEngine, SteppedEngine  # noqa: E402
from search.puct import PUCTParams

ROOT = Path(__file__).resolve().parent.parent


def openings(n: int = 3) -> list[Opening]:
    return load_suite(default_suite("crazyhouse"), "crazyhouse")[:n]


def tasks(a: str, b: str, games: int, nodes: int = 4, run: str = "t", **kw: object) -> list[M.GameTask]:
    pa, pb = M.Player(a, a, nodes=nodes), M.Player(b, b, nodes=nodes)
    return M.match_tasks(run, "crazyhouse", pa, pb, openings(), games, **kw)  # type: ignore[arg-type]


def quick_adj() -> M.Adjudication:
    return M.Adjudication(max_plies=40)


def test_pairs_reverse_colours_and_share_openings() -> None:
    ts = tasks("stepped", "random", 6)
    assert [t.white.name for t in ts] == ["stepped", "random"] * 3
    assert [t.pair for t in ts] == [0, 0, 1, 1, 2, 2]
    for a, b in zip(ts[::2], ts[1::2]):
        assert a.opening == b.opening and a.white == b.black and a.black == b.white
    assert len({t.key for t in ts}) == 6
    assert [t.key for t in ts] == [t.key for t in tasks("stepped", "random", 6)]  # deterministic
    with pytest.raises(M.MatchError):
        M.match_tasks("t", "crazyhouse", M.Player("x", "a", nodes=1), M.Player("x", "b", nodes=1), openings(), 2)
    with pytest.raises(M.MatchError):
        M.Player("x", "a")  # no limit


def test_pooling_batches_leaves_of_concurrent_games(tmp_path: Path) -> None:
    f = Factory()
    with Store(tmp_path / "r.sqlite") as st:
        stats = M.play(tasks("stepped", "stepped-own", 8), st, f, concurrency=4, adjudication=quick_adj(),
                       progress=False)
        assert stats.played == 8 and len(st) == 8
    # 4 concurrent games, each asking 2 leaves: the shared evaluator saw batches of several games
    assert max(f.evaluator.batches) > 2
    assert stats.eval_leaves == sum(f.evaluator.batches) + sum(
        sum(e.evaluator.batches) for e in f.made if isinstance(e, SteppedEngine) and e.evaluator is not f.evaluator)
    assert stats.eval_calls < stats.eval_leaves / 2  # fewer calls than one per ask


def test_games_stored_with_settings_stats_and_pgn(tmp_path: Path) -> None:
    f = Factory()
    pgn = tmp_path / "g.pgn"
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks("stepped", "drawish", 4), st, f, concurrency=2, adjudication=quick_adj(), pgn_path=pgn,
               progress=False)
        games = st.games()
    assert len(games) == 4
    g = games[0]
    assert g.result in ("1-0", "0-1", "1/2-1/2") and g.reason
    settings = g.white_settings if g.white == "stepped" else g.black_settings
    assert settings["spec"] == "counting+fake:k=v" and settings["limits"] == "nodes=4"
    assert len(g.move_stats) == len(g.moves) and g.opening_moves
    assert "git" in g.versions or "python" in g.versions
    first_white = len(g.opening_moves) % 2 == 0  # who moves first after the opening
    stepped_first = first_white == (g.white == "stepped")
    assert all(s.nodes == 4 for s in g.move_stats[0 if stepped_first else 1::2])
    assert all(s.nodes == 7 for s in g.move_stats[1 if stepped_first else 0::2])
    # PGN: variant tag, book and engine comments, replayable
    with open(pgn) as fh:
        read = [chess.pgn.read_game(fh) for _ in range(4)]
    assert all(r is not None and r.headers["Variant"] == "Crazyhouse" for r in read)
    first = read[0]
    assert first is not None
    nodes = list(first.mainline())
    assert nodes[0].comment == "book"
    engine_comments = [n.comment for n in nodes[len(g.opening_moves):] if n.comment]
    assert engine_comments and all("/" in c for c in engine_comments)
    assert all(re.fullmatch(r"[+-](\d+\.\d\d|M\d+)/\d+ \d+\.\d{3}s", c) for c in engine_comments)  # cutechess's
    assert first.headers["Termination"] in ("normal", "adjudication", "time forfeit", "rules infraction")
    assert first.headers["TerminationDetails"] == games[0].reason
    assert first.headers["Result"] == games[0].result
    assert first.end().board().fen() is not None


def test_forfeits_are_recorded_and_run_goes_on(tmp_path: Path) -> None:
    f = Factory()
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks("crasher", "random", 2) + tasks("illegal", "random", 2), st, f, concurrency=2,
               adjudication=quick_adj(), progress=False)
        games = st.games()
    assert len(games) == 4
    for g in games:
        bad = "crasher" if "crasher" in (g.white, g.black) else "illegal"
        assert g.reason.startswith("forfeit"), g.reason
        assert g.score_for(bad) == 0.0
    crashers = [e for e in f.made if e.name == "crasher"]
    assert crashers and all(isinstance(e, RandomEngine) and e.closed for e in crashers)


def test_engine_that_cannot_start_forfeits(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks("dies-on-start", "random", 4), st, Factory(), concurrency=2, progress=False)
        games = st.games()
    assert len(games) == 4
    for g in games:
        assert g.reason.startswith("forfeit: cannot start: RuntimeError") and g.score_for("dies-on-start") == 0.0
        assert g.moves == []


def test_resign_and_draw_adjudication(tmp_path: Path) -> None:
    f = Factory()
    adj = M.Adjudication(resign_moves=5, resign_cp=600, draw_from_move=1, draw_moves=4, draw_cp=20, max_plies=0)
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks("loser", "drawish", 2), st, f, adjudication=adj, progress=False)
        games = st.games()
    for g in games:
        assert g.reason.startswith("adjudication: resign"), g.reason
        assert g.score_for("loser") == 0.0
        assert len(g.moves) in (9, 10)  # the loser's 5th move (White: ply 9, Black: ply 10)
    # both sides within 20 cp for 4 moves each: a draw at the 8th move at the latest
    with Store(tmp_path / "d.sqlite") as st:
        M.play(tasks("drawish", "random", 2), st, f, adjudication=adj, progress=False)
        # random reports no score: never a draw adjudication; max_plies=0 and rules end the game
        assert all(not g.reason.startswith("adjudication: draw") for g in st.games())
    with Store(tmp_path / "e.sqlite") as st:
        M.play(M.match_tasks("t", "crazyhouse", M.Player("d1", "drawish", nodes=1), M.Player("d2", "drawish", nodes=1),
                             openings(), 2), st, f, adjudication=adj, progress=False)
        for g in st.games():
            assert g.reason.startswith("adjudication: draw") and g.result == "1/2-1/2" and len(g.moves) == 8


def test_max_plies(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks("random", "stepped", 2), st, Factory(), adjudication=M.Adjudication(0, 0, 0, 0, 0, 30),
               progress=False)
        for g in st.games():
            assert len(g.opening_moves) + len(g.moves) <= 30
            if len(g.opening_moves) + len(g.moves) == 30:
                assert g.reason == "adjudication: max plies (30)"


def test_resume_never_plays_a_game_twice(tmp_path: Path) -> None:
    db, pgn = tmp_path / "r.sqlite", tmp_path / "r.pgn"
    ts = tasks("stepped", "random", 6)
    done: list[str] = []
    with Store(db) as st:
        s1 = M.play(ts, st, Factory(), adjudication=quick_adj(), pgn_path=pgn, progress=False,
                    on_game=lambda g: done.append(g.key), stop=lambda: len(done) >= 3)
    assert s1.stopped and len(done) == 3
    with Store(db) as st:
        s2 = M.play(ts, st, Factory(), adjudication=quick_adj(), pgn_path=pgn, progress=False,
                    on_game=lambda g: done.append(g.key))
        assert s2.skipped == 3 and s2.played == 3
        assert sorted(g.key for g in st.games()) == sorted(t.key for t in ts)
        s3 = M.play(ts, st, Factory(), adjudication=quick_adj(), progress=False)
        assert s3.played == 0 and s3.skipped == 6 and len(st) == 6
    assert len(set(done)) == 6
    assert open(pgn).read().count("[Event ") == 6


def test_bad_engine_fails_before_any_game(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as st:
        with pytest.raises(EngineError, match="nosuch"):
            M.play(tasks("stepped", "nosuch", 2), st, Factory(), progress=False)
        assert len(st) == 0
    with pytest.raises(ValueError, match="not writable|cannot create"):
        Store("/proc/nonexistent/x.sqlite")


def test_external_engines_play_concurrently_in_threads(tmp_path: Path) -> None:
    RandomEngine.most_running = 0
    with Store(tmp_path / "r.sqlite") as st:
        M.play(tasks("slow", "stepped", 4), st, Factory(), concurrency=4, adjudication=M.Adjudication(max_plies=30),
               progress=False)
        assert len(st) == 4
    # blocking engines of different games were thinking at the same time (in the thread pool)
    assert RandomEngine.most_running >= 2


def test_worker_processes(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as st:
        s = M.play(tasks("stepped", "random", 4), st, Factory(), concurrency=2, workers=2,
                   adjudication=quick_adj(), progress=False)
        assert s.played == 4 and len(st) == 4


def test_a_worker_that_reads_an_empty_queue_waits_for_the_end_marker() -> None:
    """A multiprocessing queue can read empty while its tasks are still being written; a worker that
    took that for the end of the run left every remaining game to the other workers."""
    import queue as queue_mod

    from experiments.harness.backends import _serve
    from experiments.harness.workers import _main

    todo = tasks("stepped", "random", 4)

    class LaggingQueue:  # empty twice, then the tasks, then the end marker
        def __init__(self) -> None:
            self.items: list[object] = [*todo, None]
            self.misses = 2

        def get(self, timeout: float = 0.0) -> object:
            if self.misses:
                self.misses -= 1
                raise queue_mod.Empty
            return self.items.pop(0)

    class Results(list):  # type: ignore[type-arg]
        def put(self, x: object) -> None:
            self.append(x)

    class Never:
        def is_set(self) -> bool:
            return False

    out = Results()
    _main(_serve, (Factory(), "chess", 2, quick_adj(), {}, False), LaggingQueue(), out, Never(), dict(os.environ))
    assert sum(x[0] == "result" and isinstance(x[1], M.GameRecord) for x in out) == 4 and out[-1][0] == "done"


def test_a_worker_gets_no_more_slots_than_its_share_of_the_tasks() -> None:
    """A worker takes tasks as its slots free: with 16 tasks and 16 slots a worker, the first worker
    up took all 16 and the other idled (a 16-game self-play round: 62% of the CPUs busy, 96% now)."""
    from experiments.harness.backends import slots

    assert slots(32, 2, 16) == 8 and slots(32, 2, 15) == 8 and slots(32, 2, 500) == 16
    assert slots(32, 2, 1) == 1 and slots(1, 2, 10) == 1 and slots(8, 3, 4) == 2


def test_workers_take_the_environment_of_their_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers are forked by a fork server that may have started long before (another stage of the
    run): each still sees this process's environment as it is when the pool starts."""
    from experiments.harness.workers import run_pool, warm
    from harness_fakes import serve_environment

    warm()
    monkeypatch.setenv("SEARCHBENCH_TEST_LATE", "set after the fork server started")
    seen: list[object] = []
    run_pool(serve_environment, "SEARCHBENCH_TEST_LATE", [1, 2, 3], 2, on_result=lambda r: None, on_done=seen.append)
    assert seen == ["set after the fork server started"] * 2


def test_workers_stop_when_the_main_process_is_killed(tmp_path: Path) -> None:
    """A worker's parent is the fork server, not the main process: it still stops when the main
    process is killed (SIGKILL: no clean-up runs), and so does the server."""
    pids = tmp_path / "pids"
    pids.mkdir()
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from harness_fakes import serve_until_stopped
        from experiments.harness.workers import run_pool
        if __name__ == "__main__":
            run_pool(serve_until_stopped, {str(pids)!r}, [], 2, on_result=print)
    """)
    (tmp_path / "main.py").write_text(script)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "main.py")], cwd=ROOT, env=dict(os.environ))
    deadline = time.time() + 120
    while time.time() < deadline and len(list(pids.iterdir())) < 2:
        time.sleep(0.1)
    workers = [int(p.name) for p in pids.iterdir()]
    assert len(workers) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] not in "ZX"  # a zombie has ended
        except (FileNotFoundError, IndexError):
            return False

    deadline = time.time() + 15
    while time.time() < deadline and any(alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(alive(w) for w in workers)


def test_killed_run_keeps_finished_games_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from harness_fakes import Factory
        from test_match import tasks
        from experiments.harness import match as M
        from experiments.harness.store import Store
        st = Store({str(db)!r})
        M.play(tasks("slow", "random", 40), st, Factory(), concurrency=2,
               adjudication=M.Adjudication(max_plies=30), progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=dict(os.environ))
    deadline = time.time() + 60
    n = 0
    while time.time() < deadline:
        time.sleep(0.2)
        if db.exists():
            try:
                with Store(db) as st:
                    n = len(st)
            except ValueError:
                continue
            if n >= 2:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert n >= 2
    with Store(db) as st:
        kept = len(st)
        assert kept >= n
        ts = tasks("slow", "random", 40)
        todo = [t for t in ts if t.key not in st.done_keys()]
        assert len(todo) == 40 - kept
        s = M.play(ts[:kept + 2], st, Factory(), adjudication=M.Adjudication(max_plies=30), progress=False)
        assert s.skipped == kept and s.played == 2
        assert len({g.key for g in st.games()}) == len(st) == kept + 2


# ---- the command line, with the real registry (classical engines: fast, no weights)

def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from experiments.cli import main as cli

    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_match_stores_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.sqlite"
    argv = ["match", "material-ab", "material-mcts", "--variant", "crazyhouse", "--games", "2", "--nodes", "16",
            "--max-plies", "40", "--db", str(db), "--quiet"]
    rc, out, err = _cli(argv, capsys)
    assert rc == 0, err
    assert "(2 played, 0 already stored)" in out
    assert Path(str(db).replace(".sqlite", ".pgn")).read_text().count("[Variant \"Crazyhouse\"]") == 2
    rc, out, _ = _cli(argv, capsys)
    assert rc == 0 and "(0 played, 2 already stored)" in out
    with Store(db) as st:
        g = st.games()[0]
        assert g.white_settings["engine"] in ("material-ab", "material-mcts")
        assert g.white_settings["limits"] == "nodes=16" and "search" in g.white_settings


def test_stored_settings_name_the_network_that_played(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from evaluators.families import shipped_name
    from evaluators.neural import weights_path
    from experiments.harness.store import file_id

    db = tmp_path / "w.sqlite"
    rc, _, err = _cli(["match", "rise-mcts", "material-ab", "--variant", "crazyhouse", "--games", "2", "--nodes",
                       "8", "--max-plies", "6", "--db", str(db), "--quiet"], capsys)
    assert rc == 0, err
    with Store(db) as st:
        for g in st.games():
            rise = g.white_settings if g.white == "rise-mcts" else g.black_settings
            other = g.black_settings if g.white == "rise-mcts" else g.white_settings
            default = shipped_name("rise", "crazyhouse")  # today's default network of the variant
            assert rise["weights"] == file_id(weights_path(default))
            assert rise["weights"].startswith(f"{default}:") and "weights" not in other
            assert rise["inference"] == "onnxruntime" and "inference" not in other  # the backend that ran
    rc, out, err = _cli(["replay", str(db)], capsys)
    assert rc == 0 and "2 games replayed, every move agrees" in out, out + err


def test_replay_runs_a_network_in_the_mode_its_game_was_played_in() -> None:
    from experiments.harness.replay import player_of

    old = {"engine": "rise-mcts", "limits": "nodes=8", "weights": "rise_crazyhouse.pt:abc"}  # before the record
    assert player_of("a", old).spec.options["inference"] == "frozen"  # TorchScript, the default then
    assert player_of("a", dict(old, inference="onnxruntime")).spec.options["inference"] == "onnxruntime"
    assert player_of("a", dict(old, engine="rise-mcts:inference=eager")).spec.options["inference"] == "eager"
    material = player_of("a", {"engine": "material-ab", "limits": "nodes=8"})
    assert material.engine == "material-ab" and "inference" not in material.spec.options and material.nodes == 8
    # a game that recorded its evaluator, search and options is read back as that value, the
    # built-in's defaults of today not consulted (cpuct 9 is no built-in's default)
    stored = {"engine": "material-mcts", "limits": "nodes=8", "evaluator": "material", "search": "mcts",
              "options": {"cpuct_init": "9", "batch_size": "1"}}
    p = player_of("a", stored)
    assert p.engine == "material-mcts" and p.spec.config.settings(PUCTParams).cpuct_init == 9.0 and p.spec.config.batching.batch_size == 1
    assert p.spec.options == {"cpuct_init": "9.0", "batch_size": "1"}  # canonical text
    with pytest.raises(EngineError, match="no_such_option"):  # one line, as when the engine is made
        player_of("a", dict(stored, options={"no_such_option": "1"}))


def test_a_config_pins_the_inference_mode_of_its_network_engines(tmp_path: Path) -> None:
    from experiments.harness import tournament
    from experiments.harness.tomlconfig import ConfigError

    def load(extra: str) -> tournament.Tournament:
        path = tmp_path / "t.toml"
        path.write_text(f'name = "t"\nvariant = "crazyhouse"\ngames = 2\ndb = "{tmp_path}/t.sqlite"\n{extra}\n'
                        '[[engines]]\nengine = "rise-mcts:batch_size=4"\nnodes = 8\n'
                        '[[engines]]\nengine = "material-ab"\nnodes = 8\n'
                        '[[engines]]\nengine = "deepchess-ab:inference=eager"\nnodes = 8\n')
        return tournament.load(path)

    def engines(t: tournament.Tournament) -> set[str]:
        return {p.engine for task in t.tasks() for p in (task.white, task.black)}

    assert engines(load('inference = "frozen"')) == {"rise-mcts:batch_size=4,inference=frozen", "material-ab",
                                                     "deepchess-ab:inference=eager"}
    assert engines(load("")) == {"rise-mcts:batch_size=4", "material-ab", "deepchess-ab:inference=eager"}
    with pytest.raises(ConfigError, match="inference.*must be one of auto, onnxruntime"):
        load('inference = "fast"')


@pytest.mark.parametrize("argv,message", [
    (["match", "nosuch-engine", "material-ab", "--nodes", "8", "--games", "2"], "nosuch-engine"),
    (["match", "material-ab", "material-mcts", "--nodes", "8", "--games", "2", "--db", "/proc/no/x.sqlite"],
     "/proc/no"),
    (["match", "material-ab", "material-mcts", "--games", "2"], "give a limit"),
    (["sprt", "material-ab", "material-mcts", "--nodes", "8", "--elo0", "5", "--elo1", "0"], "elo1"),
    (["scale", "/nonexistent/c.toml"], "cannot read config"),
    (["ratings", "/nonexistent/x.sqlite"], "no such database"),
])
def test_cli_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                   message: str) -> None:
    if "--db" not in argv and argv[0] in ("match", "sprt"):
        argv = argv + ["--db", str(tmp_path / "x.sqlite")]
    rc, _, err = _cli(argv, capsys)
    assert rc == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "x.sqlite").exists() or len(Store(tmp_path / "x.sqlite")) == 0


# ---- opening suites and PGN details

def test_shipped_suites_are_balanced_and_replayable() -> None:
    from experiments.harness.openings import load_suite

    for variant, bound in (("chess", 60), ("crazyhouse", 150)):
        suite = load_suite(default_suite(variant), variant)
        assert len(suite) == 200
        assert len({" ".join(o.position(variant).fen().split()[:4]) for o in suite}) == 200
        assert all(o.score is not None and abs(o.score) <= bound for o in suite)
        assert all(6 <= len(o.moves) <= 9 for o in suite)
    big = load_suite(default_suite("crazyhouse").with_name("crazyhouse-1000.epd"), "crazyhouse")
    assert len(big) == 1000 and big[:200] == load_suite(default_suite("crazyhouse"), "crazyhouse")
    assert len({" ".join(o.position("crazyhouse").fen().split()[:4]) for o in big}) == 1000
    assert all(o.score is not None and abs(o.score) <= 150 for o in big)


def test_bad_suites(tmp_path: Path) -> None:
    from experiments.harness.openings import OpeningError, order

    p = tmp_path / "s.epd"
    p.write_text("# comment\n\nrnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id \"a\";\nnot an epd\n")
    with pytest.raises(OpeningError, match="s.epd:4"):
        load_suite(p, "chess")
    p.write_text('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "a"; c0 "e2e4 e7e5";\n')
    with pytest.raises(OpeningError, match="c0 moves reach"):
        load_suite(p, "chess")
    p.write_text('rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id "a"; c0 "e2e5";\n')
    with pytest.raises(OpeningError, match="opening 'a'"):
        load_suite(p, "chess")
    with pytest.raises(OpeningError, match="cannot read"):
        load_suite(tmp_path / "none.epd", "chess")
    ops = load_suite(default_suite("chess"), "chess")
    assert order(ops, 3, None) == ops[:3] and len(order(ops, 120, 5)) == 120 and order(ops, 50, 5) != ops


def test_generate_with_fairy_stockfish() -> None:
    from experiments.harness.openings import generate, parse_epd_line

    lines = generate("crazyhouse", 2, seed=3, plies=(2, 3), depth=6)
    assert len(lines) == 2
    for line in lines:
        op = parse_epd_line(line, "crazyhouse", "gen")
        assert 2 <= len(op.moves) <= 3 and op.score is not None and abs(op.score) <= 150


def test_pgn_comment_format() -> None:
    from experiments.harness.pgn import move_comment
    from experiments.harness.store import MoveStat

    assert move_comment(MoveStat(1600, 0.412, 31, None, 9)) == "+0.31/9 0.412s"  # cutechess's {score/depth time}
    assert move_comment(MoveStat(50, 0.1, -250, None, 3)) == "-2.50/3 0.100s"
    assert move_comment(MoveStat(80, 2.0, None, 3, 5)) == "+M3/5 2.000s"
    assert move_comment(MoveStat(80, 0.1, None, -2, 5)) == "-M2/5 0.100s"
    assert move_comment(MoveStat(80, 0.1)) == ""
    from experiments.harness.pgn import pawn_drops_with_letter, termination

    assert pawn_drops_with_letter("1. e4 @d5 2. N@f3+ @e6 {+0.31/9 0.1s} 3. exd5 @h3#") == \
        "1. e4 P@d5 2. N@f3+ P@e6 {+0.31/9 0.1s} 3. exd5 P@h3#"
    assert [termination(r) for r in ("checkmate", "adjudication: max plies (400)", "time forfeit",
                                     "forfeit: illegal move e2e5", "forfeit: hang: no move within 3s")] == \
        ["normal", "adjudication", "time forfeit", "rules infraction", "rules infraction"]


def test_ray_backend_local(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    with Store(tmp_path / "r.sqlite") as st:
        s = M.play(tasks("stepped", "random", 4), st, Factory(), concurrency=2, workers=2, backend="ray",
                   adjudication=quick_adj(), progress=False)
        assert s.played == 4 and len(st) == 4
        assert s.eval_calls > 0  # the stepped engines' evaluations happened in the actors
        s2 = M.play(tasks("stepped", "random", 4), st, Factory(), backend="ray", progress=False)
        assert s2.played == 0 and s2.skipped == 4


def test_killing_a_match_while_its_workers_play_leaves_no_process(tmp_path: Path) -> None:
    """``searchbench match --workers 2`` killed (SIGKILL: no clean-up) while its pool workers are in
    the middle of games: within 5 s no process of it is left, the fork server included (issue 81: the
    earlier probe's kill came before any worker started)."""
    db = tmp_path / "m.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli", "match", "material-ab", "material-mcts", "--variant",
                             "chess", "--nodes", "300", "--games", "40", "--workers", "2", "--concurrency", "2",
                             "--db", str(db), "--quiet"], cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def descendants(pid: int) -> set[int]:
        out: set[int] = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid:
                child = int(stat.parent.name)
                out |= {child} | descendants(child)
        return out

    deadline = time.time() + 120
    kids: set[int] = set()
    while time.time() < deadline and proc.poll() is None:
        kids |= descendants(proc.pid)
        if db.exists() and len(kids) >= 3:  # the server and two workers, games under way
            time.sleep(1.0)
            kids |= descendants(proc.pid)
            break
        time.sleep(0.1)
    assert proc.poll() is None and len(kids) >= 3, kids
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] not in "ZX"
        except (FileNotFoundError, IndexError):
            return False

    t0 = time.time()
    while time.time() - t0 < 5 and any(alive(k) for k in kids):
        time.sleep(0.1)
    assert not any(alive(k) for k in kids), [k for k in kids if alive(k)]
