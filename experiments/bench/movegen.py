"""``searchbench bench movegen``: our rules core against python-chess (and OpenSpiel) in one run.

Two measurements on the same positions, each peer in the same process:

* perft with make/unmake of every node (leaves included), nodes = leaves counted; the counts of the
  peers must agree, so the benchmark is also a cross-check;
* random playouts: per ply, the legal move list and making one uniformly random move, until no
  move is legal or 300 plies; plies per second.
"""
from __future__ import annotations

import random
import time
from typing import Any, Callable

import chess

from board import new_position, perft
from board.variants import CHESS, CRAZYHOUSE, variant_of

# (variant, FEN, perft depth): crazyhouse first, as the goals are stated for crazyhouse.
PERFT_POSITIONS: list[tuple[str, str, int]] = [
    (CRAZYHOUSE.name, "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq - 0 1", 3),
    (CRAZYHOUSE.name, "2rn1b1r/1pp2n1p/B1PBk1pP/5p1P/P5p1/2P2RP1/RP1QNP2/1NBK4[QPp] w - - 0 1", 2),
    (CRAZYHOUSE.name, "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22", 2),
    (CRAZYHOUSE.name, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1", 4),
]
CHESS_PERFT_POSITIONS: list[tuple[str, str, int]] = [
    (CHESS.name, "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 3),
    (CHESS.name, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 4),
]
MAX_PLIES = 300


def _pc_board(variant: str, fen: str) -> chess.Board:
    b: chess.Board = variant_of(variant).python_board(fen)
    return b


def _pc_perft(b: chess.Board, depth: int) -> int:
    if depth == 0:
        return 1
    n = 0
    for m in b.legal_moves:
        b.push(m)
        n += _pc_perft(b, depth - 1)
        b.pop()
    return n


def _timed(f: Callable[[], int]) -> tuple[int, float]:
    t = time.perf_counter()
    n = f()
    return n, time.perf_counter() - t


def _ours_playouts(variant: str, fen: str, games: int, seed: int) -> int:
    rng = random.Random(seed)
    plies = 0
    for _ in range(games):
        pos = new_position(variant, fen)
        for _ in range(MAX_PLIES):
            moves = pos.legal_moves()
            if not moves:
                break
            pos.push(moves[int(rng.random() * len(moves))])
            plies += 1
    return plies


def _pc_playouts(variant: str, fen: str, games: int, seed: int) -> int:
    rng = random.Random(seed)
    plies = 0
    for _ in range(games):
        b = _pc_board(variant, fen)
        for _ in range(MAX_PLIES):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(moves[int(rng.random() * len(moves))])
            plies += 1
    return plies


def _spiel_playouts(variant: str, games: int, seed: int) -> int | None:
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game(variant)
    rng = random.Random(seed)
    plies = 0
    for _ in range(games):
        s = game.new_initial_state()
        for _ in range(MAX_PLIES):
            if s.is_terminal():
                break
            actions = s.legal_actions()
            s.apply_action(actions[int(rng.random() * len(actions))])
            plies += 1
    return plies


def run(variant: str = CRAZYHOUSE.name, playout_games: int = 40, seed: int = 1) -> dict[str, Any]:
    positions = PERFT_POSITIONS if variant_of(variant).pockets else CHESS_PERFT_POSITIONS
    ours_n = pc_n = 0
    ours_t = pc_t = 0.0
    for v, fen, depth in positions:
        n1, t1 = _timed(lambda: perft(new_position(v, fen), depth))
        n2, t2 = _timed(lambda: _pc_perft(_pc_board(v, fen), depth))
        if n1 != n2:
            raise RuntimeError(f"perft mismatch on {fen} depth {depth}: ours {n1}, python-chess {n2}")
        ours_n, ours_t, pc_n, pc_t = ours_n + n1, ours_t + t1, pc_n + n2, pc_t + t2
    start = positions[-1][1]
    op, ot = _timed(lambda: _ours_playouts(variant, start, playout_games, seed))
    pp, pt = _timed(lambda: _pc_playouts(variant, start, max(4, playout_games // 10), seed))
    out: dict[str, Any] = {
        "variant": variant,
        "perft_nodes": ours_n,
        "ours_perft_nps": ours_n / ours_t,
        "python_chess_perft_nps": pc_n / pc_t,
        "perft_ratio": (ours_n / ours_t) / (pc_n / pc_t),
        "ours_playout_plies_per_s": op / ot,
        "python_chess_playout_plies_per_s": pp / pt,
        "playout_ratio": (op / ot) / (pp / pt),
    }
    sp, st = _timed(lambda: _spiel_playouts(variant, playout_games, seed) or 0)
    if sp:
        out["open_spiel_playout_plies_per_s"] = sp / st
        out["open_spiel_playout_ratio"] = (op / ot) / (sp / st)
    return out


def format_table(r: dict[str, Any]) -> str:
    lines = [f"movegen benchmark ({r['variant']}, {r['perft_nodes']} perft leaves, make/unmake every node)",
             f"  perft     ours {r['ours_perft_nps']:>12,.0f} nodes/s   python-chess {r['python_chess_perft_nps']:>10,.0f}   ratio {r['perft_ratio']:.1f}x",
             f"  playouts  ours {r['ours_playout_plies_per_s']:>12,.0f} plies/s   python-chess {r['python_chess_playout_plies_per_s']:>10,.0f}   ratio {r['playout_ratio']:.1f}x"]
    if "open_spiel_playout_plies_per_s" in r:
        lines.append(f"  playouts  OpenSpiel (C++ via pyspiel) {r['open_spiel_playout_plies_per_s']:>10,.0f} plies/s   "
                     f"ours/OpenSpiel {r['open_spiel_playout_ratio']:.2f}x")
    else:
        lines.append("  playouts  OpenSpiel not installed (pip install open-spiel) - skipped")
    return "\n".join(lines)
