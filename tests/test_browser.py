"""The report pages (:mod:`reports.html`) in a real browser: Debian's ``chromium`` and
``chromium-driver``, headless, through Selenium.  ``make test`` installs them; where no browser is
installed these tests are skipped with the reason.

Checked: the page loads with no console errors; the figure has one mark per player; a click on a
table row lists that player's games; stepping a game puts on the board (and in the pockets) the
position python-chess computes for that ply, for every ply of random chess and crazyhouse games
(castling, en passant, promotions, drops and captured promoted pieces included)."""
from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any, Iterator

import chess
import chess.variant
import pytest

from reports import html as page
from experiments.cli.main import main

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium") if p and Path(p).exists()), None)
DRIVER = next((p for p in (shutil.which("chromedriver"), "/usr/bin/chromedriver") if p and Path(p).exists()), None)
try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

pytestmark = [pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="no chromium and chromedriver installed "
                                 "(Debian: apt-get install chromium chromium-driver; make test installs them)"),
              pytest.mark.skipif(not HAVE_SELENIUM, reason="selenium is not installed (requirements.txt)")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,1000"):
        o.add_argument(a)
    o.binary_location = str(CHROMIUM)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(str(DRIVER)), options=o)
    try:
        yield d
    finally:
        d.quit()


def _open(browser: Any, path: Path) -> None:
    browser.get(path.resolve().as_uri())
    browser.get_log("browser")  # nothing from an earlier page


def _errors(browser: Any) -> list[Any]:
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


def _random_game(variant: str, seed: int, plies: int = 160) -> tuple[str, list[str]]:
    """A random legal game that prefers the moves a board must get right: castling, en passant,
    promotions, drops and captures (of promoted pieces too, which go back to the pocket as pawns)."""
    rng = random.Random(seed)
    b: chess.Board = chess.variant.CrazyhouseBoard() if variant == "crazyhouse" else chess.Board()
    start = b.fen()
    moves = []
    for _ in range(plies):
        legal = list(b.legal_moves)
        if not legal:
            break
        special = [m for m in legal if b.is_castling(m) or b.is_en_passant(m) or m.promotion or m.drop
                   or b.is_capture(m)]
        m = rng.choice(special) if special and rng.random() < 0.6 else rng.choice(legal)
        moves.append(m.uci())
        b.push(m)
    return start, moves


def _expected(variant: str, fen: str, moves: list[str], ply: int) -> tuple[str, str]:
    b: chess.Board = chess.variant.CrazyhouseBoard(fen) if variant == "crazyhouse" else chess.Board(fen)
    for u in moves[:ply]:
        b.push_uci(u)
    squares = "".join((b.piece_at(sq).symbol() if b.piece_at(sq) else ".")  # type: ignore[union-attr]
                      for rank in range(7, -1, -1) for sq in (chess.square(f, rank) for f in range(8)))
    pockets = ""
    if variant == "crazyhouse":
        zb: Any = b
        pockets = "".join(f"{zb.pockets[color].count(pt)}" for color in (chess.WHITE, chess.BLACK)
                          for pt in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, chess.PAWN))
    return squares, pockets


READ = """
searchbench.go(arguments[0]);
var sq = Array.prototype.map.call(document.querySelectorAll('#sb-board .sq'), function (e) { return e.getAttribute('data-piece') || '.'; }).join('');
var pk = '';
['w', 'b'].forEach(function (s) { Array.prototype.forEach.call(document.querySelectorAll('#sb-pocket-' + s + ' .pk'), function (e) { pk += e.getAttribute('data-count'); }); });
return [sq, pk];
"""


@pytest.mark.parametrize("variant", ["chess", "crazyhouse"])
def test_every_ply_of_a_game_is_the_position_python_chess_computes(browser: Any, tmp_path: Path, variant: str) -> None:
    games = []
    for seed in range(4):
        fen, moves = _random_game(variant, seed)
        stats = [(i, i // 2, (i * 7) % 50 - 25, i % 9, i) for i in range(len(moves))]
        games.append(page.GameView(seed + 1, "A", "B", "*", "random", fen, moves, stats))  # type: ignore[arg-type]
    md = "# Random games\n\n| player | games |\n|---|---:|\n| A | 4 |\n"
    out = tmp_path / "p.html"
    out.write_text(page.render("Random games", variant, md, None, [], games))
    _open(browser, out)
    seen = {"drop": 0, "promotion": 0, "castling": 0, "en passant": 0}
    for g in games:
        browser.execute_script("searchbench.openGame(arguments[0])", g.id)
        b: chess.Board = chess.variant.CrazyhouseBoard(g.fen) if variant == "crazyhouse" else chess.Board(g.fen)
        for ply in range(len(g.moves) + 1):
            squares, pockets = browser.execute_script(READ, ply)
            want = _expected(variant, g.fen, g.moves, ply)
            assert (squares, pockets if variant == "crazyhouse" else "") == want, (g.id, ply, g.moves[:ply])
            if ply < len(g.moves):
                m = chess.Move.from_uci(g.moves[ply])
                seen["drop"] += bool(m.drop)
                seen["promotion"] += bool(m.promotion)
                seen["castling"] += b.is_castling(m)
                seen["en passant"] += b.is_en_passant(m)
                b.push(m)
    assert seen["castling"] and seen["promotion"] and (variant == "chess" or seen["drop"]), seen
    assert not _errors(browser)


@pytest.fixture(scope="module")
def match_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small crazyhouse match of two in-process engines (drops, pockets, statistics on every move)."""
    d = tmp_path_factory.mktemp("match")
    db = d / "m.sqlite"
    rc = main(["match", "material-ab", "material-mcts", "--variant", "crazyhouse", "--games", "6", "--nodes", "24",
               "--db", str(db), "--quiet"])
    assert rc == 0
    return db


def test_a_database_page_in_the_browser(browser: Any, match_db: Path, tmp_path: Path) -> None:
    from experiments.harness.store import Store

    out = tmp_path / "m.html"
    assert main(["report", str(match_db), "--out", str(out)]) == 0
    with Store(str(match_db), readonly=True) as st:
        games = st.games()
    players = sorted({g.white for g in games} | {g.black for g in games})
    _open(browser, out)
    assert not _errors(browser)
    marks = browser.find_elements("css selector", "circle.mark")
    assert sorted(m.get_attribute("data-player") for m in marks) == players  # one mark per player
    # a click on a ratings row lists that player's games
    row = browser.find_element("css selector", f'tr[data-player="{players[1]}"]')
    row.click()
    listed = browser.find_elements("css selector", "#sb-game-rows tr")
    assert len(listed) == sum(1 for g in games if players[1] in (g.white, g.black))
    # a click on a game and the "next" button step the board to python-chess's position
    listed[0].click()
    gid = int(listed[0].get_attribute("data-game"))
    g = next(x for x in games if x.id == gid)
    for _ in range(7):
        browser.find_element("id", "sb-next").click()
    squares = browser.execute_script("return Array.prototype.map.call(document.querySelectorAll('#sb-board .sq'), "
                                     "function (e) { return e.getAttribute('data-piece') || '.'; }).join('')")
    view = page.game_json(next(v for v in __import__("experiments.harness.webpage", fromlist=["views"]).views([g])),
                          "crazyhouse")
    assert squares == _expected("crazyhouse", view["fen"], g.moves, 7)[0]
    assert "ply 7 /" in browser.find_element("id", "sb-ply").text
    pgn = browser.find_element("id", "sb-pgn").get_attribute("value")
    assert f'[White "{g.white}"]' in pgn and pgn.strip().endswith(g.result)
    # sorting a table by a column reorders its rows
    head = browser.find_elements("css selector", "#sb-body table thead th")[1]  # Elo
    head.click()
    elos = [float(r.find_elements("css selector", "td")[1].text) for r in
            browser.find_elements("css selector", "#sb-body table tbody tr")]
    assert elos == sorted(elos)
    # the legend hides a family
    before = len(browser.find_elements("css selector", "circle.mark"))
    browser.find_elements("css selector", "g.legend")[0].click()
    assert len(browser.find_elements("css selector", "circle.mark")) < before
    assert not _errors(browser)


def test_the_shipped_report_pages_load(browser: Any) -> None:
    """Every shipped report page and the index open without a console error; each figure has a mark
    for every player its CSV rates on the first axis."""
    root = Path(__file__).resolve().parent.parent / "reports"
    pages = sorted(root.rglob(page.PAGE))
    assert root / page.PAGE in pages and len(pages) > 5
    for p in pages:
        _open(browser, p)
        assert not _errors(browser), p
        if p.parent == root:  # the answer page: every report once, under the question it answers
            links = browser.find_elements("css selector", "tr[data-report] a")
            assert len(links) == len(pages) - 1
            asked = [t.get_attribute("data-question") for t in browser.find_elements("css selector", "table[data-question]")]
            assert asked[:6] == ["paradigms", "switches", "speed", "networks", "selfplay", "two-boards"]
            assert not [t.text for t in browser.find_elements("css selector", "tr[data-report] td") if "`" in t.text]
            continue
        charts = browser.find_elements("css selector", "div.chart")
        assert charts and browser.find_elements("css selector", "circle.mark"), p


def _bughouse_expected(fens: str) -> tuple[str, str]:
    """Both boards' squares (a8 first) and pockets (Q R B N P, white then black, board A then B)."""
    squares, pockets = "", ""
    for fen in fens.split(" | "):
        place = fen.split()[0]
        pocket = place[place.index("[") + 1: place.index("]")] if "[" in place else ""
        place = place.split("[")[0].replace("~", "")
        for row in place.split("/"):
            for c in row:
                squares += "." * int(c) if c.isdigit() else c
        pockets += "".join(str(pocket.count(k if color == "w" else k.lower())) for color in "wb" for k in "QRBNP")
    return squares, pockets


def test_bughouse_games_step_on_both_boards(browser: Any, tmp_path: Path) -> None:
    """Random bughouse games (our rules core): every ply shows both boards and all four pockets as
    the game has them (a capture goes to the partner's pocket; promoted pieces come back as pawns)."""
    from board.bughouse import BOARD_LETTERS, BughouseGame
    from board.moves import move_to_uci

    games = []
    for seed in range(3):
        rng = random.Random(seed)
        bg = BughouseGame()
        fens, moves = [bg.fen()], []
        for _ in range(200):
            choices = [(b, m) for b in (0, 1) for m in bg.legal_moves(b)]
            if not choices:
                break
            b, m = rng.choice(choices)  # random play captures and drops plenty
            moves.append(f"{BOARD_LETTERS[b]}:{move_to_uci(m)}")
            bg.push(b, m)
            fens.append(bg.fen())
            if any(not bg.legal_moves(x) for x in (0, 1)):
                break
        games.append((page.GameView(seed + 1, "T1", "T2", "*", "random", fens[0], moves,
                                    [(1, 1, 0, 1, 1)] * len(moves)), fens))
    out = tmp_path / "b.html"
    out.write_text(page.render("Bughouse", "bughouse", "# Bughouse\n", None, [], [g for g, _ in games]))
    _open(browser, out)
    read_both = READ.replace("'#sb-board .sq'", "'#sb-board .sq, #sb-board-2 .sq'").replace(
        "['w', 'b'].forEach(function (s) {", "['w', 'b', 'w-2', 'b-2'].forEach(function (s) {")
    drops = 0
    for g, fens in games:
        browser.execute_script("searchbench.openGame(arguments[0])", g.id)
        assert len(browser.find_elements("css selector", ".board")) == 2
        for ply in range(len(g.moves) + 1):
            squares, pockets = browser.execute_script(read_both, ply)
            want_sq, want_pk = _bughouse_expected(fens[ply])
            # the page reads pockets w, b of A then w, b of B: the same order as _bughouse_expected
            assert (squares, pockets) == (want_sq, want_pk), (g.id, ply, g.moves[:ply])
        drops += sum("@" in m for m in g.moves)
    assert drops > 0
    assert not _errors(browser)


HOSTILE = ["<!--<script>", "</script><script>window.__pwned = 1</script>", "<img src=x onerror=\"window.__pwned = 2\">",
           "[x](javascript:window.__pwned=3)"]


def test_no_script_from_data_runs_in_a_page(browser: Any, tmp_path: Path) -> None:
    """Reliability round 4 (h01, h05): player names, report text and links carrying script never run
    it (a marker they would set stays unset), a javascript: link is not a link, and a non-finite number
    in a CSV does not stop the page's script (its figure and tables still render)."""
    from experiments.harness.store import GameRecord, Store

    db = tmp_path / "h.sqlite"
    with Store(db, lock=True) as st:
        for i, name in enumerate(HOSTILE):
            st.add(GameRecord(key=f"k{i}", run="r", match="m", pair=i, variant="chess", white=name, black="b",
                              white_settings={"engine": "material-ab"}, black_settings={"engine": "material-ab"},
                              opening="o", opening_fen=chess.STARTING_FEN, opening_moves=[], moves=["e2e4", "e7e5"],
                              result="1-0" if i % 2 else "0-1", reason="x"))
        st.add(GameRecord(key="bad", run="r", match="m", pair=9, variant="chess", white="a", black="b",
                          white_settings={"engine": "material-ab"}, black_settings={"engine": "material-ab"},
                          opening="o", opening_fen=chess.STARTING_FEN, opening_moves=[], moves=["e2e4", "zz99", "e7e5"],
                          result="1-0", reason="x"))  # a damaged row: its second move is no move
    out = tmp_path / "db.html"
    assert main(["report", str(db), "--out", str(out)]) == 0
    folder = tmp_path / "rep"
    folder.mkdir()
    (folder / "elo_vs_nodes.md").write_text("# <!--<script> report\n\nSee [here](javascript:window.__pwned=4) and "
                                            "[there](https://example.org).\n\n| player | x |\n|---|---|\n| <!--<script> | 1 |\n")
    # an infinite or NaN Elo is refused as the CSV is read (one line naming file, row and column:
    # tests/test_reliability5.py); the page's figure draws the finite rows
    (folder / "elo_vs_nodes.csv").write_text("family,engine,nodes,elo,lo,hi,games,score\n"
                                             "f,e,10,-3.5,-90,80,4,0.5\nf,e,20,12.5,1,20,4,0.5\n")
    page.folder_page(folder)
    for p in (out, folder / "index.html"):
        _open(browser, p)
        assert browser.execute_script("return window.__pwned === undefined")
        assert not _errors(browser), _errors(browser)
        assert browser.execute_script("return typeof searchbench") == "object"  # the page's script ran
        hrefs = [a.get_attribute("href") or "" for a in browser.find_elements("css selector", "a")]
        assert not any(h.lower().startswith("javascript") for h in hrefs)
    assert browser.find_elements("css selector", ".chart svg")  # the figure drawn
    # a stored game with a malformed move opens, stepping to where it breaks, and says so
    _open(browser, out)
    browser.execute_script("document.getElementById('sb-filter').value = 'a'; "
                           "document.getElementById('sb-filter').dispatchEvent(new Event('input'));")
    row = next(r for r in browser.find_elements("css selector", "#sb-game-rows tr") if "zz99" not in r.text
               and r.find_elements("css selector", "td")[1].text == "a")
    row.click()
    assert "move 2 (zz99) does not replay" in browser.find_element("id", "sb-vtitle").text
    assert "ply 0 / 1" in browser.find_element("id", "sb-ply").text
    assert not _errors(browser), _errors(browser)


def test_every_shipped_page_fits_a_1400_pixel_window(browser: Any) -> None:
    """No shipped page, the answer page included, scrolls sideways in a 1,400-pixel window: wide
    tables scroll inside their own box, long code wraps, the answer page's forest plots scale."""
    root = Path(__file__).resolve().parent.parent / "reports"
    browser.set_window_size(1400, 1000)
    try:
        wide = []
        for p in sorted(root.rglob(page.PAGE)):
            _open(browser, p)
            w = browser.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            if w[0] > w[1]:
                wide.append(f"{p.relative_to(root)}: {w[0]} > {w[1]} px")
            assert not _errors(browser), p
        assert not wide, wide
        _open(browser, root / page.PAGE)
        assert browser.execute_script("return document.querySelectorAll('svg.forest g').length") > 50
    finally:
        browser.set_window_size(1200, 1000)
