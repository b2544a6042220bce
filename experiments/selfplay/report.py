"""The rating and the report of a self-play loop (:mod:`experiments.selfplay.loop`), ``[rate]``.

Players: every generation's network of every arm (generation 0 and every trained candidate, kept or
not), each searching with its arm's gate engine at ``rate.nodes``.  Each plays ``rate.games`` games
on distinct openings (colour-reversed pairs): generation 0 all of them against the external anchors,
a later generation half against the anchors and half against its arm's generation 0.  All games go
into one database (``OUT/rate.sqlite`` + PGN) and are rated together (Bradley-Terry, bootstrap over
openings, each opening resampled once across every pairing of a search's pool, since the pairings
play the same openings: :func:`experiments.harness.ratings.from_games`) with the first arm's generation 0 at 0 Elo; the
difference between two arms at a generation comes with its own interval (:meth:`Fit.difference`,
from the same bootstrap replicates).

Keys (defaults in brackets)::

    [rate]  games [100], nodes [64], concurrency [16], workers [1], bootstrap [1000], seed [1],
            anchors [[{name = "fairy-stockfish", engine = "fairy-stockfish", nodes = 1000}]],
            heldout [[]] (data directories: searchbench heldout on every generation),
            target_positions [200] (held-out positions on which each arm's self-play target is measured
            against generation 0's prior before any self-play, searchbench targets; 0: not measured),
            report_dir ["reports/NAME"], notes [""] (Markdown printed in the report),
            searches [[]] (tables: name, engine (a spec without weights), nodes, rounds [all], anchors [true],
            games [rate.games] (a comparison), head_swaps [[]] (rounds),
            pairs [[]] (arrays of two self-play arms: at each rated round they play each other))

**Fixed searches** (``[rate] searches``: ratings that can see what training did): every
round's network of every arm is rated under the *same* searches, whatever search its arm played
(e.g. the raw policy, ``nodes = 1``; PUCT at 64 nodes without noise; tuned Gumbel).  Under each
search, one pool: round 0 (one player: every arm starts from the same network) plays ``rate.games``
games against the anchors (unless ``anchors = false``), every rated round of every arm ``rate.games``
against round 0, and every self-play arm's round ``rate.games`` against the control arm's same round;
``rounds`` (default: all) picks the rounds a costly search rates.  Players are ``ARM-gN@SEARCH``.
Each search is fitted on its own games, round 0 at 0 Elo; the report gives each round's gain over
round 0 and each self-play round's difference to the control, with intervals.  ``head_swaps``
(rounds) also rates, at each such round, every self-play arm's network with the control's value
head (``value_weights``: :mod:`evaluators.composite`) against that network, and the control's with
the self-play arm's value against the control's: does the value explain the difference?
``pairs`` (``[["gumbel-a", "puct-a"], ["gumbel-b", "puct-b"]]``) plays the two arms' same round head
to head, ``games`` a pair, in the same pool: each pair's difference and, pooled over the pairs (two
seeds of one question), their mean with its interval from the same bootstrap replicates.

The report (``report_dir``): ``index.html`` (:mod:`reports.html`: the figures interactive, the games
on a board), ``ratings.csv`` (player, arm, generation, gate decision, self-play games
and CPU hours so far, Elo with its interval, games, score), ``gates.csv``, ``heldout.csv``, the
figures ``elo_vs_generation``, ``elo_vs_selfplay_games`` and ``elo_vs_cpu_hours`` (PNG + SVG), and
``README.md`` with the command that regenerates everything.  Every run of the loop, rated or not, also
writes ``OUT/generations.md`` and ``.csv`` (:func:`write_generations`).  CPU hours are process CPU
seconds (getrusage: self-play's worker processes, training's threads, the gate's workers), summed up
to the generation.  The report opens with its finding (``notes``), then, computed, each fixed
search's *last* round against round 0 and against the control beside its *best* round.
"""
from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

from engines import registry
from engines.base import EngineError
from experiments.harness import match as match_mod, openings as openings_mod, pgn as pgn_out, ratings as ratings_mod
from experiments.harness.ratings import SWEEP_MARK, SWEEP_NOTE
from experiments.harness.stats import percentile_interval
from experiments.harness.store import Store
from experiments.harness.tasks import MAX_BUDGET
from experiments.harness.tomlconfig import Section, writable_dir
from experiments.harness.webpage import report_page
from experiments.paths import save_atomic, write_atomic
from experiments.selfplay.config import LoopConfig, State, check_suite, weights_of, with_weights
from experiments.selfplay.report_records import _budget, _gates_section, _offline_section, _record, _targets_section


def parse_rate(r: Section, cfg: LoopConfig) -> dict[str, Any]:
    if not r.data:
        return {}
    anchors = []
    players = {_player_name(arm.name, gen) for arm in cfg.arms for gen in range(cfg.generations + 1)}

    budget = lambda v: None if 1 <= v <= MAX_BUDGET else f"must be from 1 to {MAX_BUDGET:,}"  # noqa: E731
    for a in r.tables("anchors") or []:
        anchors.append({"name": a.get("name", str), "engine": a.get("engine", str), "nodes": a.get("nodes", int, None, budget)})
        if anchors[-1]["nodes"] is None:
            raise a.error("nodes", "missing")
        if anchors[-1]["name"] in players or anchors[-1]["name"] in [x["name"] for x in anchors[:-1]]:
            raise a.error("name", f"{anchors[-1]['name']!r} names another player already: each anchor needs a name "
                                  "of its own (games and ratings are kept by name)")
        try:
            spec = registry.resolve(anchors[-1]["engine"])
        except EngineError as e:
            raise a.error("engine", str(e)) from None
        status = registry.availability(spec)
        if status != "ok":
            raise a.error("engine", status)
        a.done()
    if not r.has("anchors"):
        anchors = [{"name": "fairy-stockfish", "engine": "fairy-stockfish", "nodes": 1000}]
    fixed: list[dict[str, Any]] = []
    for t in r.tables("searches") or []:
        sch = {"name": t.get("name", str), "engine": t.get("engine", str), "nodes": t.get("nodes", int, None, budget),
               "rounds": _list_ints(t, "rounds"), "anchors": t.get("anchors", bool, True),
               "head_swaps": _list_ints(t, "head_swaps"), "pairs": _pairs(t, cfg),
               "games": t.get("games", int, 0, lambda v: None if v >= 0 and v % 4 == 0 else "must be a multiple of 4")}
        if not sch["name"].replace("-", "").replace("_", "").isalnum() or sch["name"] in [x["name"] for x in fixed]:
            raise t.error("name", f"{sch['name']!r}: each search needs a name of its own, of letters, digits, - and _")
        for k in ("rounds", "head_swaps"):
            if any(g < 1 or g > cfg.generations for g in sch[k]):
                raise t.error(k, f"rounds are 1 to {cfg.generations} (round 0 is always rated)")
        if sch["head_swaps"] and not any(a.kind == "control" for a in cfg.arms):
            raise t.error("head_swaps", "a head swap takes the control arm's value head: the loop has no control arm")
        try:
            spec = registry.resolve(sch["engine"])
        except EngineError as e:
            raise t.error("engine", str(e)) from None
        if "weights" in spec.options:
            raise t.error("engine", "a rating search takes each round's weights: leave `weights` out")
        if spec.evaluator != cfg.model:
            raise t.error("engine", f"runs the {spec.evaluator} evaluator; the loop's networks are {cfg.model}")
        if sch["nodes"] is None:
            raise t.error("nodes", "missing")
        fixed.append(sch)
        t.done()
    if not anchors:
        raise r.error("anchors", "give at least one anchor (the ratings need a player outside the loop)")
    out = dict(games=r.get("games", int, 100, lambda v: None if v >= 4 and v % 4 == 0 else "must be a multiple of 4"),
               nodes=r.get("nodes", int, 64, budget), concurrency=r.positive("concurrency", 16), workers=r.positive("workers", 1),
               bootstrap=r.get("bootstrap", int, 1000, lambda v: None if v >= 0 else "must be at least 0"),
               target_positions=r.get("target_positions", int, 200, lambda v: None if v >= 0 else "must be at least 0"),
               seed=r.get("seed", int, 1), anchors=anchors, searches=fixed,
               heldout=_strings(r, "heldout"), notes=r.get("notes", str, ""),
               report_dir=r.get("report_dir", str, f"reports/{cfg.name}", check=writable_dir))

    check_suite(r, "games", cfg.gate["openings"], cfg.variant, max([out["games"]] + [x["games"] for x in fixed]) // 2)
    r.done()
    return out


def _pairs(t: Section, cfg: LoopConfig) -> list[tuple[str, str]]:
    """``pairs``: arrays of two distinct self-play arms of the loop."""
    v = t.get("pairs", list, [])
    arms = [a.name for a in cfg.arms if a.kind != "control"]
    out = []
    for x in v:
        if not (isinstance(x, list) and len(x) == 2 and all(isinstance(a, str) and a in arms for a in x) and x[0] != x[1]):
            raise t.error("pairs", f"each pair is two different self-play arms of the loop ({', '.join(arms)}), "
                                   f"not {x!r}")
        out.append((x[0], x[1]))
    return out


def _strings(r: Section, k: str) -> list[str]:
    v = r.get(k, list, [])
    if not all(isinstance(x, str) for x in v):
        raise r.error(k, "must be an array of strings (data directories)")
    return list(v)


def _list_ints(t: Section, k: str) -> list[int]:
    v = t.get(k, list, [])
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise t.error(k, "must be an array of round numbers")
    return sorted(set(v))


def _player_name(arm: str, gen: int, search: str = "", value_of: str = "") -> str:
    """``ARM-gN[@SEARCH]``; ``ARM-gN+vOTHER@SEARCH`` for ARM's network with OTHER's value head (a head swap)."""
    return f"{arm}-g{gen}" + (f"+v{value_of}" if value_of else "") + (f"@{search}" if search else "")


def searches(cfg: LoopConfig) -> list[dict[str, Any]]:
    """The rating searches: ``[rate] searches``, or the one search of the older design (each arm's
    gate engine at ``rate.nodes``, name "")."""
    return cfg.rate.get("searches") or [{"name": "", "engine": "", "nodes": cfg.rate["nodes"], "rounds": [], "anchors": True}]


def player(cfg: LoopConfig, arm: str, gen: int, search: str) -> str:
    """A rated player's name; under a fixed search every arm's round 0 is the same network, one player."""
    return _player_name(cfg.arms[0].name if search and gen == 0 else arm, gen, search)


def rate_and_report(cfg: LoopConfig, states: dict[str, State], progress: bool = True) -> str:
    """Play the rating games (resumable), rate, write the report; returns the report's folder."""
    rt = cfg.rate
    suite = cfg.gate["openings"] or str(openings_mod.default_suite(cfg.variant))
    suite_ops = openings_mod.load_suite(suite, cfg.variant)
    sid = openings_mod.suite_id(suite)
    anchors = [match_mod.Player(a["name"], a["engine"], nodes=a["nodes"]) for a in rt["anchors"]]
    tasks: list[Any] = []
    keys_of: dict[str, set[str]] = {}  # search -> the keys of its games (one fit per search)

    def pairing(sch: str, a: match_mod.Player, b: match_mod.Player, games: int) -> None:
        mid = match_mod.match_id(cfg.variant, a, b, sid)
        ops = openings_mod.draw(suite_ops, games // 2, rt["seed"], mid)
        new = match_mod.match_tasks(cfg.name, cfg.variant, a, b, ops, games, rt["seed"], sid)
        tasks.extend(new)
        keys_of.setdefault(sch, set()).update(t.key for t in new)

    def done(arm: str, gen: int) -> bool:
        return gen == 0 or "gate" in states[arm].gen(gen)

    for sch in searches(cfg):
        name = sch["name"]
        own = registry.as_given(sch["engine"]) if sch["engine"] else None  # resolved once a search

        def make(arm: Any, gen: int, value_of: Any = None) -> match_mod.Player:
            spec = with_weights(own or arm.gate_spec, weights_of(cfg, arm.name, gen))
            if value_of is None:
                return match_mod.Player(player(cfg, arm.name, gen, name), spec.name, nodes=sch["nodes"], resolved=spec)
            spec = registry.extend(spec, {"value_weights": weights_of(cfg, value_of.name, gen)})
            return match_mod.Player(_player_name(arm.name, gen, name, value_of.name), spec.name, nodes=sch["nodes"],
                                    resolved=spec)

        if not name:  # the older design: each arm's generations against its generation 0 and the anchors
            for arm in cfg.arms:
                g0 = make(arm, 0)
                for gen in [g for g in range(cfg.generations + 1) if done(arm.name, g)]:
                    p = make(arm, gen)
                    vs_anchor = rt["games"] if gen == 0 else rt["games"] // 2
                    per = max(2, (vs_anchor // len(anchors)) // 2 * 2)
                    for a in anchors:
                        pairing(name, p, a, per)
                    if gen > 0:
                        pairing(name, p, g0, rt["games"] // 2)
            continue
        # a fixed search: round 0 against the anchors; every rated round against round 0, and each
        # self-play arm's round against the control's, n games a comparison
        n = sch["games"] or rt["games"]
        g0 = make(cfg.arms[0], 0)
        if sch["anchors"]:
            per = max(2, (n // len(anchors)) // 2 * 2)
            for a in anchors:
                pairing(name, g0, a, per)
        rounds = sch["rounds"] or list(range(1, cfg.generations + 1))
        # a loop stopped by gate 1: a round asked for but not played is rated at the last round every
        # arm finished (the report says so)
        last = max(g for g in range(cfg.generations + 1) if all(done(a.name, g) for a in cfg.arms))
        rounds = sorted({min(g, last) for g in rounds} - {0})
        controls = [a for a in cfg.arms if a.kind == "control"]
        by_arm = {a.name: a for a in cfg.arms}
        for gen in rounds:
            for arm in cfg.arms:
                if done(arm.name, gen):
                    pairing(name, make(arm, gen), g0, n)
            for arm in [a for a in cfg.arms if a.kind != "control"]:
                for c in controls:
                    if done(arm.name, gen) and done(c.name, gen):
                        pairing(name, make(arm, gen), make(c, gen), n)
            for x, y in sch.get("pairs", []):
                if done(x, gen) and done(y, gen):
                    pairing(name, make(by_arm[x], gen), make(by_arm[y], gen), n)
        for gen in sorted({min(g, last) for g in sch["head_swaps"]} - {0}):
            for arm in [a for a in cfg.arms if a.kind != "control"]:
                for c in controls:
                    if done(arm.name, gen) and done(c.name, gen):
                        pairing(name, make(arm, gen, c), make(arm, gen), n)
                        pairing(name, make(c, gen, arm), make(c, gen), n)
    db = os.path.join(cfg.out, "rate.sqlite")
    with Store(db, lock=True) as store:
        match_mod.play(tasks, store, concurrency=rt["concurrency"], workers=rt["workers"],
                       adjudication=match_mod.Adjudication(max_plies=cfg.selfplay["max_plies"]),
                       pgn_path=pgn_out.beside(db), progress=progress, desc=f"rate {cfg.name}")
        keys = {t.key for t in tasks}
        games = [g for g in store.games(run=cfg.name) if g.key in keys]
    fits = {}
    for sch in searches(cfg):
        mine = [g for g in games if g.key in keys_of.get(sch["name"], set())]
        fits[sch["name"]] = ratings_mod.fit(ratings_mod.from_games(mine, joint_openings=True), player(cfg, cfg.arms[0].name, 0, sch["name"]),
                                            0.0, rt["bootstrap"], rt["seed"], progress=progress)
    return write_report(cfg, states, fits, games, tasks)


def _cumulative(state: State, gen: int) -> tuple[int, float]:
    """(self-play games, CPU hours) an arm spent up to and including generation ``gen``: process CPU
    seconds (getrusage, the stage's worker processes and threads included), or wall seconds times
    cores for a stage recorded before its CPU was."""
    games, secs = 0, 0.0
    for g in range(1, gen + 1):
        rec = state.gen(g)
        for stage in ("selfplay", "reanalyse", "train", "gate"):
            if stage in rec:
                cpu = rec[stage].get("cpu")
                secs += float(cpu) if cpu is not None else float(rec[stage]["seconds"]) * float(rec[stage]["cores"])
        games += int(rec.get("selfplay", {}).get("games", 0))
    return games, secs / 3600.0


def write_report(cfg: LoopConfig, states: dict[str, State], fits: dict[str, Any], games: list[Any],
                 tasks: list[Any]) -> str:
    """The report of the rating ``fits`` (one a search, :func:`searches`) and the loop's records."""
    out = Path(cfg.rate["report_dir"])
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    anchor_rows: list[dict[str, Any]] = []
    sections: list[dict[str, Any]] = []
    for sch in searches(cfg):
        name, fit = sch["name"], fits[sch["name"]]
        by_name = {r.name: r for r in fit.ratings}
        mine = []
        for arm in cfg.arms:
            st = states[arm.name]
            for gen in range(cfg.generations + 1):
                r = by_name.get(player(cfg, arm.name, gen, name))
                if r is None:
                    continue
                sp_games, hours = _cumulative(st, gen)
                gate = st.gen(gen).get("gate", {}) if gen else {}
                mine.append({"player": r.name, **({"search": name} if name else {}), "arm": arm.name, "generation": gen,
                             "gate": "" if gen == 0 else ("accepted" if gate.get("accepted") else "rejected"),
                             "selfplay_games": sp_games, "cpu_hours": round(hours, 3), "elo": round(r.elo, 1),
                             "lo": round(r.lo, 1), "hi": round(r.hi, 1), "games": r.games, "score": round(r.score, 4),
                             "sweep_bounded": r.sweep_bounded})
        swaps = []  # (network with another's value, the network itself, difference, interval)
        for r in fit.ratings:
            if "+v" in r.name:
                base = r.name.split("+v")[0] + (f"@{name}" if name else "")
                if base in fit.names:
                    swaps.append((r.name, base, *fit.difference(r.name, base)))
        anchors = [r for r in fit.ratings if "+v" not in r.name and not any(r.name == row["player"] for row in mine)]
        anchor_rows += [_outside_row(by_name[ns], name, "head swap") for ns, *_ in swaps]
        anchor_rows += [_outside_row(a, name, "anchor") for a in anchors]
        rows += mine
        suffix = f"_{name}" if name else ""
        figures = [_figure(out, mine, x, label, anchors, suffix, name) for x, label in
                   (("generation", "generation"), ("selfplay_games", "self-play games"), ("cpu_hours", "CPU hours"))]
        gains = []  # each generation against round 0 (its arm's generation 0), from the same bootstrap
        for r in mine:
            g0 = player(cfg, r["arm"], 0, name)
            if r["generation"] != 0 and g0 in fit.names:
                gains.append((r["player"], *fit.difference(r["player"], g0)))
        diffs = []  # (generation, second arm minus first, its interval, gain of the second minus gain of the first, interval)
        controls = []  # (self-play arm's player, control's player, difference, interval): they played each other
        if name:
            for arm in [a for a in cfg.arms if a.kind != "control"]:
                for c in [a for a in cfg.arms if a.kind == "control"]:
                    for gen in range(1, cfg.generations + 1):
                        na, nc = player(cfg, arm.name, gen, name), player(cfg, c.name, gen, name)
                        if na in fit.names and nc in fit.names:
                            controls.append((na, nc, *fit.difference(na, nc)))
        elif len(cfg.arms) >= 2:
            a, b = cfg.arms[1].name, cfg.arms[0].name
            for gen in range(cfg.generations + 1):
                na, nb = _player_name(a, gen), _player_name(b, gen)
                if na in fit.names and nb in fit.names:
                    diffs.append((gen, *fit.difference(na, nb), *_gain_difference(fit, a, b, gen)))
        heads = []  # (round, [(a's player, b's player, difference, lo, hi)], pooled (d, lo, hi) or None)
        for gen in range(1, cfg.generations + 1):
            met = [(player(cfg, x, gen, name), player(cfg, y, gen, name)) for x, y in sch.get("pairs", [])]
            met = [(pa, pb) for pa, pb in met if pa in fit.names and pb in fit.names]
            if met:
                heads.append((gen, [(pa, pb, *fit.difference(pa, pb)) for pa, pb in met],
                              fit.mean_difference(met) if len(met) > 1 else None))
        sections.append({"search": sch, "rows": mine, "anchors": anchors, "figures": figures, "gains": gains,
                         "diffs": diffs, "controls": controls, "swaps": swaps, "heads": heads})
    _write_csv(out / "ratings.csv", rows + anchor_rows)
    gates = [{"arm": arm.name, "generation": g, **{k: v for k, v in states[arm.name].gen(g).get("gate", {}).items()}}
             for arm in cfg.arms for g in range(1, cfg.generations + 1)
             if states[arm.name].gen(g).get("gate", {}).get("games")]
    if gates:
        _write_csv(out / "gates.csv", gates)
    # each generation's model card, beside the report (the weights stay in OUT)
    for arm in cfg.arms:
        for gen in range(1, cfg.generations + 1):
            card = Path(cfg.gen_dir(arm.name, gen)) / "card.md"
            if card.exists():
                (out / "cards").mkdir(exist_ok=True)
                write_atomic(out / "cards" / f"{_player_name(arm.name, gen)}.md", card.read_text(), "model card")
    nets = ((cfg.arms[0].name if r["generation"] == 0 and "search" in r else r["arm"], int(r["generation"])) for r in rows)
    networks = list(dict.fromkeys((_player_name(a, g), a, g) for a, g in nets))
    held = _heldout(cfg, networks)
    openings = len({(g.opening_fen, g.match) for g in games})
    text = _markdown(cfg, sections, gates, held, len(games), openings)
    write_atomic(out / "README.md", text, "report")

    report_page(out, games, cfg.variant, os.path.join(cfg.out, "rate.sqlite"))
    return str(out)


def _outside_row(r: Any, search: str, kind: str) -> dict[str, Any]:
    """A ratings.csv row of a player outside the loop's rounds (an anchor, a head swap)."""
    return {"player": r.name, **({"search": search} if search else {}), "arm": kind, "generation": "", "gate": "",
            "selfplay_games": "", "cpu_hours": "", "elo": round(r.elo, 1), "lo": round(r.lo, 1), "hi": round(r.hi, 1),
            "games": r.games, "score": round(r.score, 4)}


def _gain_difference(fit: Any, a: str, b: str, gen: int) -> tuple[float, float, float]:
    """(gain of arm ``a`` over its generation 0) minus (gain of arm ``b``) at ``gen``, with the 95%
    interval from the same bootstrap replicates: the test of whether one arm's training improves
    the network more, whatever the two searches' strength as players."""
    ix = [fit.names.index(_player_name(arm, g)) for arm, g in ((a, gen), (a, 0), (b, gen), (b, 0))]
    d = float(fit.elo[ix[0]] - fit.elo[ix[1]] - fit.elo[ix[2]] + fit.elo[ix[3]])
    if not len(fit.samples) or gen == 0:
        return d, d, d
    s = fit.samples
    lo, hi = percentile_interval(s[:, ix[0]] - s[:, ix[1]] - s[:, ix[2]] + s[:, ix[3]])
    return d, lo, hi


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
    write_atomic(path, buf.getvalue(), "report table")


def _heldout(cfg: LoopConfig, networks: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """``searchbench heldout`` of every (name, arm, generation) network."""
    from experiments.training.policy_value import heldout  # deferred: loads torch

    data = [d for d in cfg.rate["heldout"] if os.path.exists(d)]
    if not data:
        return []
    paths = [(name, weights_of(cfg, arm, int(gen))) for name, arm, gen in networks]
    res = heldout([p for _, p in paths], data)
    out = [{"player": name, "policy_top1": round(r["val_policy_acc"], 4), "value_sign": round(r["val_value_sign_acc"], 4),
            "policy_loss": round(r["val_policy_loss"], 4), "value_loss": round(r["val_value_loss"], 4),
            "positions": int(r["val_positions"])} for (name, _), r in zip(paths, res)]
    _write_csv(Path(cfg.rate["report_dir"]) / "heldout.csv", out)
    return out


def _figure(out: Path, rows: list[dict[str, Any]], x: str, label: str, anchors: list[Any], suffix: str = "",
            search: str = "") -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for arm in dict.fromkeys(r["arm"] for r in rows):
        pts = [r for r in rows if r["arm"] == arm]
        xs = [float(r[x]) for r in pts]
        ys = [r["elo"] for r in pts]
        # a percentile interval of few bootstrap replicates may leave out its own point: no negative bar
        err = [[max(0.0, r["elo"] - r["lo"]) for r in pts], [max(0.0, r["hi"] - r["elo"]) for r in pts]]
        line = ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=arm)
        rej = [r for r in pts if r["gate"] == "rejected"]
        ax.scatter([float(r[x]) for r in rej], [r["elo"] for r in rej], s=80, facecolors="none",
                   edgecolors=line[0].get_color(), marker="s")
    ax.axhline(0.0, color="grey", lw=0.8, ls=":")
    for a in anchors:  # the external anchors as dotted lines (read a generation against them)
        ax.axhline(a.elo, color="black", lw=0.8, ls="--")
        ax.annotate(a.name, (ax.get_xlim()[0], a.elo), fontsize=8, va="bottom")
    ax.set_xlabel(label)
    ax.set_ylabel("Elo (first arm's generation 0 = 0), 95% interval")
    ax.set_title(f"every round rated under the fixed search {search!r}" if search else
                 "self-play generations (squares: rejected by the gate)", fontsize=10)
    ax.legend()
    fig.tight_layout()
    stem = f"elo_vs_{x}{suffix}"
    for ext in ("png", "svg"):
        save_atomic(out / f"{stem}.{ext}", lambda tmp: fig.savefig(tmp, dpi=110, format=ext), "figure")
    plt.close(fig)
    return stem


def _search_lines(cfg: LoopConfig, sec: dict[str, Any], rounds: bool) -> list[str]:
    """One rating search's part of the report: every round's Elo, its figures, each round against
    round 0, the control, the head to head, the head swaps and (the older design) the arms' difference."""
    lines: list[str] = []
    name = sec["search"]["name"]
    head = f" under `{name}`" if name else ""
    rows, anchors = sec["rows"], sec["anchors"]
    lines += [f"## Elo of every {'round' if rounds else 'generation'}{head}", "",
              "| player | arm | gen | gate | self-play games | CPU h | Elo | 95% | games | score |",
              "|---|---|---:|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['player']} | {r['arm']} | {r['generation']} | {r['gate']} | {r['selfplay_games']} | "
                     f"{r['cpu_hours']:.2f} | {r['elo']:+.0f} | [{r['lo']:+.0f}, {r['hi']:+.0f}]"
                     f"{' ' + SWEEP_MARK if r.get('sweep_bounded') else ''} | {r['games']} | {r['score']:.3f} |")
    for a in anchors:
        lines.append(f"| {a.name} | anchor | | | | | {a.elo:+.0f} | [{a.lo:+.0f}, {a.hi:+.0f}]"
                     f"{' ' + SWEEP_MARK if a.sweep_bounded else ''} | {a.games} | {a.score:.3f} |")
    if any(r.get("sweep_bounded") for r in rows) or any(a.sweep_bounded for a in anchors):
        lines += ["", SWEEP_NOTE]
    lines += [""] + [f"![{f}]({f}.png)" for f in sec["figures"]] + [""]
    if sec["gains"]:
        lines += [f"### Each {'round' if rounds else 'generation'} against {'round' if rounds else 'its arm' + chr(39) + 's generation'} 0{head}", "",
                  "| player | Elo over 0 | 95% interval | verdict |", "|---|---:|---|---|"]
        for pname, d, lo, hi in sec["gains"]:
            verdict = "stronger" if lo > 0 else "weaker" if hi < 0 else "no difference shown"
            lines.append(f"| {pname} | {d:+.0f} | [{lo:+.0f}, {hi:+.0f}] | {verdict} |")
        lines.append("")
    if sec["controls"]:
        lines += [f"### Self-play against the control, round by round{head}", "",
                  "| self-play | control | Elo difference | 95% interval | verdict |", "|---|---|---:|---|---|"]
        for na, nc, d, lo, hi in sec["controls"]:
            verdict = "self-play stronger" if lo > 0 else "control stronger" if hi < 0 else "no difference shown"
            lines.append(f"| {na} | {nc} | {d:+.0f} | [{lo:+.0f}, {hi:+.0f}] | {verdict} |")
        lines.append("")
    if sec.get("heads"):
        lines += [f"### Head to head{head}", "",
                  "Each pair's same round played against each other in this pool; pooled: the mean of the "
                  "pairs' differences (seeds of one question), its interval from the same bootstrap replicates.", "",
                  "| round | player | against | Elo difference | 95% interval | verdict |", "|---:|---|---|---:|---|---|"]
        for gen, met, pooled in sec["heads"]:
            for pa, pb, d, lo, hi in met:
                lines.append(f"| {gen} | {pa} | {pb} | {d:+.0f} | [{lo:+.0f}, {hi:+.0f}] | {_verdict(lo, hi)} |")
            if pooled is not None:
                d, lo, hi = pooled
                signs = {(x[2] > 0) - (x[2] < 0) for x in met}
                agree = "the pairs agree in sign" if len(signs) == 1 else "the pairs differ in sign"
                lines.append(f"| {gen} | pooled | | {d:+.0f} | [{lo:+.0f}, {hi:+.0f}] | {_verdict(lo, hi)}; {agree} |")
        lines.append("")
    if sec.get("swaps"):
        lines += [f"### Head swaps{head}", "",
                  "Each network with another arm's value head (`value_weights`: the policy and the search its "
                  "own) against the same network whole: what the value head is worth to the searched player.", "",
                  "| network with the other's value | against | Elo difference | 95% interval | verdict |",
                  "|---|---|---:|---|---|"]
        for ns, nb, d, lo, hi in sec["swaps"]:
            verdict = "the other's value stronger" if lo > 0 else "own value stronger" if hi < 0 else "no difference shown"
            lines.append(f"| {ns} | {nb} | {d:+.0f} | [{lo:+.0f}, {hi:+.0f}] | {verdict} |")
        lines.append("")
    if sec["diffs"]:
        a, b = cfg.arms[1].name, cfg.arms[0].name
        lines += [f"## {a} minus {b}, generation by generation", "",
                  "As players (each with its own search), and as training: the gain over its own generation 0 "
                  f"of {a} minus that of {b} (the paper's question; intervals from the same bootstrap).", "",
                  "| generation | players: Elo difference | 95% interval | training: gain difference | 95% interval | verdict on training |",
                  "|---:|---:|---|---:|---|---|"]
        for gen, d, lo, hi, gd, glo, ghi in sec["diffs"]:
            verdict = "" if gen == 0 else (f"{a} improves more" if glo > 0 else f"{b} improves more" if ghi < 0
                                           else "no difference shown")
            gain = "" if gen == 0 else f"{gd:+.0f} | [{glo:+.0f}, {ghi:+.0f}]"
            lines.append(f"| {gen} | {d:+.0f} | [{lo:+.0f}, {hi:+.0f}] | {gain or ' | '} | {verdict} |")
        lines.append("")
    return lines


def _markdown(cfg: LoopConfig, sections: list[dict[str, Any]], gates: list[dict[str, Any]], held: list[dict[str, Any]],
              n_games: int, n_openings: int) -> str:
    sp, tr, gt, rt = cfg.selfplay, cfg.train, cfg.gate, cfg.rate
    rounds = cfg.mode == "rounds"
    lines = [f"# Self-play loop: {cfg.name}", ""]
    if rt["notes"]:  # the finding first, then the command that regenerates it
        lines += [rt["notes"].strip(), ""]
    lines += _headline(sections, rounds)
    lines += ["Regenerate (every stage resumes; finished games and generations are not played again):", "",
              "```", f"searchbench rl {cfg.path}", "```", ""]
    fixed = [x["search"] for x in sections if x["search"]["name"]]
    window = (f"the newest rounds back to {tr['window_positions']} positions" if tr.get("window_positions")
              else f"window {tr['window']} generations")
    lines += ["## Setup", "",
              f"- {cfg.variant}, family `{cfg.model}`, {'round' if rounds else 'generation'} 0 = `{cfg.initial}`; "
              f"{cfg.generations} {'rounds (one network trained continuously)' if rounds else 'generations'}",
              *[f"- arm `{a.name}`: " + ("control: no self-play; each round trains on the supervised data alone for the "
                                          "CPU seconds the self-play arm spent on that round" if a.kind == "control" else
                                          f"self-play `{a.engine}` (+ exploration)"
                                          + ("" if fixed else f", gate and rating `{a.gate_engine}`"))
                for a in cfg.arms],
              f"- self-play: {sp['games']} games a {'round' if rounds else 'generation'} at {_budget(cfg)} a move, "
              f"random opening plies {sp['min_random_plies']}-{sp['max_random_plies']}, draw at "
              f"{sp['max_plies']} plies",
              f"- training: {window}, {tr['epochs']} epoch(s), "
              + (f"from the latest weights and optimizer state, learning rate {tr.get('lr')} constant"
                 if rounds else "from the best network")
              + f"; q_weight {tr['q_weight']}; supervised {tr['supervised'] or 'none'}"
              + (f" ({tr['supervised_fraction']:.0%} of the positions, times {tr['supervised_taper']:g} a round)"
                 if tr.get("supervised_fraction") else ""),
              ("- gate: " + (f"{gt['games']} games at {gt['nodes']} nodes on distinct openings, "
                             + (f"SPRT [{gt['elo0']:g}, {gt['elo1']:g}]" if gt["sprt"] else f"accept at score >= {gt['threshold']:g}"))
               if gt.get("enabled", True) else "- no gate: each round goes on from the last"),
              f"- rating: {n_games} games on {n_openings} distinct (opening, pairing) pairs; "
              + ("every round's network under the same fixed searches: "
                 + "; ".join(f"`{x['name']}` = `{x['engine']}` at {x['nodes']} node{'s' if x['nodes'] > 1 else ''}"
                             + (f" (rounds {', '.join(map(str, x['rounds']))})" if x["rounds"] else "")
                             + f", {x['games'] or rt['games']} games a comparison" for x in fixed)
                 + "; (each round against round 0"
                 + (" and against the control's round" if any(a.kind == "control" for a in cfg.arms) else "")
                 + (", the `pairs` head to head" if any(x.get("pairs") for x in fixed) else "")
                 + (", round 0 against the anchors)" if any(x["anchors"] for x in fixed) else ")")
                 if fixed else f"at {rt['nodes']} nodes, each arm's generation 0 and the anchors")
              + f"; anchors {', '.join(a['name'] + ' at ' + str(a['nodes']) + ' nodes' for a in rt['anchors'])}; "
              f"Bradley-Terry, {rt['bootstrap']} bootstrap replicates over openings, each resampled once across every pairing of the pool", ""]
    for sec in sections:
        lines += _search_lines(cfg, sec, rounds)
    if gates:
        lines += ["## Gate decisions", "", "| arm | gen | against | +/=/- | score | decision | rule |", "|---|---:|---:|---|---:|---|---|"]
        for g in gates:
            lines.append(f"| {g['arm']} | {g['generation']} | {g['against']} | +{g['wins']} ={g['draws']} -{g['losses']} | "
                         f"{g['score']:.3f} | {'accepted' if g['accepted'] else 'rejected'} | {g['rule']} |")
        lines.append("")
    lines += _targets_section(cfg)
    lines += _gates_section(cfg)
    lines += _offline_section(cfg, lambda name: _record(cfg, name))
    missing = [d for d in cfg.rate["heldout"] if not os.path.exists(d)]
    if missing:
        lines += [f"Held-out data not found here, figures left out: {', '.join(missing)}.", ""]
    if held:
        lines += [f"## Held-out figures (`searchbench heldout --data {' '.join(cfg.rate['heldout'])}`)", "",
                  "| network | policy top-1 | value sign | policy loss | value loss | positions |", "|---|---:|---:|---:|---:|---:|"]
        for h in held:
            lines.append(f"| {h['player']} | {h['policy_top1']:.2%} | {h['value_sign']:.2%} | {h['policy_loss']:.4f} | "
                         f"{h['value_loss']:.4f} | {h['positions']} |")
        lines.append("")
    lines += ["Files: `ratings.csv`" + (", `gates.csv`" if gates else "") + (", `heldout.csv`" if held else "")
              + ", the figures as PNG and SVG, each generation's model card in `cards/`; "
              f"the games in `{os.path.join(cfg.out, 'rate.sqlite')}` and each generation's gate.sqlite (not in git).", ""]
    return "\n".join(lines)


def _verdict(lo: float, hi: float) -> str:
    return "stronger" if lo > 0 else "weaker" if hi < 0 else "no difference shown"


def _headline(sections: list[dict[str, Any]], rounds: bool) -> list[str]:
    """Each fixed search's last rated round against round 0 (and against the control) beside its best,
    for each self-play arm; and the last round's pooled head to head where the search has ``pairs``:
    the loop's result is where it ended, not its luckiest round."""
    out = []
    word = "round" if rounds else "generation"
    for sec in sections:
        name = sec["search"]["name"]
        meta = {r["player"]: (r["arm"], int(r["generation"])) for r in sec["rows"]}  # the rated players' arm, round

        def arm(p: str) -> str:
            return str(meta[p][0])

        def gen(p: str) -> int:
            return meta[p][1]

        gains = [(p, d, lo, hi) for p, d, lo, hi in sec["gains"] if "control" not in arm(p)]
        if not name or not gains:
            continue
        arms = list(dict.fromkeys(arm(g[0]) for g in gains))
        for a in arms:
            mine = [g for g in gains if arm(g[0]) == a]
            last = max(mine, key=lambda g: gen(g[0]))
            best = max(mine, key=lambda g: g[1])
            who = f"`{a}`, " if len(arms) > 1 else ""
            text = (f"- `{name}`: {who}the last {word} ({gen(last[0])}) {last[1]:+.0f} [{last[2]:+.0f}, {last[3]:+.0f}] over "
                    f"{word} 0")
            ctl = [c for c in sec["controls"] if c[0] == last[0]]
            if ctl:
                text += f", {ctl[0][2]:+.0f} [{ctl[0][3]:+.0f}, {ctl[0][4]:+.0f}] against the control's"
            if best[0] != last[0]:
                text += f"; the best, {word} {gen(best[0])}, {best[1]:+.0f} [{best[2]:+.0f}, {best[3]:+.0f}]"
            out.append(text)
        if sec.get("heads"):
            g, met, pooled = sec["heads"][-1]
            each = ", ".join(f"`{arm(pa)}` − `{arm(pb)}` {d:+.0f} [{lo:+.0f}, {hi:+.0f}]" for pa, pb, d, lo, hi in met)
            text = f"- `{name}`, head to head at {word} {g}: {each}"
            if pooled is not None:
                text += f"; pooled {pooled[0]:+.0f} [{pooled[1]:+.0f}, {pooled[2]:+.0f}]"
            out.append(text)
    return (["**Where the loop ended** (95% intervals):", "", *out, ""]) if out else []


def write_generations(cfg: LoopConfig, states: dict[str, State]) -> str:
    """``OUT/generations.csv`` and ``OUT/generations.md``: a row for each generation of each arm, what
    its stages did and cost (process CPU seconds) and the gate's games (W-D-L of the candidate) and
decision: the loop's own record,
    whether or not ``[rate]`` rates it.  Returns the Markdown file's path."""
    fields = ["arm", "generation", "network", "selfplay_games", "selfplay_positions", "selfplay_cpu_s",
              "train_positions", "val_policy_acc", "val_value_sign_acc", "train_cpu_s", "gate", "accepted"]
    rows = []
    for arm in cfg.arms:
        for g, rec in sorted(states[arm.name].data["gens"].items(), key=lambda kv: int(kv[0])):
            sp, tr, gt = rec.get("selfplay", {}), rec.get("train", {}), rec.get("gate")
            rows.append({"arm": arm.name, "generation": int(g), "network": sp.get("network", ""),
                         "selfplay_games": sp.get("games", ""), "selfplay_positions": sp.get("positions", ""),
                         "selfplay_cpu_s": sp.get("cpu", ""), "train_positions": tr.get("positions", ""),
                         "val_policy_acc": tr.get("val_policy_acc", ""), "val_value_sign_acc": tr.get("val_value_sign_acc", ""),
                         "train_cpu_s": tr.get("cpu", ""),
                         "gate": "" if not gt else "no gate" if not gt["games"] else f"{gt['wins']}-{gt['draws']}-{gt['losses']}",
                         "accepted": "" if not gt else gt["accepted"]})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)

    def cell(f: str, v: Any) -> str:
        return f"{100 * v:.1f}%" if f.startswith("val_") and isinstance(v, float) else str(v)

    md = [f"# The self-play loop {cfg.name}: every generation", "", "```", f"searchbench rl {cfg.path}", "```", "",
          "Network: the generation self-play played (0: `initial`); CPU: process seconds (self-play's worker "
          "processes included); held-out: the training run's validation games.", "",
          "| " + " | ".join(fields) + " |", "|" + "---|" * len(fields)]
    md += ["| " + " | ".join(cell(f, r[f]) for f in fields) + " |" for r in rows]
    write_atomic(os.path.join(cfg.out, "generations.csv"), buf.getvalue(), "generations CSV")
    path = os.path.join(cfg.out, "generations.md")
    write_atomic(path, "\n".join(md) + "\n", "generations table")
    return path


__all__ = ["parse_rate", "player", "rate_and_report", "searches", "write_generations", "write_report"]
