"""searchbench: the command-line interface.  Bad input ends in one line on stderr and exit 2."""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, Callable, NoReturn

import board
from board.variants import CHESS, CRAZYHOUSE
from engines.catalog import NO_EXTERNAL_ENV
from experiments.bench import movegen as bench_movegen
from experiments.harness.tasks import MAX_BUDGET, SEED_RANGE

EXIT_USAGE = 2


def _plain(text: str) -> str:
    """Help text without the reST markup of docstrings (double backticks)."""
    return text.replace("``", "")


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        """The help with its default, where there is one to show (not for flags and unset options)."""
        if action.default is None or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)

    def _format_text(self, text: str) -> str:
        return super()._format_text(_plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _plain(super()._expand_help(action))


#: help of arguments every command names alike (an argument without its own help gets this one)
COMMON_HELP = {
    "variant": "the variant played",
    "seed": "random seed (0 to 2**63-1; stored with every game, so a game replays from it)",
    "json": "print one JSON object",
    "quiet": "no progress bar",
    "config": "a TOML config (examples in experiments/configs/)",
    "engine": "an engine name or spec (searchbench engines lists them)",
    "threads": "torch threads",
    "batch": "positions per training batch",
    "epochs": "passes over the training data",
    "db": "the results database (SQLite)",
    "games": "how many games",
    "nodes": "node budget per move",
    "max_plies": "draw after this many plies",
    "model": "the network family: rise, sixtyfour or deepchess",
    "anchor": "the player held at --anchor-elo (default: the mean rating is 0)",
    "count": "how many openings",
    "depth": "search depth",
    "max_games": "stop undecided after this many games",
    "batches": "batches encoded per measurement",
    "bootstrap": "bootstrap samples for the 95%% intervals (0: none)",
}


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``searchbench CMD: error: ...``, exit 2), plain help text, the
    defaults shown, and a help text for every argument (:data:`COMMON_HELP` where none is given)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if not action.help:
            action.help = COMMON_HELP.get(action.dest, action.dest.replace("_", " "))
        return action

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


MAX_INT = SEED_RANGE - 1  # SQLite's largest integer (seeds are stored)
MAX_BENCH_BATCH = 4096  # a benchmark batch (positions a network call): far above any batch a search forms


def count(minimum: int, maximum: int = MAX_BUDGET) -> Callable[[str], int]:
    """An argparse type: an integer from ``minimum`` to ``maximum``."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not minimum <= v <= maximum:
            raise argparse.ArgumentTypeError(f"must be from {minimum} to {maximum:,}, got {v}")
        return v
    parse.__name__ = f"integer >= {minimum}"
    return parse


def plies_range(text: str) -> tuple[int, int]:
    """An argparse type: random opening plies, ``N`` or ``MIN-MAX`` (0 <= MIN <= MAX <= 1000)."""
    lo, _, hi = text.partition("-")
    try:
        a, b = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or MIN-MAX, got {text!r}") from None
    if not 0 <= a <= b <= 1000:
        raise argparse.ArgumentTypeError(f"expected 0 <= MIN <= MAX <= 1000, got {text!r}")
    return a, b


plies_range.__name__ = "plies"


def seed(text: str) -> int:
    """An argparse type: a seed, 0 to 2**63 - 1 (it is stored with every game)."""
    return count(0, MAX_INT)(text)


def number(lo: float = -math.inf, hi: float = math.inf, lo_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [lo, hi] (``lo_open``: above ``lo``)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if v < lo or (lo_open and v == lo) or v > hi:
            where = f"above {lo:g}" if lo_open else f"at least {lo:g}"
            raise argparse.ArgumentTypeError(f"must be {where}" + (f" and at most {hi:g}" if hi < math.inf else "")
                                             + f", got {text}")
        return v
    parse.__name__ = "number"
    return parse


positive_float = number(0.0, 1e9, lo_open=True)
positive_float.__name__ = "positive number"
fraction = number(0.0, 1.0, lo_open=True)  # a share: above 0, at most 1


def check_numbers(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Whatever an argument's type: no NaN or infinity and no integer beyond SQLite's (before any work)."""
    for k, v in vars(args).items():
        if isinstance(v, float) and not math.isfinite(v):
            parser.error(f"argument --{k.replace('_', '-')}: must be a finite number, got {v}")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
            parser.error(f"argument --{k.replace('_', '-')}: {v} is out of range")


def _cmd_perft(args: argparse.Namespace) -> int:
    for fen in args.fen:
        pos = board.new_position(args.variant, fen)
        print(board.perft_bulk(pos, args.depth) if args.bulk else board.perft(pos, args.depth))
    return 0


def _cmd_bench_movegen(args: argparse.Namespace) -> int:
    r = bench_movegen.run(args.variant, playout_games=args.games, seed=args.seed)
    print(json.dumps(r) if args.json else bench_movegen.format_table(r))
    return 0


# Modules that add subcommands: each has ``register(sub)`` (top level) and/or
# ``register_bench(bench_sub)`` (under ``searchbench bench``).  Add yours here, with the commands it
# registers in COMMANDS: a command's run imports its own module alone (``searchbench uci`` starts
# without the harness); --help, ``bench`` and anything else import them all.
COMMAND_MODULES: list[str] = ["experiments.cli.data", "experiments.cli.engines", "experiments.cli.harness",
                               "experiments.cli.bughouse", "experiments.cli.search", "experiments.cli.rl"]
COMMANDS: dict[str, str] = {
    **dict.fromkeys(("datagen", "agreement", "targets", "heldout", "fit-king-danger", "qat", "train"),
                    "experiments.cli.data"),
    **dict.fromkeys(("engines", "uci"), "experiments.cli.engines"),
    **dict.fromkeys(("match", "sprt", "tournament", "tune", "scale", "ablate", "accept-int8", "refresh", "deep-agreement", "ship", "ratings", "report",
                     "replay", "openings"), "experiments.cli.harness"),
    **dict.fromkeys(("bughouse-report", "bughouse-datagen", "bughouse-heldout", "bughouse-train", "bughouse-match"),
                    "experiments.cli.bughouse"),
    **dict.fromkeys(("selfplay", "rl", "value-probes"), "experiments.cli.rl"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command``'s module alone where :data:`COMMANDS` names it
    (the other commands are then unknown to it)."""
    p = Parser(prog="searchbench", description=__doc__)
    p.add_argument("--no-external-programs", action="store_true",
                   help="refuse engine specs that run a program other than the built-in Stockfish, Fairy-Stockfish "
                        "and Sjeng, and options passed through to a program (for configs from others: a config "
                        "is code)")
    sub = p.add_subparsers(dest="command", required=True)

    pp = sub.add_parser("perft", help="count leaf nodes of the legal move tree")
    pp.add_argument("--variant", choices=board.VARIANTS, default=CHESS.name)
    pp.add_argument("--depth", type=count(0, board.MAX_PERFT_DEPTH), required=True,
                    help=f"plies, at most {board.MAX_PERFT_DEPTH}")
    pp.add_argument("--bulk", action="store_true", help="count the last ply from move lists (faster)")
    pp.add_argument("fen", nargs="+", help="one or more FENs (quote each)")
    pp.set_defaults(func=_cmd_perft)

    pb = sub.add_parser("bench", help="benchmarks against peers, side by side in one run")
    bsub = pb.add_subparsers(dest="bench", required=True)
    bm = bsub.add_parser("movegen", help="perft and random playouts vs python-chess (and OpenSpiel)")
    bm.add_argument("--variant", choices=board.VARIANTS, default=CRAZYHOUSE.name)
    bm.add_argument("--games", type=count(1), default=40, help="random playouts for our side")
    bm.add_argument("--seed", type=seed, default=1)
    bm.add_argument("--json", action="store_true", help="print one JSON object")
    bm.set_defaults(func=_cmd_bench_movegen)

    import importlib

    for name in [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES:
        mod = importlib.import_module(name)
        if hasattr(mod, "register"):
            mod.register(sub)
        if hasattr(mod, "register_bench"):
            mod.register_bench(bsub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    first = next((a for a in argv if not a.startswith("-")), None)  # the command (the one global option is a flag)
    parser = build_parser(first)
    try:
        args = parser.parse_args(argv)
        check_numbers(parser, args)
    except SystemExit as e:  # a usage error (one line, printed) or --help: its code, returned
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    if args.no_external_programs:
        import os

        os.environ[NO_EXTERNAL_ENV] = "1"  # worker processes inherit it
    func: Callable[[argparse.Namespace], int] = args.func
    terminated = _sigterm_as_interrupt()
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
        print(f"searchbench: interrupted{' (SIGTERM)' if terminated else ''}", file=sys.stderr)
        return 143 if terminated else 130


def _sigterm_as_interrupt() -> list[int]:
    """SIGTERM (kill, timeout, a scheduler, docker stop) handled as Ctrl-C in every command: the
    command's own interrupt path stops its workers and writes what finished.  Returns a list that
    holds the signal once one came (the exit code says which)."""
    import signal
    import threading

    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        return came

    def handler(signum: int, frame: object) -> None:
        came.append(signum)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    return came


if __name__ == "__main__":
    sys.exit(main())
