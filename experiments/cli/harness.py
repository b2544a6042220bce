"""CLI of the harness: ``match``, ``tournament``, ``sprt``, ``scale``, ``ratings``, ``openings`` and
``bench harness``.  Every command checks its input (engines, weights, output paths) before the
first game, stores each game as it finishes and resumes when run again."""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import board
from board.variants import ALL, CRAZYHOUSE, ONE_BOARD, variant_of
from engines import registry
from evaluators.families import FAMILIES, file_id
from engines.base import LIMIT_KEYS, EngineSpec, layered_limits
from experiments.bench import harness as bench_harness
from experiments.cli.bughouse import cmd_bughouse_match
from experiments.cli.main import build_parser, count, number, positive_float, seed
from experiments.harness import ablate, accept, deep_agreement, match as match_mod, refresh, scale, ship, tournament, tune, webpage
from experiments.harness import openings as openings_mod
from experiments.harness import pgn as pgn_out
from experiments.harness import ratings as ratings_mod
from experiments.harness.replay import replay
from experiments.selfplay.replay import is_selfplay_dir, replay_selfplay
from experiments.harness.sprt import Sprt, decided_early
from experiments.harness.stats import score_text
from experiments.harness.store import Store
from experiments.paths import InputError, check_dir, check_file
from reports import html as page, played

RUNS = Path("runs")


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", s)[:80]


def _add_play_options(p: argparse.ArgumentParser, variants: tuple[str, ...] = board.VARIANTS) -> None:
    p.add_argument("a", help="engine A (registry name or spec)")
    p.add_argument("b", help="engine B")
    p.add_argument("--variant", choices=variants, default=CRAZYHOUSE.name)
    p.add_argument("--nodes", type=count(1), help="node budget per move (both engines)")
    p.add_argument("--evals", type=count(1), help="evaluator calls per move (in-process engines)")
    p.add_argument("--playouts", type=count(1), help="MCTS: new simulations per move (--nodes counts the root's "
                                                    "visits, those kept from the last move included)")
    p.add_argument("--depth", type=count(1), help="depth limit per move")
    p.add_argument("--movetime", type=positive_float, help="seconds per move")
    p.add_argument("--tc", help="time control BASE+INC in seconds, e.g. 60+0.6")
    for side in ("a", "b"):  # per engine, as cutechess-cli's per-engine options: they take precedence
        p.add_argument(f"--nodes-{side}", type=count(1), help=f"node budget of {side.upper()} (overrides --nodes)")
        p.add_argument(f"--evals-{side}", type=count(1), help=f"evaluator calls of {side.upper()}")
        p.add_argument(f"--playouts-{side}", type=count(1), help=f"MCTS playouts of {side.upper()}")
        p.add_argument(f"--depth-{side}", type=count(1), help=f"depth limit of {side.upper()}")
        p.add_argument(f"--movetime-{side}", type=positive_float, help=f"seconds per move of {side.upper()}")
        p.add_argument(f"--tc-{side}", help=f"time control of {side.upper()}")
    p.add_argument("--concurrency", type=count(1), default=2, help="games at once (evaluations pooled)")
    p.add_argument("--workers", type=count(1), default=1, help="processes")
    p.add_argument("--openings", help="EPD opening suite (default: the shipped one of the variant)")
    p.add_argument("--random-openings", action="store_true", help="seeded shuffle of the suite")
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--db", help="SQLite results (default runs/<a>-vs-<b>-<variant>.sqlite)")
    p.add_argument("--pgn", help="PGN output (default: beside the database)")
    p.add_argument("--max-plies", type=count(0), default=400, help="adjudicate a draw after this many plies (0: off)")
    p.add_argument("--no-adjudication", action="store_true", help="no resign/draw adjudication")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_backend_options(p)


def _add_backend_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=match_mod.BACKENDS, help="local processes (default) or Ray actors")
    p.add_argument("--ray-address", help="Ray cluster address (default: start a local Ray)")


def _side_limits(args: argparse.Namespace, side: str, engine: EngineSpec) -> dict[str, Any]:
    """The limits of one side: its own flag (``--nodes-a``), else a limit in its engine spec
    (``material-mcts:nodes=32``), else the match-wide flag (``--nodes``): :func:`engines.base.layered_limits`."""
    own = {k: getattr(args, f"{k}_{side}") for k in LIMIT_KEYS}
    shared = {k: getattr(args, k) for k in LIMIT_KEYS}
    out = layered_limits(own, registry.spec_limits(engine), shared)
    if isinstance(out["tc"], str):
        out["tc"] = match_mod.parse_tc(out["tc"])
    return out


def _players(args: argparse.Namespace) -> tuple[match_mod.Player, match_mod.Player]:
    """The two players, each engine resolved once here: its spec travels with the player."""
    sa, sb = registry.resolve(args.a), registry.resolve(args.b)
    la, lb = _side_limits(args, "a", sa), _side_limits(args, "b", sb)
    na, nb = args.a, args.b
    if args.a == args.b:
        na, nb = (f"{args.a}@{match_mod.limits_text(**la)}", f"{args.b}@{match_mod.limits_text(**lb)}")
        if na == nb:
            na, nb = na + "#1", nb + "#2"
    return match_mod.Player(na, args.a, **la, resolved=sa), match_mod.Player(nb, args.b, **lb, resolved=sb)


def _adjudication(args: argparse.Namespace) -> match_mod.Adjudication:
    adj = match_mod.Adjudication(max_plies=args.max_plies)
    if args.no_adjudication:
        adj.resign_moves = adj.draw_moves = 0
    return adj


def _suite(args: argparse.Namespace, pairs: int, distinct: bool = True) -> tuple[list[openings_mod.Opening], str]:
    """The openings of a match's ``pairs`` game pairs: the suite in order (or a seeded shuffle), each
    opening once (``distinct``: a match needs as many openings as pairs; an SPRT may cycle)."""
    path = args.openings or str(openings_mod.default_suite(args.variant))
    suite = openings_mod.load_suite(path, args.variant)
    if distinct and pairs > len(suite):
        raise match_mod.MatchError(f"{pairs} game pairs need {pairs} distinct openings, {path} has {len(suite)}: "
                                   "give a larger --openings suite or fewer --games")
    return openings_mod.order(suite, pairs, args.seed if args.random_openings else None), openings_mod.suite_id(path)


def _paths(args: argparse.Namespace, kind: str) -> tuple[Path, Path]:
    db = Path(args.db) if args.db else RUNS / f"{_safe(args.a)}-vs-{_safe(args.b)}-{args.variant}{kind}.sqlite"
    pgn = Path(args.pgn) if args.pgn else pgn_out.beside(db)
    return db, pgn


class _Score:
    """Running score of A for the progress bar."""

    def __init__(self, a: str) -> None:
        self.a = a
        self.wdl = [0, 0, 0]

    def add(self, g: Any) -> None:
        s = g.score_for(self.a)
        self.wdl[0 if s == 1 else 1 if s == 0.5 else 2] += 1

    def text(self) -> str:
        return f"{self.a} {score_text(*self.wdl)}"


def _bughouse_match(args: argparse.Namespace) -> int:
    """``match --variant bughouse``: the four-seat server of experiments/harness/bughouse.py (teams of
    two seats; limits go in the team specs, e.g. ``bughouse-mcts:nodes=400``, and ``--tc``)."""
    unsupported = [f"--{k.replace('_', '-')}" for k in ("nodes", "nodes_a", "nodes_b", "evals", "evals_a", "evals_b",
                                                        "playouts", "playouts_a", "playouts_b",
                                                        "depth", "depth_a", "depth_b",
                                                        "movetime", "movetime_a", "movetime_b", "tc_a", "tc_b",
                                                        "openings")
                   if getattr(args, k) is not None]
    if unsupported or args.backend == "ray" or args.random_openings:
        raise match_mod.MatchError(f"bughouse matches take no {' '.join(unsupported) or 'such option'}: put limits in the "
                                   "team specs (e.g. bughouse-mcts:nodes=400) and give --tc BASE+INC")
    bug = argparse.Namespace(a=args.a, b=args.b, games=args.games, tc=args.tc or "60+0", seed=args.seed,
                             db=args.db, bpgn=args.pgn, max_plies=args.max_plies or 600, quiet=args.quiet,
                             workers=args.workers)
    return cmd_bughouse_match(bug)


def cmd_match(args: argparse.Namespace) -> int:
    if args.games < 1:
        raise match_mod.MatchError("--games must be at least 1")
    if variant_of(args.variant).boards > 1:
        return _bughouse_match(args)
    a, b = _players(args)
    ops, suite_path = _suite(args, (args.games + 1) // 2)
    tasks = match_mod.match_tasks("match", args.variant, a, b, ops, args.games, args.seed, suite_path)
    db, pgn = _paths(args, "")
    score = _Score(a.name)
    keys = {t.key for t in tasks}
    with Store(db, lock=True) as store:
        for g in store.games(match=tasks[0].match):
            if g.key in keys:
                score.add(g)
        st = match_mod.play(tasks, store, concurrency=args.concurrency, workers=args.workers,
                            adjudication=_adjudication(args), pgn_path=pgn, on_game=score.add,
                            progress=not args.quiet, desc=f"{a.name} vs {b.name}", postfix=score.text,
                            backend=args.backend or "local", ray_address=args.ray_address)
    print(f"{score.text()}  ({st.played} played, {st.skipped} already stored)")
    print(f"games: {db}  pgn: {pgn}")
    return 0


def cmd_sprt(args: argparse.Namespace) -> int:
    a, b = _players(args)
    test = Sprt(a.name, b.name, args.elo0, args.elo1, args.alpha, args.beta)
    pairs = args.max_games // 2
    if pairs < 1:
        raise match_mod.MatchError("--max-games must be at least 2")
    ops, suite_path = _suite(args, pairs, distinct=False)  # fishtest-style: the book cycles over a long test
    tasks = match_mod.match_tasks("sprt", args.variant, a, b, ops, 2 * pairs, args.seed, suite_path)
    db, pgn = _paths(args, "-sprt")
    keys = {t.key for t in tasks}
    with Store(db, lock=True) as store:
        test.add_games(g for g in store.games(match=tasks[0].match) if g.key in keys)
        if test.state == "continue":
            match_mod.play(tasks, store, concurrency=args.concurrency, workers=args.workers,
                           adjudication=_adjudication(args), pgn_path=pgn, on_game=test.add_game,
                           stop=lambda: test.state != "continue", progress=not args.quiet,
                           desc=f"SPRT {a.name} vs {b.name}", postfix=test.summary,
                           backend=args.backend or "local", ray_address=args.ray_address)
    verdict = {"H1": f"H1 accepted: {a.name} is better (nElo >= {args.elo1:g})",
               "H0": f"H0 accepted: {a.name} is not better (nElo <= {args.elo0:g})",
               "continue": "no decision within --max-games"}[test.state]
    print(test.summary())
    print(verdict)
    print(f"games: {db}")
    return 0


def cmd_tournament(args: argparse.Namespace) -> int:
    t = tournament.load(args.config)
    s = t.settings
    _, games = tournament.play_run(s, t.tasks(), [p.name for p in t.players], progress=not args.quiet,
                                   backend=args.backend, ray_address=args.ray_address)
    rs = ratings_mod.rate(ratings_mod.from_games(games), s.anchor, s.anchor_elo, s.bootstrap, s.seed, progress=True)
    print(ratings_mod.format_table(rs))
    if games:
        try:
            page = webpage.database_page(s.db, Path(s.db).with_suffix(".html"), s.name, s.bootstrap, s.anchor,
                                         s.anchor_elo)
            print(f"page: {page}")
        except (ValueError, OSError) as e:  # the games are stored and rated: the page is extra
            print(f"searchbench: no page written: {e}", file=sys.stderr)
    return 0


def _run_flags(run: Any, args: argparse.Namespace) -> None:
    """The command line's --report-dir, --backend and --ray-address over a config's own."""
    if args.report_dir:
        run.report_dir = check_dir(args.report_dir, "report folder")
    if args.backend:
        run.settings.backend = args.backend
    if args.ray_address:
        run.settings.ray_address = args.ray_address


def cmd_tune(args: argparse.Namespace) -> int:
    t = tune.load(args.config)
    _run_flags(t, args)
    theta, rows, paths = tune.run(t, "searchbench tune " + shlex.quote(str(args.config)), progress=not args.quiet,
                                  verify=not args.no_verify)
    print("tuned: " + ", ".join(f"{p.name}={p.text(theta[p.name])}" for p in t.params))
    _print_rows(rows)
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_scale(args: argparse.Namespace) -> int:
    sc = scale.load(args.config)
    _run_flags(sc, args)
    command = "searchbench scale " + shlex.quote(str(args.config))
    if args.compare:
        shipped = Path(args.compare) / "elo_vs_nodes.csv"
        if not shipped.is_file():
            raise InputError(f"--compare: no report {str(shipped)!r}")
    _, paths = scale.run(sc, command, progress=not args.quiet)
    print("figure: " + ", ".join(str(p) for p in paths))
    if args.compare:
        games, cost = scale.compare_tables(sc.out_dir / "elo_vs_nodes.csv", Path(args.compare) / "elo_vs_nodes.csv")
        state, moved = played.status(args.compare)
        if state == "stale":  # its players have moved since: a difference is expected, not a fault
            print(f"the shipped report {args.compare} is stale ({moved[0]}); its games are not "
                  f"today's, so its table is not expected to match: `searchbench refresh --only "
                  f"{Path(args.compare).name}` plays it again")
        if games:
            print(f"the Elo table DIFFERS from the shipped report {args.compare} in {len(games)} place(s):")
            for d in games:
                print("  " + d)
        else:
            print(f"the games and the Elo table equal the shipped report {args.compare} (every row: Elo, interval, "
                  "games, score); seconds per move depend on the machine")
        if cost:
            print(f"the cost per move differs in {len(cost)} place(s):")
            for d in cost:
                print("  " + d)
        elif not games:
            print("nodes and evaluator calls per move equal the shipped ones too")
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    ab = ablate.load(args.config)
    _run_flags(ab, args)
    rows, paths = ablate.run(ab, ablate.cli_command(str(args.config)), progress=not args.quiet)
    _print_rows(rows)
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    """List the stale reports (config, games, estimated cost, what moved); unless --dry-run, play
    each again with its own command, its old finding kept in its config's notes; redraw the answer page."""
    folders = [Path(f) for f in args.reports] or [Path(args.index)]
    for f in folders:
        if not f.is_dir():
            raise InputError(f"{str(f)!r}: not a report folder")
    stale = refresh.find(folders, Path.cwd())
    if args.only:
        def names(s: refresh.Stale) -> set[str]:
            # a report answers to its name, its folder and its folder below the index (ab-vs-mcts/rise-chess)
            under = [str(s.folder.relative_to(f)) for f in folders if s.folder.is_relative_to(f)]
            return {s.name, str(s.folder), *under}
        wanted = {w.rstrip("/") for w in args.only}
        unknown = sorted(wanted - set().union(*(names(s) for s in stale)))
        if unknown:
            raise InputError(f"--only: no stale report named {', '.join(unknown)} (stale: "
                             f"{', '.join(s.name for s in stale) or 'none'})")
        stale = [s for s in stale if names(s) & wanted]
    total = sum(s.cpu_seconds for s in stale if s.config is not None)
    print(f"{len(stale)} stale report(s); about {total / 3600:.1f} CPU hours to play those with a config again"
          + (" (estimates: games x plies x the seconds a move recorded)" if stale else ""))
    for s in stale:
        print(f"  {s.folder}: {s.games} games, about {s.cpu_seconds / 3600:.2f} CPU hours, "
              + (s.command if s.config is not None else f"CANNOT BE PLAYED AGAIN: {s.missing}"))
        for why in refresh.grouped(s.why):
            print(f"      {why}")
    if args.dry_run:
        return 0
    day = refresh.today()
    for s in (s for s in stale if s.config is not None):
        assert s.config is not None
        refresh.keep_before(s.config, refresh.before_text(s, day))
        aside = refresh.set_aside(s.db, day) if s.db is not None else None
        # a tuning's state goes with its games: kept only beside a database of today's games (resumed)
        kept_db = aside is None and s.db is not None and s.db.is_file()
        state = refresh.set_aside_state(s.state, day) if s.state is not None and not kept_db else None
        print(f"refresh {s.folder}: {s.command}" + (f" (the old games kept in {aside})" if aside else "")
              + (f" (the old tuning's state in {state})" if state else ""))
        words = shlex.split(s.command)[1:] + (["--quiet"] if args.quiet else [])
        sub_args = build_parser(words[0]).parse_args(words)
        code = sub_args.func(sub_args)
        if code:
            return int(code)
    if Path(args.index).is_dir():
        print(page.index_page(args.index))
    unplayable = [s for s in stale if s.config is None]
    return 1 if unplayable else 0


def cmd_deep_agreement(args: argparse.Namespace) -> int:
    suite = openings_mod.resolve_suite(args.openings) if args.openings else openings_mod.default_suite(args.variant)
    rows, kept = deep_agreement.measure(args.engines, args.variant, suite, positions=args.positions, seed=args.seed,
                                        reference=args.reference, reference_nodes=args.reference_nodes,
                                        progress=not args.quiet)
    if args.json:
        print(json.dumps([{"engine": r.engine, "positions": r.positions, "agree": r.agree, "failed": r.failed,
                           "interval": list(r.interval()), "calls": r.evals} for r in rows]))
    else:
        print(deep_agreement.format_table(rows, args.reference, args.reference_nodes))
        if kept < args.positions:
            print(f"({args.positions - kept} positions where {args.reference} gave no move left out)")
    return 0


def cmd_ship(args: argparse.Namespace) -> int:
    """The pre-registered ship test of a candidate network (experiments.harness.ship)."""
    t = ship.load(args.config)
    candidate = args.candidate
    if not Path(candidate).is_file():
        raise InputError(f"candidate network {candidate!r}: no such file")
    registry.load_evaluator(FAMILIES[t.family].evaluator_name, weights=candidate).close()  # a network of the family
    shipped = t.shipped
    if file_id(candidate).split(":")[1] == file_id(shipped).split(":")[1]:
        raise InputError(f"{candidate} is the shipped network itself ({file_id(shipped)})")
    print(f"ship test {t.path}: {candidate} ({file_id(candidate)}) against the shipped {file_id(shipped)}, "
          f"{t.settings.variant}, openings {t.settings.openings} seed {t.settings.seed}")
    for p in t.points:
        print(f"  {p.name}: {p.engine} at {p.axis} {p.budget:g}, {p.games} games; ships only if {p.rule()}")
    games, seconds = ship.estimate(t)
    print(f"cost: {games} games, about {seconds / 3600:.1f} CPU hours (estimate: {ship.PLIES} plies a game)")
    if args.dry_run:
        return 0
    out = ship.out_dir(t, candidate)
    command = f"searchbench ship {shlex.quote(candidate)} --config {shlex.quote(str(args.config))}"
    rows = {}
    for p in t.points:
        played_rows, _ = ablate.run(ship.ablation(t, p, candidate, out), command, progress=not args.quiet)
        rows[p.name] = played_rows[0]
    ok, lines = ship.verdict(t, rows)
    for line in lines:
        print(line)
    print(f"games and reports in {out}")
    if not ok:
        print(f"verdict: keep {Path(shipped).name} (a rule failed)")
        return 1
    if not args.apply:
        print("verdict: every rule holds; ship it with --apply")
        return 0
    dest = ship.apply(t, candidate, lines)
    print(f"verdict: shipped as {dest} (the default of {t.settings.variant} now; {Path(shipped).name} kept; model card "
          f"{dest.with_suffix('.md')})")
    return 0


def _print_rows(rows: Any) -> None:
    """One line per ablation row: variant, budget, W-D-L, Elo with its interval, the SPRT's LLR."""
    for r in rows:
        verdict = f"  LLR {r.llr:+.2f} {r.verdict}" if r.llr is not None else ""
        if decided_early(r.decided_at, r.games):
            verdict += f" (decided after {r.decided_at} pairs; the games in flight then are counted too)"
        print(f"{r.variant:<28} {r.axis} {r.budget:<8g} {r.wdl[0]}-{r.wdl[1]}-{r.wdl[2]}  "
              f"Elo {r.elo:+.0f} [{r.lo:+.0f}, {r.hi:+.0f}]{verdict}")


def cmd_accept_int8(args: argparse.Namespace) -> int:
    ab = ablate.load(args.config)
    _run_flags(ab, args)
    accept.int8_variant(ab)  # a config that cannot decide is refused before any game
    from evaluators.onnx_runtime import read_verdicts_strict, verdicts_file  # deferred: loads torch

    for shipped in (True, False):  # a damaged verdicts file is refused before any game, not after
        read_verdicts_strict(verdicts_file(shipped))
    rows, paths = ablate.run(ab, "searchbench accept-int8 " + shlex.quote(str(args.config)), progress=not args.quiet)
    _print_rows(rows)
    v = accept.record(ab, rows, replace=getattr(args, "replace_verdict", False))
    at = v.entry.get("decided_at_pairs")
    crossed = f" (its bound crossed after {at} pairs)" if at and at * 2 < v.entry["games"] else ""
    print(f"int8 {v.network} ({v.variant}): {v.verdict} at {v.entry['nodes']} nodes{crossed}, LLR {v.entry['llr']:+.2f} "
          f"over {v.entry['games']} games [elo0 {v.entry['elo0']:g}, elo1 {v.entry['elo1']:g}]; recorded in {v.path}")
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_ratings(args: argparse.Namespace) -> int:
    with Store(args.db, readonly=True) as store:  # a reader: the file is never changed
        games = store.games(run=args.run) if args.run else store.games()
        if not games:
            raise ratings_mod.RatingError("no games in the database" + (f" for run {args.run!r}" if args.run else ""))
        parts = ratings_mod.groups(ratings_mod.from_games(games))
        if args.anchor is not None and not any(args.anchor in {r.white for r in g} | {r.black for r in g} for g in parts):
            raise ratings_mod.RatingError(f"anchor {args.anchor!r} played no game")
        for k, part in enumerate(parts, 1):
            anchor = ratings_mod.group_anchor(part, args.anchor)
            elo = args.anchor_elo if anchor == args.anchor else 0.0
            if len(parts) > 1:  # groups that never met are rated apart, each against its own anchor
                print(f"{'' if k == 1 else chr(10)}group {k} of {len(parts)} (its players never met the other groups'): "
                      f"{anchor} = {elo:g} Elo")
            rs = ratings_mod.rate(part, anchor if len(parts) > 1 or args.anchor else args.anchor, elo, args.bootstrap,
                                  args.seed, progress=True)
            print(ratings_mod.format_table(rs))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Exit 0 when every replayed game agrees with the database, 1 at the first divergence."""
    if is_selfplay_dir(args.db):  # a self-play folder: its games from the run file and their seeds
        if args.game is not None or args.run is not None:
            raise InputError("a self-play folder is replayed by --every only (its games have no keys or runs)")
        outs = replay_selfplay(args.db, every=args.every, progress=not args.quiet)
    else:
        outs = replay(args.db, args.game, args.run, progress=not args.quiet, every=args.every)
    done = [o for o in outs if not o.skipped]
    bad = [o for o in done if o.ply is not None]
    reasons: dict[str, int] = {}
    for o in outs:
        if o.skipped:
            reasons[o.skipped] = reasons.get(o.skipped, 0) + 1
    note = f" (skipped: {', '.join(f'{n} {r}' for r, n in sorted(reasons.items()))})" if reasons else ""
    if bad:
        o = bad[0]
        print(f"game {o.key}: diverges at ply {o.ply + 1 if o.ply is not None else 0} of {o.plies}: stored {o.stored}, "
              f"replayed {o.replayed} ({len(bad)} of {len(done)} games diverge){note}")
        return 1
    print(f"{len(done)} games replayed, every move agrees{note}")
    return 0


def cmd_openings(args: argparse.Namespace) -> int:
    if args.out != "-":
        check_file(args.out, "opening suite", regular=True)  # before the minute of generation, not after
        openings_mod.check_replaceable(args.out)
    lines = openings_mod.generate(args.variant, args.count, seed=args.seed, max_cp=args.max_cp, depth=args.depth,
                                  progress=not args.quiet)
    text = "\n".join(lines) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        openings_mod.write_suite(args.out, text)
        print(f"{len(lines)} openings -> {args.out}")
    return 0


def cmd_bench_harness(args: argparse.Namespace) -> int:
    if args.device is not None:
        conc = 64 if args.concurrency == "auto" else int(args.concurrency)
        r = bench_harness.run_device(args.engine, args.variant, args.games, args.nodes, args.device, conc, args.seed,
                                     args.max_plies)
        print(json.dumps(r) if args.json else bench_harness.format_device(r))
        return 0
    r = bench_harness.run(args.engine, args.variant, args.games, args.nodes, args.concurrency, args.seed,
                          args.max_plies, args.workers, args.pool_threads, args.pool_batch, args.uci_threads,
                          not args.no_single, not args.no_table, args.table_seconds, args.rounds, args.inferences)
    print(json.dumps(r) if args.json else bench_harness.format_table(r))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    if args.index:
        if not Path(args.index).is_dir():
            raise ValueError(f"--index {args.index!r}: not a folder")
        print(page.index_page(args.index))
        if not args.path:
            return 0
    if not args.path:
        raise ValueError("give a results database or a report folder (or --index DIR)")
    path = Path(args.path)
    if path.is_dir():
        games: list[Any] = []
        variant = None
        if args.db:
            if not Path(args.db).is_file():
                raise ValueError(f"--db {args.db!r}: no such database")
            with Store(args.db, readonly=True) as st:
                games = st.games(run=args.run)
            variant = games[0].variant if games else None
        if args.out:
            raise ValueError("--out is for a database; a report folder's page is FOLDER/index.html")
        out = webpage.report_page(path, games, variant, args.db)
    elif path.is_file():
        if args.db:
            raise ValueError("--db is for a report folder; PATH is a database already")
        out = webpage.database_page(path, args.out or path.with_suffix(".html"), args.run, args.bootstrap)
    else:
        raise ValueError(f"{args.path!r}: no such database or report folder")
    print(out)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("match", help="play a match of two engines (resumable; SQLite + PGN); "
                                     "--variant bughouse plays two teams of two seats")
    _add_play_options(p, variants=tuple(v.name for v in ALL))
    p.add_argument("--games", type=count(1), default=20, help="games (openings in colour-reversed pairs)")
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("sprt", help="pentanomial SPRT of A against B over game pairs (fishtest)")
    _add_play_options(p)
    p.add_argument("--elo0", type=number(-1000, 1000), default=0.0, help="H0: normalised Elo of A - B")
    p.add_argument("--elo1", type=number(-1000, 1000), default=10.0, help="H1: normalised Elo of A - B")
    p.add_argument("--alpha", type=number(0, 0.5, lo_open=True), default=0.05, help="false positive rate")
    p.add_argument("--beta", type=number(0, 0.5, lo_open=True), default=0.05, help="false negative rate")
    p.add_argument("--max-games", type=count(2), default=2000)
    p.set_defaults(func=cmd_sprt)

    p = sub.add_parser("tournament", help="round robin or gauntlet from a TOML config")
    p.add_argument("config")
    p.add_argument("--quiet", action="store_true")
    _add_backend_options(p)
    p.set_defaults(func=cmd_tournament)

    p = sub.add_parser("tune", help="tune an engine's options by games (SPSA as fishtest runs it, or Optuna's TPE), "
                                    "then verify the tuned engine against its defaults (a TOML config)")
    p.add_argument("config")
    p.add_argument("--report-dir", help="override the config's report_dir")
    p.add_argument("--no-verify", action="store_true", help="tune only (the verification games are played on "
                                                             "the next run without this flag)")
    p.add_argument("--quiet", action="store_true")
    _add_backend_options(p)
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("scale", help="Elo versus nodes from a TOML config (the main job)")
    p.add_argument("config")
    p.add_argument("--report-dir", help="override the config's report_dir")
    p.add_argument("--compare", metavar="DIR", help="after the run, compare its table with the report in DIR "
                                                    "(all but seconds per move; make run: the shipped one)")
    p.add_argument("--quiet", action="store_true")
    _add_backend_options(p)
    p.set_defaults(func=cmd_scale)

    for name, func, text in (
            ("ablate", cmd_ablate, "variants of an engine against it, per budget: pentanomial Elo intervals, "
                                   "optional SPRT, forest plot (a TOML config)"),
            ("accept-int8", cmd_accept_int8, "play a network's int8 model against its float32 self (an ablation "
                                             "config with an SPRT) and record the verdict inference=auto reads")):
        p = sub.add_parser(name, help=text)
        p.add_argument("config")
        p.add_argument("--report-dir", help="override the config's report_dir")
        p.add_argument("--quiet", action="store_true")
        if name == "accept-int8":
            p.add_argument("--replace-verdict", action="store_true",
                           help="replace a recorded verdict of the same model that says more (decided, or more games)")
        _add_backend_options(p)
        p.set_defaults(func=func)

    p = sub.add_parser("refresh", help="list the stale reports (the config behind each, an estimate of its cost, "
                                       "what moved) and play them again under today's engines; the answer page "
                                       "redrawn at the end")
    p.add_argument("reports", nargs="*", help="report folders, or folders holding them (default: --index)")
    p.add_argument("--dry-run", action="store_true", help="list only")
    p.add_argument("--only", action="append", metavar="NAME", help="only the stale report of this folder name "
                                                                   "(repeatable)")
    p.add_argument("--index", default="reports", help="the answer page's folder (default: reports)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_refresh)

    p = sub.add_parser("deep-agreement", help="how often each engine's move (at the limits its spec sets) is a deep "
                                              "reference engine's move, on positions of an opening suite (Wilson "
                                              "intervals): the soundness check of a search with a network")
    p.add_argument("engines", nargs="+", help="engine specs with their limits (rise-ubfm:evals=256)")
    p.add_argument("--variant", choices=[v.name for v in ONE_BOARD], default=CRAZYHOUSE.name)
    p.add_argument("--openings", help="an EPD suite (default: the variant's shipped suite)")
    p.add_argument("--positions", type=count(1, 100_000), default=100, help="positions drawn from the suite")
    p.add_argument("--seed", type=seed, default=2, help="the draw's seed")
    p.add_argument("--reference", default=deep_agreement.REFERENCE, help="the deep engine (default: fairy-stockfish)")
    p.add_argument("--reference-nodes", type=count(1, 10**9), default=deep_agreement.REFERENCE_NODES,
                   help="the deep engine's nodes a position")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_deep_agreement)

    p = sub.add_parser("ship", help="the pre-registered ship test of a candidate network against the shipped one "
                                    "(a config fixed before its games: points, games, rules); --apply ships a pass")
    p.add_argument("candidate", help="the candidate network (a .pt of the config's family)")
    p.add_argument("--config", required=True, help="the ship test (experiments/configs/ship-*.toml)")
    p.add_argument("--dry-run", action="store_true", help="state the test and its cost only")
    p.add_argument("--apply", action="store_true", help="on a pass, ship the candidate under a new file name")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_ship)

    p = sub.add_parser("ratings", help="Bradley-Terry ratings of the games in a database")
    p.add_argument("db")
    p.add_argument("--run", help="only games of this run (match, sprt, or a config's name)")
    p.add_argument("--anchor")
    p.add_argument("--anchor-elo", type=number(-1e5, 1e5), default=0.0, help="the anchor's rating")
    p.add_argument("--bootstrap", type=count(0), default=200)
    p.add_argument("--seed", type=seed, default=1)
    p.set_defaults(func=cmd_ratings)

    p = sub.add_parser("report", help="a self-contained HTML page (interactive figures, sortable tables, every game "
                                      "on a board) from a results database or a report folder")
    p.add_argument("path", nargs="?", help="a results database (.sqlite) or a report folder (elo_vs_nodes.md, "
                                           "ablation.md or an rl README.md)")
    p.add_argument("--db", help="with a report folder: the database of its games (else a page without games)")
    p.add_argument("--run", help="only games of this run")
    p.add_argument("--out", help="the page (default: DB.html beside a database; FOLDER/index.html)")
    p.add_argument("--index", metavar="DIR", help="write DIR/index.html listing every report below DIR with its finding")
    p.add_argument("--bootstrap", type=count(0), default=200)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("replay", help="play stored games again move by move: the first divergence (exit 1) or "
                                      "that every move agrees")
    p.add_argument("db", help="a results database, or a self-play folder (its selfplay.json and shards)")
    p.add_argument("--game", help="only the game with this key")
    p.add_argument("--run", help="only the games of this run")
    p.add_argument("--every", type=count(1), default=1, help="a sample: every k-th stored game")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("openings", help="generate a balanced opening suite with Fairy-Stockfish")
    p.add_argument("--variant", choices=board.VARIANTS, default=CRAZYHOUSE.name)
    p.add_argument("--count", type=count(1), default=50)
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--depth", type=count(1), default=12)
    p.add_argument("--max-cp", type=int, help="keep positions within this score (default 60 chess, 150 crazyhouse)")
    p.add_argument("--out", default="-", help="output EPD file ('-': stdout)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_openings)


def register_bench(bsub: Any) -> None:
    p = bsub.add_parser("harness", help="games/hour: pooled in-process games vs one game at a time via UCI")
    p.add_argument("--engine", default="rise-mcts")
    p.add_argument("--variant", choices=board.VARIANTS, default=CRAZYHOUSE.name)
    p.add_argument("--games", type=int, default=8)
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--concurrency", default="auto", help="games at once per pooled process (auto: from the batch)")
    p.add_argument("--workers", default="auto", help="processes on the pooled side (auto: measured)")
    p.add_argument("--pool-threads", default="auto", help="torch threads per pooled process (auto: measured)")
    p.add_argument("--pool-batch", default="auto", help="largest network batch on the pooled side (auto: measured)")
    p.add_argument("--uci-threads", default="1,2", help="UCI baselines to run, by Threads (1 is the default)")
    p.add_argument("--no-single", action="store_true", help="skip the in-process one-game-at-a-time row")
    p.add_argument("--no-table", action="store_true", help="skip the raw-network table (then no auto-tuning)")
    p.add_argument("--table-seconds", type=positive_float, default=0.25, help="seconds per network-table trial")
    p.add_argument("--rounds", type=int, default=1, help="play every row this often, alternating; best round kept")
    p.add_argument("--device", default=None, help="auto, cpu, cuda or cuda:N: pooled play with the network there, "
                                                  "as a share of the raw network's throughput (no UCI rows)")
    p.add_argument("--max-plies", type=int, default=200)
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--inferences", default="", help="pooled rows with the network in each of these inference "
                                                    "modes, side by side (e.g. onnxruntime,onnxruntime-int8)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_bench_harness)
