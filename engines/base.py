"""The engine interface shared by our engines and the adapters for external ones.

An engine is an evaluator + a search + settings (ours) or a subprocess (external).  Every engine
answers :meth:`Engine.play`, blocking.  In-process engines also expose the search's ask/tell steps
(:meth:`InProcessEngine.start` ... :meth:`InProcessEngine.finish`) so the match harness can run many
games at once and pool the leaves of all of them into one evaluator call per evaluator.

An engine never raises for a failure of the engine itself during a game: it returns a
:class:`MoveResult` with ``forfeit`` set to the reason (crash, hang, illegal move, protocol error),
and the caller records the loss and goes on.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from board import Position
from evaluators.base import Evaluation, Evaluator, Leaf
from search.base import Limits, SearchResult, step


class EngineError(ValueError):
    """Unknown engine name or option, or an engine that cannot be started (one-line message)."""


#: the largest count, score or time a stored move's statistics may hold (more is a damaged database)
STAT_MAX = 1e15


@dataclass
class MoveStat:
    """What the mover reported for one move (score in centipawns for the mover), as games store it."""

    nodes: int = 0
    time: float = 0.0
    cp: int | None = None
    mate: int | None = None
    depth: int = 0
    evals: int = 0

    def to_json(self) -> dict[str, Any]:
        """The stored form: named fields (``time`` in seconds, 4 decimals)."""
        return {"nodes": self.nodes, "time": round(self.time, 4), "cp": self.cp, "mate": self.mate,
                "depth": self.depth, "evals": self.evals}

    @staticmethod
    def from_json(v: dict[str, Any] | list[Any]) -> "MoveStat":
        """A stored move's stats: an object with named fields, or the array
        ``[nodes, time, cp, mate, depth, evals]`` of databases written before names were stored."""
        if isinstance(v, list):
            v = dict(zip(("nodes", "time", "cp", "mate", "depth", "evals"), v))
        if not isinstance(v, dict):
            raise ValueError(f"{v!r:.40} is not a move's statistics")

        def count(k: str) -> int:
            x = v.get(k, 0)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= STAT_MAX or x != int(x):
                raise ValueError(f"{k} {x!r:.40} is not a count from 0 to {STAT_MAX:g}")
            return int(x)

        def score(k: str) -> int | None:
            x = v.get(k)
            if x is None:
                return None
            if isinstance(x, bool) or not isinstance(x, int) or not -STAT_MAX <= x <= STAT_MAX:
                raise ValueError(f"{k} {x!r:.40} is not a whole number within +-{STAT_MAX:g}")
            return x

        t = v.get("time", 0.0)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t <= STAT_MAX:
            raise ValueError(f"time {t!r:.40} is not a number of seconds from 0 to {STAT_MAX:g}")
        return MoveStat(count("nodes"), float(t), score("cp"), score("mate"), count("depth"), count("evals"))


@dataclass
class MoveResult:
    """A move (0 if the engine failed), what the engine said about it, and a forfeit reason."""

    move: int
    info: SearchResult | None = None
    forfeit: str | None = None
    time: float = 0.0


#: the per-move limits an engine spec, a match flag or a caller can set
LIMIT_KEYS: tuple[str, ...] = ("nodes", "evals", "playouts", "depth", "movetime", "tc")


def layered_limits(*layers: dict[str, Any]) -> dict[str, Any]:
    """The one rule of limit precedence: each limit from the first layer that sets it (None and 0
    are unset), layers given strongest first. The match command layers an engine's own flag
    (``--nodes-a``), its spec (``material-mcts:nodes=32``), the match-wide flag (``--nodes``);
    an engine layers the caller's limits over its spec's defaults (:func:`engines.ours.merge_limits`)."""
    out: dict[str, Any] = {}
    for k in LIMIT_KEYS:
        out[k] = next((layer[k] for layer in layers if layer.get(k)), None)
    return out


@dataclass
class EngineSpec:
    """A resolved engine: name, evaluator, search and the options as given (canonical text, for the
    records and UCI), plus what the registry parsed from them, once (:func:`engines.registry.resolve`):
    ``settings``, every engine option with its value (defaults filled in: limits, evaluator
    loading, seed, preset), and ``config``, the search's config object, built and validated."""

    name: str
    evaluator: str
    search: str
    options: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    config: Any = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.evaluator}+{self.search}" + (f":{opts}" if opts else "")


class Engine(ABC):
    name: str
    spec: EngineSpec
    variants: frozenset[str]

    def new_game(self, seed: int | None = None) -> None:
        """Forget everything tied to the previous game (search tree, hash, UCI ucinewgame); ``seed``
        (the game's stored seed) re-seeds the engine's random state, so a game replays from its seed
        whatever the engine played before it."""

    @abstractmethod
    def play(self, pos: Position, limits: Limits) -> MoveResult:
        """Choose a move in ``pos`` under ``limits``; failures become ``forfeit``, never exceptions."""

    def check_limits(self, limits: Limits) -> None:
        """Raise :class:`EngineError` for limits the engine cannot honour (checked before a match)."""

    def close(self) -> None:
        """Release the engine (stop a subprocess, free a network)."""


class InProcessEngine(Engine):
    """Our engines: a search with an injected evaluator, steppable for pooled evaluation."""

    evaluator: Evaluator

    @abstractmethod
    def start(self, pos: Position, limits: Limits) -> None:
        """Begin thinking about ``pos`` (the engine keeps its own copy of the position)."""

    @abstractmethod
    def ask(self) -> list[Leaf]:
        """Leaves to evaluate with :attr:`evaluator` before the search can go on."""

    @abstractmethod
    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        """Answers for the last :meth:`ask`, in order."""

    @abstractmethod
    def done(self) -> bool:
        """True once the move is decided."""

    @abstractmethod
    def finish(self) -> MoveResult:
        """The decided move (call once :meth:`done` is True)."""

    def policy_target(self) -> list[tuple[int, float]] | None:
        """After :meth:`finish`: the search's policy training target, (move, probability) over the
        legal moves (self-play), or None if the search has none."""
        return None

    def step(self) -> None:
        """One ask, evaluate, tell with :attr:`evaluator` (the single-game loop)."""
        step(self, self.evaluator)

    def play(self, pos: Position, limits: Limits) -> MoveResult:
        self.start(pos, limits)
        while not self.done():
            self.step()
        return self.finish()
