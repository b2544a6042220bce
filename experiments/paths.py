"""Output paths: checked before any work starts, created only when something is written.

Every command that writes (a database, a PGN, a report folder, a trained model, an opening suite)
calls :func:`check_file` or :func:`check_dir` on its outputs first, so a path that cannot work is
one line and exit code 2 before a game is played or a network trained, and a failed check leaves
no empty file or folder behind (nothing is created here).
"""
from __future__ import annotations

import os
from pathlib import Path


class OutputError(ValueError):
    """An output path that cannot be written (one-line message)."""


def _existing_ancestor(p: Path) -> Path:
    """The nearest ancestor of ``p`` (``p`` excluded) that exists."""
    q = p.parent if str(p.parent) else Path(".")
    while not q.exists() and q != q.parent:
        q = q.parent
    return q


def _check_creatable(p: Path, what: str) -> None:
    anc = _existing_ancestor(p)
    if not anc.is_dir():
        raise OutputError(f"cannot create {what} {str(p)!r}: {str(anc)!r} is not a directory")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise OutputError(f"cannot create {what} {str(p)!r}: directory {str(anc)!r} is not writable")


def check_file(path: str | Path, what: str = "output file") -> Path:
    """``path`` as a Path if it is a writable file or can be created; :class:`OutputError` if not."""
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{what} {str(p)!r} is a directory")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise OutputError(f"{what} {str(p)!r} is not writable")
        return p
    _check_creatable(p, what)
    return p


def check_dir(path: str | Path, what: str = "output directory") -> Path:
    """``path`` as a Path if it is a writable directory or can be created; :class:`OutputError` if not."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise OutputError(f"{what} {str(p)!r} exists and is not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {str(p)!r} is not writable")
        return p
    _check_creatable(p, what)
    return p
