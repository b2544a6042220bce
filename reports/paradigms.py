"""The answer page's paradigm grid: each search paradigm × each cost unit (nodes, evaluator calls,
seconds) × each game (chess, crazyhouse, bughouse), with the reports that played it there and
"not measured" where none did.

A report measures a paradigm in a cell when one of its players (an ablation's variant or baseline, a
scale's family, a bughouse table's team or opponent) is an engine of that paradigm and the row's
budget is in that unit. The paradigm is the player's search as the registry resolves its spec
(:func:`paradigm_of`): PUCT, Gumbel (the Gumbel root rule), MCGS (graph search), alpha-beta, UBFM, the
comparator; external programs are anchors, not paradigms. The unit: an ablation's ``axis``
(``nodes`` and ``playouts`` are nodes, ``evals`` calls, ``movetime`` and ``tc`` seconds), a scale's
budget column (``nodes``, ``evals``, ``movetime``: its config's unit), a bughouse table's clock (seconds) or its node budget when it has no clock.
"""
from __future__ import annotations

import csv
import functools
import html
import re
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable

from board.variants import BUGHOUSE, CHESS, CRAZYHOUSE
from engines.base import EngineError
from engines import registry
from reports import played
from search.base import setting

PARADIGMS = ("PUCT", "Gumbel", "MCGS", "alpha-beta", "UBFM", "comparator")
GAMES = (CHESS.name, CRAZYHOUSE.name, BUGHOUSE.name)
UNITS = (("nodes", "nodes"), ("calls", "evaluator calls"), ("seconds", "seconds"))
_AXIS_UNIT = {"nodes": "nodes", "playouts": "nodes", "evals": "calls", "movetime": "seconds", "tc": "seconds"}
#: the budget column a scale table (``elo_vs_nodes.csv``) may have, named by its config's ``unit``
SCALE_BUDGETS = ("nodes", "evals", "movetime")


def budget_column(row: Iterable[str]) -> str:
    """The budget column of a scale table's row (or header): ``nodes``, ``evals`` or ``movetime``."""
    keys = set(row)
    return next((c for c in SCALE_BUDGETS if c in keys), "nodes")


def scale_player(family: str, unit: str, rung: str) -> str:
    """A scale player's name: ``family@256`` on a nodes ladder, ``family@evals=256``, ``family@movetime=0.3``."""
    return f"{family}@{rung}" if unit == "nodes" else f"{family}@{unit}={rung}"


@functools.lru_cache(maxsize=None)
def paradigm_of(spec_text: str) -> str | None:
    """The paradigm of an engine spec (module docstring), or None (an external program, a spec that
    no longer resolves); each spec resolved once (the same players stand in many reports)."""
    try:
        spec = registry.resolve(spec_text)
    except (EngineError, ValueError):
        return None
    if spec.search in ("mcts", "two-board-mcts"):
        if str(setting(spec.config, "root_rule")) == "gumbel":
            return "Gumbel"
        return "MCGS" if bool(setting(spec.config, "mcgs")) else "PUCT"
    return {"alphabeta": "alpha-beta", "ubfm": "UBFM", "comparator": "comparator"}.get(spec.search)


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _engines(folder: Path) -> dict[str, str]:
    """Player name -> engine spec text, from the report's ``engines.json`` (:func:`reports.played.players_of`)."""
    players, _ = played.players_of(folder)
    return {str(k): str(v["engine"]) for k, v in (players or {}).items() if v.get("engine")}


def cells_of(folder: Path, game: str, paradigm: Callable[[str], str | None] = paradigm_of) -> set[tuple[str, str, str]]:
    """The (paradigm, game, unit) cells one report folder measures."""
    out: set[tuple[str, str, str]] = set()
    engines = _engines(folder)

    def add(spec: str, unit: str | None) -> None:
        p = paradigm(spec) if spec and unit else None
        if p is not None and unit is not None:
            out.add((p, game, unit))

    def player(name: str, axis: str, budget: str) -> str:
        """A player's spec: by ``NAME@AXIS=BUDGET`` where the report keeps one per budget, else ``NAME``."""
        for key, spec in engines.items():
            head, at, rest = key.partition("@")
            a, _, b = rest.partition("=")
            if head == name and at and a == axis:
                try:
                    if float(b) == float(budget):
                        return spec
                except ValueError:
                    continue
        return engines.get(name, next((spec for key, spec in engines.items() if key.partition("@")[0] == name), ""))

    for r in _rows(folder / "ablation.csv"):
        axis, budget = r.get("axis", ""), r.get("budget", "")
        unit = _AXIS_UNIT.get(axis)
        add(player(r.get("variant", ""), axis, budget), unit)
        add(player("baseline", axis, budget), unit)
    for r in _rows(folder / "elo_vs_nodes.csv"):
        if not r.get("family", "").startswith("anchor:"):
            add(r.get("engine", ""), _AXIS_UNIT[budget_column(r)])
    for r in _rows(folder / "teams.csv"):
        clock = r.get("tc", "none") not in ("", "none")
        for side in ("team", "opponent"):
            spec = r.get(side, "")
            add(spec, "nodes" if "nodes=" in spec or not clock else "seconds")
    return out


def grid(folders: Iterable[tuple[str, Path, str]], paradigm: Callable[[str], str | None] = paradigm_of) -> dict[
        tuple[str, str, str], list[str]]:
    """(paradigm, game, unit) -> the reports (their paths under reports/) that measure it, from
    ``(rel, folder, game)`` of every report."""
    out: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for rel, folder, game in folders:
        for cell in sorted(cells_of(folder, game, paradigm)):
            out[cell].append(rel)
    return out


def table_html(cells: dict[tuple[str, str, str], list[str]], href: Callable[[str], str],
               stale: frozenset[str] = frozenset()) -> str:
    """The grid as an HTML table: a row a paradigm, a column a game and unit; each cell links its
    reports (those ``stale`` marked so), or says "not measured"."""
    head = "".join(f'<th colspan="{len(UNITS)}">{g}</th>' for g in GAMES)
    sub = "".join(f"<th>{label}</th>" for _ in GAMES for _, label in UNITS)
    body = []
    for p in PARADIGMS:
        tds = []
        for g in GAMES:
            for unit, _ in UNITS:
                reps = cells.get((p, g, unit), [])
                if reps:
                    links = ", ".join(f'<a href="{html.escape(href(r))}">{html.escape(r)}</a>'
                                      + (' <strong class="stale">stale</strong>' if r in stale else "") for r in reps)
                    tds.append(f'<td class="measured">{links}</td>')
                else:
                    tds.append('<td class="note">not measured</td>')
        body.append(f"<tr><th>{p}</th>{''.join(tds)}</tr>")
    return ("<style>table.grid td{font-size:.85em}table.grid td.measured{background:#eef6ee}"
            "table.grid td.note{color:#999}</style>\n"
            '<table class="grid" data-grid="paradigms"><thead><tr><th rowspan="2">paradigm</th>' + head
            + f"</tr><tr>{sub}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>")


_GAME_WORD = re.compile(r"\b(" + "|".join(sorted(GAMES, key=len, reverse=True)) + r")\b", re.IGNORECASE)


def game_of(md: str) -> str:
    """A report's game, from its Markdown (the first game it names; chess when none)."""
    m = _GAME_WORD.search(md)
    return m.group(1).lower() if m else CHESS.name


__all__ = ["GAMES", "PARADIGMS", "UNITS", "cells_of", "game_of", "grid", "paradigm_of", "table_html"]
