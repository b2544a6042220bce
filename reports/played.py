"""What each engine of a report ran with, and whether today's engine of the same name still does.

A report names its players by spec text (``rise-mcts``, ``rise-gumbel:c_scale=0.1``), and a built-in
engine's defaults move when the suite's own ablations find stronger ones (CrazyAra's check bonus was
on in ``rise-mcts``, then off): a claim played against the old engine is not a claim about today's.
So every game stores, beside its spec text, the *effective* value of every option of an in-process
engine (presets applied; ``effective`` in the game's settings, :mod:`experiments.harness.tasks`), and
every report page written from games records them per player in ``FOLDER/engines.json``
(:func:`write`).  :func:`status` resolves each recorded spec text again with today's code and lists
the options whose value moved: ``searchbench report --index`` marks such a report *stale* on the
answer page, and a report played before games stored their settings as *not recorded*.

Options that exist only today (added since, at a default the old engine could not have had) are not
differences; an option the old engine had and today's lacks is.  External engines (Fairy-Stockfish,
Stockfish) are recorded by spec text only: their defaults are the engine binary's.  The network's backend and
device are recorded, not compared (:data:`NOT_COMPARED`): ``auto`` picks the backend per network and
machine, and each game stores the one that ran.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Iterable
from engines import catalog, registry
from engines.base import EngineError

#: the file beside a report's Markdown
FILE = "engines.json"
#: options recorded but not compared: where the network runs, not what the search does (``auto``
#: picks the backend per network and machine; each game stores the backend that ran)
NOT_COMPARED = ("inference", "device")


def collect(settings: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per player name: ``engine`` (its spec text) and ``effective`` (its options' values as the games
    stored them; None where the games stored none), from (name, stored settings) pairs.  A name whose
    games stored two different settings keeps every distinct one under ``variants`` (a database that
    mixes two engines under one name: its report is stale by construction); games of the same spec
    text that stored no settings (played before they were recorded) are not counted as different."""
    out: dict[str, dict[str, Any]] = {}
    for name, st in settings:
        if not isinstance(st, dict) or "engine" not in st:
            continue
        eff = st.get("effective")
        rec = {"engine": str(st["engine"]), "effective": dict(eff) if isinstance(eff, dict) else None}
        old = out.get(name)
        if old is None:
            out[name] = rec
        elif old["engine"] == rec["engine"] and (old["effective"] is None or rec["effective"] is None):
            # games from before settings were recorded: not known to differ; the recorded ones stand
            old["effective"] = old["effective"] if old["effective"] is not None else rec["effective"]
        elif {k: old[k] for k in ("engine", "effective")} != rec:
            old.setdefault("variants", [{k: old[k] for k in ("engine", "effective")}])
            if rec not in old["variants"]:
                old["variants"].append(rec)
    return out


def write(folder: str | Path, players: dict[str, dict[str, Any]]) -> Path | None:
    """``FOLDER/engines.json`` (sorted, one player a key); nothing where there are no players."""
    if not players:
        return None
    path = Path(folder) / FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(players, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


@functools.lru_cache(maxsize=None)
def today(engine: str) -> dict[str, str] | None:
    """The effective options of ``engine`` (a spec text) with today's code, resolved once a process
    (the answer page asks for ``rise-mcts`` in report after report; callers do not change the dict);
    None for an external engine; KeyError (its message the reason) where the text no longer makes an engine."""
    try:
        spec = registry.resolve(engine)
        if catalog.is_external(spec):
            return None
        values = registry.effective_values(spec)
    except (EngineError, ValueError) as e:
        raise KeyError(str(e)) from None
    return {k: v for k, v in values.items() if k not in NOT_COMPARED}


def differences(players: dict[str, dict[str, Any]]) -> list[str]:
    """``player: option A -> B`` for every recorded option whose value today differs (one line a
    player, options sorted), and the players whose spec text no longer makes an engine."""
    lines = []
    for name, rec in sorted(players.items()):
        played = [rec] + list(rec.get("variants", []))[1:]
        for r in played:
            eff = r.get("effective")
            if not isinstance(eff, dict):
                continue
            try:
                now = today(str(r["engine"]))
            except KeyError as e:
                lines.append(f"{name}: `{r['engine']}` is no engine today ({e.args[0]})")
                continue
            if now is None:
                continue
            moved = [f"{k} {eff[k]} → {now[k]}" if k in now else f"{k} {eff[k]} → (gone)"
                     for k in sorted(eff) if str(eff[k]) != now.get(k) and k not in NOT_COMPARED]
            if moved:
                lines.append(f"{name}: " + ", ".join(moved))
        if len(played) > 1:
            lines.append(f"{name}: its games were played with {len(played)} different settings")
    return lines


def players_of(folder: str | Path) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """A report folder's ``engines.json``: (its players, "") or (None, why not: none, a link, not
    readable, not an engines record)."""
    path = Path(folder) / FILE
    if path.is_symlink() or not path.is_file():
        return None, "played before games stored their engines' effective settings"
    try:
        players = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"{path} is not readable ({e})"
    if not isinstance(players, dict) or not all(isinstance(v, dict) and "engine" in v for v in players.values()):
        return None, f"{path} is not an engines record"
    return players, ""


def status(folder: str | Path) -> tuple[str, list[str]]:
    """(``current``, []), (``stale``, the differences) or (``unrecorded``, [why]) for a report folder."""
    players, why = players_of(folder)
    if players is None:
        return "unrecorded", [why]
    if not any(isinstance(v.get("effective"), dict) for v in players.values()):
        return "unrecorded", ["its games stored no effective settings"]
    lines = differences(players)
    return ("stale", lines) if lines else ("current", [])


__all__ = ["FILE", "collect", "differences", "players_of", "status", "today", "write"]
