"""What a report's engines ran with, and whether today's still do (:mod:`reports.played`): games store
every option's effective value, a report page records them per player, the answer page marks a
report whose engines' defaults moved since as stale, naming the options."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines import registry
from reports import html as page
from reports import played


def _today(spec: str) -> dict[str, str]:
    return registry.effective_values(registry.resolve(spec))


def test_a_report_of_todays_engines_is_current_and_a_moved_default_is_named(tmp_path: Path) -> None:
    now = _today("rise-mcts")
    assert now["check_enhancement"] == "false"  # the value the stale record below differs in
    old = dict(now, check_enhancement="true", cpuct_init="2.0")
    players = played.collect([("baseline", {"engine": "rise-mcts", "effective": now}),
                              ("gumbel", {"engine": "rise-gumbel:c_scale=0.1", "effective": _today("rise-gumbel:c_scale=0.1")}),
                              ("fsf", {"engine": "fairy-stockfish"})])
    assert played.write(tmp_path, players) == tmp_path / played.FILE
    assert played.status(tmp_path) == ("current", [])
    players["baseline"]["effective"] = old
    played.write(tmp_path, players)
    state, why = played.status(tmp_path)
    assert state == "stale" and why == ["baseline: check_enhancement true → false, cpuct_init 2.0 → 2.5"]


def test_an_option_added_since_is_no_difference_and_one_removed_is(tmp_path: Path) -> None:
    now = _today("rise-mcts")
    older = {k: v for k, v in now.items() if k != "value_weights"}  # an option that came later
    assert played.differences({"p": {"engine": "rise-mcts", "effective": older}}) == []
    gone = dict(now, retired_switch="true")
    assert played.differences({"p": {"engine": "rise-mcts", "effective": gone}}) == ["p: retired_switch true → (gone)"]
    assert played.differences({"p": {"engine": "no-such-engine", "effective": now}})[0].startswith(
        "p: `no-such-engine` is no engine today")
    # an option added since at its search's default, whose built-in default then moved: a difference
    # (rise-ab played without policy_order, as policy_order=false plays; today's rise-ab orders by it)
    ab = _today("rise-ab")
    assert ab["policy_order"] == "true" and registry.effective_values(registry.resolve("rise-ab:policy_order=false"))
    before = {k: v for k, v in ab.items() if k != "policy_order"}
    assert played.differences({"p": {"engine": "rise-ab", "effective": before}}) == [
        "p: policy_order (not an option then: false) → true"]
    assert played.differences({"p": {"engine": "rise-ab:policy_order=false", "effective": before}}) == []


def test_one_name_with_two_settings_is_stale_and_an_unrecorded_report_says_so(tmp_path: Path) -> None:
    now = _today("rise-mcts")
    players = played.collect([("a", {"engine": "rise-mcts", "effective": now}),
                              ("a", {"engine": "rise-mcts", "effective": dict(now, fpu="0.0")})])
    assert len(players["a"]["variants"]) == 2
    lines = played.differences(players)
    assert "a: fpu 0.0 → -1.0" in lines and "a: its games were played with 2 different settings" in lines
    # games from before settings were recorded, beside recorded ones of the same spec: not a difference
    mixed = played.collect([("b", {"engine": "rise-mcts"}), ("b", {"engine": "rise-mcts", "effective": now}),
                            ("b", {"engine": "rise-mcts"})])
    assert "variants" not in mixed["b"] and mixed["b"]["effective"] == now and played.differences(mixed) == []
    assert played.status(tmp_path)[0] == "unrecorded"
    (tmp_path / played.FILE).write_text("{not json")
    assert played.status(tmp_path)[0] == "unrecorded"
    played.write(tmp_path, played.collect([("x", {"engine": "rise-mcts"})]))
    assert played.status(tmp_path) == ("unrecorded", ["its games stored no effective settings"])


def test_games_store_effective_settings_and_the_answer_page_marks_stale_reports(tmp_path: Path) -> None:
    """A real match stores each in-process engine's effective options; the page written from its games
    records them; the index says today's, and stale once a recorded value differs."""
    from experiments.harness.store import Store
    from experiments.harness.webpage import report_page
    from experiments.notebook import match

    db = tmp_path / "m.sqlite"
    match("material-mcts", "material-ab", games=2, nodes=8, db=db, concurrency=2)
    with Store(str(db), readonly=True) as st:
        games = st.games()
    assert games and games[0].white_settings["effective"] == _today(games[0].white_settings["engine"])
    for rel in ("cur", "old", "unrec"):
        (tmp_path / "reports" / rel).mkdir(parents=True)
        (tmp_path / "reports" / rel / "ablation.md").write_text(f"# {rel}\n\n**Findings.** {rel} +1 [-2, +4].\n")
    report_page(tmp_path / "reports" / "cur", games, "chess", db)
    report_page(tmp_path / "reports" / "old", games, "chess", db)
    rec = json.loads((tmp_path / "reports" / "old" / played.FILE).read_text())
    assert set(rec) == {"material-mcts", "material-ab"}
    rec["material-mcts"]["effective"]["cpuct_init"] = "9.0"
    (tmp_path / "reports" / "old" / played.FILE).write_text(json.dumps(rec))
    text = page.index_page(tmp_path / "reports").read_text()
    assert 'data-report="cur" data-engines="current"' in text and 'data-report="unrec" data-engines="unrecorded"' in text
    assert 'data-report="old" data-engines="stale"' in text and "material-mcts: cpuct_init 9.0 →" in text
    assert "1 stale." in text


def test_the_network_is_a_setting_a_replaced_default_network_marks_the_report_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Games record the digest of the network their engine loaded (the variant's default here); the
    report records it per player; replacing the shipped file makes the report stale, naming the network."""
    import shutil

    from evaluators import neural
    from evaluators.families import WEIGHTS_DIR, file_id
    from experiments.harness.store import Store
    from experiments.harness.webpage import report_page
    from experiments.notebook import match

    shipped = tmp_path / "weights"
    shipped.mkdir()
    net = shipped / "rise_crazyhouse.pt"
    shutil.copy(Path(WEIGHTS_DIR) / net.name, net)
    monkeypatch.setattr(neural, "WEIGHTS_DIR", str(shipped))
    played.network_today.cache_clear()
    db = tmp_path / "m.sqlite"
    match("rise-mcts", "material-ab", games=2, nodes=4, db=db, variant="crazyhouse", concurrency=1)
    with Store(str(db), readonly=True) as st:
        games = st.games()
    folder = tmp_path / "zh"
    folder.mkdir()
    (folder / "ablation.md").write_text("# zh\n\n**Findings.** x +1 [-2, +4].\n")
    report_page(folder, games, "crazyhouse", db)
    rec = json.loads((folder / played.FILE).read_text())
    before = file_id(net)
    assert rec["rise-mcts"]["network"] == before and rec["rise-mcts"]["variant"] == "crazyhouse"
    assert "network" not in rec["material-ab"]  # the classical evaluator loads none
    assert played.status(folder) == ("current", [])
    with open(net, "ab") as f:  # the shipped network replaced by another (a changed file)
        f.write(b"\0")
    played.network_today.cache_clear()
    state, why = played.status(folder)
    assert state == "stale" and why == [f"rise-mcts: network {before} → {file_id(net)}"]
    played.network_today.cache_clear()


def test_a_network_not_on_this_machine_is_not_compared(tmp_path: Path) -> None:
    """A self-play run's network (under runs/, not in a clone) cannot be checked: not stale; the
    shipped default of a variant can, and a record naming another digest of it is."""
    now = _today("rise-mcts")
    missing = {"engine": f"rise-mcts:weights={tmp_path / 'gen-005.pt'}", "effective": None,
               "network": "gen-005.pt:0123456789", "variant": "crazyhouse"}
    missing["effective"] = _today(missing["engine"])
    assert played.differences({"g5": missing}) == []
    old = {"engine": "rise-mcts", "effective": now, "network": "rise_crazyhouse.pt:0000000000", "variant": "crazyhouse"}
    (line,) = played.differences({"p": old})
    from evaluators.families import shipped_name

    assert line.startswith(f"p: network rise_crazyhouse.pt:0000000000 → {shipped_name('rise', 'crazyhouse')}:")


def test_a_head_swap_records_both_networks() -> None:
    """``value_weights``: the value network is a second network of the engine; both are compared."""
    from evaluators.families import WEIGHTS_DIR, file_id

    spec = "rise-mcts:value_weights=rise_chess.pt"
    from evaluators.families import shipped_name

    both = (f"{file_id(Path(WEIGHTS_DIR) / shipped_name('rise', 'crazyhouse'))} + "
            f"{file_id(Path(WEIGHTS_DIR) / 'rise_chess.pt')}")
    rec = played.collect([("swap", {"engine": spec, "effective": _today(spec), "variant": "crazyhouse",
                                     "networks": both.split(" + ")})])
    assert rec["swap"]["network"] == both and played.differences(rec) == []
    rec["swap"]["network"] = both.split(" + ")[0] + " + rise_chess.pt:0000000000"
    (line,) = played.differences(rec)
    assert line == f"swap: network {rec['swap']['network']} → {both}"
