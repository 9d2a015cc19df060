"""events-eventbus-unhealthy: an Argo Events EventBus that does not carry events, and why.

The controller sets `Deployed` True as soon as it has written the bus's StatefulSet (pkg/reconciler/eventbus/
installer/jetstream.go), and Argo CD's health check reads that condition alone: a bus whose JetStream servers are
Pending or crash-loop shows Healthy. This rule reads the conditions (`Configured` / `Deployed` False: an invalid spec,
an unsupported JetStream version, a StatefulSet the controller could not write), the servers' pods, and the errors
the EventSources and Sensors of its namespace get from JetStream (`insufficient resources`, `no suitable peers for
placement`, `no responders available`, `stream not found`, `no servers available for connection`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import after, failing, line_order, log_evidence, pod_evidence
from argo_doctor.facts.events import (
    BUS_LABEL,
    GROUP,
    bus_workload,
    condition_evidence,
    failed_conditions,
    generated_pods,
)
from argo_doctor.health.types import HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping

DOCS = ("https://argoproj.github.io/argo-events/eventbus/jetstream/",)
ADVICE = {
    "insufficient resources": "JetStream has no room for the stream: raise max_file_store / max_memory_store in the "
                              "EventBus's settings (or the controller's config) or the stream's maxBytes lower, and "
                              "check that the servers' volumes are not full",
    "no suitable peers for placement": "the stream asks for more replicas than JetStream servers are up: bring the "
                                       "servers up, or lower streamConfig replicas to at most the bus's replicas",
    "no servers available for connection": "nothing answers at the bus's Service: its servers are not ready",
    "no responders available for request": "JetStream does not answer (not ready, or no meta leader elected)",
    "no response from stream": "JetStream does not answer (not ready, or no meta leader elected)",
    "stream not found": "the stream is gone (a bus recreated without its volumes): restart the EventSources so "
                        "that they create it again",
}
KEEP = 2


class EventsEventBusUnhealthy(Analyzer):
    """Argo Events EventBuses that do not carry events."""

    id = "events-eventbus-unhealthy"
    title = "Argo Events EventBus does not carry events"
    signatures = ("events.jetstream-refused", "events.publish-succeeded", "events.trigger-succeeded")
    needs = Needs(frozenset({"argoproj.io/EventBus", "apps/StatefulSet", "Pod"}), failing_pod_logs=True)

    def __init__(self) -> None:
        self._refusals: dict[str, list[tuple[str, LogRecord]]] = defaultdict(list)
        self._carried: dict[str, LogRecord] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep JetStream's refusals per namespace, and the last event the bus carried there (published or
        triggered): refusals before it are history."""
        namespace = record.file.namespace
        if signature.id != "events.jetstream-refused":
            if namespace not in self._carried or after(record, self._carried[namespace]):
                self._carried[namespace] = record
        elif match is not None:
            self._refusals[namespace].append((match["error"], record))

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for bus in sorted(ctx.snap.of_kind("EventBus", GROUP), key=lambda b: (b.namespace, b.name)):
            finding = self._bus(ctx, bus)
            if finding is not None:
                yield finding

    def _bus(self, ctx: Context, bus: Obj) -> Finding | None:
        ns, name = bus.namespace, bus.name
        conditions = failed_conditions(bus)
        workload = bus_workload(ctx.snap, bus)
        pods = generated_pods(ctx.snap, bus, BUS_LABEL)
        unhealthy = failing(ctx, pods, (HealthStatus.DEGRADED,))
        carried = self._carried.get(ns)
        current = [(e, r) for e, r in self._refusals.get(ns, []) if carried is None or after(r, carried)] \
            if len(ctx.snap.of_kind("EventBus", GROUP, ns)) == 1 else []
        errors = Counter(e for e, _ in current)
        if not conditions and not unhealthy and not errors:
            return None
        parts: list[str] = []
        evidence: list[Evidence] = condition_evidence(bus, conditions)
        fix: list[str] = []
        if conditions:
            parts.append("The controller does not run it: " + "; ".join(map(str, conditions)) + ".")
            fix.append("Fix the EventBus's spec as the condition says (a JetStream version the controller's "
                       "configuration lists, 1 or at least 3 replicas).")
        if unhealthy:
            pod_parts: list[str] = []
            evidence.extend(pod_evidence(ctx, unhealthy, pod_parts))
            wanted = as_int(mapping(workload.spec if workload is not None else {}).get("replicas"), len(pods))
            ready = sum(1 for p in pods if any(mapping(c).get("type") == "Ready" and mapping(c).get("status") == "True"
                                               for c in as_list(p.status.get("conditions"))))
            parts.append(f"Its servers are not all up ({ready} of {wanted} ready): "
                         + "; ".join(pod_parts) + "."
                         + (" Argo CD shows the EventBus Healthy all the same: its check reads `Deployed`, which the "
                            "controller sets once it has written the StatefulSet." if not conditions else ""))
            fix.append(f"Bring the servers up (kubectl -n {ns} describe pod -l {BUS_LABEL}={name}): their volumes, "
                       "resources and scheduling.")
        if errors:
            evidence.extend(log_evidence(r) for _, r in sorted(current, key=lambda c: line_order(c[1]))[-KEEP:])
            parts.append("The EventSources and Sensors of its namespace get refusals from it: "
                         + ", ".join(f"`{e}` ×{c}" for e, c in errors.most_common()) + ".")
            fix.extend(ADVICE[e] + "." for e, _ in errors.most_common() if e in ADVICE)
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"EventBus {name} does not carry events: "
                  + ("the controller does not run it" if conditions else "its servers are not up" if unhealthy
                     else f"JetStream refuses its clients ({errors.most_common(1)[0][0]})"),
            summary=f"EventBus {ns}/{name}: " + " ".join(parts) + " Its EventSources cannot publish and its Sensors "
                    "receive nothing while it does not carry events.",
            objects=[bus.ref, *([workload.ref] if workload is not None else []), *(p.ref for p, _ in unhealthy[:3])],
            evidence=evidence,
            remediation=Remediation(text=" ".join(dict.fromkeys(s[0].upper() + s[1:] for s in fix)),
                                    command=f"kubectl -n {ns} get eventbus {name} -o yaml", docs=DOCS),
        )
