"""The JSON output: a stable contract documented in docs/json-output.md (schemaVersion 1)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

import msgspec

from argo_doctor import __version__
from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, Finding, Problem, Ref, TimelineEntry
from argo_doctor.report.groups import group_ids
from argo_doctor.report.options import ReportOptions
from argo_doctor.sources.redact import SecretScrubber, clean
from argo_doctor.timeutil import format_time

SCHEMA_VERSION = 1
_UNESCAPED_CONTROL = re.compile(rb"\x7f|\xc2[\x80-\x9f]")
"""DEL and the C1 controls, in UTF-8 (0xC2 is never a continuation byte, so this matches those characters only)."""
_WRITE_CHUNK = 1 << 20


def _escaped(data: bytes) -> bytes:
    """JSON text with DEL and the C1 controls escaped as well (JSON requires it of the C0 ones only, and a terminal
    would act on a raw CSI)."""
    return _UNESCAPED_CONTROL.sub(lambda m: f"\\u{ord(m.group().decode()):04x}".encode(), data)


def _formatted(doc: Any) -> bytes:
    """A JSON document pretty-printed in UTF-8, DEL and the C1 controls escaped (`_escaped`)."""
    return _escaped(msgspec.json.format(msgspec.json.encode(doc), indent=2))


def compact(doc: Any) -> str:
    """A JSON document on one line, without spaces, DEL and the C1 controls escaped: for readers that pay per byte."""
    return _escaped(msgspec.json.encode(doc)).decode()


def dumps(doc: Any) -> str:
    """A JSON document pretty-printed, DEL and the C1 controls escaped (`_formatted`)."""
    return _formatted(doc).decode()


def encode(doc: Any, scrubber: SecretScrubber | None = None) -> str:
    """`dumps` of the document with every string redacted first (escaping must not hide a match)."""
    return dumps(clean(doc, scrubber))


def ref_json(ref: Ref) -> dict[str, str]:
    """A Ref as `{apiVersion, kind, namespace, name}`."""
    return {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}


def evidence_json(item: Evidence) -> dict[str, Any]:
    """One evidence item."""
    return {"kind": item.kind, "time": format_time(item.time), "location": item.location, "excerpt": item.excerpt}


def finding_json(finding: Finding) -> dict[str, Any]:
    """One finding."""
    remediation: dict[str, Any] = {"text": finding.remediation.text, "docs": list(finding.remediation.docs)}
    if finding.remediation.patch is not None:
        remediation["patch"] = finding.remediation.patch
    if finding.remediation.command is not None:
        remediation["command"] = finding.remediation.command
    return {
        "id": finding.id,
        "rule": finding.rule,
        "severity": finding.severity.label,
        "title": finding.title,
        "summary": finding.summary,
        "objects": [ref_json(r) for r in finding.objects],
        "evidence": [evidence_json(e) for e in finding.evidence],
        "remediation": remediation,
        "chain": chain_json(finding),
    }


def chain_json(finding: Finding) -> list[dict[str, Any]]:
    """The causal chain: evidence indexes in order, with the seconds since the previous step."""
    steps = []
    previous = None
    for index in finding.chain:
        when = finding.evidence[index].time
        gap: float | None = None
        if when is not None and previous is not None:
            gap = round((when - previous).total_seconds(), 3)  # times are printed to the millisecond
        steps.append({"evidence": index, "gapSeconds": gap})
        previous = when or previous
    return steps


def timeline_json(entry: TimelineEntry) -> dict[str, Any]:
    """One timeline entry."""
    return {
        "time": format_time(entry.time),
        "component": entry.component,
        "kind": entry.kind,
        "location": entry.location,
        "excerpt": entry.excerpt,
        "findings": list(entry.findings),
    }


def problem_json(problem: Problem) -> dict[str, str]:
    """One input error or note."""
    return {"location": problem.location, "message": problem.message, "kind": problem.kind}


LISTS = ("findings", "timeline", "errors")
"""The document's lists, after its head (schemaVersion, tool, source), in this order."""


def _parts(result: ScanResult) -> tuple[dict[str, Any], dict[str, Iterator[Any]]]:
    """The document's head and each of its lists item by item (made as they are read), every string redacted
    (before encoding, so that escaping hides nothing)."""
    snap = result.snapshot
    cluster = snap.meta.get("cluster")
    head = {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "argo-doctor", "version": __version__},
        "source": {
            "inputs": snap.source,
            "format": ", ".join(dict.fromkeys(snap.formats)) or "files",
            "collectedAt": format_time(snap.reference_time) if snap.meta.get("collectedAt") else None,
            "cluster": cluster if isinstance(cluster, dict) else None,
            "objects": len(snap),
            "logFiles": len(snap.log_files),
            "auditFiles": len(snap.audit_files),
        },
    }
    # a redacted result's findings and errors hold the redacted strings as they are (ids, times and severities
    # besides): not again; the timeline's texts are mostly theirs, which the scan's cleaning made already
    cache = result.cleaned if result.redacted else {}

    def cleaned(value: Any) -> Any:
        return clean(value, snap.scrubber, cache=cache)

    def done(value: Any) -> Any:
        return value if result.redacted else cleaned(value)

    groups = group_ids(result.findings)
    return cleaned(head), {
        "findings": (done({**finding_json(f), "group": groups.get(f.id)}) for f in result.findings),
        "timeline": (cleaned(timeline_json(t)) for t in result.timeline),
        "errors": (done(problem_json(p)) for p in result.problems),
    }


def document(result: ScanResult) -> dict[str, Any]:
    """The whole JSON document, every string redacted."""
    head, lists = _parts(result)
    return {**head, **{key: list(lists[key]) for key in LISTS}}


def _streamed(head: dict[str, Any], lists: dict[str, Iterator[Any]]) -> Iterator[bytes]:
    """`_formatted` of the head with the lists after it, in pieces: an item of a list at a time (its lines
    indented as the whole document's would be), so that a large report is never held whole."""
    opened = _formatted(head)
    yield opened[:opened.rindex(b"\n}")]
    for key in LISTS:
        yield b",\n  " + msgspec.json.encode(key) + b": "
        first = True
        for item in lists[key]:
            yield (b"[\n    " if first else b",\n    ") + _formatted(item).replace(b"\n", b"\n    ")
            first = False
        yield b"[]" if first else b"\n  ]"
    yield b"\n}"


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the JSON document, pretty-printed, a piece at a time (`_streamed`): the same text as `dumps` of
    `document`."""
    pending: list[bytes] = []
    size = 0
    for piece in _streamed(*_parts(result)):
        pending.append(piece)
        size += len(piece)
        if size >= _WRITE_CHUNK:
            out.write(b"".join(pending).decode())
            pending, size = [], 0
    out.write(b"".join(pending).decode() + "\n")
