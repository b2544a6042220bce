"""The LazyBug-style two-board network (evaluators/bughouse_net.py): hand-worked input planes,
scalars and policy indices (mirroring for Black, the partner board on files 8-15, drops,
under-promotions in both directions), the batched evaluator (per-board priors, the sit move),
weights errors, and the data/training pipeline (experiments/bughouse_data.py, bughouse_train.py)."""
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from board import move_from_uci
from board.bughouse import BughouseGame, format_move
from evaluators.base import Leaf
from board.bughouse import leaf_state, sit_move, two_board_move
from evaluators import bughouse_net as bn
from evaluators.nets import load_model, save_model
from experiments.training.bughouse_data import BughouseDataError, samples_from_db
from experiments.harness.bughouse import BughouseStore
from experiments.harness.store import GameRecord, MoveStat
from tests.oracles.bughouse_mcts import BughouseLimits, BughouseMCTS

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"


def idx(game: BughouseGame, focus: int, board_id: int, uci: str) -> int:
    return bn.policy_index(game, focus, board_id, move_from_uci(uci))


def planes_of(game: BughouseGame, focus: int, clocks=None) -> tuple[np.ndarray, np.ndarray]:
    p, s = bn.encode(np.array([leaf_state(game, focus, clocks)], dtype=np.int64))
    return p[0], s[0]


# ------------------------------------------------------------------------------------ encoding

def test_start_position_planes_both_boards_from_our_team_side():
    g = BughouseGame()
    p, s = planes_of(g, 0)  # A-white to move: own board A as is, partner (B-black) board mirrored
    assert p.shape == (14, 8, 16)
    row1 = np.zeros(16)
    row1[:] = 1
    assert (p[0, 1] == row1).all() and p[0].sum() == 16          # our pawns and the partner's, row 1
    assert (p[6, 6] == 1).all() and p[6].sum() == 16             # opponents' pawns on row 6
    assert p[5, 0, 4] == 1 and p[5, 0, 12] == 1 and p[5].sum() == 2  # e1 (ours) and e8 (partner's)
    assert p[4, 0, 3] == 1 and p[4, 0, 11] == 1                  # queens on d-file, back row
    assert p[12].sum() == 0 and p[13].sum() == 0
    assert s.shape == (34,)
    assert (s[0:20] == 0).all() and (s[20:24] == bn.UNTIMED_CLOCK).all()
    assert s[24] == 0 and s[25] == 1 and (s[26:34] == 1).all()  # partner (B-black) not to move


def test_colour_mirror_gives_the_same_input():
    # X: A after 1.e4, Black (team 1) to move on A; its partner plays White on B, to move.
    x = BughouseGame("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR[] b KQkq - 0 1 | " + START)
    # Y: the colour-mirrored position: White to move on A facing ...e5, partner Black to move on B.
    y = BughouseGame("rnbqkbnr/pppp1ppp/8/4p3/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | "
                     "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] b KQkq - 0 1")
    px, sx = planes_of(x, 0)
    py, sy = planes_of(y, 0)
    assert (px == py).all()
    assert sx[25] == 0 and sy[25] == 1 and sx[24] == sy[24] == 1
    assert (np.delete(sx, 25) == np.delete(sy, 25)).all()
    # and the policy indices of mirrored moves agree
    assert idx(x, 0, 0, "e7e5") == idx(y, 0, 0, "e2e4")
    assert idx(x, 0, 1, "g1f3") == idx(y, 0, 1, "g8f6")


def test_pockets_clocks_promoted_and_en_passant():
    g = BughouseGame("4k3/8/8/3pP3/8/8/8/4K2Q~[QNppp] w - d6 0 1 | 4k3/8/8/8/8/8/8/4K3[Rbb] b - - 0 1")
    p, s = planes_of(g, 0, [60000, 120000, 300000, -1])
    assert s[0] == 0 and s[1] == pytest.approx(1 / 16) and s[4] == pytest.approx(1 / 16)  # own Q, N
    assert s[5] == pytest.approx(3 / 16)           # opponent (A-black) pawns
    # partner = B-black: pocket bb; partner's opponent = B-white: R
    assert s[10 + 2] == pytest.approx(2 / 16) and s[15 + 3] == pytest.approx(1 / 16)
    assert s[20] == pytest.approx(0.2) and s[21] == pytest.approx(0.4)   # 1 min, 2 min / 5
    assert s[22] == bn.UNTIMED_CLOCK and s[23] == pytest.approx(1.0)     # B-black untimed, B-white 5 min
    assert s[24] == 1                               # the partner (B-black) is to move
    assert p[12, 0, 7] == 1 and p[4, 0, 7] == 1     # promoted queen on h1
    assert p[13, 5, 3] == 1 and p[13].sum() == 1    # en-passant square d6


# ------------------------------------------------------------------------------------ policy map

def test_hand_worked_policy_indices():
    g = BughouseGame()
    # e2e4 for A-white: queen-like N (dir 0), length 2 -> plane 1, from e2 = row 1, col 4
    assert idx(g, 0, 0, "e2e4") == 1 * 128 + 1 * 16 + 4
    # g1f3: knight (dx, dy) = (-1, 2) = KNIGHT_DIRS[7] -> plane 63, from g1 = row 0, col 6
    assert idx(g, 0, 0, "g1f3") == 63 * 128 + 0 * 16 + 6
    # B-white's e2e4 seen from A-white (partner B-black, mirrored board): e2 -> row 6, moving down
    # (dir S = 4, length 2 -> plane 29), files 8-15
    assert idx(g, 0, 1, "e2e4") == 29 * 128 + 6 * 16 + 12
    h = BughouseGame("4k3/8/8/8/8/8/8/4K3[PN] w - - 0 1 | 4k3/P7/8/8/8/8/8/4K3[n] w - - 0 1")
    # own pawn drop P@d5 (plane 82) at the to-square d5 = row 4, col 3
    assert idx(h, 0, 0, "P@d5") == 82 * 128 + 4 * 16 + 3
    # a knight drop on the partner board (mirrored: e4 -> row 4), plane 83, col 4 + 8
    assert idx(h, 1, 0, "N@e4") == 83 * 128 + 4 * 16 + 12    # focus B-white: partner A-black, mirrored
    assert idx(h, 0, 1, "a7a8r") == (73 + 2 * 3 + 1) * 128 + 1 * 16 + 8  # B-white promotes, seen mirrored (down)
    assert idx(h, 1, 1, "a7b8n") == (64 + 0 * 3 + 2) * 128 + 6 * 16 + 0  # the same board as own (up)
    assert idx(h, 1, 1, "a7a8q") == (0 * 7 + 0) * 128 + 6 * 16 + 0      # queen promotion = pawn's N move
    # sit moves have no policy entry
    st = np.array([leaf_state(h, 0)], dtype=np.int64)
    assert bn.policy_indices_np(st, np.array([sit_move(1)]))[0] == -1


def test_every_legal_move_of_random_games_has_a_distinct_index():
    rng = np.random.default_rng(3)
    g = BughouseGame()
    for _ in range(120):
        if g.outcome() is not None:
            break
        for focus in (0, 1):
            st = np.array([leaf_state(g, focus)], dtype=np.int64)
            for b in (0, 1):
                moves = np.array([two_board_move(b, m) for m in g.legal_moves(b)], dtype=np.int64)
                if len(moves):
                    ix = bn.policy_indices_np(st, moves, np.zeros(len(moves), dtype=np.int64))
                    assert (ix >= 0).all() and (ix < bn.POLICY_SIZE).all() and len(set(ix.tolist())) == len(ix)
                    assert (((ix % 16) >= 8) == (b != focus)).all()
        b = int(rng.integers(2))
        if not g.legal_moves(b):
            b = 1 - b
        ms = g.legal_moves(b)
        if not ms:
            break
        g.push(b, ms[int(rng.integers(len(ms)))])


# ------------------------------------------------------------------------------------ evaluator

def tiny_eval(seed: int = 0) -> bn.BughouseNetEvaluator:
    torch.manual_seed(seed)
    return bn.BughouseNetEvaluator(bn.build("tiny"))


def test_priors_per_board_with_sit_and_batching():
    ev = tiny_eval()
    g = BughouseGame()
    g.push_str("A:e2e4")
    moves = [two_board_move(b, m) for b in (0, 1) for m in g.legal_moves(b)] + [sit_move(1)]
    leaf = Leaf(leaf_state(g, 0), moves, "bughouse")
    only_sit = Leaf(leaf_state(g, 1), [two_board_move(0, m) for m in g.legal_moves(0)] + [sit_move(1)],
                    "bughouse")
    out = ev.evaluate([leaf, only_sit])
    assert len(out) == 2
    e = out[0]
    assert -1.0 <= e.value <= 1.0 and len(e.priors) == len(moves)
    pa = sum(p for m, p in zip(moves, e.priors) if m >> 18 == 0)
    pb = sum(p for m, p in zip(moves, e.priors) if m >> 18 == 1)
    assert pa == pytest.approx(1.0) and pb == pytest.approx(1.0)
    assert e.priors[-1] == pytest.approx(bn.SIT_PRIOR)
    assert only_sit.moves[-1] == sit_move(1) and out[1].priors[-1] == pytest.approx(1.0)
    # batched evaluation = one by one
    alone = ev.evaluate([leaf])[0]
    assert alone.value == pytest.approx(e.value, abs=1e-5)
    assert np.allclose(alone.priors, e.priors, atol=1e-5)
    ev.max_batch = 1
    assert np.allclose(ev.evaluate([leaf, only_sit])[1].priors, out[1].priors, atol=1e-6)


def test_mixed_evaluator_takes_the_networks_priors_and_the_classical_value(tmp_path: Path):
    from engines import registry
    from evaluators.bughouse_classical import BughouseClassicalEvaluator

    ev = tiny_eval(2)
    path = tmp_path / "w.pt"
    save_model(str(path), bn.FAMILY, ev.net, {})
    mixed = registry.load_evaluator("bughouse-net-classical", weights=str(path), inference="eager")
    net = bn.BughouseNetEvaluator.load(str(path), inference="eager")
    g = BughouseGame()
    for text in ("A:e2e4", "B:d2d4", "A:d7d5", "A:e4d5"):
        g.push_str(text)
    leaves = [Leaf(leaf_state(g, f), [two_board_move(b, m) for b in (0, 1) for m in g.legal_moves(b)] + [sit_move(1)],
                   "bughouse") for f in (0, 1)]
    got, n, c = mixed.evaluate(leaves), net.evaluate(leaves), BughouseClassicalEvaluator().evaluate(leaves)
    assert [e.value for e in got] == [e.value for e in c] and got[0].value != 0.0
    assert all(np.allclose(a.priors, b.priors) for a, b in zip(got, n))
    assert mixed.path == str(path)  # games record which network played (bughouse.network_of)


def test_evaluator_rejects_other_leaves():
    ev = tiny_eval()
    with pytest.raises(bn.BughouseNetError, match="two-board bughouse leaves"):
        ev.evaluate([Leaf((0,) * 16, [], "crazyhouse")])


def test_weights_errors_name_the_file(tmp_path: Path):
    missing = tmp_path / "nope.pt"
    with pytest.raises(bn.BughouseNetError, match=str(missing)):
        bn.BughouseNetEvaluator.load(str(missing))
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(b"not a torch file at all")
    with pytest.raises(bn.BughouseNetError, match="corrupt.pt is not a searchbench weights file"):
        bn.BughouseNetEvaluator.load(str(bad))
    other = tmp_path / "other.pt"
    torch.save({"family": "rise", "state_dict": {}}, other)
    with pytest.raises(bn.BughouseNetError, match="other.pt is not a bughouse model"):
        bn.BughouseNetEvaluator.load(str(other))
    mismatch = tmp_path / "mismatch.pt"
    net = bn.build("tiny")
    save_model(str(mismatch), bn.FAMILY, net)
    d = torch.load(mismatch, weights_only=True)
    d["config"]["channels"] = 32
    torch.save(d, mismatch)
    with pytest.raises(bn.BughouseNetError, match="mismatch.pt does not match"):
        bn.BughouseNetEvaluator.load(str(mismatch))


def test_save_load_round_trip_and_search(tmp_path: Path):
    ev = tiny_eval(1)
    path = tmp_path / "w.pt"
    save_model(str(path), bn.FAMILY, ev.net, {"note": "x"})
    again = bn.BughouseNetEvaluator.load(str(path))
    g = BughouseGame()
    leaf = Leaf(leaf_state(g, 0), [two_board_move(0, m) for m in g.legal_moves(0)], "bughouse")
    assert again.evaluate([leaf])[0].value == pytest.approx(ev.evaluate([leaf])[0].value, abs=1e-6)
    assert again.meta == {"note": "x"}
    r = BughouseMCTS(again).run(g, 0, BughouseLimits(nodes=40))
    assert r.nodes >= 40 and r.move in g.legal_moves(0)


def test_shipped_weights_load_if_present():
    import os

    path = os.path.join(bn.WEIGHTS_DIR, bn.DEFAULT_WEIGHTS)
    if not os.path.exists(path):
        pytest.skip("no shipped bughouse weights")
    ev = bn.BughouseNetEvaluator.load()
    g = BughouseGame()
    e = ev.evaluate([Leaf(leaf_state(g, 0), [two_board_move(0, m) for m in g.legal_moves(0)], "bughouse")])[0]
    assert -1 <= e.value <= 1 and sum(e.priors) == pytest.approx(1.0)


# ------------------------------------------------------------------------------------ data, training

def store_game(db: Path, key: str, moves: list[str], result: str, reason: str) -> None:
    g = BughouseGame(None, 60000, 0)
    times = []
    for i, text in enumerate(moves):
        times.append(500 * (i + 1))
        g.push_str(text, times[-1])
    seats = [{"seat": s, "base_ms": 60000, "inc_ms": 0} for s in ("A-white", "A-black", "B-white", "B-black")]
    rec = GameRecord(key=key, run="t", match="m", pair=0, variant="bughouse", white="x", black="y",
                     white_settings={}, black_settings={}, opening="startpos", opening_fen=g.root_fen,
                     opening_moves=[], moves=moves, result=result, reason=reason,
                     move_stats=[MoveStat() for _ in moves])
    s = BughouseStore(db)
    try:
        s.add(rec, seats, times, [], g.root_fen, "")
    finally:
        s.close()


def test_samples_from_stored_games(tmp_path: Path):
    db = tmp_path / "g.sqlite"
    store_game(db, "m:0", ["A:e2e4", "B:d2d4", "A:d7d5", "A:e4d5"], "0-1", "flag on board A")
    store_game(db, "m:1", ["A:g1f3"], "1/2-1/2", "max_plies")        # skipped
    store_game(db, "m:2", ["B:e2e4"], "1-0", "forfeit: B-black crashed")  # skipped
    s = samples_from_db([db])
    assert s.games == 1 and len(s) == 8          # 4 plies x 2 views
    assert s.own.tolist() == [True, False] * 4
    # ply 1 (A:e2e4 by A-white, team 0, who lost): own view z = -1; the B view (B-white, team 1) z = +1
    assert s.value[:2].tolist() == [-1.0, 1.0]
    g = BughouseGame()
    assert s.policy[0] == idx(g, 0, 0, "e2e4") and s.policy[1] == idx(g, 1, 0, "e2e4")
    # the legal moves of the moving board, with the played one among them
    for i in range(len(s)):
        legal = s.legal[s.legal_start[i]:s.legal_start[i + 1]]
        assert s.policy[i] in legal
    assert s.legal_start[1] - s.legal_start[0] == 20
    # clocks at the moment of the move: B-white's first move at 1000 ms has used 1 s
    st = s.states[2]
    assert st[2 * 16] == 1 and st[2 * 16 + 1 + 2] == 59000
    sub = s.subset(np.array([False, False, True, True, False, False, False, False]))
    assert len(sub) == 2 and (sub.legal == s.legal[s.legal_start[2]:s.legal_start[4]]).all()
    with pytest.raises(BughouseDataError, match="no such game database"):
        samples_from_db([tmp_path / "none.sqlite"])


def test_train_tiny_and_load(tmp_path: Path):
    from experiments.training.bughouse_train import train
    from experiments.training.recipe import TrainConfig

    db = tmp_path / "g.sqlite"
    lines = [["A:e2e4", "B:d2d4", "A:d7d5", "A:e4d5", "B:g8f6"], ["A:d2d4", "B:e2e4", "B:e7e5", "A:g8f6"],
             ["B:g1f3", "A:b1c3", "B:b8c6"], ["A:c2c4", "B:c2c4", "A:c7c5", "B:c7c5"]]
    for i, ms in enumerate(lines):
        store_game(db, f"m:{i}", ms, "1-0" if i % 2 else "0-1", "checkmate on board A")
    out = tmp_path / "run"
    meta = train(TrainConfig(model="bughouse", data=[str(db)], out=str(out), size="tiny", epochs=2, minutes=None, batch=8, val_fraction=0.3),
                 progress=False, command="test")
    assert meta["epochs_done"] == 2 and meta["train_positions"] + meta["val_positions"] == 32
    for k in ("val_policy_acc", "val_value_sign_acc", "val_value_mse", "val_partner_policy_acc"):
        assert 0.0 <= meta[k] <= 4.0
    assert (out / "metrics.csv").read_text().count("\n") == 3
    ev = bn.BughouseNetEvaluator.load(str(out / "model.pt"))
    assert ev.meta["size"] == "tiny"
    # resumed after the last epoch: nothing more to train, same model metadata
    again = train(TrainConfig(model="bughouse", data=[str(db)], out=str(out), size="tiny", epochs=2, minutes=None, batch=8, val_fraction=0.3),
                  progress=False, command="test")
    assert again["epochs_done"] == 2 and again["val_policy_acc"] == pytest.approx(meta["val_policy_acc"])


def test_heldout_compares_networks_on_the_same_games(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from experiments.cli import main as cli
    from experiments.training.bughouse_train import _plies, heldout

    db = tmp_path / "g.sqlite"
    for i in range(6):
        store_game(db, f"m:{i}", ["A:e2e4", "B:d2d4", "A:d7d5", "A:e4d5", "B:g8f6"][: 3 + i % 3],
                   "1-0" if i % 2 else "0-1", "checkmate on board A")
    w = tmp_path / "w.pt"
    save_model(str(w), bn.FAMILY, bn.build("tiny"))
    r = heldout([str(db)], [str(w), str(w)], val_fraction=0.5, seed=3)
    assert r["games"] == 6 and 1 <= r["val_games"] < 6
    assert list(r["nets"]) == [str(w)]  # the same weights twice: one entry
    m = r["nets"][str(w)]
    assert sum(st["val_samples"] for st in m["stages"].values()) == m["val_samples"] == r["val_positions"]
    assert list(m["stages"]) == ["0-19"]
    s = samples_from_db([db])
    assert _plies(s).tolist()[:6] == [0, 0, 1, 1, 2, 2] and _plies(s).max() <= 4
    assert cli.main(["bughouse-heldout", "--db", str(db), "--weights", str(w), "--val-fraction", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "held out:" in out and "along the game" in out
    assert cli.main(["bughouse-heldout", "--db", str(db), "--weights", str(tmp_path / "no.pt")]) == 2


# ------------------------------------------------------------------------------------ engine specs

def test_network_seats_and_team_specs_with_paths(tmp_path: Path):
    from engines.base import EngineError
    from engines.registry import EvaluatorPool
    from engines.factory import make_seat
    from engines.seats import OurSeat, parse_team

    w = tmp_path / "sub" / "w.pt"
    w.parent.mkdir()
    save_model(str(w), bn.FAMILY, bn.build("tiny"))
    team = parse_team(f"rise-bughouse-mcts:weights={w},nodes=20/bughouse-mcts:nodes=10")
    assert team.seat_specs == (f"rise-bughouse-mcts:weights={w},nodes=20", "bughouse-mcts:nodes=10")
    cache = EvaluatorPool()
    a = make_seat(team.seat_specs[0], 1, cache)
    b = make_seat(f"bughouse-net+bughouse-mcts:weights={w}", 2, cache)
    c = make_seat(team.seat_specs[1], 3, cache)
    assert isinstance(a, OurSeat) and a.evaluator is b.evaluator and a.evaluator.name == "bughouse-net"
    assert c.evaluator.name == "bughouse-classical"
    with pytest.raises(EngineError, match="nope.pt"):
        make_seat(f"rise-bughouse-mcts:weights={tmp_path / 'nope.pt'}", 1, EvaluatorPool())
    with pytest.raises(EngineError, match="unknown evaluator"):
        make_seat("magic+bughouse-mcts", 1, EvaluatorPool())
    with pytest.raises(EngineError, match="takes no weights"):
        make_seat(f"bughouse-mcts:weights={w}", 1, EvaluatorPool())


# ------------------------------------------------------------------------------------ generation, CLI

@pytest.mark.skipif(__import__("tests.engines_path", fromlist=["find_engine"]).find_engine("sjeng") is None,
                    reason="sjeng not installed")
def test_generate_with_two_workers_on_the_worker_pool_fills_a_shard_each_and_resumes(tmp_path: Path):
    from experiments.training.bughouse_data import count_all, count_games, generate, shard_paths

    db = tmp_path / "g.sqlite"
    pairs = [("sjeng:depth=1", "sjeng:depth=1")]
    assert generate(db, pairs, 4, 30000, 0, chunk=2, progress=False, max_plies=60, workers=2) == count_all(db) == 4
    assert [count_games(p) for p in shard_paths(db)] == [2, 2]  # one writer a shard, the games shared out
    assert generate(db, pairs, 4, 30000, 0, chunk=2, progress=False, max_plies=60, workers=2) == 4  # nothing replayed


@pytest.mark.skipif(__import__("tests.engines_path", fromlist=["find_engine"]).find_engine("sjeng") is None,
                    reason="sjeng not installed")
def test_generate_sjeng_games_resumes_and_gives_samples(tmp_path: Path):
    from experiments.training.bughouse_data import count_games, generate

    db = tmp_path / "d" / "g.sqlite"
    n = generate(db, [("sjeng:depth=1", "sjeng:depth=1")], 2, 30000, 0, chunk=2, progress=False, max_plies=300)
    assert n == count_games(db) == 2
    assert generate(db, [("sjeng:depth=1", "sjeng:depth=1")], 2, 30000, 0, chunk=2, progress=False) == 2
    # more games: the pairing resumes after its stored games (indices 2 and 3, none replayed)
    assert generate(db, [("sjeng:depth=1", "sjeng:depth=1")], 4, 30000, 0, chunk=2, progress=False,
                    max_plies=300) == 4
    from experiments.training.bughouse_data import _done_keys

    assert sorted(k.rsplit(":", 1)[1] for k in _done_keys(db)) == ["0", "1", "2", "3"]
    assert db.with_suffix(".bpgn").exists()
    try:
        s = samples_from_db([db])
    except BughouseDataError:  # both games ended by max_plies or a forfeit: nothing usable
        return
    assert len(s) > 0 and s.games <= 4 and set(np.unique(s.value).tolist()) <= {-1.0, 1.0}


@pytest.mark.skipif(__import__("tests.engines_path", fromlist=["find_engine"]).find_engine("sjeng") is None,
                    reason="sjeng not installed")
def test_parallel_generation_writes_shards_that_training_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from experiments.cli import main as cli
    from experiments.cli.bughouse import _with_shards
    from experiments.training.bughouse_data import count_all, count_games, shard, shard_paths

    db = tmp_path / "g.sqlite"
    args = ["bughouse-datagen", "--db", str(db), "--pair", "sjeng:depth=1", "sjeng:depth=1", "--tc", "20+0",
            "--chunk", "2", "--quiet"]
    assert cli.main(args + ["--games", "4", "--workers", "2"]) == 0
    assert "games an hour with 2 workers" in capsys.readouterr().out
    assert shard_paths(db) == [db, shard(db, 1)] and shard(db, 1).name == "g.w1.sqlite"
    assert count_games(db) == count_games(shard(db, 1)) == 2 and count_all(db) == 4
    # resumed: a larger total is shared out again (each worker plays whole game pairs), the stored games stay
    assert cli.main(args + ["--games", "5", "--workers", "2"]) == 0
    assert count_games(shard(db, 1)) == 2 and count_all(db) == 6
    assert _with_shards([str(db)]) == [str(db), str(shard(db, 1))]
    assert _with_shards([str(tmp_path / "none.sqlite")]) == [str(tmp_path / "none.sqlite")]


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from experiments.cli import main as cli

    assert cli.main(["bughouse-train", "--db", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "o")]) == 2
    assert cli.main(["bughouse-train", "--size", "huge", "--db", "x", "--out", str(tmp_path / "o")]) == 2
    assert cli.main(["bughouse-datagen", "--games", "0", "--db", str(tmp_path / "g.sqlite")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "no such game database" in err[0] and "unknown size" in err[1]


def _bughouse_loop(tmp_path: Path, gate: str = "games = 2\nnodes = 4\nthreshold = 0.0\n") -> tuple[Path, Path, Path, Path]:
    """A tiny bughouse loop of ``searchbench rl``: (config, out, supervised games, initial weights)."""
    sup = tmp_path / "sup.sqlite"
    lines = [["A:e2e4", "B:d2d4", "A:d7d5", "A:e4d5", "B:g8f6"], ["A:d2d4", "B:e2e4", "B:e7e5", "A:g8f6"],
             ["B:g1f3", "A:b1c3", "B:b8c6"], ["A:c2c4", "B:c2c4", "A:c7c5", "B:c7c5"]] * 2
    for i, ms in enumerate(lines):
        store_game(sup, f"m:{i}", ms, "1-0" if i % 2 else "0-1", "checkmate on board A")
    w = tmp_path / "w.pt"
    save_model(str(w), bn.FAMILY, bn.build("tiny"))
    out = tmp_path / "loop"
    cfg = tmp_path / "rl.toml"
    cfg.write_text(f'name = "t"\nvariant = "bughouse"\ninitial = "{w}"\ngenerations = 2\nout = "{out}"\n'
                   '[[arms]]\nname = "sp"\nengine = "rise-bughouse-mcts"\n'
                   '[[arms]]\nname = "ctl"\nengine = "rise-bughouse-mcts"\nkind = "control"\n'
                   f'[selfplay]\ngames = 2\nnodes = 4\ntc = "60+0"\nmax_plies = 40\n'
                   f'[train]\nsupervised = ["{sup}"]\nepochs = 1\nminutes = 0.5\nval_fraction = 0.3\nbatch = 16\n'
                   f'[gate]\n{gate}')
    return cfg, out, sup, w


def test_rl_runs_the_bughouse_loop_with_a_control_arm_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """The one self-play loop (searchbench rl) with variant = "bughouse": four-seat self-play, the
    two-board trainer, a four-seat gate, a control arm on the supervised games for the same CPU."""
    import json

    from experiments.cli import main as cli

    cfg, out, sup, w = _bughouse_loop(tmp_path)
    assert cli.main(["rl", str(cfg), "--quiet"]) == 0
    assert "sp: best generation 2; gen 1: accepted" in capsys.readouterr().out
    state = json.loads((out / "sp" / "state.json").read_text())
    g1, g2 = state["gens"]["1"], state["gens"]["2"]
    assert state["best"] == 2 and g1["gate"]["games"] == 2 and g1["gate"]["accepted"]
    assert g1["selfplay"]["games"] == 2 and g1["selfplay"]["engine"] == f"rise-bughouse-mcts:weights={w},nodes=4"
    assert g2["selfplay"]["engine"].endswith(f"weights={out}/sp/gen-001/train/model.pt,nodes=4")
    meta = load_model(str(out / "sp" / "gen-002" / "train" / "model.pt"), bn.FAMILY)[1]["meta"]
    assert meta["init"] == str(out / "sp" / "gen-001" / "train" / "model.pt")
    # the supervised games come first under one seed: the same ones are held out in every generation and
    # arm, and bughouse-heldout (the supervised games alone, the loop's seed) holds out those
    from experiments.training.bughouse_data import samples_from_db
    from experiments.training.bughouse_train import split_by_game

    assert meta["data"][0] == str(sup) and len(meta["data"]) == 3  # the supervised games, two generations' self-play
    alone, mixed = samples_from_db([str(sup)]), samples_from_db(meta["data"])

    def held(samples: Any) -> set[int]:
        return set(np.unique(split_by_game(samples, 0.3, 1)[1].game).tolist())

    assert held(alone) and {g for g in held(mixed) if g < alone.games} == held(alone)
    assert "# arm sp, generation 2" in (out / "sp" / "gen-002" / "card.md").read_text()
    rows = (out / "generations.csv").read_text().splitlines()  # a row an arm's generation, the gate's decision
    assert len(rows) == 5 and rows[1].startswith("sp,1,0,2,") and rows[1].endswith(",0-2-0,True")
    md = (out / "generations.md").read_text()
    assert rows[3].startswith("ctl,1,0,0,0,") and "| sp | 2 | 1 | 2 |" in md and f"| {g1['train']['cpu']} |" in md
    # the control arm: the supervised games alone, from its own network, for the self-play arm's CPU seconds
    ctl = json.loads((out / "ctl" / "state.json").read_text())
    c1, c2 = ctl["gens"]["1"], ctl["gens"]["2"]
    assert c1["selfplay"]["games"] == 0 and c1["train"]["data"] == [str(sup)] and c2["train"]["init"] == 1
    budget = round(g1["selfplay"]["cpu"] + g1["train"]["cpu"], 1)
    assert f"--cpu-seconds {budget}" in (out / "ctl" / "gen-001" / "train" / "command.txt").read_text()
    meta = load_model(str(out / "ctl" / "gen-002" / "train" / "model.pt"), bn.FAMILY)[1]["meta"]
    assert meta["init"] == str(out / "ctl" / "gen-001" / "train" / "model.pt") and meta["data"] == [str(sup)]
    # the run record names no path of this checkout (the default suite is ""): it resumes from another
    assert json.loads((out / "loop.json").read_text())["selfplay"]["openings"] == ""
    # the state to carry to another machine holds the replay window's game databases
    from experiments.selfplay import loop as rl, state as rl_state

    files = rl_state.state_files(rl.parse(str(cfg)))
    assert {"sp/gen-001/selfplay/games.sqlite", "sp/gen-002/train/model.pt", "ctl/state.json"} <= set(files)
    # a finished loop resumes to nothing; more generations go on from the best network
    before = (out / "sp" / "gen-001" / "selfplay" / "games.sqlite").stat().st_mtime
    assert cli.main(["rl", str(cfg), "--quiet"]) == 0
    assert (out / "sp" / "gen-001" / "selfplay" / "games.sqlite").stat().st_mtime == before
    cfg.write_text(cfg.read_text().replace("generations = 2", "generations = 3"))
    assert cli.main(["rl", str(cfg), "--quiet"]) == 0
    state = json.loads((out / "sp" / "state.json").read_text())
    assert state["best"] == 3 and state["gens"]["3"]["selfplay"]["network"] == 2


def test_a_bughouse_loop_without_a_gate_takes_every_candidate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from experiments.cli import main as cli

    cfg, out, _, _ = _bughouse_loop(tmp_path, gate="enabled = false\n")
    assert cli.main(["rl", str(cfg), "--quiet"]) == 0
    assert "sp: best generation 2; gen 1: taken (no gate), gen 2: taken (no gate)" in capsys.readouterr().out
    for arm in ("sp", "ctl"):
        state = json.loads((out / arm / "state.json").read_text())
        assert state["best"] == 2 and all(g["gate"]["games"] == 0 and g["gate"]["accepted"] for g in state["gens"].values())
    assert not (out / "sp" / "gen-001" / "gate.sqlite").exists()


@pytest.mark.parametrize("edit, match", [
    (("generations = 2", 'generations = 2\nmode = "rounds"'), "carries no optimizer state"),
    (("max_plies = 40", "max_plies = 40\nfast_nodes = 2"), "one-board key"),
    (("batch = 16", "batch = 16\nsupervised_fraction = 0.5"), "one-board key"),
    (("threshold = 0.0", "threshold = 0.0\nsprt = true"), "one-board key"),
    (("[gate]", "[rate]\nheldout = []\n[gate]"), "rate a bughouse loop's networks with a bughouse-report"),
    (('engine = "rise-bughouse-mcts"\n[[', 'engine = "rise-mcts"\n[['), "does not play bughouse"),
    (('variant = "bughouse"\n', 'variant = "bughouse"\nmodel = "rise"\n'), "must be one of"),
    (("supervised = [", 'supervised = ["none.sqlite", '), "no data at"),
])
def test_a_bughouse_loop_refuses_what_it_cannot_do_in_one_line(tmp_path: Path, edit: tuple[str, str], match: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.cli import main as cli

    cfg, out, _, _ = _bughouse_loop(tmp_path)
    text = cfg.read_text()
    assert edit[0] in text
    cfg.write_text(text.replace(edit[0], edit[1], 1))
    assert cli.main(["rl", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0] and not out.exists()
