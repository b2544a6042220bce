"""Reading experiment configs (TOML) so that every error names the offending key and its line.

``tomllib`` parses; :class:`Source` maps each key path (``("engines", 2, "nodes")``) back to the
line that set it, and :class:`Section` hands out typed values, rejecting unknown keys.
"""
from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any, Callable
from experiments.paths import InputError, OutputError, check_dir, read_text

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r'^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\'))*)\s*=')
_INLINE_KEY = re.compile(r'([A-Za-z0-9_-]+)\s*=')

_REQUIRED = object()
MAX_INT = 10**15  # no count, seed or budget in a config is larger (SQLite's integers end at 2**63)


class ConfigError(ValueError):
    """A malformed config; the message starts with ``file:line:`` and names the key."""


def _split_key(k: str) -> tuple[str, ...]:
    return tuple(p.strip().strip('"').strip("'") for p in k.split("."))


class Source:
    """The text of a config and where each key was written."""

    def __init__(self, path: str | Path, text: str) -> None:
        self.path = str(path)
        self.lines: dict[tuple[Any, ...], int] = {}
        table: tuple[Any, ...] = ()
        counts: dict[tuple[Any, ...], int] = {}
        for no, line in enumerate(text.splitlines(), 1):
            m = _HEADER.match(line)
            if m and not _KEY.match(line):
                name = _split_key(m.group(2))
                if m.group(1) == "[[":
                    k = counts.get(name, -1) + 1
                    counts[name] = k
                    table = name + (k,)
                else:
                    table = name
                self.lines.setdefault(table, no)
                continue
            m = _KEY.match(line)
            if m:
                key = table + _split_key(m.group(1))
                self.lines.setdefault(key, no)
                rest = line[m.end():]
                if rest.strip().startswith("{"):
                    for sub in _INLINE_KEY.findall(rest):
                        self.lines.setdefault(key + (sub,), no)

    def line(self, key: tuple[Any, ...]) -> int | None:
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return None

    def where(self, key: tuple[Any, ...]) -> str:
        no = self.line(key)
        return f"{self.path}:{no}" if no else self.path


def key_text(key: tuple[Any, ...]) -> str:
    out = ""
    for k in key:
        out += f"[{k}]" if isinstance(k, int) else (("." if out else "") + str(k))
    return out


def resolve_config(path: str | Path) -> Path:
    """A config's file: ``path`` where it exists; else a shipped config by name (``quick-crazyhouse``,
    ``zh-switches.toml``) or by its path in a checkout (``experiments/configs/NAME.toml``), so the
    documented commands run from any folder."""
    from importlib import resources

    p = Path(path)
    if p.exists() or str(path) == "":
        return p
    name = p.name if p.name.endswith(".toml") else f"{p.name}.toml"
    shipped = Path(str(resources.files("experiments") / "configs")) / name
    if shipped.is_file() and (len(p.parts) == 1 or p.parent.as_posix().endswith("experiments/configs")):
        return shipped
    return p


def load(path: str | Path) -> "Section":
    p = resolve_config(path)
    try:
        text = read_text(p, "config")
    except InputError as e:
        raise ConfigError(str(e)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: TOML syntax error: {e}") from None
    return Section(data, (), Source(p, text))


class Section:
    """A table of the config with typed access; :meth:`done` rejects keys nobody asked for."""

    def __init__(self, data: dict[str, Any], key: tuple[Any, ...], src: Source) -> None:
        self.data = data
        self.key = key
        self.src = src
        self.used: set[str] = set()

    def error(self, k: str | None, msg: str) -> ConfigError:
        key = self.key + ((k,) if k is not None else ())
        return ConfigError(f"{self.src.where(key)}: key {key_text(key)!r}: {msg}")

    def has(self, k: str) -> bool:
        return k in self.data

    def get(self, k: str, kind: type | tuple[type, ...], default: Any = _REQUIRED,
            check: Callable[[Any], str | None] | None = None) -> Any:
        self.used.add(k)
        if k not in self.data:
            if default is _REQUIRED:
                raise self.error(k, "missing (required)")
            return default
        v = self.data[k]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
            names = " or ".join(_type_name(t) for t in kinds)
            raise self.error(k, f"expected {names}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.error(k, f"must be a finite number, got {v!r}")
        if isinstance(v, int) and not isinstance(v, bool) and not -MAX_INT <= v <= MAX_INT:
            raise self.error(k, f"{v} is out of range (at most {MAX_INT:.0e} in size)")
        if check is not None:
            msg = check(v)
            if msg:
                raise self.error(k, msg)
        return v

    def choice(self, k: str, choices: tuple[str, ...], default: Any = _REQUIRED) -> str:
        return str(self.get(k, str, default, lambda v: None if v in choices else f"must be one of {', '.join(choices)}"))

    def positive(self, k: str, default: Any = _REQUIRED) -> Any:
        return self.get(k, int, default, lambda v: None if v >= 1 else "must be at least 1")

    def table(self, k: str) -> "Section":
        v = self.get(k, dict, {})
        return Section(v, self.key + (k,), self.src)

    def tables(self, k: str, required: bool = False) -> list["Section"]:
        v = self.get(k, list, _REQUIRED if required else [])
        out = []
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                raise ConfigError(f"{self.src.where(self.key + (k, i))}: key {key_text(self.key + (k, i))!r}: "
                                  f"expected a table ([[{k}]]), got {item!r}")
            out.append(Section(item, self.key + (k, i), self.src))
        return out

    def only(self, *known: str) -> None:
        """Reject keys outside ``known`` now (a misspelt key is then reported as such)."""
        for k in self.data:
            if k not in known:
                raise self.error(k, f"unknown key (known: {', '.join(sorted(known))})")

    def done(self) -> None:
        for k in self.data:
            if k not in self.used:
                raise self.error(k, f"unknown key (known: {', '.join(sorted(self.used))})")


def even_games(n: int) -> str | None:
    """A check for a pairing's games: even (each side has White as often) and at least one pair."""
    return None if n >= 2 and n % 2 == 0 else "must be even and at least 2"


def writable_dir(v: str) -> str | None:
    """A ``check`` for an output folder key: why it cannot be written, or None."""
    try:
        check_dir(v, "folder")
    except OutputError as e:
        return str(e)
    return None


def _type_name(t: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true/false", list: "an array",
            dict: "a table"}.get(t, t.__name__)
