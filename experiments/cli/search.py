"""``searchbench bench search``: MCTS and alpha-beta against their peers (see experiments.bench.search)."""
from __future__ import annotations

import argparse
import json

import board
from board.variants import CRAZYHOUSE
from evaluators.base import BACKENDS
from experiments.bench import BATCHES, GRAPHS, NETWORKS, search as bench_search, selfplay as bench_selfplay
from experiments.cli.main import MAX_BENCH_BATCH, count, positive_float


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def _cmd_bench_search(args: argparse.Namespace) -> int:
    variants = board.VARIANTS if args.variant == "both" else (args.variant,)
    r = bench_search.run(variants, sims=args.sims, ab_nodes=args.ab_nodes, pc_depth=args.pc_depth,
                         nn_sims=args.nn_sims)
    print(json.dumps(r) if args.json else bench_search.format_table(r))
    return 0


def _cmd_bench_net(args: argparse.Namespace) -> int:
    from experiments.bench import net as bench_net  # deferred: loads torch

    nets = [n for n in NETWORKS if args.network in ("all", n[0] + "_" + n[1])]
    graphs = [g for g in GRAPHS if args.network in ("all", g, g.split("/")[0])]
    r = bench_net.run(nets, batches=args.batches, seconds=args.seconds, graphs=graphs)
    if not args.no_pooled:
        r["pooled"] = bench_net.pooled(r["rows"], seconds=args.seconds)
    print(json.dumps(r) if args.json else bench_net.format_table(r))
    return 0


def _cmd_bench_int8_calibration(args: argparse.Namespace) -> int:
    from experiments.bench import int8_calibration  # deferred: loads torch

    family, variant = args.network.split("_")
    r = int8_calibration.run(family, variant, positions=args.positions, seconds=args.seconds)
    print(json.dumps(r) if args.json else int8_calibration.format_table(r))
    return 0


def _cmd_bench_selfplay(args: argparse.Namespace) -> int:
    r = bench_selfplay.run(args.engine, args.variant, args.inferences, games=args.games, nodes=args.nodes,
                           fast_nodes=args.fast_nodes, full_fraction=args.full_fraction, concurrencies=args.concurrency,
                           workers=args.workers, rounds=args.rounds, seconds=args.seconds, progress=not args.json,
                           profile=not args.no_profile)
    print(json.dumps(r) if args.json else bench_selfplay.format_table(r))
    return 0


def register_bench(bench_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    n = bench_sub.add_parser("net", help="raw network evaluations/s per inference backend (ONNX Runtime, "
                                         "TorchScript, eager, int8), one thread, with the share of the core's SGEMM peak")
    n.add_argument("--network", choices=("all",) + tuple(f"{f}_{v}" for f, v in NETWORKS)
                   + tuple(dict.fromkeys(g.split("/")[0] for g in GRAPHS)), default="all",
                   help="a shipped network, or all of them")
    n.add_argument("--batches", type=count(1, MAX_BENCH_BATCH), nargs="+", default=list(BATCHES),
                   help=f"batch sizes (at most {MAX_BENCH_BATCH})")
    n.add_argument("--seconds", type=positive_float, default=0.3, help="length of each of the 3 trials per figure")
    n.add_argument("--no-pooled", action="store_true", help="leave out the pooled NN-MCTS share (RISE)")
    n.add_argument("--json", action="store_true", help="print one JSON object")
    n.set_defaults(func=_cmd_bench_net)
    c = bench_sub.add_parser("int8-calibration", help="int8 models of other calibrations against float32: top-move "
                                                      "agreement, value difference, speed (one thread)")
    c.add_argument("--network", choices=tuple(f"{f}_{v}" for f, v in NETWORKS), default="rise_crazyhouse",
                   help="the shipped policy-value network to quantise")
    c.add_argument("--positions", type=count(16, 100_000), default=2000, help="sample positions compared")
    c.add_argument("--seconds", type=positive_float, default=0.3, help="length of each of the 3 speed trials")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=_cmd_bench_int8_calibration)

    sp = bench_sub.add_parser("selfplay", help="self-play games/hour at the loop's settings per inference backend, "
                                               "and its evaluator calls as a share of the raw network's rate")
    sp.add_argument("--engine", default=bench_selfplay.ENGINE, help="an MCTS-family engine (default: %(default)s)")
    sp.add_argument("--variant", choices=tuple(board.VARIANTS), default=CRAZYHOUSE.name)
    sp.add_argument("--inferences", nargs="+", choices=BACKENDS, default=list(bench_selfplay.INFERENCES),
                    help="backends compared, the first is the reference of the ratio (default: %(default)s)")
    sp.add_argument("--games", type=count(1, 10_000), default=32, help="games a round and backend (default: %(default)s)")
    sp.add_argument("--nodes", type=count(1, 100_000), default=bench_selfplay.NODES, help="full search (default: %(default)s)")
    sp.add_argument("--fast-nodes", type=count(1, 100_000), default=bench_selfplay.FAST_NODES, help="fast search (default: %(default)s)")
    sp.add_argument("--full-fraction", type=positive_float, default=bench_selfplay.FULL_FRACTION,
                    help="share of full searches, 1 for no playout-cap randomisation (default: %(default)s)")
    sp.add_argument("--concurrency", type=count(1, 4096), nargs="+", default=list(bench_selfplay.CONCURRENCIES),
                    help="games in flight, split among the workers (the loop's concurrency), one row per value and backend (default: %(default)s, the loop's)")
    sp.add_argument("--workers", type=count(1, 1024), default=2, help="worker processes (default: %(default)s)")
    sp.add_argument("--rounds", type=count(1, 100), default=2, help="alternating rounds, the best counts (default: %(default)s)")
    sp.add_argument("--seconds", type=positive_float, default=0.5, help="length of each raw-rate trial")
    sp.add_argument("--no-profile", action="store_true",
                    help="leave out the profile (where the time goes, by part: one more run per backend)")
    sp.add_argument("--json", action="store_true", help="print one JSON object")
    sp.set_defaults(func=_cmd_bench_selfplay)
    p = bench_sub.add_parser("search", help="MCTS overhead vs OpenSpiel, alpha-beta vs python-chess, MCTS with a net")
    p.add_argument("--variant", choices=("both",) + tuple(board.VARIANTS), default="both")
    p.add_argument("--sims", type=_positive, default=3000, help="MCTS simulations per position (ours)")
    p.add_argument("--ab-nodes", type=_positive, default=100_000, help="alpha-beta nodes per position (ours)")
    p.add_argument("--pc-depth", type=_positive, default=3, help="depth of the python-chess negamax (chess)")
    p.add_argument("--nn-sims", type=_positive, default=400, help="MCTS simulations with the network")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_bench_search)
