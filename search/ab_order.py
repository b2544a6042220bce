"""Move ordering for :mod:`search.alphabeta` (mypyc-compiled): the transposition-table move first,
then captures and promotions by MVV-LVA, quiet checks (``order_checks``), the two killers of the ply,
and the rest by the history heuristic (``depth²`` per cutoff, by side, from-to or drop-piece-to).

Moves are the 18-bit integers of :mod:`board.moves` (``from | to << 6 | promotion << 12 | drop << 15``).
"""
from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from board.position import Position
from search.checks import checking_moves

MAX_PLY: Final = 128
MOVE_MASK: Final = (1 << 18) - 1
# MVV-LVA values by piece type.
_MVV: Final = vec[i64]([0, 1, 3, 3, 5, 9, 20])
_ORDER_TT: Final = 1 << 30
_ORDER_CAPTURE: Final = 1 << 26
_ORDER_CHECK: Final = (1 << 25) + 1
_ORDER_KILLER: Final = 1 << 25


def history_index(pos: Position, m: int) -> int:
    """The history slot of a move: by side to move, from-to (4096) or drop piece and square."""
    drop = m >> 15
    if drop:
        return pos.turn * 8192 + 4096 + drop * 64 + ((m >> 6) & 63)
    return pos.turn * 8192 + (m & 4095)


class MoveOrder:
    """Killers (two per ply) and history, kept between the searches of one game."""

    def __init__(self, killers: bool, history: bool, order_checks: bool) -> None:
        self.use_killers = killers
        self.use_history = history
        self.order_checks = order_checks
        self.killers = vec[i64]([0] * (2 * MAX_PLY))
        self.history = vec[i64]([0] * (2 * 8192))

    def clear_killers(self) -> None:
        for i in range(len(self.killers)):
            self.killers[i] = 0

    def order(self, pos: Position, moves: list[int], tt_move: int, ply: int) -> list[int]:
        mailbox = pos.mailbox
        k1 = self.killers[2 * ply] if self.use_killers else -1
        k2 = self.killers[2 * ply + 1] if self.use_killers else -1
        use_hist = self.use_history
        checks = checking_moves(pos, moves) if self.order_checks else []
        keys: list[int] = []
        for i in range(len(moves)):
            m = moves[i]
            if m == tt_move:
                key = _ORDER_TT
            else:
                to = (m >> 6) & 63
                victim = int(mailbox[to] & 7) if not m >> 15 else 0
                promo = (m >> 12) & 7
                if victim or promo:
                    attacker = int(mailbox[m & 63] & 7)
                    key = _ORDER_CAPTURE + int(_MVV[victim]) * 64 + int(_MVV[promo]) * 64 - int(_MVV[attacker])
                elif checks and checks[i]:
                    key = _ORDER_CHECK
                elif m == k1 or m == k2:
                    key = _ORDER_KILLER
                elif use_hist:
                    key = min(int(self.history[history_index(pos, m)]), _ORDER_KILLER - 1)
                else:
                    key = 0
            keys.append((key << 18) | m)
        keys.sort(reverse=True)
        return [k & MOVE_MASK for k in keys]

    def note_cutoff(self, pos: Position, m: int, depth: int, ply: int) -> None:
        if (m >> 15) == 0 and (pos.mailbox[(m >> 6) & 63] or (m >> 12) & 7):
            return  # captures and promotions are ordered by MVV-LVA already
        if self.use_killers and self.killers[2 * ply] != m:
            self.killers[2 * ply + 1] = self.killers[2 * ply]
            self.killers[2 * ply] = m
        if self.use_history:
            self.history[history_index(pos, m)] += depth * depth

    def quiet(self, pos: Position, m: int, ply: int) -> bool:
        """A late-move-reduction candidate (before it is made): no capture, promotion or killer."""
        if (m >> 12) & 7 or pos.is_capture(m):  # a drop is neither
            return False
        return m != self.killers[2 * ply] and m != self.killers[2 * ply + 1]


def by_policy(moves: list[int], priors: list[float], tt_move: int, share: float, in_check: bool) -> tuple[list[int], list[bool]]:
    """policy_order: the moves by the node's priors, the transposition move first; with
    policy_prune, whether each is below the share of the top prior (never the first, nor in check)."""
    idx = sorted(range(len(moves)), key=lambda i: -priors[i] if i < len(priors) else 0.0)
    if tt_move:
        idx = [i for i in idx if moves[i] == tt_move] + [i for i in idx if moves[i] != tt_move]
    ordered = [moves[i] for i in idx]
    f = share
    if f <= 0.0 or in_check or len(priors) != len(moves):
        return ordered, []
    cut = f * max(priors)
    return ordered, [k > 0 and priors[idx[k]] < cut for k in range(len(idx))]
