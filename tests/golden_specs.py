"""The engine specs the suite has stored, each with the search config it resolves to, pinned in
``tests/data/spec_golden.json``: a change to the MCTS settings (the per-rule configs that are to
replace the one flat ``MCTSConfig``, issue 55) must leave every stored spec, written with today's flat
option names, resolving to the same search; ``tests/test_golden_specs.py`` checks that.

The specs: every built-in engine of ours, every engine spec of the shipped experiment configs (and those
of configs rewritten since, RETIRED)
(``experiments/configs/*.toml``: their teams, rows, players and arms) that names one of our searches,
and spellings of the MCTS options by their flat names.  Each spec pins only the settings of its
search config that differ from that search's config at its defaults, and the file pins those
defaults once (``defaults``, by the config the registry names: ``seat_config`` for two boards): a new part whose settings default to off adds settings the pinned
defaults do not name, and changes no pinned row.  Written by ``python -m tests.golden_specs
--write``; regenerated only by a deliberate change of behaviour, named in the commit.
"""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "spec_golden.json"

#: flat option names, as users and stored specs wrote them
FLAT = [
    "rise-mcts:cpuct_init=2.5,cpuct_base=19000,fpu=-0.5,virtual_loss=2,batch_size=4",
    "rise-mcts:check_enhancement=false,check_urgency=true,check_q_init=0.2,fix_checkmates=false,solver=true",
    "rise-mcts:q_value_selection=false,q_pv=true,u_divisor=true,temperature=0.5,dirichlet_epsilon=0.25",
    "rise-mcts:root_rule=gumbel,score_formula=gumbel,c_visit=40,c_scale=0.1,gumbel_scale=0",
    "material-mcts:score_formula=sixtyfour,sixtyfour_c=0.7,max_playout_depth=6,mate_value=1.5",
    "material-mcts:mcgs=true,mcgs_q_eps=0.02,transposition_table=false,epsilon_greedy=0.05",
    "material-mcts:multipv=3,max_tree_nodes=100000,stop_single_move=false,tree_reuse=false",
    "bughouse-mcts:root_own_p=0.8,sit_ratio=1.6,mate_guard=true,recent_moves=4",
    "bughouse-gumbel:nodes=200",
]

#: specs of shipped configs that were rewritten since (their stored games still name them)
RETIRED = [
    "rise-ab:inference=onnxruntime",  # ab-vs-mcts-rise-*, before UBFM and the policy-guided alpha-beta
]


def _config_specs() -> list[str]:
    """Every quoted ``NAME[:OPTIONS]`` in the shipped configs whose head is an engine of ours."""
    from engines import registry

    out: set[str] = set()
    for p in sorted((ROOT / "experiments" / "configs").glob("*.toml")):
        for text in re.findall(r'"([A-Za-z0-9_.+\-]+(?::[^"\s]*)?)"', p.read_text()):
            head = text.split(":", 1)[0]
            if head in registry.builtins() or "+" in head:
                out.add(text)
    return sorted(out)


def _flat(config: Any) -> dict[str, Any]:
    from search.base import flat_view

    return json.loads(json.dumps(flat_view(config), default=str))


def defaults(searches: set[str]) -> dict[str, dict[str, Any]]:
    """Each search's config at its defaults by flat name, keyed by the config the registry names
    (:attr:`engines.registry.SearchEntry.config`: a class, or a game's config such as ``seat_config``)."""
    from engines import registry

    return {registry.SEARCHES[s].config: _flat(registry.search_config(s)) for s in sorted(searches)}


def _resolved(text: str) -> dict[str, Any] | None:
    from engines import registry
    from engines.base import EngineError

    try:
        spec = registry.resolve(text)
    except EngineError:
        return None
    if spec.config is None or not dataclasses.is_dataclass(spec.config):
        return None  # an external program: nothing of ours to pin
    base = _flat(registry.search_config(spec.search))
    return {"evaluator": spec.evaluator, "search": spec.search, "config_class": registry.SEARCHES[spec.search].config,
            "config": {k: v for k, v in _flat(spec.config).items() if k not in base or base[k] != v},
            "settings": json.loads(json.dumps(spec.settings, default=str))}


def specs() -> list[str]:
    from engines import registry

    return sorted({*registry.builtins(), *_config_specs(), *FLAT, *RETIRED})


def results() -> dict[str, Any]:
    """``{"defaults": each search's config at its defaults, "specs": each spec's search and the
    settings of its config that differ from those defaults}``."""
    from engines import registry

    out, searches = {}, set()
    for text in specs():
        r = _resolved(text)
        if r is not None:
            out[text] = r
            searches.add(registry.resolve(text).search)
    return {"defaults": defaults(searches), "specs": out}


if __name__ == "__main__":
    if "--write" in sys.argv:
        GOLDEN.write_text(json.dumps(results(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    else:
        print(json.dumps(results(), indent=1, sort_keys=True)[:2000])
