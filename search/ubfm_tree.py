"""The tree of :class:`search.ubfm.UBFM` (mypyc-compiled): the node arrays, completion's backup and
the completed order (the notation is in :mod:`search.ubfm`).

Tree (structure of arrays, as :mod:`search.mcts_tree`; a node is an index)::

    nd_parent[i]  its parent (-1: the tree's first root)    nd_move[i]   the move into it
    nd_child0[i]  its first child (-1 until expanded); its children are nd_child0 .. + nd_nchild - 1
    nd_state[i]   NEW (sent to the evaluator), LEAF (evaluated), EXPANDED, TERMINAL, DEFERRED (made
                  by a ``width`` expansion, not yet evaluated: no value, open, widened in later)
    nd_value[i]   v(s)      nd_res[i]  r(s)      nd_plies[i]  plies to the end when resolved
    nd_frozen[i]  1: closed unresolved (at max_depth, or every child closed)
    nd_n[i]       n(s)      nd_prior[i]  P of the move into it      nd_hash[i]  zobrist (tree reuse)
    nd_pol[i]     where its own policy starts in ``pool`` (-1: none kept), one float a legal move
    nd_defer[i]   its DEFERRED children

Tree reuse keeps the arrays and moves the root (up to 4 plies on, each a child of the tree); a tree
that grew beyond ``max_tree_nodes`` nodes (or 24 kept policy floats a node on average) is dropped
at the next move's start.
"""
from __future__ import annotations

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

# a node's resolution for its side to move: the MCTS solver's values (UNKNOWN, WIN, LOSS, DRAW)
from search.mcts_tree import DRAW, LOSS, UNKNOWN, WIN

NEW: Final = 0
LEAF: Final = 1
EXPANDED: Final = 2
TERMINAL: Final = 3
DEFERRED: Final = 4

_NEG: Final = -1e9


class Tree:
    """The node arrays (module docstring)."""

    def __init__(self) -> None:
        self.nd_parent = vec[i64]()
        self.nd_move = vec[i64]()
        self.nd_child0 = vec[i64]()
        self.nd_nchild = vec[i64]()
        self.nd_state = vec[i64]()
        self.nd_value = vec[float]()
        self.nd_res = vec[i64]()
        self.nd_plies = vec[i64]()
        self.nd_frozen = vec[i64]()
        self.nd_n = vec[i64]()
        self.nd_prior = vec[float]()
        self.nd_hash = vec[i64]()
        self.nd_pol = vec[i64]()
        self.nd_defer = vec[i64]()
        self.pool = vec[float]()
        self.n_nodes = 0

    def new_node(self, parent: int, move: int, key: i64, prior: float) -> int:
        self.nd_parent = append(self.nd_parent, parent)
        self.nd_move = append(self.nd_move, move)
        self.nd_child0 = append(self.nd_child0, -1)
        self.nd_nchild = append(self.nd_nchild, 0)
        self.nd_state = append(self.nd_state, NEW)
        self.nd_value = append(self.nd_value, 0.0)
        self.nd_res = append(self.nd_res, UNKNOWN)
        self.nd_plies = append(self.nd_plies, 0)
        self.nd_frozen = append(self.nd_frozen, 0)
        self.nd_n = append(self.nd_n, 0)
        self.nd_prior = append(self.nd_prior, prior)
        self.nd_hash = append(self.nd_hash, key)
        self.nd_pol = append(self.nd_pol, -1)
        self.nd_defer = append(self.nd_defer, 0)
        self.n_nodes += 1
        return self.n_nodes - 1

    def closed(self, i: int) -> bool:
        return self.nd_res[i] != UNKNOWN or self.nd_frozen[i] != 0

    def child_by_move(self, node: int, move: int) -> int:
        c0 = int(self.nd_child0[node])
        if c0 < 0:
            return -1
        for c in range(c0, c0 + int(self.nd_nchild[node])):
            if self.nd_move[c] == move:
                return c
        return -1

    def subtree_size(self, root: int) -> int:
        """The positions scored in the subtree of ``root`` (DEFERRED children not counted)."""
        count = 0
        stack = [root]
        while stack:
            i = stack.pop()
            if self.nd_state[i] == DEFERRED:
                continue
            count += 1
            c0 = int(self.nd_child0[i])
            if c0 >= 0:
                for c in range(c0, c0 + int(self.nd_nchild[i])):
                    stack.append(c)
        return count

    def select(self, node: int, completion: bool, w: float) -> int:
        """The child the descent takes: the best in the completed order among the open scored ones
        (without completion: among all scored), ties by prior then generation order; -1 if none."""
        tree = self
        c0 = int(tree.nd_child0[node])
        best = -1
        best_s = _NEG
        best_p = -1.0
        for c in range(c0, c0 + int(tree.nd_nchild[node])):
            if tree.nd_state[c] == DEFERRED or (completion and tree.closed(c)):
                continue
            s = -tree.nd_value[c] + w * tree.nd_prior[c]
            p = tree.nd_prior[c]
            if s > best_s or (s == best_s and p > best_p):
                best, best_s, best_p = c, s, p
        return best

    def recompute(self, i: int, completion: bool, mate_value: float, draw_value: float) -> None:
        """``v(i)``, ``r(i)`` (completion) and whether ``i`` is frozen, from its scored children; a
        DEFERRED child counts as unresolved and open (``i`` is neither lost, drawn nor frozen)."""
        tree = self
        c0 = int(tree.nd_child0[i])
        n = int(tree.nd_nchild[i])
        if not completion:
            best = _NEG
            for c in range(c0, c0 + n):
                if tree.nd_state[c] == DEFERRED:
                    continue
                s = -tree.nd_value[c]
                if s > best:
                    best = s
            tree.nd_value[i] = best
            return
        win_plies = -1  # the shortest win through a child lost for its side to move
        loss_plies = -1  # the longest loss (every child won for its side to move)
        open_best = _NEG  # the best estimate among the unresolved and drawn children
        unresolved = 0
        frozen = 0
        drawn = 0
        for c in range(c0, c0 + n):
            if tree.nd_state[c] == DEFERRED:
                unresolved += 1
                continue
            r = tree.nd_res[c]
            if r == LOSS:
                p = int(tree.nd_plies[c]) + 1
                if win_plies < 0 or p < win_plies:
                    win_plies = p
            elif r == WIN:
                p = int(tree.nd_plies[c]) + 1
                if p > loss_plies:
                    loss_plies = p
            else:
                s = -tree.nd_value[c]
                if s > open_best:
                    open_best = s
                if r == DRAW:
                    drawn += 1
                else:
                    unresolved += 1
                    if tree.nd_frozen[c]:
                        frozen += 1
        if win_plies >= 0:
            tree.nd_res[i] = WIN
            tree.nd_plies[i] = win_plies
            tree.nd_value[i] = mate_value
        elif unresolved == 0 and drawn > 0:
            tree.nd_res[i] = DRAW
            tree.nd_plies[i] = 0
            tree.nd_value[i] = draw_value
        elif unresolved == 0:
            tree.nd_res[i] = LOSS
            tree.nd_plies[i] = loss_plies
            tree.nd_value[i] = -mate_value
        else:  # open: with only DEFERRED children open, the value is the scored ones' (all lost)
            tree.nd_res[i] = UNKNOWN
            tree.nd_value[i] = open_best if open_best > _NEG else -mate_value
            tree.nd_frozen[i] = 1 if frozen == unresolved else 0

    def order_key(self, c: int, completion: bool) -> float:
        """A child's place in the completed order from its parent's point of view (larger: better)."""
        tree = self
        if completion:
            r = tree.nd_res[c]
            if r == LOSS:
                return 4e6 - float(tree.nd_plies[c])
            if r == WIN:
                return -4e6 + float(tree.nd_plies[c])
        return -tree.nd_value[c]

    def best_child(self, node: int, completion: bool) -> int:
        """The best scored child in the completed order (ties: the larger prior, then the first)."""
        tree = self
        c0 = int(tree.nd_child0[node])
        best, best_k, best_p = -1, _NEG * 10, -1.0
        for c in range(c0, c0 + int(tree.nd_nchild[node])):
            if tree.nd_state[c] == DEFERRED:
                continue
            k = self.order_key(c, completion)
            p = tree.nd_prior[c]
            if k > best_k or (k == best_k and p > best_p):
                best, best_k, best_p = c, k, p
        return best

    def next_batch(self, node: int, k: int) -> vec[i64]:
        """The ``k`` DEFERRED children of ``node`` of largest prior (ties: the first generated)."""
        tree = self
        c0 = int(tree.nd_child0[node])
        ranked: list[tuple[float, int]] = []
        for c in range(c0, c0 + int(tree.nd_nchild[node])):
            if tree.nd_state[c] == DEFERRED:
                ranked.append((-tree.nd_prior[c], c))
        ranked.sort()
        out = vec[i64]()
        for j in range(min(k, len(ranked))):
            out = append(out, ranked[j][1])
        return out


__all__ = ["DEFERRED", "DRAW", "EXPANDED", "LEAF", "LOSS", "NEW", "TERMINAL", "Tree", "UNKNOWN", "WIN"]
