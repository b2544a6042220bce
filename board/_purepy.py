"""``SEARCHBENCH_PURE=1``: import the .py sources even where compiled mypyc modules sit beside them.

Installed by ``board/__init__.py`` (every compiled package imports ``board`` first), so the test suite
runs the same code uncompiled without deleting the build.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Sequence

PACKAGES = ("board", "search", "evaluators", "engines", "experiments")


class _SourceFirstFinder:
    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] not in PACKAGES or path is None:
            return None
        leaf = name.rsplit(".", 1)[-1]
        for entry in path:
            candidate = os.path.join(entry, leaf + ".py")
            if os.path.isfile(candidate):
                loader = importlib.machinery.SourceFileLoader(name, candidate)
                return importlib.util.spec_from_file_location(name, candidate, loader=loader)
        return None


def pure_requested() -> bool:
    return os.environ.get("SEARCHBENCH_PURE") == "1"


def install_if_requested() -> None:
    if pure_requested() and not any(isinstance(f, _SourceFirstFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirstFinder())
