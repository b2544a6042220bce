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
a search policy is a composition, as mctx's, of parts named in :mod:`search.parts`: the interior rule
(``score_formula``: CrazyAra's PUCT in :mod:`search.puct`, SixtyFour's in :mod:`search.sixtyfour`),
the root rule (``root_rule``: visits or Gumbel's Sequential Halving; :mod:`search.mcts_rules`), the Q
transform and the stoppers (:mod:`search.mcts_stop`, as lc0's); the settings in
:mod:`search.mcts_config`.  Apart from this driver (simulations, leaves, expansion, the final move,
over any game's walk, :mod:`search.walk`): exploration (:mod:`search.mcts_explore`), transpositions
(:mod:`search.transpositions`), graph search (:mod:`search.mcgs`), the report (:mod:`search.mcts_report`).

Node accounting as :mod:`search.base` defines it: ``nodes`` = the root's visits (reused ones
included), ``Limits.playouts`` caps the new simulations, ``evals`` = positions sent to the evaluator.

The final-move rule is :meth:`MCTS.choose_move` (documented there, the only place it is decided).
"""
from __future__ import annotations

import random
import time
from typing import Sequence

from librt.vecs import append, vec
from mypy_extensions import i64, mypyc_attr

from board.position import Position
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, EvaluatorError, Leaf, require
from search import mcgs, mcts_explore, mcts_report
from search.base import Limits, Search, SearchResult
from search.checks import check_enhance
from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_rules import RootRule, TreeRule, final_policy, make_root_rule, make_rule, q_thresh
from search.mcts_stop import Stoppers, playout_depth_for_clock
from search.puct import PUCTParams, cpuct, u_divisor
from search.mcts_tree import DRAW, EXPANDED, LOSS, PENDING, TERMINAL, UNKNOWN, WIN, _float_vec, _Tree
from search.transpositions import EvalTable, counters_hash
from search.walk import BoardWalk, Walk


class _Pending:
    """A leaf in flight: its node, the path of edges to it, its legal moves, transposition key, which
    moves give check (1/0) and which of them mate (indices), the sign of its value in the tree."""

    def __init__(self, node: int, path: vec[i64], nodes: vec[i64], moves: vec[i64], key: i64,
                 gives_check: vec[i64], mates: vec[i64], sign: float) -> None:
        self.node, self.path, self.nodes, self.moves = node, path, nodes, moves
        self.key, self.gives_check, self.mates, self.sign = key, gives_check, mates, sign


@mypyc_attr(allow_interpreted_subclasses=True)
class MCTS(Search):
    """PUCT MCTS with CrazyAra's modifications; evaluator (POLICY_VALUE) and random state injected."""

    def __init__(self, evaluator: Evaluator, config: MCTSConfig | None = None,
                 rng: random.Random | None = None, rule: TreeRule | None = None,
                 root_rule: RootRule | None = None, teams: bool = False, summary: bool = True) -> None:
        """``rule``, ``root_rule``: the interior and root rules (default: the config's); ``teams``:
        the tree keeps team 0's values (a two-board walk); ``summary``: the driver makes its result
        when the search stops (off: its owner, a bughouse seat, decides from the tree)."""
        require(evaluator, POLICY_VALUE)
        self.evaluator = evaluator
        self.config = config if config is not None else MCTSConfig()
        self.config.validate()
        self.rng = rng if rng is not None else random.Random(0)
        self.rule: TreeRule = rule if rule is not None else make_rule(self.config)
        self.root_rule: RootRule = root_rule if root_rule is not None else make_root_rule(self.config, self.rule)
        self.teams, self.summary = teams, summary
        self._pp = self.config.settings(PUCTParams)  # check enhancement at expansion, the tree's FPU
        self.tree = self._new_tree()
        self.walk: Walk = Walk()  # the position walked (:mod:`search.walk`; a placeholder before a search)
        self.root = -1
        self._turn, self._fullmove = 0, 1  # the root's side to move and full-move number
        self._fast = False  # this move is a playout-cap fast search (Limits.fast): no root noise
        self._tt = EvalTable()
        self._variant = ""
        self._pending: list[_Pending] = []
        # The edges made on the position beyond the root during an ask (the walks of one batch
        # share their first steps: see _collect); _on[0:_made] holds them.
        self._on = vec[i64]()
        self._made = 0
        self._done, self._stopped = True, False
        self._nodes = self._visits0 = self._evals = 0  # new simulations, the root's visits at the start, calls
        #: this move's limits and the stoppers over them
        self._stop = Stoppers(self.config)
        self._seldepth = self._collisions = self._merges = 0  # _merges: MCGS links to existing nodes
        self._t0 = self._elapsed = 0.0
        self._last_q: float | None = None
        self._last_q_turn = -1
        self._best: SearchResult | None = None
        #: ε-greedy exploration on (:mod:`search.mcts_explore`)
        self._explore = mcts_explore.exploring(self.config)

    # ------------------------------------------------------------------ game lifecycle

    def new_game(self) -> None:
        """Forget the tree, the transposition table and the last move's Q."""
        self.tree = self._new_tree()
        self.root = -1
        self._tt = EvalTable()
        self._last_q = None

    def _new_tree(self) -> _Tree:
        return _Tree(self.config, self.rule.check_urgency, self.teams, self._pp.fpu)

    def start(self, pos: Position, limits: Limits) -> None:
        require(self.evaluator, POLICY_VALUE, pos.variant)
        moves = pos.legal_moves()
        if not moves:
            raise MCTSConfigError(f"no legal moves in {pos.fen()}")
        self._variant = pos.variant
        self.begin(BoardWalk(pos), limits, moves)

    def begin(self, walk: Walk, limits: Limits, moves: list[int]) -> None:
        """Search from ``walk``'s position (legal ``moves``): the previous tree's node of it when
        tree reuse finds one, else a fresh tree."""
        self._drop_abandoned()
        tree_reuse = self.config.tree.tree_reuse and self.root >= 0
        reused = walk.reuse(self.tree, self.root, self.walk) if tree_reuse else -1
        self.walk = walk
        key = walk.key()
        root = reused
        if root < 0 or self.tree.n_nodes > self.config.stopping.max_tree_nodes:
            self.tree = self._new_tree()
            root = self.tree.new_node(key)
            if self.config.tree.mcgs:
                self.tree.graph.put(walk.graph_key(), root)
        # the counters, the limits, the root rule's start when the root is expanded already
        turn, fullmove = walk.turn(), walk.fullmove()
        self._pending = []
        self._made = self._nodes = self._evals = self._seldepth = self._collisions = self._merges = 0
        self._stopped = False
        self._best = None
        self._t0 = time.perf_counter()
        self._elapsed = 0.0
        self.root = root
        self._turn, self._fullmove = turn, fullmove
        self._fast = self.root_rule.fast = limits.fast
        self._visits0 = 1 + int(self.tree.nd_sum_n[root]) if self.tree.nd_state[root] == EXPANDED else 0
        self._stop.begin(limits, turn, fullmove, moves, self._visits0)
        self._done = self._stop.single_move != 0
        if self.tree.nd_state[self.root] == EXPANDED:
            self._root_ready()
        if self._stop.spent_out:
            self._finish()

    def _drop_abandoned(self) -> None:
        if self._pending:
            # The last search was abandoned with leaves in flight: its tree holds virtual losses.
            self.tree = self._new_tree()
            self.root = -1

    # ------------------------------------------------------------------ ask / tell

    def ask(self) -> list[Leaf]:
        if self._done:
            return []
        if self._pending:
            raise EvaluatorError("MCTS.ask called again before tell answered the previous leaves")
        leaves: list[Leaf] = []
        stop = self._stop
        tries, want = 0, stop.step_size(self._nodes, self._evals)
        while len(self._pending) < want and tries < 2 * stop.batch:
            tries += 1
            leaf = self._collect()
            if leaf is not None:
                leaves.append(leaf)
            if stop.root_settled(self.tree, self.root, self._nodes) or \
                    stop.step_full(self._nodes, self._evals, len(self._pending)):
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
            if self.teams:
                priors = self.walk.normalise(priors, p.moves)
            value = max(-1.0, min(1.0, float(ev.value))) * p.sign
            if self.config.tree.transposition_table:
                self._tt.store(p.key, value, priors)
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

    def _check_done(self) -> None:
        self._elapsed = time.perf_counter() - self._t0
        last = self._last_q if self._last_q_turn == self._turn else None
        if self._stopped or self._stop.should_stop(self.tree, self.root, self._nodes, self._evals, self._elapsed, last):
            self._finish()

    def _finish(self) -> None:
        self._done = True
        if self.summary:
            self._best = self._make_result()

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
        limit = self._stop.playout_depth
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
                if new_child and self.walk.child_made(tree, child):
                    self._merges += 1
                node = child
                if tree.mcgs:
                    node = tree.nd_target[child]
                    # every edge into a transposition is checked, the first parent's too
                    if tree.nd_parents[node] > 1 and \
                            mcgs.transposition(tree, child, node, path, nodes, self.config.tree.mcgs_q_eps):
                        self._nodes += 1
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
            self.walk.push(int(self.tree.ed_move[e]))
            if depth < len(self._on):
                self._on[depth] = e
            else:
                self._on = append(self._on, e)
            self._made = depth + 1

    def _exploration_start(self) -> tuple[int, int, int]:
        """ε-greedy (:mod:`search.mcts_explore`): the node a simulation starts from, its depth (its
        line's moves made) and the edge it takes there (-1: the rule's)."""
        tree = self.tree
        line, mode = mcts_explore.exploration_line(tree, self.root, self.config, self.rng)
        if mode == 0:
            return self.root, 0, -1
        node = self.root
        for depth in range(len(line)):
            self._make(depth, int(line[depth]))
            node = tree.node_after(int(line[depth]))
        flags = vec[i64]()
        if mode == 2:
            self._unmake_to(len(line))
            e0: i64 = tree.nd_edge0[node]
            flags = self.walk.checks(tree.ed_move[e0:e0 + tree.nd_nedges[node]])
        return node, len(line), mcts_explore.exploration_edge(tree, node, flags, mode == 2, self.rng)

    def _unmake_to(self, depth: int) -> None:
        """Take back the moves made beyond ``depth`` plies below the root."""
        while self._made > depth:
            self.walk.pop()
            self._made -= 1

    def _visit_new(self, node: int, path: vec[i64], nodes: vec[i64]) -> Leaf | None:
        """A node reached for the first time: terminal, transposition, or a leaf to evaluate."""
        tree = self.tree
        walk = self.walk
        cfg = self.config
        moves = walk.moves()
        is_root = node == self.root
        over, value = walk.outcome(tree, node, moves, is_root, cfg.tree.mate_value)
        if over:
            tree.nd_state[node] = TERMINAL
            tree.nd_value[node] = value
            tree.nd_plies[node] = 0
            tree.backup(path, nodes, node, value)
            self._nodes += 1
            if is_root:  # the game is over here (a two-board walk's clock fell): nothing to search
                self._stopped = True
            return None
        need_checks = self._pp.check_enhancement or cfg.tree.fix_checkmates or tree.check_urgency
        checks = walk.checks(moves) if need_checks else vec[i64]()
        # Mates in one among the checks: found now, so no node ever misses a mate it has.
        mates = walk.mates(moves, checks) if cfg.tree.fix_checkmates else vec[i64]()
        key: i64 = 0
        if cfg.tree.transposition_table:
            key = walk.eval_key(is_root)
            slot = self._tt.slot(key)
            if slot >= 0 and self._tt.length[slot] == len(moves):
                value = self._tt.value[slot]
                self._expand(node, moves, self._tt.priors_of(slot), value, checks, mates)
                tree.backup(path, nodes, node, self._leaf_value(node, value))
                self._nodes += 1
                return None
        tree.nd_state[node] = PENDING
        sign = walk.value_sign() if self.teams else 1.0
        self._pending.append(_Pending(node, path, nodes, moves, key, checks, mates, sign))  # path: fresh per walk
        return walk.leaf(moves, is_root)

    def _leaf_value(self, node: int, value: float) -> float:
        """The value a new node backs up: exact once it is proven (a mate in one found)."""
        return self.tree.proven_value(node) if self.tree.nd_proven[node] != UNKNOWN else value

    def _expand(self, node: int, moves: vec[i64], priors: vec[float], value: float, checks: vec[i64],
                mates: vec[i64]) -> None:
        cfg = self.config
        tree = self.tree
        # the transposition table keeps the evaluator's own priors; the new edges get the boosted ones
        tree.expand_vec(node, moves, priors, value)
        e0c: i64 = tree.nd_edge0[node]
        if self._pp.check_enhancement and len(checks) > 0:
            pp = self._pp
            check_enhance(priors, checks, pp.check_prior_threshold, pp.check_factor, pp.check_cap, tree.ed_prior, e0c)
        if tree.check_urgency and len(checks) > 0:
            for i in range(len(checks)):
                if checks[i]:
                    tree.ed_check[e0c + i] = 1
        if len(mates) > 0:
            # Fix checkmates: the mated children exist at once as terminal nodes, the node is won.
            for j in range(len(mates)):
                child = tree.child_of(e0c + mates[j])
                tree.nd_state[child] = TERMINAL
                tree.nd_value[child] = -cfg.tree.mate_value
                tree.nd_proven[child] = LOSS
            tree.update_proven(node)
        if node == self.root:
            self._root_ready()

    def _root_ready(self) -> None:
        """The root is expanded (now, or reused): noise on its priors, then the root rule's start with
        its edges' budget, the root's final visits less its own evaluation (Sequential Halving's n)."""
        mcts_explore.root_noise(self.tree, self.root, self.config, self.rng, self._fullmove, not self._fast)
        self.root_rule.begin(self.tree, self.root, max(1, self._stop.root_budget(self._visits0) - 1), self.rng)

    # ------------------------------------------------------------------ the move and the report

    def reused_visits(self) -> int:
        """The root's visits kept from the previous search (tree reuse) when this move's began."""
        return self._visits0

    def counters(self) -> tuple[int, int, float, int]:
        """This move's new simulations, evaluator calls, seconds so far and selective depth."""
        return self._nodes, self._evals, time.perf_counter() - self._t0, self._seldepth

    def root_stats(self) -> list[tuple[int, int, float, float]]:
        """(move, N, Q, P) of every root edge (Q from the root's side to move)."""
        return mcts_report.root_stats(self.tree, self.root)

    def policy_target(self) -> list[tuple[int, float]]:
        """(move, probability) over the root's moves: the root rule's training target (PUCT: visit
        shares; Gumbel: the improved policy); the one legal move has probability 1."""
        if self._stop.single_move or self.tree.nd_state[self.root] != EXPANDED:
            return [(self.choose_move(), 1.0)]
        e0 = int(self.tree.nd_edge0[self.root])
        return [(int(self.tree.ed_move[e0 + i]), p) for i, p in enumerate(self.root_rule.target(self.tree, self.root))]

    def choose_move(self) -> int:
        """The final-move rule (the one place it is decided):

        1. one legal move (with ``stop_single_move``): play it;
        2. solver/fix-checkmates: a proven winning move, the shortest mate first;
        3. moves proven to lose are dropped while any other move is left; if all lose, the longest
           resistance;
        4. among the rest, the root rule's choice (:meth:`search.mcts_rules.RootRule.choose`): for PUCT
           ``argmax π`` of :func:`final_policy` over Q (with the PV rule when ``q_pv``) or a draw
           from ``π^(1/τ)`` under a temperature (:class:`search.puct.VisitsRoot`); for Gumbel
           the best ``g + logits + σ(q̂)`` among the most visited (:class:`search.gumbel.SequentialHalving`).
        """
        if self._stop.single_move:
            return self._stop.single_move
        tree = self.tree
        if tree.nd_nedges[self.root] == 0:
            return 0
        best_win, longest, candidates = tree.proven_moves(self.root, self.config.tree.solver, self.config.tree.fix_checkmates)
        if best_win >= 0:
            return int(tree.ed_move[best_win])
        if not candidates:
            return int(tree.ed_move[longest])
        return int(tree.ed_move[self.root_rule.choose(tree, self.root, candidates, self.rng, self._fullmove)])

    def _make_result(self) -> SearchResult:
        elapsed = time.perf_counter() - self._t0
        move = self.choose_move()
        tree = self.tree
        if self._stop.single_move or tree.nd_state[self.root] != EXPANDED:
            return SearchResult(best_move=move, nodes=self._visits0 + self._nodes, evals=self._evals, time=elapsed,
                                pv=[move], depth=1, seldepth=self._seldepth)
        r = mcts_report.search_result(tree, self.root, self.config, self.root_rule, self._variant, move,
                                      self._visits0 + self._nodes, self._evals, elapsed, self._seldepth)
        self._last_q = r.value
        self._last_q_turn = self._turn
        return r

    def result(self) -> SearchResult:
        if self._best is None or not self._done:
            if self.root < 0:
                raise MCTSConfigError("MCTS.result called before start")
            if self.tree.nd_state[self.root] != EXPANDED and not self._stop.single_move:
                raise MCTSConfigError("MCTS.result called before the root was evaluated")
            return self._make_result()
        return self._best


__all__ = ["MCTS", "MCTSConfig", "MCTSConfigError", "cpuct", "u_divisor", "q_thresh", "final_policy",
           "playout_depth_for_clock", "DRAW", "EXPANDED", "LOSS", "PENDING", "TERMINAL", "UNKNOWN", "WIN", "counters_hash"]
