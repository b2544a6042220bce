"""The two records of the POLICY_VALUE interface, :class:`Leaf` and :class:`Evaluation` (mypyc-compiled).

They are re-exported by :mod:`evaluators.base`, which documents the interface.  Compiled native
classes because a search creates one of each per simulation: a frozen dataclass costs about a
microsecond to build, a native class a few tens of nanoseconds.

A ``Leaf`` built by :meth:`Leaf.of` or the plain constructor holds ``state`` (a tuple) and ``moves``
(a list) as given.  One built by :meth:`Leaf.snapshot` (what MCTS uses) holds the same data as native
``vec[i64]`` arrays and turns them into the tuple and list the first time ``state`` or ``moves`` is
read (then keeps them), so an evaluator that needs only ``n_moves`` or ``move_vec`` (the classical
one, a zero-cost one) never pays for boxing sixty ints.  Either way the fields mean the same.
"""
from __future__ import annotations

from typing import Final, Sequence, SupportsFloat

from librt.vecs import vec
from mypy_extensions import i64

from board.position import Position


_ZEROS_16: Final = vec[i64]([0] * 16)
_NO_MOVES: list[int] = []  # a placeholder, replaced at once (never handed out)


class Leaf:
    """One position to evaluate: its raw state (``Position.raw_state()``), legal moves, variant."""

    variant: str

    def __init__(self, state: tuple[int, ...], moves: list[int], variant: str) -> None:
        self._state: tuple[int, ...] | None = state
        self._moves: list[int] | None = moves
        self._raw = vec[i64]()
        self._move_vec = vec[i64]()
        self._has_vec = False
        self.variant = variant

    @staticmethod
    def of(pos: Position, moves: list[int] | None = None) -> Leaf:
        return Leaf(pos.raw_state(), pos.legal_moves() if moves is None else moves, pos.variant)

    @staticmethod
    def snapshot(pos: Position, moves: vec[i64], reps: int) -> Leaf:
        """The leaf of ``pos`` with its legal moves as a vec; ``reps`` the number of earlier
        occurrences (0, 1 or 2+, as ``raw_state``) when the caller knows it, else -1 (counted)."""
        if reps < 0:
            reps = 2 if pos.is_repetition(3) else (1 if pos.is_repetition(2) else 0)
        raw = _ZEROS_16[0:16]
        raw[0] = pos.colors[0]
        raw[1] = pos.colors[1]
        pieces = pos.pieces
        for pt in range(1, 7):
            raw[1 + pt] = pieces[pt]
        raw[8] = pos.promoted
        raw[9] = pos.pockets
        raw[10] = pos.turn
        raw[11] = pos.castling
        raw[12] = pos.ep_square
        raw[13] = pos.halfmove_clock
        raw[14] = pos.fullmove_number
        raw[15] = reps
        leaf = Leaf((), _NO_MOVES, pos.variant)
        leaf._state = None
        leaf._moves = None
        leaf._raw = raw
        leaf._move_vec = moves
        leaf._has_vec = True
        return leaf

    @property
    def state(self) -> tuple[int, ...]:
        st = self._state
        if st is None:
            raw = self._raw
            st = tuple([int(raw[i]) for i in range(len(raw))])
            self._state = st
        return st

    @property
    def moves(self) -> list[int]:
        mv = self._moves
        if mv is None:
            v = self._move_vec
            mv = [int(v[i]) for i in range(len(v))]
            self._moves = mv
        return mv

    @property
    def raw_vec(self) -> vec[i64]:
        """The raw state as a native vec (for compiled encoders, :mod:`evaluators.leafbatch`)."""
        if len(self._raw) == 0:
            st = self.state
            raw = _ZEROS_16[0:len(st)] if len(st) <= 16 else vec[i64](st)
            for i in range(len(st)):
                raw[i] = st[i]
            self._raw = raw
        return self._raw

    @property
    def move_vec(self) -> vec[i64]:
        """The legal moves as a native vec (for compiled evaluators)."""
        if not self._has_vec:
            self._move_vec = vec[i64](self.moves)
            self._has_vec = True
        return self._move_vec

    @property
    def n_moves(self) -> int:
        if self._has_vec:
            return len(self._move_vec)
        return len(self.moves)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Leaf):
            return False
        return self.state == other.state and self.moves == other.moves and self.variant == other.variant

    def __hash__(self) -> int:
        return hash((self.state, tuple(self.moves), self.variant))

    def __repr__(self) -> str:
        return f"Leaf(state={self.state!r}, moves={self.moves!r}, variant={self.variant!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickle and copy as the plain record (state, moves, variant)."""
        return (Leaf, (self.state, list(self.moves), self.variant))


class Evaluation:
    """Answer to a :class:`Leaf`: value for the side to move and priors aligned with its moves."""

    value: float
    priors: Sequence[float]

    def __init__(self, value: SupportsFloat, priors: Sequence[float]) -> None:
        self.value = float(value)  # numpy scalars and ints too
        self.priors = priors

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Evaluation):
            return False
        return self.value == other.value and list(self.priors) == list(other.priors)

    def __hash__(self) -> int:
        return hash((self.value, tuple(self.priors)))

    def __repr__(self) -> str:
        return f"Evaluation(value={self.value!r}, priors={self.priors!r})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Evaluation, (self.value, self.priors))


__all__ = ["Evaluation", "Leaf"]
