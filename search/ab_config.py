"""The settings of :class:`search.alphabeta.AlphaBeta` (mypyc-compiled): :class:`ABConfig`, the bounds of
its integer fields (:data:`SPIN_RANGES`, checked by ``validate`` and announced as UCI spin bounds) and
the size of a transposition-table slot (UCI's Hash).

The switches off by default, in detail (the others: :mod:`search.alphabeta`):

- null-move pruning (``null_move``, off by default): at a node ``depth >= 3`` plies from the frontier,
  not in check, whose static score is ``>= beta`` and whose side to move has a piece other than pawns
  and king (on the board or in hand), the opponent moves twice: a null-window search ``1 + R`` plies
  shallower (``R = null_move_r``, one more from depth 7) that still scores ``>= beta`` cuts the node;
  never two null moves in a row;
- late-move reductions (``lmr``, off by default): at ``depth >= 3``, not in check, each move after the
  first ``lmr_moves`` that is quiet (no capture, promotion, check or killer) is searched one ply
  shallower (two from ``depth >= 6`` after ``4 lmr_moves`` moves) with the null window, and again at
  full depth when it beats alpha; the others keep their full depth (both: Stockfish's and Sjeng's
  idea; the search is no longer exactly minimax). Measured: not shown to help at equal nodes (crazyhouse,
  ``reports/ab-pruning/``; bughouse, ``reports/bughouse-ab-deep/``), so off by default; the bughouse
  team ``bughouse-ab-deep`` uses both (``reports/bughouse-vs-sjeng/``);
- batched leaves (``batch_leaves``, for network evaluators): a node one ply above the frontier scores
  all its children in one evaluator call before searching them, and a quiescence node its captures
  that delta pruning lets through; :meth:`search.alphabeta._Core.static_eval` then finds the score kept by raw state.
  The tree searched is the same as one position at a time (the same scores, so the same cutoffs:
  exactly so where the evaluator's outputs do not depend on the batch, as ONNX Runtime's and padded
  TorchScript's); the calls are batched, and ``evals`` counts every position sent, those a cutoff made
  useless included.  Measured with RISE in crazyhouse (5 middlegame positions, 0.1 s a move, one
  thread): TorchScript 550 positions/s one at a time, 635 batched (2.2 positions sent per position
  searched); ONNX Runtime 1,620 one at a time, 1,134 batched: cutoffs waste more than the batch saves,
  so the option is off by default and the faster backend is the gain;
- the policy-guided alpha-beta (for evaluators that serve ``POLICY_VALUE``: a network's policy head):
  ``policy_order`` orders the moves of every node by the evaluator's priors there (the transposition
  move first), not only the root's (``root_priors``); a node's policy and value come from one
  evaluator call, kept by raw state, and with ``batch_leaves`` a frontier parent's children are
  evaluated in one call that gives each its score and its policy (used when iterative deepening
  searches it again as an interior node); ``policy_prune`` = f > 0: at a node not in check, a move
  after the first whose prior is below f times the node's largest prior is not searched at the
  frontier (depth 1) and is searched one ply shallower above it, again at full depth when it beats
  alpha (late-move reductions by prior); ``qs_eval = "root"``: quiescence calls the evaluator at its
  root only and scores the positions below it by that score plus the material won since (pawn 100,
  knight 320, bishop 330, rook 500, queen 900, pieces in hand counted), so a capture sequence costs
  one call.  Each switch's worth at equal evaluator calls: docs/minimax.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from search.ab_order import MAX_PLY
from search.base import range_error

EVAL_CLAMP: Final = 20000
#: quiescence's stand-pat score: the evaluator's at every node, or at the quiescence search's root
#: only, with the material won or lost below it added (the network called once a frontier node)
QS_EVALS: Final = ("network", "root")


class SearchConfigError(ValueError):
    """A bad search setting (one-line message)."""


#: the bounds of every integer field (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {
    "max_depth": (1, MAX_PLY // 2), "default_nodes": (1, 10**9), "tt_size": (1, 1 << 30), "qs_max_ply": (0, 64),
    "qs_evasion_plies": (0, 64), "delta_margin": (0, EVAL_CLAMP), "qs_check_drop_plies": (0, 64),
    "qs_max_drops": (0, 256), "draw_score": (-1000, 1000), "time_check_interval": (1, 1 << 20), "multipv": (1, 500),
    "null_move_r": (1, 6), "lmr_moves": (1, 256),
}


#: bytes of one transposition-table slot (a key word and a data word): UCI's Hash (MB) sets tt_size
#: to the largest power of two slots that fit
TT_SLOT_BYTES: Final = 16


@dataclass
class ABConfig:
    """Switches and parameters of :class:`AlphaBeta`."""

    max_depth: int = 64
    default_nodes: int = 200_000
    tt_size: int = 1 << 18
    use_tt: bool = True
    pvs: bool = True
    quiescence: bool = True
    qs_max_ply: int = 16
    qs_evasion_plies: int = 4
    delta_margin: int = 200
    qs_check_drop_plies: int = 2
    qs_max_drops: int = 8
    killers: bool = True
    history: bool = True
    order_checks: bool = False
    check_extension: bool = True
    null_move: bool = False
    null_move_r: int = 2
    lmr: bool = False
    lmr_moves: int = 3
    root_priors: bool = False
    draw_score: int = 0
    time_check_interval: int = 512
    multipv: int = 1  # root moves searched with exact scores and reported (UCI MultiPV)
    # score a frontier node's children (and a quiescence node's capture children) in one evaluator
    # call before searching them (Evaluator.score_many); the search is the same, the calls batched
    batch_leaves: bool = False
    # the policy-guided alpha-beta for networks (evaluators serving POLICY_VALUE; the module docstring):
    # every node's moves ordered by its policy, moves below a share of the node's top prior pruned at
    # the frontier and reduced above it, quiescence's stand-pat from the network at its root only
    policy_order: bool = False
    policy_prune: float = 0.0
    qs_eval: str = "network"  # QS_EVALS

    def validate(self) -> None:
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            raise SearchConfigError(bad)
        if not 0.0 <= self.policy_prune <= 1.0:
            raise SearchConfigError(f"policy_prune must be from 0 to 1, got {self.policy_prune}")
        if self.policy_prune > 0 and not self.policy_order:
            raise SearchConfigError("policy_prune needs policy_order=true (the priors it compares)")
        if self.qs_eval not in QS_EVALS:
            raise SearchConfigError(f"qs_eval must be one of {', '.join(QS_EVALS)}, got {self.qs_eval!r}")
        if self.tt_size & (self.tt_size - 1):
            raise SearchConfigError(f"tt_size must be a power of two, got {self.tt_size}")
