"""When an MCTS move ends: the move's limits resolved once (:class:`Stoppers`), then a chain of small
stoppers (:class:`Stopper`, as lc0's ``ChainedSearchStopper``), each asked after every batch
(mypyc-compiled; notation in :mod:`search.mcts`); a new stopper is a class and a line in
:data:`search.parts.PARTS` (kind "stop").

The stoppers, in the order they are asked:

- ``stop`` from outside (UCI ``stop``);
- the root settled (solver or fix-checkmates): lost, drawn, won by mate in one, or won by a
  longer mate and searched on for as many simulations again as the proof took (at least 1000),
  looking for a shorter one;
- the tree full (``max_tree_nodes``, UCI Hash);
- the node limit (``Limits.nodes``: the root's visits, reused ones included; ``Limits.playouts``:
  new simulations), with no limit at all ``default_nodes``;
- the evaluator-call limit (``Limits.evals``), which caps simulations that need no evaluation at
  16 per call plus 1000, so a solved or repetitive tree stays finite;
- time (:class:`search.timeman.TimeControl`): the allocated time, an early stop in easy positions
  (:func:`is_easy`) and an extension in critical ones (:func:`is_critical`);
- one legal move (``stop_single_move``): no search at all.

``Limits.depth`` is not a stopper: it caps the depth of every simulation (``playout_depth``).
"""
from __future__ import annotations

from typing import Final

from mypy_extensions import mypyc_attr

from search.base import Limits
from search import parts
from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_tree import EXPANDED, UNKNOWN, _Tree
from search.timeman import TimeControl, move_time


# SixtyFour's search depth by seconds left on the clock (more than the key: the depth).
SIXTYFOUR_DEPTHS: Final = [(750.0, 20), (300.0, 15), (120.0, 12), (60.0, 10), (10.0, 4)]


def simulation_cap(nodes: int | None, playouts: int | None, visits0: int) -> int:
    """The new simulations a move may run: a node limit caps the root's visits, the ``visits0`` a
    reused root brings included; a playout limit caps the new ones (<= 0: none left)."""
    caps: list[int] = [1 << 62]
    if nodes is not None:
        caps.append(nodes - visits0)
    if playouts is not None:
        caps.append(playouts)
    return min(caps)


def playout_depth_for_clock(seconds_left: float) -> int:
    """SixtyFour's playout depth for the seconds left on the clock (0 = no search below 10 s)."""
    for limit, depth in SIXTYFOUR_DEPTHS:
        if seconds_left > limit:
            return depth
    return 0

class Stoppers:
    """One move's limits (set by :meth:`begin`) and the stoppers over them."""

    def __init__(self, cfg: MCTSConfig) -> None:
        self.cfg = cfg
        self.node_limit = 0  # cap on new simulations (0: none), from the node and playout limits
        self.eval_limit = 0  # cap on evaluator calls (0: none)
        self.batch = cfg.batching.batch_size  # leaves a step (MCTSConfig.batch_for)
        self.playout_depth = 0  # depth cap of a simulation (0: none)
        self.time: TimeControl | None = None
        self.single_move = 0  # the one legal move when the search is skipped, else 0
        self.spent_out = False  # a reused root has the visits the limit asks for already
        self.proven_at = -1  # simulations when the root was proven won (-1: not proven)
        self.chain = make_chain()  # the stoppers asked after every batch, in order (the "stop" parts)

    def begin(self, limits: Limits, turn: int, fullmove: int, moves: list[int], visits0: int) -> None:
        """Resolve ``limits`` for the search of a position (``turn`` to move at full move ``fullmove``,
        legal ``moves``) whose root has ``visits0`` visits already."""
        cfg = self.cfg
        self.proven_at = -1
        if limits.nodes is not None and limits.nodes < 1:
            raise MCTSConfigError(f"node limit must be positive, got {limits.nodes}")
        if limits.playouts is not None and limits.playouts < 1:
            raise MCTSConfigError(f"playout limit must be positive, got {limits.playouts}")
        budget = None if limits.infinite else move_time(limits, turn, fullmove, cfg.time)
        remaining = limits.wtime if turn == 0 else limits.btime
        self.time = TimeControl(budget, cfg.time, remaining, limits.movetime is not None) if budget is not None else None
        if limits.evals is not None and limits.evals < 1:
            raise MCTSConfigError(f"evaluator-call limit must be positive, got {limits.evals}")
        self.eval_limit = limits.evals if limits.evals is not None else 0
        self.batch = cfg.batch_for(limits.nodes or limits.playouts or limits.evals)
        cap = simulation_cap(limits.nodes, limits.playouts, visits0)
        self.spent_out = cap <= 0
        if limits.nodes is not None or limits.playouts is not None:
            self.node_limit = max(1, cap)
        elif self.eval_limit > 0:
            self.node_limit = 16 * self.eval_limit + 1000
        elif budget is None and not limits.infinite:
            self.node_limit = cfg.stopping.default_nodes
        else:
            self.node_limit = 0
        self.playout_depth = cfg.stopping.max_playout_depth
        if cfg.stopping.playout_depth_from_clock and remaining is not None:
            self.playout_depth = playout_depth_for_clock(remaining)
        if limits.depth is not None:
            if limits.depth < 1:
                raise MCTSConfigError(f"depth limit must be at least 1, got {limits.depth}")
            self.playout_depth = limits.depth if self.playout_depth == 0 else min(self.playout_depth, limits.depth)
        self.single_move = moves[0] if len(moves) == 1 and cfg.stopping.stop_single_move else 0

    def root_budget(self, visits0: int) -> int:
        """The root's visits when the search ends, as far as the limits tell (the root rule's budget)."""
        return visits0 + self.node_limit if self.node_limit > 0 else self.cfg.stopping.default_nodes

    def step_size(self, nodes: int, evals: int) -> int:
        """How many leaves the next batch may send (the batch, less what the limits have left)."""
        want = self.batch
        if self.node_limit > 0:
            want = min(want, self.node_limit - nodes)
        if self.eval_limit > 0:
            want = min(want, self.eval_limit - evals)
        return want

    def step_full(self, nodes: int, evals: int, pending: int) -> bool:
        """The leaves in flight reach a limit: collect no more this step."""
        return (self.node_limit > 0 and nodes + pending >= self.node_limit) or \
            (self.eval_limit > 0 and evals + pending >= self.eval_limit)

    def root_settled(self, tree: _Tree, root: int, nodes: int) -> bool:
        """The root is decided (the second stopper above)."""
        if not (self.cfg.tree.solver or self.cfg.tree.fix_checkmates):
            return False
        if tree.nd_proven[root] == UNKNOWN:
            self.proven_at = -1
            return False
        if tree.settled(root):
            return True
        if self.proven_at < 0:
            self.proven_at = nodes
        return nodes >= 2 * self.proven_at + 1000

    def should_stop(self, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        """Any stopper of the chain but ``stop`` fires, asked in order (``last_q``: the last move's Q
        for the side to move now, or None when there is none)."""
        for stopper in self.chain:
            if stopper.should_stop(self, tree, root, nodes, evals, elapsed, last_q):
                return True
        return False


@mypyc_attr(allow_interpreted_subclasses=True)  # a stopper may live outside search/, uncompiled
class Stopper:
    """One condition that ends a move (lc0's ``SearchStopper``): asked after every batch with the
    move's resolved limits (``s``) and where the search stands.  A new stopper is a subclass and a
    line in :data:`search.parts.PARTS` (kind "stop")."""

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        raise NotImplementedError


class RootSettledStopper(Stopper):
    """The root is decided (solver or fix-checkmates; :meth:`Stoppers.root_settled`)."""

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        return s.root_settled(tree, root, nodes)


class TreeFullStopper(Stopper):
    """The tree holds ``max_tree_nodes`` (UCI Hash)."""

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        return tree.n_nodes >= s.cfg.stopping.max_tree_nodes


class NodeLimitStopper(Stopper):
    """The node or playout limit (or ``default_nodes``) is reached."""

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        return s.node_limit > 0 and nodes >= s.node_limit


class EvalLimitStopper(Stopper):
    """The evaluator-call limit is reached."""

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        return s.eval_limit > 0 and evals >= s.eval_limit


class TimeStopper(Stopper):
    """The allocated time is spent, sooner in an easy position, later in a critical one."""

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        if s.time is None or tree.nd_state[root] != EXPANDED:
            return False
        critical = last_q is not None and is_critical(tree, root, last_q, s.cfg.time.critical_drop)
        return s.time.should_stop(elapsed, is_easy(tree, root, s.cfg.time.easy_prior), critical)


def make_chain() -> list[Stopper]:
    """One instance of every stopper of the table of parts (:data:`search.parts.PARTS`), in its order."""
    return [parts.implementation("stop", name)() for name in parts.names("stop")]


def is_easy(tree: _Tree, root: int, easy_prior: float) -> bool:
    """The prior's top move has more than ``easy_prior`` and is still the best by Q."""
    e0 = int(tree.nd_edge0[root])
    k = int(tree.nd_nedges[root])
    top_e = e0
    best_q_e = e0
    for e in range(e0, e0 + k):
        if tree.ed_prior[e] > tree.ed_prior[top_e]:
            top_e = e
        if tree.edge_n(e) > 0 and (tree.edge_n(best_q_e) == 0 or tree.edge_q(e) > tree.edge_q(best_q_e)):
            best_q_e = e
    return tree.ed_prior[top_e] > easy_prior and top_e == best_q_e


def is_critical(tree: _Tree, root: int, last_q: float, drop: float) -> bool:
    """The most visited move's Q fell more than ``drop`` below the last move's Q."""
    return tree.edge_q(tree.most_visited(root)) < last_q - drop
