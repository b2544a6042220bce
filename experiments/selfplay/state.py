"""The small state of a self-play loop (:mod:`experiments.selfplay.loop`), to commit and carry to a new
machine: ``searchbench rl CONFIG --state-to DIR`` copies it out of the loop's folder after the run,
``--state-from DIR`` copies it into an empty loop folder before the run, which then resumes where the
first machine stopped.

The state is what later rounds and the report need and nothing that can be made again: the run's
record (``loop.json``), gate 0, the calibration and round 0's held-out figures; each arm's
``state.json``; every round's trained network (``model.pt``), its metrics and command, its clocks and
model card, its self-play shards or (bughouse) game databases (the replay window); and each arm's last optimizer state
(``checkpoint.pt`` of its newest round: the next round carries its momentum).  An arm's self-play
shards travel as one archive, ``ARM/window.tar.xz`` (:data:`WINDOW`): their arrays uncompressed in a
tar, then xz, 0.6 of the shards' own size (each shard's arrays are zlib-compressed one by one);
``--state-from`` writes the shards back, array for array the same.  Not the rating's games
(``rate.sqlite``, the games of a finished report are in its page), the supervised samples (drawn again
from their seed), the journals or the calibration's own networks.
"""
from __future__ import annotations

import io
import json
import lzma
import os
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from experiments.paths import InputError, OutputError, check_dir, read_json, save_atomic, write_atomic
from experiments.harness.tomlconfig import ConfigError
from experiments.selfplay.config import STATE, Arm, LoopConfig, State, same_run, weights_of
from experiments.training import datagen

def cpu_now() -> float:
    """Process CPU seconds so far: this process (every thread) and its finished, waited-for children
    (self-play's worker processes once their pool has closed), user and system."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class StageClock:
    """``with StageClock(folder, stage) as clock:`` the wall seconds and process CPU seconds
    (:func:`cpu_now`) a stage has run in all, across interruptions: kept in
    ``folder/clock-STAGE.json``, written every :attr:`TICK` seconds while the stage runs and at its
    end, so a kill loses at most that much of the run's cost (the report's CPU hours count every
    attempt, not only the one that finished; a killed attempt's worker processes are not counted)."""

    TICK = 10.0

    def __init__(self, folder: str, stage: str) -> None:
        self.path = os.path.join(folder, f"clock-{stage}.json")
        self.base = self.cpu_base = 0.0
        if os.path.lexists(self.path):
            try:
                d = read_json(self.path, "stage clock")
                v, c = d.get("seconds"), d.get("cpu", 0.0)  # type: ignore[attr-defined]
                self.base = float(v) if isinstance(v, (int, float)) and 0 <= v < 1e9 else 0.0
                self.cpu_base = float(c) if isinstance(c, (int, float)) and 0 <= c < 1e9 else 0.0
            except (InputError, AttributeError):
                self.base = self.cpu_base = 0.0  # a damaged clock only loses the time it held
        self.t0 = time.monotonic()
        self.c0 = cpu_now()
        self._stop: Any = None

    @property
    def seconds(self) -> float:
        return round(self.base + time.monotonic() - self.t0, 1)

    @property
    def cpu(self) -> float:
        return round(self.cpu_base + cpu_now() - self.c0, 1)

    def _write(self) -> None:
        try:
            write_atomic(self.path, json.dumps({"seconds": self.seconds, "cpu": self.cpu}), "stage clock")
        except OutputError:
            pass  # the clock is bookkeeping: a full disk is met (and reported) by the stage itself

    def __enter__(self) -> "StageClock":
        import threading

        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.t0 = time.monotonic()
        self.c0 = cpu_now()
        self._stop = threading.Event()

        def tick() -> None:
            while not self._stop.wait(self.TICK):
                self._write()

        threading.Thread(target=tick, daemon=True, name="stage-clock").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._write()


#: an arm's self-play shards in the state, one archive (relative to the arm's folder)
WINDOW = "window.tar.xz"

#: files of the loop's folder itself
TOP = ("loop.json", "gate0.json", "calibration.json", "heldout-0.json", "targets.json")
#: files of a round's folder (``ARM/gen-NNN``), relative to it (the network only where resuming needs it)
ROUND = ("card.md", "clock-selfplay.json", "clock-reanalyse.json", "clock-train.json", "clock-gate.json",
         "offline.json", "train/metrics.csv", "train/command.txt")


def state_files(cfg: LoopConfig) -> list[str]:
    """The state's files, relative to the loop's folder (those that exist): what resuming needs, the
    records of every round, each arm's newest and best networks (older rounds' networks stay where
    they were made: their ratings and model cards are in the report), the newest round's optimizer
    state (written slim by :func:`export`) and the self-play games of the window.  A loop that gate 1
    stopped trains no more (a resume stops at the same round: its record keeps why), so the windows
    and optimizers are left out."""
    out = Path(cfg.out)
    states = [State(str(out / a.name / STATE)) for a in cfg.arms if (out / a.name / STATE).is_file()]
    stopped = any(r.get("gate1_stopped") for st in states for r in st.data.get("gens", {}).values())
    rel = [f for f in TOP if (out / f).is_file()]
    rel += sorted(p.relative_to(out).as_posix() for p in out.glob("calibrate/*/calibration.json"))
    rel += [f for f in ("offline-reference.json", "offline-round0/offline.json") if (out / f).is_file()]
    for arm in cfg.arms:
        if (out / arm.name / STATE).is_file():
            rel.append(f"{arm.name}/{STATE}")
        gens = sorted(out.glob(f"{arm.name}/gen-[0-9][0-9][0-9]"))
        trained = [g for g in gens if (g / "train" / "model.pt").is_file()]
        best = State(str(out / arm.name / STATE)).best if (out / arm.name / STATE).is_file() else 0
        keep = {trained[-1].name} if trained else set()
        keep.add(f"gen-{best:03d}")
        for g in gens:
            base = g.relative_to(out).as_posix()
            rel += [f"{base}/{f}" for f in ROUND if (g / f).is_file()]
            if g.name in keep and (g / "train" / "model.pt").is_file():
                rel.append(f"{base}/train/model.pt")
            sp = g / "selfplay"
            rel += [os.path.relpath(p, out) for p in datagen.shard_paths(str(sp))] if sp.is_dir() and not stopped else []
            rel += sorted(f"{base}/selfplay/{p.name}" for p in sp.glob("games*.sqlite"))  # bughouse self-play
            if (sp / "selfplay.json").is_file():
                rel.append(f"{base}/selfplay/selfplay.json")
        with_ck = [g for g in gens if (g / "train" / "checkpoint.pt").is_file()]
        if with_ck and not stopped:  # the newest round's optimizer (a round whose games are still being played has none)
            rel.append(f"{with_ck[-1].relative_to(out).as_posix()}/train/checkpoint.pt")
    return rel


def export(cfg: LoopConfig, dest: str | Path) -> int:
    """Copy the state into ``dest`` (its files replaced; a round's file an earlier export left there
    that this state no longer holds, such as the network and optimizer of a round no longer the
    newest, removed; others left); returns the files copied."""
    check_state_to(cfg, dest)
    files = state_files(cfg)
    shards = [f for f in files if _is_shard(f)]
    keep = set(files) - set(shards)
    for arm in cfg.arms:
        for old in Path(dest).glob(f"{arm.name}/gen-[0-9][0-9][0-9]/**/*"):
            if old.is_file() and not old.is_symlink() and old.relative_to(dest).as_posix() not in keep:
                old.unlink()
        mine = [f for f in shards if f.startswith(f"{arm.name}/")]
        window = Path(dest) / arm.name / WINDOW
        if mine:
            _inside(Path(dest), Path(dest) / arm.name)
            (Path(dest) / arm.name).mkdir(parents=True, exist_ok=True)
            _pack(Path(cfg.out), mine, window)
        elif window.is_file() and not window.is_symlink():
            window.unlink()  # a window this state no longer holds (a stopped loop's)
    for rel in sorted(keep):
        target = Path(dest) / rel
        _inside(Path(dest), target.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()  # replaced, never written through
        if rel.endswith("train/checkpoint.pt"):
            _slim_checkpoint(Path(cfg.out) / rel, target)
        else:
            shutil.copyfile(Path(cfg.out) / rel, target)
    return len(files)


def _is_shard(rel: str) -> bool:
    return "/selfplay/" in rel and rel.endswith(".npz")


def _pack(out: Path, shards: list[str], dest: Path) -> None:
    """``shards`` (relative to ``out``) into the archive ``dest``: each array as ``SHARD/NAME.npy``,
    in order, with fixed times and owners (the same shards give the same bytes: a second export
    leaves git clean)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(shards):
            with np.load(out / rel, allow_pickle=False) as z:
                for name in sorted(z.files):
                    one = io.BytesIO()
                    np.save(one, z[name], allow_pickle=False)
                    info = tarfile.TarInfo(f"{rel[:-4]}/{name}.npy")
                    info.size, info.mtime, info.mode = one.tell(), 0, 0o644
                    one.seek(0)
                    tar.addfile(info, one)
    data = lzma.compress(buf.getvalue(), preset=9)
    save_atomic(dest, lambda tmp: Path(tmp).write_bytes(data), "state window")


#: the most an archive may decompress to: this much plus WINDOW_RATIO times its own size (a state's
#: window decompresses to a few times its size; a bomb of zeros to thousands of times: issue 81, j01)
WINDOW_SLACK = 64 << 20
WINDOW_RATIO = 100


def _npy_array(f: Any, size: int, name: str) -> np.ndarray:
    """One ``.npy`` member: its header's shape times item size checked against the member's size
    before anything is allocated (a 256-byte member claiming 2e11 items: issue 81, j02)."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise ValueError(f"member {name!r} has npy format {version}")
    if dtype.hasobject:
        raise ValueError(f"member {name!r} holds objects")
    count = 1
    for d in shape:
        count *= int(d)
    if count * dtype.itemsize > size:
        raise ValueError(f"member {name!r} claims {count:,} items of {dtype.itemsize} bytes in {size:,} bytes")
    data = f.read(count * dtype.itemsize)
    if len(data) != count * dtype.itemsize:
        raise ValueError(f"member {name!r} is cut short")
    arr = np.frombuffer(data, dtype=dtype)
    return (arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)).copy()


def _read_window(archive: Path) -> dict[str, dict[str, np.ndarray]]:
    """The shards of ``archive``, by path, each its arrays by name (:func:`_write_shards` writes them
    back).  Read as a stream, with a bound on what it decompresses to (:data:`WINDOW_SLACK`,
    :data:`WINDOW_RATIO`) and on each member (its header against its size); one line if the archive
    is damaged, too large or names a path outside the loop's folder."""
    limit = WINDOW_SLACK + WINDOW_RATIO * archive.stat().st_size
    try:
        shards: dict[str, dict[str, np.ndarray]] = {}
        total = 0
        with lzma.open(archive, "rb") as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for m in tar:
                shard, _, name = m.name.rpartition("/")
                if not m.isfile() or not name.endswith(".npy") or not _is_shard(f"{shard}.npz") or ".." in shard.split("/") or shard.startswith("/"):
                    raise ValueError(f"unexpected member {m.name!r}")
                total += m.size
                if total > limit:
                    raise ValueError(f"it unpacks to more than {limit:,} bytes, {WINDOW_RATIO} times its size and "
                                     f"more: no state window is")
                f = tar.extractfile(m)
                if f is None:
                    raise ValueError(f"unexpected member {m.name!r}")
                shards.setdefault(shard, {})[name[:-4]] = _npy_array(f, m.size, m.name)
    except (lzma.LZMAError, tarfile.TarError, ValueError, OSError, EOFError, MemoryError) as e:
        raise InputError(f"{archive} is damaged ({str(e).splitlines()[0][:160] if str(e) else type(e).__name__}): "
                         f"export the state again") from None
    return shards


def _write_shards(shards: dict[str, dict[str, np.ndarray]], out: Path) -> int:
    """The shards written into ``out`` where it has none of that name; returns how many."""
    n = 0
    for shard, arrays in sorted(shards.items()):
        target = out / f"{shard}.npz"
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        save_atomic(target, lambda tmp, a=arrays: np.savez_compressed(tmp, **a), "data shard")  # type: ignore[misc]
        n += 1
    return n


def _slim_checkpoint(src: Path, dest: Path) -> None:
    """A finished round's checkpoint as the next round reads it (``optimizer_from``: the momentum
    buffers), without the weights ``model.pt`` holds: about a third of its size."""
    import torch

    if not (src.parent / "model.pt").is_file():
        shutil.copyfile(src, dest)  # a training still under way resumes from the whole file
        return
    ck = torch.load(src, map_location="cpu", weights_only=True)
    buf = io.BytesIO()  # not saved to the temporary file itself: torch names the archive's records after it
    torch.save({"optimizer": ck["optimizer"]}, buf)
    save_atomic(dest, lambda tmp: Path(tmp).write_bytes(buf.getvalue()), "loop checkpoint")


def check_state_to(cfg: LoopConfig, dest: str | Path) -> None:
    """``--state-to``'s folder, checked before the loop runs: writable, and neither the loop's folder
    nor inside it (the state would copy itself)."""
    check_dir(dest, "state folder")
    d, out = Path(dest).resolve(), Path(cfg.out).resolve()
    if d == out or out in d.parents:
        raise OutputError(f"state folder {str(dest)!r} is the loop's folder or inside it: give another")


def _inside(root: Path, folder: Path) -> None:
    """Refuse a folder of the state whose path inside ``root`` passes through a symbolic link: the state
    is meant to be committed, where a link is an ordinary file, and nothing is written outside ``root``."""
    p = folder
    while p != root and root in p.parents:
        if p.is_symlink():
            raise OutputError(f"{str(p)!r} is a symbolic link inside the state folder: nothing is written "
                              f"through it; remove it and run again")
        p = p.parent


def restore(cfg: LoopConfig, src: str | Path) -> int:
    """Copy a state from ``src`` into the loop's folder, file by file where the folder has none (what
    this machine has already done is kept); returns the files copied.  One line if ``src`` is no
    loop state."""
    root = Path(src)
    if not (root / "loop.json").is_file():
        raise InputError(f"{src} holds no loop state (no loop.json): give the folder --state-to wrote")

    remedy = "give the config that made it, or another state"
    same_run(cfg, str(root / "loop.json"), str(src), remedy)
    here = Path(cfg.out) / "loop.json"
    if here.is_file():
        same_run(cfg, str(here), cfg.out, "give the same settings to resume it, or another out")
    n = 0
    windows = sorted(p for p in root.glob(f"*/{WINDOW}") if p.is_file() and not p.is_symlink())
    read = [_read_window(p) for p in windows]  # first, all: a damaged archive stops the restore before any file is written
    for shards in read:
        n += _write_shards(shards, Path(cfg.out))
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.is_symlink() or p in windows:
            continue
        target = Path(cfg.out) / p.relative_to(root)
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
        n += 1
    return n


def check_networks(cfg: LoopConfig, arm: Arm, state: State) -> None:
    """Every trained round's network loads (a torn copy, a killed transfer of a carried state): one line
    naming the file and the way back, before any stage meets it."""
    import torch

    for g, rec in sorted(state.data.get("gens", {}).items(), key=lambda kv: int(kv[0])):
        path = weights_of(cfg, arm.name, int(g))
        if "train" not in rec or not os.path.exists(path):
            continue
        try:
            torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - whatever is wrong with the file, one line
            why = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
            raise ConfigError(f"{path} is damaged ({why}): delete {os.path.dirname(path)} and run again to train "
                              f"{'round' if cfg.mode == 'rounds' else 'generation'} {g} of arm {arm.name!r} again") from None


__all__ = ["ROUND", "TOP", "WINDOW", "StageClock", "check_networks", "cpu_now", "export", "restore", "state_files"]
