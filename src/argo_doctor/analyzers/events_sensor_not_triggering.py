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
from argo_doctor.analyzers.common import after, failing, line_order, log_evidence, plural, pod_evidence
from argo_doctor.facts.events import (
    GROUP,
    SENSOR_LABEL,
    WORKFLOW_SENSOR_LABEL,
    Notifier,
    bus_of,
    condition_evidence,
    dependencies,
    failed_conditions,
    generated_pods,
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
STALE_AFTER = 86400
"""Seconds after which a single trigger failure with no event since is reported at medium, not high."""


@dataclass
class _Trigger:
    """One trigger's lines: its last failures (and the argo CLI's refusals of its pod), how many, its last success."""

    failed: list[LogRecord] = field(default_factory=list)
    succeeded: LogRecord | None = None
    count: int = 0

    @property
    def failing(self) -> bool:
        """Whether its last failure comes after its last success."""
        return bool(self.failed) and (self.succeeded is None or after(self.failed[-1], self.succeeded))


class EventsSensorNotTriggering(Analyzer):
    """Argo Events Sensors that trigger nothing."""

    id = "events-sensor-not-triggering"
    title = "Argo Events Sensor does not trigger"
    signatures = ("events.trigger-failed", "events.trigger-succeeded", "events.workflow-submit-refused",
                  "argocd.notification-sent", "events.publish-succeeded")
    needs = Needs(frozenset({"argoproj.io/Sensor", "argoproj.io/EventSource", "argoproj.io/EventBus", "Pod",
                             "Service", "ConfigMap", "rbac.authorization.k8s.io/Role",
                             "rbac.authorization.k8s.io/RoleBinding", "rbac.authorization.k8s.io/ClusterRole",
                             "rbac.authorization.k8s.io/ClusterRoleBinding", "argoproj.io/Workflow"}),
                  failing_pod_logs=True)

    def __init__(self) -> None:
        self._triggers: dict[tuple[str, str], dict[str, _Trigger]] = defaultdict(lambda: defaultdict(_Trigger))
        self._refused: dict[tuple[str, str], list[LogRecord]] = defaultdict(list)
        self._upstream: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep each trigger's last failures and success (by `sensorName` and `triggerName`), the argo CLI's refusals
        by pod (its lines name no Sensor), and the last lines upstream (notifications sent, events published)."""
        if signature.id in ("argocd.notification-sent", "events.publish-succeeded"):
            key = match["service"] if match is not None and signature.id == "argocd.notification-sent" else \
                record.fields.get("eventSourceName", "")
            self._upstream[f"{signature.id}:{key}"][:] = [record]
            return
        if signature.id == "events.workflow-submit-refused":
            refused = self._refused[(record.file.namespace, record.file.pod)]
            refused[:] = sorted([*refused, record], key=line_order)[-KEEP:]
            return
        trigger = self._triggers[(record.file.namespace, record.fields.get("sensorName", ""))][
            record.fields.get("triggerName", "")]
        if signature.id == "events.trigger-succeeded":
            if trigger.succeeded is None or after(record, trigger.succeeded):
                trigger.succeeded = record
            return
        trigger.failed = sorted([*trigger.failed, record], key=line_order)[-KEEP:]
        if "triggeredBy" in record.fields:
            trigger.count += 1  # logged twice without atLeastOnce, once with the events that triggered it

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        callers = notifiers(ctx.snap)
        for sensor in sorted(ctx.snap.of_kind("Sensor", GROUP), key=lambda s: (s.namespace, s.name)):
            finding = self._sensor(ctx, sensor, callers)
            if finding is not None:
                yield finding

    def _sensor(self, ctx: Context, sensor: Obj, callers: list[Notifier]) -> Finding | None:
        ns, name = sensor.namespace, sensor.name
        pods = generated_pods(ctx.snap, sensor, SENSOR_LABEL)
        triggers = {t: state for t, state in self._triggers.get((ns, name), {}).items() if state.failing}
        refused = sorted((r for p in pods for r in self._refused.get((ns, p.name), [])), key=line_order)
        conditions = failed_conditions(sensor)
        bus_name, bus = bus_of(ctx.snap, sensor)
        unhealthy = failing(ctx, pods, (HealthStatus.DEGRADED,))
        last_failure = max((r for t in triggers.values() for r in t.failed), key=line_order, default=None)
        if not conditions and not unhealthy and last_failure is None:
            return None
        evidence: list[Evidence] = condition_evidence(sensor, conditions)
        parts: list[str] = []
        fix: list[str] = []
        reasons = {c.reason for c in conditions}
        if "EventBusNotFound" in reasons:
            parts.append(f"The controller does not deploy it: its EventBus {bus_name} is not in namespace {ns}"
                         + ("" if bus is None else " as the controller reads it") + ".")
            fix.append(f"Create EventBus {bus_name} in {ns} (or set spec.eventBusName to one that exists).")
        elif "GetEventBusFailed" in reasons:
            parts.append(f"The controller does not deploy it: it could not read its EventBus {bus_name} (an API "
                         "error: its own permissions or the API server).")
            fix.append("Read the controller-manager's log for the error reading the EventBus.")
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
        stale = False
        if last_failure is not None:
            count = sum(max(t.count, 1) for t in triggers.values())
            evidence.extend(log_evidence(r) for r in refused[-1:])  # the line that says why, first
            evidence.extend(log_evidence(r) for t in triggers.values() for r in t.failed[-1:])
            when = f", the last at {last_failure.time:%Y-%m-%d %H:%M:%S} UTC" if last_failure.time else ""
            parts.append(f"Its {plural(len(triggers), 'trigger')} {', '.join(t or '(unnamed)' for t in triggers)} "
                         f"{'fails' if len(triggers) == 1 else 'fail'}: the sensor logged {plural(count, 'failure')}"
                         f"{when}, and no success of {'it' if len(triggers) == 1 else 'them'} since.")
            fix.extend(self._refusal(ctx, [*refused, *(r for t in triggers.values() for r in t.failed)], parts))
            if not refused:
                fix.append("Read the trigger's error in the sensor's log and fix what it names.")
            stale = count == 1 and last_failure.time is not None and \
                (ctx.snap.reference_time - last_failure.time).total_seconds() > STALE_AFTER
        created = [w for w in ctx.snap.of_kind("Workflow", GROUP) if w.labels.get(WORKFLOW_SENSOR_LABEL) == name]
        chain = self._pipeline(sensor, callers, parts, evidence, last_failure is not None)
        if created:
            last = max(created, key=lambda w: str(w.meta.get("creationTimestamp") or ""))
            parts.append(f"The last Workflow it created is {last.namespace}/{last.name} "
                         f"({last.meta.get('creationTimestamp') or 'time unknown'}).")
        severity = Severity.HIGH if unhealthy or reasons or (last_failure is not None and not stale) \
            else Severity.MEDIUM
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Sensor {name} does not trigger: "
                  + (f"trigger {', '.join(t or '(unnamed)' for t in triggers)} fails" if last_failure is not None else
                     "its pod does not run" if unhealthy and not reasons
                     else f"{conditions[0].reason or conditions[0].type}"),
            summary=f"Sensor {ns}/{name} does not trigger. " + " ".join(parts),
            objects=[sensor.ref, *(p.ref for p, _ in unhealthy[:3])],
            evidence=evidence,
            remediation=Remediation(text=" ".join(dict.fromkeys(fix)),
                                    command=f"kubectl -n {ns} logs -l {SENSOR_LABEL}={name} --tail=50", docs=DOCS),
            chain=chain,
        )

    def _refusal(self, ctx: Context, records: list[LogRecord], parts: list[str]) -> list[str]:
        """What an RBAC refusal in the argo CLI's line (or the trigger's) says, checked against the input's RBAC."""
        for record in sorted(records, key=line_order, reverse=True):
            found = FORBIDDEN.search(record.raw)
            if found is None:
                continue
            sa_ns, sa, verb, resource = found["ns"], found["sa"], found["verb"], found["resource"]
            group, target = found["group"], found["target"] or sa_ns
            parts.append(f"The API server refuses ServiceAccount {sa_ns}/{sa} to {verb} {resource}"
                         f"{'.' + group if group else ''} in namespace {target}.")
            perms = effective_permissions(ctx.snap, sa_ns, sa)
            near = [g for g in perms.grants if g.resource == resource and g.api_group in (group, "*")
                    and g.namespace in (target, None)]
            fix = (f"Grant ServiceAccount {sa_ns}/{sa} `{verb}` on {resource}{'.' + group if group else ''} in "
                   f"namespace {target} (a Role and RoleBinding there; the argoWorkflow trigger also lists the "
                   "Workflows it created, so add `list`).")
            if allows(perms, verb, group, resource, target) is None and near:
                role = near[0].via[-1] if near[0].via else "its Role"
                parts.append(f"It is bound to {role}, which grants only {', '.join(near[0].verbs)} on {resource}"
                             f" there ({' → '.join(near[0].via)}).")
                fix = f"Add `{verb}` on {resource} to {role} (its rule at {near[0].evidence_location})."
            elif allows(perms, verb, group, resource, target) is None and ctx.snap.of_kind(
                    "RoleBinding", "rbac.authorization.k8s.io") + ctx.snap.of_kind(
                    "ClusterRoleBinding", "rbac.authorization.k8s.io"):
                parts.append("No Role or ClusterRole of the input bound to it grants that.")
            return [fix,
                    f"Check: kubectl auth can-i {verb} {resource}{'.' + group if group else ''} -n {target} "
                    f"--as system:serviceaccount:{sa_ns}:{sa}"]
        return []

    def _pipeline(self, sensor: Obj, callers: list[Notifier], parts: list[str], evidence: list[Evidence],
                  failing: bool) -> list[int]:
        """When Argo CD notifications feed the Sensor through a webhook EventSource: the steps up to it, as a chain
        of evidence (notification sent, event published, trigger failed)."""
        deps = set(dependencies(sensor))
        for notifier in callers:
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
            trigger = next((i for i, e in enumerate(evidence) if e.kind == "log"
                            and "Failed to execute a trigger" in e.excerpt), None)
            evidence.append(log_evidence(sent[-1]))
            evidence.append(log_evidence(published[-1]))
            return [len(evidence) - 2, len(evidence) - 1] + ([trigger] if trigger is not None else [])
        return []

