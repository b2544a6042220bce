"""engines/process.py: the one line driver of external programs."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engines.process import LineProcess


def test_lines_in_and_out_and_kill() -> None:
    p = LineProcess([sys.executable, "-c", "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"])
    assert p.send("hello") and p.read(10.0) == "HELLO"
    p.kill()
    assert not p.running and not p.send("again")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


ROOT = Path(__file__).parent.parent
#: a UCI engine that, its input closed, lives on (as Sjeng did)
STUBBORN = """
import sys, time
for line in sys.stdin:
    if line.strip() == "uci":
        print("id name stubborn\\nuciok", flush=True)
    elif line.strip() == "isready":
        print("readyok", flush=True)
time.sleep(120)
"""
#: a program started by the line driver, and an external engine started by python-chess
STARTERS = {
    "line-driver": """
        from engines.process import LineProcess
        pid = LineProcess(["sleep", "120"]).proc.pid
    """,
    "python-chess": """
        from engines import registry
        from engines.external import ExternalEngine
        e = ExternalEngine(registry.resolve(sys.executable + "+uci:args=" + sys.argv[1]), "chess")
        pid = e._engine.transport.get_pid()
    """,
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("starter", sorted(STARTERS))
def test_a_program_dies_with_the_process_that_started_it(starter: str, tmp_path: Path) -> None:
    """A run killed outright runs no clean-up: the program must not outlive it (Sjeng, its input
    closed, spun at 100% for an hour after a killed match)."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
    """) + textwrap.dedent(STARTERS[starter]) + textwrap.dedent("""
        print(pid, flush=True)
        time.sleep(120)
    """)
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text(STUBBORN)
    parent = subprocess.Popen([sys.executable, "-c", script, str(stubborn)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _state(child) not in ("gone", "Z")
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while _state(child) not in ("gone", "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(child) in ("gone", "Z")  # killed (a zombie until init reaps it)
