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
the root's first: a move needs it.  ``Limits.depth`` does not apply (the search has no depth).

Tree (structure of arrays, as :mod:`search.mcts_tree`; a node is an index)::

    nd_parent[i]  its parent (-1: the tree's first root)    nd_move[i]   the move into it
    nd_child0[i]  its first child (-1 until expanded); its children are nd_child0 .. + nd_nchild - 1
    nd_state[i]   NEW (sent to the evaluator), LEAF (evaluated), EXPANDED, TERMINAL
    nd_value[i]   v(s)      nd_res[i]  r(s)      nd_plies[i]  plies to the end when resolved
    nd_frozen[i]  1: closed unresolved (at max_depth, or every child closed)
    nd_n[i]       n(s)      nd_prior[i]  P of the move into it      nd_hash[i]  zobrist (tree reuse)
    nd_pol[i]     where its own policy starts in ``pool`` (-1: none kept), one float a legal move

Tree reuse keeps the arrays and moves the root (up to 4 plies on, each a child of the tree); a tree
that grew beyond ``max_tree_nodes`` nodes (or 24 kept policy floats a node on average) is dropped
at the next move's start.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Final, Sequence

from librt.vecs import append, vec
from mypy_extensions import i64, mypyc_attr

from board.position import END_DRAWN, END_LOST, END_NONE, Position
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, EvaluatorError, Leaf, require, value_to_cp
from search.base import Limits, Search, SearchResult, range_error
from search.timeman import TimeConfig, move_time

NEW: Final = 0
LEAF: Final = 1
EXPANDED: Final = 2
TERMINAL: Final = 3

UNKNOWN: Final = 0
WIN: Final = 1
LOSS: Final = 2
DRAW: Final = 3

#: the largest value an estimate may take: a game's end (mate_value >= 1) ranks above every one
_EST_MAX: Final = 1.0 - 1e-6
_NEG: Final = -1e9
#: the kept policies' floats a node may average before a reused tree is dropped (bounds its memory)
_POOL_PER_NODE: Final = 24

FINAL_MOVES: Final = ("safest", "best")

#: the bounds of every integer field (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {"default_nodes": (1, 10**9), "max_tree_nodes": (1_000, 1 << 31), "max_depth": (1, 1000)}


class UBFMConfigError(ValueError):
    """A bad UBFM setting (one-line message)."""


@dataclass
class UBFMConfig:
    """Switches and parameters of :class:`UBFM` (the module docstring defines each)."""

    completion: bool = True
    descent: bool = False
    final_move: str = "safest"  # FINAL_MOVES
    # keep each evaluated node's policy: the priors of its children when it is expanded (ties, and
    # the descent's prior_weight)
    priors: bool = True
    prior_weight: float = 0.0
    mate_value: float = 1.0
    draw_value: float = 0.0
    tree_reuse: bool = True
    stop_single_move: bool = True
    default_nodes: int = 4000
    max_tree_nodes: int = 1_000_000
    max_depth: int = 256
    time: TimeConfig = field(default_factory=TimeConfig)

    def validate(self) -> None:
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            raise UBFMConfigError(bad)
        if self.final_move not in FINAL_MOVES:
            raise UBFMConfigError(f"final_move must be one of {', '.join(FINAL_MOVES)}, got {self.final_move!r}")
        if not 0.0 <= self.prior_weight <= 100.0:
            raise UBFMConfigError(f"prior_weight must be from 0 to 100, got {self.prior_weight}")
        if not 1.0 <= self.mate_value <= 100.0:
            raise UBFMConfigError(f"mate_value must be from 1 to 100, got {self.mate_value}")
        if not -1.0 < self.draw_value < 1.0:
            raise UBFMConfigError(f"draw_value must be between -1 and 1, got {self.draw_value}")
        if self.priors is False and self.prior_weight > 0:
            raise UBFMConfigError("prior_weight needs priors=true (the priors it weighs)")
        bad_time = self.time.validate()
        if bad_time is not None:
            raise UBFMConfigError(bad_time)


class _Tree:
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
        count = 0
        stack = [root]
        while stack:
            i = stack.pop()
            count += 1
            c0 = int(self.nd_child0[i])
            if c0 >= 0:
                for c in range(c0, c0 + int(self.nd_nchild[i])):
                    stack.append(c)
        return count


@mypyc_attr(allow_interpreted_subclasses=True)
class UBFM(Search):
    """Unbounded Best-First Minimax with completion (module docstring); evaluator: POLICY_VALUE."""

    def __init__(self, evaluator: Evaluator, config: UBFMConfig | None = None) -> None:
        require(evaluator, POLICY_VALUE)
        self.evaluator = evaluator
        self.config = config if config is not None else UBFMConfig()
        self.config.validate()
        self.tree = _Tree()
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
        self.tree = _Tree()
        self.root = -1

    def start(self, pos: Position, limits: Limits) -> None:
        require(self.evaluator, POLICY_VALUE, pos.variant)
        moves = pos.legal_moves()
        if not moves:
            raise UBFMConfigError(f"no legal moves in {pos.fen()}")
        cfg = self.config
        reused = self._reuse(pos) if cfg.tree_reuse and self.root >= 0 and not self._pending else -1
        if reused < 0 or self.tree.n_nodes > cfg.max_tree_nodes or len(self.tree.pool) > _POOL_PER_NODE * cfg.max_tree_nodes:
            self.tree = _Tree()
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
        if self.tree.nd_hash[node] != pos.zobrist or state == NEW or state == TERMINAL:
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
        while tree.nd_state[node] == EXPANDED:
            tree.nd_n[node] += 1
            c = self._select(node)
            if c < 0:  # completion keeps no expanded unclosed node without an open child: cannot happen
                break
            pos.push(int(tree.nd_move[c]))
            depth += 1
            node = c
        tree.nd_n[node] += 1
        if depth > self._seldepth:
            self._seldepth = depth
        leaves: list[Leaf] = []
        state = tree.nd_state[node]
        if state == TERMINAL or tree.closed(node):
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

    def _select(self, node: int) -> int:
        """The child the descent takes: the best in the completed order among the open ones
        (without completion: among all), ties by prior then generation order; -1 if none."""
        tree = self.tree
        completion = self.config.completion
        w = self.config.prior_weight
        c0 = int(tree.nd_child0[node])
        best = -1
        best_s = _NEG
        best_p = -1.0
        for c in range(c0, c0 + int(tree.nd_nchild[node])):
            if completion and tree.closed(c):
                continue
            s = -tree.nd_value[c] + w * tree.nd_prior[c]
            p = tree.nd_prior[c]
            if s > best_s or (s == best_s and p > best_p):
                best, best_s, best_p = c, s, p
        return best

    def _expand(self, node: int, depth: int) -> list[Leaf]:
        """Make every child of ``node`` (the position is at it); the terminal ones scored, the others
        returned as leaves (all in one batch), or the search ends if they would pass a limit."""
        tree = self.tree
        pos = self.pos
        cfg = self.config
        moves = pos.legal_moves_vec()
        n = len(moves)
        if node != self.root:
            # not the root's (a move needs it): only if every child fits within the limits
            if (self._node_limit > 0 and self._nodes + n > self._node_limit) or \
                    (self._eval_limit > 0 and self._evals + n > self._eval_limit):
                self._finish()
                return []
        pol = int(tree.nd_pol[node])
        use_pol = pol >= 0 and pol + n <= len(tree.pool)
        c0 = tree.n_nodes
        leaves: list[Leaf] = []
        pending = vec[i64]()
        for k in range(n):
            m = int(moves[k])
            pos.push(m)
            c = tree.new_node(node, m, pos.zobrist, tree.pool[pol + k] if use_pol else 0.0)
            child_moves = pos.legal_moves_vec()
            end = pos.search_end(len(child_moves) > 0, True)
            if end != END_NONE:
                tree.nd_state[c] = TERMINAL
                if end == END_DRAWN:
                    tree.nd_res[c] = DRAW
                    tree.nd_value[c] = cfg.draw_value
                elif end == END_LOST:
                    tree.nd_res[c] = LOSS
                    tree.nd_value[c] = -cfg.mate_value
                else:
                    tree.nd_res[c] = WIN
                    tree.nd_value[c] = cfg.mate_value
            else:
                pending = append(pending, c)
                leaves.append(Leaf.snapshot(pos, child_moves, 0))
            pos.pop()
        tree.nd_child0[node] = c0
        tree.nd_nchild[node] = n
        tree.nd_state[node] = EXPANDED
        self._nodes += n
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
            self._next = self._select(node)

    # ------------------------------------------------------------------ backup

    def _backup(self, node: int) -> None:
        """Recompute the values and resolutions from ``node`` up to the root."""
        tree = self.tree
        i = node
        while True:
            if tree.nd_state[i] == EXPANDED:
                self._recompute(i)
            if i == self.root:
                break
            i = int(tree.nd_parent[i])

    def _recompute(self, i: int) -> None:
        """``v(i)``, ``r(i)`` (completion) and whether ``i`` is frozen, from its children."""
        tree = self.tree
        cfg = self.config
        c0 = int(tree.nd_child0[i])
        n = int(tree.nd_nchild[i])
        if not cfg.completion:
            best = _NEG
            for c in range(c0, c0 + n):
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
            tree.nd_value[i] = cfg.mate_value
        elif unresolved == 0 and drawn > 0:
            tree.nd_res[i] = DRAW
            tree.nd_plies[i] = 0
            tree.nd_value[i] = cfg.draw_value
        elif unresolved == 0:
            tree.nd_res[i] = LOSS
            tree.nd_plies[i] = loss_plies
            tree.nd_value[i] = -cfg.mate_value
        else:
            tree.nd_res[i] = UNKNOWN
            tree.nd_value[i] = open_best
            tree.nd_frozen[i] = 1 if frozen == unresolved else 0

    # ------------------------------------------------------------------ the move and the report

    def _order_key(self, c: int) -> float:
        """A child's place in the completed order from its parent's point of view (larger: better)."""
        tree = self.tree
        if self.config.completion:
            r = tree.nd_res[c]
            if r == LOSS:
                return 4e6 - float(tree.nd_plies[c])
            if r == WIN:
                return -4e6 + float(tree.nd_plies[c])
        return -tree.nd_value[c]

    def _best_child(self, node: int) -> int:
        tree = self.tree
        c0 = int(tree.nd_child0[node])
        best, best_k, best_p = -1, _NEG * 10, -1.0
        for c in range(c0, c0 + int(tree.nd_nchild[node])):
            k = self._order_key(c)
            p = tree.nd_prior[c]
            if k > best_k or (k == best_k and p > best_p):
                best, best_k, best_p = c, k, p
        return best

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
        best = self._best_child(root)
        if self.config.final_move == "best":
            return best
        if self.config.completion:
            r = tree.nd_res[best]
            if r == LOSS or r == WIN:  # a proven win, or every move lost: the completed order decides
                return best
        c0 = int(tree.nd_child0[root])
        choice, most, choice_k = -1, -1, _NEG * 10
        for c in range(c0, c0 + int(tree.nd_nchild[root])):
            if self.config.completion and tree.nd_res[c] == WIN:
                continue  # proven lost for us: dropped while another move is left
            k = self._order_key(c)
            n = int(tree.nd_n[c])
            if n > most or (n == most and k > choice_k):
                choice, most, choice_k = c, n, k
        return choice if choice >= 0 else best

    def root_stats(self) -> list[tuple[int, int, float, float]]:
        """(move, n, value for the root's side to move, prior) of every root child."""
        tree = self.tree
        out: list[tuple[int, int, float, float]] = []
        if self.root < 0 or tree.nd_state[self.root] != EXPANDED:
            return out
        c0 = int(tree.nd_child0[self.root])
        for c in range(c0, c0 + int(tree.nd_nchild[self.root])):
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
            c = self._best_child(c)
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


__all__ = ["UBFM", "UBFMConfig", "UBFMConfigError", "FINAL_MOVES"]
