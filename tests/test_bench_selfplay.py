"""``searchbench bench selfplay``: real self-play games per backend, their rate against the raw network's."""
from __future__ import annotations

import pytest

from experiments.bench import selfplay as bench_selfplay
from experiments.cli import main as cli


def test_bench_selfplay_measures_each_backend_against_its_raw_rate(capsys: pytest.CaptureFixture[str]) -> None:
    r = bench_selfplay.run(inferences=("onnxruntime", "onnxruntime-int8"), games=3, nodes=8, fast_nodes=2,
                           full_fraction=0.5, concurrencies=(3, 2), workers=1, rounds=1, seconds=0.05)
    assert [(x["inference"], x["concurrency"]) for x in r["rows"]] == [
        ("onnxruntime", 3), ("onnxruntime", 2), ("onnxruntime-int8", 3), ("onnxruntime-int8", 2)]
    for x in r["rows"]:
        assert x["games"] == 3 and x["positions"] > 0 and x["eval_leaves"] >= x["eval_calls"] > 0
        assert x["leaves_per_call"] >= 1 and x["raw_batch"] >= 1 and x["raw_evals_per_s"] > 0
        assert 0 < x["share"] < 2  # the pooled rate cannot far exceed what the network alone does
        assert x["running"] == x["inference"]
        assert x["busy"] is None or 0 < x["busy"] <= 1  # the machine's CPUs busy during the round
    assert r["rows"][0]["vs_first"] == r["rows"][0]["positions_vs_first"] == 1.0
    assert "ratio: games/h" in bench_selfplay.format_table(r) and "busy" in bench_selfplay.format_table(r)
    for x in r["rows"]:  # where the time went, by part: every part named, shares summing to 1
        assert list(x["profile"]) == [*(p for p, _ in bench_selfplay.PARTS), "other"]
        assert abs(sum(x["profile"].values()) - 1) < 1e-9 and x["profile"]["network"] > 0
        assert x["profile"]["search"] > 0 and x["profile"]["encoding"] > 0
    assert r["profiled_games"] == 4 and "profile: " in bench_selfplay.format_table(r)


def test_profile_parts_gives_c_functions_to_their_callers() -> None:
    """numpy called from the legal softmax is the softmax's time; a function no part names is other."""
    import numpy as np

    def legal_softmax_toy() -> None:
        for _ in range(300):
            np.exp(np.arange(20_000.0) / 1e4).sum()

    shares = bench_selfplay.profile_parts(legal_softmax_toy)
    assert shares["legal softmax"] > 0.9 and shares["network"] == 0


def test_bench_selfplay_bad_settings_get_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "selfplay", "--full-fraction", "2", "--games", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "full_fraction must be in (0, 1]" in err[0]
    assert cli.main(["bench", "selfplay", "--inferences", "nonsense"]) == 2


def test_busy_share_of_two_readings() -> None:
    assert bench_selfplay.busy_share((100, 400), (250, 600)) == 0.75
    assert bench_selfplay.busy_share(None, (250, 600)) is None and bench_selfplay.busy_share((1, 5), (1, 5)) is None
    now = bench_selfplay.cpu_times()
    assert now is None or 0 <= now[0] <= now[1]
