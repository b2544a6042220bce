"""``searchbench replay DB``: play stored games again, move by move, and report the first divergence.

Every game row holds what is needed to play it again: both players' engine specs and limits, the
opening (its moves from the initial position, or its FEN) and the game's seed, which re-seeds each
engine at the start of the game (:meth:`engines.base.Engine.new_game`).  A replay makes fresh
engines, plays the opening, then asks the engine to move at each ply and compares its move with the
stored one; the first ply where they differ is the game's divergence.

What replays exactly: games under node, playout, evaluator-call or depth limits, with in-process
engines and external engines that are deterministic under node limits with one thread (Stockfish,
Fairy-Stockfish).  Time-limited games (movetime, clocks) depend on the machine's speed and are
skipped, with a count.  A replay plays one game at a time, so a neural evaluator sees its leaves in
batches of one search's own (the run may have pooled the leaves of several games into one batch):
where the network's outputs depend on the batch they came in, a game can diverge (reported, not
hidden).

Bughouse games replay when they were played without clocks (``--tc none``) by four of our MCTS seats:
each seat is made again from the options and seed it recorded, the game is played again by the
four-seat server from its stored start with its stored seed (:func:`replay_bughouse_game`), and the
moves of both boards, in the order they were played, are compared.  Games with clocks or with a seat
that is not ours (Sjeng, our alpha-beta in its own process) are skipped, with a count.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import board
from board.variants import BUGHOUSE, variant_of
from engines import catalog, factory, registry
from engines.base import EngineSpec, InProcessEngine
from engines.registry import EvaluatorPool
from engines.seats import Seat
from experiments.harness.bughouse import BughouseStore, network_of, play_game
from experiments.harness.openings import Opening
from experiments.harness.runner import RegistryFactory
from experiments.harness.store import GameRecord, Store
from experiments.harness.tasks import Player, parse_limits


@dataclass
class Outcome:
    """One game's replay: ``ply`` of the first divergence (None: every move agreed), the stored and
    replayed moves there, or ``skipped`` with the reason."""

    key: str
    plies: int
    ply: int | None = None
    stored: str = ""
    replayed: str = ""
    skipped: str = ""

    @property
    def agrees(self) -> bool:
        return self.ply is None and not self.skipped


#: the inference mode of a stored network game that does not record one: games were stored without it
#: while TorchScript was the default
LEGACY_INFERENCE = "frozen"


def player_of(name: str, settings: dict[str, Any]) -> Player:
    """The :class:`Player` a stored game's settings describe: its limits, and its engine as a value
    (:attr:`Player.resolved`, :func:`spec_of`); ``engine`` stays the text the game stored."""
    return Player(name, str(settings["engine"]), **parse_limits(str(settings.get("limits", ""))),
                  resolved=spec_of(settings))


def spec_of(settings: dict[str, Any], legacy: str | None = LEGACY_INFERENCE) -> EngineSpec:
    """The engine a stored game's (or bughouse seat's) settings describe, read back as a value
    without a text round trip: an in-process engine is its evaluator and search with exactly the
    options the game recorded (over its search's own defaults, so a built-in engine's defaults
    changed since do not reach the replay); an older game without them, or an external program, is
    its stored spec text resolved. A network runs in the inference mode the game was played in
    (``inference``, recorded since ONNX Runtime became the default; a network game without it ran
    TorchScript: ``legacy``; a bughouse seat always recorded its mode) unless its options name one.
    :class:`engines.base.EngineError` (one line) when the stored engine no longer resolves."""
    options, ev, se = settings.get("options"), settings.get("evaluator"), settings.get("search")
    if isinstance(options, dict) and isinstance(ev, str) and isinstance(se, str) and se not in catalog.PROTOCOLS:
        stored = {str(k): str(v) for k, v in options.items()}
        spec = registry.with_options(EngineSpec(str(settings.get("engine", f"{ev}+{se}")), ev, se, {}), stored)
    else:
        spec = registry.resolve(str(settings["engine"]))
    mode = settings.get("inference") or (legacy if "weights" in settings else None)
    if mode is not None and not catalog.is_external(spec) and "inference" not in spec.options:
        spec = registry.with_options(spec, {**spec.options, "inference": str(mode)})
    return spec


def replay_game(g: GameRecord, factory: Callable[[Player, str], Any]) -> Outcome:
    """Play ``g`` again with engines from ``factory`` (see module doc)."""
    players = (player_of(g.white, g.white_settings), player_of(g.black, g.black_settings))
    out = Outcome(g.key, len(g.moves))
    if any(p.movetime is not None or p.tc is not None for p in players):
        out.skipped = "time-limited"
        return out
    pos = Opening(g.opening, g.opening_fen, tuple(g.opening_moves)).position(g.variant)
    engines = [factory(p, g.variant) for p in players]
    try:
        for e in engines:
            e.new_game(g.seed)
        for ply, stored in enumerate(g.moves):
            side = 0 if pos.turn == board.WHITE else 1
            r = engines[side].play(pos.copy(), players[side].limits(None))
            got = board.move_to_uci(r.move) if r.move else (r.forfeit or "no move")
            if got != stored:
                out.ply, out.stored, out.replayed = ply, stored, got
                return out
            pos.push_uci(stored)
    finally:
        for e in engines:
            if not isinstance(e, InProcessEngine) or not getattr(factory, "shares_evaluators", False):
                e.close()
    return out


def replay_bughouse_game(g: GameRecord, details: dict[str, Any], pool: Any) -> Outcome:
    """Play the bughouse game ``g`` again (module doc); ``details``: its ``bughouse_games`` row;
    ``pool``: the :class:`engines.registry.EvaluatorPool` its seats' evaluators come from."""
    out = Outcome(g.key, len(g.moves))
    seats = details["seats"]
    if any(int(s.get("base_ms", -1)) >= 0 for s in seats):
        out.skipped = "time-limited"
        return out
    if any(s.get("kind") != "ours" or "seed" not in s for s in seats):
        out.skipped = "a seat that is not our MCTS"
        return out

    made = [factory.create(spec_of(s, legacy=None), BUGHOUSE.name, kind=Seat, seed=int(s["seed"]), pool=pool)
            for s in seats]
    changed = [s["weights"] for s, seat in zip(seats, made)
               if "weights" in s and network_of(seat).get("weights") != s["weights"]]
    if changed:
        for seat in made:
            seat.close()
        out.skipped = "played with other weights"
        return out
    try:
        res = play_game(made, -1, 0, max_plies=len(g.moves), fen=details["fen"], seed=g.seed)
    finally:
        for seat in made:
            seat.close()
    got = [p.text for p in res.moves]
    for ply, stored in enumerate(g.moves):
        mine = got[ply] if ply < len(got) else f"the end ({res.reason})"
        if mine != stored:
            out.ply, out.stored, out.replayed = ply, stored, mine
            return out
    return out


def replay(db: str | Path, key: str | None = None, run: str | None = None,
           progress: bool = True, every: int = 1) -> list[Outcome]:
    """Replay the games of ``db`` (one ``key``, or those of ``run``, or all; ``every`` k-th of them
    for a sample) in the order stored."""
    from tqdm import tqdm

    with Store(db, readonly=True) as store:
        games = store.games(run=run)
    if run is not None and not games:
        raise KeyError(f"no games of run {run!r} in {str(db)!r}")
    if key is not None:
        games = [g for g in games if g.key == key]
        if not games:
            raise KeyError(f"no game {key!r} in {str(db)!r}")
    games = games[::max(1, every)]
    two_board = [g for g in games if variant_of(g.variant).boards > 1]
    one_board = [g for g in games if variant_of(g.variant).boards == 1]
    # A database names programs as a config does: every stored spec is resolved before the first
    # game (under --no-external-programs one that runs another program is refused here, not mid-way).
    for spec in sorted({str(s.get("engine", "")) for g in one_board for s in (g.white_settings, g.black_settings)}):
        registry.resolve(spec)
    outs = {o.key: o for o in (_replay_bughouse(db, two_board, progress) if two_board else [])}
    if one_board:
        factory = RegistryFactory()
        try:
            for g in tqdm(one_board, desc="replay", disable=not progress, dynamic_ncols=True):
                outs[g.key] = replay_game(g, factory)
        finally:
            factory.close()
    return [outs[g.key] for g in games]


def _replay_bughouse(db: str | Path, games: list[GameRecord], progress: bool) -> list[Outcome]:
    from tqdm import tqdm

    bstore = BughouseStore(db, readonly=True)
    try:
        details = {g.key: bstore.details(g.key) for g in games}
    finally:
        bstore.close()
    pool = EvaluatorPool()
    outs = []
    try:
        for g in tqdm(games, desc="replay", disable=not progress, dynamic_ncols=True):
            d = details[g.key]
            if d is None:
                outs.append(Outcome(g.key, len(g.moves), skipped="no bughouse details stored"))
                continue
            outs.append(replay_bughouse_game(g, d, pool))
    finally:
        pool.close()
    return outs
