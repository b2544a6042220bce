"""The match runner: many games at once, in-process engines pooled into one evaluator call.

Vocabulary: a *player* is an engine with its limits (``rise-mcts`` at 800 nodes); a *task* is one
game to play (players, colours, opening, key); a *match* is the tasks of two players over an
opening suite, each opening played twice with colours reversed (a *pair*, SPEC.md section 5).

Scheduling (:class:`Runner`).  Up to ``concurrency`` games are active in one process.  On every
turn of the loop each active game whose mover is an :class:`~engines.base.InProcessEngine` is
stepped with the ask/tell protocol of :mod:`search.base`; the leaves of all games whose engines
share the same evaluator object are concatenated into **one** ``evaluator.evaluate`` call and the
answers handed back in order.  Other engines (external UCI/XBoard processes) play in a thread
pool, so a blocking subprocess never stalls the pooled games.  ``workers > 1`` runs that loop in
several processes (each with its own engines and its own share of the games, pulled from a common
queue), results flowing back to the one process that writes the database.

Per move the harness checks, in this order: the engine's forfeit (crash, hang, protocol error), the
clock (time controls), the move's legality, the rules' end of game (checkmate, stalemate, threefold
repetition and 50 moves claimed, insufficient material), then adjudication
(:class:`Adjudication`, SPEC.md section 5).  Any failure of an engine, including an exception
escaping our own code, becomes a recorded forfeit and the run goes on; the engine instance is
thrown away and a fresh one made for the next game.

Time.  A move's time is wall time from the start of the engine's search to its answer.  With
pooling, that includes the evaluation of the other games' leaves in the same batches, so clocks
and movetime limits of in-process engines are charged for shared work: use node (or depth) limits
for pooled play, which is what Elo-versus-nodes needs, and ``concurrency = 1`` for time controls.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

from experiments.harness import pgn as pgn_out
from experiments.harness.backends import check_address, play_on, warm
from experiments.harness.runner import (  # noqa: F401 - re-exported: the harness API in one place
    MATE_CP, EngineFactory, EnginePool, RegistryFactory, Runner, RunStats, check_players,
)
from experiments.harness.store import GameRecord, Store, StoreError
from experiments.paths import ensure_parent
from experiments.harness.tasks import (  # noqa: F401 - re-exported
    BACKENDS, Adjudication, CommitError, GameTask, MatchError, Player, limits_text, match_id, match_tasks, parse_tc,
)


def play(tasks: Sequence[GameTask], store: Store, factory: EngineFactory | None = None, *,
         concurrency: int = 1, workers: int = 1, adjudication: Adjudication | None = None,
         pgn_path: str | Path | None = None, on_game: Callable[[GameRecord], None] | None = None,
         stop: Callable[[], bool] | None = None, progress: bool = True, desc: str = "games",
         postfix: Callable[[], str] | None = None, check: bool = True, backend: str = "local",
         ray_address: str | None = None, skip: Callable[[GameTask], bool] | None = None) -> RunStats:
    """Play every task not yet in ``store``; commit each game (and append it to the PGN) at once.

    With ``check`` every engine is created once before any game (see :func:`check_players`).
    ``skip`` is asked before a task starts and drops it if True (an SPRT that decided), with local
    workers (in this process or worker processes, which get their tasks as games finish); Ray
    actors get their tasks at the start.
    """
    from tqdm import tqdm

    if backend not in BACKENDS:
        raise MatchError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if backend == "ray" and ray_address:
        check_address(ray_address)
    if not tasks:
        return RunStats()
    if factory is None:
        # exact batches unless a clock decides anyway (time-limited games never replay exactly, and
        # padding a lone position would slow one-leaf searches such as alpha-beta with a network)
        timed = any(p.movetime is not None or p.tc is not None for t in tasks for p in (t.white, t.black))
        factory = RegistryFactory(exact_batches=not timed)
    variants = {t.variant for t in tasks}
    if len(variants) != 1:
        raise MatchError(f"one variant per run, got {', '.join(sorted(variants))}")
    variant = variants.pop()
    if pgn_path is not None:
        pgn_out.check(pgn_path)
        ensure_parent(pgn_path, "PGN file")  # as the database's folder is: now, not after the first game
    done = store.done_keys()
    todo = [t for t in tasks if t.key not in done]
    players = {p.name: p for t in todo for p in (t.white, t.black)}
    if todo:
        warm(backend, workers)
    settings = check_players(list(players.values()), variant, factory) if check and todo else {}
    runs = {t.run for t in tasks}
    if pgn_path is not None:
        keys = {t.key for t in tasks}
        try:
            pgn_out.sync(pgn_path, [g for r in sorted(runs) for g in store.games(run=r) if g.key in keys], store.uid)
        except OSError as e:
            raise CommitError(f"cannot write the PGN {str(pgn_path)!r}: {e.strerror or e}") from None
    stats = RunStats(skipped=len(tasks) - len(todo))
    bar = tqdm(total=len(tasks), initial=stats.skipped, desc=desc, disable=not progress, dynamic_ncols=True,
               smoothing=0.05)
    t0 = time.perf_counter()

    def commit(g: GameRecord) -> None:
        try:
            added = store.add(g)
        except (StoreError, OSError) as e:
            raise CommitError(f"game {g.key} ({g.white} vs {g.black}) was not stored: {e}; the run stopped "
                              f"(run the same command again to resume)") from None
        if added:
            stats.played += 1
            if pgn_path is not None:
                try:
                    pgn_out.append(pgn_path, g, store.uid)
                except OSError as e:
                    raise CommitError(f"game {g.key} is stored in {str(store.path)!r} but could not be added to "
                                      f"the PGN {str(pgn_path)!r}: {e.strerror or e}; the run stopped (a rerun "
                                      f"adds it)") from None
            if on_game is not None:
                on_game(g)
        bar.update(1)
        if postfix is not None:
            bar.set_postfix_str(postfix(), refresh=False)
        else:
            bar.set_postfix_str(f"{g.white} {g.result} {g.black}", refresh=False)

    stopper = stop or (lambda: False)
    try:
        play_on(backend, todo, factory, variant, concurrency, workers, adjudication or Adjudication(), settings,
                commit, stopper, stats, address=ray_address, skip=skip)
    finally:
        bar.close()
    stats.seconds = time.perf_counter() - t0
    stats.stopped = stopper()
    return stats


__all__ = ["BACKENDS", "MATE_CP", "Adjudication", "CommitError", "EngineFactory", "EnginePool", "GameTask", "MatchError",
           "Player", "RegistryFactory", "RunStats", "Runner", "check_players", "limits_text", "match_id", "match_tasks",
           "parse_tc", "play"]
