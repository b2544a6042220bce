"""``searchbench targets``: is a search's policy target better than the network's prior? Measured
before training on it (KataGo, lc0: a target is only as good as the search that made it).

On held-out positions (the validation games of ``--data``, split by game as ``train`` splits them,
so no network trained on that data saw them) each engine searches afresh at the self-play budget
(``--nodes``, root visits) with its self-play exploration (:func:`experiments.selfplay.games.selfplay_engine`;
``--no-explore``: without), and its training target is read as self-play reads it
(:meth:`search.mcts.MCTS.policy_target`: PUCT's visit shares, Gumbel's improved policy π′).  Each row:

- ``top1``: how often the target's most probable move is the move the data's engine played
  (Fairy-Stockfish at 3,000 nodes in the shipped data), with its Wilson 95% interval;
- ``entropy``: the target's entropy in nats (how sharp it is);
- ``kl_prior``: KL(target ‖ prior), how far the search moved away from the network's own policy;
- ``check_mass``: the probability the target puts on checking moves (check enhancement and a value
  search's taste for forcing moves show here);
- ``evals``: evaluator calls a move (the cost that buys the target).

The ``prior`` row is the network's own policy on the same positions (each distinct network once):
a target whose top-1 is not above its prior's teaches the network nothing it does not already say.
A Gumbel engine whose budget leaves Sequential Halving a single phase (n < m·⌈log2 m⌉ with m the
considered actions: every action gets the same visits and no halving happens) is named in a note:
its π′ is then a one-ply value-greedy pick.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

import board
from engines import factory, registry
from engines.base import EngineError, EngineSpec
from engines.ours import OurEngine
from evaluators.base import Leaf
from evaluators.encodings import raw_to_fen
from experiments.selfplay.games import SelfPlayError, selfplay_engine, without_exploration
from experiments.training import datagen
from experiments.training.agreement import Agreement, sample_validation
from experiments.training.datagen import DataError
from search.base import Limits
from search.mcts_rules import root_rule_class


@dataclass
class TargetRow:
    """The figures of one target (or of a network's prior) over the held-out positions."""

    name: str
    positions: int = 0
    agree: int = 0
    entropy: float = 0.0
    kl_prior: float = 0.0
    check_mass: float = 0.0
    evals: float = 0.0
    collapsed: int = 0  # Gumbel: positions where Sequential Halving had one phase at this budget
    notes: list[str] = field(default_factory=list)

    @property
    def top1(self) -> float:
        return self.agree / self.positions if self.positions else 0.0

    def interval(self) -> tuple[float, float]:
        return Agreement(0, self.positions, self.agree).interval()

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {"name": self.name, "positions": self.positions, "top1": round(self.top1, 4), "top1_lo": round(lo, 4),
                "top1_hi": round(hi, 4), "entropy": round(self.entropy / max(1, self.positions), 4),
                "kl_prior": round(self.kl_prior / max(1, self.positions), 4),
                "check_mass": round(self.check_mass / max(1, self.positions), 4),
                "evals": round(self.evals / max(1, self.positions), 2), "collapsed": self.collapsed, "notes": self.notes}


def _engines(specs: Sequence[EngineSpec], variant: str, pool: Any) -> list[Any]:
    """An in-process engine for each spec, their networks from ``pool`` (closed on a failure, which is
    one :class:`DataError`)."""
    made = []
    try:
        for spec in specs:
            eng = factory.create(spec, variant, evaluator=pool.get(spec, variant))
            if not isinstance(eng, OurEngine):
                raise DataError(f"{spec.name!r} is not an in-process engine")
            made.append(eng)
    except (EngineError, ValueError) as err:
        pool.close()
        raise DataError(str(err)) from None
    return made


def _held_out(data: list[str], positions: int, seed: int, val_fraction: float) -> tuple[Any, np.ndarray]:
    """The data and the sampled held-out position indices (:func:`~experiments.training.agreement.sample_validation`)."""
    ds = datagen.load_dataset(data)
    return ds, sample_validation(ds, positions, seed, val_fraction)


def _selfplay_spec(engine: str | EngineSpec, variant: str, explore: bool) -> EngineSpec:
    """The engine as self-play runs it (:func:`experiments.selfplay.games.selfplay_engine`); a bad one is a :class:`DataError`."""
    try:
        return selfplay_engine(engine, variant, explore)
    except SelfPlayError as err:
        raise DataError(str(err)) from None


def _positions(ds: Any, idx: np.ndarray, progress: bool) -> Iterator[tuple[int, int, Any, list[int], int]]:
    """``(n, i, position, legal moves, the data's move)`` of each sampled position with two legal moves or more."""
    from tqdm import tqdm

    for n, i in enumerate(tqdm(idx, desc="targets", unit="position", disable=not progress)):
        i = int(i)
        pos = board.new_position(ds.variant, raw_to_fen(tuple(int(v) for v in ds.raw[i]), ds.variant))
        legal = pos.legal_moves()
        if len(legal) >= 2:
            yield n, i, pos, legal, int(ds.move[i])


def _add(row: TargetRow, probs: np.ndarray, moves: list[int], played: int, prior: np.ndarray,
         checks: np.ndarray) -> None:
    p = probs / probs.sum()
    row.positions += 1
    row.agree += moves[int(np.argmax(p))] == played
    nz = p > 0
    row.entropy += float(-(p[nz] * np.log(p[nz])).sum())
    row.kl_prior += max(0.0, float((p[nz] * (np.log(p[nz]) - np.log(np.maximum(prior[nz], 1e-12)))).sum()))
    row.check_mass += float(p[checks].sum())


def measure(engines: Sequence[str | EngineSpec], data: list[str], positions: int = 400, nodes: int = 16, seed: int = 0,
            explore: bool = True, val_fraction: float = 0.1, progress: bool = True, evals: int = 0) -> list[TargetRow]:
    """The prior rows (one per distinct network) and one row per engine (module docstring); ``evals``
    > 0: each search limited to that many evaluator calls instead of ``nodes``."""
    if not engines:
        raise DataError("give one or more --engine")
    ds, idx = _held_out(data, positions, seed, val_fraction)
    variant = ds.variant
    specs = [_selfplay_spec(e, variant, explore) for e in engines]
    pool = registry.EvaluatorPool()  # engines of one network share it: one prior row per network
    made = _engines(specs, variant, pool)
    networks: dict[int, tuple[str, Any]] = {}
    for eng in made:
        weights = registry.evaluator_settings(eng.spec)[0]
        networks.setdefault(id(eng.evaluator), (f"prior: {eng.spec.evaluator} {weights or '(shipped weights)'}",
                                                eng.evaluator))
    priors = {k: TargetRow(name) for k, (name, _) in networks.items()}
    rows = [TargetRow(spec.name) for spec in specs]
    for row, eng in zip(rows, made):
        note = root_rule_class(eng.spec.config).describe(eng.spec.config)
        if note:
            row.notes.append(note)
    try:
        for n, i, pos, legal, played in _positions(ds, idx, progress):
            checks = np.zeros(len(legal), dtype=bool)
            for j, m in enumerate(legal):
                pos.push(m)
                checks[j] = pos.is_check()
                pos.pop()
            prior_of: dict[int, np.ndarray] = {}
            for k, (_, ev) in networks.items():
                p = np.array(ev.evaluate([Leaf(pos.raw_state(), list(legal), variant)])[0].priors, dtype=np.float64)
                prior_of[k] = p
                _add(priors[k], p, legal, played, p, checks)
            for row, eng in zip(rows, made):
                eng.new_game(seed * 1_000_003 + n)
                r = eng.play(pos.copy(), Limits(evals=evals) if evals > 0 else Limits(nodes=nodes))
                target = dict(eng.policy_target() or [(r.move, 1.0)])
                probs = np.array([target.get(m, 0.0) for m in legal], dtype=np.float64)
                _add(row, probs, legal, played, prior_of[id(eng.evaluator)], checks)
                row.evals += r.info.evals if r.info else 0
                row.collapsed += root_rule_class(eng.spec.config).one_phase(eng.spec.config, len(legal), evals or nodes)
    finally:
        pool.close()
    for row in rows:
        if row.collapsed:
            row.notes.append(f"Sequential Halving had one phase in {row.collapsed} of {row.positions} positions "
                             f"(n={evals or nodes} < m·⌈log2 m⌉): π′ is a one-ply value-greedy pick there")
    out = list(priors.values()) + rows
    for row in rows:
        prior = next(p for k, p in priors.items() if k == id(made[rows.index(row)].evaluator))
        if row.top1 <= prior.top1:
            row.notes.append(f"not better than the prior: top-1 {100 * row.top1:.1f}% against {100 * prior.top1:.1f}%")
    return out


def format_table(rows: list[TargetRow], nodes: int) -> str:
    lines = [f"policy targets at {nodes} nodes against the data's moves (held-out positions)", "",
             f"{'target':<58} {'top-1':>6} {'95% interval':>15} {'entropy':>8} {'KL(prior)':>9} {'checks':>7} "
             f"{'evals':>6}"]
    for r in rows:
        d = r.as_dict()
        name = r.name if len(r.name) <= 58 else r.name[:55] + "..."
        lines.append(f"{name:<58} {100 * d['top1']:>5.1f}% [{100 * d['top1_lo']:>5.1f}%, {100 * d['top1_hi']:>5.1f}%] "
                     f"{d['entropy']:>8.2f} {d['kl_prior']:>9.2f} {d['check_mass']:>7.3f} {d['evals']:>6.1f}")
    positions = rows[0].positions if rows else 0
    lines += ["", f"{positions} positions; entropy and KL in nats; checks: the target's mass on checking moves; "
              "evals: evaluator calls a move"]
    for r in rows:
        lines += [f"note: {r.name}: {n}" for n in r.notes]
    return "\n".join(lines)




# --------------------------------------------------------------------------- against a deep search

#: the share of the network's prior mixed into a target before its cross-entropy is taken: a target
#: that leaves a move at 0 visits would otherwise cost infinity on any move the reference visits.
#: Mixed with the prior (not a uniform floor), a move the target leaves out costs log(1 / SMOOTHING)
#: nats more than under the prior, whatever the number of legal moves, and the prior itself is
#: unchanged; a network trained on the target keeps about that much of its own belief per step
SMOOTHING = 0.1


def _mean_interval(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and its normal 95% interval (1.96 standard errors)."""
    if len(x) == 0:
        return 0.0, 0.0, 0.0
    m = float(np.mean(x))
    h = 1.96 * float(np.std(x, ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else 0.0
    return m, m - h, m + h


def _entropy(p: np.ndarray) -> float:
    nz = p > 0
    return float(-(p[nz] * np.log(p[nz])).sum())


@dataclass
class ReferenceRow:
    """One candidate (a network's prior, or a search's target) against the deep search, per position:
    cross-entropy H(reference, candidate), whether its top move is the reference's and the data's,
    its entropy; summarised with 95% intervals, and paired with the prior's figures on the same
    positions."""

    name: str
    kind: str  # "prior", "target" or "reference"
    ce: list[float] = field(default_factory=list)
    top: list[float] = field(default_factory=list)
    data_top: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    evals: list[float] = field(default_factory=list)
    prior: "ReferenceRow | None" = None

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "positions": len(self.ce)}
        for key in ("ce", "top", "data_top", "entropy", "evals"):
            m, lo, hi = _mean_interval(np.array(getattr(self, key), dtype=np.float64))
            out[key], out[f"{key}_lo"], out[f"{key}_hi"] = round(m, 4), round(lo, 4), round(hi, 4)
        if self.prior is not None and self.kind == "target":
            for key in ("ce", "entropy", "top"):
                d = np.array(getattr(self, key)) - np.array(getattr(self.prior, key))
                m, lo, hi = _mean_interval(d)
                out[f"{key}_minus_prior"], out[f"{key}_minus_prior_lo"], out[f"{key}_minus_prior_hi"] = \
                    round(m, 4), round(lo, 4), round(hi, 4)
        return out


def _smoothed(q: np.ndarray, prior: np.ndarray, smoothing: float) -> np.ndarray:
    """``(1 - smoothing) q + smoothing prior`` (:data:`SMOOTHING`)."""
    out: np.ndarray = (1.0 - smoothing) * q / q.sum() + smoothing * prior / prior.sum()
    return out


def measure_reference(engines: Sequence[str | EngineSpec], data: list[str], reference: int, positions: int = 400, nodes: int = 16,
                      seed: int = 0, explore: bool = True, val_fraction: float = 0.1, progress: bool = True,
                      playout_cap: tuple[float, int] | None = None, reuse: bool = True,
                      smoothing: float = SMOOTHING, evals: int = 0) -> list[dict[str, Any]]:
    """Each engine's self-play target against a deep search of the same network (KataGo, lc0: a
    target is only as good as the search that made it).  On held-out positions (as :func:`measure`):

    - the **reference**: the engine without exploration, a fresh tree, ``reference`` root visits;
      its visit shares (the deep search's distribution) and its most visited move;
    - the **target**: as self-play writes it: the engine with self-play's exploration at ``nodes``,
      and (``reuse``) with the tree self-play would carry, from the same engine's search two plies
      earlier in the same game (a full search, or with ``playout_cap`` = (f, fast nodes) a fast one
      with probability 1 - f, drawn from the seed), then the game's two moves; ``evals`` > 0: each
      target search limited to that many evaluator calls instead of ``nodes``;
    - the **prior**: the network's own policy.

    Per candidate: H(reference, candidate) in nats with the candidate mixed with the prior at
    ``smoothing`` (:data:`SMOOTHING`), agreement of its top move with the reference's and with the data's move
    (Fairy-Stockfish's, in the shipped data), its entropy; each mean with a 95% interval, and for a
    target the paired difference to its network's prior.  Returns the rows' summaries (prior,
    target, reference for each engine)."""
    import random

    if not engines:
        raise DataError("give one or more --engine")
    if reference < 1 or reference <= (evals or nodes):
        raise DataError(f"the reference search needs more nodes than the target's ({evals or nodes}), got {reference}")
    if evals and playout_cap:
        raise DataError("playout-cap randomisation works on the nodes limit: no evals with it")

    def full_limits() -> Limits:
        return Limits(evals=evals) if evals else Limits(nodes=nodes)
    if not 0.0 <= smoothing < 1.0:
        raise DataError("smoothing must be in [0, 1)")
    ds, idx = _held_out(data, positions, seed, val_fraction)
    variant = ds.variant
    pool = registry.EvaluatorPool()
    pairs = []
    try:
        for e in engines:
            specs = (_selfplay_spec(e, variant, explore), without_exploration(_selfplay_spec(e, variant, False)))
            made = _engines(list(specs), variant, pool)
            pairs.append((specs[0], made[0], made[1]))
    except DataError:
        pool.close()
        raise
    rows: list[tuple[ReferenceRow, ReferenceRow, ReferenceRow]] = []
    for spec, eng, _ in pairs:
        prior = ReferenceRow(f"prior: {eng.spec.evaluator}", "prior")
        cap = f", playout cap {playout_cap[0]:g} x {nodes} / {playout_cap[1]}" if playout_cap else ""
        budget = f"{evals} evaluator calls" if evals else f"{nodes} nodes"
        target = ReferenceRow(f"target: {spec.name} at {budget}{cap}{', tree reuse' if reuse else ''}", "target",
                              prior=prior)
        rows.append((prior, target, ReferenceRow(f"reference: {reference} nodes, no noise, fresh tree", "reference")))
    try:
        for n, i, pos, legal, played in _positions(ds, idx, progress):
            before = None
            if reuse and i >= 2 and ds.game[i - 2] == ds.game[i]:
                before = board.new_position(variant, raw_to_fen(tuple(int(v) for v in ds.raw[i - 2]), variant))
            for (spec, eng, ref_eng), (prow, trow, rrow) in zip(pairs, rows):
                ref_eng.new_game(seed * 1_000_003 + n)
                ref_eng.play(pos.copy(), Limits(nodes=reference))
                rt = dict(ref_eng.policy_target() or [])
                r = np.array([rt.get(m, 0.0) for m in legal], dtype=np.float64)
                if r.sum() <= 0:
                    continue
                r /= r.sum()
                best = int(np.argmax(r))
                p = np.array(eng.evaluator.evaluate([Leaf(pos.raw_state(), list(legal), variant)])[0].priors,
                             dtype=np.float64)
                eng.new_game(seed * 1_000_003 + n)
                here = pos.copy()
                if before is not None:
                    lim = full_limits()
                    if playout_cap is not None and random.Random(f"{seed}/{n}").random() >= playout_cap[0]:
                        lim = Limits(nodes=playout_cap[1], fast=True)
                    eng.play(before.copy(), lim)
                    here = before.copy()
                    here.push(int(ds.move[i - 2]))
                    here.push(int(ds.move[i - 1]))
                res = eng.play(here, full_limits())
                tt = dict(eng.policy_target() or [(res.move, 1.0)])
                t = np.array([tt.get(m, 0.0) for m in legal], dtype=np.float64)
                for row, q, ev in ((prow, p, 1.0), (trow, t, float(res.info.evals if res.info else 0)),
                                   (rrow, r, float(reference))):
                    q = q / q.sum()
                    row.ce.append(float(-(r * np.log(_smoothed(q, p, smoothing))).sum()))
                    row.top.append(float(int(np.argmax(q)) == best))
                    row.data_top.append(float(legal[int(np.argmax(q))] == played))
                    row.entropy.append(_entropy(q))
                    row.evals.append(ev)
    finally:
        pool.close()
    return [row.summary() for triple in rows for row in triple]


def gate0(rows: list[dict[str, Any]], min_entropy_ratio: float = 0.8) -> list[str]:
    """Gate 0 (before any self-play game): for each target, why it fails (empty: every target
    passes): its cross-entropy to the reference must be below its prior's, and its entropy at least
    ``min_entropy_ratio`` times the reference's (point estimates; the intervals are reported)."""
    why = []
    for k in range(0, len(rows) - 2, 3):
        prior, target, ref = rows[k], rows[k + 1], rows[k + 2]
        if not target["ce"] < prior["ce"]:
            why.append(f"{target['name']}: cross-entropy to the reference {target['ce']:.3f} nats is not below the "
                       f"prior's {prior['ce']:.3f}")
        if not target["entropy"] >= min_entropy_ratio * ref["entropy"]:
            why.append(f"{target['name']}: entropy {target['entropy']:.3f} nats is below {min_entropy_ratio:g} x the "
                       f"reference's {ref['entropy']:.3f}")
    return why


def format_reference(rows: list[dict[str, Any]], markdown: bool = False) -> str:
    """The reference table, as text or Markdown."""
    head = ["candidate", "CE to reference (nats)", "CE - prior's", "top = reference's", "top = data's",
            "entropy (nats)", "evals a move"]

    def iv(r: dict[str, Any], k: str, pct: bool = False) -> str:
        def f(v: float) -> str:
            return f"{100 * v:.1f}%" if pct else f"{v:.3f}"
        return f"{f(r[k])} [{f(r[k + '_lo'])}, {f(r[k + '_hi'])}]"

    body = []
    for r in rows:
        diff = iv(r, "ce_minus_prior") if "ce_minus_prior" in r else "-"
        body.append([r["name"], iv(r, "ce"), diff, iv(r, "top", True), iv(r, "data_top", True), iv(r, "entropy"),
                     f"{r['evals']:.1f}"])
    n = rows[0]["positions"] if rows else 0
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(b) + " |" for b in body]
    else:
        lines = ["  ".join(head)] + ["  ".join(b) for b in body]
    lines += ["", f"{n} held-out positions; 95% intervals (paired with the prior for CE - prior's); each candidate "
                  f"mixed with {SMOOTHING:g} of the prior before its cross-entropy is taken (a move it leaves out "
                  f"costs log {1 / SMOOTHING:g} nats more than under the prior)"]
    return "\n".join(lines)


__all__ = ["ReferenceRow", "SMOOTHING", "TargetRow", "format_reference", "format_table", "gate0", "measure",
           "measure_reference"]
