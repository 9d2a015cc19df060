"""The finding model: Ref, Evidence, Remediation, Finding, Problem and TimelineEntry."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

EvidenceKind = Literal["object", "log", "audit", "event", "metric", "probe"]


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that comparisons mean "at least as bad"."""

    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        """The lower-case name used in every output."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse `critical|high|medium|low|info` (any case)."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}") from None


@dataclass(frozen=True, order=True)
class Ref:
    """A reference to a Kubernetes object."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: where it is, when it happened, and what it says (the engine redacts it)."""

    kind: EvidenceKind
    location: str
    excerpt: str
    time: datetime | None = None


@dataclass(frozen=True)
class Remediation:
    """What to do about a finding."""

    text: str
    patch: str | None = None
    command: str | None = None
    docs: tuple[str, ...] = ()


@dataclass
class Finding:
    """One diagnosed problem, with its root cause, evidence and fix. Analyzers build it from what the input
    says; the engine redacts every string in it before anything else sees it."""

    rule: str
    severity: Severity
    title: str
    summary: str
    objects: list[Ref] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    remediation: Remediation = field(default_factory=lambda: Remediation(text=""))
    chain: list[int] = field(default_factory=list)
    """Indexes into `evidence`, in causal order, when the finding links them into a chain."""

    @property
    def id(self) -> str:
        """A stable identifier: the rule plus a digest of the affected objects and title."""
        key = "|".join([self.rule, self.title, *(str(r) for r in sorted(self.objects))])
        return f"{self.rule}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class Problem:
    """Input that could not be read or understood (`kind` "error"; the scan goes on without it), or a note about
    the input (`kind` "note": e.g. an object read twice, of which one copy is used)."""

    location: str
    message: str
    kind: Literal["error", "note"] = "error"


@dataclass(frozen=True)
class TimelineEntry:
    """One timestamped evidence item on the merged timeline."""

    time: datetime
    component: str
    kind: EvidenceKind
    location: str
    excerpt: str
    findings: tuple[str, ...] = ()


DEFAULT_MAX_LOG_BYTES = 10 * 1024 * 1024
"""The most bytes of log a collection reads per container, unless told otherwise (`--max-log-bytes`)."""


@dataclass(frozen=True)
class Needs:
    """What a rule reads, so that a live source collects only that: kinds as `Kind` (core) or `group/Kind`,
    the logs of which components (`*`: every Argo component), and the other streams."""

    kinds: frozenset[str] = frozenset()
    logs: frozenset[str] = frozenset()
    events: bool = False
    audit: bool = False
    metrics: bool = False
    app_resources: bool = False
    """The objects that Applications list in `status.resources`, whatever their kind."""
    failing_pod_logs: bool = False
    """The recent logs of pods that crash or restart in the namespaces Applications deploy to."""

    def __or__(self, other: Needs) -> Needs:
        return Needs(self.kinds | other.kinds, self.logs | other.logs, self.events or other.events,
                     self.audit or other.audit, self.metrics or other.metrics,
                     self.app_resources or other.app_resources, self.failing_pod_logs or other.failing_pod_logs)
