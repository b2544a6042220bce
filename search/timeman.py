"""Time management as in CrazyAra (paper section 9.2.4; SPEC.md section 4).

Notation: ``t`` the remaining time on our clock, ``inc`` our increment, ``n`` the full-move number.

- Move time, fixed share: ``t / movestogo + 0.7 inc`` when the time control gives moves-to-go;
  in sudden death ``t / (50 - n) + 0.7 inc`` (a game is assumed to last 50 moves) until move 40, then
  the proportional system ``0.05 t + 0.7 inc`` (the game is assumed to last 20 more moves).
- A move overhead is kept in reserve (per move still to play), and a move never takes more than
  ``t - overhead``.
- MCTS stops at once with a single legal move; at half the allocated time in an *easy* position (the
  prior's top move has more than 90% and is still the best by Q); and extends by half the allocated
  time, once, in a *critical* position (the best move's Q dropped by more than 0.1 from the Q of the
  move played last time), under a clock only: a fixed ``movetime`` is the most a move takes, less the
  overhead.  :class:`TimeControl` holds that logic for one move.

Alpha-beta uses :func:`move_time` alone (the same share, without early stop or extension).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from search.base import Limits, range_error

#: the bounds of every integer field (announced as UCI spin bounds)
SPIN_RANGES: Final = {"expected_game_length": (1, 1000), "proportional_from_move": (1, 1000)}


@dataclass
class TimeConfig:
    """Parameters of the time manager (CrazyAra's defaults)."""

    expected_game_length: int = 50
    proportional_from_move: int = 40
    proportional_share: float = 0.05
    increment_share: float = 0.7
    move_overhead: float = 0.02  # seconds kept per move for communication (UCI "Move Overhead", ms)
    # moves' worth of time kept back under movestogo: the last move before the control takes at most
    # half the clock (it took 85% with the share t/movestogo and the critical extension on top)
    movestogo_reserve: float = 1.0
    # the share of the clock left that one move may use at most, extension included
    max_clock_share: float = 0.6
    easy_prior: float = 0.9
    critical_drop: float = 0.1
    stop_easy: bool = True
    extend_critical: bool = True

    def validate(self) -> str | None:
        """Why these settings cannot manage a clock (None: they can)."""
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            return bad
        if not 0.0 <= self.move_overhead <= 60.0:
            return f"time.move_overhead must be from 0 to 60 seconds, got {self.move_overhead}"
        for name in ("proportional_share", "increment_share", "max_clock_share", "easy_prior"):
            v = float(getattr(self, name))
            if not 0.0 <= v <= 1.0:
                return f"time.{name} must be from 0 to 1, got {v}"
        if not 0.0 <= self.movestogo_reserve <= 100.0 or not 0.0 <= self.critical_drop <= 2.0:
            return "time.movestogo_reserve must be from 0 to 100 and time.critical_drop from 0 to 2"
        return None


def move_time(limits: Limits, turn: int, fullmove_number: int, cfg: TimeConfig | None = None) -> float | None:
    """Seconds to spend on this move, or None if the limits give no time (nodes/depth only)."""
    c = cfg if cfg is not None else TimeConfig()
    if limits.movetime is not None:
        return max(0.0, limits.movetime - c.move_overhead)
    t = limits.wtime if turn == 0 else limits.btime
    if t is None:
        return None
    inc = limits.winc if turn == 0 else limits.binc
    if limits.movestogo is not None and limits.movestogo > 0:
        togo = limits.movestogo
        share = (t - c.move_overhead * togo) / (togo + c.movestogo_reserve) + c.increment_share * inc
    elif fullmove_number < c.proportional_from_move:
        togo = max(1, c.expected_game_length - fullmove_number)
        share = (t - c.move_overhead * togo) / togo + c.increment_share * inc
    else:
        share = c.proportional_share * t + c.increment_share * inc
    return max(0.0, min(share, t - c.move_overhead))


class TimeControl:
    """The clock of one MCTS move: allocated time, early stop when easy, one extension when critical."""

    def __init__(self, allocated: float, cfg: TimeConfig, remaining: float | None, fixed: bool = False) -> None:
        self.allocated = allocated
        self.cfg = cfg
        self.deadline = allocated
        self.extended = False
        # Never extend past what the clock allows (with the overhead kept); a fixed move time
        # (``go movetime``) is never extended: the answer is due within it.
        self.hard_cap = allocated if fixed else allocated * 1.5 if remaining is None else min(
            allocated * 1.5, max(allocated, cfg.max_clock_share * remaining - cfg.move_overhead))

    def should_stop(self, elapsed: float, easy: bool, critical: bool) -> bool:
        """Called during the search with the elapsed seconds and the current judgement of the position."""
        if self.cfg.stop_easy and easy and elapsed >= 0.5 * self.allocated:
            return True
        if elapsed < self.deadline:
            return False
        if self.cfg.extend_critical and critical and not self.extended:
            self.extended = True
            self.deadline = min(self.hard_cap, self.deadline + 0.5 * self.allocated)
            return elapsed >= self.deadline
        return True
