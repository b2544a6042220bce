"""The suite runs against the build it claims: compiled mypyc modules, or the .py sources."""
import os

import board.bitboards
import board.position

PURE = os.environ.get("SEARCHBENCH_PURE") == "1"


def _is_compiled(mod: object) -> bool:
    return str(getattr(mod, "__file__", "")).endswith(".so")


def test_mode_matches_environment() -> None:
    for mod in (board.position, board.bitboards):
        assert _is_compiled(mod) is (not PURE), f"{mod} compiled={_is_compiled(mod)} but SEARCHBENCH_PURE={PURE}"
