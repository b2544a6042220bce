"""``searchbench bughouse-rl CONFIG.toml``: the self-play loop for two boards (issue 34, part 3).

One network trained continuously, as the one-board loop's rounds (:mod:`experiments.training.rl`)
and KataGo/lc0 run theirs. Each round:

1. **self-play**: the current network plays ``selfplay.games`` games on all four seats
   (``rise-bughouse-mcts:weights=CURRENT,nodes=N`` on both teams) through the four-seat server, each
   game pair from its own bughouse opening, ``selfplay.workers`` games at once
   (:func:`experiments.training.bughouse_data.generate`; ``OUT/round-NNN/selfplay.sqlite``). The
   targets are partner-aware for both seats: every ply gives the mover's own view (its move on the
   own half of the policy) and the other board's view (the same move on the partner half), valued by
   the result for each view's team (:func:`~experiments.training.bughouse_data.samples_from_db`);
2. **train**: from the current weights (``--init``), on the games of the last ``train.window``
   rounds plus the supervised databases (``train.supervised``), with the bughouse recipe
   (``OUT/round-NNN/train``); the split seed is ``seed`` and the supervised games come first, so
   the supervised games held out for validation are the same in every round and arm, and
   ``bughouse-heldout --db SUPERVISED --seed SEED`` measures any of the loop's networks on them;
3. **gate** (``gate.games`` > 0): the candidate plays the current network at ``gate.nodes``
   (``OUT/round-NNN/gate.sqlite``); it becomes the current network when it scores at least
   ``gate.threshold``, else the current one plays the next round. ``gate.games = 0``: every
   candidate is taken (rounds without a gate, as KataGo).

A **control arm** (``control = true``) answers whether the self-play games or only the extra
training made a difference (as the one-board loop's control arm, :mod:`experiments.training.rl`):
after each round of the self-play arm it trains its own network (from ``initial``, carried from
round to round, every candidate taken) on the supervised games alone, for the CPU seconds that
round's self-play and training took (wall seconds × workers, + wall seconds × training threads), in
``OUT/round-NNN/control``. Rate both arms' last networks with a ``bughouse-report`` config.

``OUT/state.json`` (written atomically) records each finished stage with its wall time; every stage
resumes after a kill (self-play and the gate from their databases, training from its checkpoint).
``OUT/rounds.md`` and ``OUT/rounds.csv`` list the rounds. To rate the networks against Sjeng, give
the round's weights to a ``bughouse-report`` row (``rise-bughouse-mcts:weights=OUT/round-NNN/model.pt``).

Config keys (defaults in brackets)::

    name, initial [evaluators/weights/bughouse_lazybug.pt], rounds [3], seed [1], out [runs/NAME],
               control [false] (needs train.supervised)
    [selfplay] games [100], nodes [200], tc ["300+0"] (a clock no seat should need), workers [1],
               openings [the crazyhouse suite], max_plies [600]
    [train]    window [2], supervised [[]], epochs [2], minutes [10.0], batch [256], lr [0.02],
               policy_weight [1.0], value_weight [1.0], val_fraction [0.1], threads [1]
    [gate]     games [20], nodes [selfplay.nodes], tc [selfplay.tc], threshold [0.55]
"""
from __future__ import annotations

import csv
import io
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.harness.tomlconfig import ConfigError, Section

STATE = "state.json"
#: the settings a loop's games and networks depend on (a resume with others is refused)
RUN_FILE = "loop.json"
DEFAULT_INITIAL = "bughouse_lazybug.pt"  # a shipped name: found from any folder (evaluators.neural.weights_path)


@dataclass
class LoopConfig:
    name: str
    initial: str
    rounds: int
    seed: int
    out: Path
    games: int
    nodes: int
    tc: tuple[int, int]
    workers: int
    openings: str
    max_plies: int
    window: int
    supervised: list[str]
    train: dict[str, Any]
    gate_games: int
    gate_nodes: int
    gate_tc: tuple[int, int]
    threshold: float
    control: bool = False
    text: str = field(default="", repr=False)


def _ms(cfg: Section, key: str, default: str) -> tuple[int, int]:
    from experiments.harness.match import MatchError, parse_tc

    try:
        base, inc = parse_tc(cfg.get(key, str, default))
    except MatchError as e:
        raise cfg.error(key, str(e)) from None
    return int(round(base * 1000)), int(round(inc * 1000))


def parse(cfg: Section, text: str = "") -> LoopConfig:
    from board.variants import CRAZYHOUSE
    from experiments.harness.openings import OpeningError, default_suite, load_suite
    from experiments.harness.tomlconfig import writable_dir

    name = cfg.get("name", str, check=lambda v: None if v and v.replace("-", "").replace("_", "").isalnum()
                   else "letters, digits, - and _ only")
    from evaluators import bughouse_net as bn
    from evaluators.neural import weights_path
    from evaluators.nets import load_model

    initial = weights_path(cfg.get("initial", str, DEFAULT_INITIAL))
    try:
        load_model(initial, bn.FAMILY)
    except ValueError as e:
        raise cfg.error("initial", str(e)) from None
    rounds = cfg.get("rounds", int, 3, lambda v: None if 1 <= v <= 10_000 else "must be from 1 to 10000")
    control = cfg.get("control", bool, False)
    seed = cfg.get("seed", int, 1, lambda v: None if 0 <= v < 2 ** 40 else "must be from 0 to 2**40 - 1")
    out = Path(cfg.get("out", str, f"runs/{name}", writable_dir))
    sp = cfg.table("selfplay")
    games = sp.get("games", int, 100, lambda n: None if n >= 2 and n % 2 == 0 else "must be even and at least 2")
    nodes = sp.positive("nodes", 200)
    tc = _ms(sp, "tc", "300+0")
    workers = sp.get("workers", int, 1, lambda n: None if 1 <= n <= 64 else "must be 1..64")
    openings = sp.get("openings", str, str(default_suite(CRAZYHOUSE.name)))
    try:
        load_suite(openings, CRAZYHOUSE.name)
    except OpeningError as e:
        raise sp.error("openings", str(e)) from None
    max_plies = sp.positive("max_plies", 600)
    sp.done()
    tr = cfg.table("train")
    window = tr.positive("window", 2)
    supervised = tr.get("supervised", list, [])
    for i, db in enumerate(supervised):
        if not isinstance(db, str) or not Path(db).exists():
            raise tr.error("supervised", f"item {i}: no such game database {db!r}")
    train = {"epochs": tr.positive("epochs", 2), "minutes": tr.get("minutes", float, 10.0,
                                                                   lambda v: None if v > 0 else "must be > 0"),
             "batch": tr.positive("batch", 256), "lr": tr.get("lr", float, 0.02, lambda v: None if v > 0 else "must be > 0"),
             "policy_weight": tr.get("policy_weight", float, 1.0, lambda v: None if v >= 0 else "must be >= 0"),
             "value_weight": tr.get("value_weight", float, 1.0, lambda v: None if v >= 0 else "must be >= 0"),
             "val_fraction": tr.get("val_fraction", float, 0.1, lambda v: None if 0 < v < 1 else "must be in (0, 1)"),
             "threads": tr.positive("threads", 1)}
    if control and not supervised:
        raise tr.error("supervised", "a control arm (control = true) trains on the supervised games: give some")
    tr.done()
    gt = cfg.table("gate")
    gate_games = gt.get("games", int, 20, lambda n: None if n >= 0 and n % 2 == 0 else "must be even (0: no gate)")
    gate_nodes = gt.positive("nodes", nodes)
    gate_tc = _ms(gt, "tc", f"{tc[0] / 1000:g}+{tc[1] / 1000:g}")
    threshold = gt.get("threshold", float, 0.55, lambda v: None if 0 <= v <= 1 else "must be in [0, 1]")
    gt.done()
    cfg.done()
    return LoopConfig(name, initial, rounds, seed, out, games, nodes, tc, workers, openings, max_plies, window,
                      list(supervised), train, gate_games, gate_nodes, gate_tc, threshold, control, text)


def load(path: str | Path) -> LoopConfig:
    from experiments.harness import tomlconfig

    return parse(tomlconfig.load(path), Path(path).read_text())


# --------------------------------------------------------------------------- state

def _read_state(out: Path) -> dict[str, Any]:
    p = out / STATE
    if not p.exists():
        return {"current": None, "rounds": []}
    try:
        d = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{p}: unreadable loop state ({e}); remove it to start the loop again") from None
    why = _bad_state(d)
    if why:
        raise ConfigError(f"{p}: not a bughouse-rl state file: {why} (move it away to start the loop again)")
    state: dict[str, Any] = d
    return state


#: the fields of a round's record and their types (a record holds those its finished stages wrote)
_ROUND_FIELDS: dict[str, type | tuple[type, ...]] = {
    "round": int, "player": str, "selfplay_s": (int, float), "selfplay_games": int, "train_s": (int, float),
    "train": dict, "gate": dict, "gate_s": (int, float), "accepted": bool, "done": bool, "cpu_s": (int, float)}


def _bad_rounds(rounds: Any, where: str) -> str | None:
    if not isinstance(rounds, list):
        return f"{where}'rounds' is not a list"
    for rec in rounds:
        if not isinstance(rec, dict) or not isinstance(rec.get("round"), int) or not isinstance(rec.get("player"), str):
            return f"{where}a round's record is {rec!r:.60} (no round number and player)"
        for k, kind in _ROUND_FIELDS.items():
            v = rec.get(k)
            if k in rec and (not isinstance(v, kind) or (kind is not bool and isinstance(v, bool))):
                return f"{where}round {rec['round']}: {k!r} is {v!r:.40}"
        g = rec.get("gate")
        if g is not None and not all(isinstance(g.get(k), (int, float)) for k in ("wins", "draws", "losses", "score")):
            return f"{where}round {rec['round']}: 'gate' is {g!r:.60}"
    return None


def _bad_state(d: Any) -> str | None:
    """Why ``d`` is not a bughouse-rl state (None: it is)."""
    if not isinstance(d, dict):
        return "not a JSON object"
    if d.get("current") is not None and not isinstance(d.get("current"), str):
        return f"'current' is {d.get('current')!r:.40}, not a network"
    why = _bad_rounds(d.get("rounds"), "")
    if why:
        return why
    ctl = d.get("control")
    if ctl is not None:
        if not isinstance(ctl, dict) or not isinstance(ctl.get("current"), str):
            return "'control' has no current network"
        return _bad_rounds(ctl.get("rounds"), "control: ")
    return None


def _write_state(out: Path, state: dict[str, Any]) -> None:
    from experiments.paths import write_atomic

    write_atomic(out / STATE, json.dumps(state, indent=1, sort_keys=True) + "\n", "loop state")


def spec(weights: str, nodes: int) -> str:
    return f"rise-bughouse-mcts:weights={weights},nodes={nodes}"


# --------------------------------------------------------------------------- the loop

def _settings(cfg: LoopConfig) -> dict[str, Any]:
    """What the loop's games and networks depend on (resources such as workers and threads left out)."""
    from experiments.harness.store import file_id

    return {"initial_file": file_id(cfg.initial), "seed": cfg.seed, "games": cfg.games,
            "nodes": cfg.nodes, "tc": list(cfg.tc), "openings": cfg.openings, "max_plies": cfg.max_plies,
            "window": cfg.window, "supervised": cfg.supervised, "control": cfg.control,
            "train": {k: v for k, v in cfg.train.items() if k != "threads"}, "gate_games": cfg.gate_games,
            "gate_nodes": cfg.gate_nodes, "gate_tc": list(cfg.gate_tc), "threshold": cfg.threshold}


def check_settings(cfg: LoopConfig) -> None:
    """Refuse to resume ``cfg.out`` with settings other than those its rounds were played with (its
    games and rounds.md would mix two runs); record them on the first run.  More rounds are allowed."""
    from experiments.paths import InputError, read_json, write_atomic
    from experiments.training.rl_config import first_difference

    want = _settings(cfg)
    path = cfg.out / RUN_FILE
    if path.exists() or path.is_symlink():
        try:
            have = read_json(path, "loop run file")
        except InputError as e:
            raise ConfigError(f"{path} is not a loop run file ({e}); give another out") from None
        diff = first_difference(have, want) or first_difference(want, have)
        if diff:
            k, a, b = diff
            raise ConfigError(f"{cfg.out} holds a bughouse-rl run with {k} {a!r:.60}, not {b!r:.60}: give the same "
                              "settings to resume it, or another out")
        return
    write_atomic(path, json.dumps(want, indent=1, sort_keys=True), "loop run file")


def run(cfg: LoopConfig, progress: bool = True) -> dict[str, Any]:
    """Run the rounds not finished yet; returns the state.  One run at a time in a folder
    (:class:`~experiments.paths.DirLock`), with the settings it was started with (:func:`check_settings`)."""
    from experiments.paths import DirLock, check_dir

    check_dir(str(cfg.out), "loop folder")
    cfg.out.mkdir(parents=True, exist_ok=True)
    with DirLock(cfg.out, "loop folder"):
        check_settings(cfg)
        return _run(cfg, progress)


def _run(cfg: LoopConfig, progress: bool) -> dict[str, Any]:
    from experiments.harness import bughouse as bm
    from experiments.training import bughouse_data as bd

    state = _read_state(cfg.out)
    if state["current"] is None:
        state["current"] = cfg.initial
    for r in range(1, cfg.rounds + 1):
        rdir = cfg.out / f"round-{r:03d}"
        rdir.mkdir(exist_ok=True)
        rec = _record(cfg, state, state["rounds"], r, state["current"])
        if rec.get("done"):
            continue
        player = rec["player"]
        if "selfplay_s" not in rec:
            t0 = time.monotonic()
            team = spec(player, cfg.nodes)
            bd.generate(rdir / "selfplay.sqlite", [(team, team)], cfg.games, cfg.tc[0], cfg.tc[1], chunk=2,
                        seed=cfg.seed * 1000 + r, progress=progress, max_plies=cfg.max_plies, workers=cfg.workers,
                        openings=cfg.openings)
            rec["selfplay_s"] = round(time.monotonic() - t0, 1)
            rec["selfplay_games"] = bd.count_all(rdir / "selfplay.sqlite")
            _write_state(cfg.out, state)
        if "train_s" not in rec:
            window = [str(p) for k in range(max(1, r - cfg.window + 1), r + 1)
                      for p in bd.shard_paths(cfg.out / f"round-{k:03d}" / "selfplay.sqlite")]
            _train(cfg, rec, window, rdir / "train", player, cfg.train, progress, f"round {r}")
            _write_state(cfg.out, state)
        candidate = str(rdir / "train" / "model.pt")
        if cfg.gate_games:
            if "gate_s" not in rec:
                t0 = time.monotonic()
                s = bm.run_match(spec(candidate, cfg.gate_nodes), spec(player, cfg.gate_nodes), cfg.gate_games,
                                 cfg.gate_tc[0], cfg.gate_tc[1], rdir / "gate.sqlite", seed=cfg.seed * 1000 + r,
                                 run=f"{cfg.name}-gate", max_plies=cfg.max_plies, progress=progress,
                                 openings=cfg.openings)
                n = s.wins + s.draws + s.losses
                rec["gate"] = {"wins": s.wins, "draws": s.draws, "losses": s.losses,
                               "score": (s.wins + 0.5 * s.draws) / n if n else 0.0}
                rec["gate_s"] = round(time.monotonic() - t0, 1)
            rec["accepted"] = rec["gate"]["score"] >= cfg.threshold
        else:
            rec["accepted"] = True
        if rec["accepted"]:
            state["current"] = candidate
        rec["done"] = True
        _write_state(cfg.out, state)
    if cfg.control:
        for r in range(1, cfg.rounds + 1):
            _control_round(cfg, state, r, progress)
    write_rounds(cfg, state)
    return state


def _record(cfg: LoopConfig, state: dict[str, Any], rounds: list[dict[str, Any]], r: int, player: str) -> dict[str, Any]:
    """Round ``r``'s record in an arm's ``rounds``; a new one (played by ``player``) is stored at once."""
    rec = next((x for x in rounds if x["round"] == r), None)
    if rec is None:
        rec = {"round": r, "player": player}
        rounds.append(rec)
        _write_state(cfg.out, state)
    return rec


def _train(cfg: LoopConfig, rec: dict[str, Any], window: list[str], out: Path, init: str,
           recipe: dict[str, Any], progress: bool, label: str) -> None:
    """Train from ``init`` on the supervised games and the self-play ``window`` into ``out``; the
    seconds and figures go into ``rec``. The supervised games come first, under the loop's seed: their
    numbers, and so the games held out for validation, are the same in every round and arm
    (``bughouse-heldout --seed SEED`` on them)."""
    from board.variants import BUGHOUSE
    from experiments.training import bughouse_data as bd
    from experiments.training import bughouse_train as bt
    from experiments.training.recipe import TrainConfig

    t0 = time.monotonic()
    data = [str(p) for d in cfg.supervised for p in bd.shard_paths(d)] + window
    tcfg = TrainConfig(model=BUGHOUSE.name, data=data, out=str(out), init=init, seed=cfg.seed, device="cpu",
                       half=True, **recipe)
    meta = bt.train(tcfg, progress=progress, command=f"bughouse-rl {cfg.name} {label}")
    rec["train_s"] = round(time.monotonic() - t0, 1)
    rec["train"] = {k: meta[k] for k in ("games", "train_positions", "val_positions", "val_policy_acc",
                                         "val_partner_policy_acc", "val_value_sign_acc", "epochs_done")}


def _control_round(cfg: LoopConfig, state: dict[str, Any], r: int, progress: bool) -> None:
    """Round ``r`` of the control arm: no games; from its own network, the supervised games alone,
    for the CPU seconds of the self-play arm's round ``r`` (self-play and training)."""
    ctl = state.setdefault("control", {"current": cfg.initial, "rounds": []})
    crec = _record(cfg, state, ctl["rounds"], r, ctl["current"])
    if crec.get("done"):
        return
    rec = next(x for x in state["rounds"] if x["round"] == r)
    threads = int(cfg.train["threads"])
    cpu_s = float(rec["selfplay_s"]) * cfg.workers + float(rec["train_s"]) * threads
    rdir = cfg.out / f"round-{r:03d}"
    crec["cpu_s"] = round(cpu_s, 1)
    _train(cfg, crec, [], rdir / "control", crec["player"],
           dict(cfg.train, epochs=100_000, minutes=cpu_s / 60.0 / threads), progress, f"control round {r}")
    ctl["current"] = str(rdir / "control" / "model.pt")
    crec["done"] = True
    _write_state(cfg.out, state)


def write_rounds(cfg: LoopConfig, state: dict[str, Any]) -> list[Path]:
    """``OUT/rounds.csv`` and ``OUT/rounds.md``: one row a round."""
    from experiments.harness.stats import score_text
    from experiments.paths import write_atomic

    fields = ["arm", "round", "player", "selfplay_games", "selfplay_s", "train_games", "train_positions",
              "val_policy_acc", "val_value_sign_acc", "train_s", "gate", "gate_s", "accepted"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    lines = [f"# Bughouse self-play: {cfg.name}", "",
             f"{cfg.rounds} rounds from `{cfg.initial}`; self-play {cfg.games} games a round at {cfg.nodes} "
             f"simulations a move; training window {cfg.window} rounds"
             + (f" plus {', '.join(cfg.supervised)}" if cfg.supervised else "")
             + (f"; gate {cfg.gate_games} games at {cfg.gate_nodes} simulations, threshold {cfg.threshold:g}"
                if cfg.gate_games else "; no gate") + ".", "",
             "| round | player | self-play games (s) | training games / positions | held-out policy / value sign "
             "| training s | gate (candidate vs player) | accepted |",
             "|---:|---|---:|---:|---|---:|---|---|"]
    for rec in state["rounds"]:
        tr = rec.get("train", {})
        g = rec.get("gate")
        gate = score_text(g["wins"], g["draws"], g["losses"]) if g else "-"
        w.writerow({"arm": "selfplay", "round": rec["round"], "player": rec["player"], "selfplay_games": rec.get("selfplay_games", ""),
                    "selfplay_s": rec.get("selfplay_s", ""), "train_games": tr.get("games", ""),
                    "train_positions": tr.get("train_positions", ""),
                    "val_policy_acc": tr.get("val_policy_acc", ""), "val_value_sign_acc": tr.get("val_value_sign_acc", ""),
                    "train_s": rec.get("train_s", ""), "gate": gate, "gate_s": rec.get("gate_s", ""),
                    "accepted": rec.get("accepted", "")})
        pol = f"{100 * tr['val_policy_acc']:.1f}% / {100 * tr['val_value_sign_acc']:.1f}%" if tr else "-"
        lines.append(f"| {rec['round']} | `{os.path.relpath(rec['player'])}` | {rec.get('selfplay_games', '-')} "
                     f"({rec.get('selfplay_s', '-')}) | {tr.get('games', '-')} / {tr.get('train_positions', '-')} | "
                     f"{pol} | {rec.get('train_s', '-')} | {gate} | {rec.get('accepted', '-')} |")
    ctl = state.get("control")
    if ctl:
        lines += ["", "Control arm: no games; from its own network, the supervised games alone, for the CPU seconds "
                      "of the self-play arm's round (self-play and training):", "",
                  "| round | player | CPU s given | training games / positions | held-out policy / value sign "
                  "| training s |", "|---:|---|---:|---:|---|---:|"]
        for crec in ctl["rounds"]:
            tr = crec.get("train", {})
            w.writerow({"arm": "control", "round": crec["round"], "player": crec["player"],
                        "train_games": tr.get("games", ""), "train_positions": tr.get("train_positions", ""),
                        "val_policy_acc": tr.get("val_policy_acc", ""),
                        "val_value_sign_acc": tr.get("val_value_sign_acc", ""), "train_s": crec.get("train_s", "")})
            pol = f"{100 * tr['val_policy_acc']:.1f}% / {100 * tr['val_value_sign_acc']:.1f}%" if tr else "-"
            lines.append(f"| {crec['round']} | `{os.path.relpath(crec['player'])}` | {crec.get('cpu_s', '-')} | "
                         f"{tr.get('games', '-')} / {tr.get('train_positions', '-')} | {pol} | {crec.get('train_s', '-')} |")
        lines += ["", f"Control network: `{ctl['current']}`."]
    lines += ["", f"Current network: `{state['current']}`.", "", "Config:", "", "```toml", cfg.text.rstrip(), "```", ""]
    csv_path, md_path = cfg.out / "rounds.csv", cfg.out / "rounds.md"
    write_atomic(csv_path, buf.getvalue(), "rounds CSV")
    write_atomic(md_path, "\n".join(lines), "rounds report")
    return [csv_path, md_path]


__all__ = ["LoopConfig", "load", "parse", "run", "spec", "write_rounds"]
