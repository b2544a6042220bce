"""Perft suites from data files: the default run keeps to small counts, deeper ones are `slow`."""
import os
from pathlib import Path

import pytest

from board import new_position, perft, perft_bulk

DATA = Path(__file__).parent / "data"
PURE = os.environ.get("SEARCHBENCH_PURE") == "1"
# Largest node count checked in the default run (the pure-Python build is ~30x slower).
DEFAULT_LIMIT = 200_000 if PURE else 1_000_000


def _cases(variant: str) -> list:
    out = []
    for line in (DATA / f"perft_{variant}.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fen, *depths = [p.strip() for p in line.split(";")]
        for d in depths:
            depth, nodes = d[1:].split()
            slow = int(nodes) > DEFAULT_LIMIT
            marks = [pytest.mark.slow] if slow else []
            out.append(pytest.param(variant, fen, int(depth), int(nodes), marks=marks, id=f"{fen[:24]}-d{depth}"))
    return out


@pytest.mark.parametrize("variant,fen,depth,nodes", _cases("chess") + _cases("crazyhouse"))
def test_perft(variant: str, fen: str, depth: int, nodes: int) -> None:
    pos = new_position(variant, fen)
    before = (pos.fen(), pos.zobrist)
    count = perft_bulk(pos, depth) if nodes > 200_000 else perft(pos, depth)
    assert count == nodes
    assert (pos.fen(), pos.zobrist) == before
