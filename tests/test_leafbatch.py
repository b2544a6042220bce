"""The compiled leaf path (evaluators/leafbatch.py) against the numpy encoders, bit for bit: input
planes, policy indices and the evaluations a network returns through each."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from librt.vecs import vec
from mypy_extensions import i64

from board import new_position
from engines import registry
from evaluators import leafbatch
from evaluators.base import EvaluatorError, Leaf
from evaluators.encodings import EncodingError
from tests.test_encodings import random_positions

I64 = st.integers(-(1 << 63), (1 << 63) - 1)
RAW = st.tuples(I64, I64, I64, I64, I64, I64, I64, I64, I64, st.integers(0, (1 << 60) - 1), st.integers(0, 1),
                st.integers(0, 15), st.integers(-1, 63), st.integers(0, 150), st.integers(1, 600), st.integers(0, 2))
MOVES = st.lists(st.integers(0, (1 << 18) - 1), max_size=12)


@pytest.fixture(scope="module", params=["rise", "sixtyfour"])
def family(request):
    return request.param


_EVS: dict = {}


def evaluator(family: str, variant: str):
    key = (family, variant)
    if key not in _EVS:
        _EVS[key] = registry.load_evaluator(family, None, 1, "onnxruntime", device="cpu", variant=variant)
    return _EVS[key]


def both(ev, leaves, monkeypatch):
    """``_encode`` by the numpy encoders and by the compiled path (forced on, compiled or not)."""
    monkeypatch.setattr(leafbatch, "COMPILED", False)
    ref = ev._encode(leaves)
    monkeypatch.setattr(leafbatch, "COMPILED", True)
    got = ev._encode(leaves)
    return ref, got


def assert_same(ref, got):
    assert got[0].dtype == np.float32 and got[0].shape == ref[0].shape
    assert np.array_equal(got[0], ref[0])  # bit for bit: 1.0 and the same float32 roundings
    assert np.array_equal(got[1], ref[1]) and np.array_equal(got[2], ref[2])
    assert list(got[3]) == list(ref[3])


@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_played_positions_encode_the_same(family, variant, monkeypatch):
    ev = evaluator(family, variant)
    positions = random_positions(variant, 60, seed=3)
    leaves = [Leaf.of(p) for p in positions[::2]]
    leaves += [Leaf.snapshot(p, vec[i64](p.legal_moves()), -1) for p in positions[1::2]]
    assert_same(*both(ev, leaves, monkeypatch))


@settings(max_examples=60, deadline=None)
@given(raws=st.lists(st.tuples(RAW, MOVES), min_size=1, max_size=4))
def test_any_raw_state_encodes_the_same(raws):
    """Every field in its range (bitboards arbitrary, bit 63 included): the encoders agree."""
    mp = pytest.MonkeyPatch()
    try:
        for family in ("rise", "sixtyfour"):
            for variant in ("crazyhouse", "chess"):
                ev = evaluator(family, variant)
                leaves = [Leaf(raw, moves, variant) for raw, moves in raws]
                ok = [lf for lf in leaves if (ev._move_indices(np.array(lf.moves, dtype=np.int64),
                                                               np.array([lf.state]), np.zeros(len(lf.moves), dtype=np.int64)) >= 0).all()]
                if not ok:
                    continue
                assert_same(*both(ev, ok, mp))
    finally:
        mp.undo()


def test_evaluations_equal_through_either_path(family, monkeypatch):
    ev = evaluator(family, "crazyhouse")
    positions = random_positions("crazyhouse", 24, seed=5) + [new_position("crazyhouse")]
    leaves = [Leaf.of(p) for p in positions] + [Leaf(positions[0].raw_state(), [], "crazyhouse")]
    monkeypatch.setattr(leafbatch, "COMPILED", False)
    ref = ev.evaluate(leaves)
    monkeypatch.setattr(leafbatch, "COMPILED", True)
    got = ev.evaluate(leaves)
    assert got == ref
    assert got[-1].priors == [] and len(got[0].priors) == len(leaves[0].moves)


def test_bad_leaves_are_refused_alike(family, monkeypatch):
    ev = evaluator(family, "crazyhouse")
    monkeypatch.setattr(leafbatch, "COMPILED", True)
    with pytest.raises(EncodingError):
        ev.evaluate([Leaf((0,) * 15, [], "crazyhouse")])
    p = new_position("crazyhouse")
    with pytest.raises(EvaluatorError, match=f"move {1 << 20} cannot be encoded"):  # outside the move table
        ev.evaluate([Leaf(p.raw_state(), p.legal_moves() + [1 << 20], "crazyhouse")])


def test_bench_net_plays_both_leaf_paths_side_by_side():
    from experiments.bench import net as bench_net

    r = bench_net.run([("rise", "crazyhouse")], batches=[1, 4], seconds=0.01, graphs=[])
    r["pooled"] = bench_net.pooled(r["rows"], games=2, nodes=8, seconds=0.01, rounds=1)
    paths = {p["leaf_path"] for p in r["pooled"]}
    assert paths == ({"compiled", "numpy"} if leafbatch.COMPILED else {"numpy"})
    assert all(p["share"] > 0 and p["pooled_evals_per_s"] > 0 for p in r["pooled"])
    assert "leaf path numpy" in bench_net.format_table(r) and "encoding the leaves" in bench_net.format_table(r)
    assert all(0 < p["network_share"] < 1 and 0 < p["encode_share"] < 1 for p in r["pooled"])
    assert leafbatch.COMPILED == leafbatch.__file__.endswith(".so")  # restored after the run


def test_bench_int8_calibration_compares_alternatives_with_float32(capsys):
    from experiments.bench import int8_calibration
    from experiments.cli.main import main

    r = int8_calibration.run("rise", "crazyhouse", positions=16, seconds=0.01,
                             alternatives=("shipped (MinMax, 512)", "7-bit weights (reduce_range)"))
    assert [row["calibration"] for row in r["rows"]] == ["shipped (MinMax, 512)", "7-bit weights (reduce_range)"]
    assert all(0.5 <= row["agreement"] <= 1 and row["evals_per_s"] > 0 for row in r["rows"])
    assert "top move kept" in int8_calibration.format_table(r)
    assert main(["bench", "int8-calibration", "--network", "sixtyfour_nope"]) == 2
    assert "invalid choice" in capsys.readouterr().err
