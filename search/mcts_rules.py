"""The selection rules of the MCTS family (mctx's policies): the interior rule (:class:`TreeRule`:
which edge a simulation follows below the root) and the root rule (:class:`RootRule`: which edge
a simulation starts with, which move is played, the training target), each built from its own
settings of :class:`search.mcts_config.MCTSConfig` (mypyc-compiled; notation in :mod:`search.mcts`).

A new rule is a class in a file of its own and a line in the table of parts
(:data:`search.parts.PARTS`): CrazyAra's PUCT (:mod:`search.puct`), SixtyFour's score
(:mod:`search.sixtyfour`), Gumbel's Sequential Halving at the root (:mod:`search.gumbel`) and the
visit-count root (:class:`search.puct.VisitsRoot`).
"""
from __future__ import annotations

import math
import random
from typing import ClassVar

from mypy_extensions import i64, mypyc_attr

from search import parts
from search.mcts_config import MCTSConfig, MoveChoice
from search.qtransforms import QTransform
from search.mcts_tree import LOSS, UNKNOWN, WIN, _Tree


def q_thresh(cfg: MoveChoice, n: float) -> float:
    """``Qthresh(s)``: 0.5 for few visits, rising to 0.9."""
    return cfg.q_thresh_max - math.exp(-n / cfg.q_thresh_base) * (cfg.q_thresh_max - cfg.q_thresh_init)


def final_policy(cfg: MoveChoice, visits: list[int], qs: list[float]) -> list[float]:
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

@mypyc_attr(allow_interpreted_subclasses=True)  # a rule may live outside search/, uncompiled (docs/extending.md)
class TreeRule:
    """The selection hook: which edge a simulation follows from an expanded node (PUCT,
    SixtyFour's score, ...; :data:`search.parts.PARTS` names them).  A rule is built
    once per search from its config and may keep tables of its own.

    Shared by every rule: the solver's treatment of proven children (:meth:`proven`) and the choice
    when every edge is decided (:meth:`fallback`)."""

    #: whether checking edges are flagged at expansion (``_Tree.ed_check``) for this rule
    check_urgency: bool

    def __init__(self, cfg: MCTSConfig) -> None:
        self.cfg = cfg
        self.check_urgency = False
        self.solver = cfg.tree.solver or cfg.tree.fix_checkmates
        self.full_solver = cfg.tree.solver
        self.win_e: i64 = -1
        self.lose_e: i64 = -1
        #: the Q transform (:mod:`search.qtransforms`); None for "mean", which the rules compute inline
        self.q_of: QTransform | None = None if cfg.q_transform == "mean" else q_transform(cfg)

    def select(self, tree: _Tree, node: int) -> int:
        """The edge to follow from ``node`` (EXPANDED)."""
        raise NotImplementedError

    def select_run(self, tree: _Tree, node: int, lo: i64, hi: i64) -> int:
        """The edge to follow among ``node``'s edges ``lo .. hi - 1`` (a rule that serves two boards:
        one board's edges are a run, :class:`search.two_board_rules.BoardChoice`)."""
        raise NotImplementedError(f"{type(self).__name__} does not select within a run of edges")

    def proven(self, tree: _Tree, e: i64, child: i64) -> i64:
        """Solver: 0 if edge ``e`` (child ``child`` >= 0) is open; 1 if it is decided and is skipped
        (a proven win is remembered as the quickest, a proven loss as the longest, for
        :meth:`fallback`); 2 if it mates at once (fix checkmates: the caller returns it)."""
        if tree.mcgs:
            child = tree.nd_target[child]
        pr = tree.nd_proven[child]
        if pr == LOSS:
            if tree.nd_plies[child] == 0:
                return 2
            # A proven win is known; the visits go to the other moves (a shorter mate?).
            if self.win_e < 0 or tree.nd_plies[child] < tree.nd_plies[tree.target(tree.ed_child[self.win_e])]:
                self.win_e = e
            return 1
        if pr == WIN and self.full_solver:
            # Never walk into a proven loss while something else is open.
            if self.lose_e < 0 or tree.nd_plies[child] > tree.nd_plies[tree.target(tree.ed_child[self.lose_e])]:
                self.lose_e = e
            return 1
        return 0

    def fallback(self, best_e: i64, e0: i64) -> int:
        """The edge chosen: the best open one, else the quickest proven win, else the longest loss."""
        if best_e >= 0:
            return int(best_e)
        if self.win_e >= 0:
            return int(self.win_e)
        return int(self.lose_e) if self.lose_e >= 0 else int(e0)


@mypyc_attr(allow_interpreted_subclasses=True)  # a rule may live outside search/, uncompiled (docs/extending.md)
class RootRule:
    """The root's two decisions (mctx's root action selection and final action): which edge a
    simulation starts with (:meth:`select`, by default the tree rule's) and which move is played
    among the root's open edges (:meth:`choose`, called by :meth:`search.mcts.MCTS.choose_move`
    after the solver's verdicts).  :meth:`begin` sees the root once it is expanded (fresh or reused)
    with the search's node budget and injected random state.

    Self-play asks the rule, not its name: ``SELFPLAY``, the options that make it explore where a
    spec sets none (a value None: the variant's own, its Dirichlet alpha), and ``QUIET``, the options
    that turn that off (a reference search), and ``ROUNDS``, what the loop's rounds add besides; a
    rule without them plays self-play as it searches.  ``SERVES`` names the shared options that only
    some rules carry out (KataGo's forced playouts, ε-greedy starts)."""

    SELFPLAY: ClassVar[dict[str, str | None]] = {}
    QUIET: ClassVar[dict[str, str]] = {}
    ROUNDS: ClassVar[dict[str, str]] = {}
    #: the shared groups' options this rule carries out (each -> the tree rules it needs, () any);
    #: the config refuses one of them set with a root rule that does not (:func:`served`)
    SERVES: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(self, cfg: MCTSConfig, tree_rule: TreeRule) -> None:
        self.cfg = cfg
        self.tree_rule = tree_rule
        #: this move is a playout-cap fast search (``Limits.fast``, set by the driver every move)
        self.fast = False

    @staticmethod
    def describe(cfg: MCTSConfig) -> str:
        """The rule's own settings in a few words, for a report's notes ("" where nothing to say)."""
        return ""

    @staticmethod
    def one_phase(cfg: MCTSConfig, moves: int, budget: int) -> bool:
        """Does a search of ``budget`` among ``moves`` legal moves decide in one step (a value-greedy
        pick: Sequential Halving with one phase)?"""
        return False

    def begin(self, tree: _Tree, root: int, budget: int, rng: random.Random) -> None:
        pass

    def select(self, tree: _Tree, root: int) -> int:
        return self.tree_rule.select(tree, root)

    def select_run(self, tree: _Tree, root: int, lo: i64, hi: i64) -> int:
        """The edge a simulation starts with among the root's edges ``lo .. hi - 1`` (our board's at a
        bughouse seat: :class:`search.two_board_rules.SeatWrap`); by default the tree rule's."""
        return self.tree_rule.select_run(tree, root, lo, hi)

    def choose(self, tree: _Tree, root: int, candidates: list[int], rng: random.Random, fullmove: int) -> int:
        raise NotImplementedError

    def ranked(self, tree: _Tree, root: int, edges: list[int]) -> list[int]:
        """``edges`` best first by the final-move rule without randomness (multi-PV); by visits here."""
        return sorted(edges, key=lambda e: -tree.edge_n(e))

    def target(self, tree: _Tree, root: int) -> list[float]:
        """The policy training target over the root's edges, in edge order: AlphaZero's visit
        distribution ``N(a) / Σ_b N(b)`` (the priors while no edge is visited)."""
        e0 = int(tree.nd_edge0[root])
        k = int(tree.nd_nedges[root])
        ns = [float(tree.edge_n(e)) for e in range(e0, e0 + k)]
        total = sum(ns)
        if total <= 0.0:
            ns = [tree.ed_prior[e] for e in range(e0, e0 + k)]
            total = sum(ns)
        return [n / total for n in ns] if total > 0.0 else [1.0 / k] * k


def q_transform(cfg: MCTSConfig) -> QTransform:
    """The Q transform ``cfg.q_transform`` names; one with settings of its own is a factory given them."""
    p = parts.part("q", cfg.q_transform)
    impl = parts.load(p.impl)
    q: QTransform = impl(cfg.own[p.settings]) if p.settings else impl
    return q


def served(cfg: MCTSConfig, active: dict[str, bool]) -> str | None:
    """Why ``cfg`` cannot run: an option of ``active`` (option -> set) that some root rule serves
    (``RootRule.SERVES``) set with a root rule that does not, or with a tree rule it does not work
    with (a message); None when all is well."""
    serves = root_rule_class(cfg).SERVES
    known = {o for name in parts.names("root") for o in parts.implementation("root", name).SERVES}
    for option, on in active.items():
        if not on or option not in known:
            continue
        if option not in serves:
            who = [n for n in parts.names("root") if option in parts.implementation("root", n).SERVES]
            return f"{option} needs a root rule that carries it out (root_rule={' or '.join(who)})"
        trees = serves[option]
        if trees and cfg.score_formula not in trees:
            return f"{option} needs score_formula={' or '.join(trees)} with root_rule={cfg.root_rule}"
    return None


def make_rule(cfg: MCTSConfig) -> TreeRule:
    """The tree rule ``cfg.score_formula`` names (:data:`search.parts.PARTS`)."""
    rule: TreeRule = parts.implementation("tree", cfg.score_formula)(cfg)
    return rule


def root_rule_class(cfg: MCTSConfig) -> type[RootRule]:
    """The class of the root rule ``cfg.root_rule`` names: its facts (self-play's options, its notes)
    asked without a search."""
    cls: type[RootRule] = parts.implementation("root", cfg.root_rule)
    return cls


def make_root_rule(cfg: MCTSConfig, tree_rule: TreeRule) -> RootRule:
    """The root rule ``cfg.root_rule`` names (:data:`search.parts.PARTS`)."""
    rule: RootRule = root_rule_class(cfg)(cfg, tree_rule)
    return rule
