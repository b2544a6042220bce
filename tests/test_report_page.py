"""The report pages without a browser (:mod:`reports.html`, ``searchbench report``): the Markdown as
the reports write it, rows linked to players, each figure once, SAN from python-chess, every shipped
page up to date with the script, bad input one line and exit 2.  In a browser: tests/test_browser.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import chess
import chess.variant
import pytest

from experiments.cli.main import main
from reports import html as page

ROOT = Path(__file__).resolve().parent.parent


def _data(text: str) -> dict:  # type: ignore[type-arg]
    m = re.search(r'<script type="application/json" id="sb-data">(.*?)</script>', text, re.DOTALL)
    assert m
    return json.loads(m.group(1).replace("<\\/", "</"))  # type: ignore[no-any-return]


def test_markdown_tables_rows_images_and_code() -> None:
    md = """# Title

Some `code` and **bold** and a [link](../other/ablation.md).

| family | engine | nodes | Elo |
|---|---|---:|---:|
| mcts-rise | `rise-mcts` | 64 | +750 |
| anchor:fsf-1k | `fairy-stockfish` |  | +897 |
| nobody | x | 1 | 0 |

![Elo versus nodes](elo_vs_nodes.png)

![cost](elo_vs_cost.png)

```
searchbench scale <config>
```

- one
- two
"""
    out = page.markdown_html(md, None, {"elo_vs_nodes": 0, "elo_vs_cost": 0}, ["mcts-rise@64", "fsf-1k"])
    assert '<tr data-player="mcts-rise@64">' in out and '<tr data-player="fsf-1k">' in out
    assert out.count("<tr data-player") == 2
    assert out.count('data-chart="0"') == 1  # a chart in place of its first figure only
    assert "searchbench scale &lt;config&gt;" in out and "<code>code</code>" in out and "<b>bold</b>" in out
    assert 'href="../other/index.html"' in out and "<ul><li>one</li><li>two</li></ul>" in out


def test_findings_of_the_three_kinds_of_report(tmp_path: Path) -> None:
    assert page.finding("# x\n\n**Findings.** It works. More text.\n") == "It works."
    abl = ("# Ablation\n\nSetup.\n\nFindings (a variant ...):\n\n- `a`: not distinguishable at nodes 8 (+1 [-5, +7]); "
           "intervals about 12 Elo wide\n- `b`: stronger at nodes 8 (+50 [+10, +90]); intervals about 80 Elo wide\n")
    assert page.finding(abl).startswith("`b`: stronger at nodes 8 (+50 [+10, +90]); `a`")
    (tmp_path / "elo_vs_nodes.csv").write_text("family,engine,nodes,elo,lo,hi,games,score\nf,e,64,10,0,20,4,0.5\n"
                                              "f,e,256,90,50,130,4,0.5\nanchor:x,y,,999,900,1100,4,0.5\n")
    assert page.finding("# Scale\n\nSetup.\n", tmp_path) == "strongest: `e` at 256 nodes, +90 [+50, +130] Elo over the anchor"


def test_the_san_of_a_game_is_python_chess_and_black_may_move_first() -> None:
    b = chess.variant.CrazyhouseBoard()
    moves = []
    for u in ["e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5", "P@e4"]:
        moves.append(u)
        b.push_uci(u)
    fen = chess.variant.CrazyhouseBoard().fen()
    view = page.game_json(page.GameView(1, "A", "B", "*", "", fen, moves, [(1, 1, 0, 1, 1)] * len(moves)), "crazyhouse")
    want = []
    b = chess.variant.CrazyhouseBoard()
    for u in moves:
        want.append(b.san(chess.Move.from_uci(u)))
        b.push_uci(u)
    assert view["san"] == want and want[-1] == "@e4" and not view["black_first"]  # python-chess: a pawn drop is @e4
    after = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR[] b KQkq - 0 1"
    v2 = page.game_json(page.GameView(2, "A", "B", "*", "", after, ["e7e5"], [(0, 0, None, 0, 0)]), "crazyhouse")
    assert v2["black_first"] and v2["fullmove"] == 1 and v2["san"] == ["e5"]


def test_every_shipped_page_has_the_current_script() -> None:
    """A change to reports/page.js or html.py's CSS needs ``make pages`` (the pages inline both)."""
    script = (ROOT / "reports" / "page.js").read_text().replace("</", "<\\/")
    pages = sorted((ROOT / "reports").rglob(page.PAGE))
    assert len(pages) > 5
    for p in pages:
        text = p.read_text()
        assert script in text and page.CSS in text, f"{p} is out of date: run make pages"
    folders = {p.parent for p in pages}
    for md in (ROOT / "reports").rglob("*.md"):
        if md.name in page.MARKDOWN_FILES and md.parent != ROOT / "reports":
            assert md.parent in folders, f"{md.parent} has no index.html: run make pages"


def test_a_report_page_holds_the_games_and_the_figure(tmp_path: Path) -> None:
    """A scale run writes index.html with its games; the figure has one point a player."""
    import sys

    from experiments.harness import scale
    from experiments.harness.store import Store
    from tests.test_scale import cfg

    sys.path.insert(0, str(ROOT / "tests"))
    from harness_fakes import Factory

    _, paths = scale.run(scale.load(cfg(tmp_path)), "searchbench scale c.toml", factory=Factory(), progress=False)
    folder = tmp_path / "reports" / "tiny"
    assert folder / page.PAGE in paths
    with Store(str(tmp_path / "s.sqlite"), readonly=True) as st:
        games = st.games()
    text = (folder / page.PAGE).read_text()
    data = _data(text)
    assert len(data["games"]) == len(games) and data["variant"] in ("chess", "crazyhouse")
    points = {p["player"] for c in data["charts"] for s in c["series"] for p in s["points"]}
    assert points == {g.white for g in games} | {g.black for g in games}
    g0 = data["games"][0]
    assert len(g0["uci"]) == len(g0["san"]) == len(g0["stats"])


@pytest.mark.parametrize("argv, match", [
    (["report"], "give a results database or a report folder"),
    (["report", "/nonexistent/x.sqlite"], "no such database or report folder"),
    (["report", "--index", "/nonexistent"], "not a folder"),
    (["report", "reports/zh-batch", "--out", "x.html"], "--out is for a database"),
    (["report", "reports/zh-batch", "--db", "/nonexistent.sqlite"], "no such database"),
])
def test_bad_report_input_is_one_line(argv: list[str], match: str, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_a_folder_without_a_report_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "holds no report" in capsys.readouterr().err


def test_a_tournament_writes_its_page_beside_its_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "t.toml"
    cfg.write_text(f'''name = "tiny-rr"
variant = "crazyhouse"
games = 2
concurrency = 2
db = "{tmp_path / 't.sqlite'}"
pgn = "{tmp_path / 't.pgn'}"
anchor = "ab"

[[engines]]
name = "ab"
engine = "material-ab"
nodes = 16

[[engines]]
name = "mcts"
engine = "material-mcts"
nodes = 16
''')
    assert main(["tournament", str(cfg), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"page: {tmp_path / 't.html'}" in out
    data = _data((tmp_path / "t.html").read_text())
    assert len(data["games"]) == 2 and {p["player"] for s in data["charts"][0]["series"] for p in s["points"]} == {"ab", "mcts"}


def test_a_users_own_file_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "m.html"
    own.write_text("<html>my notes</html>")
    link = tmp_path / "l.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    db = tmp_path / "m.sqlite"
    assert main(["match", "material-ab", "material-mcts", "--variant", "crazyhouse", "--games", "2", "--nodes", "8",
                 "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    for out in (own, link):
        assert main(["report", str(db), "--out", str(out)]) == 2
        assert "is not a searchbench page" in capsys.readouterr().err
    assert main(["report", str(db), "--out", str(tmp_path / "new.html")]) == 0
    assert main(["report", str(db), "--out", str(tmp_path / "new.html")]) == 0  # our own page, again
    d = tmp_path / "r"
    d.mkdir()
    (d / "ablation.md").write_text((ROOT / "reports" / "zh-batch" / "ablation.md").read_text())
    (d / page.PAGE).write_text("mine")
    with pytest.raises(ValueError, match="not a searchbench page"):
        page.folder_page(d)
    assert (d / page.PAGE).read_text() == "mine" and own.read_text() == "<html>my notes</html>"
    (d / page.PAGE).unlink()
    page.folder_page(d)
    page.folder_page(d)  # our own page is written again
    assert not (tmp_path / "elsewhere.html").exists()


def test_a_page_holds_an_equal_share_of_every_pairing() -> None:
    from types import SimpleNamespace

    from experiments.harness.webpage import sample

    games = [SimpleNamespace(id=i, match="big") for i in range(1, 901)] + \
            [SimpleNamespace(id=1000 + i, match=f"m{i % 3}") for i in range(30)]
    got = sample(games, most=60)  # type: ignore[arg-type]
    per = {m: sum(1 for g in got if g.match == m) for m in ("big", "m0", "m1", "m2")}
    assert per == {"big": 15, "m0": 10, "m1": 10, "m2": 10}  # 60 // 4 pairings each, or all a pairing has
    assert [g.id for g in got] == sorted(g.id for g in got)
    assert sample(games[:10], most=60) == games[:10]  # type: ignore[arg-type]


def test_the_index_groups_reports_by_the_question_they_answer(tmp_path: Path) -> None:
    from reports import html as page

    for rel, name in (("quick-x", "elo_vs_nodes.md"), ("zh-switches", "ablation.md"), ("int8-y", "ablation.md"),
                      ("bughouse-z", "teams.md"), ("odd", "ablation.md")):
        d = tmp_path / rel
        d.mkdir(parents=True)
        (d / name).write_text(f"# Report `{rel}` **bold**\n\n**Findings.** {rel} is +5 [-3, +13].\n")
    text = page.index_page(tmp_path).read_text()
    order = [text.index(f'id="q-{k}"') for k in ("paradigms", "switches", "networks", "two-boards", "other")]
    assert order == sorted(order)
    assert "<code>quick-x</code>" in text and "`" not in text.split("<tbody>")[1].split("</tbody>")[0]
    assert page.question_of("ab-vs-mcts/rise-chess") == "paradigms" and page.question_of("rl-crazyhouse") == "selfplay"
    assert page.question_of("int8-rise-chess-time") == "speed" and page.question_of("int8-rise-chess") == "networks"


def test_a_page_rewritten_without_its_database_keeps_its_games(tmp_path: Path) -> None:
    """make pages on a machine without the databases (runs/ is not in git) rewrites each shipped page
    from its Markdown: the games the page held stay, with their count and source."""
    import shutil

    from reports import html as page

    src = Path(__file__).resolve().parent.parent / "reports" / "quick-crazyhouse"
    d = tmp_path / "quick-crazyhouse"
    shutil.copytree(src, d)
    before = (d / page.PAGE).read_text()
    n = before.count('"id":')
    page.folder_page(d)
    after = (d / page.PAGE).read_text()
    assert n > 100 and after.count('"id":') == n
    assert "404 of 404 games; all of them in runs/quick-crazyhouse.sqlite." in after


def test_the_answer_pages_forest_plot_reads_checked_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each ablation row is a mark of its question's forest plot (a sweep as its bound); a table
    that is not a report's CSV leaves the plot without it, in one warning, never a traceback."""
    from reports import html as page

    head = "variant,axis,budget,games,score,elo,elo_low,elo_high\n"
    for rel, body in (("zh-paradigms", "gumbel,nodes,100,100,0.4,-70.4,-132.5,-12.5\nab,nodes,16,200,0.0,-1040,-1040,-566\n"),
                      ("small-budgets", "gumbel,nodes,8,100,0.58,abc,-6,122\n")):
        d = tmp_path / rel
        d.mkdir()
        (d / "ablation.md").write_text(f"# {rel}\n\n**Findings.** {rel} +1 [-2, +4].\n\n"
                                       "Variant crazyhouse; baseline `rise-mcts`; 100 games.\n")
        (d / "ablation.csv").write_text(head + body)
    text = page.index_page(tmp_path).read_text()
    # each row names its baseline and its game; the groups are game and budget
    assert text.count('<svg class="forest"') == 1
    assert "zh-paradigms: gumbel against rise-mcts at nodes 100 in crazyhouse: -70 [-132, -12]" in text
    assert "zh-paradigms: ab against rise-mcts at nodes 16 in crazyhouse: below -566 (lost every game)" in text
    assert "zh-paradigms: gumbel vs rise-mcts</text>" in text and 'font-weight="600">crazyhouse, nodes 100<' in text
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "small-budgets/ablation.csv row 2 column 'elo'" in err[0]


def test_a_csv_without_its_header_is_named_with_its_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 81, i07: an ``elo_vs_nodes.csv`` with no header row was ``searchbench: error: family``;
    now ``report DIR`` is one line naming the file, row 1 and the missing column, and the answer
    page draws the other reports and names the broken one."""
    from experiments.cli.main import main
    from reports import html as page

    good = tmp_path / "zh-paradigms"
    good.mkdir()
    (good / "ablation.md").write_text("# zh-paradigms\n\n**Findings.** gumbel +1 [-2, +4].\n")
    (good / "ablation.csv").write_text("variant,axis,budget,games,score,elo,elo_low,elo_high\n"
                                       "gumbel,nodes,100,100,0.4,-70.4,-132.5,-12.5\n")
    bad = tmp_path / "quick-crazyhouse"
    bad.mkdir()
    (bad / "elo_vs_nodes.md").write_text("# quick-crazyhouse\n\nElo against nodes.\n")  # its finding: from the CSV
    (bad / "elo_vs_nodes.csv").write_text("rise-mcts,rise-mcts,64,830,625,997,100,0.9,64,64,0.1\n")
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "elo_vs_nodes.csv row 1" in err[0] and "'family'" in err[0], err
    text = page.index_page(tmp_path).read_text()
    assert "zh-paradigms: gumbel at nodes 100 in chess: -70 [-132, -12]" in text  # no game named: chess
    err = capsys.readouterr().err.strip().splitlines()
    assert any("quick-crazyhouse/elo_vs_nodes.csv row 1" in line for line in err), err
    assert "no finding: " in text and "quick-crazyhouse" in text


def test_the_answer_page_shows_where_each_paradigm_was_played(tmp_path: Path) -> None:
    """Issue 78: the paradigm question opens with a grid, each paradigm × {nodes, calls, seconds} ×
    {chess, crazyhouse, bughouse}: the reports that played it there, "not measured" elsewhere; the
    paradigm is the player's search as the registry resolves it (per-budget players included)."""
    import json as _json

    from reports import html as page
    from reports import paradigms

    d = tmp_path / "ab-vs-mcts" / "rise-crazyhouse"
    d.mkdir(parents=True)
    (d / "ablation.md").write_text("# Ablation: rise-crazyhouse\n\nVariant crazyhouse.\n\n**Finding.** ubfm weaker.\n")
    (d / "ablation.csv").write_text("variant,axis,budget,games,score,elo,elo_low,elo_high\n"
                                    "ubfm,evals,256,100,0.0,-800,-800,-500\n"
                                    "alpha-beta-policy,movetime,0.3,100,0.1,-300,-400,-200\n")
    (d / "engines.json").write_text(_json.dumps({
        "baseline": {"engine": "rise-mcts"}, "ubfm@evals=256": {"engine": "rise-ubfm"},
        "alpha-beta-policy": {"engine": "rise-ab:policy_order=true"}}))
    b = tmp_path / "bughouse-vs-sjeng-gumbel"
    b.mkdir()
    (b / "teams.md").write_text("# Bughouse teams\n\nbughouse games.\n\n**Findings.** none.\n")
    (b / "teams.csv").write_text("row,team,opponent,tc,games,elo,elo_low,elo_high\n"
                                 "g,bughouse-gumbel,sjeng,60+0,40,-600,-600,-300\n")
    cells = paradigms.grid([("ab-vs-mcts/rise-crazyhouse", d, "crazyhouse"), ("bughouse-vs-sjeng-gumbel", b, "bughouse")])
    assert cells[("UBFM", "crazyhouse", "calls")] == ["ab-vs-mcts/rise-crazyhouse"]
    assert cells[("PUCT", "crazyhouse", "calls")] == ["ab-vs-mcts/rise-crazyhouse"]
    assert cells[("alpha-beta", "crazyhouse", "seconds")] == ["ab-vs-mcts/rise-crazyhouse"]
    assert cells[("Gumbel", "bughouse", "seconds")] == ["bughouse-vs-sjeng-gumbel"]
    assert ("UBFM", "chess", "calls") not in cells and ("UBFM", "crazyhouse", "seconds") not in cells
    assert paradigms.paradigm_of("rise-mcts:mcgs=true") == "MCGS" and paradigms.paradigm_of("fairy-stockfish") is None
    text = page.index_page(tmp_path).read_text()
    grid = text[text.index('data-grid="paradigms"'):text.index("</table>", text.index('data-grid="paradigms"'))]
    rows = {r.split("</th>")[0].split("<th>")[-1]: r for r in grid.split("<tr>")[3:]}
    assert set(rows) == set(paradigms.PARADIGMS)
    assert rows["UBFM"].count("not measured") == 8 and "ab-vs-mcts/rise-crazyhouse" in rows["UBFM"]
    assert rows["comparator"].count("not measured") == 9
