"""The children of a :class:`search.ubfm.UBFM` node (mypyc-compiled): made, each game's end scored
by the rules, and the batch for the evaluator chosen: every other child, or with progressive
widening (``width`` W > 0) the W of largest prior, the rest DEFERRED and widened in later, W at a
time.  The notation is in :mod:`search.ubfm`; the search checks each expansion's cost (positions
scored, evaluator calls) against its limits before the children are made."""
from __future__ import annotations

from librt.vecs import append, vec
from mypy_extensions import i64

from board.position import END_DRAWN, END_LOST, END_NONE, Position
from evaluators.base import Leaf
from search.ubfm_tree import DEFERRED, DRAW, EXPANDED, LOSS, NEW, TERMINAL, WIN, Tree


def score_end(tree: Tree, c: int, end: int, mate_value: float, draw_value: float) -> None:
    """A child at a game's end: its value and resolution by the rules."""
    tree.nd_state[c] = TERMINAL
    if end == END_DRAWN:
        tree.nd_res[c] = DRAW
        tree.nd_value[c] = draw_value
    elif end == END_LOST:
        tree.nd_res[c] = LOSS
        tree.nd_value[c] = -mate_value
    else:
        tree.nd_res[c] = WIN
        tree.nd_value[c] = mate_value


def expand_all(tree: Tree, pos: Position, node: int, moves: vec[i64], pol: int, mate_value: float,
               draw_value: float) -> tuple[list[Leaf], vec[i64]]:
    """Every child of ``node`` (``pos`` at it) made, the ends scored; the others' leaves and nodes
    (one batch).  ``pol``: where ``node``'s priors start in the pool (-1: none)."""
    c0 = tree.n_nodes
    leaves: list[Leaf] = []
    pending = vec[i64]()
    n = len(moves)
    for k in range(n):
        m = int(moves[k])
        pos.push(m)
        c = tree.new_node(node, m, pos.zobrist, tree.pool[pol + k] if pol >= 0 else 0.0)
        child_moves = pos.legal_moves_vec()
        end = pos.search_end(len(child_moves) > 0, True)
        if end != END_NONE:
            score_end(tree, c, end, mate_value, draw_value)
        else:
            pending = append(pending, c)
            leaves.append(Leaf.snapshot(pos, child_moves, 0))
        pos.pop()
    tree.nd_child0[node] = c0
    tree.nd_nchild[node] = n
    tree.nd_state[node] = EXPANDED
    return leaves, pending


class Narrow:
    """A ``width`` expansion planned: each child's end and hash, which are evaluated, and its cost."""

    def __init__(self, n: int) -> None:
        self.ends = vec[i64]()
        self.keys = vec[i64]()
        self.chosen = [False] * n
        self.scored = 0  # positions scored: the ends and the batch
        self.batch = 0  # evaluator calls
        self.deferred = 0


def plan_narrow(tree: Tree, pos: Position, moves: vec[i64], pol: int, width: int) -> Narrow:
    """Each child's end scored (one push each); the ``width`` others of largest prior chosen
    (ties: the first generated)."""
    n = len(moves)
    plan = Narrow(n)
    ranked: list[tuple[float, int]] = []
    for k in range(n):
        pos.push(int(moves[k]))
        end = pos.search_end(len(pos.legal_moves_vec()) > 0, True)
        plan.ends = append(plan.ends, end)
        plan.keys = append(plan.keys, pos.zobrist)
        pos.pop()
        if end == END_NONE:
            ranked.append((-(tree.pool[pol + k] if pol >= 0 else 0.0), k))
    ranked.sort()
    plan.batch = min(width, len(ranked))
    for j in range(plan.batch):
        plan.chosen[ranked[j][1]] = True
    plan.deferred = len(ranked) - plan.batch
    plan.scored = n - plan.deferred
    return plan


def make_narrow(tree: Tree, pos: Position, node: int, moves: vec[i64], pol: int, plan: Narrow,
                mate_value: float, draw_value: float) -> tuple[list[Leaf], vec[i64]]:
    """The planned children made: the ends scored, the chosen ones' leaves, the rest DEFERRED."""
    c0 = tree.n_nodes
    leaves: list[Leaf] = []
    pending = vec[i64]()
    n = len(moves)
    for k in range(n):
        c = tree.new_node(node, int(moves[k]), plan.keys[k], tree.pool[pol + k] if pol >= 0 else 0.0)
        if plan.ends[k] != END_NONE:
            score_end(tree, c, int(plan.ends[k]), mate_value, draw_value)
        elif plan.chosen[k]:
            pos.push(int(moves[k]))
            pending = append(pending, c)
            leaves.append(Leaf.snapshot(pos, pos.legal_moves_vec(), 0))
            pos.pop()
        else:
            tree.nd_state[c] = DEFERRED
    tree.nd_child0[node] = c0
    tree.nd_nchild[node] = n
    tree.nd_defer[node] = plan.deferred
    tree.nd_state[node] = EXPANDED
    return leaves, pending


def widens(tree: Tree, node: int, width: int, widen: int) -> bool:
    """``node`` (with DEFERRED children) is due its next ``width`` by the ``widen`` schedule: fewer
    than ``width · (1 + n(node) // widen)`` of its children scored."""
    scored = int(tree.nd_nchild[node] - tree.nd_defer[node])
    return widen > 0 and scored < width * (1 + int(tree.nd_n[node]) // widen)


def widen_leaves(tree: Tree, pos: Position, node: int, batch: vec[i64]) -> tuple[list[Leaf], vec[i64]]:
    """The ``batch`` of ``node``'s DEFERRED children (``pos`` at it) sent to the evaluator."""
    leaves: list[Leaf] = []
    pending = vec[i64]()
    for k in range(len(batch)):
        c = int(batch[k])
        pos.push(int(tree.nd_move[c]))
        tree.nd_state[c] = NEW
        pending = append(pending, c)
        leaves.append(Leaf.snapshot(pos, pos.legal_moves_vec(), 0))
        pos.pop()
    tree.nd_defer[node] -= len(batch)
    return leaves, pending


__all__ = ["Narrow", "expand_all", "make_narrow", "plan_narrow", "score_end", "widen_leaves", "widens"]
