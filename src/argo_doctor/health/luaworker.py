"""LuaWorker: a child process that runs Lua health scripts, killed and replaced when one overruns.

A script stuck in one library call (a pattern that backtracks for hours, a huge `string.rep`)
never reaches the instruction hook, and a thread cannot be stopped from outside; a process
can. One worker serves a whole scan: the scan sends it each script and object over a pipe
and waits for the answer at most the wall timeout. Past it, the worker is killed (SIGKILL)
and reaped, and the next script gets a new one. Inside the worker, a CPU timer (ITIMER_PROF)
armed for each script ends the process shortly after the script's CPU-time limit, so that a
library call is held to that limit too.

The worker is forked, not spawned: it starts in milliseconds with lupa loaded and needs no
interpreter or import path, also inside a forked process pool. It never outlives the process
that started it: that process kills and reaps it when the LuaWorker is closed, collected or at
exit; a worker whose parent is gone leaves within a second when idle, and by its CPU timer when busy.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import math
import os
import select
import signal
import struct
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argo_doctor.health.luascripts import (
    LuaLimits,
    LuaOutcome,
    LuaSandbox,
    LuaScript,
    json_values,
    stopped_outcome,
)
from argo_doctor.health.types import Health, HealthStatus
from argo_doctor.sources.workers import fork_deaf

_HEADER = struct.Struct("!I")  # each message: its length, then UTF-8 JSON
_IDLE_CHECK_SECONDS = 1.0  # how often an idle worker checks that its parent is still there
_REAPED_ELSEWHERE = -1  # a wait status that waitpid never gives
_CPU_GRACE = 0.1  # seconds of CPU past its limit after which a script's worker is ended (the hook stops Lua sooner)


class _Gone(Exception):
    """The worker ended while the scan was talking to it."""


class LuaWorker:
    """Runs health scripts in a child process that is killed when a script overruns its wall timeout.

    One scan, one thread: calls to `run` must not overlap.
    """

    def __init__(self) -> None:
        self._child: _Child | None = None
        self._finalizer: weakref.finalize[[], LuaWorker] | None = None  # calls _Child.stop once

    @property
    def pid(self) -> int | None:
        """The process id of the running worker; None when there is none."""
        child = self._child
        return child.pid if child is not None and child.owner == os.getpid() else None

    def run(self, script: LuaScript, obj: Mapping[str, Any], limits: LuaLimits) -> LuaOutcome:
        """Run `script` on `obj` in the worker, within `limits` (the wall timeout included)."""
        request = json.dumps(
            {
                "source": script.source,
                "chunk": script.location,
                "open_libs": script.use_open_libs,
                "obj": json_values(obj),
                "limits": [limits.max_instructions, limits.max_memory, limits.max_cpu_seconds],
            }
        ).encode()
        try:
            child = self._ready()
        except OSError as exc:
            return stopped_outcome(f"not assessed: cannot start a process for Lua health scripts: {exc}", "crash")
        try:
            reply = child.call(request, time.monotonic() + limits.wall_timeout)
        except _Gone:
            code = self._discard()
            if code == -signal.SIGPROF:  # its CPU timer
                return stopped_outcome(limits.message("cpu"), "cpu")
            return stopped_outcome(f"Lua health script stopped: the process running it ended ({_ended(code)})", "crash")
        except BaseException:  # e.g. KeyboardInterrupt: leave no script running
            self._discard()
            raise
        if reply is None:
            self._discard()
            return stopped_outcome(limits.message("wall"), "wall")
        return _decode(reply)

    def close(self) -> None:
        """Kill and reap the worker, if one runs; the next `run` starts a new one."""
        self._discard()

    def _ready(self) -> _Child:
        child = self._child
        if child is not None and (child.owner != os.getpid() or child.exited()):
            self._discard()  # a forked copy of the scan, or a worker that died while idle
            child = None
        if child is None:
            child = _Child.start()
            self._child = child
            self._finalizer = weakref.finalize(self, child.stop)
        return child

    def _discard(self) -> int | None:
        """Stop the worker, if any; its exit code (minus the signal that ended it) when known."""
        finalizer, self._child, self._finalizer = self._finalizer, None, None
        code: int | None = finalizer() if finalizer is not None else None
        return code


@dataclass
class _Child:
    """One forked worker, seen from the process that forked it."""

    pid: int
    owner: int  # the process that forked it: only that one may kill and reap it
    requests: int  # write end of the pipe to the worker (non-blocking)
    replies: int  # read end of the pipe from the worker
    status: int | None = None  # wait status, once reaped

    @classmethod
    def start(cls) -> _Child:
        """Fork a worker."""
        sandbox = LuaSandbox()  # read the sandbox's source here, once, not in every worker
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        owner = os.getpid()
        try:
            pid = fork_deaf()
        except OSError:
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
            raise
        if pid == 0:
            code = 1
            try:
                _serve(sandbox, request_r, reply_w, owner)
                code = 0
            finally:
                os._exit(code)
        os.close(request_r)
        os.close(reply_w)
        os.set_blocking(request_w, False)
        return cls(pid, owner, request_w, reply_r)

    def exited(self) -> bool:
        """Whether the worker has ended (it is reaped if so)."""
        if self.status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already, e.g. with SIGCHLD ignored
                pid, status = self.pid, _REAPED_ELSEWHERE
            if pid:
                self.status = status
        return self.status is not None

    def stop(self) -> int | None:
        """Close the pipes; kill and reap the worker if this process forked it. Its exit code, if known."""
        for fd in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.owner != os.getpid():
            return None
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):  # already a zombie
                os.kill(self.pid, signal.SIGKILL)
            try:
                _, self.status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self.status = _REAPED_ELSEWHERE
        return None if self.status == _REAPED_ELSEWHERE else os.waitstatus_to_exitcode(self.status)

    def call(self, request: bytes, deadline: float) -> bytes | None:
        """The worker's reply to `request`; None past `deadline`. Raises _Gone if the worker ends."""
        data = memoryview(_HEADER.pack(len(request)) + request)
        while data:
            if not _wait(self.requests, select.POLLOUT, deadline):
                return None
            try:
                data = data[os.write(self.requests, data) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise _Gone from None
        header = self._read(_HEADER.size, deadline)
        if header is None:
            return None
        return self._read(_HEADER.unpack(header)[0], deadline)

    def _read(self, size: int, deadline: float) -> bytes | None:
        data = bytearray()
        while len(data) < size:
            if not _wait(self.replies, select.POLLIN, deadline):
                return None
            chunk = os.read(self.replies, size - len(data))
            if not chunk:
                raise _Gone
            data += chunk
        return bytes(data)


def _wait(fd: int, event: int, deadline: float) -> bool:
    """Whether `fd` is ready for `event` (or closed) before `deadline`."""
    poller = select.poll()
    poller.register(fd, event)
    return bool(poller.poll(max(0, math.ceil((deadline - time.monotonic()) * 1000))))


def _ended(code: int | None) -> str:
    if code is None:
        return "reaped elsewhere"
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def _decode(reply: bytes) -> LuaOutcome:
    status, message, problem, stop = json.loads(reply)
    health = None if status is None else Health(HealthStatus(status), message)
    return LuaOutcome(health, problem, stop)


def _encode(outcome: LuaOutcome) -> bytes:
    health = outcome.health
    status, message = (None, None) if health is None else (health.status.value, health.message)
    return json.dumps([status, message, outcome.problem, outcome.stop]).encode()


# --- inside the worker -----------------------------------------------------------------------


def _serve(sandbox: LuaSandbox, requests: int, replies: int, parent: int) -> None:
    """The worker's loop: read a request, run it, write the outcome; until the parent goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the scan, which then kills the worker
    for signo in (signal.SIGTERM, signal.SIGHUP, signal.SIGPROF):  # not the scan's handlers: just end
        signal.signal(signo, signal.SIG_DFL)
    gc.freeze()  # the scan's objects, inherited, stay shared with it instead of being copied on collection
    os.environ["TZ"] = "UTC"  # os.date and os.time as in Argo CD's controller image, whatever the host's zone
    time.tzset()
    requests, replies = _isolate(requests, replies)
    while True:
        header = _receive(requests, _HEADER.size, parent)
        if header is None:
            return
        body = _receive(requests, _HEADER.unpack(header)[0], parent)
        if body is None:
            return
        request = json.loads(body)
        max_instructions, max_memory, max_cpu_seconds = request["limits"]
        limits = LuaLimits(max_instructions, max_memory, max_cpu_seconds)
        signal.setitimer(signal.ITIMER_PROF, max_cpu_seconds + _CPU_GRACE)  # SIGPROF ends the process
        outcome = sandbox.run(request["source"], request["open_libs"], request["obj"], limits, request["chunk"])
        signal.setitimer(signal.ITIMER_PROF, 0)
        reply = _encode(outcome)
        view = memoryview(_HEADER.pack(len(reply)) + reply)
        while view:
            view = view[os.write(replies, view) :]


def _isolate(*keep: int) -> tuple[int, ...]:
    """Move `keep` above stdio, point stdio at /dev/null and close every other inherited descriptor."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in keep)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low = 3
    for fd in sorted(moved):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(low, os.sysconf("SC_OPEN_MAX")))
    return moved


def _receive(fd: int, size: int, parent: int) -> bytes | None:
    """`size` bytes from the scan; None when it has closed the pipe or is gone."""
    data = bytearray()
    while len(data) < size:
        if not _wait(fd, select.POLLIN, time.monotonic() + _IDLE_CHECK_SECONDS):
            if os.getppid() != parent:
                return None
            continue
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)
