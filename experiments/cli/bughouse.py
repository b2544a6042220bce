"""Bughouse commands: ``bughouse-match`` (four-seat matches, experiments/bughouse_match.py),
``bughouse-datagen`` and ``bughouse-train`` (the two-board network's data and training,
experiments/bughouse_data.py and experiments/bughouse_train.py).

A team is an engine spec for both of its seats (``bughouse-mcts:nodes=400`` with the classical
evaluator, ``rise-bughouse-mcts:nodes=400`` with the two-board network, ``sjeng``,
``sjeng:depth=4``, ``PROGRAM+xboard``) or two specs ``SPEC_A/SPEC_B`` (first on board A). Games are
played under real clocks (``--tc BASE+INC`` seconds; ``--tc none``: no clocks, our MCTS seats at their
node limits, games that replay), ``--workers`` at once, stored in SQLite (``--db``) and BPGN
(``--bpgn``, default beside the database); running the command again resumes the match.
"""
from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any
from board.variants import BUGHOUSE
from experiments.cli.main import count, fraction, number, positive_float, seed
from experiments.harness import bughouse_report as br
from experiments.paths import check_dir
from experiments.training import bughouse_data as bd
from experiments.training.bughouse_data import DEFAULT_PAIRS, shard_paths

RUNS = Path("runs")


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", s)[:60]


def cmd_bughouse_match(args: argparse.Namespace) -> int:
    from experiments.harness import bughouse as bm  # deferred: loads chess.engine

    base_ms, inc_ms = bm.parse_clock(args.tc)
    db = Path(args.db) if args.db else RUNS / f"{_safe(args.a)}-vs-{_safe(args.b)}-bughouse.sqlite"
    bpgn = Path(args.bpgn) if args.bpgn else db.with_suffix(".bpgn")
    summary = bm.run_match(args.a, args.b, args.games, base_ms, inc_ms,
                           db, bpgn, seed=args.seed, max_plies=args.max_plies, progress=not args.quiet,
                           workers=args.workers)
    print(summary.line(args.a, args.b))
    print("terminations: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.reasons.items())))
    print(f"games: {db}  bpgn: {bpgn}")
    return 0


def _pairs(items: list[list[str]] | None) -> list[tuple[str, str]]:
    return [(a, b) for a, b in items] if items else list(DEFAULT_PAIRS)


def _with_shards(dbs: list[str]) -> list[str]:
    """Each database with the shards that ``bughouse-datagen --workers`` wrote beside it."""
    return [str(p) for d in dbs for p in (shard_paths(d) or [Path(d)])]


def cmd_bughouse_datagen(args: argparse.Namespace) -> int:
    from experiments.harness.match import parse_tc  # deferred: loads chess.engine

    base_s, inc_s = parse_tc(args.tc)
    pairs = _pairs(args.pair)
    t0 = time.monotonic()
    before = bd.count_all(args.db)
    n = bd.generate(args.db, pairs, args.games, int(round(base_s * 1000)), int(round(inc_s * 1000)),
                    minutes=args.minutes, chunk=args.chunk, seed=args.seed, progress=not args.quiet,
                    workers=args.workers)
    hours = (time.monotonic() - t0) / 3600.0
    shards = len(bd.shard_paths(args.db))
    print(f"{n} games in {args.db}" + (f" and its {shards - 1} shards" if shards > 1 else "")
          + f" (pairs: {'; '.join(a + ' vs ' + b for a, b in pairs)}, tc {args.tc}); "
          f"{n - before} new in {hours * 60:.1f} min: {(n - before) / hours if hours > 0 else 0:.0f} games an hour "
          f"with {args.workers} worker{'s' if args.workers > 1 else ''}")
    return 0


def cmd_bughouse_train(args: argparse.Namespace) -> int:
    from experiments.training import bughouse_train as bt  # deferred: loads torch
    from experiments.training.recipe import TrainConfig  # deferred: loads torch

    check_dir(args.out, "run directory")
    cfg = TrainConfig(model=BUGHOUSE.name, data=_with_shards(args.db), out=args.out, size=args.size, epochs=args.epochs,
                      minutes=args.minutes, batch=args.batch, lr=args.lr, value_weight=args.value_weight,
                      policy_weight=args.policy_weight, val_fraction=args.val_fraction, seed=args.seed,
                      threads=args.threads, device=args.device, half=True)
    meta = bt.train(cfg, progress=not args.quiet)
    print(f"model: {args.out}/model.pt  val policy acc {meta['val_policy_acc']:.3f}  "
          f"value sign acc {meta['val_value_sign_acc']:.3f}  ({meta['train_positions']} training samples, "
          f"{meta['training_seconds']:.0f} s)")
    return 0


def cmd_bughouse_heldout(args: argparse.Namespace) -> int:
    import json

    from experiments.training import bughouse_train as bt  # deferred: loads torch

    r = bt.heldout(_with_shards(args.db), args.weights, val_fraction=args.val_fraction, seed=args.seed, threads=args.threads)
    if args.json:
        print(json.dumps(r, indent=1, sort_keys=True))
        return 0
    print(f"held out: {r['val_games']} of {r['games']} games, {r['val_positions']} positions (both views); "
          f"split of bughouse-train --val-fraction {args.val_fraction:g} --seed {args.seed}")
    print(f"{'weights':<48} {'policy top-1':>12} {'partner top-1':>13} {'value sign':>10} {'value MSE':>9} "
          f"{'policy CE':>9}")
    for path, m in r["nets"].items():
        print(f"{path:<48} {100 * m['val_policy_acc']:>11.1f}% {100 * m['val_partner_policy_acc']:>12.1f}% "
              f"{100 * m['val_value_sign_acc']:>9.1f}% {m['val_value_mse']:>9.3f} {m['val_policy_ce']:>9.3f}")
    stages = list(next(iter(r["nets"].values()))["stages"])
    print("\nalong the game (plies on both boards before the position): policy top-1 (own view) / "
          "winner predicted (value sign)")
    print(f"{'weights':<48} " + " ".join(f"{s:>15}" for s in stages))
    for path, m in r["nets"].items():
        cells = [m["stages"].get(s) for s in stages]
        print(f"{path:<48} " + " ".join(f"{100 * c['val_policy_acc']:>6.1f}% /{100 * c['val_value_sign_acc']:>5.1f}%"
                                         if c else f"{'-':>15}" for c in cells))
    return 0


def cmd_bughouse_report(args: argparse.Namespace) -> int:
    cfg = br.load(args.config)
    if not args.report_only:
        br.play(cfg, progress=not args.quiet)
    rs, games = br.rows(cfg)
    paths = br.write_report(cfg, rs, games, br.cli_command(args.config))
    for f in br.findings(rs):
        print(f)
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def register(sub: Any) -> None:
    r = sub.add_parser("bughouse-report", help="our bughouse teams against Sjeng (or another reference team) from a "
                                               "TOML config: resumable games, then the report with intervals")
    r.add_argument("config", help="TOML config (experiments/configs/bughouse-vs-sjeng.toml)")
    r.add_argument("--report-only", action="store_true", help="write the report from the stored games, play none")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_bughouse_report)

    d = sub.add_parser("bughouse-datagen", help="bughouse training games through the four-seat server "
                                                "(default Sjeng teams; resumable SQLite + BPGN)")
    d.add_argument("--db", default="data/bughouse-sjeng.sqlite", help="game database (resumes)")
    d.add_argument("--games", type=count(1), default=400, help="stop when this many games are stored")
    d.add_argument("--minutes", type=positive_float, help="stop starting games after this many minutes")
    d.add_argument("--pair", nargs=2, action="append", metavar=("TEAM_A", "TEAM_B"),
                   help="a pairing of teams (repeatable; default sjeng:depth=3 vs sjeng:depth=4 and "
                        "sjeng:depth=4 vs sjeng:depth=4)")
    d.add_argument("--tc", default="30+0", help="time control BASE+INC seconds per seat (default 30+0)")
    d.add_argument("--chunk", type=count(1), default=4, help="games per pairing before switching to the next")
    d.add_argument("--workers", type=count(1, 64), default=1,
                   help="games at once, each process into its own shard beside --db (NAME.wK.sqlite)")
    d.add_argument("--seed", type=seed, default=1)
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_bughouse_datagen)

    h = sub.add_parser("bughouse-heldout", help="bughouse networks side by side on the same held-out games "
                                               "(bughouse-train's validation split of --db)")
    h.add_argument("--db", nargs="+", default=["data/bughouse-sjeng.sqlite"],
                   help="game database(s), each with its datagen shards (NAME.wK.sqlite)")
    h.add_argument("--weights", nargs="+", required=True, help="model.pt files (e.g. evaluators/weights/bughouse_lazybug.pt)")
    h.add_argument("--val-fraction", type=fraction, default=0.1, help="as bughouse-train: share of games held out")
    h.add_argument("--seed", type=seed, default=1, help="as bughouse-train: the split's seed")
    h.add_argument("--threads", type=count(1, 256), default=1, help="torch threads")
    h.add_argument("--json", action="store_true", help="print the figures as JSON")
    h.set_defaults(func=cmd_bughouse_heldout)

    t = sub.add_parser("bughouse-train", help="train the LazyBug-style two-board network on stored games")
    t.add_argument("--db", nargs="+", default=["data/bughouse-sjeng.sqlite"],
                   help="game database(s), each with its datagen shards (NAME.wK.sqlite)")
    t.add_argument("--out", default="runs/bughouse-net", help="run directory (model.pt, metrics.csv)")
    t.add_argument("--size", default="small", help="network size (tiny, small, lazybug)")
    t.add_argument("--epochs", type=count(1, 100_000), default=20)
    t.add_argument("--minutes", type=positive_float, default=15.0, help="wall-time budget")
    t.add_argument("--batch", type=count(1, 1 << 20), default=256)
    t.add_argument("--lr", type=number(0, 100, lo_open=True), default=0.02, help="SGD learning rate (LazyBug: 0.02, static)")
    t.add_argument("--value-weight", type=number(0, 1e6), default=1.0, help="weight of the value MSE (LazyBug 1)")
    t.add_argument("--policy-weight", type=number(0, 1e6), default=0.01, help="weight of the policy CE (LazyBug 0.01)")
    t.add_argument("--val-fraction", type=fraction, default=0.1, help="share of games held out")
    t.add_argument("--threads", type=count(1, 256), default=1, help="torch threads")
    t.add_argument("--device", default="auto", help="auto (CUDA when there is one), cpu, cuda or cuda:N")
    t.add_argument("--seed", type=seed, default=1)
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_bughouse_train)

    p = sub.add_parser("bughouse-match", help="four-seat bughouse match of two teams under real clocks "
                                              "(resumable; SQLite + BPGN)")
    p.add_argument("a", help="team A: engine spec for both seats, or SPEC_A/SPEC_B "
                             "(bughouse-mcts[:nodes=N,movetime=S,...], rise-bughouse-mcts[:weights=PATH,...], "
                             "sjeng[:depth=N], PROGRAM+xboard)")
    p.add_argument("b", help="team B")
    p.add_argument("--games", type=count(1), default=2, help="games (team colours alternate per game)")
    p.add_argument("--tc", default="60+0", help="time control BASE+INC in seconds per seat (default 60+0), or "
                                               "none: no clocks, our MCTS seats at their node limits (games replay)")
    p.add_argument("--workers", type=count(1, 64), default=1,
                   help="processes playing games at once, four seats each (untimed games are the same with any number)")
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--db", help="SQLite results (default runs/<a>-vs-<b>-bughouse.sqlite)")
    p.add_argument("--bpgn", help="BPGN output (default: beside the database)")
    p.add_argument("--max-plies", type=count(1, 100_000), default=600, help="draw after this many plies on both boards")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_bughouse_match)
