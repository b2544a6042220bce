"""``searchbench bench selfplay``: the self-play path against the raw network, per inference backend.

Self-play at the loop's settings (``searchbench selfplay`` itself: playout-cap randomisation, full
searches of ``nodes`` on ``full_fraction`` of the moves and ``fast_nodes`` otherwise, exploration,
``concurrency`` games in flight, split among ``workers`` processes: concurrency / workers pooled in each), once per backend (``inference=``
on the engine) and number of pooled games (``concurrencies``: the batch the network sees grows with
it), ``rounds`` times alternating so that a busy moment of the machine falls on every row; the best
round of each counts.  For each backend: games an hour, positions an hour, evaluator calls
(leaves) a second, the mean leaves a network call, and that rate as a share of the raw network's at
that batch (:meth:`evaluators.neural.PolicyValueEvaluator.network_throughput`, one thread, measured
in the same run) times the workers, each of which has a core of its own, and the share of the
machine's CPU time that was busy during the round (``/proc/stat``: a second batch in flight, the
network overlapped with the search, could only use the rest).  The ratios of games and of
positions an hour to the first row's are the speed-up the loop gets from the others (games vary in
length between backends, so both are given).

The games are real self-play games into a temporary folder (deleted after): their targets and
shards are written as the loop writes them, so everything the loop pays for is in the figure.

Beside the rates, where the time goes (:func:`profile_parts`): after the timed rounds, one more run
per backend in this process (a quarter of the games, at least 4, one worker) under cProfile, each
function's own time given to its part (:data:`PARTS`; a C function no part names, such as numpy's,
to its callers' parts), as shares of the profiled time.  cProfile slows the Python-level calls (the
runner, the encoding's and the softmax's Python lines) more than the network, so those shares lean
high; compare them between runs of one machine, as a regression's pointer.
"""
from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
from collections import defaultdict
from typing import Any, Callable, Sequence

from board.variants import CRAZYHOUSE
from engines import registry
from engines.base import EngineError
from engines.catalog import is_external
from engines.registry import join_spec
from experiments.harness.tomlconfig import ConfigError
from experiments.selfplay import games as sp_games

#: the loop's settings (experiments/configs/rl-crazyhouse.toml)
ENGINE = "rise-mcts"
NODES, FAST_NODES, FULL_FRACTION = 128, 16, 0.25
INFERENCES = ("onnxruntime", "onnxruntime-int8")
CONCURRENCIES = (32,)  # the loop's


#: the parts of a self-play process, by where a function lives or what it is called (the first that
#: matches): process start-up (imports, model export and session building), the network (ONNX
#: Runtime's run), the legal-move softmax, the input encoding, the searches (the compiled MCTS and its
#: board, their ask/tell wrapper), the evaluator's glue around them (batching, checks, the results'
#: lists), the runner (the harness and the self-play bookkeeping)
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("start-up", ("importlib", "_imp.", "marshal.", "builtins.exec", "builtins.compile", "__build_class__",
                  "inspect.py", "torch", "onnx/", "_create_inference_session", "quantiz")),
    ("network", ("onnxruntime",)),
    ("legal softmax", ("legal_softmax", "flatten_moves")),
    ("encoding", ("_encode", "encodings.py", "leafbatch", "planes")),
    ("search", ("'MCTS'", "'Position'", "search/", "board/", "engines/ours.py")),
    ("evaluator", ("evaluators/",)),
    ("runner", ("experiments/", "engines/")),
)


def cpu_times() -> tuple[int, int] | None:
    """(busy, all) CPU ticks of the machine since boot, from ``/proc/stat`` (None without it): busy is
    user, nice, system, irq and softirq; all adds idle, iowait and steal."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(ticks) < 8:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait + steal


def busy_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the machine's CPU time that was busy between two :func:`cpu_times` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def _part(key: tuple[str, int, str]) -> str | None:
    where = key[2] if key[0] == "~" else f"{key[0]}:{key[2]}"
    return next((part for part, needles in PARTS if any(n in where for n in needles)), None)


def profile_parts(fn: Callable[[], object]) -> dict[str, float]:
    """Shares of ``fn``'s profiled time by part (:data:`PARTS`; "other" for the rest), summing to 1.
    A function no part names and not of this checkout (a C function, numpy's Python layer) gives its
    own time to its callers' parts, in proportion to the time each call made, up the call graph."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    ours = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    memo: dict[Any, dict[str, float]] = {}

    def owners(key: Any, seen: frozenset[Any]) -> dict[str, float]:
        """The parts ``key``'s time belongs to, as fractions summing to 1."""
        if key in memo:
            return memo[key]
        part = _part(key)
        callers = stats[key][4] if key in stats else {}
        mine = key[0].startswith(ours) and "site-packages" not in key[0]  # (a .venv may sit in the checkout)
        if part is not None or mine or not callers or key in seen:
            out = {part or "other": 1.0}
        else:
            weights = {c: v[2] + v[3] for c, v in callers.items()}  # the caller's share of this function's time
            total = sum(weights.values())
            out = defaultdict(float)
            for c, w in weights.items():
                for p, f in owners(c, seen | {key}).items():
                    out[p] += f * (w / total if total > 0 else 1 / len(weights))
        memo[key] = dict(out)
        return memo[key]

    parts: dict[str, float] = defaultdict(float)
    for key, (_cc, _nc, tt, _ct, _callers) in stats.items():
        for p, f in owners(key, frozenset()).items():
            parts[p] += tt * f
    total = sum(parts.values())
    return {p: parts[p] / total for p in [*(n for n, _ in PARTS), "other"] if total > 0}


class BenchSelfPlayError(ConfigError):
    """Bad settings for ``bench selfplay`` (one line, exit code 2)."""


def run(engine: str = ENGINE, variant: str = CRAZYHOUSE.name, inferences: Sequence[str] = INFERENCES, games: int = 32,
        nodes: int = NODES, fast_nodes: int = FAST_NODES, full_fraction: float = FULL_FRACTION,
        concurrencies: Sequence[int] = CONCURRENCIES, workers: int = 2, rounds: int = 2, seconds: float = 0.5, seed: int = 1,
        progress: bool = False, profile: bool = True) -> dict[str, Any]:
    if not inferences:
        raise BenchSelfPlayError("bench selfplay: --inferences: name at least one backend")
    if not concurrencies or min(concurrencies) < 1:
        raise BenchSelfPlayError("bench selfplay: --concurrency: give one or more positive numbers")
    try:
        base = registry.resolve(engine)
    except (EngineError, ValueError) as e:
        raise BenchSelfPlayError(f"bench selfplay: {e}") from None

    entry = None if is_external(base) else registry.EVALUATORS.get(registry.ALIASES.get(base.evaluator, base.evaluator))
    if entry is None or not entry.loads_weights:
        raise BenchSelfPlayError(f"bench selfplay: {engine!r} runs no network ({base.evaluator}): it has no inference "
                                 "backends to compare; give a network engine (e.g. rise-mcts)")
    setups = [(mode, c) for mode in dict.fromkeys(inferences) for c in dict.fromkeys(concurrencies)]

    def play(mode: str, concurrency: int, n_games: int, n_workers: int, r: int) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="sb-bench-selfplay-") as out:
            cfg = sp_games.SelfPlayConfig(engine=join_spec(engine, {"inference": mode}), out=os.path.join(out, "sp"),
                                          variant=variant, games=n_games, nodes=nodes, concurrency=concurrency,
                                          workers=n_workers, seed=seed + r, full_fraction=full_fraction,
                                          fast_nodes=fast_nodes if full_fraction < 1.0 else 0)
            try:
                return sp_games.play(cfg, progress=progress)
            except sp_games.SelfPlayError as e:
                raise BenchSelfPlayError(f"bench selfplay: {e}") from None

    best: dict[tuple[str, int], dict[str, Any]] = {}
    for r in range(rounds):
        for mode, concurrency in setups:
            ticks = cpu_times()
            st = play(mode, concurrency, games, workers, r)
            busy = busy_share(ticks, cpu_times())
            secs = max(float(st["seconds"]), 1e-9)
            row = {"inference": mode, "concurrency": concurrency, "engine": st["engine"], "round": r, "games": st["games"],
                   "positions": st["positions"], "seconds": secs, "games_per_hour": 3600 * st["games"] / secs,
                   "positions_per_hour": 3600 * st["positions"] / secs, "eval_calls": st["eval_calls"],
                   "eval_leaves": st["eval_leaves"], "evals_per_s": st["eval_leaves"] / secs,
                   "leaves_per_call": st["eval_leaves"] / st["eval_calls"] if st["eval_calls"] else 0.0,
                   "busy": busy}
            if (mode, concurrency) not in best or row["games_per_hour"] > best[mode, concurrency]["games_per_hour"]:
                best[mode, concurrency] = row
    rows = [best[k] for k in setups]
    profiled = max(4, games // 4)
    for row in rows:
        row["profile"] = (profile_parts(lambda: play(row["inference"], row["concurrency"], profiled, 1, rounds))
                          if profile else None)
    for row in rows:
        resolved = registry.resolve(join_spec(engine, {"inference": row["inference"]}))
        try:
            ev = registry.EvaluatorPool().get(resolved, variant)
        except EngineError as e:
            raise BenchSelfPlayError(f"bench selfplay: {e}") from None
        batch = max(1, int(round(row["leaves_per_call"])))
        raw = ev.network_throughput(batch, threads=1, seconds=seconds) if hasattr(ev, "network_throughput") else None
        row.update(raw_batch=batch, running=getattr(ev, "inference", None),
                   raw_evals_per_s=raw, raw_all_workers=raw * workers if raw else None,
                   share=row["evals_per_s"] / (raw * workers) if raw else None,
                   vs_first=row["games_per_hour"] / rows[0]["games_per_hour"] if rows[0]["games_per_hour"] else None,
                   positions_vs_first=(row["positions_per_hour"] / rows[0]["positions_per_hour"]
                                       if rows[0]["positions_per_hour"] else None))
    return {"engine": engine, "variant": variant, "games": games, "nodes": nodes, "fast_nodes": fast_nodes,
            "full_fraction": full_fraction, "concurrencies": list(dict.fromkeys(concurrencies)), "workers": workers, "rounds": rounds,
            "cpus": os.cpu_count(), "profiled_games": profiled if profile else 0, "rows": rows}


def format_table(r: dict[str, Any]) -> str:
    cap = (f"{r['nodes']} nodes on {100 * r['full_fraction']:g}% of the moves, {r['fast_nodes']} otherwise"
           if r["full_fraction"] < 1.0 else f"{r['nodes']} nodes a move")
    lines = [f"self-play {r['engine']} ({r['variant']}), {cap}; {r['games']} games a round, "
             f"{r['workers']} worker(s) on {r['cpus']} CPUs; best of {r['rounds']} alternating rounds", "",
             f"{'inference':<20}{'pooled':>7}{'games/h':>9}{'positions/h':>13}{'evals/s':>9}{'leaves/call':>13}"
             f"{'raw evals/s x workers':>24}{'share':>7}{'busy':>6}{'ratio: games/h':>16}{'positions/h':>13}"]
    lines.append("-" * len(lines[-1]))
    for x in r["rows"]:
        raw = f"{x['raw_all_workers']:,.0f} (batch {x['raw_batch']})" if x["raw_all_workers"] else "-"
        share = f"{100 * x['share']:.0f}%" if x["share"] else "-"
        busy = f"{100 * x['busy']:.0f}%" if x.get("busy") is not None else "-"
        lines.append(f"{x['inference']:<20}{x['concurrency']:>7}{x['games_per_hour']:>9,.0f}"
                     f"{x['positions_per_hour']:>13,.0f}"
                     f"{x['evals_per_s']:>9,.0f}{x['leaves_per_call']:>13.1f}{raw:>24}{share:>7}{busy:>6}"
                     f"{x['vs_first']:>15.2f}x{x['positions_vs_first']:>12.2f}x")
        if x["running"] != x["inference"]:
            lines.append(f"{'':<20}the evaluator runs {x['running']}")
        if x.get("profile"):
            lines.append(f"{'':<20}profile: " + ", ".join(f"{p} {100 * v:.0f}%" for p, v in x["profile"].items()
                                                           if v >= 0.005))
    lines += ["", "pooled: games in flight, split among the workers (pooled / workers a process, as the loop's concurrency); share: self-play's evaluator calls a second over the raw network's at the "
                  "batch the pooled games formed (one thread) times the workers; busy: the machine's CPU time busy during the round "
                  "(/proc/stat: what a second batch in flight could still use is the rest); ratios: against the first row, same run"]
    if r.get("profiled_games"):
        lines.append(f"profile: the own time of one more run of {r['profiled_games']} games in one process under "
                     "cProfile, by part (it slows the Python-level parts more than the network)")
    return "\n".join(lines)
