"""The catalogue of built-in engines (``engines/builtin.toml``: names, their specs, variants,
descriptions and the reports behind their defaults) and what it says about external programs: which
searches are protocols (:data:`PROTOCOLS`, :func:`is_external`), which programs the built-in external
engines run (:func:`builtin_programs`), and whether others may run (:func:`external_programs_allowed`,
``searchbench --no-external-programs``).  It imports no other engine module: the registry (names to
specs), the external engines and the factory all read it.
"""
from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import board
from engines.base import EngineError, EngineSpec

BUILTIN_FILE = Path(str(resources.files("engines") / "builtin.toml"))  # package data, installed or not


PROTOCOLS = ("uci", "xboard")


@dataclass(frozen=True)
class BuiltinInfo:
    spec: EngineSpec
    variants: tuple[str, ...]
    description: str
    #: option (or ``search``, ``evaluator``) -> the shipped report whose ablation chose that default
    #: (builtin.toml's ``evidence``)
    evidence: dict[str, str] = field(default_factory=dict)


def _load_builtins() -> dict[str, BuiltinInfo]:
    with BUILTIN_FILE.open("rb") as f:
        data = tomllib.load(f)
    out: dict[str, BuiltinInfo] = {}
    for name, entry in data.get("engines", {}).items():
        options = {str(k): _toml_text(v) for k, v in entry.get("options", {}).items()}
        spec = EngineSpec(name, str(entry["evaluator"]), str(entry["search"]), options)
        out[name] = BuiltinInfo(spec, tuple(entry.get("variants", board.VARIANTS)), str(entry.get("description", "")),
                                {str(k): str(v) for k, v in entry.get("evidence", {}).items()})
    return out


def _toml_text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_BUILTINS: dict[str, BuiltinInfo] | None = None


def builtins() -> dict[str, BuiltinInfo]:
    """Built-in engines by name, in file order."""
    global _BUILTINS
    if _BUILTINS is None:
        _BUILTINS = _load_builtins()
    return _BUILTINS


def is_external(spec: EngineSpec) -> bool:
    return spec.search in PROTOCOLS


#: environment switch of ``searchbench --no-external-programs`` (inherited by worker processes)
NO_EXTERNAL_ENV = "SEARCHBENCH_NO_EXTERNAL"


def external_programs_allowed() -> bool:
    """False under ``--no-external-programs``: then a spec may name only the built-in external
    engines, with the adapter's own options (nothing passed through to the program)."""
    return os.environ.get(NO_EXTERNAL_ENV, "") in ("", "0")


def builtin_programs() -> set[str]:
    """The programs the built-in external engines run (``stockfish``, ``fairy-stockfish``, ``sjeng``)."""
    return {b.spec.evaluator for b in builtins().values() if is_external(b.spec)}


#: where Debian installs game engines (searched after PATH)
SEARCH_DIRS = ("/usr/games", "/usr/local/games")


def find_program(name: str) -> str:
    """The executable for ``name``: a path, else PATH, else /usr/games; EngineError if none.  The one
    finder of external programs (engines, data generation, opening generation, bughouse seats): under
    ``--no-external-programs`` only a built-in engine's program, by name, is found."""
    if not external_programs_allowed() and (os.sep in name or name not in builtin_programs()):
        raise EngineError(f"external programs are disabled (--no-external-programs): {name!r} is not the program "
                          f"of a built-in engine ({', '.join(sorted(builtin_programs()))})")
    if os.sep in name:
        if os.path.isfile(name) and os.access(name, os.X_OK):
            return name
        raise EngineError(f"engine program {name!r} not found or not executable")
    found = shutil.which(name)
    if found:
        return found
    for d in SEARCH_DIRS:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise EngineError(f"engine {name!r} is not installed (looked in PATH and {', '.join(SEARCH_DIRS)}; "
                      f"`make sysdeps` installs stockfish, fairy-stockfish and sjeng)")
