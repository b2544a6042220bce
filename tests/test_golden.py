"""Fixed-seed searches give exactly the pinned results (tests/golden_searches.py says which and why)."""
from __future__ import annotations

import json

import pytest

from tests.golden_searches import GOLDEN, run_cases


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    return run_cases()


def test_every_pinned_search_is_identical(results: dict[str, object]) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert sorted(results) == sorted(golden)
    changed = [k for k in golden if results[k] != golden[k]]
    assert not changed, f"{len(changed)} of {len(golden)} searches changed, e.g. {changed[:3]}"
