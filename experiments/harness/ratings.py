"""Ratings: logistic Bradley-Terry maximum likelihood over all games, bootstrap error bars.

Notation.  Player i has rating r_i (Elo).  The expected score of i against j is the logistic
``E_ij = 1 / (1 + 10^(-(r_i - r_j)/400))`` (SPEC.md section 5).  A game contributes its score s
(1, 1/2, 0) as ``s log E_ij + (1 - s) log(1 - E_ij)``: a draw counts half a win and half a loss,
the choice of Ordo, which keeps "expected score" and "Elo difference" on the one logistic scale that
match statistics and SPRT use (BayesElo's draw model would inflate the scale).

The virtual draw (``prior``): one virtual draw added to a pair of players that met keeps a perfect
score finite, but pulls a lopsided result toward 0 (9.5/10 becomes about +400 instead of +512).
``prior=None`` (the default) adds it *per pair*, only where that pair needs it: a pair that met in
fewer than :data:`PRIOR_MIN_GAMES` games or in which one side scored everything; every other pair
is fitted by plain maximum likelihood, whatever the other pairs are.  A bootstrap replicate decides
the same per pair on its own resample: a pair it turns into a sweep gets the virtual draw in that
replicate (so the replicate stays finite instead of running to the optimiser's bounds), and a pair
drawn with no games gets none.  A rating whose interval depends on such replicates (in more than
2.5% of them a pair of that player that had no virtual draw in the data's fit was a sweep) is marked
``sweep_bounded``: its interval's edge is set by the virtual draw, not by the games, and the reports
say so; so is a player one of whose pairs was a sweep in the games themselves, and a player whose
interval has no spread (a single game pair, or replicates that cannot differ): never a zero-width
interval shown as measured.  A number ``prior`` adds that many virtual draws to every pair that met.

The likelihood is maximised with scipy (L-BFGS-B, analytic gradient) over all players at once, with
the anchor fixed at its given Elo (or, with no anchor, the mean fixed at 0).  Players must form one
connected graph of games; otherwise their relative ratings are undefined and :class:`RatingError`
says which groups are apart.

Error bars: bootstrap over *game pairs* (the two colour-reversed games of an opening resampled
together, as they are correlated), refitting each sample; the interval is the 2.5th to 97.5th
percentile.  Errors are relative to the anchor (whose own error is 0 by construction).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

import numpy as np

from experiments.harness.stats import (  # noqa: F401 - re-exported: the statistics' one home
    elo_of_score, expected_score, percentile_interval, score_text, trinomial_elo, wilson,
)
from experiments.harness.store import GameRecord

LN10_400 = math.log(10) / 400
#: with fewer games than this between some pair of players, ``prior=None`` adds the virtual draw
PRIOR_MIN_GAMES = 20


class RatingError(ValueError):
    """Ratings cannot be computed from these games (one-line message)."""


@dataclass(frozen=True)
class Result:
    """One game as rating input: White, Black, White's score, and the unit resampled together."""

    white: str
    black: str
    score: float
    unit: Hashable = None


@dataclass
class Rating:
    name: str
    elo: float
    lo: float
    hi: float
    games: int
    score: float  # points scored / games
    #: the interval's edge comes from bootstrap replicates that turned a pairing into a sweep (module doc)
    sweep_bounded: bool = False

    @property
    def err(self) -> float:
        """Half width of the 95% interval."""
        return (self.hi - self.lo) / 2


expected = expected_score  # the logistic expected score (experiments.harness.stats)
match_elo = trinomial_elo


def from_games(games: Iterable[GameRecord], joint_openings: bool = False) -> list[Result]:
    """The games as results; a bootstrap unit is a game pair of one match, or (``joint_openings``)
    an opening across every match of the pool: where several pairings play the same openings, an
    opening's effect is shared by their differences, and resampling it once for all of them keeps
    that shared part from being counted as independent evidence twice."""
    if joint_openings:
        return [Result(g.white, g.black, g.score_for(g.white), ("opening", g.opening_fen, tuple(g.opening_moves)))
                for g in games]
    return [Result(g.white, g.black, g.score_for(g.white), (g.match, g.pair)) for g in games]


def _components(n: int, a: np.ndarray, b: np.ndarray) -> list[list[int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in zip(a.tolist(), b.tolist()):
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


class _Data:
    """Games aggregated per unordered pair of players: games n and points s of the first."""

    def __init__(self, results: Sequence[Result]) -> None:
        names = sorted({r.white for r in results} | {r.black for r in results})
        self.names = names
        idx = {n: i for i, n in enumerate(names)}
        w = np.array([idx[r.white] for r in results], dtype=np.int64)
        b = np.array([idx[r.black] for r in results], dtype=np.int64)
        s = np.array([r.score for r in results], dtype=np.float64)
        if np.any(w == b):
            raise RatingError("a game of a player against itself cannot be rated")
        lo, hi = np.minimum(w, b), np.maximum(w, b)
        s_lo = np.where(w == lo, s, 1.0 - s)
        pair_id = lo * len(names) + hi
        self.pairs, self.inverse = np.unique(pair_id, return_inverse=True)
        self.i = self.pairs // len(names)
        self.j = self.pairs % len(names)
        self.s_lo = s_lo
        # Units are numbered in a canonical order (not the order the games were stored in, which
        # depends on which concurrent game finished first), so a seeded bootstrap draws the same
        # resamples from the same games in any order.
        keys: list[Hashable] = [("unit", r.unit) if r.unit is not None else ("game", k) for k, r in enumerate(results)]
        unit_ids: dict[Hashable, int] = {u: n for n, u in enumerate(sorted(set(keys), key=repr))}
        self.unit_of = np.array([unit_ids[u] for u in keys], dtype=np.int64)
        self.n_units = len(unit_ids)

    def aggregate(self, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        w = np.ones_like(self.s_lo) if weights is None else weights
        n = np.bincount(self.inverse, weights=w, minlength=len(self.pairs))
        s = np.bincount(self.inverse, weights=w * self.s_lo, minlength=len(self.pairs))
        return n, s


def _fit(n_players: int, i: np.ndarray, j: np.ndarray, n: np.ndarray, s: np.ndarray, anchor: int | None,
         anchor_elo: float, prior: float | np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
    keep = n > 0  # the virtual draw goes only to pairs that have games (in a bootstrap replicate too)
    n = n + prior
    s = s + np.asarray(prior) / 2
    i, j, n, s = i[keep], j[keep], n[keep], s[keep]
    fixed = 0 if anchor is None else anchor
    free = np.array([k for k in range(n_players) if k != fixed], dtype=np.int64)

    def full(x: np.ndarray) -> np.ndarray:
        r = np.zeros(n_players)
        r[free] = x
        return r

    def nll(x: np.ndarray) -> tuple[float, np.ndarray]:
        r = full(x)
        d = (r[i] - r[j]) * LN10_400
        # log E = -log(1 + e^-d), log(1 - E) = -log(1 + e^d), computed stably
        log_e = -np.logaddexp(0.0, -d)
        log_1e = -np.logaddexp(0.0, d)
        f = -float(np.sum(s * log_e + (n - s) * log_1e))
        e = np.exp(log_e)
        gpair = -(s - n * e) * LN10_400
        g = np.bincount(i, weights=gpair, minlength=n_players) - np.bincount(j, weights=gpair, minlength=n_players)
        return f, g[free]

    start = np.zeros(len(free)) if x0 is None else (x0 - x0[fixed])[free]
    from scipy.optimize import minimize  # imported here: scipy costs 0.3 s at CLI start-up
    res = minimize(nll, start, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-9})
    r: np.ndarray = full(np.asarray(res.x, dtype=np.float64))
    if anchor is None:
        return r - float(r.mean())
    return r + anchor_elo


def pair_prior(n: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The virtual draws ``prior=None`` means, per pair (module doc): 1 for a pair that met in fewer than
    :data:`PRIOR_MIN_GAMES` games or was a sweep, else 0 (and 0 for a pair that did not meet)."""
    met = n > 0
    sweep = met & ((s <= 0.0) | (s >= n))
    out: np.ndarray = np.where(met & ((n < PRIOR_MIN_GAMES) | sweep), 1.0, 0.0)
    return out


def _sweeps(n: np.ndarray, s: np.ndarray) -> np.ndarray:
    met = n > 0
    out: np.ndarray = met & ((s <= 0.0) | (s >= n))
    return out


@dataclass
class Fit:
    """Ratings with their bootstrap replicates: :meth:`difference` gives the interval of A − B from
    the same replicates (not two intervals against the anchor)."""

    ratings: list[Rating]
    names: list[str]
    elo: np.ndarray
    samples: np.ndarray  # [bootstrap, players]; empty without a bootstrap
    prior: np.ndarray  # the virtual draws of each pair of the data (``pairs``)
    pairs: list[tuple[str, str]] | None = None

    def prior_of(self, a: str, b: str) -> float:
        """The virtual draws the fit added to the pair (a, b) (0 if they did not meet)."""
        for k, (x, y) in enumerate(self.pairs or []):
            if {x, y} == {a, b}:
                return float(self.prior[k])
        return 0.0

    def mean_difference(self, pairs: Sequence[tuple[str, str]]) -> tuple[float, float, float]:
        """The mean over ``pairs`` of (Elo of a − Elo of b), with the 95% percentile interval of that
        mean from the same replicates (replicates of one question pooled, their covariance kept)."""
        ix = [(self.names.index(a), self.names.index(b)) for a, b in pairs]
        d = float(np.mean([self.elo[i] - self.elo[j] for i, j in ix]))
        if not len(self.samples):
            return d, d, d
        lo, hi = percentile_interval(np.mean([self.samples[:, i] - self.samples[:, j] for i, j in ix], axis=0))
        return d, lo, hi

    def difference(self, a: str, b: str) -> tuple[float, float, float]:
        """(Elo of a − Elo of b, low, high): the 95% percentile interval of the difference."""
        ia, ib = self.names.index(a), self.names.index(b)
        d = float(self.elo[ia] - self.elo[ib])
        if not len(self.samples):
            return d, d, d
        lo, hi = percentile_interval(self.samples[:, ia] - self.samples[:, ib])
        return d, lo, hi


def rate(results: Sequence[Result], anchor: str | None = None, anchor_elo: float = 0.0, bootstrap: int = 200,
         seed: int = 0, prior: float | None = None, progress: bool = False) -> list[Rating]:
    """Ratings of every player in ``results``, best first (see module doc); ``progress``: a bar over
    the bootstrap refits when they take more than a second."""
    return fit(results, anchor, anchor_elo, bootstrap, seed, prior, progress).ratings


def fit(results: Sequence[Result], anchor: str | None = None, anchor_elo: float = 0.0, bootstrap: int = 200,
        seed: int = 0, prior: float | None = None, progress: bool = False) -> Fit:
    """:func:`rate` with the bootstrap replicates kept (:class:`Fit`)."""
    if not results:
        raise RatingError("no games to rate")
    data = _Data(results)
    names = data.names
    if anchor is not None and anchor not in names:
        raise RatingError(f"anchor {anchor!r} played no game; players: {', '.join(names)}")
    comps = _components(len(names), data.i, data.j)
    if len(comps) > 1:
        groups = " | ".join(", ".join(names[k] for k in c) for c in comps)
        raise RatingError(f"players form {len(comps)} groups that never met: {groups}")
    a = None if anchor is None else names.index(anchor)
    n, s = data.aggregate()
    per_pair = pair_prior(n, s) if prior is None else np.where(n > 0, float(prior), 0.0)
    elo = _fit(len(names), data.i, data.j, n, s, a, anchor_elo, per_pair)
    lo, hi = elo.copy(), elo.copy()
    samples = np.empty((0, len(names)))
    swept = np.zeros(len(names))  # replicates in which a pair of the player became a sweep
    if bootstrap > 0 and data.n_units > 1:
        rng = np.random.default_rng(seed)
        from tqdm import tqdm

        samples = np.empty((bootstrap, len(names)))
        for b in tqdm(range(bootstrap), desc="bootstrap", unit="fit", disable=not progress, delay=1.0,
                      dynamic_ncols=True, leave=False):
            counts = rng.multinomial(data.n_units, np.full(data.n_units, 1.0 / data.n_units))
            nb, sb = data.aggregate(counts[data.unit_of].astype(np.float64))
            pb = pair_prior(nb, sb) if prior is None else np.where(nb > 0, float(prior), 0.0)
            new = _sweeps(nb, sb) & (per_pair == 0)  # a virtual draw the data's own fit did not give
            if new.any():
                hit = np.zeros(len(names), dtype=bool)
                hit[data.i[new]] = hit[data.j[new]] = True
                swept += hit
            samples[b] = _fit(len(names), data.i, data.j, nb, sb, a, anchor_elo, pb, x0=elo)
        lo, hi = np.percentile(samples, 2.5, axis=0), np.percentile(samples, 97.5, axis=0)
    games = np.zeros(len(names), dtype=np.int64)
    points = np.zeros(len(names))
    idx = {nm: k for k, nm in enumerate(names)}
    for r in results:
        games[idx[r.white]] += 1
        games[idx[r.black]] += 1
        points[idx[r.white]] += r.score
        points[idx[r.black]] += 1 - r.score
    bounded = swept > 0.025 * max(1, len(samples))
    # a sweep in the data itself (the virtual draw bounds that pair in the fit and in every replicate),
    # or an interval with no spread (one game pair, or replicates that cannot differ): never shown as
    # if the games had measured it
    sw = _sweeps(n, s)
    bounded[data.i[sw]] = True
    bounded[data.j[sw]] = True
    flat = (hi - lo) <= 1e-9
    if a is not None:
        flat[a] = False  # the anchor's own zero width is its definition
    bounded |= flat
    out = [Rating(nm, float(elo[k]), float(lo[k]), float(hi[k]), int(games[k]), float(points[k] / games[k]),
                  bool(bounded[k])) for k, nm in enumerate(names)]
    out.sort(key=lambda x: -x.elo)
    return Fit(out, names, elo, samples, per_pair, [(names[x], names[y]) for x, y in zip(data.i, data.j)])


def groups(results: Sequence[Result]) -> list[list[Result]]:
    """``results`` split into the groups of players that met (directly or through others), the
    largest first: a results database of several budgets or pools, whose groups never met, is rated
    group by group, each with its own anchor, instead of refused."""
    if not results:
        return []
    data = _Data(results)
    comps = _components(len(data.names), data.i, data.j)
    where = {data.names[k]: c for c, members in enumerate(comps) for k in members}
    out: list[list[Result]] = [[] for _ in comps]
    for r in results:
        out[where[r.white]].append(r)
    out.sort(key=lambda g: -len(g))
    return out


def group_anchor(results: Sequence[Result], anchor: str | None) -> str:
    """A group's anchor: ``anchor`` where it played in the group, else the player with the most games
    (ties by name)."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.white] = counts.get(r.white, 0) + 1
        counts[r.black] = counts.get(r.black, 0) + 1
    if anchor in counts:
        return str(anchor)
    return max(sorted(counts), key=lambda p: counts[p])


#: marks an interval whose edge comes from bootstrap replicates that turned a pairing into a sweep
SWEEP_MARK = "†"
SWEEP_NOTE = (f"{SWEEP_MARK} a one-sided bound, not a measured interval: a pairing of this player was a sweep (in the "
              "games or in bootstrap replicates), where the virtual draw, not the games, bounds it, or its games "
              "left the bootstrap nothing to resample (play more games to narrow it)")


def format_table(ratings: Sequence[Rating]) -> str:
    w = max([len(r.name) for r in ratings] + [6])
    lines = [f"{'#':>3} {'player':<{w}} {'Elo':>7} {'95% interval':>17} {'games':>6} {'score':>6}"]
    for k, r in enumerate(ratings, 1):
        lines.append(f"{k:>3} {r.name:<{w}} {r.elo:>7.1f} [{r.lo:>7.1f},{r.hi:>7.1f}] {r.games:>6} "
                     f"{100 * r.score:>5.1f}%" + (f" {SWEEP_MARK}" if r.sweep_bounded else ""))
    if any(r.sweep_bounded for r in ratings):
        lines.append(SWEEP_NOTE)
    return "\n".join(lines)


class Standings:
    """Running points per player, for progress bars (the leader and its Elo against its field)."""

    def __init__(self) -> None:
        self.points: dict[str, float] = {}
        self.games: dict[str, int] = {}

    def add(self, g: GameRecord) -> None:
        for p in (g.white, g.black):
            self.points[p] = self.points.get(p, 0.0) + g.score_for(p)
            self.games[p] = self.games.get(p, 0) + 1

    def text(self) -> str:
        if not self.games:
            return ""
        # ranked by the score with one virtual draw added, so 1/1 does not outrank 9/10
        lead = max(self.points, key=lambda p: ((self.points[p] + 0.5) / (self.games[p] + 1), self.games[p]))
        n, pts = self.games[lead], self.points[lead]
        return f"leader {lead} {pts:g}/{n} ({elo_of_score((pts + 0.5) / (n + 1)):+.0f} Elo vs its opponents)"
