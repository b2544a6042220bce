"""Perft against independent oracles: Fairy-Stockfish (crazyhouse, chess) and Stockfish (chess) on
positions from random games, and the `searchbench perft` command line."""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import zlib

import pytest

from board import new_position, perft_bulk
from tests.engines_path import find_engine

PURE = os.environ.get("SEARCHBENCH_PURE") == "1"


def _random_positions(variant: str, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        pos = new_position(variant)
        for _ in range(rng.randrange(4, 70)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos.push(rng.choice(moves))
        if pos.legal_moves():
            out.append(pos.fen())
    return out


def _oracle_perft(binary: str, variant: str, fen: str, depth: int) -> int:
    setup = "setoption name UCI_Variant value crazyhouse\n" if variant == "crazyhouse" else ""
    cmds = f"uci\n{setup}position fen {fen}\ngo perft {depth}\nquit\n"
    out = subprocess.run([binary], input=cmds, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r"Nodes searched: (\d+)", out)
    assert m, f"no perft answer from {binary} for {fen}: {out[-300:]}"
    return int(m.group(1))


@pytest.mark.parametrize("oracle,variant", [("fairy-stockfish", "crazyhouse"), ("fairy-stockfish", "chess"), ("stockfish", "chess")])
def test_perft_agrees_with_engine(oracle: str, variant: str) -> None:
    binary = find_engine(oracle)
    if binary is None:
        pytest.skip(f"{oracle} is not installed (make test installs it)")
    depth = 2 if PURE else 3
    for fen in _random_positions(variant, 4 if PURE else 12, seed=zlib.crc32(f"{oracle}:{variant}".encode())):
        ours = perft_bulk(new_position(variant, fen), depth)
        assert ours == _oracle_perft(binary, variant, fen, depth), fen


def test_cli_perft_prints_one_count_per_fen() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "perft", "--variant", "crazyhouse", "--depth", "2",
         "2k5/8/8/8/8/8/8/4K3[Qn] w - -", "4k3/1Q~6/8/8/4b3/8/Kpp5/8/ b - -"],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3083", "360"]


@pytest.mark.parametrize("args,needle", [
    (["perft", "--depth", "2", "not a fen"], "expected 8 ranks"),
    (["perft", "--variant", "crazyhouse", "--depth", "1", "8/8/8/8/8/8/8/8[] w - - 0 1"], "exactly one king"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    out = subprocess.run([sys.executable, "-m", "experiments.cli", *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr
