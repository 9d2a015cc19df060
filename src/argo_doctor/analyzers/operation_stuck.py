"""operation-stuck: a sync operation that does not finish, and what it waits on.

While a sync runs, Argo CD writes in `status.operationState.message` the object it waits for (gitops-engine's
`setRunningPhase`, knowledge/operation_messages.yaml): a hook to complete, a resource of the current sync wave to
become healthy, a resource to be deleted, a prune to be confirmed. The rule finds that object in the input and
says why it holds the operation: a hook pod that cannot start (an image that cannot be pulled, a missing Secret or
ConfigMap, no node to run on), a hook that failed or is gone (deleted by its hook-delete-policy or by hand), a
resource whose health stays Progressing or Degraded. How it decides "stuck": an operation that waits on something
that cannot go on by itself (a pod that cannot start, a missing object, a Degraded resource) for at least
`min-minutes`; one that waits on something that is simply running, for at least `stuck-minutes`. Anything younger is
an operation under way: no finding.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import (
    CONFIG_REASONS,
    IMAGE_REASONS,
    container_states,
    event_evidence,
    failing_pods,
    log_evidence,
    object_evidence,
    plural,
    pod_evidence,
    pod_fix,
)
from argo_doctor.facts.inventory import holds, not_collected
from argo_doctor.health import Health, HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

DOCS = ("https://argo-cd.readthedocs.io/en/stable/user-guide/resource_hooks/",
        "https://argo-cd.readthedocs.io/en/stable/user-guide/sync-waves/",
        "https://argo-cd.readthedocs.io/en/stable/user-guide/commands/argocd_app_terminate-op/")
UNSCHEDULABLE = "Unschedulable"
MAX_LINES = 3
"""Log lines kept as evidence, per Application and of refused syncs."""
WAITS = ("completion", "health", "deletion", "confirmation")


@dataclass
class Waited:
    """The object an operation waits on, what it waits for, and why that does not come."""

    waits: str
    group: str
    kind: str
    name: str
    more: int
    namespace: str = ""
    """Where it was looked for: the Application's destination namespace."""
    obj: Obj | None = None
    health: Health | None = None
    blocked: str = ""
    """Why it cannot go on by itself ("" when it is simply running)."""
    pods: list[tuple[Obj, Health]] = field(default_factory=list)

    @property
    def label(self) -> str:
        where = f"{self.obj.namespace}/" if self.obj is not None and self.obj.namespace else ""
        return f"{self.kind} {where}{self.name}"


def parse_wait(message: str) -> Waited | None:
    """What a running operation's message says it waits on; None for any other message."""
    for known in knowledge.operation_messages():
        if known.waits not in WAITS:
            continue
        found = known.pattern.match(message.strip())
        if found is not None:
            return Waited(known.waits, found["group"], found["kind"], found["name"], int(found["more"] or 0))
    return None


def _minutes(later: datetime, earlier: datetime | None) -> float | None:
    return None if earlier is None else (later - earlier).total_seconds() / 60


def _age(minutes: float) -> str:
    hours, mins = divmod(int(minutes), 60)
    return f"{hours}h{mins:02d}m" if hours else f"{mins}m"


class OperationStuck(Analyzer):
    """Sync operations that wait on something that does not come."""

    id = "operation-stuck"
    title = "Sync operation does not finish"
    options: ClassVar[dict[str, str]] = {
        "min-minutes": "Minutes an operation waits on something that cannot go on by itself before it is reported "
                       "(default 5)",
        "stuck-minutes": "Minutes an operation waits on something still running before it is reported (default 60)",
    }
    signatures = ("argocd.operation-resumed", "argocd.another-operation")
    needs = Needs(frozenset({"argoproj.io/Application", "batch/Job", "Pod"}), events=True, app_resources=True,
                  failing_pod_logs=True)

    def __init__(self) -> None:
        self._resumed: dict[str, list[LogRecord]] = defaultdict(list)
        self._refused: list[LogRecord] = []

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the controller's last lines on an operation it resumes, per Application, and the sync requests
        refused because an operation runs."""
        if signature.id == "argocd.another-operation":
            self._refused.append(record)
            del self._refused[:-MAX_LINES]
            return
        app = record.fields.get("application", "")
        if app:
            lines = self._resumed[app]
            lines.append(record)
            del lines[:-MAX_LINES]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        least = ctx.option(self.id, "min-minutes", 5)
        long = ctx.option(self.id, "stuck-minutes", 60)
        for app in ctx.snap.applications():
            state = mapping(app.status.get("operationState"))
            if state.get("phase") != "Running":
                continue
            waited = parse_wait(str(state.get("message") or ""))
            started = parse_time(state.get("startedAt"))
            minutes = _minutes(now, started)
            if waited is None or minutes is None:
                continue
            self._explain(ctx, app, waited)
            if minutes < (least if waited.blocked else long):
                continue
            yield self._finding(ctx, app, waited, minutes, started)

    def _explain(self, ctx: Context, app: Obj, waited: Waited) -> None:
        """Find the object in the input and why it holds the operation."""
        destination = str(mapping(app.at("spec", "destination")).get("namespace") or "")
        candidates = [o for o in ctx.snap.all() if o.kind == waited.kind and o.name == waited.name
                      and o.group == waited.group]
        candidates.sort(key=lambda o: o.namespace != destination)
        waited.obj = candidates[0] if candidates else None
        waited.namespace = destination
        if waited.obj is None:
            if holds(ctx.snap, waited.kind, destination, waited.group):
                hook = waited.waits == "completion"
                gone = "its hook-delete-policy or someone deleted it" if hook else "it was deleted"
                seen = "finish" if hook else "become healthy"
                waited.blocked = (f"it is not in the cluster: {gone} before Argo CD saw it {seen}, and Argo CD "
                                  "waits for an object it can no longer see")
            return
        obj = waited.obj
        waited.health = ctx.health.assess(obj.raw)
        if obj.kind == "Pod":
            health = waited.health
            waited.pods = [(obj, health)] if health is not None and health.status != HealthStatus.HEALTHY else []
        else:
            waited.pods = failing_pods(ctx, obj)
        reasons = [_pod_blocked(pod) for pod, _ in waited.pods]
        blocked = [r for r in reasons if r]
        if blocked:
            waited.blocked = blocked[0]
        elif obj.kind == "Job" and _job_failed(obj):
            waited.blocked = f"the Job failed ({_job_failed(obj)})"
        elif waited.health is not None and waited.health.status in (HealthStatus.DEGRADED, HealthStatus.MISSING):
            waited.blocked = f"it is {waited.health.status.value}" + (
                f": {waited.health.message}" if waited.health.message else "")
        elif waited.waits == "confirmation":
            waited.blocked = "the sync option Prune=confirm waits for someone to confirm the prune"
        elif waited.waits == "deletion" and obj.meta.get("finalizers"):
            finalizers = ", ".join(str(f) for f in as_list(obj.meta.get("finalizers")))
            waited.blocked = f"its finalizers ({finalizers}) have not been removed by the controllers that own them"

    def _finding(self, ctx: Context, app: Obj, waited: Waited, minutes: float, started: datetime | None) -> Finding:
        """The finding: what the operation waits on, why that does not come, and how to end the wait."""
        state = mapping(app.status.get("operationState"))
        name = f"{app.namespace}/{app.name}"
        evidence: list[Evidence] = [object_evidence(app, ".status.operationState",
                                                    f"phase Running since {state.get('startedAt')}: "
                                                    f"{state.get('message')}", started)]
        lines: list[str] = []
        more = f" (and {plural(waited.more, 'more object')})" if waited.more else ""
        what = {"completion": "the hook", "health": "the resource", "deletion": "the deletion of",
                "confirmation": "a confirmation to prune"}[waited.waits]
        summary = (f"The sync of {name} has been running for {_age(minutes)}, waiting for {what} "
                   f"{waited.label}{more} ({state.get('message')}). ")
        evidence.extend(log_evidence(r) for r in self._resumed.get(name, []))
        running = sum(1 for a in ctx.snap.applications()
                      if mapping(a.status.get("operationState")).get("phase") == "Running")
        refused = [r for r in self._refused if r.time is not None and started is not None and r.time >= started]
        if refused:
            evidence.extend(log_evidence(r) for r in refused)
            whose = ("this is the only operation running, so they were for this Application" if running == 1 else
                     f"the server's log does not say for which Application; {running} operations were running")
            summary += (f"Meanwhile, {plural(len(refused), 'sync request')} were refused with 'another operation is "
                        f"already in progress' (the last at {format_time(refused[-1].time)}): {whose}. ")
        if waited.obj is not None:
            status = f"{waited.health.status.value}" + (f": {waited.health.message}" if waited.health and
                                                         waited.health.message else "") if waited.health else ""
            evidence.append(object_evidence(waited.obj, ".status", status or "no health check for this kind"))
            evidence.extend(pod_evidence(ctx, waited.pods, lines))
            events = ctx.snap.warnings_about({waited.obj.ref} | {p.ref for p, _ in waited.pods})
            evidence.extend(event_evidence(e) for e in events[-5:])
        if waited.blocked:
            summary += f"It cannot go on by itself: {waited.blocked}."
        elif waited.obj is None:
            summary += f"The input does not hold it: {not_collected(waited.kind, waited.namespace)}."
        else:
            summary += (f"It is still running ({waited.health.status.value if waited.health else 'no health'}): the "
                        "operation goes on when it finishes, unless it never does.")
        if lines and not any(p.name in waited.blocked for p, _ in waited.pods):
            summary += " " + "; ".join(lines) + "."
        severity = Severity.HIGH if waited.blocked else Severity.MEDIUM if waited.obj is not None else Severity.LOW
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Sync of {app.name} stuck waiting for {waited.label}"
                  + (f": {_short(waited.blocked)}" if waited.blocked else ""),
            summary=summary,
            objects=[app.ref] + ([waited.obj.ref] if waited.obj is not None else []),
            evidence=evidence,
            remediation=_remediation(ctx, app, waited),
        )


def _short(text: str) -> str:
    return text.split(":")[0]


def _pod_blocked(pod: Obj) -> str:
    """Why a pod cannot run by itself: an image it cannot pull, a missing Secret or ConfigMap, no node."""
    for status in as_list(pod.status.get("containerStatuses")) + as_list(pod.status.get("initContainerStatuses")):
        waiting = mapping(mapping(mapping(status).get("state")).get("waiting"))
        reason = str(waiting.get("reason") or "")
        if reason in IMAGE_REASONS or reason in CONFIG_REASONS:
            return f"pod {pod.name} cannot start ({container_states(pod) or reason})"
    for condition in as_list(pod.status.get("conditions")):
        condition = mapping(condition)
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" and \
                condition.get("reason") == UNSCHEDULABLE:
            return f"pod {pod.name} cannot be scheduled ({' '.join(str(condition.get('message') or '').split())})"
    return ""


def _job_failed(job: Obj) -> str:
    for condition in as_list(job.status.get("conditions")):
        condition = mapping(condition)
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            return str(condition.get("reason") or "Failed") + (
                f": {condition.get('message')}" if condition.get("message") else "")
    return ""


def _remediation(ctx: Context, app: Obj, waited: Waited) -> Remediation:
    name = f"{app.namespace}/{app.name}"
    terminate = f"argocd app terminate-op {name}"
    steps = []
    failing = [p for p, _ in waited.pods if _pod_blocked(p)]
    if failing:
        steps.append(pod_fix(ctx.snap, failing[0]).text)
    if waited.obj is None and waited.blocked:
        steps.append("Argo CD cannot see the hook finish any more: end the operation (below) and sync again; if a "
                     "hook-delete-policy of HookSucceeded removes the hook as soon as it succeeds, that is expected "
                     "only when the controller saw it succeed, so check the controller's log around the start of "
                     "the operation.")
    if waited.waits == "health" and waited.obj is not None and not failing:
        steps.append(f"The sync wave cannot advance until {waited.label} is Healthy: fix what its health message "
                     "names (or its health check, if it never reports Healthy), and the operation goes on.")
    if waited.waits == "confirmation":
        steps.append(f"Confirm the prune in the UI or with `argocd app sync {name} --prune` after checking what "
                     "would be deleted, or terminate the operation.")
    steps.append(f"To stop waiting, end the operation with `{terminate}` (nothing is rolled back: what was applied "
                 "stays), fix the hook or the resource in Git, and sync again.")
    return Remediation(text=" ".join(steps), command=terminate, docs=DOCS)
