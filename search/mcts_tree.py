"""The MCTS tree: node and edge storage, backup and the solver's proofs (mypyc-compiled; the
notation is in :mod:`search.mcts`).  The rules that select in it are in :mod:`search.mcts_rules`,
the position index of graph search in :mod:`search.transpositions`.

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

An edge is what every legal move needs (25 bytes); its statistics (N, W, virtual loss) live in its
child node (as lc0's Node holds n and wl), made when the edge is first selected: most of a node's
some 30 edges never are, so a tree takes half the memory and an expansion copies 4 arrays, not 7.
An edge without a child has N = W = 0 (:meth:`_Tree.edge_n`).  Tree reuse keeps the arrays and
moves the root; a tree is dropped when it grows beyond ``max_tree_nodes``.

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
included, and backs up the correction when the edge's Q lags the node's (:func:`search.mcgs.transposition`);
and a backup that passes through a transposition re-aligns the edge above it: the value that edge
receives is the one that makes its Q equal to the node's, ``N (Q_t − Q_e) + Q_t`` clipped to
[-1, 1] (CrazyAra's ``backup_value`` with ``get_transposition_q_value``), not the plain value.

Two-board mode (``teams``, bughouse: :mod:`search.two_board`).  A node has a side to move on each
board, and two consecutive edges may be moves of the same team, so values do not alternate by ply:
``nd_value`` and the values backed up are **team 0's**, and one array more, 8 bytes a node::

    nd_sign[i]    +1 if the edge into i is a move (or sit) of team 0, -1 if of team 1: the edge's
                  W(s, a) sums ``nd_sign · v`` (its mover's point of view, as one board's edges do)

The graph works in this mode too: ``nd_vsum`` averages team 0's values, and an edge's view of a
node's value is ``nd_sign`` times it (where one board's is its negative).
"""
from __future__ import annotations

import math
from typing import Final

from librt.vecs import append, extend, vec
from mypy_extensions import i64, u8

from search.mcts_config import MCTSConfig
from search.transpositions import KeyIndex

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


def _float_vec(xs: list[float]) -> vec[float]:
    """``vec[float](xs)`` by a native loop (the generic conversion costs about 10 ns an element)."""
    n: i64 = len(xs)
    out = _ZEROS_F64[0:n] if n <= _EDGE_DEFAULTS else vec[float]([0.0] * n)
    i: i64 = 0
    while i < n:
        out[i] = xs[i]
        i += 1
    return out


class _Tree:
    """The node and edge arrays (see the module docstring) and the operations on them; the selection
    of an edge is the tree rule's (:class:`search.mcts_rules.TreeRule`)."""

    def __init__(self, cfg: MCTSConfig, check_urgency: bool = False, teams: bool = False, fpu: float = -1.0) -> None:
        self.cfg = cfg
        self.fpu = fpu  # the Q of an unvisited edge (PUCT's first-play urgency: the driver passes it)
        #: two-board mode (module docstring): values are team 0's, each edge's sign is in nd_sign
        self.teams = teams
        self.nd_sign = vec[float]()
        #: checking edges are flagged (``ed_check``) for the tree rule (:attr:`TreeRule.check_urgency`)
        self.check_urgency = check_urgency
        #: Monte-Carlo graph search: the graph arrays below exist (module docstring)
        self.mcgs = cfg.tree.mcgs
        #: MCGS: position key -> its position node
        self.graph = KeyIndex()
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
        self.n_nodes = self.n_edges = 0

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
        if self.teams:
            self.nd_sign = append(self.nd_sign, 1.0)
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
        return self.edge_w(e) / float(n) if n > 0 else self.fpu

    def target(self, child: i64) -> i64:
        """The position node of an edge's child: itself, or with MCGS the node it links to."""
        return self.nd_target[child] if self.mcgs and child >= 0 else child

    def node_after(self, e: int) -> int:
        """The position node edge e leads to (-1 while it has no child)."""
        return int(self.target(self.ed_child[e]))

    def child_by_move(self, node: int, move: int) -> int:
        """The node after ``node``'s edge of ``move`` (tree reuse), or -1."""
        if node < 0 or self.nd_state[node] != EXPANDED:
            return -1
        e0 = int(self.nd_edge0[node])
        for e in range(e0, e0 + int(self.nd_nedges[node])):
            if self.ed_move[e] == move:
                return self.node_after(e)
        return -1

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

    def most_visited(self, node: int) -> int:
        """The most visited edge of ``node``; the first of equals."""
        e0 = int(self.nd_edge0[node])
        best = e0
        for e in range(e0, e0 + int(self.nd_nedges[node])):
            if self.edge_n(e) > self.edge_n(best):
                best = e
        return best

    def node_q(self, node: int) -> float:
        """MCGS: the value of a position node for its side to move, averaged over every visit."""
        return self.nd_vsum[node] / float(self.nd_vcnt[node]) if self.nd_vcnt[node] > 0 else self.nd_value[node]

    def q_with_pv(self, e: int) -> float:
        """Q of an edge, lowered to the Q met ``q_pv_depth`` plies down its principal variation when
        ``q_pv`` (``Q(s0, a) = min(Q(s0, a), Q(st, x))``, Q(st, x) seen from the first node's side)."""
        q = self.edge_q(e)
        if not self.cfg.choice.q_pv or self.edge_n(e) == 0:
            return q
        node = self.node_after(e)
        sign = -1.0
        last: float | None = None
        for _ in range(1, self.cfg.choice.q_pv_depth):
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
        elif self.cfg.tree.solver and all_known:
            if any_draw:
                self.nd_proven[node] = DRAW
                self.nd_plies[node] = 0
            else:
                self.nd_proven[node] = LOSS
                self.nd_plies[node] = loss_plies
        return self.nd_proven[node] != old_status or self.nd_plies[node] != old_plies

    def proven_moves(self, node: int, solver: bool, fix_checkmates: bool) -> tuple[int, int, list[int]]:
        """``node``'s edges by what is proven of them: the shortest win (-1: none), the longest
        loss (-1: none) and the rest (the final move's candidates)."""
        candidates: list[int] = []
        best_win = -1
        longest = -1
        e0 = int(self.nd_edge0[node])
        for e in range(e0, e0 + int(self.nd_nedges[node])):
            child = self.node_after(e)
            pr = self.nd_proven[child] if child >= 0 and (solver or fix_checkmates) else UNKNOWN
            if pr == LOSS:
                if best_win < 0 or self.nd_plies[child] < self.nd_plies[self.node_after(best_win)]:
                    best_win = e
            elif pr == WIN and solver:
                if longest < 0 or self.nd_plies[child] > self.nd_plies[self.node_after(longest)]:
                    longest = e
            else:
                candidates.append(e)
        return best_win, longest, candidates

    def settled(self, node: int) -> bool:
        """Proven and nothing left to learn below: a loss, a draw, or a win by mate in one."""
        pr = self.nd_proven[node]
        return pr == LOSS or pr == DRAW or (pr == WIN and self.nd_plies[node] <= 1)

    def proven_value(self, node: int) -> float:
        pr = self.nd_proven[node]
        if pr == WIN:
            return self.cfg.tree.mate_value
        if pr == LOSS:
            return -self.cfg.tree.mate_value
        return 0.0

    def add_virtual_loss(self, parent: int, e: int) -> None:
        """A leaf goes in flight below edge e of parent (its child must exist: see child_of)."""
        if e >= self.nd_touched[parent]:
            self.nd_touched[parent] = e + 1
        self.nd_vl[self.ed_child[e]] += 1
        self.nd_sum_n[parent] += self.cfg.batching.virtual_loss

    def remove_virtual_loss(self, path: vec[i64], nodes: vec[i64]) -> None:
        for i in range(len(path)):
            self.nd_vl[self.ed_child[path[i]]] -= 1
            self.nd_sum_n[nodes[i]] -= self.cfg.batching.virtual_loss

    def _backup_teams(self, path: vec[i64], nodes: vec[i64], value0: float) -> None:
        """Two-board backup: no alternation (two teams move on two boards), W(s, a) += ±value0 by the
        team that made a (``nd_sign`` of a's child); no solver.  With the graph, as :meth:`backup`:
        position nodes average team 0's values, and the edge above a transposition gets the value
        that aligns its Q with the node's."""
        vl = self.cfg.batching.virtual_loss
        v = value0
        i = len(path) - 1
        while i >= 0:
            child = self.ed_child[path[i]]
            parent = nodes[i]
            self.nd_vl[child] -= 1
            self.nd_n[child] += 1
            self.nd_w[child] += v * self.nd_sign[child]
            self.nd_sum_n[parent] += 1.0 - vl
            if self.mcgs:
                self.nd_vsum[parent] += v
                self.nd_vcnt[parent] += 1
                if i > 0 and self.nd_parents[parent] > 1:
                    above = self.ed_child[path[i - 1]]
                    n = self.nd_n[above]
                    if n > 0:
                        s = self.nd_sign[above]
                        t = s * self.nd_vsum[parent] / float(self.nd_vcnt[parent])
                        v = s * self.transposition_value(n, self.nd_w[above], t)
            i -= 1

    def backup(self, path: vec[i64], nodes: vec[i64], leaf: int, value: float) -> None:
        """Back ``value`` (for the side to move at ``leaf``) up the path, removing virtual loss;
        with the solver (or fix-checkmates, one level), settle proven statuses on the way.  In
        two-board mode ``value`` is team 0's and each edge gets it signed by its mover's team."""
        if self.teams:
            self._backup_teams(path, nodes, value)
            return
        v = value
        vl = self.cfg.batching.virtual_loss
        settle = (self.cfg.tree.solver or self.cfg.tree.fix_checkmates) and self.nd_proven[leaf] != UNKNOWN
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
                settle = self.update_proven(parent) and self.cfg.tree.solver
            i -= 1
