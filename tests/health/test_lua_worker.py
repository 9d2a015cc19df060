"""Lua health scripts run in a worker process: stopping runaway library calls, crashes, the scan's budget."""

from __future__ import annotations

import copy
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from argo_doctor.health import Health, HealthAssessor, HealthProblem, LuaHealthScripts
from tests.health.objects import D, H, P, U, obj
from tests.health.test_lua import CERTIFICATE, CERTIFICATE_SCRIPT

KEY = "cert-manager.io_Certificate"
LOCATION = f"argocd-cm resource.customizations.health.{KEY}"
# One string.find that backtracks for hours: no Lua instruction runs until it returns.
STUCK_SCRIPT = """\
local s = string.rep("a", 1e5)
return {status = "Healthy", message = tostring(string.find(s, ".-.-.-.-b"))}
"""
# Stuck only on certificates whose name starts with "stuck", Argo CD's verdict otherwise.
SOMETIMES_STUCK_SCRIPT = f"""\
if string.sub(obj.metadata.name, 1, 5) == "stuck" then
  string.find(string.rep("a", 1e5), ".-.-.-.-b")
end
{CERTIFICATE_SCRIPT}"""


def _assessor(script: str, **limits: Any) -> HealthAssessor:
    data = {f"resource.customizations.health.{KEY}": script, f"resource.customizations.useOpenLibs.{KEY}": "true"}
    return HealthAssessor(LuaHealthScripts.from_argocd_cm(data), **limits)


def _certificate(name: str, ready: str = "True", message: str = "Certificate is up to date") -> dict[str, Any]:
    cert = copy.deepcopy(CERTIFICATE)
    cert["metadata"]["name"] = name
    cert["status"]["conditions"][0].update(status=ready, message=message)
    return cert


def _children() -> set[int]:
    """The process ids of this process's children (zombies included)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(pid) for pid in (task / "children").read_text().split())
    return pids


def _state(pid: int) -> str | None:
    """The process's state letter (R running, S sleeping, Z zombie...); None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rpartition(")")[2].split()[0]


def _wait_until_gone_or_zombie(pid: int, seconds: float = 20) -> str | None:
    deadline = time.monotonic() + seconds  # a safety net, not a timing assertion
    while (state := _state(pid)) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    return state


def test_stuck_library_call_is_killed_and_nothing_keeps_running() -> None:
    threads, children = set(threading.enumerate()), _children()
    assessor = _assessor(SOMETIMES_STUCK_SCRIPT, wall_timeout=0.5)
    assert assessor.assess(_certificate("api-tls")) == Health(H, "Certificate is up to date")
    worker = assessor.worker.pid
    assert worker is not None and _children() == children | {worker}

    assert assessor.assess(_certificate("stuck-tls")) == Health(U, "Lua health script did not finish within 0.5 s")

    assert assessor.worker.pid is None
    assert _state(worker) is None  # killed and reaped: no zombie, no CPU
    assert _children() == children
    assert set(threading.enumerate()) <= threads  # no thread left behind (one of an earlier test may end meanwhile)
    assert assessor.problems == [HealthProblem(LOCATION, "Lua health script did not finish within 0.5 s")]
    # The next object gets a new worker and Argo CD's verdict.
    assert assessor.assess(_certificate("web-tls", "False", "Issuing")) == Health(D, "Issuing")
    assert assessor.worker.pid not in (None, worker)
    assessor.close()
    assert _children() == children


def test_stuck_library_call_is_held_to_the_cpu_limit() -> None:
    children = _children()
    assessor = _assessor(STUCK_SCRIPT, max_cpu_seconds=0.3, wall_timeout=60)
    message = "Lua health script exceeded 0.3 s of CPU time"
    assert assessor.assess(_certificate("tls")) == Health(U, message)
    assert assessor.problems == [HealthProblem(LOCATION, message)]
    assert assessor.worker.pid is None and _children() == children


def test_pathological_script_is_run_three_times_then_benched() -> None:
    children = _children()
    assessor = _assessor(STUCK_SCRIPT, wall_timeout=0.3)
    verdicts = [assessor.assess(_certificate(f"tls-{i}")) for i in range(50)]
    assert verdicts[:3] == [Health(U, "Lua health script did not finish within 0.3 s")] * 3
    assert (
        verdicts[3:]
        == [Health(U, "not assessed: Lua health script stopped 3 times for running too long in this scan")] * 47
    )
    assert assessor.problems == [
        HealthProblem(
            LOCATION,
            "Lua health script stopped 3 times for running too long in this scan "
            "(limits: 10000000 instructions, 2 s of CPU time, 0.3 s of wall time); "
            "not run for the rest of the scan: the objects it applies to are Unknown",
        )
    ]
    assert assessor.worker.pid is None and _children() == children


def test_other_scripts_still_run_after_one_is_benched() -> None:
    data = {
        f"resource.customizations.health.{KEY}": STUCK_SCRIPT,
        f"resource.customizations.useOpenLibs.{KEY}": "true",
        "resource.customizations.health.apps_Deployment": 'return {status = "Progressing", message = obj.kind}',
    }
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    with HealthAssessor(LuaHealthScripts.from_argocd_cm(data), wall_timeout=0.2, max_timeouts=2) as assessor:
        for name in ("a", "b", "c"):
            assessor.assess(_certificate(name))
        assert assessor.assess(deployment) == Health(P, "Deployment")
        assert [p.location for p in assessor.problems] == [LOCATION]


def test_scan_budget_bounds_the_time_in_lua_and_is_reported_once() -> None:
    # A high timeout allowance leaves only the budget to stop the runaway script.
    assessor = _assessor(STUCK_SCRIPT, wall_timeout=0.3, lua_budget=1.0, max_timeouts=100)
    verdicts = [assessor.assess(_certificate(f"tls-{i}")) for i in range(50)]
    timed_out = verdicts.count(Health(U, "Lua health script did not finish within 0.3 s"))
    assert 1 <= timed_out <= 3  # each timeout costs at least 0.3 s of the 1 s budget
    not_assessed = Health(U, "not assessed: the scan's budget of 1 s for Lua health scripts is spent")
    assert verdicts[timed_out:] == [not_assessed] * (50 - timed_out)
    assert assessor.lua_seconds >= assessor.lua_budget
    assert assessor.problems == [
        HealthProblem(LOCATION, "Lua health script did not finish within 0.3 s"),
        HealthProblem(
            "Lua health scripts",
            "the scan's budget of 1 s for Lua health scripts is spent; "
            "the objects that needed a script after that are Unknown",
        ),
    ]
    assessor.close()


def test_objects_without_a_script_are_assessed_past_the_budget() -> None:
    assessor = _assessor(STUCK_SCRIPT, wall_timeout=0.2, lua_budget=0.1)
    not_assessed = Health(U, "not assessed: the scan's budget of 0.1 s for Lua health scripts is spent")
    assert assessor.assess(_certificate("tls")) == not_assessed
    assert assessor.assess(obj("pods.yaml", "checkout-6d9f7b8c5d-4kq2x")) == Health(H, "")
    assessor.close()


def test_normal_scripts_give_the_same_health_in_one_worker() -> None:
    assessor = _assessor(CERTIFICATE_SCRIPT)
    verdicts = [assessor.assess(_certificate(f"tls-{i}", ("True", "False")[i % 2], f"message {i}")) for i in range(200)]
    assert verdicts == [Health((H, D)[i % 2], f"message {i}") for i in range(200)]
    assert assessor.problems == []
    assert assessor.lua_seconds > 0
    assessor.close()


def test_a_stopped_script_does_not_disturb_the_next_object() -> None:
    script = f"""\
if obj.metadata.name == "hog" then
  local t = {{}}
  while true do t[#t + 1] = string.rep("x", 1024) .. #t end
end
if obj.metadata.name == "broken" then error("cannot judge") end
{CERTIFICATE_SCRIPT}"""
    with _assessor(script, max_memory=4 * 1024 * 1024) as assessor:
        assert assessor.assess(_certificate("first")) == Health(H, "Certificate is up to date")
        worker = assessor.worker.pid
        assert assessor.assess(_certificate("hog")) == Health(
            U, "Lua health script exceeded its memory limit of 4194304 bytes"
        )
        assert assessor.assess(_certificate("broken")) == Health(
            U, f"argocd-cm resource.customizations.health.{KEY}:5: cannot judge"
        )
        assert assessor.assess(_certificate("last", message="fine")) == Health(H, "fine")
        assert assessor.worker.pid == worker  # limits inside Lua need no new process


def _cpu_ticks(pid: int) -> int | None:
    """The CPU time the process has used, in clock ticks (user and system); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[11]) + int(fields[12])


def _kill_when_running(pid: int, stop: threading.Event) -> None:
    """Kill the worker once it runs the stuck script: when it has used CPU time since it was idle (an idle worker
    uses none; the stuck script uses all it gets), however slowly a loaded machine lets it start."""
    idle = _cpu_ticks(pid)
    while not stop.is_set() and idle is not None:
        used = _cpu_ticks(pid)
        if used is None:
            return
        if used - idle >= 2:
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.005)


def test_worker_crash_is_unknown_for_that_object_only() -> None:
    children = _children()
    # the kill comes first: the killer fires once the script has run for two clock ticks, long before the limits
    assessor = _assessor(SOMETIMES_STUCK_SCRIPT, wall_timeout=60, max_cpu_seconds=30)
    assert assessor.assess(_certificate("api-tls")) == Health(H, "Certificate is up to date")
    worker = assessor.worker.pid
    assert worker is not None
    stop = threading.Event()
    killer = threading.Thread(target=_kill_when_running, args=(worker, stop))
    killer.start()
    try:
        health = assessor.assess(_certificate("stuck-tls"))
    finally:
        stop.set()
        killer.join()
    message = "Lua health script stopped: the process running it ended (killed by SIGKILL)"
    assert health == Health(U, message)
    assert assessor.problems == [HealthProblem(LOCATION, message)]
    assert _state(worker) is None
    assert assessor.assess(_certificate("web-tls", message="renewed")) == Health(H, "renewed")
    assessor.close()
    assert _children() == children


def test_worker_that_died_while_idle_is_replaced_silently() -> None:
    with _assessor(CERTIFICATE_SCRIPT) as assessor:
        assessor.assess(_certificate("a"))
        worker = assessor.worker.pid
        assert worker is not None
        os.kill(worker, signal.SIGKILL)
        assert _wait_until_gone_or_zombie(worker) == "Z"
        assert assessor.assess(_certificate("b", message="still fine")) == Health(H, "still fine")
        assert assessor.problems == []


def test_closed_assessor_leaves_no_process_and_can_be_used_again() -> None:
    children = _children()
    with _assessor(CERTIFICATE_SCRIPT) as assessor:
        assessor.assess(_certificate("a"))
        assert len(_children() - children) == 1
    assert _children() == children
    assert assessor.assess(_certificate("b", message="again")) == Health(H, "again")
    assessor.close()
    assert _children() == children


def test_dropping_the_assessor_stops_its_worker() -> None:
    children = _children()
    assessor = _assessor(CERTIFICATE_SCRIPT)
    assessor.assess(_certificate("a"))
    worker = assessor.worker.pid
    del assessor
    assert worker is not None and _state(worker) is None and _children() == children


def test_worker_busy_when_the_scan_is_killed_ends_by_itself() -> None:
    reader, writer = os.pipe()
    scan = os.fork()
    if scan == 0:  # a scan that gets killed (SIGKILL: no exit handlers) while its worker is stuck
        try:
            assessor = _assessor(SOMETIMES_STUCK_SCRIPT, wall_timeout=60, max_cpu_seconds=0.5)
            assessor.assess(_certificate("api-tls"))
            os.write(writer, str(assessor.worker.pid).encode())
            assessor.assess(_certificate("stuck-tls"))
        finally:
            os._exit(1)
    os.close(writer)
    try:
        worker = int(os.read(reader, 32))
        deadline = time.monotonic() + 20
        while _state(worker) != "R" and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(scan, signal.SIGKILL)
    finally:
        os.waitpid(scan, 0)
        os.close(reader)
    # Orphaned inside one library call, the worker cannot see that its parent is gone; its CPU timer ends it.
    assert _wait_until_gone_or_zombie(worker, seconds=60) in (None, "Z")


def test_assessor_without_scripts_starts_no_process() -> None:
    children = _children()
    assessor = HealthAssessor()
    assessor.assess(CERTIFICATE)
    assert assessor.worker.pid is None and _children() == children


# --- inside process pools --------------------------------------------------------------------

_SHARED: HealthAssessor | None = None
"""An assessor the pool's forked processes inherit."""


def _assess_in_pool(name: str) -> tuple[Health | None, Health | None, int | None, int]:
    assert _SHARED is not None
    stuck = _SHARED.assess(_certificate(f"stuck-{name}"))
    ok = _SHARED.assess(_certificate(name, message="from the pool"))
    return ok, stuck, _SHARED.worker.pid, os.getpid()


@pytest.mark.parametrize("pool", ["concurrent.futures", "multiprocessing"])
def test_scan_inside_a_forked_process_pool(pool: str) -> None:
    global _SHARED
    _SHARED = assessor = _assessor(SOMETIMES_STUCK_SCRIPT, wall_timeout=0.5)
    try:
        assert assessor.assess(_certificate("parent")) == Health(H, "Certificate is up to date")
        parent_worker = assessor.worker.pid
        context = multiprocessing.get_context("fork")
        if pool == "multiprocessing":  # daemonic workers, which may not use multiprocessing themselves
            with context.Pool(1) as mp_pool:
                ok, stuck, pool_worker, pool_pid = mp_pool.apply(_assess_in_pool, ("pool",))
        else:
            with ProcessPoolExecutor(1, mp_context=context) as executor:
                ok, stuck, pool_worker, pool_pid = executor.submit(_assess_in_pool, "pool").result(timeout=60)
        assert ok == Health(H, "from the pool")
        assert stuck == Health(U, "Lua health script did not finish within 0.5 s")
        assert pool_worker not in (None, parent_worker)
        assert pool_pid != os.getpid()
        # The pool's own worker, whose parent is gone, leaves by itself.
        assert pool_worker is not None and _wait_until_gone_or_zombie(pool_worker) in (None, "Z")
        # The parent's worker was neither used nor killed by the pool.
        assert assessor.worker.pid == parent_worker
        assert assessor.assess(_certificate("again", message="after the pool")) == Health(H, "after the pool")
        assert assessor.worker.pid == parent_worker
    finally:
        _SHARED = None
        assessor.close()
