"""``searchbench bughouse-match TEAM_A TEAM_B``: four-seat bughouse matches (experiments/bughouse_match.py).

A team is an engine spec for both of its seats (``bughouse-mcts:nodes=400``, ``sjeng``,
``sjeng:depth=4``, ``PROGRAM+xboard``) or two specs ``SPEC_A/SPEC_B`` (first on board A). Games are
played under real clocks (``--tc BASE+INC`` seconds), stored in SQLite (``--db``) and BPGN
(``--bpgn``, default beside the database); running the command again resumes the match.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

RUNS = Path("runs")


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", s)[:60]


def cmd_bughouse_match(args: argparse.Namespace) -> int:
    from experiments import bughouse_match as bm
    from experiments.match import parse_tc

    base_s, inc_s = parse_tc(args.tc)
    db = Path(args.db) if args.db else RUNS / f"{_safe(args.a)}-vs-{_safe(args.b)}-bughouse.sqlite"
    bpgn = Path(args.bpgn) if args.bpgn else db.with_suffix(".bpgn")
    summary = bm.run_match(args.a, args.b, args.games, int(round(base_s * 1000)), int(round(inc_s * 1000)),
                           db, bpgn, seed=args.seed, max_plies=args.max_plies, progress=not args.quiet)
    print(summary.line(args.a, args.b))
    print("terminations: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.reasons.items())))
    print(f"games: {db}  bpgn: {bpgn}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("bughouse-match", help="four-seat bughouse match of two teams under real clocks "
                                              "(resumable; SQLite + BPGN)")
    p.add_argument("a", help="team A: engine spec for both seats, or SPEC_A/SPEC_B "
                             "(bughouse-mcts[:nodes=N,movetime=S,...], sjeng[:depth=N], PROGRAM+xboard)")
    p.add_argument("b", help="team B")
    p.add_argument("--games", type=int, default=2, help="games (team colours alternate per game)")
    p.add_argument("--tc", default="60+0", help="time control BASE+INC in seconds per seat (default 60+0)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--db", help="SQLite results (default runs/<a>-vs-<b>-bughouse.sqlite)")
    p.add_argument("--bpgn", help="BPGN output (default: beside the database)")
    p.add_argument("--max-plies", type=int, default=600, help="draw after this many plies on both boards")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_bughouse_match)
