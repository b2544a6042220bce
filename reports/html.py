"""A report's ``index.html``: one self-contained page (no network: the script, the data and the
static figures are inlined) beside the Markdown that the same command writes.

- The Markdown (``elo_vs_nodes.md``, ``ablation.md``, an rl loop's ``README.md``) rendered, every
  table sortable by a click on its header, and every row that names a player linked to its games.
- The figures interactive in place of their PNGs (:func:`scale_chart`, :func:`ablation_chart`,
  :func:`rl_charts`, :func:`ratings_chart`): Elo against the cost axes (nodes, evaluator calls,
  seconds a move; the loop's round, self-play games, CPU hours), hovering a mark gives the player,
  its interval, games, score and costs; a click on a legend entry hides a family; a click on a
  mark lists its games; anchors as dashed lines.
- The games (from the results database, when there is one): a list filtered by player, and a
  board that steps through a game (drops and pockets in crazyhouse) with each move's stored
  statistics (nodes, evaluator calls, score, depth, time) charted beside it and the PGN to copy;
  bughouse games on both boards, each capture going to the partner's pocket.

``reports/page.js`` draws the page in the browser (our own code, the project's licence).  The
positions are replayed in the browser from the start FEN and the UCI moves; the SAN of every move
is computed here with python-chess.  ``reports/index.html`` (:func:`index_page`) lists every report
with its one-line finding.  ``searchbench report`` builds a page from a report folder or from any
results database.
"""
from __future__ import annotations

from board.variants import variant_of
from reports import forest, paradigms, played

import base64
import csv
import html
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

PAGE = "index.html"
#: games embedded in one page at most (about 1.4 kB each; the rest are counted, and stay in the database)
MAX_GAMES = 1500
MARKDOWN_FILES = ("elo_vs_nodes.md", "ablation.md", "teams.md", "README.md")

CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:0 auto;padding:0 18px 60px;color:#222}
h1{font-size:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}h2{font-size:1.3em;margin-top:1.6em}h3{font-size:1.1em}
code{background:#f3f3f3;padding:1px 4px;border-radius:3px;font-size:.92em}pre{background:#f6f6f6;padding:10px;overflow:auto}
pre code{background:none;padding:0}table{border-collapse:collapse;margin:.6em 0;font-size:.9em;display:block;max-width:100%;overflow-x:auto}
td code,p code,li code{overflow-wrap:anywhere}.forest-box{max-width:100%;overflow-x:auto}.forest{max-width:100%;height:auto}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left}th{background:#f3f3f3;cursor:pointer;user-select:none}
th[data-sort=asc]:after{content:" \\25B2"}th[data-sort=desc]:after{content:" \\25BC"}
tr.has-games{cursor:pointer}tr.has-games:hover,tr.game-row:hover{background:#eef4ff}tr.game-row{cursor:pointer}
img{max-width:100%}.chart{margin:.8em 0;border:1px solid #e3e3e3;padding:8px;border-radius:6px}
.chart-title{font-weight:600;margin-bottom:4px}.axis-btn{margin:0 4px 4px 0;border:1px solid #bbb;background:#fff;border-radius:4px;padding:2px 8px;cursor:pointer}
.axis-btn.on{background:#1f77b4;color:#fff;border-color:#1f77b4}.chart-svg{max-width:100%;height:auto}
.tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}.legend.off{opacity:.35}.mark{cursor:pointer;stroke:#fff;stroke-width:1}
.tip{position:absolute;display:none;background:#fff;border:1px solid #999;border-radius:4px;padding:6px 8px;font-size:12px;pointer-events:none;box-shadow:0 2px 6px rgba(0,0,0,.15);z-index:9}
#sb-viewer{display:none;border:1px solid #ddd;border-radius:6px;padding:10px;margin-top:1em}
.vrow{display:flex;gap:18px;flex-wrap:wrap}#sb-boards{display:flex;gap:16px}.board-name{font-weight:600}.board{display:grid;grid-template-columns:repeat(8,44px);grid-template-rows:repeat(8,44px);border:2px solid #555;width:max-content}
.sq{display:flex;align-items:center;justify-content:center;font-size:34px;line-height:1}.light{background:#f0d9b5}.dark{background:#b58863}.sq.last{box-shadow:inset 0 0 0 3px rgba(255,215,0,.8)}
.pocket{font-size:24px;min-height:30px}.pk{margin-right:8px}.pk.none{opacity:.25}
#sb-moves{max-width:420px;max-height:330px;overflow:auto;font-size:13px}.mv{cursor:pointer;padding:0 3px;border-radius:3px}.mv.cur{background:#ffd54f}.mno{color:#888;margin-left:4px}
#sb-pgn{width:100%;height:90px;font:12px monospace}.note{color:#555;font-size:.9em}.stale{color:#a00}
"""


def _ours(path: Path) -> bool:
    """Whether ``path`` is a page this module wrote (the only kind it overwrites)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return False
    return b'id="sb-data"' in head or b'id="sb-body"' in head


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to a fresh temporary file beside ``path`` and rename it over ``path`` (a link
    planted at the temporary name is never written through); a file at ``path`` that is not one of
    our pages, or a link there, is refused (a user's own file is never replaced)."""
    import os
    import secrets

    if not path.parent.is_dir():
        raise ValueError(f"cannot write {path}: no folder {path.parent}")
    if path.is_symlink() or (path.exists() and (not path.is_file() or not _ours(path))):  # a FIFO is never opened
        raise ValueError(f"{path} exists and is not a searchbench page: move it or give another path")
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------- Markdown

def _inline(text: str) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for p in parts:
        if len(p) >= 2 and p.startswith("`") and p.endswith("`"):
            out.append(f"<code>{html.escape(p[1:-1])}</code>")
            continue
        s = html.escape(p, quote=False)
        s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
        s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", s)
        s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", _anchor, s)
        out.append(s)
    return "".join(out)


def _anchor(m: "re.Match[str]") -> str:
    """A Markdown link ``[text](target)`` (both escaped already) as an anchor, or as its text alone
    where the target is not a link a report may write (:func:`safe_href`)."""
    href = safe_href(_link(html.unescape(m.group(2))))
    return f'<a href="{html.escape(href)}">{m.group(1)}</a>' if href is not None else m.group(1)


#: the URL schemes a page may link to; every other scheme (javascript:, data:, vbscript:, file:, ...)
#: is written as text
LINK_SCHEMES = ("http", "https")


def safe_href(target: str) -> str | None:
    """``target`` if it is an http(s), relative or fragment link, else None.  Judged as a browser's URL
    parser reads it: leading control characters and spaces are dropped and tabs and newlines removed
    anywhere before the scheme is read, so ``java\tscript:`` is ``javascript:``."""
    seen = re.sub(r"[\x00-\x20]", "", target)
    m = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", seen)
    if m is None:
        return target if not re.search(r"[\x00-\x1f]", target) else None
    return target if m.group(1).lower() in LINK_SCHEMES else None


def _local_href(path: str) -> str:
    """A relative link to a file of ours (a report folder's name may read as a scheme: ``./`` first)."""
    return path if safe_href(path) == path and ":" not in path.split("/")[0] else "./" + path


def _link(target: str) -> str:
    """A link between reports goes to the other report's page where the target is its Markdown."""
    for name in MARKDOWN_FILES:
        if target.endswith(name) and not target.startswith(("http:", "https:")):
            return target[: -len(name)] + PAGE
    return target


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", s)]


def markdown_html(text: str, folder: Path | None = None, charts: dict[str, int] | None = None,
                  players: Iterable[str] = ()) -> str:
    """The Markdown the reports write, as HTML: headings, paragraphs, lists, code blocks, tables
    (each row that names a player gets ``data-player``), images (an image whose file stem has an
    interactive chart becomes that chart; any other PNG beside ``folder`` is inlined)."""
    charts = charts or {}
    placed: set[int] = set()
    known = set(players)
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("```"):
            flush()
            block = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                block.append(lines[i])
                i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(block))}</code></pre>")
            i += 1
            continue
        heading, img = re.match(r"^(#{1,6})\s+(.*)$", s), re.match(r"^!\[([^\]]*)\]\(([^)]+)\)$", s)
        if heading or img:  # a block of one line
            flush()
            out.append(f"<h{len(heading.group(1))}>{_inline(heading.group(2))}</h{len(heading.group(1))}>" if heading
                       else _image(img.group(1), img.group(2), folder, charts, placed) if img else "")
            i += 1
            continue
        if s.startswith("|") and i + 1 < len(lines) and re.match(r"^\|?\s*:?-{3,}", lines[i + 1].strip()):
            flush()
            head = _cells(s)
            i += 2
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append(_table(head, rows, known))
            continue
        if re.match(r"^([-*]|\d+\.)\s+", s):
            flush()
            ordered = bool(re.match(r"^\d+\.", s))
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                t = lines[i].strip()
                mm = re.match(r"^([-*]|\d+\.)\s+(.*)$", t)
                if mm and not lines[i].startswith("    "):
                    items.append(mm.group(2))
                elif items:
                    items[-1] += " " + t
                i += 1
            tag = "ol" if ordered else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + f"</{tag}>")
            continue
        if not s:
            flush()
        else:
            para.append(s)
        i += 1
    flush()
    return "\n".join(out)


def _image(alt: str, src: str, folder: Path | None, charts: dict[str, int], placed: set[int]) -> str:
    stem = Path(src).stem
    if stem in charts:  # the chart in place of its first figure; its other figures are its other axes
        i = charts[stem]
        if i in placed:
            return ""
        placed.add(i)
        return f'<div class="chart" data-chart="{i}"></div>'
    path = _inside(folder, src) if folder is not None else None
    if path is not None and path.suffix == ".png" and path.is_file():
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></p>'
    return f'<p class="note">[{html.escape(alt)}: {html.escape(src)}]</p>'


def _inside(folder: Path, src: str) -> Path | None:
    """``folder / src`` if it names a file inside ``folder`` (not absolute, no ``..``, no link on the
    way): a page embeds nothing from outside its report folder."""
    rel = Path(src)
    if rel.is_absolute() or ".." in rel.parts:
        return None
    path = folder / rel
    try:
        if any(p.is_symlink() for p in [path, *path.parents][: len(rel.parts)]):
            return None
        if not path.resolve().is_relative_to(folder.resolve()):
            return None
    except OSError:
        return None
    return path


def _row_player(cells: Sequence[str], known: set[str]) -> str | None:
    """The player a table row names: a cell that is a player's name, ``family@nodes``, an
    ``anchor:NAME`` family, or an ablation's ``variant@axis=budget``."""
    plain = [re.sub(r"[`*]", "", c).strip() for c in cells]
    for c in plain:
        if c in known:
            return c
        if c.startswith("anchor:") and c[7:] in known:
            return c[7:]
    for k in range(1, len(plain)):
        for head in plain[:1]:
            for cand in (f"{head}@{plain[k]}", f"{head}@nodes={plain[k]}", f"{head}@evals={plain[k]}"):
                if cand in known:
                    return cand
    return None


def _table(head: list[str], rows: list[list[str]], known: set[str]) -> str:
    out = ["<table><thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        p = _row_player(r, known) if known else None
        attr = f' data-player="{html.escape(p)}"' if p else ""
        out.append(f"<tr{attr}>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ---------------------------------------------------------------------------- figures

def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


#: columns of a report's CSV that hold a number wherever they hold anything (a blank: not measured)
_NUMERIC = ("elo", "lo", "hi", "elo_low", "elo_high", "games", "score", "nodes_per_move", "evals_per_move",
            "seconds_per_move", "budget", "generation", "evals", "movetime", "selfplay_games", "cpu_hours")
#: of those, the ones every row must have
_REQUIRED = ("elo", "lo", "hi", "elo_low", "elo_high")


class ReportError(ValueError):
    """A report's data file is malformed: one line naming the file, the row and the column."""


#: the columns each kind of report CSV must name in its header (the ones its page reads)
_HEADER: dict[str, tuple[str, ...]] = {
    "elo_vs_nodes.csv": ("family", "engine", "nodes", "elo", "lo", "hi", "games"),  # nodes: or evals, movetime
    "ablation.csv": ("variant", "axis", "budget", "games", "elo", "elo_low", "elo_high"),
    "teams.csv": ("row", "team", "opponent", "games", "elo", "elo_low", "elo_high"),
    "ratings.csv": ("player", "arm", "generation", "elo", "lo", "hi", "games"),
}


def _read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a report's CSV, each checked: a header naming the columns its kind needs
    (:data:`_HEADER`), as many fields as the header, a finite number in every numeric column
    (:data:`_NUMERIC`); :class:`ReportError` naming file, row and column otherwise."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ReportError(f"{path}: cannot be read as CSV ({e})") from None
    have = set(header) | ({"nodes"} if set(paradigms.SCALE_BUDGETS) & set(header) else set())  # a scale's budget
    missing = [c for c in _HEADER.get(Path(path).name, ()) if c not in have]
    if missing:
        raise ReportError(f"{path} row 1: the header lacks column {missing[0]!r} (a header row naming "
                          f"{', '.join(_HEADER[Path(path).name])} must come first)")
    for i, r in enumerate(rows, start=2):  # line 1 is the header
        if None in r or any(v is None for v in r.values()):
            raise ReportError(f"{path} row {i}: {'too many' if None in r else 'too few'} fields for its header")
        for col in header:
            if col not in _NUMERIC:
                continue
            v = r[col].strip()
            if not v and col not in _REQUIRED:
                continue
            try:
                x = float(v)
            except ValueError:
                raise ReportError(f"{path} row {i} column {col!r}: {v[:40]!r} is not a number") from None
            if not math.isfinite(x):
                raise ReportError(f"{path} row {i} column {col!r}: {v!r} is not a finite number")
    return rows


def scale_chart(rows: list[dict[str, str]], title: str) -> dict[str, Any]:
    """``elo_vs_nodes.csv`` (``searchbench scale``): one series a family, anchors as dashed lines."""
    series: dict[str, list[dict[str, Any]]] = {}
    hlines = []
    col = paradigms.budget_column(rows[0]) if rows else "nodes"
    for r in rows:
        fam = r["family"]
        if fam.startswith("anchor:"):
            hlines.append({"y": float(r["elo"]), "label": fam[7:]})
        player = fam[7:] if fam.startswith("anchor:") else paradigms.scale_player(fam, col, r[col])
        series.setdefault(fam, []).append({
            "player": player, "y": float(r["elo"]), "lo": float(r["lo"]), "hi": float(r["hi"]),
            "x": {"budget": _num(r.get(col)) or _num(r.get("nodes_per_move")), "nodes_per_move": _num(r.get("nodes_per_move")),
                  "evals_per_move": _num(r.get("evals_per_move")), "ms_per_move": _ms(r.get("seconds_per_move"))},
            "info": {"engine": r["engine"], "games": int(float(r["games"])), "score": f"{100 * float(r['score']):.1f}%"}})
    return {"title": title, "ylabel": "Elo (95% interval)", "replaces": ["elo_vs_nodes", "elo_vs_cost"],
            "axes": [{"key": "budget", "label": {"nodes": "node budget", "evals": "evaluator calls budget",
                                                 "movetime": "seconds a move"}[col], "log": True},
                     {"key": "evals_per_move", "label": "evaluator calls a move", "log": True},
                     {"key": "nodes_per_move", "label": "nodes a move", "log": True},
                     {"key": "ms_per_move", "label": "ms a move", "log": True}],
            "series": [{"name": k, "points": v} for k, v in series.items()], "hlines": hlines}


def _ms(v: Any) -> float | None:
    x = _num(v)
    return None if x is None else 1000.0 * x


def ablation_chart(rows: list[dict[str, str]], title: str) -> dict[str, Any]:
    """``ablation.csv`` (``searchbench ablate``): each variant's Elo over the baseline against the budget."""
    series: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        tag = f"{r['axis']}={float(r['budget']):g}"
        series.setdefault(r["variant"], []).append({
            "player": f"{r['variant']}@{tag}", "y": float(r["elo"]), "lo": float(r["elo_low"]), "hi": float(r["elo_high"]),
            "x": {"budget": _num(r["budget"]), "evals_per_move": _num(r.get("evals_per_move")),
                  "ms_per_move": _ms(r.get("seconds_per_move"))},
            "info": {"games": r["games"], "+/=/-": f"+{r['wins']} ={r['draws']} -{r['losses']}",
                     "pentanomial LL LD DD+WL WD WW": " ".join(r.get(k, "") for k in
                                                              ("ptnml_LL", "ptnml_LD", "ptnml_DD_WL", "ptnml_WD", "ptnml_WW")),
                     "openings": r.get("openings", ""), "verdict": r.get("verdict", "") or "-"}})
    axis = rows[0]["axis"] if rows else "nodes"
    return {"title": title, "ylabel": "Elo over the baseline (95% interval)", "replaces": ["ablation"],
            "axes": [{"key": "budget", "label": f"budget ({axis})", "log": True},
                     {"key": "evals_per_move", "label": "evaluator calls a move", "log": True},
                     {"key": "ms_per_move", "label": "ms a move", "log": True}],
            "series": [{"name": k, "points": v} for k, v in series.items()], "hlines": [{"y": 0.0, "label": "baseline"}]}


def teams_chart(rows: list[dict[str, str]], title: str) -> dict[str, Any]:
    """``teams.csv`` (``searchbench bughouse-report``): each row's Elo against the reference team
    at its cost a move, one series a team family (network or classical MCTS)."""
    series: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if _num(r.get("elo")) is None:
            continue
        y, lo, hi, score = float(r["elo"]), float(r["elo_low"]), float(r["elo_high"]), _num(r.get("score"))
        if score in (0.0, 1.0):  # a sweep: no finite Elo, only the bound of its interval
            y = lo = hi = hi if score == 0.0 else lo
        series.setdefault(r["team"].split(":")[0], []).append({
            "player": r["row"], "y": y, "lo": lo, "hi": hi,
            "x": {"evals_per_move": _num(r.get("evals_per_move")), "nodes_per_move": _num(r.get("nodes_per_move")),
                  "ms_per_move": _ms(r.get("seconds_per_move"))},
            "info": {"team": r["team"], "opponent": r["opponent"], "clock": r["tc"], "games": r["games"],
                     "Elo": ("sweep: below " if score == 0.0 else "sweep: above " if score == 1.0 else "") + f"{y:+.0f}",
                     "+/=/-": f"+{r['wins']} ={r['draws']} -{r['losses']}",
                     "pentanomial LL LD DD+WL WD WW": " ".join(r.get(k, "") for k in
                                                              ("ptnml_LL", "ptnml_LD", "ptnml_DD_WL", "ptnml_WD", "ptnml_WW"))}})
    return {"title": title, "ylabel": "Elo against the reference team (95% interval)", "replaces": ["teams"],
            "axes": [{"key": "evals_per_move", "label": "evaluator calls a move", "log": True},
                     {"key": "nodes_per_move", "label": "nodes a move", "log": True},
                     {"key": "ms_per_move", "label": "ms a move", "log": True}],
            "series": [{"name": k, "points": v} for k, v in series.items()], "hlines": [{"y": 0.0, "label": "reference"}]}


def rl_charts(rows: list[dict[str, str]], title: str) -> list[dict[str, Any]]:
    """An rl loop's ``ratings.csv``: one chart a rating search, one series an arm."""
    out = []
    for search in dict.fromkeys(r.get("search", "") for r in rows):
        mine = [r for r in rows if r.get("search", "") == search]
        series: dict[str, list[dict[str, Any]]] = {}
        hlines = []
        for r in mine:
            if r["arm"] == "anchor":
                hlines.append({"y": float(r["elo"]), "label": r["player"]})
                continue
            series.setdefault(r["arm"], []).append({
                "player": r["player"], "y": float(r["elo"]), "lo": float(r["lo"]), "hi": float(r["hi"]),
                "x": {"generation": _num(r["generation"]), "selfplay_games": _num(r["selfplay_games"]),
                      "cpu_hours": _num(r["cpu_hours"])},
                "info": {"games": r["games"], "score": r["score"], "gate": r.get("gate", "") or "-"}})
        suffix = f"_{search}" if search else ""
        out.append({"title": f"{title}" + (f": every round under `{search}`" if search else ""),
                    "ylabel": "Elo (95% interval)",
                    "replaces": [f"elo_vs_{x}{suffix}" for x in ("generation", "selfplay_games", "cpu_hours")],
                    "axes": [{"key": "generation", "label": "round / generation", "log": False},
                             {"key": "selfplay_games", "label": "self-play games", "log": False},
                             {"key": "cpu_hours", "label": "CPU hours", "log": False}],
                    "series": [{"name": k, "points": v} for k, v in series.items()], "hlines": hlines})
    return out


def ratings_chart(rows: list[dict[str, Any]], title: str) -> dict[str, Any]:
    """Players of any database (``searchbench report DB``): Elo against their mean cost a move,
    one series a family (the name before ``@``)."""
    series: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        series.setdefault(str(r["player"]).split("@")[0], []).append({
            "player": r["player"], "y": r["elo"], "lo": r["lo"], "hi": r["hi"],
            "x": {"evals_per_move": r["evals_per_move"] or None, "nodes_per_move": r["nodes_per_move"] or None,
                  "ms_per_move": r["ms_per_move"] or None},
            "info": {"games": r["games"], "score": f"{100 * r['score']:.1f}%"}})
    axes: list[dict[str, Any]] = [{"key": "evals_per_move", "label": "evaluator calls a move", "log": True},
                                  {"key": "nodes_per_move", "label": "nodes a move", "log": True},
                                  {"key": "ms_per_move", "label": "ms a move", "log": True}]
    # first the axis on which every player has a mark (external engines report no evaluator calls)
    axes.sort(key=lambda a: -sum(1 for r in rows if (r[str(a["key"])] or 0) > 0))
    return {"title": title, "ylabel": "Elo (95% interval)", "replaces": ["ratings"], "axes": axes,
            "series": [{"name": k, "points": v} for k, v in series.items()], "hlines": []}


# ---------------------------------------------------------------------------- games

@dataclass
class GameView:
    """What the page shows of one stored game (primitives: the page does not read the database)."""

    id: int
    white: str
    black: str
    result: str
    reason: str
    fen: str
    moves: list[str]  # UCI, from ``fen``
    stats: list[tuple[int, int, int | None, int, int]]  # per move: nodes, evaluator calls, cp, depth, ms
    opening: str = ""


def _board(variant: str, fen: str) -> Any:
    return variant_of(variant).python_board(fen)


def game_json(g: GameView, variant: str) -> dict[str, Any]:
    """A game as the page's script reads it, SAN computed with python-chess (a move python-chess
    refuses ends the SAN list there; the board still steps through every stored move)."""
    import chess

    if variant_of(variant).boards > 1:  # two boards: the moves as stored ("A:e2e4"), the page replays both
        return {"id": g.id, "w": g.white, "b": g.black, "r": g.result, "why": g.reason, "fen": g.fen, "uci": g.moves,
                "san": list(g.moves), "stats": [list(s) for s in g.stats], "opening": g.opening, "black_first": False,
                "fullmove": 1}
    b = _board(variant, g.fen)
    fen = b.fen()
    black_first = b.turn == chess.BLACK
    fullmove = b.fullmove_number
    san: list[str] = []
    for u in g.moves:
        try:
            m = chess.Move.from_uci(u)
            san.append(b.san(m))
            b.push(m)
        except (ValueError, AssertionError):
            san.append(u)
            break
    san += g.moves[len(san):]
    return {"id": g.id, "w": g.white, "b": g.black, "r": g.result, "why": g.reason, "fen": fen, "uci": g.moves,
            "san": san, "stats": [list(s) for s in g.stats], "opening": g.opening, "black_first": black_first,
            "fullmove": fullmove}


# ---------------------------------------------------------------------------- the page

def render(title: str, variant: str, markdown: str, folder: Path | None, charts: list[dict[str, Any]],
           games: Sequence[GameView], total_games: int | None = None, source: str = "",
           kept: list[dict[str, Any]] | None = None) -> str:
    """The page's HTML (self-contained); ``kept``: games as an earlier page held them (their JSON),
    shown where ``games`` is empty."""
    by_stem = {stem: i for i, c in enumerate(charts) for stem in c.get("replaces", [])}
    players = {p["player"] for c in charts for s in c["series"] for p in s["points"]}
    players |= {g.white for g in games} | {g.black for g in games}
    players |= {str(g.get(k, "")) for g in kept or [] for k in ("w", "b")}
    body = markdown_html(markdown, folder, by_stem, players)
    placed = {int(m) for m in re.findall(r'data-chart="(\d+)"', body)}
    extra = "".join(f'<div class="chart" data-chart="{i}"></div>' for i in range(len(charts)) if i not in placed)
    if extra:  # charts whose figure the Markdown does not show go after the first heading
        cut = body.find("</h1>")
        body = body[: cut + 5] + extra + body[cut + 5:] if cut >= 0 else extra + body
    shown_json = [game_json(g, variant) for g in list(games)[:MAX_GAMES]] if games or not kept else kept[:MAX_GAMES]
    shown = shown_json
    total = len(games or shown_json) if total_games is None else total_games
    data = {"title": title, "variant": variant, "charts": charts, "games": shown_json}
    payload = script_json(data)
    script = _script()
    if shown:
        games_html = f"""<h2 id="sb-games">Games</h2>
<p class="note">{len(shown)} of {total} games{' (an equal share of every pairing; the rest are in the database)' if total > len(shown) else ''}{html.escape(source)}.
Click a table row or a figure's mark for a player's games, a game to step through it (arrow keys too).</p>
<p><input id="sb-filter" placeholder="player (exact name)" size="36"> <span id="sb-count"></span></p>
<table><thead><tr><th>#</th><th>White</th><th>Black</th><th>result</th><th>end</th><th>plies</th><th>opening</th></tr></thead>
<tbody id="sb-game-rows"></tbody></table>
<div id="sb-viewer"><h3 id="sb-vtitle"></h3><div class="vrow"><div>
<div id="sb-boards"></div>
<p><button id="sb-first">|&lt;</button> <button id="sb-prev">&lt;</button> <button id="sb-next">&gt;</button>
<button id="sb-last">&gt;|</button> <span id="sb-ply"></span> <span id="sb-turn" class="note"></span></p></div>
<div><div id="sb-moves"></div><p>per move: <select id="sb-stat"><option value="0">nodes</option><option value="1">evaluator calls</option>
<option value="2">score (cp, mover)</option><option value="3">depth</option><option value="4">ms</option></select></p>
<div id="sb-stats"></div><p id="sb-statline" class="note"></p></div></div>
<p>PGN <button id="sb-copy">copy</button></p><textarea id="sb-pgn" readonly></textarea></div>"""
    else:
        games_html = f'<p class="note">No games on this page{html.escape(source)}.</p>'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{CSS}</style></head>
<body><div id="sb-body">{body}</div>
{games_html}
<script type="application/json" id="sb-data">{payload}</script>
<script>{script}</script>
</body></html>
"""


def _finite(x: Any) -> Any:
    """``x`` with every non-finite float (NaN, inf from a damaged CSV) as None: JSON has no such
    number, and a page's JSON.parse would throw on it."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def script_json(data: Any) -> str:
    """``data`` as JSON that can stand inside a ``<script>`` element whatever its strings hold: every
    ``<`` written as ``\\u003c`` (so neither ``</script>`` nor ``<!--`` can change how the HTML
    parser reads the element), and no non-finite number."""
    return json.dumps(_finite(data), separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _script() -> str:
    """``page.js`` as it goes inside a ``<script>`` element (``</`` escaped)."""
    return (Path(__file__).with_name("page.js")).read_text().replace("</", "<\\/")


def _kind(folder: Path) -> tuple[str, Path] | None:
    for name, kind in (("elo_vs_nodes.md", "scale"), ("ablation.md", "ablate"), ("teams.md", "teams"),
                       ("README.md", "rl")):
        if (folder / name).is_file():
            return kind, folder / name
    return None


def folder_page(folder: str | Path, games: Sequence[GameView] = (), variant: str | None = None,
                total_games: int | None = None, source: str = "") -> Path:
    """Write ``FOLDER/index.html`` from a report folder's Markdown and CSV (and ``games``)."""
    folder = Path(folder)
    found = _kind(folder)
    if found is None:
        raise ValueError(f"{folder} holds no report ({', '.join(MARKDOWN_FILES[:-1])} or README.md)")
    kind, md_path = found
    if md_path.is_symlink() or not md_path.is_file():
        raise ValueError(f"{md_path} is not a regular file (a link or a device): a page embeds nothing from "
                         "outside its folder")
    md = md_path.read_text()
    title = md.splitlines()[0].lstrip("# ").strip() if md.strip() else folder.name
    charts: list[dict[str, Any]] = []
    if kind == "scale" and (folder / "elo_vs_nodes.csv").is_file():
        charts = [scale_chart(_read_csv(folder / "elo_vs_nodes.csv"), title)]
    elif kind == "ablate" and (folder / "ablation.csv").is_file():
        charts = [ablation_chart(_read_csv(folder / "ablation.csv"), title)]
    elif kind == "teams" and (folder / "teams.csv").is_file():
        charts = [teams_chart(_read_csv(folder / "teams.csv"), title)]
    elif kind == "rl" and (folder / "ratings.csv").is_file():
        charts = rl_charts(_read_csv(folder / "ratings.csv"), title)
    v = variant or paradigms.game_of(md)
    out = folder / PAGE
    kept, kept_total, kept_source = kept_games(out) if not games else (None, None, "")
    if kept:  # no database given: the games the page already holds stay (a rewrite loses no game)
        total_games, source = kept_total, source or kept_source
    _write_text(out, render(title, v, md, folder, charts, games, total_games, source, kept))
    return out


def kept_games(page_path: Path) -> tuple[list[dict[str, Any]] | None, int | None, str]:
    """The games an existing page of ours holds (their JSON), how many its note says the database
    has, and the note's source (``; all of them in DB``); (None, None, "") if none."""
    if page_path.is_symlink() or not page_path.is_file() or not _ours(page_path):
        return None, None, ""
    text = page_path.read_text()
    m = re.search(r'<script type="application/json" id="sb-data">(.*?)</script>', text, re.DOTALL)
    try:
        games = json.loads(m.group(1).replace("<\\/", "</"))["games"] if m else None
    except (ValueError, KeyError, TypeError):
        return None, None, ""
    if not isinstance(games, list) or not games or not all(isinstance(g, dict) for g in games):
        return None, None, ""
    note = re.search(r'<p class="note">(\d+) of (\d+) games(?: \([^)]*\))?(; all of them in \S+?)?\.\s', text)
    total = int(note.group(2)) if note else len(games)
    return games, total, html.unescape(note.group(3)) if note and note.group(3) else ""


def finding(md: str, folder: Path | None = None) -> str:
    """A report's one-line finding: the first sentence after ``**Findings.**``; an ablation's finding
    lines (those that differ from the baseline first); a scale report's strongest player from its CSV;
    else the first paragraph that leads with bold text, or the first paragraph."""
    m = re.search(r"\*\*Findings?\.?\*\*\s*(.+?)(?:(?<=[.!?])\s|\n\n|$)", md, re.DOTALL)
    if m:
        return " ".join(m.group(1).split())
    m = re.search(r"^Findings[^\n]*:\s*\n\s*\n((?:- .+\n?)+)", md, re.MULTILINE)
    if m:
        items = [x[2:].strip() for x in m.group(1).splitlines() if x.startswith("- ")]
        items.sort(key=lambda x: 0 if re.search(r": (stronger|weaker)", x) else 1)
        short = [re.sub(r";\s*intervals about.*$", "", x) for x in items[:3]]
        return "; ".join(short) + (f"; and {len(items) - 3} more" if len(items) > 3 else "")
    if folder is not None and (folder / "elo_vs_nodes.csv").is_file():
        rows = [r for r in _read_csv(folder / "elo_vs_nodes.csv") if not r["family"].startswith("anchor:")]
        if rows:
            best = max(rows, key=lambda r: float(r["elo"]))
            return (f"strongest: `{best['engine']}` at {best['nodes']} nodes, {float(best['elo']):+.0f} "
                    f"[{float(best['lo']):+.0f}, {float(best['hi']):+.0f}] Elo over the anchor")
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", md)]
    paras = [p for p in paras if p and not p.startswith(("#", "```", "|", "!", "-"))]
    for p in [p for p in paras if p.startswith("**")] + paras:
        s = re.match(r"(.+?[.!?])(\s|$)", p)
        return s.group(1) if s else p
    return ""


#: the suite's questions, in the order the answer page asks them, and which report folders answer
#: each (the first pattern a folder's path under reports/ matches; fnmatch patterns)
QUESTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("paradigms", "Which paradigm is strongest, per node, per evaluator call and per second?",
     ("quick-*", "chess-scale", "ab-vs-mcts/*", "zh-paradigms*", "small-budgets")),
    ("switches", "What is each switch worth?",
     ("zh-switches", "zh-defaults", "zh-qvalue", "zh-batch", "zh-gumbel-*", "ab-pruning", "ab-policy-*")),
    ("speed", "Speed: what does a faster network buy at equal time?", ("int8-*-time",)),
    ("networks", "Networks and inference: what does int8 cost at equal nodes?", ("int8-*",)),
    ("selfplay", "Does self-play make a stronger player?", ("rl-*",)),
    ("two-boards", "Bughouse: how do our teams play, against each other and against Sjeng?", ("bughouse-*",)),
    ("tuning", "Tuned by games: what do each paradigm's settings gain, verified?", ("tune-*",)),
    ("other", "Other reports", ("*",)),
)


def question_of(rel: str) -> str:
    """The key of the question a report folder (its path under reports/) answers (:data:`QUESTIONS`)."""
    import fnmatch

    return next(key for key, _, pats in QUESTIONS if any(fnmatch.fnmatch(rel, p) for p in pats))


def baseline_of(md: str) -> str:
    """What an ablation report's rows are measured against (``baseline `rise-mcts```), "" where it
    names none."""
    m = re.search(r"[Bb]aseline `([^`]+)`", md)
    return m.group(1) if m else ""


def _title_html(title: str) -> str:
    """A report's title as HTML: its Markdown rendered (code, bold), its leading '#' gone."""
    return _inline(title.lstrip("# ").strip())


def index_page(reports_dir: str | Path) -> Path:
    """``REPORTS/index.html``, the suite's answer page: every report below ``reports_dir`` under the
    question it answers (:data:`QUESTIONS`), with its title and its one-line finding (intervals as the
    report gives them) and a link to its page."""
    root = Path(reports_dir)
    groups: dict[str, list[str]] = {key: [] for key, _, _ in QUESTIONS}
    forests: dict[str, list[forest.Row]] = {key: [] for key, _, _ in QUESTIONS}
    stale = 0
    played_where: list[tuple[str, Path, str]] = []  # (rel, folder, game) of every report: the paradigm grid
    stale_rels: set[str] = set()
    for md in sorted(p for name in MARKDOWN_FILES for p in root.rglob(name)):
        if md.parent == root or md.name == "README.md" and not (md.parent / "ratings.csv").exists():
            continue
        if md.is_symlink() or not md.is_file():  # a link or a FIFO: never read (it may point anywhere, or block)
            continue
        text = md.read_text()
        title = text.splitlines()[0] if text.strip() else md.parent.name
        rel = md.parent.relative_to(root).as_posix()
        link = _local_href(f"{rel}/{PAGE}" if (md.parent / PAGE).exists() else f"{rel}/{md.name}")
        try:
            found = _inline(finding(text, md.parent))
        except ReportError as e:  # one report's broken data: the page is written without its finding, saying why
            print(f"searchbench: warning: {e}", file=sys.stderr)
            found = f"<em>no finding: {html.escape(str(e))}</em>"
        state, why = played.status(md.parent)
        stale += state == "stale"
        played_where.append((rel, md.parent, paradigms.game_of(text)))
        if state == "stale":
            stale_rels.add(rel)
        engines = {"current": "today's", "unrecorded": '<span class="note">not recorded</span>'}.get(
            state, '<strong class="stale">stale</strong>: ' + "; ".join(_inline(x) for x in why))
        for source in forest.SOURCES:
            path = md.parent / source
            if path.is_file() and not path.is_symlink():
                try:
                    forests[question_of(rel)] += forest.rows_of(source, _read_csv(path), rel, state == "stale",
                                                                paradigms.game_of(text), baseline_of(text))
                except ReportError as e:  # a broken table: the plot is drawn without it, saying why
                    print(f"searchbench: warning: {e}", file=sys.stderr)
        groups[question_of(rel)].append(
            f'<tr data-report="{html.escape(rel)}" data-engines="{state}"><td><a href="{html.escape(link)}">'
            f"{html.escape(rel)}</a></td><td>{_title_html(title)}</td><td>{found}</td><td>{engines}</td></tr>")
    sections = []
    cells = paradigms.grid(played_where)
    for key, question, _ in QUESTIONS:
        if groups[key]:
            plot = forest.svg(forests[key], question)
            grid = ""
            if key == "paradigms":
                grid = ("<p>Where each paradigm has been played, by game and cost unit (the reports that played "
                        "it there; <em>not measured</em>: no games):</p>\n"
                        + paradigms.table_html(cells, lambda r: _local_href(f"{r}/{PAGE}"), frozenset(stale_rels))
                        + "\n")
            sections.append(f'<h2 id="q-{key}">{html.escape(question)}</h2>\n' + grid
                            + (f'<div class="forest-box">{plot}</div>\n' if plot else "")
                            + f'<table data-question="{key}"><thead><tr>'
                            f"<th>report</th><th>title</th><th>finding</th><th>engines</th></tr></thead><tbody>\n"
                            + "\n".join(groups[key]) + "\n</tbody></table>")
    toc = " · ".join(f'<a href="#q-{key}">{html.escape(q)}</a>' for key, q, _ in QUESTIONS if groups[key])
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>searchbench: what the reports found</title><style>{CSS}</style></head>
<body><div id="sb-body"><h1>searchbench: what the reports found</h1>
<p>Every shipped report under the question it answers, with its finding (Elo differences with their 95% intervals,
as the report states them) and a link to its page (figures, sortable tables, the games where the database was at
hand). Each question's measured differences are drawn first as a forest plot (each row's Elo difference with
its 95% interval, rows grouped by budget; blue where the interval is above 0, red below, grey where the report is
stale; hover a row for its figures). The last column says whether each report's engines still run as they played: <em>today's</em> where
every recorded option of every player has today's value, <em>stale</em> (with the options that moved) where a
default moved since, <em>not recorded</em> for a report played before games stored their engines' settings.
{stale} stale. Regenerate this page with <code>searchbench report --index {html.escape(str(reports_dir))}</code>.</p>
<p class="note">{toc}</p>
{chr(10).join(sections)}</div>
<script type="application/json" id="sb-data">{{"title":"reports","variant":"chess","charts":[],"games":[]}}</script>
<script>{_script()}</script>
</body></html>
"""
    out = root / PAGE
    _write_text(out, page)
    return out


__all__ = ["GameView", "MAX_GAMES", "PAGE", "QUESTIONS", "question_of", "ablation_chart", "finding", "folder_page", "game_json", "index_page",
           "markdown_html", "ratings_chart", "render", "rl_charts", "scale_chart", "teams_chart"]
