"""Merge the timestamped evidence of every finding into one ordered timeline."""

from __future__ import annotations

from argo_doctor.model import Evidence, Finding, TimelineEntry
from argo_doctor.snapshot import Snapshot


def component_of(snap: Snapshot, evidence: Evidence) -> str:
    """The component an evidence item comes from: the pod's component for logs, else its kind."""
    if evidence.kind == "log":
        parts = evidence.location.split("/")
        if "logs" in parts:
            at = parts.index("logs")
            if len(parts) > at + 2:
                found = snap.component_of_pod(parts[at + 1], parts[at + 2])
                return found or parts[at + 2]
        elif len(parts) >= 3:  # cluster-info dump: <namespace>/<pod>/logs.txt
            return snap.component_of_pod(parts[-3], parts[-2]) or parts[-2]
    return {"audit": "kube-apiserver", "event": "events", "object": "objects"}.get(evidence.kind, evidence.kind)


def build_timeline(snap: Snapshot, findings: list[Finding]) -> list[TimelineEntry]:
    """Every timestamped evidence item once, oldest first, with the findings that cite it."""
    merged: dict[tuple[str, str], tuple[Evidence, list[str]]] = {}
    for finding in findings:
        for item in finding.evidence:
            if item.time is None:
                continue
            key = (item.location, item.excerpt)
            if key not in merged:
                merged[key] = (item, [])
            if finding.id not in merged[key][1]:
                merged[key][1].append(finding.id)
    entries = [
        TimelineEntry(item.time, component_of(snap, item), item.kind, item.location, item.excerpt, tuple(ids))
        for item, ids in merged.values()
        if item.time is not None
    ]
    entries.sort(key=lambda e: (e.time, e.location))
    return entries
