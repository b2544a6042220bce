"""CrazyAra's PUCT (mypyc-compiled; notation in :mod:`search.mcts`): its settings (:class:`PUCTParams`),
its schedules, the rule below the root (:class:`PUCT`) and the visit-count root (:class:`VisitsRoot`):

    argmax_a  Q(s, a) + cpuct(s) · P(s, a) · sqrt(max(N(s), 1)) / (udiv(s) + N(s, a))

with ``Q`` a visited edge's Q transform (:mod:`search.qtransforms`; the mean by default), ``Q = fpu``
for an unvisited edge (``check_q_init`` for an unvisited check under check
urgency), virtual losses counted as visits of value -1, and the solver's proven children handled by
:meth:`search.mcts_rules.TreeRule.proven`.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar, Final

from librt.vecs import vec
from mypy_extensions import i64

from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_rules import RootRule, TreeRule, final_policy
from search.mcts_tree import UNKNOWN, _Tree

@dataclass
class PUCTParams:
    """CrazyAra's rule's own settings (its record in :data:`search.parts.PARTS`): the cpuct and
    u-divisor schedules, FPU, check enhancement and our check urgency.  Other parts read them too:
    SixtyFour's rule and the tree the FPU, the driver's expansion check enhancement, LazyBug's rule
    its cpuct and FPU."""

    cpuct_init: float = 2.5
    cpuct_base: float = 19652.0
    cpuct_schedule: bool = True
    fpu: float = -1.0
    u_divisor: bool = True
    u_init: float = 1.0
    u_final: float = 0.25
    u_base: float = 1965.0
    check_enhancement: bool = True
    check_prior_threshold: float = 0.1
    check_factor: float = 0.5
    check_cap: bool = False  # newer CrazyAra: add min(0.1, 0.5 max P) instead of 0.5 max P
    # Check urgency, not in CrazyAra 0.6.0: unvisited checks start at check_q_init.  With fpu -1 a
    # node whose first move came back with a good Q tries a second move only after about
    # ((1 + Q) / (cpuct P))^2 visits, so with a flat prior the solver never sees the forcing moves
    # that prove a mate (a crazyhouse mate in 3 with Q and R in hand was not found in a million
    # simulations); check enhancement raises their prior but cannot close the fpu gap of 1 + Q.
    check_urgency: bool = False
    check_q_init: float = 0.0

    def validate(self) -> None:
        for name, v in (("cpuct_base", self.cpuct_base), ("u_base", self.u_base)):
            if not v > 0:  # each divides
                raise MCTSConfigError(f"{name} must be positive, got {v}")
        if self.cpuct_init < 0:
            raise MCTSConfigError("cpuct_init must be >= 0")
        if not -1.0 <= self.check_q_init <= 1.0:
            raise MCTSConfigError("check_q_init must be in [-1, 1]")


def cpuct(cfg: PUCTParams, n: float) -> float:
    """The exploration constant for a node with ``n`` visits."""
    if not cfg.cpuct_schedule:
        return cfg.cpuct_init
    return math.log((n + cfg.cpuct_base + 1.0) / cfg.cpuct_base) + cfg.cpuct_init


def u_divisor(cfg: PUCTParams, n: float) -> float:
    """``udiv(s)``: 1 (u_init) for a fresh node, decaying to 0.25 (u_final) as it is visited."""
    if not cfg.u_divisor:
        return 1.0
    return cfg.u_final - math.exp(-n / cfg.u_base) * (cfg.u_final - cfg.u_init)


# Node visit counts up to which cpuct(N) and udiv(N) are tabulated (see PUCT.select).
_SCHEDULE_SIZE: Final = 4096
_NANS: Final = vec[float]([math.nan] * _SCHEDULE_SIZE)


class PUCT(TreeRule):
    """CrazyAra's selection rule (the module docstring), with its speed shortcuts."""

    def __init__(self, cfg: MCTSConfig) -> None:
        super().__init__(cfg)
        self.pp = cfg.settings(PUCTParams)
        self.check_urgency = self.pp.check_urgency
        self.cpuct_table = _NANS[0:_SCHEDULE_SIZE]
        self.udiv_table = _NANS[0:_SCHEDULE_SIZE]

    def _schedules(self, sum_n: float) -> tuple[float, float]:
        """(cpuct(N), udiv(N)) of a node; for an integral N below _SCHEDULE_SIZE from tables filled on
        first use by the same functions (the same values, no log or exp)."""
        cfg = self.pp
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
        fpu = self.pp.fpu
        q_of = self.q_of
        # Check urgency: an unvisited checking move starts from Q = check_q_init instead of fpu.
        urgent = tree.check_urgency
        fpu_check = self.pp.check_q_init if urgent else fpu
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


class VisitsRoot(RootRule):
    """PUCT's root: the tree rule selects; the move played is ``argmax π`` of
    :func:`final_policy` over Q (with the PV rule of :meth:`_Tree.q_with_pv` when
    ``q_pv``), or a draw from ``π^(1/τ)`` with the random state when the temperature ``τ > 0``
    applies (``temperature_moves``); ties go to the move generated first.  With no edge visited
    (a one-node search: the root's expansion only) the move of the highest prior: the raw policy.

    Self-play's KataGo pieces (Wu 2019, section 3.1), each a switch of :class:`MCTSConfig`:

    - forced playouts (``forced_playouts`` = k > 0, full searches only): an open edge that already
      has a visit (KataGo's ``rootDesiredPerChildVisitsCoeff``: only "a child that receives any
      visits at all") with ``N(s, a) < n_forced(a) = sqrt(k · P(s, a) · N(s))`` (in-flight visits
      counted) is selected before the tree rule is asked, the one with the largest prior first; an
      unvisited move gets its first visit from the tree rule alone;
    - policy-target pruning (``policy_target_pruning``): the target takes from every edge but the
      most visited ``a*`` up to ``n_forced(a)`` visits, as long as its PUCT score
      ``Q(a) + cpuct(s) · P(a) · sqrt(N(s)) / (udiv(s) + N')`` stays at most ``a*``'s, and drops an edge
      so reduced to one visit or none (:meth:`pruned_visits`);
    - ``temperature_visits``: the temperature draws from the target's visit shares, not from
      ``final_policy``'s Q mix (the greedy move keeps ``final_policy``)."""

    SELFPLAY: ClassVar[dict[str, str | None]] = {
        "dirichlet_epsilon": "0.25", "dirichlet_alpha": None, "temperature": "1.0", "temperature_moves": "15",
        "forced_playouts": "2", "policy_target_pruning": "true", "temperature_visits": "true"}
    QUIET: ClassVar[dict[str, str]] = {
        "dirichlet_epsilon": "0", "temperature": "0", "forced_playouts": "0", "policy_target_pruning": "false",
        "temperature_visits": "false", "prior_noise": "0"}
    # no check enhancement in the loop's targets: they would learn the check bias that play adds back
    # (searchbench targets at 16 nodes: with it 33.7% top-1 and 0.39 of the mass on checks, without
    # it 36.0% and 0.20, the prior 34.7% and 0.18)
    ROUNDS: ClassVar[dict[str, str]] = {"check_enhancement": "false"}
    # the pruned target's score is PUCT's (its cpuct and u-divisor): those three need PUCT's tree rule
    SERVES: ClassVar[dict[str, tuple[str, ...]]] = {
        "forced_playouts": ("crazyara",), "policy_target_pruning": ("crazyara",), "temperature_visits": ("crazyara",),
        "epsilon_greedy": (), "epsilon_checks": ()}

    def select(self, tree: _Tree, root: int) -> int:
        k = self.cfg.exploration.forced_playouts
        if k > 0.0 and not self.fast:
            e0 = int(tree.nd_edge0[root])
            total = tree.nd_sum_n[root]
            best = -1
            best_p = -1.0
            for e in range(e0, e0 + int(tree.nd_nedges[root])):
                child = tree.ed_child[e]
                # KataGo forces only a child that already has visits: an unvisited move is left
                # to the tree rule (its first visit is the rule's choice, not a forced one)
                if child < 0 or tree.nd_n[child] <= 0 or tree.nd_proven[tree.target(child)] != UNKNOWN:
                    continue
                n = float(tree.nd_n[child] + tree.nd_vl[child])
                p = tree.ed_prior[e]
                if n < math.sqrt(k * p * total) and p > best_p:
                    best, best_p = e, p
            if best >= 0:
                return best
        return self.tree_rule.select(tree, root)

    def pruned_visits(self, tree: _Tree, root: int) -> list[float]:
        """The root's edge visits with the forced playouts taken out (the class docstring), in edge
        order; the visits as they are for a fast search or with pruning off."""
        e0 = int(tree.nd_edge0[root])
        k = int(tree.nd_nedges[root])
        ns = [float(tree.edge_n(e)) for e in range(e0, e0 + k)]
        cfg = self.cfg
        if not cfg.exploration.policy_target_pruning or self.fast or k < 2:
            return ns
        total = sum(ns)
        top = max(range(k), key=lambda i: ns[i])
        if ns[top] <= 0.0:
            return ns
        pp = cfg.settings(PUCTParams)
        c = cpuct(pp, total) * math.sqrt(total)
        ud = u_divisor(pp, total)
        best = tree.edge_q(e0 + top) + c * tree.ed_prior[e0 + top] / (ud + ns[top])
        out = list(ns)
        for i in range(k):
            n = ns[i]
            if i == top or n <= 0.0:
                continue
            p = tree.ed_prior[e0 + i]
            gap = best - tree.edge_q(e0 + i)
            if gap <= 0.0:
                continue  # its score beats a*'s at any count: none of its visits were forced
            keep = max(n - math.sqrt(cfg.exploration.forced_playouts * p * total), c * p / gap - ud)
            if keep < n:
                out[i] = 0.0 if keep <= 1.0 else max(0.0, math.ceil(keep))
        return out

    def target(self, tree: _Tree, root: int) -> list[float]:
        """AlphaZero's visit distribution ``N(a) / Σ_b N(b)``, pruned of forced playouts where
        ``policy_target_pruning`` is on (the priors while no edge is visited)."""
        e0 = int(tree.nd_edge0[root])
        k = int(tree.nd_nedges[root])
        ns = self.pruned_visits(tree, root)
        total = sum(ns)
        if total <= 0.0:
            ns = [tree.ed_prior[e] for e in range(e0, e0 + k)]
            total = sum(ns)
        return [n / total for n in ns] if total > 0.0 else [1.0 / k] * k

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
        pi = final_policy(cfg.choice, visits, qs)
        tau = cfg.choice.temperature
        if tau > 0.0 and (cfg.choice.temperature_moves <= 0 or fullmove <= cfg.choice.temperature_moves):
            draw = pi
            if cfg.choice.temperature_visits:
                e0 = int(tree.nd_edge0[root])
                shares = self.pruned_visits(tree, root)
                draw = [shares[e - e0] for e in candidates]
                if max(draw) <= 0.0:
                    draw = pi
            top = max(draw)
            weights = [(p / top) ** (1.0 / tau) if top > 0 else 1.0 for p in draw]
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
        pi = final_policy(self.cfg.choice, [tree.edge_n(e) for e in edges], [tree.q_with_pv(e) for e in edges])
        return [edges[i] for i in sorted(range(len(edges)), key=lambda i: -pi[i])]
