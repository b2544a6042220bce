"""Bughouse MCTS on the shared driver (mypyc-compiled): LazyBug's two-board search (SPEC.md section 4)
as a walk cursor and two rules over :class:`search.mcts.MCTS`'s tree, batches and stoppers.

Notation (as :mod:`search.mcts`; LazyBug's rules as SPEC.md section 4 states them)
----------------------------------------------------------------------------------
A node ``s`` is a two-board walk position (:mod:`search.two_board_walk`: both boards, the pockets,
the sit, the simulated clocks); its edges ``(b, a)`` are the moves of both boards' sides to move,
board A's first, each board's ``sit`` last where it is allowed.

- Values are **team values**: ``W(s, b, a)`` sums the values backed up through the edge from the
  point of view of the team that moves on board ``b`` at ``s`` (the tree's two-board mode:
  :attr:`search.mcts_tree._Tree.teams`); ``Q = W / N``, ``fpu`` (-1) while ``N = 0``.
- ``P(s, b, a)``: the evaluator's priors renormalised per board.
- Selection (:mod:`search.two_board_rules`): a board, then LazyBug's PUCT over that board's edges
  with ``N(s, b)`` that board's visits; at the root our board with ``root_own_p``.
- Leaf value: the evaluator's, for the team to move on our board, turned into team 0's; the
  walk's end of game (mate on a board, a simulated flag, no board able to move) exact.
- Virtual loss, batches (``batch_size``), limits and their units, tree reuse between moves: the
  shared driver's (:mod:`search.base`: ``nodes`` the root's visits, reused ones included;
  ``playouts`` new simulations; ``evals`` evaluator calls).  Tree reuse follows the moves played
  since on either board (and our partner's sit) and keeps the node whose walk hash matches.

The final-move rule is the seat root's ``decide`` (the only place it is decided; each rule's
two-board form is named by its record in :data:`search.parts.PARTS`): for a root rule with no form
of its own (PUCT's) the generic seat (:class:`search.two_board_rules.SeatWrap`) around the rule,
with LazyBug's sit-or-move decision (:class:`search.two_board_rules.SeatRoot`) as the legacy tree of
its own applied it (``tests/oracles/bughouse_mcts.py``); with ``root_rule="gumbel"`` Gumbel's
(:class:`search.two_board_gumbel.SeatGumbel`: its plan spans the seat's budget).  Below the root a tree
rule's form (LazyBug's PUCT for "crazyara"), or the rule itself where it selects within a run of
edges (:meth:`search.mcts_rules.TreeRule.select_run`), inside LazyBug's board choice.

Switches of the shared driver that hold here:

- ``root_rule="gumbel"``, ``score_formula="gumbel"``: Gumbel's root and interior rules on one board
  at a time (:mod:`search.two_board_gumbel`; the preset ``gumbel`` turns both on with a fresh tree every
  move, as on one board);
- ``mcgs``: graph search (:mod:`search.mcgs`): a position reached by another order of the two
  boards' moves (with the same pockets and simulated clocks) shares one node
  (:meth:`search.two_board_walk.TwoBoardWalk.graph_key`).

The settings are the shared MCTS's (:class:`search.mcts_config.MCTSConfig`) with LazyBug's seat
among its parts (:func:`seat_config`: the seat's record in :data:`search.parts.PARTS`, game bughouse).
Off here (the seat's :meth:`~search.two_board_rules.LazyBugParams.refusal`): the solver, fix
checkmates, the transposition table, Q-value selection and Q-PV, check enhancement and urgency,
ε-greedy, multi-PV (each assumes one side to move a node, or values that alternate by ply); the time
manager's early and late stops are off by default (the seat gives a move its time).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Final, Sequence

from board.bughouse import SIT, BughouseBoard, BughouseGame, recent_move_ms, split_move, team_of, two_board_move
from board.variants import BUGHOUSE
from evaluators.base import POLICY_VALUE, Evaluation, Evaluator, Leaf, require
from search import parts
from search.base import Limits, SearchResult, step
from search.mcts import MCTS
from search.mcts_config import MCTSConfig, MCTSConfigError
from search.mcts_rules import TreeRule
from search.mcts_tree import EXPANDED, TERMINAL, _Tree
from search.two_board_rules import BoardChoice, LazyBugParams, SeatRoot, SeatWrap
from search.two_board_walk import TwoBoardWalk

#: the key of LazyBug's seat settings in a config's own table: a config holding it is a bughouse one
SEAT: Final = parts.part("seat", "lazybug").settings


@dataclass
class BughouseLimits:
    """When to stop (module docstring's units), and/or seconds (the server derives them from the clock)."""

    nodes: int | None = None
    movetime: float | None = None
    playouts: int | None = None
    evals: int | None = None


@dataclass
class BughouseResult:
    """The decision for our seat: ``move`` on ``board_id``, or ``move == SIT`` (wait)."""

    board_id: int
    move: int
    value: float = 0.0  # our team's value of the root
    nodes: int = 0
    evals: int = 0
    time: float = 0.0
    own_visits: int = 0
    other_visits: int = 0
    pv: list[tuple[int, int]] = field(default_factory=list)

    @property
    def sit(self) -> bool:
        return self.move == SIT


def seat_config(**settings: Any) -> MCTSConfig:
    """The bughouse seat's settings: the shared MCTS's with LazyBug's seat among the parts (its record
    in :data:`search.parts.PARTS`: its own settings, :class:`LazyBugParams`, its defaults for the
    shared ones, :data:`search.two_board_rules.LAZYBUG_DEFAULTS`, and what the walk refuses,
    :meth:`LazyBugParams.refusal`), with ``settings`` by their flat names."""
    return MCTSConfig.for_game(BUGHOUSE.name, **settings)


class TwoBoardMCTS:
    """LazyBug's bughouse MCTS for one seat (module docstring): it wraps a shared
    :class:`search.mcts.MCTS` driver (the two-board walk, LazyBug's rules, a team-value tree) and
    decides sit or move from its tree.  The seat's interface: ``start`` with the game and the board,
    ``ask``/``tell``, a :class:`BughouseResult`."""

    def __init__(self, evaluator: Evaluator, config: MCTSConfig | None = None,
                 rng: random.Random | None = None) -> None:
        cfg = config if config is not None else seat_config()
        if SEAT not in cfg.own:
            raise MCTSConfigError("a one-board config: the bughouse seat's is search.two_board.seat_config()")
        cfg.validate()
        require(evaluator, POLICY_VALUE, BUGHOUSE.name)
        self.config = cfg
        #: LazyBug's seat settings (the config's own table)
        self.lazybug: LazyBugParams = cfg.settings(LazyBugParams)
        self.evaluator = evaluator
        self.rng = rng if rng is not None else random.Random(0)
        tree_part, root_part = parts.part("tree", cfg.score_formula), parts.part("root", cfg.root_rule)
        run: TreeRule = parts.load(tree_part.two_board)(cfg, self.lazybug) if tree_part.two_board \
            else parts.load(tree_part.impl)(cfg)
        board_rule = BoardChoice(cfg, self.rng, run)
        own_p = self.lazybug.root_own_p
        self.seat_root: SeatRoot = parts.load(root_part.two_board)(cfg, board_rule, 0, own_p) if root_part.two_board \
            else SeatWrap(cfg, board_rule, 0, own_p, parts.load(root_part.impl)(cfg, run))
        #: the shared driver
        self.mcts = MCTS(evaluator, cfg, self.rng, rule=board_rule, root_rule=self.seat_root, teams=True, summary=False)
        self.walk: TwoBoardWalk | None = None

    @property
    def reused_visits(self) -> int:
        """The root's visits kept from the previous search (tree reuse)."""
        return self.mcts.reused_visits()

    @property
    def tree(self) -> _Tree:
        return self.mcts.tree

    @property
    def root(self) -> int:
        return self.mcts.root

    def new_game(self) -> None:
        self.mcts.new_game()

    # ------------------------------------------------------------------ setup

    def start(self, game: BughouseGame, board_id: int, limits: BughouseLimits | None = None,
              at_ms: int = -1, partner_sitting: bool = False,
              move_ms: Sequence[Sequence[int]] | None = None) -> None:
        """Search for the side to move on ``board_id`` of ``game`` (a private copy is walked).
        ``at_ms``: the game time now; ``partner_sitting``: our partner has declared a sit;
        ``move_ms``: recent thinking times per seat (default: from the game's move times)."""
        if board_id not in (0, 1):
            raise MCTSConfigError(f"board_id must be 0 or 1, got {board_id}")
        cfg = self.config
        partner = 1 - board_id
        own_team = team_of(board_id, game.boards[board_id].turn)
        sit_board = partner if partner_sitting and team_of(partner, game.boards[partner].turn) == own_team else -1
        times = move_ms if move_ms is not None else recent_move_ms(game, self.lazybug.recent_moves)
        dt = [self._average(times[s]) for s in range(4)]
        clocks = [game.time_left(s, at_ms) for s in range(4)] if game.timed else None
        walk = TwoBoardWalk(game.copy(), board_id, clocks, sit_board, dt)
        self.walk = walk
        self.seat_root.own_board = board_id
        self.seat_root.own_sign = walk.focus_sign()
        lim = limits or BughouseLimits()
        self.mcts.begin(walk, Limits(nodes=lim.nodes, playouts=lim.playouts, evals=lim.evals, movetime=lim.movetime),
                        [int(m) for m in walk.moves()])
        if not game.boards[board_id].has_legal_moves():  # nothing to choose: we wait
            self.mcts.stop()

    def _average(self, times: Sequence[int]) -> int:
        recent = list(times)[-self.lazybug.recent_moves:]
        return max(1, sum(recent) // len(recent)) if recent else self.lazybug.default_move_ms

    # ------------------------------------------------------------------ the search

    def ask(self) -> list[Leaf]:
        return self.mcts.ask()

    def tell(self, evaluations: Sequence[Evaluation]) -> None:
        self.mcts.tell(evaluations)

    def done(self) -> bool:
        return self.mcts.done()

    def stop(self) -> None:
        self.mcts.stop()

    # ------------------------------------------------------------------ the move

    def policy_target(self) -> list[tuple[int, float]]:
        """(two-board move, probability) over the root's edges, both boards': the root rule's
        training target (the driver's); the seat's move with probability 1 before the root is expanded."""
        if self.tree.nd_state[self.root] != EXPANDED:
            return [(self.choose_move(), 1.0)]
        return self.mcts.policy_target()

    def root_evaluated(self) -> bool:
        return self.root >= 0 and self.tree.nd_state[self.root] in (EXPANDED, TERMINAL)

    def _decision(self) -> tuple[int, int, int]:
        """``(move, own_visits, other_visits)`` (move on our board, or SIT): the seat root's rule
        (:meth:`search.two_board_rules.SeatRoot.decide`) over our board's edges."""
        tree = self.tree
        root = self.root
        walk = self.walk
        assert walk is not None
        b = walk.own_board
        if tree.nd_state[root] != EXPANDED:
            return SIT, 0, 0
        own = other = 0
        actions: list[int] = []  # our board's edges, the sit included
        e0 = int(tree.nd_edge0[root])
        for e in range(e0, e0 + int(tree.nd_nedges[root])):
            eb, m = split_move(int(tree.ed_move[e]))
            n = tree.edge_n(e)
            if eb != b:
                other += n
            else:
                actions.append(e)
                if m == SIT:
                    other += n  # our sit's visits count for the other board
                else:
                    own += n
        guard = self._allows_mate if self.lazybug.mate_guard else None
        return self.seat_root.decide(tree, root, actions, own, other, self.lazybug.sit_ratio, guard), own, other

    def _allows_mate(self, m: int) -> bool:
        """``mate_guard``: after ``m`` our board's opponent mates at once, with the root's pockets."""
        walk = self.walk
        assert walk is not None
        pos = BughouseBoard(walk.game.boards[walk.own_board].fen(), walk.own_board)
        pos.push(m)
        return pos.can_mate_at_once()

    def choose_move(self) -> int:
        """The seat root's decision (:meth:`search.two_board_rules.SeatRoot.decide`) as a two-board move."""
        assert self.walk is not None
        return two_board_move(self.walk.own_board, self._decision()[0])

    def _value(self, own_team: int, move: int) -> float:
        """Our team's value of the root: its edges' W over their visits, else the evaluator's; with
        Gumbel's root (whose plan spreads the visits over the actions considered) the Q of our
        board's action ``move``, once visited."""
        tree = self.tree
        root = self.root
        sign = 1.0 if own_team == 0 else -1.0
        e0 = int(tree.nd_edge0[root])
        walk = self.walk
        if walk is not None and tree.nd_state[root] == EXPANDED:
            q = self.seat_root.action_value(tree, root, two_board_move(walk.own_board, move))
            if q is not None:
                return q
        w = 0.0
        n = 0
        for e in range(e0, e0 + int(tree.nd_nedges[root])):
            if tree.edge_n(e) > 0:
                w += tree.edge_w(e) * tree.nd_sign[tree.ed_child[e]] * sign
                n += tree.edge_n(e)
        return w / n if n else tree.nd_value[root] * sign

    def _pv(self, depth: int = 8) -> list[int]:
        tree = self.tree
        pv: list[int] = []
        node = self.root
        while node >= 0 and tree.nd_state[node] == EXPANDED and len(pv) < depth:
            e = tree.most_visited(node)
            if tree.edge_n(e) == 0:
                break
            pv.append(int(tree.ed_move[e]))
            node = tree.node_after(e)
        return pv

    def _summary(self, move: int) -> SearchResult:
        """The result of playing ``move`` on our board (or SIT): value, PV, counters."""
        walk = self.walk
        assert walk is not None
        own_team = walk.team_to_move(walk.own_board)
        pv = self._pv()
        nodes, evals, seconds, seldepth = self.mcts.counters()
        return SearchResult(best_move=two_board_move(walk.own_board, move), value=self._value(own_team, move),
                            nodes=nodes, evals=evals, time=seconds, depth=len(pv), seldepth=seldepth, pv=pv)

    def result(self) -> BughouseResult:
        walk = self.walk
        if walk is None or not self.root_evaluated() and not self.mcts.done():
            raise MCTSConfigError("result() before the root was evaluated")
        move, own, other = self._decision()
        r = self._summary(move)
        return BughouseResult(walk.own_board, move, r.value, r.nodes, r.evals, r.time, own, other,
                              [split_move(m) for m in r.pv])

    def run(self, game: BughouseGame, board_id: int, limits: BughouseLimits | None = None,
            at_ms: int = -1, partner_sitting: bool = False,
            move_ms: Sequence[Sequence[int]] | None = None) -> BughouseResult:
        self.start(game, board_id, limits, at_ms, partner_sitting, move_ms)
        while not self.done():
            step(self.mcts, self.evaluator)
        return self.result()
