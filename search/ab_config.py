"""The settings of :class:`search.alphabeta.AlphaBeta` (mypyc-compiled): :class:`ABConfig`, the bounds of
its integer fields (:data:`SPIN_RANGES`, checked by ``validate`` and announced as UCI spin bounds) and
the size of a transposition-table slot (UCI's Hash).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from search.ab_order import MAX_PLY
from search.base import range_error

EVAL_CLAMP: Final = 20000


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

    def validate(self) -> None:
        bad = range_error(self, SPIN_RANGES)
        if bad is not None:
            raise SearchConfigError(bad)
        if self.tt_size & (self.tt_size - 1):
            raise SearchConfigError(f"tt_size must be a power of two, got {self.tt_size}")
