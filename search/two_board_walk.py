"""The two-board position as the shared MCTS driver walks it (OpenSpiel's state): bughouse's two
boards, the "sit" move and simulated clocks, behind ``push``/``pop`` of two-board moves
(mypyc-compiled; the rules are LazyBug's, SPEC.md section 4).

A walk position is a :class:`board.bughouse.BughouseGame` position plus

- ``sit_board``: the board whose side to move has declared a sit (-1: none); only the other board
  moves there, and a move on it ends the sit;
- ``clocks``: each seat's simulated time left in ms (None in an untimed game).  A move by seat ``x``
  takes ``dt(x)`` (the average of ``x``'s recent move times): ``x``'s clock loses ``dt`` and gains
  the increment (unless it fell), and the clock of the side to move on the other board runs for the
  same ``dt``.

Moves are two-board moves (:func:`board.bughouse.two_board_move`; ``sit_move(b)`` for a sit).  A
sit on board ``b`` is legal when the other board has a legal move and no board sits already, and
either the partner is to move there or the opponent to move there has less simulated time than
ours (waiting wins on time).  Legal moves come board A first, then board B, each board's sit last.

The game is over at a walk position when a board is checkmated (that board's side to move loses),
when a simulated clock is at or below 0 (the lowest one lost), or when no board can move (the side
to move with less time left loses; untimed: a draw).  Values are **team 0's**.
"""
from __future__ import annotations

from librt.vecs import append, vec
from mypy_extensions import i64

from board.bughouse import (
    BOARD_SHIFT, SIT, BughouseGame, leaf_state, seat_of, split_move, team_of, two_board_move, sit_move,
)
from board.variants import BUGHOUSE
from evaluators.base import Leaf
from search import mcgs
from search.mcts_tree import EXPANDED, _Tree
from search.walk import Walk

_MASK64 = (1 << 64) - 1
_SIT_SALT = 0x9E3779B97F4A7C15
_PLY_A = 0xC2B2AE3D27D4EB4F
_PLY_B = 0x165667B19E3779F9
_FNV_PRIME = 0x100000001B3


def clocks_after(game: BughouseGame, b: int, clocks: list[int], move_ms: list[int]) -> list[int]:
    """The simulated clocks after board ``b``'s side to move in ``game`` moves (module docstring)."""
    out = list(clocks)
    mover = seat_of(b, game.boards[b].turn)
    other = seat_of(1 - b, game.boards[1 - b].turn)
    dt = move_ms[mover]
    out[mover] -= dt
    if out[mover] > 0:
        out[mover] += game.inc_ms
    out[other] -= dt
    return out


def game_over_value(game: BughouseGame, clocks: list[int] | None) -> float | None:
    """Team 0's value if a board is checkmated or a simulated clock fell, else None."""
    for b in (0, 1):
        if game.boards[b].is_checkmate():
            return -1.0 if team_of(b, game.boards[b].turn) == 0 else 1.0
    if clocks is not None:
        # a simulated move longer than the mover's time left is a flag too (not only the clocks of
        # the sides to move): the lowest clock at or below 0 lost
        worst = -1
        for s in range(4):
            if clocks[s] <= 0 and (worst < 0 or clocks[s] < clocks[worst]):
                worst = s
        if worst >= 0:
            return -1.0 if team_of(worst >> 1, worst & 1) == 0 else 1.0
    return None


def stuck_value(game: BughouseGame, clocks: list[int] | None) -> float:
    """Team 0's value when no board can move: the side to move with less time left loses
    (untimed: a draw)."""
    if clocks is None:
        return 0.0
    s0 = seat_of(0, game.boards[0].turn)
    s1 = seat_of(1, game.boards[1].turn)
    loser = s0 if clocks[s0] <= clocks[s1] else s1
    return -1.0 if team_of(loser >> 1, loser & 1) == 0 else 1.0


def sit_allowed(game: BughouseGame, b: int, sit_board: int, clocks: list[int] | None) -> bool:
    """May board ``b``'s side to move sit (module docstring)?"""
    o = 1 - b
    if sit_board >= 0 or not game.boards[o].has_legal_moves():
        return False
    if team_of(o, game.boards[o].turn) == team_of(b, game.boards[b].turn):
        return True  # the partner is to move and not sitting
    # waiting wins on time: the opponent to move on the other board flags before us
    me = seat_of(b, game.boards[b].turn)
    other = seat_of(o, game.boards[o].turn)
    return clocks is not None and clocks[me] > clocks[other]


class TwoBoardWalk(Walk):
    """The walk cursor over a private copy of a bughouse game (module docstring), as
    :class:`search.walk.Walk` states the driver's needs: team 0's values, the evaluator's value
    turned by :meth:`focus_sign`, priors renormalised per board."""

    def __init__(self, game: BughouseGame, own_board: int, clocks: list[int] | None, sit_board: int,
                 move_ms: list[int]) -> None:
        self.game = game
        self.own_board = own_board
        self.clocks = clocks
        self.sit_board = sit_board
        #: each seat's simulated time a move (ms)
        self.move_ms = move_ms
        #: the team of the last move or sit made (-1: none yet)
        self.last_team = -1
        self._undo: list[tuple[int, list[int] | None, int, bool]] = []

    def push(self, bm: int) -> None:
        b, m = split_move(bm)
        game = self.game
        self._undo.append((self.sit_board, self.clocks, self.last_team, m == SIT))
        self.last_team = team_of(b, game.boards[b].turn)
        if m == SIT:
            self.sit_board = b
            return
        if self.clocks is not None:
            self.clocks = clocks_after(game, b, self.clocks, self.move_ms)
        game.push(b, m)
        self.sit_board = -1

    def pop(self) -> None:
        sit_board, clocks, last_team, was_sit = self._undo.pop()
        if not was_sit:
            self.game.pop()
        self.sit_board, self.clocks, self.last_team = sit_board, clocks, last_team

    def key(self) -> i64:
        """A hash of the walk position (both boards, pockets, sides to move, the sit)."""
        z0, z1 = self.game.key()
        h = (z0 ^ ((z1 * 31) & _MASK64) ^ (((self.sit_board + 2) * _SIT_SALT) & _MASK64)) & _MASK64
        return h - (1 << 64) if h >= 1 << 63 else h

    def graph_key(self) -> i64:
        """Graph search's key of the walk position (:mod:`search.mcgs`): :meth:`key` with each
        board's ply count (a walk never meets its own key again: no cycles) and the simulated
        clocks (a position reached at another time is another node)."""
        h: int = int(self.key()) & _MASK64
        h ^= ((self.game.boards[0].ply() + 1) * _PLY_A) & _MASK64
        h ^= ((self.game.boards[1].ply() + 1) * _PLY_B) & _MASK64
        if self.clocks is not None:
            for c in self.clocks:
                h = ((h ^ (c & _MASK64)) * _FNV_PRIME) & _MASK64
        return h - (1 << 64) if h >= 1 << 63 else h

    def team_to_move(self, b: int) -> int:
        return team_of(b, self.game.boards[b].turn)

    def focus_sign(self) -> float:
        """+1 when team 0 moves on our board: the evaluator's value (for that team) times this is team 0's."""
        return 1.0 if self.team_to_move(self.own_board) == 0 else -1.0

    def moves(self) -> vec[i64]:
        """Both boards' moves (board A first, each board's sit last when allowed)."""
        out = vec[i64]()
        for b in (0, 1):
            if self.sit_board == b:
                continue
            for m in self.game.boards[b].legal_moves():
                out = append(out, two_board_move(b, m))
            if sit_allowed(self.game, b, self.sit_board, self.clocks):
                out = append(out, sit_move(b))
        return out

    def over(self, has_moves: bool) -> tuple[bool, float]:
        """(over, team 0's value) at the walk position; ``has_moves``: some edge leaves it."""
        value = game_over_value(self.game, self.clocks)
        if value is not None:
            return True, value
        if has_moves:
            return False, 0.0
        return True, stuck_value(self.game, self.clocks)

    def leaf(self, moves: vec[i64], is_root: bool) -> Leaf:
        """The leaf the evaluator sees: the two boards for our board's side to move, the clocks."""
        clocks = self.clocks if self.clocks is not None else [-1, -1, -1, -1]
        return Leaf(leaf_state(self.game, self.own_board, clocks), [int(m) for m in moves], BUGHOUSE.name)

    # ------------------------------------------------------------------ the driver's walk

    def ply(self) -> int:
        return self.game.ply()

    def turn(self) -> int:
        return self.game.boards[self.own_board].turn

    def fullmove(self) -> int:
        return 1

    def value_sign(self) -> float:
        return self.focus_sign()

    def outcome(self, tree: _Tree, node: int, moves: vec[i64], is_root: bool, mate_value: float) -> tuple[bool, float]:
        return self.over(len(moves) > 0)

    def child_made(self, tree: _Tree, child: int) -> bool:
        """The child's hash and the team that moved into it (its sign); with MCGS its link."""
        tree.nd_hash[child] = self.key()
        tree.nd_sign[child] = 1.0 if self.last_team == 0 else -1.0
        return tree.mcgs and mcgs.link_key(tree, self.graph_key(), child)

    def normalise(self, priors: vec[float], moves: vec[i64]) -> vec[float]:
        """Each board's priors summing to 1."""
        totals = [0.0, 0.0]
        for j in range(len(priors)):
            totals[int(moves[j]) >> BOARD_SHIFT] += priors[j]
        for j in range(len(priors)):
            t = totals[int(moves[j]) >> BOARD_SHIFT]
            if t > 0:
                priors[j] /= t
        return priors

    def reuse(self, tree: _Tree, root: int, previous: Walk | None) -> int:
        """The node of this position in ``tree`` whose root was ``previous``'s: the moves played
        since on either board followed, then our partner's sit; -1 when the game, our board or the
        time control differ."""
        if not isinstance(previous, TwoBoardWalk):
            return -1
        old = previous
        if (old.own_board != self.own_board or old.game.root_fen != self.game.root_fen
                or old.game.base_ms != self.game.base_ms or old.game.inc_ms != self.game.inc_ms):
            return -1
        before = old.game.move_stack
        now = self.game.move_stack
        if len(now) < len(before) or now[:len(before)] != before:
            return -1
        key = self.key()
        node = root
        for b, m in now[len(before):]:
            node = tree.child_by_move(node, two_board_move(b, m))
            if node < 0:
                return -1
        if tree.nd_hash[node] != key and self.sit_board >= 0:
            node = tree.child_by_move(node, sit_move(self.sit_board))
        if node < 0 or tree.nd_hash[node] != key or tree.nd_state[node] != EXPANDED:
            return -1
        return node
