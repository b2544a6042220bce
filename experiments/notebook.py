"""searchbench from Python, as a notebook uses it: play a match, run a config, read a results
database as rows (or a pandas DataFrame where pandas is installed), without the command line::

    from experiments import notebook as sb

    summary = sb.match("rise-mcts", "material-mcts", variant="crazyhouse", games=4, nodes=32,
                       db="runs/nb.sqlite")                  # {'wins': .., 'score': .., 'db': ..}
    rows = sb.games("runs/nb.sqlite")                        # one dict a game
    df = sb.frame("runs/nb.sqlite")                          # the same rows as a DataFrame
    sb.run("experiments/configs/zh-switches.toml")            # a scale or ablation config: its rows

The games are the command line's: the same engines (any spec ``searchbench engines`` lists), the same
openings and seeds (a game replays from its stored seed), the same database; a rerun plays only the
missing games.  Bad input raises one :class:`ValueError` with the command line's message.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from board.variants import CHESS, ONE_BOARD
from experiments.harness import ablate, match as match_mod, openings as openings_mod, scale
from experiments.harness.store import Store
from experiments.paths import OutputError, ensure_parent


def match(white: str, black: str, variant: str = CHESS.name, games: int = 2, nodes: int | None = None,
          db: str | Path = "runs/notebook.sqlite", seed: int = 1, concurrency: int = 4, workers: int = 1,
          max_plies: int = 300) -> dict[str, Any]:
    """Play ``games`` games (colour-reversed pairs on distinct openings of the variant's suite)
    between two engine specs at ``nodes`` a move, stored in ``db``; returns the first engine's wins,
    draws, losses and score, with the database and the games played and already stored."""
    for name, v, least in (("games", games, 1), ("concurrency", concurrency, 1), ("workers", workers, 1),
                           ("max_plies", max_plies, 1), ("seed", seed, 0)):
        if not isinstance(v, int) or isinstance(v, bool) or v < least:
            raise ValueError(f"{name} must be a whole number of at least {least}, got {v!r}")
    if nodes is not None and (not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1):
        raise ValueError(f"nodes must be a whole number of at least 1 (or None), got {nodes!r}")
    if variant not in [v.name for v in ONE_BOARD]:
        raise ValueError(f"unknown variant {variant!r}: one of {', '.join(v.name for v in ONE_BOARD)}")
    if Path(db).exists() and not Path(db).is_file():
        raise ValueError(f"database {str(db)!r} exists and is not a file")
    try:
        ensure_parent(db, "database")
    except OutputError as e:
        raise ValueError(str(e)) from None
    a = match_mod.Player(white if white != black else f"{white}#1", white, nodes=nodes)
    b = match_mod.Player(black if white != black else f"{black}#2", black, nodes=nodes)
    suite = str(openings_mod.default_suite(variant))
    mid = match_mod.match_id(variant, a, b, openings_mod.suite_id(suite))
    ops = openings_mod.draw(openings_mod.load_suite(suite, variant), (games + 1) // 2, seed, mid)
    tasks = match_mod.match_tasks("notebook", variant, a, b, ops, games, seed, openings_mod.suite_id(suite))
    keys = {t.key for t in tasks}
    with Store(str(db), lock=True) as store:
        st = match_mod.play(tasks, store, concurrency=concurrency, workers=workers,
                            adjudication=match_mod.Adjudication(max_plies=max_plies), progress=False)
        mine = [g for g in store.games(match=tasks[0].match) if g.key in keys]
    wdl = [0, 0, 0]
    for g in mine:
        s = g.score_for(a.name)
        wdl[0 if s == 1 else 1 if s == 0.5 else 2] += 1
    n = sum(wdl)
    return {"white": a.name, "black": b.name, "wins": wdl[0], "draws": wdl[1], "losses": wdl[2],
            "score": (wdl[0] + 0.5 * wdl[1]) / n if n else None, "played": st.played, "stored": st.skipped,
            "db": str(db)}


def games(db: str | Path, run: str | None = None) -> list[dict[str, Any]]:
    """Every game of ``db`` (of one ``run``: match, a config's name) as a dict: the players, result,
    reason, plies, opening, seed, and the mean nodes, evaluator calls and seconds of each side's moves."""
    out = []
    with Store(str(db), readonly=True) as store:
        for g in store.games(run=run) if run else store.games():
            sides: list[dict[str, float]] = [{}, {}]
            black_first = len(g.opening_fen.split()) > 1 and g.opening_fen.split()[1] == "b"
            for side in (0, 1):
                stats = g.move_stats[(side + black_first) % 2::2]  # the moves after the opening, white's first
                for k in ("nodes", "evals", "time"):
                    sides[side][k] = sum(float(getattr(s, k) or 0) for s in stats) / len(stats) if stats else 0.0
            out.append({"id": g.id, "key": g.key, "run": g.run, "match": g.match, "variant": g.variant,
                        "white": g.white, "black": g.black, "result": g.result, "reason": g.reason,
                        "plies": len(g.moves), "opening": g.opening, "seed": g.seed,
                        "white_nodes": sides[0]["nodes"], "black_nodes": sides[1]["nodes"],
                        "white_evals": sides[0]["evals"], "black_evals": sides[1]["evals"],
                        "white_seconds": sides[0]["time"], "black_seconds": sides[1]["time"]})
    return out


def frame(db: str | Path, run: str | None = None) -> Any:
    """:func:`games` as a pandas DataFrame (pandas is not a dependency: install it to use this)."""
    try:
        import pandas as pd
    except ImportError:
        raise ValueError("frame() needs pandas (pip install pandas); games() gives the same rows as dicts") from None
    return pd.DataFrame(games(db, run))


def run(config: str | Path, progress: bool = False) -> list[dict[str, Any]]:
    """Play a scale or ablation config (resumably, as the command line does) and return its report's
    rows: a scale config's players with their Elo and interval, an ablation's variants by budget."""
    import tomllib

    try:
        data = tomllib.loads(Path(config).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"cannot read config {str(config)!r}: {e}") from None
    if "families" in data:
        sc = scale.load(config)
        scale.run(sc, f"searchbench scale {config}", progress=progress)
        import csv

        with open(sc.out_dir / "elo_vs_nodes.csv", newline="") as f:
            return [dict(r) for r in csv.DictReader(f)]
    if "baseline" in data:
        ab = ablate.load(config)
        rows, _ = ablate.run(ab, ablate.cli_command(str(config)), progress=progress)
        return [{"variant": r.variant, "axis": r.axis, "budget": r.budget, "wins": r.wdl[0], "draws": r.wdl[1],
                 "losses": r.wdl[2], "elo": r.elo, "lo": r.lo, "hi": r.hi, "verdict": r.verdict} for r in rows]
    raise ValueError(f"{config}: run() plays scale and ablation configs; for the others use the command line "
                     "(searchbench rl, tournament, bughouse-report)")


__all__ = ["frame", "games", "match", "run"]
