"""Alpha-beta: negamax with principal-variation search, iterative deepening, a transposition table,
quiescence search and move ordering (mypyc-compiled).

Notation (negamax): a score ``s`` is in centipawns for the side to move at the node; a child's score
is ``-s``.  ``alpha``/``beta`` bound the window; ``depth`` is the remaining depth in plies, ``ply`` the
distance from the root.  Mate scores: ``MATE - ply`` for delivering mate at ``ply`` (stored in the
table relative to the node, so they stay right when a position transposes to another ply).

Pieces of the search, each behind a switch of :class:`ABConfig`:

- iterative deepening 1, 2, ... with the previous best move searched first at the root;
- PVS: the first move with the full window, the others with a null window and a re-search;
- transposition table: ``tt_size`` slots (a power of two) indexed by ``zobrist & (size - 1)``, each
  one key word and one data word ``move | depth << 18 | bound << 26 | (score + 2^20) << 28``
  (bound 1 exact, 2 lower, 3 upper); always-replace;
- quiescence search: captures and promotions with stand-pat, minus captures that cannot bring the
  score within ``delta_margin`` of alpha (delta pruning); in check all evasions during its first
  ``qs_evasion_plies`` plies (mate is detected; deeper, the static score stands); in crazyhouse
  also drops that give check during its first ``qs_check_drop_plies`` plies (at most
  ``qs_max_drops`` per node), so drop mates are seen without letting the drop tree explode;
- move ordering (:mod:`search.ab_order`): TT move, captures by MVV-LVA, quiet checks (``order_checks``, off by default:
  measured neutral on mates and 20-30% slower), killers (two per ply), history heuristic, and at the
  root optionally the evaluator's priors (``root_priors``, when it serves ``POLICY_VALUE``);
- check extension (one ply when the side to move is in check, inside the nominal depth budget);
- null-move pruning (``null_move``), late-move reductions (``lmr``) and batched leaves for network
  evaluators (``batch_leaves``), each off by default, the measurements behind that in
  :mod:`search.ab_config`;
- the policy-guided switches for networks (``policy_order``, ``policy_prune``, ``qs_eval``: every node
  ordered by its policy, pruning by prior share, quiescence scored by material below its root), off by
  default, in :mod:`search.ab_config` and docs/minimax.md;
- the game's end is :meth:`board.position.Position.search_end`'s; draws inside the tree (a position
  repeated since the root or the game, the fifty-move rule in chess, insufficient material) score ``draw_score``.

Node accounting (see :mod:`search.base`): ``nodes`` counts positions visited (every call of the
negamax or quiescence function, the root included); ``evals`` counts calls of ``evaluator.score``.

Limits: depth, nodes, movetime, or a clock (the share of :func:`search.timeman.move_time`).  With none
set the search stops after ``default_nodes`` nodes.  Each :meth:`AlphaBeta.ask` runs one iteration
of iterative deepening and returns no leaves (the evaluator is called synchronously); an iteration
cut by a limit keeps the best root move found by fully searched root moves of that iteration.

The final move rule: the first move of the principal variation of the deepest search.
"""
from __future__ import annotations

import time
from typing import Final

from librt.vecs import vec
from mypy_extensions import i64, mypyc_attr

from board.position import END_LOST, END_NONE, END_WON, Position
from evaluators.base import POLICY_VALUE, SCORE, Evaluator, Leaf, cp_to_value, require, value_to_cp
from search.base import Limits, PVLine, SearchResult
from search.ab_config import EVAL_CLAMP, ABConfig, SearchConfigError
from search.ab_order import MAX_PLY, MOVE_MASK, MoveOrder, by_policy
from search.ab_quiesce import delta_pruned, has_pieces, material, noisy_moves
from search.ab_report import MATE, MATE_BOUND, extract_pv, mate_in_moves
from search.iterative import Budget, IterativeDeepening

INF: Final = 32000

BOUND_EXACT: Final = 1
BOUND_LOWER: Final = 2
BOUND_UPPER: Final = 3
_SCORE_OFFSET: Final = 1 << 20



class _Core(Budget):
    """The negamax proper (a native class: every field unboxed under mypyc)."""

    def __init__(self, evaluator: Evaluator, cfg: ABConfig) -> None:
        super().__init__(cfg.time_check_interval)
        self.evaluator = evaluator
        self.cfg = cfg
        size = cfg.tt_size if cfg.use_tt else 1
        self.tt_mask: i64 = size - 1
        self.tt_keys = vec[i64]([0] * size)
        self.tt_data = vec[i64]([0] * size)
        self.ordering = MoveOrder(cfg.killers, cfg.history, cfg.order_checks)
        self.seldepth = 0
        self.pos: Position = Position()
        self.zh = False
        # batch_leaves: scores sent ahead, by the position's raw state (what a network sees: the
        # zobrist key leaves out the counters and repetitions that its input planes hold)
        self.leaf_scores: dict[tuple[int, ...], int] = {}
        # policy_order: each position's policy (aligned with its legal moves), by raw state
        self.leaf_priors: dict[tuple[int, ...], list[float]] = {}
        self.policy = cfg.policy_order and POLICY_VALUE in evaluator.serves()
        # qs_eval = "root": the score and the material (both for the side to move there) of the
        # quiescence search's root, and its side to move
        self.qs_root = cfg.qs_eval == "root"
        self.q_score = 0
        self.q_material = 0
        self.q_turn = 0

    # ---------------------------------------------------------------- table

    def tt_probe(self, key: i64) -> i64:
        idx = key & self.tt_mask
        if self.tt_keys[idx] == key:
            return self.tt_data[idx]
        return 0

    def tt_store(self, key: i64, move: int, depth: int, bound: int, score: int, ply: int) -> None:
        if score >= MATE_BOUND:
            score += ply
        elif score <= -MATE_BOUND:
            score -= ply
        idx = key & self.tt_mask
        self.tt_keys[idx] = key
        self.tt_data[idx] = move | (depth << 18) | (bound << 26) | ((score + _SCORE_OFFSET) << 28)

    # ---------------------------------------------------------------- evaluation and ordering

    def static_eval(self) -> int:
        key = self.pos.raw_state() if self.cfg.batch_leaves or self.policy else ()
        if key in self.leaf_scores:
            s = self.leaf_scores[key]  # scored (and counted) with its siblings, or with its policy
        elif self.policy:
            s = self.evaluate_here(key, self.pos.legal_moves())
        else:
            self.evals += 1
            s = self.evaluator.score(self.pos)
        if s > EVAL_CLAMP:
            return EVAL_CLAMP
        if s < -EVAL_CLAMP:
            return -EVAL_CLAMP
        return s

    def evaluate_here(self, key: tuple[int, ...], moves: list[int]) -> int:
        """The evaluator's score and policy of the position (one call), kept by raw state."""
        ev = self.evaluator.evaluate([Leaf.of(self.pos, moves)])[0]
        self.evals += 1
        s = value_to_cp(ev.value, self.pos.variant)
        self.leaf_scores[key] = s
        self.leaf_priors[key] = [float(p) for p in ev.priors]
        return s

    def priors_here(self, moves: list[int]) -> list[float]:
        """policy_order: the policy of the position (an evaluator call unless kept)."""
        key = self.pos.raw_state()
        if key not in self.leaf_priors:
            self.evaluate_here(key, moves)
        return self.leaf_priors[key]

    def qs_stand_pat(self, qply: int) -> int:
        """Quiescence's static score: the evaluator's, or (qs_eval = "root") below its root the
        root's score plus the material won since."""
        if not self.qs_root:
            return self.static_eval()
        if qply == 0:
            s = self.static_eval()
            self.q_score, self.q_material, self.q_turn = s, material(self.pos, self.zh), self.pos.turn
            return s
        gain = material(self.pos, self.zh) - self.q_material if self.pos.turn == self.q_turn else -material(self.pos, self.zh) - self.q_material
        s = self.q_score + gain
        if self.pos.turn != self.q_turn:
            s = -s
        return max(-EVAL_CLAMP, min(EVAL_CLAMP, s))

    def score_children(self, moves: list[int]) -> None:
        """batch_leaves: score the positions after ``moves`` in one evaluator call (those not scored
        yet), counted as evaluator calls, kept for :meth:`static_eval`."""
        pos = self.pos
        keys: list[tuple[int, ...]] = []
        children: list[Position] = []
        for m in moves:
            pos.push(m)
            key = pos.raw_state()
            if key not in self.leaf_scores:
                keys.append(key)
                children.append(pos.copy())
            pos.pop()
        if children and self.policy:  # scores and policies in one call
            self.evals += len(children)
            evs = self.evaluator.evaluate([Leaf.of(c) for c in children])
            for i in range(len(keys)):
                self.leaf_scores[keys[i]] = value_to_cp(evs[i].value, pos.variant)
                self.leaf_priors[keys[i]] = [float(p) for p in evs[i].priors]
        elif children:
            self.evals += len(children)
            scores = self.evaluator.score_many(children)
            for i in range(len(keys)):
                self.leaf_scores[keys[i]] = scores[i]

    # ---------------------------------------------------------------- negamax

    def end_score(self, end: int, ply: int) -> int:
        """The score of a game's end (:meth:`~board.position.Position.search_end`) ``ply`` plies deep."""
        if end == END_LOST:
            return -MATE + ply
        if end == END_WON:
            return MATE - ply
        return self.cfg.draw_score

    def negamax(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        pos = self.pos
        self.nodes += 1
        if ply > self.seldepth:
            self.seldepth = ply
        self.check_limits()
        if self.aborted:
            return 0
        moves = pos.legal_moves()
        end = pos.search_end(len(moves) > 0, ply > 0)
        if end != END_NONE:
            return self.end_score(end, ply)
        in_check = pos.is_check()
        if in_check and self.cfg.check_extension and ply < MAX_PLY // 2:
            depth += 1
        if depth <= 0 or ply >= MAX_PLY - 2:
            if self.cfg.quiescence:
                return self.quiesce(alpha, beta, ply, 0, moves, in_check)
            return self.static_eval()
        key = pos.zobrist
        tt_move = 0
        if self.cfg.use_tt:
            data = self.tt_probe(key)
            if data:
                tt_move = int(data & MOVE_MASK)
                tdepth = int((data >> 18) & 255)
                if tdepth >= depth and ply > 0:
                    bound = int((data >> 26) & 3)
                    score = int(data >> 28) - _SCORE_OFFSET
                    if score >= MATE_BOUND:
                        score -= ply
                    elif score <= -MATE_BOUND:
                        score += ply
                    if (bound == BOUND_EXACT or (bound == BOUND_LOWER and score >= beta)
                            or (bound == BOUND_UPPER and score <= alpha)):
                        return score
        if (self.cfg.null_move and not in_check and depth >= 3 and -MATE_BOUND < beta < MATE_BOUND
                and pos.peek() != 0 and has_pieces(pos, self.zh) and self.static_eval() >= beta):
            pos.push(0)  # the null move
            score = -self.negamax(depth - 1 - self.cfg.null_move_r - (depth >= 7), -beta, 1 - beta, ply + 1)
            pos.pop()
            if self.aborted:
                return 0
            if score >= beta:
                return beta if score >= MATE_BOUND else score
        alpha0 = alpha
        best = -INF
        best_move = 0
        first = True
        low: list[bool] = []
        if self.policy:
            ordered, low = by_policy(moves, self.priors_here(moves), tt_move, self.cfg.policy_prune, in_check)
            if depth == 1 and low:  # policy pruning at the frontier
                ordered = [ordered[i] for i in range(len(ordered)) if not low[i]]
                low = []
        else:
            ordered = self.ordering.order(pos, moves, tt_move, ply)
        if depth == 1 and self.cfg.batch_leaves:
            self.score_children(ordered)  # each child's first act: its static score (stand pat)
        late = self.cfg.lmr_moves if self.cfg.lmr and depth >= 3 and not in_check else len(ordered)
        for i in range(len(ordered)):
            m = ordered[i]
            by_prior = len(low) > 0 and low[i]
            r = (i >= late and self.ordering.quiet(pos, m, ply)) or by_prior
            pos.push(m)
            r = r and (by_prior or not pos.is_check())
            if first or not self.cfg.pvs:
                score = -self.negamax(depth - 1, -beta, -alpha, ply + 1)
            else:
                if r:  # a reduced search first; the full one if it beats alpha
                    score = -self.negamax(depth - 2 - (depth >= 6 and i >= 4 * late), -alpha - 1, -alpha, ply + 1)
                if not r or score > alpha and not self.aborted:
                    score = -self.negamax(depth - 1, -alpha - 1, -alpha, ply + 1)
                if alpha < score < beta and not self.aborted:
                    score = -self.negamax(depth - 1, -beta, -alpha, ply + 1)
            pos.pop()
            if self.aborted:
                return 0
            first = False
            if score > best:
                best = score
                best_move = m
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        self.ordering.note_cutoff(pos, m, depth, ply)
                        break
        if self.cfg.use_tt:
            bound = BOUND_LOWER if best >= beta else (BOUND_EXACT if best > alpha0 else BOUND_UPPER)
            self.tt_store(key, best_move, depth, bound, best, ply)
        return best

    def quiesce(self, alpha: int, beta: int, ply: int, qply: int, moves: list[int], in_check: bool) -> int:
        """Quiescence search; ``moves`` are the legal moves of the node (already generated)."""
        pos = self.pos
        if ply > self.seldepth:
            self.seldepth = ply
        if in_check and qply < self.cfg.qs_evasion_plies and ply < MAX_PLY - 2:
            best = -INF
            if self.qs_root and qply == 0:
                self.qs_stand_pat(0)  # the reference the positions below are scored from
            candidates = self.ordering.order(pos, moves, 0, ply)
        else:
            best = self.qs_stand_pat(qply)
            if best >= beta or qply >= self.cfg.qs_max_ply or ply >= MAX_PLY - 2:
                return best
            if best > alpha:
                alpha = best
            candidates = self.ordering.order(pos, noisy_moves(pos, moves, qply, self.zh, self.cfg), 0, ply)
        if self.cfg.batch_leaves and best > -INF and not self.qs_root:  # the captures delta pruning lets through
            self.score_children([m for m in candidates if not delta_pruned(pos, m, best, alpha, self.cfg.delta_margin)])
        for m in candidates:
            if best > -INF and delta_pruned(pos, m, best, alpha, self.cfg.delta_margin):
                continue
            pos.push(m)
            self.nodes += 1
            self.check_limits()
            if self.aborted:
                pos.pop()
                return 0
            child_moves = pos.legal_moves()
            end = pos.search_end(len(child_moves) > 0, True)
            if end != END_NONE:
                score = -self.end_score(end, ply + 1)
            else:
                score = -self.quiesce(-beta, -alpha, ply + 1, qply + 1, child_moves, pos.is_check())
            pos.pop()
            if self.aborted:
                return 0
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best

@mypyc_attr(allow_interpreted_subclasses=True)
class AlphaBeta(IterativeDeepening):
    """Iterative-deepening PVS with an injected evaluator that serves ``SCORE``."""

    def __init__(self, evaluator: Evaluator, config: ABConfig | None = None) -> None:
        require(evaluator, SCORE)
        self.evaluator = evaluator
        self.config = config if config is not None else ABConfig()
        self.config.validate()
        self._core = _Core(evaluator, self.config)
        super().__init__(self._core)
        self._pos: Position | None = None
        self._depth = 0
        self._max_depth = self.config.max_depth
        self._best_move = 0
        self._best_score = 0
        self._pv: list[int] = []
        self._root_moves: list[int] = []
        self._lines: list[tuple[int, int, list[int]]] = []  # multi-PV: (move, score, pv), best first

    def new_game(self) -> None:
        """Forget the table, killers and history (they are kept between moves of one game)."""
        self._core = _Core(self.evaluator, self.config)

    def start(self, pos: Position, limits: Limits) -> None:
        require(self.evaluator, SCORE, pos.variant)
        core = self._core
        core.pos = pos
        core.zh = pos.has_pockets
        core.seldepth = 0
        core.leaf_scores = {}
        core.leaf_priors = {}
        core.ordering.clear_killers()
        self._pos = pos
        self._t0 = time.perf_counter()
        self._elapsed = 0.0
        self._depth = 0
        self._pv = []
        self._lines = []
        self._best_score = 0
        self._max_depth = min(self.config.max_depth, limits.depth) if limits.depth is not None else self.config.max_depth
        core.arm(pos, limits, self.config.default_nodes, self._t0)
        self._root_moves = pos.legal_moves()
        if not self._root_moves:
            raise SearchConfigError(f"no legal moves in {pos.fen()}")
        self._best_move = self._root_moves[0]
        self._pv = [self._best_move]
        if (self.config.root_priors or self.config.policy_order) and POLICY_VALUE in self.evaluator.serves():
            ev = self.evaluator.evaluate([Leaf.of(pos, self._root_moves)])[0]
            order = sorted(range(len(self._root_moves)), key=lambda i: -ev.priors[i])
            self._root_moves = [self._root_moves[i] for i in order]
            self._best_move = self._root_moves[0]
            self._pv = [self._best_move]
        self._done = False

    def _iterate(self) -> None:
        """One iteration at the next depth.  Multi-PV (``multipv`` = k > 1): the root's alpha is the
        k-th best score found so far instead of the best, so the k best moves get exact scores (the
        others fail low); the first k moves are searched with the full window."""
        core = self._core
        pos = core.pos
        depth = self._depth + 1
        k = self.config.multipv
        alpha = -INF
        beta = INF
        best = -INF
        best_move = 0
        top: list[int] = []  # the k best scores of this iteration, best first
        scored: list[tuple[int, int]] = []  # (score, move) of every root move searched completely
        # Previous best first, then the order of the last iteration.
        moves = self._root_moves
        core.nodes += 1
        for m in moves:
            pos.push(m)
            if len(scored) < k or not self.config.pvs:
                score = -core.negamax(depth - 1, -beta, -alpha, 1)
            else:
                score = -core.negamax(depth - 1, -alpha - 1, -alpha, 1)
                if score > alpha and not core.aborted:
                    score = -core.negamax(depth - 1, -beta, -alpha, 1)
            pos.pop()
            if core.aborted:
                break
            scored.append((score, m))
            if score > best:
                best = score
                best_move = m
            if k == 1:
                alpha = max(alpha, score)
            else:
                top = sorted(top + [score], reverse=True)[:k]
                alpha = top[k - 1] if len(top) == k else -INF
        self._elapsed = time.perf_counter() - self._t0
        if best_move:
            self._best_move = best_move
            self._best_score = best
            if not core.aborted:
                self._depth = depth
            if k == 1:  # the best first for the next iteration, the others in the order of this one
                self._root_moves = [best_move] + [m for m in self._root_moves if m != best_move]
            else:  # by this iteration's scores (stable), the moves a cut left unsearched last
                done = {m for _, m in scored}
                order = [m for _, m in sorted(scored, key=lambda sm: -sm[0])]
                self._root_moves = order + [m for m in self._root_moves if m not in done]
            if self.config.use_tt:
                core.tt_store(pos.zobrist, best_move, depth, BOUND_EXACT, best, 0)
            self._pv = self._extract_pv(best_move, depth)
            if k > 1:
                self._set_lines(scored, depth, not core.aborted)
        if core.aborted or depth >= self._max_depth:
            self._done = True
        elif best >= MATE_BOUND and (MATE - best) <= depth:
            self._done = True  # a mate found within the full-width depth cannot get shorter
        elif len(self._root_moves) == 1 and core.deadline > 0.0:
            self._done = True  # a single legal move under a clock: play it at once

    def _set_lines(self, scored: list[tuple[int, int]], depth: int, complete: bool) -> None:
        """The multi-PV lines: the k best of a complete iteration; after a cut iteration the last
        complete one's, with this iteration's best move first."""
        k = self.config.multipv
        if complete:
            ranked = sorted(scored, key=lambda sm: -sm[0])[:k]
            self._lines = [(m, s, self._extract_pv(m, depth)) for s, m in ranked]
            return
        rest = [line for line in self._lines if line[0] != self._best_move]
        self._lines = [(self._best_move, self._best_score, list(self._pv))] + rest[: k - 1]

    def _extract_pv(self, first: int, depth: int) -> list[int]:
        core = self._core
        return extract_pv(core.pos, first, depth + 8 if self.config.use_tt else 1, core.tt_keys, core.tt_data, core.tt_mask)

    def result(self) -> SearchResult:
        core = self._core
        score = self._best_score
        return SearchResult(
            best_move=self._best_move, value=cp_to_value(score, self._core.pos.variant), cp=score, mate=mate_in_moves(score),
            nodes=core.nodes, evals=core.evals,
            time=self._elapsed if self._done else time.perf_counter() - self._t0,  # live while searching
            depth=self._depth, seldepth=core.seldepth, pv=list(self._pv),
            lines=[PVLine(m, cp_to_value(s, core.pos.variant), s, mate_in_moves(s), list(pv)) for m, s, pv in self._lines])
