"""app-unhealthy: an Application that is not Healthy, and the resources that make it so.

Health of every managed resource is computed from the snapshot with Argo CD's own rules
(built-in checks and Lua customizations), not just copied from `status.resources`, because
Argo CD v3 no longer stores per-resource health there by default. Workloads are followed down
to their pods, with the pods' Warning events and the last lines their crashing containers wrote;
a failed Workflow to its failed nodes. A resource that is OutOfSync and absent from the input is
Missing only when the input holds its kind in its namespace; otherwise it was not collected, and
its state is Unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import (
    PodFix,
    event_evidence,
    failing_pods,
    object_evidence,
    plural,
    pod_evidence,
    pod_fix,
    resource_ref,
    workflow_evidence,
    workflow_fix,
)
from argo_doctor.facts.clusters import cluster_secrets, destination_server, refused_conditions, servers_by_name
from argo_doctor.facts.inventory import holds, not_collected
from argo_doctor.facts.manifests import generation_errors
from argo_doctor.facts.workflows import FAILED_PHASES, FailedNode, failed_nodes, is_workflow
from argo_doctor.health import Health, HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.argocd_secrets import KEY
from argo_doctor.sources.objects import as_list, mapping, split_api_version
from argo_doctor.timeutil import parse_time

SEVERITY = {
    HealthStatus.DEGRADED: Severity.HIGH,
    HealthStatus.MISSING: Severity.HIGH,
    HealthStatus.UNKNOWN: Severity.MEDIUM,
    HealthStatus.PROGRESSING: Severity.LOW,
    HealthStatus.SUSPENDED: Severity.INFO,
}
BLOCKING_CONDITIONS = ("ComparisonError", "InvalidSpecError")
MAX_EVENTS = 5
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/health/",)


@dataclass
class Culprit:
    """A managed resource that is not Healthy, with what explains it."""

    ref: Ref
    health: Health
    obj: Obj | None
    pods: list[tuple[Obj, Health]] = field(default_factory=list)
    nodes: list[FailedNode] = field(default_factory=list)
    """The failed nodes of a failed Workflow."""


class AppUnhealthy(Analyzer):
    """Applications whose health is not Healthy."""

    id = "app-unhealthy"
    title = "Application is not Healthy"
    needs = Needs(frozenset({"argoproj.io/Application"}), events=True, app_resources=True, failing_pod_logs=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per unhealthy Application."""
        servers = servers_by_name(ctx.snap)
        secret_servers = {str(mapping(s.raw.get(KEY)).get("server") or "").rstrip("/")
                          for s in cluster_secrets(ctx.snap)}
        for app in ctx.snap.applications():
            if app.meta.get("deletionTimestamp"):  # being deleted: app-deletion-stuck says what holds it, never "sync"
                continue
            health = app.at("status", "health")
            raw_status = health.get("status") if isinstance(health, dict) else None
            if not raw_status or raw_status == HealthStatus.HEALTHY.value:
                continue
            try:
                status = HealthStatus(raw_status)
            except ValueError:
                status = HealthStatus.UNKNOWN
            if status == HealthStatus.UNKNOWN and (generation_errors(app) or (
                    refused_conditions(app) and destination_server(app, servers) in secret_servers)):
                continue  # manifest-generation-failed, or cluster-credentials-expired for a cluster Secret, says why
            yield self._finding(ctx, app, status, str(health.get("message") or "") if isinstance(health, dict) else "")

    def _culprits(self, ctx: Context, app: Obj) -> Iterator[Culprit]:
        seen: set[Ref] = set()
        entries = ctx.snap.app_resources(app)
        for entry, live in entries:
            recorded = entry.get("health")
            health = ctx.health.assess(live.raw) if live is not None else None
            if health is None and isinstance(recorded, dict) and recorded.get("status"):
                try:
                    health = Health(HealthStatus(recorded["status"]), str(recorded.get("message") or ""))
                except ValueError:
                    health = Health(HealthStatus.UNKNOWN, str(recorded.get("message") or ""))
            ref = resource_ref(entry)
            if health is None and live is None and entry.get("status") == "OutOfSync":
                if holds(ctx.snap, ref.kind, ref.namespace, split_api_version(ref.api_version)[0]):
                    health = Health(HealthStatus.MISSING, "declared in Git but not found in the cluster")
                else:
                    health = Health(HealthStatus.UNKNOWN, "OutOfSync and not in the input: "
                                    + not_collected(ref.kind, ref.namespace))
            seen.add(ref)
            if health is not None and health.status != HealthStatus.HEALTHY:
                yield self._with_pods(ctx, Culprit(live.ref if live else ref, health, live))
        if not entries:  # no status.resources: fall back to the tracking label/annotation
            for obj in ctx.snap.tracked_by(app):
                health = ctx.health.assess(obj.raw)
                if health is not None and health.status != HealthStatus.HEALTHY:
                    yield self._with_pods(ctx, Culprit(obj.ref, health, obj))

    def _with_pods(self, ctx: Context, culprit: Culprit) -> Culprit:
        if culprit.obj is not None:
            culprit.pods = failing_pods(ctx, culprit.obj)
            if is_workflow(culprit.obj) and culprit.obj.status.get("phase") in FAILED_PHASES:
                culprit.nodes = failed_nodes(ctx.snap, culprit.obj)
        return culprit

    def _finding(self, ctx: Context, app: Obj, status: HealthStatus, app_message: str) -> Finding:
        culprits = list(self._culprits(ctx, app))
        evidence: list[Evidence] = [
            object_evidence(app, ".status.health", f"{status.value}{': ' + app_message if app_message else ''}",
                            parse_time(app.status.get("reconciledAt")))
        ]
        objects = [app.ref]
        lines = []
        for culprit in culprits:
            objects.append(culprit.ref)
            line = f"{culprit.ref} is {culprit.health.status.value}"
            if culprit.health.message:
                line += f": {culprit.health.message}"
            lines.append(line)
            if culprit.obj is not None:
                evidence.append(object_evidence(culprit.obj, ".status", line))
                if is_workflow(culprit.obj):
                    evidence.extend(workflow_evidence(culprit.obj, culprit.nodes, lines))
            evidence.extend(pod_evidence(ctx, culprit.pods, lines))
        related = {c.ref for c in culprits} | {p.ref for c in culprits for p, _ in c.pods}
        evidence.extend(event_evidence(e) for e in ctx.snap.warnings_about(related)[-MAX_EVENTS:])
        summary = f"Argo CD reports Application {app.namespace}/{app.name} as {status.value}."
        errors = [c for c in as_list(app.status.get("conditions"))
                  if isinstance(c, dict) and str(c.get("type")) in BLOCKING_CONDITIONS]
        for cond in errors:
            evidence.append(object_evidence(app, ".status.conditions", f"{cond.get('type')}: {cond.get('message')}",
                                            parse_time(cond.get("lastTransitionTime"))))
        if lines:
            summary += f" {plural(len(culprits), 'managed resource')} not Healthy: " + "; ".join(lines) + "."
            phase = mapping(app.status.get("operationState")).get("phase")
            if phase in ("Failed", "Error") and any(c.health.status == HealthStatus.MISSING for c in culprits):
                summary += f" Its last sync ended in {phase}, which is why resources are missing (see sync-failed)."
        elif errors:
            summary += (
                f" Argo CD could not compare it with its source ({errors[0].get('type')}: {errors[0].get('message')}),"
                " so the health it shows is not about the resources: fix that error first."
            )
        else:
            summary += " No managed resource in the input explains it (their objects may not have been collected)."
        return Finding(
            rule=self.id,
            severity=SEVERITY.get(status, Severity.MEDIUM),
            title=f"Application {app.name} is {status.value}"
            + (f": {culprits[0].ref} {culprits[0].health.status.value}" if culprits else ""),
            summary=summary,
            objects=objects,
            evidence=evidence,
            remediation=_remediation(ctx, app, culprits, bool(errors)),
        )


def _remediation(ctx: Context, app: Obj, culprits: list[Culprit], blocked: bool) -> Remediation:
    crashing = [(c, p) for c in culprits for p, h in c.pods if h.status == HealthStatus.DEGRADED]
    missing = [c for c in culprits if c.health.status == HealthStatus.MISSING]
    workflows = [c for c in culprits if c.obj is not None and is_workflow(c.obj)
                 and c.health.status == HealthStatus.DEGRADED]
    steps = []
    command = None
    fixes: list[PodFix] = []
    if crashing:
        fixes.append(pod_fix(ctx.snap, crashing[0][1]))
    if workflows and workflows[0].obj is not None:
        fixes.append(workflow_fix(workflows[0].obj, workflows[0].nodes))
    for fix in fixes:
        steps.append(fix.text)
        command = command or fix.command
    if missing:
        steps.append(
            "Resources declared in Git are absent from the cluster: look at the last sync result "
            f"(`argocd app get {app.namespace}/{app.name} --show-operation`) and sync again."
        )
    if blocked and not culprits:
        steps.append(
            "Render the application's source locally on its target revision (helm template / kustomize build), "
            "fix the error the condition names, then hard-refresh the application."
        )
        command = f"argocd app get {app.namespace}/{app.name} --hard-refresh"
    progressing = [c for c in culprits if c.health.status == HealthStatus.PROGRESSING]
    if not steps and progressing:
        steps.append(
            "Progressing is normal while a rollout, Job or load balancer is under way; it needs action only when it "
            "lasts longer than that work should take. Check the resource's conditions and events."
        )
        ref = progressing[0].ref
        command = f"kubectl -n {ref.namespace} describe {ref.kind.lower()} {ref.name}"
    if not steps:
        steps.append(
            "Inspect the resources named above (`kubectl describe`) and the Application's conditions: a resource "
            "whose health is Unknown or Suspended says why in its status."
        )
        command = f"argocd app get {app.namespace}/{app.name} --show-operation"
    return Remediation(text=" ".join(steps), command=command, docs=DOCS)
