"""Our engines: an evaluator + a search + settings, behind :class:`engines.base.InProcessEngine`.

Settings come from the engine spec as text (``nodes=800,q_value_selection=off``) and are parsed by the
option system (:mod:`engines.options`): the *engine options* ``nodes``, ``evals``, ``playouts``,
``depth``, ``movetime`` fill the fields of the caller's :class:`Limits` that the caller left unset (a
caller's ``Limits(nodes=400)`` wins over a spec's ``nodes=800``; a spec's ``nodes`` also caps a
clock-limited search); ``seed`` seeds the search's random state; ``threads``, ``weights``,
``inference`` and ``device`` go to the evaluator's loader; every other option is a field of the
search's config.

Hard stop: besides the search's own time management, :class:`OurEngine` stops a search that runs
past ``movetime`` or past half of its own clock (``movestogo == 1``: all of it but 50 ms), so a
search that ignores the clock cannot lose on time by a wide margin.

Failures of the search or the evaluator during a move (an exception, an illegal best move) do not
propagate: :meth:`OurEngine.finish` returns ``MoveResult(forfeit=reason)`` as the engine interface
requires, and the exception is logged.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import time
from typing import Callable, Sequence

from board import Position, move_to_uci
from engines.base import EngineError, EngineSpec, InProcessEngine, MoveResult, layered_limits
from evaluators.base import Evaluation, Evaluator, Leaf
from search.base import Limits, Search, SearchResult

log = logging.getLogger(__name__)

#: seconds kept back from the clock by the hard stop
CLOCK_MARGIN = 0.05


# ---- the engine ---------------------------------------------------------------------------------

def merge_limits(limits: Limits, nodes: int | None, depth: int | None, movetime: float | None,
                 evals: int | None = None, playouts: int | None = None) -> Limits:
    """``limits`` with its unset node, evaluator-call, playout, depth and movetime fields filled from
    the spec's defaults (:func:`engines.base.layered_limits`: the caller's limits first)."""
    caller = {k: getattr(limits, k) for k in ("nodes", "evals", "playouts", "depth", "movetime")}
    merged = layered_limits(caller, {"nodes": nodes, "evals": evals, "playouts": playouts, "depth": depth,
                                     "movetime": movetime})
    merged.pop("tc")
    return dataclasses.replace(limits, **merged)


def hard_stop_after(limits: Limits, turn: int, overhead: float = 0.0) -> float | None:
    """Seconds after which a search is stopped whatever it says (None: never, e.g. infinite): a
    ``movetime`` less the search's move ``overhead`` (its answer must arrive within the movetime)."""
    if limits.infinite:
        return None
    caps: list[float] = []
    if limits.movetime is not None:
        caps.append(max(0.0, limits.movetime - max(0.0, overhead)))
    own = limits.wtime if turn == 0 else limits.btime
    if own is not None:
        own = max(0.0, own)
        caps.append(max(0.01, own - CLOCK_MARGIN) if limits.movestogo == 1 else max(0.01, own / 2))
    return min(caps) if caps else None


class OurEngine(InProcessEngine):
    """An evaluator + a search; ``make_search()`` builds a fresh search (new game = new search)."""

    def __init__(self, spec: EngineSpec, variant: str, evaluator: Evaluator,
                 make_search: Callable[[], Search], *, nodes: int | None = None,
                 depth: int | None = None, movetime: float | None = None, evals: int | None = None,
                 playouts: int | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.variant = variant
        self.variants = frozenset({variant})
        self.evaluator = evaluator
        self._make_search = make_search
        self.search = make_search()
        self.default_nodes, self.default_depth, self.default_movetime = nodes, depth, movetime
        self.default_evals = evals
        self.default_playouts = playouts
        self._pos: Position | None = None
        self._legal: list[int] = []
        self._error: str | None = None
        self._t0 = 0.0
        self._deadline: float | None = None
        self._last_check = 0.0
        self._last_step = -1.0
        self._stopped = False
        self._steps = 0

    def new_game(self, seed: int | None = None) -> None:
        reset = getattr(self.search, "new_game", None)
        if callable(reset):
            reset()
        else:
            self.search = self._make_search()
        rng = getattr(self.search, "rng", None)
        if seed is not None and isinstance(rng, random.Random):
            rng.seed(game_seed(int(self.spec.settings.get("seed", 0) or 0), seed))

    # -- ask/tell steps for the harness --
    def start(self, pos: Position, limits: Limits) -> None:
        if pos.variant != self.variant:
            raise EngineError(f"engine {self.name} was created for {self.variant}, not {pos.variant}")
        self._pos = pos.copy()
        self._legal = self._pos.legal_moves()
        if not self._legal:
            raise EngineError(f"no legal moves in {pos.fen()}")
        lim = merge_limits(limits, self.default_nodes, self.default_depth, self.default_movetime, self.default_evals,
                           self.default_playouts)
        self._error = None
        self._stopped = False
        self._steps = 0
        self._t0 = time.perf_counter()
        time_cfg = getattr(getattr(self.search, "config", None), "time", None)
        cap = hard_stop_after(lim, self._pos.turn, float(getattr(time_cfg, "move_overhead", 0.0)))
        self._deadline = None if cap is None else self._t0 + cap
        self._last_check, self._last_step = self._t0, -1.0
        try:
            self.search.start(self._pos, lim)
        except Exception as e:  # noqa: BLE001 - a failing search is a forfeit, not a crash
            self._fail(e)

    def _fail(self, e: BaseException) -> None:
        self._error = f"crash: {type(e).__name__}: {e}".splitlines()[0]
        # One line (the game records the forfeit); the traceback only with debug logging on.
        log.error("engine %s failed: %s", self.name, self._error)
        log.debug("engine %s traceback", self.name, exc_info=e)

    def ask(self) -> list[Leaf]:
        if self._error is not None:
            return []
        self._steps += 1
        try:
            return self.search.ask()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return []

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        if self._error is not None:
            return
        try:
            self.search.tell(evaluations)
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def step(self) -> None:
        """One ask, evaluate, tell (the single-game loop; evaluator failures become forfeits)."""
        leaves = self.ask()
        if leaves:
            try:
                answers = self.evaluator.evaluate(leaves)
            except Exception as e:  # noqa: BLE001
                self._fail(e)
                return
            self.tell(answers)

    def done(self) -> bool:
        if self._error is not None:
            return True
        if self._steps > 0:  # the search's result is valid after one step
            if self._stopped:
                return True
            if self._deadline is not None:
                # stop before a step that would end past the deadline (the last step's length as the
                # next one's): a batch started just before it would otherwise overrun by a batch
                now = time.perf_counter()
                step, self._last_check = now - self._last_check, now
                # the shorter of the last two steps: one slow step (the search's start, a batch shape
                # the network meets for the first time) does not end a search early
                expect, self._last_step = (min(step, self._last_step) if self._last_step >= 0 else 0.0), step
                if now + expect >= self._deadline:
                    self.stop()
                    return True
        try:
            return self.search.done()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return True

    def stop(self) -> None:
        """Finish as soon as possible (UCI ``stop``); the move is then the best found so far.  Before
        the first step the search is not told: it takes that step (an MCTS root must be evaluated
        before it has a move), then :meth:`done` ends it."""
        self._stopped = True
        if self._steps == 0:
            return
        try:
            self.search.stop()
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    def progress(self) -> SearchResult | None:
        """The search's statistics so far (None before the first step, or if the search cannot say;
        after a failure: what it had found before)."""
        try:
            return self.search.result()
        except Exception:  # noqa: BLE001 - not ready yet
            return None

    def finish(self) -> MoveResult:
        elapsed = time.perf_counter() - self._t0
        if self._error is not None:
            return MoveResult(0, forfeit=self._error, time=elapsed)
        try:
            info = self.search.result()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            return MoveResult(0, forfeit=self._error, time=elapsed)
        if info.best_move not in self._legal:
            return MoveResult(0, info=info, forfeit=f"illegal move {move_to_uci(info.best_move)}", time=elapsed)
        return MoveResult(info.best_move, info=info, time=elapsed)

    def policy_target(self) -> list[tuple[int, float]] | None:
        target = getattr(self.search, "policy_target", None)
        return target() if callable(target) and self._error is None else None

    def close(self) -> None:
        self.evaluator.close()


def game_seed(engine_seed: int, seed: int) -> int:
    """The random state's seed for one game: the engine's own ``seed`` option and the game's seed
    (two engines with different seeds differ in the same game; the same engine replays a game)."""
    return (engine_seed * 0x9E3779B97F4A7C15 + seed) % (1 << 63)


def make_rng(seed: int) -> random.Random:
    """The injected random state of a search (OpenSpiel style: never a module-level generator)."""
    return random.Random(seed)
