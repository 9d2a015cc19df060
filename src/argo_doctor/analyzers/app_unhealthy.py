"""app-unhealthy: an Application that is not Healthy, and the resources that make it so.

Health of every managed resource is computed from the snapshot with Argo CD's own rules
(built-in checks and Lua customizations), not just copied from `status.resources`, because
Argo CD v3 no longer stores per-resource health there by default. Workloads are followed down
to their pods, with the pods' Warning events and the last lines their crashing containers wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import event_evidence, log_evidence, object_evidence, plural
from argo_doctor.health import Health, HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import parse_time

SEVERITY = {
    HealthStatus.DEGRADED: Severity.HIGH,
    HealthStatus.MISSING: Severity.HIGH,
    HealthStatus.UNKNOWN: Severity.MEDIUM,
    HealthStatus.PROGRESSING: Severity.LOW,
    HealthStatus.SUSPENDED: Severity.INFO,
}
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Rollout", "Job"}
BLOCKING_CONDITIONS = ("ComparisonError", "InvalidSpecError")
MAX_PODS = 3
MAX_EVENTS = 5
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/health/",)
IMAGE_REASONS = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
CONFIG_REASONS = ("CreateContainerConfigError",)
# How the kubelet names what a container's configuration lacks, e.g. `secret "db" not found`,
# `configmap "app-env" not found`, `couldn't find key password in Secret shop/db`.
_MISSING_OBJECT = re.compile(r'\b(secret|configmap)s? "([^"]+)" not found', re.IGNORECASE)
_MISSING_KEY = re.compile(r"couldn't find key (\S+) in (Secret|ConfigMap) (?:([^/\s]+)/)?([^\s,]+)", re.IGNORECASE)


@dataclass
class Culprit:
    """A managed resource that is not Healthy, with what explains it."""

    ref: Ref
    health: Health
    obj: Obj | None
    pods: list[tuple[Obj, Health]] = field(default_factory=list)


class AppUnhealthy(Analyzer):
    """Applications whose health is not Healthy."""

    id = "app-unhealthy"
    title = "Application is not Healthy"
    needs = Needs(frozenset({"argoproj.io/Application"}), events=True, app_resources=True, failing_pod_logs=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per unhealthy Application."""
        for app in ctx.snap.applications():
            health = app.status.get("health")
            raw_status = health.get("status") if isinstance(health, dict) else None
            if not raw_status or raw_status == HealthStatus.HEALTHY.value:
                continue
            try:
                status = HealthStatus(raw_status)
            except ValueError:
                status = HealthStatus.UNKNOWN
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
            if health is None and live is None and entry.get("status") == "OutOfSync":
                health = Health(HealthStatus.MISSING, "declared in Git but not found in the cluster")
            ref = Ref(
                "/".join(p for p in (str(entry.get("group") or ""), str(entry.get("version") or "")) if p),
                str(entry.get("kind") or ""), str(entry.get("namespace") or ""), str(entry.get("name") or ""),
            )
            seen.add(ref)
            if health is not None and health.status != HealthStatus.HEALTHY:
                yield self._with_pods(ctx, Culprit(live.ref if live else ref, health, live))
        if not entries:  # no status.resources: fall back to the tracking label/annotation
            for obj in ctx.snap.tracked_by(app):
                health = ctx.health.assess(obj.raw)
                if health is not None and health.status != HealthStatus.HEALTHY:
                    yield self._with_pods(ctx, Culprit(obj.ref, health, obj))

    def _with_pods(self, ctx: Context, culprit: Culprit) -> Culprit:
        if culprit.obj is not None and culprit.obj.kind in WORKLOAD_KINDS:
            for pod in ctx.snap.pods_of(culprit.obj):
                pod_health = ctx.health.assess(pod.raw)
                if pod_health is not None and pod_health.status != HealthStatus.HEALTHY:
                    culprit.pods.append((pod, pod_health))
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
            evidence.extend(self._pod_evidence(ctx, culprit, lines))
        related = {c.ref for c in culprits} | {p.ref for c in culprits for p, _ in c.pods}
        warnings = [e for e in ctx.snap.events if e.type == "Warning" and e.involved is not None
                    and any(_same(e.involved, r) for r in related)]
        evidence.extend(event_evidence(e) for e in warnings[-MAX_EVENTS:])
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
            remediation=_remediation(app, culprits, bool(errors)),
        )

    def _pod_evidence(self, ctx: Context, culprit: Culprit, lines: list[str]) -> Iterator[Evidence]:
        shown = culprit.pods[:MAX_PODS]
        if shown:
            extra = f" (and {len(culprit.pods) - MAX_PODS} more)" if len(culprit.pods) > MAX_PODS else ""
            lines.append(
                f"its {plural(len(culprit.pods), 'pod')} not Healthy{extra}: "
                + ", ".join(_pod_line(p, h) for p, h in shown)
            )
        for pod, health in shown:
            yield object_evidence(pod, ".status.containerStatuses", f"{health.status.value}: {health.message}")
            crashed = {
                str(cs.get("name")) for cs in as_list(pod.status.get("containerStatuses"))
                if isinstance(cs, dict) and as_int(cs.get("restartCount")) > 0
            }
            files = ctx.snap.log_files_of(pod.namespace, pod.name)
            for container in sorted(crashed):
                mine = [f for f in files if f.container == container]
                chosen = next((f for f in mine if f.previous), mine[0] if mine else None)
                if chosen is not None:
                    yield from (log_evidence(r) for r in ctx.snap.log_tail(chosen, 3))


def _pod_line(pod: Obj, health: Health) -> str:
    detail = container_states(pod) or health.message
    return f"{pod.name} {health.status.value}" + (f" ({detail})" if detail else "")


def container_states(pod: Obj) -> str:
    """What each unready container is doing: `api CrashLoopBackOff, last exit code 1, 9 restarts`."""
    parts = []
    for cs in as_list(pod.status.get("containerStatuses")):
        if not isinstance(cs, dict) or cs.get("ready"):
            continue
        state = mapping(cs.get("state"))
        waiting, terminated = mapping(state.get("waiting")), mapping(state.get("terminated"))
        last = mapping(mapping(cs.get("lastState")).get("terminated"))
        text = f"{cs.get('name')} {waiting.get('reason') or terminated.get('reason') or 'not ready'}"
        exit_code = terminated.get("exitCode", last.get("exitCode"))
        if exit_code is not None:
            text += f", last exit code {exit_code}"
        if as_int(cs.get("restartCount")):
            text += f", {plural(as_int(cs.get('restartCount')), 'restart')}"
        parts.append(text)
    return "; ".join(parts)


def _same(a: Ref, b: Ref) -> bool:
    return a.kind == b.kind and a.name == b.name and a.namespace == b.namespace


@dataclass(frozen=True)
class PodFix:
    """Why a failing pod fails, told apart by its containers' waiting reasons, and what to do."""

    text: str
    command: str


def _waiting(pod: Obj) -> list[tuple[str, str, str, str]]:
    """(container, image, reason, message) of every waiting container, init containers first."""
    spec = mapping(pod.raw.get("spec"))
    images = {
        str(c.get("name")): str(c.get("image") or "")
        for key in ("initContainers", "containers") for c in as_list(spec.get(key)) if isinstance(c, dict)
    }
    found = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in as_list(pod.status.get(key)):
            if not isinstance(cs, dict):
                continue
            waiting = mapping(mapping(cs.get("state")).get("waiting"))
            reason = str(waiting.get("reason") or "")
            if reason:
                name = str(cs.get("name") or "")
                image = images.get(name) or str(cs.get("image") or "")
                found.append((name, image, reason, str(waiting.get("message") or "")))
    return found


def _registry(image: str) -> str:
    first = image.split("/", 1)[0] if "/" in image else ""
    return first if ("." in first or ":" in first or first == "localhost") else "docker.io"


def pod_fix(pod: Obj) -> PodFix:
    """The fix for a failing pod: the image, its configuration, or why its container exits."""
    ns, name = pod.namespace, pod.name
    waiting = _waiting(pod)
    pulls = [w for w in waiting if w[2] in IMAGE_REASONS]
    if pulls:
        container, image, reason, message = pulls[0]
        secrets = [str(s.get("name")) for s in as_list(mapping(pod.raw.get("spec")).get("imagePullSecrets"))
                   if isinstance(s, dict) and s.get("name")]
        text = (
            f"Pod {name} cannot get the image of container {container} ({reason}"
            + (f": {message}" if message else "") + "). The container never started, so it has no logs to read. "
        )
        if reason == "InvalidImageName":
            text += f"The image reference {image!r} is not valid: fix its name and tag in Git. "
        elif reason == "ErrImageNeverPull":
            text += (f"Its imagePullPolicy is Never and {image!r} is not on the node: set the policy to "
                     "IfNotPresent or preload the image. ")
        else:
            text += (
                f"Check that {image or 'the image'} exists (repository name and tag, or digest) in "
                f"{_registry(image)}, and that the pod may pull it: "
                + (f"its imagePullSecrets ({', '.join(secrets)}) must hold valid credentials for that registry "
                   f"(`kubectl -n {ns} get secret {secrets[0]}`). " if secrets else
                   "a private registry needs imagePullSecrets on the pod or its ServiceAccount. ")
            )
        text += "Fix the image reference or the credentials in Git and let Argo CD sync the fix."
        return PodFix(text, f"kubectl -n {ns} describe pod {name}")
    configs = [w for w in waiting if w[2] in CONFIG_REASONS]
    if configs:
        container, _, reason, message = configs[0]
        text = (
            f"Pod {name} cannot start container {container} ({reason}"
            + (f": {message}" if message else "") + "): a Secret or ConfigMap it references (env, envFrom or a "
            "volume), or a key in one, is missing. The container never started, so it has no logs to read. "
            "Create the object (or the key) in the pod's namespace, or fix the reference in Git, and let Argo CD "
            "sync the fix."
        )
        missing = _MISSING_OBJECT.search(message)
        key = _MISSING_KEY.search(message)
        if missing:
            command = f"kubectl -n {ns} get {missing.group(1).lower()} {missing.group(2)}"
        elif key:
            command = f"kubectl -n {key.group(3) or ns} get {key.group(2).lower()} {key.group(4)} -o yaml"
        else:
            command = f"kubectl -n {ns} describe pod {name}"
        return PodFix(text, command)
    return PodFix(
        "The workload's pods fail on their own: Argo CD applied what Git holds and cannot heal it. Read why "
        "the container exits (its last log lines are in the evidence), fix the image or configuration in Git, "
        "and let Argo CD sync the fix.",
        f"kubectl -n {ns} logs {name} --previous --all-containers",
    )


def _remediation(app: Obj, culprits: list[Culprit], blocked: bool) -> Remediation:
    crashing = [(c, p) for c in culprits for p, h in c.pods if h.status == HealthStatus.DEGRADED]
    missing = [c for c in culprits if c.health.status == HealthStatus.MISSING]
    steps = []
    command = None
    if crashing:
        fix = pod_fix(crashing[0][1])
        steps.append(fix.text)
        command = fix.command
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
