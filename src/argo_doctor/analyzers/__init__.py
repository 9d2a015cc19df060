"""Analyzers: one module per failure pattern, and the registry that lists them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from argo_doctor.health import HealthAssessor
from argo_doctor.model import Finding
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.logs import LogRecord, LogSignature


@dataclass
class Context:
    """What an analyzer gets: the snapshot and the shared health assessor."""

    snap: Snapshot
    health: HealthAssessor


class Analyzer:
    """One failure pattern. Subclasses set `id`, `title` and `signatures` (ids of rows in
    `knowledge/log_signatures.yaml`), collect log matches in `on_log`, and yield findings in
    `analyze`. An instance lives for one scan; analyzers never do I/O."""

    id: ClassVar[str]
    title: ClassVar[str]
    signatures: ClassVar[tuple[str, ...]] = ()

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Receive one log line that matched one of `signatures`."""

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """Yield the findings of this pattern."""
        raise NotImplementedError


def all_analyzers() -> list[type[Analyzer]]:
    """Every registered analyzer class, in a stable order."""
    from argo_doctor.analyzers import app_unhealthy, sync_failed

    return [app_unhealthy.AppUnhealthy, sync_failed.SyncFailed]
