"""Stored engine specs resolve to the same search (tests/golden_specs.py): the guard for replacing the
flat MCTSConfig by per-rule configs with flat aliases (issue 55)."""
from __future__ import annotations

import json

from tests.golden_specs import FLAT, GOLDEN, results


def test_every_stored_spec_resolves_to_the_pinned_search() -> None:
    """Each config class's pinned defaults still hold (a setting added since is not pinned: at its
    default it changes no search), and each stored spec resolves to its pinned differences from
    them."""
    want = json.loads(GOLDEN.read_text())
    have = results()
    assert len(want["specs"]) >= 40 and all(f in want["specs"] for f in FLAT)
    for cls, pinned in want["defaults"].items():
        moved = sorted(k for k in pinned if have["defaults"].get(cls, {}).get(k, "(gone)") != pinned[k])
        assert not moved, f"{cls}: defaults moved or gone: {moved[:5]}"
    missing = sorted(set(want["specs"]) - set(have["specs"]))
    assert not missing, f"no longer resolves: {missing[:5]}"
    changed = [k for k in want["specs"] if have["specs"][k] != want["specs"][k]]
    assert not changed, f"resolves to another search: {changed[:5]}"


def test_the_mcts_config_is_small_configs_set_by_their_flat_names() -> None:
    """MCTSConfig holds at most 12 fields of its own (the rules by name and each rule's or feature's
    small config); every setting keeps its flat name: as an option, in ``MCTSConfig.of`` and
    ``search.base.setting``, and a spec that writes it gets the same config as one built by hand."""
    import dataclasses

    from engines import registry
    from engines.options import config_options
    from search.base import flat_groups, flat_view, setting, with_settings
    from search.mcts_config import MCTSConfig
    from search.puct import PUCTParams
    from search.two_board import seat_config
    from search.two_board_rules import LazyBugParams

    assert len(dataclasses.fields(MCTSConfig)) <= 12
    groups = flat_groups(MCTSConfig)
    assert len(groups) >= 50 and groups["cpuct_init"] == "own[search.puct:PUCTParams]" and groups["mcgs"] == "tree"
    names = [o.name for o in config_options(MCTSConfig)]
    assert set(flat_view(MCTSConfig())) - {"time"} <= set(names) and "time.move_overhead" in names
    assert not any(n.startswith(("puct.", "tree.", "batching.")) for n in names)  # no dotted group names
    # a game's own part (LazyBug's seat) makes options of that game's engines only
    assert "root_own_p" not in names and "root_own_p" in [o.name for o in config_options(seat_config())]
    assert "root_own_p" not in {o.name for o in registry.option_infos(registry.resolve("rise-mcts"))}
    assert "root_own_p" in {o.name for o in registry.option_infos(registry.resolve("bughouse-mcts"))}
    cfg = MCTSConfig.of(cpuct_init=1.5, mcgs=True, batch_size=2, considered_actions=8)
    assert cfg.settings(PUCTParams) == PUCTParams(cpuct_init=1.5) and cfg.tree.mcgs and cfg.batching.batch_size == 2
    assert [setting(cfg, n) for n in ("cpuct_init", "mcgs", "batch_size", "considered_actions", "root_rule")] \
        == [1.5, True, 2, 8, "puct"]
    assert with_settings(MCTSConfig(), {"time.move_overhead": 0.5}).time.move_overhead == 0.5
    assert registry.resolve("material-mcts:cpuct_init=1.5,mcgs=true,batch_size=2,considered_actions=8").config \
        == with_settings(registry.resolve("material-mcts").config, {"cpuct_init": 1.5, "mcgs": True, "batch_size": 2,
                                                                    "considered_actions": 8})
    two = seat_config(root_own_p=0.5, fpu=0.5)
    assert two.settings(LazyBugParams).root_own_p == 0.5 and two.settings(PUCTParams).fpu == 0.5 and two.settings(PUCTParams).cpuct_init == 2.0  # LazyBug's default
    from search.mcts_config import Exploration, MCTSConfigError

    for group, name in ((PUCTParams(cpuct_base=0), "cpuct_base"), (Exploration(dirichlet_epsilon=2), "dirichlet_epsilon"),
                        (LazyBugParams(root_own_p=2), "root_own_p")):  # each small config checks its own settings
        try:
            group.validate()
        except MCTSConfigError as e:
            assert name in str(e)
        else:
            raise AssertionError(f"{name} out of range must be refused")
        assert name in str(_refusal(lambda: seat_config(**{name: dataclasses.asdict(group)[name]}).validate()))
    try:
        MCTSConfig.of(no_such_setting=1)
    except TypeError:
        pass
    else:
        raise AssertionError("an unknown name must be refused")


def _refusal(call: object) -> Exception:
    try:
        call()  # type: ignore[operator]
    except Exception as e:  # noqa: BLE001 - the refusal itself is the result
        return e
    raise AssertionError("not refused")


def test_parts_and_their_settings_have_unique_names() -> None:
    """The table of parts: a name once per kind, every implementation and settings class found, and
    every setting's flat name once across the config's groups and the parts' own settings (a part
    whose setting took a built-in name would change what stored specs mean)."""
    import dataclasses

    from search import parts
    from search.base import OWN
    from search.mcts_config import MCTSConfig

    keys = [(p.kind, p.name) for p in parts.PARTS]
    assert len(keys) == len(set(keys)) and {p.kind for p in parts.PARTS} == set(parts.KINDS)
    for p in parts.PARTS:
        assert parts.load(p.impl) is not None and (not p.settings or dataclasses.is_dataclass(parts.load(p.settings)))
        assert not p.two_board or parts.load(p.two_board) is not None
    assert MCTSConfig.for_game("") == MCTSConfig()
    for game in ("", "bughouse"):  # a game's own parts (LazyBug's seat) join that game's configs only
        cfg = MCTSConfig.for_game(game)
        names: list[str] = []
        for f in dataclasses.fields(cfg):
            v = getattr(cfg, f.name)
            groups = list(v.values()) if f.metadata == OWN else [v] if f.metadata.get("flat") else []
            names += [g.name for group in groups for g in dataclasses.fields(group)]
        assert len(names) == len(set(names)) and "sixtyfour_c" in names and ("root_own_p" in names) == bool(game)
        assert set(cfg.own) == {p.settings for p in parts.PARTS if p.settings and (not p.games or game in p.games)}
