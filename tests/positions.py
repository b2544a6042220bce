"""Positions shared by the search tests: random game positions and known mates."""
import random

import board

# (variant, FEN, mate in N moves for the side to move); distances checked with Stockfish 15.1 and
# Fairy-Stockfish 11.1 (`go depth 14`).
MATES = [
    ("chess", "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", 1),
    ("chess", "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1", 2),
    ("chess", "7k/8/5K2/8/8/8/8/6R1 w - - 0 1", 2),
    ("chess", "2r3k1/p4p2/3Rp2p/1p2P1pK/8/1P4P1/P3Q2P/1q6 b - - 0 1", 3),
    ("crazyhouse", "6rk/6pp/8/8/8/8/8/6K1[N] w - - 0 1", 1),            # smothered knight drop
    ("crazyhouse", "7k/5Kp1/8/8/8/8/8/8[Q] w - - 0 1", 1),              # queen drop
    ("crazyhouse", "7k/6p1/8/8/8/8/8/7K[QR] w - - 0 1", 2),             # two drops
    ("crazyhouse", "5rk1/5p1p/6p1/8/8/8/8/6K1[QB] w - - 0 1", 2),       # B@f6/B@h6 then Q@g7
    ("crazyhouse", "2r3k1/p4p2/3Rp2p/1p2P1pK/8/1P4P1/P3Q2P/1q6[] b - - 0 1", 3),
]


def random_position(variant: str, seed: int, plies: int) -> board.Position:
    """The position after up to ``plies`` seeded random moves from the start (stops at game end)."""
    rng = random.Random(seed)
    pos = board.new_position(variant)
    for _ in range(plies):
        moves = pos.legal_moves()
        if not moves or pos.is_game_over():
            break
        pos.push(rng.choice(moves))
    return pos
