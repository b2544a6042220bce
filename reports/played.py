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

The network is a setting like the others: a game stores the file name and content digest of the
network its engine loaded (``weights``, the default network of the variant included), a report records
it per player (``network``, with the ``variant`` that chose the default), and a report whose network
is no longer the one today's engine loads (the shipped file replaced, or the default moved to another
file) is stale, naming both.

An option that exists only today (added since) is a difference where today's engine runs it at another
value than its search's or evaluator's own default: an option is added at the default that keeps the
old behaviour, so the old engine ran as that default does (``policy_order`` came to ``rise-ab`` off,
then its default moved on); an option the old engine had and today's lacks is a difference.  External engines (Fairy-Stockfish,
Stockfish) are recorded by spec text only: their defaults are the engine binary's.  The network's backend and
device are recorded, not compared (:data:`NOT_COMPARED`): ``auto`` picks the backend per network and
machine, and each game stores the one that ran.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Iterable
from engines import catalog, registry
from engines.base import EngineError
from evaluators.families import file_id

#: the file beside a report's Markdown
FILE = "engines.json"
#: what a player's record holds (``network`` and ``variant`` where its games recorded a network)
RECORD = ("engine", "effective", "network", "variant")
#: options recorded but not compared: where the network runs, not what the search does (``auto``
#: picks the backend per network and machine; each game stores the backend that ran)
NOT_COMPARED = ("inference", "device")


def collect(settings: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per player name: ``engine`` (its spec text), ``effective`` (its options' values as the games
    stored them; None where the games stored none) and, where its games stored the networks that played
    (``networks``, else ``weights``: file name and digest, :func:`evaluators.families.file_id`; a head
    swap's two joined by `` + ``), ``network`` and the
    game's ``variant`` (which default network today's engine would load), from (name, stored
    settings) pairs, a game's variant under ``variant`` in its settings.  A name whose
    games stored two different settings keeps every distinct one under ``variants`` (a database that
    mixes two engines under one name: its report is stale by construction); games of the same spec
    text that stored no settings (played before they were recorded) are not counted as different."""
    out: dict[str, dict[str, Any]] = {}
    for name, st in settings:
        if not isinstance(st, dict) or "engine" not in st:
            continue
        eff = st.get("effective")
        rec = {"engine": str(st["engine"]), "effective": dict(eff) if isinstance(eff, dict) else None}
        nets = st.get("networks")
        if isinstance(nets, list) and nets and all(isinstance(n, str) for n in nets):
            rec.update(network=" + ".join(nets), variant=str(st.get("variant")))
        elif isinstance(st.get("weights"), str):
            rec.update(network=st["weights"], variant=str(st.get("variant")))
        old = out.get(name)
        if old is None:
            out[name] = rec
        elif old["engine"] == rec["engine"] and (old["effective"] is None or rec["effective"] is None):
            # games from before settings were recorded: not known to differ; the recorded ones stand
            old["effective"] = old["effective"] if old["effective"] is not None else rec["effective"]
        elif {k: old[k] for k in RECORD if k in old} != rec:
            old.setdefault("variants", [{k: old[k] for k in RECORD if k in old}])
            if rec not in old["variants"]:
                old["variants"].append(rec)
    return out


def from_games(games: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """:func:`collect` over stored games (each with ``white``, ``black``, their ``*_settings`` and
    ``variant``: a store's game records). A bughouse game's side is a team of two seats (its settings'
    ``seats``): each seat is a player, named by its engine's spec text (the seat's ``engine``, or its
    ``name`` in games stored before seats recorded one)."""
    def sides(g: Any) -> Iterable[tuple[str, dict[str, Any]]]:
        for name, st in ((g.white, g.white_settings), (g.black, g.black_settings)):
            if not isinstance(st, dict):
                continue
            seats = st.get("seats")
            if isinstance(seats, list):
                for seat in seats:
                    if isinstance(seat, dict) and isinstance(seat.get("engine", seat.get("name")), str):
                        text = str(seat.get("engine", seat.get("name")))
                        yield text, {k: v for k, v in dict(seat, engine=text, variant=g.variant).items()
                                     if k in ("engine", "effective", "weights", "networks", "variant")}
            else:
                yield name, dict(st, variant=g.variant)
    return collect(pair for g in games for pair in sides(g))


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


@functools.lru_cache(maxsize=None)
def network_today(engine: str, variant: str) -> str | None:
    """The network (file name and digest) ``engine`` (a spec text) loads in ``variant`` today; None
    where it loads none or names a file that is not on this machine (a self-play run's network under
    ``runs/``: nothing to compare); KeyError (its message the reason) where it cannot load one (the
    spec no longer makes an engine, the variant has no shipped network, the file is unreadable)."""
    try:
        files = registry.network_files(registry.resolve(engine), variant)
        return " + ".join(file_id(f) for f in files) if files and all(os.path.exists(f) for f in files) else None
    except (EngineError, ValueError, OSError) as e:
        raise KeyError(str(e)) from None


@functools.lru_cache(maxsize=None)
def added_at(engine: str) -> dict[str, str]:
    """Each option of ``engine`` (a spec text) at its search's or evaluator's own default, not the
    built-in engine's: how an engine played before the option existed (resolved once a process)."""
    return {o.name: o.format(o.default) for o in registry.option_infos(registry.resolve(engine))}


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
            before = added_at(str(r["engine"]))
            moved += [f"{k} (not an option then: {before[k]}) → {now[k]}" for k in sorted(now)
                      if k not in eff and k in before and now[k] != before[k]]
            net = r.get("network")
            if isinstance(net, str):
                try:
                    net_now = network_today(str(r["engine"]), str(r.get("variant")))
                except KeyError as e:
                    net_now = f"none ({e.args[0]})"
                if net_now is not None and net_now != net:
                    moved.append(f"network {net} → {net_now}")
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


__all__ = ["FILE", "RECORD", "added_at", "collect", "from_games", "differences", "network_today", "players_of", "status", "today", "write"]
