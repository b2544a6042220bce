"""The house rules of the layout, checked on the source: imports go one way (board <- evaluators <-
search <- engines <- reports <- experiments), a search sees evaluators only through
evaluators/base.py, no module outside board/ exceeds ~800 lines nor a function ~120."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["board", "evaluators", "search", "engines", "reports", "experiments"]


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _sources(top: str) -> list[Path]:
    return sorted((ROOT / top).rglob("*.py"))


def test_imports_go_one_way() -> None:
    bad = []
    for top in ORDER:
        for p in _sources(top):
            for line, mod in _imports(p):
                head = mod.split(".")[0]
                if head in ORDER and ORDER.index(head) > ORDER.index(top):
                    bad.append(f"{p.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, bad


def test_searches_see_evaluators_only_through_the_interface() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p in _sources("search") for line, mod in _imports(p)
           if mod.startswith("evaluators") and mod not in ("evaluators.base",)]
    assert not bad, bad


def test_module_and_function_sizes() -> None:
    big = []
    for top in ORDER[1:]:
        for p in _sources(top):
            text = p.read_text()
            if text.count("\n") > 850:
                big.append(f"{p.relative_to(ROOT)}: {text.count(chr(10))} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                    if node.end_lineno - node.lineno + 1 > 130:
                        big.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not big, big
