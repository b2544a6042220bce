"""Fixed-seed searches whose results are pinned in ``tests/data/search_golden.json``.

A refactor of the searches must leave every one of them identical (move, value, nodes, evaluator
calls, principal variation and the root's visit counts); ``tests/test_golden.py`` checks that.  The
file is written by ``python -m tests.golden_searches --write`` and is regenerated only by a
deliberate change of behaviour, named in the commit that changes it.

The cases: chess and crazyhouse positions (the start, random game positions, a mate), MCTS in its
default (CrazyAra), vanilla, SixtyFour, check-urgency and noise+temperature configurations with the
zero and the classical evaluator, a second move with tree reuse, alpha-beta and the comparator
alpha-beta with the classical evaluator, UBFM with completion (safest and best final move, Descent,
without completion, progressive widening; a second move with tree reuse) with the classical evaluator.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import board
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, Leaf

GOLDEN = Path(__file__).resolve().parent / "data" / "search_golden.json"


class ZeroEvaluator(Evaluator):
    """Value 0 and uniform priors (the search alone decides)."""

    name = "zero"

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        return [Evaluation(0.0, [1.0 / lf.n_moves] * lf.n_moves) for lf in leaves]


def _positions() -> list[tuple[str, str, board.Position]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from positions import random_position

    out = []
    for variant in ("chess", "crazyhouse"):
        out.append((variant, "start", board.new_position(variant)))
        for seed, plies in ((3, 14), (11, 31)):
            out.append((variant, f"random-{seed}-{plies}", random_position(variant, seed, plies)))
    out.append(("chess", "mate2", board.new_position("chess", "7k/8/5K2/8/8/8/8/6R1 w - - 0 1")))
    out.append(("crazyhouse", "drops", board.new_position("crazyhouse", "5rk1/5p1p/6p1/8/8/8/8/6K1[QB] w - - 0 1")))
    return out


def _mcts_configs() -> dict[str, Callable[[], Any]]:
    from search.mcts import MCTSConfig

    return {
        "default": MCTSConfig,
        "vanilla": MCTSConfig.vanilla,
        "sixtyfour": MCTSConfig.sixtyfour,
        "urgency": lambda: MCTSConfig.of(check_urgency=True),
        "noise": lambda: MCTSConfig.of(dirichlet_epsilon=0.25, temperature=1.0),
    }


def _ubfm_configs() -> dict[str, Any]:
    from search.ubfm import UBFMConfig

    return {"default": UBFMConfig(), "best": UBFMConfig(final_move="best"), "descent": UBFMConfig(descent=True),
            "plain": UBFMConfig(completion=False), "prior": UBFMConfig(prior_weight=0.3),
            "wide": UBFMConfig(width=6, widen=4)}


def _result(r: Any) -> dict[str, Any]:
    return {"move": board.move_to_uci(r.best_move), "value": round(r.value, 9), "cp": r.cp, "mate": r.mate,
            "nodes": r.nodes, "evals": r.evals, "depth": r.depth, "pv": [board.move_to_uci(m) for m in r.pv]}


def _root_digest(search: Any) -> str:
    stats = [(m, n, round(q, 9), round(p, 9)) for m, n, q, p in search.root_stats()]
    return hashlib.sha1(json.dumps(stats).encode()).hexdigest()[:16]


def run_cases() -> dict[str, Any]:
    """Every pinned search, by case name (see module doc)."""
    import random

    from evaluators.classical import ClassicalEvaluator
    from search.ab_config import ABConfig
    from search.alphabeta import AlphaBeta
    from search.base import Limits
    from search.comparator import ComparatorAlphaBeta, ComparatorConfig
    from search.mcts import MCTS
    from search.ubfm import UBFM

    out: dict[str, Any] = {}
    evaluators: dict[str, Evaluator] = {"zero": ZeroEvaluator(), "classical": ClassicalEvaluator()}
    for variant, pname, pos in _positions():
        for cname, make in _mcts_configs().items():
            for ename, ev in evaluators.items():
                if cname == "sixtyfour" and ename == "zero":
                    continue
                s = MCTS(ev, make(), random.Random(7))
                p = pos.copy()
                r = s.run(p, Limits(nodes=300))
                row = _result(r)
                row["root"] = _root_digest(s)
                if pname == "start" and cname == "default":
                    legal = p.legal_moves()  # tree reuse: one move later, the same search object
                    p.push(r.best_move if r.best_move in legal else legal[0])
                    if p.legal_moves():
                        r2 = s.run(p, Limits(nodes=200))
                        row["reuse"] = _result(r2)
                        row["reuse_root"] = _root_digest(s)
                out[f"mcts/{cname}/{ename}/{variant}/{pname}"] = row
        ab = AlphaBeta(evaluators["classical"], ABConfig(tt_size=1 << 14))
        out[f"alphabeta/{variant}/{pname}"] = _result(ab.run(pos.copy(), Limits(nodes=3000)))
        cmp = ComparatorAlphaBeta(evaluators["classical"], ComparatorConfig())
        out[f"comparator/{variant}/{pname}"] = _result(cmp.run(pos.copy(), Limits(depth=2)))
        for uname, ucfg in _ubfm_configs().items():
            u = UBFM(evaluators["classical"], ucfg)
            p = pos.copy()
            r = u.run(p, Limits(nodes=2000))
            row = _result(r)
            row["root"] = _root_digest(u)
            if pname == "start" and uname == "default":
                p.push(r.best_move)
                r2 = u.run(p, Limits(nodes=2500))
                row["reuse"] = _result(r2)
                row["reuse_root"] = _root_digest(u)
            out[f"ubfm/{uname}/{variant}/{pname}"] = row
    return out


if __name__ == "__main__":
    if "--write" in sys.argv:
        GOLDEN.write_text(json.dumps(run_cases(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    else:
        print(json.dumps(run_cases(), indent=1, sort_keys=True))
