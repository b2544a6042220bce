"""``searchbench selfplay`` and ``searchbench rl``: self-play games as training shards, and the
self-play learning loop (:mod:`experiments.selfplay.games`, :mod:`experiments.selfplay.loop`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import board
from board.variants import CRAZYHOUSE
from experiments.cli.main import count, plies_range, seed
from experiments.harness.store import file_id
from experiments.paths import DirLock, InputError, check_dir, read_json
from experiments.selfplay import games, loop, offline, state


def _cmd_selfplay(args: argparse.Namespace) -> int:
    min_p, max_p = args.random_plies
    cfg = games.SelfPlayConfig(engine=args.engine, out=args.out, variant=args.variant, games=args.games,
                                  nodes=args.nodes, concurrency=args.concurrency, workers=args.workers,
                                  backend=args.backend, ray_address=args.ray_address, seed=args.seed,
                                  min_random_plies=min_p, max_random_plies=max_p, max_plies=args.max_plies,
                                  shard_games=args.shard_games, explore=not args.no_explore,
                                  evals=args.evals or 0, full_fraction=args.full_fraction,
                                  fast_nodes=args.fast_nodes or 0)
    print(json.dumps(games.play(cfg, progress=not args.quiet)))
    return 0


def _cmd_rl(args: argparse.Namespace) -> int:
    cfg = loop.parse(args.config)
    if args.state_to:  # checked before the loop runs, not after it
        state.check_state_to(cfg, args.state_to)
    if args.state_from:
        check_dir(cfg.out, "loop folder")
        os.makedirs(cfg.out, exist_ok=True)
        with DirLock(cfg.out, "loop folder"):
            print(f"state: {state.restore(cfg, args.state_from)} files from {args.state_from}")
    summary = loop.run(cfg, progress=not args.quiet, until=args.until)
    if args.state_to:
        print(f"state: {state.export(cfg, args.state_to)} files to {args.state_to}")
    for arm in cfg.arms:
        gens = summary[arm.name]["gens"]
        decisions = ", ".join(f"gen {g}: " + ("taken (no gate)" if not r["gate"]["games"] else
                                              f"{'accepted' if r['gate']['accepted'] else 'rejected'} ({r['gate']['score']:.3f})")
                              for g, r in sorted(gens.items(), key=lambda kv: int(kv[0])) if "gate" in r)
        print(f"{arm.name}: best generation {summary[arm.name]['best']}; {decisions or 'no gate yet'}")
    print(f"generations: {os.path.join(cfg.out, 'generations.md')}")
    if "report" in summary:
        print(f"report: {summary['report']}")
    if summary.get("stopped"):
        print(f"rl: {summary['stopped']}", file=sys.stderr)
    return 0


def _cmd_value_probes(args: argparse.Namespace) -> int:
    from evaluators.neural import weights_path  # deferred: loads torch

    rec: Any = read_json(args.reference, "offline reference")
    ref = rec.get("value") if isinstance(rec, dict) else None
    if not isinstance(ref, dict) or not all(k in ref for k in ("variant", "fens", "value", "moves")) or not ref["fens"]:
        raise InputError(f"{args.reference} is no offline reference (a loop's {offline.REFERENCE})")
    for w in args.networks:
        if not os.path.isfile(weights_path(w)):
            raise InputError(f"{w}: no such network file")
    nodes = args.engine_nodes or int(rec.get("key", {}).get("engine_nodes", 50_000))
    check_dir(args.out, "probe folder")
    os.makedirs(args.out, exist_ok=True)
    best = offline.best_moves_in(ref, args.out, args.engine, nodes, not args.quiet)
    figs = [offline.probes_in(w, ref, best, nodes, os.path.join(
        args.out, f"probes-{file_id(weights_path(w)).replace(':', '-')}.json"), {"engine": args.engine}) for w in args.networks]
    first = figs[0]
    ci = offline.interval

    print(f"Value probes on {len(ref['fens'])} positions of {args.reference} ({ref['variant']}); Fairy-Stockfish at "
          f"{nodes:,} nodes; 95% intervals (rho: bootstrap over positions, {offline.BOOTSTRAP} resamples; changes "
          f"paired with {args.networks[0]})")
    print("")
    print("| network | value rho | change | child agreement | change |")
    print("|---|---|---|---|---|")
    for w, f in zip(args.networks, figs):
        s = offline.probe_summary(f, ref["value"], {"first": first} if f is not first else {})
        ch = (ci(s["value_rho_minus_first"], True), ci(s["child_agree_minus_first"], True)) if f is not first else ("", "")
        print(f"| {w} | {ci(s['value_rho'])} | {ch[0]} | {ci(s['child_agree'])} | {ch[1]} |")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("selfplay", help="self-play games of an MCTS-family engine into training shards with the "
                                        "search's policy targets (resumable)")
    p.add_argument("--engine", required=True, help="an MCTS-family engine, e.g. rise-mcts or rise-gumbel:weights=W")
    p.add_argument("--out", required=True, help="data directory (shards + pending.jsonl)")
    p.add_argument("--variant", choices=board.VARIANTS, default=CRAZYHOUSE.name)
    p.add_argument("--games", type=count(1), default=100, help="games of the run in all (a rerun plays the missing ones)")
    p.add_argument("--nodes", type=count(1), default=16, help="simulations (root visits) per move")
    p.add_argument("--evals", type=count(1), help="evaluator calls per move instead of --nodes (equal cost for "
                                                  "searches that reuse or transpose and those that do not)")
    p.add_argument("--full-fraction", type=float, default=1.0,
                   help="playout-cap randomisation (KataGo): the fraction of moves searched at --nodes with a "
                        "policy target; the rest at --fast-nodes, value target only")
    p.add_argument("--fast-nodes", type=count(1), help="the fast searches' nodes (with --full-fraction < 1)")
    p.add_argument("--concurrency", type=count(1, 4096), default=16, help="games at once per process (leaves pooled)")
    p.add_argument("--workers", type=count(1, 256), default=1, help="processes (or Ray actors)")
    p.add_argument("--backend", choices=("local", "ray"), default="local", help="where the workers run: processes here, or Ray actors")
    p.add_argument("--ray-address", default=None, help="a Ray cluster (default: a local one)")
    p.add_argument("--random-plies", type=plies_range, default=(0, 0),
                   help="random opening plies before self-play, N or MIN-MAX")
    p.add_argument("--max-plies", type=count(1, 100_000), default=300)
    p.add_argument("--shard-games", type=count(1), default=50, help="games per shard")
    p.add_argument("--no-explore", action="store_true",
                   help="no added exploration (Dirichlet noise and temperature for PUCT, Gumbel noise)")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_selfplay)

    r = sub.add_parser("rl", help="the self-play learning loop from a TOML config: generate, train, gate, "
                                  "repeat; then rate every generation and write the report (resumable)")
    r.add_argument("config")
    r.add_argument("--until", choices=("selfplay", "train", "gate"), default=None,
                   help="stop after this stage of the last generation (no rating)")
    r.add_argument("--state-from", metavar="DIR", help="first copy a loop state (--state-to's folder) into the "
                                                       "loop's folder, where it has no such file: resume on a new machine")
    r.add_argument("--state-to", metavar="DIR", help="after the run, copy the loop's small state (networks, records, "
                                                     "self-play shards, last optimizer) to DIR, to commit")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_cmd_rl)

    v = sub.add_parser("value-probes", help="what a search uses of each network's value, on a loop's offline reference "
                                            "positions: rank correlation with Fairy-Stockfish and how often the child "
                                            "the value prefers is its best move, with intervals (paired with the first)")
    v.add_argument("reference", help="a loop's offline-reference.json (OUT/ or a committed state)")
    v.add_argument("networks", nargs="+", help="network files (.pt) or shipped names; changes are paired with the first")
    v.add_argument("--engine", default="fairy-stockfish", help="the deep engine (default: fairy-stockfish)")
    v.add_argument("--engine-nodes", type=count(1), default=None,
                   help="its nodes a position (default: the reference's engine_nodes)")
    v.add_argument("--out", default="runs/value-probes", help="where the engine's moves and each network's probes are "
                                                              "kept (measured once; default runs/value-probes)")
    v.add_argument("--quiet", action="store_true")
    v.set_defaults(func=_cmd_value_probes)
