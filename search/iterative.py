"""What the two alpha-beta searches share (mypyc-compiled): limits turned into a node budget and a
deadline, the limit check inside the tree, and the ask/tell shell of iterative deepening (one
iteration per :meth:`IterativeDeepening.ask`, no leaves: the evaluator is called synchronously).

Limits (:class:`search.base.Limits`): ``nodes`` caps the nodes, ``evals`` the evaluator calls; a clock or ``movetime`` gives a
deadline (the share of :func:`search.timeman.move_time`); ``infinite`` runs until ``stop``; with
none of these and no depth the search stops after its config's ``default_nodes``.  The depth cap is
each search's own (its config's default or maximum).
"""
from __future__ import annotations

import threading
import time
from typing import Final, Sequence

from mypy_extensions import mypyc_attr

from board.position import Position
from evaluators.base import Evaluation, EvaluatorError, Leaf
from search.base import Limits, Search
from search.timeman import move_time

#: seconds between two reads of the clock inside a search (see Budget._clock)
CLOCK_PERIOD: Final = 0.001
#: seconds between two hand-overs of the GIL to other threads (CPython's own switch interval)
YIELD_PERIOD: Final = 0.005


class LimitError(ValueError):
    """A limit no search can honour (one-line message)."""


class Budget:
    """The limit state a search core checks inside its tree (the native base class of the cores, so
    the counters stay plain fields of the core)."""

    def __init__(self, time_check_interval: int) -> None:
        self.nodes = 0
        self.evals = 0
        self.node_limit = 0
        self.eval_limit = 0
        self.deadline = 0.0
        self.aborted = False
        self.stop_requested = False
        self.time_check_interval = time_check_interval
        self.past_deadline = False
        self.next_check = 1  # the node count at which the clock is read next
        self.last_nodes = 0
        self.last_t = 0.0
        self.last_yield = 0.0

    def arm(self, pos: Position, limits: Limits, default_nodes: int, t0: float) -> None:
        """Reset the counters and set the budget of a search of ``pos`` started at ``t0``."""
        if limits.depth is not None and limits.depth < 1:
            raise LimitError(f"depth limit must be at least 1, got {limits.depth}")
        if limits.nodes is not None and limits.nodes < 1:
            raise LimitError(f"node limit must be positive, got {limits.nodes}")
        if limits.evals is not None and limits.evals < 1:
            raise LimitError(f"evaluator-call limit must be positive, got {limits.evals}")
        self.nodes = 0
        self.evals = 0
        self.eval_limit = limits.evals if limits.evals is not None else 0
        self.aborted = False
        self.stop_requested = False
        self.past_deadline = False
        self.next_check = 1
        self.last_nodes = 0
        self.last_t = t0
        budget = move_time(limits, pos.turn, pos.fullmove_number)
        self.deadline = t0 + budget if budget is not None and not limits.infinite else 0.0
        if limits.nodes is not None:
            self.node_limit = limits.nodes
        elif limits.depth is None and limits.evals is None and budget is None and not limits.infinite:
            self.node_limit = default_nodes
        else:
            self.node_limit = 0

    def check_limits(self) -> None:
        """Set ``aborted`` once stopped, out of nodes or past the deadline (the clock is read about
        every millisecond: :meth:`_clock`)."""
        if self.nodes >= self.next_check:
            self._clock()
        if self.stop_requested:
            self.aborted = True
        elif self.node_limit > 0 and self.nodes >= self.node_limit:
            self.aborted = True
        elif self.eval_limit > 0 and self.evals >= self.eval_limit:
            self.aborted = True
        elif self.past_deadline:
            self.aborted = True

    def _clock(self) -> None:
        """Read the clock and plan the next read CLOCK_PERIOD later at the nodes/s seen since the
        last one (at most ``time_check_interval`` nodes on): a fast evaluator is read every few
        hundred nodes, a network (a few ms a node) every node, so a deadline is kept either way."""
        now = time.perf_counter()
        if now - self.last_yield >= YIELD_PERIOD:
            # Compiled search + compiled evaluator never re-enter the interpreter, so CPython would
            # never hand the GIL to other threads (UCI input, watchdogs, external engines of the
            # same match): sleep(0) releases it for a moment, every YIELD_PERIOD, and only where
            # there is another thread to take it (a sleep(0) costs about 80 us here: yielding at
            # every clock read cost an alpha-beta seat about 12% of its nodes/s)
            self.last_yield = now
            if threading.active_count() > 1:
                time.sleep(0)
        dn = self.nodes - self.last_nodes
        dt = now - self.last_t
        step = self.time_check_interval
        if dn > 0 and dt > 0.0:
            step = max(1, min(step, int(dn * CLOCK_PERIOD / dt)))
        self.next_check = self.nodes + step
        self.last_nodes = self.nodes
        self.last_t = now
        if self.deadline > 0.0 and now >= self.deadline:
            self.past_deadline = True


@mypyc_attr(allow_interpreted_subclasses=True)
class IterativeDeepening(Search):
    """The ask/tell shell: each :meth:`ask` runs one iteration (:meth:`_iterate`) and returns no
    leaves; :meth:`stop` aborts the running iteration through the core's :class:`Budget`."""

    def __init__(self, budget: Budget) -> None:
        self._budget = budget
        self._done = True
        self._t0 = 0.0
        self._elapsed = 0.0

    def _iterate(self) -> None:
        """One iteration of iterative deepening; sets ``_done`` when the search is over."""
        raise NotImplementedError

    def ask(self) -> list[Leaf]:
        if self._done:
            return []
        self._iterate()
        return []

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        if evaluations:
            raise EvaluatorError(f"{type(self).__name__} asks for no leaves; it was told evaluations")

    def done(self) -> bool:
        return self._done

    def stop(self) -> None:
        self._budget.stop_requested = True
        self._done = True
