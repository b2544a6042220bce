"""The SQLite store: round trip, unique keys, resume keys, bad input."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from experiments.harness.store import GameRecord, MoveStat, Store, StoreError


def rec(key: str, result: str = "1-0") -> GameRecord:
    return GameRecord(key=key, run="r", match="m", pair=3, variant="crazyhouse", white="a", black="b",
                      white_settings={"engine": "a", "limits": "nodes=8"}, black_settings={"engine": "b"},
                      opening="o1", opening_fen="fen", opening_moves=["e2e4", "e7e5"], moves=["g1f3", "b8c6"],
                      result=result, reason="checkmate", move_stats=[MoveStat(8, 0.01, 35, None, 3, 8),
                                                                     MoveStat(9, 0.02, None, -2, 4, 9)],
                      seed=42, versions={"python": "3"}, started=1.0, finished=2.0)


def test_round_trip_and_never_twice(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    with Store(db) as st:
        assert st.add(rec("k1")) and st.add(rec("k2", "1/2-1/2"))
        assert not st.add(rec("k1", "0-1"))  # a key is stored once
        assert len(st) == 2 and st.done_keys() == {"k1", "k2"}
    with Store(db) as st:  # reopened: everything committed
        g = st.games()[0]
        assert (g.key, g.result, g.moves, g.opening_moves, g.white_settings) == \
            ("k1", "1-0", ["g1f3", "b8c6"], ["e2e4", "e7e5"], {"engine": "a", "limits": "nodes=8"})
        assert g.move_stats == rec("k1").move_stats and g.seed == 42 and g.plies == 2
        assert g.score_for("a") == 1.0 and g.score_for("b") == 0.0
        assert [x.key for x in st.games(run="r", match="m")] == ["k1", "k2"] and st.games(run="other") == []
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_bad_input(tmp_path: Path) -> None:
    with Store(tmp_path / "x.sqlite") as st:
        with pytest.raises(StoreError, match="result"):
            st.add(rec("k", "*"))
    bad = tmp_path / "notadb.sqlite"
    bad.write_text("this is not a database" * 100)
    with pytest.raises(StoreError):
        Store(bad)
    with pytest.raises(StoreError):
        Store(tmp_path)  # a directory
    with pytest.raises(KeyError):
        rec("k").score_for("c")


def test_move_stats_are_stored_with_named_fields_and_old_arrays_still_read(tmp_path: Path) -> None:
    """move_stats is queryable by name (json_extract), and a database written before the names read alike."""
    st = MoveStat(nodes=800, time=0.12345, cp=-31, mate=None, depth=7, evals=612)
    assert MoveStat.from_json(st.to_json()) == MoveStat(800, 0.1235, -31, None, 7, 612)
    assert MoveStat.from_json([800, 0.1235, -31, None, 7, 612]) == MoveStat.from_json(st.to_json())
    db = tmp_path / "s.sqlite"
    with Store(db) as store:
        g = rec("k1")
        g.move_stats = [st, MoveStat(nodes=5, cp=None, mate=3)]
        store.add(g)
    con = sqlite3.connect(db)
    row = con.execute("SELECT json_extract(move_stats, '$[0].evals'), json_extract(move_stats, '$[1].mate') "
                      "FROM games").fetchone()
    assert row == (612, 3)
    con.execute("UPDATE games SET move_stats = '[[800, 0.1235, -31, null, 7, 612]]'")
    con.commit()
    con.close()
    with Store(db, readonly=True) as store:
        assert store.games()[0].move_stats == [MoveStat(800, 0.1235, -31, None, 7, 612)]
