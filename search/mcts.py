"""PUCT Monte-Carlo tree search with CrazyAra's modifications, each behind a switch (mypyc-compiled).

Notation (as minigo's mcts.py; CrazyAra paper section 9; SPEC.md section 4)
---------------------------------------------------------------------------
``s`` a node (position), ``a`` an edge (move) out of it, ``s'`` the child it leads to.

- ``N(s, a)``: visits of edge a; ``N(s) = Σ_b N(s, b)`` (virtual visits included while in flight).
- ``W(s, a)``: sum of the values backed up through a, **from the point of view of the side to move
  at s**; ``Q(s, a) = W(s, a) / N(s, a)``, and ``Q = fpu`` (first-play urgency, default -1 as
  CrazyAra) while ``N(s, a) = 0``; with check urgency an unvisited move that gives check starts at
  ``Q = check_q_init`` (default 0) instead.
- ``P(s, a)``: prior of a (the evaluator's policy, with check enhancement and root noise applied).
- ``U(s, a) = cpuct(s) · P(s, a) · sqrt(max(N(s), 1)) / (udiv(s) + N(s, a))``; the ``max(., 1)``
  makes the first visit go to the highest prior instead of the first move generated.
- ``cpuct(s) = ln((N(s) + cpuct_base + 1) / cpuct_base) + cpuct_init`` (switch ``cpuct_schedule``;
  off: ``cpuct_init``), ``udiv(s) = u_final - e^(-N(s)/u_base) (u_final - u_init)`` (switch
  ``u_divisor``; off: 1).
- Selection: ``argmax_a Q(s, a) + U(s, a)``; the SixtyFour variant (``score_formula="sixtyfour"``)
  uses ``0.5 (q(s') + W/N) + c · P · sqrt(N(s) + 1) / (1 + N(s, a))`` with ``q(s')`` the evaluator's
  value of the child.
- Virtual loss: while a leaf below edge a is in flight, a counts ``virtual_loss`` extra visits of
  value -1 each, so the other leaves of one batch go elsewhere.
- Values ``v`` from the evaluator are for the side to move at the leaf; one ply up they are ``-v``.

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

Pieces (each a field of :class:`MCTSConfig`, CrazyAra 0.6.0 defaults)
--------------------------------------------------------------------
- batched leaf collection with virtual loss (``batch_size`` 8, ``virtual_loss`` 3);
- transposition table sharing evaluations (``transposition_table``): a new node whose position
  (zobrist hash, half-move clock, full-move number, repetition count: the "counters") was evaluated
  before reuses that value and prior without an evaluator call (the table: an open-addressing index from key to slot,
  the slots' values and priors in flat vecs);
- terminal detection (checkmate -1, stalemate/insufficient material/fifty moves/twofold repetition
  inside the tree 0); "fix checkmates" (``fix_checkmates``): when a node is expanded its checking
  moves are tested for mate (a king step out of check rules one out cheaply), a node with a mate in
  one is won and only that move is explored; the MCTS-solver (``solver``): proven wins, losses and
  draws propagate up with their distance in plies, moves proven to lose are never selected, the
  visits below a node proven won go to its other moves (looking for a shorter mate), and the search
  stops once the root is lost, drawn or won by a mate in one, or, when won by a longer mate, after
  as many simulations again as it took to prove it (at least 1000);
- Q-value move selection with the Qthresh schedule (``q_value_selection``), Q with principal
  variation (``q_pv``), the u-divisor schedule (``u_divisor``), check enhancement
  (``check_enhancement``), the cpuct schedule (``cpuct_schedule``), FPU (``fpu``);
- check urgency (``check_urgency``, ``check_q_init``; our addition, not in CrazyAra 0.6.0, so off
  by default to keep the default search CrazyAra's; an A/B candidate for ``searchbench sprt``): an unvisited checking move starts
  from ``Q = 0`` instead of the fpu of -1.  With fpu -1 a node whose first move came back with a
  good Q tries a second move only after about ``((1 + Q) / (cpuct · P))²`` visits: with a flat
  prior (the classical evaluator) a side that is winning keeps deepening one line and the solver
  never sees the forcing moves that would prove a mate (a crazyhouse mate in 3 with Q and R in
  hand was not found in a million simulations).  Checks are the moves that keep the opponent's
  replies few, so a proof needs them tried; this is the purpose of check enhancement, which
  raises their prior but cannot overcome the fpu gap of 1 + Q;
- tree reuse between moves of one game (``tree_reuse``), Dirichlet noise at the root
  (``dirichlet_epsilon``, 0 in matches) and temperature (``temperature``), both drawn from the injected
  ``random.Random``;
- time management (:mod:`search.timeman`): allocated time, stop with one legal move, early stop in
  easy positions, extension in critical ones; ``Limits.depth`` caps the depth of a simulation;
- the SixtyFour variant (:meth:`MCTSConfig.sixtyfour`): its score formula, uniform prior noise that
  decays with the move number, mates scored 1.5, and depth-limited playouts (a simulation stops
  descending ``max_playout_depth`` plies below the root and backs up the evaluator's value there;
  the depth comes from the clock by SixtyFour's table when ``playout_depth_from_clock``).

Node accounting: ``nodes`` = simulations (one per backed-up leaf: evaluated, terminal, proven or
transposition-table hit); ``evals`` = positions sent to the evaluator.

The final-move rule is :meth:`MCTS.choose_move` (documented there, the only place it is decided).
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Final, Sequence

from librt.vecs import append, extend, vec
from mypy_extensions import i64, mypyc_attr, u8

from board.position import Position
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, EvaluatorError, Leaf, require
from search.base import Limits, Search, SearchResult
from search.checks import checking_moves_vec, mates_in_one_vec
from search.timeman import TimeConfig, TimeControl, move_time

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
# Node visit counts up to which cpuct(N) and udiv(N) are tabulated per tree (see _Tree.select).
_SCHEDULE_SIZE: Final = 4096
_NANS: Final = vec[float]([math.nan] * _SCHEDULE_SIZE)

# SixtyFour's search depth by seconds left on the clock (more than the key: the depth).
SIXTYFOUR_DEPTHS: Final = [(750.0, 20), (300.0, 15), (120.0, 12), (60.0, 10), (10.0, 4)]


class MCTSConfigError(ValueError):
    """A bad MCTS setting (one-line message)."""


@dataclass
class MCTSConfig:
    """Every switch and parameter of the MCTS (CrazyAra 0.6.0 / paper defaults)."""

    batch_size: int = 8
    virtual_loss: float = 3.0
    cpuct_init: float = 2.5
    cpuct_base: float = 19652.0
    cpuct_schedule: bool = True
    fpu: float = -1.0
    u_divisor: bool = True
    u_init: float = 1.0
    u_final: float = 0.25
    u_base: float = 1965.0
    q_value_selection: bool = True
    q_factor: float = 0.7
    q_thresh_init: float = 0.5
    q_thresh_max: float = 0.9
    q_thresh_base: float = 1965.0
    q_pv: bool = True
    q_pv_depth: int = 5
    check_enhancement: bool = True
    check_prior_threshold: float = 0.1
    check_factor: float = 0.5
    check_cap: bool = False  # newer CrazyAra: add min(0.1, 0.5 max P) instead of 0.5 max P
    check_urgency: bool = False  # not in CrazyAra 0.6.0: unvisited checks start at check_q_init
    check_q_init: float = 0.0
    transposition_table: bool = True
    fix_checkmates: bool = True
    solver: bool = True
    tree_reuse: bool = True
    dirichlet_epsilon: float = 0.0  # 0.25 for self-play
    dirichlet_alpha: float = 0.2
    temperature: float = 0.0
    temperature_moves: int = 0  # > 0: temperature only for the first so many full moves
    stop_single_move: bool = True
    default_nodes: int = 800
    max_tree_nodes: int = 2_000_000
    time: TimeConfig = field(default_factory=TimeConfig)
    # SixtyFour variant
    score_formula: str = "crazyara"
    sixtyfour_c: float = 0.5
    mate_value: float = 1.0
    prior_noise: float = 0.0
    prior_noise_decay: float = 6.0
    max_playout_depth: int = 0  # 0: unlimited
    playout_depth_from_clock: bool = False

    @classmethod
    def sixtyfour(cls) -> MCTSConfig:
        """The SixtyFour engine's search: its formula, prior noise, mate 1.5, depth from the clock."""
        return cls(score_formula="sixtyfour", sixtyfour_c=0.5, mate_value=1.5, fpu=0.0,
                   prior_noise=0.3, prior_noise_decay=6.0, playout_depth_from_clock=True,
                   q_value_selection=False, q_pv=False, u_divisor=False, check_enhancement=False,
                   cpuct_schedule=False, batch_size=1, virtual_loss=1.0, check_urgency=False)

    @classmethod
    def vanilla(cls) -> MCTSConfig:
        """Plain PUCT (AlphaZero-like): every CrazyAra modification off, Q init 0."""
        return cls(q_value_selection=False, q_pv=False, u_divisor=False, check_enhancement=False,
                   fix_checkmates=False, solver=False, fpu=0.0, check_urgency=False)

    def validate(self) -> None:
        if self.batch_size < 1:
            raise MCTSConfigError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.virtual_loss < 0:
            raise MCTSConfigError("virtual_loss must not be negative")
        if self.score_formula not in ("crazyara", "sixtyfour"):
            raise MCTSConfigError(f"score_formula must be 'crazyara' or 'sixtyfour', got {self.score_formula!r}")
        if not 0.0 <= self.dirichlet_epsilon <= 1.0:
            raise MCTSConfigError("dirichlet_epsilon must be in [0, 1]")
        if self.dirichlet_alpha <= 0 or self.temperature < 0 or self.default_nodes < 1:
            raise MCTSConfigError("dirichlet_alpha and default_nodes must be positive, temperature >= 0")
        if not 0.0 <= self.q_factor <= 1.0:
            raise MCTSConfigError("q_factor must be in [0, 1]")
        if not -1.0 <= self.check_q_init <= 1.0:
            raise MCTSConfigError("check_q_init must be in [-1, 1]")


def cpuct(cfg: MCTSConfig, n: float) -> float:
    """The exploration constant for a node with ``n`` visits."""
    if not cfg.cpuct_schedule:
        return cfg.cpuct_init
    return math.log((n + cfg.cpuct_base + 1.0) / cfg.cpuct_base) + cfg.cpuct_init


def u_divisor(cfg: MCTSConfig, n: float) -> float:
    """``udiv(s)``: 1 (u_init) for a fresh node, decaying to 0.25 (u_final) as it is visited."""
    if not cfg.u_divisor:
        return 1.0
    return cfg.u_final - math.exp(-n / cfg.u_base) * (cfg.u_final - cfg.u_init)


def q_thresh(cfg: MCTSConfig, n: float) -> float:
    """``Qthresh(s)``: 0.5 for few visits, rising to 0.9."""
    return cfg.q_thresh_max - math.exp(-n / cfg.q_thresh_base) * (cfg.q_thresh_max - cfg.q_thresh_init)


def value_to_cp(v: float) -> int:
    """CrazyAra's centipawns: ``cp = -v/|v| · log(1 - |v|) / log(1.2)`` gives pawns; times 100 as
    in CrazyAra's code, and +-9999 for |v| >= 1 (a proven result)."""
    a = abs(v)
    if a < 1e-12:
        return 0
    if a >= 1.0:
        return 9999 if v > 0 else -9999
    cp = -100.0 * math.log(1.0 - a) / math.log(1.2)
    return int(round(cp if v > 0 else -cp))


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


def final_policy(cfg: MCTSConfig, visits: list[int], qs: list[float]) -> list[float]:
    """The move-selection distribution over root moves (before temperature).

    Vanilla: ``π = N / ΣN``.  With Q-value selection: ``Q' = (Q + 1) / 2`` set to 0 where
    ``N < Qthresh · max N``, and ``π = (1 - Qfactor) N / ΣN + Qfactor Q'``.
    """
    total = 0
    top = 0
    for n in visits:
        total += n
        top = max(top, n)
    if total == 0:
        return [1.0 / len(visits) for _ in visits] if visits else []
    if not cfg.q_value_selection:
        return [n / total for n in visits]
    thresh = q_thresh(cfg, float(total)) * top
    out: list[float] = []
    for i in range(len(visits)):
        n = visits[i]
        qp = (max(-1.0, min(1.0, qs[i])) + 1.0) / 2.0 if n >= thresh and n > 0 else 0.0
        out.append((1.0 - cfg.q_factor) * n / total + cfg.q_factor * qp)
    return out


def _float_vec(xs: list[float]) -> vec[float]:
    """``vec[float](xs)`` by a native loop (the generic conversion costs about 10 ns an element)."""
    n: i64 = len(xs)
    out = _ZEROS_F64[0:n] if n <= _EDGE_DEFAULTS else vec[float]([0.0] * n)
    i: i64 = 0
    while i < n:
        out[i] = xs[i]
        i += 1
    return out


def playout_depth_for_clock(seconds_left: float) -> int:
    """SixtyFour's playout depth for the seconds left on the clock (0 = no search below 10 s)."""
    for limit, depth in SIXTYFOUR_DEPTHS:
        if seconds_left > limit:
            return depth
    return 0


class _Pending:
    """A leaf in flight: its node, the path of edges to it, its legal moves, transposition key, which
    moves give check (1/0) and which of them mate (indices)."""

    def __init__(self, node: int, path: vec[i64], nodes: vec[i64], moves: vec[i64], key: i64,
                 gives_check: vec[i64], mates: vec[i64]) -> None:
        self.node = node
        self.path = path
        self.nodes = nodes
        self.moves = moves
        self.key = key
        self.gives_check = gives_check
        self.mates = mates


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
    """The node and edge arrays (see the module docstring) and the operations on them."""

    def __init__(self, cfg: MCTSConfig) -> None:
        self.cfg = cfg
        self.sixtyfour = cfg.score_formula == "sixtyfour"
        self.check_urgency = cfg.check_urgency and not self.sixtyfour
        self.cpuct_table = _NANS[0:_SCHEDULE_SIZE]
        self.udiv_table = _NANS[0:_SCHEDULE_SIZE]
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

    def select(self, node: int) -> int:
        """The edge to follow from an expanded node (see the notation in the module docstring)."""
        cfg = self.cfg
        # Speed: native (i64) indices and the arrays in locals keep the loop free of boxed ints.
        nd_n = self.nd_n
        nd_vl = self.nd_vl
        nd_w = self.nd_w
        ed_prior = self.ed_prior
        ed_child = self.ed_child
        ed_check = self.ed_check
        nd_proven = self.nd_proven
        nd_plies = self.nd_plies
        e0: i64 = self.nd_edge0[node]
        end: i64 = e0 + self.nd_nedges[node]
        sum_n = self.nd_sum_n[node]
        vl = cfg.virtual_loss
        solver = cfg.solver or cfg.fix_checkmates
        full_solver = cfg.solver
        sixtyfour = self.sixtyfour
        if sixtyfour:
            c = cfg.sixtyfour_c * math.sqrt(sum_n + 1.0)
            ud = 1.0
        else:
            # Speed: cpuct and udiv of a node with an integral N below _SCHEDULE_SIZE come from
            # tables filled on first use by the same functions (the same values, no log or exp).
            if 0.0 <= sum_n < _SCHEDULE_SIZE and sum_n == math.floor(sum_n):
                idx = int(sum_n)
                cp = self.cpuct_table[idx]
                if cp != cp:  # NaN: not yet computed
                    cp = cpuct(cfg, sum_n)
                    self.cpuct_table[idx] = cp
                    self.udiv_table[idx] = u_divisor(cfg, sum_n)
                ud = self.udiv_table[idx]
            else:
                cp = cpuct(cfg, sum_n)
                ud = u_divisor(cfg, sum_n)
            c = cp * math.sqrt(max(sum_n, 1.0))
        best = -1e30
        best_e: i64 = -1
        # Fallbacks when every edge is decided: the quickest proven win, else the longest loss.
        win_e: i64 = -1
        lose_e: i64 = -1
        fpu = cfg.fpu
        # Check urgency: an unvisited checking move starts from Q = check_q_init instead of fpu.
        urgent = self.check_urgency
        fpu_check = cfg.check_q_init if urgent else fpu
        # Speed: an unvisited edge scores q0 + c·P/udiv (q0: fpu, or check_q_init for a check),
        # non-decreasing in P when 0 <= c < inf and udiv > 0 (IEEE rounding is monotone), so once
        # an unvisited edge of one kind with prior pu has been scored (and its score is <= best),
        # a later unvisited edge of that kind with P <= pu cannot beat best: it is skipped without
        # the division.  The edge chosen is exactly the same.
        monotone = 0.0 <= c < math.inf and ud > 0.0
        pu = -math.inf
        pu_check = -math.inf
        # Speed: edges from nd_touched on were never visited nor are in flight, so one of each kind
        # (the first with the largest prior, nd_tail_best/_check) stands for all: see the tail below.
        scan_end: i64 = end
        if monotone and not sixtyfour:
            scan_end = self.nd_touched[node]
        e: i64 = e0
        while e < scan_end:
            child: i64 = ed_child[e]
            if not sixtyfour and (child < 0 or (nd_n[child] == 0 and nd_vl[child] == 0)):
                # Fast path: an unvisited edge (its child, if any, is a mate found at expansion,
                # and such a node is settled and never selected from).
                p = ed_prior[e]
                if urgent and ed_check[e] != 0:
                    if monotone and p <= pu_check:
                        e += 1
                        continue
                    score = fpu_check + c * p / ud
                    if score > best:
                        best = score
                        best_e = e
                    if score <= best:  # false only for a NaN score
                        pu_check = p
                    e += 1
                    continue
                if monotone and p <= pu:
                    e += 1
                    continue
                score = fpu + c * p / ud
                if score > best:
                    best = score
                    best_e = e
                if score <= best:  # false only for a NaN score
                    pu = p
                e += 1
                continue
            if solver and child >= 0:
                pr = nd_proven[child]
                if pr == LOSS:
                    if nd_plies[child] == 0:
                        return int(e)  # fix checkmates: a move that mates at once ends the exploration
                    # A proven win is known; the visits go to the other moves (a shorter mate?).
                    if win_e < 0 or nd_plies[child] < nd_plies[ed_child[win_e]]:
                        win_e = e
                    e += 1
                    continue
                if pr == WIN and full_solver:
                    # Never walk into a proven loss while something else is open.
                    if lose_e < 0 or nd_plies[child] > nd_plies[ed_child[lose_e]]:
                        lose_e = e
                    e += 1
                    continue
            if child < 0:  # SixtyFour only: the other formula has taken it above
                score = fpu + c * ed_prior[e]
                if score > best:
                    best = score
                    best_e = e
                e += 1
                continue
            inflight = float(nd_vl[child]) * vl
            n = float(nd_n[child]) + inflight
            if sixtyfour:
                if n > 0.0:
                    q = 0.5 * (-self.nd_value[child] + (nd_w[child] - inflight) / n)
                else:
                    q = fpu
                score = q + c * ed_prior[e] / (1.0 + n)
            else:
                q = (nd_w[child] - inflight) / n if n > 0.0 else fpu
                score = q + c * ed_prior[e] / (ud + n)
            if score > best:
                best = score
                best_e = e
            e += 1
        pmax = 0.0
        if scan_end < end:
            pmax = self.nd_pmax[node]
            if pmax != pmax:  # NaN: not known yet
                pmax = ed_prior[e0]
                f0: i64 = e0 + 1
                while f0 < end:
                    if ed_prior[f0] > pmax:
                        pmax = ed_prior[f0]
                    f0 += 1
                self.nd_pmax[node] = pmax
        # The untouched tail cannot beat best if even the largest prior of the node cannot.
        if scan_end < end and max(fpu, fpu_check) + c * pmax / ud > best:
            # The untouched tail: for each kind its best score is that of its largest prior
            # (monotone), and the loop above would pick the first tail edge reaching the larger.
            tail_from = self.nd_tail_from[node]
            if tail_from != scan_end:
                # Edges left the tail since its best ones were found: those found stay the first
                # largest of what is left unless they left too.
                if (tail_from < 0 or tail_from > scan_end or 0 <= self.nd_tail_best[node] < scan_end
                        or 0 <= self.nd_tail_best_check[node] < scan_end):
                    self._find_tail_best(node, scan_end, end, urgent)
                else:
                    self.nd_tail_from[node] = scan_end
            j = self.nd_tail_best[node]
            jc = self.nd_tail_best_check[node]
            pick: i64 = -1
            top = best
            if j >= 0 and ed_prior[j] > pu:
                s = fpu + c * ed_prior[j] / ud
                if s > top:
                    top = s
                    pick = self._first_in_tail(scan_end, j, False, urgent, fpu, c, ud, s)
            if jc >= 0 and ed_prior[jc] > pu_check:
                s = fpu_check + c * ed_prior[jc] / ud
                if s > top:
                    pick = self._first_in_tail(scan_end, jc, True, urgent, fpu_check, c, ud, s)
                    top = s
                elif s == top and pick >= 0:  # both kinds reach the top: the first edge wins
                    first = self._first_in_tail(scan_end, jc, True, urgent, fpu_check, c, ud, s)
                    if first < pick:
                        pick = first
            if pick >= 0:
                return int(pick)
        if best_e >= 0:
            return int(best_e)
        if win_e >= 0:
            return int(win_e)
        return int(lose_e) if lose_e >= 0 else int(e0)

    def _find_tail_best(self, node: int, start: i64, end: i64, urgent: bool) -> None:
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

    def _first_in_tail(self, start: i64, j: i64, check: bool, urgent: bool, q0: float, c: float, ud: float,
                       top: float) -> i64:
        """The first tail edge of one kind before j whose score ``q0 + c·P/udiv`` equals ``top``
        (edge j's): a smaller prior rounds to the same score only within a relative 1e-15 or so,
        so only edges with a prior that close are scored; j if there is none."""
        ed_prior = self.ed_prior
        ed_check = self.ed_check
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
            child = int(self.ed_child[e])
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
            if settle:
                settle = self.update_proven(parent) and self.cfg.solver
            i -= 1


@mypyc_attr(allow_interpreted_subclasses=True)
class MCTS(Search):
    """PUCT MCTS with CrazyAra's modifications; evaluator (POLICY_VALUE) and random state injected."""

    def __init__(self, evaluator: Evaluator, config: MCTSConfig | None = None,
                 rng: random.Random | None = None) -> None:
        require(evaluator, POLICY_VALUE)
        self.evaluator = evaluator
        self.config = config if config is not None else MCTSConfig()
        self.config.validate()
        self.rng = rng if rng is not None else random.Random(0)
        self.tree = _Tree(self.config)
        self.root = -1
        self._root_ply = -1
        self._root_hash: i64 = 0
        # Transposition table: key -> slot; a slot's value, move count and priors (the evaluator's
        # own, before check enhancement and noise) live in flat vecs (no per-entry Python objects).
        self._tt = _KeyIndex()
        self._tt_value = vec[float]()
        self._tt_off = vec[i64]()
        self._tt_len = vec[i64]()
        self._tt_priors = vec[float]()
        self._pos: Position = Position()
        self._pending: list[_Pending] = []
        # The edges made on the position beyond the root during an ask (the walks of one batch
        # share their first steps: see _collect); _on[0:_made] holds them.
        self._on = vec[i64]()
        self._made = 0
        self._done = True
        self._stopped = False
        self._nodes = 0
        self._evals = 0
        self._node_limit = 0
        self._seldepth = 0
        self._t0 = 0.0
        self._elapsed = 0.0
        self._time: TimeControl | None = None
        self._playout_depth = 0
        self._last_q: float | None = None
        self._last_q_turn = -1
        self._best: SearchResult | None = None
        self._collisions = 0
        self._proven_at = -1
        self._single_move = 0

    # ------------------------------------------------------------------ game lifecycle

    def new_game(self) -> None:
        """Forget the tree, the transposition table and the last move's Q."""
        self.tree = _Tree(self.config)
        self.root = -1
        self._root_ply = -1
        self._tt = _KeyIndex()
        self._tt_value = vec[float]()
        self._tt_off = vec[i64]()
        self._tt_len = vec[i64]()
        self._tt_priors = vec[float]()
        self._last_q = None

    def _tt_store(self, key: i64, value: float, priors: vec[float]) -> None:
        slot = self._tt.get(key)
        if slot < 0:
            self._tt.put(key, len(self._tt_value))
            self._tt_value = append(self._tt_value, value)
            self._tt_off = append(self._tt_off, len(self._tt_priors))
            self._tt_len = append(self._tt_len, len(priors))
            self._tt_priors = extend(self._tt_priors, priors)
        else:  # the same position evaluated twice (in one batch): the later answer wins, as before
            self._tt_value[slot] = value
            self._tt_off[slot] = len(self._tt_priors)
            self._tt_len[slot] = len(priors)
            self._tt_priors = extend(self._tt_priors, priors)

    def _tt_key(self, pos: Position, reps: int = -1) -> i64:
        """The transposition-table key: zobrist hash and the counters; ``reps`` (earlier
        occurrences: 0, 1 or 2+) when the caller knows it, else -1 (counted here)."""
        if reps < 0:
            reps = 2 if pos.is_repetition(3) else (1 if pos.is_repetition(2) else 0)
        return pos.zobrist ^ counters_hash(pos.halfmove_clock, pos.fullmove_number, reps)

    def _reuse_root(self, pos: Position) -> int:
        """The node of ``pos`` in the previous tree (the moves since its root followed), or -1."""
        if not self.config.tree_reuse or self.root < 0 or self._root_ply < 0:
            return -1
        gap = pos.ply() - self._root_ply
        if gap < 0 or gap > 4:
            return -1
        stack = pos.move_stack
        node = self.root
        tree = self.tree
        for m in stack[len(stack) - gap:]:
            if tree.nd_state[node] != EXPANDED:
                return -1
            e0 = int(tree.nd_edge0[node])
            nxt = -1
            for e in range(e0, e0 + int(tree.nd_nedges[node])):
                if tree.ed_move[e] == m:
                    nxt = int(tree.ed_child[e])
                    break
            if nxt < 0:
                return -1
            node = nxt
        if tree.nd_hash[node] != pos.zobrist or tree.nd_state[node] != EXPANDED:
            return -1
        return node

    def start(self, pos: Position, limits: Limits) -> None:
        require(self.evaluator, POLICY_VALUE, pos.variant)
        cfg = self.config
        moves = pos.legal_moves()
        if not moves:
            raise MCTSConfigError(f"no legal moves in {pos.fen()}")
        if self._pending:
            # The last search was abandoned with leaves in flight: its tree holds virtual losses.
            self.tree = _Tree(cfg)
            self.root = -1
        self._pos = pos
        self._pending = []
        self._made = 0
        self._nodes = 0
        self._evals = 0
        self._seldepth = 0
        self._collisions = 0
        self._proven_at = -1
        self._stopped = False
        self._best = None
        self._t0 = time.perf_counter()
        self._elapsed = 0.0
        reused = self._reuse_root(pos)
        if reused < 0 or self.tree.n_nodes > cfg.max_tree_nodes:
            self.tree = _Tree(cfg)
            reused = self.tree.new_node(pos.zobrist)
        self.root = reused
        self._root_ply = pos.ply()
        self._root_hash = pos.zobrist
        if self.tree.nd_state[self.root] == EXPANDED:
            self._apply_root_noise()
        # Limits.
        if limits.nodes is not None and limits.nodes < 1:
            raise MCTSConfigError(f"node limit must be positive, got {limits.nodes}")
        budget = None if limits.infinite else move_time(limits, pos.turn, pos.fullmove_number, cfg.time)
        remaining = limits.wtime if pos.turn == 0 else limits.btime
        self._time = TimeControl(budget, cfg.time, remaining) if budget is not None else None
        if limits.nodes is not None:
            self._node_limit = limits.nodes
        elif budget is None and not limits.infinite:
            self._node_limit = cfg.default_nodes
        else:
            self._node_limit = 0
        self._playout_depth = cfg.max_playout_depth
        if cfg.playout_depth_from_clock and remaining is not None:
            self._playout_depth = playout_depth_for_clock(remaining)
        if limits.depth is not None:
            if limits.depth < 1:
                raise MCTSConfigError(f"depth limit must be at least 1, got {limits.depth}")
            self._playout_depth = limits.depth if self._playout_depth == 0 else min(self._playout_depth, limits.depth)
        self._single_move = moves[0] if len(moves) == 1 and cfg.stop_single_move else 0
        self._done = self._single_move != 0

    # ------------------------------------------------------------------ ask / tell

    def ask(self) -> list[Leaf]:
        if self._done:
            return []
        if self._pending:
            raise EvaluatorError("MCTS.ask called again before tell answered the previous leaves")
        cfg = self.config
        leaves: list[Leaf] = []
        tries = 0
        want = cfg.batch_size
        if self._node_limit > 0:
            want = min(want, self._node_limit - self._nodes)
        while len(self._pending) < want and tries < 2 * cfg.batch_size:
            tries += 1
            leaf = self._collect()
            if leaf is not None:
                leaves.append(leaf)
            if self._root_settled():
                break
            if self._node_limit > 0 and self._nodes + len(self._pending) >= self._node_limit:
                break
        self._unmake_to(0)  # the position is back at the root between ask and tell
        if not leaves:
            self._check_done()
        return leaves

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        if len(evaluations) != len(self._pending):
            raise EvaluatorError(f"MCTS expected {len(self._pending)} evaluations, got {len(evaluations)}")
        for i in range(len(evaluations)):
            p = self._pending[i]
            ev = evaluations[i]
            raw = ev.priors
            priors = _float_vec(raw) if isinstance(raw, list) else vec[float]([float(x) for x in raw])
            if len(priors) != len(p.moves):
                raise EvaluatorError(f"evaluator returned {len(priors)} priors for {len(p.moves)} moves")
            value = max(-1.0, min(1.0, float(ev.value)))
            if self.config.transposition_table:
                self._tt_store(p.key, value, priors)
            self._expand(p.node, p.moves, priors, value, p.gives_check, p.mates)
            self.tree.backup(p.path, p.nodes, p.node, self._leaf_value(p.node, value))
            self._nodes += 1
            self._evals += 1
        self._pending = []
        self._check_done()

    def done(self) -> bool:
        return self._done

    def stop(self) -> None:
        self._stopped = True
        if not self._pending:
            self._done = True

    def _root_settled(self) -> bool:
        """The root is decided: lost, drawn, won by mate in one, or won and searched on since the
        proof for as many simulations again (at least 1000) in search of a shorter mate."""
        if not (self.config.solver or self.config.fix_checkmates):
            return False
        tree = self.tree
        if tree.nd_proven[self.root] == UNKNOWN:
            self._proven_at = -1
            return False
        if tree.settled(self.root):
            return True
        if self._proven_at < 0:
            self._proven_at = self._nodes
        return self._nodes >= 2 * self._proven_at + 1000

    def _check_done(self) -> None:
        self._elapsed = time.perf_counter() - self._t0
        if self._stopped or self._root_settled():
            self._done = True
        elif self._node_limit > 0 and self._nodes >= self._node_limit:
            self._done = True
        elif self._time is not None and self.tree.nd_state[self.root] == EXPANDED:
            self._done = self._time.should_stop(self._elapsed, self._is_easy(), self._is_critical())
        if self._done:
            self._best = self._make_result()

    def _is_easy(self) -> bool:
        """The prior's top move has more than 90% and is still the best by Q."""
        tree = self.tree
        e0 = int(tree.nd_edge0[self.root])
        k = int(tree.nd_nedges[self.root])
        top_e = e0
        best_q_e = e0
        for e in range(e0, e0 + k):
            if tree.ed_prior[e] > tree.ed_prior[top_e]:
                top_e = e
            if tree.edge_n(e) > 0 and (tree.edge_n(best_q_e) == 0 or tree.edge_q(e) > tree.edge_q(best_q_e)):
                best_q_e = e
        return tree.ed_prior[top_e] > self.config.time.easy_prior and top_e == best_q_e

    def _is_critical(self) -> bool:
        if self._last_q is None or self._last_q_turn != self._pos.turn:
            return False
        e = self._best_edge_by_visits()
        return self.tree.edge_q(e) < self._last_q - self.config.time.critical_drop

    def _best_edge_by_visits(self) -> int:
        tree = self.tree
        e0 = int(tree.nd_edge0[self.root])
        best = e0
        for e in range(e0, e0 + int(tree.nd_nedges[self.root])):
            if tree.edge_n(e) > tree.edge_n(best):
                best = e
        return best

    # ------------------------------------------------------------------ one simulation

    def _collect(self) -> Leaf | None:
        """Walk from the root to a leaf; back up at once what needs no evaluator, else queue it."""
        tree = self.tree
        pos = self._pos
        node = self.root
        # The edges walked and the nodes they leave (native vecs: no boxed ints per step).
        path = vec[i64](capacity=16)
        nodes = vec[i64](capacity=16)
        depth = 0
        limit = self._playout_depth
        leaf: Leaf | None = None
        while True:
            state = tree.nd_state[node]
            if state == EXPANDED:
                if node != self.root and tree.settled(node):
                    tree.backup(path, nodes, node, tree.proven_value(node))
                    self._nodes += 1
                    break
                if limit > 0 and depth >= limit:
                    tree.backup(path, nodes, node, tree.nd_value[node])
                    self._nodes += 1
                    break
                e = tree.select(node)
                new_child = tree.ed_child[e] < 0  # its hash is set once its move is made below
                child = tree.child_of(e)
                tree.add_virtual_loss(node, e)
                path = append(path, e)
                nodes = append(nodes, node)
                # Speed: the move is made only if the last walk did not already make it at this
                # depth (then the position may be deeper still: _unmake_to before using it).
                if depth >= self._made or self._on[depth] != e:
                    self._unmake_to(depth)
                    pos.push(int(tree.ed_move[e]))
                    if depth < len(self._on):
                        self._on[depth] = e
                    else:
                        self._on = append(self._on, e)
                    self._made = depth + 1
                depth += 1
                if new_child:
                    tree.nd_hash[child] = pos.zobrist
                node = child
            elif state == TERMINAL:
                tree.backup(path, nodes, node, tree.nd_value[node])
                self._nodes += 1
                break
            elif state == PENDING:
                tree.remove_virtual_loss(path, nodes)
                self._collisions += 1
                break
            else:
                self._unmake_to(depth)
                leaf = self._visit_new(node, path, nodes)
                break
        if depth > self._seldepth:
            self._seldepth = depth
        return leaf

    def _unmake_to(self, depth: int) -> None:
        """Take back the moves made beyond ``depth`` plies below the root."""
        pos = self._pos
        while self._made > depth:
            pos.pop()
            self._made -= 1

    def _visit_new(self, node: int, path: vec[i64], nodes: vec[i64]) -> Leaf | None:
        """A node reached for the first time: terminal, transposition, or a leaf to evaluate."""
        tree = self.tree
        pos = self._pos
        cfg = self.config
        moves = pos.legal_moves_vec()
        is_root = node == self.root
        value = 0.0
        terminal = False
        if not moves:
            terminal = True
            if pos.is_check():
                value = -cfg.mate_value
                tree.nd_proven[node] = LOSS
            else:
                tree.nd_proven[node] = DRAW
        elif not is_root and (pos.is_insufficient_material() or pos.is_repetition(2)
                              or (pos.variant == "chess" and pos.halfmove_clock >= 100)):
            terminal = True
            tree.nd_proven[node] = DRAW
        # Speed: below the root a repeated position ended above, so it has no earlier occurrence.
        reps = -1 if is_root else 0
        if terminal:
            tree.nd_state[node] = TERMINAL
            tree.nd_value[node] = value
            tree.nd_plies[node] = 0
            tree.backup(path, nodes, node, value)
            self._nodes += 1
            return None
        need_checks = cfg.check_enhancement or cfg.fix_checkmates or self.tree.check_urgency
        checks = checking_moves_vec(pos, moves) if need_checks else vec[i64]()
        # Mates in one among the checks: found now, so no node ever misses a mate it has.
        mates = mates_in_one_vec(pos, moves, checks) if cfg.fix_checkmates else vec[i64]()
        key: i64 = self._tt_key(pos, reps)
        if cfg.transposition_table:
            slot = self._tt.get(key)
            if slot >= 0 and self._tt_len[slot] == len(moves):
                off: i64 = self._tt_off[slot]
                value = self._tt_value[slot]
                self._expand(node, moves, self._tt_priors[off:off + len(moves)], value, checks, mates)
                tree.backup(path, nodes, node, self._leaf_value(node, value))
                self._nodes += 1
                return None
        tree.nd_state[node] = PENDING
        self._pending.append(_Pending(node, path, nodes, moves, key, checks, mates))  # path: fresh per walk
        return Leaf.snapshot(pos, moves, reps)

    def _leaf_value(self, node: int, value: float) -> float:
        """The value a new node backs up: exact once it is proven (a mate in one found)."""
        return self.tree.proven_value(node) if self.tree.nd_proven[node] != UNKNOWN else value

    def _expand(self, node: int, moves: vec[i64], priors: vec[float], value: float, checks: vec[i64],
                mates: vec[i64]) -> None:
        cfg = self.config
        boost = False
        if cfg.check_enhancement and len(checks) > 0:
            # Speed: the boosted list is built only when some check gets the bonus.
            thresh = cfg.check_prior_threshold
            for i in range(len(priors)):
                if checks[i] and priors[i] < thresh:
                    boost = True
                    break
        bonus = 0.0
        total = 0.0
        thresh = cfg.check_prior_threshold
        if boost:
            top = priors[0]
            for i in range(1, len(priors)):
                if priors[i] > top:
                    top = priors[i]
            bonus = min(0.1, cfg.check_factor * top) if cfg.check_cap else cfg.check_factor * top
            # Two passes (the sum, then the normalised priors) with the same arithmetic; the
            # second writes into the new edges (the transposition table keeps the evaluator's own).
            for i in range(len(priors)):
                p = priors[i]
                if checks[i] and p < thresh:
                    p += bonus
                total += p
        tree = self.tree
        tree.expand_vec(node, moves, priors, value)
        e0c: i64 = tree.nd_edge0[node]
        if boost:
            for i in range(len(priors)):
                p = priors[i]
                if checks[i] and p < thresh:
                    p += bonus
                tree.ed_prior[e0c + i] = p / total
        if tree.check_urgency and len(checks) > 0:
            for i in range(len(checks)):
                if checks[i]:
                    tree.ed_check[e0c + i] = 1
        if len(mates) > 0:
            # Fix checkmates: the mated children exist at once as terminal nodes, the node is won.
            for j in range(len(mates)):
                child = tree.child_of(e0c + mates[j])
                tree.nd_state[child] = TERMINAL
                tree.nd_value[child] = -cfg.mate_value
                tree.nd_proven[child] = LOSS
            tree.update_proven(node)
        if node == self.root:
            self._apply_root_noise()

    def _apply_root_noise(self) -> None:
        """Dirichlet noise (AlphaZero) and SixtyFour's uniform prior noise on the root priors."""
        cfg = self.config
        tree = self.tree
        e0 = int(tree.nd_edge0[self.root])
        k = int(tree.nd_nedges[self.root])
        if cfg.dirichlet_epsilon > 0.0 and k > 0:
            noise = [self.rng.gammavariate(cfg.dirichlet_alpha, 1.0) for _ in range(k)]
            total = sum(noise)
            if total > 0:
                eps = cfg.dirichlet_epsilon
                for i in range(k):
                    tree.ed_prior[e0 + i] = (1.0 - eps) * tree.ed_prior[e0 + i] + eps * noise[i] / total
        if cfg.prior_noise > 0.0 and k > 0:
            moves_played = self._pos.fullmove_number - 1
            b = cfg.prior_noise / (1.0 + moves_played / cfg.prior_noise_decay)
            ps = [max(0.0, tree.ed_prior[e0 + i] + self.rng.uniform(-b, b)) for i in range(k)]
            total = sum(ps)
            if total > 0:
                for i in range(k):
                    tree.ed_prior[e0 + i] = ps[i] / total
        if k > 0:
            tree.nd_tail_from[self.root] = -1  # the tail's best edges are found again
            tree.nd_pmax[self.root] = math.nan

    # ------------------------------------------------------------------ the move and the report

    def root_stats(self) -> list[tuple[int, int, float, float]]:
        """(move, N, Q, P) of every root edge (Q from the root's side to move)."""
        tree = self.tree
        if self.root < 0 or tree.nd_state[self.root] != EXPANDED:
            return []
        e0 = int(tree.nd_edge0[self.root])
        return [(int(tree.ed_move[e]), tree.edge_n(e), tree.edge_q(e), tree.ed_prior[e])
                for e in range(e0, e0 + int(tree.nd_nedges[self.root]))]

    def root_q_pv(self) -> list[float]:
        """Q of every root edge after the principal-variation rule (same order as root_stats)."""
        tree = self.tree
        if self.root < 0 or tree.nd_state[self.root] != EXPANDED:
            return []
        e0 = int(tree.nd_edge0[self.root])
        return [self.q_with_pv(e) for e in range(e0, e0 + int(tree.nd_nedges[self.root]))]

    def q_with_pv(self, e: int) -> float:
        """Q of root edge e, lowered to the Q met ``q_pv_depth`` plies down its principal variation
        (``Q(s0, a) = min(Q(s0, a), Q(st, x))``, Q(st, x) seen from the root's side)."""
        tree = self.tree
        q = tree.edge_q(e)
        if not self.config.q_pv or tree.edge_n(e) == 0:
            return q
        node = int(tree.ed_child[e])
        sign = -1.0
        last: float | None = None
        for _ in range(1, self.config.q_pv_depth):
            if node < 0 or tree.nd_state[node] != EXPANDED:
                break
            x = -1
            e0 = int(tree.nd_edge0[node])
            for f in range(e0, e0 + int(tree.nd_nedges[node])):
                if tree.edge_n(f) > 0 and (x < 0 or tree.edge_n(f) > tree.edge_n(x)):
                    x = f
            if x < 0:
                break
            last = sign * tree.edge_q(x)
            node = int(tree.ed_child[x])
            sign = -sign
        return q if last is None else min(q, last)

    def choose_move(self) -> int:
        """The final-move rule (the one place it is decided):

        1. one legal move (with ``stop_single_move``): play it;
        2. solver/fix-checkmates: a proven winning move, the shortest mate first;
        3. moves proven to lose are dropped while any other move is left; if all lose, the longest
           resistance;
        4. among the rest: ``argmax π`` of :func:`final_policy` over Q (with the PV rule of
           :meth:`q_with_pv` when ``q_pv``), or a draw from ``π^(1/τ)`` with the injected random state
           when the temperature ``τ > 0`` applies (``temperature_moves``); ties go to the move
           generated first.
        """
        if self._single_move:
            return self._single_move
        tree = self.tree
        cfg = self.config
        e0 = int(tree.nd_edge0[self.root])
        k = int(tree.nd_nedges[self.root])
        if k == 0:
            return 0
        candidates: list[int] = []
        best_win = -1
        longest = -1
        for e in range(e0, e0 + k):
            child = int(tree.ed_child[e])
            pr = tree.nd_proven[child] if child >= 0 and (cfg.solver or cfg.fix_checkmates) else UNKNOWN
            if pr == LOSS:
                if best_win < 0 or tree.nd_plies[child] < tree.nd_plies[int(tree.ed_child[best_win])]:
                    best_win = e
            elif pr == WIN and cfg.solver:
                if longest < 0 or tree.nd_plies[child] > tree.nd_plies[int(tree.ed_child[longest])]:
                    longest = e
            else:
                candidates.append(e)
        if best_win >= 0:
            return int(tree.ed_move[best_win])
        if not candidates:
            return int(tree.ed_move[longest])
        visits = [tree.edge_n(e) for e in candidates]
        qs = [self.q_with_pv(e) for e in candidates]
        pi = final_policy(cfg, visits, qs)
        tau = cfg.temperature
        if tau > 0.0 and (cfg.temperature_moves <= 0 or self._pos.fullmove_number <= cfg.temperature_moves):
            top = max(pi)
            weights = [(p / top) ** (1.0 / tau) if top > 0 else 1.0 for p in pi]
            r = self.rng.random() * sum(weights)
            acc = 0.0
            for i in range(len(weights)):
                acc += weights[i]
                if r < acc:
                    return int(tree.ed_move[candidates[i]])
            return int(tree.ed_move[candidates[len(candidates) - 1]])
        best = 0
        for i in range(1, len(pi)):
            if pi[i] > pi[best]:
                best = i
        return int(tree.ed_move[candidates[best]])

    def _principal_variation(self, first: int) -> list[int]:
        tree = self.tree
        pv = [first]
        e0 = int(tree.nd_edge0[self.root])
        node = -1
        for e in range(e0, e0 + int(tree.nd_nedges[self.root])):
            if tree.ed_move[e] == first:
                node = int(tree.ed_child[e])
        while node >= 0 and tree.nd_state[node] == EXPANDED and len(pv) < 256:
            x = -1
            e0 = int(tree.nd_edge0[node])
            for f in range(e0, e0 + int(tree.nd_nedges[node])):
                child = int(tree.ed_child[f])
                if child >= 0 and tree.nd_proven[child] == LOSS and (self.config.solver or self.config.fix_checkmates):
                    x = f
                    break
                if tree.edge_n(f) > 0 and (x < 0 or tree.edge_n(f) > tree.edge_n(x)):
                    x = f
            if x < 0:
                break
            pv.append(int(tree.ed_move[x]))
            node = int(tree.ed_child[x])
        return pv

    def _make_result(self) -> SearchResult:
        elapsed = time.perf_counter() - self._t0
        move = self.choose_move()
        tree = self.tree
        if self._single_move or tree.nd_state[self.root] != EXPANDED:
            return SearchResult(best_move=move, nodes=self._nodes, evals=self._evals, time=elapsed, pv=[move],
                                depth=1, seldepth=self._seldepth)
        e0 = int(tree.nd_edge0[self.root])
        q = 0.0
        for e in range(e0, e0 + int(tree.nd_nedges[self.root])):
            if tree.ed_move[e] == move:
                q = tree.edge_q(e) if tree.edge_n(e) > 0 else tree.nd_value[self.root]
        mate: int | None = None
        pr = tree.nd_proven[self.root]
        if pr == WIN and (self.config.solver or self.config.fix_checkmates):
            mate = (int(tree.nd_plies[self.root]) + 1) // 2
            q = 1.0
        elif pr == LOSS and self.config.solver:
            mate = -(int(tree.nd_plies[self.root]) // 2)
            q = -1.0
        elif pr == DRAW and self.config.solver:
            q = 0.0
        q = max(-1.0, min(1.0, q))
        pv = self._principal_variation(move)
        self._last_q = q
        self._last_q_turn = self._pos.turn
        return SearchResult(best_move=move, value=q, cp=value_to_cp(q), mate=mate, nodes=self._nodes,
                            evals=self._evals, time=elapsed, depth=len(pv), seldepth=self._seldepth, pv=pv)

    def result(self) -> SearchResult:
        if self._best is None or not self._done:
            if self.root < 0:
                raise MCTSConfigError("MCTS.result called before start")
            if self.tree.nd_state[self.root] != EXPANDED and not self._single_move:
                raise MCTSConfigError("MCTS.result called before the root was evaluated")
            return self._make_result()
        return self._best


__all__ = ["MCTS", "MCTSConfig", "MCTSConfigError", "cpuct", "u_divisor", "q_thresh", "value_to_cp",
           "final_policy", "playout_depth_for_clock"]
