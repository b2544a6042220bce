"""``searchbench bench search``: our searches against their peers, side by side in one run.

Three measurements, each on the same positions for both sides, in the same process:

* MCTS overhead: simulations per second with a zero-cost evaluator (value 0, uniform priors), our
  :class:`search.mcts.MCTS` against OpenSpiel's Python ``open_spiel.python.algorithms.mcts.MCTSBot``
  (C++ game states, Python tree, ``solve=False``) with the same zero-cost evaluator.  The goal's
  ratio compares the same selection rule: :meth:`search.mcts.MCTSConfig.vanilla` is MCTSBot's PUCT
  (unvisited children at Q = 0, no solver, c = 2.5), so both build trees of the same shape.  The
  default :class:`search.mcts.MCTSConfig` (CrazyAra's switches, batch 8, solver, mates in one) is
  printed beside it: its Q init of -1 turns the zero evaluator's flat values into a narrow tree
  several times deeper (the PV depth is printed), a different search whose ratio is given for
  information.  Our side does the whole search: legal moves at every expansion (with the
  defaults also checks and mates in one), terminal detection, transposition table, and the evaluator called through the interface once per batch (it reads ``Leaf.n_moves``:
  a leaf's state and move list are built only when an evaluator reads them).  Each side runs
  three times, interleaved, and its fastest run counts (the machine may be shared).  Goal: ratio
  >= 10.
* MCTS with a neural network (when ``evaluators.rise`` and its weights load): MCTS simulations per
  second against the network's raw throughput (``evaluate`` of the very batches the search asked for,
  replayed),
  as a fraction, best of five runs each.  Goal: >= 90%.
* Two-board MCTS (bughouse): simulations per second of LazyBug's search on the shared driver
  (:class:`search.two_board.TwoBoardMCTS`) against the same rules in their own tree
  (the legacy ``bughouse-mcts``, a test oracle in ``tests/oracles/``, uncompiled since it left
  ``search/``: measured where it imports, a checkout run with its root on the path), the zero-cost evaluator, the same positions and node
  limit, interleaved, best of three each.  Goal: ratio >= 1 (the shared driver is no slower).
  With it, the shared driver's Gumbel (``MCTSConfig.gumbel()``'s settings on the seat's config) and graph search (``mcgs``) on
  two boards, as a share of LazyBug's rules' rate.
* Alpha-beta: positions per second of our :class:`search.alphabeta.AlphaBeta` with the classical
  evaluator against a straightforward alpha-beta negamax over python-chess boards that scores its
  leaves with the same evaluation function (material, PST, pockets, king safety), fixed depth,
  captures first.  Goal: ratio >= 10.
"""
from __future__ import annotations

import random
import time
from typing import Any, Sequence

import chess
import chess.variant

import board
from board.bughouse import BUGHOUSE_STARTING_FEN, BughouseGame
from board.variants import BUGHOUSE, CHESS, CRAZYHOUSE, variant_of
from engines import registry
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, Leaf
from evaluators.classical import ClassicalEvaluator, white_score_bb
from search.alphabeta import AlphaBeta
from search.base import Limits, changes
from search.mcts import MCTS, MCTSConfig
from search.two_board import BughouseLimits, TwoBoardMCTS, seat_config

POSITIONS: dict[str, list[str]] = {
    CHESS.name: [
        board.STARTING_FEN,
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    ],
    CRAZYHOUSE.name: [
        board.CRAZYHOUSE_STARTING_FEN,
        "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq - 0 1",
        "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22",
    ],
}
#: bughouse positions (both boards): the start and two from random play
TWO_BOARD_POSITIONS: list[str] = [
    BUGHOUSE_STARTING_FEN,
    "rn1qkbnr/pbpp2pp/4p3/1pp2p2/P2P2P1/2N2N2/1PP1PP1P/R1BQKB1R[] w KQkq - 0 6 | "
    "rnbqkbnr/1p1pp1pp/p7/2p2P2/8/4P3/PPPP1P1P/RNBQKBNR[] w KQkq - 0 4",
    "1nbq1bnQ/rp1p2p1/B1p1kp2/8/PP1Pp3/4P1P1/2P2P1P/RNBK2NR[Pn] b - d3 0 12 | "
    "r1bqkb1r/p1pppppp/1p5n/4P3/P2Q4/N4KpP/1PP1rPP1/R1B2BNR[p] b kq - 0 9",
]
MATE: int = 30000


class ZeroEvaluator(Evaluator):
    """A zero-cost evaluator: value 0 and uniform priors (measures the search's own overhead)."""

    name = "zero"
    variants = frozenset(board.VARIANTS) | {BUGHOUSE.name}

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        out = []
        for leaf in leaves:
            n = leaf.n_moves  # the count is all it needs (no list of the moves is built)
            out.append(Evaluation(0.0, [1.0 / n] * n))
        return out


# ------------------------------------------------------------------ MCTS overhead

def two_board_mcts(kind: str, sims: int) -> dict[str, float]:
    """Simulations/s of the two-board search from each of :data:`TWO_BOARD_POSITIONS`, board A's side
    to move searching: ``kind`` "shared" (LazyBug's rules on the shared driver), "gumbel"
    (``MCTSConfig.gumbel()``'s settings on the seat's config), "mcgs" (graph search) or "annex" (the rules in their own tree)."""
    ev = ZeroEvaluator()
    total = 0
    t = 0.0
    cfg = {"shared": seat_config(), "gumbel": seat_config(**changes(MCTSConfig.gumbel())), "mcgs": seat_config(mcgs=True)}
    for fen in TWO_BOARD_POSITIONS:
        s = registry.search_class("bughouse-mcts")(ev, None, random.Random(0)) if kind == "annex" else \
            TwoBoardMCTS(ev, cfg[kind], random.Random(0))
        t0 = time.perf_counter()
        r = s.run(BughouseGame(fen), 0, BughouseLimits(nodes=sims))
        t += time.perf_counter() - t0
        total += r.nodes
    return {"sims": total, "time": t, "sims_per_s": total / t if t > 0 else 0.0}


def ours_mcts(variant: str, fens: list[str], sims: int, cfg: MCTSConfig | None = None) -> dict[str, float]:
    ev = ZeroEvaluator()
    total = 0
    depth = 0
    t = 0.0
    for fen in fens:
        m = MCTS(ev, cfg, random.Random(0))
        pos = board.new_position(variant, fen)
        t0 = time.perf_counter()
        r = m.run(pos, Limits(nodes=sims))
        t += time.perf_counter() - t0
        total += r.nodes
        depth += r.depth
    return {"sims": total, "time": t, "sims_per_s": total / t if t > 0 else 0.0, "depth": depth / len(fens)}


def openspiel_mcts(variant: str, fens: list[str], sims: int) -> dict[str, float] | None:
    try:
        import numpy as np
        import pyspiel
        from open_spiel.python.algorithms import mcts as os_mcts
    except ImportError:
        return None

    class Zero(os_mcts.Evaluator):  # type: ignore[misc]
        def evaluate(self, state: Any) -> Any:
            return np.zeros(2)

        def prior(self, state: Any) -> list[tuple[int, float]]:
            acts = state.legal_actions()
            return [(a, 1.0 / len(acts)) for a in acts]

    game = pyspiel.load_game(variant)
    bot = os_mcts.MCTSBot(game, uct_c=2.5, max_simulations=sims, evaluator=Zero(), solve=False,
                          random_state=np.random.RandomState(0))
    t = 0.0
    total = 0
    for fen in fens:
        state = game.new_initial_state(fen)
        t0 = time.perf_counter()
        bot.mcts_search(state)
        t += time.perf_counter() - t0
        total += sims
    return {"sims": total, "time": t, "sims_per_s": total / t if t > 0 else 0.0}


# ------------------------------------------------------------------ MCTS with a network

def nn_fraction(sims: int, batch: int = 8, repeats: int = 5) -> dict[str, Any]:
    """MCTS nodes/s with the RISE network against the network's raw throughput on the very batches
    that search asked for (replayed; nearly all of ``batch`` leaves), best of ``repeats`` each (the
    machine is shared: best-of filters out the time others take)."""
    try:
        from evaluators.rise import RiseEvaluator  # deferred: loads torch
        ev = RiseEvaluator.load(threads=1)
    except Exception as e:  # noqa: BLE001  (missing module or weights: the line is skipped)
        return {"skipped": f"no RISE evaluator ({type(e).__name__}: {e})"}
    variant = ev.variant
    pos = board.new_position(variant, POSITIONS[variant][1] if variant in POSITIONS else None)
    cfg = MCTSConfig.of(batch_size=batch)
    best_nodes = best_evals = best_raw = 0.0
    for _ in range(repeats):
        m = MCTS(ev, cfg, random.Random(0))
        batches: list[list[Leaf]] = []
        t0 = time.perf_counter()
        m.start(pos, Limits(nodes=sims))
        while not m.done():
            leaves = m.ask()
            if leaves:
                batches.append(leaves)
                m.tell(ev.evaluate(leaves))
        dt = time.perf_counter() - t0
        r = m.result()
        best_nodes = max(best_nodes, r.nodes / dt)
        best_evals = max(best_evals, r.evals / dt)
        t0 = time.perf_counter()
        for b in batches:
            ev.evaluate(b)
        best_raw = max(best_raw, sum(len(b) for b in batches) / (time.perf_counter() - t0))
    return {"variant": variant, "batch": batch, "raw_evals_per_s": best_raw, "mcts_nodes_per_s": best_nodes,
            "mcts_evals_per_s": best_evals, "fraction_nodes": best_nodes / best_raw,
            "fraction_evals": best_evals / best_raw}


# ------------------------------------------------------------------ alpha-beta

def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def pc_white_score(b: chess.Board, zh: bool) -> int:
    """The classical evaluation of a python-chess board (same function, python-chess bitboards)."""
    pockets = 0
    if zh:
        assert isinstance(b, chess.variant.CrazyhouseBoard)
        for color in (0, 1):
            pocket = b.pockets[chess.WHITE if color == 0 else chess.BLACK]
            for pt in range(1, 6):
                pockets |= pocket.count(pt) << ((color * 5 + pt - 1) * 6)
    return white_score_bb(zh, _signed(b.occupied_co[chess.WHITE]), _signed(b.occupied_co[chess.BLACK]),
                          _signed(b.pawns), _signed(b.knights), _signed(b.bishops), _signed(b.rooks),
                          _signed(b.queens), _signed(b.kings), pockets)


def pc_negamax(b: chess.Board, depth: int, alpha: int, beta: int, zh: bool, count: list[int]) -> int:
    count[0] += 1
    moves = list(b.legal_moves)
    if not moves:
        return -MATE if b.is_check() else 0
    if depth == 0:
        s = pc_white_score(b, zh)
        return s if b.turn == chess.WHITE else -s
    moves.sort(key=lambda m: not b.is_capture(m))
    best = -MATE - 1
    for m in moves:
        b.push(m)
        score = -pc_negamax(b, depth - 1, -beta, -alpha, zh, count)
        b.pop()
        if score > best:
            best = score
            if score > alpha:
                alpha = score
                if alpha >= beta:
                    break
    return best


def pc_alphabeta(variant: str, fens: list[str], depth: int) -> dict[str, float]:
    count = [0]
    t0 = time.perf_counter()
    for fen in fens:
        record = variant_of(variant)
        pc_negamax(record.python_board(fen), depth, -MATE - 1, MATE + 1, record.pockets, count)
    t = time.perf_counter() - t0
    return {"nodes": count[0], "time": t, "nodes_per_s": count[0] / t if t > 0 else 0.0}


def ours_alphabeta(variant: str, fens: list[str], nodes: int) -> dict[str, float]:
    ev = ClassicalEvaluator()
    total = 0
    t = 0.0
    for fen in fens:
        r = AlphaBeta(ev).run(board.new_position(variant, fen), Limits(nodes=nodes))
        total += r.nodes
        t += r.time
    return {"nodes": total, "time": t, "nodes_per_s": total / t if t > 0 else 0.0}


# ------------------------------------------------------------------ the whole run

OVERHEAD_REPEATS = 3


def _faster(best: dict[str, float] | None, new: dict[str, float] | None) -> dict[str, float] | None:
    if best is None or (new is not None and new["sims_per_s"] > best["sims_per_s"]):
        return new
    return best


def run(variants: Sequence[str] = board.VARIANTS, sims: int = 3000, ab_nodes: int = 100_000,
        pc_depth: int = 3, nn_sims: int = 400) -> dict[str, Any]:
    out: dict[str, Any] = {"mcts_overhead": {}, "alphabeta": {}, "nn": None}
    for variant in variants:
        fens = POSITIONS[variant]
        # Best of OVERHEAD_REPEATS runs per side, the sides interleaved: the machine may be shared,
        # and the best run is the one least slowed by others (as for the network line below).
        ours = vanilla = peer = gumbel = mcgs = None
        for _ in range(OVERHEAD_REPEATS):
            ours = _faster(ours, ours_mcts(variant, fens, sims))
            vanilla = _faster(vanilla, ours_mcts(variant, fens, sims, MCTSConfig.vanilla()))
            gumbel = _faster(gumbel, ours_mcts(variant, fens, sims, MCTSConfig.gumbel()))
            mcgs = _faster(mcgs, ours_mcts(variant, fens, sims, MCTSConfig.of(mcgs=True)))
            peer = _faster(peer, openspiel_mcts(variant, fens, sims))
        assert ours is not None and vanilla is not None and gumbel is not None and mcgs is not None
        out["mcts_overhead"][variant] = {
            "ours": ours, "ours_vanilla": vanilla, "openspiel": peer, "gumbel": gumbel, "mcgs": mcgs,
            "gumbel_share": gumbel["sims_per_s"] / ours["sims_per_s"], "mcgs_share": mcgs["sims_per_s"] / ours["sims_per_s"],
            "ratio": vanilla["sims_per_s"] / peer["sims_per_s"] if peer and peer["sims_per_s"] > 0 else None,
            "ratio_defaults": ours["sims_per_s"] / peer["sims_per_s"] if peer and peer["sims_per_s"] > 0 else None,
        }
        ab = ours_alphabeta(variant, fens, ab_nodes)
        pc = pc_alphabeta(variant, fens, pc_depth if not variant_of(variant).pockets else max(1, pc_depth - 1))
        out["alphabeta"][variant] = {"ours": ab, "python_chess": pc,
                                     "ratio": ab["nodes_per_s"] / pc["nodes_per_s"] if pc["nodes_per_s"] else None}
    best: dict[str, dict[str, float] | None] = {"shared": None, "annex": None, "gumbel": None, "mcgs": None}
    if "bughouse-mcts" not in registry.SEARCHES:  # the legacy oracle: only in a checkout
        del best["annex"]
    for _ in range(OVERHEAD_REPEATS):
        for kind in best:
            best[kind] = _faster(best[kind], two_board_mcts(kind, sims))
    tb: dict[str, Any] = dict(best)
    rate = {kind: r["sims_per_s"] for kind, r in best.items() if r is not None}
    tb.update(ratio=rate["shared"] / rate["annex"] if "annex" in rate else None, gumbel_share=rate["gumbel"] / rate["shared"],
              mcgs_share=rate["mcgs"] / rate["shared"])
    out["two_board"] = tb
    out["nn"] = nn_fraction(nn_sims)
    return out


def format_table(r: dict[str, Any]) -> str:
    lines = ["MCTS overhead, zero-cost evaluator (simulations/s; goal: ratio >= 10 at the same rule)"]
    for variant, d in r["mcts_overhead"].items():
        peer = d["openspiel"]
        peer_txt = f"{peer['sims_per_s']:>8.0f}" if peer else "  (open-spiel not installed)"
        ratio = f"{d['ratio']:.1f}x" if d["ratio"] else "-"
        ratio_d = f"{d['ratio_defaults']:.1f}x" if d["ratio_defaults"] else "-"
        v, o = d["ours_vanilla"], d["ours"]
        lines.append(f"  {variant:<11} same rule (plain PUCT): ours {v['sims_per_s']:>7.0f} (PV depth {v['depth']:.1f})"
                     f"  OpenSpiel MCTSBot {peer_txt}  ratio {ratio}")
        lines.append(f"  {'':<11} CrazyAra defaults:     ours {o['sims_per_s']:>7.0f} (PV depth {o['depth']:.1f})"
                     f"  ratio {ratio_d}")
        g, m = d["gumbel"], d["mcgs"]
        lines.append(f"  {'':<11} Gumbel root search:    ours {g['sims_per_s']:>7.0f} ({100 * d['gumbel_share']:.0f}% of "
                     f"the CrazyAra defaults' rate; goal >= 75%)")
        lines.append(f"  {'':<11} graph search (mcgs):   ours {m['sims_per_s']:>7.0f} ({100 * d['mcgs_share']:.0f}% of "
                     f"the CrazyAra defaults' rate; goal >= 75%)")
    tb = r.get("two_board")
    if tb:
        lines.append("Two-board MCTS (bughouse), zero-cost evaluator (simulations/s; goal: ratio >= 1)")
        own = (f"own tree (the legacy bughouse-mcts, an uncompiled test oracle now) {tb['annex']['sims_per_s']:>8.0f}  "
               f"ratio {tb['ratio']:.2f}x"
               if tb.get("annex") else "own tree: the legacy oracle is not on the path (PYTHONPATH=. in a checkout)")
        lines.append(f"  shared driver {tb['shared']['sims_per_s']:>8.0f}  {own}")
        lines.append(f"  shared driver, Gumbel {tb['gumbel']['sims_per_s']:>8.0f} ({100 * tb['gumbel_share']:.0f}% of "
                     f"LazyBug's rules' rate), graph search {tb['mcgs']['sims_per_s']:>8.0f} "
                     f"({100 * tb['mcgs_share']:.0f}%)")
    lines.append("Alpha-beta, classical evaluator (positions/s; goal: ratio >= 10)")
    for variant, d in r["alphabeta"].items():
        ratio = f"{d['ratio']:.1f}x" if d["ratio"] else "-"
        lines.append(f"  {variant:<11} ours {d['ours']['nodes_per_s']:>9.0f}  python-chess negamax "
                     f"{d['python_chess']['nodes_per_s']:>9.0f}  ratio {ratio}")
    nn = r["nn"]
    lines.append("MCTS with a network (goal: >= 90% of the raw batched throughput)")
    if nn is None or "skipped" in nn:
        lines.append(f"  skipped: {nn['skipped'] if nn else 'not run'}")
    else:
        lines.append(f"  {nn['variant']} batch {nn['batch']}: raw {nn['raw_evals_per_s']:.0f} evals/s, MCTS "
                     f"{nn['mcts_nodes_per_s']:.0f} nodes/s ({nn['mcts_evals_per_s']:.0f} evals/s): "
                     f"{100 * nn['fraction_nodes']:.0f}% by nodes, {100 * nn['fraction_evals']:.0f}% by evals")
    return "\n".join(lines)
