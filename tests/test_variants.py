"""The variant record (board/variants.py): each variant's facts agree with the rules core and with
python-chess, names and aliases resolve, an unknown name is one clear line."""
from __future__ import annotations

import pytest

import board
from board.bughouse import BughouseGame
from board.variants import ALL, BUGHOUSE, CHESS, CRAZYHOUSE, ONE_BOARD, POCKET_VARIANTS, of_pgn_tag, of_python_board, variant_of


def test_one_board_records_agree_with_the_rules_core_and_python_chess() -> None:
    assert tuple(v.name for v in ONE_BOARD) == board.VARIANTS
    for v in ONE_BOARD:
        pos = board.new_position(v.name)
        assert pos.variant == v.name and pos.fen() == v.start_fen
        assert isinstance(pos, board.CrazyhousePosition) == v.pockets
        b = v.python_board()
        assert b.fen() == v.python_board(v.start_fen).fen()
        assert of_python_board(b) is v
        assert b.uci_variant == v.uci_name


def test_bughouse_record() -> None:
    assert BUGHOUSE.boards == 2 and BUGHOUSE.pockets and BUGHOUSE not in ONE_BOARD
    assert BughouseGame().fen() == BUGHOUSE.start_fen
    assert POCKET_VARIANTS == {"crazyhouse", "bughouse"}


def test_names_aliases_and_tags() -> None:
    assert variant_of("Crazyhouse") is CRAZYHOUSE and variant_of("zh") is CRAZYHOUSE
    assert variant_of("standard") is CHESS and variant_of("normal") is CHESS
    assert of_pgn_tag("") is CHESS and of_pgn_tag("Standard") is CHESS and of_pgn_tag("Crazyhouse") is CRAZYHOUSE
    assert [v.pgn_tag for v in ALL] == ["", "Crazyhouse", "Bughouse"]
    with pytest.raises(ValueError, match="unknown variant 'atomic'; known: chess, crazyhouse, bughouse"):
        variant_of("atomic")
