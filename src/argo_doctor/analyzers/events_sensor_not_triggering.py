"""events-sensor-not-triggering: an Argo Events Sensor whose triggers do not run, and why.

A Sensor runs nothing when the controller could not deploy it (`Deployed` False: its EventBus missing or not ready,
`DependenciesProvided` / `TriggersProvided` False: an invalid spec; pkg/reconciler/sensor), when its pod does not
run, or when its triggers fail: the sensor logs `Failed to execute a trigger` (pkg/sensors/listener.go) and, for an
argoWorkflow trigger, the argo CLI's own `Error: Failed to submit workflow: ...` line, which alone names an RBAC
refusal. A refusal is checked against the ServiceAccount's Roles in the input. When Argo CD notifications feed the
Sensor through a webhook EventSource, the finding traces the pipeline up to the step that failed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import failing, log_evidence, plural, pod_evidence
from argo_doctor.facts.events import (
    GROUP,
    SENSOR_LABEL,
    WORKFLOW_SENSOR_LABEL,
    bus_of,
    dependencies,
    failed_conditions,
    notifiers,
)
from argo_doctor.facts.rbac import allows, effective_permissions
from argo_doctor.health.types import HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature

DOCS = ("https://argoproj.github.io/argo-events/sensors/triggers/argo-workflow/",
        "https://argoproj.github.io/argo-events/service-accounts/")
FORBIDDEN = re.compile(r'User \\?"system:serviceaccount:(?P<ns>[^:"\\]+):(?P<sa>[^"\\]+)\\?" cannot (?P<verb>\w+) '
                       r'resource \\?"(?P<resource>[^"\\]+)\\?" in API group \\?"(?P<group>[^"\\]*)\\?"'
                       r'(?: in the namespace \\?"(?P<target>[^"\\]+))?')
KEEP = 3


@dataclass
class _Lines:
    """A Sensor's trigger lines: the last failures and refusals, the last success."""

    failed: list[LogRecord] = field(default_factory=list)
    refused: list[LogRecord] = field(default_factory=list)
    succeeded: LogRecord | None = None
    count: int = 0


class EventsSensorNotTriggering(Analyzer):
    """Argo Events Sensors that trigger nothing."""

    id = "events-sensor-not-triggering"
    title = "Argo Events Sensor does not trigger"
    signatures = ("events.trigger-failed", "events.trigger-succeeded", "events.workflow-submit-refused",
                  "events.bus-connect-failed", "argocd.notification-sent", "events.publish-succeeded")
    needs = Needs(frozenset({"argoproj.io/Sensor", "argoproj.io/EventSource", "argoproj.io/EventBus", "Pod",
                             "Service", "ConfigMap", "rbac.authorization.k8s.io/Role",
                             "rbac.authorization.k8s.io/RoleBinding", "rbac.authorization.k8s.io/ClusterRole",
                             "rbac.authorization.k8s.io/ClusterRoleBinding", "argoproj.io/Workflow"}),
                  failing_pod_logs=True)

    def __init__(self) -> None:
        self._by_sensor: dict[tuple[str, str], _Lines] = defaultdict(_Lines)
        self._by_pod: dict[tuple[str, str], _Lines] = defaultdict(_Lines)
        self._upstream: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep each Sensor's last trigger lines (by `sensorName`, or by pod for the argo CLI's lines) and the
        last lines upstream of it (notifications sent, events published)."""
        if signature.id in ("argocd.notification-sent", "events.publish-succeeded"):
            key = match["service"] if match is not None and signature.id == "argocd.notification-sent" else \
                record.fields.get("eventSourceName", "")
            self._upstream[f"{signature.id}:{key}"][:] = [record]
            return
        name = record.fields.get("sensorName")
        lines = self._by_sensor[(record.file.namespace, name)] if name else \
            self._by_pod[(record.file.namespace, record.file.pod)]
        if signature.id == "events.trigger-succeeded":
            lines.succeeded = record
            return
        kept = lines.refused if signature.id == "events.workflow-submit-refused" else lines.failed
        kept.append(record)
        del kept[:-KEEP]
        if signature.id == "events.trigger-failed" and "triggeredBy" in record.fields:
            lines.count += 1  # logged twice without atLeastOnce, once with the events that triggered it

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for sensor in sorted(ctx.snap.of_kind("Sensor", GROUP), key=lambda s: (s.namespace, s.name)):
            finding = self._sensor(ctx, sensor)
            if finding is not None:
                yield finding

    def _lines(self, ctx: Context, sensor: Obj) -> tuple[_Lines, list[Obj]]:
        """The Sensor's lines, those of its pods merged in, and its pods."""
        pods = [p for p in ctx.snap.of_kind("Pod", "", sensor.namespace) if p.labels.get(SENSOR_LABEL) == sensor.name]
        merged = _Lines()
        for lines in [self._by_sensor.get((sensor.namespace, sensor.name)),
                      *(self._by_pod.get((p.namespace, p.name)) for p in pods)]:
            if lines is None:
                continue
            merged.failed = sorted([*merged.failed, *lines.failed], key=_when)[-KEEP:]
            merged.refused = sorted([*merged.refused, *lines.refused], key=_when)[-KEEP:]
            merged.count += lines.count
            if lines.succeeded is not None and (merged.succeeded is None or _when(lines.succeeded) >
                                                _when(merged.succeeded)):
                merged.succeeded = lines.succeeded
        return merged, pods

    def _sensor(self, ctx: Context, sensor: Obj) -> Finding | None:
        ns, name = sensor.namespace, sensor.name
        lines, pods = self._lines(ctx, sensor)
        conditions = failed_conditions(sensor)
        bus_name, bus = bus_of(ctx.snap, sensor)
        unhealthy = failing(ctx, pods, (HealthStatus.DEGRADED,))
        last_failure = max([*lines.failed, *lines.refused], key=_when, default=None)
        still_failing = last_failure is not None and (lines.succeeded is None or
                                                      _when(lines.succeeded) < _when(last_failure))
        if not conditions and not unhealthy and not still_failing:
            return None
        evidence: list[Evidence] = []
        parts: list[str] = []
        fix: list[str] = []
        reasons = {c.reason for c in conditions}
        if reasons & {"EventBusNotFound", "GetEventBusFailed"}:
            parts.append(f"The controller does not deploy it: its EventBus {bus_name} is not in namespace {ns}"
                         + ("" if bus is None else " as the controller reads it") + ".")
            fix.append(f"Create EventBus {bus_name} in {ns} (or set spec.eventBusName to one that exists).")
        elif "EventBusNotReady" in reasons:
            parts.append(f"The controller does not deploy it: its EventBus {bus_name} is not ready "
                         "(events-eventbus-unhealthy says why).")
            fix.append(f"Mend EventBus {bus_name} first; the controller deploys the Sensor once it is ready.")
        elif conditions:
            parts.append("Its spec is invalid: " + "; ".join(map(str, conditions)) + ".")
            fix.append("Fix the Sensor's dependencies or triggers as the condition says.")
        if unhealthy:
            pod_parts: list[str] = []
            evidence.extend(pod_evidence(ctx, unhealthy, pod_parts))
            parts.append("Its sensor pod does not run: " + "; ".join(pod_parts) + ".")
            fix.append(f"Read the sensor pod's last lines (kubectl -n {ns} logs -l {SENSOR_LABEL}={name} "
                       "--previous): a sensor that cannot reach its EventBus exits.")
        if still_failing:
            evidence.extend(log_evidence(r) for r in [*lines.failed[-2:], *lines.refused[-1:]])
            parts.append(f"Its triggers fail: the sensor logged {plural(max(lines.count, 1), 'failure')}"
                         + (f", the last at {last_failure.time:%Y-%m-%d %H:%M:%S} UTC"
                            if last_failure is not None and last_failure.time is not None else "")
                         + (", and no success since" if lines.succeeded is not None else ", and no success")
                         + ".")
            fix.extend(self._refusal(ctx, lines, parts, evidence))
            if not lines.refused:
                fix.append("Read the trigger's error in the sensor's log and fix what it names.")
        created = [w for w in ctx.snap.of_kind("Workflow", GROUP) if w.labels.get(WORKFLOW_SENSOR_LABEL) == name]
        chain = self._pipeline(ctx, sensor, parts, evidence, bool(still_failing))
        if created:
            last = max(created, key=lambda w: str(w.meta.get("creationTimestamp") or ""))
            parts.append(f"The last Workflow it created is {last.namespace}/{last.name} "
                         f"({last.meta.get('creationTimestamp') or 'time unknown'}).")
        severity = Severity.HIGH if still_failing or unhealthy or reasons else Severity.MEDIUM
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Sensor {name} does not trigger: "
                  + ("its triggers fail" if still_failing else "its pod does not run" if unhealthy and not reasons
                     else f"{conditions[0].reason or conditions[0].type}"),
            summary=f"Sensor {ns}/{name} does not trigger. " + " ".join(parts),
            objects=[sensor.ref, *(p.ref for p, _ in unhealthy[:3])],
            evidence=evidence,
            remediation=Remediation(text=" ".join(dict.fromkeys(fix)),
                                    command=f"kubectl -n {ns} logs -l {SENSOR_LABEL}={name} --tail=50", docs=DOCS),
            chain=chain,
        )

    def _refusal(self, ctx: Context, lines: _Lines, parts: list[str], evidence: list[Evidence]) -> list[str]:
        """What an RBAC refusal in the argo CLI's line (or the trigger's) says, checked against the input's RBAC."""
        for record in reversed([*lines.refused, *lines.failed]):
            found = FORBIDDEN.search(record.raw)
            if found is None:
                continue
            sa_ns, sa, verb, resource = found["ns"], found["sa"], found["verb"], found["resource"]
            group, target = found["group"], found["target"] or sa_ns
            parts.append(f"The API server refuses ServiceAccount {sa_ns}/{sa} to {verb} {resource}"
                         f"{'.' + group if group else ''} in namespace {target}.")
            perms = effective_permissions(ctx.snap, sa_ns, sa)
            if allows(perms, verb, group, resource, target) is None and ctx.snap.of_kind(
                    "RoleBinding", "rbac.authorization.k8s.io") + ctx.snap.of_kind(
                    "ClusterRoleBinding", "rbac.authorization.k8s.io"):
                parts.append(f"No Role or ClusterRole of the input bound to it grants that"
                             f" ({plural(len(perms.grants), 'grant')} found).")
            return [f"Grant ServiceAccount {sa_ns}/{sa} `{verb}` on {resource}{'.' + group if group else ''} in "
                    f"namespace {target} (a Role and RoleBinding there; the argoWorkflow trigger also lists the "
                    "Workflows it created, so add `list`).",
                    f"Check: kubectl auth can-i {verb} {resource}{'.' + group if group else ''} -n {target} "
                    f"--as system:serviceaccount:{sa_ns}:{sa}"]
        return []

    def _pipeline(self, ctx: Context, sensor: Obj, parts: list[str], evidence: list[Evidence],
                  failing: bool) -> list[int]:
        """When Argo CD notifications feed the Sensor through a webhook EventSource: the steps up to it, as a chain
        of evidence (notification sent, event published, trigger failed)."""
        deps = set(dependencies(sensor))
        for notifier in notifiers(ctx.snap):
            route = notifier.route
            if route is None or (route.eventsource.name, route.event) not in deps or \
                    route.eventsource.namespace != sensor.namespace:
                continue
            sent = self._upstream.get(f"argocd.notification-sent:{notifier.service}", [])
            published = self._upstream.get(f"events.publish-succeeded:{route.eventsource.name}", [])
            steps = [f"Argo CD notifications call {notifier.service} ({notifier.url})",
                     f"EventSource {route.eventsource.name} ({route.event})", f"Sensor {sensor.name}"]
            parts.append("Pipeline: " + " → ".join(steps) + (
                " → a Workflow: the first steps work (the notification was sent and the event published) and the "
                "Sensor's trigger is where it breaks." if failing and sent and published else "."))
            if not (failing and sent and published):
                return []
            start = len(evidence)
            evidence.insert(0, log_evidence(published[-1]))
            evidence.insert(0, log_evidence(sent[-1]))
            trigger = next((i for i, e in enumerate(evidence) if e.kind == "log" and i >= 2
                            and "Failed to execute a trigger" in e.excerpt), None)
            return [0, 1] + ([trigger] if trigger is not None else []) if start >= 0 else []
        return []


def _when(record: LogRecord | None) -> str:
    """A line's time as sortable text (the empty text when it has none)."""
    return record.time.isoformat() if record is not None and record.time is not None else ""

