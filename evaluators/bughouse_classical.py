"""The classical bughouse evaluator: material on both boards and in all pockets, partner flows.

Leaves: the bughouse leaves of :mod:`board.bughouse` (two boards' raw states, the focus board, the
four clocks; two-board moves with a sit move per board).

Answer: ``Evaluation.value`` in [-1, 1] for the **team** of the focus board's side to move (team
as :mod:`board.bughouse`: ``board_id ^ color``), and ``Evaluation.priors`` aligned with
``Leaf.moves`` that sum to 1 **over each board's moves** (two independent distributions: the
search picks a board first, then a move on it).

Value
-----
Per board ``b`` with ``S_b`` the crazyhouse score for White of :func:`evaluators.classical.white_score_raw`
(material on the board, pockets worth 20% more, piece-square tables, king safety with drop
danger), the *flow* ``F_b``: the best immediate capture gain of the side to move on ``b``
(``victim on the board + victim in the partner's pocket - (attacker + attacker in the opponent's
partner's pocket if the square is defended)``, at least 0), the material that is about to flow to
its partner's pocket. For team ``T`` (colour ``T ^ b`` on board ``b``)::

    score_T(b) = ±S_b + FLOW_WEIGHT · (±F_b)         (+ when T plays White / moves on b)
    v_T(b)     = 2 / (1 + e^(-score_T(b) / 400)) - 1  (the classical evaluator's logistic)
    value_T    = (v_T(A) + v_T(B)) / 2                (LazyBug: mean of the two boards' values)

Material in every pocket of both boards is counted (each board's ``S`` holds its own pockets),
so a capture counts twice for the capturing team: the piece leaves the opponent's board and joins
the partner's pocket.

Priors
------
Per board: softmax at temperature 100 cp of :func:`evaluators.classical.move_scores` (capture gain,
PST gain, promotions, en-prise loss, checks) over the legal moves; if the board's moves include
its sit move, the sit move gets ``SIT_PRIOR`` (0.01, LazyBug) and the others share ``1 - SIT_PRIOR``.
"""
from __future__ import annotations

from typing import Final, Sequence

from board.bitboards import BB_SQUARES
from board.bughouse import RAW_LEN, SIT, SIT_PRIOR, STATE_LEN, BughouseBoard, split_move
from board.position import Position
from board.variants import BUGHOUSE
from evaluators.scale import cp_to_value
from evaluators.base import POLICY_VALUE, SCORE, Evaluation, Evaluator, EvaluatorError, Leaf
from evaluators.classical import (
    KD_WEIGHT, PRIOR_TEMPERATURE, VALUE_SCALE, ZH_POCKET_VALUES, ZH_VALUES, king_danger_score, least_attacker,
    move_scores, softmax, stm_score, white_score_raw,
)

FLOW_WEIGHT: Final = 0.5


def _piece_on(state: tuple[int, ...], sq: int) -> int:
    bit = BB_SQUARES[sq]
    for pt in range(1, 7):
        if state[1 + pt] & bit:
            return pt
    return 0


def capture_flow(state: tuple[int, ...], moves: Sequence[int]) -> int:
    """``F``: the best immediate capture gain (centipawns, >= 0) of the side to move among ``moves``
    (plain moves of this board), counting the captured piece twice (off the opponent's board, into
    the partner's pocket) and a defended attacker's loss twice too."""
    us = state[10]
    them = us ^ 1
    occ = state[0] | state[1]
    best = 0
    for m in moves:
        if m >> 15:
            continue
        frm = m & 63
        to = (m >> 6) & 63
        if not state[them] & BB_SQUARES[to]:
            continue
        victim = _piece_on(state, to)
        attacker = _piece_on(state, frm)
        gain = int(ZH_VALUES[victim]) + int(ZH_POCKET_VALUES[victim])
        new_occ = (occ & ~BB_SQUARES[frm]) | BB_SQUARES[to]
        if attacker != 6 and least_attacker(state, them, to, new_occ):
            gain -= int(ZH_VALUES[attacker]) + int(ZH_POCKET_VALUES[attacker])
        if gain > best:
            best = gain
    return best


def team_board_score(state: tuple[int, ...], board_id: int, team: int, flow: int,
                     flow_weight: float = FLOW_WEIGHT) -> float:
    """``score_T(b)`` in centipawns (see the module docstring)."""
    s = white_score_raw(state, True)
    color = team ^ board_id
    if color != 0:
        s = -s
    mover_team = board_id ^ state[10]
    return float(s) + flow_weight * (flow if mover_team == team else -flow)


class BughouseClassicalEvaluator(Evaluator):
    """Classical two-board value (team to move) and per-board priors with the sit move."""

    variants = frozenset({BUGHOUSE.name})

    def __init__(self, value_scale: float = VALUE_SCALE, prior_temperature: float = PRIOR_TEMPERATURE,
                 sit_prior: float = SIT_PRIOR, flow_weight: float = FLOW_WEIGHT) -> None:
        if value_scale <= 0 or prior_temperature <= 0 or not 0.0 < sit_prior < 1.0 or flow_weight < 0:
            raise EvaluatorError("bughouse evaluator: scales must be positive and the sit prior in (0, 1)")
        self.name = "bughouse-classical"
        self.variants = frozenset({BUGHOUSE.name})
        self.value_scale = value_scale
        self.prior_temperature = prior_temperature
        self.sit_prior = sit_prior
        self.flow_weight = flow_weight

    def serves(self) -> frozenset[str]:
        return frozenset({POLICY_VALUE})

    def evaluate(self, leaves: Sequence[Leaf]) -> list[Evaluation]:
        return [self.evaluate_one(leaf) for leaf in leaves]

    def evaluate_one(self, leaf: Leaf) -> Evaluation:
        st = leaf.state
        if leaf.variant != BUGHOUSE.name or len(st) != STATE_LEN:
            raise EvaluatorError(f"{self.name} evaluates two-board bughouse leaves "
                                 f"(state of {STATE_LEN} ints), got a {leaf.variant} leaf of {len(st)}")
        states = (st[:RAW_LEN], st[RAW_LEN:2 * RAW_LEN])
        focus = st[2 * RAW_LEN]
        per_board: list[list[int]] = [[], []]
        for bm in leaf.moves:
            b, m = split_move(bm)
            per_board[b].append(m)
        team = focus ^ states[focus][10]
        value = 0.0
        for b in range(2):
            flow = capture_flow(states[b], [m for m in per_board[b] if m])
            cp = team_board_score(states[b], b, team, flow, self.flow_weight)
            value += cp_to_value(cp * (VALUE_SCALE / self.value_scale), BUGHOUSE.name)
        value /= 2.0
        board_priors: list[list[float]] = []
        for b in range(2):
            real = [m for m in per_board[b] if m]
            p = softmax(move_scores(states[b], real, True), self.prior_temperature)
            has_sit = len(real) != len(per_board[b])
            if has_sit:
                p = [x * (1.0 - self.sit_prior) for x in p] if real else []
            board_priors.append(p)
        priors: list[float] = []
        idx = [0, 0]
        for bm in leaf.moves:
            b, m = split_move(bm)
            if m == SIT:
                priors.append(self.sit_prior if per_board[b] != [0] else 1.0)
            else:
                priors.append(board_priors[b][idx[b]])
                idx[b] += 1
        return Evaluation(value, priors)


# ---------------------------------------------------------------------------- one board alone

def lone_board(fen: str, board_id: int, phantoms: bool = False) -> BughouseBoard:
    """One board of a bughouse game to search alone (the alpha-beta bughouse seats): the board at
    ``fen`` (its pockets included), linked to a stand-in partner board whose pockets collect what
    each side captures from here on. A capture on this board feeds the capturer's partner, who plays
    the other colour on the other board, so the stand-in's pocket of colour ``c`` holds what the
    side of colour ``1 - c`` has sent its partner; it is undone with the capture (push/pop).
    ``phantoms`` (Sjeng's bughouse rule): the opponent of the side to move also holds one piece of
    each type missing from its pocket, since its partner may hand it any piece at any moment; the
    search then sees the drops that could come, and the moves it returns are legal all the same."""
    pos = BughouseBoard(fen, board_id)
    pos.link(BughouseBoard(fen, 1 - board_id))
    partner = pos.partner
    assert partner is not None
    partner.pockets = 0
    if phantoms:
        them = pos.turn ^ 1
        for pt in range(1, 6):
            if pos.pocket_count(them, pt) == 0:
                pos._pocket_add(them, pt, 1)
    return pos


def sent_to_partners(pos: Position) -> int:
    """Centipawns the side to move has sent its partner since the root of :func:`lone_board`, less
    what the opponent has sent theirs (the pocket values of the stand-in partner board); 0 for a
    board without one."""
    partner = getattr(pos, "partner", None)
    if partner is None:
        return 0
    us = pos.turn
    s = 0
    for pt in range(1, 6):
        s += int(ZH_POCKET_VALUES[pt]) * (partner.pocket_count(us ^ 1, pt) - partner.pocket_count(us, pt))
    return s


class BoardScoreEvaluator(Evaluator):
    """One bughouse board scored alone for alpha-beta (``SCORE``, side to move): the classical
    crazyhouse score of the board and its pockets (:func:`evaluators.classical.stm_score`: pockets
    worth 20% more than the board, king safety with drop danger from the opponent's pocket) plus
    ``flow_weight`` times the material sent to the partners since the search's root
    (:func:`sent_to_partners`): a capture takes the piece off the opponent's board *and* hands it to
    our partner, as the two-board evaluator counts it (``FLOW_WEIGHT``)."""

    variants = frozenset({BUGHOUSE.name})

    #: the name the registry knows this evaluator by
    registry_name = "bughouse-board"
    #: the opponent's phantom pieces in the searched board (:func:`lone_board`)
    phantoms = False
    #: centipawns per unit of :func:`evaluators.classical.king_danger` (0: none)
    king_danger = 0

    def __init__(self, flow_weight: float = FLOW_WEIGHT) -> None:
        if flow_weight < 0:
            raise EvaluatorError("bughouse board evaluator: flow_weight must be >= 0")
        self.name = self.registry_name
        self.variants = frozenset({BUGHOUSE.name})
        self.flow_weight = flow_weight

    def board(self, fen: str, board_id: int) -> BughouseBoard:
        """The board as this evaluator's searches see it: :func:`lone_board`."""
        return lone_board(fen, board_id, self.phantoms)

    def serves(self) -> frozenset[str]:
        return frozenset({SCORE})

    def score(self, pos: Position) -> int:
        s = stm_score(pos) + int(self.flow_weight * sent_to_partners(pos))
        return s + king_danger_score(pos, self.king_danger) if self.king_danger else s


class PhantomBoardScoreEvaluator(BoardScoreEvaluator):
    """:class:`BoardScoreEvaluator` on a board where the opponent also holds one piece of each type
    it lacks (Sjeng's phantom pieces: :func:`lone_board` with ``phantoms``)."""

    registry_name = "bughouse-board-phantoms"
    phantoms = True


class KingDangerBoardScoreEvaluator(BoardScoreEvaluator):
    """:class:`BoardScoreEvaluator` plus the king danger of both kings
    (:func:`evaluators.classical.king_danger_score`: attacked squares next to the king, holes where
    a drop lands next to it, unguarded knight-check squares), ``king_danger`` centipawns a unit: by
    default half the weight fitted to Fairy-Stockfish's crazyhouse scores (``KD_WEIGHT``,
    ``searchbench fit-king-danger``); an engine spec sets it (``bughouse-ab-kd:king_danger=69``; the
    registry's ``bughouse-board-kd-fit`` and ``-kd-quarter`` are this class at the fitted weight and
    a quarter of it). Against the team without king danger at equal nodes
    (``reports/bughouse-ab-kd/``) the fitted weight scored -35 [-150, +73], half of it +53 [-79, +202]
    and a quarter +168 [+82, +280]: the fit predicts an engine's score, and a search wants less of it."""

    registry_name = "bughouse-board-kd"

    def __init__(self, king_danger: int = KD_WEIGHT // 2, flow_weight: float = FLOW_WEIGHT) -> None:
        if king_danger < 0:
            raise EvaluatorError("bughouse board evaluator: king_danger must be >= 0")
        super().__init__(flow_weight)
        self.king_danger = king_danger
