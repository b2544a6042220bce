"""``searchbench datagen`` and ``searchbench train``: data generation/import and network training."""
from __future__ import annotations

import argparse
import json
import sys

import board
from board.variants import CRAZYHOUSE
from experiments.bench import encode as bench_encode
from experiments.cli.main import MAX_BENCH_BATCH, count, fraction, number, plies_range, positive_float, seed
from evaluators.base import INFERENCE_MODES
from evaluators.families import FAMILIES
from experiments.paths import check_dir
from experiments.selfplay import targets
from experiments.training import agreement, datagen, king_danger
from experiments.training.datagen import DataError

#: what `searchbench train` trains (bughouse: `searchbench bughouse-train`)
MODELS = tuple(f.name for f in FAMILIES.values() if f.trains_with_train)


def _cmd_datagen(args: argparse.Namespace) -> int:
    check_dir(args.out, "data directory")
    if args.pgn:
        stats = datagen.import_pgn(args.pgn, args.out, variant=args.pgn_variant, min_elo=args.min_elo,
                                   progress=not args.quiet, seed=args.seed)
    else:
        min_p, max_p = args.random_plies
        cfg = datagen.GenConfig(out=args.out, variant=args.variant, games=args.games, nodes=args.nodes,
                                workers=args.workers, min_plies=min_p, max_opening_plies=max_p,
                                max_plies=args.max_plies, shard_games=args.shard_games, seed=args.seed,
                                minutes=args.minutes, engine=args.engine)
        stats = datagen.generate(cfg, progress=not args.quiet)
    print(json.dumps(stats))
    return 0


def _cmd_targets(args: argparse.Namespace) -> int:
    if args.reference:
        cap = (args.full_fraction, args.fast_nodes) if args.full_fraction < 1.0 else None
        if cap is not None and not 1 <= args.fast_nodes <= args.nodes:
            raise DataError(f"--fast-nodes must be from 1 to --nodes ({args.nodes}) with --full-fraction < 1")
        ref = targets.measure_reference(args.engine, args.data, args.reference, positions=args.positions,
                                        nodes=args.nodes, seed=args.seed, explore=not args.no_explore,
                                        val_fraction=args.val_fraction, progress=not args.quiet, playout_cap=cap,
                                        reuse=not args.no_reuse)
        print(json.dumps(ref) if args.json else targets.format_reference(ref))
        for why in targets.gate0(ref, args.min_entropy_ratio):
            print(f"gate 0 fails: {why}", file=sys.stderr)
        return 0
    rows = targets.measure(args.engine, args.data, positions=args.positions, nodes=args.nodes, seed=args.seed,
                           explore=not args.no_explore, val_fraction=args.val_fraction, progress=not args.quiet)
    print(json.dumps([r.as_dict() for r in rows]) if args.json else targets.format_table(rows, args.nodes))
    return 0


def _cmd_agreement(args: argparse.Namespace) -> int:
    rows = agreement.measure(args.data, args.nodes, positions=args.positions, seed=args.seed,
                             engine=args.engine, val_fraction=args.val_fraction, progress=not args.quiet)
    if args.json:
        print(json.dumps([{"nodes": a.nodes, "positions": a.positions, "agree": a.agree, "rate": a.rate,
                           "interval": list(a.interval())} for a in rows]))
    else:
        print(agreement.format_table(rows))
    return 0


def _cmd_qat(args: argparse.Namespace) -> int:
    from experiments.training import qat  # deferred: loads torch

    cfg = qat.QATConfig(weights=args.weights, data=args.data, out=args.out, steps=args.steps, batch=args.batch,
                        lr=args.lr, value_weight=args.value_weight, seed=args.seed, threads=args.threads)
    summary = qat.run_qat(cfg, progress=not args.quiet)
    summary.update(qat.agreement(args.weights, summary["out"], args.positions, args.threads))
    print(json.dumps(summary) if args.json else qat.format_summary(summary))
    return 0


def _cmd_heldout(args: argparse.Namespace) -> int:
    from experiments.training.policy_value import heldout  # deferred: loads torch

    rows = heldout(args.weights, args.data, val_fraction=args.val_fraction, select_fraction=args.select_fraction,
                   seed=args.seed, threads=args.threads, classical=args.classical, inference=args.inference)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'weights':<44} {'policy top-1':>12} {'value sign':>10} {'mate-1 top-1':>12} {'policy loss':>11} "
          f"{'positions':>9}")
    for r in rows:
        mate, loss = (f"{r['mate1_top1']:>12.2%}", f"{r['val_policy_loss']:>11.4f}") if "mate1_top1" in r else ("", "")
        print(f"{r['weights']:<44} {r['val_policy_acc']:>12.2%} {r['val_value_sign_acc']:>10.2%} "
              f"{mate:>12} {loss:>11} {int(r['val_positions']):>9}")
    return 0


def _cmd_fit_king_danger(args: argparse.Namespace) -> int:
    f = king_danger.fit(args.data, every=args.every, val_fraction=args.val_fraction)
    print(json.dumps({**f.params, **f.constants(), "positions": f.positions, "val_positions": f.val_positions,
                      "val_mse_scaled": f.val_mse_scaled, "val_mse_fit": f.val_mse_fit})
          if args.json else king_danger.format_fit(f))
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from experiments.training import train  # deferred: loads torch

    check_dir(args.out, "run directory")
    cfg = train.TrainConfig(model=args.model, data=args.data, out=args.out, size=args.size,
                            epochs=args.epochs, batch=args.batch, lr=args.lr, val_fraction=args.val_fraction,
                            value_weight=args.value_weight, threads=args.threads, seed=args.seed,
                            minutes=args.minutes, cpu_seconds=args.cpu_seconds, max_positions=args.max_positions,
                            resume=not args.no_resume,
                            ae_epochs=args.ae_epochs, half=args.half,
                            positions_per_game=args.positions_per_game, select_fraction=args.select_fraction,
                            patience=args.patience, select=args.select, weight_decay=args.weight_decay, dropout=args.dropout,
                            bf16=args.bf16, mirror=args.mirror, input_dropout=args.input_dropout, antisymmetric=args.antisymmetric,
                            score_weight=args.score_weight, optimizer=args.optimizer, device=args.device,
                            large_batch=args.large_batch, init=args.init, q_weight=args.q_weight,
                            schedule=args.schedule, optimizer_from=args.optimizer_from)
    summary = train.train(cfg, progress=not args.quiet)
    print(json.dumps(summary))
    return 0


def _cmd_bench_encode(args: argparse.Namespace) -> int:
    try:
        batches = tuple(int(b) for b in args.batches.split(","))
    except ValueError:
        batches = ()
    if not batches or not all(1 <= b <= MAX_BENCH_BATCH for b in batches):
        raise ValueError(f"--batches wants sizes from 1 to {MAX_BENCH_BATCH}, e.g. 1,8,64; got {args.batches!r}")
    r = bench_encode.run(batches, seconds=args.seconds, seed=args.seed, weights=args.weights)
    print(json.dumps(r) if args.json else bench_encode.format_table(r))
    return 0


def register_bench(bench_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    b = bench_sub.add_parser("encode", help="batch encoding time vs network time (and vs python-chess)")
    b.add_argument("--batches", default="1,8,64,256")
    b.add_argument("--seconds", type=positive_float, default=1.0, help="time per measurement")
    b.add_argument("--weights", default=None, help="RISE weights (default: shipped)")
    b.add_argument("--seed", type=seed, default=1)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_cmd_bench_encode)


def _register_fit_king_danger(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    k = sub.add_parser("fit-king-danger", help="fit the classical king danger (bughouse-board-kd) to the engine "
                                               "scores of crazyhouse data shards")
    k.add_argument("--data", required=True, nargs="+", help="crazyhouse data directories or shard files")
    k.add_argument("--every", type=count(1), default=2, help="use every N-th position")
    k.add_argument("--val-fraction", type=fraction, default=0.1, help="share of games held out (split by game)")
    k.add_argument("--json", action="store_true", help="print one JSON object")
    k.set_defaults(func=_cmd_fit_king_danger)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("datagen", help="play Fairy-Stockfish games (or import a PGN) into data shards")
    p.add_argument("--out", required=True, help="data directory (shards are appended)")
    p.add_argument("--variant", choices=board.VARIANTS, default=CRAZYHOUSE.name)
    p.add_argument("--games", type=count(1), default=100, help="new games to play")
    p.add_argument("--nodes", type=count(1), default=2000, help="engine node budget per move")
    p.add_argument("--workers", type=count(1, 256), default=1, help="engine processes in parallel")
    p.add_argument("--random-plies", type=plies_range, default=(2, 8), help="random opening plies, N or MIN-MAX")
    p.add_argument("--max-plies", type=count(0, 100_000), default=400, help="adjudicate a draw after this many plies")
    p.add_argument("--shard-games", type=count(1), default=50, help="games per shard (flush interval)")
    p.add_argument("--minutes", type=positive_float, default=None, help="stop after this wall time")
    p.add_argument("--engine", default="fairy-stockfish")
    p.add_argument("--seed", type=seed, default=None)
    p.add_argument("--pgn", default=None, help="import this PGN file instead of playing games")
    p.add_argument("--pgn-variant", choices=board.VARIANTS, default=None,
                   help="keep only games of this variant (default: from each game's Variant header)")
    p.add_argument("--min-elo", type=count(0, 5000), default=0, help="PGN import: both players rated at least this")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_datagen)

    a = sub.add_parser("agreement", help="how often the engine, searching afresh, repeats the moves of its own "
                                         "games (the ceiling of policy accuracy on that data)")
    a.add_argument("--data", required=True, nargs="+", help="data directories or shard files")
    a.add_argument("--nodes", type=count(1), nargs="+", default=[3000], help="node budgets to replay at")
    a.add_argument("--positions", type=count(1), default=1000, help="validation positions sampled")
    a.add_argument("--val-fraction", type=fraction, default=0.1, help="share of games held out (as train)")
    a.add_argument("--engine", default="fairy-stockfish")
    a.add_argument("--seed", type=seed, default=0)
    a.add_argument("--json", action="store_true")
    a.add_argument("--quiet", action="store_true")
    a.set_defaults(func=_cmd_agreement)

    _register_targets(sub)

    h = sub.add_parser("heldout", help="policy/value accuracy of saved rise/sixtyfour networks on the same "
                                       "held-out games (train's validation split of --data)")
    h.add_argument("--data", required=True, nargs="+", help="data directories or shard files")
    h.add_argument("--weights", required=True, nargs="+", help="model.pt files (or shipped weights paths)")
    h.add_argument("--val-fraction", type=fraction, default=0.1, help="as train: share of games held out")
    h.add_argument("--select-fraction", type=fraction, default=0.05, help="as train")
    h.add_argument("--seed", type=seed, default=0, help="as train (subsamples the validation positions)")
    h.add_argument("--threads", type=count(1, 256), default=1)
    h.add_argument("--classical", action="store_true",
                   help="add the classical evaluator as a reference row (value sign; policy = its top move score)")
    h.add_argument("--inference", choices=INFERENCE_MODES, default=None,
                   help="run each network in this evaluator mode (default: eager torch); onnxruntime-int8 is "
                        "measured even where its load check refuses it: what quantisation costs")
    h.add_argument("--json", action="store_true")
    h.set_defaults(func=_cmd_heldout)

    _register_fit_king_danger(sub)
    q = sub.add_parser("qat", help="quantisation-aware fine-tuning: a copy of a network tuned so that its int8 "
                                   "model plays like float32 (NAME.qat.pt beside it; int8 is quantised from it)")
    q.add_argument("--weights", required=True, help="the float32 network (a path or a shipped name: rise_chess.pt)")
    q.add_argument("--data", required=True, nargs="+", help="data directories whose training games' positions it is tuned on")
    q.add_argument("--out", default=None, help="default: NAME.qat.pt beside the weights (never the shipped tuned copy: give --out)")
    q.add_argument("--steps", type=count(1, 10**7), default=3000, help="optimiser steps (resumes from OUT.partial)")
    q.add_argument("--batch", type=count(1, 1 << 16), default=256, help="positions a step")
    q.add_argument("--lr", type=number(0, 1, lo_open=True), default=2e-4, help="peak learning rate (cosine decay)")
    q.add_argument("--value-weight", type=number(0, 1e6), default=1.0, help="weight of the value's squared difference")
    q.add_argument("--positions", type=count(16, 10**6), default=2000,
                   help="sample positions on which int8's top-move agreement with float32 is measured after")
    q.add_argument("--threads", type=count(1, 256), default=2)
    q.add_argument("--seed", type=seed, default=1)
    q.add_argument("--json", action="store_true")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.set_defaults(func=_cmd_qat)

    t = sub.add_parser("train", help="train a network on data shards (paper recipes, SPEC.md section 3)")
    t.add_argument("model", choices=MODELS)
    t.add_argument("--data", required=True, nargs="+", help="data directories or shard files")
    t.add_argument("--out", required=True, help="run directory: checkpoint.pt, metrics.csv, model.pt")
    t.add_argument("--size", default="small", help="network size preset (see experiments/train.py SIZES)")
    t.add_argument("--epochs", type=count(1, 100_000), default=None, help="default: the paper's")
    t.add_argument("--batch", type=count(1, 1 << 20), default=None)
    t.add_argument("--lr", type=number(0, 100, lo_open=True), default=None, help="peak/initial learning rate (default: the paper's)")
    t.add_argument("--value-weight", type=number(0, 1e6), default=None, help="value-loss weight (RISE 0.01, SixtyFour 1)")
    t.add_argument("--val-fraction", type=fraction, default=0.1, help="share of games held out")
    t.add_argument("--ae-epochs", type=count(0, 100_000), default=None, help="DeepChess: autoencoder epochs per layer")
    t.add_argument("--max-positions", type=count(1, 10**12), default=None, help="use at most this many training positions")
    t.add_argument("--minutes", type=positive_float, default=None, help="time budget: the schedule is fitted to it")
    t.add_argument("--cpu-seconds", type=positive_float, default=None,
                   help="a budget of process CPU seconds (every thread), as --minutes on wall time")
    t.add_argument("--threads", type=count(1, 256), default=1)
    t.add_argument("--seed", type=seed, default=0)
    t.add_argument("--no-resume", action="store_true", help="start over even if a checkpoint exists")
    t.add_argument("--positions-per-game", type=count(1), default=10,
                   help="DeepChess: training positions sampled per decisive game (paper: 10)")
    t.add_argument("--half", action="store_true", help="store model.pt in float16 (half the size)")
    t.add_argument("--select-fraction", type=fraction, default=0.05,
                   help="share of games (besides validation) used only to pick the best epoch")
    t.add_argument("--patience", type=count(1), default=None, help="early stopping: epochs without a better selection score")
    t.add_argument("--select", choices=("policy", "value"), default="policy",
                   help="rise/sixtyfour: the best epoch by policy accuracy or by the lowest value loss on the "
                        "selection games (default: policy)")
    t.add_argument("--weight-decay", type=number(0, 1), default=1e-4, help="SGD weight decay (rise, deepchess comparator)")
    t.add_argument("--dropout", type=number(0, 1), default=0.0, help="DeepChess: comparator dropout (training only)")
    t.add_argument("--input-dropout", type=number(0, 1), default=0.0, help="DeepChess: input-bit dropout (training only)")
    t.add_argument("--antisymmetric", action="store_true", help="DeepChess: P(a>b) = 1 - P(b>a) by construction")
    t.add_argument("--score-weight", type=number(0, 1), default=0.0,
                   help="the engine's scores in the target (0 = outcome only): DeepChess, weight of the score "
                        "ordering in the pair target; rise/sixtyfour, value target (1 - w) result + w v(score) on "
                        "engine games' positions (the score on the suite's one scale)")
    t.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                   help="DeepChess comparator optimizer (sgd: the paper; adam: the seeds' report, lr 0.0005)")
    t.add_argument("--bf16", action="store_true", help="rise/sixtyfour: bfloat16 autocast training (CPU speed)")
    t.add_argument("--mirror", action="store_true",
                   help="rise/sixtyfour: mirror half of the castling-free training positions a<->h (augmentation)")
    t.add_argument("--device", default="auto", help="auto (CUDA when there is one), cpu, cuda or cuda:N")
    t.add_argument("--large-batch", action="store_true",
                   help="rise: CrazyAra's large-batch recipe (batch 1024, lr 0.35, one-cycle)")
    t.add_argument("--init", default=None, help="rise/sixtyfour: start from these weights (their size), "
                                                "e.g. a shipped network or the self-play loop's best")
    t.add_argument("--schedule", choices=("family", "constant"), default="family",
                   help="rise/sixtyfour: the family's learning-rate schedule, or constant (SGD, momentum 0.9: "
                        "continued training, as the self-play loop's rounds)")
    t.add_argument("--optimizer-from", default=None, metavar="CHECKPOINT",
                   help="rise/sixtyfour: start the optimizer from this checkpoint's state (with --init: go on "
                        "training one network)")
    t.add_argument("--q-weight", type=number(0, 1), default=0.0,
                   help="value target (1 - w) result + w root_q on self-play shards (0: the result, AlphaZero)")
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(func=_cmd_train)


def _register_targets(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    t = sub.add_parser("targets", help="a search's policy training target against the network's prior on held-out "
                                       "positions: top-1, entropy, KL, mass on checks, evaluator calls (before training)")
    t.add_argument("--engine", required=True, action="append",
                   help="an MCTS-family engine (repeat for several), e.g. rise-mcts or rise-gumbel:c_scale=0.1")
    t.add_argument("--data", required=True, nargs="+", help="data directories or shard files (their validation games)")
    t.add_argument("--nodes", type=count(1, 100_000), default=16, help="root visits per move, as in self-play")
    t.add_argument("--positions", type=count(1, 1_000_000), default=400, help="validation positions sampled")
    t.add_argument("--val-fraction", type=fraction, default=0.1, help="as train: share of games held out")
    t.add_argument("--no-explore", action="store_true", help="without self-play's exploration (noise)")
    t.add_argument("--reference", type=count(2, 1_000_000), default=0, metavar="NODES",
                   help="compare each target with a deep search of the same network at NODES root visits (no "
                        "noise, fresh tree): cross-entropy, top-move agreement, entropies, with 95%% intervals")
    t.add_argument("--full-fraction", type=fraction, default=1.0,
                   help="with --reference: playout-cap randomisation as self-play plays it (the tree reused "
                        "from a fast search with probability 1 - this)")
    t.add_argument("--fast-nodes", type=count(1, 100_000), default=16, help="with --full-fraction < 1")
    t.add_argument("--no-reuse", action="store_true", help="with --reference: a fresh tree for every target")
    t.add_argument("--min-entropy-ratio", type=number(0.0, 2.0), default=0.8,
                   help="gate 0: a target's entropy at least this times the reference's (a warning here)")
    t.add_argument("--seed", type=seed, default=0)
    t.add_argument("--json", action="store_true")
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(func=_cmd_targets)
