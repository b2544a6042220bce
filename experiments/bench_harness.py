"""``searchbench bench harness``: games per hour, pooled in-process play against one game at a time
through the UCI front end, side by side on the same games.

Both sides play the same tasks (the engine against itself, the first openings of the shipped suite
in colour-reversed pairs, the same node budget and a max-plies cap), with the same runner and the
same adjudication, so only the way moves are computed differs:

- *pooled*: ``concurrency`` games at once in this process (or split over ``workers`` processes);
  the leaves of all games of a process go to its one shared evaluator in one batched call per
  step (:class:`experiments.match.Runner`).
- *uci*: one game at a time, each side a ``searchbench uci --engine NAME`` subprocess driven through
  python-chess by :class:`engines.external.ExternalEngine` (how cutechess-style tools run engines).

Games end at different lengths on the two sides (searches are deterministic, but the UCI side may
differ in timing-based details), so the table gives plies per second as well as games per hour; the
ratio of plies per second is the fair speed-up.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from engines.base import Engine, EngineSpec
from experiments.match import (
    Adjudication, Player, RegistryFactory, Runner, RunStats, _play_processes, match_tasks,
)
from experiments.openings import default_suite, load_suite
from experiments.store import GameRecord


class UciFactory:
    """Engines that are ``searchbench uci`` subprocesses."""

    def __init__(self, engine: str, variant: str) -> None:
        self.command = [sys.executable, "-m", "experiments.cli", "uci", "--engine", engine, "--variant", variant]
        self.engine = engine

    def __call__(self, player: Player, variant: str) -> Engine:
        from engines.external import ExternalEngine

        spec = EngineSpec(f"uci:{self.engine}", "searchbench", "uci", {})
        return ExternalEngine(spec, variant, command=self.command)


def _measure(factory: Any, tasks: list[Any], variant: str, concurrency: int, max_plies: int,
             workers: int = 1) -> dict[str, Any]:
    games: list[GameRecord] = []
    adj = Adjudication(max_plies=max_plies)
    t0 = time.perf_counter()
    if workers > 1:
        stats = RunStats()
        _play_processes(tasks, factory, variant, concurrency, workers, adj, {}, games.append, lambda: False, stats)
        calls, leaves = stats.eval_calls, stats.eval_leaves
    else:
        runner = Runner(factory, variant, concurrency, adj, on_game=games.append)
        runner.run(tasks)
        calls, leaves = runner.eval_calls, runner.eval_leaves
    dt = time.perf_counter() - t0
    plies = sum(len(g.moves) for g in games)
    return {"games": len(games), "plies": plies, "seconds": dt, "games_per_hour": 3600 * len(games) / dt,
            "plies_per_second": plies / dt, "eval_calls": calls, "eval_leaves": leaves,
            "forfeits": sum(g.reason.startswith("forfeit") for g in games)}


def run(engine: str, variant: str, games: int, nodes: int, concurrency: int, seed: int = 1,
        max_plies: int = 200, workers: int = 1) -> dict[str, Any]:
    suite = load_suite(default_suite(variant), variant)
    a, b = Player("A", engine, nodes=nodes), Player("B", engine, nodes=nodes)
    tasks = match_tasks("bench", variant, a, b, suite, games, seed)
    pooled = _measure(RegistryFactory(), tasks, variant, concurrency, max_plies, workers)
    uci = _measure(UciFactory(engine, variant), tasks, variant, 1, max_plies)
    return {"engine": engine, "variant": variant, "nodes": nodes, "concurrency": concurrency, "workers": workers,
            "pooled": pooled,
            "uci": uci, "speedup_games": pooled["games_per_hour"] / max(uci["games_per_hour"], 1e-9),
            "speedup_plies": pooled["plies_per_second"] / max(uci["plies_per_second"], 1e-9)}


def format_table(r: dict[str, Any]) -> str:
    lines = [f"harness bench: {r['engine']} vs itself, {r['variant']}, {r['nodes']} nodes/move, "
             f"{r['pooled']['games']} games",
             f"{'mode':<28} {'games/h':>9} {'plies/s':>9} {'plies':>7} {'s':>8} {'evals/call':>10} {'forfeits':>8}"]
    pooled = f"pooled x{r['concurrency']}" + (f", {r['workers']} processes" if r["workers"] > 1 else "")
    for key, label in (("pooled", pooled), ("uci", "UCI, one game at a time")):
        m = r[key]
        per_call = f"{m['eval_leaves'] / m['eval_calls']:.1f}" if m["eval_calls"] else "-"
        lines.append(f"{label:<28} {m['games_per_hour']:>9.0f} {m['plies_per_second']:>9.2f} {m['plies']:>7} "
                     f"{m['seconds']:>8.1f} {per_call:>10} {m['forfeits']:>8}")
    lines.append(f"speed-up: {r['speedup_plies']:.2f}x plies/s, {r['speedup_games']:.2f}x games/h (goal >= 3x)")
    return "\n".join(lines)
