"""Child processes that end with the test run: a server a test starts is killed by the kernel when the process that
started it dies, however it dies (a run killed or interrupted leaves no server listening behind it)."""

from __future__ import annotations

import ctypes
import signal
import subprocess
from typing import Any

PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent's thread that started it ends (Linux's prctl)."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def popen(args: list[str], **options: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen` of a child that dies with this process."""
    return subprocess.Popen(args, preexec_fn=_die_with_parent, **options)
