"""Which shipped reports are stale, what playing each again costs, and the bookkeeping of playing
it again (``searchbench refresh``).

A report is *stale* when an engine it recorded runs differently today (:func:`reports.played.status`:
a default moved, the shipped network was replaced).  Its page names the command that wrote it (the
``Regenerate`` block: ``searchbench ablate|scale|tune|accept-int8 CONFIG``); :func:`find` lists each
stale report with that config (or says that it cannot be found) and an estimate of its cost: per row
of its table whose player moved (every row where the names cannot be matched), games x (plies a
game / 2) x (the two sides' seconds a move as recorded), the plies being the mean of the games its
page holds (:data:`PLIES` where it holds none), divided by the games that shared a worker's CPU
(``concurrency`` / ``workers`` of the config the page embeds, as the table was played; else of
today's config) where the budget is not a clock (pooled games each wait for the others' batches;
a timed row plays one game a worker). Where
the config now plays another number of games than the table holds (raised games, variants added or
dropped), the estimate is the table's mean cost a game times the config's games.

Playing a report again: its old finding is kept in the config's ``notes`` (:func:`keep_before`:
"**Before** ...", once, so a resumed refresh does not add it twice), a database whose games were
played by the old engines is moved aside (:func:`set_aside`: ``NAME.before-DATE.sqlite``, and a
tuning's own folder with it, :func:`set_aside_state`, so its SPSA starts afresh; a database
of today's engines, left by an interrupted refresh, is kept and resumed) and the games of the
pairings that did not move are copied back (an ablation's rows whose variant and baseline run as
they ran: the run finds them done), then the config's own command runs, which resumes after a kill
like every run.
"""
from __future__ import annotations

import csv
import datetime
import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from experiments.harness import ablate, scale, tune
from experiments.harness.store import GameRecord, Store
from reports import played
from reports.html import MARKDOWN_FILES, kept_games

#: the commands whose configs write a report folder
COMMANDS = ("ablate", "scale", "tune", "accept-int8")
#: plies a game where a report's page holds no game to count them from
PLIES = 120
#: the table columns that hold each side's seconds a move
SECONDS = ("seconds_per_move", "baseline_seconds_per_move")


@dataclass
class Stale:
    """A stale report: why, the command and config that wrote it, its games and estimated cost."""

    folder: Path
    why: list[str]
    command: str = ""
    config: Path | None = None
    missing: str = ""  # why the config cannot be used ("" where it can)
    finding: str = ""
    games: int = 0
    cpu_seconds: float = 0.0
    db: Path | None = None  # the config's database
    state: Path | None = None  # a tuning's own folder (runs/tune/NAME: its state and steps)

    @property
    def name(self) -> str:
        return self.folder.name


def _markdown(folder: Path) -> Path | None:
    return next((folder / m for m in MARKDOWN_FILES if (folder / m).is_file()), None)


def _command(md: str) -> str:
    """The report's own command: the first ``searchbench ...`` line of a fenced block."""
    m = re.search(r"```\n(searchbench [^\n]+)\n```", md)
    return m.group(1).strip() if m else ""


def _finding(md: str) -> str:
    m = re.search(r"^\*\*Finding\.\*\*\s*(.+)$", md, re.MULTILINE)
    return m.group(1).strip() if m else ""


def _config(command: str, root: Path, folder: Path) -> tuple[Path | None, Path | None, str, int, Path | None]:
    """(the config, its database, "", the games it plays: 0 for a tuning, a tuning's own folder) of a
    report's command, or (None, None, why it cannot be used, 0, None): no such command or file, or a
    config that writes another folder."""
    words = shlex.split(command)
    if len(words) < 3 or words[1] not in COMMANDS:
        return None, None, f"its page names no command that writes a report ({command or 'none'})", 0, None
    path = Path(words[2])
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        return None, None, f"its config {words[2]} is not here", 0, None
    state: Path | None = None
    try:
        if words[1] == "tune":
            t = tune.load(path)
            writes, db, planned = t.report_dir / t.settings.name, t.settings.db, 0
            state = t.out if t.out.is_absolute() else root / t.out
        else:
            run = scale.load(path) if words[1] == "scale" else ablate.load(path)
            writes, db, planned = run.out_dir, run.settings.db, len(run.tasks())
    except ValueError as e:  # ConfigError: one line
        return None, None, f"its config {words[2]} does not load ({str(e).splitlines()[0]})", 0, None
    if (writes if writes.is_absolute() else root / writes).resolve() != folder.resolve():
        return None, None, f"its config {words[2]} writes {writes}, not this folder", 0, None
    return path, (db if db.is_absolute() else root / db), "", planned, state


def _table(folder: Path) -> Path | None:
    return next((folder / n for n in ("ablation.csv", "elo_vs_nodes.csv") if (folder / n).is_file()), None)


def _table_games(folder: Path) -> int:
    """The games the report's table holds (an ablation row's games; a scale row's, each game in two
    rows), as :func:`estimate` counts them before a tuning's iterations."""
    table = _table(folder)
    if table is None:
        return 0
    with open(table, newline="") as f:
        parsed = [(row, _row_figures(row)) for row in csv.DictReader(f)]
    return int(round(sum(fig[0] if "axis" in row else fig[0] / 2 for row, fig in parsed if fig is not None)))


def _row_figures(row: dict[str, str]) -> tuple[float, float] | None:
    """(games, the two sides' seconds a move) of a table row; None where they do not parse."""
    try:
        return float(row.get("games") or 0), sum(float(row[c]) for c in SECONDS if row.get(c))
    except ValueError:
        return None


def _row_players(row: dict[str, str]) -> set[str]:
    """The player names an ablation row's games were stored under (its variant's and the baseline's,
    ``NAME@AXIS=BUDGET`` where the table has budgets)."""
    names = {row.get("variant") or "", "baseline"}
    if row.get("axis") and row.get("budget"):
        names |= {f"{n}@{row['axis']}={row['budget']}" for n in list(names)}
    return names - {""}


def estimate(folder: Path, config: Path | None, moved: set[str] | None = None) -> tuple[int, float]:
    """(games, CPU seconds) of playing the report's table again (see the module docstring): an
    ablation's rows are variant-against-baseline games, a scale table's rows one engine's games (each
    game in two rows); a tuning's iterations are added at its rows' mean cost a game.  With ``moved``
    (the players whose engines moved) only the rows they played count, where any row names one."""
    table = _table(folder)
    if table is None:
        return 0, 0.0
    kept = kept_games(folder / "index.html")[0] or []
    lengths = [len(g["uci"]) for g in kept if isinstance(g.get("uci"), list) and g["uci"]]
    plies = sum(lengths) / len(lengths) if lengths else PLIES
    cfg: dict[str, object] = {}
    if config is not None:
        try:
            cfg = tomllib.loads(config.read_text())
        except (OSError, ValueError):
            cfg = {}
    played_with = _played_config(folder) or cfg  # the seconds a move were pooled as the report was played
    share = max(1.0, _number(played_with.get("concurrency"), 1.0) / _number(played_with.get("workers"), 1.0))
    games, seconds = 0.0, 0.0
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    if moved and "iterations" not in cfg and any(_row_players(r) & moved for r in rows):
        rows = [r for r in rows if _row_players(r) & moved]
    for row in rows:
        figures = _row_figures(row)
        if figures is None:
            continue
        n, per_move = figures
        pooled = 1.0 if row.get("axis") in ("movetime", "tc") else share
        games += n if "axis" in row else n / 2
        seconds += n * plies / 2 * per_move / pooled
    if "iterations" in cfg and games:  # a tuning: its game pairs before the verification rows
        tuning = 2 * _number(cfg.get("iterations"), 0.0) * _number(cfg.get("pairs"), 1.0)
        seconds += tuning * seconds / games
        games += tuning
    return int(round(games)), seconds


def _played_config(folder: Path) -> dict[str, object]:
    """The config the report's page embeds (its ``Config:`` block: the one its table was played
    with), or {} where it has none or it does not parse."""
    md_path = _markdown(folder)
    m = re.search(r"^Config:\s*\n\s*```toml\n(.*?)\n```", md_path.read_text(), re.MULTILINE | re.DOTALL) \
        if md_path is not None else None
    try:
        return tomllib.loads(m.group(1)) if m else {}
    except ValueError:
        return {}


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def find(folders: list[Path], root: Path) -> list[Stale]:
    """Every stale report among ``folders`` (report folders, or folders holding them), in name order."""
    out: list[Stale] = []
    seen: set[Path] = set()
    for top in folders:
        candidates = [top] if (top / played.FILE).is_file() else sorted(p.parent for p in top.rglob(played.FILE))
        for folder in candidates:
            if folder in seen:
                continue
            seen.add(folder)
            state, why = played.status(folder)
            if state != "stale":
                continue
            md_path = _markdown(folder)
            md = md_path.read_text() if md_path is not None else ""
            s = Stale(folder, why, _command(md), finding=_finding(md))
            s.config, s.db, s.missing, planned, s.state = _config(s.command, root, folder)
            table_games = _table_games(folder)
            s.games, s.cpu_seconds = estimate(folder, s.config, {line.partition(": ")[0] for line in why})
            if planned and table_games and planned != table_games:  # the config plays more (or fewer) games
                s.cpu_seconds *= planned / table_games
                s.games = round(s.games * planned / table_games)
            out.append(s)
    return sorted(out, key=lambda s: str(s.folder))


def grouped(why: list[str], names: int = 3) -> list[str]:
    """``player: what moved`` lines with the same change joined (a tuning's hundreds of players):
    ``a, b, c and 397 more: what moved``."""
    by: dict[str, list[str]] = {}
    for line in why:
        name, sep, moved = line.partition(": ")
        by.setdefault(moved if sep else line, []).append(name if sep else "")
    out = []
    for moved, who in by.items():
        shown = ", ".join(who[:names]) + (f" and {len(who) - names} more" if len(who) > names else "")
        out.append(f"{shown}: {moved}" if any(who) else moved)
    return out


def before_text(s: Stale, day: str) -> str:
    """The paragraph that keeps a stale report's finding in its notes."""
    moved = "; ".join(grouped(s.why))
    return (f"**Before** (the report this one replaces, played again by `searchbench refresh` on {day} because "
            f"its engines had moved: {moved}): {s.finding or 'no finding recorded'}")


def keep_before(config: Path, paragraph: str) -> bool:
    """Put ``paragraph`` first in the config's top-level ``notes`` (added where there are none);
    False where it is there already (a resumed refresh)."""
    text = config.read_text()
    if paragraph in text:
        return False
    body = paragraph.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    m = re.search(r'^notes\s*=\s*"""\n?', text, re.MULTILINE)
    if m:
        text = text[: m.end()] + body + "\n\n" + text[m.end():]
    else:
        table = re.search(r"^\[", text, re.MULTILINE)
        at = table.start() if table else len(text)
        text = text[:at] + f'notes = """\n{body}\n"""\n\n' + text[at:]
    tomllib.loads(text)  # still a config
    config.write_text(text)
    return True


def current_games(games: list[GameRecord]) -> list[GameRecord]:
    """The games both of whose players run today as they ran then (no recorded setting or network
    of either moved: :func:`reports.played.differences` of that game alone)."""
    verdict: dict[str, bool] = {}
    out = []
    for g in games:
        sides = json.dumps([g.variant, g.white, g.white_settings, g.black, g.black_settings], sort_keys=True)
        if sides not in verdict:
            verdict[sides] = not played.differences(played.from_games([g]))
        if verdict[sides]:
            out.append(g)
    return out


def _aside(path: Path, stem: str, suffix: str, day: str) -> Path:
    """The first free ``STEM.before-DATE[-N]SUFFIX`` beside ``path``."""
    out = path.with_name(f"{stem}.before-{day}{suffix}")
    n = 1
    while out.exists():
        n += 1
        out = path.with_name(f"{stem}.before-{day}-{n}{suffix}")
    return out


def set_aside(db: Path, day: str) -> Path | None:
    """Move ``db`` aside where its games were played by engines that differ from today's (their
    stored settings, :func:`reports.played.differences`), and copy back the games of the pairings
    that did not move (:func:`current_games`: their keys are found done, so only the moved rows are
    played again); the new path, or None where it is kept (absent, or holding today's games: an
    interrupted refresh, resumed)."""
    if not db.is_file():
        return None
    with Store(str(db), readonly=True) as st:
        games = st.games()
    players = played.from_games(games)
    if games and not played.differences(players):
        return None
    out = _aside(db, db.stem, db.suffix, day)
    db.rename(out)
    for side in ("-wal", "-shm"):  # a write-ahead log left by a killed run goes with its database
        log = db.with_name(db.name + side)
        if log.is_file():
            log.rename(out.with_name(out.name + side))
    kept = current_games(games)
    if kept:
        with Store(str(db), lock=True) as st:
            for g in kept:
                g.id = None
                st.add(g)
    return out


def set_aside_state(state: Path, day: str) -> Path | None:
    """Move a tuning's own folder aside (``NAME.before-DATE``) where its games were set aside or are
    gone: a tuning played again starts afresh instead of resuming the old engine's θ; the new path,
    or None where there is no folder."""
    if not state.is_dir():
        return None
    out = _aside(state, state.name, "", day)
    state.rename(out)
    return out


def today() -> str:
    return datetime.date.today().isoformat()


__all__ = ["COMMANDS", "PLIES", "Stale", "before_text", "current_games", "estimate", "find", "grouped", "keep_before",
           "set_aside", "set_aside_state", "today"]
