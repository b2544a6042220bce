"""Opening suites: balanced start positions, read from EPD and generated with Fairy-Stockfish.

A suite is an EPD file, one opening a line::

    <board> <turn> <castling> <ep> id "crazyhouse-007"; ce 34; acd 12; c0 "e2e4 b8c6 g1f3";

``c0`` holds the moves from the variant's initial position that reach the line's position (UCI,
space-separated).  The harness replays them instead of setting the position from the EPD, because
Sjeng's ``setboard`` cannot read pockets (SPEC.md section 6) and because the PGN then shows the
whole game.  A line without ``c0`` starts from its EPD position.  ``ce`` is Fairy-Stockfish's score
for White in centipawns at depth ``acd`` when the line was generated.

How the shipped suites were generated (:func:`generate`, ``searchbench openings``): from the
initial position play ``plies`` half-moves; at each one ask Fairy-Stockfish (MultiPV 5, depth 8)
and pick uniformly among the moves within ``near_cp`` of its best; then score the end position at
depth 12 and keep it if ``|score| <= max_cp`` and it is new.  The seeded ``random.Random`` makes a
run reproducible for the same engine build.  See ``experiments/openings/README.md``.
"""
from __future__ import annotations

import random
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from board import Position, new_position
from board.bughouse import BughouseGame
from board.variants import CRAZYHOUSE, variant_of
from engines.base import EngineError
from engines.catalog import find_program
from experiments.harness.store import file_id
from experiments.paths import InputError, read_text, write_atomic

SUITE_DIR = Path(str(resources.files("experiments") / "openings"))  # package data, installed or not


class OpeningError(ValueError):
    """A missing or malformed opening suite (one-line message)."""


@dataclass(frozen=True)
class Opening:
    """A start position: a name, its FEN and the moves that reach it from the initial position."""

    name: str
    fen: str
    moves: tuple[str, ...] = ()
    score: int | None = None
    ops: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def position(self, variant: str) -> Position:
        """A fresh position of the opening: the initial position plus moves, or the FEN."""
        try:
            if self.moves:
                pos = new_position(variant)
                for uci in self.moves:
                    pos.push_uci(uci)
                return pos
            return new_position(variant, self.fen)
        except ValueError as e:
            raise OpeningError(f"opening {self.name!r}: {e}") from None


def default_suite(variant: str) -> Path:
    """The opening suite the variant's record names (:attr:`board.variants.Variant.openings`): a
    shipped suite by name, else the record's path."""
    name = variant_of(variant).openings
    shipped = SUITE_DIR / f"{name}.epd"
    return shipped if shipped.is_file() else Path(name)


def resolve_suite(path: str | Path) -> Path:
    """An opening suite's file: ``path`` where it exists; else a shipped suite by name
    (``crazyhouse-1000``, ``crazyhouse-1000.epd``) or by its path in a checkout
    (``experiments/openings/chess.epd``), so shipped configs run from any folder."""
    p = Path(path)
    if p.exists() or str(path) == "":
        return p
    name = p.name if p.name.endswith(".epd") else f"{p.name}.epd"
    shipped = SUITE_DIR / name
    if shipped.is_file() and (len(p.parts) == 1 or p.parent.as_posix().endswith("experiments/openings")):
        return shipped
    return p


def suite_id(path: str | Path) -> str:
    """The suite's identity for game keys: file name and content digest (not the path, so a run
    resumes from another directory; a changed suite gives new keys)."""
    try:
        return file_id(resolve_suite(path))
    except OSError as e:
        raise OpeningError(f"cannot read opening suite {str(path)!r}: {e.strerror or e}") from None


def _parse_ops(text: str, where: str) -> dict[str, str]:
    ops: dict[str, str] = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        key, _, value = part.partition(" ")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        ops[key] = value
    return ops


def parse_epd_line(line: str, variant: str, where: str = "") -> Opening:
    fields = line.split(None, 4)
    if len(fields) < 4:
        raise OpeningError(f"{where}: an EPD line needs board, turn, castling and en-passant fields")
    ops = _parse_ops(fields[4] if len(fields) > 4 else "", where)
    fen = " ".join(fields[:4]) + " " + ops.get("hmvc", "0") + " " + ops.get("fmvn", "1")
    moves = tuple(ops.get("c0", "").split())
    score = None
    if "ce" in ops:
        try:
            score = int(ops["ce"])
        except ValueError:
            raise OpeningError(f"{where}: ce must be an integer, got {ops['ce']!r}") from None
    op = Opening(ops.get("id", where), fen, moves, score, ops)
    pos = op.position(variant)  # validates the moves / FEN
    if moves and pos.fen().split()[:4] != fen.split()[:4]:
        got = " ".join(pos.fen().split()[:4])
        raise OpeningError(f"{where}: the c0 moves reach {got!r}, not the line's position")
    return op


def load_suite(path: str | Path, variant: str) -> list[Opening]:
    """All openings of an EPD file (blank lines and ``#`` comments skipped)."""
    try:
        one_board = variant_of(variant).position is not None
    except ValueError as e:
        raise OpeningError(str(e)) from None
    if not one_board:
        raise OpeningError(f"an opening suite holds one-board positions, not {variant}'s")

    p = resolve_suite(path)
    try:
        text = read_text(p, "opening suite")
    except InputError as e:
        raise OpeningError(str(e)) from None
    out: list[Opening] = []
    for no, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        out.append(parse_epd_line(line, variant, f"{p.name}:{no}"))
    if not out:
        raise OpeningError(f"opening suite {str(p)!r} has no positions")
    return out


def check_replaceable(path: str | Path) -> None:
    """Refuse to replace ``path`` unless it is absent, empty or an EPD suite (every line a comment or
    starting with a board of eight ranks): ``openings --out results.sqlite`` must not destroy a
    database.  :class:`OpeningError` (one line)."""
    p = Path(path)
    if not p.exists() or (p.is_file() and p.stat().st_size == 0):
        return
    try:
        text = read_text(p, "file")
    except InputError:
        text = "\0"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if "\0" in text or not lines or not all(ln.split()[0].count("/") >= 7 and len(ln.split()) >= 4 for ln in lines):
        raise OpeningError(f"refusing to overwrite {str(p)!r}: it exists and is not an EPD opening suite")


def write_suite(path: str | Path, text: str) -> None:
    """Write a suite whole: a temporary file beside it, then a rename (a failure leaves the old one)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, "opening suite")


def draw(openings: Sequence[Opening], pairs: int, seed: int, key: str) -> list[Opening]:
    """``pairs`` distinct openings for one pairing, drawn without replacement from the suite by a
    shuffle seeded with the run's seed and the pairing's ``key`` (its match id): every pairing plays
    ``pairs`` different openings, different pairings draw different ones, and a rerun draws the same.
    :class:`OpeningError` if the suite has fewer openings than the pairing has pairs."""
    if pairs > len(openings):
        raise OpeningError(f"{pairs} game pairs need {pairs} distinct openings, the suite has {len(openings)}: "
                           "give a larger suite or fewer games")
    rng = random.Random(f"{seed}:{key}")  # a str seed is hashed with SHA-512: the same in every process
    return [openings[i] for i in rng.sample(range(len(openings)), pairs)]


#: marks the keys of pairings whose openings come from :func:`draw` (games keyed before it differ)
DRAWN = "drawn"


def order(openings: Sequence[Opening], count: int, seed: int | None) -> list[Opening]:
    """``count`` openings: sequential (seed None) or a seeded shuffle, cycling through the suite."""
    ops = list(openings)
    if seed is not None:
        random.Random(seed).shuffle(ops)
    return [ops[i % len(ops)] for i in range(count)]


def bughouse_openings(pairs: int, seed: int, key: str, suite: str | Path | None = None) -> list[Opening]:
    """``pairs`` distinct bughouse start positions: board A from one crazyhouse opening and board B
    from another, drawn (as :func:`draw`, seeded by ``seed`` and ``key``) from the lines of the
    crazyhouse suite whose moves capture nothing and leave White to move. Without captures no piece
    crosses to the partner board, so each board keeps its line's balance (Fairy-Stockfish's score),
    the pockets stay empty and every seat, Sjeng's included, can be set up by ``setboard``; White to
    move on both boards is what Sjeng's custom start needs (:class:`engines.xboard_seat.XBoardSeat`).
    The opening's FEN is the two boards' (``A | B``); its name ``bughouse:<id A>+<id B>``."""
    path = Path(suite) if suite is not None else default_suite(CRAZYHOUSE.name)
    lines = []
    for op in load_suite(path, CRAZYHOUSE.name):
        pos = new_position(CRAZYHOUSE.name)
        quiet = len(op.moves) % 2 == 0 and len(op.moves) > 0
        for uci in op.moves:
            if not quiet:
                break
            quiet = not pos.is_capture(pos.parse_uci(uci))
            pos.push_uci(uci)
        if quiet:
            lines.append(op)
    combos = [(a, b) for a in range(len(lines)) for b in range(len(lines)) if a != b]
    if pairs > len(combos):
        raise OpeningError(f"{pairs} game pairs need {pairs} distinct bughouse openings, {path.name} gives "
                           f"{len(combos)} (from {len(lines)} capture-free lines): give a larger suite or fewer games")
    rng = random.Random(f"{seed}:{key}:bughouse")  # sample's draws for k pairs begin with those for fewer
    out = []
    for i in rng.sample(range(len(combos)), pairs):
        a, b = lines[combos[i][0]], lines[combos[i][1]]
        game = BughouseGame()
        for bid, op in enumerate((a, b)):
            for uci in op.moves:
                game.push(*game.parse(f"{'AB'[bid]}:{uci}"))
        out.append(Opening(f"bughouse:{a.name}+{b.name}", game.fen(), ()))
    return out


def format_epd(op: Opening, pos: Position, depth: int) -> str:
    epd = " ".join(pos.fen().split()[:4])
    parts = [f'id "{op.name}"']
    if op.score is not None:
        parts.append(f"ce {op.score}")
        parts.append(f"acd {depth}")
    if op.moves:
        parts.append(f'c0 "{" ".join(op.moves)}"')
    return epd + " " + "; ".join(parts) + ";"


def find_engine(name: str) -> str:
    """Path of an external engine binary (:func:`engines.catalog.find_program`)."""
    try:
        return find_program(name)
    except EngineError as e:
        raise OpeningError(str(e)) from None


def generate(variant: str, count: int, seed: int = 1, plies: tuple[int, int] = (6, 9),
             near_cp: int = 40, max_cp: int | None = None, depth: int = 12,
             engine: str = "fairy-stockfish", progress: bool = False) -> list[str]:
    """EPD lines of ``count`` balanced openings generated with Fairy-Stockfish (see module doc)."""
    import chess
    import chess.engine
    from tqdm import tqdm

    if max_cp is None:
        # Crazyhouse has a large first-move advantage: Fairy-Stockfish scores its initial position
        # about +90 cp at depth 12, so the chess bound (60) would reject nearly everything.
        max_cp = 150 if variant_of(variant).pockets else 60
    rng = random.Random(seed)
    cls = variant_of(variant).board_class()
    eng = chess.engine.SimpleEngine.popen_uci(find_engine(engine))
    lines: list[str] = []
    seen: set[str] = set()
    tries = 0
    bar = tqdm(total=count, desc=f"{variant} openings", unit="opening", disable=not progress, dynamic_ncols=True)
    try:
        eng.configure({"Threads": 1, "Hash": 32})
        while len(lines) < count:
            tries += 1
            if tries > 50 * count:
                raise OpeningError(f"only {len(lines)} balanced openings after {tries} tries")
            b = cls()
            n = rng.randint(plies[0], plies[1])
            ok = True
            for _ in range(n):
                infos = eng.analyse(b, chess.engine.Limit(depth=8), multipv=5)
                scored = [(i["pv"][0], i["score"].relative.score(mate_score=100000)) for i in infos if i.get("pv")]
                if not scored:
                    ok = False
                    break
                best = max(s for _, s in scored)
                choices = sorted((m for m, s in scored if s >= best - near_cp), key=lambda m: m.uci())
                b.push(rng.choice(choices))
                if b.is_game_over():
                    ok = False
                    break
            if not ok:
                continue
            key = b.epd()
            if key in seen:
                continue
            info = eng.analyse(b, chess.engine.Limit(depth=depth))
            cp = info["score"].white().score(mate_score=100000)
            if cp is None or abs(cp) > max_cp:
                continue
            seen.add(key)
            moves = tuple(m.uci() for m in b.move_stack)
            op = Opening(f"{variant}-{len(lines) + 1:03d}", "", moves, int(cp))
            lines.append(format_epd(op, op.position(variant), depth))
            bar.update(1)
            bar.set_postfix_str(f"{tries} lines tried", refresh=False)
    finally:
        bar.close()
        eng.quit()
    return lines
