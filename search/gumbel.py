"""Gumbel AlphaZero's search (Danihelka, Guez, Schrittwieser, Silver: "Policy improvement by planning
with Gumbel", ICLR 2022), as DeepMind's mctx implements it (mypyc-compiled; the preset
:meth:`search.mcts_config.MCTSConfig.gumbel`, the engines ``*-gumbel``).

Notation (with :mod:`search.mcts`): at a node, ``l(a) = log P(a)`` the logits of the priors,
``N(a)`` the visits of edge a, ``Q(a)`` its mean value for the side to move, ``v`` the evaluator's
value of the node.  Unvisited edges are *completed* by the mixed value (the paper's appendix;
mctx's ``qtransform_completed_by_mix_value``)::

    v_mix = (v + Σ_b N(b) · Σ_{b visited} P(b) Q(b) / Σ_{b visited} P(b)) / (1 + Σ_b N(b))

the completed Q are rescaled to ``q̂`` in [0, 1] by their minimum and maximum over the node's edges,
and ``σ(q̂) = (c_visit + max_b N(b)) · c_scale · q̂`` (:class:`GumbelParams`).

Root (:class:`SequentialHalving`): Gumbel noise ``g(a)`` (``gumbel_scale`` times a standard Gumbel
draw from the injected random state; 0: none, deterministic) is drawn once; ``m = min(legal
moves, considered_actions)`` actions are considered (with ``adaptive_considered`` at most
:func:`budget_considered` of the budget), the budget of ``n`` simulations (the node
limit) is spread by Sequential Halving over ``⌈log2 m⌉`` phases (:func:`considered_visits`: phase
by phase every remaining action gets the same visits, then the better half goes on), and the k-th
simulation starts with the action of visit count ``considered_visits(m, n)[k]`` that maximises
``g + l + σ(q̂)``.  With more simulations than planned (a time limit) the two most visited actions
go on alternately.  The move played is, among the actions with the most visits, the one with the
highest ``g + l + σ(q̂)``.

Below the root (:class:`GumbelTreeRule`): the deterministic ``argmax_a π'(a) − N(a) / (1 + Σ_b
N(b))`` with the improved policy ``π' = softmax(l + σ(completed Q))`` (:func:`improved_policy`).

Virtual losses count as visits of value -1 below the root, as in our PUCT; at the root a leaf in
flight counts as a visit for the schedule.  The solver's proven children are treated as in PUCT.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar, Final

from librt.vecs import append, vec
from mypy_extensions import i64

from search.base import range_error
from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_rules import RootRule, TreeRule
from search.mcts_tree import _Tree
from search.halving import budget_considered, considered_visits, sequential_halving_phases

_LOW_LOGIT: Final = -1e9
#: the bounds of GumbelParams' integer fields (validated, announced as UCI spin bounds)
SPIN_RANGES: Final = {"considered_actions": (1, 1000)}


@dataclass
class GumbelParams:
    """The settings of Gumbel's root and interior rules, which share them (their records in
    :data:`search.parts.PARTS`): c_visit 50 as the paper and mctx; c_scale 1.0 as the paper's text
    (``c_scale=0.1`` is mctx's value_scale default); ``adaptive_considered``: at most
    :func:`budget_considered` actions, so Sequential Halving has at least two phases."""

    considered_actions: int = 16
    adaptive_considered: bool = False
    c_visit: float = 50.0
    c_scale: float = 1.0
    gumbel_scale: float = 1.0  # 1: sample as in the paper; 0: deterministic

    def validate(self) -> None:
        bad = range_error(self, SPIN_RANGES)
        if bad is not None or self.c_visit < 0 or self.c_scale < 0 or self.gumbel_scale < 0:
            raise MCTSConfigError(bad or "c_visit, c_scale and gumbel_scale must be >= 0")


def improved_policy(priors: list[float], qs: list[float], visits: list[float], value: float,
                    c_visit: float, c_scale: float) -> list[float]:
    """``π' = softmax(log P + σ(completed Q))`` of one node (module docstring); ``visits`` 0 marks an
    unvisited edge, whose Q is completed by the mixed value."""
    sigma = _sigma(priors, qs, visits, value, c_visit, c_scale)
    z = [math.log(p) + s if p > 0.0 else -math.inf for p, s in zip(priors, sigma)]
    top = max(z)
    ex = [math.exp(x - top) if x > -math.inf else 0.0 for x in z]
    tot = sum(ex)
    return [x / tot for x in ex]


def _sigma(priors: list[float], qs: list[float], visits: list[float], value: float, c_visit: float,
           c_scale: float) -> list[float]:
    """σ(q̂) of every edge of a node (module docstring)."""
    sum_n = 0.0
    max_n = 0.0
    sum_pq = 0.0
    sum_p = 0.0
    for p, q, n in zip(priors, qs, visits):
        if n > 0.0:
            sum_n += n
            max_n = max(max_n, n)
            sum_pq += p * q
            sum_p += p
    v_mix = value if sum_n == 0.0 or sum_p <= 0.0 else (value + sum_n * sum_pq / sum_p) / (1.0 + sum_n)
    completed = [q if n > 0.0 else v_mix for q, n in zip(qs, visits)]
    lo = min(completed)
    hi = max(completed)
    span = max(hi - lo, 1e-8)
    scale = (c_visit + max_n) * c_scale
    return [scale * (q - lo) / span for q in completed]


class _Stats:
    """One pass over a node's touched edges (``nd_edge0 .. nd_touched - 1``; the edges after them
    were never visited): what completing and rescaling their Q needs.  ``inflight``: leaves in
    flight count as visits of value -1 (virtual loss)."""

    def __init__(self) -> None:
        self.sum_n = 0.0
        self.max_n = 0.0
        self.v_mix = 0.0
        self.lo = 0.0
        self.span = 1.0
        self.scale = 0.0
        self.p_touched = 0.0

    def measure(self, tree: _Tree, node: int, inflight: bool, c_visit: float, c_scale: float) -> None:
        e0: i64 = tree.nd_edge0[node]
        self.measure_edges(tree, e0, tree.nd_touched[node], e0 + tree.nd_nedges[node], tree.nd_value[node],
                           inflight, c_visit, c_scale)

    def measure_edges(self, tree: _Tree, e0: i64, touched: i64, end: i64, value: float, inflight: bool,
                      c_visit: float, c_scale: float) -> None:
        """:meth:`measure` over the edges ``e0 .. end - 1`` of a node (those from ``touched`` on never
        visited) whose value for the side that moves them is ``value`` (two boards: one board's edges)."""
        vl = tree.cfg.batching.virtual_loss if inflight else 0.0
        sum_n = 0.0
        max_n = 0.0
        sum_pq = 0.0
        sum_p = 0.0
        p_touched = 0.0
        qmin = math.inf
        qmax = -math.inf
        unvisited = touched < end
        e: i64 = e0
        while e < touched:
            p = tree.ed_prior[e]
            p_touched += p
            child: i64 = tree.ed_child[e]
            n = 0.0
            if child >= 0:
                virtual = float(tree.nd_vl[child]) * vl
                n = float(tree.nd_n[child]) + virtual
                if n > 0.0:
                    q = (tree.nd_w[child] - virtual) / n
                    sum_n += n
                    if n > max_n:
                        max_n = n
                    sum_pq += p * q
                    sum_p += p
                    if q < qmin:
                        qmin = q
                    if q > qmax:
                        qmax = q
            if n <= 0.0:
                unvisited = True
            e += 1
        v_mix = value if sum_n == 0.0 or sum_p <= 0.0 else (value + sum_n * sum_pq / sum_p) / (1.0 + sum_n)
        if unvisited:
            qmin = min(qmin, v_mix)
            qmax = max(qmax, v_mix)
        self.sum_n = sum_n
        self.max_n = max_n
        self.v_mix = v_mix
        self.lo = qmin
        self.span = max(qmax - qmin, 1e-8)
        self.scale = (c_visit + max_n) * c_scale
        self.p_touched = p_touched

    def sigma(self, q: float) -> float:
        return self.scale * (q - self.lo) / self.span


class GumbelTreeRule(TreeRule):
    """Below the root: ``argmax_a π'(a) − N(a) / (1 + Σ_b N(b))`` (module docstring).  Speed: the
    never-touched edges all have N = 0 and the completed Q ``v_mix``, so the first of them with the
    largest prior (the tree's tail cache) stands for all, and their share of the normaliser is
    ``e^σ(v_mix) (1 − Σ_touched P)`` (the priors sum to 1)."""

    def __init__(self, cfg: MCTSConfig) -> None:
        super().__init__(cfg)
        self.gp = cfg.settings(GumbelParams)
        self.stats = _Stats()
        self.x = vec[float]()  # x(a) of the touched edges of the node being selected from

    def select(self, tree: _Tree, node: int) -> int:
        cfg = self.cfg
        e0: i64 = tree.nd_edge0[node]
        end: i64 = e0 + tree.nd_nedges[node]
        touched: i64 = tree.nd_touched[node]
        self.win_e = -1
        self.lose_e = -1
        st = self.stats
        st.measure(tree, node, True, self.gp.c_visit, self.gp.c_scale)
        if touched < end and tree.nd_tail_from[node] != touched:
            tree.find_tail_best(node, touched, end, False)
        tail: i64 = tree.nd_tail_best[node] if touched < end else -1
        vl = cfg.batching.virtual_loss
        # x(a) = P(a) e^(σ(a) - top), so that π'(a) = x(a) / Z; top is the largest σ of an edge with
        # P > 0 (σ spans c_visit + max N: with thousands of visits e^(σ - top) underflows elsewhere)
        x = self.x
        k: i64 = touched - e0
        while len(x) < k:
            x = append(x, 0.0)
        self.x = x
        top = -math.inf
        e: i64 = e0
        while e < touched:
            sa = self._sigma_of(tree, e, vl, st)
            x[e - e0] = sa
            if tree.ed_prior[e] > 0.0 and sa > top:
                top = sa
            e += 1
        p_tail = max(0.0, 1.0 - st.p_touched)
        s_tail = st.sigma(st.v_mix)
        if touched < end and p_tail > 0.0 and s_tail > top:
            top = s_tail
        if top == -math.inf:
            top = 0.0
        z = 0.0
        e = e0
        while e < touched:
            xa = tree.ed_prior[e] * math.exp(x[e - e0] - top)
            x[e - e0] = xa
            z += xa
            e += 1
        x_tail = 0.0
        if touched < end:
            x_tail = math.exp(s_tail - top)
            z += x_tail * p_tail
        inv_z = 1.0 / z if z > 0.0 else 0.0  # no prior mass: the visit term alone decides
        best = -math.inf
        best_e: i64 = -1
        denom = 1.0 + st.sum_n
        e = e0
        while e < touched:
            child: i64 = tree.ed_child[e]
            n = 0.0
            if child >= 0:
                n = float(tree.nd_n[child]) + float(tree.nd_vl[child]) * vl
                if self.solver and tree.nd_n[child] > 0:
                    decided = self.proven(tree, e, child)
                    if decided == 2:
                        return int(e)
                    if decided == 1:
                        e += 1
                        continue
            score = x[e - e0] * inv_z - n / denom
            if score > best:
                best = score
                best_e = e
            e += 1
        if tail >= 0:
            score = tree.ed_prior[tail] * x_tail * inv_z
            if score > best:
                best_e = tail
        return self.fallback(best_e, e0)

    def select_run(self, tree: _Tree, node: int, lo: i64, hi: i64) -> int:
        """The same rule over the run ``lo .. hi - 1`` (one board's edges, their priors summing to 1;
        no tail shortcut): ``v`` is that of the side moving on these edges (from a child's sign)."""
        vl = self.cfg.batching.virtual_loss
        sign = 1.0  # the side moving on these edges, from an edge's child (none: every σ is equal)
        for e in range(lo, hi):
            child = tree.ed_child[e]
            if child >= 0:
                sign = tree.nd_sign[child]
                break
        st = self.stats
        st.measure_edges(tree, lo, hi, hi, sign * tree.nd_value[node], True, self.gp.c_visit,
                         self.gp.c_scale)
        sigmas = [GumbelTreeRule._sigma_of(tree, e, vl, st) for e in range(lo, hi)]
        top = -math.inf
        for i in range(len(sigmas)):
            if tree.ed_prior[lo + i] > 0.0 and sigmas[i] > top:
                top = sigmas[i]
        if top == -math.inf:
            top = 0.0
        xs = [tree.ed_prior[lo + i] * math.exp(sigmas[i] - top) for i in range(len(sigmas))]
        z = sum(xs)
        inv_z = 1.0 / z if z > 0.0 else 0.0  # no prior mass: the visit term alone decides
        denom = 1.0 + st.sum_n
        best = int(lo)
        best_score = -math.inf
        for i in range(len(xs)):
            n = float(tree.edge_n(int(lo) + i)) + float(tree.edge_vl(int(lo) + i)) * vl
            score = xs[i] * inv_z - n / denom
            if score > best_score:
                best_score = score
                best = int(lo) + i
        return best

    @staticmethod
    def _sigma_of(tree: _Tree, e: i64, vl: float, st: _Stats) -> float:
        """σ of a touched edge's completed Q (visits in flight as virtual losses)."""
        child: i64 = tree.ed_child[e]
        if child >= 0:
            virtual = float(tree.nd_vl[child]) * vl
            n = float(tree.nd_n[child]) + virtual
            if n > 0.0:
                return st.sigma((tree.nd_w[child] - virtual) / n)
        return st.sigma(st.v_mix)


class SequentialHalving(RootRule):
    """Gumbel-Top-k and Sequential Halving at the root, and the final move (module docstring).  Its
    actions are the root's edges ``lo .. lo + k - 1`` (all of them here; one board's with two boards:
    :class:`search.two_board_gumbel.SeatGumbel`), valued ``sign · v`` by the side that moves them."""

    SELFPLAY: ClassVar[dict[str, str | None]] = {"gumbel_scale": "1.0"}
    QUIET: ClassVar[dict[str, str]] = {"gumbel_scale": "0", "prior_noise": "0"}

    @staticmethod
    def describe(cfg: MCTSConfig) -> str:
        gp = cfg.settings(GumbelParams)
        return f"Gumbel: considered actions {gp.considered_actions}, c_scale {gp.c_scale:g}"

    @staticmethod
    def one_phase(cfg: MCTSConfig, moves: int, budget: int) -> bool:
        gp = cfg.settings(GumbelParams)
        m = min(gp.considered_actions, moves)
        if gp.adaptive_considered:
            m = min(m, budget_considered(gp.considered_actions, budget))
        return math.ceil(math.log2(m)) > 1 and sequential_halving_phases(budget, m) == 1

    def __init__(self, cfg: MCTSConfig, tree_rule: TreeRule) -> None:
        super().__init__(cfg, tree_rule)
        self.gp = cfg.settings(GumbelParams)
        self.base = vec[float]()  # g + logits (shifted by the largest logit), per action
        self.order: list[int] = []  # actions by decreasing base score
        self.table: list[int] = []
        self.stats = _Stats()
        self.lo: i64 = 0
        self.k: i64 = 0
        self.sign = 1.0

    def begin(self, tree: _Tree, root: int, budget: int, rng: random.Random) -> None:
        self.begin_edges(tree, int(tree.nd_edge0[root]), int(tree.nd_nedges[root]), 1.0, budget, rng)

    def begin_edges(self, tree: _Tree, lo: int, k: int, sign: float, budget: int, rng: random.Random) -> None:
        """Plan Sequential Halving over the edges ``lo .. lo + k - 1`` with ``budget`` simulations."""
        cfg = self.cfg
        self.lo = lo
        self.k = k
        self.sign = sign
        top = max([math.log(tree.ed_prior[lo + i]) for i in range(k) if tree.ed_prior[lo + i] > 0.0] or [0.0])
        base = vec[float]()
        for i in range(k):
            g = 0.0
            if self.gp.gumbel_scale > 0.0:
                u = rng.random()
                while u <= 0.0:
                    u = rng.random()
                g = self.gp.gumbel_scale * -math.log(-math.log(u))
            p = tree.ed_prior[lo + i]
            base = append(base, max(_LOW_LOGIT, g + (math.log(p) - top if p > 0.0 else _LOW_LOGIT)))
        self.base = base
        self.order = sorted(range(k), key=lambda i: (-base[i], i))
        m = min(k, self.gp.considered_actions)
        if self.gp.adaptive_considered:
            m = min(m, budget_considered(self.gp.considered_actions, max(1, budget)))
        self.table = considered_visits(m, max(1, budget))

    def _score(self, tree: _Tree, e: i64, i: int) -> float:
        """g + l + σ(q̂) of root edge e (index i; finished visits; :meth:`_measure` first)."""
        child: i64 = tree.ed_child[e]
        st = self.stats
        q = st.v_mix
        if child >= 0 and tree.nd_n[child] > 0:
            q = tree.nd_w[child] / float(tree.nd_n[child])
        return max(_LOW_LOGIT, self.base[i] + st.sigma(q))

    def _measure(self, tree: _Tree, root: int) -> None:
        lo = self.lo
        hi = lo + self.k
        touched = max(lo, min(hi, tree.nd_touched[root]))
        self.stats.measure_edges(tree, lo, touched, hi, self.sign * tree.nd_value[root], False,
                                 self.gp.c_visit, self.gp.c_scale)

    def select(self, tree: _Tree, root: int) -> int:
        e0: i64 = self.lo
        k: i64 = self.k
        counts = vec[i64]()
        sim: i64 = 0
        e: i64 = e0
        while e < e0 + k:
            child: i64 = tree.ed_child[e]
            c: i64 = tree.nd_n[child] + tree.nd_vl[child] if child >= 0 else 0
            counts = append(counts, c)
            sim += c
            e += 1
        if sim < len(self.table):
            want: i64 = self.table[sim]
        else:  # past the plan: the two most visited actions alternately
            first: i64 = 0
            second: i64 = 0
            for c in counts:
                if c > first:
                    second = first
                    first = c
                elif c > second:
                    second = c
            want = second
        if want == 0:  # the best unvisited by g + logits (their completed Q, hence σ, are all equal)
            for i in self.order:
                if counts[i] == 0:
                    return int(e0 + i)
        self._measure(tree, root)
        best = -1
        least: i64 = -1
        for i in range(k):
            if counts[i] == want and (best < 0 or self._score(tree, e0 + i, i) > self._score(tree, e0 + best, best)):
                best = i
            if least < 0 or counts[i] < least:
                least = counts[i]
        if best < 0:  # collisions or transpositions left no action at that count: the least visited
            for i in range(k):
                if counts[i] == least and (best < 0 or self._score(tree, e0 + i, i) > self._score(tree, e0 + best, best)):
                    best = i
        return int(e0 + best)

    def ranked(self, tree: _Tree, root: int, edges: list[int]) -> list[int]:
        """By visits, equals by ``g + logits + σ(q̂)`` (the final choice is the first)."""
        self._measure(tree, root)
        return sorted(edges, key=lambda e: (-tree.edge_n(e), -self._score(tree, e, e - self.lo)))

    def target(self, tree: _Tree, root: int) -> list[float]:
        """The Gumbel training target: the improved policy ``π' = softmax(l + σ(completed Q))`` at the
        root (mctx's ``action_weights``; no Gumbel noise in it), over the actions in edge order."""
        edges = range(self.lo, self.lo + self.k)
        visits = [float(tree.edge_n(e)) for e in edges]
        qs = [tree.edge_q(e) if n > 0.0 else 0.0 for e, n in zip(edges, visits)]
        return improved_policy([tree.ed_prior[e] for e in edges], qs, visits, self.sign * tree.nd_value[root],
                               self.gp.c_visit, self.gp.c_scale)

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        self._measure(tree, root)
        most = max(tree.edge_n(e) for e in candidates)
        best = -1
        for e in candidates:
            if tree.edge_n(e) == most and (best < 0 or
                                           self._score(tree, e, e - self.lo) > self._score(tree, best, best - self.lo)):
                best = e
        return best
