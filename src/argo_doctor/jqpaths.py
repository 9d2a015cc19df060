"""jq path expressions (Argo CD's `ignoreDifferences.jqPathExpressions`), each run in a forked child under the
limits Argo CD sets: the jq library runs in C, where neither a signal handler nor a Python limit reaches it
(`repeat(.)` grows without bound, `until(false; .)` never ends and ignores SIGTERM)."""

from __future__ import annotations

import faulthandler
import os
import resource
import select
import signal
import time
from typing import Any

import jq
import msgspec

JQ_TIMEOUT = 1.0
"""Argo CD stops a jq path expression after `ignore.normalizer.jq.timeout` (argocd-cmd-params-cm, 1s by default,
since v2.10.9): so does this."""
JQ_MEMORY = 1 << 30
"""Address space the child may map beyond what it shares with this process."""


def jq_paths(expr: str, value: Any) -> list[list[str | int]] | str:
    """The paths the jq path expression selects in `value`, or in one line why it selects none: invalid, or
    stopped after JQ_TIMEOUT or JQ_MEMORY."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no exit handlers of this process, no flush of its buffers
        status = 1
        try:
            os.close(read)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # jq's own message before it aborts out of memory,
            faulthandler.disable()  # and Python's report of the abort
            _limit_memory()
            try:
                answer: tuple[str, Any] = ("paths", jq.compile(f"[path({expr})]").input_value(value).first() or [])
            except ValueError as exc:
                answer = ("error", str(exc).splitlines()[0] if str(exc) else "invalid expression")
            view = memoryview(msgspec.json.encode(answer))
            while view:
                view = view[os.write(write, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    data, finished = b"", False
    try:
        data, finished = _read_until(read, time.monotonic() + JQ_TIMEOUT)
    finally:
        os.close(read)
        if not finished:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if not finished:
        return f"stopped after {JQ_TIMEOUT:g}s, as Argo CD stops it (ignore.normalizer.jq.timeout)"
    try:
        kind, result = msgspec.json.decode(data)
    except (msgspec.DecodeError, ValueError):
        how = signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else f"exit status {status >> 8}"
        return f"stopped: jq ran out of memory ({JQ_MEMORY >> 20} MiB) or failed ({how})"
    return str(result) if kind == "error" else [list(p) for p in result if isinstance(p, list)]


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    """What `fd` gives until its end (True) or the deadline (False)."""
    chunks: list[bytes] = []
    poller = select.poll()  # not select.select: a descriptor past 1023 is possible in a busy process
    poller.register(fd, select.POLLIN)
    while (left := deadline - time.monotonic()) > 0:
        if not poller.poll(left * 1000):
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False


def _limit_memory() -> None:
    """Bound the address space of this (child) process to what it maps now plus JQ_MEMORY."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        mapped = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = mapped + JQ_MEMORY
    resource.setrlimit(resource.RLIMIT_AS, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
