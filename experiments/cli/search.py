"""``searchbench bench search``: MCTS and alpha-beta against their peers (see experiments.bench.search)."""
from __future__ import annotations

import argparse
import json

import board


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def _cmd_bench_search(args: argparse.Namespace) -> int:
    from experiments.bench import search as bench_search

    variants = board.VARIANTS if args.variant == "both" else (args.variant,)
    r = bench_search.run(variants, sims=args.sims, ab_nodes=args.ab_nodes, pc_depth=args.pc_depth,
                         nn_sims=args.nn_sims)
    print(json.dumps(r) if args.json else bench_search.format_table(r))
    return 0


def register_bench(bench_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bench_sub.add_parser("search", help="MCTS overhead vs OpenSpiel, alpha-beta vs python-chess, MCTS with a net")
    p.add_argument("--variant", choices=("both",) + tuple(board.VARIANTS), default="both")
    p.add_argument("--sims", type=_positive, default=3000, help="MCTS simulations per position (ours)")
    p.add_argument("--ab-nodes", type=_positive, default=100_000, help="alpha-beta nodes per position (ours)")
    p.add_argument("--pc-depth", type=_positive, default=3, help="depth of the python-chess negamax (chess)")
    p.add_argument("--nn-sims", type=_positive, default=400, help="MCTS simulations with the network")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_bench_search)
