"""Hypothesis profiles of the fuzz tests, and a watchdog that turns a hang into a failure.

`make test` runs the `argo-doctor-fuzz` profile: a bounded number of small examples, the same on every run
(derandomized), a few seconds per reader. `ARGO_DOCTOR_FUZZ=long` runs `argo-doctor-fuzz-long`: many more
examples, random each run. Neither keeps an example database in the working tree.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType

from hypothesis import HealthCheck, settings

settings.register_profile(
    "argo-doctor-fuzz", max_examples=100, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "argo-doctor-fuzz-long", max_examples=5_000, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("argo-doctor-fuzz-long" if os.environ.get("ARGO_DOCTOR_FUZZ") == "long"
                            else "argo-doctor-fuzz")
"""The settings every fuzz test runs with."""
HANG_SECONDS = 20.0
"""One example of any reader takes milliseconds; this long means it hangs."""


@contextlib.contextmanager
def no_hang(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Raise TimeoutError in the block when it runs longer than `seconds` (a safety net, not a timing test)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds:g} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
