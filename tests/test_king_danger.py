"""King danger (evaluators.classical.king_features / king_danger) and its fit
(experiments.training.king_danger): the facts against python-chess, the score's symmetry, the fit
recovering weights it was given."""
from __future__ import annotations

import random

import chess
import chess.variant
import numpy as np
import pytest

import board
from board.position import RAW_POCKETS
from board.variants import CRAZYHOUSE
from evaluators.bughouse_classical import BoardScoreEvaluator, KingDangerBoardScoreEvaluator, lone_board
from evaluators.classical import KD_WEIGHT, king_danger, king_danger_score, king_features, white_score_bb
from experiments.training import datagen, king_danger as fit_mod

PIECES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN)


def _positions(n: int, seed: int) -> list[board.Position]:
    """Crazyhouse positions from random playouts (pockets fill as pieces are taken)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        pos = board.new_position(CRAZYHOUSE.name, CRAZYHOUSE.start_fen)
        for _ in range(rng.randrange(4, 80)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos.push(rng.choice(moves))
        if pos.legal_moves():
            out.append(pos)
    return out


def _args(pos: board.Position) -> tuple[int, ...]:
    s = pos.raw_state()
    return (s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[RAW_POCKETS])


def _facts_by_python_chess(fen: str, color: bool) -> tuple[int, int, int, int, int]:
    b = chess.variant.CrazyhouseBoard(fen)
    ksq = b.king(color)
    assert ksq is not None
    enemy = not color
    zone = chess.SquareSet(chess.BB_KING_ATTACKS[ksq])
    guards = [sq for sq in chess.SquareSet(b.occupied_co[color]) if b.piece_type_at(sq) != chess.KING]
    guarded = chess.SquareSet()
    for sq in guards:
        guarded |= b.attacks(sq)
    attacked = sum(1 for sq in zone if b.is_attacked_by(enemy, sq))
    holes = sum(1 for sq in zone if b.piece_at(sq) is None and sq not in guarded)
    checks = sum(1 for sq in chess.SquareSet(chess.BB_KNIGHT_ATTACKS[ksq]) if b.piece_at(sq) is None and sq not in guarded)
    pocket = b.pockets[enemy]
    return attacked, holes, checks, sum(pocket.count(pt) for pt in PIECES), pocket.count(chess.KNIGHT)


def test_king_features_agree_with_python_chess():
    for pos in _positions(120, seed=3):
        fen = pos.fen()
        for color in (0, 1):
            assert king_features(color, *_args(pos)) == _facts_by_python_chess(fen, color == 0), (fen, color)


def test_king_danger_is_colour_symmetric():
    """The mirrored position (colours swapped, pockets too) scores the same for its side to move."""
    for pos in _positions(60, seed=5):
        fen = pos.fen()
        mirrored = chess.variant.CrazyhouseBoard(fen).mirror()
        other = board.new_position(CRAZYHOUSE.name, mirrored.fen())
        assert king_danger(0, *_args(pos)) == king_danger(1, *_args(other))
        assert king_danger_score(pos, KD_WEIGHT) == king_danger_score(other, KD_WEIGHT)


def test_exposed_king_scores_worse_for_its_side():
    """A knight in the opponent's hand and a bare king: the danger of the exposed side is higher, and
    the king danger evaluator scores the position lower for it than the plain board evaluator."""
    # white king e1 with no queen, its e- and f-pawns gone, the black queen on the e-file
    fen = "r1b2rk1/ppp2ppp/2n2n2/4q3/8/8/PPP3PP/RNB1K1NR[Nn] w - - 0 12"
    pos = lone_board(fen, 0)
    assert king_danger(0, *_args(pos)) > king_danger(1, *_args(pos))
    assert KingDangerBoardScoreEvaluator().score(pos) < BoardScoreEvaluator().score(pos)


def _shard_from_formula(tmp_path, weight: float, scale: float) -> str:
    """Positions whose "engine score" is exactly a king danger model with the shipped unit weights."""
    rng = random.Random(7)
    games = []
    positions = _positions(900, seed=11)
    for i in range(0, len(positions), 9):
        g = datagen.GameRecord(uid=rng.getrandbits(62), variant=CRAZYHOUSE.name, start_fen=CRAZYHOUSE.start_fen,
                               opening=[])
        for pos in positions[i:i + 9]:
            a = _args(pos)
            s = white_score_bb(True, *a)
            units = (king_danger(1, *a) - king_danger(0, *a)) / 100.0
            white = scale * s + weight * units
            g.raw.append(pos.raw_state())
            g.moves.append(pos.legal_moves()[0])
            g.scores.append(int(round(white if pos.turn == 0 else -white)))
        games.append(g)
    d = tmp_path / "kd"
    d.mkdir()
    datagen.write_shard(str(d), games)
    return str(d)


def test_fit_recovers_known_weights(tmp_path):
    data = _shard_from_formula(tmp_path, weight=120.0, scale=0.5)
    f = fit_mod.fit([data], every=1, val_fraction=0.2)
    c = f.constants()
    assert f.val_mse_fit < f.val_mse_scaled
    assert f.val_mse_fit < 1e-4
    assert c["KD_WEIGHT"] == pytest.approx(240, rel=0.1)
    assert f.params["scale"] == pytest.approx(0.5, rel=0.05)
    assert abs(f.params["tempo"]) < 5


def test_fit_refuses_chess_data(tmp_path):
    pos = board.new_position("chess", chess.STARTING_FEN)
    g = datagen.GameRecord(uid=1, variant="chess", start_fen=chess.STARTING_FEN, opening=[],
                           raw=[pos.raw_state()], moves=[pos.legal_moves()[0]], scores=[10])
    d = tmp_path / "c"
    d.mkdir()
    datagen.write_shard(str(d), [g])
    with pytest.raises(datagen.DataError, match="pockets"):
        fit_mod.fit([str(d)])


def test_cli_fit_king_danger_bad_data_is_one_line(tmp_path, capsys):
    from experiments.cli.main import main

    assert main(["fit-king-danger", "--data", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("searchbench: error:")


def test_np_features_match_scalar():
    pos = _positions(3, seed=1)
    raw = np.array([p.raw_state() for p in pos], dtype=np.int64)
    s, stm, fw, fb = fit_mod.features(raw)
    for i, p in enumerate(pos):
        assert s[i] == white_score_bb(True, *_args(p))
        assert stm[i] == (1.0 if p.turn == 0 else -1.0)
        assert tuple(fb[i]) == king_features(1, *_args(p))


def test_king_danger_engines_carry_their_weight():
    from board.variants import BUGHOUSE
    from engines import registry

    for name, weight in (("bughouse-ab-kd", KD_WEIGHT // 2), ("bughouse-ab-kd-fit", KD_WEIGHT),
                         ("bughouse-ab-kd-quarter", KD_WEIGHT // 4), ("bughouse-ab-deep", 0)):
        spec = registry.resolve(name)
        ev = registry.evaluator_for(spec, BUGHOUSE.name)
        assert isinstance(ev, BoardScoreEvaluator) and ev.king_danger == weight and ev.name == spec.evaluator
        assert spec.config.null_move and spec.config.lmr


def test_king_danger_weight_is_an_evaluator_option_of_the_spec():
    """One evaluator class at any weight: the registry's three entries differ in their default, and
    an engine spec sets it (``king_danger``); engines with different weights get different evaluators
    from one pool, and a bad value or an option the evaluator lacks is one clear error."""
    from engines import registry
    from engines.base import EngineError

    pos = lone_board("r1b2rk1/ppp2ppp/2n2n2/4q3/8/8/PPP3PP/RNB1K1NR[Nn] w - - 0 12", 0)
    weights = {}
    for text in ("bughouse-ab-kd", "bughouse-ab-kd-fit", "bughouse-ab-kd-quarter", "bughouse-ab-kd:king_danger=35",
                 "bughouse-board-kd-quarter+alphabeta:king_danger=0"):
        spec = registry.resolve(text)
        ev = registry.evaluator_for(spec, "bughouse")
        assert isinstance(ev, KingDangerBoardScoreEvaluator) and ev.name == spec.evaluator
        weights[text] = ev.king_danger
        assert registry.evaluator_params(spec) == {"king_danger": ev.king_danger}
        assert ev.score(pos) == BoardScoreEvaluator().score(pos) + king_danger_score(pos, ev.king_danger)
    assert list(weights.values()) == [KD_WEIGHT // 2, KD_WEIGHT, KD_WEIGHT // 4, 35, 0]
    assert "king_danger" in {o.name for o in registry.option_infos(registry.resolve("bughouse-ab-kd"))}
    assert registry.effective_values(registry.resolve("bughouse-ab-kd:king_danger=35"))["king_danger"] == "35"
    pool = registry.EvaluatorPool()
    a, b, c = (pool.get(registry.resolve(t), "bughouse") for t in ("bughouse-ab-kd", "bughouse-ab-kd:king_danger=35",
                                                                   "bughouse-ab-kd:king_danger=35,lmr=false"))
    assert a is not b and b is c  # the weight is part of what an evaluator is loaded with; a search option is not
    with pytest.raises(EngineError, match="must be in"):
        registry.resolve("bughouse-ab-kd:king_danger=-1")
    with pytest.raises(EngineError, match="king_danger"):
        registry.resolve("bughouse-ab-deep:king_danger=35")  # the board evaluator without king danger has no such option
    with pytest.raises(EngineError, match="takes no option"):
        registry.load_evaluator("bughouse-board", params={"king_danger": 35})
