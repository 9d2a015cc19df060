"""Node clock offsets against the API server, estimated from what a bundle already holds.

Offset = node clock − API server clock (negative: the node is behind). Each sample pairs a time
the node wrote with a time the API server stamped on the same write:

- node Lease: `spec.renewTime` (node clock, microseconds) against the `time` of the kubelet's
  managedFields entry (API server clock, truncated to the second): ± 0.5 s;
- Node status: the newest `status.conditions[].lastHeartbeatTime` (node clock, seconds) against
  the kubelet's `status` managedFields `time`: ± 1 s;
- kubelet Events: `firstTimestamp` (core/v1, seconds) or `eventTime` (microseconds) against
  `metadata.creationTimestamp` (API server clock): ± 1 s / ± 0.5 s, plus the event's delivery delay,
  which only makes the node look further behind, and which the median absorbs;
- `clock.yaml` probes taken by `collect`: the HTTP `Date` of each kubelet reached through the API
  server's node proxy against the collector's clock, bounded by the round trip, related to the
  API server by the same probe of the API server.

Samples per node are combined by their median, with a robust spread (1.4826 × MAD) as part of
the uncertainty. Fewer than `min_samples` samples leave the node's offset unknown.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from argo_doctor.model import Evidence, Problem
from argo_doctor.snapshot import KEvent, Obj, Snapshot
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

SampleSource = Literal["lease", "node-status", "event", "probe"]
MIN_SAMPLES = 2
MAX_EVIDENCE = 6
NODE_LEASE_NAMESPACE = "kube-node-lease"


@dataclass(frozen=True)
class ClockSample:
    """One measurement of a node's clock offset."""

    node: str
    source: SampleSource
    offset: float
    uncertainty: float
    location: str
    time: datetime | None
    detail: str


@dataclass(frozen=True)
class ClockEstimate:
    """A node's combined offset, or None when there were too few samples."""

    node: str
    offset: float | None
    uncertainty: float | None
    samples: tuple[ClockSample, ...]

    @property
    def known(self) -> bool:
        """Whether enough samples were found to state an offset."""
        return self.offset is not None

    def bounds(self) -> tuple[float, float] | None:
        """(lowest, highest) offset consistent with the samples."""
        if self.offset is None or self.uncertainty is None:
            return None
        return self.offset - self.uncertainty, self.offset + self.uncertainty

    def describe(self) -> str:
        """`187.2 s behind (± 1.0 s, 9 samples)`."""
        n = len(self.samples)
        if self.offset is None or self.uncertainty is None:
            return f"unknown ({n} sample{'s' if n != 1 else ''}; at least {MIN_SAMPLES} needed)"
        if abs(self.offset) < 0.05:
            return f"0.0 s off the API server (± {self.uncertainty:.1f} s, {n} samples)"
        way = "ahead of" if self.offset > 0 else "behind"
        return f"{abs(self.offset):.1f} s {way} the API server (± {self.uncertainty:.1f} s, {n} samples)"

    def evidence(self, limit: int = MAX_EVIDENCE) -> list[Evidence]:
        """The samples behind the estimate as evidence, the most precise first."""
        ordered = sorted(self.samples, key=lambda s: (s.uncertainty, s.source))
        return [
            Evidence("probe" if s.source == "probe" else ("event" if s.source == "event" else "object"), s.location,
                     f"{s.detail}: offset {s.offset:+.1f} s ± {s.uncertainty:.1f} s", s.time)
            for s in ordered[:limit]
        ]


def _kubelet_entry(obj: Obj, subresource: str | None) -> tuple[datetime, int] | None:
    """(time, index) of the kubelet's managedFields entry for the given subresource."""
    best = None
    for index, entry in enumerate(as_list(obj.meta.get("managedFields"))):
        entry = mapping(entry)
        if entry.get("manager") != "kubelet" or entry.get("operation") != "Update":
            continue
        if (entry.get("subresource") or None) != subresource:
            continue
        when = parse_time(entry.get("time"))
        if when is not None and (best is None or when > best[0]):
            best = (when, index)
    return best


def lease_samples(snap: Snapshot) -> list[ClockSample]:
    """One sample per node Lease."""
    samples = []
    for lease in snap.of_kind("Lease", "coordination.k8s.io", NODE_LEASE_NAMESPACE):
        renew = parse_time(lease.spec.get("renewTime"))
        stamped = _kubelet_entry(lease, None)
        if renew is None or stamped is None:
            continue
        server, index = stamped
        node = str(lease.spec.get("holderIdentity") or lease.name)
        offset = (renew - server).total_seconds() - 0.5  # the server time lies in [t, t + 1)
        samples.append(ClockSample(
            node, "lease", offset, 0.5,
            f"{lease.location} {lease.ref} .spec.renewTime, .metadata.managedFields[{index}].time",
            server,
            f"Lease renewTime {format_time(renew)} (node clock) written at {format_time(server)} (API server clock)",
        ))
    return samples


def node_status_samples(snap: Snapshot) -> list[ClockSample]:
    """One sample per Node whose kubelet status update is recorded in managedFields."""
    samples = []
    for node in snap.of_kind("Node", ""):
        beats = [parse_time(mapping(c).get("lastHeartbeatTime")) for c in as_list(node.status.get("conditions"))]
        heartbeat = max((b for b in beats if b is not None), default=None)
        stamped = _kubelet_entry(node, "status")
        if heartbeat is None or stamped is None:
            continue
        server, index = stamped
        samples.append(ClockSample(
            node.name, "node-status", (heartbeat - server).total_seconds(), 1.0,
            f"{node.location} {node.ref} .status.conditions[].lastHeartbeatTime, .metadata.managedFields[{index}].time",
            server,
            f"status heartbeat {format_time(heartbeat)} (node clock) written at {format_time(server)} "
            "(API server clock)",
        ))
    return samples


def _event_node(event: KEvent) -> str | None:
    raw = event.obj.raw
    source = mapping(raw.get("source"))
    if source.get("component") == "kubelet" and source.get("host"):
        return str(source["host"])
    if raw.get("reportingController") == "kubelet" and raw.get("reportingInstance"):
        return str(raw["reportingInstance"])
    if raw.get("reportingComponent") == "kubelet" and raw.get("reportingInstance"):
        return str(raw["reportingInstance"])
    return None


def event_samples(snap: Snapshot) -> list[ClockSample]:
    """One sample per kubelet Event: when the node says it happened against when the API server
    stored it. A single event pairs its first time with its creation; a repeated one (count > 1,
    or a series) keeps the first time of the whole series, possibly from an earlier object of the
    same name, so only its last time counts, against the kubelet's last write in managedFields."""
    samples = []
    for event in snap.events:
        node = _event_node(event)
        if node is None:
            continue
        raw = event.obj.raw
        repeated = event.count > 1 or bool(raw.get("series"))
        if repeated:
            stamped = _kubelet_entry(event.obj, None)
            server = stamped[0] if stamped is not None else None
            series = mapping(raw.get("series"))
            said = parse_time(series.get("lastObservedTime")) or parse_time(raw.get("lastTimestamp"))
            micro = said is not None and bool(series.get("lastObservedTime"))
        else:
            server = event.created
            said = parse_time(raw.get("eventTime")) or parse_time(raw.get("firstTimestamp"))
            micro = bool(raw.get("eventTime"))
        if server is None or said is None:
            continue
        if micro:  # node time in microseconds, server time truncated to the second
            offset, uncertainty = (said - server).total_seconds() - 0.5, 0.5
        else:
            offset, uncertainty = (said - server).total_seconds(), 1.0
        created = server
        samples.append(ClockSample(
            node, "event", offset, uncertainty,
            f"{event.obj.location} {event.obj.ref} "
            + (".lastTimestamp, .metadata.managedFields" if repeated else
               ".firstTimestamp, .metadata.creationTimestamp"),
            created,
            f"kubelet event {event.reason} at {format_time(said)} (node clock) "
            f"{'updated' if repeated else 'created'} at {format_time(created)} (API server clock)",
        ))
    return samples


def _probe_offset(probe: dict[str, Any]) -> tuple[float, float] | None:
    """(offset of the probed clock against the collector's, uncertainty) from one HTTP probe."""
    sent, received = parse_time(probe.get("sent")), parse_time(probe.get("received"))
    try:
        date = parsedate_to_datetime(str(probe.get("date")))
    except (TypeError, ValueError):
        return None
    if sent is None or received is None or date is None or received < sent or date.tzinfo is None:
        return None
    middle = sent + (received - sent) / 2
    # the Date header is truncated to the second: the probed clock read a time in [date, date + 1)
    return (date - middle).total_seconds() + 0.5, (received - sent).total_seconds() / 2 + 0.5


def probe_samples(snap: Snapshot) -> list[ClockSample]:
    """Samples from `clock.yaml` probes, relative to the API server through its own probe."""
    samples = []
    for display, doc in snap.clock_probes():
        apiserver = _probe_offset(mapping(doc.get("apiserver")))
        if apiserver is None:
            snap.problems.append(Problem(display, "no usable apiserver probe: node probes cannot be related "
                                                  "to the API server's clock and were not used"))
            continue
        for index, probe in enumerate(as_list(doc.get("probes"))):
            probe = mapping(probe)
            measured = _probe_offset(probe)
            if measured is None or not probe.get("node"):
                snap.problems.append(Problem(f"{display} probes[{index}]", "incomplete probe; skipped"))
                continue
            offset = measured[0] - apiserver[0]
            samples.append(ClockSample(
                str(probe["node"]), "probe", offset, measured[1] + apiserver[1], f"{display} probes[{index}]",
                parse_time(probe.get("received")),
                f"kubelet Date {probe.get('date')} between {probe.get('sent')} and {probe.get('received')} "
                "(collector clock)",
            ))
    return samples


def combine(node: str, samples: list[ClockSample], min_samples: int = MIN_SAMPLES) -> ClockEstimate:
    """The median offset of the samples, with an uncertainty that covers their spread."""
    if len(samples) < min_samples:
        return ClockEstimate(node, None, None, tuple(samples))
    offsets = [s.offset for s in samples]
    middle = statistics.median(offsets)
    spread = 1.4826 * statistics.median(abs(o - middle) for o in offsets)
    uncertainty = max(statistics.median(s.uncertainty for s in samples), spread)
    return ClockEstimate(node, middle, uncertainty, tuple(samples))


def estimate_clocks(snap: Snapshot, min_samples: int = MIN_SAMPLES) -> dict[str, ClockEstimate]:
    """Every node's clock estimate, including nodes with too few samples (offset None)."""
    by_node: dict[str, list[ClockSample]] = {n.name: [] for n in snap.of_kind("Node", "")}
    for sample in (*lease_samples(snap), *node_status_samples(snap), *event_samples(snap), *probe_samples(snap)):
        by_node.setdefault(sample.node, []).append(sample)
    return {node: combine(node, samples, min_samples) for node, samples in sorted(by_node.items())}
