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

The tree's memory layout (nodes and edges apart, as lc0) is documented in :mod:`search.mcts_tree`;
the selection rule below the root is a :class:`~search.mcts_tree.TreeRule` named by
``score_formula`` (:data:`search.mcts_config.TREE_RULES`: CrazyAra's PUCT in :mod:`search.puct`,
SixtyFour's score in :mod:`search.sixtyfour`); the settings and schedules are in
:mod:`search.mcts_config`.  This module is the driver: walks, leaves, expansion, limits, the final
move and the report.

Pieces (each a field of :class:`MCTSConfig`, CrazyAra 0.6.0 defaults)
--------------------------------------------------------------------
- batched leaf collection with virtual loss (``batch_size`` 8, ``virtual_loss`` 3);
- transposition table sharing evaluations (``transposition_table``): a new node whose position
  (zobrist hash, half-move clock, full-move number, repetition count: the "counters") was evaluated
  before reuses that value and prior without an evaluator call (an open-addressing index, flat vecs);
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
- check urgency (``check_urgency``, ``check_q_init``; our addition, off by default to keep the
  default search CrazyAra's): an unvisited checking move starts from ``Q = 0`` instead of the fpu of
  -1.  With fpu -1 a node whose first move came back with a good Q tries a second move only after
  about ``((1 + Q) / (cpuct · P))²`` visits, so with a flat prior the solver never sees the forcing
  moves that prove a mate (a crazyhouse mate in 3 with Q and R in hand was not found in a million
  simulations); check enhancement raises their prior but cannot overcome the fpu gap of 1 + Q;
- ε-greedy exploration (``epsilon_greedy``, ``epsilon_checks``; Czech, Korus, Kersting 2021, off by
  default): a share ε of the simulations starts at a random depth of the most visited line and
  tries there a move the rule would not (:meth:`MCTS._exploration_start`);
- tree reuse between moves of one game (``tree_reuse``), root Dirichlet noise (``dirichlet_epsilon``,
  0 in matches) and temperature (``temperature``), both drawn from the injected ``random.Random``;
- multi-PV (``multipv``, UCI MultiPV): the move played, then the root moves the root rule ranks
  next (:meth:`search.mcts_tree.RootRule.ranked`); the tree holds at most ``max_tree_nodes`` nodes
  (UCI Hash): the search stops when it is full;
- time management (:mod:`search.timeman`): allocated time, stop with one legal move, early stop in
  easy positions, extension in critical ones; ``Limits.depth`` caps the depth of a simulation;
- the SixtyFour variant (:meth:`MCTSConfig.sixtyfour`): its score formula, uniform prior noise that
  decays with the move number, mates scored 1.5, and depth-limited playouts (a simulation stops
  descending ``max_playout_depth`` plies below the root and backs up the evaluator's value there;
  the depth comes from the clock by SixtyFour's table when ``playout_depth_from_clock``).

Node accounting as :mod:`search.base` defines it: ``nodes`` = the root's visits (reused ones
included), ``Limits.playouts`` caps the new simulations, ``evals`` = positions sent to the evaluator.

The final-move rule is :meth:`MCTS.choose_move` (documented there, the only place it is decided).
"""
from __future__ import annotations

import math
import random
import time
from typing import Sequence

from librt.vecs import append, extend, vec
from mypy_extensions import i64, mypyc_attr

from board.position import Position
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, EvaluatorError, Leaf, require, value_to_cp
from search.base import Limits, PVLine, Search, SearchResult
from search.checks import checking_moves_vec, mates_in_one_vec
from search.mcts_config import (
    MCTSConfig, MCTSConfigError, cpuct, final_policy, playout_depth_for_clock, q_thresh, simulation_cap, u_divisor,
)
from search.mcts_tree import (
    DRAW, EXPANDED, LOSS, PENDING, TERMINAL, UNKNOWN, WIN, RootRule, TreeRule, _float_vec, _KeyIndex, _Tree,
    counters_hash, make_root_rule, make_rule,
)
from search.timeman import TimeControl, move_time


class _Pending:
    """A leaf in flight: its node, the path of edges to it, its legal moves, transposition key, which
    moves give check (1/0) and which of them mate (indices)."""

    def __init__(self, node: int, path: vec[i64], nodes: vec[i64], moves: vec[i64], key: i64,
                 gives_check: vec[i64], mates: vec[i64]) -> None:
        self.node, self.path, self.nodes, self.moves = node, path, nodes, moves
        self.key, self.gives_check, self.mates = key, gives_check, mates


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
        self.rule: TreeRule = make_rule(self.config)
        self.root_rule: RootRule = make_root_rule(self.config, self.rule)
        self.tree = _Tree(self.config, self.rule.check_urgency)
        self.root, self._root_ply = -1, -1
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
        self._nodes = 0  # new simulations this move
        self._visits0 = 0  # the root's visits when this move's search began (tree reuse)
        self._evals = 0
        self._node_limit = 0  # cap on new simulations (0: none), from the node and playout limits
        self._eval_limit, self._batch = 0, self.config.batch_size  # leaves a step (MCTSConfig.batch_for)
        self._seldepth = 0
        self._t0 = 0.0
        self._elapsed = 0.0
        self._time: TimeControl | None = None
        self._playout_depth = 0
        self._last_q: float | None = None
        self._last_q_turn = -1
        self._best: SearchResult | None = None
        self._collisions = 0
        #: MCGS: links made to existing position nodes (transpositions merged)
        self._merges = 0
        self._proven_at = -1
        self._single_move = 0
        #: ε-greedy exploration on (:meth:`_exploration_start`)
        self._explore = self.config.epsilon_greedy > 0.0 or self.config.epsilon_checks > 0.0

    # ------------------------------------------------------------------ game lifecycle

    def new_game(self) -> None:
        """Forget the tree, the transposition table and the last move's Q."""
        self.tree = _Tree(self.config, self.rule.check_urgency)
        self.root, self._root_ply = -1, -1
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
                    nxt = tree.node_after(e)
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
            self.tree = _Tree(cfg, self.rule.check_urgency)
            self.root = -1
        self._pos = pos
        self._pending = []
        self._made = 0
        self._nodes = 0
        self._evals = 0
        self._seldepth = 0
        self._collisions = 0
        self._merges = 0
        self._proven_at = -1
        self._stopped = False
        self._best = None
        self._t0 = time.perf_counter()
        self._elapsed = 0.0
        reused = self._reuse_root(pos)
        if reused < 0 or self.tree.n_nodes > cfg.max_tree_nodes:
            self.tree = _Tree(cfg, self.rule.check_urgency)
            reused = self.tree.new_node(pos.zobrist)
            if cfg.mcgs:
                self.tree.graph.put(self._tt_key(pos), reused)
        self.root = reused
        self._root_ply = pos.ply()
        self._root_hash = pos.zobrist
        self._visits0 = 1 + int(self.tree.nd_sum_n[reused]) if self.tree.nd_state[reused] == EXPANDED else 0
        if limits.nodes is not None and limits.nodes < 1:
            raise MCTSConfigError(f"node limit must be positive, got {limits.nodes}")
        if limits.playouts is not None and limits.playouts < 1:
            raise MCTSConfigError(f"playout limit must be positive, got {limits.playouts}")
        budget = None if limits.infinite else move_time(limits, pos.turn, pos.fullmove_number, cfg.time)
        remaining = limits.wtime if pos.turn == 0 else limits.btime
        self._time = TimeControl(budget, cfg.time, remaining) if budget is not None else None
        if limits.evals is not None and limits.evals < 1:
            raise MCTSConfigError(f"evaluator-call limit must be positive, got {limits.evals}")
        self._eval_limit = limits.evals if limits.evals is not None else 0
        self._batch = cfg.batch_for(limits.nodes or limits.playouts or limits.evals)
        cap = simulation_cap(limits.nodes, limits.playouts, self._visits0)
        spent_out = cap <= 0  # a reused root with N visits already: nothing to add
        if limits.nodes is not None or limits.playouts is not None:
            self._node_limit = max(1, cap)
        elif self._eval_limit > 0:
            # simulations that need no evaluation (transpositions, terminals) are not capped by the
            # evaluator budget: a cap of their own keeps a solved or repetitive tree finite
            self._node_limit = 16 * self._eval_limit + 1000
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
        if self.tree.nd_state[self.root] == EXPANDED:
            self._root_ready()
        if spent_out:
            self._done = True
            self._best = self._make_result()

    # ------------------------------------------------------------------ ask / tell

    def ask(self) -> list[Leaf]:
        if self._done:
            return []
        if self._pending:
            raise EvaluatorError("MCTS.ask called again before tell answered the previous leaves")
        leaves: list[Leaf] = []
        tries, want = 0, self._batch
        if self._node_limit > 0:
            want = min(want, self._node_limit - self._nodes)
        if self._eval_limit > 0:
            want = min(want, self._eval_limit - self._evals)
        while len(self._pending) < want and tries < 2 * self._batch:
            tries += 1
            leaf = self._collect()
            if leaf is not None:
                leaves.append(leaf)
            if self._root_settled():
                break
            if self._node_limit > 0 and self._nodes + len(self._pending) >= self._node_limit:
                break
            if self._eval_limit > 0 and self._evals + len(self._pending) >= self._eval_limit:
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
        if self._stopped or self._root_settled() or self.tree.n_nodes >= self.config.max_tree_nodes:
            self._done = True
        elif self._node_limit > 0 and self._nodes >= self._node_limit:
            self._done = True
        elif self._eval_limit > 0 and self._evals >= self._eval_limit:
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

    def _best_edge_by_visits(self, node: int = -1) -> int:
        """The most visited edge of ``node`` (default: the root); the first of equals."""
        tree = self.tree
        node = self.root if node < 0 else node
        e0 = int(tree.nd_edge0[node])
        best = e0
        for e in range(e0, e0 + int(tree.nd_nedges[node])):
            if tree.edge_n(e) > tree.edge_n(best):
                best = e
        return best

    # ------------------------------------------------------------------ one simulation

    def _collect(self) -> Leaf | None:
        """Walk from the root to a leaf; back up at once what needs no evaluator, else queue it."""
        tree = self.tree
        node = self.root
        # The edges walked and the nodes they leave (native vecs: no boxed ints per step).
        path = vec[i64](capacity=16)
        nodes = vec[i64](capacity=16)
        depth = 0
        forced = -1  # ε-greedy: the edge taken at the start node instead of the rule's
        if self._explore:
            node, depth, forced = self._exploration_start()
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
                if forced >= 0:
                    e = forced
                    forced = -1
                else:
                    e = self.root_rule.select(tree, node) if node == self.root else self.rule.select(tree, node)
                new_child = tree.ed_child[e] < 0  # its hash is set once its move is made below
                child = tree.child_of(e)
                tree.add_virtual_loss(node, e)
                path = append(path, e)
                nodes = append(nodes, node)
                self._make(depth, e)
                depth += 1
                if new_child:
                    tree.nd_hash[child] = self._pos.zobrist
                    if tree.mcgs:
                        self._link(child)
                node = child
                if tree.mcgs:
                    node = tree.nd_target[child]
                    # every edge into a transposition is checked, the first parent's too
                    if tree.nd_parents[node] > 1 and self._transposition(child, node, path, nodes):
                        break
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

    def _make(self, depth: int, e: int) -> None:
        """Make edge e's move as ply ``depth`` below the root.  Speed: only if the last walk did not
        already make it at this depth (then the position may be deeper still: _unmake_to before
        using it)."""
        if depth >= self._made or self._on[depth] != e:
            self._unmake_to(depth)
            self._pos.push(int(self.tree.ed_move[e]))
            if depth < len(self._on):
                self._on[depth] = e
            else:
                self._on = append(self._on, e)
            self._made = depth + 1

    def _exploration_start(self) -> tuple[int, int, int]:
        """ε-greedy exploration (Czech, Korus, Kersting 2021; CrazyAra's ``Centi_Epsilon_Greedy`` and
        ``Centi_Epsilon_Checks``).  With probability ``epsilon_greedy`` a simulation starts d plies
        down the most visited line, P(d) = 2^-(d+1), stopping early before a node with fewer than
        1/ε visits or a proven one, and takes there a move the rule would not: the highest-prior
        unvisited move while the node has one, else one drawn uniformly (if that one is proven, the
        rule decides); with probability ``epsilon_checks`` the same, but the highest-prior unvisited
        check first.  Only the part below the start node is backed up (as CrazyAra): the
        statistics above it stay the policy's own.  Returns (start node, its depth, edge or -1)."""
        cfg = self.config
        tree = self.tree
        root = self.root
        u = self.rng.random()
        checks = u < cfg.epsilon_checks
        if (not checks and u >= cfg.epsilon_checks + cfg.epsilon_greedy) or tree.nd_state[root] != EXPANDED \
                or tree.settled(root):
            return root, 0, -1
        min_visits = round(1.0 / (cfg.epsilon_checks if checks else cfg.epsilon_greedy))
        goal = int(-math.log2(1.0 - self.rng.random()))
        node = root
        depth = 0
        while depth < goal:
            e = self._best_edge_by_visits(node)
            nxt = tree.node_after(e)
            if nxt < 0 or tree.edge_n(e) < min_visits or tree.nd_state[nxt] != EXPANDED or tree.settled(nxt):
                break
            self._make(depth, e)
            node = nxt
            depth += 1
        return node, depth, self._exploration_edge(node, depth, checks)

    def _exploration_edge(self, node: int, depth: int, checks: bool) -> int:
        """:meth:`_exploration_start`'s move at ``node`` (``depth`` plies below the root)."""
        tree = self.tree
        e0: i64 = tree.nd_edge0[node]
        end: i64 = e0 + tree.nd_nedges[node]
        flags = vec[i64]()
        if checks:
            self._unmake_to(depth)
            flags = checking_moves_vec(self._pos, tree.ed_move[e0:end])
        for want_check in ((True, False) if checks else (False,)):
            best: i64 = -1
            for e in range(e0, end):
                child = tree.node_after(e)
                if (child < 0 or tree.nd_proven[child] == UNKNOWN) and tree.edge_n(e) == 0 and tree.edge_vl(e) == 0 \
                        and (not want_check or flags[e - e0] != 0) and (best < 0 or tree.ed_prior[e] > tree.ed_prior[best]):
                    best = e
            if best >= 0:
                return int(best)
        e = e0 + self.rng.randrange(int(end - e0))
        child = tree.node_after(e)
        return int(e) if child < 0 or tree.nd_proven[child] == UNKNOWN else -1

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
        elif not is_root and pos.is_search_draw():
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
            self._root_ready()

    def _root_ready(self) -> None:
        """The root is expanded (now, or reused): noise on its priors, then the root rule's start with
        its edges' budget, the root's final visits less its own evaluation (Sequential Halving's n)."""
        self._apply_root_noise()
        total = self._visits0 + self._node_limit if self._node_limit > 0 else self.config.default_nodes
        self.root_rule.begin(self.tree, self.root, max(1, total - 1), self.rng)

    def _link(self, child: int) -> None:
        """MCGS: the position just reached through a new child has a node already: link to it;
        else the child becomes the position's node (see :mod:`search.mcts_tree`)."""
        tree = self.tree
        key = self._tt_key(self._pos, 1 if self._pos.is_repetition(2) else 0)
        t = tree.graph.get(key)
        if t >= 0 and t != child:
            tree.link(child, t)
            self._merges += 1
        else:
            tree.graph.put(key, child)

    def _transposition(self, child: int, node: int, path: vec[i64], nodes: vec[i64]) -> bool:
        """MCGS, arriving at an existing position node through edge-holder ``child``: True if the
        simulation ends here (a value backed up), False to descend into ``node``.  A first visit
        through the edge backs up the node's value; a visited edge whose Q lags the node's by more
        than ``mcgs_q_eps`` backs up the correction ``Q_φ = N(s, a) (Q(t) − Q(s, a)) + Q(t)``
        (clipped to [-1, 1]) that brings it to the node's (Czech et al. 2021, Algorithm 1)."""
        tree = self.tree
        if tree.nd_state[node] != EXPANDED:
            return False  # pending (a collision), terminal or new: the walk handles it
        n = tree.nd_n[child]
        if n == 0:
            tree.backup(path, nodes, node, tree.node_q(node))
            self._nodes += 1
            return True
        q_edge = tree.nd_w[child] / float(n)
        q_node = -tree.node_q(node)  # the node's value from the edge's side
        if abs(q_edge - q_node) <= self.config.mcgs_q_eps:
            return False
        tree.backup(path, nodes, node, -tree.transposition_value(n, tree.nd_w[child], q_node))
        self._nodes += 1
        return True

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

    def policy_target(self) -> list[tuple[int, float]]:
        """(move, probability) over the root's moves: the root rule's training target (PUCT: visit
        shares; Gumbel: the improved policy); the one legal move has probability 1."""
        if self._single_move or self.tree.nd_state[self.root] != EXPANDED:
            return [(self.choose_move(), 1.0)]
        e0 = int(self.tree.nd_edge0[self.root])
        return [(int(self.tree.ed_move[e0 + i]), p) for i, p in enumerate(self.root_rule.target(self.tree, self.root))]

    def choose_move(self) -> int:
        """The final-move rule (the one place it is decided):

        1. one legal move (with ``stop_single_move``): play it;
        2. solver/fix-checkmates: a proven winning move, the shortest mate first;
        3. moves proven to lose are dropped while any other move is left; if all lose, the longest
           resistance;
        4. among the rest, the root rule's choice (:meth:`search.mcts_tree.RootRule.choose`): for PUCT
           ``argmax π`` of :func:`final_policy` over Q (with the PV rule when ``q_pv``) or a draw
           from ``π^(1/τ)`` under a temperature (:class:`search.mcts_tree.VisitsRoot`); for Gumbel
           the best ``g + logits + σ(q̂)`` among the most visited (:class:`search.gumbel.SequentialHalving`).
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
            child = tree.node_after(e)
            pr = tree.nd_proven[child] if child >= 0 and (cfg.solver or cfg.fix_checkmates) else UNKNOWN
            if pr == LOSS:
                if best_win < 0 or tree.nd_plies[child] < tree.nd_plies[tree.node_after(best_win)]:
                    best_win = e
            elif pr == WIN and cfg.solver:
                if longest < 0 or tree.nd_plies[child] > tree.nd_plies[tree.node_after(longest)]:
                    longest = e
            else:
                candidates.append(e)
        if best_win >= 0:
            return int(tree.ed_move[best_win])
        if not candidates:
            return int(tree.ed_move[longest])
        return int(tree.ed_move[self.root_rule.choose(tree, self.root, candidates, self.rng, self._pos.fullmove_number)])

    def _principal_variation(self, first: int) -> list[int]:
        tree = self.tree
        pv = [first]
        e0 = int(tree.nd_edge0[self.root])
        node = -1
        for e in range(e0, e0 + int(tree.nd_nedges[self.root])):
            if tree.ed_move[e] == first:
                node = tree.node_after(e)
        while node >= 0 and tree.nd_state[node] == EXPANDED and len(pv) < 256:
            x = -1
            e0 = int(tree.nd_edge0[node])
            for f in range(e0, e0 + int(tree.nd_nedges[node])):
                child = tree.node_after(f)
                if child >= 0 and tree.nd_proven[child] == LOSS and (self.config.solver or self.config.fix_checkmates):
                    x = f
                    break
                if tree.edge_n(f) > 0 and (x < 0 or tree.edge_n(f) > tree.edge_n(x)):
                    x = f
            if x < 0:
                break
            pv.append(int(tree.ed_move[x]))
            node = tree.node_after(x)
        return pv

    def _make_result(self) -> SearchResult:
        elapsed = time.perf_counter() - self._t0
        move = self.choose_move()
        tree = self.tree
        if self._single_move or tree.nd_state[self.root] != EXPANDED:
            return SearchResult(best_move=move, nodes=self._visits0 + self._nodes, evals=self._evals, time=elapsed,
                                pv=[move], depth=1, seldepth=self._seldepth)
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
        lines = self._lines(move, q, mate, pv) if self.config.multipv > 1 else []
        self._last_q = q
        self._last_q_turn = self._pos.turn
        return SearchResult(best_move=move, value=q, cp=value_to_cp(q, self._pos.variant), mate=mate,
                            nodes=self._visits0 + self._nodes, evals=self._evals, time=elapsed, depth=len(pv), seldepth=self._seldepth, pv=pv,
                            lines=lines)

    def _lines(self, move: int, q: float, mate: int | None, pv: list[int]) -> list[PVLine]:
        """Multi-PV: the move played, then the visited root moves the root rule ranks next."""
        tree, variant = self.tree, self._pos.variant
        e0 = int(tree.nd_edge0[self.root])
        ranked = self.root_rule.ranked(tree, self.root, list(range(e0, e0 + int(tree.nd_nedges[self.root]))))
        out = [PVLine(move, q, value_to_cp(q, variant), mate, pv)]
        for e in [e for e in ranked if tree.ed_move[e] != move and tree.edge_n(e) > 0][: self.config.multipv - 1]:
            qe, m = max(-1.0, min(1.0, tree.edge_q(e))), int(tree.ed_move[e])
            out.append(PVLine(m, qe, value_to_cp(qe, variant), None, self._principal_variation(m)))
        return out

    def result(self) -> SearchResult:
        if self._best is None or not self._done:
            if self.root < 0:
                raise MCTSConfigError("MCTS.result called before start")
            if self.tree.nd_state[self.root] != EXPANDED and not self._single_move:
                raise MCTSConfigError("MCTS.result called before the root was evaluated")
            return self._make_result()
        return self._best


__all__ = ["MCTS", "MCTSConfig", "MCTSConfigError", "cpuct", "u_divisor", "q_thresh", "final_policy",
           "playout_depth_for_clock", "DRAW", "EXPANDED", "LOSS", "PENDING", "TERMINAL", "UNKNOWN", "WIN", "counters_hash"]
