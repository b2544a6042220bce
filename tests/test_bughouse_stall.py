"""The stall (spec option ``stall``): a seat of ours holds the move it found while the partner's
opponent is stuck on move and would flag first, and plays it (or searches again, the pockets
changed) when that ends; a mating move is never held; untimed games never stall."""
from __future__ import annotations

import time
import pytest

from board.bughouse import BughouseGame
from board.variants import BUGHOUSE
from engines import factory
from engines.base import EngineError
from engines.registry import EvaluatorPool
from engines.seats import (STALL_RESERVE_MS, STALL_WAIT_MS, AlphaBetaSeat, ClockWatch, GameContext, OurSeat, Seat,
                           gives_mate)
from tests.harness_fakes import FakePipe

#: board A: White (our seat 0) to move, Ng5-f7 a smothered mate; board B: White (seat 2, the enemy of
#: our partner, seat 3) to move, exd5 a capture that puts a pawn in Black's pocket on board A
SMOTHER = "6rk/6pp/8/6N1/8/8/8/4K3[] w - - 0 1"
OPEN_D5 = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR[] w KQkq - 0 2"


def timed_ctx(fen_a: str = SMOTHER, enemy_ms: int = 20_000) -> tuple[GameContext, list[int]]:
    """A 60+0 game whose clock the test sets (``clock[0]`` ms); the enemy on board B has ``enemy_ms``."""
    game = BughouseGame(f"{fen_a} | {OPEN_D5}", base_ms=60_000, inc_ms=0)
    game.set_clock(2, enemy_ms)
    ctx = GameContext(game, [], t0=time.monotonic())
    clock = [0]
    ctx.now_ms = lambda: clock[0]  # type: ignore[method-assign]
    return ctx, clock


def test_waiting_wins_on_time_only_when_the_partners_opponent_is_stuck_and_flags_first():
    ctx, _ = timed_ctx()
    watch = ClockWatch()
    assert STALL_WAIT_MS == 3000 and STALL_RESERVE_MS == 5000
    assert watch.stalls(ctx, 0, 4000)          # 4 s on move; 16 s left against our 56 s
    assert not watch.stalls(ctx, 0, 2000)      # on move 2 s: still thinking
    assert not watch.stalls(ctx, 3, 4000)      # our seat on board B: its opponent on A is not stuck...
    watch.think_ms[2] = [2000, 2500, 2000]     # its usual move takes 2 s: stuck only after 6 s
    assert not watch.stalls(ctx, 0, 4000) and watch.stalls(ctx, 0, 7000)
    ctx.game.set_clock(2, 58_000)              # it would not flag 5 s before us
    assert not watch.stalls(ctx, 0, 7000)
    ctx.game.set_clock(2, 20_000)
    ctx.game.push(*ctx.game.parse("B:e4d5"), 7000)  # it moved: our partner is to move there
    watch.on_move(1, 2, 7000)
    assert watch.think_ms[2][-1] == 7000 and not watch.stalls(ctx, 0, 12_000)
    untimed = GameContext(BughouseGame(f"{SMOTHER} | {OPEN_D5}"), [], t0=time.monotonic())
    assert not ClockWatch().stalls(untimed, 0, 10_000)


def stalling_ab_seat(answer: str) -> tuple[AlphaBetaSeat, FakePipe]:
    seat = AlphaBetaSeat.__new__(AlphaBetaSeat)  # no worker process
    conn = FakePipe()
    seat.name, seat.seat, seat.conn, seat.options = "ab", 0, conn, {}
    seat.nodes, seat.movetime, seat.depth, seat.clock_moves, seat.stall = 1000, None, None, None, True
    seat.thinking, seat.job, seat.turn_started, seat.rechecked, seat.turn_cost = True, 1, 0, False, (0, 0)
    seat.sent_fen, seat.game_rechecks, seat.game_stalls = SMOTHER, 0, 0
    seat.watch, seat.held = ClockWatch(), None
    conn.answers.append((1, answer, 500, 400, 3, 20, 0.1))
    return seat, conn


def test_an_alphabeta_seat_holds_its_move_while_waiting_wins_and_plays_it_after():
    ctx, clock = timed_ctx()
    seat, conn = stalling_ab_seat("e1e2")
    clock[0] = 4000
    seat.tick(ctx)
    assert not ctx.actions and seat.held is not None and ctx.sitting[0]
    clock[0] = 6000
    seat.tick(ctx)
    assert not ctx.actions  # still stuck, still flagging first
    ctx.game.push(*ctx.game.parse("B:d2d3"), 6500)  # the enemy moved (no capture): the stall ends
    seat.on_move(ctx, 1, 2)
    clock[0] = 6600
    seat.tick(ctx)
    kind, s, (uci, stat) = ctx.actions[0]
    assert (kind, s, uci) == ("move", 0, "e1e2") and stat.time == pytest.approx(6.6) and stat.nodes == 500
    assert seat.settings()["sits"] == 1 and not ctx.sitting[0] and not conn.sent


def test_a_held_move_is_searched_again_when_the_pockets_changed_and_a_mate_is_never_held():
    ctx, clock = timed_ctx()
    seat, conn = stalling_ab_seat("e1e2")
    clock[0] = 4000
    seat.tick(ctx)
    ctx.game.push(*ctx.game.parse("B:e4d5"), 5000)  # a capture: Black on board A gets a pawn
    seat.on_move(ctx, 1, 2)
    seat.tick(ctx)
    assert not ctx.actions and seat.thinking and conn.sent[0][1] == ctx.game.boards[0].fen()
    b = ctx.game.boards[0]
    assert gives_mate(b, "g5f7") and not gives_mate(b, "e1e2") and not gives_mate(b, "a1a2")
    ctx, clock = timed_ctx()
    seat, conn = stalling_ab_seat("g5f7")
    clock[0] = 4000
    seat.tick(ctx)
    assert ctx.actions[0][2][0] == "g5f7" and seat.held is None


def test_an_mcts_seat_holds_its_move_too_and_the_option_is_the_bughouse_seats_alone():
    start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"
    ctx, clock = timed_ctx(start)
    seat = factory.create("bughouse-mcts:stall=true,nodes=40,sit_ratio=1000", BUGHOUSE.name, kind=Seat,
                           pool=EvaluatorPool())
    assert isinstance(seat, OurSeat) and seat.stall
    seat.start_game(ctx, 0, "partner")
    clock[0] = 4000
    while seat.tick(ctx):
        pass
    assert not ctx.actions and seat._held is not None and seat.settings()["sits"] == 1
    held = seat._held[0]
    ctx.game.push(*ctx.game.parse("B:d2d3"), 5000)
    seat.on_move(ctx, 1, 2)
    clock[0] = 5100
    seat.tick(ctx)
    assert ctx.actions[0][2][0] == held and ctx.actions[0][2][1].time == pytest.approx(1.1)
    with pytest.raises(EngineError, match="clock_moves and stall are options of bughouse seats"):
        factory.create("material-ab:stall=true", "chess")

