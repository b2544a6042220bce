"""Input and output paths: checked before any work starts, created only when something is written.

Every command that writes (a database, a PGN, a report folder, a trained model, an opening suite)
calls :func:`check_file` or :func:`check_dir` on its outputs first, so a path that cannot work is
one line and exit code 2 before a game is played or a network trained, and a failed check leaves
no empty file or folder behind.  Whether a folder can be created is found out by trying (a
temporary folder made and removed in the nearest existing ancestor): ``access()`` says yes to root
even under ``/proc``.  A symbolic link that points nowhere is refused (writing through it would
create a file elsewhere).

Every file the suite reads as text (configs, opening suites) goes through :func:`read_text`: a
regular file only (never ``/dev/zero`` or a pipe), at most a size limit, and a decoding error that
names the file.
"""
from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

MAX_TEXT_BYTES = 64 << 20  # a config or an opening suite is far smaller


class OutputError(ValueError):
    """An output path that cannot be written (one-line message)."""


class InputError(ValueError):
    """An input file that cannot be read as what it should be (one-line message)."""


def _existing_ancestor(p: Path) -> Path:
    """The nearest ancestor of ``p`` (``p`` excluded) that exists."""
    q = p.parent if str(p.parent) else Path(".")
    while not q.exists() and q != q.parent:
        q = q.parent
    return q


def _check_creatable(p: Path, what: str) -> None:
    if p.is_symlink():
        raise OutputError(f"{what} {str(p)!r} is a symbolic link to a missing file; give the target itself")
    anc = _existing_ancestor(p)
    if not anc.is_dir():
        raise OutputError(f"cannot create {what} {str(p)!r}: {str(anc)!r} is not a directory")
    try:  # a real try: access() answers yes to root even where nothing can be made (/proc)
        os.rmdir(tempfile.mkdtemp(prefix=".searchbench-probe-", dir=anc))
    except OSError as e:
        raise OutputError(f"cannot create {what} {str(p)!r}: directory {str(anc)!r}: {e.strerror}") from None


def check_file(path: str | Path, what: str = "output file", regular: bool = False) -> Path:
    """``path`` as a Path if it is a writable file or can be created; :class:`OutputError` if not.
    ``regular``: an existing path must be a regular file (a database is never a device)."""
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{what} {str(p)!r} is a directory")
    if p.exists():
        if regular and not p.is_file():
            raise OutputError(f"{what} {str(p)!r} is not a regular file")
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
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".searchbench-probe-", dir=p))
        except OSError as e:
            raise OutputError(f"{what} {str(p)!r} is not writable: {e.strerror}") from None
        return p
    _check_creatable(p, what)
    return p


def ensure_parent(path: str | Path, what: str = "output file") -> None:
    """Create the folder that will hold ``path`` (as the database's is), one line if it cannot be."""
    parent = Path(path).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create the folder of {what} {str(path)!r}: {e.strerror}") from None


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; :class:`InputError` otherwise."""
    p = Path(path)
    try:
        if not p.exists():
            raise InputError(f"cannot read {what} {str(p)!r}: no such file")
        if not p.is_file():
            raise InputError(f"cannot read {what} {str(p)!r}: not a regular file")
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(f"cannot read {what} {str(p)!r}: {e.strerror}") from None
    if len(data) > limit:
        raise InputError(f"{what} {str(p)!r} is larger than {limit >> 20} MB: refusing to read it")
    return data


def read_text(path: str | Path, what: str = "file", limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a regular file (see :func:`read_bytes`); a decoding error names the file."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {str(path)!r} is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})"
                         ) from None


def read_json(path: str | Path, what: str = "file") -> object:
    """The JSON value of a regular text file (:func:`read_text`); :class:`InputError` naming the file
    if it cannot be read or is not JSON (the one reader of the run folders' small JSON records)."""
    import json

    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {str(path)!r} is not JSON ({e})") from None


#: files that make a run folder worth keeping after a failure (a run resumes from them)
RUN_KEEP: tuple[str, ...] = ("checkpoint.pt", "model.pt")


class run_dir:
    """``with run_dir(path):`` the output folder of a training run, made if missing.  If the body
    fails (a refused input, a bad split, an interrupt before the first checkpoint) and this run made
    the folder, it is removed again with the parents it made, unless it holds something a rerun
    resumes from (:data:`RUN_KEEP`): a refused run leaves no empty folder or lone ``command.txt``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.new = [d for d in (self.path, *self.path.parents) if not d.exists()]

    def __enter__(self) -> Path:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"cannot create output folder {str(self.path)!r}: {e.strerror}") from None
        return self.path

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None or not self.new or any((self.path / k).exists() for k in RUN_KEEP):
            return
        import shutil

        shutil.rmtree(self.path, ignore_errors=True)
        for d in self.new[1:]:
            try:
                d.rmdir()
            except OSError:
                break


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask (read by setting it and back, under a lock: there is no getter)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def require_regular(path: str | Path, what: str = "file") -> None:
    """:class:`InputError` naming ``path`` if something that is not a regular file (a FIFO, a device, a
    folder, a link) is there: reading a FIFO would wait forever for a writer.  Nothing there is fine."""
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise InputError(f"cannot read {what} {str(path)!r}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {str(path)!r} is not a regular file (a link, FIFO, device or folder): move it away")


def write_atomic(path: str | Path, data: bytes | str, what: str = "file") -> None:
    """Write ``data`` to ``path`` as a whole or not at all (:func:`save_atomic`: a fresh temporary
    file beside it, synced, then renamed over ``path``; a link at ``path`` is replaced, not followed)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())

    save_atomic(path, write, what)


def save_atomic(path: str | Path, save: "Callable[[str], object]", what: str = "file") -> None:
    """Write ``path`` as a whole or not at all, with a writer that takes a file name (``torch.save``,
    ``np.savez``, ``savefig``): ``save(tmp)`` writes a fresh temporary name beside ``path`` (made with
    ``O_EXCL``, so a planted ``.tmp`` name or link is never written through), which is then given the
    mode ``open`` would give a new file (0666 less the umask) and renamed over it (a link at ``path`` is
    replaced, not followed); a failure (a full disk, or the writer's own
    error) removes what it left and raises :class:`OutputError` naming ``path``."""
    p = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp" + p.suffix, dir=p.parent)
        os.close(fd)
    except OSError as e:
        raise OutputError(f"cannot write {what} {str(p)!r}: {e.strerror}") from None
    try:
        save(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from the user's group
        os.replace(tmp, p)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, (OSError, RuntimeError)):  # torch reports a full disk as a RuntimeError
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0] if str(e) else type(e).__name__
            raise OutputError(f"cannot write {what} {str(p)!r}: {why}") from None
        raise


def save_figure(fig: Any, path: str | Path, **kw: Any) -> None:
    """A matplotlib figure written as :func:`save_atomic` writes (the format from ``path``'s suffix)."""
    save_atomic(path, lambda tmp: fig.savefig(tmp, format=Path(path).suffix[1:], **kw), "figure")


def csv_text(rows: "Iterable[Sequence[Any]]") -> str:
    """Rows as CSV text (for :func:`write_atomic`)."""
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def append_line(path: str | Path, line: str, what: str = "journal") -> None:
    """Append one line (``line`` without its newline) to a journal, durably: the file is opened without
    following a link (a planted link is refused, never written through); a line torn by an earlier
    kill or full disk (no newline at the end of the file) is cut off first, so the new line never
    glues onto it; a write that fails part way is cut back to where it began."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        raise OutputError(f"cannot append to {what} {str(path)!r}: {e.strerror}") from None
    try:
        end = os.fstat(fd).st_size
        good = _last_newline_end(path, end)
        if good != end:
            os.ftruncate(fd, good)
        data = (line + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        except OSError as e:
            try:
                os.ftruncate(fd, good)
            except OSError:
                pass
            raise OutputError(f"cannot append to {what} {str(path)!r}: {e.strerror}") from None
    finally:
        os.close(fd)


def _last_newline_end(path: str | Path, size: int) -> int:
    """The offset just past the last newline of the file's first ``size`` bytes (0 if none)."""
    if size == 0:
        return 0
    with open(path, "rb") as f:
        pos = size
        while pos > 0:
            step = min(pos, 1 << 16)
            f.seek(pos - step)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                return pos - step + i + 1
            pos -= step
    return 0


class DirLock:
    """``with DirLock(folder, what):`` one run at a time in a folder: an exclusive ``flock`` on
    ``folder/.lock`` (opened without following a link), held for the run's life and released by the
    kernel when the process ends (``kill -9`` included); a second run is refused at once with one line
    naming the first's pid."""

    def __init__(self, folder: str | Path, what: str = "run folder") -> None:
        self.path = Path(folder) / ".lock"
        self.what = what
        self.fd: int | None = None

    def __enter__(self) -> "DirLock":
        import fcntl

        try:  # non-blocking: a FIFO planted at the name must not hang the open
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as e:
            raise OutputError(f"cannot lock {self.what} {str(self.path.parent)!r}: {str(self.path)!r}: {e.strerror}") from None
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OutputError(f"cannot lock {self.what} {str(self.path.parent)!r}: {str(self.path)!r} is not a regular "
                              "file (move it away)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                pid = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            finally:
                os.close(fd)
            raise OutputError(f"{self.what} {str(self.path.parent)!r} is in use by another run (pid {pid}); "
                              "wait for it to finish or give another folder") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
