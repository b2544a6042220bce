"""Networks (shapes, sizes, save/load) and the evaluators behind the interface (batched, errors)."""
import os

import numpy as np
import pytest
import torch

import board
from board import new_position
from evaluators import nets
from evaluators.base import COMPARE, POLICY_VALUE, SCORE, EvaluatorError, Leaf, require
from evaluators.deepchess import DeepChessEvaluator
from evaluators.rise import RiseEvaluator
from evaluators.sixtyfour import SixtyFourEvaluator

TINY = {
    "rise": dict(channels=16, blocks=2, expansion_base=16, expansion_step=8, se_blocks=1, value_hidden=16),
    "sixtyfour": dict(channels=16, blocks=1, value_hidden=8),
    "deepchess": dict(pos2vec=[32, 16], comparator=[16]),
}
WEIGHTS = os.path.join(os.path.dirname(__file__), "..", "evaluators", "weights")


def tiny(family: str, variant: str = "crazyhouse", seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    net = nets.build(family, {**TINY[family], "variant": variant})
    net.eval()
    return net


def saved(tmp_path, family: str, variant: str = "crazyhouse", half: bool = False) -> str:
    path = str(tmp_path / f"{family}_{variant}.pt")
    nets.save_model(path, family, tiny(family, variant), {"note": "test"}, half=half)
    return path


def positions(variant: str = "crazyhouse"):
    fens = {"crazyhouse": ["r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22",
                           "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1"],
            "chess": ["rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"]}[variant]
    return [new_position(variant)] + [new_position(variant, f) for f in fens]


# --------------------------------------------------------------------------- networks

def test_rise_paper_configuration_shapes():
    net = nets.RiseNet(nets.RiseConfig())  # 13 x 256, expansions 128..896, SE on the last 5
    blocks = list(net.body)
    assert len(blocks) == 13
    assert [b.body[0].out_channels for b in blocks] == [128 + 64 * i for i in range(13)]
    assert [any(isinstance(m, nets.SqueezeExcitation) for m in b.body) for b in blocks] == [False] * 8 + [True] * 5
    net.eval()
    with torch.inference_mode():
        v, p = net(torch.zeros(2, 34, 8, 8))
    assert v.shape == (2,) and p.shape == (2, 5184) and (v.abs() <= 1).all()


def test_alphazero_resnet_option_and_chess_input():
    net = nets.RiseNet(nets.RiseConfig(channels=16, blocks=2, arch="resnet", variant="chess", value_hidden=8))
    assert all(isinstance(b, nets.BasicResidual) for b in net.body)
    v, p = net(torch.zeros(3, 22, 8, 8))
    assert v.shape == (3,) and p.shape == (3, 5184)
    with pytest.raises(ValueError):
        nets.RiseNet(nets.RiseConfig(arch="transformer"))


def test_sixtyfour_net_outputs_log_probabilities():
    net = tiny("sixtyfour")
    v, logp = net(torch.rand(4, 15, 8, 8))
    assert logp.shape == (4, 2308) and torch.allclose(logp.exp().sum(dim=1), torch.ones(4), atol=1e-5)
    assert v.shape == (4,)


def test_deepchess_towers_are_tied():
    net = tiny("deepchess", "chess")
    a, b = torch.rand(5, 773).round(), torch.rand(5, 773).round()
    out = net(a, b)
    assert out.shape == (5, 2)
    assert torch.allclose(net.features(a), net.pos2vec(a))
    assert len(list(net.pos2vec.parameters())) == 4  # one tower: 2 layers x (weight, bias)
    enc_layer, dec = net.pos2vec.autoencoder_layer(1)
    assert enc_layer.in_features == 32 and dec.out_features == 32


def test_deepchess_antisymmetric_comparator():
    torch.manual_seed(0)
    net = nets.build("deepchess", {**TINY["deepchess"], "variant": "crazyhouse", "antisymmetric": True,
                                   "input_dropout": 0.2})
    net.eval()
    a, b = torch.rand(16, 897).round(), torch.rand(16, 897).round()
    pab = torch.softmax(net(a, b), dim=1)[:, 0]
    pba = torch.softmax(net(b, a), dim=1)[:, 0]
    assert torch.allclose(pab + pba, torch.ones(16), atol=1e-6)
    assert torch.allclose(torch.softmax(net(a, a), dim=1)[:, 0], torch.full((16,), 0.5), atol=1e-6)
    # input dropout changes nothing at inference, something in training
    plain = nets.build("deepchess", {**TINY["deepchess"], "variant": "crazyhouse", "antisymmetric": True})
    plain.load_state_dict(net.state_dict())
    plain.eval()
    assert torch.equal(net(a, b), plain(a, b))
    net.train()
    assert not torch.allclose(net(a, b), plain(a, b))


def test_deepchess_dropout_acts_only_in_training(tmp_path):
    torch.manual_seed(0)
    net = nets.build("deepchess", {**TINY["deepchess"], "variant": "chess", "dropout": 0.5})
    plain = nets.build("deepchess", {**TINY["deepchess"], "variant": "chess"})
    plain.load_state_dict(net.state_dict())  # dropout adds no parameters: the same state dict fits
    a, b = torch.rand(64, 773).round(), torch.rand(64, 773).round()
    net.eval()
    plain.eval()
    assert torch.equal(net(a, b), plain(a, b))
    net.train()
    torch.manual_seed(1)
    assert not torch.allclose(net(a, b), plain(a, b))
    # the saved configuration keeps the dropout rate and loads back into an eval-mode net
    path = str(tmp_path / "dc.pt")
    nets.save_model(path, "deepchess", net)
    loaded, d = nets.load_model(path, "deepchess")
    assert d["config"]["dropout"] == 0.5 and not loaded.training
    assert torch.equal(loaded(a, b), plain(a, b))


@pytest.mark.parametrize("family", ["rise", "sixtyfour", "deepchess"])
@pytest.mark.parametrize("half", [False, True])
def test_save_load_round_trip(tmp_path, family, half):
    path = saved(tmp_path, family, half=half)
    net, d = nets.load_model(path, family)
    ref = tiny(family)
    assert d["meta"] == {"note": "test"} and d["variant"] == "crazyhouse"
    for k, v in ref.state_dict().items():
        got = net.state_dict()[k]
        assert got.dtype == v.dtype
        assert torch.allclose(got, v, atol=1e-2 if half else 0)


# --------------------------------------------------------------------------- evaluators

EVALUATORS = {"rise": RiseEvaluator, "sixtyfour": SixtyFourEvaluator}


@pytest.mark.parametrize("family", ["rise", "sixtyfour"])
@pytest.mark.parametrize("variant", ["crazyhouse", "chess"])
def test_policy_value_evaluators(tmp_path, family, variant):
    ev = EVALUATORS[family].load(saved(tmp_path, family, variant), threads=1)
    require(ev, POLICY_VALUE, variant)
    require(ev, SCORE, variant)
    assert ev.serves() == {POLICY_VALUE, SCORE} and ev.variants == {variant}
    ps = positions(variant)
    leaves = [Leaf.of(p) for p in ps]
    batch = ev.evaluate(leaves)
    assert len(batch) == len(ps)
    for lf, e in zip(leaves, batch):
        assert len(e.priors) == len(lf.moves)
        assert abs(sum(e.priors) - 1) < 1e-6 and min(e.priors) >= 0
        assert -1 <= e.value <= 1
        single = ev.evaluate([lf])[0]  # batched and single answers agree
        assert abs(single.value - e.value) < 1e-5
        assert np.allclose(single.priors, e.priors, atol=1e-5)
    assert ev.evaluate([]) == []
    assert isinstance(ev.score(ps[0]), int)
    other = "chess" if variant == "crazyhouse" else "crazyhouse"
    with pytest.raises(EvaluatorError):
        ev.evaluate([Leaf.of(new_position(other))])


def test_priors_follow_the_policy_logits(tmp_path):
    """The prior of a move is the softmax of its policy-map logit among the legal moves."""
    ev = RiseEvaluator.load(saved(tmp_path, "rise"))
    pos = new_position("crazyhouse", "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] b - - 4 22")
    from evaluators import encodings as enc
    raw = enc.raw_array([pos.raw_state()])
    with torch.inference_mode():
        _, logits = ev.net(torch.from_numpy(enc.crazyara_planes(raw)))
    moves = pos.legal_moves()
    x = np.array([float(logits[0, enc.crazyara_label_to_policy_index(board.move_to_uci(m), True)]) for m in moves])
    e = np.exp(x - x.max())
    assert np.allclose(ev.evaluate([Leaf.of(pos)])[0].priors, e / e.sum(), atol=1e-5)


def test_deepchess_evaluator(tmp_path):
    ev = DeepChessEvaluator.load(saved(tmp_path, "deepchess"))
    require(ev, COMPARE, "crazyhouse")
    require(ev, SCORE, "crazyhouse")
    with pytest.raises(EvaluatorError):
        require(ev, POLICY_VALUE)
    ps = positions()
    pairs = [(a.raw_state(), b.raw_state()) for a in ps for b in ps]
    out = ev.compare(pairs, "crazyhouse")
    assert len(out) == len(pairs) and all(0 <= p <= 1 for p in out)
    single = ev.compare(pairs[1:2], "crazyhouse")
    assert abs(single[0] - out[1]) < 1e-6
    # the value-style wrapper: same position, other side to move -> opposite sign of the same number
    w = new_position("crazyhouse", "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] w - - 4 22")
    b = new_position("crazyhouse", "r2q3k/ppp2p1p/2n1pN2/3pP3/3P4/4BB2/PPP2PPP/R2Q1RK1[Rbbnnp] b - - 4 22")
    pw = ev.white_probability([w.raw_state()])[0]
    assert 0 < pw < 1 and isinstance(ev.score(w), int) and isinstance(ev.score(b), int)
    with pytest.raises(EvaluatorError):
        ev.compare(pairs[:1], "chess")


@pytest.mark.parametrize("cls", [RiseEvaluator, SixtyFourEvaluator, DeepChessEvaluator])
def test_missing_and_corrupt_weights_are_one_line_errors(tmp_path, cls):
    missing = str(tmp_path / "nope.pt")
    with pytest.raises(EvaluatorError, match="nope.pt") as e:
        cls.load(missing)
    assert "\n" not in str(e.value)
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(EvaluatorError, match="corrupt.pt") as e:
        cls.load(str(bad))
    assert "\n" not in str(e.value)
    wrong = saved(tmp_path, "deepchess" if cls is not DeepChessEvaluator else "rise")
    with pytest.raises(EvaluatorError, match="is not a"):
        cls.load(wrong)
    with pytest.raises(EvaluatorError):
        cls.load(saved(tmp_path, "rise" if cls is RiseEvaluator else
                       "sixtyfour" if cls is SixtyFourEvaluator else "deepchess"), threads=0)


def test_every_network_in_the_weights_folder_is_small_and_has_its_model_card():
    names = sorted(n for n in os.listdir(WEIGHTS) if n.endswith(".pt"))
    assert names
    for n in names:
        assert os.path.getsize(os.path.join(WEIGHTS, n)) < 8_000_000, n
        assert os.path.exists(os.path.join(WEIGHTS, n[:-3] + ".md")), n


@pytest.mark.parametrize("cls,name", [(cls, f"{family}_{variant}.pt") for variant in ("crazyhouse", "chess")
                                      for cls, family in ((RiseEvaluator, "rise"), (SixtyFourEvaluator, "sixtyfour"),
                                                          (DeepChessEvaluator, "deepchess"))])
def test_shipped_weights_load_and_have_a_model_card(cls, name):
    path = os.path.join(WEIGHTS, name)
    if not os.path.exists(path):
        pytest.skip(f"{name} not shipped")
    assert os.path.getsize(path) < 8_000_000
    assert os.path.exists(path[:-3] + ".md")
    variant = name[:-3].split("_")[1]
    ev = cls.load(path) if variant == "chess" else cls.load()
    assert ev.variants == {variant}
    pos = new_position(variant)
    assert abs(ev.score(pos)) < 9999


def test_bench_encode_runs(capsys):
    """``searchbench bench encode`` measures; here only that it runs and reports sane shares."""
    from experiments.cli import main as cli

    assert cli.main(["bench", "encode", "--batches", "1,4", "--seconds", "0.01", "--json"]) == 0
    import json

    r = json.loads(capsys.readouterr().out)
    assert [row["batch"] for row in r["rows"]] == [1, 4]
    assert all(0 < row["encode_share"] < 1 and row["net_us"] > 0 for row in r["rows"])
    assert cli.main(["bench", "encode", "--batches", "0"]) == 2


def test_bare_weights_name_is_a_shipped_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # any working directory
    ev = RiseEvaluator.load("rise_crazyhouse.pt")
    assert ev.path.endswith(os.path.join("evaluators", "weights", "rise_crazyhouse.pt"))
    with pytest.raises(EvaluatorError, match="no_such_net.pt"):
        RiseEvaluator.load("no_such_net.pt")


def test_deepchess_feature_cache_overflow_keeps_the_states_it_needs():
    # A compare whose positions are partly cached and overflow the cache cleared it, dropping the
    # cached ones it still needed (a KeyError that forfeited comparator games in a scale run).
    path = os.path.join(WEIGHTS, "deepchess_crazyhouse.pt")
    if not os.path.exists(path):
        pytest.skip("deepchess_crazyhouse.pt not shipped")
    pos = new_position("crazyhouse")
    states = []
    for m in pos.legal_moves()[:6]:
        pos.push(m)
        states.append(pos.raw_state())
        pos.pop()
    small, big = DeepChessEvaluator.load(path), DeepChessEvaluator.load(path)
    small.cache_size = 3
    calls = [[(states[0], states[1])], [(states[0], states[2]), (states[3], states[1])],
             [(states[4], states[5]), (states[0], states[3])]]
    for pairs in calls:
        assert small.compare(pairs, "crazyhouse") == pytest.approx(big.compare(pairs, "crazyhouse"), abs=1e-6)
