"""Works in every chess tool (issue 22): a GUI that never sends UCI_Variant gets chess, the network is
loaded before ``readyok``, and the PGN is what cutechess reads."""
from __future__ import annotations

import sys

import chess
import chess.engine
import chess.pgn
import pytest

from engines import registry

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
    for name in registry.builtins():
        spec = registry.resolve(name)
        variants = registry.variants_of(spec)
        assert registry.default_variant(spec) == ("chess" if "chess" in variants else variants[0]), name


def test_the_network_is_warm_before_readyok() -> None:
    ev = registry.create("rise-mcts", "crazyhouse").evaluator
    assert ev._forward is None
    ev.warm_up()
    assert ev._forward is not None and ev.inference in ("frozen", "eager")


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
