"""rollout-degraded: an Argo Rollout Degraded for a real reason, with that reason.

The reasons come from `facts.rollouts.assess_rollout`, the decision the remediation uses: the update was aborted
(by hand, by a failed AnalysisRun or by progressDeadlineAbort), the spec is invalid, the Rollout is paused, an
AnalysisRun of the current pod template failed (its metric, message, last value and query), or the current
ReplicaSet's pods crash-loop, cannot pull their image, cannot be scheduled, are not ready or cannot be created.
Restarting such a Rollout hides the failure for a while and fixes nothing, so this rule never suggests it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import event_evidence, log_evidence, object_evidence, referenced
from argo_doctor.facts.analysis import AnalysisOutcome, outcome
from argo_doctor.facts.rollouts import (
    FAILED_ANALYSIS,
    HASH_LABEL,
    ROLLOUT_GROUP,
    ROLLOUT_NEEDS,
    RolloutState,
    RolloutVerdict,
    analysis_problem,
    assess,
    controller_version,
    rollouts,
)
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_int, as_list, mapping

DOCS = "https://argo-rollouts.readthedocs.io/en/stable/features/specification/"
MAX_PODS = 5
MAX_EVENTS = 5
MAX_LOG_LINES = 3
SYMPTOM = "rollout-degraded-although-healthy"
PAUSED_BUGS = ("argo-rollouts-3534", "argo-rollouts-3843")
"""Known bugs that turn a paused Rollout Degraded (ProgressDeadlineExceeded)."""


class RolloutDegraded(Analyzer):
    """Rollouts Degraded for a real reason."""

    id = "rollout-degraded"
    title = "Rollout Degraded for a real reason"
    needs = Needs(ROLLOUT_NEEDS | {"argoproj.io/Application"}, events=True, failing_pod_logs=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per Rollout whose verdict is DEGRADED."""
        for rollout in rollouts(ctx.snap):
            verdict = assess(ctx.snap, rollout)
            if verdict.state == RolloutState.DEGRADED:
                yield self._finding(ctx, rollout, verdict)

    def _finding(self, ctx: Context, rollout: Obj, verdict: RolloutVerdict) -> Finding:
        ns, name = rollout.namespace, rollout.name
        reasons = list(verdict.reasons)
        summary = (f"Rollout {ns}/{name} is Degraded (\"{verdict.message or 'no message'}\") for a real reason: "
                   + "; ".join(r.rstrip(".") for r in reasons) + ".")
        app = ctx.snap.app_of(rollout)
        if app is not None:
            summary += f" Application {app.namespace}/{app.name} manages it and shows Degraded because of it."
        paused_bugs: list[knowledge.KnownBug] = []
        if all(r.startswith("paused") for r in reasons) and verdict.message.startswith("ProgressDeadlineExceeded"):
            bugs = knowledge.known_bugs("argo-rollouts", SYMPTOM, controller_version(ctx.snap))
            paused_bugs = [b for b in bugs if b.id in PAUSED_BUGS]
            if paused_bugs:
                version = controller_version(ctx.snap)
                summary += (" A paused Rollout should not time out: " + (
                    f"Argo Rollouts {version} has" if paused_bugs[0].confirmed else "its controller's version is not "
                    "in the input; Argo Rollouts before v1.8.0 has")
                    + " upstream bugs that turn paused Rollouts Degraded: "
                    + ", ".join(f"{b.number} (fixed in {b.fixed})" for b in paused_bugs) + ".")
        runs = _failing_runs(ctx, rollout, verdict)
        outcomes = [o for o in (outcome(r.raw, rollout.raw) for r in runs) if o is not None]
        if outcomes:
            summary += " " + " ".join(o.verdict() for o in outcomes)
        pods = [(p, ctx.snap.get("Pod", p.name, ns, "")) for p in verdict.pods if p.problem][:MAX_PODS]
        evidence = [object_evidence(rollout, ".status.message", f"phase {rollout.status.get('phase') or '?'}: "
                                    f"{verdict.message}", verdict.since)]
        for summary_pod, obj in pods:
            if obj is not None:
                evidence.append(object_evidence(obj, ".status", f"{summary_pod.problem}"))
                evidence.extend(_log_tail(ctx, obj))
        for run in runs:
            evidence.append(object_evidence(run, ".status.metricResults", analysis_problem(run.raw)))
        related = {rollout.ref} | {o.ref for _, o in pods if o is not None} | {r.ref for r in runs}
        evidence.extend(event_evidence(e) for e in ctx.snap.warnings_about(related)[-MAX_EVENTS:])
        objects = [rollout.ref, *(r.ref for r in runs), *(o.ref for _, o in pods if o is not None)]
        if app is not None:
            objects.append(app.ref)
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Rollout {ns}/{name} is Degraded: " + (_analysis_title(outcomes) if outcomes else
                                                          _short(reasons[0]) if reasons else verdict.summary),
            summary=summary,
            objects=objects,
            evidence=evidence,
            remediation=_remediation(ctx, rollout, verdict, pods[0][0].name if pods else None, paused_bugs, outcomes),
        )


_IMAGE = re.compile(r'(?:pulling|pull|unpack|resolve reference) image "([^"]+)"')
_MISSING_OBJECT = re.compile(r'\b(secret|configmap)s? "([^"]+)" not found', re.IGNORECASE)


def _short(reason: str, limit: int = 110) -> str:
    return reason if len(reason) <= limit else reason[: limit - 3].rstrip() + "..."


def _failing_runs(ctx: Context, rollout: Obj, verdict: RolloutVerdict) -> list[Obj]:
    if not verdict.pod_hash:
        return []
    runs = [r for r in ctx.snap.of_kind("AnalysisRun", ROLLOUT_GROUP, rollout.namespace)
            if r.labels.get(HASH_LABEL) == verdict.pod_hash and mapping(r.status).get("phase") in FAILED_ANALYSIS]
    return [r for r in sorted(runs, key=lambda r: r.name) if any(r.name in reason for reason in verdict.reasons)]


def _log_tail(ctx: Context, pod: Obj) -> list[Evidence]:
    crashed = {str(cs.get("name")) for cs in as_list(pod.status.get("containerStatuses"))
               if isinstance(cs, dict) and as_int(cs.get("restartCount")) > 0}
    found: list[Evidence] = []
    files = ctx.snap.log_files_of(pod.namespace, pod.name)
    for container in sorted(crashed):
        mine = [f for f in files if f.container == container]
        chosen = next((f for f in mine if f.previous), mine[0] if mine else None)
        if chosen is not None:
            found.extend(log_evidence(r) for r in ctx.snap.log_tail(chosen, MAX_LOG_LINES))
    return found


def _analysis_title(outcomes: list[AnalysisOutcome]) -> str:
    """`its analysis failed (metric success-rate)`, `its analysis could not measure (…), the release may be fine`, or
    `its analysis was inconclusive (…)`."""
    failed = [m.name for o in outcomes if o.kind == "failed" for m in o.metrics]
    if any(o.kind == "failed" for o in outcomes):
        return f"its analysis failed ({', '.join(f'metric {m}' for m in failed) or outcomes[0].run})"
    if all(o.kind == "inconclusive" for o in outcomes):
        return f"its analysis was inconclusive ({outcomes[0].run})"
    causes = [m.cause.id for o in outcomes for m in o.metrics if m.cause is not None]
    return (f"its analysis could not measure ({causes[0].replace('-', ' ') if causes else 'provider error'}), the "
            "release may be fine")


def _remediation(ctx: Context, rollout: Obj, verdict: RolloutVerdict, pod: str | None,
                 paused_bugs: list[knowledge.KnownBug], outcomes: list[AnalysisOutcome]) -> Remediation:
    ns, name = rollout.namespace, rollout.name
    reasons = verdict.reasons
    pods = {(p.problem or "").split(" ", 1)[0].rstrip(":") for p in verdict.pods if p.problem}
    steps: list[str] = []
    commands: list[str] = []
    describe = f"kubectl describe pod {pod} -n {ns}" if pod else f"kubectl argo rollouts get rollout {name} -n {ns}"
    if any(r.startswith("InvalidSpec") for r in reasons):
        steps.append("Fix the Rollout's spec as the InvalidSpec message says and apply it (through Git when Argo CD "
                     "manages it).")
        commands.append(f"kubectl argo rollouts get rollout {name} -n {ns}")
    errored = [m for o in outcomes if o.kind == "errored" for m in o.metrics]
    if any(o.kind == "failed" for o in outcomes) or (not errored and any(r.startswith("AnalysisRun ")
                                                                          for r in reasons)):
        steps.append("The analysis judged the new version bad: read the failing metric's last value and query. If the "
                     "version is bad, fix it and update the Rollout; if the query or its threshold is wrong, fix the "
                     "AnalysisTemplate; then retry the update.")
        commands.append(f"kubectl argo rollouts retry rollout {name} -n {ns}")
    elif errored:
        metric = next((m for m in errored if m.cause is not None), None)
        known = metric.cause if metric is not None else None
        guard = ""
        if known is not None and known.id == "empty-result-indexed" and metric is not None and metric.condition:
            condition = metric.condition.split(" and ")[0].partition(" ")[2]
            guard = (f" For metric {metric.name}: `len(result) > 0 && {condition}` (fails without data) or "
                     f"`len(result) == 0 || {condition}` (passes without data).")
        steps.append("The analysis did not measure the new version (its measurements errored), so nothing says the "
                     "version is bad. " + (known.remediation + guard if known else "Fix what the measurement's "
                                           "message names (the provider's address, credentials or the query).")
                     + " Then retry the update, which runs the analysis again.")
        commands.append(f"kubectl argo rollouts retry rollout {name} -n {ns}")
    elif any(r.startswith("aborted") for r in reasons):
        steps.append("The update was aborted and the stable version serves: find out why (the message says, and the "
                     "Rollout's events), fix the new version, then update the Rollout again or retry it.")
        commands.append(f"kubectl argo rollouts retry rollout {name} -n {ns}")
    if pods & {"CrashLoopBackOff", "Error", "OOMKilled", "RunContainerError", "Failed", "Succeeded"}:
        steps.append("The new pods' containers exit on their own: read why in their previous logs, fix the image or "
                     "its configuration, and update the Rollout.")
        commands.append(f"kubectl logs {pod} -n {ns} --previous --all-containers" if pod else describe)
    if pods & {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"}:
        images = sorted({m.group(1) for p in verdict.pods for m in _IMAGE.finditer(p.problem or "")})
        steps.append("The new version's image cannot be pulled, so its containers never started and have no logs "
                     "to read: check the image name and tag" + (f" ({', '.join(images)})" if images else "")
                     + ", that it exists in the registry, and that the pod's imagePullSecrets (or its "
                     f"ServiceAccount's) hold valid credentials for that registry (`kubectl get secret -n {ns}`). "
                     "Fix the image reference in the Rollout and update it.")
        commands.append(describe)
    if pods & {"CreateContainerConfigError", "CreateContainerError"}:
        missing = sorted({(m.group(1).lower(), m.group(2)) for p in verdict.pods
                          for m in _MISSING_OBJECT.finditer(p.problem or "")})
        steps.append("A container cannot be created from its configuration: a ConfigMap, Secret or key it references "
                     "is missing (the message names it); it never started, so it has no logs to read. Create it or "
                     "fix the reference" + (": " + ", ".join(f"`kubectl -n {ns} get {k} {n}`" for k, n in missing)
                                            if missing else "") + ".")
        steps.extend(referenced(ctx.snap, "Secret" if k == "secret" else "ConfigMap", n, ns) for k, n in missing)
        commands.append(describe)
    if pods & {"Unschedulable", "Pending", "ContainerCreating", "PodInitializing"}:
        steps.append("The new pods do not start (the message and the pod's events say why, e.g. no node has room): "
                     "add capacity, or fix their requests, node selector, affinity, tolerations or volumes.")
        commands.append(describe)
    if "Running" in pods:
        steps.append("The new pods run but never become Ready: check their readiness probe against what the "
                     "application serves, and their logs.")
        commands.append(describe)
    if any("cannot create pods" in r or r.startswith("ReplicaFailure") for r in reasons):
        steps.append("The ReplicaSet cannot create pods (a quota, LimitRange or admission webhook refuses them, as the "
                     "message says): fix that.")
        commands.append(f"kubectl describe replicasets -n {ns} -l {HASH_LABEL}={verdict.pod_hash}")
    if any(r.startswith("paused") for r in reasons):
        steps.append("It waits for a decision: once the new version is verified, promote it (or resume it when paused "
                     "by hand); abort it otherwise.")
        commands.append(f"kubectl argo rollouts promote {name} -n {ns}")
        if paused_bugs:
            fixed = max((b.fixed for b in paused_bugs if b.fixed), key=lambda v: knowledge.parse_version(v) or (0,),
                        default=None)
            if fixed:
                steps.append(f"Upgrade Argo Rollouts to {fixed} or later so that paused Rollouts stop turning "
                             f"Degraded ({', '.join(b.number for b in paused_bugs)}).")
    if not steps:
        steps.append("Read the Rollout's conditions and events and its new pods' events, fix the cause in the new "
                     "version, and update the Rollout.")
    steps.append("A restart would not fix this: it only recreates the same pods.")
    return Remediation(text=" ".join(steps), command=commands[0] if commands else
                       f"kubectl argo rollouts get rollout {name} -n {ns}", docs=(DOCS,))
