"""The UCI front end: full games through python-chess ``SimpleEngine.popen_uci``, ``stop`` during
``go infinite``, ``isready`` while searching, and random garbage that must never kill the loop."""
from __future__ import annotations

import io
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import chess
import chess.engine
import chess.variant
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import factory, registry
from engines.base import EngineSpec, InProcessEngine
from engines.ours import OurEngine
from engines.uci import UCIServer

ROOT = Path(__file__).resolve().parents[1]
MAX_PLIES = 400
# python-chess never times out under node and clock limits: a broken front end fails, not hangs
pytestmark = pytest.mark.timeout(300)


def shut(*engines: chess.engine.SimpleEngine) -> None:
    for e in engines:
        try:
            e.quit()
        except Exception:  # noqa: BLE001 - already failed: make sure the process goes
            pass
        e.close()
PROTOCOL_PREFIXES = ("id ", "option ", "uciok", "readyok", "info ", "bestmove ")


def uci_command(engine: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "experiments.cli", "uci", "--engine", engine, *extra]


def play_game(white: chess.engine.SimpleEngine, black: chess.engine.SimpleEngine, b: chess.Board,
              limit: chess.engine.Limit) -> tuple[chess.Board, list[dict[str, object]]]:
    """Self-play until the game ends (draws claimed); every move is checked legal by python-chess."""
    infos = []
    game = object()
    while b.outcome(claim_draw=True) is None and len(b.move_stack) < MAX_PLIES:
        engine = white if b.turn == chess.WHITE else black
        r = engine.play(b, limit, game=game, info=chess.engine.INFO_ALL)
        assert r.move is not None and r.move in b.legal_moves, (r.move, b.fen())
        infos.append(dict(r.info))
        b.push(r.move)
    return b, infos


@pytest.mark.parametrize("variant, white, black", [
    ("chess", "material-ab", "material-ab"),
    ("crazyhouse", "material-mcts", "material-ab"),
])
def test_full_game_through_popen_uci(variant: str, white: str, black: str) -> None:
    w = chess.engine.SimpleEngine.popen_uci(uci_command(white), cwd=ROOT, timeout=60)
    bl = chess.engine.SimpleEngine.popen_uci(uci_command(black), cwd=ROOT, timeout=60)
    try:
        assert w.id["name"] == f"searchbench {white}"
        assert "UCI_Variant" in w.options and "crazyhouse" in w.options["UCI_Variant"].var
        assert "Threads" in w.options and "Nodes" in w.options
        if white == "material-mcts":
            assert "q_value_selection" in w.options and w.options["q_value_selection"].type == "check"
            w.configure({"q_value_selection": False, "batch_size": 4})
        start = chess.variant.CrazyhouseBoard() if variant == "crazyhouse" else chess.Board()
        b, infos = play_game(w, bl, start, chess.engine.Limit(nodes=150))
        assert b.outcome(claim_draw=True) is not None, f"no result after {MAX_PLIES} plies: {b.fen()}"
        if variant == "crazyhouse":
            assert any(m.drop for m in b.move_stack)  # drops went through the protocol both ways
        for info in infos:
            for key in ("depth", "score", "nodes", "nps", "pv"):
                assert key in info, (key, info)
            assert int(info["nodes"]) > 0  # type: ignore[call-overload]
    finally:
        shut(w, bl)


class Reader:
    """Lines of a subprocess's stdout, with timeouts."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        out = proc.stdout
        threading.Thread(target=lambda: [self.q.put(line.rstrip("\n")) for line in out], daemon=True).start()

    def until(self, prefix: str, timeout: float = 30.0) -> list[str]:
        """Lines up to and including the first that starts with ``prefix`` (fails after timeout)."""
        lines = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.q.get(timeout=0.05)
            except queue.Empty:
                continue
            lines.append(line)
            if line.startswith(prefix):
                return lines
        raise AssertionError(f"no {prefix!r} within {timeout}s; got {lines[-5:]}")


@pytest.mark.parametrize("engine", ["material-ab", "material-mcts"])
def test_stop_and_isready_during_infinite(engine: str) -> None:
    proc = subprocess.Popen(uci_command(engine), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)
    assert proc.stdin is not None
    r = Reader(proc)

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    try:
        send("uci")
        r.until("uciok")
        send("setoption name UCI_Variant value crazyhouse")
        send("isready")
        r.until("readyok")
        send("position startpos moves e2e4 d7d5 e4d5 d8d5 b1c3 d5a5")
        send("go infinite")
        time.sleep(1.5)
        send("isready")
        before = r.until("readyok")
        assert not any(line.startswith("bestmove") for line in before)  # still searching
        send("stop")
        lines = r.until("bestmove")
        move = lines[-1].split()[1]
        b = chess.variant.CrazyhouseBoard()
        for m in "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5".split():
            b.push_uci(m)
        assert chess.Move.from_uci(move) in b.legal_moves
        infos = [line for line in before + lines if line.startswith("info depth")]
        assert infos and " pv " in infos[-1] and " nodes " in infos[-1]
        send("quit")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_bad_engine_name_is_one_line_exit_2() -> None:
    out = subprocess.run(uci_command("no-such"), cwd=ROOT, capture_output=True, text=True, timeout=60, input="")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "unknown engine" in out.stderr
    ext = subprocess.run(uci_command("stockfish"), cwd=ROOT, capture_output=True, text=True, timeout=60, input="")
    assert ext.returncode == 2 and "external engine" in ext.stderr


# ---- in-process server ---------------------------------------------------------------------------

class LockedOut(io.StringIO):
    """A StringIO written by two threads."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def write(self, s: str) -> int:
        with self.lock:
            return super().write(s)

    def lines(self) -> list[str]:
        with self.lock:
            return self.getvalue().splitlines()


def make_server(name: str = "material-ab:depth=3") -> tuple[UCIServer, LockedOut]:
    spec = registry.resolve(name)

    def make(s: EngineSpec, v: str, evaluator: object | None) -> InProcessEngine:
        e = factory.create(s, v)
        assert isinstance(e, InProcessEngine)
        return e

    out = LockedOut()
    return UCIServer(spec, out, make, registry.option_infos(spec)), out


def test_server_commands_in_process() -> None:
    s, out = make_server()
    for line in ["uci", "isready", "setoption name UCI_Variant value crazyhouse", "setoption name Quiescence value false",
                 "setoption name Nodes value 500", "setoption name nonsense value 1", "ucinewgame",
                 "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[Qq] w KQkq - 0 1 moves Q@d3 Q@d6",
                 "go depth 2"]:
        s.handle(line)
    s.stop_search()
    lines = out.lines()
    assert "uciok" in lines and "readyok" in lines
    assert any(line.startswith("info string setoption: unknown option 'nonsense'") for line in lines)
    best = [line for line in lines if line.startswith("bestmove")]
    assert len(best) == 1
    b = chess.variant.CrazyhouseBoard("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[Qq] w KQkq - 0 1")
    b.push_uci("Q@d3")
    b.push_uci("Q@d6")
    assert chess.Move.from_uci(best[0].split()[1]) in b.legal_moves
    assert s._engine is not None and s._engine.search.config.quiescence is False  # type: ignore[attr-defined]
    s.shutdown()


def test_malformed_commands_get_info_strings() -> None:
    s, out = make_server()
    bad = ["position fen not/a/fen", "position startpos moves e2e5", "go nodes many", "go depth 0",
           "setoption", "setoption name UCI_Variant value atomic", "setoption name Threads value -3",
           "flibbertigibbet", "go movetime", "position"]
    for line in bad:
        s.handle(line)
        s.stop_search()
    lines = out.lines()
    notes = [line for line in lines if line.startswith("info string")]
    assert len(notes) >= len(bad) - 1
    # every go is answered, malformed or not; after a refused position, with no move (never one for the
    # position before it: issue 30)
    assert [line for line in lines if line.startswith("bestmove")] == ["bestmove 0000"] * 3
    assert any(line.startswith("info string no position to search") for line in lines)
    s.handle("isready")
    assert out.lines()[-1] == "readyok"
    s.shutdown()


def test_a_fen_counter_beyond_its_bound_is_a_refused_position() -> None:
    """A half-move clock or move number of 10^20 (issue 81, j05) is refused at ``position`` like any
    bad FEN: no search of it, ``bestmove 0000`` until the next valid position."""
    s, out = make_server("material-ab:depth=1")
    for counters in ("100000000000000000000 1", "0 100000000000000000000"):
        s.handle(f"position fen 4k3/8/8/8/8/8/8/4K2R w K - {counters}")
        s.handle("go depth 1")
        s.stop_search()
    lines = out.lines()
    assert sum(line.startswith("info string position refused") for line in lines) == 2
    assert [line for line in lines if line.startswith("bestmove")] == ["bestmove 0000"] * 2
    s.handle("position fen 4k3/8/8/8/8/8/8/4K2R w K - 99999 1")
    s.handle("go depth 1")
    s.stop_search()
    assert out.lines()[-1].startswith("bestmove") and out.lines()[-1] != "bestmove 0000"
    s.shutdown()


GO_ARGS = ["nodes 0", "nodes abc", "depth -3", "movetime " + "9" * 400, "nodes", "depth 2 nodes -1", "wtime x btime 5",
           "movetime 0", "nodes 99999999999999999999999 depth 1", "movestogo 0 wtime 100 btime 100", ""]


@pytest.mark.parametrize("args", GO_ARGS)
def test_every_go_is_answered_by_one_bestmove(args: str) -> None:
    """The UCI contract: each go gets exactly one bestmove, never 0000 with legal moves, whatever
    its arguments (before the fix these printed an info string and never answered)."""
    s, out = make_server("material-ab:depth=1")
    s.handle("position startpos moves e2e4")
    s.handle(f"go {args}")
    deadline = time.time() + 30
    while s.searching() and time.time() < deadline:
        time.sleep(0.01)
    s.handle("stop")
    s.stop_search()
    best = [line for line in out.lines() if line.startswith("bestmove")]
    assert len(best) == 1, out.lines()
    b = chess.Board()
    b.push_uci("e2e4")
    assert chess.Move.from_uci(best[0].split()[1]) in b.legal_moves
    s.shutdown()


def test_go_while_searching_and_stop_answer_each_go_once() -> None:
    s, out = make_server("material-ab")
    s.handle("position startpos")
    s.handle("go infinite")
    s.handle("go depth 1")  # stops the infinite search (its bestmove), then answers this one
    s.stop_search()
    s.handle("go infinite")
    s.handle("stop")
    s.handle("stop")
    best = [line for line in out.lines() if line.startswith("bestmove")]
    assert len(best) == 3 and "bestmove 0000" not in best
    s.shutdown()


def test_a_crashing_search_answers_a_legal_move() -> None:
    s, out = make_server("material-ab:depth=3")
    s.handle("isready")
    engine = s._engine
    assert isinstance(engine, OurEngine)

    def boom() -> list[object]:
        raise RuntimeError("search exploded")

    engine.search.ask = boom  # type: ignore[method-assign]
    s.handle("position startpos moves d2d4")
    s.handle("go depth 3")
    s.stop_search()
    lines = out.lines()
    assert any("search exploded" in line for line in lines if line.startswith("info string"))
    best = [line for line in lines if line.startswith("bestmove")]
    b = chess.Board()
    b.push_uci("d2d4")
    assert len(best) == 1 and chess.Move.from_uci(best[0].split()[1]) in b.legal_moves
    s.shutdown()


TOKENS = ["uci", "isready", "go", "position", "startpos", "fen", "moves", "setoption", "name", "value", "stop",
          "ucinewgame", "nodes", "depth", "movetime", "wtime", "btime", "winc", "movestogo", "infinite",
          "searchmoves", "ponder", "ponderhit", "e2e4", "e7e5", "P@e4", "UCI_Variant", "crazyhouse", "chess",
          "Threads", "Nodes", "use_tt", "tt_size", "-5", "0", "1", "3", "99999999999999999999", "8/8/8/8/8/8/8/8",
          "[Qq]", "debug", "on", "\x00", "é", "\t"]

garbage_line = st.one_of(
    st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)), max_size=8).map(" ".join),
    st.text(max_size=40),
).filter(lambda line: not line.strip().startswith("quit"))


@settings(max_examples=60)
@given(st.lists(garbage_line, max_size=12))
def test_garbage_never_kills_the_loop(lines: list[str]) -> None:
    s, out = make_server("material-ab:depth=2,tt_size=1024")
    for line in lines:
        for part in line.splitlines() or [""]:
            s.run_one(part)
    seen = len(out.lines())
    s.run_one("isready")
    assert "readyok" in out.lines()[seen:]  # answered at once, even if a search is running
    s.run_one("stop")
    s.shutdown()
    for line in out.lines():
        assert line.startswith(PROTOCOL_PREFIXES), repr(line)
        assert line.isprintable()


def test_undecodable_bytes_and_a_missing_network() -> None:
    raw = b"\xff\xfe garbage \x00\x01\nisready\nquit\n"
    out = subprocess.run(uci_command("material-ab"), cwd=ROOT, capture_output=True, input=raw, timeout=60)
    assert out.returncode == 0
    lines = out.stdout.decode().splitlines()
    assert lines[0].startswith("info string unknown command") and lines[-1] == "readyok"
    missing = subprocess.run(uci_command("rise-mcts:weights=/nonexistent/rise.pt"), cwd=ROOT, capture_output=True,
                             text=True, input="uci\n", timeout=60)
    assert missing.returncode == 2 and missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1 and "rise" in missing.stderr


def test_clock_limits_through_popen_uci() -> None:
    """cutechess / lichess-bot style: ucinewgame, position ... moves, go wtime/btime/winc/binc."""
    e = chess.engine.SimpleEngine.popen_uci(uci_command("material-mcts"), cwd=ROOT, timeout=60)
    try:
        e.configure({"Threads": 1})
        b = chess.variant.CrazyhouseBoard()
        clocks = {chess.WHITE: 3.0, chess.BLACK: 3.0}
        game = object()
        for _ in range(6):
            limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                       white_inc=0.05, black_inc=0.05)
            r = e.play(b, limit, game=game, info=chess.engine.INFO_ALL)
            assert r.move in b.legal_moves
            assert "nodes" in r.info and "time" in r.info
            clocks[b.turn] += 0.05 - float(r.info["time"])  # the engine's own account of its time
            b.push(r.move)
        r = e.play(b, chess.engine.Limit(time=0.2), game=game)
        assert r.move in b.legal_moves
        r = e.play(b, chess.engine.Limit(depth=2), game=game)
        assert r.move in b.legal_moves
    finally:
        shut(e)


def test_bad_option_combination_is_reported_and_still_answered() -> None:
    s, out = make_server("material-ab:depth=2")
    s.handle("isready")
    s.handle("setoption name tt_size value 1000")  # parses, but ABConfig.validate() rejects it
    s.handle("isready")
    lines = out.lines()
    assert any("tt_size" in line and line.startswith("info string error") for line in lines)
    assert lines[-1] == "readyok"
    s.handle("position startpos")
    s.handle("go")
    s.stop_search()
    best = [line for line in out.lines() if line.startswith("bestmove")]
    assert len(best) == 1 and best[0] != "bestmove 0000"
    s.handle("setoption name tt_size value 1024")  # repaired: the engine is built again
    s.handle("go depth 1")
    s.stop_search()
    assert s._engine is not None and s._engine.search.config.tt_size == 1024  # type: ignore[attr-defined]
    s.shutdown()


def test_options_apply_in_any_order() -> None:
    """weights before UCI_Variant (python-chess's and GUIs' order) must not be reverted: the set is
    validated together at isready/go."""
    if not (ROOT / "evaluators" / "weights" / "rise_chess.pt").exists():
        pytest.skip("no shipped chess RISE weights")
    s, out = make_server("rise-mcts")
    s.handle("setoption name UCI_Variant value crazyhouse")
    s.handle("isready")  # a crazyhouse engine is running, as after `serve`
    s.handle("setoption name weights value rise_chess.pt")
    s.handle("isready")  # python-chess pings between options: chess weights in crazyhouse do not fit yet
    s.handle("setoption name UCI_Variant value chess")
    s.handle("isready")
    s.handle("position startpos")
    s.handle("go nodes 20")
    s.stop_search()
    lines = out.lines()
    assert not any("error" in line for line in lines[lines.index("readyok", lines.index("readyok") + 1) + 1:]), lines
    assert s._settings["weights"] == "rise_chess.pt" and s.variant == "chess"
    best = [line for line in lines if line.startswith("bestmove")]
    assert len(best) == 1 and chess.Move.from_uci(best[0].split()[1]) in chess.Board().legal_moves
    s.shutdown()


def test_network_engine_defaults_to_chess_and_plays_the_variant_it_is_given() -> None:
    """Chess by default (a GUI playing standard chess never sends UCI_Variant); crazyhouse with its
    own weights once python-chess sends UCI_Variant for a crazyhouse board."""
    if not (ROOT / "evaluators" / "weights" / "rise_crazyhouse.pt").exists():
        pytest.skip("no shipped RISE weights")
    e = chess.engine.SimpleEngine.popen_uci(uci_command("rise-mcts"), cwd=ROOT, timeout=120)
    try:
        assert e.options["UCI_Variant"].default == "chess"
        b = chess.variant.CrazyhouseBoard()
        for _ in range(4):
            r = e.play(b, chess.engine.Limit(nodes=30), info=chess.engine.INFO_ALL)
            assert r.move in b.legal_moves and int(r.info["nodes"]) >= 30
            b.push(r.move)
    finally:
        shut(e)


def test_rise_mcts_plays_chess_over_uci() -> None:
    """One name across variants: rise-mcts advertises chess and plays it with the chess weights
    (it answered bestmove 0000 in chess before)."""
    e = chess.engine.SimpleEngine.popen_uci(uci_command("rise-mcts"), cwd=ROOT, timeout=120)
    try:
        assert set(e.options["UCI_Variant"].var) == {"crazyhouse", "chess"}
        b = chess.Board()
        for _ in range(3):
            r = e.play(b, chess.engine.Limit(nodes=20))
            assert r.move is not None and r.move in b.legal_moves
            b.push(r.move)
    finally:
        shut(e)


def _in_process_builtins() -> list[str]:
    """Our built-in engines that UCI serves (one board: bughouse seats speak the four-seat protocol)."""
    return sorted(n for n in registry.builtins() if not registry.is_external(registry.resolve(n))
                  and set(registry.variants_of(registry.resolve(n))) & {"chess", "crazyhouse"})


@pytest.mark.parametrize("name", _in_process_builtins())
def test_announced_defaults_are_the_engines_own(name: str) -> None:
    """A GUI that sends every option back at the default ``uci`` announced (cutechess-cli's engine
    dialog, a tournament manager's saved config) gets the same search: each default is the value the
    engine runs with, its preset applied (rise-gumbel announced PUCT's root rule and turned into it)."""
    import re

    from search.base import flat_view

    spec = registry.resolve(name)
    variant = next(v for v in ("crazyhouse", "chess") if v in registry.variants_of(spec))

    def make(sp: EngineSpec, v: str, evaluator: object | None) -> InProcessEngine:
        e = factory.create(sp, v)
        assert isinstance(e, InProcessEngine)
        return e

    out = LockedOut()
    s = UCIServer(spec, out, make, registry.option_infos(spec), variant=variant, variants=registry.variants_of(spec))
    s.handle("uci")
    sent = []
    for line in out.lines():
        m = re.match(r"option name (.+?) type (\w+)(?: default (.*?))?(?: min -?\d+ max -?\d+)?(?: var .*)?$", line)
        if m and m.group(2) != "button" and m.group(1) not in ("UCI_Variant", "Nodes"):
            default = m.group(3) if m.group(3) is not None else ""
            sent.append(f"setoption name {m.group(1)} value {default}")
    assert sent
    for line in sent:
        s.handle(line)
    s.handle("isready")
    engine = s.ensure_engine()
    assert engine is not None, [line for line in out.lines() if "error" in line]
    before = registry.parsed(spec)
    after = registry.parsed(registry.with_options(spec, s._settings))
    if before.config is not None:
        assert flat_view(after.config) == flat_view(before.config)
    assert {k: v for k, v in after.settings.items() if k != "nodes"} == \
        {k: v for k, v in before.settings.items() if k != "nodes"}
    s.shutdown()


def test_the_networks_are_ready_before_uciok_for_every_variant() -> None:
    """python-chess sends no isready and switches UCI_Variant right before its first go: the network
    of every variant the engine plays is loaded and run once before uciok, so that go finds it warm."""
    from engines.uci import _less_time
    from search.base import Limits

    spec = registry.resolve("rise-mcts")

    def make(s: EngineSpec, v: str, evaluator: object | None) -> InProcessEngine:
        e = factory.create(s, v, evaluator=evaluator)
        assert isinstance(e, InProcessEngine)
        return e

    out = LockedOut()
    server = UCIServer(spec, out, make, registry.option_infos(spec), variant="chess",
                       variants=registry.variants_of(spec))
    server.set_engine(make(spec, "chess", None))
    server.preload()
    server.handle("uci")
    assert out.lines()[-1] == "uciok" and not server._cold
    spare = dict(server._spare)
    assert [k[0] for k in spare] == ["crazyhouse"]
    server.handle("setoption name UCI_Variant value crazyhouse")
    engine = server.ensure_engine()
    assert engine is not None and engine.evaluator is next(iter(spare.values())) and not server._cold
    assert [k[0] for k in server._spare] == ["chess"]  # the chess network is kept for a switch back
    server.handle("position startpos moves e2e4")
    server.handle("go nodes 20")
    server.stop_search()
    assert [line for line in out.lines() if line.startswith("bestmove")]
    server.shutdown()
    # the time the engine spent before its search (a new network's load) comes off the movetime and clock
    lim = _less_time(Limits(movetime=0.3, wtime=10.0, btime=8.0), 0.05, 0)
    assert lim.movetime == pytest.approx(0.25) and lim.wtime == pytest.approx(9.95) and lim.btime == 8.0
    assert _less_time(Limits(nodes=5), 0.05, 1) == Limits(nodes=5)


def test_value_weights_over_uci_rebuilds_the_evaluator(tmp_path: Path) -> None:
    """Issue 81, j04: ``setoption name value_weights`` (announced) swaps the value head as the same
    option in ``--engine`` does; a file that is no network is an ``info string`` naming it and no
    engine until a good value is set (it was taken and ignored: the whole network played)."""
    from evaluators.composite import CompositeEvaluator
    if not (ROOT / "evaluators" / "weights" / "rise_crazyhouse.pt").exists():
        pytest.skip("no shipped RISE weights")
    s, out = make_server("rise-mcts")
    s.handle("setoption name UCI_Variant value crazyhouse")
    s.handle("isready")
    assert s._engine is not None and not isinstance(s._engine.evaluator, CompositeEvaluator)
    bad = tmp_path / "not-a-network.pt"
    bad.write_text("hello")
    s.handle(f"setoption name value_weights value {bad}")
    s.handle("isready")
    assert any("error" in line and "not-a-network.pt" in line for line in out.lines()), out.lines()
    s.handle("setoption name value_weights value rise_crazyhouse.pt")
    s.handle("isready")
    assert s._engine is not None and isinstance(s._engine.evaluator, CompositeEvaluator)
    s.handle("position startpos")
    s.handle("go nodes 20")
    s.stop_search()
    assert out.lines()[-1].startswith("bestmove") and out.lines()[-1] != "bestmove 0000"
    s.shutdown()
