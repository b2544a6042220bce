"""Self-play as KataGo plays it: forced playouts and policy-target pruning at the root of full
searches, fast searches without noise, the temperature on visit shares; gate 0 (a target against a
deep search) and gate 1 (held-out figures every round) refuse with one line; the rating bootstrap
resamples an opening once across every pairing that played it."""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import board
from engines import factory, registry
from experiments.harness import ratings
from experiments.harness.store import GameRecord
from experiments.selfplay import gates as rl_gates, loop as rl, targets
from search.base import Limits
from search.mcts_config import MCTSConfig, MCTSConfigError
from search.puct import PUCTParams, cpuct, u_divisor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_reliability import one_line_error, run_cli  # noqa: E402
from test_selfplay import tiny_weights  # noqa: E402
from test_train import make_dataset  # noqa: E402

KATAGO = "forced_playouts=2,policy_target_pruning=true,temperature_visits=true"


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> str:
    return tiny_weights(str(tmp_path_factory.mktemp("kg") / "tiny.pt"))


def _engine(spec: str):  # type: ignore[no-untyped-def]
    return factory.create(registry.resolve(spec), "crazyhouse")


def _root(eng):  # type: ignore[no-untyped-def]
    s = eng.search
    return s.tree, s.root, s.root_rule


def _middlegames(n: int, plies: int = 14) -> list[board.Position]:
    """Held-out crazyhouse middlegames: openings the tests use nowhere else (lines 500 on of the
    shipped 1,000-opening suite), each played on by the shipped network's raw policy."""
    path = Path(__file__).resolve().parents[1] / "experiments" / "openings" / "crazyhouse-1000.epd"
    policy = _engine("rise-mcts:batch_size=1,tree_reuse=false")
    out = []
    for line in path.read_text().splitlines()[500:500 + n]:
        pos = board.new_position("crazyhouse")
        pos.set_fen(" ".join(line.split()[:4]) + " 0 1")
        policy.new_game(1)
        for _ in range(plies):
            if pos.is_game_over():
                break
            pos.push(policy.play(pos, Limits(nodes=1)).move)
        if not pos.is_game_over():
            out.append(pos)
    return out


def _visited(spec: str, pos: board.Position, nodes: int) -> tuple[list[int], list[float], float]:
    eng = _engine(spec)
    eng.new_game(7)
    eng.play(pos, Limits(nodes=nodes))
    tree, root, _ = _root(eng)
    e0, k = int(tree.nd_edge0[root]), int(tree.nd_nedges[root])
    return ([tree.edge_n(e) for e in range(e0, e0 + k)], [tree.ed_prior[e] for e in range(e0, e0 + k)],
            float(tree.nd_sum_n[root]))


def test_forced_playouts_force_only_moves_that_have_visits() -> None:
    # KataGo forces "any given child that receives any visits at all at the root": an unvisited move
    # gets its first visit from the tree rule alone, so a 128-node search with k = 2 spreads over
    # about as many root moves as plain PUCT (forcing every legal move took 55-59 of them)
    for pos in _middlegames(6):
        plain, _, _ = _visited("rise-mcts:tree_reuse=false", pos, 128)
        forced, priors, total = _visited("rise-mcts:tree_reuse=false,forced_playouts=2", pos, 128)
        wide = sum(1 for n in plain if n > 0)
        assert 0 < sum(1 for n in forced if n > 0) <= 2 * wide, pos.fen()
        assert sum(1 for n in forced if n > 0) < len(forced) // 2 or len(forced) < 8, pos.fen()


def test_forced_playouts_give_every_visited_root_move_its_share(weights: str) -> None:
    k_forced = 8  # large enough that the forced shares bind at this budget (KataGo's 2 binds at more visits)
    forced, priors, total = _visited(f"rise-mcts:weights={weights},batch_size=1,tree_reuse=false,forced_playouts={k_forced}",
                                     board.new_position("crazyhouse"), 200)
    plain, pp, ptotal = _visited(f"rise-mcts:weights={weights},batch_size=1,tree_reuse=false",
                                 board.new_position("crazyhouse"), 200)

    def short(ns: list[float] | list[int], ps: list[float], n_total: float) -> list[int]:
        # a visited move below its forced share sqrt(k P N) (one visit of slack: the share grows as N does)
        return [i for i, n in enumerate(ns) if n > 0 and n + 1 < math.sqrt(k_forced * ps[i] * n_total) - 1e-9]

    # each move the search visited was visited on until N(a) >= sqrt(k P N), but for one the tree
    # rule opened last (forced from its first visit on, it ran out of budget: here 3 visits) ...
    assert len(short(forced, priors, total)) <= 1
    # ... which plain PUCT does not do (18 of its 20 moves are short here), and no move was forced
    # before its first visit (3 of the 20 were never visited)
    assert len(short(plain, pp, ptotal)) >= 10
    assert sum(1 for n in forced if n > 0) < len(forced)


def test_a_pruned_target_sums_to_one_and_drops_only_forced_visits() -> None:
    # the shipped network: a real prior, so some forced visits go to moves the search would not want
    eng = _engine(f"rise-mcts:batch_size=1,tree_reuse=false,{KATAGO}")
    eng.new_game(2)
    eng.play(board.new_position("crazyhouse"), Limits(nodes=300))
    tree, root, rule = _root(eng)
    cfg = eng.search.config
    target = dict(eng.policy_target())
    assert abs(sum(target.values()) - 1.0) < 1e-9 and min(target.values()) >= 0.0
    e0, k = int(tree.nd_edge0[root]), int(tree.nd_nedges[root])
    ns = [tree.edge_n(e) for e in range(e0, e0 + k)]
    kept = rule.pruned_visits(tree, root)
    total = float(sum(ns))
    top = int(np.argmax(ns))
    assert kept[top] == ns[top]  # the most visited move keeps every visit
    c = cpuct(cfg.settings(PUCTParams), total) * math.sqrt(total)
    ud = u_divisor(cfg.settings(PUCTParams), total)
    best = tree.edge_q(e0 + top) + c * tree.ed_prior[e0 + top] / (ud + ns[top])
    dropped = 0.0
    for i in range(k):
        assert 0.0 <= kept[i] <= ns[i]
        if kept[i] < ns[i]:
            forced = math.sqrt(2 * tree.ed_prior[e0 + i] * total)
            # no more than its forced playouts (or the last visit of a move reduced to one) ...
            assert ns[i] - kept[i] <= math.ceil(forced) + 1
            if kept[i] > 0:  # ... and its PUCT score at the visits kept stays at most the best move's
                assert tree.edge_q(e0 + i) + c * tree.ed_prior[e0 + i] / (ud + kept[i]) <= best + 1e-9
            dropped += ns[i] - kept[i]
    assert dropped > 0  # forced visits, taken out
    moves = [int(tree.ed_move[e]) for e in range(e0, e0 + k)]
    assert all(abs(target[m] - kept[i] / sum(kept)) < 1e-9 for i, m in enumerate(moves))
    # pruning off: the target is the visit shares
    off = _engine("rise-mcts:batch_size=1,tree_reuse=false,forced_playouts=2")
    off.new_game(2)
    off.play(board.new_position("crazyhouse"), Limits(nodes=300))
    t3, r3, _ = _root(off)
    shares = [t3.edge_n(e) / t3.nd_sum_n[r3] for e in range(int(t3.nd_edge0[r3]), int(t3.nd_edge0[r3]) + k)]
    assert [p for _, p in off.policy_target()] == pytest.approx(shares)


def test_fast_searches_have_no_noise_and_no_forced_playouts(weights: str) -> None:
    pos = board.new_position("crazyhouse")
    noisy = _engine(f"rise-mcts:weights={weights},batch_size=1,tree_reuse=false,dirichlet_epsilon=0.25,{KATAGO}")
    clean = _engine(f"rise-mcts:weights={weights},batch_size=1,tree_reuse=false")
    for eng in (noisy, clean):
        eng.new_game(3)
    a = noisy.play(pos.copy(), Limits(nodes=16, fast=True))
    b = clean.play(pos.copy(), Limits(nodes=16))
    assert noisy.search.root_stats() == clean.search.root_stats() and a.move == b.move
    # the same search as a full one: noise on the root's priors
    noisy.new_game(3)
    noisy.play(pos.copy(), Limits(nodes=16))
    assert [p for *_, p in noisy.search.root_stats()] != [p for *_, p in clean.search.root_stats()]


def test_the_katago_switches_need_puct() -> None:
    with pytest.raises(MCTSConfigError, match="forced_playouts needs a root rule that carries it out .root_rule=puct"):
        MCTSConfig.of(root_rule="gumbel", score_formula="gumbel", forced_playouts=2).validate()
    with pytest.raises(MCTSConfigError, match="temperature_visits needs score_formula=crazyara with root_rule=puct"):
        MCTSConfig.of(score_formula="sixtyfour", temperature_visits=True).validate()
    with pytest.raises(MCTSConfigError, match="epsilon_greedy needs a root rule"):
        MCTSConfig.of(root_rule="gumbel", epsilon_greedy=0.1).validate()
    MCTSConfig.of(score_formula="sixtyfour", epsilon_greedy=0.1).validate()  # any tree rule below PUCT's root
    with pytest.raises(MCTSConfigError, match="removes forced playouts"):
        MCTSConfig.of(policy_target_pruning=True).validate()


def test_selfplay_adds_them_and_a_reference_search_takes_every_exploration_off() -> None:
    from experiments.selfplay.games import selfplay_engine, without_exploration

    cfg = selfplay_engine("rise-mcts", "crazyhouse").config
    assert cfg.exploration.forced_playouts == 2 and cfg.exploration.policy_target_pruning and cfg.choice.temperature_visits and cfg.exploration.dirichlet_epsilon == 0.25
    ref = without_exploration(selfplay_engine("rise-mcts:dirichlet_epsilon=0.1", "crazyhouse")).config
    assert (ref.exploration.dirichlet_epsilon, ref.choice.temperature, ref.exploration.forced_playouts, ref.exploration.policy_target_pruning) == (0.0, 0.0, 0.0, False)


def test_the_reference_table_pairs_each_target_with_its_prior(tmp_path: Path, weights: str) -> None:
    make_dataset(str(tmp_path / "d"), "crazyhouse", games=30)
    rows = targets.measure_reference([f"rise-mcts:weights={weights},batch_size=1"], [str(tmp_path / "d")], 24,
                                     positions=10, nodes=8, seed=1, progress=False, playout_cap=(0.5, 2))
    prior, target, ref = rows
    assert [r["kind"] for r in rows] == ["prior", "target", "reference"] and prior["positions"] == target["positions"] > 0
    assert ref["top"] == 1.0 and ref["ce_lo"] <= ref["ce"] <= ref["ce_hi"]
    assert target["ce_minus_prior"] == pytest.approx(target["ce"] - prior["ce"], abs=2e-4)
    assert target["ce_minus_prior_lo"] <= target["ce_minus_prior"] <= target["ce_minus_prior_hi"]
    text = targets.format_reference(rows, markdown=True)
    assert text.count("\n| ") == 3 and "log 10 nats" in text
    with pytest.raises(targets.DataError, match="more nodes than the target"):
        targets.measure_reference([f"rise-mcts:weights={weights}"], [str(tmp_path / "d")], 8, nodes=8, progress=False)


def _rows(prior_ce: float, ce: float, entropy: float, ref_entropy: float) -> list[dict[str, object]]:
    return [{"name": "prior", "ce": prior_ce, "entropy": 2.0}, {"name": "target t", "ce": ce, "entropy": entropy},
            {"name": "reference", "ce": 1.1, "entropy": ref_entropy}]


def test_gate0_names_the_figure_that_fails() -> None:
    assert targets.gate0(_rows(1.6, 1.5, 1.0, 1.1)) == []
    why = targets.gate0(_rows(1.6, 2.1, 1.0, 1.1))
    assert len(why) == 1 and "2.100 nats is not below the prior's 1.600" in why[0]
    why = targets.gate0(_rows(1.6, 1.5, 0.5, 1.1))
    assert len(why) == 1 and "entropy 0.500 nats is below 0.8 x the reference's 1.100" in why[0]


def _gated_config(tmp_path: Path, gate1: str = "") -> str:
    from tests.test_rl import _rounds_config

    path = _rounds_config(tmp_path)
    text = open(path).read().replace("[rate]", f"[gate0]\nenabled = true\ndata = [\"{tmp_path / 'sup'}\"]\npositions = 6\n"
                                               f"reference = 12\n\n[gate1]\nenabled = true\ndata = [\"{tmp_path / 'sup'}\"]\n"
                                               f"{gate1}\n\n[rate]")
    open(path, "w").write(text)
    return path


def test_gate0_refuses_the_loop_before_any_game_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _gated_config(tmp_path)
    monkeypatch.setattr(targets, "measure_reference", lambda *a, **k: _rows(1.6, 2.1, 0.5, 1.1))
    cfg = rl.parse(path)
    with pytest.raises(rl_gates.GateError, match=r"^gate 0 refuses the loop before any game: target t: cross-entropy"):
        rl.run(cfg, progress=False, until="selfplay")
    assert not os.path.exists(cfg.gen_dir("puct", 1))  # no game played
    assert json.loads((tmp_path / "out" / rl_gates.GATE0).read_text())["value"][1]["ce"] == 2.1


def test_gate0_refusal_on_the_command_line_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _gated_config(tmp_path)
    monkeypatch.setattr(targets, "measure_reference", lambda *a, **k: _rows(1.6, 1.5, 0.5, 1.1))
    rc, _, err = run_cli(capsys, "rl", path, "--quiet")
    assert rc == 2 and one_line_error(err).startswith("searchbench: error: gate 0 refuses the loop before any game")
    assert "entropy 0.500 nats is below 0.8 x the reference's 1.100" in err


def test_gate1_stops_or_halves_the_learning_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"policy_loss": 2.0, "value_loss": 0.6, "policy_entropy": 2.0, "policy_acc": 0.4}
    worse = {**base, "policy_loss": 2.05}
    calls: list[str] = []

    def figures(weights: str, data: list[str]) -> dict[str, float]:
        calls.append(weights)
        return dict(base if weights.endswith("tiny.pt") else worse)

    monkeypatch.setattr(rl_gates, "heldout_figures", figures)
    path = _gated_config(tmp_path, "on_fail = \"stop\"")
    text = open(path).read().replace("enabled = true\ndata", "enabled = false\ndata", 1)  # gate 0 off here
    open(path, "w").write(text)
    cfg = rl.parse(path)
    summary = rl.run(cfg, progress=False, until="train")
    assert summary["stopped"].startswith("gate 1 stops the loop: puct round 1 (lr 0.01): held-out policy NLL "
                                         "2.0500 is more than 0.02 above round 0's 2.0000")
    st = json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())
    assert st["gens"]["1"]["gate1"]["passed"] is False and "2" not in st["gens"]  # no round after it
    assert st["gens"]["1"]["gate1_stopped"] == summary["stopped"]
    assert rl.run(cfg, progress=False, until="train")["stopped"] == summary["stopped"]  # a resume stops there too
    # halve: trained again at half the rate, twice, then stopped; each failure recorded
    import shutil

    shutil.rmtree(tmp_path / "out")
    open(path, "w").write(text.replace('on_fail = "stop"', 'on_fail = "halve"\nretries = 2'))
    cfg = rl.parse(path)
    assert "round 1 (lr 0.0025)" in rl.run(cfg, progress=False, until="train")["stopped"]
    st = json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())
    assert [f["lr"] for f in st["gens"]["1"]["gate1_failed"]] == [0.01, 0.005] and st["lr"] == 0.0025
    # a passing round goes on
    shutil.rmtree(tmp_path / "out")
    monkeypatch.setattr(rl_gates, "heldout_figures", lambda w, d: dict(base))
    cfg = rl.parse(path)
    rl.run(cfg, progress=False, until="train")
    st = json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())
    assert st["gens"]["1"]["gate1"]["passed"] and "train" in st["gens"]["2"]


def test_calibration_keeps_the_largest_rate_that_lowers_the_heldout_nll(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_rl import _rounds_config

    path = _rounds_config(tmp_path)
    text = open(path).read().replace("[rate]", f"[calibrate]\nlrs = [0.1, 0.01, 0.001]\ncpu_seconds = 2\n"
                                               f"data = [\"{tmp_path / 'sup'}\"]\n\n[rate]")
    open(path, "w").write(text)
    nll = {"tiny.pt": 2.0, "lr-0.1": 2.5, "lr-0.01": 1.9, "lr-0.001": 1.95}

    def figures(weights: str, data: list[str]) -> dict[str, float]:
        key = next(k for k in nll if k in weights)
        return {"policy_loss": nll[key], "value_loss": 0.5, "policy_entropy": 2.0, "policy_acc": 0.3}

    monkeypatch.setattr(rl_gates, "heldout_figures", figures)
    cfg = rl.parse(path)
    result = rl_gates.calibrate(cfg, progress=False)
    assert result["chosen"] == 0.01 and [t["lr"] for t in result["tries"]] == [0.1, 0.01, 0.001]
    assert all(t["samples"] > 0 for t in result["tries"])
    nll.update({"lr-0.01": 2.1, "lr-0.001": 2.0})
    for d in ("lr-0.01", "lr-0.001"):  # measured again only where the record is gone
        os.remove(tmp_path / "out" / "calibrate" / d / "calibration.json")
    with pytest.raises(rl_gates.GateError, match="no learning rate lowers the held-out policy NLL"):
        rl_gates.calibrate(cfg, progress=False)


def _game(white: str, black: str, result: str, opening: str, match: str) -> GameRecord:
    g = GameRecord.__new__(GameRecord)
    g.white, g.black, g.result, g.match, g.pair = white, black, result, match, 0
    g.opening, g.opening_fen, g.opening_moves = opening, "startpos", [opening]
    return g


def test_the_joint_bootstrap_resamples_an_opening_once_across_pairings() -> None:
    games = [_game("a", "b", "1-0", op, "m1") for op in ("e2e4", "d2d4", "c2c4")]
    games += [_game("a", "c", "0-1", op, "m2") for op in ("e2e4", "d2d4", "c2c4")]
    joint = ratings._Data(ratings.from_games(games, joint_openings=True))
    apart = ratings._Data(ratings.from_games(games))
    assert joint.n_units == 3 and apart.n_units == 2  # per match: one unit a (match, pair)
    # the same opening's games across both pairings share their unit: one draw takes both
    units = {(g.match, g.opening_moves[0]): int(u) for g, u in zip(games, joint.unit_of)}
    assert all(units[("m1", op)] == units[("m2", op)] for op in ("e2e4", "d2d4", "c2c4"))


def test_the_loop_state_carries_to_a_new_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--state-to copies the small state out after a run; --state-from on another folder (a new
    machine) restores it, and the next round goes on from it: round 1 is not played again and round 2
    trains from round 1's network and optimizer."""
    from experiments.cli.main import main as cli
    from experiments.selfplay import state as rl_state
    from tests.test_rl import _rounds_config

    path = _rounds_config(tmp_path)
    text = open(path).read().replace('generations = 2', 'generations = 1')
    open(path, "w").write(text)
    assert cli(["rl", path, "--quiet", "--until", "gate", "--state-to", str(tmp_path / "state")]) == 0
    files = set(rl_state.state_files(rl.parse(path)))
    assert {"loop.json", "puct/state.json", "puct/gen-001/train/model.pt", "puct/gen-001/train/checkpoint.pt"} <= files
    assert any(f.startswith("puct/gen-001/selfplay/") and f.endswith(".npz") for f in files)
    shards = {f for f in files if f.endswith(".npz")}
    assert all((tmp_path / "state" / f).is_file() for f in files - shards)
    assert not any((tmp_path / "state" / f).exists() for f in shards)  # packed: one archive an arm
    window = (tmp_path / "state" / "puct" / rl_state.WINDOW).read_bytes()
    # a new machine: another folder, the state restored, one more round
    moved = text.replace(f'out = "{tmp_path / "out"}"', f'out = "{tmp_path / "out2"}"').replace("generations = 1", "generations = 2")
    open(path, "w").write(moved)
    assert cli(["rl", path, "--quiet", "--until", "train", "--state-from", str(tmp_path / "state")]) == 0
    st = json.loads((tmp_path / "out2" / "puct" / rl.STATE).read_text())
    assert st["gens"]["1"] == json.loads((tmp_path / "out" / "puct" / rl.STATE).read_text())["gens"]["1"]
    assert st["gens"]["2"]["train"]["init"] == 1
    for f in shards:  # the shards written back hold the same arrays
        with np.load(tmp_path / "out" / f) as a, np.load(tmp_path / "out2" / f) as b:
            assert sorted(a.files) == sorted(b.files)
            assert all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f")
                       for k in a.files)
    assert "gen-001/train/checkpoint.pt" in (tmp_path / "out2" / "puct" / "gen-002" / "train" / "command.txt").read_text()
    assert "state:" in capsys.readouterr().out
    # exported again over the same folder: round 1's optimizer, no longer the newest, goes; others stay
    (tmp_path / "state" / "NOTES.txt").write_text("mine")
    assert cli(["rl", path, "--quiet", "--until", "train", "--state-to", str(tmp_path / "state")]) == 0
    assert (tmp_path / "state" / "puct" / "gen-002" / "train" / "checkpoint.pt").is_file()
    assert not (tmp_path / "state" / "puct" / "gen-001" / "train" / "checkpoint.pt").exists()
    assert (tmp_path / "state" / "puct" / "gen-001" / "selfplay" / "selfplay.json").is_file()  # the window's games stay
    assert (tmp_path / "state" / "NOTES.txt").read_text() == "mine"
    again = (tmp_path / "state" / "puct" / rl_state.WINDOW).read_bytes()
    assert len(again) > len(window)  # round 2's games too
    ck = tmp_path / "state" / "puct" / "gen-002" / "train" / "checkpoint.pt"
    before = ck.read_bytes()
    assert cli(["rl", path, "--quiet", "--until", "train", "--state-to", str(tmp_path / "state")]) == 0
    # the same bytes: git stays clean
    assert (tmp_path / "state" / "puct" / rl_state.WINDOW).read_bytes() == again and ck.read_bytes() == before
    # a damaged archive: one line, before anything runs
    (tmp_path / "state" / "puct" / rl_state.WINDOW).write_bytes(again[:100])
    open(path, "w").write(moved.replace(f'{tmp_path / "out2"}', f'{tmp_path / "out3"}'))
    rc, _, err = run_cli(capsys, "rl", path, "--quiet", "--state-from", str(tmp_path / "state"))
    assert rc == 2 and "window.tar.xz is damaged" in err and "Traceback" not in err
    rc = cli(["rl", path, "--quiet", "--state-from", str(tmp_path / "nothing")])
    assert rc == 2


def _archive(members: list[tuple[str, bytes]]) -> bytes:
    import io
    import lzma
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return lzma.compress(buf.getvalue())


def test_a_state_window_is_read_with_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 81, j01 and j02: the carried window is read as a stream with a bound on what it
    decompresses to and on each member (its npy header against its size); a bomb of zeros and a
    member claiming 2e11 items are one 'damaged' line, before any file is written; a good window
    round-trips array for array."""
    import io
    import numpy as np
    from experiments.paths import InputError
    from experiments.selfplay import state as rl_state

    good = io.BytesIO()
    np.save(good, np.arange(12, dtype=np.int16).reshape(3, 4))
    ok = tmp_path / "ok.tar.xz"
    ok.write_bytes(_archive([("arm/selfplay/shard-0/move.npy", good.getvalue())]))
    out = tmp_path / "out"
    assert rl_state._write_shards(rl_state._read_window(ok), out) == 1
    with np.load(out / "arm/selfplay/shard-0.npz") as z:
        assert (z["move"] == np.arange(12, dtype=np.int16).reshape(3, 4)).all()

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (200_000_000_000,)})
    claims = tmp_path / "claims.tar.xz"
    claims.write_bytes(_archive([("arm/selfplay/shard-1/move.npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + b"\0" * 64)]))
    monkeypatch.setattr(rl_state, "WINDOW_SLACK", 1 << 20)
    bomb = tmp_path / "bomb.tar.xz"
    bomb.write_bytes(_archive([("arm/selfplay/shard-2/move.npy", b"\0" * (8 << 20))]))
    assert bomb.stat().st_size < 10_000
    for archive, needle in ((claims, "claims 200,000,000,000 items"), (bomb, "unpacks to more than")):
        dest = tmp_path / f"out-{archive.stem}"
        with pytest.raises(InputError, match="is damaged") as e:
            rl_state._write_shards(rl_state._read_window(archive), dest)
        assert needle in str(e.value) and len(str(e.value).splitlines()) == 1
        assert not dest.exists()
