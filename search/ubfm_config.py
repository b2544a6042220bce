"""The settings of :class:`search.ubfm.UBFM` (mypyc-compiled): :class:`UBFMConfig`, the bounds of its
integer fields (:data:`SPIN_RANGES`, checked by ``validate`` and announced as UCI spin bounds) and the
final-move rules; each setting is defined in :mod:`search.ubfm` and docs/minimax.md."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from search.base import range_error
from search.timeman import TimeConfig

FINAL_MOVES: Final = ("safest", "best")

#: the bounds of every integer field (checked by validate, announced as UCI spin bounds)
SPIN_RANGES: Final = {"default_nodes": (1, 10**9), "max_tree_nodes": (1_000, 1 << 31), "max_depth": (1, 1000),
                      "width": (0, 1000), "widen": (0, 10**6)}


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
    # progressive widening by prior: an expansion evaluates the `width` children of largest prior
    # (0: every child) and each game's end; a node gets its next `width` after every `widen`
    # iterations through it (0: only when every scored child is closed)
    width: int = 0
    widen: int = 0
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
        if self.priors is False and self.width > 0:
            raise UBFMConfigError("width needs priors=true (the priors it ranks the children by)")
        bad_time = self.time.validate()
        if bad_time is not None:
            raise UBFMConfigError(bad_time)


__all__ = ["FINAL_MOVES", "SPIN_RANGES", "UBFMConfig", "UBFMConfigError"]
