"""CrazyAra's PUCT rule below the root (mypyc-compiled; notation in :mod:`search.mcts`):

    argmax_a  Q(s, a) + cpuct(s) · P(s, a) · sqrt(max(N(s), 1)) / (udiv(s) + N(s, a))

with ``Q`` a visited edge's Q transform (:mod:`search.qtransforms`; the mean by default), ``Q = fpu``
for an unvisited edge (``check_q_init`` for an unvisited check under check
urgency), virtual losses counted as visits of value -1, and the solver's proven children handled by
:meth:`search.mcts_rules.TreeRule.proven`.
"""
from __future__ import annotations

import math
from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from search.mcts_config import MCTSConfig, cpuct, u_divisor
from search.mcts_rules import TreeRule
from search.mcts_tree import _Tree

# Node visit counts up to which cpuct(N) and udiv(N) are tabulated (see PUCT.select).
_SCHEDULE_SIZE: Final = 4096
_NANS: Final = vec[float]([math.nan] * _SCHEDULE_SIZE)


class PUCT(TreeRule):
    """CrazyAra's selection rule (the module docstring), with its speed shortcuts."""

    def __init__(self, cfg: MCTSConfig) -> None:
        super().__init__(cfg)
        self.check_urgency = cfg.puct.check_urgency
        self.cpuct_table = _NANS[0:_SCHEDULE_SIZE]
        self.udiv_table = _NANS[0:_SCHEDULE_SIZE]

    def _schedules(self, sum_n: float) -> tuple[float, float]:
        """(cpuct(N), udiv(N)) of a node; for an integral N below _SCHEDULE_SIZE from tables filled on
        first use by the same functions (the same values, no log or exp)."""
        cfg = self.cfg.puct
        if 0.0 <= sum_n < _SCHEDULE_SIZE and sum_n == math.floor(sum_n):
            idx = int(sum_n)
            cp = self.cpuct_table[idx]
            if cp != cp:  # NaN: not yet computed
                cp = cpuct(cfg, sum_n)
                self.cpuct_table[idx] = cp
                self.udiv_table[idx] = u_divisor(cfg, sum_n)
            return cp, self.udiv_table[idx]
        return cpuct(cfg, sum_n), u_divisor(cfg, sum_n)

    def select(self, tree: _Tree, node: int) -> int:
        cfg = self.cfg
        # Speed: native (i64) indices and the arrays in locals keep the loop free of boxed ints.
        nd_n = tree.nd_n
        nd_vl = tree.nd_vl
        nd_w = tree.nd_w
        ed_prior = tree.ed_prior
        ed_child = tree.ed_child
        ed_check = tree.ed_check
        e0: i64 = tree.nd_edge0[node]
        end: i64 = e0 + tree.nd_nedges[node]
        sum_n = tree.nd_sum_n[node]
        vl = cfg.batching.virtual_loss
        solver = self.solver
        self.win_e = -1
        self.lose_e = -1
        cp, ud = self._schedules(sum_n)
        c = cp * math.sqrt(max(sum_n, 1.0))
        best = -1e30
        best_e: i64 = -1
        fpu = cfg.puct.fpu
        q_of = self.q_of
        # Check urgency: an unvisited checking move starts from Q = check_q_init instead of fpu.
        urgent = tree.check_urgency
        fpu_check = cfg.puct.check_q_init if urgent else fpu
        # Speed: an unvisited edge scores q0 + c·P/udiv (q0: fpu, or check_q_init for a check),
        # non-decreasing in P when 0 <= c < inf and udiv > 0 (IEEE rounding is monotone), so once
        # an unvisited edge of one kind with prior pu has been scored (and its score is <= best),
        # a later unvisited edge of that kind with P <= pu cannot beat best: it is skipped without
        # the division.  The edge chosen is exactly the same.
        monotone = 0.0 <= c < math.inf and ud > 0.0
        pu = -math.inf
        pu_check = -math.inf
        # Speed: edges from nd_touched on were never visited nor are in flight, so one of each kind
        # (the first with the largest prior, nd_tail_best/_check) stands for all: see _tail.
        scan_end: i64 = tree.nd_touched[node] if monotone else end
        e: i64 = e0
        while e < scan_end:
            child: i64 = ed_child[e]
            if child < 0 or (nd_n[child] == 0 and nd_vl[child] == 0):
                # An unvisited edge (its child, if any, is a mate found at expansion, and such a
                # node is settled and never selected from).
                p = ed_prior[e]
                check = urgent and ed_check[e] != 0
                if monotone and p <= (pu_check if check else pu):
                    e += 1
                    continue
                score = (fpu_check if check else fpu) + c * p / ud
                if score > best:
                    best = score
                    best_e = e
                if score <= best:  # false only for a NaN score
                    if check:
                        pu_check = p
                    else:
                        pu = p
                e += 1
                continue
            if solver:
                decided = self.proven(tree, e, child)
                if decided == 2:
                    return int(e)  # fix checkmates: a move that mates at once ends the exploration
                if decided == 1:
                    e += 1
                    continue
            inflight = float(nd_vl[child]) * vl
            n = float(nd_n[child]) + inflight
            if n <= 0.0:
                q = fpu
            elif q_of is None:
                q = (nd_w[child] - inflight) / n
            else:
                q = q_of(tree, child, inflight)
            score = q + c * ed_prior[e] / (ud + n)
            if score > best:
                best = score
                best_e = e
            e += 1
        if scan_end < end:
            pick = self._tail(tree, node, scan_end, end, best, pu, pu_check, fpu, fpu_check, c, ud, urgent)
            if pick >= 0:
                return int(pick)
        return self.fallback(best_e, e0)

    def _tail(self, tree: _Tree, node: int, scan_end: i64, end: i64, best: float, pu: float, pu_check: float,
              fpu: float, fpu_check: float, c: float, ud: float, urgent: bool) -> i64:
        """The best edge of the untouched tail scan_end .. end - 1 if it beats ``best``, else -1: for
        each kind its best score is that of its largest prior (monotone), and the scan would pick the
        first tail edge reaching the larger."""
        ed_prior = tree.ed_prior
        e0: i64 = tree.nd_edge0[node]
        pmax = tree.nd_pmax[node]
        if pmax != pmax:  # NaN: not known yet
            pmax = ed_prior[e0]
            f0: i64 = e0 + 1
            while f0 < end:
                if ed_prior[f0] > pmax:
                    pmax = ed_prior[f0]
                f0 += 1
            tree.nd_pmax[node] = pmax
        # The untouched tail cannot beat best if even the largest prior of the node cannot.
        if not max(fpu, fpu_check) + c * pmax / ud > best:
            return -1
        tail_from = tree.nd_tail_from[node]
        if tail_from != scan_end:
            # Edges left the tail since its best ones were found: those found stay the first
            # largest of what is left unless they left too.
            if (tail_from < 0 or tail_from > scan_end or 0 <= tree.nd_tail_best[node] < scan_end
                    or 0 <= tree.nd_tail_best_check[node] < scan_end):
                tree.find_tail_best(node, scan_end, end, urgent)
            else:
                tree.nd_tail_from[node] = scan_end
        j = tree.nd_tail_best[node]
        jc = tree.nd_tail_best_check[node]
        pick: i64 = -1
        top = best
        if j >= 0 and ed_prior[j] > pu:
            s = fpu + c * ed_prior[j] / ud
            if s > top:
                top = s
                pick = self._first_in_tail(tree, scan_end, j, False, urgent, fpu, c, ud, s)
        if jc >= 0 and ed_prior[jc] > pu_check:
            s = fpu_check + c * ed_prior[jc] / ud
            if s > top:
                pick = self._first_in_tail(tree, scan_end, jc, True, urgent, fpu_check, c, ud, s)
                top = s
            elif s == top and pick >= 0:  # both kinds reach the top: the first edge wins
                first = self._first_in_tail(tree, scan_end, jc, True, urgent, fpu_check, c, ud, s)
                if first < pick:
                    pick = first
        return pick

    def _first_in_tail(self, tree: _Tree, start: i64, j: i64, check: bool, urgent: bool, q0: float, c: float,
                       ud: float, top: float) -> i64:
        """The first tail edge of one kind before j whose score ``q0 + c·P/udiv`` equals ``top``
        (edge j's): a smaller prior rounds to the same score only within a relative 1e-15 or so,
        so only edges with a prior that close are scored; j if there is none."""
        ed_prior = tree.ed_prior
        ed_check = tree.ed_check
        p = ed_prior[j]
        x = c * p / ud
        plo = p - 1e-12 * (abs(top) + abs(x)) * ud / c if c > 0.0 else -math.inf
        f: i64 = start
        while f < j:
            q = ed_prior[f]
            if q >= plo and (urgent and ed_check[f] != 0) == check and q0 + c * q / ud == top:
                return f
            f += 1
        return j
