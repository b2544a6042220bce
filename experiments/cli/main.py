"""searchbench: the command-line interface.  Bad input ends in one line on stderr and exit 2."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, NoReturn

import board

EXIT_USAGE = 2


def _plain(text: str) -> str:
    """Help text without the reST markup of docstrings (double backticks)."""
    return text.replace("``", "")


class _Formatter(argparse.HelpFormatter):
    def _format_text(self, text: str) -> str:
        return super()._format_text(_plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _plain(super()._expand_help(action))


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``searchbench CMD: error: ...``, exit 2) and plain help text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {v}")
        return v
    parse.__name__ = f"integer >= {minimum}"
    return parse


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return v


def _cmd_perft(args: argparse.Namespace) -> int:
    for fen in args.fen:
        pos = board.new_position(args.variant, fen)
        print(board.perft_bulk(pos, args.depth) if args.bulk else board.perft(pos, args.depth))
    return 0


def _cmd_bench_movegen(args: argparse.Namespace) -> int:
    from experiments.bench import movegen as bench_movegen

    r = bench_movegen.run(args.variant, playout_games=args.games, seed=args.seed)
    print(json.dumps(r) if args.json else bench_movegen.format_table(r))
    return 0


# Modules that add subcommands: each has ``register(sub)`` (top level) and/or
# ``register_bench(bench_sub)`` (under ``searchbench bench``).  Add yours here.
COMMAND_MODULES: list[str] = ["experiments.cli.data", "experiments.cli.engines", "experiments.cli.harness",
                               "experiments.cli.bughouse", "experiments.cli.search"]


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="searchbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    pp = sub.add_parser("perft", help="count leaf nodes of the legal move tree")
    pp.add_argument("--variant", choices=board.VARIANTS, default="chess")
    pp.add_argument("--depth", type=count(0), required=True)
    pp.add_argument("--bulk", action="store_true", help="count the last ply from move lists (faster)")
    pp.add_argument("fen", nargs="+", help="one or more FENs (quote each)")
    pp.set_defaults(func=_cmd_perft)

    pb = sub.add_parser("bench", help="benchmarks against peers, side by side in one run")
    bsub = pb.add_subparsers(dest="bench", required=True)
    bm = bsub.add_parser("movegen", help="perft and random playouts vs python-chess (and OpenSpiel)")
    bm.add_argument("--variant", choices=board.VARIANTS, default="crazyhouse")
    bm.add_argument("--games", type=count(1), default=40, help="random playouts for our side")
    bm.add_argument("--seed", type=int, default=1)
    bm.add_argument("--json", action="store_true", help="print one JSON object")
    bm.set_defaults(func=_cmd_bench_movegen)

    import importlib

    for name in COMMAND_MODULES:
        mod = importlib.import_module(name)
        if hasattr(mod, "register"):
            mod.register(sub)
        if hasattr(mod, "register_bench"):
            mod.register_bench(bsub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (ValueError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"searchbench: error: {str(msg).splitlines()[0] if str(msg) else type(e).__name__}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:  # an unusable path, a full disk: one line, whatever command met it
        where = f": {e.filename!r}" if e.filename else ""
        print(f"searchbench: error: {e.strerror or e}{where}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("searchbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
