"""What a run plays: players (an engine with its limits), game tasks (players, colours, opening,
key) and matches (two players over an opening suite, each opening twice with colours reversed: a
*pair*, SPEC.md section 5), and the adjudication rules.  Keys depend only on what is played, so a
rerun resumes."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence

from engines import catalog, registry
from engines.base import Engine, EngineError, EngineSpec
from experiments.harness.openings import Opening
from experiments.harness.store import file_id
from search.base import Limits

BACKENDS = ("local", "ray")


class MatchError(ValueError):
    """Bad match settings (one-line message)."""


class CommitError(MatchError):
    """A finished game could not be stored (database or PGN write failed): the run stops (one line)."""


MAX_BUDGET = 10**9  # nodes, evaluator calls, depth (the engine options' own cap)
MAX_SECONDS = 10**6  # a move's time, a clock's base or increment (eleven days)
SEED_RANGE = 2**63  # seeds are stored as SQLite integers


def check_name(name: str, what: str = "player name") -> str | None:
    """Why ``name`` cannot name a player (it goes into game keys and PGN tags), or None if it can:
    non-empty, at most 200 characters, no quote, backslash or control character."""
    if not name or not name.strip():
        return f"{what} must not be empty"
    if len(name) > 200:
        return f"{what} is longer than 200 characters"
    bad = next((c for c in name if c in '"\\' or ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        return f"{what} {name!r} contains {bad!r} (no quotes, backslashes or control characters)"
    return None



# --------------------------------------------------------------------------- players and tasks

@dataclass(frozen=True)
class Player:
    """An engine (registry name or spec string) with its limits, under a unique display name."""

    name: str
    engine: str
    nodes: int | None = None
    depth: int | None = None
    movetime: float | None = None  # seconds per move
    tc: tuple[float, float] | None = None  # (base seconds, increment seconds)
    evals: int | None = None  # evaluator calls per move
    playouts: int | None = None  # MCTS: new simulations per move (``nodes`` counts the root's visits, reused ones too)
    #: self-play only (KataGo's playout-cap randomisation): (fraction of moves with the full ``nodes``
    #: search and a policy target, the node limit of the other moves, whose positions keep only a value
    #: target); drawn per move from the game's seed, so a replay draws the same
    playout_cap: tuple[float, int] | None = None
    #: the engine as a value already resolved (by the command line that named it, or a replay's, read
    #: back from the stored game's evaluator, search and options: :func:`experiments.harness.replay.player_of`);
    #: None: ``engine`` resolved
    resolved: EngineSpec | None = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        why = check_name(self.name)
        if why:
            raise MatchError(why)
        if (self.nodes is None and self.depth is None and self.movetime is None and self.tc is None
                and self.evals is None and self.playouts is None):
            raise MatchError(f"player {self.name!r}: give a limit (nodes, playouts, evals, depth, movetime or tc)")
        for k in ("nodes", "depth", "evals", "playouts"):
            v = getattr(self, k)
            if v is not None and not 1 <= v <= MAX_BUDGET:
                raise MatchError(f"player {self.name!r}: {k} must be from 1 to {MAX_BUDGET:,}, got {v}")
        if self.playout_cap is not None and not (0.0 < self.playout_cap[0] <= 1.0 and self.nodes is not None
                                                 and 1 <= self.playout_cap[1] <= self.nodes):
            raise MatchError(f"player {self.name!r}: a playout cap is (fraction in (0, 1], fast nodes from 1 to nodes)")
        if self.movetime is not None and not 0 < self.movetime <= MAX_SECONDS:
            raise MatchError(f"player {self.name!r}: movetime must be a positive number of seconds up to "
                             f"{MAX_SECONDS:,}, got {self.movetime}")
        if self.tc is not None and not (0 < self.tc[0] <= MAX_SECONDS and 0 <= self.tc[1] <= MAX_SECONDS):
            raise MatchError(f"player {self.name!r}: time control needs 0 < base <= {MAX_SECONDS:,} and "
                             f"0 <= increment <= {MAX_SECONDS:,} seconds")

    def limits_text(self) -> str:
        return limits_text(self.nodes, self.depth, self.movetime, self.tc, self.evals, self.playouts)

    @functools.cached_property
    def spec(self) -> EngineSpec:
        """The engine resolved once (:func:`engines.registry.resolve`, options parsed and checked):
        every engine instance of this player is built from this record, which travels with the
        player to worker processes; ``engine`` stays the text that games and keys store."""
        return self.resolved if self.resolved is not None else registry.resolve(self.engine)

    @property
    def ident(self) -> str:
        """What is played (engine and limits), independent of the display name."""
        return f"{self.engine}[{self.limits_text()}]"

    def limits(self, clocks: Sequence[float] | None = None) -> Limits:
        lim = Limits(nodes=self.nodes, depth=self.depth, movetime=self.movetime, evals=self.evals,
                     playouts=self.playouts)
        if self.tc is not None and clocks is not None:
            lim.wtime, lim.btime = max(0.0, clocks[0]), max(0.0, clocks[1])
            lim.winc = lim.binc = self.tc[1]
        return lim

    def settings(self, engine: Engine | None) -> dict[str, Any]:
        s: dict[str, Any] = {"engine": self.engine, "limits": self.limits_text()}
        spec = getattr(engine, "spec", None)
        if spec is not None:
            s.update(spec=str(spec), spec_name=spec.name, evaluator=spec.evaluator, search=spec.search,
                     options=dict(spec.options))

            try:  # every option's value as it ran (reports.played); none for a test's stand-in engine
                if not catalog.is_external(spec):
                    s["effective"] = registry.effective_values(spec)
            except EngineError:
                pass
        ev = getattr(engine, "evaluator", None)
        weights = getattr(ev, "path", None)
        if isinstance(weights, str) and os.path.isfile(weights):
            s["weights"] = file_id(weights)  # which network played, whatever the spec says
        variant = getattr(engine, "variant", None)
        if spec is not None and isinstance(variant, str) and not catalog.is_external(spec):
            try:  # every network it loads (a head swap's value network too), by digest: reports.played
                files = registry.network_files(spec, variant)
                if files and all(os.path.isfile(f) for f in files):
                    s["networks"] = [file_id(f) for f in files]
            except (EngineError, OSError):
                pass
        return played(s, engine)


def played(settings: dict[str, Any], engine: Engine | None) -> dict[str, Any]:
    """``settings`` with ``inference``: the backend the engine's network ran in (after any fallback;
    known once it has evaluated), which a replay uses (:func:`experiments.harness.replay.player_of`)."""
    inference = getattr(getattr(engine, "evaluator", None), "inference", None)
    return dict(settings, inference=inference) if isinstance(inference, str) else settings


def limits_text(nodes: int | None = None, depth: int | None = None, movetime: float | None = None,
                tc: tuple[float, float] | None = None, evals: int | None = None, playouts: int | None = None) -> str:
    """``nodes=800,playouts=400,evals=800,depth=4,movetime=0.5,tc=60+0.6`` (the limits that are set)."""
    parts = []
    if nodes is not None:
        parts.append(f"nodes={nodes}")
    if playouts is not None:
        parts.append(f"playouts={playouts}")
    if evals is not None:
        parts.append(f"evals={evals}")
    if depth is not None:
        parts.append(f"depth={depth}")
    if movetime is not None:
        parts.append(f"movetime={movetime:g}")
    if tc is not None:
        parts.append(f"tc={tc[0]:g}+{tc[1]:g}")
    return ",".join(parts)


def parse_limits(text: str) -> dict[str, Any]:
    """The limits of a :func:`limits_text` (as games store it) as :class:`Player` keywords."""
    kw: dict[str, Any] = {}
    for part in text.split(","):
        k, eq, v = part.partition("=")
        if not eq:
            continue
        if k in ("nodes", "evals", "depth", "playouts"):
            kw[k] = int(v)
        elif k == "movetime":
            kw[k] = float(v)
        elif k == "tc":
            kw[k] = parse_tc(v)
    return kw


def parse_tc(text: str) -> tuple[float, float]:
    """``"60+0.6"`` (seconds) -> (60.0, 0.6); finite, 0 < base and 0 <= increment, each at most
    :data:`MAX_SECONDS`."""
    base, _, inc = text.partition("+")
    try:
        b, i = float(base), float(inc or 0)
    except ValueError:
        raise MatchError(f"time control {text!r} is not BASE+INC in seconds (e.g. 60+0.6)") from None
    if not (0 < b <= MAX_SECONDS and 0 <= i <= MAX_SECONDS):  # NaN fails every comparison
        raise MatchError(f"time control {text!r}: needs 0 < BASE <= {MAX_SECONDS:,} and 0 <= INC <= "
                         f"{MAX_SECONDS:,} seconds (finite)")
    return b, i


@dataclass(frozen=True)
class GameTask:
    key: str
    run: str
    match: str
    pair: int
    variant: str
    white: Player
    black: Player
    opening: Opening
    seed: int = 0


def match_id(variant: str, a: Player, b: Player, suite: str = "") -> str:
    digest = hashlib.sha1(json.dumps([variant, a.ident, b.ident, suite]).encode()).hexdigest()[:10]
    return f"{a.name}~{b.name}:{variant}:{digest}"


def match_tasks(run: str, variant: str, a: Player, b: Player, openings: Sequence[Opening], games: int,
                seed: int = 0, suite: str = "") -> list[GameTask]:
    """``games`` games of ``a`` against ``b``: opening i is pair i, ``a`` White in the first game of a
    pair and Black in the second.  The keys depend only on what is played, so a rerun resumes."""
    if games < 1:
        raise MatchError(f"games must be at least 1, got {games}")
    if not openings:
        raise MatchError("no openings")
    if a.name == b.name:
        raise MatchError(f"both players are named {a.name!r}; give them distinct names")
    if not 0 <= seed < SEED_RANGE:
        raise MatchError(f"seed {seed} is out of range (0 to 2**63 - 1)")
    mid = match_id(variant, a, b, suite)
    out = []
    for i in range(games):
        pair, second = divmod(i, 2)
        white, black = (b, a) if second else (a, b)
        op = openings[pair % len(openings)]
        key = f"{mid}/{pair}/{'ba' if second else 'ab'}"
        out.append(GameTask(key, run, mid, pair, variant, white, black, op,
                            seed ^ zlib.crc32(key.encode())))
    return out


# --------------------------------------------------------------------------- adjudication

@dataclass
class Adjudication:
    """Adjudication as in CrazyAra's cutechess runs (SPEC.md section 5); 0 disables a rule.

    resign: the mover loses once its own score has been <= -resign_cp for resign_moves
    consecutive moves of its own.  draw: from full move draw_from_move, once the last draw_moves
    scores of *both* sides were within +-draw_cp.  max_plies: a draw after that many plies in all
    (opening included).
    """

    resign_moves: int = 5
    resign_cp: int = 600
    draw_from_move: int = 30
    draw_moves: int = 4
    draw_cp: int = 20
    max_plies: int = 400


