"""The self-play loop end to end on a tiny network: stages resume after a stop at each of them
without losing or repeating games, the gate's decisions are stored and reported, bad configs are
one line."""
from __future__ import annotations

import csv
import json
import os

import pytest

from experiments.harness.store import Store
from experiments.harness.tomlconfig import ConfigError
from experiments.selfplay import loop as rl
from experiments.training import datagen
from tests.test_selfplay import tiny_weights
from search.puct import PUCTParams

CONFIG = """
name = "tiny"
{top}
out = "{out}"

[[arms]]
name = "{arm}"
engine = "{engine}"

[selfplay]
games = 16
nodes = 8
concurrency = 8
max_plies = 30
shard_games = 6

[train]
epochs = 1
batch = 32
lr = 0.01
val_fraction = 0.25
select_fraction = 0.25

[gate]
games = 4
nodes = 8
threshold = 0.5

[rate]
games = 8
nodes = 8
anchors = [{{ name = "material", engine = "material-ab", nodes = 20 }}]
bootstrap = 10
report_dir = "{report}"
"""


def _config(tmp_path, arm: str = "gumbel", engine: str = "rise-gumbel:batch_size=2", **top: str) -> str:  # type: ignore[no-untyped-def]
    """The tiny loop's config; ``top``: top-level keys (TOML text) replacing or adding to the defaults."""
    keys = {"initial": f'"{tiny_weights(str(tmp_path / "tiny.pt"))}"', "generations": "2", **top}
    text = CONFIG.format(top="\n".join(f"{k} = {v}" for k, v in keys.items()), out=tmp_path / "out", arm=arm,
                         engine=engine, report=tmp_path / "report")
    path = tmp_path / "loop.toml"
    path.write_text(text)
    return str(path)


def _uids(directory: str) -> list[int]:
    return datagen.load_dataset(directory).game_uid.tolist()


def test_tiny_loop_resumes_at_every_stage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = rl.parse(_config(tmp_path))
    gen2 = os.path.join(cfg.gen_dir("gumbel", 2), "selfplay")
    # stopped after the last generation's self-play, then after its training: nothing is played twice
    rl.run(cfg, progress=False, until="selfplay")
    first_uids = _uids(os.path.join(cfg.gen_dir("gumbel", 1), "selfplay"))
    uids = _uids(gen2)
    state = json.loads((tmp_path / "out" / "gumbel" / rl.STATE).read_text())
    assert set(state["gens"]["1"]) == {"selfplay", "train", "gate"} and set(state["gens"]["2"]) == {"selfplay"}
    rl.run(cfg, progress=False, until="train")
    assert _uids(gen2) == uids and os.path.exists(os.path.join(cfg.gen_dir("gumbel", 2), "train", "model.pt"))
    # a gate killed part-way: its stored games are kept, the rest played, none twice
    db = os.path.join(cfg.gen_dir("gumbel", 2), "gate.sqlite")
    summary = rl.run(cfg, progress=False)
    assert _uids(gen2) == uids and len(uids) == 16 == len(set(uids)) and not set(uids) & set(first_uids)
    with Store(db, readonly=True) as store:
        keys = [g.key for g in store.games()]
    assert len(keys) == 4 == len(set(keys))
    # the decisions: stored, and the best generation follows them
    gates = [summary["gumbel"]["gens"][str(g)]["gate"] for g in (1, 2)]
    best = 0
    for g, d in enumerate(gates, 1):
        assert d["games"] == 4 and d["accepted"] == (d["score"] >= 0.5)
        best = g if d["accepted"] else best
    assert summary["gumbel"]["best"] == best
    card = (tmp_path / "out" / "gumbel" / "gen-002" / "card.md").read_text()
    assert ("accepted" if gates[1]["accepted"] else "rejected") in card and "gate against generation" in card
    # the report: every generation rated, the gate decisions and the command
    report = tmp_path / "report"
    rows = list(csv.DictReader(open(report / "ratings.csv")))
    assert [r["player"] for r in rows if r["arm"] == "gumbel"] == ["gumbel-g0", "gumbel-g1", "gumbel-g2"]
    assert {r["player"] for r in rows if r["arm"] == "anchor"} == {"material"}
    text = (report / "README.md").read_text()
    assert "## Gate decisions" in text and f"searchbench rl {cfg.path}" in text
    for stem in ("elo_vs_generation", "elo_vs_selfplay_games", "elo_vs_cpu_hours"):
        assert (report / f"{stem}.png").exists() and (report / f"{stem}.svg").exists()
    # a finished loop: a rerun plays nothing and writes the same ratings
    before = (report / "ratings.csv").read_text()
    rl.run(cfg, progress=False)
    assert (report / "ratings.csv").read_text() == before


@pytest.mark.parametrize("extra, match", [
    ({"generations": "0"}, "generations"),
    ({"model": '"deepchess"'}, "model"),
    ({"initial": '"/no/such.pt"'}, "no weights file"),
    ({"typo_key": "1"}, "unknown key"),
])
def test_bad_configs_are_one_line(tmp_path, extra, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=match):
        rl.parse(_config(tmp_path, **extra))


def test_bad_arm_engine_and_the_command_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from experiments.cli.main import main

    with pytest.raises(ConfigError, match="MCTS-family"):
        rl.parse(_config(tmp_path, arm="ab", engine="material-ab"))
    with pytest.raises(ConfigError, match="classical evaluator"):
        rl.parse(_config(tmp_path, arm="m", engine="material-mcts"))
    assert main(["rl", _config(tmp_path, arm="ab", engine="material-ab")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MCTS-family" in err


@pytest.mark.slow
def test_two_generations_on_a_two_node_ray_cluster(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Self-play workers as Ray actors on a two-node cluster (simulated on this machine), training
    and gating on the driver: the same loop, the same games."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    try:
        path = _config(tmp_path)
        text = open(path).read().replace("shard_games = 6", f'shard_games = 6\nbackend = "ray"\n'
                                                            f'ray_address = "{cluster.address}"\nworkers = 2')
        open(path, "w").write(text)
        cfg = rl.parse(path)
        assert cfg.selfplay["backend"] == "ray"
        summary = rl.run(cfg, progress=False, until="gate")
        for gen in (1, 2):
            uids = _uids(os.path.join(cfg.gen_dir("gumbel", gen), "selfplay"))
            assert len(uids) == 16 == len(set(uids))
            assert summary["gumbel"]["gens"][str(gen)]["gate"]["games"] == 4
        ray.init(address=cluster.address)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_the_training_gain_difference_comes_from_the_same_bootstrap() -> None:
    import numpy as np

    from experiments.selfplay.report import _gain_difference

    class Fit:  # the fields of experiments.harness.ratings.Fit the report reads
        names = ["a-g0", "a-g1", "b-g0", "b-g1"]
        elo = np.array([-500.0, -480.0, 0.0, -60.0])
        samples = np.array([[-500.0 + e, -480.0 + e + k, 0.0, -60.0 + k] for e, k in
                            [(x, y) for x in (-50, 0, 50) for y in (-10, 0, 10)]] * 10)

    d, lo, hi = _gain_difference(Fit(), "a", "b", 1)
    # a gained 20, b lost 60: a's training gained 80 more; the players' shared shifts cancel
    assert d == 80.0 and lo == hi == 80.0
    assert _gain_difference(Fit(), "a", "b", 0)[0] == 0.0


def _rounds_config(tmp_path, extra_train: str = "", arms: str = "", gate: str = "") -> str:  # type: ignore[no-untyped-def]
    """The tiny loop in rounds, PUCT, with supervised data beside it (and ``arms``: more [[arms]])."""
    from tests.test_train import make_dataset

    sup = tmp_path / "sup"
    if not sup.exists():
        make_dataset(str(sup), "crazyhouse", games=40)
    path = _config(tmp_path, arm="puct", engine="rise-mcts:batch_size=2", mode='"rounds"')
    text = open(path).read()
    text = text.replace("select_fraction = 0.25", f'select_fraction = 0.25\nsupervised = ["{sup}"]\n{extra_train}')
    text = text.replace("[selfplay]", f"{arms}\n[selfplay]").replace("threshold = 0.5", f"threshold = 0.5\n{gate}")
    open(path, "w").write(text)
    return path


def test_rounds_train_one_network_continuously(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """lc0/KataGo's loop: no gate, each round from the last network and its optimizer state, a replay
    window counted in positions, supervised positions mixed in with a taper, PUCT's self-play target
    without check enhancement."""
    import torch

    path = _rounds_config(tmp_path, "window_positions = 1\nsupervised_fraction = 0.5\nsupervised_taper = 0.5")
    text = open(path).read().replace("lr = 0.01", "lr = 0.005")
    open(path, "w").write(text)
    cfg = rl.parse(path)
    assert cfg.mode == "rounds" and cfg.train["schedule"] == "constant" and not cfg.gate["enabled"]
    summary = rl.run(cfg, progress=False, until="gate")
    gens = summary["puct"]["gens"]
    assert summary["puct"]["best"] == 2 and all(gens[g]["gate"]["accepted"] and gens[g]["gate"]["games"] == 0
                                                 for g in ("1", "2"))
    from engines import registry

    assert registry.resolve(gens["1"]["selfplay"]["engine"]).config.settings(PUCTParams).check_enhancement is False
    # round 2 trained from round 1's network and optimizer, on round 2's games only (1 position is
    # reached by the newest round) and half as many supervised positions as round 1 (taper 0.5)
    assert gens["2"]["train"]["init"] == 1
    cmd = (tmp_path / "out" / "puct" / "gen-002" / "train" / "command.txt").read_text()
    assert "--optimizer-from" in cmd and "gen-001/train/checkpoint.pt" in cmd and "--schedule constant" in cmd
    data2 = gens["2"]["train"]["data"]
    assert data2[0].endswith("gen-002/selfplay") and data2[1].endswith("gen-002/supervised") and len(data2) == 2
    sup = [len(datagen.load_dataset(os.path.join(cfg.gen_dir("puct", g), "supervised")).move) for g in (1, 2)]
    own = [len(datagen.load_dataset(os.path.join(cfg.gen_dir("puct", g), "selfplay")).move) for g in (1, 2)]
    assert own[0] <= sup[0] <= own[0] + 45 and sup[1] < own[1] / 3 + 45  # fraction 0.5: 1:1; then 0.25: 1:3
    ck = torch.load(os.path.join(cfg.gen_dir("puct", 2), "train", "checkpoint.pt"), weights_only=True)
    assert ck["optimizer"]["param_groups"][0]["momentum"] == 0.9 and ck["optimizer"]["param_groups"][0]["lr"] == 0.005
    assert ck["optimizer"]["state"]  # momentum buffers, carried on


def test_a_control_arm_trains_on_the_supervised_data_for_the_same_cpu_time(tmp_path) -> None:  # type: ignore[no-untyped-def]
    arms = '[[arms]]\nname = "control"\nengine = "rise-mcts:batch_size=2"\nkind = "control"\n'
    cfg = rl.parse(_rounds_config(tmp_path, arms=arms))
    summary = rl.run(cfg, progress=False, until="gate")
    ctl, ref = summary["control"]["gens"]["1"], summary["puct"]["gens"]["1"]
    assert ctl["selfplay"]["games"] == 0 and not os.path.exists(os.path.join(cfg.gen_dir("control", 1), "selfplay"))
    assert ctl["train"]["data"] == cfg.train["supervised"] and summary["control"]["best"] == 2
    # equal process CPU seconds (getrusage: self-play's worker processes and training's threads), not wall
    budget = ref["selfplay"]["cpu"] + ref["train"]["cpu"]
    assert budget > 0 and ref["selfplay"]["cpu"] > 0
    cmd = (tmp_path / "out" / "control" / "gen-001" / "train" / "command.txt").read_text()
    assert f"--cpu-seconds {round(budget, 1)}" in cmd and "--minutes" not in cmd


@pytest.mark.parametrize("extra, match", [
    ('arms_first = 1', "unknown key"),
    ('control', "after a self-play arm"),
    ('guard', "regression guard is an SPRT"),
    ('tc', "is a bughouse key"),
])
def test_rounds_configs_refused(tmp_path, extra, match) -> None:  # type: ignore[no-untyped-def]
    if extra == "control":  # a control arm before any self-play arm (it trains for that arm's CPU time)
        path = _config(tmp_path)
        text = open(path).read().replace("[[arms]]", '[[arms]]\nname = "c"\nengine = "rise-mcts"\nkind = "control"\n\n[[arms]]', 1)
        open(path, "w").write(text)
    elif extra == "tc":  # a four-seat clock in a one-board loop
        path = _config(tmp_path)
        text = open(path).read().replace("[selfplay]", '[selfplay]\ntc = "60+0"')
        open(path, "w").write(text)
    elif extra == "guard":
        path = _rounds_config(tmp_path, gate="enabled = true\nguard = true")
    else:
        path = _rounds_config(tmp_path, extra_train=extra)
    with pytest.raises(ConfigError, match=match):
        rl.parse(path)


def test_every_round_is_rated_under_the_same_fixed_searches(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 31 item 4: each round's network of every arm under the same searches (the raw policy at
    one node; PUCT for the last round only, without anchors); round 0 is one player; each self-play
    round plays the control's round; the report gives both comparisons with intervals."""
    arms = '[[arms]]\nname = "control"\nengine = "rise-mcts:batch_size=2"\nkind = "control"\n'
    path = _rounds_config(tmp_path, arms=arms)
    text = open(path).read().replace("bootstrap = 10", "bootstrap = 10\nsearches = [\n"
                                     '  { name = "policy", engine = "rise-mcts:batch_size=1,tree_reuse=false", nodes = 1 },\n'
                                     '  { name = "puct8", engine = "rise-mcts:batch_size=2", nodes = 8, rounds = [2], anchors = false, games = 4, head_swaps = [2] },\n]')
    open(path, "w").write(text)
    cfg = rl.parse(path)
    assert [s["name"] for s in cfg.rate["searches"]] == ["policy", "puct8"]
    rl.run(cfg, progress=False)
    with open(tmp_path / "report" / "ratings.csv") as f:
        rows = list(csv.DictReader(f))
    policy = {r["player"] for r in rows if r["search"] == "policy"}
    assert policy == {"puct-g0@policy", "puct-g1@policy", "puct-g2@policy", "control-g1@policy", "control-g2@policy",
                      "material"}
    assert {r["player"] for r in rows if r["search"] == "puct8"} == {"puct-g0@puct8", "puct-g2@puct8", "control-g2@puct8",
                                                                     "puct-g2+vcontrol@puct8", "control-g2+vpuct@puct8"}
    with Store(str(tmp_path / "out" / "rate.sqlite")) as st:
        games = st.games()
    pairs: dict[frozenset[str], int] = {}
    for g in games:
        pairs[frozenset((g.white, g.black))] = pairs.get(frozenset((g.white, g.black)), 0) + 1
    assert pairs[frozenset(("puct-g2@policy", "control-g2@policy"))] == 8  # rate.games a comparison
    assert pairs[frozenset(("control-g1@policy", "puct-g0@policy"))] == 8
    assert pairs[frozenset(("puct-g0@policy", "material"))] == 8
    assert not any("material" in p and any("puct8" in x for x in p) for p in pairs)  # anchors = false
    assert pairs[frozenset(("puct-g2@puct8", "control-g2@puct8"))] == 4  # its own games a comparison
    # head swaps: each network with the other arm's value head against itself whole
    assert pairs[frozenset(("puct-g2+vcontrol@puct8", "puct-g2@puct8"))] == 4
    assert pairs[frozenset(("control-g2+vpuct@puct8", "control-g2@puct8"))] == 4
    swapped = next(g for g in games if "puct-g2+vcontrol@puct8" in (g.white, g.black))
    settings = swapped.white_settings if swapped.white == "puct-g2+vcontrol@puct8" else swapped.black_settings
    assert "value_weights=" in json.dumps(settings) and "control" in json.dumps(settings)
    # the raw policy player spends one evaluator call a move (the root's expansion)
    policy_moves = [m for g in games if "@policy" in g.white and "@policy" in g.black for m in g.move_stats]
    assert policy_moves and all(m.evals <= 1 for m in policy_moves)
    text = (tmp_path / "report" / "README.md").read_text()
    assert "under `policy`" in text and "Self-play against the control" in text and "| puct-g2@puct8 | control-g2@puct8 |" in text
    assert "### Head swaps under `puct8`" in text and "| puct-g2+vcontrol@puct8 | puct-g2@puct8 |" in text
    assert (tmp_path / "report" / "elo_vs_generation_policy.png").exists()


def test_the_loop_resolves_each_arms_engine_once(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The arm's engine text is resolved once, when the config is read; self-play, its exploration, the
    weights of each generation and the gate's players are values made from it (registry.extend), named
    by the same text as before (the run file and the game keys keep it)."""
    from engines import registry

    calls: list[str] = []
    real = registry.resolve

    def counting(text: str):  # type: ignore[no-untyped-def]
        calls.append(text)
        return real(text)

    monkeypatch.setattr(registry, "resolve", counting)
    cfg = rl.parse(_config(tmp_path, generations="1"))
    summary = rl.run(cfg, progress=False, until="gate")
    assert sorted(calls) == ["material-ab", "rise-gumbel:batch_size=2"]  # the arm's engine and the rating anchor
    state = json.loads((tmp_path / "out" / "gumbel" / rl.STATE).read_text())
    assert state["gens"]["1"]["selfplay"]["engine"] == \
        f"rise-gumbel:batch_size=2,weights={cfg.initial},gumbel_scale=1.0"
    assert summary is not None


def test_pairs_play_two_arms_head_to_head_and_pool_the_seeds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``pairs`` in a rating search: the two arms' same round play each other in the search's pool; the
    report gives each pair's difference and, over two pairs, their mean with its bootstrap interval."""
    arms = ('[[arms]]\nname = "puct2"\nengine = "rise-mcts:batch_size=2"\nseed = 2\n\n'
            '[[arms]]\nname = "puct3"\nengine = "rise-mcts:batch_size=2"\nseed = 3\n')
    path = _rounds_config(tmp_path, arms=arms)
    text = open(path).read().replace("generations = 2", "generations = 1").replace("bootstrap = 10", "bootstrap = 10\nsearches = [\n"
                                     '  { name = "policy", engine = "rise-mcts:batch_size=1,tree_reuse=false", nodes = 1, anchors = false,'
                                     ' pairs = [["puct", "puct2"], ["puct3", "puct2"]] },\n]')
    open(path, "w").write(text)
    cfg = rl.parse(path)
    assert cfg.rate["searches"][0]["pairs"] == [("puct", "puct2"), ("puct3", "puct2")]
    rl.run(cfg, progress=False)
    with Store(str(tmp_path / "out" / "rate.sqlite")) as st:
        games = st.games()
    met = {frozenset((g.white, g.black)) for g in games}
    assert frozenset(("puct-g1@policy", "puct2-g1@policy")) in met and frozenset(("puct3-g1@policy", "puct2-g1@policy")) in met
    assert frozenset(("puct-g1@policy", "puct3-g1@policy")) not in met
    text = (tmp_path / "report" / "README.md").read_text()
    assert "### Head to head under `policy`" in text and "| 1 | puct-g1@policy | puct2-g1@policy |" in text
    assert "| 1 | pooled | |" in text
    head = text.split("## Setup")[0]  # the headline names each arm and the pooled head to head
    assert "`policy`, head to head at round 1: `puct` − `puct2`" in head and "; pooled " in head and "`puct3`, the last round" in head
    bad = open(path).read().replace('["puct3", "puct2"]', '["puct3", "puct3"]')
    open(path, "w").write(bad)
    with pytest.raises(ConfigError, match="each pair is two different self-play arms"):
        rl.parse(path)
