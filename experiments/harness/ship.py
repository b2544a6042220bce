"""``searchbench ship``: a network replaces the shipped one only through a test fixed before its games.

The test is a config (``experiments/configs/ship-*.toml``), written before any candidate is played:
the family and game whose shipped network a candidate would replace, the openings (fresh: a seed no
other config draws with) and its *points*, each a search and budget at which the candidate plays the
shipped network (``engine`` with the candidate's ``weights`` against the same ``engine`` as shipped),
its number of games and its rule: the lower end of the candidate's pentanomial 95% interval
(fishtest's pair statistics, as every ablation row) must be above ``above`` Elo.  The short points
say "it gains" (``above = 0``); the long point guards against a loss (``above = -30``: "not more than
30 Elo lost where the search leans on the value", worded so in the verdict).  NLL, value error and
entropy are reported by the offline gates, not here: they are guards a human reads, not vetoes.

``searchbench ship CANDIDATE --config CFG``: states the test and its estimated cost, then plays each
point as an ablation (resumable: the games go to ``runs/ship/NAME/DIGEST/``), prints each point's
row and the verdict.  With ``--apply`` and a pass, the candidate is shipped under a new file name,
``<family>_<variant>-<digest>.pt`` (the old file kept), named as the variant's default in
``evaluators/weights/shipped.json`` (:func:`evaluators.families.shipped_name`), with a model card
beside it holding the test and its rows; every game after records the new network's digest, so every
report played with the old one is marked stale (:mod:`reports.played`).  Its int8 copies are not
made here: ``searchbench qat`` and ``searchbench accept-int8`` make and accept them (until then
``inference=auto`` runs it in float32).
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from board import new_position
from engines import factory, registry
from engines.base import EngineError
from engines.registry import join_spec
from evaluators.families import FAMILIES, SHIPPED, WEIGHTS_DIR, file_id
from experiments.harness import ablate
from experiments.harness.refresh import PLIES  # plies a game for the cost estimate
from experiments.harness.tomlconfig import ConfigError, Section, even_games, load as load_toml
from experiments.harness.tournament import RUNS_DIR, RunSettings, run_settings
from search.base import Limits


@dataclass(frozen=True)
class Point:
    """One operating point of the test: ``engine`` at ``axis`` = ``budget``, ``games`` games, and the
    rule that the candidate's lower bound is above ``above`` Elo."""

    name: str
    engine: str
    axis: str  # nodes or movetime
    budget: float
    games: int
    above: float

    def rule(self) -> str:
        if self.above >= 0:
            return f"lower bound above {self.above:+g} (a gain)"
        return f"lower bound above {self.above:+g} (a guard: not more than {-self.above:g} Elo lost)"


@dataclass
class ShipTest:
    settings: RunSettings
    family: str
    points: list[Point]
    path: Path
    text: str

    @property
    def shipped(self) -> str:
        """The file name of the network a candidate would replace (today's default of the variant)."""
        return registry.network_files(registry.resolve(self.points[0].engine), self.settings.variant)[0]


def load(path: str | Path) -> ShipTest:
    cfg = load_toml(path)
    s = run_settings(cfg)
    family = cfg.choice("family", tuple(FAMILIES))
    points: list[Point] = []
    for sec in cfg.tables("points", required=True):
        sec.only("name", "engine", "nodes", "movetime", "games", "above")
        name = sec.get("name", str)
        if name in {p.name for p in points}:
            raise sec.error("name", "must be unique")
        engine = sec.get("engine", str)
        try:
            spec = registry.resolve(engine)
        except EngineError as e:
            raise sec.error("engine", str(e)) from None
        if registry.ALIASES.get(spec.evaluator, spec.evaluator) != FAMILIES[family].evaluator_name:
            raise sec.error("engine", f"does not run a {family} network")
        if "weights" in spec.options:
            raise sec.error("engine", "must run the shipped network (no weights=): the candidate's are added")
        if sec.has("nodes") == sec.has("movetime"):
            raise sec.error("nodes", "give one of nodes or movetime")
        axis = "nodes" if sec.has("nodes") else "movetime"
        budget = float(sec.get(axis, (int, float), check=lambda v: None if v > 0 else "must be positive"))
        games = sec.get("games", int, check=even_games)
        above = float(sec.get("above", (int, float), check=lambda v: None if -1000 <= v <= 1000 else "must be within 1000"))
        sec.done()
        points.append(Point(name, engine, axis, budget, games, above))
    cfg.done()
    text = Path(path).read_text()
    return ShipTest(s, family, points, Path(path), text)


def ablation(t: ShipTest, point: Point, candidate: str, out: Path) -> ablate.Ablation:
    """The point as an ablation: the candidate's network in ``point.engine`` against the shipped one."""
    s = replace(t.settings, name=f"{t.settings.name}-{point.name}", games=point.games, db=out / "games.sqlite",
                pgn=None, concurrency=t.settings.workers if point.axis == "movetime" else t.settings.concurrency,
                notes=f"The ship test {t.path.name}, point {point.name}: {point.rule()}.")
    variant = ablate.Variant("candidate", join_spec(point.engine, {"weights": candidate}), point.games)
    return ablate.Ablation(s, point.engine, [variant], [(point.axis, point.budget)], None, out, t.path, t.text)


TIMED_SEARCHES = 3  # searches timed a node point, after one that loads and warms the network


def estimate(t: ShipTest) -> tuple[int, float]:
    """(games, CPU seconds, about): a node point's seconds a move, the median of
    :data:`TIMED_SEARCHES` fresh searches of the shipped engine from the start position after one
    untimed search (the first loads the network and warms its kernels: timed alone, it read 12.7 CPU
    hours for the crazyhouse test, which played in under one); a timed point's its movetime."""
    games, seconds = 0, 0.0
    for p in t.points:
        per_move = p.budget
        if p.axis == "nodes":
            eng = factory.create(p.engine, t.settings.variant)
            try:
                times = []
                for k in range(TIMED_SEARCHES + 1):
                    eng.new_game(k)
                    t0 = time.perf_counter()
                    eng.play(new_position(t.settings.variant), Limits(nodes=int(p.budget)))
                    times.append(time.perf_counter() - t0)
                per_move = sorted(times[1:])[len(times[1:]) // 2]
            finally:
                eng.close()
        games += p.games
        seconds += p.games * PLIES * per_move
    return games, seconds


def verdict(t: ShipTest, rows: dict[str, ablate.Row]) -> tuple[bool, list[str]]:
    """Whether every point's rule holds, and one line a point."""
    lines, ok = [], True
    for p in t.points:
        r = rows.get(p.name)
        if r is None or r.games < p.games:
            ok = False
            lines.append(f"{p.name}: not played to its {p.games} games")
            continue
        held = r.lo > p.above
        ok &= held
        lines.append(f"{p.name} ({p.engine}, {p.axis} {p.budget:g}): {r.elo:+.0f} [{r.lo:+.0f}, {r.hi:+.0f}] over "
                     f"{r.games} games; {p.rule()}: {'holds' if held else 'FAILS'}")
    return ok, lines


def apply(t: ShipTest, candidate: str, lines: list[str]) -> Path:
    """Ship ``candidate``: copied to ``<family>_<variant>-<digest>.pt`` beside the shipped networks,
    named the variant's default in ``shipped.json``, a model card beside it.  The path shipped."""
    old = t.shipped
    digest = file_id(candidate).split(":")[1]
    key = f"{t.family}_{t.settings.variant}"
    dest = Path(WEIGHTS_DIR) / f"{key}-{digest}.pt"
    shutil.copyfile(candidate, dest)
    card = dest.with_suffix(".md")
    card.write_text("\n".join([
        f"# {dest.name}", "",
        f"The {t.family} network of {t.settings.variant}, shipped by `searchbench ship` on {time.strftime('%Y-%m-%d')}: "
        f"it replaced `{Path(old).name}` ({file_id(old)}), which is kept. Source: `{candidate}` ({file_id(dest)}).", "",
        f"The ship test ({t.path.as_posix()}), fixed before its games; every point's rule held:", "",
        *[f"- {line}" for line in lines], "",
        "Its int8 copies are not made yet: `searchbench qat` and `searchbench accept-int8` (until then "
        "`inference=auto` runs it in float32).", ""]))
    table_path = Path(WEIGHTS_DIR) / SHIPPED
    table: dict[str, Any] = json.loads(table_path.read_text()) if table_path.is_file() else {}
    table[key] = dest.name
    tmp = table_path.with_name(table_path.name + ".tmp")
    tmp.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    tmp.replace(table_path)
    return dest


def out_dir(t: ShipTest, candidate: str) -> Path:
    return RUNS_DIR / "ship" / t.settings.name / file_id(candidate).split(":")[1]


__all__ = ["ConfigError", "PLIES", "Point", "Section", "ShipTest", "ablation", "apply", "estimate", "load", "out_dir",
           "verdict"]
