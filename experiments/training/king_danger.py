"""Fit the classical king danger to an engine's scores (Texel-style tuning, on engine scores).

The facts of :func:`evaluators.classical.king_features` about each king (zone squares the opponent
attacks, holes where a drop lands next to the king, unguarded knight-check squares, the opponent's
pocket) enter a linear danger in units::

    units_c = attacked + h · holes · min(pocket, 3) + (k + kn · [knight in hand]) · knight_checks + m · pocket
    S'      = a · S + w · (units_black - units_white) + t · (+1 White to move, -1 Black)

with ``S`` the classical static score for White (:func:`evaluators.classical.white_score_bb`).  The
parameters ``(h, k, kn, m, w, a, t)`` minimise the squared difference between ``σ(S')`` and
``σ(engine score)`` (``σ(x) = 1 / (1 + e^(-x/400))``, the engine's score turned to White's side) on
the training games, positions with a mate score left out; the games whose uid hashes into the
validation split (:func:`experiments.training.datagen.is_validation`) measure it.  In ``S``'s
centipawns a unit is worth ``w / a``: that is ``KD_WEIGHT``, and ``h, k, kn, m`` (x100) are
``KD_HOLE, KD_KNIGHT_CHECK, KD_KNIGHT_IN_HAND, KD_POCKET`` of :mod:`evaluators.classical`.  The tempo
``t`` is fitted so that it does not leak into the danger weights; the evaluators do not use it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from board.position import RAW_POCKETS, RAW_TURN
from board.variants import variant_of
from evaluators.classical import king_features, white_score_bb
from experiments.training.datagen import DataError, is_validation, load_dataset

#: engine scores at or beyond this (centipawns) are mates or near-mates: left out
MAX_SCORE = 1500
PARAMS = ("hole", "knight_check", "knight_in_hand", "pocket", "weight", "scale", "tempo")


@dataclass(frozen=True)
class KingDangerFit:
    positions: int          # training positions used
    val_positions: int      # validation positions
    params: dict[str, float]
    #: validation mean squared error of σ: the score scaled alone, and with the king danger
    val_mse_scaled: float
    val_mse_fit: float

    def constants(self) -> dict[str, int]:
        """The fit as :mod:`evaluators.classical`'s integer constants."""
        p = self.params
        return {"KD_ATTACKED": 100, "KD_HOLE": round(100 * p["hole"]),
                "KD_KNIGHT_CHECK": round(100 * p["knight_check"]),
                "KD_KNIGHT_IN_HAND": round(100 * p["knight_in_hand"]), "KD_POCKET": round(100 * p["pocket"]),
                "KD_WEIGHT": round(p["weight"] / p["scale"])}


def features(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``S``, the side to move (+1 White, -1 Black) and both kings' facts ([N, 5] each) of raw states."""
    n = len(raw)
    s = np.empty(n)
    fw = np.empty((n, 5))
    fb = np.empty((n, 5))
    for i in range(n):
        w, b, p, kn, bi, r, q, k = (int(x) for x in raw[i, :8])
        pk = int(raw[i, RAW_POCKETS])
        s[i] = white_score_bb(True, w, b, p, kn, bi, r, q, k, pk)
        fw[i] = king_features(0, w, b, p, kn, bi, r, q, k, pk)
        fb[i] = king_features(1, w, b, p, kn, bi, r, q, k, pk)
    stm = np.where(raw[:, RAW_TURN] == 0, 1.0, -1.0)
    return s, stm, fw, fb


def _units(f: np.ndarray, th: np.ndarray) -> np.ndarray:
    h, k, kn = th[0], th[1], th[2]
    att, holes, checks, pocket, knights = f.T
    out: np.ndarray = att + h * holes * np.minimum(pocket, 3) + (k + kn * np.minimum(knights, 1)) * checks + th[3] * pocket
    return out


def _sigma(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-x / 400.0))
    return out


def fit(data: list[str], every: int = 2, val_fraction: float = 0.1) -> KingDangerFit:
    """Fit the king danger on every ``every``-th position of the crazyhouse data sets ``data``."""
    from scipy.optimize import least_squares

    ds = load_dataset(data)
    v = variant_of(ds.variant)
    if not v.pockets or v.boards != 1:
        raise DataError(f"king danger is fitted on one-board data with pockets (crazyhouse), not {ds.variant}")
    idx = np.arange(0, len(ds.raw), every)
    score = ds.score[idx].astype(float)
    keep = np.abs(score) < MAX_SCORE
    idx, score = idx[keep], score[keep]
    s, stm, fw, fb = features(ds.raw[idx])
    target = _sigma(score * stm)  # the engine's score for the side to move, turned to White's
    val = is_validation(ds.game_uid[ds.game[idx]], val_fraction)
    tr = ~val
    if tr.sum() < 100 or val.sum() < 100:
        raise DataError(f"too few positions to fit king danger ({int(tr.sum())} training, {int(val.sum())} validation)")

    def pred(th: np.ndarray, m: np.ndarray) -> np.ndarray:
        return _sigma(th[5] * s[m] + th[4] * (_units(fb[m], th) - _units(fw[m], th)) + th[6] * stm[m])

    r = least_squares(lambda th: pred(th, tr) - target[tr], np.array([0.1, 0.3, 0.2, 0.1, 100.0, 0.5, 0.0]))
    r0 = least_squares(lambda a: _sigma(a[0] * s[tr]) - target[tr], np.array([1.0]))
    mse0 = float(np.mean((_sigma(r0.x[0] * s[val]) - target[val]) ** 2))
    mse = float(np.mean((pred(r.x, val) - target[val]) ** 2))
    return KingDangerFit(int(tr.sum()), int(val.sum()), dict(zip(PARAMS, (float(x) for x in r.x))), mse0, mse)


def format_fit(f: KingDangerFit) -> str:
    p = ", ".join(f"{k} {v:.3f}" for k, v in f.params.items())
    c = ", ".join(f"{k} = {v}" for k, v in f.constants().items())
    return (f"{f.positions} training and {f.val_positions} validation positions (split by game)\n"
            f"parameters: {p}\n"
            f"validation MSE of sigma: score scaled alone {f.val_mse_scaled:.5f}, with king danger {f.val_mse_fit:.5f}\n"
            f"evaluators/classical.py: {c}")
