"""Pools of forked worker processes for the passes that parse in parallel (object files, log files), and how each
worker starts."""

from __future__ import annotations

import gc
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

_PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that forked it ends (the pool's first submit forks them)."""


def pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` forked processes (see `_start`), to use while the thread that makes it lives: the workers
    die with it."""
    return ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=_start, initargs=(os.getpid(),))


def _start(parent: int) -> None:
    """How a worker starts: without the cyclic GC (what it parses is freed by reference counting); deaf to Ctrl-C,
    which a terminal sends to every process of the group and which the scan answers by stopping the pool; ended by
    SIGTERM and SIGHUP without the scan's handlers; and killed when the scan's process dies (else, the scan killed
    by the OOM killer, it would wait on the pool's queue for ever)."""
    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signo in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signo, signal.SIG_DFL)
    if sys.platform == "linux":
        import ctypes  # here, not at the top: a few ms that only a worker spends

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the scan died before the line above
        os._exit(1)
