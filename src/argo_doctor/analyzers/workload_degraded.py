"""workload-degraded: a Deployment, StatefulSet, DaemonSet, Rollout or Workflow that fails outside any Application.

app-unhealthy reports what Applications deploy; an input of plain workloads (a namespace dump, a cluster without
Argo CD) would otherwise say nothing of them. A workload is reported when no Application manages it and Argo CD's
health check (the shared assessor) calls it Degraded, or calls it not Healthy while one of its running pods is
Degraded (StatefulSets and DaemonSets are never Degraded themselves, only stuck Progressing): with its pods'
container states and last log lines, or a failed Workflow's failed nodes. Rollouts that rollout-degraded or
rollout-stuck-degraded judge are left to them; Workflows count only when Failed or Error.
"""

from __future__ import annotations

from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import (
    WORKFLOW_DOCS,
    PodFix,
    event_evidence,
    failing_pods,
    object_evidence,
    pod_evidence,
    pod_fix,
    workflow_evidence,
    workflow_fix,
)
from argo_doctor.facts.rollouts import ROLLOUT_NEEDS, RolloutState, assess
from argo_doctor.facts.workflows import FAILED_PHASES, WORKFLOW_GROUP, failed_nodes, is_workflow
from argo_doctor.health import Health, HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.timeutil import parse_time

KINDS = (("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), (WORKFLOW_GROUP, "Rollout"),
         (WORKFLOW_GROUP, "Workflow"))
MAX_EVENTS = 5
DOCS = ("https://kubernetes.io/docs/tasks/debug/debug-application/debug-pods/",)


class WorkloadDegraded(Analyzer):
    """Degraded workloads that no Application manages."""

    id = "workload-degraded"
    title = "Workload outside any Application is Degraded"
    needs = Needs(ROLLOUT_NEEDS | {"argoproj.io/Application", "argoproj.io/Workflow"}, events=True,
                  failing_pod_logs=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per Degraded workload that no Application lists or tracks."""
        for group, kind in KINDS:
            for obj in sorted(ctx.snap.of_kind(kind, group), key=lambda o: (o.namespace, o.name)):
                if ctx.snap.app_of(obj) is not None:
                    continue  # an Application's resource: app-unhealthy reports it
                if kind == "Rollout" and assess(ctx.snap, obj).state != RolloutState.NOT_DEGRADED:
                    continue  # rollout-degraded / rollout-stuck-degraded report it
                health = ctx.health.assess(obj.raw)
                if health is None or health.status == HealthStatus.HEALTHY:
                    continue
                if is_workflow(obj):
                    if obj.status.get("phase") in FAILED_PHASES:
                        yield self._workflow(ctx, obj, health)
                    continue
                pods = failing_pods(ctx, obj)
                crashing = [p for p, h in pods if h.status == HealthStatus.DEGRADED
                            and p.status.get("phase") not in ("Failed", "Succeeded")]  # not an old evicted pod
                if health.status == HealthStatus.DEGRADED or crashing:
                    yield self._workload(ctx, obj, health, pods, crashing)

    def _workload(self, ctx: Context, obj: Obj, health: Health, pods: list[tuple[Obj, Health]],
                  crashing: list[Obj]) -> Finding:
        ns, name = obj.namespace, obj.name
        status = health.status.value + (f": {health.message}" if health.message else "")
        lines = [f"{obj.kind} {ns}/{name} is {status}"]
        evidence = [object_evidence(obj, ".status", status)]
        evidence.extend(pod_evidence(ctx, pods, lines))
        evidence.extend(_events(ctx, [obj, *(p for p, _ in pods)]))
        degraded = crashing or [p for p, h in pods if h.status == HealthStatus.DEGRADED]
        if degraded:
            fix = pod_fix(ctx.snap, degraded[0], managed=False)
        else:
            fix = PodFix(f"The {obj.kind} is Degraded while no pod of it in the input is: read its conditions and "
                         "events (a progress deadline exceeded names the ReplicaSet that did not become available) "
                         "and fix what they name.", f"kubectl -n {ns} describe {obj.kind.lower()} {name}")
        title = f"{obj.kind} {ns}/{name} is {health.status.value}"
        if crashing and health.status != HealthStatus.DEGRADED:
            title += f", with {'a Degraded pod' if len(crashing) == 1 else f'{len(crashing)} Degraded pods'}"
        return self._finding(obj, title, lines, evidence, fix)

    def _workflow(self, ctx: Context, obj: Obj, health: Health) -> Finding:
        ns, name = obj.namespace, obj.name
        nodes = failed_nodes(ctx.snap, obj)
        phase = str(obj.status.get("phase"))
        lines = [f"Workflow {ns}/{name} ended {phase}" + (f": {health.message}" if health.message else "")]
        cron = next((str(o.get("name")) for o in obj.owner_references() if o.get("kind") == "CronWorkflow"), None)
        if cron is not None:
            owner = ctx.snap.get("CronWorkflow", cron, ns, WORKFLOW_GROUP)
            app = ctx.snap.app_of(owner) if owner is not None else None
            lines[0] += (f" (started by CronWorkflow {cron}" + (
                f", which Application {app.namespace}/{app.name} manages; Argo CD's health of a CronWorkflow does "
                "not look at the runs it starts" if app is not None else "") + ")")
        evidence = [object_evidence(obj, ".status.phase", lines[0], parse_time(obj.status.get("finishedAt")))]
        evidence.extend(workflow_evidence(obj, nodes, lines))
        evidence.extend(_events(ctx, [obj, *(n.pod_obj for n in nodes if n.pod_obj is not None)]))
        causes = [n for n in nodes if not n.encloses]
        title = f"Workflow {ns}/{name} {phase}"
        if causes:
            title += f": {causes[0].display_name or causes[0].name} {causes[0].phase}" + (
                f" (and {len(causes) - 1} more)" if len(causes) > 1 else "")
        return self._finding(obj, title, lines, evidence, workflow_fix(obj, nodes))

    def _finding(self, obj: Obj, title: str, lines: list[str], evidence: list[Evidence], fix: PodFix) -> Finding:
        summary = "; ".join(lines) + "."
        summary += " No Application in the input manages it, so no Application health shows it."
        return Finding(
            rule=self.id,
            severity=Severity.MEDIUM,
            title=title,
            summary=summary,
            objects=[obj.ref],
            evidence=evidence,
            remediation=Remediation(text=fix.text, command=fix.command,
                                    docs=(WORKFLOW_DOCS,) if is_workflow(obj) else DOCS),
        )


def _events(ctx: Context, objs: list[Obj]) -> list[Evidence]:
    """The last Warning events about the objects."""
    return [event_evidence(e) for e in ctx.snap.warnings_about(o.ref for o in objs)[-MAX_EVENTS:]]
