"""``searchbench deep-agreement``: how often each engine's move is a deep engine's move.

A check that a search with a network is sound before its games count (a minimax backs up the
network's value, so a value that ranks moves badly makes a search that plays them badly): on
positions drawn from an opening suite, each engine, searching afresh at the limits its spec sets
(``rise-ubfm:evals=256``), plays a move, and the share of positions where that move is the move of a
deep reference search (Fairy-Stockfish at 50,000 nodes by default) is counted, with a Wilson 95%
interval.  A minimax with a network passes where it agrees at least as often as its own one-ply
search (``rise-ab:policy_order=false,quiescence=false,depth=1``: the child of best value); the raw
policy (``rise-mcts:nodes=1``: the root's top prior) and PUCT at the same calls are the references
of what the network knows.

Positions: ``positions`` distinct lines of the suite drawn with ``seed`` (without replacement),
each searched from its FEN or moves with a fresh engine state (``new_game``) and no game history.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from engines import factory, registry
from engines.base import Engine, EngineError
from experiments.harness import openings as openings_mod
from experiments.harness.stats import wilson
from search.base import Limits

#: the reference search when none is given
REFERENCE = "fairy-stockfish"
REFERENCE_NODES = 50_000


@dataclass
class Row:
    """One engine's agreement with the reference over the positions."""

    engine: str
    positions: int = 0
    agree: int = 0
    failed: int = 0  # positions where the engine returned no move
    evals: list[int] = field(default_factory=list)

    def interval(self) -> tuple[float, float]:
        """Wilson score interval of the agreement share (:func:`experiments.harness.stats.wilson`)."""
        return wilson(self.agree, self.positions)


def limits_of(spec: str) -> Limits:
    """The limits an engine spec sets (EngineError where it sets none: a probe needs a budget)."""
    lim = {k: v for k, v in registry.spec_limits(spec).items() if v is not None}
    if not lim:
        raise EngineError(f"{spec!r} sets no limit: give one in the spec (rise-ubfm:evals=256)")
    return Limits(**lim)


def draw(suite: str | Path, variant: str, positions: int, seed: int) -> list[openings_mod.Opening]:
    """``positions`` distinct openings of the suite, drawn with ``seed``, in the suite's order."""
    lines = openings_mod.load_suite(suite, variant)
    if positions > len(lines):
        raise ValueError(f"--positions {positions}: the suite has {len(lines)} positions")
    picked = sorted(random.Random(seed).sample(range(len(lines)), positions))
    return [lines[i] for i in picked]


def _move(engine: Engine, op: openings_mod.Opening, variant: str, limits: Limits) -> tuple[int, int]:
    engine.new_game()
    r = engine.play(op.position(variant), limits)
    return r.move, (r.info.evals if r.info is not None else 0)


def measure(engines: list[str], variant: str, suite: str | Path, positions: int = 100, seed: int = 2,
            reference: str = REFERENCE, reference_nodes: int = REFERENCE_NODES,
            progress: bool = True) -> tuple[list[Row], int]:
    """(a row per engine, the positions where the reference gave a move)."""
    from tqdm import tqdm

    budgets = {e: limits_of(e) for e in engines}  # every spec checked before any search
    ops = draw(suite, variant, positions, seed)
    ref = factory.create(reference, variant)
    try:
        wanted = [_move(ref, op, variant, Limits(nodes=reference_nodes))[0]
                  for op in tqdm(ops, desc=f"{reference} {reference_nodes} nodes", unit="position",
                                 disable=not progress)]
    finally:
        ref.close()
    kept = [(op, m) for op, m in zip(ops, wanted) if m]
    rows = []
    for spec in engines:
        row = Row(spec)
        eng = factory.create(spec, variant)
        try:
            for op, best in tqdm(kept, desc=spec, unit="position", disable=not progress):
                move, evals = _move(eng, op, variant, budgets[spec])
                row.positions += 1
                row.agree += move == best
                row.failed += move == 0
                row.evals.append(evals)
        finally:
            eng.close()
        rows.append(row)
    return rows, len(kept)


def format_table(rows: list[Row], reference: str, nodes: int) -> str:
    lines = [f"agreement with {reference} at {nodes} nodes (Wilson 95% intervals)",
             f"{'engine':<56} {'agree':>11} {'95% interval':>15} {'calls/move':>10}"]
    for r in rows:
        lo, hi = r.interval()
        calls = sum(r.evals) / len(r.evals) if r.evals else 0.0
        lines.append(f"{r.engine:<56} {r.agree:>4} of {r.positions:<4} [{100 * lo:4.0f}%, {100 * hi:4.0f}%] "
                     f"{calls:>10.0f}" + (f"  ({r.failed} without a move)" if r.failed else ""))
    return "\n".join(lines)


__all__ = ["REFERENCE", "REFERENCE_NODES", "Row", "draw", "format_table", "limits_of", "measure"]
