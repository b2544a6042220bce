"""``searchbench bench``: our code and its peers side by side in one run, as ratios (benchmarks are
not tests)."""
from __future__ import annotations

from board.variants import CHESS, CRAZYHOUSE

#: the shipped policy-value networks ``bench net`` measures (family, variant), and its batch sizes
NETWORKS: tuple[tuple[str, str], ...] = (("rise", CRAZYHOUSE.name), ("rise", CHESS.name), ("sixtyfour", CRAZYHOUSE.name),
                                         ("sixtyfour", CHESS.name))
BATCHES: tuple[int, ...] = (1, 8, 32, 64)
#: the other shipped networks, by the name the table gives them
GRAPHS: tuple[str, ...] = ("deepchess_crazyhouse/tower", "deepchess_crazyhouse/head", "deepchess_chess/tower",
                           "deepchess_chess/head", "bughouse_lazybug")
