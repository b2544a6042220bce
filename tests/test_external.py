"""External engines: the watchdog (fake engines that hang, crash, send illegal or malformed moves),
restarts, and the real Fairy-Stockfish, Stockfish and Sjeng with their pitfalls (SPEC.md section 6)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import board
from engines import factory
from engines.base import EngineError, EngineSpec
from engines.catalog import find_program
from engines.external import ExternalEngine
from search.base import Limits

FAKE = Path(__file__).resolve().parent / "fakes" / "fake_uci.py"
WATCHDOG = 1.5  # seconds: the fakes' timeout option
pytestmark = pytest.mark.timeout(300)


def fake(mode: str, *extra: str, timeout: float = WATCHDOG, startup: float = 10.0) -> ExternalEngine:
    spec = EngineSpec(f"fake-{mode}", sys.executable, "uci",
                      {"args": " ".join([str(FAKE), mode, *extra]), "timeout": str(timeout), "startup": str(startup)})
    e = factory.create(spec, "chess")
    assert isinstance(e, ExternalEngine)
    return e


def installed(name: str) -> bool:
    try:
        find_program(name)
        return True
    except EngineError:
        return False


needs = {n: pytest.mark.skipif(not installed(n), reason=f"{n} is not installed")
         for n in ("stockfish", "fairy-stockfish", "sjeng")}


def test_fake_that_plays_is_fine() -> None:
    e = fake("ok")
    r = e.play(board.new_position("chess"), Limits(nodes=10))
    assert r.forfeit is None and r.move in board.new_position("chess").legal_moves()
    assert r.info is not None and r.info.depth == 1 and r.info.pv == [r.move]
    e.close()


@pytest.mark.parametrize("mode, reason", [
    ("hang", "hang: no move within"),
    ("crash", "crash: process exited with code 3"),
    ("illegal", "illegal move"),
    ("garbage", "protocol error"),
])
def test_misbehaving_engine_forfeits_and_is_restarted(mode: str, reason: str) -> None:
    e = fake(mode)
    pos = board.new_position("chess")
    for game in range(2):  # the caller goes on: the next game gets a fresh process and the same handling
        pid = e.pid
        t0 = time.monotonic()
        r = e.play(pos, Limits(nodes=10))
        elapsed = time.monotonic() - t0
        assert r.move == 0 and r.forfeit is not None and r.forfeit.startswith(reason), r.forfeit
        assert "\n" not in r.forfeit
        assert elapsed < WATCHDOG + 10.0  # bounded by the watchdog, never a hang of the caller
        assert e.pid is not None and e.pid != pid  # restarted
        e.new_game()
    assert len(e.forfeits) == 2 and e.restarts == 2
    e.close()
    assert e.pid is None


def test_hang_under_a_clock_is_bounded_by_the_clock(tmp_path: Path) -> None:
    e = fake("hang", timeout=0.5)
    t0 = time.monotonic()
    r = e.play(board.new_position("chess"), Limits(wtime=1.0, btime=1.0))
    assert r.forfeit is not None and r.forfeit.startswith("hang")
    assert time.monotonic() - t0 < 1.0 + 0.5 + 10.0
    e.close()


def test_crash_once_then_plays_on(tmp_path: Path) -> None:
    e = fake("crash-once", str(tmp_path / "crashed"))
    pos = board.new_position("chess")
    first = e.play(pos, Limits(nodes=10))
    assert first.forfeit is not None and first.forfeit.startswith("crash")
    second = e.play(pos, Limits(nodes=10))
    assert second.forfeit is None and second.move in pos.legal_moves()
    e.close()


def test_engine_that_never_starts_is_an_engine_error() -> None:
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="did not finish starting"):
        fake("mute", startup=1.0)
    assert time.monotonic() - t0 < 10.0


def test_configuration_errors() -> None:
    with pytest.raises(EngineError, match="not installed"):
        factory.create("no-such-program-xyz+uci", "chess")
    with pytest.raises(EngineError, match="unknown option 'Frobnicate'"):
        factory.create(EngineSpec("f", sys.executable, "uci", {"args": f"{FAKE} ok", "Frobnicate": "1"}), "chess")
    e = fake("ok")
    with pytest.raises(EngineError, match="no limit"):
        e.play(board.new_position("chess"), Limits())
    with pytest.raises(EngineError, match="infinite"):
        e.play(board.new_position("chess"), Limits(infinite=True))
    e.close()


@needs["stockfish"]
def test_stockfish_elo_and_options() -> None:
    e = factory.create("stockfish:elo=1500,hash=16", "chess")
    assert isinstance(e, ExternalEngine)
    assert e.engine_options == {"UCI_LimitStrength": True, "UCI_Elo": 1500, "Hash": 16}
    pos = board.new_position("chess")
    pos.push_uci("e2e4")
    r = e.play(pos, Limits(nodes=2000))
    assert r.forfeit is None and r.move in pos.legal_moves()
    assert r.info is not None and r.info.nodes > 0 and r.info.pv and r.info.pv[0] == r.move
    e.close()
    with pytest.raises(EngineError, match="UCI_Elo"):
        factory.create("stockfish:elo=100", "chess")
    with pytest.raises(EngineError, match="does not play crazyhouse"):
        factory.create("stockfish", "crazyhouse")
    with pytest.raises(EngineError, match="set by the adapter"):
        factory.create("stockfish:UCI_Variant=chess", "chess")


@needs["fairy-stockfish"]
def test_fairy_stockfish_crazyhouse_with_drops() -> None:
    e = factory.create("fairy-stockfish:skill=0", "crazyhouse")
    pos = board.new_position("crazyhouse")
    for m in "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5".split():
        pos.push_uci(m)
    for _ in range(6):  # a few moves each way, so pockets fill and drops become candidates
        r = e.play(pos, Limits(nodes=3000))
        assert r.forfeit is None and r.move in pos.legal_moves()
        pos.push(r.move)
    fen_pos = board.new_position("crazyhouse", "r1bqkbnr/pppppppp/2n5/8/8/8/PPPPPPPP/RNBQKBNR[Pp] w KQkq - 0 1")
    r = e.play(fen_pos, Limits(depth=4))
    assert r.forfeit is None and r.move in fen_pos.legal_moves()
    e.close()


@needs["sjeng"]
def test_sjeng_depth_and_crazyhouse_rules() -> None:
    e = factory.create("sjeng:depth=2", "crazyhouse")
    pos = board.new_position("crazyhouse")
    for m in "e2e4 d7d5 e4d5 d8d5".split():  # initial position plus moves: pockets come from the moves
        pos.push_uci(m)
    r = e.play(pos, Limits(nodes=1000))  # the node limit is dropped (Sjeng has none); depth 2 applies
    assert r.forfeit is None and r.move in pos.legal_moves()
    assert r.info is not None and r.info.depth == 2
    with pytest.raises(EngineError, match="pieces in hand|pockets"):
        e.play(board.new_position("crazyhouse", "r1bqkbnr/pppppppp/2n5/8/8/8/PPPPPPPP/RNBQKBNR[Pp] w KQkq - 0 1"),
               Limits(depth=2))
    e.close()
    plain = factory.create("sjeng", "chess")
    with pytest.raises(EngineError, match="depth or time"):
        plain.play(board.new_position("chess"), Limits(nodes=1000))
    # XBoard's st is whole seconds (Sjeng read "st 0.2" as several seconds): refused, not mis-timed
    with pytest.raises(EngineError, match="whole seconds"):
        plain.play(board.new_position("chess"), Limits(movetime=0.2))
    t0 = time.perf_counter()
    r = plain.play(board.new_position("chess"), Limits(movetime=1))
    assert r.forfeit is None and r.move in board.new_position("chess").legal_moves()
    assert time.perf_counter() - t0 < 3.0  # honoured, within the overrun allowance
    plain.close()
