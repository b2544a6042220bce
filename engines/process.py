"""The one driver of a program spoken to in lines of text (UCI, CECP/XBoard).

:class:`LineProcess` starts the program in a process group of its own, reads its output on a thread
into a queue (``None`` once it has closed its output), writes lines without ever raising (a write to
a program that is gone returns False), reads with a deadline, and stops it: ``quit``, half a second,
then SIGKILL for the whole group, so whatever it started (a wrapper script's engine) goes with it.
On Linux the program is also told to die with the process that started it (``PR_SET_PDEATHSIG``):
a run killed outright (SIGKILL, SIGTERM) runs no clean-up, and a program left behind keeps its
core busy (Sjeng, its input closed, spun at 100% for an hour after a killed match). The protocols
sit on top of it: the data generator's UCI dialogue
(:class:`experiments.training.datagen.UciProcess`) and the bughouse seats' CECP dialogue
(:class:`engines.xboard_seat.XBoardSeat`); the engines played through python-chess
(:class:`engines.external.ExternalEngine`) get the same group kill and :func:`die_with_parent` from
their adapter.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Callable, Sequence

from engines.base import EngineError


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when its parent exits (None elsewhere).
    Linux sends the signal when the *thread* that started the child ends: start programs from a
    thread that lives as long as they do (the main thread; python-chess's engine thread)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    except (OSError, AttributeError):
        return None
    option, sig = ctypes.c_int(1), ctypes.c_ulong(int(signal.SIGKILL))  # PR_SET_PDEATHSIG, SIGKILL
    return lambda: prctl(option, sig)


class LineProcess:
    """A running program, its output lines in :attr:`lines` (``None`` at the end of its output)."""

    def __init__(self, command: Sequence[str], merge_stderr: bool = False) -> None:
        self.command = list(command)
        try:
            self.proc: subprocess.Popen[str] | None = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.DEVNULL, text=True, bufsize=1,
                start_new_session=True,  # its own group: see kill()
                preexec_fn=die_with_parent())
        except OSError as e:
            raise EngineError(f"cannot start {self.command[0]!r}: {e.strerror}") from None
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()

    @staticmethod
    def _read(proc: subprocess.Popen[str], q: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                q.put(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        q.put(None)

    @property
    def running(self) -> bool:
        """The program has been started, not stopped, and has not exited."""
        return self.proc is not None and self.proc.poll() is None

    def exit_code(self) -> int | None:
        """The program's exit status once it has exited (None while it runs or after :meth:`kill`)."""
        return self.proc.poll() if self.proc is not None else None

    def send(self, line: str) -> bool:
        """Write one line; False if the program is gone (never raises)."""
        proc = self.proc
        if proc is None or proc.stdin is None:
            return False
        try:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            return True
        except (OSError, ValueError):
            return False

    def read(self, timeout: float) -> str | None:
        """The next output line within ``timeout`` seconds; ``None`` at the end of the output;
        :class:`queue.Empty` if nothing came in time."""
        return self.lines.get(timeout=max(0.0, timeout))

    def kill(self, quit_line: str = "quit") -> None:
        """Stop the program: ``quit_line``, half a second to exit, then SIGKILL, its whole group."""
        proc = self.proc
        self.proc = None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                try:
                    proc.stdin.write(quit_line + "\n")  # type: ignore[union-attr]
                    proc.stdin.flush()  # type: ignore[union-attr]
                except (OSError, ValueError):
                    pass
                try:
                    proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        except (OSError, subprocess.SubprocessError):
            pass
        try:  # whatever it started goes with it
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
