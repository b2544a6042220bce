"""Monte-Carlo graph search (``mcgs``; Czech, Korus, Kersting 2021): the two steps of a walk that
make the tree a graph (mypyc-compiled; the notation is in :mod:`search.mcts`, the graph arrays in
:mod:`search.mcts_tree`).

- :func:`link`: a child made for an edge is looked up by its position key
  (:func:`search.transpositions.position_key`); when the position has a node already the child
  becomes an edge holder linked to it, else it is the position's node.
- :func:`transposition`: arriving at a position node through an edge, the walk stops and backs up
  the node's value on the edge's first visit, or the correction
  ``Q_φ = N(s, a) (Q(t) − Q(s, a)) + Q(t)`` (clipped to [-1, 1]) when the edge's Q lags the node's
  by more than ``mcgs_q_eps`` (the paper's Algorithm 1); else it descends.

Both hold for the two-board tree (:mod:`search.two_board`), whose values are team 0's and whose edges
carry their mover's sign (``nd_sign``) instead of alternating by ply.
"""
from __future__ import annotations

from librt.vecs import vec
from mypy_extensions import i64

from board.position import Position
from search.mcts_tree import EXPANDED, _Tree
from search.transpositions import position_key


def link(tree: _Tree, pos: Position, child: int) -> bool:
    """The position ``pos`` just reached through the new ``child``: link to its node if it has one
    (True: a transposition merged), else make ``child`` its node (False)."""
    return link_key(tree, position_key(pos, 1 if pos.is_repetition(2) else 0), child)


def link_key(tree: _Tree, key: i64, child: int) -> bool:
    """:func:`link` for the position of key ``key`` (the two-board walk's keys are its own)."""
    t = tree.graph.get(key)
    if t >= 0 and t != child:
        tree.link(child, t)
        return True
    tree.graph.put(key, child)
    return False


def transposition(tree: _Tree, child: int, node: int, path: vec[i64], nodes: vec[i64], q_eps: float) -> bool:
    """At position node ``node`` through edge holder ``child``: True if the simulation ends here (a
    value backed up along ``path``), False to descend into ``node``."""
    if tree.nd_state[node] != EXPANDED:
        return False  # pending (a collision), terminal or new: the walk handles it
    n = tree.nd_n[child]
    if n == 0:
        tree.backup(path, nodes, node, tree.node_q(node))
        return True
    # node values are for the node's side to move (two boards: team 0's); the sign turns them into
    # the edge's mover's
    sign = tree.nd_sign[child] if tree.teams else -1.0
    q_edge = tree.nd_w[child] / float(n)
    q_node = sign * tree.node_q(node)  # the node's value from the edge's side
    if abs(q_edge - q_node) <= q_eps:
        return False
    tree.backup(path, nodes, node, sign * tree.transposition_value(n, tree.nd_w[child], q_node))
    return True
