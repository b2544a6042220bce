"""Toys written outside search/, to show (tests/test_extending.py) that a new tree rule is one class
and one line in the table of parts, :data:`search.parts.PARTS` (the edge with the fewest visits,
highest prior first among equals, with the solver's verdicts as every rule has them), a new stopper
one class and one line there, and a new Q transform one function and one line."""
from __future__ import annotations

from search.mcts_rules import TreeRule
from search.mcts_stop import Stopper, Stoppers
from search.mcts_tree import EXPANDED, _Tree


class FewestVisits(TreeRule):
    #: selections made by any instance (the test checks the rule ran)
    selections = 0

    def select(self, tree: _Tree, node: int) -> int:
        e0 = int(tree.nd_edge0[node])
        return self.select_run(tree, node, e0, e0 + int(tree.nd_nedges[node]))

    def select_run(self, tree: _Tree, node: int, lo: int, hi: int) -> int:  # type: ignore[override]
        """The same rule among the edges ``lo .. hi - 1``: with it the rule serves two boards too."""
        FewestVisits.selections += 1
        self.win_e = -1
        self.lose_e = -1
        e0 = int(lo)
        best_e, best = -1, (0.0, 0.0)
        for e in range(e0, int(hi)):
            child = int(tree.ed_child[e])
            visits = 0.0
            if child >= 0:
                if self.solver:
                    verdict = self.proven(tree, e, child)
                    if verdict == 2:  # mates at once
                        return e
                    if verdict == 1:  # decided: skipped
                        continue
                visits = float(tree.nd_n[child] + tree.nd_vl[child])
            key = (visits, -float(tree.ed_prior[e]))
            if best_e < 0 or key < best:
                best_e, best = e, key
        return self.fallback(best_e, e0)


def fewest_visits_run(cfg: object, lazybug: object) -> FewestVisits:
    """The toy rule's two-board form, named by its record (the rule's own ``select_run`` would serve as well)."""
    return FewestVisits(cfg)  # type: ignore[arg-type]


class CannotBeOvertaken(Stopper):
    """A toy stopper (lc0's smart pruning, in its simplest form): the move ends once the most visited
    root move leads the second by more visits than the node limit has left."""

    #: times it ended a move (the test checks it did)
    fired = 0

    def should_stop(self, s: Stoppers, tree: _Tree, root: int, nodes: int, evals: int, elapsed: float,
                    last_q: float | None) -> bool:
        if s.node_limit <= 0 or tree.nd_state[root] != EXPANDED:
            return False
        e0 = int(tree.nd_edge0[root])
        visits = sorted((tree.edge_n(e) for e in range(e0, e0 + int(tree.nd_nedges[root]))), reverse=True)
        if len(visits) > 1 and visits[0] - visits[1] > s.node_limit - nodes:
            CannotBeOvertaken.fired += 1
            return True
        return False


#: calls of the toy Q transform (the test checks the rules read it)
PESSIMISTIC_CALLS = [0]


def pessimistic(tree: _Tree, child: int, inflight: float) -> float:
    """A toy Q transform: the mean with one more visit of value -1 (a visited edge looks worse the
    fewer visits it has)."""
    PESSIMISTIC_CALLS[0] += 1
    return (tree.nd_w[child] - inflight - 1.0) / (float(tree.nd_n[child]) + inflight + 1.0)

