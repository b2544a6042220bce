"""What a player's moves cost, from the stored games: nodes, evaluator calls and seconds per move.

Every stored move carries the mover's report (:class:`engines.base.MoveStat`): nodes searched,
evaluator calls (positions sent to a network, or static evaluations; 0 for an external engine,
which does not say), and wall seconds.  A game's moves alternate from the side to move of its
opening position, so each move is attributed to its player.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from engines.registry import resolve
from experiments.harness.store import GameRecord

#: what "nodes" and "evaluator calls" mean, written under every report's cost table
NODE_CAPTION = ("Nodes: for the MCTS family (PUCT, Gumbel, MCGS) the root's visits when the move was played, "
                "those kept from the previous move's tree included (what a node limit caps); for alpha-beta and "
                "the comparator the positions visited for this move. Evaluator calls: new network or static "
                "evaluations this move (comparator: position pairs), the unit that is the same for every "
                "paradigm; 0 for external engines, which do not report them.")


@dataclass
class Cost:
    """Means per move of one player over its games (``moves`` = how many moves they average)."""

    moves: int = 0
    nodes: float = 0.0
    evals: float = 0.0
    seconds: float = 0.0


def first_mover_is_white(g: GameRecord) -> bool:
    """Whether White makes the first stored move of ``g`` (the opening position's side to move)."""
    fields = g.opening_fen.split()
    return len(fields) < 2 or fields[1] == "w"


def costs(games: Iterable[GameRecord]) -> dict[str, Cost]:
    """Per-move means of every player of ``games`` (moves without statistics count as zeros)."""
    sums: dict[str, list[float]] = {}
    for g in games:
        white_first = first_mover_is_white(g)
        for i, st in enumerate(g.move_stats):
            player = g.white if (i % 2 == 0) == white_first else g.black
            s = sums.setdefault(player, [0.0, 0.0, 0.0, 0.0])
            s[0] += 1
            s[1] += st.nodes
            s[2] += st.evals
            s[3] += st.time
    return {p: Cost(int(s[0]), s[1] / s[0], s[2] / s[0], s[3] / s[0]) for p, s in sums.items() if s[0] > 0}


def batch_text(spec: str) -> str:
    """`` (batch 8, virtual loss 3)`` for an MCTS-family spec: the batch is part of a search's cost at
    small budgets, so every report says which one its engines used ("" for other searches)."""
    try:
        cfg = resolve(spec).config
    except ValueError:
        return ""
    batching = getattr(cfg, "batching", None)
    if batching is None:
        return ""
    single = batching.single_leaf_nodes
    return (f" (batch {batching.batch_size}" + (f", 1 at budgets up to {single}" if single else "")
            + f", virtual loss {batching.virtual_loss:g})")
