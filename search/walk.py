"""The game as the MCTS driver walks it (mypyc-compiled): OpenSpiel's state interface, as
:class:`search.mcts.MCTS` uses it.  A :class:`Walk` is a cursor over a private position: the driver
makes and takes back moves on it, asks it the legal moves, whether the game is over, the leaf to
send to the evaluator, and the keys of its nodes; it holds no game logic of its own.

The one-board walk (:class:`BoardWalk`, chess and crazyhouse) is here; the two-board walk (bughouse:
both boards, the sit, simulated clocks) is :class:`search.two_board_walk.TwoBoardWalk`.

Values (the notation of :mod:`search.mcts`): a one-board tree keeps each edge's ``W`` from the point
of view of the side to move at its node; a two-board tree keeps team 0's (:attr:`search.mcts.MCTS.teams`), and
:meth:`Walk.value_sign` turns the evaluator's value (for the side the leaf is seen by) into it.
One-board terminal positions are the position's (:meth:`board.position.Position.search_end`, the one
terminal test every search asks): checkmate ``-mate_value`` (proven lost), stalemate, insufficient
material, the fifty-move rule and a repetition inside the tree 0 (proven drawn), a variant's own end
either way; a repeated position below the root ended above it, so it is sent with no earlier
occurrence.
"""
from __future__ import annotations

from librt.vecs import vec
from mypy_extensions import i64

from board.position import END_DRAWN, END_LOST, END_NONE, Position
from evaluators.base import Leaf
from search import mcgs
from search.checks import checking_moves_vec, mates_in_one_vec
from search.mcts_tree import DRAW, EXPANDED, LOSS, WIN, _Tree
from search.transpositions import position_key


class Walk:
    """What the driver needs of a game (module docstring); each game's walk implements all of it."""

    def push(self, move: int) -> None:
        raise NotImplementedError

    def pop(self) -> None:
        raise NotImplementedError

    def key(self) -> i64:
        """The hash of the position (a node's ``nd_hash``: tree reuse checks it)."""
        raise NotImplementedError

    def graph_key(self) -> i64:
        """Graph search's key of the root position (:mod:`search.mcgs`)."""
        raise NotImplementedError

    def moves(self) -> vec[i64]:
        """The legal moves, in the order of the node's edges."""
        raise NotImplementedError

    def ply(self) -> int:
        raise NotImplementedError

    def turn(self) -> int:
        """The side to move at the root (the time manager's and the report's)."""
        raise NotImplementedError

    def fullmove(self) -> int:
        raise NotImplementedError

    def reuse(self, tree: _Tree, root: int, previous: Walk | None) -> int:
        """The node of this position in ``tree``, whose root ``root`` was ``previous``'s position
        (the moves played since followed), or -1."""
        raise NotImplementedError

    def child_made(self, tree: _Tree, child: int) -> bool:
        """A node made for the move just pushed: its hash; with MCGS its link (True: a transposition
        merged into an existing node)."""
        raise NotImplementedError

    def outcome(self, tree: _Tree, node: int, moves: vec[i64], is_root: bool, mate_value: float) -> tuple[bool, float]:
        """``(over, value)`` at a new node with legal moves ``moves``; a proven result goes to the tree."""
        raise NotImplementedError

    def checks(self, moves: vec[i64]) -> vec[i64]:
        """1/0 per move: it gives check (check enhancement, check urgency, fix checkmates)."""
        return vec[i64]()

    def mates(self, moves: vec[i64], checks: vec[i64]) -> vec[i64]:
        """The indices of the moves that mate at once (fix checkmates)."""
        return vec[i64]()

    def eval_key(self, is_root: bool) -> i64:
        """The transposition table's key of the position (0: none)."""
        return 0

    def value_sign(self) -> float:
        """The factor that turns the evaluator's value of the leaf into the tree's frame."""
        return 1.0

    def normalise(self, priors: vec[float], moves: vec[i64]) -> vec[float]:
        """The evaluator's priors as the node's edges take them."""
        return priors

    def leaf(self, moves: vec[i64], is_root: bool) -> Leaf:
        raise NotImplementedError


class BoardWalk(Walk):
    """The one-board walk: the caller's :class:`Position`, walked in place and left as it was."""

    def __init__(self, pos: Position) -> None:
        self.pos = pos
        self.root_ply = pos.ply()

    def push(self, move: int) -> None:
        self.pos.push(move)

    def pop(self) -> None:
        self.pos.pop()

    def key(self) -> i64:
        return self.pos.zobrist

    def graph_key(self) -> i64:
        return position_key(self.pos)

    def moves(self) -> vec[i64]:
        return self.pos.legal_moves_vec()

    def ply(self) -> int:
        return self.pos.ply()

    def turn(self) -> int:
        return self.pos.turn

    def fullmove(self) -> int:
        return self.pos.fullmove_number

    def reuse(self, tree: _Tree, root: int, previous: Walk | None) -> int:
        """Up to 4 plies played since the previous root, each an edge of the tree."""
        if not isinstance(previous, BoardWalk):
            return -1
        pos = self.pos
        gap = pos.ply() - previous.root_ply
        if gap < 0 or gap > 4:
            return -1
        stack = pos.move_stack
        node = root
        for m in stack[len(stack) - gap:]:
            node = tree.child_by_move(node, m)
            if node < 0:
                return -1
        if tree.nd_hash[node] != pos.zobrist or tree.nd_state[node] != EXPANDED:
            return -1
        return node

    def child_made(self, tree: _Tree, child: int) -> bool:
        pos = self.pos
        tree.nd_hash[child] = pos.zobrist
        return tree.mcgs and mcgs.link(tree, pos, child)

    def outcome(self, tree: _Tree, node: int, moves: vec[i64], is_root: bool, mate_value: float) -> tuple[bool, float]:
        end = self.pos.search_end(len(moves) > 0, not is_root)
        if end == END_NONE:
            return False, 0.0
        if end == END_DRAWN:
            tree.nd_proven[node] = DRAW
            return True, 0.0
        tree.nd_proven[node] = LOSS if end == END_LOST else WIN
        return True, -mate_value if end == END_LOST else mate_value

    def checks(self, moves: vec[i64]) -> vec[i64]:
        return checking_moves_vec(self.pos, moves)

    def mates(self, moves: vec[i64], checks: vec[i64]) -> vec[i64]:
        return mates_in_one_vec(self.pos, moves, checks)

    def eval_key(self, is_root: bool) -> i64:
        return position_key(self.pos, -1 if is_root else 0)

    def leaf(self, moves: vec[i64], is_root: bool) -> Leaf:
        return Leaf.snapshot(self.pos, moves, -1 if is_root else 0)
