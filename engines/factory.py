"""Specs to engines: :func:`create`, the one factory of engines, one-board and bughouse.

A one-board variant gives an :class:`~engines.base.Engine` (ours: an evaluator and a search stepped by
:class:`~engines.ours.OurEngine`; an external program: :class:`~engines.external.ExternalEngine`); a
multi-board variant gives a seat (:func:`seat_for`: ours, our alpha-beta in a process of its own, or
an XBoard program).  It stands above the registry (names and spec strings to specs), the external
engines and the seats, and nothing below imports it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, overload

from board.variants import ALL as ALL_VARIANTS, BUGHOUSE, variant_of
from engines import ours
from engines.base import Engine, EngineError, EngineSpec
from engines.catalog import find_program, is_external
from engines.external import ExternalEngine
from engines.registry import (SEARCHES, SEAT_SEARCHES, EvaluatorPool, parsed, evaluator_for, resolve, search_class,
                              search_config)
from engines.seats import AlphaBetaSeat, OurSeat, Seat, SeatError, bughouse_spec, plays_bughouse
from engines.xboard_seat import XBoardSeat
from evaluators.base import Evaluator

EngineT = TypeVar("EngineT")


@overload
def create(spec: str | EngineSpec, variant: str, *, evaluator: Evaluator | None = None) -> Engine: ...


@overload
def create(spec: str | EngineSpec, variant: str, *, kind: type[EngineT], evaluator: Evaluator | None = None,
           seed: int = 1, pool: EvaluatorPool | None = None) -> EngineT: ...


def create(spec: str | EngineSpec, variant: str, *, kind: type[Any] = Engine, evaluator: Evaluator | None = None,
           seed: int = 1, pool: EvaluatorPool | None = None) -> Any:
    """A ready engine for ``variant`` (the one factory of engines, one-board and bughouse).

    One-board variants give an :class:`Engine`; ``evaluator`` (in-process engines only) shares an
    evaluator already loaded (the caller then owns it: closing the engine closes it too).
    A multi-board variant (bughouse) gives a seat, one player of the four
    (:class:`engines.seats.Seat`: ask for it with ``kind=Seat``): ours stepped by the four-seat server
    with the spec's nodes/playouts/evals/movetime, our alpha-beta in a process of its own, or an
    XBoard program; ``seed`` unless the spec sets one; seats of one ``pool`` with the same evaluator
    settings share one evaluator, so their leaves go into one batch. ``kind``: the class the caller
    expects (:class:`EngineError` if the variant makes another)."""
    spec = resolve(spec) if isinstance(spec, str) else parsed(spec)
    try:
        record = variant_of(variant)
    except ValueError:
        record = None
    if record is None or record.name != variant:
        raise EngineError(f"unknown variant {variant!r}; known: {', '.join(v.name for v in ALL_VARIANTS)}")
    engine: Any
    if record.boards > 1:
        engine = seat_for(spec, seed, pool if pool is not None else EvaluatorPool(), evaluator)
    elif is_external(spec):
        engine = ExternalEngine(spec, variant)
    else:
        engine = _create_ours(spec, variant, evaluator)
    if not isinstance(engine, kind):
        engine.close()
        raise EngineError(f"{spec.name} in {variant} is a {type(engine).__name__}, not an engine of kind {kind.__name__}")
    return engine


def _create_ours(spec: EngineSpec, variant: str, evaluator: Evaluator | None) -> Engine:
    search_cls = search_class(spec.search)
    entry = SEARCHES[spec.search]
    if spec.config is None:
        search_config(spec.search)  # raises: the module is missing
    if evaluator is None:
        evaluator = evaluator_for(spec, variant)
    if variant not in evaluator.variants:
        raise EngineError(f"evaluator {spec.evaluator!r} does not play {variant} "
                          f"(it plays {', '.join(sorted(evaluator.variants))})")
    if spec.settings.get("clock_moves") is not None or spec.settings.get("stall"):
        raise EngineError(f"{spec.name}: clock_moves and stall are options of bughouse seats; {variant} engines "
                          "take their time from the search's time manager")
    seed = int(spec.settings["seed"])
    config = spec.config
    ev = evaluator

    def make_search() -> Any:
        try:
            if entry.takes_rng:
                return search_cls(ev, config, ours.make_rng(seed))
            return search_cls(ev, config)
        except EngineError:
            raise
        except ValueError as e:  # EvaluatorError: the evaluator cannot serve this search
            raise EngineError(f"cannot pair {spec.evaluator} with {spec.search}: {e}") from None

    st = spec.settings
    return ours.OurEngine(spec, variant, evaluator, make_search, nodes=st["nodes"], depth=st["depth"],
                          movetime=st["movetime"], evals=st["evals"], playouts=st["playouts"])


def make_seat(spec: str | EngineSpec, seed: int, evaluators: EvaluatorPool) -> Seat:
    """A seat for an engine spec, refused unless it plays bughouse (:func:`create` makes it): a text
    is resolved here and names the seat as given; a resolved spec (a team's,
    :attr:`engines.seats.TeamSpec.resolved`) is used as it is, its name the seat's."""
    resolved = (dataclasses.replace(bughouse_spec(spec), name=spec) if isinstance(spec, str)  # named as given
                else plays_bughouse(spec))
    return create(resolved, BUGHOUSE.name, kind=Seat, seed=seed, pool=evaluators)


def seat_for(spec: EngineSpec, seed: int, evaluators: EvaluatorPool, evaluator: Evaluator | None = None) -> Seat:
    """The seat of a resolved spec (called by :func:`create` for bughouse): ours
    (``evaluator``, else the one of ``evaluators`` with its settings) or an XBoard program; ``seed``
    unless the spec sets one."""
    st = plays_bughouse(spec).settings
    if is_external(spec):
        unknown = [k for k in spec.options if k not in ("depth", "startup", "timeout")]
        if unknown:
            raise SeatError(f"{spec.name}: a bughouse XBoard seat takes depth and startup only, not {', '.join(unknown)}")
        startup = float(st["startup"]) if "startup" in spec.options or "timeout" not in spec.options else float(st["timeout"])
        return XBoardSeat(spec.name, [find_program(spec.evaluator)], startup, st["depth"], dict(spec.options))
    if spec.search == "alphabeta":
        return AlphaBetaSeat(spec.name, spec.name, st["nodes"], st["movetime"], st["depth"], dict(spec.options),
                             clock_moves=st["clock_moves"], stall=bool(st["stall"]))
    if spec.search not in SEAT_SEARCHES:
        raise SeatError(f"{spec.name}: a bughouse seat of ours runs {', '.join(SEAT_SEARCHES)} or alphabeta, "
                        f"not {spec.search}")
    if evaluator is None:
        evaluator = evaluators.get(spec, BUGHOUSE.name)
    return OurSeat(spec.name, evaluator, spec.config, st["nodes"], st["movetime"],
                   int(st["seed"]) if "seed" in spec.options else seed, dict(spec.options), st["playouts"], st["evals"],
                   st["clock_moves"], spec.search, bool(st["stall"]))
