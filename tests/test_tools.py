"""Works in every chess tool (issue 22): a GUI that never sends UCI_Variant gets chess, the network is
loaded before ``readyok``, and the PGN is what cutechess reads."""
from __future__ import annotations

import sys

import chess
import chess.engine
import chess.pgn
import pytest

from engines import catalog, factory, registry

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("engine", ["rise-mcts", "sixtyfour-mcts", "deepchess-ab", "rise-gumbel", "material-mcts"])
def test_standard_chess_is_the_default_without_uci_variant(engine: str) -> None:
    """cutechess plays "standard" chess without sending UCI_Variant: every engine that plays chess
    must answer legal chess moves (rise-mcts used to drop pieces: P@g5)."""
    assert registry.default_variant(registry.resolve(engine)) == "chess"
    eng = chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "experiments.cli", "uci", "--engine", engine],
                                              timeout=120)
    try:
        b = chess.Board()
        game = object()
        for _ in range(4):
            r = eng.play(b, chess.engine.Limit(nodes=24), game=game)
            assert r.move is not None and r.move in b.legal_moves and r.move.drop is None
            b.push(r.move)
    finally:
        eng.quit()


def test_every_builtin_defaults_to_chess_where_it_can_play_it() -> None:
    for name in catalog.builtins():
        spec = registry.resolve(name)
        variants = registry.variants_of(spec)
        assert registry.default_variant(spec) == ("chess" if "chess" in variants else variants[0]), name


def test_the_network_is_warm_before_readyok() -> None:
    ev = factory.create("rise-mcts", "crazyhouse").evaluator
    assert ev._forward is None
    ev.warm_up()
    assert ev._forward is not None and ev.inference == "onnxruntime"


def test_every_argument_has_help_and_defaults_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from experiments.cli.main import build_parser, main

    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, f"{path} {name}")
            elif a.dest != "help" and (not a.help or a.help == a.dest.replace("_", " ")):
                missing.append(f"{path} {'/'.join(a.option_strings) or a.dest}")

    walk(build_parser(), "searchbench")
    assert missing == []
    assert main(["match", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 20)" in out and "(default: crazyhouse)" in out and "(default: None)" not in out


def test_movestogo_keeps_a_safety_margin() -> None:
    """The last move before a time control used 85% of the clock; now at most half is planned and
    the critical extension stops at 60% (less the Move Overhead)."""
    from search.base import Limits
    from search.timeman import TimeConfig, TimeControl, move_time

    cfg = TimeConfig()
    for togo in (1, 2, 5, 30):
        t = move_time(Limits(wtime=10.0, btime=10.0, movestogo=togo), 0, 20, cfg)
        assert t is not None and t <= 10.0 / (togo + 1) + 1e-9
        tc = TimeControl(t, cfg, 10.0)
        assert tc.hard_cap <= 0.6 * 10.0


def test_move_overhead_is_a_uci_option_in_milliseconds() -> None:
    import subprocess

    cmd = [sys.executable, "-m", "experiments.cli", "uci", "--engine", "material-mcts"]
    script = "uci\nsetoption name Move Overhead value 150\nisready\nposition startpos\ngo movetime 300\nquit\n"
    out = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=120).stdout
    assert "option name Move Overhead type spin default 20 min 0 max 60000" in out
    assert "bestmove " in out and "info string" not in out


def test_go_depth_under_mcts_is_explained() -> None:
    import subprocess

    cmd = [sys.executable, "-m", "experiments.cli", "uci", "--engine", "material-mcts"]
    out = subprocess.run(cmd, input="uci\nisready\nposition startpos\ngo depth 3\nquit\n", capture_output=True,
                         text=True, timeout=120).stdout
    assert "info string MCTS has no search depth" in out and "bestmove " in out


def _popen(engine: str) -> chess.engine.SimpleEngine:
    return chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "experiments.cli", "uci", "--engine", engine],
                                               timeout=120)


@pytest.mark.parametrize("engine, nodes", [("material-ab", 20000), ("rise-mcts", 300), ("rise-gumbel", 200)])
def test_multipv_through_python_chess(engine: str, nodes: int) -> None:
    """python-chess ``analyse(multipv=3)``: three lines, distinct first moves, the first the move played."""
    eng = _popen(engine)
    try:
        b = chess.Board()
        infos = eng.analyse(b, chess.engine.Limit(nodes=nodes), multipv=3)
        assert [i.get("multipv") for i in infos] == [1, 2, 3]
        firsts = [i["pv"][0] for i in infos]
        assert len(set(firsts)) == 3 and all(m in b.legal_moves for m in firsts)
        if engine == "material-ab":  # exact scores, best first
            scores = [i["score"].white().score() for i in infos]
            assert scores == sorted(scores, reverse=True)
        assert eng.play(b, chess.engine.Limit(nodes=nodes)).move == firsts[0]
    finally:
        eng.quit()


def test_alpha_beta_multipv_lines_are_exact() -> None:
    """With MultiPV k the k best root moves carry exact scores: each line's score equals the score
    of a single-PV search of the same depth with the better lines' moves taken away."""
    from board import new_position
    from evaluators.classical import ClassicalEvaluator
    from search.ab_config import ABConfig
    from search.alphabeta import AlphaBeta
    from search.base import Limits

    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
    ev = ClassicalEvaluator()
    r = AlphaBeta(ev, ABConfig(multipv=3, quiescence=False)).run(new_position("chess", fen), Limits(depth=3))
    assert len(r.lines) == 3 and r.lines[0].move == r.best_move
    for i, line in enumerate(r.lines):
        p = new_position("chess", fen)
        s = AlphaBeta(ev, ABConfig(quiescence=False))
        s.start(p, Limits(depth=3))
        s._root_moves = [m for m in s._root_moves if m not in [x.move for x in r.lines[:i]]]
        while not s.done():
            s.ask()
        single = s.result()
        assert single.cp == line.cp, (i, line, single)


def test_mcts_multipv_and_a_full_tree() -> None:
    """MCTS MultiPV: the move played first, then visited moves by the final-move rule; a tree that
    reaches max_tree_nodes (UCI Hash) ends the search."""
    from board import new_position
    from evaluators.classical import ClassicalEvaluator
    from search.base import Limits
    from search.mcts import MCTS, MCTSConfig

    m = MCTS(ClassicalEvaluator(), MCTSConfig.of(multipv=4))
    r = m.run(new_position("chess"), Limits(nodes=400))
    assert len(r.lines) == 4 and r.lines[0].move == r.best_move and len({x.move for x in r.lines}) == 4
    full = MCTS(ClassicalEvaluator(), MCTSConfig.of(max_tree_nodes=1000))
    r = full.run(new_position("chess"), Limits(nodes=100_000))
    assert r.nodes < 100_000 and full.tree.n_nodes <= 1000 + 4 * full.config.batching.batch_size  # checked after a batch


def test_hash_sizes_the_table_or_the_tree() -> None:
    import subprocess

    def options(engine: str, script: str) -> str:
        cmd = [sys.executable, "-m", "experiments.cli", "uci", "--engine", engine]
        return subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=120).stdout

    out = options("material-ab", "uci\nsetoption name Hash value 1\nuci\nquit\n")
    assert "option name Hash type spin default 4 min 1 max 16384" in out  # 2^18 slots of 16 bytes
    assert "option name Hash type spin default 1 min 1" in out and "option name Clear Hash type button" in out
    assert "tt_size" not in out  # Hash is its UCI name
    out = options("material-mcts", "uci\nsetoption name Hash value 64\nsetoption name MultiPV value 2\nuci\nquit\n")
    assert "option name Hash type spin default 1953 min 1" in out and "option name Hash type spin default 64" in out
    assert "option name MultiPV type spin default 2 min 1 max 500" in out and "info string" not in out


def test_spin_options_have_real_bounds() -> None:
    """Every integer option of every built-in engine announces the bounds its config accepts, not
    the -10^9..10^9 placeholder (batch_size used to)."""
    from engines.options import OptionInfo

    for name in catalog.builtins():
        spec = registry.resolve(name)
        if catalog.is_external(spec):
            continue
        for o in registry.option_infos(spec):
            if o.kind == "spin":
                assert (o.minimum, o.maximum) != (OptionInfo.minimum, OptionInfo.maximum), (name, o.name)
                assert o.minimum <= (o.default if isinstance(o.default, int) else o.minimum) <= o.maximum, (name, o.name)


def test_alpha_beta_reports_about_once_a_second_under_go_infinite() -> None:
    """The info lines come from a reporter thread: a long alpha-beta iteration no longer silences
    them (one line in 6 s before), and the last line is not written twice."""
    import subprocess
    import time

    cmd = [sys.executable, "-m", "experiments.cli", "uci", "--engine", "material-ab"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write("uci\nisready\n")
    p.stdin.flush()
    lines = []
    while not lines or lines[-1] != "readyok":  # started (imports take seconds on a busy machine)
        line = p.stdout.readline()
        assert line, f"the engine exited: {lines}"
        lines.append(line.strip())
    p.stdin.write("position startpos\ngo infinite\n")
    p.stdin.flush()
    time.sleep(4.5)
    out, _ = p.communicate("stop\nquit\n", timeout=120)
    lines += out.splitlines()
    infos = [ln for ln in lines[: lines.index(next(x for x in lines if x.startswith("bestmove")))] if ln.startswith("info depth")]
    assert len(infos) >= 3, infos
    assert infos[-1] != infos[-2]


def _cutechess() -> str | None:
    import os
    import shutil

    return os.environ.get("CUTECHESS_CLI") or shutil.which("cutechess-cli")


@pytest.mark.skipif(_cutechess() is None, reason="cutechess-cli not found (set CUTECHESS_CLI; README: building it)")
@pytest.mark.timeout(900)
def test_cutechess_reads_our_crazyhouse_pgn_as_openings_and_plays_our_engines(tmp_path: object) -> None:
    """cutechess-cli 1.4 takes a crazyhouse PGN written by the project (drops P@f6) as its opening
    file without an illegal-move warning, and plays chess with an engine that never gets UCI_Variant."""
    import subprocess
    from pathlib import Path

    from experiments.harness.match import Player
    from experiments.harness.tournament import RunSettings, play_run

    out = Path(str(tmp_path))
    s = RunSettings(name="cc", variant="crazyhouse", games=2, concurrency=2, db=out / "cc.sqlite", pgn=out / "cc.pgn")
    s.openings = Path("experiments/openings/crazyhouse.epd")
    a, b = Player("mcts", "material-mcts", nodes=64), Player("ab", "material-ab", nodes=300)
    play_run(s, s.pairing_tasks(a, b, 2), ["mcts", "ab"], None, False)
    with open(out / "cc.pgn") as f:
        game = chess.pgn.read_game(f)
    assert game is not None
    moves = list(game.mainline_moves())
    first_drop = next(i for i, m in enumerate(moves) if m.drop is not None)  # cutechess must parse it
    assert first_drop + 1 < len(moves)
    uci = [f"cmd={sys.executable}", "arg=-m", "arg=experiments.cli", "arg=uci", "arg=--engine"]
    cmd = [str(_cutechess()), "-variant", "crazyhouse", "-engine", "name=a", *uci, "arg=material-mcts", "proto=uci",
           "nodes=32", "-engine", "name=b", *uci, "arg=material-ab", "proto=uci", "nodes=300", "-each", "tc=inf",
           "-openings", f"file={out / 'cc.pgn'}", "format=pgn", "order=sequential", f"plies={first_drop + 1}", "-games", "2",
           "-pgnout", str(out / "back.pgn")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert "Finished match" in r.stdout and "illegal" not in (r.stdout + r.stderr).lower(), r.stdout[-2000:]
    cmd = [str(_cutechess()), "-engine", "name=a", *uci, "arg=rise-mcts", "proto=uci", "nodes=32", "-engine",
           "name=b", *uci, "arg=material-ab", "proto=uci", "nodes=300", "-each", "tc=inf", "-games", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert "Finished match" in r.stdout and "illegal" not in (r.stdout + r.stderr).lower(), r.stdout[-2000:]


@pytest.mark.skipif(_cutechess() is None, reason="cutechess-cli not found (set CUTECHESS_CLI; README: building it)")
@pytest.mark.timeout(900)
def test_cutechess_plays_crazyhouse_from_our_epd_openings(tmp_path: object) -> None:
    """cutechess-cli writes empty pockets as ``[-]`` in the FEN it sends: every crazyhouse game from an
    EPD opening (our own suite) used to be lost with ``bestmove 0000``."""
    import subprocess
    from pathlib import Path

    out = Path(str(tmp_path))
    uci = [f"cmd={sys.executable}", "arg=-m", "arg=experiments.cli", "arg=uci", "arg=--engine"]
    cmd = [str(_cutechess()), "-variant", "crazyhouse", "-engine", "name=a", *uci, "arg=material-mcts", "proto=uci",
           "nodes=32", "-engine", "name=b", *uci, "arg=material-ab", "proto=uci", "nodes=300", "-each", "tc=inf",
           "-openings", "file=experiments/openings/crazyhouse.epd", "format=epd", "order=sequential", "-games", "2",
           "-pgnout", str(out / "epd.pgn")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    text = (r.stdout + r.stderr).lower()
    assert "Finished match" in r.stdout, r.stdout[-2000:]
    assert "illegal" not in text and "disconnect" not in text and "0000" not in text, r.stdout[-2000:]
    with open(out / "epd.pgn") as f:  # headers only: python-chess refuses cutechess's "[-]" pocket in [FEN]
        heads = [chess.pgn.read_headers(f) for _ in range(2)]
    assert all(h is not None and "[-]" in h.get("FEN", "") and int(h.get("PlyCount", "0")) > 4 for h in heads)
