"""Fake engines for the harness tests: a steppable engine sharing a counting evaluator (pooling),
blocking engines that play seeded random moves, report fixed scores, crash, move illegally or
sleep (as external engines do), and a factory naming them; an untimed bughouse match played
with one and with two workers (:func:`bughouse_games_by_workers`); and an alpha-beta seat's pipe
to its search process, faked (:class:`FakePipe`)."""
from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from board import Position
from engines.base import Engine, EngineError, EngineSpec, InProcessEngine, MoveResult
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, Leaf
from experiments.harness import match as M
from search.base import Limits, SearchResult


class CountingEvaluator(Evaluator):
    """Uniform priors, value 0; records the size of every batch."""

    name = "counting"

    def __init__(self) -> None:
        self.batches: list[int] = []

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        self.batches.append(len(leaves))
        return [Evaluation(0.0, [1.0 / len(lf.moves)] * len(lf.moves) if lf.moves else []) for lf in leaves]


class SteppedEngine(InProcessEngine):
    """Asks for 2 leaves per step until ``nodes`` are evaluated, then plays a seeded random move."""

    def __init__(self, evaluator: Evaluator, name: str = "stepped", cp: int = 0) -> None:
        self.evaluator = evaluator
        self.name = name
        self.spec = EngineSpec(name, evaluator.name, "fake", {"k": "v"})
        self.variants = frozenset({"chess", "crazyhouse"})
        self.cp = cp
        self.games = 0

    def new_game(self, seed: int | None = None) -> None:
        self.games += 1

    def start(self, pos: Position, limits: Limits) -> None:
        self.pos = pos.copy()
        self.moves = self.pos.legal_moves()
        self.budget = limits.nodes or 4
        self.evaluated = 0

    def ask(self) -> list[Leaf]:
        return [Leaf.of(self.pos, self.moves)] * 2

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        assert len(evaluations) == 2
        self.evaluated += 2

    def done(self) -> bool:
        return self.evaluated >= self.budget

    def finish(self) -> MoveResult:
        rng = random.Random(self.pos.zobrist)
        m = rng.choice(self.moves)
        return MoveResult(m, SearchResult(m, cp=self.cp, nodes=self.evaluated, evals=self.evaluated, depth=1))


class RandomEngine(Engine):
    """A blocking (non-steppable) engine, as external engines are; optional scripted behaviour."""

    def __init__(self, name: str = "random", cp: int | None = None, fail_at: int | None = None,
                 illegal: bool = False, sleep: float = 0.0) -> None:
        self.name = name
        self.spec = EngineSpec(name, "none", "random")
        self.variants = frozenset({"chess", "crazyhouse"})
        self.cp, self.fail_at, self.illegal, self.sleep = cp, fail_at, illegal, sleep
        self.closed = False
        self.moves_played = 0

    #: how many play() calls of all instances run at once right now, and the most ever seen
    running = 0
    most_running = 0
    lock = threading.Lock()

    def play(self, pos: Position, limits: Limits) -> MoveResult:
        self.moves_played += 1
        if self.sleep:
            with RandomEngine.lock:
                RandomEngine.running += 1
                RandomEngine.most_running = max(RandomEngine.most_running, RandomEngine.running)
            time.sleep(self.sleep)
            with RandomEngine.lock:
                RandomEngine.running -= 1
        if self.fail_at is not None and self.moves_played >= self.fail_at:
            return MoveResult(0, forfeit="crash: engine exited")
        if self.illegal:
            return MoveResult(1 | (2 << 6))  # b1 -> c1: never legal in these games
        moves = pos.legal_moves()
        m = random.Random(pos.zobrist).choice(moves)
        info = SearchResult(m, cp=self.cp, nodes=7, depth=2) if self.cp is not None else None
        return MoveResult(m, info)

    def close(self) -> None:
        self.closed = True


class Factory:
    """Engines by name; every ``stepped*`` engine shares one evaluator (so leaves can be pooled)."""

    def __init__(self) -> None:
        self.evaluator = CountingEvaluator()
        self.made: list[Engine] = []

    def __call__(self, player: M.Player, variant: str) -> Engine:
        e: Engine
        name = player.engine
        if name == "stepped":
            e = SteppedEngine(self.evaluator)
        elif name == "stepped-own":
            e = SteppedEngine(CountingEvaluator(), "stepped-own")
        elif name == "random":
            e = RandomEngine()
        elif name == "loser":
            e = RandomEngine("loser", cp=-700)
        elif name == "drawish":
            e = RandomEngine("drawish", cp=5)
        elif name == "crasher":
            e = RandomEngine("crasher", fail_at=3)
        elif name == "illegal":
            e = RandomEngine("illegal", illegal=True)
        elif name == "slow":
            e = RandomEngine("slow", sleep=0.05)
        elif name == "dies-on-start":  # starts once (the check before the games), then never again
            if any(m.name == "dies-on-start" for m in self.made):
                raise RuntimeError("engine process exited at start-up")
            e = RandomEngine("dies-on-start")
        else:
            raise EngineError(f"unknown engine {name!r}")
        self.made.append(e)
        return e


def bughouse_games_by_workers(a: str, b: str, games: int, seed: int, max_plies: int, tmp: Path) -> list[list[Any]]:
    """An untimed bughouse match of teams ``a`` and ``b`` played with 1, then 2 workers (into
    ``tmp/w1.sqlite``, ``tmp/w2.sqlite``): each run's stored games as sorted (key, moves, result,
    reason, seed)."""
    from experiments.harness.bughouse import BughouseStore, run_match

    rows = []
    for workers in (1, 2):
        db = tmp / f"w{workers}.sqlite"
        s = run_match(a, b, games, -1, 0, db, seed=seed, max_plies=max_plies, progress=False, workers=workers)
        assert s.played == games
        store = BughouseStore(db)
        try:
            rows.append(sorted((g.key, g.moves, g.result, g.reason, g.seed) for g in store.store.games()))
        finally:
            store.close()
    return rows


class FakePipe:
    """An alpha-beta bughouse seat's pipe to its search process: the jobs sent are kept, the
    answers are queued by the test."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self.answers: list[tuple[Any, ...]] = []

    def send(self, job: tuple[Any, ...]) -> None:
        self.sent.append(job)

    def poll(self) -> bool:
        return bool(self.answers)

    def recv(self) -> tuple[Any, ...]:
        return self.answers.pop(0)


def serve_environment(name: str, tasks: Any, put: Any, stop: Any) -> str | None:
    """A pool worker (:func:`experiments.harness.workers.run_pool`) whose closing figure is the
    value of the environment variable ``name`` it sees."""
    for t in tasks:
        put(t)
    return os.environ.get(name)


def serve_until_stopped(pid_dir: str, tasks: Any, put: Any, stop: Any) -> None:
    """A pool worker that writes its pid into ``pid_dir`` and waits until told to stop (or until
    its main process is gone)."""
    Path(pid_dir, str(os.getpid())).write_text("")
    while not stop():
        time.sleep(0.05)
