"""Held-out checks of DeepChess weights: ``python -m experiments.training.eval_deepchess DATA MODEL [MODEL ...]``.

For each model: the comparator pair accuracy on 20,000 random (White-won, Black-won) pairs of the
validation games' DeepChess positions (10 per decisive game, sampled with a fixed seed, so every
model sees the same pairs), and the sign accuracy of the value-style wrapper
(:meth:`evaluators.deepchess.DeepChessEvaluator.white_probability` > 0.5 against the game result)
on every 5th position of the decisive validation games.  The split is the training split
(``--val-fraction``, same hash of the game id).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from evaluators import encodings as enc
from evaluators import nets
from evaluators.deepchess import DeepChessEvaluator
from experiments.training import datagen
from experiments.training import deepchess_train


def evaluate(data: list[str], models: list[str], val_fraction: float = 0.1, seed: int = 0) -> list[dict[str, float]]:
    torch.set_num_threads(1)
    ds = datagen.load_dataset(data)
    val_game = datagen.is_validation(ds.game_uid, val_fraction)
    va_pos, va_res = deepchess_train.deepchess_positions(ds, np.flatnonzero(val_game), np.random.default_rng(seed + 7919))
    x = enc.deepchess_bits(ds.raw[va_pos], ds.variant)
    vw, vb = np.flatnonzero(va_res == 1), np.flatnonzero(va_res == -1)
    idx = np.flatnonzero(val_game[ds.game] & (ds.result != 0))[::5]
    out = []
    for path in models:
        net, _ = nets.load_model(path, "deepchess")
        assert isinstance(net, nets.DeepChessNet)
        ev = DeepChessEvaluator(net)
        p = np.array(ev.white_probability([tuple(int(v) for v in r) for r in ds.raw[idx]]))
        out.append({"pair_acc": deepchess_train.pair_accuracy(net, x, vw, vb, 20000, seed + 1),
                    "wrapper_sign_acc": float(((p > 0.5) == (ds.result[idx] > 0)).mean()),
                    "wrapper_positions": float(len(idx))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.training.eval_deepchess", description=__doc__)
    ap.add_argument("data")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--val-fraction", type=float, default=0.1)
    a = ap.parse_args(argv)
    try:
        rows = evaluate([a.data], a.models, a.val_fraction)
    except ValueError as e:
        print(f"eval_deepchess: error: {e}", file=sys.stderr)
        return 2
    for path, r in zip(a.models, rows):
        print(f"{path}: pair accuracy {r['pair_acc']:.4f}, wrapper sign accuracy {r['wrapper_sign_acc']:.4f} "
              f"({int(r['wrapper_positions'])} positions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
