"""Every documented command is tested: the fenced shell blocks (and the inline ``searchbench ...``
code) of README.md and docs/*.md are read, every ``searchbench`` line in them must name a subcommand that exists and only options that
subcommand has (its parser reads them: ``--help`` is built from the same parser), and the blocks
marked ``<!-- quick -->`` on the line before them are run (tiny sizes; exit code 0).  A broken
example fails ``make test``; the docs' relative links must lead to files that exist."""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from experiments.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?ms)^(<!-- quick -->\n)?```(?:sh|bash|shell|console)?\n(.*?)^```")


def _commands(text: str) -> list[tuple[str, bool]]:
    """(command line, quick) for every ``searchbench`` line of the page's fenced blocks (a line
    continued with a backslash joined; a ``#`` comment cut off)."""
    out = []
    for m in FENCE.finditer(text):
        quick = m.group(1) is not None
        block = m.group(2).replace("\\\n", " ")
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("$ "):
                line = line[2:]
            if not line.startswith("searchbench "):
                continue
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                words = line.split()
            out.append((shlex.join(words), quick))
    prose = FENCE.sub("", text).replace("\n", " ")  # inline commands in the text: checked, not run
    for span in re.findall(r"`(searchbench [^`]+)`", prose):
        try:
            out.append((shlex.join(shlex.split(span)), False))
        except ValueError:
            continue
    return out


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:  # argparse keeps its subparsers here
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


def check(words: list[str]) -> str | None:
    """Why the command line ``words`` (``searchbench ...``) is not one the parser knows (None: it is)."""
    parser: argparse.ArgumentParser = build_parser()
    known = _options(parser)
    rest = words[1:]
    while rest and rest[0].startswith("--") and rest[0] in known:
        rest = rest[1:]
    path = []
    while True:
        subs = _subparsers(parser)
        if not subs:
            break
        if not rest or rest[0] not in subs:
            return f"no subcommand {rest[0] if rest else '(none)'!r} after {' '.join(['searchbench', *path])}"
        path.append(rest[0])
        parser, rest = subs[rest[0]], rest[1:]
    opts = _options(parser)
    for w in rest:
        if w.startswith("--") and w.split("=")[0] not in opts:
            return f"{' '.join(path)} has no option {w.split('=')[0]}"
    return None


DOCUMENTED = [(p.relative_to(ROOT).as_posix(), cmd, quick) for p in PAGES for cmd, quick in _commands(p.read_text())]


def test_the_pages_document_commands() -> None:
    assert len(DOCUMENTED) >= 20 and {p for p, _, _ in DOCUMENTED} >= {"README.md", "docs/selfplay.md"}
    assert any(q for _, _, q in DOCUMENTED)


@pytest.mark.parametrize("page, cmd, quick", DOCUMENTED, ids=[f"{p}:{c[:60]}" for p, c, _ in DOCUMENTED])
def test_every_documented_command_exists(page: str, cmd: str, quick: bool) -> None:
    why = check(shlex.split(cmd))
    assert why is None, f"{page}: `{cmd}`: {why}"


@pytest.mark.parametrize("page, cmd", [(p, c) for p, c, q in DOCUMENTED if q])
def test_the_quick_documented_commands_run(page: str, cmd: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # what they write (runs/) goes here, not into the checkout
    assert main(shlex.split(cmd)[1:]) == 0, f"{page}: `{cmd}`"


PYTHON = re.compile(r"(?ms)^<!-- quick -->\n```python\n(.*?)^```")
SNIPPETS = [(p.relative_to(ROOT).as_posix(), m.group(1)) for p in PAGES for m in PYTHON.finditer(p.read_text())]


@pytest.mark.parametrize("page, code", SNIPPETS, ids=[p for p, _ in SNIPPETS])
def test_the_quick_python_examples_run(page: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, page, "exec"), {"__name__": "__docs__"})  # noqa: S102 - our own documentation


def test_the_notebook_example_is_documented() -> None:
    assert any(p == "docs/notebook.md" for p, _ in SNIPPETS)


def test_the_checker_refuses_what_does_not_exist() -> None:
    assert check(["searchbench", "matchx"]) is not None
    assert check(["searchbench", "match", "a", "b", "--gamez", "4"]) == "match has no option --gamez"
    assert check(["searchbench", "bench", "harness", "--engine", "rise-mcts"]) is None
    assert check(["searchbench", "targets", "--engine", "e", "--data", "d", "--reference", "400"]) is None


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_lead_to_files(page: Path) -> None:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^(https?:|mailto:|#)", target):
            continue
        if not (page.parent / target.split("#")[0]).exists():
            bad.append(target)
    assert not bad, f"{page.name}: {bad}"


def test_every_shipped_report_is_one_click_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    pages = sorted(p.parent.relative_to(ROOT / "reports").as_posix() for p in (ROOT / "reports").rglob("index.html")
                   if p.parent != ROOT / "reports" and "state" not in p.parts)
    assert pages and not [d for d in pages if f"(reports/{d}/" not in readme]


def _loaders() -> dict[str, object]:
    from experiments.harness import ablate, bughouse_report, scale, tournament
    from experiments.selfplay import loop

    return {"scale": scale.load, "ablate": ablate.load, "accept-int8": ablate.load, "tournament": tournament.load,
            "bughouse-report": bughouse_report.load, "rl": loop.parse}


CONFIG_COMMANDS = [(p, c) for p, c, _ in DOCUMENTED for w in [shlex.split(c)]
                   if len(w) > 2 and w[1] in ("scale", "ablate", "accept-int8", "tournament", "bughouse-report", "rl")
                   and not w[2].startswith(("CONFIG", "-")) and not re.search(r"[A-Z]{4}", w[2])]


def test_the_documented_configs_are_many() -> None:
    assert len(CONFIG_COMMANDS) >= 15


@pytest.mark.parametrize("page, cmd", CONFIG_COMMANDS, ids=[f"{p}:{c[:70]}" for p, c in CONFIG_COMMANDS])
def test_every_documented_config_loads_from_a_folder_outside_the_checkout(
        page: str, cmd: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user runs it from their own folder: the config (by its checkout path or by name), its
    openings and networks resolve; the only thing missing is data a documented command makes
    (``data/zh-fsf3000-b``: the one line names the datagen command)."""
    from experiments.harness.tomlconfig import ConfigError

    monkeypatch.chdir(tmp_path)
    words = shlex.split(cmd)
    try:
        _loaders()[words[1]](words[2])  # type: ignore[operator]
    except ConfigError as e:
        assert "searchbench datagen" in str(e), f"{page}: `{cmd}` from {tmp_path}: {e}"


PATHS = sorted({(p, w) for p, c, _ in DOCUMENTED for w in shlex.split(c)
                for w in [w.split("=", 1)[-1]] if w.startswith("experiments/") and w.endswith((".toml", ".epd"))
                and not re.search(r"[A-Z]{4}", w)})  # NETWORK, CONFIG: a placeholder


@pytest.mark.parametrize("page, path", PATHS, ids=[f"{p}:{w}" for p, w in PATHS])
def test_every_documented_config_or_suite_path_resolves_outside_the_checkout(
        page: str, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.harness.openings import resolve_suite
    from experiments.harness.tomlconfig import resolve_config

    monkeypatch.chdir(tmp_path)
    found = resolve_config(path) if path.endswith(".toml") else resolve_suite(path)
    assert found.is_file(), f"{page}: {path} does not resolve from {tmp_path}"


@pytest.mark.parametrize("cmd", ["scale quick-crazyhouse", "ablate zh-switches", "rl rl-crazyhouse-value"])
def test_a_shipped_config_by_name_loads_from_an_empty_folder(cmd: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.harness.tomlconfig import ConfigError

    monkeypatch.chdir(tmp_path)
    sub, name = cmd.split()
    try:
        _loaders()[sub](name)  # type: ignore[operator]
    except ConfigError as e:
        assert "searchbench datagen" in str(e), e
    assert not any(tmp_path.iterdir())  # loading writes nothing


def test_each_command_is_registered_by_the_module_the_cli_names() -> None:
    """A command's run imports only its own module (experiments.cli.main.COMMANDS): each module
    registers exactly the commands the table gives it, and the table names every command."""
    import importlib

    from experiments.cli import main as cli_main

    found: dict[str, str] = {}
    for name in cli_main.COMMAND_MODULES:
        p = argparse.ArgumentParser()
        sub = p.add_subparsers()
        mod = importlib.import_module(name)
        if hasattr(mod, "register"):
            mod.register(sub)
        found.update(dict.fromkeys(sub.choices, name))
    assert found == cli_main.COMMANDS
    assert set(_subparsers(build_parser("uci"))) == {"perft", "bench", "engines", "uci"}
