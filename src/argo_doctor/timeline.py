"""Merge the timestamped evidence of every finding into one ordered timeline."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta

from argo_doctor.errors import ConfigError
from argo_doctor.model import Evidence, Finding, TimelineEntry
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import mapping
from argo_doctor.timeutil import parse_go_duration, parse_time, shift

_LINE = re.compile(r"(?<=:)(\d+)")
COMPONENT_TITLES = {"events": "Kubernetes Events"}
"""The name people read for a component whose id alone misleads: the lane `events` holds the cluster's Event objects,
not Argo Events (whose lanes are `events-controller`, `events-eventsource`, `events-sensor`). The JSON output and
`--component` keep the ids."""


def location_key(location: str) -> tuple[tuple[str | float, ...], str]:
    """Sort key of a location: the numbers after a colon (line numbers, `file:2` before `file:1671`) compare as
    numbers, the rest as text; the location itself breaks ties (`:02` and `:2`)."""
    parts = _LINE.split(location)  # text, number, text, number, ..., text
    return tuple((int(part) if len(part) <= 18 else math.inf) if index % 2 else part
                 for index, part in enumerate(parts)), location


def component_title(component: str) -> str:
    """How a human output names a timeline component."""
    return COMPONENT_TITLES.get(component, component)


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
    entries.sort(key=lambda e: (e.time, location_key(e.location)))
    return entries


def context_entries(snap: Snapshot) -> list[TimelineEntry]:
    """Timestamped facts outside findings: every Event, Application operations, Workflow nodes."""
    entries = []
    for event in snap.events:
        if event.time is not None:
            about = f" {event.involved}" if event.involved else ""
            entries.append(TimelineEntry(event.time, "events", "event", event.obj.location,
                                         f"{event.type} {event.reason}{about}: {event.message}"))
    for app in snap.applications():
        op = mapping(app.status.get("operationState"))
        for key, what in (("startedAt", "started"), ("finishedAt", "finished")):
            when = parse_time(op.get(key))
            if when is not None:
                entries.append(TimelineEntry(when, "application-controller", "object",
                                             f"{app.location} {app.ref} .status.operationState.{key}",
                                             f"{app.name}: operation {what} (phase {op.get('phase')})"))
    for workflow in snap.of_kind("Workflow", "argoproj.io"):
        for node_id, node in mapping(workflow.status.get("nodes")).items():
            node = mapping(node)
            when = parse_time(node.get("finishedAt"))
            if when is not None and node.get("phase") in ("Failed", "Error"):
                entries.append(TimelineEntry(when, "workflow-controller", "object",
                                             f"{workflow.location} {workflow.ref} .status.nodes.{node_id}",
                                             f"{workflow.name} node {node.get('displayName')} {node.get('phase')}: "
                                             f"{node.get('message') or ''}"))
    return entries


def full_timeline(snap: Snapshot, findings: list[Finding]) -> list[TimelineEntry]:
    """The findings' timeline merged with the context entries, each fact once, oldest first."""
    entries = build_timeline(snap, findings)
    seen = {(e.location, e.excerpt) for e in entries}
    seen_locations = {e.location for e in entries}
    for entry in context_entries(snap):
        if (entry.location, entry.excerpt) not in seen and entry.location not in seen_locations:
            entries.append(entry)
    entries.sort(key=lambda e: (e.time, location_key(e.location)))
    return entries


def select(
    entries: list[TimelineEntry], around: datetime | None, window: float, components: tuple[str, ...]
) -> list[TimelineEntry]:
    """Entries within window/2 of `around` (all when None) and of the given components (all when empty)."""
    half = timedelta(seconds=window / 2)  # at most 146 years: parse_go_duration refuses Go's too long durations
    low, high = (shift(around, -half), shift(around, half)) if around is not None else (None, None)
    return [e for e in entries
            if (low is None or high is None or low <= e.time <= high)
            and (not components or e.component in components)]


FINDING_ID = re.compile(r"[a-z0-9-]+:[0-9a-f]{12}")


def _before(around: str) -> float | None:
    """The seconds of `-2h`; None for anything else."""
    return parse_go_duration(around[1:]) if around.startswith("-") else None


def around_time(around: str, option: str) -> datetime | None:
    """The time `around` names when it is one (2026-11-22T15:03:00Z, 2026-11-22 15:03 in UTC); None for a duration
    back (-2h) or a finding id, which need the scan (`window_centre`); ConfigError for anything else. `option` names
    the argument in the message, as the user gave it."""
    when = parse_time(around)
    if when is None and _before(around) is None and not FINDING_ID.fullmatch(around):
        raise ConfigError(f"{option} {around!r} is neither a time (2026-11-22T15:03:00Z, 2026-11-22 15:03), a "
                          "duration before the input's last entry (-2h) nor a finding id (RULE:HEX, as "
                          "`scan -o json` shows)")
    return when


def window_centre(around: str, every: list[TimelineEntry], findings: list[Finding], option: str) -> datetime:
    """The time `around` names, relative to the input (`-2h`) or a finding (its id: the start of its causal
    chain, else its first timestamped evidence); ConfigError when it names nothing there."""
    when = parse_time(around)
    if when is not None:
        return when
    seconds = _before(around)
    if seconds is not None:
        if not every:
            raise ConfigError(f"{option} {around}: the input holds no timestamped entry to count back from")
        return shift(max(e.time for e in every), -timedelta(seconds=seconds))
    found = next((f for f in findings if f.id == around), None)
    if found is None:
        raise ConfigError(f"{option} {around}: no such finding (the ids: {', '.join(f.id for f in findings[:5])}"
                          f"{', …' if len(findings) > 5 else ''})")
    chained = [found.evidence[i] for i in found.chain if 0 <= i < len(found.evidence)]
    times = [e.time for e in chained or found.evidence if e.time is not None]
    if not times:
        raise ConfigError(f"{option} {around}: the finding has no timestamped evidence")
    return min(times)
