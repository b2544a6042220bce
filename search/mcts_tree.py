"""The MCTS tree: node and edge storage, the transposition-table index, backup and the solver's
proofs (mypyc-compiled; the notation is in :mod:`search.mcts`), and the selection hook
(:class:`TreeRule`).

Node memory layout (edges and nodes separate, as lc0)
-----------------------------------------------------
All of a tree lives in one :class:`_Tree` of parallel ``vec`` arrays (structure of arrays, every
element unboxed under mypyc); a node or an edge is an index.

Node ``i``::

    nd_edge0[i]   index of its first edge; its edges are nd_edge0[i] .. nd_edge0[i] + nd_nedges[i] - 1
    nd_nedges[i]  number of edges (legal moves)
    nd_state[i]   NEW (created, not yet evaluated), PENDING (in the batch in flight), EXPANDED,
                  TERMINAL (game over: exact value)
    nd_value[i]   the evaluator's value v(s) for the side to move (the exact result if TERMINAL)
    nd_sum_n[i]   N(s) = Σ_b N(s, b), virtual visits included
    nd_proven[i]  solver status for the side to move: UNKNOWN, WIN, LOSS, DRAW
    nd_plies[i]   plies to the end of the game when proven
    nd_hash[i]    zobrist hash (checks tree reuse)
    nd_touched[i] one past the last of its edges ever given a virtual loss (visited or in flight);
                  the edges after it are all untouched (N = 0, no virtual loss)
    nd_tail_best[i]  the first edge with the largest prior among nd_touched[i] .. its last edge
                  (non-checks only when check urgency is on; -1: none), nd_tail_best_check[i] the
    nd_tail_from[i]  same among its checks; valid while nd_tail_from[i] == nd_touched[i] (-1: to be
                  found again): the selection scores these edges of the untouched tail, not all
    nd_pmax[i]    the largest prior of its edges (NaN until needed; bounds the tail's scores)
    nd_n[i]       N(s, a) of the edge a into it (finished visits);   nd_w[i]  W(s, a) of that edge
    nd_vl[i]      leaves in flight below that edge (virtual loss count)

Edge ``e``::

    ed_move[e]    the move (int, see board.moves);   ed_prior[e]  P(s, a)
    ed_child[e]   index of the child node, -1 until first selected (children are created lazily)
    ed_check[e]   1 if the move gives check and check urgency is on, else 0 (a u8)

An edge is what every legal move needs (25 bytes); the statistics of an edge, N, W and the virtual
loss, live in its child node (as lc0's Node holds n and wl), created when the edge is first
selected: the average node has some 30 edges and most are never selected, so a tree takes half
the memory it would with the statistics on the edges, and each expansion copies 4 arrays, not 7
(the page faults of fresh memory were a fifth of a search's time).  An edge without a child has
N = W = 0 and no virtual loss (:meth:`_Tree.edge_n`, :meth:`_Tree.edge_w`).
A node's edges are allocated together when it is expanded; a child node only when its edge is
first selected.  Tree reuse keeps the arrays and moves the root; a tree is dropped when it grows
beyond ``max_tree_nodes``.

Monte-Carlo graph search (``mcgs``; Czech, Korus, Kersting 2021).  Positions reached by different
move orders share one node: a child node made for an edge is first looked up by its position key
(zobrist hash, half-move clock, full-move number, repeated or not); when the position has a node
already, the new child only holds the edge's statistics (N, W, virtual loss: statistics live on
edges, as the paper asks) and links to that node (``nd_target``), where the walk continues.  Three
arrays exist only in this mode, 24 bytes a node on top of the 128 above, plus the position index
(two i64 words per slot, at most half full: 32 bytes or more per position node)::

    nd_target[i]  the position node of child i: i itself, or the node it links to
    nd_vsum[i]    the sum of the values backed up through position node i, for its side to move,
    nd_vcnt[i]    and their count (the evaluation included): Q(i) = nd_vsum / nd_vcnt
    nd_parents[i] the edges that lead to position node i (1 + the links made to it); a node with
                  more than one is a *transposition* (CrazyAra's ``Node::is_transposition``)

As CrazyAra does it: the walk checks *every* edge into a transposition, its first parent's
included, and backs up the correction when the edge's Q lags the node's (``MCTS._transposition``);
and a backup that passes through a transposition re-aligns the edge above it: the value that edge
receives is the one that makes its Q equal to the node's, ``N (Q_t − Q_e) + Q_t`` clipped to
[-1, 1] (CrazyAra's ``backup_value`` with ``get_transposition_q_value``), not the plain value.
"""
from __future__ import annotations

import importlib
import math
import random
from typing import Any, Final

from librt.vecs import append, extend, vec
from mypy_extensions import i64, u8

from search.mcts_config import ROOT_RULES, TREE_RULES, MCTSConfig, final_policy

NEW: Final = 0
PENDING: Final = 1
EXPANDED: Final = 2
TERMINAL: Final = 3

UNKNOWN: Final = 0
WIN: Final = 1
LOSS: Final = 2
DRAW: Final = 3


# Default values of fresh edges, copied in slices by _Tree.expand (more moves than this: built on the fly).
_EDGE_DEFAULTS: Final = 512
_MINUS_ONES: Final = vec[i64]([-1] * _EDGE_DEFAULTS)
_ZEROS_F64: Final = vec[float]([0.0] * _EDGE_DEFAULTS)
_ZEROS_U8: Final = vec[u8]([0] * _EDGE_DEFAULTS)
# The same runs cut to each length k (filled on first use; index k holds length k once set).
_FRESH_CHILD: Final[list[vec[i64]]] = [vec[i64]() for _ in range(_EDGE_DEFAULTS + 1)]
_FRESH_ZERO_U8: Final[list[vec[u8]]] = [vec[u8]() for _ in range(_EDGE_DEFAULTS + 1)]


def counters_hash(halfmove_clock: int, fullmove_number: int, reps: int) -> i64:
    """``(halfmove_clock · C1 + fullmove_number · C2 + reps · C3) mod 2^63`` (C1..C3 odd 64-bit
    constants), mixed into the transposition-table key.  Speed: for counters below 2^20 it is
    computed from the constants' 32-bit halves, every step inside i64 (no big-int arithmetic)."""
    h = halfmove_clock
    f = fullmove_number
    r = reps
    if 0 <= h < 1048576 and 0 <= f < 1048576 and 0 <= r < 1048576:
        hb: i64 = h
        fb: i64 = f
        rb: i64 = r
        lo: i64 = hb * 0x7F4A7C15 + fb * 0x27D4EB4F + rb * 0x9E3779F9  # each term < 2^52
        hi: i64 = hb * 0x9E3779B9 + fb * 0xC2B2AE3D + rb * 0x165667B1
        top: i64 = (hi + (lo >> 32)) & 0x7FFFFFFF  # bits 32..62 of the sum
        return (top << 32) | (lo & 0xFFFFFFFF)
    return (h * 0x9E3779B97F4A7C15 + f * 0xC2B2AE3D27D4EB4F + r * 0x165667B19E3779F9) & 0x7FFFFFFFFFFFFFFF


def _float_vec(xs: list[float]) -> vec[float]:
    """``vec[float](xs)`` by a native loop (the generic conversion costs about 10 ns an element)."""
    n: i64 = len(xs)
    out = _ZEROS_F64[0:n] if n <= _EDGE_DEFAULTS else vec[float]([0.0] * n)
    i: i64 = 0
    while i < n:
        out[i] = xs[i]
        i += 1
    return out


class _KeyIndex:
    """A map from 64-bit keys to slot numbers >= 0 (the transposition table's index): open
    addressing with linear probing in two vecs, so a lookup boxes no int (a dict did).  ``_slot1``
    holds slot + 1 (0: empty); the capacity is a power of two kept at least twice the entries."""

    def __init__(self) -> None:
        self._keys = vec[i64]([0] * 1024)
        self._slot1 = vec[i64]([0] * 1024)
        self._mask: i64 = 1023
        self.size: i64 = 0

    def _probe(self, key: i64) -> i64:
        """The position of ``key`` in the table, or of the empty place where it would go."""
        i = key & self._mask
        while self._slot1[i] != 0 and self._keys[i] != key:
            i = (i + 1) & self._mask
        return i

    def get(self, key: i64) -> i64:
        """The slot of ``key``, or -1."""
        return self._slot1[self._probe(key)] - 1

    def put(self, key: i64, slot: i64) -> None:
        """Map ``key`` to ``slot`` (replacing its slot if present)."""
        i = self._probe(key)
        if self._slot1[i] == 0:
            self._keys[i] = key
            self.size += 1
        self._slot1[i] = slot + 1
        if 2 * self.size > self._mask:
            self._grow()

    def _grow(self) -> None:
        keys = self._keys
        slot1 = self._slot1
        n = 2 * (self._mask + 1)
        self._keys = vec[i64]([0] * n)
        self._slot1 = vec[i64]([0] * n)
        self._mask = n - 1
        for j in range(len(keys)):
            if slot1[j] != 0:
                i = self._probe(keys[j])
                self._keys[i] = keys[j]
                self._slot1[i] = slot1[j]


class _Tree:
    """The node and edge arrays (see the module docstring) and the operations on them; the selection
    of an edge is the tree rule's (:class:`TreeRule`)."""

    def __init__(self, cfg: MCTSConfig, check_urgency: bool = False) -> None:
        self.cfg = cfg
        #: checking edges are flagged (``ed_check``) for the tree rule (:attr:`TreeRule.check_urgency`)
        self.check_urgency = check_urgency
        #: Monte-Carlo graph search: the graph arrays below exist (module docstring)
        self.mcgs = cfg.mcgs
        #: MCGS: position key -> its position node
        self.graph = _KeyIndex()
        self.nd_target = vec[i64]()
        self.nd_vsum = vec[float]()
        self.nd_vcnt = vec[i64]()
        self.nd_parents = vec[i64]()
        self.nd_edge0 = vec[i64]()
        self.nd_nedges = vec[i64]()
        self.nd_state = vec[i64]()
        self.nd_value = vec[float]()
        self.nd_sum_n = vec[float]()
        self.nd_proven = vec[i64]()
        self.nd_plies = vec[i64]()
        self.nd_hash = vec[i64]()
        self.nd_touched = vec[i64]()
        self.nd_tail_from = vec[i64]()
        self.nd_tail_best = vec[i64]()
        self.nd_tail_best_check = vec[i64]()
        self.nd_pmax = vec[float]()
        self.nd_n = vec[i64]()
        self.nd_w = vec[float]()
        self.nd_vl = vec[i64]()
        self.ed_move = vec[i64]()
        self.ed_prior = vec[float]()
        self.ed_child = vec[i64]()
        self.ed_check = vec[u8]()
        self.n_nodes = 0
        self.n_edges = 0

    def new_node(self, key: i64) -> int:
        self.nd_edge0 = append(self.nd_edge0, -1)
        self.nd_nedges = append(self.nd_nedges, 0)
        self.nd_state = append(self.nd_state, NEW)
        self.nd_value = append(self.nd_value, 0.0)
        self.nd_sum_n = append(self.nd_sum_n, 0.0)
        self.nd_proven = append(self.nd_proven, UNKNOWN)
        self.nd_plies = append(self.nd_plies, 0)
        self.nd_hash = append(self.nd_hash, key)
        self.nd_touched = append(self.nd_touched, 0)
        self.nd_tail_from = append(self.nd_tail_from, -1)
        self.nd_tail_best = append(self.nd_tail_best, -1)
        self.nd_tail_best_check = append(self.nd_tail_best_check, -1)
        self.nd_pmax = append(self.nd_pmax, math.nan)
        self.nd_n = append(self.nd_n, 0)
        self.nd_w = append(self.nd_w, 0.0)
        self.nd_vl = append(self.nd_vl, 0)
        if self.mcgs:
            self.nd_target = append(self.nd_target, self.n_nodes)
            self.nd_vsum = append(self.nd_vsum, 0.0)
            self.nd_vcnt = append(self.nd_vcnt, 0)
            self.nd_parents = append(self.nd_parents, 1)
        self.n_nodes += 1
        return self.n_nodes - 1

    def expand(self, node: int, moves: list[int], priors: list[float], value: float) -> None:
        self.expand_vec(node, vec[i64](moves), vec[float](priors), value)

    def expand_vec(self, node: int, moves: vec[i64], priors: vec[float], value: float) -> None:
        """:meth:`expand` with the moves and priors in vecs."""
        self.nd_edge0[node] = self.n_edges
        self.nd_nedges[node] = len(moves)
        k: i64 = len(moves)
        # Speed: extending a vec from a vec is a copy, from a list an element-by-element conversion
        # (~20 ns each); the fresh edges' child and check flag come from constant vecs.
        self.ed_move = extend(self.ed_move, moves)
        self.ed_prior = extend(self.ed_prior, priors)
        if k <= _EDGE_DEFAULTS:
            # Speed: the constant runs of length k are cut once and kept (a slice per expansion
            # costs an allocation and a copy each).
            if len(_FRESH_CHILD[k]) != k:
                _FRESH_CHILD[k] = _MINUS_ONES[0:k]
                _FRESH_ZERO_U8[k] = _ZEROS_U8[0:k]
            self.ed_child = extend(self.ed_child, _FRESH_CHILD[k])
            self.ed_check = extend(self.ed_check, _FRESH_ZERO_U8[k])
        else:
            self.ed_child = extend(self.ed_child, vec[i64]([-1] * k))
            self.ed_check = extend(self.ed_check, vec[u8]([0] * k))
        self.n_edges += len(moves)
        self.nd_touched[node] = self.nd_edge0[node]
        self.nd_tail_from[node] = -1
        self.nd_pmax[node] = math.nan
        self.nd_value[node] = value
        self.nd_state[node] = EXPANDED
        if self.mcgs:
            self.nd_vsum[node] = value
            self.nd_vcnt[node] = 1

    def edge_n(self, e: int) -> int:
        """N(s, a) of edge e (finished visits; 0 while it has no child)."""
        child = self.ed_child[e]
        return int(self.nd_n[child]) if child >= 0 else 0

    def edge_w(self, e: int) -> float:
        """W(s, a) of edge e."""
        child = self.ed_child[e]
        return self.nd_w[child] if child >= 0 else 0.0

    def edge_vl(self, e: int) -> int:
        """The leaves in flight below edge e."""
        child = self.ed_child[e]
        return int(self.nd_vl[child]) if child >= 0 else 0

    def child_of(self, e: int) -> int:
        """The child node of edge e, created (NEW, hash 0) if it has none: the holder of the edge's
        statistics (the search sets a new child's hash once the move is made)."""
        child = self.ed_child[e]
        if child < 0:
            child = self.new_node(0)
            self.ed_child[e] = child
        return int(child)

    def edge_q(self, e: int) -> float:
        n = self.edge_n(e)
        return self.edge_w(e) / float(n) if n > 0 else self.cfg.fpu

    def target(self, child: i64) -> i64:
        """The position node of an edge's child: itself, or with MCGS the node it links to."""
        return self.nd_target[child] if self.mcgs and child >= 0 else child

    def node_after(self, e: int) -> int:
        """The position node edge e leads to (-1 while it has no child)."""
        return int(self.target(self.ed_child[e]))

    @staticmethod
    def transposition_value(n: i64, w: float, target: float) -> float:
        """The value that brings an edge's Q (``w / n`` over ``n`` visits) to ``target`` in one more
        visit, ``N (Q_t − Q_e) + Q_t`` clipped to [-1, 1] (Czech et al. 2021; CrazyAra's
        ``get_transposition_q_value``)."""
        return max(-1.0, min(1.0, float(n) * (target - w / float(n)) + target))

    def link(self, holder: int, node: int) -> None:
        """MCGS: edge-holder ``holder`` leads to the existing position node ``node`` (one parent more)."""
        self.nd_target[holder] = node
        self.nd_parents[node] += 1

    def is_transposition(self, node: i64) -> bool:
        """MCGS: more than one edge leads to position node ``node``."""
        return self.mcgs and self.nd_parents[node] > 1

    def node_q(self, node: int) -> float:
        """MCGS: the value of a position node for its side to move, averaged over every visit."""
        return self.nd_vsum[node] / float(self.nd_vcnt[node]) if self.nd_vcnt[node] > 0 else self.nd_value[node]

    def q_with_pv(self, e: int) -> float:
        """Q of an edge, lowered to the Q met ``q_pv_depth`` plies down its principal variation when
        ``q_pv`` (``Q(s0, a) = min(Q(s0, a), Q(st, x))``, Q(st, x) seen from the first node's side)."""
        q = self.edge_q(e)
        if not self.cfg.q_pv or self.edge_n(e) == 0:
            return q
        node = self.node_after(e)
        sign = -1.0
        last: float | None = None
        for _ in range(1, self.cfg.q_pv_depth):
            if node < 0 or self.nd_state[node] != EXPANDED:
                break
            x = -1
            e0 = int(self.nd_edge0[node])
            for f in range(e0, e0 + int(self.nd_nedges[node])):
                if self.edge_n(f) > 0 and (x < 0 or self.edge_n(f) > self.edge_n(x)):
                    x = f
            if x < 0:
                break
            last = sign * self.edge_q(x)
            node = self.node_after(x)
            sign = -sign
        return q if last is None else min(q, last)

    def find_tail_best(self, node: int, start: i64, end: i64, urgent: bool) -> None:
        """The first edge with the largest prior among start .. end - 1, per kind (checks apart
        when ``urgent``; -1 where there is none of a kind)."""
        ed_prior = self.ed_prior
        ed_check = self.ed_check
        j: i64 = -1
        jc: i64 = -1
        f: i64 = start
        while f < end:
            p = ed_prior[f]
            if urgent and ed_check[f] != 0:
                if jc < 0 or p > ed_prior[jc]:
                    jc = f
            elif j < 0 or p > ed_prior[j]:
                j = f
            f += 1
        self.nd_tail_from[node] = start
        self.nd_tail_best[node] = j
        self.nd_tail_best_check[node] = jc

    def update_proven(self, node: int) -> bool:
        """Solver: decide a node from its children; True if its status or distance changed."""
        if self.nd_state[node] != EXPANDED:
            return False
        old_status = self.nd_proven[node]
        old_plies = self.nd_plies[node]
        e0 = int(self.nd_edge0[node])
        k = int(self.nd_nedges[node])
        all_known = True
        any_draw = False
        win_plies = -1
        loss_plies = 0
        for e in range(e0, e0 + k):
            child = self.node_after(e)
            if child < 0:
                all_known = False
                continue
            pr = self.nd_proven[child]
            if pr == LOSS:
                p = int(self.nd_plies[child]) + 1
                if win_plies < 0 or p < win_plies:
                    win_plies = p
            elif pr == WIN:
                loss_plies = max(loss_plies, int(self.nd_plies[child]) + 1)
            elif pr == DRAW:
                any_draw = True
            else:
                all_known = False
        if win_plies >= 0:
            self.nd_proven[node] = WIN
            self.nd_plies[node] = win_plies
        elif self.cfg.solver and all_known:
            if any_draw:
                self.nd_proven[node] = DRAW
                self.nd_plies[node] = 0
            else:
                self.nd_proven[node] = LOSS
                self.nd_plies[node] = loss_plies
        return self.nd_proven[node] != old_status or self.nd_plies[node] != old_plies

    def settled(self, node: int) -> bool:
        """Proven and nothing left to learn below: a loss, a draw, or a win by mate in one."""
        pr = self.nd_proven[node]
        return pr == LOSS or pr == DRAW or (pr == WIN and self.nd_plies[node] <= 1)

    def proven_value(self, node: int) -> float:
        pr = self.nd_proven[node]
        if pr == WIN:
            return self.cfg.mate_value
        if pr == LOSS:
            return -self.cfg.mate_value
        return 0.0

    def add_virtual_loss(self, parent: int, e: int) -> None:
        """A leaf goes in flight below edge e of parent (its child must exist: see child_of)."""
        if e >= self.nd_touched[parent]:
            self.nd_touched[parent] = e + 1
        self.nd_vl[self.ed_child[e]] += 1
        self.nd_sum_n[parent] += self.cfg.virtual_loss

    def remove_virtual_loss(self, path: vec[i64], nodes: vec[i64]) -> None:
        for i in range(len(path)):
            self.nd_vl[self.ed_child[path[i]]] -= 1
            self.nd_sum_n[nodes[i]] -= self.cfg.virtual_loss

    def backup(self, path: vec[i64], nodes: vec[i64], leaf: int, value: float) -> None:
        """Back ``value`` (for the side to move at ``leaf``) up the path, removing virtual loss;
        with the solver (or fix-checkmates, one level), settle proven statuses on the way."""
        v = value
        vl = self.cfg.virtual_loss
        settle = (self.cfg.solver or self.cfg.fix_checkmates) and self.nd_proven[leaf] != UNKNOWN
        i = len(path) - 1
        while i >= 0:
            child = self.ed_child[path[i]]
            parent = nodes[i]
            v = -v
            self.nd_vl[child] -= 1
            self.nd_n[child] += 1
            self.nd_w[child] += v
            self.nd_sum_n[parent] += 1.0 - vl
            if self.mcgs:
                self.nd_vsum[parent] += v
                self.nd_vcnt[parent] += 1
                if i > 0 and self.nd_parents[parent] > 1:
                    # the edge above a transposition gets the value that aligns its Q with the node's
                    above = self.ed_child[path[i - 1]]
                    n = self.nd_n[above]
                    if n > 0:
                        t = -self.nd_vsum[parent] / float(self.nd_vcnt[parent])
                        v = -self.transposition_value(n, self.nd_w[above], t)  # flipped back at the loop's top
            if settle:
                settle = self.update_proven(parent) and self.cfg.solver
            i -= 1



class TreeRule:
    """The selection hook: which edge a simulation follows from an expanded node (PUCT,
    SixtyFour's score, ...; :data:`search.mcts_config.TREE_RULES` names them).  A rule is built
    once per search from its config and may keep tables of its own.

    Shared by every rule: the solver's treatment of proven children (:meth:`proven`) and the choice
    when every edge is decided (:meth:`fallback`)."""

    #: whether checking edges are flagged at expansion (``_Tree.ed_check``) for this rule
    check_urgency: bool

    def __init__(self, cfg: MCTSConfig) -> None:
        self.cfg = cfg
        self.check_urgency = False
        self.solver = cfg.solver or cfg.fix_checkmates
        self.full_solver = cfg.solver
        self.win_e: i64 = -1
        self.lose_e: i64 = -1

    def select(self, tree: _Tree, node: int) -> int:
        """The edge to follow from ``node`` (EXPANDED)."""
        raise NotImplementedError

    def proven(self, tree: _Tree, e: i64, child: i64) -> i64:
        """Solver: 0 if edge ``e`` (child ``child`` >= 0) is open; 1 if it is decided and is skipped
        (a proven win is remembered as the quickest, a proven loss as the longest, for
        :meth:`fallback`); 2 if it mates at once (fix checkmates: the caller returns it)."""
        if tree.mcgs:
            child = tree.nd_target[child]
        pr = tree.nd_proven[child]
        if pr == LOSS:
            if tree.nd_plies[child] == 0:
                return 2
            # A proven win is known; the visits go to the other moves (a shorter mate?).
            if self.win_e < 0 or tree.nd_plies[child] < tree.nd_plies[tree.target(tree.ed_child[self.win_e])]:
                self.win_e = e
            return 1
        if pr == WIN and self.full_solver:
            # Never walk into a proven loss while something else is open.
            if self.lose_e < 0 or tree.nd_plies[child] > tree.nd_plies[tree.target(tree.ed_child[self.lose_e])]:
                self.lose_e = e
            return 1
        return 0

    def fallback(self, best_e: i64, e0: i64) -> int:
        """The edge chosen: the best open one, else the quickest proven win, else the longest loss."""
        if best_e >= 0:
            return int(best_e)
        if self.win_e >= 0:
            return int(self.win_e)
        return int(self.lose_e) if self.lose_e >= 0 else int(e0)


class RootRule:
    """The root's two decisions (mctx's root action selection and final action): which edge a
    simulation starts with (:meth:`select`, by default the tree rule's) and which move is played
    among the root's open edges (:meth:`choose`, called by :meth:`search.mcts.MCTS.choose_move`
    after the solver's verdicts).  :meth:`begin` sees the root once it is expanded (fresh or reused)
    with the search's node budget and injected random state."""

    def __init__(self, cfg: MCTSConfig, tree_rule: TreeRule) -> None:
        self.cfg = cfg
        self.tree_rule = tree_rule

    def begin(self, tree: _Tree, root: int, budget: int, rng: random.Random) -> None:
        pass

    def select(self, tree: _Tree, root: int) -> int:
        return self.tree_rule.select(tree, root)

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        raise NotImplementedError

    def ranked(self, tree: _Tree, root: int, edges: list[int]) -> list[int]:
        """``edges`` best first by the final-move rule without randomness (multi-PV); by visits here."""
        return sorted(edges, key=lambda e: -tree.edge_n(e))

    def target(self, tree: _Tree, root: int) -> list[float]:
        """The policy training target over the root's edges, in edge order: AlphaZero's visit
        distribution ``N(a) / Σ_b N(b)`` (the priors while no edge is visited)."""
        e0 = int(tree.nd_edge0[root])
        k = int(tree.nd_nedges[root])
        ns = [float(tree.edge_n(e)) for e in range(e0, e0 + k)]
        total = sum(ns)
        if total <= 0.0:
            ns = [tree.ed_prior[e] for e in range(e0, e0 + k)]
            total = sum(ns)
        return [n / total for n in ns] if total > 0.0 else [1.0 / k] * k


class VisitsRoot(RootRule):
    """PUCT's root: the tree rule selects; the move played is ``argmax π`` of
    :func:`search.mcts_config.final_policy` over Q (with the PV rule of :meth:`_Tree.q_with_pv` when
    ``q_pv``), or a draw from ``π^(1/τ)`` with the random state when the temperature ``τ > 0``
    applies (``temperature_moves``); ties go to the move generated first.  With no edge visited
    (a one-node search: the root's expansion only) the move of the highest prior: the raw policy."""

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        cfg = self.cfg
        visits = [tree.edge_n(e) for e in candidates]
        if max(visits) <= 0:  # nothing visited (one node: the root's expansion): the prior's choice
            best = 0
            for i in range(1, len(candidates)):
                if tree.ed_prior[candidates[i]] > tree.ed_prior[candidates[best]]:
                    best = i
            return candidates[best]
        qs = [tree.q_with_pv(e) for e in candidates]
        pi = final_policy(cfg, visits, qs)
        tau = cfg.temperature
        if tau > 0.0 and (cfg.temperature_moves <= 0 or fullmove <= cfg.temperature_moves):
            top = max(pi)
            weights = [(p / top) ** (1.0 / tau) if top > 0 else 1.0 for p in pi]
            r = rng.random() * sum(weights)
            acc = 0.0
            for i in range(len(weights)):
                acc += weights[i]
                if r < acc:
                    return candidates[i]
            return candidates[len(candidates) - 1]
        best = 0
        for i in range(1, len(pi)):
            if pi[i] > pi[best]:
                best = i
        return candidates[best]

    def ranked(self, tree: _Tree, root: int, edges: list[int]) -> list[int]:
        pi = final_policy(self.cfg, [tree.edge_n(e) for e in edges], [tree.q_with_pv(e) for e in edges])
        return [edges[i] for i in sorted(range(len(edges)), key=lambda i: -pi[i])]


def _import(entry: str) -> Any:
    module, _, cls = entry.partition(":")
    return getattr(importlib.import_module(module), cls)


def make_rule(cfg: MCTSConfig) -> TreeRule:
    """The tree rule ``cfg.score_formula`` names (:data:`search.mcts_config.TREE_RULES`)."""
    rule: TreeRule = _import(TREE_RULES[cfg.score_formula])(cfg)
    return rule


def make_root_rule(cfg: MCTSConfig, tree_rule: TreeRule) -> RootRule:
    """The root rule ``cfg.root_rule`` names (:data:`search.mcts_config.ROOT_RULES`)."""
    rule: RootRule = _import(ROOT_RULES[cfg.root_rule])(cfg, tree_rule)
    return rule
