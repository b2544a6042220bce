"""Stored engine specs resolve to the same search (tests/golden_specs.py): the guard for replacing the
flat MCTSConfig by per-rule configs with flat aliases (issue 55)."""
from __future__ import annotations

import json

from tests.golden_specs import FLAT, GOLDEN, results


def test_every_stored_spec_resolves_to_the_pinned_search() -> None:
    want = json.loads(GOLDEN.read_text())
    have = results()
    assert len(want) >= 40 and all(f in want for f in FLAT)
    missing = sorted(set(want) - set(have))
    assert not missing, f"no longer resolves: {missing[:5]}"
    changed = [k for k in want if have[k] != want[k]]
    assert not changed, f"resolves to another search: {changed[:5]}"
