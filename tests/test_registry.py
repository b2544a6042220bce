"""The engine registry: names and spec strings, options mapped onto config dataclasses, in-process
engines (ask/tell, limits, forfeits) and the `searchbench engines` command."""
from __future__ import annotations

import os
import enum
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import pytest

import board
from engines import factory, registry
from engines.base import EngineError, EngineSpec, InProcessEngine
from engines.options import build_config, config_options, presets
from engines.ours import OurEngine, hard_stop_after, merge_limits
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, Leaf
from evaluators.classical import ClassicalEvaluator
from search.base import Limits
from search.puct import PUCTParams

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = ["material-ab", "material-mcts", "rise-mcts", "rise-ab", "sixtyfour-mcts", "deepchess-ab",
            "fairy-stockfish", "stockfish", "sjeng"]


def test_builtin_names_resolve() -> None:
    names = [s.name for s in registry.list_engines()]
    for name in REQUIRED:
        assert name in names
        spec = registry.resolve(name)
        assert spec.name == name
        assert spec.evaluator and spec.search
    assert registry.resolve("material-ab").evaluator == "classical"
    assert registry.resolve("material-ab").search == "alphabeta"
    assert registry.resolve("deepchess-ab").search == "comparator"
    assert registry.resolve("sjeng").search == "xboard"
    assert registry.resolve("stockfish").search == "uci"


def test_spec_string_options_are_canonical() -> None:
    spec = registry.resolve("rise+mcts:nodes=800,qvalue=off")
    assert (spec.evaluator, spec.search) == ("rise", "mcts")
    assert spec.options == {"nodes": "800", "q_value_selection": "false"}
    assert str(spec) == "rise+mcts:nodes=800,q_value_selection=false"
    over = registry.resolve("rise-mcts:nodes=400")
    assert over.name == "rise-mcts:nodes=400" and over.options["nodes"] == "400"
    assert registry.resolve("material+ab").search == "alphabeta"
    assert registry.resolve("material-mcts:Q_VALUE-selection=ON").options == {"q_value_selection": "true"}
    assert registry.resolve("material-mcts:time.move_overhead=0.1").options == {"time.move_overhead": "0.1"}
    assert registry.resolve("stockfish:elo=1500").options == {"elo": "1500"}


@pytest.mark.parametrize("text, words", [
    ("no-such-engine", ["unknown engine", "material-ab", "sjeng"]),
    ("material-ab:frobnicate=1", ["unknown option", "quiescence", "nodes"]),
    ("material-ab:depth=deep", ["bad value", "depth"]),
    ("material-mcts:q=1", ["ambiguous"]),
    ("material-ab:nodes", ["expected key=value"]),
    ("tofu+mcts", ["unknown evaluator", "classical"]),
    ("classical+bfs", ["unknown search", "mcts", "alphabeta"]),
    ("material-mcts:use_tt=maybe", ["unknown option"]),
    ("material-ab:use_tt=maybe", ["bad value", "on/off"]),
])
def test_bad_specs_are_one_line_errors(text: str, words: list[str]) -> None:
    with pytest.raises(EngineError) as err:
        registry.resolve(text)
    msg = str(err.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


@dataclass
class Inner:
    margin: float = 0.5


@dataclass
class DemoConfig:
    flag: bool = True
    count: int = 3
    ratio: float = 0.25
    label: str = "x"
    cap: int | None = None
    style: Literal["a", "b"] = "a"
    mode: Mode = Mode.FAST
    inner: Inner = field(default_factory=Inner)
    table: list[int] = field(default_factory=list)

    @classmethod
    def quick(cls) -> DemoConfig:
        return cls(count=1, mode=Mode.SLOW)


def test_config_fields_become_options_by_type() -> None:
    infos = {o.name: o for o in config_options(DemoConfig)}
    assert set(infos) == {"flag", "count", "ratio", "label", "cap", "style", "mode", "inner.margin"}
    assert [infos[n].kind for n in ("flag", "count", "ratio", "label", "style", "mode")] == \
        ["check", "spin", "string", "string", "combo", "combo"]
    assert infos["style"].choices == ("a", "b") and infos["mode"].choices == ("FAST", "SLOW")
    assert infos["flag"].uci_line() == "option name flag type check default true"
    cfg = build_config(DemoConfig, {"flag": "off", "count": "7", "ratio": "0.5", "label": "y", "cap": "none",
                                    "style": "b", "mode": "slow", "inner.margin": "2"})
    assert cfg == DemoConfig(False, 7, 0.5, "y", None, "b", Mode.SLOW, Inner(2.0))
    assert build_config(DemoConfig, {"cap": "12"}).cap == 12  # type: ignore[attr-defined]
    assert set(presets(DemoConfig)) == {"quick"}
    assert build_config(DemoConfig, {"count": "5"}, "quick") == DemoConfig(count=5, mode=Mode.SLOW)
    with pytest.raises(EngineError, match="unknown preset"):
        build_config(DemoConfig, {}, "slowest")
    with pytest.raises(EngineError, match="bad value"):
        infos["style"].check("c")


def test_options_reach_the_search_config() -> None:
    e = factory.create("material-mcts:batch_size=4,qvalue=off,time.move_overhead=0.1,seed=3", "chess")
    assert isinstance(e, OurEngine)
    cfg = e.search.config  # type: ignore[attr-defined]
    assert cfg.batching.batch_size == 4 and cfg.choice.q_value_selection is False and cfg.time.move_overhead == 0.1
    v = factory.create("material-mcts:preset=vanilla", "chess")
    assert v.search.config.settings(PUCTParams).fpu == 0.0 and v.search.config.choice.q_value_selection is False  # type: ignore[attr-defined]
    ab = factory.create("material-ab:quiescence=off,tt_size=1024", "crazyhouse")
    assert ab.search.config.quiescence is False and ab.search.config.tt_size == 1024  # type: ignore[attr-defined]
    with pytest.raises(EngineError, match="tt_size"):
        factory.create("material-ab:tt_size=1000", "chess")  # the config's own validate()
    deep = registry.resolve("bughouse-ab-deep")  # the bughouse team's null-move pruning and reductions
    assert deep.config.null_move and deep.config.lmr and not registry.resolve("bughouse-ab").config.null_move


@pytest.mark.parametrize("name, variant", [("material-ab", "chess"), ("material-ab", "crazyhouse"),
                                           ("material-mcts", "chess"), ("material-mcts", "crazyhouse")])
def test_in_process_engines_play_legal_moves(name: str, variant: str) -> None:
    e = factory.create(name, variant)
    pos = board.new_position(variant)
    for uci in ("e2e4", "d7d5", "e4d5", "d8d5"):
        pos.push_uci(uci)
    r = e.play(pos, Limits(nodes=200))
    assert r.forfeit is None and r.move in pos.legal_moves()
    assert r.info is not None and r.info.best_move == r.move and r.info.nodes > 0
    assert len(pos.move_stack) == 4  # the caller's position is untouched
    e.new_game()
    assert e.play(pos, Limits(depth=2)).move in pos.legal_moves()
    e.close()


def test_ask_tell_pools_leaves_of_two_games() -> None:
    shared = ClassicalEvaluator()
    a = factory.create("material-mcts", "crazyhouse", evaluator=shared)
    b = factory.create("material-mcts:seed=1", "crazyhouse", evaluator=shared)
    assert isinstance(a, InProcessEngine) and isinstance(b, InProcessEngine)
    assert a.evaluator is b.evaluator is shared
    pa = board.new_position("crazyhouse")
    pb = board.new_position("crazyhouse")
    pb.push_uci("e2e4")
    a.start(pa, Limits(nodes=64))
    b.start(pb, Limits(nodes=64))
    pooled_calls = 0
    while not (a.done() and b.done()):
        engines = [e for e in (a, b) if not e.done()]
        asks = [e.ask() for e in engines]
        leaves = [leaf for batch in asks for leaf in batch]
        answers = shared.evaluate(leaves) if leaves else []
        pooled_calls += 1 if leaves else 0
        i = 0
        for e, batch in zip(engines, asks):
            e.tell(answers[i:i + len(batch)])
            i += len(batch)
    ra, rb = a.finish(), b.finish()
    assert ra.forfeit is None and ra.move in pa.legal_moves()
    assert rb.forfeit is None and rb.move in pb.legal_moves()
    assert pooled_calls > 0 and pa.ply() == 0 and pb.ply() == 1


class BrokenEvaluator(Evaluator):
    """Serves policy and value but fails on every batch (a network that blew up)."""

    name = "broken"

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        raise RuntimeError("network exploded")


def test_a_failing_evaluator_is_a_forfeit_not_an_exception() -> None:
    e = factory.create("material-mcts", "chess", evaluator=BrokenEvaluator())
    r = e.play(board.new_position("chess"), Limits(nodes=50))
    assert r.move == 0 and r.forfeit is not None and r.forfeit.startswith("crash: RuntimeError: network exploded")
    # the engine goes on with the next move once the evaluator works again
    e.evaluator = ClassicalEvaluator()
    e.search.evaluator = e.evaluator  # type: ignore[attr-defined]
    assert e.play(board.new_position("chess"), Limits(nodes=50)).forfeit is None


def test_one_rule_of_limit_precedence() -> None:
    from engines.base import layered_limits

    own, spec, shared = {"nodes": 800}, {"nodes": 32, "depth": 3, "movetime": None}, {"depth": 9, "tc": "60+0", "evals": 0}
    assert layered_limits(own, spec, shared) == {"nodes": 800, "evals": None, "playouts": None, "depth": 3,
                                                 "movetime": None, "tc": "60+0"}
    assert layered_limits({}, {}) == dict.fromkeys(("nodes", "evals", "playouts", "depth", "movetime", "tc"))


def test_limits_merge_and_hard_stop() -> None:
    caller = Limits(nodes=400)
    assert merge_limits(caller, 800, 5, None) == Limits(nodes=400, depth=5)
    assert merge_limits(Limits(), 800, None, 1.5) == Limits(nodes=800, movetime=1.5)
    assert merge_limits(Limits(wtime=10.0), 800, None, None).nodes == 800
    assert hard_stop_after(Limits(movetime=2.0), 0) == 2.0
    assert hard_stop_after(Limits(wtime=10.0, btime=4.0), 1) == 2.0
    assert hard_stop_after(Limits(wtime=1.0, movestogo=1), 0) == pytest.approx(0.95)
    assert hard_stop_after(Limits(nodes=5, infinite=True), 0) is None
    assert hard_stop_after(Limits(nodes=5), 0) is None
    e = factory.create("material-ab:nodes=300", "chess")
    r = e.play(board.new_position("chess"), Limits())
    assert r.info is not None and 300 <= r.info.nodes <= 400  # the spec's default node limit applies


def test_creation_errors_are_engine_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EngineError, match="unknown variant"):
        factory.create("material-ab", "bughouse-9000")
    with pytest.raises(EngineError, match="not installed"):
        factory.create("surely-not-an-engine-xyz+uci", "chess")
    with pytest.raises(EngineError, match="takes no weights"):
        factory.create("material-ab:weights=/tmp/x.pt", "chess")
    with pytest.raises(EngineError) as err:
        factory.create("rise-mcts:weights=/nonexistent/rise.pt", "crazyhouse")
    assert "rise" in str(err.value)
    monkeypatch.setitem(registry.SEARCHES, "mcts", registry.SearchEntry("search.no_such_module", "MCTS",
                                                                         "MCTSConfig", True))
    with pytest.raises(EngineError, match="cannot import search.no_such_module"):
        factory.create("material-mcts", "chess")


def test_spec_objects_are_accepted() -> None:
    spec = EngineSpec("mine", "classical", "alphabeta", {"depth": "2"})
    e = factory.create(spec, "chess")
    assert e.name == "mine" and e.play(board.new_position("chess"), Limits()).info.depth == 2  # type: ignore[union-attr]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_engines_command_lists_and_explains() -> None:
    out = _cli("engines")
    assert out.returncode == 0, out.stderr
    for name in REQUIRED:
        assert name in out.stdout
    assert "alphabeta" in out.stdout and "xboard" in out.stdout
    opts = _cli("engines", "material-mcts:qvalue=off")
    assert opts.returncode == 0 and "q_value_selection" in opts.stdout and "time.move_overhead" in opts.stdout
    bad = _cli("engines", "nope")
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "unknown engine 'nope'" in bad.stderr


@pytest.mark.parametrize("name", [n for n in REQUIRED if n not in ("fairy-stockfish", "stockfish", "sjeng")])
def test_every_in_process_builtin_plays(name: str) -> None:
    spec = registry.resolve(name)
    variant = registry.default_variant(spec)
    try:
        e = factory.create(spec, variant)
    except EngineError as err:
        if "weights file not found" in str(err):
            pytest.skip(f"no shipped weights: {err}")
        raise
    pos = board.new_position(variant)
    pos.push_uci("e2e4")
    r = e.play(pos, Limits(nodes=40))
    assert r.forfeit is None and r.move in pos.legal_moves()
    assert r.info is not None and r.info.nodes >= 1
    e.close()


def test_spec_strings_round_trip() -> None:
    for text in ["rise+mcts:nodes=800,qvalue=off", "material-ab:depth=3,quiescence=off", "stockfish:elo=1500",
                 "material-mcts:preset=vanilla,time.move_overhead=0.1", "sjeng:depth=4,timeout=5"]:
        spec = registry.resolve(text)
        again = registry.resolve(spec.name)
        assert (again.evaluator, again.search, again.options) == (spec.evaluator, spec.search, spec.options)
        canon = registry.resolve(str(spec))
        assert (canon.evaluator, canon.search, canon.options) == (spec.evaluator, spec.search, spec.options)


def test_a_spec_is_parsed_once_into_one_record() -> None:
    spec = registry.resolve("material-mcts:nodes=32,q_value_selection=off,cpuct_init=3")
    assert spec.settings["nodes"] == 32 and spec.config is not None
    assert spec.config.choice.q_value_selection is False and spec.config.settings(PUCTParams).cpuct_init == 3.0
    e = factory.create(spec, "chess")
    assert e.search.config is spec.config  # type: ignore[attr-defined]  # created from the record, not re-parsed
    assert registry.spec_limits("material-mcts:nodes=32") == {"nodes": 32, "evals": None, "playouts": None, "depth": None, "movetime": None}
    assert registry.evaluator_settings(registry.resolve("rise-mcts:threads=2")) == (None, 2, "auto", "auto")
    with pytest.raises(EngineError, match="tt_size"):
        registry.resolve("material-ab:tt_size=1000")  # the config is validated when the spec is resolved


@pytest.mark.parametrize("name", ["rise-mcts", "sixtyfour-mcts", "deepchess-ab", "rise-ab"])
def test_one_engine_name_plays_both_variants_with_their_weights(name: str) -> None:
    for variant in ("crazyhouse", "chess"):
        e = factory.create(f"{name}:nodes=8,depth=1", variant)
        try:
            assert e.evaluator.variants == frozenset({variant})  # type: ignore[attr-defined]
            from evaluators.families import shipped_name

            family = {"rise-mcts": "rise", "rise-ab": "rise", "sixtyfour-mcts": "sixtyfour", "deepchess-ab": "deepchess"}[name]
            assert os.path.basename(getattr(e.evaluator, "path", "")) == shipped_name(family, variant)  # type: ignore[attr-defined]
            pos = board.new_position(variant)
            r = e.play(pos, Limits(nodes=8, depth=1))
            assert r.forfeit is None and r.move in pos.legal_moves()
        finally:
            e.close()


def test_a_variant_without_weights_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from evaluators import neural

    shutil.copy(Path(neural.WEIGHTS_DIR) / "rise_crazyhouse.pt", tmp_path / "rise_crazyhouse.pt")
    monkeypatch.setattr(neural, "WEIGHTS_DIR", str(tmp_path))
    factory.create("rise-mcts", "crazyhouse").close()
    with pytest.raises(EngineError, match="no shipped weights for chess") as err:
        factory.create("rise-mcts", "chess")
    assert "\n" not in str(err.value)


def test_weights_with_a_variant_field_name_one_file_a_variant(tmp_path: Path) -> None:
    """``weights=DIR/rise_{variant}_x.pt``: the variants whose file exists are the engine's; each game
    loads (and records) its variant's file; a variant without one is one line."""
    import shutil

    from evaluators import neural

    shutil.copy(Path(neural.WEIGHTS_DIR) / "rise_crazyhouse.pt", tmp_path / "rise_crazyhouse_x.pt")
    text = f"rise-ubfm:weights={tmp_path}/rise_{{variant}}_x.pt"
    spec = registry.resolve(text)
    assert registry.variants_of(spec) == ("crazyhouse",)
    assert registry.network_files(spec, "crazyhouse") == [str(tmp_path / "rise_crazyhouse_x.pt")]
    e = factory.create(f"{text},evals=8", "crazyhouse")
    try:
        assert e.evaluator.path == str(tmp_path / "rise_crazyhouse_x.pt")  # type: ignore[attr-defined]
        pos = board.new_position("crazyhouse")
        assert e.play(pos, Limits(evals=8)).move in pos.legal_moves()
    finally:
        e.close()
    with pytest.raises(EngineError, match="no weights .*rise_chess_x.pt.* for chess") as err:
        factory.create(text, "chess")
    assert "\n" not in str(err.value)
    shutil.copy(Path(neural.WEIGHTS_DIR) / "rise_chess.pt", tmp_path / "rise_chess_x.pt")
    assert registry.variants_of(registry.resolve(text)) == ("chess", "crazyhouse")


def _count_resolves(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every :func:`engines.registry.resolve` call from here on, by its argument."""
    calls: list[str] = []
    real = registry.resolve

    def counting(text: str) -> EngineSpec:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(registry, "resolve", counting)
    return calls


def test_a_match_resolves_each_player_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line resolves each engine once; the spec travels with the player to the games."""
    from experiments.cli import main as cli

    calls = _count_resolves(monkeypatch)
    assert cli.main(["match", "material-ab", "material-mcts", "--nodes", "8", "--games", "2", "--workers", "1",
                     "--db", str(tmp_path / "m.sqlite"), "--quiet"]) == 0
    assert sorted(calls) == ["material-ab", "material-mcts"]


def test_a_bughouse_match_resolves_each_seat_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A team is resolved when it is parsed (a team of one spec: once for both its seats); its seats are
    made from those values, not from their text."""
    from experiments.cli import main as cli

    calls = _count_resolves(monkeypatch)
    assert cli.main(["bughouse-match", "bughouse-mcts:nodes=10", "bughouse-mcts:nodes=10,seed=2/bughouse-mcts:nodes=12",
                     "--games", "1", "--tc", "5+0", "--max-plies", "12", "--db", str(tmp_path / "b.sqlite"),
                     "--quiet"]) == 0
    seats = [c for c in calls if ":" in c]  # the team parser also looks up the head after a "/" (no options)
    assert sorted(seats) == ["bughouse-mcts:nodes=10", "bughouse-mcts:nodes=10,seed=2", "bughouse-mcts:nodes=12"]


@pytest.mark.parametrize("text,options", [
    ("rise-mcts", {"weights": "w.pt"}),
    ("rise-mcts:temperature=0.5", {"dirichlet_epsilon": "0.25", "temperature_moves": "15"}),
    ("rise-mcts:cpuct_i=3,batch_size=2", {"check_enhancement": "false", "weights": "x.pt"}),
    ("rise-gumbel", {"gumbel_scale": "1.0", "prior_noise": "0"}),
    ("rise+mcts:nodes=16", {"temperature": "1.0"}),
    ("material-mcts:batch_size=4", {"single_leaf_nodes": "100", "batch_size": "2"}),
])
def test_extending_a_spec_as_a_value_is_resolving_the_joined_text(text: str, options: dict[str, str]) -> None:
    """registry.extend (the self-play loop's weights, exploration and reference searches) gives the
    engine that resolving the joined text gives, named by that text, without resolving it again."""
    base = registry.as_given(text)
    assert base.name == text
    got = registry.extend(base, options)
    want = registry.resolve(registry.join_spec(text, options))
    assert got.name == registry.join_spec(text, options)
    assert (got.evaluator, got.search, got.options, got.settings, got.config) == \
        (want.evaluator, want.search, want.options, want.settings, want.config)


def test_our_engines_play_what_their_evaluator_plays() -> None:
    """builtin.toml lists variants for external programs only; ours are asked of the evaluator: the
    variants of a network's weights (the shipped files <family>_<variant>.pt), a class's own."""
    import tomllib

    from engines.catalog import BUILTIN_FILE

    entries = tomllib.loads(BUILTIN_FILE.read_text())["engines"]
    assert all(("variants" in e) == (e["search"] in ("uci", "xboard")) for e in entries.values())
    want = {"material-ab": ("chess", "crazyhouse"), "rise-mcts": ("chess", "crazyhouse"), "rise-mcts-chess": ("chess",),
            "deepchess-ab-chess": ("chess",), "bughouse-ab-kd": ("bughouse",), "mixed-bughouse-mcts": ("bughouse",),
            "rise-bughouse-mcts": ("bughouse",), "sjeng": ("chess", "crazyhouse", "bughouse")}
    assert {n: registry.variants_of(registry.resolve(n)) for n in want} == want
    assert registry.variants_of(registry.resolve("rise-mcts:weights=rise_chess.pt")) == ("chess",)
    assert registry.evaluator_variants("material") == ("chess", "crazyhouse")
