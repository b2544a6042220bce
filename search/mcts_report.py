"""What an MCTS search reports (mypyc-compiled; notation in :mod:`search.mcts`): the root's
statistics, the principal variation, the search result with its multi-PV lines.  The move itself
is the driver's (:meth:`search.mcts.MCTS.choose_move`); this module only describes the tree.

- The PV follows, from the move played, a child's proven mate in one (solver or fix-checkmates),
  else the most visited edge (the first of equals), for at most 256 plies.
- The value is the move's Q (the root's own value if it was never visited), the exact result when
  the root is proven (mate in ``(plies + 1) // 2`` moves when won, ``-(plies // 2)`` when lost).
- Multi-PV (``multipv``, UCI MultiPV): the move played, then the visited root moves the root rule
  ranks next (:meth:`search.mcts_rules.RootRule.ranked`), each with its Q and PV.
"""
from __future__ import annotations

from evaluators.base import value_to_cp
from search.base import PVLine, SearchResult
from search.mcts_config import MCTSConfig
from search.mcts_rules import RootRule
from search.mcts_tree import DRAW, EXPANDED, LOSS, WIN, _Tree


def root_stats(tree: _Tree, root: int) -> list[tuple[int, int, float, float]]:
    """(move, N, Q, P) of every root edge (Q from the root's side to move); [] before expansion."""
    if root < 0 or tree.nd_state[root] != EXPANDED:
        return []
    e0 = int(tree.nd_edge0[root])
    return [(int(tree.ed_move[e]), tree.edge_n(e), tree.edge_q(e), tree.ed_prior[e])
            for e in range(e0, e0 + int(tree.nd_nedges[root]))]


def principal_variation(tree: _Tree, root: int, first: int, proofs: bool) -> list[int]:
    """The PV from root move ``first`` (``proofs``: the solver's mates are followed first)."""
    pv = [first]
    e0 = int(tree.nd_edge0[root])
    node = -1
    for e in range(e0, e0 + int(tree.nd_nedges[root])):
        if tree.ed_move[e] == first:
            node = tree.node_after(e)
    while node >= 0 and tree.nd_state[node] == EXPANDED and len(pv) < 256:
        x = -1
        e0 = int(tree.nd_edge0[node])
        for f in range(e0, e0 + int(tree.nd_nedges[node])):
            child = tree.node_after(f)
            if child >= 0 and tree.nd_proven[child] == LOSS and proofs:
                x = f
                break
            if tree.edge_n(f) > 0 and (x < 0 or tree.edge_n(f) > tree.edge_n(x)):
                x = f
        if x < 0:
            break
        pv.append(int(tree.ed_move[x]))
        node = tree.node_after(x)
    return pv


def search_result(tree: _Tree, root: int, cfg: MCTSConfig, root_rule: RootRule, variant: str, move: int,
                  nodes: int, evals: int, elapsed: float, seldepth: int) -> SearchResult:
    """The result of a search whose root is expanded and whose move is ``move``."""
    proofs = cfg.tree.solver or cfg.tree.fix_checkmates
    e0 = int(tree.nd_edge0[root])
    q = 0.0
    for e in range(e0, e0 + int(tree.nd_nedges[root])):
        if tree.ed_move[e] == move:
            q = tree.edge_q(e) if tree.edge_n(e) > 0 else tree.nd_value[root]
    mate: int | None = None
    pr = tree.nd_proven[root]
    if pr == WIN and proofs:
        mate = (int(tree.nd_plies[root]) + 1) // 2
        q = 1.0
    elif pr == LOSS and cfg.tree.solver:
        mate = -(int(tree.nd_plies[root]) // 2)
        q = -1.0
    elif pr == DRAW and cfg.tree.solver:
        q = 0.0
    q = max(-1.0, min(1.0, q))
    pv = principal_variation(tree, root, move, proofs)
    lines: list[PVLine] = []
    if cfg.choice.multipv > 1:
        ranked = root_rule.ranked(tree, root, list(range(e0, e0 + int(tree.nd_nedges[root]))))
        lines.append(PVLine(move, q, value_to_cp(q, variant), mate, pv))
        for e in [e for e in ranked if tree.ed_move[e] != move and tree.edge_n(e) > 0][: cfg.choice.multipv - 1]:
            qe, m = max(-1.0, min(1.0, tree.edge_q(e))), int(tree.ed_move[e])
            lines.append(PVLine(m, qe, value_to_cp(qe, variant), None, principal_variation(tree, root, m, proofs)))
    return SearchResult(best_move=move, value=q, cp=value_to_cp(q, variant), mate=mate, nodes=nodes, evals=evals,
                        time=elapsed, depth=len(pv), seldepth=seldepth, pv=pv, lines=lines)
