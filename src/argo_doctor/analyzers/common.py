"""Helpers shared by analyzers: evidence from objects, events and logs, and what a Context tells several rules."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from argo_doctor.analyzers import Context
from argo_doctor.facts.inventory import Presence, lookup, not_collected
from argo_doctor.facts.webhooks import Webhook, failed_webhook_name
from argo_doctor.facts.workflows import FailedNode
from argo_doctor.health import Health, HealthStatus
from argo_doctor.model import Evidence, Ref
from argo_doctor.snapshot import KEvent, Obj, Snapshot
from argo_doctor.sources.logs import LogRecord
from argo_doctor.sources.objects import as_int, as_list, mapping

MAX_PODS = 3
MAX_NODES = 5
"""Failed Workflow nodes shown in a finding."""
POD_WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Rollout", "Job"}
"""Kinds followed down to their pods."""
IMAGE_REASONS = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
CONFIG_REASONS = ("CreateContainerConfigError",)
WORKFLOW_DOCS = "https://argo-workflows.readthedocs.io/en/latest/cli/argo_logs/"
# How the kubelet names what a container's configuration lacks, e.g. `secret "db" not found`,
# `configmap "app-env" not found`, `couldn't find key password in Secret shop/db`.
_MISSING_OBJECT = re.compile(r'\b(secret|configmap)s? "([^"]+)" not found', re.IGNORECASE)
_MISSING_KEY = re.compile(r"couldn't find key (\S+) in (Secret|ConfigMap) (?:([^/\s]+)/)?([^\s,]+)", re.IGNORECASE)


def object_evidence(obj: Obj, path: str, excerpt: str, time: datetime | None = None) -> Evidence:
    """Evidence pointing at a field of an object: `file:line Kind/ns/name .field.path`."""
    return Evidence("object", f"{obj.location} {obj.ref} {path}", excerpt, time)


def api_version(group: Any, version: Any) -> str:
    """`group/version`, or the version alone for the core group (group "" or absent); "" without a version."""
    group, version = str(group or ""), str(version or "")
    if not version:
        return ""
    return f"{group}/{version}" if group else version


def resource_ref(entry: Mapping[str, Any]) -> Ref:
    """A Ref to an object an Application lists (`status.resources`, `status.operationState.syncResult.resources`,
    `operation.sync.resources`): group and version as Argo CD records them, the core group as ""."""
    return Ref(api_version(entry.get("group"), entry.get("version")), str(entry.get("kind") or ""),
               str(entry.get("namespace") or ""), str(entry.get("name") or ""))


def event_evidence(event: KEvent) -> Evidence:
    """Evidence from a Kubernetes Event."""
    count = f" (x{event.count})" if event.count > 1 else ""
    about = f" {event.involved}" if event.involved else ""
    return Evidence(
        "event", event.obj.location, f"{event.type} {event.reason}{about}: {event.message}{count}", event.time
    )


def log_evidence(record: LogRecord) -> Evidence:
    """Evidence from one log line."""
    return Evidence("log", record.location, record.raw.strip(), record.time)


def line_order(record: LogRecord) -> tuple[str, str, int]:
    """A line's place among lines of several files: its time, then its file and line."""
    return (record.time.isoformat() if record.time is not None else "", record.file.display, record.line)


def after(later: LogRecord, earlier: LogRecord) -> bool:
    """Whether a line comes after another: by time when both have one, else by place in one file."""
    if later.time is not None and earlier.time is not None:
        return later.time > earlier.time
    return later.file == earlier.file and later.line > earlier.line


def revision_of(entry: Mapping[str, Any]) -> str:
    """The revision of a sync status, history entry or sync result: a multi-source Application's revisions joined."""
    revisions = as_list(entry.get("revisions"))
    return ",".join(str(r) for r in revisions) if revisions else str(entry.get("revision") or "")


def age(minutes: float) -> str:
    """A duration in minutes as `3d4h`, `2h05m` or `7m`."""
    hours, mins = divmod(int(minutes), 60)
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if days else f"{hours}h{mins:02d}m" if hours else f"{mins}m"


def plural(count: int, word: str) -> str:
    """`1 pod`, `3 pods`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def regenerating_chart(ctx: Context, hook: Webhook) -> str | None:
    """The chart call that regenerates this webhook's caBundle, when the managing app's chart has one."""
    config = hook.config
    app = ctx.snap.app_of(config)
    if app is None:
        return None
    for use in ctx.chart_uses(app):
        if use.resource_kind == config.kind and "caBundle" in use.field:
            return f"{use.function} at {use.call}, through {use.output} (Application {app.name})"
    return None


# -- pods ---------------------------------------------------------------------------------------


def failing_pods(ctx: Context, workload: Obj) -> list[tuple[Obj, Health]]:
    """The workload's pods that are not Healthy, with their health (none for kinds without pods)."""
    if workload.kind not in POD_WORKLOAD_KINDS:
        return []
    return failing(ctx, ctx.snap.pods_of(workload))


def failing(ctx: Context, pods: list[Obj], statuses: tuple[HealthStatus, ...] | None = None
            ) -> list[tuple[Obj, Health]]:
    """The given pods that are not Healthy (or whose health is one of `statuses`), with their health."""
    found = []
    for pod in pods:
        health = ctx.health.assess(pod.raw)
        if health is not None and (health.status in statuses if statuses else health.status != HealthStatus.HEALTHY):
            found.append((pod, health))
    return found


def claim_users(snap: Snapshot, claim: Obj) -> list[Obj]:
    """The pods of the claim's namespace that mount it (a `persistentVolumeClaim` volume naming it)."""
    return [p for p in snap.of_kind("Pod", namespace=claim.namespace)
            if any(mapping(mapping(v).get("persistentVolumeClaim")).get("claimName") == claim.name
                   for v in as_list(mapping(p.raw.get("spec")).get("volumes")))]


def pod_evidence(ctx: Context, pods: list[tuple[Obj, Health]], lines: list[str]) -> Iterator[Evidence]:
    """Evidence of the first failing pods and the last lines their crashed containers wrote; adds a line that
    names them to `lines`."""
    shown = pods[:MAX_PODS]
    if shown:
        extra = f" (and {len(pods) - MAX_PODS} more)" if len(pods) > MAX_PODS else ""
        lines.append(f"its {plural(len(pods), 'pod')} not Healthy{extra}: "
                     + ", ".join(_pod_line(p, h) for p, h in shown))
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


def pod_fix(snap: Snapshot, pod: Obj, managed: bool = True) -> PodFix:
    """The fix for a failing pod: the image, its configuration, or why its container exits; `managed` when an
    Application deploys it (the fix goes through Git), else the fix is applied to the workload."""
    ns, name = pod.namespace, pod.name
    source = "in Git" if managed else "in the workload's manifest"
    deliver = "let Argo CD sync the fix" if managed else "apply it"
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
            text += f"The image reference {image!r} is not valid: fix its name and tag {source}. "
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
        text += f"Fix the image reference or the credentials {source} and {deliver}."
        return PodFix(text, f"kubectl -n {ns} describe pod {name}")
    configs = [w for w in waiting if w[2] in CONFIG_REASONS]
    if configs:
        container, _, reason, message = configs[0]
        text = (
            f"Pod {name} cannot start container {container} ({reason}"
            + (f": {message}" if message else "") + "): a Secret or ConfigMap it references (env, envFrom or a "
            "volume), or a key in one, is missing. The container never started, so it has no logs to read. "
            f"Create the object (or the key) in the pod's namespace, or fix the reference {source}, and {deliver}."
        )
        missing = _MISSING_OBJECT.search(message)
        key = _MISSING_KEY.search(message)
        if missing:
            kind = "Secret" if missing.group(1).lower() == "secret" else "ConfigMap"
            text += " " + referenced(snap, kind, missing.group(2), ns)
            command = f"kubectl -n {ns} get {missing.group(1).lower()} {missing.group(2)}"
        elif key:
            command = f"kubectl -n {key.group(3) or ns} get {key.group(2).lower()} {key.group(4)} -o yaml"
        else:
            command = f"kubectl -n {ns} describe pod {name}"
        return PodFix(text, command)
    return PodFix(
        "The workload's pods fail on their own"
        + (": Argo CD applied what Git holds and cannot heal it." if managed else ", and restarting them recreates "
           "the same failure.")
        + " Read why the container exits (its last log lines are in the evidence), fix the image or configuration "
        f"{source}, and {deliver}.",
        f"kubectl -n {ns} logs {name} --previous --all-containers",
    )


def referenced(snap: Snapshot, kind: str, name: str, namespace: str) -> str:
    """What the input says of a Secret or ConfigMap the kubelet reports as not found."""
    presence, _ = lookup(snap, kind, name, namespace)
    if presence == Presence.PRESENT:
        return (f"The input holds {kind} {namespace}/{name}: it was created after the kubelet's last attempt, "
                "which it retries, or the pod references another name or key.")
    if presence == Presence.MISSING:
        return f"The input holds the {kind}s of namespace {namespace} and {name} is not among them."
    return f"The kubelet's message is the only word on {kind} {namespace}/{name}: {not_collected(kind, namespace)}."


# -- Workflows ----------------------------------------------------------------------------------


def workflow_evidence(workflow: Obj, nodes: list[FailedNode], lines: list[str]) -> list[Evidence]:
    """Evidence of the nodes that failed on their own in a Workflow (not the steps that enclose them); adds a line
    that names them to `lines`."""
    causes = [n for n in nodes if not n.encloses] or nodes
    shown = causes[:MAX_NODES]
    if shown:
        more = [f"and {len(causes) - len(shown)} more"] if len(causes) > len(shown) else []
        if len(nodes) > len(causes):
            them = "it" if len(causes) == 1 else "them"
            more.append(f"{plural(len(nodes) - len(causes), 'enclosing step node')} failed with {them}")
        lines.append(f"its failed {'node' if len(causes) == 1 else 'nodes'}: " + "; ".join(n.line for n in shown)
                     + (f" ({'; '.join(more)})" if more else ""))
    elif not mapping(workflow.status.get("nodes")):
        lines.append("its status holds no nodes (offloaded or compressed node status is not read)")
    return [object_evidence(workflow, f".status.nodes.{n.id}", n.line + (f" (pod {n.pod})" if n.pod else ""),
                            n.finished) for n in shown]


ARTIFACT_ACCESS = re.compile(r"failed to (?:create new S3 client|get file|put file|put directory|create bucket|list "
                             r"directory|load artifact)|(?:^|\s)(?:wait|init): .*(?:Access Denied|The specified bucket "
                             r"does not exist|InvalidAccessKeyId|SignatureDoesNotMatch)")
"""Argo Workflows' artifact driver errors (workflow/artifacts/s3/s3.go, workflow/executor), and S3's own codes in the
executor's containers (wait, init) only: a step's own container may print them for its own reasons."""


def workflow_fix(workflow: Obj, nodes: list[FailedNode]) -> PodFix:
    """What to read about a failed Workflow: its failed pod's logs when the pod's name is certain, else
    `argo logs`, or the node messages alone when no failed step's pod ran."""
    ns, name = workflow.namespace, workflow.name
    named = max((n for n in nodes if n.pod), default=None,  # the pod in the input, else the last one that ran
                key=lambda n: (n.pod_obj is not None, n.finished or datetime.min.replace(tzinfo=UTC)))
    text = (f"Workflow {ns}/{name} ended {workflow.status.get('phase')}: the failed nodes' messages say which step "
            "failed and how (an exit code, OOMKilled, a deadline, a pod that could not be created). ")
    if named is not None:
        text += (f"Read the logs of its pod {named.pod} (step {named.display_name or named.name}); once the pod is "
                 "deleted (podGC), `argo logs` reads them from the artifact repository when logs are archived. ")
        command = f"kubectl -n {ns} logs {named.pod} --all-containers"
    elif (pods := [n for n in nodes if n.type == "Pod"]) and not any(n.ran for n in pods):
        text += ("No failed step records a node it ran on (hostNodeName) or a container exit, so whether their "
                 "pods ran is not known: the node messages are the only word on the cause (a pod that could not be "
                 "created or scheduled has no logs). ")
        command = f"argo get {name} -n {ns}"
    else:
        ran = ("Its failed steps' containers ran (their status reports an exit code) but the input does not name "
               "their pods: " if any(n.exited for n in pods) else "")
        text += (ran + ("r" if ran else "R") + "ead the logs of its steps with the argo CLI (they are gone if the pods "
                 "were deleted and logs are not archived). ")
        command = f"argo logs {name} -n {ns}"
    refused = next((hook for hook in (failed_webhook_name(n.message) for n in nodes) if hook), None)
    messages = " ".join([str(workflow.status.get("message") or ""), *(n.message for n in nodes)])
    if "workflowtaskresults.argoproj.io is forbidden" in messages or 'cannot patch resource "pods"' in messages:
        text += ("The executor (the wait container) was refused by the API server: the Workflow's ServiceAccount "
                 "needs create and patch on workflowtaskresults.argoproj.io (v3.4 and later; pods get/patch before), "
                 "as Argo Workflows' workflow-rbac page lists. Bind such a Role to it, then retry the Workflow.")
    elif ARTIFACT_ACCESS.search(messages):
        text += ("The step could not read or write its artifacts in the repository (its credentials, the bucket, or "
                 "the key): check the artifact repository's Secret (accessKeySecret/secretKeySecret, or the "
                 "ServiceAccount's cloud role with useSDKCreds) and the bucket's policy for the Workflow's pods, then "
                 "retry the Workflow.")
    elif "artifact storage is not configured" in messages or "failed to resolve artifact repository" in messages:
        text += ("No artifact repository is configured for it (the controller's artifactRepository, or an "
                 "artifact-repositories ConfigMap in its namespace): configure one, or give the step's artifacts "
                 "their own location, then retry the Workflow.")
    elif refused:
        text += (f"Admission webhook {refused} refused the step's pod: make the webhook callable (see "
                 "webhook-blast-radius and webhook-ca-mismatch), then retry the Workflow (`argo retry`).")
    else:
        text += "Fix the step's image, input or resources, then resubmit or retry the Workflow (`argo retry`)."
    return PodFix(text, command)
