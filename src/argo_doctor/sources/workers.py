"""Pools of forked worker processes for the passes that parse in parallel (object files, log files), a single forked
call (the audit-reading rules beside the others), and how each worker starts."""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Generic, TypeVar, cast

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that forked it ends (the pool's first submit forks them)."""


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """SIGINT blocked while a worker is forked: the child inherits the mask, so that a Ctrl-C between the fork and
    `_start` (Python's at-fork hooks run first) stays pending there until `_start` ignores it; here it is delivered
    when the block ends."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


class _Pool(ProcessPoolExecutor):
    """A ProcessPoolExecutor whose workers are forked with SIGINT held (`_sigint_held`)."""

    def _spawn_process(self) -> None:
        with _sigint_held():
            super()._spawn_process()  # type: ignore[misc]


def pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` forked processes (see `_start`), to use while the thread that makes it lives: the workers
    die with it."""
    return _Pool(workers, mp_context=get_context("fork"), initializer=_start, initargs=(os.getpid(),))


def _start(parent: int) -> None:
    """How a worker starts: without the cyclic GC (what it parses is freed by reference counting); deaf to Ctrl-C,
    which a terminal sends to every process of the group and which the scan answers by stopping the pool (one that
    came while it was forked, held since, is dropped); ended by SIGTERM and SIGHUP without the scan's handlers; and
    killed when the scan's process dies (else, the scan killed by the OOM killer, it would wait on the pool's queue
    for ever)."""
    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    for signo in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signo, signal.SIG_DFL)
    if sys.platform == "linux":
        import ctypes  # here, not at the top: a few ms that only a worker spends

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the scan died before the line above
        os._exit(1)


def fork_deaf() -> int:
    """`os.fork()`, the child deaf to Ctrl-C from its first instruction: SIGINT is held across the fork (held as in
    `_sigint_held`), and the child ignores it before letting it through again."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return pid


class ForkFailed(Exception):
    """A forked call gave no result: its process died, or what it returned could not be pickled."""


class Forked(Generic[T]):
    """`call()` running in a forked copy of this process, started as a pool's workers are (see `_start`), that writes
    what it returns, pickled, to an unnamed temporary file and ends: it does not wait for this process to read it,
    so that its pages are freed as soon as it is done (a page this process writes while the copy lives is copied).
    A context manager: leaving the block before `result` kills the copy. Fork only while this thread is the
    process's only one (a lock held by another would stay held)."""

    def __init__(self, call: Callable[[], T]) -> None:
        parent = os.getpid()
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by result or __exit__)
        try:
            pid = fork_deaf()
        except OSError:
            self._file.close()
            raise
        if pid == 0:
            code = 1
            try:
                _start(parent)
                data = pickle.dumps(call(), pickle.HIGHEST_PROTOCOL)
                with open(self._file.fileno(), "wb", closefd=False) as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)  # no exit handlers, no flush of buffers the parent also holds; exceptions: code 1
        self._pid: int | None = pid

    @property
    def pid(self) -> int | None:
        """The forked process's id; None once it is reaped."""
        return self._pid

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):  # ended and reaped already (SIGCHLD ignored)
                os.kill(self._pid, signal.SIGKILL)
            self._reap()
        self._file.close()

    def result(self) -> T:
        """What the call returned; ForkFailed when its process ended without sending it."""
        try:
            status = self._reap()
            self._file.seek(0)
            data = self._file.read()
        except BaseException:  # e.g. KeyboardInterrupt: leave no copy running
            self.__exit__()
            raise
        finally:
            self._file.close()
        if status is not None and status != 0:
            raise ForkFailed(f"the forked process ended with status {status}")
        try:  # a status unknown (reaped by the system): only a whole pickle, written last, is a result
            return cast(T, pickle.loads(data))
        except Exception as exc:  # none, or cut short: the process died before or while writing it
            raise ForkFailed(f"the forked process sent no result: {exc!r}") from exc

    def _reap(self) -> int | None:
        """Wait for the process; its exit code, None when the system reaped it already (a parent that ignores
        SIGCHLD passes that on to this process). Interrupted, the process is still this object's to kill."""
        if self._pid is None:
            return None
        try:
            status = os.waitpid(self._pid, 0)[1]
        except ChildProcessError:
            self._pid = None
            return None
        self._pid = None
        return os.waitstatus_to_exitcode(status)
