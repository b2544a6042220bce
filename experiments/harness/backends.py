"""Where a run's games are played besides the calling process: local worker processes and Ray actors.

Both take the tasks still to play, an engine factory and a ``commit`` callback, and run a pooled
:class:`~experiments.harness.runner.Runner` in each worker (``targets``: self-play records with
their policy targets); every finished game comes back to the caller, the one process that writes the store, so resume and "never a game twice" work as in one
process.

Processes (``workers > 1``): the shared pool of :mod:`experiments.harness.workers` (spawned
processes, tasks handed out as games finish; a worker stops at its end marker, when told, or when
the main process is gone), a pooled runner in each.

Ray (``--backend ray [--ray-address ADDR]``): each worker is a Ray actor holding one engine set,
requesting real CPUs (``num_cpus=1`` each, or ``cpus_per_worker``).  Tasks are pulled from a Ray
queue as slots free up; every finished game is pushed to a result queue at once and committed by
the driver.  Without an address a local Ray instance is started with as many CPUs as workers, and
stopped at the end; an address is probed first (:func:`check_address`).
"""
from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any, Callable, Iterator, Sequence

from engines.catalog import NO_EXTERNAL_ENV
from experiments.harness.runner import EngineFactory, Runner, RunStats
from experiments.harness.store import GameRecord
from experiments.harness.tasks import Adjudication, GameTask, MatchError
from experiments.harness import workers as worker_pool
from experiments.harness.workers import STOP_POLL_SECONDS, PoolError, run_pool
#: seconds to reach a Ray cluster's address before giving up (ray.init itself waits far longer)
CONNECT_TIMEOUT = 10.0


def loopback_only() -> None:
    """Make a local Ray (started by this process) listen on 127.0.0.1 only, not on every interface.

    Ray takes the node's address from the route to the outside unless its "cluster" mode is off
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read when ``ray`` is imported, and its constant, for a
    ``ray`` already imported); then the GCS, the raylets and the workers bind to loopback (checked
    with ``ss -ltn``: every Ray port on 127.0.0.1).  A cluster (``--ray-address``) is left alone."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    except (ImportError, AttributeError):  # another Ray layout: the environment variable still holds
        pass


def check_address(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """A one-line :class:`MatchError` unless something listens at ``address`` (``HOST:PORT`` or
    ``ray://HOST:PORT``; ``auto`` is left to Ray): ``ray.init`` would otherwise retry for minutes
    and ignore SIGTERM while it does."""
    if address == "auto":
        return
    target = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise MatchError(f"Ray address {address!r} is not HOST:PORT (or ray://HOST:PORT, or auto)")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as e:
        raise MatchError(f"cannot reach a Ray cluster at {address}: {e.strerror or e} "
                         f"(start one with `ray start --head`, or leave out --ray-address)") from None


class _Worker:
    """The body of a Ray actor: runs a pooled :class:`Runner` over tasks from a Ray queue."""

    def run(self, task_q: Any, result_q: Any, stop_q: Any, factory: EngineFactory, variant: str, concurrency: int,
            adjudication: Adjudication, settings: dict[str, dict[str, Any]], targets: bool = False) -> tuple[int, int]:
        from ray.util.queue import Empty

        state = {"stopped": False, "last": 0.0}

        def stop() -> bool:  # a remote call per step would be slow: look at most twice a second
            now = time.monotonic()
            if not state["stopped"] and now - float(state["last"]) >= STOP_POLL_SECONDS:
                state["last"] = now
                state["stopped"] = not stop_q.empty()
            return bool(state["stopped"])

        def tasks() -> Any:
            while True:
                try:
                    yield task_q.get_nowait()
                except Empty:
                    return

        runner = Runner(factory, variant, concurrency, adjudication, on_game=result_q.put, stop=stop,
                        settings=settings, targets=targets)
        runner.run(tasks())
        return runner.eval_calls, runner.eval_leaves


def play_ray(todo: Sequence[GameTask], factory: EngineFactory, variant: str, concurrency: int, workers: int,
             adjudication: Adjudication, settings: dict[str, dict[str, Any]], commit: Callable[[GameRecord], None],
             stop: Callable[[], bool], stats: RunStats, address: str | None = None,
             cpus_per_worker: float = 1.0, targets: bool = False) -> None:
    try:
        import ray
        from ray.util.queue import Empty, Queue
    except ImportError:
        raise MatchError("the ray backend needs the 'ray' package (pip install ray)") from None
    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address:
            check_address(address)
            kw["address"] = address
        else:
            kw["num_cpus"] = max(1, int(workers * cpus_per_worker + 0.999))
            kw["_node_ip_address"] = "127.0.0.1"
            loopback_only()
            # local workers import this checkout (and the tests' helpers) like the driver
            env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}

            if os.environ.get(NO_EXTERNAL_ENV):
                env[NO_EXTERNAL_ENV] = os.environ[NO_EXTERNAL_ENV]
            kw["runtime_env"] = {"env_vars": env}
        try:
            ray.init(**kw)
        except Exception as e:  # noqa: BLE001 - e.g. no cluster at the address
            raise MatchError(f"cannot start or reach Ray ({address or 'local'}): {e}") from None
        started = True
    try:
        task_q, result_q, stop_q = Queue(), Queue(), Queue()
        task_q.put_nowait_batch(list(todo))
        actor_cls: Any = ray.remote(num_cpus=cpus_per_worker)(_Worker)
        per = slots(concurrency, workers, len(todo))
        actors: list[Any] = [actor_cls.remote() for _ in range(workers)]
        refs = [a.run.remote(task_q, result_q, stop_q, factory, variant, per, adjudication, settings, targets)
                for a in actors]
        pending = list(refs)
        error: str | None = None
        stopping = False
        while True:
            try:
                rec = result_q.get(timeout=0.5)
            except Empty:
                rec = None
            if rec is not None:
                commit(rec)
                continue
            if not stopping and stop():
                stop_q.put(True)
                stopping = True
            done, pending = ray.wait(pending, timeout=0) if pending else ([], [])
            for ref in done:
                try:
                    calls, leaves = ray.get(ref)
                    stats.eval_calls += calls
                    stats.eval_leaves += leaves
                except Exception as e:  # noqa: BLE001 - a failed actor: report once, stop the others
                    error = error or f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    stop_q.put(True)
            if not pending and result_q.empty():
                break
        if error is not None:
            raise MatchError(f"a Ray worker failed: {error}")
    finally:
        if started:
            ray.shutdown()


def slots(concurrency: int, workers: int, tasks: int) -> int:
    """Games a worker plays at once: its part of ``concurrency``, and no more than its share of the
    ``tasks`` (a worker takes tasks as its slots free, so the first one up could otherwise take
    them all while the others idle)."""
    return max(1, min(concurrency // workers, -(-tasks // workers)))


def _serve(arg: tuple[EngineFactory, str, int, Adjudication, dict[str, dict[str, Any]], bool],
           tasks: Iterator[GameTask], put: Callable[[GameRecord], None], stop: Callable[[], bool]) -> tuple[int, int]:
    """A worker of :func:`play_processes` (:mod:`experiments.harness.workers`): one pooled runner
    over the tasks handed to it; its evaluator calls and leaves as its closing figure."""
    factory, variant, concurrency, adjudication, settings, targets = arg
    runner = Runner(factory, variant, concurrency, adjudication, on_game=put, stop=stop, settings=settings,
                    targets=targets)
    runner.run(tasks)
    return runner.eval_calls, runner.eval_leaves


def play_processes(todo: Sequence[GameTask], factory: EngineFactory, variant: str, concurrency: int, workers: int,
                   adjudication: Adjudication, settings: dict[str, dict[str, Any]],
                   commit: Callable[[GameRecord], None], stop: Callable[[], bool], stats: RunStats,
                   targets: bool = False, skip: Callable[[GameTask], bool] | None = None) -> None:
    """Play ``todo`` in ``workers`` processes (:func:`experiments.harness.workers.run_pool`).  Tasks
    are handed out as games finish, a few more than the workers play at once, and ``skip`` is asked
    before each is handed out (an SPRT that has decided stops its match here too); a game does not
    depend on the worker that plays it."""
    per = slots(concurrency, workers, len(todo))

    def done(figures: tuple[int, int] | None) -> None:
        if figures is not None:
            stats.eval_calls += figures[0]
            stats.eval_leaves += figures[1]

    try:
        run_pool(_serve, (factory, variant, per, adjudication, settings, targets), todo, workers, ahead=per,
                 on_result=commit, on_done=done, skip=skip, stop=stop)
    except PoolError as e:
        raise MatchError(f"a worker failed: {e}") from None


def warm(backend: str, workers: int) -> None:
    """Start ahead what :func:`play_on` plays on, where that takes time: the worker processes' fork
    server (:func:`experiments.harness.workers.warm`), whose imports then run beside the caller's
    checks."""
    if backend != "ray" and workers > 1:
        worker_pool.warm()


def play_on(backend: str, todo: Sequence[GameTask], factory: EngineFactory, variant: str, concurrency: int,
            workers: int, adjudication: Adjudication, settings: dict[str, dict[str, Any]],
            commit: Callable[[GameRecord], None], stop: Callable[[], bool], stats: RunStats,
            address: str | None = None, targets: bool = False, skip: Callable[[GameTask], bool] | None = None) -> None:
    """Play ``todo`` where ``backend`` and ``workers`` say: Ray actors, worker processes (both load
    their own engines: the factory's evaluators here are closed first), or a pooled
    :class:`Runner` in this process; ``skip`` is asked before a task starts (not on Ray)."""
    if backend == "ray" or workers > 1:
        close = getattr(factory, "close", None)
        if callable(close):
            close()
    if backend == "ray":
        play_ray(todo, factory, variant, concurrency, max(1, workers), adjudication, settings, commit, stop, stats,
                 address=address, targets=targets)
    elif workers <= 1:
        runner = Runner(factory, variant, concurrency, adjudication, on_game=commit, stop=stop, settings=settings,
                        targets=targets)
        runner.run(t for t in todo if skip is None or not skip(t))
        stats.eval_calls, stats.eval_leaves = runner.eval_calls, runner.eval_leaves
    else:
        play_processes(todo, factory, variant, concurrency, workers, adjudication, settings, commit, stop, stats,
                       targets=targets, skip=skip)
