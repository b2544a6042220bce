"""PGN output of stored games (python-chess writes the PGN; we only build the game tree).

Each game carries the Variant tag (python-chess adds it for crazyhouse), the opening's moves with a
``{book}`` comment, and on every engine move a cutechess-style comment ``{score/depth nodes}``:
score in pawns from the mover's point of view (``+1.25``, or ``+M3``/``-M3`` for mates), the
search depth and the nodes searched, e.g. ``{+0.31/9 1600}``.  The Termination tag holds the
harness's reason (checkmate, adjudication, forfeit, ...).

The PGN file of a run is rebuilt from the database when a run starts (so a run killed between the
database commit and the PGN write never leaves the two out of step) and then appended to, one
game at a time, after each commit.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Iterable

import chess
import chess.pgn
import chess.variant

from experiments.store import GameRecord, MoveStat


def move_comment(s: MoveStat) -> str:
    if s.mate is not None:
        score = f"{'+' if s.mate > 0 else '-'}M{abs(s.mate)}"
    elif s.cp is not None:
        score = f"{s.cp / 100:+.2f}"
    else:
        return ""
    return f"{score}/{s.depth} {s.nodes}"


def to_game(g: GameRecord) -> chess.pgn.Game:
    cls = chess.variant.CrazyhouseBoard if g.variant == "crazyhouse" else chess.Board
    start = cls() if g.opening_moves else cls(g.opening_fen)
    game = chess.pgn.Game()
    game.setup(start)
    date = _dt.datetime.fromtimestamp(g.started or g.finished or 0, _dt.timezone.utc)
    game.headers["Event"] = g.run
    game.headers["Site"] = "searchbench"
    game.headers["Date"] = date.strftime("%Y.%m.%d")
    game.headers["Round"] = str(g.pair + 1)
    game.headers["White"] = g.white
    game.headers["Black"] = g.black
    game.headers["Result"] = g.result
    game.headers["Termination"] = g.reason
    game.headers["Opening"] = g.opening
    game.headers["PlyCount"] = str(len(g.opening_moves) + len(g.moves))
    if g.variant == "crazyhouse":
        game.headers["Variant"] = "Crazyhouse"
    node: chess.pgn.GameNode = game
    for uci in g.opening_moves:
        node = node.add_variation(chess.Move.from_uci(uci))
        node.comment = "book"
    for i, uci in enumerate(g.moves):
        node = node.add_variation(chess.Move.from_uci(uci))
        if i < len(g.move_stats):
            node.comment = move_comment(g.move_stats[i])
    return game


def to_pgn(g: GameRecord) -> str:
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return to_game(g).accept(exporter) + "\n\n"


def write(path: str | Path, games: Iterable[GameRecord]) -> None:
    """(Re)write ``path`` with ``games``."""
    with open(path, "w") as f:
        for g in games:
            f.write(to_pgn(g))


def append(path: str | Path, g: GameRecord) -> None:
    with open(path, "a") as f:
        f.write(to_pgn(g))
        f.flush()
