"""The self-play loop's offline gates: each round's value error against a deep Fairy-Stockfish
evaluation and its prior's cross-entropy to round 0's deep search, paired with the previous round; the
value gate stops or halves a round; the value loss weight calibrated by it; bad configs one line."""
from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from experiments.harness.tomlconfig import ConfigError
from experiments.selfplay import gates as rl_gates, loop as rl, offline

from tests.test_rl import _rounds_config


def _offline_config(tmp_path: Path, extra: str = "", calibrate: str = "") -> str:
    path = _rounds_config(tmp_path, arms='[[arms]]\nname = "control"\nengine = "rise-mcts:batch_size=2"\nkind = "control"\n')
    sup = tmp_path / "sup"
    keys = {"enabled": "true", "data": f'["{sup}"]', "positions": "8", "engine_nodes": "300", "reference": "12"}
    if extra:  # "key = value" replacing the default
        k, _, v = extra.partition(" = ")
        keys[k] = v
    table = "".join(f"{k} = {v}\n" for k, v in keys.items())
    text = open(path).read().replace("[rate]", f"[offline]\n{table}\n"
                                               f"[gate1]\nenabled = true\ndata = [\"{sup}\"]\nheldout_stops = false\n"
                                               f"on_fail = \"halve\"\nretries = 1\n\n{calibrate}\n[rate]")
    open(path, "w").write(text)
    return path


def test_summary_pairs_each_figure_with_the_previous_round_and_round_0() -> None:
    rng = np.random.default_rng(3)
    r0 = {"value_sq": list(rng.uniform(0, 0.2, 200)), "prior_ce": list(rng.uniform(1, 2, 200))}
    prev = {k: [x - 0.01 for x in v] for k, v in r0.items()}
    now = {k: [x + 0.02 + 0.001 * rng.standard_normal() for x in v] for k, v in prev.items()}
    s = offline.summary(now, prev, r0)
    assert s["positions"] == 200
    m, lo, hi = s["value_sq_minus_prev"]
    assert lo < m < hi and m == pytest.approx(0.02, abs=1e-3) and lo > 0  # paired: the shift is resolved
    assert s["prior_ce_minus_round0"][0] == pytest.approx(0.01, abs=1e-3)
    why = offline.verdict({**s, "prev": 2})
    assert why is not None and why.startswith("held-out value error against Fairy-Stockfish") and "above round 2's by +0.020" in why
    better = offline.summary(prev, now, r0)
    assert better["value_sq_minus_prev"][2] < 0 and offline.verdict({**better, "prev": 2}) is None
    # no change: the interval covers 0, the round passes
    assert offline.verdict({**offline.summary(r0, r0, r0), "prev": 0}) is None


def test_fairy_stockfish_scores_on_the_suite_value_scale() -> None:
    from evaluators.scale import cp_to_value
    from experiments.training.datagen import MATE_SCORE

    assert offline.fsf_value(MATE_SCORE - 3, "crazyhouse") == 1.0 and offline.fsf_value(-(MATE_SCORE - 3), "crazyhouse") == -1.0
    assert offline.fsf_value(150, "crazyhouse") == pytest.approx(cp_to_value(150, "crazyhouse"))
    assert offline.fsf_value(0, "chess") == 0.0


def test_every_round_of_both_arms_records_its_offline_figures(tmp_path: Path) -> None:
    cfg = rl.parse(_offline_config(tmp_path))
    assert cfg.offline["enabled"] and not cfg.gate1["heldout_stops"]
    rl.run(cfg, progress=False, until="gate")
    ref = json.loads((tmp_path / "out" / offline.REFERENCE).read_text())["value"]
    n = len(ref["fens"])
    assert 0 < n <= 8 and all(-1.0 <= v <= 1.0 for v in ref["value"])
    assert all(abs(sum(p) - 1.0) < 1e-4 and len(p) == len(m) for p, m in zip(ref["probs"], ref["moves"]))
    for arm in ("puct", "control"):
        st = json.loads((tmp_path / "out" / arm / rl.STATE).read_text())
        for g in ("1", "2"):
            fig = st["gens"][g]["offline"]
            assert fig["positions"] == n and fig["prev"] == int(g) - 1
            m, lo, hi = fig["value_sq"]
            assert lo <= m <= hi and m >= 0.0 and fig["prior_ce"][0] > 0
            # the value probes: rank correlation and child agreement with their paired changes
            a, alo, ahi = fig["child_agree"]
            assert 0.0 <= a <= 1.0 and alo <= a <= ahi
            assert len(fig["value_rho"]) == 3 and len(fig["child_agree_minus_prev"]) == 3 and "value_rho_minus_round0" in fig
        # round 1's previous round is round 0: the two differences are the same numbers
        assert st["gens"]["1"]["offline"]["value_sq_minus_prev"] == st["gens"]["1"]["offline"]["value_sq_minus_round0"]
    assert (tmp_path / "out" / "puct" / "gen-002" / offline.FIGURES).exists()
    assert (tmp_path / "out" / "puct" / "gen-002" / offline.PROBES).exists()
    best = json.loads((tmp_path / "out" / offline.BEST).read_text())["value"]
    assert len(best) == n and all(len(u) >= 4 for u in best)  # Fairy-Stockfish's moves, UCI


def _worsen(figures: dict) -> None:  # type: ignore[type-arg]
    """A network's offline figures made worse than its previous round's by 0.5 a position (so gate 1 fails)."""
    figures["value_sq"] = [x + 0.5 + 0.01 * (i % 3) for i, x in enumerate(figures["value_sq"])]


def test_a_round_whose_value_error_rises_is_trained_again_at_half_the_rate(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = offline.network_figures
    seen: list[str] = []

    def figures(weights: str, ref: dict) -> dict:  # type: ignore[type-arg]
        out = real(weights, ref)
        seen.append(weights)
        if "puct" in weights:  # every self-play network's value is worse than round 0's by 0.5 a position
            _worsen(out)
        return out

    monkeypatch.setattr(offline, "network_figures", figures)
    cfg = rl.parse(_offline_config(tmp_path))
    summary = rl.run(cfg, progress=False, until="train")
    assert summary["stopped"].startswith("gate 1 stops the loop: puct round 1 (lr 0.005): held-out value error "
                                         "against Fairy-Stockfish")
    st = json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())
    assert [f["lr"] for f in st["gens"]["1"]["gate1_failed"]] == [0.01]
    assert st["gens"]["1"]["offline"]["value_sq_minus_prev"][1] > 0
    # the retrained network was measured again (its figures are not the first try's)
    assert sum("gen-001" in w for w in seen) == 2


def test_a_gated_control_is_trained_again_at_half_the_rate_as_self_play_is(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = offline.network_figures
    tries: list[str] = []

    def figures(weights: str, ref: dict) -> dict:  # type: ignore[type-arg]
        out = real(weights, ref)
        if f"{os.sep}control{os.sep}gen-001{os.sep}" in weights:
            tries.append(weights)
            if len(tries) == 1:  # its first try's value error rises
                _worsen(out)
        return out

    monkeypatch.setattr(offline, "network_figures", figures)
    path = _offline_config(tmp_path)
    text = open(path).read().replace("heldout_stops = false", "heldout_stops = false\ncontrols = true")
    open(path, "w").write(text)
    cfg = rl.parse(path)
    assert cfg.gate1["controls"]
    rl.run(cfg, progress=False, until="train")
    st = json.loads((tmp_path / "out" / "control" / rl.STATE).read_text())
    failed = st["gens"]["1"]["gate1_failed"]
    assert [f["lr"] for f in failed] == [0.01]  # halved as the self-play arm is
    assert st["gens"]["1"]["train"]["lr"] == 0.005  # trained again (its own figures then decide, as self-play's)
    # without the switch the control is not gated (the earlier rule)
    assert not rl.parse(_offline_config(tmp_path / "plain")).gate1["controls"]


def test_the_value_weight_is_the_one_of_the_lowest_offline_value_error(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cal = f"[calibrate]\nlrs = [0.01]\ncpu_seconds = 2\ndata = [\"{tmp_path / 'sup'}\"]\nvalue_weights = [0.1, 1.0, 3.0]\n"
    path = _offline_config(tmp_path, calibrate=cal)
    nll = {"tiny.pt": 2.0, "vw-0.1": 1.9, "vw-1": 1.95, "vw-3": 2.2, "lr-0.01": 1.9}
    err = {"vw-0.1": 0.3, "vw-1": 0.2, "vw-3": 0.1}

    def heldout(weights: str, data: list[str]) -> dict[str, float]:
        key = next((k for k in ("vw-0.1", "vw-1", "vw-3", "lr-0.01") if k in weights), "tiny.pt")
        return {"policy_loss": nll[key], "value_loss": 0.5, "policy_entropy": 2.0, "policy_acc": 0.3}

    def figures(weights: str, ref: dict) -> dict:  # type: ignore[type-arg]
        key = next((k for k in err if f"{k}/" in weights), None)
        v = err[key] if key else 0.25
        return {"value_sq": [v] * len(ref["fens"]), "prior_ce": [1.5] * len(ref["fens"])}

    monkeypatch.setattr(rl_gates, "heldout_figures", heldout)
    monkeypatch.setattr(offline, "network_figures", figures)
    cfg = rl.parse(path)
    result = rl_gates.calibrate(cfg, progress=False)
    # 3.0 has the lowest value error but raises the held-out NLL above round 0's: 1.0 is kept
    assert result["chosen"] == 0.01 and result["value_weight"] == 1.0
    assert [t["value_weight"] for t in result["value_tries"]] == [0.1, 1.0, 3.0]
    assert result["value_tries"][1]["offline"]["value_sq_minus_round0"][0] == pytest.approx(-0.05)
    saved = json.loads((tmp_path / "out" / rl_gates.CALIBRATION).read_text())
    assert saved["value_weight"] == 1.0
    # the loop trains both arms with it
    import torch

    rl.run(cfg, progress=False, until="train")
    for arm in ("puct", "control"):
        saved = torch.load(str(tmp_path / "out" / arm / "gen-001" / "train" / "model.pt"), weights_only=True)
        assert saved["meta"]["recipe"]["value_weight"] == 1.0
    st = json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())
    assert not math.isnan(st["gens"]["1"]["offline"]["value_sq"][0])


@pytest.mark.parametrize("extra, calibrate, match", [
    ("positions = 0", "", "offline.positions"),
    ("engine_nodes = 0", "", "must be from 1 to 10000000"),
    ("reference = 1", "", "must be from 2 to 100000"),
    ("data = [\"/nonexistent/data\"]", "", "no data at"),
    ("", "[calibrate]\nvalue_weights = [1.0]\n", "calibrated after the learning rate"),
    ("", "[calibrate]\nlrs = [0.01]\nvalue_weights = [1.0, 1.0]\n", "distinct value loss weights"),
])
def test_bad_offline_configs_are_one_line(tmp_path: Path, extra: str, calibrate: str, match: str) -> None:
    path = _offline_config(tmp_path, extra, calibrate)
    with pytest.raises(ConfigError, match=match):
        rl.parse(path)


def test_offline_gates_need_rounds(tmp_path: Path) -> None:
    path = _offline_config(tmp_path)
    text = open(path).read().replace('mode = "rounds"', 'mode = "generations"')
    open(path, "w").write(text)
    with pytest.raises(ConfigError, match="offline gates measure one-board rounds"):
        rl.parse(path)
    shutil.rmtree(tmp_path / "sup", ignore_errors=True)
    assert not os.path.exists(tmp_path / "out" / offline.REFERENCE)


def test_the_report_gives_every_rounds_offline_gates_and_where_the_loop_ended(tmp_path: Path) -> None:
    path = _offline_config(tmp_path)
    text = open(path).read().replace("bootstrap = 10", "bootstrap = 10\nsearches = [\n"
                                     '  { name = "policy", engine = "rise-mcts:batch_size=1,tree_reuse=false", nodes = 1 },\n]')
    open(path, "w").write(text)
    cfg = rl.parse(path)
    rl.run(cfg, progress=False)
    report = (tmp_path / "report" / "README.md").read_text()
    assert "## Offline gates: what the search needs of the network" in report
    rows = [line for line in report.splitlines() if line.startswith(("| puct | ", "| control | "))
            and "[" in line and "weight" in line]
    assert len(rows) == 4  # both arms, both rounds, each with its value share of the loss
    assert all(row.count(" from previous; ") == 2 for row in rows)  # the two probes, each with its changes
    assert "Round 0: rho " in report and "child agreement" in report
    assert "**Where the loop ended** (95% intervals):" in report
    assert "- `policy`: the last round (2)" in report and "against the control's" in report
    # CPU hours are process CPU seconds: the state's cpu figures, summed
    from experiments.selfplay.report import _cumulative
    from experiments.selfplay.config import State

    st = State(str(tmp_path / "out" / "puct" / rl.STATE))
    cpu = sum(float(st.gen(g)[s]["cpu"]) for g in (1, 2) for s in ("selfplay", "train") if s in st.gen(g))
    assert _cumulative(st, 2)[1] == pytest.approx(cpu / 3600.0, rel=1e-6, abs=1e-9)


# --------------------------------------------------------------------------- value probes

def test_spearman_interval_is_rank_correlation_with_a_paired_bootstrap() -> None:
    rng = np.random.default_rng(5)
    ref = rng.uniform(-1, 1, 300)
    assert offline.spearman_interval(np.tanh(3 * ref), ref)[0] == pytest.approx(1.0)  # a monotone map: rank-equal
    good = ref + 0.2 * rng.standard_normal(300)
    bad = ref + 0.8 * rng.standard_normal(300)
    rho, lo, hi = offline.spearman_interval(good, ref)
    assert lo < rho < hi and 0.85 < rho < 0.97
    d, dlo, dhi = offline.spearman_interval(bad, ref, good)
    assert d < 0 and dhi < 0  # paired on the same resamples: the noisier value ranks worse
    assert offline.spearman_interval(good, ref, good) == (0.0, 0.0, 0.0)
    assert all(math.isnan(x) for x in offline.spearman_interval(good[:2], ref[:2]))


def test_a_child_that_ends_the_game_is_scored_by_the_rules() -> None:
    import board

    pos = board.new_position("crazyhouse", "6rk/6pp/8/8/8/8/8/6K1[N] w - - 0 1")
    moves = [board.move_to_uci(m) for m in pos.legal_moves()]
    leaves, pending, values = offline._child_values(pos, moves, "crazyhouse")
    assert values[moves.index("N@f7")] == 1.0  # the smothered mate: won for the mover
    assert len(pending) == len(leaves) == len(moves) - int(np.sum(~np.isnan(values)))
    st = board.new_position("chess", "7k/8/6Q1/8/8/8/8/K7 w - - 0 1")
    smoves = [board.move_to_uci(m) for m in st.legal_moves()]
    _, _, sv = offline._child_values(st, smoves, "chess")
    assert sv[smoves.index("g6f7")] == 0.0  # stalemate: drawn


def test_network_probes_agree_where_the_value_prefers_the_engines_move() -> None:
    import board

    fens = ["6rk/6pp/8/8/8/8/8/6K1[N] w - - 0 1", "7k/5Kp1/8/8/8/8/8/8[Q] w - - 0 1",
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R[] w KQkq - 2 3"]
    moves = [[board.move_to_uci(m) for m in board.new_position("crazyhouse", f).legal_moves()] for f in fens]
    ref = {"variant": "crazyhouse", "fens": fens, "value": [1.0, 1.0, 0.1], "moves": moves}
    got = offline.network_probes("rise_crazyhouse.pt", ref, ["N@f7", "a1a2", "f1b5"])
    assert got["child_agree"][:2] == [1.0, 0.0]  # the mate is always preferred; "a1a2" is no move of the position
    assert got["child_agree"][2] in (0.0, 1.0) and len(got["value"]) == 3 and all(-1 <= v <= 1 for v in got["value"])
    s = offline.probe_summary(got, ref["value"], {"same": got, "none": None})
    assert s["child_agree"][0] == pytest.approx(sum(got["child_agree"]) / 3, abs=1e-5)
    assert s["child_agree_minus_same"] == [0.0, 0.0, 0.0] and "value_rho_minus_none" not in s


def test_value_probes_command_prints_each_network_paired_with_the_first(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import board
    from experiments.cli.main import main
    from experiments.selfplay.config import cached_record

    fens = ["6rk/6pp/8/8/8/8/8/6K1[N] w - - 0 1", "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R[] w KQkq - 2 3",
            "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR[] w KQkq - 0 2",
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R[] w KQkq - 4 4"]
    moves = [[board.move_to_uci(m) for m in board.new_position("crazyhouse", f).legal_moves()] for f in fens]
    ref_path = tmp_path / "offline-reference.json"
    ref_path.write_text(json.dumps({"key": {"engine_nodes": 300}, "value": {
        "variant": "crazyhouse", "fens": fens, "value": [1.0, 0.1, 0.0, 0.2], "moves": moves, "probs": []}}))
    out = tmp_path / "probes"
    key = {"engine": "fairy-stockfish", "engine_nodes": 300, "positions": 4, "reference": fens[:3]}
    cached_record(str(out / offline.BEST), key, lambda: ["N@f7", "f1b5", "g1f3", "f3g5"], list)  # no engine needed
    code = main(["value-probes", str(ref_path), "rise_crazyhouse.pt", "rise_crazyhouse.pt", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0, text
    rows = [line for line in text.splitlines() if line.startswith("| rise_crazyhouse.pt |")]
    assert len(rows) == 2 and "+0.000 [+0.000, +0.000]" in rows[1]  # the same network: no change
    assert "Fairy-Stockfish at 300 nodes" in text
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"key": {}, "value": {"fens": []}}))
    assert main(["value-probes", str(bad), "rise_crazyhouse.pt", "--out", str(out)]) == 2
    assert "is no offline reference" in capsys.readouterr().err
    assert main(["value-probes", str(ref_path), "no-such.pt", "--out", str(out)]) == 2
    assert "no-such.pt: no such network file" in capsys.readouterr().err
