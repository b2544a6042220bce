"""The package installs (issue 22): every data file the code reads is package data, found through
importlib.resources, and an installed copy plays a RISE match from any directory (slow)."""
from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _package_data() -> dict[str, list[str]]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data: dict[str, list[str]] = cfg["tool"]["setuptools"]["package-data"]
    return data


def _shipped(path: Path) -> bool:
    rel = path.resolve().relative_to(ROOT)
    pkg, name = ".".join(rel.parts[:-1]), rel.parts[-1]
    return any(fnmatch.fnmatch(name, pat) for pat in _package_data().get(pkg, []))


def test_every_data_file_the_code_reads_is_package_data() -> None:
    from engines import catalog
    from evaluators import neural
    from experiments.harness import openings

    assert _shipped(catalog.BUILTIN_FILE)
    weights = sorted(Path(neural.WEIGHTS_DIR).glob("*.pt"))
    assert weights and all(_shipped(w) and _shipped(w.with_suffix(".md")) for w in weights)
    suites = sorted(openings.SUITE_DIR.glob("*.epd"))
    assert suites and all(_shipped(s) for s in suites)
    assert all(_shipped(c) for c in (ROOT / "experiments" / "configs").glob("*.toml"))
    assert _shipped(ROOT / "reports" / "page.js")  # every report page inlines it
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "chess==1.11.2" in cfg["build-system"]["requires"]  # mypyc checks board/bughouse.py against it
    deps = " ".join(cfg["project"]["dependencies"])
    assert all(d in deps for d in ("torch==2.13.0", "scipy", "matplotlib", "chess"))
    assert set(cfg["project"]["optional-dependencies"]) >= {"ray", "openspiel"}


def test_python_dash_m_searchbench() -> None:
    out = subprocess.run([sys.executable, "-m", "searchbench", "engines"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0 and "rise-mcts" in out.stdout


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_an_installed_copy_plays_a_rise_match_from_any_directory(tmp_path: Path) -> None:
    """``pip install`` (the wheel build compiles the extensions) into a fresh target, then a match from
    an unrelated directory with only that target on the path (the dependencies from this venv)."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(target), str(ROOT)], check=True, timeout=1500, env={**os.environ, "SEARCHBENCH_PURE": "0"})
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import search.mcts, engines.catalog as r; "
                            "print(search.mcts.__file__); print(r.BUILTIN_FILE)"],
                           capture_output=True, text=True, cwd=work, env=env, check=True).stdout.split()
    assert all(p.startswith(str(target)) for p in where) and where[0].endswith(".so")
    out = subprocess.run([sys.executable, "-m", "searchbench", "match", "rise-mcts", "material-mcts", "--variant",
                          "crazyhouse", "--games", "2", "--nodes", "16", "--quiet"],
                         capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "2 played" in out.stdout and (work / "runs").is_dir()
    db = next((work / "runs").glob("*.sqlite"))
    out = subprocess.run([sys.executable, "-m", "searchbench", "report", str(db), "--out", "page.html"],
                         capture_output=True, text=True, cwd=work, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "window.searchbench = {" in (work / "page.html").read_text()  # page.js, from the installed package


@pytest.mark.package
@pytest.mark.timeout(1500)
def test_pip_install_into_a_fresh_venv_plays_a_rise_match(tmp_path: Path) -> None:
    """``pip install .`` into a fresh virtual environment (no packages but what the install brings: the
    declared dependencies are all a default code path needs) plays a RISE match from an unrelated
    directory in the default inference backend (issue 30: onnx was only an extra once ONNX Runtime
    became the default).  Run by ``make test`` whenever pyproject.toml, setup.py or the default
    inference (evaluators/base.py) changed since it last passed (``make package-check``)."""
    import json
    import sqlite3


    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # the pure build: what is checked here is the dependencies (the compiled build is test_build's)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], check=True, timeout=1200,
                   env={**env, "SEARCHBENCH_PURE": "1"})
    work = tmp_path / "elsewhere"
    work.mkdir()
    db = work / "m.sqlite"
    out = subprocess.run([str(venv / "bin" / "searchbench"), "match", "rise-mcts", "material-mcts", "--variant",
                          "crazyhouse", "--games", "2", "--nodes", "16", "--quiet", "--db", str(db)],
                         capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "2 played" in out.stdout and "error" not in out.stderr
    with sqlite3.connect(db) as con:
        settings = [json.loads(r[0]) for r in con.execute("SELECT white_settings FROM games UNION ALL "
                                                           "SELECT black_settings FROM games")]
    rise = [s for s in settings if s.get("evaluator") == "rise"]
    # the default (auto) runs int8 where the shipped verdict accepted it; the game records what ran
    from evaluators.onnx_runtime import int8_verdicts

    accepted = any(v.get("verdict") == "accepted" and v.get("network") == "rise_crazyhouse.pt"
                   for v in int8_verdicts().values())
    expected = "onnxruntime-int8" if accepted else "onnxruntime"
    assert len(rise) == 2 and all(s["inference"] == expected for s in rise)
