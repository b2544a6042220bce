"""``searchbench agreement``: how predictable is the teacher's move?

A network's policy accuracy on held-out Fairy-Stockfish games is the share of positions where its
top move is the move the engine played.  That number has a ceiling below 100%: the engine's move
at a node budget depends on its hash table (warm from the game's earlier moves when the data was
made), the order of its search, and, at a few thousand nodes, on choices between near-equal moves.
This command measures the ceiling: it replays validation positions (the same split as training,
``datagen.is_validation``) through the engine afresh (``ucinewgame``, position from FEN: no game
history, an empty hash) at one or more node budgets and reports how often the engine agrees with
the move it played, with a Wilson 95% interval.  The same budget as the data measures the
teacher's own noise; smaller budgets show how agreement grows with search.  With several budgets it
also reports the *plurality* row: the move most of the fresh searches chose (ties: the first
budget's), which estimates what the best position-only predictor can reach.  (If the engine's
choice in a position is a draw from probabilities p over the moves, one fresh search agrees with
the played move with probability sum p^2, the plurality of many with max p, and no predictor that
sees only the position does better than max p; budgets around the data's stand in for the hash
and search-order noise that makes the draws differ.)

Reading: a network that predicts the played move more often than the engine itself at the same
budget would be learning the games' hash history, which it cannot see; so the agreement at the
data's budget is the practical upper bound of policy accuracy on that data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import board
from evaluators.encodings import raw_to_fen
from experiments.harness.stats import wilson
from experiments.training import datagen
from experiments.training.datagen import DataError


@dataclass
class Agreement:
    nodes: int  # 0: the plurality of the budgets
    positions: int
    agree: int

    @property
    def rate(self) -> float:
        return self.agree / self.positions if self.positions else 0.0

    def interval(self) -> tuple[float, float]:
        """Wilson score interval of the agreement rate (:func:`experiments.harness.stats.wilson`)."""
        return wilson(self.agree, self.positions)


def sample_validation(ds: datagen.DataSet, positions: int, seed: int, val_fraction: float = 0.1) -> np.ndarray:
    """A fixed random sample of validation positions (sorted indices)."""
    val_games = np.flatnonzero(datagen.is_validation(ds.game_uid, val_fraction))
    idx = np.flatnonzero(np.isin(ds.game, val_games))
    if len(idx) == 0:
        raise DataError("the data has no validation positions")
    rng = np.random.default_rng(seed)
    out: np.ndarray = np.sort(rng.choice(idx, size=min(positions, len(idx)), replace=False))
    return out


def measure(data: list[str], nodes: list[int], positions: int = 1000, seed: int = 0,
            engine: str = "fairy-stockfish", val_fraction: float = 0.1, progress: bool = True) -> list[Agreement]:
    """Agreement of the engine, searching afresh at each budget in ``nodes``, with the played moves."""
    from tqdm import tqdm

    if not nodes or min(nodes) < 1:
        raise DataError("--nodes wants one or more positive node budgets")
    ds = datagen.load_dataset(data)
    idx = sample_validation(ds, positions, seed, val_fraction)
    proc = datagen.UciProcess(datagen.find_engine(engine), ds.variant)
    out = [Agreement(n, 0, 0) for n in nodes]
    plural = Agreement(0, 0, 0)
    try:
        for i in tqdm(idx, desc="agreement", unit="position", disable=not progress):
            fen = raw_to_fen(tuple(int(v) for v in ds.raw[i]), ds.variant)
            played = board.move_to_uci(int(ds.move[i]))
            votes: dict[str, int] = {}
            for a in out:
                proc.new_game()
                best, _ = proc.go_nodes(fen, [], a.nodes)
                a.positions += 1
                a.agree += best == played
                votes[best] = votes.get(best, 0) + 1
            top = max(votes.values())
            plural.positions += 1
            plural.agree += next(m for m in votes if votes[m] == top) == played  # dicts keep first-seen order
    finally:
        proc.close()
    return out + ([plural] if len(out) > 1 else [])


def format_table(rows: list[Agreement]) -> str:
    lines = [f"{'nodes':>9} {'positions':>9} {'agree':>7} {'95% interval':>17}"]
    for a in rows:
        lo, hi = a.interval()
        name = str(a.nodes) if a.nodes else "plurality"
        lines.append(f"{name:>9} {a.positions:>9} {100 * a.rate:>6.1f}% [{100 * lo:>5.1f}%, {100 * hi:>5.1f}%]")
    return "\n".join(lines)
