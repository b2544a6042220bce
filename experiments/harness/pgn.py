"""PGN output of stored games (python-chess writes the PGN; we only build the game tree).

Each game carries the Variant tag (python-chess adds it for crazyhouse), the opening's moves with a
``{book}`` comment, and on every engine move the comment cutechess writes, ``{score/depth time}``:
score in pawns from the mover's point of view (``+1.25``, or ``+M3``/``-M3`` for mates), the
search depth and the seconds the move took, e.g. ``{+0.31/9 0.412s}`` (nodes, evaluator calls and
the rest are in the database).  The Termination tag holds the PGN standard's value (``normal``,
``adjudication``, ``time forfeit``, ``rules infraction``) and TerminationDetails the harness's
reason; clock and movetime games carry ``TimeControl`` as cutechess writes it (``60+0.6``).
Crazyhouse pawn drops are written with their letter (``P@f3``), as cutechess reads them.

The PGN is an export of the store and is only ever appended to, never truncated: every game
carries ``[GameId "<database uid>/<game key>"]``; when a run starts, the games of the run that are
in the database but not yet in the PGN (a run killed between the database commit and the PGN
write) are appended, then each game is appended after its commit.  Several runs, even of
different databases, may share one PGN file.  A path that exists and is not a PGN (a results
database, say) is refused before any game (:func:`check`).  Each append is one ``write`` under an
exclusive ``flock``, so concurrent runs never interleave half games.
"""
from __future__ import annotations

import datetime as _dt
import fcntl
import os
import re
from pathlib import Path
from typing import Iterable

import chess
import chess.pgn

from board.variants import variant_of
from experiments.paths import OutputError, check_file
from experiments.harness.store import GameRecord, MoveStat
from experiments.harness.tasks import parse_limits

_GAME_ID = re.compile(r'^\[GameId "([^"]*)"\]', re.MULTILINE)
_TAG_PAIR = re.compile(r'^\[[A-Za-z0-9_]+\s+"(?:[^"\\]|\\.)*"\]\s*$')


def game_id(source: str, key: str) -> str:
    """The ``GameId`` of a game: the uid of its database and its key."""
    return f"{source}/{key}"


def check(path: str | Path, what: str = "PGN file") -> Path:
    """``path`` if a PGN can be appended to it: absent, empty, or a text file whose first line is a
    PGN tag pair (``[Event "..."]``); :class:`~experiments.paths.OutputError` otherwise (before any
    game).  A JSON array or a TOML table also starts with ``[``: the tag pair's form tells them apart.
    The folder that will hold a new file must exist or be creatable; a link to nowhere is refused."""
    p = check_file(path, what)
    if not p.exists():
        return p
    if not p.is_file():
        if p.is_char_device():
            return p  # /dev/null, a terminal: written to, never read back or truncated
        raise OutputError(f"refusing to write to {what} {str(p)!r}: it is not a regular file")
    if p.stat().st_size == 0:
        return p
    with open(p, "rb") as f:
        head = f.read(1 << 16)
    try:
        text = head.decode("utf-8") if len(head) < 1 << 16 else head[:-4].decode("utf-8", errors="ignore")
    except UnicodeDecodeError:
        text = "\0"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(("%", ";"))), "[")
    if "\0" in text or not _TAG_PAIR.match(first):
        raise OutputError(f"refusing to write to {what} {str(p)!r}: it exists and is not a PGN file")
    return p


def beside(db: str | Path) -> Path:
    """The PGN a run writes beside its database when no PGN is named (``runs/x.sqlite`` ->
    ``runs/x.pgn``).  The user never named that path, so a symbolic link planted there is refused
    (:class:`OutputError`) instead of followed into another file."""
    p = Path(db).with_suffix(".pgn")
    if p.is_symlink():
        raise OutputError(f"the PGN beside the database, {str(p)!r}, is a symbolic link: refusing to write through "
                          "it (remove it, or name a PGN with --pgn)")
    return p


def ids_in(path: str | Path) -> set[str]:
    """The ``GameId`` tags of the games already in a PGN file (empty if it does not exist or is
    not a regular file: a device is only written to)."""
    if not os.path.isfile(path):
        return set()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return set(_GAME_ID.findall(f.read()))
    except FileNotFoundError:
        return set()


def append_text(path: str | Path, text: str) -> None:
    """Append ``text`` under an exclusive lock (concurrent runs never interleave).  A write that
    fails part way (a full disk) is cut back to where it began, so no torn game stays in the file
    (its ``GameId`` would count as present and the next game would be glued onto it)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        regular = os.path.isfile(path)
        start = os.fstat(fd).st_size if regular else 0
        data = text.encode("utf-8")
        try:
            while data:
                n = os.write(fd, data)
                data = data[n:]
        except BaseException:
            if regular:
                try:
                    os.ftruncate(fd, start)
                except OSError:
                    pass
            raise
    finally:
        os.close(fd)


def move_comment(s: MoveStat) -> str:
    if s.mate is not None:
        score = f"{'+' if s.mate > 0 else '-'}M{abs(s.mate)}"
    elif s.cp is not None:
        score = f"{s.cp / 100:+.2f}"
    else:
        return ""
    return f"{score}/{s.depth} {s.time:.3f}s"


def termination(reason: str) -> str:
    """The PGN standard's ``Termination`` value of a stored reason (the reason itself goes into
    ``TerminationDetails``): ``adjudication``, ``time forfeit``, ``rules infraction`` (an illegal
    move, or an engine that crashed, hung or broke the protocol) or ``normal``."""
    if reason.startswith("adjudication"):
        return "adjudication"
    if reason.startswith("time forfeit") or reason.startswith("forfeit: overrun"):
        return "time forfeit"
    if reason.startswith("forfeit"):
        return "rules infraction"
    return "normal"


def time_control(settings: dict[str, object]) -> str | None:
    """cutechess's ``TimeControl`` of a player's stored limits (``tc=60+0.6`` -> ``60+0.6``,
    ``movetime=0.5`` -> ``0.5/move``), None for a node or depth limit."""
    lim = parse_limits(str(settings.get("limits", "")))
    if "tc" in lim:
        return f"{lim['tc'][0]:g}+{lim['tc'][1]:g}"
    if "movetime" in lim:
        return f"{lim['movetime']:g}/move"
    return None


def to_game(g: GameRecord, source: str = "") -> chess.pgn.Game:
    record = variant_of(g.variant)
    cls = record.board_class()
    start = cls() if g.opening_moves else cls(g.opening_fen)
    game = chess.pgn.Game()
    game.setup(start)
    date = _dt.datetime.fromtimestamp(g.started or g.finished or 0, _dt.timezone.utc)
    game.headers["Event"] = g.run
    game.headers["Site"] = "searchbench"
    game.headers["Date"] = date.strftime("%Y.%m.%d")
    game.headers["Round"] = str(g.pair + 1)
    game.headers["White"] = g.white
    game.headers["Black"] = g.black
    game.headers["Result"] = g.result
    game.headers["Termination"] = termination(g.reason)
    game.headers["TerminationDetails"] = g.reason
    tcs = {time_control(g.white_settings), time_control(g.black_settings)} - {None}
    if len(tcs) == 1:
        game.headers["TimeControl"] = str(tcs.pop())
    elif tcs:
        game.headers["WhiteTimeControl"] = str(time_control(g.white_settings) or "-")
        game.headers["BlackTimeControl"] = str(time_control(g.black_settings) or "-")
    game.headers["Opening"] = g.opening
    game.headers["PlyCount"] = str(len(g.opening_moves) + len(g.moves))
    game.headers["GameId"] = game_id(source, g.key)
    if record.pgn_tag:
        game.headers["Variant"] = record.pgn_tag
    node: chess.pgn.GameNode = game
    for uci in g.opening_moves:
        node = node.add_variation(chess.Move.from_uci(uci))
        node.comment = "book"
    for i, uci in enumerate(g.moves):
        node = node.add_variation(chess.Move.from_uci(uci))
        if i < len(g.move_stats):
            node.comment = move_comment(g.move_stats[i])
    return game


_PAWN_DROP = re.compile(r"(?<![A-Za-z0-9@])@([a-h][1-8])")


def pawn_drops_with_letter(movetext: str) -> str:
    """``@f3`` (python-chess's SAN of a pawn drop) as ``P@f3``, as cutechess and Fairy-Stockfish
    write and read it (cutechess rejects ``@f3`` in an opening file)."""
    return _PAWN_DROP.sub(r"P@\1", movetext)


def to_pgn(g: GameRecord, source: str = "") -> str:
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    text = to_game(g, source).accept(exporter)
    if variant_of(g.variant).pockets:
        head, sep, moves = text.partition("\n\n")  # tags (names may hold "@") stay as they are
        text = head + sep + pawn_drops_with_letter(moves)
    return text + "\n\n"


def sync(path: str | Path, games: Iterable[GameRecord], source: str) -> int:
    """Append the ``games`` (of the database ``source``) that the PGN does not hold yet; their count."""
    have = ids_in(path)
    missing = [g for g in games if game_id(source, g.key) not in have]
    if missing:
        append_text(path, "".join(to_pgn(g, source) for g in missing))
    return len(missing)


def append(path: str | Path, g: GameRecord, source: str = "") -> None:
    append_text(path, to_pgn(g, source))
