"""``searchbench bench encode``: is batch encoding a visible share of a neural evaluation?

For batches of B positions (from random crazyhouse games) it times, per position:

* ``ours``: the vectorised CrazyAra encoder (:func:`evaluators.encodings.crazyara_planes`) plus the
  policy-index lookup of the legal moves and the legal-move softmax;
* ``peer``: the same input planes computed square by square from a python-chess board, the way
  CrazyAra's Python preprocessing does it (:func:`reference_crazyara_planes`; also a test oracle);
* ``net``: the forward pass of the RISE network (the shipped weights, or a fresh ``small`` net).

and prints the encoder's share of (encode + net) and the speed-up over the peer.
"""
from __future__ import annotations

import random
import time
from typing import Any

import chess
import chess.variant
import numpy as np

import board
from board.convert import to_python_chess
from board.variants import CRAZYHOUSE
from evaluators import encodings as enc
from evaluators.base import Leaf
from evaluators.families import FAMILIES


def reference_crazyara_planes(b: chess.Board, repetitions: int = 0) -> np.ndarray:
    """CrazyAra's input planes built square by square from a python-chess board (slow, obvious)."""
    zh = isinstance(b, chess.variant.CrazyhouseBoard)
    n = 34 if zh else 22
    x = np.zeros((n, 8, 8), dtype=np.float32)
    us = b.turn
    flip = us == chess.BLACK

    def rc(sq: int) -> tuple[int, int]:
        s = chess.square_mirror(sq) if flip else sq
        return chess.square_rank(s), chess.square_file(s)

    for sq, piece in b.piece_map().items():
        r, c = rc(sq)
        x[(0 if piece.color == us else 6) + piece.piece_type - 1, r, c] = 1
    x[12] = float(repetitions >= 1)
    x[13] = float(repetitions >= 2)
    k = 14
    if zh:
        assert isinstance(b, chess.variant.CrazyhouseBoard)
        for i, color in enumerate((us, not us)):
            for j, pt in enumerate((chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN)):
                x[14 + 5 * i + j] = b.pockets[color].count(pt) / 32.0
        for sq in chess.scan_forward(b.promoted & b.occupied_co[us]):
            x[24][rc(sq)] = 1
        for sq in chess.scan_forward(b.promoted & b.occupied_co[not us]):
            x[25][rc(sq)] = 1
        k = 26
    if b.ep_square is not None and b.has_legal_en_passant():
        x[k][rc(b.ep_square)] = 1
    x[k + 1] = float(us == chess.WHITE)
    x[k + 2] = b.fullmove_number / 500.0
    x[k + 3] = float(b.has_kingside_castling_rights(us))
    x[k + 4] = float(b.has_queenside_castling_rights(us))
    x[k + 5] = float(b.has_kingside_castling_rights(not us))
    x[k + 6] = float(b.has_queenside_castling_rights(not us))
    x[k + 7] = b.halfmove_clock / 40.0
    return x


def _positions(n: int, seed: int) -> list[board.Position]:
    rng = random.Random(seed)
    out: list[board.Position] = []
    pos = board.new_position(CRAZYHOUSE.name)
    while len(out) < n:
        lm = pos.legal_moves()
        if not lm or pos.ply() > 100:
            pos = board.new_position(CRAZYHOUSE.name)
            continue
        pos.push(rng.choice(lm))
        out.append(pos.copy())
    return out


def run(batches: tuple[int, ...] = (1, 8, 64, 256), seconds: float = 1.0, seed: int = 1,
        weights: str | None = None) -> dict[str, Any]:
    import torch

    from evaluators import nets  # deferred: loads torch
    from evaluators.neural import flatten_moves, legal_softmax  # deferred: loads torch
    from evaluators.rise import RiseEvaluator  # deferred: loads torch

    torch.set_num_threads(1)
    net: torch.nn.Module
    try:
        ev = RiseEvaluator.load(weights)
        net, label = ev.net, f"weights {ev.path}"
    except ValueError:
        net, label = nets.build("rise", {**FAMILIES["rise"].sizes["small"], "variant": CRAZYHOUSE.name}), "fresh small RISE"
        net.eval()
    ps = _positions(max(batches), seed)
    leaves = [Leaf.of(p) for p in ps]
    pcb = [to_python_chess(p) for p in ps]
    rows = []
    for bsz in batches:
        lv = leaves[:bsz]

        def ours() -> Any:
            raw = enc.raw_array([lf.state for lf in lv])
            x = enc.crazyara_planes(raw)
            moves, seg, counts = flatten_moves(lv)
            idx = enc.crazyara_policy_indices(moves, raw[seg, 10] == 1)
            return x, seg, idx, counts

        def peer() -> Any:
            return np.stack([reference_crazyara_planes(b) for b in pcb[:bsz]])

        x, seg, idx, counts = ours()
        xt = torch.from_numpy(x)

        def forward() -> Any:
            with torch.inference_mode():
                return net(xt)

        logits = forward()[1].numpy()

        def softmax() -> Any:
            return legal_softmax(logits, seg, idx, counts)

        t = {}
        for name, fn in (("ours", ours), ("softmax", softmax), ("peer", peer), ("net", forward)):
            n = 0
            t0 = time.perf_counter()
            while True:
                fn()
                n += 1
                el = time.perf_counter() - t0
                if el >= seconds:
                    break
            t[name] = el / n / bsz * 1e6
        enc_us = t["ours"] + t["softmax"]
        rows.append({"batch": bsz, "encode_us": round(enc_us, 1), "peer_us": round(t["peer"], 1),
                     "net_us": round(t["net"], 1), "encode_share": round(enc_us / (enc_us + t["net"]), 3),
                     "speedup_vs_peer": round(t["peer"] / t["ours"], 1)})
    return {"network": label, "threads": 1, "rows": rows}


def format_table(r: dict[str, Any]) -> str:
    lines = [f"RISE input encoding vs network ({r['network']}, {r['threads']} thread), microseconds per position",
             f"{'batch':>6} {'encode':>9} {'peer':>9} {'net':>9} {'enc share':>10} {'vs peer':>8}"]
    for row in r["rows"]:
        lines.append(f"{row['batch']:>6} {row['encode_us']:>9} {row['peer_us']:>9} {row['net_us']:>9} "
                     f"{row['encode_share']:>10.1%} {row['speedup_vs_peer']:>7}x")
    lines.append("encode = vectorised planes + legal-move policy indices + legal softmax; "
                 "peer = python-chess square-by-square planes (CrazyAra's Python way)")
    return "\n".join(lines)
