"""kube-apiserver audit logs: one audit.k8s.io/v1 Event JSON per line, streamed lazily."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import msgspec

from argo_doctor.model import Problem
from argo_doctor.timeutil import parse_time


@dataclass(frozen=True, slots=True)
class AuditFile:
    """One audit log file (plain or gzip)."""

    path: Path
    display: str


class _ObjectRef(msgspec.Struct, omit_defaults=True):
    resource: str = ""
    namespace: str = ""
    name: str = ""
    apiGroup: str = ""
    apiVersion: str = ""
    subresource: str = ""


class _User(msgspec.Struct, omit_defaults=True):
    username: str = ""
    groups: list[str] = []


class _Status(msgspec.Struct, omit_defaults=True):
    code: int = 0
    status: str = ""
    reason: str = ""
    message: str = ""


class _RawAuditEvent(msgspec.Struct, omit_defaults=True):
    auditID: str = ""
    stage: str = ""
    requestURI: str = ""
    verb: str = ""
    user: _User = msgspec.field(default_factory=_User)
    userAgent: str = ""
    objectRef: _ObjectRef | None = None
    responseStatus: _Status | None = None
    requestReceivedTimestamp: str = ""
    stageTimestamp: str = ""
    annotations: dict[str, str] = {}
    kind: str = ""


_DECODER = msgspec.json.Decoder(_RawAuditEvent)
MAX_AUDIT_LINE = 16 << 20


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audit record, with its source location."""

    audit_id: str
    stage: str
    request_uri: str
    verb: str
    username: str
    user_agent: str
    resource: str
    namespace: str
    name: str
    api_group: str
    api_version: str
    subresource: str
    code: int
    received: datetime | None
    annotations: dict[str, str]
    location: str


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value] # a GzipFile is a binary IO
    return path.open("rb")


def read_audit_file(audit_file: AuditFile, problems: list[Problem]) -> Iterator[AuditEvent]:
    """Yield the audit events of one file; bad lines are reported once per file, with their line."""
    bad = 0
    try:
        handle = _open(audit_file.path)
    except OSError as exc:
        problems.append(Problem(audit_file.display, f"cannot read: {exc.strerror or exc}"))
        return
    with handle:
        number = 0
        try:
            while line := handle.readline(MAX_AUDIT_LINE + 1):
                number += 1
                if len(line) > MAX_AUDIT_LINE and not line.endswith(b"\n"):
                    while (rest := handle.readline(MAX_AUDIT_LINE)) and not rest.endswith(b"\n"):
                        pass
                    problems.append(Problem(f"{audit_file.display}:{number}", "audit event over 16 MiB; skipped"))
                    continue
                if not line.strip():
                    continue
                try:
                    raw = _DECODER.decode(line)
                except msgspec.DecodeError as exc:
                    if bad == 0:
                        problems.append(Problem(f"{audit_file.display}:{number}", f"not an audit event: {exc}"))
                    bad += 1
                    continue
                yield _event(raw, f"{audit_file.display}:{number}")
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            problems.append(Problem(f"{audit_file.display}:{number + 1}", f"audit log cut short: {exc}"))
    if bad > 1:
        problems.append(Problem(audit_file.display, f"{bad} lines in all were not audit events"))


def _event(raw: _RawAuditEvent, location: str) -> AuditEvent:
    ref = raw.objectRef or _ObjectRef()
    status: Any = raw.responseStatus
    return AuditEvent(
        audit_id=raw.auditID,
        stage=raw.stage,
        request_uri=raw.requestURI,
        verb=raw.verb,
        username=raw.user.username,
        user_agent=raw.userAgent,
        resource=ref.resource,
        namespace=ref.namespace,
        name=ref.name,
        api_group=ref.apiGroup,
        api_version=ref.apiVersion,
        subresource=ref.subresource,
        code=status.code if status is not None else 0,
        received=parse_time(raw.requestReceivedTimestamp),
        annotations=raw.annotations,
        location=location,
    )
