"""The forked workers stay out of the way: deaf to the terminal's Ctrl-C, which the scan answers, and gone when the
scan's process is killed (by the OOM killer, say) instead of waiting on the pool's queue for ever; and a forked call
gives its result, or ForkFailed, and never outlives its block."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from argo_doctor.sources.workers import Forked, ForkFailed

SCANS = {
    "collecting": """
import sys, time
from pathlib import Path
from argo_doctor.sources import bundle
early = bundle.EarlyLoads(Path(sys.argv[1]), 2)
try:
    print(" ".join(str(pid) for pid in early.pool._processes), flush=True)
    time.sleep(60)
except KeyboardInterrupt:
    early.close()
    print("interrupted", file=sys.stderr)
""",
    "log-pass": """
import sys, time
from argo_doctor.sources.logs import worker_pool
pool = worker_pool(2)
pool.submit(int).result()
try:
    print(" ".join(str(pid) for pid in pool._processes), flush=True)
    time.sleep(60)
except KeyboardInterrupt:
    pool.shutdown()
    print("interrupted", file=sys.stderr)
""",
    "forked-rules": """
import sys, time
from argo_doctor.sources.workers import Forked
with Forked(lambda: time.sleep(60)) as one, Forked(lambda: time.sleep(60)) as two:
    try:
        print(one.pid, two.pid, flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
""",
}
"""Stand for `scan --live` while it collects (the workers wait for object files), for the log pass (the pool
`scan_logs` makes) and for the audit-reading rules in their forked copy (two copies here, as the checks want two
processes). Each prints its workers' ids inside its `try`, so that the SIGINT the test sends once it reads them
always meets the handler."""


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, killed and not reaped yet, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _start(scan: str, tmp_path: Path, **options: bool) -> tuple[subprocess.Popen[bytes], list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", SCANS[scan], str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **options)
    assert proc.stdout is not None
    pids = [int(pid) for pid in proc.stdout.readline().split()]
    assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    return proc, pids


@pytest.mark.skipif(sys.platform != "linux", reason="prctl(PR_SET_PDEATHSIG) is Linux's")
@pytest.mark.parametrize("scan", sorted(SCANS))
def test_the_workers_die_with_a_killed_scan(scan: str, tmp_path: Path) -> None:
    proc, pids = _start(scan, tmp_path)
    proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):  # which a surviving worker would hold open
        assert pipe is not None
        pipe.close()
    deadline = time.monotonic() + 30  # a safety net, not a timing assertion
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "a worker outlived the scan"
        time.sleep(0.05)


@pytest.mark.parametrize("scan", sorted(SCANS))
def test_ctrl_c_reaches_the_scan_and_not_its_workers(scan: str, tmp_path: Path) -> None:
    proc, pids = _start(scan, tmp_path, start_new_session=True)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends it: to every process of the group
    _, stderr = proc.communicate(timeout=60)
    assert stderr.decode().strip() == "interrupted"  # no worker's KeyboardInterrupt traceback
    assert not any(_alive(pid) for pid in pids)


def test_a_forked_call_sends_back_what_it_returns() -> None:
    parent = os.getpid()
    with Forked(lambda: {"pid": os.getpid(), "gc": gc.isenabled(), "items": [1.5, "two", None]}) as away:
        got = away.result()
    assert got["pid"] != parent and got["gc"] is False and got["items"] == [1.5, "two", None]
    assert away.pid is None  # reaped


def _dies() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would


def _raises() -> None:
    raise RuntimeError("boom")


@pytest.mark.parametrize("call", [_dies, _raises, lambda: lambda: None], ids=["killed", "raised", "unpicklable"])
def test_a_forked_call_that_gives_nothing_raises_fork_failed(call: Callable[[], object]) -> None:
    with Forked(call) as away, pytest.raises(ForkFailed):
        away.result()
    assert away.pid is None


def test_leaving_the_block_early_kills_the_copy() -> None:
    with Forked(lambda: time.sleep(60)) as away:
        pid = away.pid
        assert pid is not None and _alive(pid)
    assert away.pid is None and not _alive(pid)


@pytest.mark.parametrize("call", [lambda: "sent", _raises], ids=["sent", "raised"])
def test_a_forked_call_with_sigchld_ignored(call: Callable[[], object]) -> None:
    """A parent that ignores SIGCHLD passes that on: the system then reaps the copy, whose status is unknown, and
    only a whole result counts."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with Forked(call) as away:
            if call is _raises:
                with pytest.raises(ForkFailed):
                    away.result()
            else:
                assert away.result() == "sent"
        with Forked(lambda: time.sleep(60)) as away:  # leaving early kills a copy that may be reaped already
            pass
    finally:
        signal.signal(signal.SIGCHLD, previous)


FORK_RACE = """
import os, signal, sys
from argo_doctor.health.luascripts import LuaLimits, LuaScript
from argo_doctor.health.luaworker import LuaWorker
from argo_doctor.sources.workers import Forked, pool
# a Ctrl-C that reaches the child while it is being forked, before it could ignore it: sent by an at-fork hook
os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGINT))
with Forked(lambda: 6 * 7) as away:
    print(away.result())
workers = pool(1)
print(workers.submit(int, "7").result())
workers.shutdown()
lua = LuaWorker()
script = LuaScript("Widget", "return {status = 'Healthy', message = 'ok'}", False, "test")
print(lua.run(script, {"kind": "Widget"}, LuaLimits()).health.status.value)
lua.close()
"""


def test_a_ctrl_c_that_reaches_a_worker_while_it_is_forked_is_ignored() -> None:
    """Forked copies, pool workers and the Lua worker alike."""
    done = subprocess.run([sys.executable, "-c", FORK_RACE], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.decode().split(), done.stderr.decode()) == (0, ["42", "7", "Healthy"], "")


def test_a_forked_copy_ends_before_its_result_is_read() -> None:
    """A result larger than a pipe holds: the copy writes it and ends (a zombie, its pages freed) without waiting
    for the scan to read it."""
    with Forked(lambda: b"x" * (4 << 20)) as call:
        assert call.pid is not None
        state = ""
        for _ in range(400):  # up to 20 s on a loaded machine; a copy blocked on a pipe would never end
            state = Path(f"/proc/{call.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.05)
        assert state == "Z"
        assert call.result() == b"x" * (4 << 20) and call.pid is None
