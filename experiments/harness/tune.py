"""Engine parameters tuned by games, then verified by games: ``searchbench tune CONFIG``.

Two optimisers over the same games, store and openings as every other command:

- **SPSA as fishtest runs it** (Spall; fishtest's ``spsa_handler``).  Notation: θ the parameter
  vector, N the planned iterations (one iteration is one colour-reversed game pair), k the iteration,
  δ a random ±1 vector, γ = 0.101, α = 0.602, A = 0.1 N.  From each parameter's ``c_end`` (its
  final perturbation) and ``r_end`` (its final learning rate): c = c_end N^γ, a_end = r_end c_end²,
  a = a_end (A + N)^α.  At iteration k: c_k = c / k^γ, a_k = a / (A + k)^α, R_k = a_k / c_k²; θ+ =
  θ + c_k δ plays θ− = θ − c_k δ (``pairs`` game pairs on distinct openings), and with r the wins
  minus losses of θ+, θ ← θ + R_k c_k r δ (clamped to the range).  Several steps are in flight at
  once (``batch``), each issued from the θ of its batch, as fishtest's workers play with a θ a few
  updates old; the updates are applied in step order.
- **A model-based optimiser**: Optuna's TPE sampler (multivariate, a constant liar for the trials in
  flight) proposes θ, each trial plays the engine's defaults (``games`` games), its score the
  objective; the study lives in Optuna's SQLite storage beside the run (the suite's embedded
  default), so a killed run resumes.  Its answer is not the luckiest trial (the maximum of noisy
  scores is biased upward) but the best trial by a smoothed score: each trial's score averaged with
  its nearest neighbours in the normalised parameter space (a k-nearest-neighbour regression).

**Verification, never the optimiser's own estimate**: the tuned θ against the engine's defaults at
the tuning budget and at every other ``[verify] budgets`` value, ``[verify] games`` games each on
distinct openings, written as an ablation report (pentanomial intervals) in ``REPORT_DIR/NAME/``
with θ against games (``theta.png``, ``theta.csv``) and the tuning's history in its notes.

Every game goes to the results database (run ``NAME-tuning``; the verification's run is ``NAME``)
and replays from its seed; every step's θ is in ``runs/tune/NAME/steps.csv``; the run resumes after
a kill (SPSA: ``state.json`` is written after each batch, and a batch replayed from it finds its
finished games stored; Optuna: its study, trials in flight played again from the store).
"""
from __future__ import annotations

import functools
import json
import math
import random
import re
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from engines import registry
from engines.base import EngineError
from engines.registry import join_spec
from experiments.harness import ablate, openings as openings_mod, tomlconfig
from experiments.harness.match import play
from experiments.harness.store import Store
from experiments.harness.tasks import MAX_BUDGET, MAX_SECONDS, GameTask, Player
from experiments.harness.tomlconfig import ConfigError, Section, even_games, writable_dir
from experiments.harness.tournament import RunSettings, run_settings
from experiments.paths import InputError, csv_text, read_json, save_figure, write_atomic

GAMMA, ALPHA = 0.101, 0.602  # fishtest's exponents of c_k and a_k
ALGORITHMS = ("spsa", "optuna")
AXES = ("nodes", "evals", "movetime")


@dataclass
class Param:
    """One tuned option: its range, start, whether whole, and SPSA's final perturbation and rate."""

    name: str
    lo: float
    hi: float
    start: float
    integer: bool = False
    c_end: float = 0.0  # SPSA: the perturbation at the last iteration (default: a tenth of the range)
    r_end: float = 0.002  # SPSA: a_end / c_end², the last iteration's learning rate (fishtest's default)

    def clamp(self, v: float) -> float:
        return min(self.hi, max(self.lo, v))

    def text(self, v: float) -> str:
        """The option's value as the engine spec carries it."""
        return str(int(round(v))) if self.integer else f"{v:.6g}"


@dataclass
class Tune:
    settings: RunSettings  # name, variant, seed, database, openings, workers, adjudication
    engine: str  # the engine tuned; its defaults are the opponent (and the verification's baseline)
    params: list[Param]
    algorithm: str
    axis: str  # the budget's unit
    budget: float
    iterations: int  # SPSA: game pairs in all; Optuna: trials
    pairs: int  # game pairs a step (SPSA) or a trial (Optuna)
    batch: int  # steps or trials in flight
    verify_games: int
    verify_budgets: list[float]
    report_dir: Path
    out: Path  # runs/tune/NAME: state, steps, Optuna's study
    config_path: Path
    config_text: str
    history: list[dict[str, Any]] = field(default_factory=list)

    def spec(self, theta: dict[str, float]) -> str:
        return join_spec(self.engine, {p.name: p.text(theta[p.name]) for p in self.params})

    def player(self, name: str, engine: str, budget: float | None = None) -> Player:
        b = self.budget if budget is None else budget
        return Player(name, engine, **{self.axis: b if self.axis == "movetime" else int(b)})  # type: ignore[arg-type]

    @functools.cached_property
    def tuning(self) -> RunSettings:
        """The run settings of the tuning games (their own run name in the shared database)."""
        return replace(self.settings, name=f"{self.settings.name}-tuning")


# ----------------------------------------------------------------------------------------- config


#: the largest magnitude of a tuned range's ends, and its smallest width: SPSA's gains are products of
#: the range's squares (1e308 overflowed, issue 81 j07), and a narrower range is below its rounding
MAX_RANGE_END = 1e9
MIN_RANGE = 1e-9


def _steppable(v: float) -> str | None:
    return None if math.isfinite(v) and abs(v) <= MAX_RANGE_END else f"must be a finite number of magnitude at most {MAX_RANGE_END:g}"


def parse(cfg: Section, path: Path, text: str) -> Tune:
    if cfg.has("games"):
        raise cfg.error("games", "a tuning run counts iterations and pairs (a step's game pairs); the "
                                 "verification's games are [verify] games")
    s = run_settings(cfg)
    engine = cfg.get("engine", str, check=lambda v: None if v.strip() else "must not be empty")
    try:
        registry.resolve(engine)
    except EngineError as e:
        raise cfg.error("engine", str(e)) from None
    algorithm = cfg.choice("algorithm", ALGORITHMS, "spsa")
    axes = [a for a in AXES if cfg.has(a)]
    if len(axes) != 1:
        raise cfg.error("nodes", "give exactly one budget: nodes, evals or movetime (one number)")
    axis = axes[0]
    cap = MAX_SECONDS if axis == "movetime" else MAX_BUDGET
    budget = float(cfg.get(axis, float if axis == "movetime" else int, check=lambda v: None if 0 < v <= cap
                           else f"must be positive, at most {cap:,}"))
    iterations = cfg.positive("iterations")
    pairs = cfg.positive("pairs", 1)
    batch = cfg.positive("batch", max(1, s.concurrency * s.workers // (2 * pairs)))
    report_dir = Path(cfg.get("report_dir", str, "reports", writable_dir))
    out = Path(cfg.get("out", str, f"runs/tune/{s.name}", writable_dir))
    params: list[Param] = []
    for sec in cfg.tables("params", required=True):
        sec.only("name", "min", "max", "start", "integer", "c_end", "r_end")
        name = sec.get("name", str)
        lo, hi = sec.get("min", float, check=_steppable), sec.get("max", float, check=_steppable)
        if not lo < hi:
            raise sec.error("max", f"must be above min ({lo:g})")
        if hi - lo < MIN_RANGE:
            raise sec.error("max", f"must be at least {MIN_RANGE:g} above min (a range SPSA can step)")
        integer = sec.get("integer", bool, False)
        start = sec.get("start", float, check=lambda v: None if lo <= v <= hi else f"must lie in [{lo:g}, {hi:g}]")
        c_end = sec.get("c_end", float, max(1.0, (hi - lo) / 10) if integer else (hi - lo) / 10,
                        lambda v: None if 0 < v <= hi - lo else "must be positive and at most the range")
        r_end = sec.get("r_end", float, 0.002, lambda v: None if 0 < v < 1 else "must be in (0, 1)")
        sec.done()
        if name in {p.name for p in params}:
            raise sec.error("name", f"{name!r} is tuned twice")
        p = Param(name, lo, hi, start, integer, c_end, r_end)
        for v in (lo, hi):
            try:
                registry.resolve(join_spec(engine, {name: p.text(v)}))
            except EngineError as e:
                raise sec.error("name" if "unknown" in str(e) else "min", str(e)) from None
        params.append(p)
    v = cfg.table("verify")
    verify_games = v.get("games", int, 400, even_games)
    budgets = v.get("budgets", list, [budget])
    if not budgets or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= cap for x in budgets):
        raise v.error("budgets", f"must be a non-empty array of positive numbers up to {cap:,}")
    v.done()
    verify_budgets = [budget] + [float(x) for x in budgets if float(x) != budget]
    cfg.done()
    if axis == "movetime":
        s.concurrency = s.workers  # one game at a time per worker: a move's time is its own
    return Tune(s, engine, params, algorithm, axis, budget, iterations, pairs, batch, verify_games, verify_budgets,
                report_dir, out, path, text)


def load(path: str | Path) -> Tune:
    try:
        return parse(tomlconfig.load(path), Path(path), tomlconfig.resolve_config(path).read_text())
    except openings_mod.OpeningError as e:
        raise ConfigError(f"{path}: {e}") from None


# ----------------------------------------------------------------------------------------- playing


def _play(t: Tune, matches: Sequence[tuple[Player, Player]], progress: bool, desc: str) -> list[float]:
    """Each (a, b) pairing's ``pairs`` game pairs played (what is stored already is not played again);
    a's wins minus losses in each."""
    s = t.tuning
    tasks: list[list[GameTask]] = [s.pairing_tasks(a, b, 2 * t.pairs) for a, b in matches]
    with Store(str(s.db), lock=True) as store:
        play([x for ts in tasks for x in ts], store, concurrency=s.concurrency, workers=s.workers,
             adjudication=s.adjudication, progress=progress, desc=desc, backend=s.backend, ray_address=s.ray_address)
        # this batch's pairings only (the run's earlier games are not read again every batch)
        done = {g.key: g for ts in tasks for g in store.games(match=ts[0].match)}
    out = []
    for (a, _), ts in zip(matches, tasks):
        missing = [x.key for x in ts if x.key not in done]
        if missing:
            raise ConfigError(f"tune {t.settings.name}: {len(missing)} games of {a.name} were not played (see above)")
        out.append(sum(2 * done[x.key].score_for(a.name) - 1 for x in ts))
    return out


# ----------------------------------------------------------------------------------------- SPSA


def spsa_gains(p: Param, n: int, k: int) -> tuple[float, float]:
    """(c_k, R_k) of parameter ``p`` at iteration ``k`` (1-based) of ``n`` (fishtest's schedule)."""
    big_a = 0.1 * n
    c = p.c_end * n ** GAMMA
    a = p.r_end * p.c_end ** 2 * (big_a + n) ** ALPHA
    c_k = c / k ** GAMMA
    return c_k, a / (big_a + k) ** ALPHA / c_k ** 2


def _read_state(path: Path, t: Tune) -> dict[str, Any]:
    start = {"k": 0, "theta": {p.name: p.start for p in t.params}, "history": []}
    if not path.exists():
        return start
    try:
        st = read_json(path, "tuning state")
    except InputError as e:
        raise ConfigError(f"{path} is damaged ({e}): delete it to tune from the start") from None
    if not isinstance(st, dict) or st.get("key") != _key(t):
        raise ConfigError(f"{path} holds another tuning run (engine, parameters, budget or seed differ): "
                          "give another name or delete its folder")
    return st


def _key(t: Tune) -> dict[str, Any]:
    return {"engine": t.engine, "algorithm": t.algorithm, "axis": t.axis, "budget": t.budget, "seed": t.settings.seed,
            "iterations": t.iterations, "pairs": t.pairs, "batch": t.batch, "variant": t.settings.variant,
            "params": [[p.name, p.lo, p.hi, p.start, p.integer, p.c_end, p.r_end] for p in t.params]}


def run_spsa(t: Tune, progress: bool = True) -> dict[str, float]:
    """SPSA to the end (resuming from ``state.json``); the final θ."""
    from tqdm import tqdm

    path = t.out / "state.json"
    st = _read_state(path, t)
    bar = tqdm(total=t.iterations, initial=st["k"], desc=f"tune {t.settings.name} (SPSA)", unit="pair",
               disable=not progress)
    while st["k"] < t.iterations:
        theta = dict(st["theta"])
        steps: list[tuple[int, int, dict[str, int], dict[str, tuple[float, float]], dict[str, float], dict[str, float]]] = []
        k = st["k"]
        while k < t.iterations and len(steps) < t.batch:
            n = len(st["history"]) + len(steps)
            rng = random.Random(f"{t.settings.seed}:spsa:{n}")
            delta = {p.name: rng.choice((-1, 1)) for p in t.params}
            gains = {p.name: spsa_gains(p, t.iterations, k + 1) for p in t.params}
            plus = {p.name: p.clamp(theta[p.name] + gains[p.name][0] * delta[p.name]) for p in t.params}
            minus = {p.name: p.clamp(theta[p.name] - gains[p.name][0] * delta[p.name]) for p in t.params}
            steps.append((n, k + 1, delta, gains, plus, minus))
            k += t.pairs
        results = _play(t, [(t.player(f"plus@{n}", t.spec(pl)), t.player(f"minus@{n}", t.spec(mi)))
                            for n, _, _, _, pl, mi in steps], False, "spsa")
        for (n, it, delta, gains, pl, mi), r in zip(steps, results):
            for p in t.params:
                c_k, r_k = gains[p.name]
                # a whole-number option keeps its θ real, rounded only where the engine gets it (fishtest)
                st["theta"][p.name] = p.clamp(st["theta"][p.name] + r_k * c_k * r * delta[p.name])
            st["history"].append({"step": n, "iteration": it, "result": r, "plus": pl, "minus": mi,
                                  "theta": dict(st["theta"])})
            st["k"] = min(t.iterations, st["k"] + t.pairs)
        st["key"] = _key(t)
        t.out.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(st, indent=1), "tuning state")
        bar.update(len(steps) * t.pairs)
        bar.set_postfix_str(", ".join(f"{p.name}={p.text(st['theta'][p.name])}" for p in t.params))
    bar.close()
    t.history = st["history"]
    return {p.name: st["theta"][p.name] for p in t.params}


# ----------------------------------------------------------------------------------------- Optuna


def _normalised(t: Tune, theta: dict[str, float]) -> list[float]:
    return [(theta[p.name] - p.lo) / (p.hi - p.lo) for p in t.params]


def smoothed_best(t: Tune, trials: list[tuple[dict[str, float], float]]) -> tuple[dict[str, float], float]:
    """The trial whose score, averaged with its k nearest trials' (k = max(5, trials / 10)), is
    highest: (its θ, that average)."""
    best, best_score = trials[0][0], -math.inf
    for th, _ in trials:
        avg = _neighbour_mean(t, trials, th)
        if avg > best_score:
            best, best_score = th, avg
    return best, best_score


def _neighbour_mean(t: Tune, trials: list[tuple[dict[str, float], float]], theta: dict[str, float]) -> float:
    """The mean score of the k = max(5, trials / 10) trials nearest ``theta`` in the normalised space."""
    k = min(len(trials), max(5, len(trials) // 10))
    x = _normalised(t, theta)
    near = sorted(trials, key=lambda q: sum((a - b) ** 2 for a, b in zip(x, _normalised(t, q[0]))))[:k]
    return sum(sc for _, sc in near) / len(near)


def _damaged_store(path: Path, e: BaseException) -> str:
    return (f"{path} is damaged ({str(e).splitlines()[0][:120] if str(e) else type(e).__name__}): move it away or "
            f"delete it to start the study afresh (the games its trials played stay in the results database)")


def _check_study_store(path: Path) -> None:
    """A torn or foreign ``optuna.sqlite`` (issue 81, j06: a sqlalchemy traceback on every resume):
    one line naming it and what to do, before Optuna opens it."""
    import sqlite3

    if not path.exists():
        return
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            ok = db.execute("pragma quick_check").fetchone()
        if not ok or ok[0] != "ok":
            raise sqlite3.DatabaseError(str(ok[0]) if ok else "no answer to its check")
    except sqlite3.Error as e:
        raise ConfigError(_damaged_store(path, e)) from None


def run_optuna(t: Tune, progress: bool = True) -> dict[str, float]:
    """The model-based search to ``iterations`` trials (resuming Optuna's SQLite study); the θ of
    :func:`smoothed_best`."""
    import optuna
    from tqdm import tqdm

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # multivariate, constant liar
    t.out.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{(t.out / 'optuna.sqlite').resolve()}"
    sampler = optuna.samplers.TPESampler(seed=t.settings.seed, multivariate=True, constant_liar=True,
                                         n_startup_trials=max(5, t.iterations // 5))
    _check_study_store(t.out / "optuna.sqlite")
    try:
        study = optuna.create_study(study_name=json.dumps(_key(t), sort_keys=True), storage=storage, sampler=sampler,
                                    direction="maximize", load_if_exists=True)
    except Exception as e:  # noqa: BLE001 - sqlalchemy's and Optuna's errors of a store that is not a study
        raise ConfigError(_damaged_store(t.out / "optuna.sqlite", e)) from None
    base = t.player("default", t.engine)
    dists: dict[str, optuna.distributions.BaseDistribution] = {p.name: optuna.distributions.IntDistribution(int(p.lo), int(p.hi)) if p.integer
             else optuna.distributions.FloatDistribution(p.lo, p.hi) for p in t.params}
    if not study.trials:  # the first trial is the engine's start values
        study.enqueue_trial({p.name: int(p.start) if p.integer else p.start for p in t.params})
    done = sum(1 for x in study.trials if x.state == optuna.trial.TrialState.COMPLETE)
    bar = tqdm(total=t.iterations, initial=done, desc=f"tune {t.settings.name} (Optuna TPE)", unit="trial",
               disable=not progress)
    while done < t.iterations:
        running = [x for x in study.trials if x.state == optuna.trial.TrialState.RUNNING]
        asked = [(x.number, dict(x.params)) for x in running]
        while len(asked) < min(t.batch, t.iterations - done):
            tr = study.ask(dists)
            asked.append((tr.number, dict(tr.params)))
        results = _play(t, [(t.player(f"trial@{n}", t.spec(th)), replace(base, name=f"default@{n}"))
                            for n, th in asked], False, "optuna")
        for (n, _), r in zip(asked, results):
            study.tell(n, 0.5 + r / (4 * t.pairs))  # the trial's score
        done += len(asked)
        bar.update(len(asked))
    bar.close()
    trials = [(dict(x.params), float(x.value)) for x in study.trials
              if x.state == optuna.trial.TrialState.COMPLETE and x.value is not None]
    t.history = [{"step": i, "iteration": i + 1, "result": s, "theta": th} for i, (th, s) in enumerate(trials)]
    best, _ = smoothed_best(t, trials)
    return {p.name: float(best[p.name]) for p in t.params}


# ----------------------------------------------------------------------------------------- report


def _write_tuning(t: Tune, theta: dict[str, float]) -> list[Path]:
    """``steps.csv`` in the run folder, ``theta.csv`` and ``theta.png/svg`` in the report folder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = t.report_dir / t.settings.name
    folder.mkdir(parents=True, exist_ok=True)
    games_per = 2 * t.pairs
    head = ["step", "games", "result"] + [p.name for p in t.params]
    rows = [[h["step"], (i + 1) * games_per, h["result"]] + [h["theta"][p.name] for p in t.params]
            for i, h in enumerate(t.history)]
    for path in (t.out / "steps.csv", folder / "theta.csv"):
        write_atomic(path, csv_text([head, *rows]), "tuning steps")
    n = len(t.params)
    fig, axes = plt.subplots(n, 1, figsize=(7, 2.2 * n + 0.6), squeeze=False)
    for ax, p in zip(axes[:, 0], t.params):
        xs = [r[1] for r in rows]
        if t.algorithm == "spsa":
            ax.plot(xs, [r[3 + t.params.index(p)] for r in rows], color="#1f77b4", lw=1.2)
        else:  # each trial's θ coloured by its score
            sc = ax.scatter(xs, [r[3 + t.params.index(p)] for r in rows], c=[r[2] for r in rows], cmap="viridis", s=12)
            fig.colorbar(sc, ax=ax, label="score")
        ax.axhline(p.start, color="#888", ls="--", lw=0.8, label=f"start {p.text(p.start)}")
        ax.axhline(theta[p.name], color="#d62728", ls=":", lw=1, label=f"tuned {p.text(theta[p.name])}")
        ax.set_ylabel(p.name)
        ax.set_ylim(p.lo, p.hi)
        ax.legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel("games played")
    fig.suptitle(f"{t.settings.name}: θ against games ({'SPSA' if t.algorithm == 'spsa' else 'Optuna TPE trials'})",
                 fontsize=10)
    fig.tight_layout()
    paths = _save(fig, folder, "theta", plt)
    if t.algorithm == "optuna" and rows:
        paths += _slices(t, theta, folder, plt)
    return paths + [folder / "theta.csv"]


def _slices(t: Tune, theta: dict[str, float], folder: Path, plt: Any) -> list[Path]:
    """The model's slices: each trial's score against each parameter, with the smoothed score
    (:func:`smoothed_best`'s neighbour average) of the trials along it."""
    trials = [(dict(h["theta"]), float(h["result"])) for h in t.history]
    k = min(len(trials), max(5, len(trials) // 10))
    n = len(t.params)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n + 0.6, 3.0), squeeze=False)
    for ax, p in zip(axes[0], t.params):
        xs = [th[p.name] for th, _ in trials]
        ax.scatter(xs, [sc for _, sc in trials], s=10, color="#1f77b4", alpha=0.6, label="trials")
        order = sorted(range(len(trials)), key=lambda i: xs[i])
        smooth = [_neighbour_mean(t, trials, trials[i][0]) for i in order]  # nearest in the whole space
        ax.plot([xs[i] for i in order], smooth, color="#d62728", lw=1, label=f"{k}-neighbour mean")
        ax.axvline(theta[p.name], color="#d62728", ls=":", lw=1)
        ax.set_xlabel(p.name)
        ax.set_xlim(p.lo, p.hi)
    axes[0, 0].set_ylabel("score against the defaults")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"{t.settings.name}: the trials' scores along each parameter", fontsize=10)
    fig.tight_layout()
    return _save(fig, folder, "slices", plt)


def _save(fig: Any, folder: Path, stem: str, plt: Any) -> list[Path]:
    """``FOLDER/STEM.png`` and ``.svg``, the figure closed."""
    out = [folder / f"{stem}.{ext}" for ext in ("png", "svg")]
    for path in out:
        save_figure(fig, path, dpi=110)
    plt.close(fig)
    return out


def _notes(t: Tune, theta: dict[str, float]) -> str:
    games = 2 * t.pairs * len(t.history)
    how = (f"SPSA as fishtest runs it, {t.iterations} game pairs ({t.pairs} a step, {t.batch} steps in flight)"
           if t.algorithm == "spsa" else
           f"Optuna's TPE, {t.iterations} trials of {2 * t.pairs} games against the defaults ({t.batch} in flight); "
           "the tuned θ is the best trial by its score averaged with its nearest trials'")
    lines = [f"**Tuning.** `{t.engine}` at {t.axis} {t.budget:g}: {how}; {games} tuning games "
             f"(run `{t.settings.name}-tuning` of the database). Start and tuned values:", "",
             "| parameter | range | start | tuned |", "|---|---|---|---|"]
    lines += [f"| {p.name} | [{p.text(p.lo)}, {p.text(p.hi)}] | {p.text(p.start)} | {p.text(theta[p.name])} |"
              for p in t.params]
    lines += ["", "The table above is the verification: the tuned engine against its defaults in fresh games "
              "on distinct openings; the optimiser's own figures are not a verdict.", "",
              "![θ against games](theta.png)", ""]
    if t.algorithm == "optuna":
        lines += ["![the trials' scores along each parameter](slices.png)", ""]
    if t.settings.notes:
        lines += [t.settings.notes]
    return "\n".join(lines)


def same_games(db: str | Path, run: str) -> tuple[int, int]:
    """(pairs whose two games have the same moves, complete pairs) of ``run`` in ``db``: two players
    whose settings differ only in knobs that never act play each pair's second game as its first."""
    if not Path(db).is_file():
        return 0, 0
    pairs: dict[tuple[str, int], list[list[str]]] = {}
    with Store(str(db), readonly=True) as st:
        for g in st.games(run=run):
            pairs.setdefault((g.match, g.pair), []).append(g.moves)
    complete = [m for m in pairs.values() if len(m) == 2]
    return sum(1 for a, b in complete if a == b), len(complete)


def _inert_warning(t: Tune) -> str:
    """A warning when the tuned knobs changed no tuning game (issue 78: alpha-beta tuned at 16 nodes,
    where its knobs never act, verified as 200 identical pairs), else ''."""
    same, total = same_games(t.settings.db, f"{t.settings.name}-tuning")
    if not total or same < total:
        return ""
    return (f"**Warning.** In all {total} tuning pairs both games had the same moves: the tuned parameters "
            f"({', '.join(p.name for p in t.params)}) never acted at {t.axis} {t.budget:g}, so no game can show "
            f"what they are worth there. Tune them at a budget where they act.")


def run(t: Tune, command: str, progress: bool = True, verify: bool = True) -> tuple[dict[str, float], list[Any], list[Path]]:
    """Tune, write θ against games, then (``verify``) play the verification and write the report;
    (tuned θ, the verification's rows, paths written).  When the tuned knobs changed no tuning game
    (:func:`same_games`) a warning line is printed and the report opens its notes with it."""
    theta = run_spsa(t, progress) if t.algorithm == "spsa" else run_optuna(t, progress)
    paths = _write_tuning(t, theta)
    warning = _inert_warning(t)
    if warning:
        print(f"searchbench: warning: {re.sub(r'[*]', '', warning)}", file=sys.stderr)
    if not verify:
        return theta, [], paths
    notes = _notes(t, theta)
    s = replace(t.settings, games=t.verify_games, notes=f"{warning}\n\n{notes}" if warning else notes)
    ab = ablate.Ablation(s, t.engine, [ablate.Variant("tuned", t.spec(theta), t.verify_games)],
                         [(t.axis, b) for b in t.verify_budgets], None, t.report_dir, t.config_path, t.config_text)
    rows, more = ablate.run(ab, command, progress=progress)
    return theta, rows, paths + more


__all__ = ["ALGORITHMS", "Param", "Tune", "load", "parse", "run", "run_optuna", "run_spsa", "smoothed_best",
           "spsa_gains"]
