"""Exploration at the root and along the tree (mypyc-compiled; notation in :mod:`search.mcts`):
the root's prior noise and ε-greedy simulations.  Every random draw comes from the search's
injected ``random.Random``, in a fixed order, so a search replays from its seed.

- :func:`root_noise`: Dirichlet noise (AlphaZero; ``dirichlet_epsilon``, ``dirichlet_alpha``) and
  SixtyFour's uniform prior noise that decays with the move number (``prior_noise``,
  ``prior_noise_decay``) on the root's priors.
- ε-greedy exploration (Czech, Korus, Kersting 2021; CrazyAra's ``Centi_Epsilon_Greedy`` and
  ``Centi_Epsilon_Checks``; off by default): with probability ``epsilon_greedy`` a simulation starts
  d plies down the most visited line, P(d) = 2^-(d+1), stopping early before a node with fewer
  than 1/ε visits or a proven one (:func:`exploration_line`), and takes there a move the rule
  would not (:func:`exploration_edge`): the highest-prior unvisited move while the node has one,
  else one drawn uniformly (if that one is proven, the rule decides); with probability
  ``epsilon_checks`` the same, but the highest-prior unvisited check first.  Only the part below
  the start node is backed up (as CrazyAra): the statistics above it stay the policy's own.
"""
from __future__ import annotations

import math
import random

from librt.vecs import append, vec
from mypy_extensions import i64

from search.mcts_config import MCTSConfig
from search.mcts_tree import EXPANDED, UNKNOWN, _Tree


def root_noise(tree: _Tree, root: int, cfg: MCTSConfig, rng: random.Random, fullmove_number: int,
               noisy: bool = True) -> None:
    """Dirichlet noise and SixtyFour's uniform prior noise on the priors of the expanded ``root``
    (``noisy`` False: none, as a playout-cap fast search has none)."""
    e0 = int(tree.nd_edge0[root])
    k = int(tree.nd_nedges[root]) if noisy else 0
    if cfg.exploration.dirichlet_epsilon > 0.0 and k > 0:
        noise = [rng.gammavariate(cfg.exploration.dirichlet_alpha, 1.0) for _ in range(k)]
        total = sum(noise)
        if total > 0:
            eps = cfg.exploration.dirichlet_epsilon
            for i in range(k):
                tree.ed_prior[e0 + i] = (1.0 - eps) * tree.ed_prior[e0 + i] + eps * noise[i] / total
    if cfg.exploration.prior_noise > 0.0 and k > 0:
        b = cfg.exploration.prior_noise / (1.0 + (fullmove_number - 1) / cfg.exploration.prior_noise_decay)
        ps = [max(0.0, tree.ed_prior[e0 + i] + rng.uniform(-b, b)) for i in range(k)]
        total = sum(ps)
        if total > 0:
            for i in range(k):
                tree.ed_prior[e0 + i] = ps[i] / total
    if tree.nd_nedges[root] > 0:
        tree.nd_tail_from[root] = -1  # the tail's best edges are found again
        tree.nd_pmax[root] = math.nan


def exploring(cfg: MCTSConfig) -> bool:
    return cfg.exploration.epsilon_greedy > 0.0 or cfg.exploration.epsilon_checks > 0.0


def exploration_line(tree: _Tree, root: int, cfg: MCTSConfig, rng: random.Random) -> tuple[vec[i64], int]:
    """Whether this simulation explores, and from where: (the edges from the root to the start
    node, mode) with mode 0 (no exploration: the rule walks from the root), 1 (ε-greedy) or 2
    (ε-checks)."""
    u = rng.random()
    line = vec[i64]()
    checks = u < cfg.exploration.epsilon_checks
    if (not checks and u >= cfg.exploration.epsilon_checks + cfg.exploration.epsilon_greedy) or tree.nd_state[root] != EXPANDED \
            or tree.settled(root):
        return line, 0
    min_visits = round(1.0 / (cfg.exploration.epsilon_checks if checks else cfg.exploration.epsilon_greedy))
    goal = int(-math.log2(1.0 - rng.random()))
    node = root
    while len(line) < goal:
        e = tree.most_visited(node)
        nxt = tree.node_after(e)
        if nxt < 0 or tree.edge_n(e) < min_visits or tree.nd_state[nxt] != EXPANDED or tree.settled(nxt):
            break
        line = append(line, e)
        node = nxt
    return line, 2 if checks else 1


def exploration_edge(tree: _Tree, node: int, gives_check: vec[i64], checks: bool, rng: random.Random) -> int:
    """The edge an exploring simulation takes at ``node`` (see the module docstring), or -1 (the rule
    decides); ``gives_check``: 1/0 per edge of ``node`` when ``checks``."""
    e0: i64 = tree.nd_edge0[node]
    end: i64 = e0 + tree.nd_nedges[node]
    for want_check in ((True, False) if checks else (False,)):
        best: i64 = -1
        for e in range(e0, end):
            child = tree.node_after(e)
            if (child < 0 or tree.nd_proven[child] == UNKNOWN) and tree.edge_n(e) == 0 and tree.edge_vl(e) == 0 \
                    and (not want_check or gives_check[e - e0] != 0) and (best < 0 or tree.ed_prior[e] > tree.ed_prior[best]):
                best = e
        if best >= 0:
            return int(best)
    e = e0 + rng.randrange(int(end - e0))
    child = tree.node_after(e)
    return int(e) if child < 0 or tree.nd_proven[child] == UNKNOWN else -1
