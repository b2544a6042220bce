"""One cost unit for every paradigm (issue 21): a node limit caps the root's visits, reused ones
included; playouts cap the new simulations; Sequential Halving is planned for the simulations the
root's edges get; MCGS checks and re-aligns every edge into a transposition, as CrazyAra."""
from __future__ import annotations

import random
from pathlib import Path
from collections import Counter

import numpy as np
import pytest

import board
from evaluators.classical import ClassicalEvaluator
from search.base import Limits
from search.gumbel import GumbelParams
from search.halving import considered_visits
from search.mcts import MCTS, MCTSConfig
from search.mcts_tree import _Tree

EV = ClassicalEvaluator()
QUIET = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"


def root_visits(s: MCTS) -> int:
    return 1 + int(s.tree.nd_sum_n[s.root])


def play_on(s: MCTS, pos: board.Position, r_move: int) -> None:
    """Push our move and the reply the tree likes best (so the next root is in the tree)."""
    pos.push(r_move)
    child = s.tree.node_after(next(e for e in range(int(s.tree.nd_edge0[s.root]),
                                                     int(s.tree.nd_edge0[s.root] + s.tree.nd_nedges[s.root]))
                                   if s.tree.ed_move[e] == r_move))
    e0, k = int(s.tree.nd_edge0[child]), int(s.tree.nd_nedges[child])
    reply = max(range(e0, e0 + k), key=lambda e: s.tree.edge_n(e))
    pos.push(int(s.tree.ed_move[reply]))


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_node_limit_counts_the_visits_kept_from_the_last_move(variant: str, batch: int) -> None:
    pos = board.new_position(variant, QUIET if variant == "chess" else None)
    s = MCTS(EV, MCTSConfig.of(batch_size=batch), random.Random(1))
    n = 256
    reused_seen = 0
    for _ in range(4):
        r = s.run(pos, Limits(nodes=n))
        assert root_visits(s) <= n  # the root holds at most N visits, whatever was reused
        assert r.nodes == root_visits(s) and r.nodes >= n - batch
        assert r.evals <= n - s._visits0
        reused_seen += s._visits0
        play_on(s, pos, r.best_move)
    assert reused_seen > 0  # tree reuse really happened


def after_one_move(nodes: int) -> tuple[MCTS, board.Position]:
    """A batch-1 search of ``nodes`` from QUIET, its move and the tree's favourite reply played."""
    pos = board.new_position("chess", QUIET)
    s = MCTS(EV, MCTSConfig.of(batch_size=1), random.Random(1))
    r = s.run(pos, Limits(nodes=nodes))
    play_on(s, pos, r.best_move)
    return s, pos


def test_playouts_count_only_new_simulations() -> None:
    s, pos = after_one_move(300)
    r = s.run(pos, Limits(playouts=100))
    v0 = s._visits0
    assert v0 > 0 and s._nodes == 100 and r.nodes == v0 + 100 == root_visits(s)
    # both limits: whichever comes first
    play_on(s, pos, r.best_move)
    r = s.run(pos, Limits(nodes=100_000, playouts=20))
    assert s._nodes == 20


def test_a_root_that_already_has_the_visits_searches_no_more() -> None:
    s, pos = after_one_move(2000)
    r2 = s.run(pos, Limits(nodes=5))
    assert s._visits0 >= 5 and s._nodes == 0 and r2.evals == 0
    assert r2.best_move in pos.legal_moves()


def test_node_limit_and_playouts_through_uci() -> None:
    """A GUI's ``go nodes N`` caps the root's visits on every move of a game (the tree kept between
    moves counts); the ``playouts`` option caps the new simulations."""
    import sys

    import chess
    import chess.engine

    cmd = [sys.executable, "-m", "experiments.cli", "uci", "--engine", "material-mcts"]
    eng = chess.engine.SimpleEngine.popen_uci(cmd, timeout=120)
    try:
        b = chess.Board()
        game = object()
        for _ in range(6):
            r = eng.play(b, chess.engine.Limit(nodes=200), game=game, info=chess.engine.INFO_ALL)
            assert r.move is not None and 0 < int(r.info.get("nodes", 0)) <= 200
            b.push(r.move)
        assert "playouts" in {name.lower() for name in eng.options}
        eng.configure({"playouts": 50})
        r = eng.play(b, chess.engine.Limit(nodes=10_000), game=game, info=chess.engine.INFO_ALL)
        assert r.move is not None and int(r.info.get("nodes", 0)) <= 50 + 10_000
    finally:
        eng.quit()


# ------------------------------------------------------------------------------------- Gumbel

def schedule_multiset(m: int, sims: int) -> list[int]:
    """The root edges' visit counts Sequential Halving gives ``sims`` simulations (sorted)."""
    counts = [0] * m
    for want in considered_visits(m, sims):
        i = counts.index(want)
        counts[i] += 1
    return sorted(c for c in counts if c)


@pytest.mark.parametrize("nodes,considered", [(32, 4), (32, 16), (64, 8), (100, 16), (48, 4)])
def test_sequential_halving_is_planned_for_the_simulations_the_edges_get(nodes: int, considered: int) -> None:
    """The root's own evaluation is one of the n simulations: the edges get n - 1, and the halving
    is planned for those (planned for n, the last phase was cut short)."""
    pos = board.new_position("chess", QUIET)
    cfg = MCTSConfig.gumbel()
    cfg.settings(GumbelParams).gumbel_scale = 0.0
    cfg.batching.batch_size = 1
    cfg.settings(GumbelParams).considered_actions = considered
    s = MCTS(EV, cfg, random.Random(3))
    s.run(pos, Limits(nodes=nodes))
    t = s.tree
    e0, k = int(t.nd_edge0[s.root]), int(t.nd_nedges[s.root])
    got = sorted(c for c in (t.edge_n(e) for e in range(e0, e0 + k)) if c)
    assert sum(got) == nodes - 1
    assert got == schedule_multiset(min(k, considered), nodes - 1)


# ------------------------------------------------------------------------------------- MCGS

def small_dag() -> tuple[_Tree, dict[str, int]]:
    """R -a-> A -c-> T,  R -b-> B -d-> T (a link: T has two parents),  T -e-> X."""
    cfg = MCTSConfig.of(mcgs=True)
    t = _Tree(cfg)
    ids: dict[str, int] = {}
    ids["R"] = t.new_node(1)
    t.expand(ids["R"], [1, 2], [0.5, 0.5], 0.0)
    ids["a"], ids["b"] = int(t.nd_edge0[ids["R"]]), int(t.nd_edge0[ids["R"]]) + 1
    ids["A"], ids["B"] = t.child_of(ids["a"]), t.child_of(ids["b"])
    t.expand(ids["A"], [3], [1.0], 0.0)
    t.expand(ids["B"], [4], [1.0], 0.0)
    ids["c"], ids["d"] = int(t.nd_edge0[ids["A"]]), int(t.nd_edge0[ids["B"]])
    ids["T"] = t.child_of(ids["c"])
    holder = t.child_of(ids["d"])
    t.link(holder, ids["T"])
    ids["H"] = holder
    t.expand(ids["T"], [5], [1.0], 0.0)
    ids["e"] = int(t.nd_edge0[ids["T"]])
    ids["X"] = t.child_of(ids["e"])
    t.expand(ids["X"], [6], [1.0], 0.0)
    return t, ids


def test_backup_through_a_transposition_realigns_the_first_parents_edge() -> None:
    from librt.vecs import vec
    from mypy_extensions import i64

    t, ids = small_dag()
    assert t.is_transposition(ids["T"]) and not t.is_transposition(ids["A"])

    def visit(edges: list[int], parents: list[int], leaf: int, value: float) -> None:
        for e, p in zip(edges, parents):
            t.add_virtual_loss(p, e)
        t.backup(vec[i64](edges), vec[i64](parents), leaf, value)

    first = ([ids["a"], ids["c"]], [ids["R"], ids["A"]])
    second = ([ids["b"], ids["d"]], [ids["R"], ids["B"]])
    below = ([ids["e"]], [ids["T"]])
    visit(*first, ids["T"], 0.0)  # T's evaluation, through its first parent
    visit(first[0] + below[0], first[1] + below[1], ids["X"], 0.2)  # X's evaluation
    for _ in range(4):  # through the second parent, values that move T's Q
        visit(second[0] + below[0], second[1] + below[1], ids["X"], -0.3)
    c = ids["T"]  # the first parent's edge holder is the position node itself
    lag = t.nd_w[c] / t.nd_n[c] + t.node_q(ids["T"])
    assert abs(lag) > 0.1  # the first parent's edge lags its node
    w, n = t.nd_w[c], t.nd_n[c]
    visit(first[0] + below[0], first[1] + below[1], ids["X"], -0.3)
    plain = (w + (-0.3)) / (n + 1)  # what the edge would hold without the re-alignment (-(-(-0.3)))
    aligned = t.nd_w[c] / t.nd_n[c]
    assert aligned == pytest.approx(-t.node_q(ids["T"]), abs=1e-9)  # CrazyAra's backup_value
    assert abs(aligned - plain) > 0.05


def test_mcgs_search_checks_every_parent_edge() -> None:
    """After a graph search with transpositions, the edges into transposition nodes (the first
    parent's included) stay close to their node's value."""
    pos = board.new_position("chess", "r1bqkbnr/pppppppp/2n5/8/8/5N2/PPPPPPPP/RNBQKB1R w KQkq - 2 2")
    cfg = MCTSConfig.of(mcgs=True, batch_size=1)
    s = MCTS(EV, cfg, random.Random(2))
    s.run(pos, Limits(nodes=3000))
    t = s.tree
    assert s._merges > 10
    gaps_first, gaps_all = [], []
    for child in range(t.n_nodes):
        node = int(t.nd_target[child])
        if t.nd_parents[node] > 1 and t.nd_n[child] > 0 and t.nd_state[node] == 2:
            gap = abs(t.nd_w[child] / t.nd_n[child] + t.node_q(node))
            gaps_all.append(gap)
            if node == child:
                gaps_first.append(gap)
    # Before (only links checked, no re-alignment): mean gap 0.045 over 159 edges, 26 above 0.1, and
    # 80% of first-parent edges off by more than mcgs_q_eps; now 0.022 over 181, 11, and 56%.
    assert gaps_first and gaps_all
    assert sum(gaps_all) / len(gaps_all) < 0.03
    assert Counter(g > 0.1 for g in gaps_all)[True] <= len(gaps_all) // 10
    assert Counter(g > cfg.tree.mcgs_q_eps for g in gaps_first)[True] < 0.7 * len(gaps_first)


# ------------------------------------------------------------------------------------- openings

def test_every_pairing_plays_distinct_openings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from experiments.harness import scale

    cfg = tmp_path / "s.toml"
    cfg.write_text(f'name = "s"\nvariant = "crazyhouse"\ngames = 40\ndb = "{tmp_path / "s.sqlite"}"\n'
                   f'report_dir = "{tmp_path}"\nanchor = "a@8"\n'
                   '[[families]]\nname = "a"\nengine = "material-ab"\nnodes = [8, 16, 32]\n'
                   '[[families]]\nname = "m"\nengine = "material-mcts"\nnodes = [8, 16, 32]\n')
    sc = scale.load(cfg)
    tasks = sc.tasks()
    by_match: dict[str, list] = {}  # type: ignore[type-arg]
    for t in tasks:
        by_match.setdefault(t.match, []).append(t)
    used: set[str] = set()
    for games in by_match.values():
        per_pair = {t.pair: t.opening.name for t in games}
        assert len(set(per_pair.values())) == len(per_pair) == len(games) // 2  # one opening a pair, none twice
        assert all(sum(1 for t in games if t.pair == p) == 2 for p in per_pair)  # both colours
        used |= set(per_pair.values())
    assert len(used) > 100  # pairings draw different openings from the 200
    assert [t.key for t in scale.load(cfg).tasks()] == [t.key for t in tasks]  # a rerun draws the same
    assert [t.opening for t in scale.load(cfg).tasks()] == [t.opening for t in tasks]


def test_a_match_needs_as_many_openings_as_pairs(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from experiments.cli import main as cli

    suite = tmp_path / "three.epd"
    suite.write_text("\n".join(open(board_suite()).read().splitlines()[:3]) + "\n")
    rc = cli.main(["match", "material-ab", "material-mcts", "--nodes", "8", "--games", "8", "--openings", str(suite),
                   "--db", str(tmp_path / "m.sqlite"), "--quiet"])
    assert rc == 2 and "distinct openings" in capsys.readouterr().err


def board_suite() -> str:
    from experiments.harness.openings import default_suite

    return str(default_suite("crazyhouse"))


# ------------------------------------------------------------------------------------- reproducible games

def play_tournament(db, games: int, concurrency: int, workers: int, max_plies: int,  # type: ignore[no-untyped-def]
                    engines: list[tuple[str, str, int]]) -> None:
    """A crazyhouse round robin of ``engines`` (name, spec, nodes) stored in ``db`` (no PGN)."""
    from experiments.harness import tournament

    cfg = db.with_suffix(".toml")
    cfg.write_text(f'name = "{db.stem}"\nvariant = "crazyhouse"\ngames = {games}\nconcurrency = {concurrency}\n'
                   f'workers = {workers}\ndb = "{db}"\npgn = false\n[adjudication]\nmax_plies = {max_plies}\n'
                   + "".join(f'[[engines]]\nname = "{n}"\nengine = "{e}"\nnodes = {k}\n' for n, e, k in engines))
    t = tournament.load(cfg)
    tournament.play_run(t.settings, t.tasks(), [p.name for p in t.players], progress=False)


def _run_config(tmp_path, name: str, workers: int) -> list:  # type: ignore[no-untyped-def,type-arg]
    from experiments.harness.store import Store

    play_tournament(tmp_path / f"{name}.sqlite", 4, 3, workers, 40,
                    [("g", "material-gumbel", 24), ("m", "material-mcts:dirichlet_epsilon=0.25,temperature=1", 24),
                     ("a", "material-ab", 64)])
    with Store(tmp_path / f"{name}.sqlite", readonly=True) as st:
        return sorted((g.key, g.seed, tuple(g.moves), g.result, g.reason) for g in st.games())


def test_games_are_the_same_whatever_the_worker_count_and_replay(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Seeded randomness (Gumbel noise, Dirichlet noise, temperature) comes from the game's seed, not
    from what a pooled worker played before: 1 and 2 workers store identical games, and every game
    replays move by move from the database."""
    from experiments.cli import main as cli

    one = _run_config(tmp_path, "one", 1)
    two = _run_config(tmp_path, "two", 2)
    assert len(one) == 12 and one == two
    assert cli.main(["replay", str(tmp_path / "one.sqlite"), "--quiet"]) == 0
    assert "12 games replayed, every move agrees" in capsys.readouterr().out


def test_replay_reports_the_first_divergence(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from experiments.cli import main as cli

    db = tmp_path / "m.sqlite"
    assert cli.main(["match", "material-mcts", "material-ab", "--nodes", "16", "--games", "2", "--max-plies", "30",
                     "--db", str(db), "--pgn", str(tmp_path / "m.pgn"), "--quiet"]) == 0
    with sqlite3.connect(db) as c:
        key, moves = c.execute("SELECT key, moves FROM games ORDER BY id LIMIT 1").fetchone()
        ms = moves.split()
        pos = board.new_position("crazyhouse")
        from experiments.harness.store import Store

        with Store(db, readonly=True) as st:
            g = st.games()[0]
        from experiments.harness.openings import Opening

        pos = Opening(g.opening, g.opening_fen, tuple(g.opening_moves)).position("crazyhouse")
        for m in ms[:3]:
            pos.push_uci(m)
        other = next(board.move_to_uci(m) for m in pos.legal_moves() if board.move_to_uci(m) != ms[3])
        ms[3] = other
        c.execute("UPDATE games SET moves = ? WHERE key = ?", (" ".join(ms), key))
    capsys.readouterr()
    assert cli.main(["replay", str(db), "--quiet"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and f"game {key}: diverges at ply 4" in out[0] and f"replayed" in out[0]


# ------------------------------------------------------------------------------------- statistics

def _results(pairs: dict[tuple[str, str], tuple[int, int]]) -> list:  # type: ignore[type-arg]
    """Rating inputs: (a, b) -> (games, a's points, whole wins/losses only), colour-alternating pairs."""
    from experiments.harness.ratings import Result

    out = []
    for (a, b), (n, wins) in pairs.items():
        for k in range(n):
            s = 1.0 if k < wins else 0.0
            out.append(Result(a, b, s, (f"{a}-{b}", k // 2)) if k % 2 == 0 else Result(b, a, 1.0 - s, (f"{a}-{b}", k // 2)))
    return out


def test_the_virtual_draw_only_where_needed() -> None:
    from experiments.harness.ratings import fit
    from experiments.harness.stats import elo_of_score

    many = fit(_results({("A", "B"): (40, 34)}), anchor="B", bootstrap=0)
    assert many.prior_of("A", "B") == 0.0
    assert many.ratings[0].elo == pytest.approx(elo_of_score(34 / 40), abs=0.5)  # the plain MLE: no pull to 0
    few = fit(_results({("A", "B"): (10, 9)}), anchor="B", bootstrap=0)
    assert few.prior_of("A", "B") == 1.0 and few.ratings[0].elo < elo_of_score(0.9)
    sweep = fit(_results({("A", "B"): (40, 40)}), anchor="B", bootstrap=0)
    assert sweep.prior_of("A", "B") == 1.0 and sweep.ratings[0].elo < 1000  # finite


def test_the_virtual_draw_is_per_pair() -> None:
    """Issue 35: a pair that needs the virtual draw (10 games) no longer pulls another pair's
    lopsided 34/40 towards 0: A-B is rated as the plain maximum likelihood of its own games."""
    from experiments.harness.ratings import fit
    from experiments.harness.stats import elo_of_score

    f = fit(_results({("A", "B"): (40, 34), ("C", "D"): (10, 6), ("B", "C"): (40, 20)}), anchor="B", bootstrap=0)
    assert f.prior_of("A", "B") == 0.0 and f.prior_of("C", "D") == 1.0 and f.prior_of("B", "C") == 0.0
    elo = {r.name: r.elo for r in f.ratings}
    assert elo["A"] == pytest.approx(elo_of_score(34 / 40), abs=0.5)  # +301, not about +290


def test_a_bootstrap_sweep_is_finite_and_said() -> None:
    """A 39/40 pairing: some bootstrap replicates draw 40/40.  Each such replicate gets the virtual
    draw for that pair (finite, not the optimiser's bound), and the rating says its interval's edge
    comes from them; a pairing far from a sweep is not marked."""
    from experiments.harness.ratings import fit

    f = fit(_results({("A", "B"): (40, 39), ("B", "C"): (40, 22)}), anchor="B", bootstrap=300, seed=1)
    r = {x.name: x for x in f.ratings}
    assert r["A"].sweep_bounded and not r["C"].sweep_bounded
    assert r["A"].hi < 1500 and np.isfinite(f.samples).all()  # bounded by the virtual draw, not the optimiser


def test_the_difference_has_its_own_interval() -> None:
    """A and B both close to C: against the anchor each interval is wide, but A − B, from the same
    replicates, is narrower than their two widths together, and contains the point difference."""
    from experiments.harness.ratings import fit

    f = fit(_results({("A", "C"): (60, 36), ("B", "C"): (60, 30), ("A", "B"): (60, 33)}), anchor="C",
            bootstrap=200, seed=3)
    by = {r.name: r for r in f.ratings}
    d, lo, hi = f.difference("A", "B")
    assert lo <= d <= hi and d == pytest.approx(by["A"].elo - by["B"].elo)
    assert hi - lo < (by["A"].hi - by["A"].lo) + (by["B"].hi - by["B"].lo)


def test_one_home_for_the_statistics() -> None:
    from experiments.harness import ablate, ratings, sprt, stats

    assert ratings.wilson is stats.wilson and ratings.elo_of_score is stats.elo_of_score
    assert ablate.pentanomial is stats.pentanomial and ablate.elo_interval is stats.pentanomial_elo
    assert sprt.pair_index is stats.pair_index
    # one clamp: a quarter unit short of perfect
    assert stats.elo_of_score(1.0, 10) == pytest.approx(stats.elo_of_score(1 - 1 / 40))
    assert stats.pentanomial_elo([0, 0, 0, 0, 10])[1] == pytest.approx(stats.elo_of_score(1.0, 10))


@pytest.mark.parametrize("inference", ["onnxruntime", "frozen"])
def test_a_positions_network_outputs_do_not_depend_on_its_batch(inference: str) -> None:
    """Pooled runs put a position in batches of any size with any companions: its outputs must not
    change (under TorchScript they did by up to 1.2e-6 before CPU batches were padded, which changed
    searches; ONNX Runtime's do not, even alone)."""
    from engines import factory
    from evaluators.base import Leaf

    ev = factory.create(f"rise-mcts:inference={inference}", "crazyhouse").evaluator
    leaves = [Leaf.of(p) for p in ev.sample_positions(48, seed=1)]
    ref = [(e.value, tuple(e.priors)) for e in ev.evaluate(leaves)]
    for size in (2, 3, 5, 7, 9, 13, 33):
        got = []
        for s in range(0, len(leaves), size):
            chunk = leaves[s:s + size]
            if len(chunk) == 1:
                chunk = chunk + leaves[:1]  # a batch of one is the documented exception
                got += [(e.value, tuple(e.priors)) for e in ev.evaluate(chunk)][:1]
            else:
                got += [(e.value, tuple(e.priors)) for e in ev.evaluate(chunk)]
        assert got == ref, size
    mixed = leaves[40:43] + leaves[:2]
    assert [(e.value, tuple(e.priors)) for e in ev.evaluate(mixed)] == ref[40:43] + ref[:2]
    alone = [(e.value, tuple(e.priors)) for lf in leaves[:8] for e in ev.evaluate([lf])]
    if inference == "onnxruntime":
        assert alone == ref[:8]
        return
    assert alone != ref[:8]  # under TorchScript a lone position runs another kernel ...
    ev.pad_single = True  # ... unless padded too, as the harness does for node-limited runs
    assert [(e.value, tuple(e.priors)) for lf in leaves[:8] for e in ev.evaluate([lf])] == ref[:8]


def test_a_pooled_network_match_replays_exactly(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """RISE games played 4 at a time (their leaves pooled into shared batches) replay move by move
    one game at a time: each position's network outputs do not depend on its batch."""
    from experiments.cli import main as cli

    db = tmp_path / "r.sqlite"
    assert cli.main(["match", "rise-mcts", "rise-mcts:batch_size=3", "--nodes", "24", "--games", "4", "--max-plies",
                     "40", "--concurrency", "4", "--db", str(db), "--pgn", str(tmp_path / "r.pgn"), "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["replay", str(db), "--quiet"]) == 0
    assert "4 games replayed, every move agrees" in capsys.readouterr().out


def test_games_with_a_pooled_external_engine_replay(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Fairy-Stockfish processes are reused across games of a run; ucinewgame does not reset its
    node-check counter, so before each harness game started a fresh process, 3 of these 18 games
    diverged at a Fairy-Stockfish move when replayed."""
    import shutil

    from experiments.harness.replay import replay

    if not (shutil.which("fairy-stockfish") or Path("/usr/games/fairy-stockfish").exists()):
        pytest.skip("fairy-stockfish is not installed")
    play_tournament(tmp_path / "t.sqlite", 6, 2, 1, 60,
                    [("f1", "fairy-stockfish", 1000), ("f3", "fairy-stockfish", 3000), ("m", "material-ab", 200)])
    outs = replay(tmp_path / "t.sqlite", progress=False)
    assert len(outs) == 18 and [o for o in outs if o.ply is not None] == []


def test_a_changed_builtin_default_changes_neither_a_replay_nor_a_resumed_run(tmp_path, capsys,  # type: ignore[no-untyped-def]
                                                                               monkeypatch) -> None:
    """Every game records the options its engines resolved to; a replay plays exactly those over the
    search's own defaults, so changing a built-in engine's defaults (engines/builtin.toml) leaves
    stored games replaying, and a run resumed on them refuses to mix the two engines (one line)."""
    import dataclasses

    from engines import catalog, registry
    from experiments.cli import main as cli
    from experiments.harness.tasks import MatchError

    db = tmp_path / "d.sqlite"
    play_tournament(db, 2, 2, 1, 30, [("m", "material-mcts", 24), ("a", "material-ab", 64)])
    assert cli.main(["replay", str(db), "--quiet"]) == 0
    assert "2 games replayed, every move agrees" in capsys.readouterr().out
    info = catalog.builtins()["material-mcts"]
    changed = dataclasses.replace(info, spec=dataclasses.replace(info.spec, options={"virtual_loss": "1", "batch_size": "1"}))
    monkeypatch.setitem(catalog.builtins(), "material-mcts", changed)
    assert registry.resolve("material-mcts").options == {"virtual_loss": "1", "batch_size": "1"}
    assert cli.main(["replay", str(db), "--quiet"]) == 0
    assert "2 games replayed, every move agrees" in capsys.readouterr().out
    with pytest.raises(MatchError, match="no longer has.*a built-in default changed"):
        play_tournament(db, 2, 2, 1, 30, [("m", "material-mcts", 24), ("a", "material-ab", 64)])
