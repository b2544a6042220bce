"""Data generation with Fairy-Stockfish, shards, resume, split by game, PGN import with Elo filter."""
import io
import os
import shutil

import chess
import chess.pgn
import chess.variant
import numpy as np
import pytest

from board import new_position
from evaluators import encodings as enc
from experiments.cli import main as cli
from experiments.training import datagen


def _engine_or_skip() -> None:
    try:
        datagen.find_engine("fairy-stockfish")
    except datagen.DataError:
        pytest.skip("fairy-stockfish not installed")


def _replay_check(ds: datagen.DataSet) -> None:
    """Every stored position is the position reached by the opening and the moves before it."""
    for g in range(len(ds.game_uid)):
        idx = np.flatnonzero(ds.game == g)
        pos = new_position(ds.variant)
        for u in str(ds.game_opening[g]).split():
            pos.push_uci(u)
        for i in idx:
            assert tuple(int(v) for v in ds.raw[i]) == pos.raw_state()
            assert int(ds.move[i]) in pos.legal_moves()
            pos.push(int(ds.move[i]))
        out = pos.outcome(claim_draw=True)
        res = int(ds.game_result[g])
        if out is not None:
            assert datagen.RESULT_CODES[out[0]] == res
        else:
            assert res == 0  # adjudicated at max plies


def test_generate_resume_and_load(tmp_path):
    _engine_or_skip()
    out = str(tmp_path / "zh")
    cfg = datagen.GenConfig(out=out, variant="crazyhouse", games=3, nodes=100, workers=2, shard_games=2,
                            seed=7, max_plies=60)
    s1 = datagen.generate(cfg, progress=False)
    assert s1["games"] + s1["errors"] == 3 and s1["games"] >= 2
    assert len(datagen.shard_paths(out)) == 2  # 2 + 1 games
    s2 = datagen.generate(datagen.GenConfig(out=out, variant="crazyhouse", games=2, nodes=100, seed=7,
                                            max_plies=60), progress=False)
    assert s2["existing_games"] == s1["games"]
    ds = datagen.load_dataset(out)
    assert len(ds.game_uid) == s1["games"] + s2["games"] and len(ds) == s1["positions"] + s2["positions"]
    assert ds.variant == "crazyhouse"
    # openings are de-duplicated even with the same seed
    keys = set()
    for op in ds.game_opening:
        pos = new_position("crazyhouse")
        for u in str(op).split():
            pos.push_uci(u)
        keys.add(pos.zobrist)
    assert len(keys) == len(ds.game_uid)
    assert ((ds.score >= -datagen.MATE_SCORE) & (ds.score <= datagen.MATE_SCORE)).all()
    _replay_check(ds)
    with pytest.raises(datagen.DataError, match="crazyhouse games"):
        datagen.generate(datagen.GenConfig(out=out, variant="chess", games=1), progress=False)


def test_chess_games(tmp_path):
    _engine_or_skip()
    out = str(tmp_path / "chess")
    datagen.generate(datagen.GenConfig(out=out, variant="chess", games=1, nodes=50, seed=1, max_plies=40),
                     progress=False)
    ds = datagen.load_dataset(out)
    assert ds.variant == "chess" and len(ds) > 0
    _replay_check(ds)


def test_split_is_by_game_and_deterministic():
    uids = np.random.default_rng(0).integers(0, 2**62, size=20000, dtype=np.int64)
    v = datagen.is_validation(uids, 0.1)
    assert 0.08 < v.mean() < 0.12
    assert np.array_equal(v, datagen.is_validation(uids.copy(), 0.1))
    assert np.array_equal(v[::-1], datagen.is_validation(uids[::-1], 0.1))
    sel = datagen.is_selection(uids, 0.1, 0.05)
    assert 0.04 < sel.mean() < 0.06 and not (sel & v).any()  # selection games are never validation games
    assert np.array_equal(sel[::-1], datagen.is_selection(uids[::-1], 0.1, 0.05))


def _pgn_game(moves: list[str], white_elo: int, black_elo: int, result: str) -> str:
    b = chess.variant.CrazyhouseBoard()
    g = chess.pgn.Game.from_board(b)
    g.headers["WhiteElo"], g.headers["BlackElo"], g.headers["Result"] = str(white_elo), str(black_elo), result
    node = g
    for u in moves:
        node = node.add_variation(chess.Move.from_uci(u))
    return str(g) + "\n\n"


def test_import_pgn_with_elo_filter(tmp_path):
    pgn = tmp_path / "zh.pgn"
    pgn.write_text(_pgn_game(["e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5", "P@b5"], 2300, 2250, "1-0")
                   + _pgn_game(["e2e4", "e7e5"], 1500, 2400, "0-1")
                   + _pgn_game(["d2d4", "d7d5"], 2500, 2500, "*"))
    out = str(tmp_path / "imp")
    s = datagen.import_pgn(str(pgn), out, min_elo=2000, progress=False)
    assert s == {"games": 1, "positions": 7, "skipped_elo": 1, "skipped_other": 1, "shards": 1}
    ds = datagen.load_dataset(out)
    assert ds.variant == "crazyhouse" and int(ds.game_result[0]) == 1
    assert (ds.score == datagen.SCORE_UNKNOWN).all()
    assert enc.raw_to_fen(ds.raw[-1]) == "rnb1kbnr/ppp1pppp/8/q7/8/2N5/PPPP1PPP/R1BQKBNR[Pp] w KQkq - 2 4"
    s_all = datagen.import_pgn(str(pgn), str(tmp_path / "all"), progress=False)
    assert s_all["games"] == 2


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert cli.main(["datagen", "--out", str(tmp_path / "x"), "--pgn", str(tmp_path / "missing.pgn")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("searchbench: error:") and "missing.pgn" in err and "\n" not in err
    assert cli.main(["datagen", "--out", str(tmp_path / "x"), "--random-plies", "a-b"]) == 2
    assert cli.main(["datagen", "--out", str(tmp_path / "x"), "--engine", "no-such-engine-xyz"]) == 2
    assert "no-such-engine-xyz" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "shard-00000.npz").write_bytes(b"garbage")
    with pytest.raises(datagen.DataError, match="shard-00000.npz"):
        datagen.load_dataset(str(bad))
    with pytest.raises(datagen.DataError, match="no shards"):
        datagen.load_dataset(str(tmp_path))


def test_uci_process_watchdog(tmp_path):
    """An engine that never answers is a DataError after the timeout, not a hang."""
    script = tmp_path / "mute.sh"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(0o755)
    with pytest.raises(datagen.DataError, match="did not answer"):
        datagen.UciProcess(str(script), "chess", timeout=0.5)


def test_engine_crash_forfeits_the_game_and_restarts(tmp_path):
    """An engine that dies on ``go`` costs one game (an error line), never the run."""
    script = tmp_path / "crash.sh"
    script.write_text("#!/bin/sh\nwhile read line; do\n  case \"$line\" in\n"
                      "    uci) echo uciok;;\n    isready) echo readyok;;\n    quit) exit 0;;\n    go*) exit 3;;\n  esac\ndone\n")
    script.chmod(0o755)
    datagen._worker_init(str(script), "crazyhouse")
    try:
        first = datagen.play_game((1, "crazyhouse", ["e2e4"], 10, 20))
        assert isinstance(first, str) and "exited" in first
        second = datagen.play_game((2, "crazyhouse", ["d2d4"], 10, 20))
        assert isinstance(second, str) and "exited" in second  # a fresh process answered uci again
    finally:
        if datagen._ENGINE is not None:
            datagen._ENGINE.close()
        datagen._ENGINE = None
