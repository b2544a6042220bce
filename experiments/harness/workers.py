"""One pool of worker processes for every harness that plays games in processes.

``run_pool(serve, arg, todo, workers, ...)`` starts ``workers`` processes; each calls
``serve(arg, tasks, put, stop)`` once: ``tasks`` yields the tasks handed to it, ``put`` sends one
result back, ``stop()`` says the run is over (told so, or the main process is gone: killed). What
``serve`` returns is the worker's closing figure (``on_done``). The main process hands tasks out as
results come back, a few more than the workers take at once (``ahead`` each), and asks ``skip``
before each one (a decided SPRT stops its match here); results go to ``on_result`` in this process,
the one that writes the store, so resume and "never a game twice" hold as in one process. Who plays
a task does not change its game: each task carries its own seed.

The one-board matches (:func:`experiments.harness.backends.play_processes`: a pooled runner a
worker), the bughouse matches (:mod:`experiments.harness.bughouse`: four seats a worker) and the
data generation (:mod:`experiments.training.datagen`: a UCI engine a worker, a game a task;
:mod:`experiments.training.bughouse_data`: a shard a task) run on it.

Workers are forked by multiprocessing's fork server, never from this process (a worker must not
inherit a parent's reader threads). The server is a process that only imports and forks, started once per run
(:func:`warm`, beside the run's own start-up) with the slow imports done (:data:`PRELOAD`: torch
alone takes about 2 s), so a worker starts in milliseconds, in every stage of a run: a self-play
loop's generations, its gates and its reanalysis reload their weights, not their modules. A worker
takes this process's environment as it is when the worker starts, and stops when this process is gone
(its parent is the server, so it watches this process's end of their pipe).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
from typing import Any, Callable, Iterable, Iterator

STOP_POLL_SECONDS = 0.5
#: imported once by the fork server: what every worker needs and takes long to import
PRELOAD = ("numpy", "torch", "engines.registry", "evaluators.neural", "experiments.harness.backends")

#: what a worker runs: serve(arg, tasks, put, stop) -> closing figure
Serve = Callable[[Any, Iterator[Any], Callable[[Any], None], Callable[[], bool]], Any]


class PoolError(RuntimeError):
    """A worker failed (its error, as one line) or the workers stopped before the run was played."""


def context() -> Any:
    """The fork server's context, with :data:`PRELOAD` (spawn where there is no fork server)."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def warm() -> None:
    """Start the fork server now, if it is not running: its imports then run while this process
    does its own start-up (a run's checks), not when the first worker is asked for."""
    if context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _main(serve: Serve, arg: Any, task_q: Any, result_q: Any, stop_ev: Any, env: dict[str, str]) -> None:
    os.environ.clear()
    os.environ.update(env)  # the main process's, now: the fork server's is that of its own start
    parent = mp.parent_process()

    def gone() -> bool:  # the main process is gone (killed): nobody reads the results any more
        return parent is not None and not parent.is_alive()

    def stop() -> bool:  # told to stop, or the main process is gone: stop too
        return bool(stop_ev.is_set()) or gone()

    def tasks() -> Iterator[Any]:
        # the queue ends with one None per worker: an empty read is never the end (a multiprocessing
        # queue's feeder thread writes behind put(), so get_nowait() can miss tasks that are there;
        # a worker that took that for the end left the rest of the run to the other workers)
        while not stop():
            try:
                t = task_q.get(timeout=STOP_POLL_SECONDS)
            except queue.Empty:
                continue
            if t is None:
                return
            yield t

    try:
        result_q.put(("done", serve(arg, tasks(), lambda r: result_q.put(("result", r)), stop)))
    except KeyboardInterrupt:
        result_q.put(("done", None))
    except Exception as e:  # noqa: BLE001 - reported to the main process as one line
        result_q.put(("error", f"{type(e).__name__}: {e}"))
    if gone():  # exit without flushing the results
        result_q.cancel_join_thread()


def run_pool(serve: Serve, arg: Any, todo: Iterable[Any], workers: int, *, ahead: int = 1,
             on_result: Callable[[Any], None], on_done: Callable[[Any], None] | None = None,
             skip: Callable[[Any], bool] | None = None, stop: Callable[[], bool] = lambda: False) -> None:
    """Play ``todo`` in ``workers`` processes running ``serve`` (module docstring).
    ``stop()`` is asked after each result: once true no more tasks are handed out and the workers
    are told to end (results already on their way are still delivered). Raises :class:`PoolError`
    when a worker fails (after the others have ended) or every worker is gone before saying done."""
    ctx = context()
    task_q, result_q, stop_ev = ctx.Queue(), ctx.Queue(), ctx.Event()
    pending = iter(todo)
    handed = 0  # tasks handed out whose result has not come back
    ended = False

    def hand_out() -> None:
        nonlocal handed, ended
        while not ended and handed < workers * (ahead + 1):
            t = next(pending, None)
            if t is None:
                for _ in range(workers):
                    task_q.put(None)  # the end, one for each worker
                ended = True
            elif skip is None or not skip(t):
                task_q.put(t)
                handed += 1

    hand_out()
    # not daemonic: a worker may start processes of its own (a bughouse alpha-beta seat does); one
    # whose main process is gone stops at its next task (stop())
    procs = [ctx.Process(target=_main, args=(serve, arg, task_q, result_q, stop_ev, dict(os.environ))) for _ in range(workers)]
    for p in procs:
        p.start()
    running = len(procs)
    error: str | None = None
    try:
        while running:
            try:
                kind, payload = result_q.get(timeout=STOP_POLL_SECONDS)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    error = error or "the worker processes stopped before the run was played"
                    break
                continue
            if kind == "result":
                handed -= 1
                on_result(payload)
                if stop():
                    stop_ev.set()
                else:
                    hand_out()
            elif kind == "done":
                running -= 1
                if on_done is not None:
                    on_done(payload)
            else:
                running -= 1
                error = error or str(payload)
                stop_ev.set()
    finally:
        stop_ev.set()
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    if error is not None:
        raise PoolError(error)
