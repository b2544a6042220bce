"""The MCTS's settings: :class:`MCTSConfig` (every switch, CrazyAra 0.6.0 defaults) and its parts by
name (the table of parts: :mod:`search.parts`; notation in :mod:`search.mcts`).

Each piece is a setting by its flat name, in a small config of :class:`MCTSConfig` (CrazyAra 0.6.0's
defaults, or the paper's): batched leaves under virtual loss (:class:`Batching`); the move played (Q-value
selection, Q with principal variation, temperature, multi-PV: :class:`MoveChoice`); self-play's
exploration (Dirichlet noise, ε-greedy, KataGo's forced playouts, SixtyFour's prior noise:
:class:`Exploration`); what the tree knows (transpositions, fix checkmates, the MCTS-solver, reuse,
graph search: :class:`TreeParams`); when a search stops besides its limits (:class:`Stopping`); the
clock (:class:`search.timeman.TimeConfig`); and each part's own settings, beside its rule
(:mod:`search.parts`: PUCT's schedules, FPU, check enhancement and urgency in
:class:`search.puct.PUCTParams`; SixtyFour's constant; Gumbel's).  The presets: :meth:`MCTSConfig.sixtyfour`,
:meth:`MCTSConfig.gumbel`, :meth:`MCTSConfig.vanilla`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Final, TypeVar

from search import parts
from search.base import FLAT, OWN, range_error, with_settings
from search.timeman import TimeConfig

T = TypeVar("T", bound="MCTSConfig")
S = TypeVar("S")


class MCTSConfigError(ValueError):
    """A bad MCTS setting (one-line message)."""


def _positive(*named: tuple[str, float]) -> None:
    for name, v in named:
        if not v > 0:  # each divides: 0 would end every game in a ZeroDivisionError
            raise MCTSConfigError(f"{name} must be positive, got {v}")


#: the bounds of every integer field (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {
    "batch_size": (1, 4096), "q_pv_depth": (1, 256), "temperature_moves": (0, 10_000), "default_nodes": (1, 10**9),
    "max_tree_nodes": (1_000, 1 << 31), "max_playout_depth": (0, 1000),
    "multipv": (1, 500), "single_leaf_nodes": (0, 10**9),
}
#: bytes of tree memory per node, its edges included (128 a node + 25 an edge, some 35 legal moves in
#: chess; crazyhouse positions have more): UCI's Hash (MB) sets max_tree_nodes = Hash MiB / this
TREE_NODE_BYTES: Final = 1024


@dataclass
class Batching:
    """Leaves collected per step under virtual loss (CrazyAra: 8 leaves, virtual loss 3)."""

    batch_size: int = 8
    virtual_loss: float = 3.0
    # node (playout, evaluator-call) budgets up to this search one leaf at a time, larger ones and
    # time limits batch_size leaves a step (0: batch_size always; see MCTSConfig.batch_for); a spec
    # that names batch_size drops a built-in engine's single_leaf_nodes (engines.registry.complete)
    single_leaf_nodes: int = 0

    def validate(self) -> None:
        if self.virtual_loss < 0:
            raise MCTSConfigError("virtual_loss must not be negative")


@dataclass
class MoveChoice:
    """Which move is played: Q-value selection with the Qthresh schedule, Q with principal
    variation, temperature, multi-PV."""

    q_value_selection: bool = True
    q_factor: float = 0.7
    q_thresh_init: float = 0.5
    q_thresh_max: float = 0.9
    q_thresh_base: float = 1965.0
    q_pv: bool = True
    q_pv_depth: int = 5
    temperature: float = 0.0
    temperature_moves: int = 0  # > 0: temperature only for the first so many full moves
    # the temperature's draw over the visit shares (the policy target: pruned where pruning is on)
    # instead of final_policy's Q-mixed distribution (the greedy move keeps final_policy)
    temperature_visits: bool = False
    multipv: int = 1  # root moves reported with their Q and PV (UCI MultiPV); the move played is the first

    def validate(self) -> None:
        _positive(("q_thresh_base", self.q_thresh_base))
        if not 0.0 <= self.q_factor <= 1.0:
            raise MCTSConfigError("q_factor must be in [0, 1]")
        if self.temperature < 0:
            raise MCTSConfigError("temperature must be >= 0")


@dataclass
class Exploration:
    """Self-play's exploration: root Dirichlet noise, the ε-greedy starts, KataGo's forced playouts."""

    dirichlet_epsilon: float = 0.0  # 0.25 for self-play
    dirichlet_alpha: float = 0.2
    # ε-greedy exploration (Czech et al. 2021; search.mcts_explore; CrazyAra's UCI defaults are 0.05
    # and 0.01, off here so the 2020 defaults stay the default)
    epsilon_greedy: float = 0.0
    epsilon_checks: float = 0.0
    # KataGo's forced playouts (Wu 2019, section 3.1; self-play only): at the root of a full search
    # (not a playout-cap fast one) an edge with N(s, a) < sqrt(k · P(s, a) · N(s)) is visited first;
    # k = forced_playouts (2 in KataGo; 0: off).  policy_target_pruning takes them out of the target
    forced_playouts: float = 0.0
    policy_target_pruning: bool = False
    # SixtyFour's prior noise: uniform in +-b, b = prior_noise / (1 + (fullmove - 1) / prior_noise_decay)
    prior_noise: float = 0.0
    prior_noise_decay: float = 6.0

    def validate(self) -> None:
        _positive(("prior_noise_decay", self.prior_noise_decay), ("dirichlet_alpha", self.dirichlet_alpha))
        if not 0.0 <= self.prior_noise <= 1.0:
            raise MCTSConfigError(f"prior_noise (SixtyFour's b) must be from 0 to 1, got {self.prior_noise}")
        if not 0.0 <= self.dirichlet_epsilon <= 1.0:
            raise MCTSConfigError("dirichlet_epsilon must be in [0, 1]")
        if not (0.0 <= self.epsilon_greedy <= 1.0 and 0.0 <= self.epsilon_checks <= 1.0
                and self.epsilon_greedy + self.epsilon_checks <= 1.0):
            raise MCTSConfigError("epsilon_greedy and epsilon_checks must be in [0, 1], their sum at most 1")
        if not 0.0 <= self.forced_playouts <= 100.0:
            raise MCTSConfigError("forced_playouts (KataGo's k) must be from 0 to 100")
        if self.policy_target_pruning and self.forced_playouts <= 0:
            raise MCTSConfigError("policy_target_pruning removes forced playouts: set forced_playouts > 0 (KataGo: 2)")


@dataclass
class TreeParams:
    """What the tree knows: the transposition table, mates found at expansion, the MCTS-solver,
    reuse between moves, and Monte-Carlo graph search (Czech et al. 2021: transpositions share one
    node; a simulation reaching a node through an edge whose Q lags the node's by more than
    mcgs_q_eps backs up a correction instead of descending)."""

    transposition_table: bool = True
    fix_checkmates: bool = True
    solver: bool = True
    tree_reuse: bool = True
    mcgs: bool = False
    mcgs_q_eps: float = 0.01
    mate_value: float = 1.0  # the value of a proven win (SixtyFour scores mates 1.5)

    def validate(self) -> None:
        if self.mcgs_q_eps < 0:
            raise MCTSConfigError("mcgs_q_eps must be >= 0")


@dataclass
class Stopping:
    """When a search stops besides its limits (search.mcts_stop): one legal move, the default node
    budget, a full tree (UCI Hash); where a playout stops (SixtyFour's depth-limited playouts: 0
    unlimited, or from the clock by SixtyFour's table)."""

    stop_single_move: bool = True
    default_nodes: int = 800
    max_tree_nodes: int = 2_000_000  # the search stops when its tree holds this many nodes (UCI Hash)
    max_playout_depth: int = 0  # 0: unlimited
    playout_depth_from_clock: bool = False


@dataclass
class MCTSConfig:
    """The MCTS's settings (CrazyAra 0.6.0 / paper defaults): the rules by name and each rule's or
    feature's own small config.  The groups marked flat are set and read by their fields' own names
    (``MCTSConfig.of(cpuct_init=2)``, the option ``cpuct_init``: :func:`search.base.with_settings`),
    so every stored spec keeps resolving to the same search."""

    # the parts by name (search.parts.PARTS): the tree rule, the root rule ("puct", the tree rule at
    # the root and the final policy; "gumbel", Gumbel sampling with Sequential Halving) and the Q
    # transform ("mean": W/N with virtual losses)
    score_formula: str = "crazyara"
    root_rule: str = "puct"
    q_transform: str = "mean"
    batching: Batching = field(default_factory=Batching, metadata=FLAT)
    choice: MoveChoice = field(default_factory=MoveChoice, metadata=FLAT)
    exploration: Exploration = field(default_factory=Exploration, metadata=FLAT)
    # the parts' own settings ("module:Class" -> instance; search.parts): read with settings()
    own: dict[str, Any] = field(default_factory=parts.own_settings, metadata=OWN)
    tree: TreeParams = field(default_factory=TreeParams, metadata=FLAT)
    stopping: Stopping = field(default_factory=Stopping, metadata=FLAT)
    time: TimeConfig = field(default_factory=TimeConfig)

    @classmethod
    def of(cls: type[T], **settings: Any) -> T:
        """This config with ``settings`` by their flat names (``MCTSConfig.of(batch_size=1)``)."""
        return with_settings(cls(), settings)

    @classmethod
    def for_game(cls: type[T], game: str, **settings: Any) -> T:
        """``game``'s config (its own parts' settings and defaults: bughouse's seat), with ``settings``."""
        return with_settings(cls(own=parts.own_settings(game)), {**parts.game_defaults(game), **settings})

    def settings(self, cls: type[S]) -> S:
        """A part's own settings (``cfg.settings(SixtyFourParams)``: the class its record names)."""
        group: S = self.own[f"{cls.__module__}:{cls.__qualname__}"]
        return group

    def batch_for(self, budget: int | None) -> int:
        """Leaves a search step collects under a node, playout or evaluator-call ``budget`` (None: a
        time limit): 1 where the budget is at most ``single_leaf_nodes``, else ``batch_size``."""
        return 1 if budget is not None and 0 < budget <= self.batching.single_leaf_nodes else self.batching.batch_size

    @classmethod
    def sixtyfour(cls: type[T]) -> T:
        """The SixtyFour engine's search: its formula, prior noise, mate 1.5, depth from the clock."""
        return cls.of(score_formula="sixtyfour", sixtyfour_c=0.5, mate_value=1.5, fpu=0.0,
                   prior_noise=0.3, prior_noise_decay=6.0, playout_depth_from_clock=True,
                   q_value_selection=False, q_pv=False, u_divisor=False, check_enhancement=False,
                   cpuct_schedule=False, batch_size=1, virtual_loss=1.0, check_urgency=False)

    @classmethod
    def gumbel(cls: type[T]) -> T:
        """Gumbel AlphaZero's search (Danihelka et al. 2022): Gumbel-Top-k with Sequential Halving at
        the root, the deterministic improved-policy rule below it, the evaluator's priors as they
        are (no check enhancement), a fresh tree every move; the solver stays (mates)."""
        return cls.of(root_rule="gumbel", score_formula="gumbel", check_enhancement=False, q_value_selection=False,
                   q_pv=False, tree_reuse=False, check_urgency=False)

    @classmethod
    def vanilla(cls: type[T]) -> T:
        """Plain PUCT (AlphaZero-like): every CrazyAra modification off, Q init 0."""
        return cls.of(q_value_selection=False, q_pv=False, u_divisor=False, check_enhancement=False,
                   fix_checkmates=False, solver=False, fpu=0.0, check_urgency=False)

    def validate(self) -> None:
        """Each group checks its own settings; then the ranges, the rules' names and what one
        group's setting needs of another's."""
        bad = range_error(self, SPIN_RANGES) or self.time.validate()
        if bad is not None:
            raise MCTSConfigError(bad)
        for f in fields(self):
            check = getattr(getattr(self, f.name), "validate", None) if f.metadata.get("flat") else None
            if check is not None:
                check()
        for group in self.own.values():  # a game's seat also says what of the rest it cannot play
            getattr(group, "validate", lambda: None)()
            why = getattr(group, "refusal", lambda cfg: None)(self)
            if why is not None:
                raise MCTSConfigError(why)
        for option, kind, name in (("score_formula", "tree", self.score_formula), ("q_transform", "q", self.q_transform),
                                   ("root_rule", "root", self.root_rule)):
            if name not in parts.names(kind):
                raise MCTSConfigError(f"{option} must be one of {', '.join(parts.names(kind))}, got {name!r}")
        ex = self.exploration
        why = parts.load("search.mcts_rules:served")(self, {  # deferred: the rules' module imports this one
            "forced_playouts": ex.forced_playouts > 0, "policy_target_pruning": ex.policy_target_pruning,
            "temperature_visits": self.choice.temperature_visits, "epsilon_greedy": ex.epsilon_greedy > 0,
            "epsilon_checks": ex.epsilon_checks > 0})
        if why is not None:
            raise MCTSConfigError(why)
