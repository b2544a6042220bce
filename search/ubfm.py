"""Unbounded Best-First Minimax with completion, and Descent (Cohen-Solal; Athénan) (mypyc-compiled).

Sources: Korf & Chickering 1996 (best-first minimax); Cohen-Solal 2020, "Learning to play
two-player perfect-information games without knowledge" (arXiv 2008.01188: UBFM, Descent,
completion, the final-move rules); Cohen-Solal & Cazenave, "Minimax Strikes Back" (arXiv
2012.10700); Cohen-Solal 2026, "Completeness of UBFM and Descent Minimax" (arXiv 2603.24572).
SPEC.md section 4 has the summary this module follows.

Notation
--------
``s`` a node (position), ``a(s)`` its child after move ``a``; every child of an expanded node exists.

- ``v(s)``: the value of ``s`` **for the side to move at s**, in [-1, 1]: the evaluator's value of
  ``s`` while it is a leaf, then the minimax of its children, ``v(s) = max_a -v(a(s))`` in the
  completed order below; a terminal's is the game's result (``mate_value`` for a win, 0 a draw).
  Network values are clipped to ``±(1 - 1e-6)``: a game's end ranks above every estimate.
- ``r(s)``: the resolution of ``s`` for its side to move: unknown, won, lost or drawn (the game's
  end at a terminal; completion's rule above it), with ``plies(s)`` to the end when resolved.
- ``n(s)``: the iterations that went through ``s`` (``n(s, a)`` of the paper is ``n(a(s))``).
- ``P(a)``: the prior of move ``a`` at ``s``: the evaluator's policy of ``s``, kept when ``s`` was
  evaluated (``priors``); it breaks ties and adds ``prior_weight · P(a)`` to the descent's score.
- ``W``, ``K``: progressive widening by prior (``width``, ``widen``; off at ``W = 0``).  An expansion
  makes every child and scores the game's ends, but sends only the ``W`` others of largest ``P(a)``
  to the evaluator; the rest are *deferred*: no value, open, outside ``v(s)``'s maximum and
  unresolved for completion (``s`` can be won through a scored child, never lost or drawn while one
  is deferred).  An iteration that reaches an expanded ``s`` with deferred children *widens* it
  (evaluates its next ``W`` by prior, one batch, and backs up) when every scored child is closed,
  or when ``K > 0`` and fewer than ``W · (1 + n(s) // K)`` of its children are scored.

The completed order of the children from ``s``'s point of view (completion): a child lost for its
side to move (a win for ``s``; the shortest first), then the unresolved and drawn children by
``-v(a(s))``, then the children won for their side to move (a loss for ``s``; the longest first).
Without completion the order is ``-v(a(s))`` alone (a terminal's value still ranks above every
estimate).  Ties: the larger prior, then the first move generated.

One iteration (UBFM): descend from the root along the best child in the completed order that is
not *closed* (resolved, or frozen at ``max_depth``) to a node not yet expanded; *expand* it: make
every child, score the terminal ones by :meth:`board.position.Position.search_end` (checkmate,
stalemate, the draws inside the tree: repetition since the root or the game, the fifty-move rule,
insufficient material; a variant's own end) and send **all the others to the evaluator in one
batch** (:meth:`UBFM.ask` returns them: a harness pools them with other games' leaves); then back
up the path: each node's value and resolution recomputed from its children.  Completion resolves a
node when a child is lost for its side to move (the node is won) or when every child is resolved
(the best of them); a closed node is never descended into, so no iteration is spent where nothing
can change, and a resolved root ends the search.  Without completion an iteration that reaches a
terminal changes nothing and every later one would repeat it: the search ends there (the
incompleteness the 2026 paper proves completion removes).  Descent (``descent``): after an
expansion the iteration goes on down the best child, expanding each, until it reaches a closed
node (a terminal): every iteration plays a line to the game's end.

Final move (``final_move``; the only place it is decided, :meth:`UBFM.choose_move`): with
completion a root move proven to win is played (the shortest mate), moves proven lost are dropped
while another is left (all lost: the longest resistance); among the rest ``"safest"`` (the paper's
safest action, its recommendation for play: the child the most iterations went through, ties by
the completed order) or ``"best"`` (the best child in the completed order).

Node accounting (:mod:`search.base`): ``nodes`` = positions in the root's tree (evaluated leaves,
terminals, expanded nodes; those kept from the previous move included, as MCTS counts reused
visits); ``evals`` = positions sent to the evaluator this move.  An expansion is started only when
all its children fit within the node and evaluator-call limits (so a limit is never passed), except
the root's first: a move needs it.  With ``width`` a new root is evaluated first (one call: the
priors the widening ranks its children by).  ``Limits.depth`` does not apply (the search has no depth).

The tree's memory layout is documented in :mod:`search.ubfm_tree`, the settings in :mod:`search.ubfm_config`.
"""
from __future__ import annotations

import time
from typing import Final, Sequence

from librt.vecs import append, vec
from mypy_extensions import i64, mypyc_attr

from board.position import Position
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, EvaluatorError, Leaf, require, value_to_cp
from search.base import Limits, Search, SearchResult
from search.timeman import move_time
from search.ubfm_config import FINAL_MOVES, UBFMConfig, UBFMConfigError
from search.ubfm_expand import expand_all, make_narrow, plan_narrow, widen_leaves, widens
from search.ubfm_tree import DEFERRED, DRAW, EXPANDED, LEAF, LOSS, NEW, TERMINAL, UNKNOWN, WIN, Tree

#: the largest value an estimate may take: a game's end (mate_value >= 1) ranks above every one
_EST_MAX: Final = 1.0 - 1e-6
#: the kept policies' floats a node may average before a reused tree is dropped (bounds its memory)
_POOL_PER_NODE: Final = 24
_NEG: Final = -1e9


@mypyc_attr(allow_interpreted_subclasses=True)
class UBFM(Search):
    """Unbounded Best-First Minimax with completion (module docstring); evaluator: POLICY_VALUE."""

    def __init__(self, evaluator: Evaluator, config: UBFMConfig | None = None) -> None:
        require(evaluator, POLICY_VALUE)
        self.evaluator = evaluator
        self.config = config if config is not None else UBFMConfig()
        self.config.validate()
        self.tree = Tree()
        self.root = -1
        self.pos: Position = Position()
        self._root_ply = 0
        self._variant = ""
        self._pending = vec[i64]()  # the nodes sent to the evaluator by the last ask
        self._expanding = -1  # the node whose children they are
        self._next = -1  # Descent: the node the next iteration goes on from (-1: the root)
        self._done = True
        self._stopped = False
        self._single = 0
        self._nodes = self._evals = self._seldepth = self._iterations = 0
        self._node_limit = self._eval_limit = 0
        self._deadline = 0.0
        self._t0 = 0.0
        self._best: SearchResult | None = None

    # ------------------------------------------------------------------ game lifecycle

    def new_game(self) -> None:
        """Forget the tree."""
        self.tree = Tree()
        self.root = -1

    def start(self, pos: Position, limits: Limits) -> None:
        require(self.evaluator, POLICY_VALUE, pos.variant)
        moves = pos.legal_moves()
        if not moves:
            raise UBFMConfigError(f"no legal moves in {pos.fen()}")
        cfg = self.config
        reused = self._reuse(pos) if cfg.tree_reuse and self.root >= 0 and not self._pending else -1
        if reused < 0 or self.tree.n_nodes > cfg.max_tree_nodes or len(self.tree.pool) > _POOL_PER_NODE * cfg.max_tree_nodes:
            self.tree = Tree()
            reused = self.tree.new_node(-1, 0, pos.zobrist, 0.0)
        self.root = reused
        self.pos = pos
        self._root_ply = pos.ply()
        self._variant = pos.variant
        self._pending = vec[i64]()
        self._expanding = self._next = -1
        self._stopped = False
        self._best = None
        self._t0 = time.perf_counter()
        self._evals = self._seldepth = self._iterations = 0
        self._nodes = self.tree.subtree_size(self.root)
        self._single = moves[0] if len(moves) == 1 and cfg.stop_single_move else 0
        nothing = limits.nodes is None and limits.evals is None and limits.movetime is None and \
            limits.wtime is None and limits.btime is None and not limits.infinite
        self._node_limit = limits.nodes if limits.nodes is not None else (cfg.default_nodes if nothing else 0)
        self._eval_limit = limits.evals if limits.evals is not None else 0
        budget = None if limits.infinite else move_time(limits, pos.turn, pos.fullmove_number, cfg.time)
        self._deadline = 0.0 if budget is None else self._t0 + budget
        self._done = self._single != 0
        self._check_done()

    def _reuse(self, pos: Position) -> int:
        """The node of ``pos`` in the tree: up to 4 plies played since the previous root, each a
        child of the tree, and the same hash (-1: none)."""
        gap = pos.ply() - self._root_ply
        if gap < 0 or gap > 4:
            return -1
        stack = pos.move_stack
        node = self.root
        for m in stack[len(stack) - gap:]:
            node = self.tree.child_by_move(node, m)
            if node < 0:
                return -1
        state = self.tree.nd_state[node]
        if self.tree.nd_hash[node] != pos.zobrist or state == NEW or state == TERMINAL or state == DEFERRED:
            return -1
        return node

    # ------------------------------------------------------------------ ask / tell

    def ask(self) -> list[Leaf]:
        if self._done:
            return []
        if len(self._pending) > 0:
            raise EvaluatorError("UBFM.ask called again before tell answered the previous leaves")
        leaves: list[Leaf] = []
        while not self._done and not leaves:
            leaves = self._iterate()
        return leaves

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        pending = self._pending
        if len(evaluations) != len(pending):
            raise EvaluatorError(f"UBFM expected {len(pending)} evaluations, got {len(evaluations)}")
        tree = self.tree
        keep = self.config.priors
        for k in range(len(pending)):
            i = int(pending[k])
            ev = evaluations[k]
            tree.nd_value[i] = max(-_EST_MAX, min(_EST_MAX, float(ev.value)))
            tree.nd_state[i] = LEAF
            if keep:
                tree.nd_pol[i] = len(tree.pool)
                pool = tree.pool
                for p in ev.priors:
                    pool = append(pool, float(p))
                tree.pool = pool
        self._evals += len(pending)
        self._pending = vec[i64]()
        x = self._expanding
        self._expanding = -1
        self._backup(x)
        self._after_expansion(x)
        self._check_done()

    def done(self) -> bool:
        return self._done

    def stop(self) -> None:
        self._stopped = True
        if len(self._pending) == 0 and self.root >= 0 and self.tree.nd_state[self.root] == EXPANDED:
            self._finish()

    def _check_done(self) -> None:
        if self._done:
            if self._best is None:
                self._finish()
            return
        tree = self.tree
        root_open = tree.nd_state[self.root] != EXPANDED
        if self._stopped and not root_open:
            self._finish()
        elif not root_open and tree.closed(self.root):
            self._finish()
        elif self._deadline > 0.0 and time.perf_counter() >= self._deadline and not root_open:
            self._finish()

    def _finish(self) -> None:
        self._done = True
        self._best = self._make_result()

    # ------------------------------------------------------------------ one iteration

    def _iterate(self) -> list[Leaf]:
        """Descend to a node to expand and expand it: its children to evaluate ([] if none: the
        iteration is over, backed up), or the search ends (a limit, a closed root, a stuck descent)."""
        tree = self.tree
        cfg = self.config
        pos = self.pos
        node = self.root
        depth = 0
        if cfg.width > 0 and tree.nd_state[node] == NEW:  # its policy first: the widening ranks by it
            self._pending = vec[i64]()
            self._pending = append(self._pending, node)
            self._expanding = node
            return [Leaf.snapshot(pos, pos.legal_moves_vec(), 0)]
        start = self._next if cfg.descent else -1
        self._next = -1
        if start >= 0 and not tree.closed(start):
            line = vec[i64]()
            i = start
            while i != self.root:
                line = append(line, i)
                i = int(tree.nd_parent[i])
            tree.nd_n[self.root] += 1
            for k in range(len(line) - 1, 0, -1):
                tree.nd_n[line[k]] += 1
            for k in range(len(line) - 1, -1, -1):
                pos.push(int(tree.nd_move[line[k]]))
            node, depth = start, len(line)
        self._iterations += 1
        widen = False
        while tree.nd_state[node] == EXPANDED:
            tree.nd_n[node] += 1
            if tree.nd_defer[node] > 0 and widens(tree, node, cfg.width, cfg.widen):
                widen = True
                break
            c = self.tree.select(node, self.config.completion, self.config.prior_weight)
            if c < 0:  # every scored child closed: widen (completion closes a node with none deferred)
                widen = tree.nd_defer[node] > 0
                break
            pos.push(int(tree.nd_move[c]))
            depth += 1
            node = c
        if not widen:
            tree.nd_n[node] += 1
        if depth > self._seldepth:
            self._seldepth = depth
        leaves: list[Leaf] = []
        state = tree.nd_state[node]
        if widen:
            leaves = self._widen(node)
        elif state == TERMINAL or state == EXPANDED or tree.closed(node):
            # without completion a game's end (or the depth cap) was chosen: nothing will change
            self._finish()
        elif depth >= cfg.max_depth:
            tree.nd_frozen[node] = 1
            self._backup(node)
        else:
            leaves = self._expand(node, depth)
        for _ in range(depth):
            pos.pop()
        return leaves

    def _expand(self, node: int, depth: int) -> list[Leaf]:
        """Make every child of ``node`` (the position is at it): the ends scored, the others (or with
        ``width`` the W of largest prior) returned as leaves in one batch; or the search ends if they
        would pass a limit (not at the root's first expansion: a move needs it)."""
        tree = self.tree
        cfg = self.config
        moves = self.pos.legal_moves_vec()
        n = len(moves)
        pol = int(tree.nd_pol[node])
        if pol < 0 or pol + n > len(tree.pool):
            pol = -1
        if cfg.width == 0:
            if node != self.root and not self._fits(n, n):
                self._finish()
                return []
            leaves, pending = expand_all(tree, self.pos, node, moves, pol, cfg.mate_value, cfg.draw_value)
            self._nodes += n
            return self._send(node, leaves, pending)
        plan = plan_narrow(tree, self.pos, moves, pol, cfg.width)
        if node != self.root and not self._fits(plan.scored, plan.batch):
            self._finish()
            return []
        leaves, pending = make_narrow(tree, self.pos, node, moves, pol, plan, cfg.mate_value, cfg.draw_value)
        self._nodes += plan.scored
        return self._send(node, leaves, pending)

    def _fits(self, nodes: int, evals: int) -> bool:
        return not ((self._node_limit > 0 and self._nodes + nodes > self._node_limit) or
                    (self._eval_limit > 0 and self._evals + evals > self._eval_limit))

    def _widen(self, node: int) -> list[Leaf]:
        """Evaluate ``node``'s next ``width`` DEFERRED children by prior (one batch); or the search
        ends if they would pass a limit."""
        batch = self.tree.next_batch(node, self.config.width)
        if not self._fits(len(batch), len(batch)):
            self._finish()
            return []
        leaves, pending = widen_leaves(self.tree, self.pos, node, batch)
        self._nodes += len(batch)
        return self._send(node, leaves, pending)

    def _send(self, node: int, leaves: list[Leaf], pending: vec[i64]) -> list[Leaf]:
        """The leaves of ``node``'s expansion to the evaluator, or (none: only ends) backed up now."""
        if leaves:
            self._pending = pending
            self._expanding = node
        else:
            self._backup(node)
            self._after_expansion(node)
        return leaves

    def _after_expansion(self, node: int) -> None:
        """Descent: the next iteration goes on down from ``node``'s best open child."""
        if self.config.descent and not self.tree.closed(node):
            self._next = self.tree.select(node, self.config.completion, self.config.prior_weight)

    # ------------------------------------------------------------------ backup

    def _backup(self, node: int) -> None:
        """Recompute the values and resolutions from ``node`` up to the root."""
        tree = self.tree
        i = node
        while True:
            if tree.nd_state[i] == EXPANDED:
                self.tree.recompute(i, self.config.completion, self.config.mate_value, self.config.draw_value)
            if i == self.root:
                break
            i = int(tree.nd_parent[i])

    # ------------------------------------------------------------------ the move and the report

    def choose_move(self) -> int:
        """The final-move rule (the module docstring; the one place it is decided)."""
        if self._single:
            return self._single
        c = self._root_choice()
        return int(self.tree.nd_move[c]) if c >= 0 else 0

    def _root_choice(self) -> int:
        tree = self.tree
        root = self.root
        if tree.nd_state[root] != EXPANDED:
            return -1
        best = self.tree.best_child(root, self.config.completion)
        if self.config.final_move == "best":
            return best
        if self.config.completion:
            r = tree.nd_res[best]
            if r == LOSS or r == WIN:  # a proven win, or every move lost: the completed order decides
                return best
        c0 = int(tree.nd_child0[root])
        choice, most, choice_k = -1, -1, _NEG * 10
        for c in range(c0, c0 + int(tree.nd_nchild[root])):
            if tree.nd_state[c] == DEFERRED or (self.config.completion and tree.nd_res[c] == WIN):
                continue  # not scored, or proven lost for us: dropped while another move is left
            k = self.tree.order_key(c, self.config.completion)
            n = int(tree.nd_n[c])
            if n > most or (n == most and k > choice_k):
                choice, most, choice_k = c, n, k
        return choice if choice >= 0 else best

    def root_stats(self) -> list[tuple[int, int, float, float]]:
        """(move, n, value for the root's side to move, prior) of every scored root child."""
        tree = self.tree
        out: list[tuple[int, int, float, float]] = []
        if self.root < 0 or tree.nd_state[self.root] != EXPANDED:
            return out
        c0 = int(tree.nd_child0[self.root])
        for c in range(c0, c0 + int(tree.nd_nchild[self.root])):
            if tree.nd_state[c] == DEFERRED:
                continue
            out.append((int(tree.nd_move[c]), int(tree.nd_n[c]), -tree.nd_value[c], tree.nd_prior[c]))
        return out

    def counters(self) -> tuple[int, int, float, int]:
        """The tree's positions, this move's evaluator calls, seconds so far and selective depth."""
        return self._nodes, self._evals, time.perf_counter() - self._t0, self._seldepth

    def _make_result(self) -> SearchResult:
        elapsed = time.perf_counter() - self._t0
        tree = self.tree
        move = self.choose_move()
        if self._single or tree.nd_state[self.root] != EXPANDED:
            return SearchResult(best_move=move, nodes=self._nodes, evals=self._evals, time=elapsed, pv=[move],
                                depth=1, seldepth=self._seldepth)
        first = self._root_choice()
        pv = [move]
        c = first
        while tree.nd_state[c] == EXPANDED and len(pv) < 64:
            c = self.tree.best_child(c, self.config.completion)
            pv.append(int(tree.nd_move[c]))
        value = -tree.nd_value[first]
        mate: int | None = None
        r = tree.nd_res[first]
        if self.config.completion and r == LOSS:
            mate = (int(tree.nd_plies[first]) + 2) // 2
        elif self.config.completion and r == WIN:
            mate = -((int(tree.nd_plies[first]) + 1) // 2)
        v = max(-1.0, min(1.0, value))
        return SearchResult(best_move=move, value=v, cp=value_to_cp(v, self._variant), mate=mate, nodes=self._nodes,
                            evals=self._evals, time=elapsed, depth=len(pv), seldepth=self._seldepth, pv=pv)

    def result(self) -> SearchResult:
        if self._best is not None and self._done:
            return self._best
        if self.root < 0:
            raise UBFMConfigError("UBFM.result called before start")
        if self.tree.nd_state[self.root] != EXPANDED and not self._single:
            raise UBFMConfigError("UBFM.result called before the root was expanded")
        return self._make_result()


__all__ = ["DRAW", "EXPANDED", "FINAL_MOVES", "LEAF", "LOSS", "NEW", "TERMINAL", "UBFM", "UBFMConfig", "UBFMConfigError",
           "UNKNOWN", "WIN"]
