"""``searchbench agreement``: the engine replayed on validation positions, Wilson intervals."""
import pytest

from experiments.training import agreement
from experiments.cli import main as cli
from experiments.training import datagen


def test_wilson_interval_known_values():
    a = agreement.Agreement(3000, 100, 50)
    lo, hi = a.interval()
    assert a.rate == 0.5 and lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    lo, hi = agreement.Agreement(1, 10, 10).interval()
    assert hi == 1.0 and lo == pytest.approx(0.7225, abs=1e-4)


def test_replays_validation_positions_deterministically(tmp_path):
    try:
        datagen.find_engine("fairy-stockfish")
    except datagen.DataError:
        pytest.skip("fairy-stockfish not installed")
    out = str(tmp_path / "zh")
    datagen.generate(datagen.GenConfig(out=out, variant="crazyhouse", games=2, nodes=100, seed=3, max_plies=30),
                     progress=False)
    ds = datagen.load_dataset(out)
    idx = agreement.sample_validation(ds, 12, seed=1, val_fraction=0.99)
    assert len(idx) == 12 and list(idx) == sorted(set(idx))
    rows = agreement.measure([out], [100, 150], positions=12, seed=1, val_fraction=0.99, progress=False)
    assert [a.nodes for a in rows] == [100, 150, 0] and all(a.positions == 12 for a in rows)
    assert all(0 <= a.agree <= 12 for a in rows)
    again = agreement.measure([out], [100, 150], positions=12, seed=1, val_fraction=0.99, progress=False)
    assert [(a.nodes, a.agree) for a in again] == [(a.nodes, a.agree) for a in rows]
    assert "plurality" in agreement.format_table(rows)


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert cli.main(["agreement", "--data", str(tmp_path), "--nodes", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no shards" in err
