"""``searchbench bench harness``: games per hour, pooled in-process play against one game at a time
through the UCI front end, side by side on the same games, with the raw network's ceiling.

All rows play the same tasks (the engine against itself, the first openings of the shipped suite
in colour-reversed pairs, the same node budget and a max-plies cap), with the same runner and the
same adjudication, so only the way moves are computed differs:

- *pooled*: ``concurrency`` games at once in each of ``workers`` processes; the leaves of all games
  of a process go to its one shared evaluator in one batched call per step, split into network
  calls of at most ``max_batch`` leaves (:class:`experiments.harness.match.Runner`), with ``threads`` torch
  threads per process.  By default (``auto``) these are chosen by :func:`tune` from the raw-network
  table measured at the start of the same run: the (threads, batch) point, or the (processes x 1
  thread, batch) point, with the most evaluations per second.
- *UCI, T thread(s)*: one game at a time, each side a ``searchbench uci --engine NAME`` subprocess
  driven through python-chess by :class:`engines.external.ExternalEngine` (how cutechess-style tools
  run engines), with ``setoption name Threads value T``.  **The baseline is T = 1**, the UCI front
  end's default (``Threads`` defaults to 1, like the engine's ``threads`` option); T = 2 is shown
  beside it (``--uci-threads 1,2``) because the machine has two cores and a UCI engine could use both.
  The UCI engine searches with its own MCTS batch (``batch_size``, 8 by default): that is the batch
  its network sees.
- *in-process, one game*: the same engine in this process, one game at a time, 1 thread, no
  protocol: the difference to the UCI row is what the protocol and the subprocesses cost.

The *network table* gives the raw network alone (no search, no encoding; evaluations per second,
best of a few short trials, two rounds) for each thread count and batch size, for N processes
of one thread each running at once, and the same network run eager at 1 thread (what the frozen
default gains).  The *ceiling* of pooling is the best point of the table over
the UCI side's point (its batch, its threads): when the search is network-bound, the pooled side
cannot beat the UCI side by more than that, however the games are scheduled.

``--rounds R`` plays every row R times, the rows alternating, and keeps each row's best round
(the others are listed): load elsewhere then hits every row alike.

Measured (RISE, 200 nodes, 8 games).  Unloaded, the lead measured the frozen shipped net at 4329
evaluations/s (1 thread, batch 8: the UCI side) and at best 9319 (2 threads, batch 32): a ceiling
of 2.15x, so the 3x goal is out of reach on two cores while the search is network-bound (batching
alone gains nothing at one thread: batch 32 runs at 0.85x-1.3x the rate of batch 8).  Pooling also
amortises the per-call work outside the network (encoding, priors, the runner: about 1 ms per call,
~22% of a single game's time at batch 8, ~15% pooled), which is why a pooled run can beat the
network ceiling slightly.  On the shared machine (load 4-7 from other jobs) runs gave 0.9x-2.0x
against UCI with 1 thread; there two torch threads collapse (OpenMP barriers wait for descheduled
threads: 60-540 evaluations/s at batch 8), which the tuning sees in its table and avoids.

Games end at different lengths on the sides (the UCI side's searches can differ in timing-based
details), so the table gives plies per second as well as games per hour; the ratio of plies per
second is the fair speed-up.  The machine may be shared: compare rows of one run, not across runs.
"""
from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from engines import catalog, registry
from engines.base import Engine, EngineError, EngineSpec
from engines.external import ExternalEngine
from engines.ours import OurEngine
from engines.registry import join_spec
from evaluators.base import DEFAULT_INFERENCE, INFERENCE_MODES
from experiments.harness.match import (
    Adjudication, MatchError, Player, RegistryFactory, Runner, RunStats, match_tasks,
)
from experiments.harness.backends import play_processes
from experiments.harness.openings import default_suite, load_suite
from experiments.harness.runner import check_players
from experiments.harness.store import GameRecord

#: batch sizes of the network table (the UCI side's batch is added)
TABLE_BATCHES = (8, 16, 32, 64, 128)


class BenchError(MatchError):
    """Bad bench settings (one-line message)."""


class UciFactory:
    """Engines that are ``searchbench uci`` subprocesses, with ``Threads`` set to ``threads``."""

    def __init__(self, engine: str, variant: str, threads: int = 1) -> None:
        self.command = [sys.executable, "-m", "experiments.cli", "uci", "--engine", engine, "--variant", variant]
        self.engine = engine
        self.threads = threads

    def __call__(self, player: Player, variant: str) -> Engine:
        spec = EngineSpec(f"uci:{self.engine}", "searchbench", "uci", {"threads": str(self.threads)})
        return ExternalEngine(spec, variant, command=self.command)


# --------------------------------------------------------------------------- the raw network

def _network_evaluator(engine: str, threads: int = 1, inference: str | None = None) -> Any:
    """The engine's evaluator (in ``inference`` mode, None: the engine's own) if it has a network
    to measure (else None)."""
    spec = registry.resolve(registry.join_spec(engine, {"inference": inference}) if inference else engine)
    if catalog.is_external(spec):
        raise BenchError(f"bench harness needs one of our engines, not the external {spec.name!r}")
    ev = registry.EvaluatorPool(threads).get(spec, None)
    return ev if hasattr(ev, "network_throughput") else None


def engine_inference(engine: str) -> str:
    """The inference mode the engine's network runs in (its ``inference`` option or the default)."""
    return registry.evaluator_settings(registry.resolve(engine))[2] or DEFAULT_INFERENCE


def note(text: str) -> None:
    """A progress line on stderr (the table goes to stdout)."""
    print(f"[bench harness {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def search_batch(engine: str) -> int:
    """Leaves per ask of the engine's search (MCTS ``batch_size``; 1 for searches without one)."""
    values = registry.effective_values(registry.resolve(engine))
    text = values.get("batch_size")
    return int(text) if text is not None and text.isdigit() else 1


def _proc_worker(engine: str, batches: Sequence[int], seconds: float, rounds: int, barrier: Any, out: Any) -> None:
    try:
        ev = _network_evaluator(engine, threads=1)
        rates: dict[int, float] = {}
        for _ in range(rounds):
            for b in batches:
                barrier.wait(timeout=120)  # all processes measure the same batch at the same time
                rates[b] = max(rates.get(b, 0.0), ev.network_throughput(b, threads=1, seconds=seconds))
        out.put(("ok", rates))
    except Exception as e:  # noqa: BLE001 - reported as one line by the parent
        barrier.abort()
        out.put(("error", f"{type(e).__name__}: {e}"))


def process_rates(engine: str, procs: int, batches: Sequence[int], seconds: float = 0.25,
                  rounds: int = 2) -> dict[int, float]:
    """Evaluations per second of ``procs`` processes of one thread each measuring at once, summed,
    by batch size."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    out = ctx.Queue()
    ps = [ctx.Process(target=_proc_worker, args=(engine, list(batches), seconds, rounds, barrier, out), daemon=True)
          for _ in range(procs)]
    for p in ps:
        p.start()
    total: dict[int, float] = {b: 0.0 for b in batches}
    try:
        for _ in ps:
            kind, payload = out.get(timeout=300)
            if kind == "error":
                raise BenchError(f"network measurement in a process failed: {payload}")
            for b, r in payload.items():
                total[b] += r
    finally:
        for p in ps:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
    return total


def network_table(engine: str, threads: Sequence[int], batches: Sequence[int], procs: int = 0,
                  seconds: float = 0.25, rounds: int = 2, eager_threads: Sequence[int] = ()) -> list[dict[str, Any]]:
    """Rows ``{"kind": "threads"|"processes"|"eager", "n": threads or processes, "batch",
    "evals_per_s"}``: the raw network of ``engine``'s evaluator in its own inference mode ([] if it
    has no network), and for comparison eager at ``eager_threads`` (kind ``eager``; only when the
    engine's own mode is not eager).  Every cell is the best of ``rounds`` sweeps (each the best of
    3 trials of ``seconds``), the sweeps interleaved so a burst of load elsewhere does not spoil
    one setting only."""
    ev = _network_evaluator(engine)
    if ev is None:
        return []
    evs = [("threads", ev, list(threads))]
    if eager_threads and engine_inference(engine) != "eager":
        evs.append(("eager", _network_evaluator(engine, inference="eager"), list(eager_threads)))
    best: dict[tuple[str, int, int], float] = {}
    for _ in range(rounds):
        for kind, e, ts in evs:
            for t in ts:
                for b in batches:
                    r = e.network_throughput(b, threads=t, seconds=seconds)
                    best[(kind, t, b)] = max(best.get((kind, t, b), 0.0), r)
    rows = [{"kind": k, "n": t, "batch": b, "evals_per_s": r} for (k, t, b), r in best.items()]
    if procs > 1:
        for b, r in process_rates(engine, procs, batches, seconds, rounds).items():
            rows.append({"kind": "processes", "n": procs, "batch": b, "evals_per_s": r})
    return rows


def rate_at(table: Sequence[dict[str, Any]], kind: str, n: int, batch: int) -> float | None:
    for row in table:
        if row["kind"] == kind and row["n"] == n and row["batch"] == batch:
            return float(row["evals_per_s"])
    return None


@dataclass(frozen=True)
class PoolPlan:
    """How the pooled side runs: ``workers`` processes of ``threads`` torch threads, ``concurrency``
    games each, network calls of at most ``max_batch`` leaves; ``why`` says how it was chosen."""

    workers: int
    threads: int
    max_batch: int
    concurrency: int
    why: str


def tune(table: Sequence[dict[str, Any]], search_batch_size: int, games: int, threads: int | None = None,
         max_batch: int | None = None, workers: int | None = None, concurrency: int | None = None) -> PoolPlan:
    """The pooled side's settings: each one given is kept; the others come from the measured
    ``table``'s fastest row among those that agree with the given ones.  Games per process: enough
    for two full network batches per step (``2 * ceil(max_batch / search_batch_size)``), at most
    the games of the run."""
    rows = [r for r in table if r["kind"] in ("threads", "processes")]
    if workers is not None and workers > 1:
        rows = [r for r in rows if r["kind"] == "processes" and r["n"] == workers and (threads in (None, 1))]
    elif workers == 1:
        rows = [r for r in rows if r["kind"] == "threads"]
    if threads is not None:
        rows = [r for r in rows if (r["kind"] == "threads" and r["n"] == threads) or
                (r["kind"] == "processes" and threads == 1)]
    if max_batch is not None:
        rows = [r for r in rows if r["batch"] == max_batch]
    if rows:
        best = max(rows, key=lambda r: r["evals_per_s"])
        w = best["n"] if best["kind"] == "processes" else 1
        t = 1 if best["kind"] == "processes" else best["n"]
        b = int(best["batch"])
        why = f"measured best: {best['evals_per_s']:.0f} evals/s"
    else:  # no network (a classical evaluator) or nothing measured at the given settings
        w, t = workers or 1, threads or 1
        b = max_batch or max(32, search_batch_size)
        why = "no network measurement for these settings"
    w = workers or w
    t = threads or t
    b = max_batch or b
    per = concurrency if concurrency is not None else 2 * math.ceil(b / max(1, search_batch_size))
    per = max(1, min(per, math.ceil(games / w)))
    return PoolPlan(w, t, b, per, why)


# --------------------------------------------------------------------------- games

def _measure(factory: Any, tasks: list[Any], variant: str, concurrency: int, max_plies: int,
             workers: int = 1) -> dict[str, Any]:
    games: list[GameRecord] = []
    adj = Adjudication(max_plies=max_plies)
    t0 = time.perf_counter()
    if workers > 1:
        stats = RunStats()
        play_processes(tasks, factory, variant, concurrency * workers, workers, adj, {}, games.append,
                        lambda: False, stats)
        calls, leaves = stats.eval_calls, stats.eval_leaves
    else:
        runner = Runner(factory, variant, concurrency, adj, on_game=games.append)
        runner.run(tasks)
        calls, leaves = runner.eval_calls, runner.eval_leaves
    dt = time.perf_counter() - t0
    plies = sum(len(g.moves) for g in games)
    evals = sum(s.evals or 0 for g in games for s in g.move_stats)
    return {"games": len(games), "plies": plies, "seconds": dt, "games_per_hour": 3600 * len(games) / dt,
            "plies_per_second": plies / dt, "eval_calls": calls, "eval_leaves": leaves,
            "evals_per_second": evals / dt if evals else None,
            "forfeits": sum(g.reason.startswith("forfeit") for g in games)}


def _parse_list(text: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BenchError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise BenchError(f"{what} must be positive integers, got {text!r}")
    return out


def _auto(text: str | int | None, what: str) -> int | None:
    if text is None or text == "auto":
        return None
    try:
        v = int(text)
    except ValueError:
        raise BenchError(f"{what} must be a positive integer or 'auto', got {text!r}") from None
    if v < 1:
        raise BenchError(f"{what} must be a positive integer or 'auto', got {text!r}")
    return v


def check_inference_mode(mode: str) -> None:
    if mode not in INFERENCE_MODES:
        raise BenchError(f"unknown inference mode {mode!r}; known: {', '.join(INFERENCE_MODES)}")


def run(engine: str, variant: str, games: int, nodes: int, concurrency: int | str | None = None, seed: int = 1,
        max_plies: int = 200, workers: int | str | None = None, pool_threads: int | str | None = None,
        pool_batch: int | str | None = None, uci_threads: str = "1,2", single: bool = True,
        table: bool = True, table_seconds: float = 0.25, rounds: int = 1, inferences: str = "") -> dict[str, Any]:
    """Measure the network table, tune the pooled side, then play the rows ``rounds`` times,
    alternating (see the module doc).  ``inferences`` (e.g. ``onnxruntime,onnxruntime-int8``) adds a
    pooled row per inference mode, the engine's network run in it, the same games otherwise."""
    uci_list = _parse_list(uci_threads, "--uci-threads") if uci_threads else []
    conc, wk = _auto(concurrency, "--concurrency"), _auto(workers, "--workers")
    pt, pb = _auto(pool_threads, "--pool-threads"), _auto(pool_batch, "--pool-batch")
    if games < 1:
        raise BenchError(f"games must be at least 1, got {games}")
    if rounds < 1:
        raise BenchError(f"rounds must be at least 1, got {rounds}")
    spec = registry.resolve(engine)
    if catalog.is_external(spec):
        raise BenchError(f"bench harness needs one of our engines, not the external {spec.name!r}")

    try:  # an engine that cannot play the variant is refused before anything is measured
        check_players([Player("A", engine, nodes=nodes)], variant, RegistryFactory(1, None))
    except EngineError as err:
        raise BenchError(str(err)) from None
    sb = search_batch(engine)
    cores = os.cpu_count() or 1
    thread_list = sorted({1, cores, *uci_list, *([pt] if pt else [])})
    batches = sorted({sb, *TABLE_BATCHES, *([pb] if pb else [])})
    procs = wk if wk and wk > 1 else (cores if cores > 1 and (pt in (None, 1)) else 0)
    if table:
        note(f"measuring the raw network ({engine_inference(engine)}; threads {thread_list}, batches {batches}"
             + (f", {procs} processes" if procs > 1 else "") + ")")
    net_rows = network_table(engine, thread_list, batches, procs, table_seconds, eager_threads=[1]) if table else []
    plan = tune(net_rows, sb, games, pt, pb, wk, conc)
    note(f"pooled side: {plan.workers} process(es) x {plan.threads} thread(s), {plan.concurrency} games each, "
         f"batch <= {plan.max_batch} ({plan.why})")

    suite = load_suite(default_suite(variant), variant)
    a, b = Player("A", engine, nodes=nodes), Player("B", engine, nodes=nodes)
    tasks = match_tasks("bench", variant, a, b, suite, games, seed)
    plans: list[tuple[str, str, Any, int, int]] = [
        ("pooled", f"pooled {plan.workers}x{plan.concurrency} games, {plan.threads} thr, batch<={plan.max_batch}",
         RegistryFactory(plan.threads, plan.max_batch), plan.concurrency, plan.workers)]
    for t in uci_list:
        plans.append((f"uci{t}", f"UCI, one game, {t} thread{'s' if t > 1 else ''}", UciFactory(engine, variant, t),
                      1, 1))
    if single:
        plans.append(("single", "in-process, one game, 1 thr", RegistryFactory(1, None), 1, 1))
    mode_tasks: dict[str, list[Any]] = {}
    for mode in [m for m in inferences.split(",") if m]:
        check_inference_mode(mode)
        e = registry.join_spec(engine, {"inference": mode})
        mode_tasks[f"pooled-{mode}"] = match_tasks("bench", variant, Player("A", e, nodes=nodes),
                                                   Player("B", e, nodes=nodes), suite, games, seed)
        plans.append((f"pooled-{mode}", f"pooled, inference={mode}", RegistryFactory(plan.threads, plan.max_batch),
                      plan.concurrency, plan.workers))
    # rounds alternate the rows, so a change of load elsewhere hits every row alike; each row
    # reports its best round (load elsewhere only ever slows a round down) and lists all rounds
    best: dict[str, dict[str, Any]] = {}
    runs: dict[str, list[float]] = {}
    for k in range(rounds):
        for key, label, factory, conc_, workers_ in plans:
            note(f"round {k + 1}/{rounds}: {label}: {games} games")
            m = _measure(factory, mode_tasks.get(key, tasks), variant, conc_, max_plies, workers_)
            runs.setdefault(key, []).append(m["plies_per_second"])
            if key not in best or m["plies_per_second"] > best[key]["plies_per_second"]:
                best[key] = {"key": key, "label": label, **m}
    rows = [{**best[key], "rounds": runs[key]} for key, *_ in plans]
    lost = [r for r in rows if r["forfeits"] >= r.get("games", 0) > 0]
    if lost:  # nothing was measured: no rate, no ratio
        raise BenchError(f"every game of a row ({lost[0]['games']}) was forfeited: nothing measured")
    pooled = rows[0]

    best_rate = (rate_at(net_rows, "processes", plan.workers, plan.max_batch) if plan.workers > 1
                 else rate_at(net_rows, "threads", plan.threads, plan.max_batch))
    out: dict[str, Any] = {
        "engine": engine, "variant": variant, "nodes": nodes, "games": games, "search_batch": sb,
        "inference": engine_inference(engine),
        "plan": plan.__dict__, "network": net_rows, "rows": rows,
        "pooled_network_rate": best_rate, "speedups": {}, "ceilings": {},
    }
    base_plies = pooled["plies_per_second"]
    for r in rows[1:]:
        if r["key"].startswith("pooled-"):
            continue
        out["speedups"][r["key"]] = {
            "plies": base_plies / max(r["plies_per_second"], 1e-9),
            "games": pooled["games_per_hour"] / max(r["games_per_hour"], 1e-9)}
    for t in uci_list:
        uci_rate = rate_at(net_rows, "threads", t, sb)
        if best_rate and uci_rate:
            out["ceilings"][f"uci{t}"] = {"uci_network_rate": uci_rate, "ceiling": best_rate / uci_rate}
    return out


@contextlib.contextmanager
def _timed(acc: dict[str, float]) -> Iterator[dict[str, float]]:
    """Add the seconds spent in the network (ONNX Runtime's ``run``), in encoding leaves
    (``PolicyValueEvaluator._encode``), in the whole evaluator call and in the searches' ask and tell to
    ``acc`` while the block runs (bench only: the methods are wrapped for its duration)."""
    from evaluators.neural import PolicyValueEvaluator  # deferred: loads torch
    from evaluators.onnx_runtime import OrtForward  # deferred: loads torch

    saved: list[tuple[type, str, Any]] = []
    targets: tuple[tuple[type, str, str], ...] = ((OrtForward, "run", "network"), (PolicyValueEvaluator, "_encode", "encode"),
                                                  (PolicyValueEvaluator, "evaluate", "evaluate"),
                                                  (OurEngine, "ask", "search"), (OurEngine, "tell", "search"))
    for cls, name, key in targets:
        orig = cls.__dict__[name]

        def wrapped(*a: Any, _orig: Any = orig, _key: str = key, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return _orig(*a, **k)
            finally:
                acc[_key] = acc.get(_key, 0.0) + time.perf_counter() - t

        setattr(cls, name, wrapped)
        saved.append((cls, name, orig))
    try:
        yield acc
    finally:
        for cls, name, orig in saved:
            setattr(cls, name, orig)


def run_device(engine: str, variant: str, games: int, nodes: int, device: str, concurrency: int = 64,
               seed: int = 1, max_plies: int = 200, seconds: float = 1.0,
               timers: dict[str, float] | None = None) -> dict[str, Any]:
    """``bench harness --device D``: pooled play with the network on device D (``concurrency`` games
    in one process, their leaves in one batch per step), and the raw network on D at the batch the
    pooled run actually formed (its mean leaves per call), measured in the same run: the pooled
    evaluations per second as a share of the raw network's (goal on a GPU: >= 70%).  ``timers``: see
    :func:`_timed` (the games only, not the raw measurement)."""
    spec_text = join_spec(engine, {"device": device})
    spec = registry.resolve(spec_text)
    if catalog.is_external(spec):
        raise BenchError(f"bench harness needs one of our engines, not the external {spec.name!r}")
    suite = load_suite(default_suite(variant), variant)
    a, b = Player("A", spec_text, nodes=nodes), Player("B", spec_text, nodes=nodes)
    tasks = match_tasks("bench", variant, a, b, suite, games, seed)
    factory = RegistryFactory()
    try:
        with _timed(timers) if timers is not None else contextlib.nullcontext():
            m = _measure(factory, tasks, variant, concurrency, max_plies)
    except EngineError as e:
        raise BenchError(str(e)) from None
    per_call = m["eval_leaves"] / m["eval_calls"] if m["eval_calls"] else 0.0
    pooled = m["eval_leaves"] / m["seconds"] if m["seconds"] > 0 else 0.0
    ev = registry.EvaluatorPool().get(spec, variant)
    batch = max(1, int(round(per_call)))
    raw = ev.network_throughput(batch, seconds=seconds) if hasattr(ev, "network_throughput") else None
    return {"engine": spec_text, "variant": variant, "device": str(getattr(ev, "device", device)), "games": games,
            "nodes": nodes, "concurrency": concurrency, "pooled": m, "leaves_per_call": per_call,
            "pooled_evals_per_s": pooled, "raw_batch": batch, "raw_evals_per_s": raw,
            "inference": getattr(ev, "inference", None),
            "half": getattr(ev, "half", None), "half_agreement": getattr(ev, "half_agreement", None),
            "share": pooled / raw if raw else None}


def format_device(r: dict[str, Any]) -> str:
    share = f"{100 * r['share']:.0f}%" if r["share"] else "-"
    half = "" if r["half"] is None else f", half precision {'on' if r['half'] else 'off'}"
    if r["half_agreement"] is not None:
        half += f" (bfloat16 keeps the top move on {100 * r['half_agreement']:.1f}% of sample positions)"
    m = r["pooled"]
    return "\n".join([
        f"harness bench on {r['device']}: {r['engine']} vs itself, {r['variant']}, {r['nodes']} nodes/move, "
        f"{r['games']} games, {r['concurrency']} at once{half}",
        f"pooled: {m['games']} games, {m['plies']} plies in {m['seconds']:.1f} s, {r['pooled_evals_per_s']:.0f} "
        f"network evaluations/s, {r['leaves_per_call']:.1f} leaves per call",
        f"raw network at batch {r['raw_batch']}: {r['raw_evals_per_s']:.0f} evaluations/s" if r["raw_evals_per_s"]
        else "raw network: -",
        f"pooled / raw: {share} (goal on a GPU: >= 70%)"])


def format_table(r: dict[str, Any]) -> str:
    lines = [f"harness bench: {r['engine']} vs itself, {r['variant']}, {r['nodes']} nodes/move, {r['games']} games, "
             f"search batch {r['search_batch']}"]
    net = r["network"]
    if net:
        batches = sorted({row["batch"] for row in net})
        order = {"threads": 0, "processes": 1, "eager": 2}
        settings = sorted({(row["kind"], row["n"]) for row in net}, key=lambda k: (order[k[0]], k[1]))
        lines.append(f"raw network ({r['inference']}), evaluations/s (no search, no encoding; best of trials):")
        lines.append(f"  {'setting':<22}" + "".join(f"{'b' + str(b):>8}" for b in batches))
        for kind, n in settings:
            label = {"threads": f"{n} thread{'s' if n > 1 else ''}", "eager": f"{n} thread{'s' if n > 1 else ''}, eager",
                     "processes": f"{n} processes x 1 thread"}[kind]
            cells = [rate_at(net, kind, n, b) for b in batches]
            lines.append(f"  {label:<22}" + "".join(f"{c:>8.0f}" if c is not None else f"{'-':>8}" for c in cells))
    p = r["plan"]
    lines.append(f"pooled side: {p['workers']} process(es) x {p['threads']} thread(s), {p['concurrency']} games "
                 f"each, network calls of <= {p['max_batch']} leaves ({p['why']})")
    lines.append(f"{'mode':<44} {'games/h':>8} {'plies/s':>8} {'plies':>6} {'s':>7} {'evals/s':>8} "
                 f"{'leaves/call':>11} {'forfeits':>8}")
    for row in r["rows"]:
        per_call = f"{row['eval_leaves'] / row['eval_calls']:.1f}" if row["eval_calls"] else "-"
        eps = f"{row['evals_per_second']:.0f}" if row["evals_per_second"] else "-"
        lines.append(f"{row['label']:<44} {row['games_per_hour']:>8.0f} {row['plies_per_second']:>8.2f} "
                     f"{row['plies']:>6} {row['seconds']:>7.1f} {eps:>8} {per_call:>11} {row['forfeits']:>8}"
                     + (f"  rounds {' '.join(f'{x:.2f}' for x in row['rounds'])}" if len(row["rounds"]) > 1 else ""))
    for key, s in r["speedups"].items():
        label = next(row["label"] for row in r["rows"] if row["key"] == key)
        c = r["ceilings"].get(key)
        ceiling = (f"; network ceiling {c['ceiling']:.2f}x ({r['pooled_network_rate']:.0f} / "
                   f"{c['uci_network_rate']:.0f} evals/s)" if c else "")
        goal = " (goal >= 3x)" if key == "uci1" else ""
        lines.append(f"pooled vs {label}: {s['plies']:.2f}x plies/s, {s['games']:.2f}x games/h{goal}{ceiling}")
    modes = [row for row in r["rows"] if row["key"].startswith("pooled-")]
    for row in modes[1:]:
        lines.append(f"{row['label']} vs {modes[0]['label']}: "
                     f"{row['plies_per_second'] / max(modes[0]['plies_per_second'], 1e-9):.2f}x plies/s, "
                     f"{(row['evals_per_second'] or 0) / max(modes[0]['evals_per_second'] or 0, 1e-9):.2f}x evals/s")
    return "\n".join(lines)
