"""The pooled runner: many games at once in one process, in-process engines pooled into one
evaluator call (the scheduling, checks and time rules are in :mod:`experiments.harness.match`'s
docstring), the engine pool and factory, and the adjudicator."""
from __future__ import annotations

import random
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, cast

from board import WHITE, Position, move_to_uci
from engines import catalog, factory
from engines.base import Engine, EngineError, EngineSpec, InProcessEngine, MoveResult
from engines.registry import EvaluatorPool
from evaluators.base import Evaluation, Leaf
from experiments.harness.store import GameRecord, MoveStat, versions
from experiments.harness.tasks import Adjudication, CommitError, GameTask, MatchError, Player, played
from search.base import Limits

MATE_CP = 100_000


class _Adjudicator:
    def __init__(self, rules: Adjudication) -> None:
        self.rules = rules
        self.scores: tuple[list[int | None], list[int | None]] = ([], [])

    def after_move(self, mover: int, score: int | None, pos: Position) -> tuple[str, str] | None:
        r = self.rules
        self.scores[mover].append(score)
        mine = self.scores[mover]
        if r.resign_moves > 0 and len(mine) >= r.resign_moves:
            last = mine[-r.resign_moves:]
            if all(s is not None and s <= -r.resign_cp for s in last):
                return ("0-1" if mover == WHITE else "1-0",
                        f"adjudication: resign ({r.resign_moves} moves at <= -{r.resign_cp} cp)")
        if r.draw_moves > 0 and pos.fullmove_number >= r.draw_from_move:
            ok = True
            for side in self.scores:
                last = side[-r.draw_moves:]
                if len(last) < r.draw_moves or not all(s is not None and abs(s) <= r.draw_cp for s in last):
                    ok = False
            if ok:
                return ("1/2-1/2", f"adjudication: draw ({r.draw_moves} moves within {r.draw_cp} cp)")
        if r.max_plies > 0 and pos.ply() >= r.max_plies:
            return ("1/2-1/2", f"adjudication: max plies ({r.max_plies})")
        return None


# --------------------------------------------------------------------------- engines

class EngineFactory(Protocol):
    def __call__(self, player: Player, variant: str) -> Engine: ...


class RegistryFactory:
    """Engines from :mod:`engines.registry`, our engines of one evaluator *sharing* one evaluator
    object per process (that is what lets the runner pool their leaves into one call).

    The shared evaluators belong to the factory: engines that use one are dropped, not closed, and
    :meth:`close` closes each evaluator once at the end.

    Pooled-side tuning (None: as the engine's spec says): ``threads`` replaces the spec's evaluator
    threads and ``max_batch`` is the largest batch one network call gets (a pooled call of more
    leaves is split into calls of at most ``max_batch``).  :func:`experiments.bench.harness.tune`
    picks both from measured network throughput.
    """

    shares_evaluators = True

    def __init__(self, threads: int | None = None, max_batch: int | None = None, exact_batches: bool = True) -> None:
        if threads is not None and threads < 1:
            raise MatchError(f"evaluator threads must be at least 1, got {threads}")
        if max_batch is not None and max_batch < 1:
            raise MatchError(f"max batch must be at least 1, got {max_batch}")
        self.threads = threads
        self.max_batch = max_batch
        #: networks pad a batch of one too (evaluators.neural.CPU_BATCH_MULTIPLE): a position's outputs
        #: then never depend on how the pooled leaves fell into batches (node-limited runs replay exactly)
        self.exact_batches = exact_batches
        self.pool = self._new_pool()

    def _new_pool(self) -> Any:
        return EvaluatorPool(self.threads, self.max_batch, pad_single=self.exact_batches)

    @property
    def evaluators(self) -> dict[Any, Any]:
        """The loaded evaluators by key (the pool's)."""
        return dict(self.pool.evaluators)

    def __getstate__(self) -> dict[str, Any]:
        return {"threads": self.threads, "max_batch": self.max_batch,  # a worker loads its own evaluators
                "exact_batches": self.exact_batches}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.pool = self._new_pool()

    def __call__(self, player: Player, variant: str) -> Engine:
        spec = player.spec  # resolved once per player
        if catalog.is_external(spec):
            return factory.create(spec, variant)
        return factory.create(spec, variant, evaluator=self.pool.get(spec, variant))

    def close(self) -> None:
        self.pool.close()


class EnginePool:
    """Idle engine instances by engine string, reused across games (and across node limits)."""

    def __init__(self, factory: EngineFactory, variant: str) -> None:
        self.factory = factory
        self.variant = variant
        self.idle: dict[str, list[Engine]] = {}

    def get(self, player: Player, seed: int | None = None) -> Engine:
        """An engine for ``player``, reset for a new game and re-seeded with the game's ``seed``."""
        free = self.idle.get(player.engine)
        eng = free.pop() if free else self.factory(player, self.variant)
        eng.new_game(seed)
        return eng

    def put(self, player: Player, eng: Engine) -> None:
        self.idle.setdefault(player.engine, []).append(eng)

    def discard(self, eng: Engine) -> None:
        _close_engine(self.factory, eng)

    def close(self) -> None:
        for engines in self.idle.values():
            for e in engines:
                self.discard(e)
        self.idle.clear()
        close = getattr(self.factory, "close", None)
        if callable(close):
            close()


def _close_engine(factory: EngineFactory, eng: Engine) -> None:
    """Close an engine, unless its evaluator is shared (then the factory closes that at the end)."""
    if getattr(factory, "shares_evaluators", False) and isinstance(eng, InProcessEngine):
        return
    try:
        eng.close()
    except Exception:  # noqa: BLE001 - a broken engine is already being thrown away
        pass


def check_players(players: Sequence[Player], variant: str, factory: EngineFactory) -> dict[str, dict[str, Any]]:
    """Create (and close) one instance of every engine now, so an unknown engine, a bad option or a
    missing weights file fails before any game starts.  Returns each player's full settings."""
    settings: dict[str, dict[str, Any]] = {}
    made: dict[str, Engine] = {}
    try:
        for p in players:
            if p.engine not in made:
                try:
                    made[p.engine] = factory(p, variant)
                except (OSError, RuntimeError, ImportError) as e:
                    raise EngineError(f"engine {p.engine!r} cannot be started: {e}") from None
            eng = made[p.engine]
            variants = getattr(eng, "variants", None)
            if variants and variant not in variants:
                raise EngineError(f"engine {p.engine!r} does not play {variant}")
            eng.check_limits(p.limits([p.tc[0], p.tc[0]] if p.tc else None))
            settings[p.name] = p.settings(eng)
    finally:
        for m in made.values():
            _close_engine(factory, m)
    return settings


# --------------------------------------------------------------------------- the pooled runner

_IDLE, _THINKING, _WAITING = 0, 1, 2


class _Absent(Engine):
    """Stands for an engine that could not be started (its game is recorded as its forfeit)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.spec = EngineSpec(name, "-", "-")
        self.variants = frozenset()

    def play(self, pos: Position, limits: Limits) -> MoveResult:
        return MoveResult(0, forfeit="not started")


@dataclass
class _Game:
    task: GameTask
    pos: Position
    engines: list[Engine]
    adjudicator: _Adjudicator
    clocks: list[float]
    started: float
    moves: list[str] = field(default_factory=list)
    stats: list[MoveStat] = field(default_factory=list)
    state: int = _IDLE
    t0: float = 0.0
    future: Future[MoveResult] | None = None
    broken: list[bool] = field(default_factory=lambda: [False, False])
    targets: list[tuple[list[int], list[float], float]] | None = None
    full: bool = True  # this move: a full search (playout-cap randomisation: Player.playout_cap)

    @property
    def mover(self) -> Engine:
        return self.engines[0 if self.pos.turn == WHITE else 1]

    @property
    def mover_player(self) -> Player:
        return self.task.white if self.pos.turn == WHITE else self.task.black


def _play_external(engine: Engine, pos: Position, limits: Limits) -> MoveResult:
    try:
        return engine.play(pos, limits)
    except Exception as e:  # noqa: BLE001 - engines must not raise; if one does, it forfeits
        return MoveResult(0, forfeit=f"engine error: {type(e).__name__}: {e}")


class Runner:
    """Plays tasks, ``concurrency`` at a time, pooling evaluations (see module doc).

    ``on_game`` receives each finished :class:`GameRecord` (the caller commits it); ``stop`` is
    polled between steps: once it returns True no new game starts and active games are abandoned
    (they were never stored, so a rerun plays them again).  With ``targets`` (self-play) every
    record carries each move's policy target and root value (:attr:`GameRecord.targets`).
    """

    def __init__(self, factory: EngineFactory, variant: str, concurrency: int = 1,
                 adjudication: Adjudication | None = None,
                 on_game: Callable[[GameRecord], None] | None = None,
                 stop: Callable[[], bool] | None = None,
                 settings: dict[str, dict[str, Any]] | None = None, targets: bool = False) -> None:
        if concurrency < 1:
            raise MatchError(f"concurrency must be at least 1, got {concurrency}")
        self.pool = EnginePool(factory, variant)
        self.variant = variant
        self.concurrency = concurrency
        self.adjudication = adjudication or Adjudication()
        self.on_game = on_game or (lambda g: None)
        self.stop = stop or (lambda: False)
        self.settings = settings or {}
        self.targets = targets
        self.executor: ThreadPoolExecutor | None = None
        #: the error of ``on_game`` (a game that could not be stored): the run stops and raises it
        self.failure: Exception | None = None
        self.versions = versions()
        #: evaluator calls made and leaves evaluated (to show the pooling at work)
        self.eval_calls = 0
        self.eval_leaves = 0

    # -- public

    def run(self, tasks: Iterable[GameTask]) -> None:
        it: Iterator[GameTask] = iter(tasks)
        active: list[_Game] = []
        exhausted = False
        try:
            while self.failure is None:
                if self.stop():
                    break
                while not exhausted and len(active) < self.concurrency and self.failure is None:
                    t = next(it, None)
                    if t is None:
                        exhausted = True
                        break
                    g = self._begin(t)
                    if g is not None:
                        active.append(g)
                if not active:
                    if exhausted:
                        break
                    continue
                self._step(active)
            if self.failure is not None:
                raise self.failure
        finally:
            for g in active:
                for e in g.engines:
                    self.pool.discard(e)
            if self.executor is not None:
                self.executor.shutdown(wait=False, cancel_futures=True)
            self.pool.close()

    # -- one game

    def _begin(self, t: GameTask) -> _Game | None:
        pos = t.opening.position(t.variant)
        tc = [t.white.tc, t.black.tc]
        clocks = [tc[0][0] if tc[0] else 0.0, tc[1][0] if tc[1] else 0.0]
        engines: list[Engine] = []
        for side, player in enumerate((t.white, t.black)):
            try:
                engines.append(self.pool.get(player, t.seed))
            except Exception as e:  # noqa: BLE001 - an engine that cannot start loses the game
                g = _Game(t, pos, engines + [_Absent(player.name)] * (2 - len(engines)),
                          _Adjudicator(self.adjudication), clocks, time.time())
                g.broken[side] = True
                self._end(g, "0-1" if side == 0 else "1-0",
                          f"forfeit: cannot start: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                return None
        g = _Game(t, pos, engines, _Adjudicator(self.adjudication), clocks, time.time())
        g.targets = [] if self.targets else None
        over = pos.outcome(claim_draw=True)
        if over is not None:
            self._end(g, over[0], over[1])
            return None
        return g

    def _start_move(self, g: _Game) -> None:
        eng, player = g.mover, g.mover_player
        limits = player.limits(g.clocks)
        g.full = True
        if player.playout_cap is not None and g.targets is not None:  # KataGo: most moves a fast search
            g.full = random.Random(f"{g.task.seed}/{len(g.moves)}").random() < player.playout_cap[0]
            if not g.full:  # no root noise, no forced playouts: its visits are no policy target
                limits.nodes = player.playout_cap[1]
                limits.fast = True
        g.t0 = time.perf_counter()
        if isinstance(eng, InProcessEngine):
            try:
                eng.start(g.pos.copy(), limits)
            except Exception as e:  # noqa: BLE001
                self._apply(g, MoveResult(0, forfeit=f"engine error: {type(e).__name__}: {e}"))
                return
            g.state = _THINKING
        else:
            if self.executor is None:
                self.executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="engine")
            g.future = self.executor.submit(_play_external, eng, g.pos.copy(), limits)
            g.state = _WAITING

    def _step(self, active: list[_Game]) -> None:
        progressed = False
        groups: dict[int, tuple[Any, list[tuple[_Game, list[Leaf]]]]] = {}
        for g in list(active):
            if g.state == _IDLE:
                self._start_move(g)
                progressed = True
            if g.state == _THINKING:  # only an in-process engine thinks here (_start_move)
                eng = cast(InProcessEngine, g.mover)
                try:
                    if eng.done():
                        mr = eng.finish()
                        self._apply(g, mr)
                        progressed = True
                        continue
                    leaves = eng.ask()
                except Exception as e:  # noqa: BLE001
                    self._apply(g, MoveResult(0, forfeit=f"engine error: {type(e).__name__}: {e}"))
                    progressed = True
                    continue
                if leaves:
                    ev = eng.evaluator
                    groups.setdefault(id(ev), (ev, []))[1].append((g, leaves))
                else:
                    progressed = True
            elif g.state == _WAITING and g.future is not None and g.future.done():
                self._apply(g, g.future.result())
                progressed = True
        for ev, items in groups.values():
            self._evaluate(ev, items)
            progressed = True
        # drop finished games
        active[:] = [g for g in active if g.state != -1]
        if not progressed:
            futures = [g.future for g in active if g.state == _WAITING and g.future is not None]
            if futures:
                wait(futures, timeout=0.05, return_when=FIRST_COMPLETED)

    def _evaluate(self, ev: Any, items: list[tuple[_Game, list[Leaf]]]) -> None:
        flat = [leaf for _, leaves in items for leaf in leaves]
        answers: list[Evaluation] | None = None
        try:
            got = list(ev.evaluate(flat))
            self.eval_calls += 1
            self.eval_leaves += len(flat)
            if len(got) == len(flat):
                answers = got
        except Exception:  # noqa: BLE001 - find the game at fault by evaluating one game at a time
            answers = None
        i = 0
        for g, leaves in items:
            eng = cast(InProcessEngine, g.mover)  # it asked for these leaves (_step)
            try:
                if answers is None:
                    part = list(ev.evaluate(leaves))
                    self.eval_calls += 1
                    self.eval_leaves += len(leaves)
                else:
                    part = answers[i:i + len(leaves)]
                eng.tell(part)
            except Exception as e:  # noqa: BLE001
                self._apply(g, MoveResult(0, forfeit=f"engine error: {type(e).__name__}: {e}"))
            i += len(leaves)

    def _apply(self, g: _Game, mr: MoveResult) -> None:
        mover = g.pos.turn
        side = 0 if mover == WHITE else 1
        player = g.mover_player
        elapsed = time.perf_counter() - g.t0
        g.state = _IDLE
        g.future = None
        loss = "0-1" if mover == WHITE else "1-0"
        if mr.forfeit:
            g.broken[side] = True
            self._end(g, loss, f"forfeit: {mr.forfeit}")
            return
        if player.tc is not None:
            g.clocks[side] -= elapsed
            if g.clocks[side] < 0:
                self._end(g, loss, "time forfeit")
                return
            g.clocks[side] += player.tc[1]
        if mr.move not in g.pos.legal_moves():
            g.broken[side] = True
            self._end(g, loss, f"forfeit: illegal move {move_to_uci(mr.move) if mr.move else '(none)'}")
            return
        info = mr.info
        if g.targets is not None:
            eng = g.mover
            target = (eng.policy_target() if isinstance(eng, InProcessEngine) else None) or [(mr.move, 1.0)]
            if not g.full:  # a fast search's visits are no policy target: the position keeps its value target
                target = []
            g.targets.append(([m for m, _ in target], [p for _, p in target], info.value if info else 0.0))
        score: int | None = None
        if info is not None:
            if info.mate is not None:
                score = MATE_CP if info.mate > 0 else -MATE_CP
            else:
                score = info.cp
            g.stats.append(MoveStat(info.nodes, elapsed, None if info.mate is not None else info.cp,
                                    info.mate, info.depth, info.evals))
        else:
            g.stats.append(MoveStat(0, elapsed))
        g.moves.append(move_to_uci(mr.move))
        g.pos.push(mr.move)
        over = g.pos.outcome(claim_draw=True)
        if over is not None:
            self._end(g, over[0], over[1])
            return
        adj = g.adjudicator.after_move(mover, score, g.pos)
        if adj is not None:
            self._end(g, adj[0], adj[1])

    def _end(self, g: _Game, result: str, reason: str) -> None:
        t = g.task
        rec = GameRecord(
            key=t.key, run=t.run, match=t.match, pair=t.pair, variant=t.variant,
            white=t.white.name, black=t.black.name,
            white_settings=played(self.settings.get(t.white.name) or t.white.settings(g.engines[0]), g.engines[0]),
            black_settings=played(self.settings.get(t.black.name) or t.black.settings(g.engines[1]), g.engines[1]),
            opening=t.opening.name, opening_fen=t.opening.fen, opening_moves=list(t.opening.moves),
            moves=g.moves, result=result, reason=reason, move_stats=g.stats, seed=t.seed,
            versions=self.versions, started=g.started, finished=time.time(), targets=g.targets)
        for side, (player, eng) in enumerate(((t.white, g.engines[0]), (t.black, g.engines[1]))):
            if isinstance(eng, _Absent):
                continue
            if g.broken[side]:
                self.pool.discard(eng)
            else:
                self.pool.put(player, eng)
        g.engines = []
        g.state = -1
        try:
            self.on_game(rec)
        except Exception as e:  # noqa: BLE001 - not the engines' fault: stop the run (see run)
            if self.failure is None:
                self.failure = e if isinstance(e, CommitError) else CommitError(
                    f"game {t.key} could not be stored: {type(e).__name__}: {e}")




@dataclass
class RunStats:
    played: int = 0
    skipped: int = 0
    eval_calls: int = 0
    eval_leaves: int = 0
    seconds: float = 0.0
    stopped: bool = False

