"""The house rules of the layout, checked on the source: imports go one way (board <- evaluators <-
search <- engines <- reports <- experiments) and round no circle, a search sees evaluators only through
evaluators/base.py, no module outside board/ exceeds ~800 lines nor a function ~120, no module of
search/ 600 lines, and no variant's name is written outside board/ (code asks board.variants)."""
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


def test_search_modules_stay_small() -> None:
    """No search module over 480 lines, and the MCTS's settings module within 250 (its parts'
    settings sit beside their rules)."""
    big = [f"{p.relative_to(ROOT)}: {p.read_text().count(chr(10))} lines" for p in _sources("search")
           if p.read_text().count("\n") > 480]
    assert not big, big
    assert (ROOT / "search" / "mcts_config.py").read_text().count("\n") <= 250


def test_no_search_overrides_a_signature() -> None:
    """A search composes the driver instead of changing its methods' signatures in a subclass."""
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in _sources("search")
           for i, line in enumerate(p.read_text().splitlines(), 1) if "type: ignore[override]" in line]
    assert not bad, bad


def test_no_variant_name_outside_board() -> None:
    """A variant's facts live on its record (board/variants.py): code outside board/ asks
    ``variant_of(name).pockets`` or uses ``CRAZYHOUSE.name``, it never writes "crazyhouse"."""
    from board.variants import ALL

    names = {v.name for v in ALL}
    found = [f"{p.relative_to(ROOT)}:{node.lineno} {node.value!r}" for top in ORDER[1:] for p in _sources(top)
             for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names]
    assert not found, found


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circles() -> None:
    """No two modules import each other, directly or round a loop, at the top or inside a function
    (a function-local import that only dodges a circle is still a circle): Tarjan's strongly
    connected components of the import graph, every one a single module."""
    modules = {_module_of(p): p for top in ORDER for p in _sources(top)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m, p in modules.items():
        for node in ast.walk(ast.parse(p.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for n in names:
                if n in modules and n != m and modules[n].name != "__init__.py":
                    graph[m].add(n)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan (recursive: the graph is a few hundred modules)
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    assert not circles, circles


def test_function_local_imports_only_defer_a_heavy_dependency() -> None:
    """The project's own modules are imported at the top of a module; a function-local import of one
    defers a heavy dependency (torch, onnxruntime, ray, matplotlib, or asyncio for a command's start-up)
    and says which on its line.  At most 60 of them."""
    local, silent = [], []
    for top in ORDER:
        for p in _sources(top):
            lines = p.read_text().splitlines()
            for fn in ast.walk(ast.parse(p.read_text())):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                            else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                    if isinstance(node, ast.ImportFrom) and node.level or any(m.split(".")[0] in ORDER for m in mods):
                        where = f"{p.relative_to(ROOT)}:{node.lineno}"
                        local.append(where)
                        if "# deferred: loads " not in lines[(node.end_lineno or node.lineno) - 1]:
                            silent.append(where)
    assert not silent, silent
    assert len(local) <= 60, len(local)


def test_no_rule_name_is_compared_outside_search() -> None:
    """Far layers ask a search part for its facts (``search.mcts_rules.root_rule_class(cfg).SELFPLAY``,
    ``.describe``), they do not compare or look up its name: no ``cfg.root_rule`` (``score_formula``,
    ``q_transform``) in a comparison or as a table key outside search/."""
    names = {"root_rule", "score_formula", "q_transform"}

    def rule_name(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in names
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in names)

    found = []
    for top in ORDER:
        if top == "search":
            continue
        for p in _sources(top):
            for node in ast.walk(ast.parse(p.read_text())):
                if isinstance(node, ast.Compare) and any(rule_name(x) for x in (node.left, *node.comparators)) \
                        or isinstance(node, ast.Subscript) and rule_name(node.slice):
                    found.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
