"""rollout-stuck-degraded: an Argo Rollout Degraded with ProgressDeadlineExceeded although every pod of its current
ReplicaSet is Running, Ready and available, nothing is paused, aborted, failing analysis or already restarting.

Once the Progressing condition is False with ProgressDeadlineExceeded, the controller clears it only when replica
counts or the canary step change, so such a Rollout stays Degraded (and its Application with it) until something
moves it; upstream bugs put Rollouts in that state (knowledge/known_bugs.yaml). A restart (`spec.restartAt`)
recreates the pods one at a time and clears it. The decision is `facts.rollouts.assess_rollout`, the same one the
remediation uses; when the input lacks what it needs, this rule says so at low severity instead of guessing.
"""

from __future__ import annotations

from collections.abc import Iterable

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import event_evidence, object_evidence, plural
from argo_doctor.facts.rollouts import (
    HASH_LABEL,
    ROLLOUT_NEEDS,
    RolloutState,
    RolloutVerdict,
    assess,
    controller_version,
    controllers,
    duration,
    rollouts,
)
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.timeutil import format_time

SYMPTOM = "rollout-degraded-although-healthy"
RESTART_DOCS = "https://argo-rollouts.readthedocs.io/en/stable/features/restart/"
MAX_PODS = 5
MAX_EVENTS = 3


class RolloutStuckDegraded(Analyzer):
    """Rollouts stuck in Degraded (ProgressDeadlineExceeded) although their pods are fine."""

    id = "rollout-stuck-degraded"
    title = "Rollout stuck Degraded although its pods are ready"
    needs = Needs(ROLLOUT_NEEDS | {"argoproj.io/Application"}, events=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per stuck Rollout, and a low one per Degraded Rollout that the input cannot decide."""
        for rollout in rollouts(ctx.snap):
            verdict = assess(ctx.snap, rollout)
            if verdict.state == RolloutState.STUCK:
                yield self._stuck(ctx, rollout, verdict)
            elif verdict.state == RolloutState.UNDETERMINED:
                yield self._undetermined(ctx, rollout, verdict)

    def _stuck(self, ctx: Context, rollout: Obj, verdict: RolloutVerdict) -> Finding:
        ns, name = rollout.namespace, rollout.name
        now = ctx.snap.reference_time
        version = controller_version(ctx.snap)
        bugs = knowledge.known_bugs("argo-rollouts", SYMPTOM, version)
        rs = _current_rs(ctx, rollout, verdict)
        rs_name = rs.name if rs is not None else f"of pod hash {verdict.pod_hash}"
        count = len(verdict.pods)
        how_long = f" for {duration(now - verdict.since)} (since {format_time(verdict.since)})" if verdict.since else ""
        summary = (
            f"Rollout {ns}/{name} has been Degraded{how_long} with \"{verdict.message}\", yet its current ReplicaSet "
            f"{rs_name} (pod hash {verdict.pod_hash}) has "
            f"{'all its ' + plural(count, 'pod') if count != 1 else 'its only pod'} Running, Ready and available "
            f"({', '.join(_pod_line(p.name, p.restarts) for p in verdict.pods[:MAX_PODS])}"
            f"{', ...' if count > MAX_PODS else ''}), none waiting, pending or restarting; it is not aborted or "
            "paused, no AnalysisRun failed and no restart is pending. The controller clears ProgressDeadlineExceeded "
            "only when replica counts or the step change, so nothing will bring it back to Healthy on its own."
        )
        app = ctx.snap.app_of(rollout)
        if app is not None:
            summary += f" Application {app.namespace}/{app.name} manages it and shows Degraded because of it."
        summary += " " + _versions_sentence(ctx, version, bugs)
        evidence = [_status_evidence(rollout, verdict)]
        evidence.extend(_rs_and_pod_evidence(ctx, rollout, rs, verdict))
        evidence.extend(_controller_evidence(ctx))
        if app is not None:
            health = app.status.get("health")
            status = health.get("status") if isinstance(health, dict) else None
            evidence.append(object_evidence(app, ".status.health", f"{status or 'unknown'}"))
        evidence.extend(_events(ctx, rollout))
        objects = [rollout.ref] + ([app.ref] if app is not None else [])
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Rollout {ns}/{name} is stuck Degraded (ProgressDeadlineExceeded) although "
                  + (f"its {count} pods are ready" if count != 1 else "its pod is ready"),
            summary=summary,
            objects=objects,
            evidence=evidence,
            remediation=_restart_remediation(verdict, version, bugs, format_time(now) or ""),
        )

    def _undetermined(self, ctx: Context, rollout: Obj, verdict: RolloutVerdict) -> Finding:
        ns, name = rollout.namespace, rollout.name
        missing = [r.removeprefix("missing: ") for r in verdict.reasons if r.startswith("missing: ")]
        why = [f"the input lacks {m}" for m in missing] + [r for r in verdict.reasons if not r.startswith("missing: ")]
        summary = (f"Rollout {ns}/{name} is Degraded (\"{verdict.message or 'no message'}\"), but argo-doctor cannot "
                   "decide whether it is stuck although healthy (which a restart clears) or Degraded for a real "
                   "reason: " + "; ".join(why) + ".")
        app = ctx.snap.app_of(rollout)
        if app is not None:
            summary += f" Application {app.namespace}/{app.name} manages it."
        if missing:
            hash_selector = f" -l {HASH_LABEL}={verdict.pod_hash}" if verdict.pod_hash else ""
            text = ("Collect what is missing and scan again; do not restart it before knowing why it is Degraded: "
                    "a restart hides a real failure for a while and does not fix it.")
            command = f"kubectl get replicasets,pods,analysisruns -n {ns}{hash_selector} -o yaml"
        elif verdict.restart_pending:
            text = ("A restart is already under way: wait until status.restartedAt equals spec.restartAt and the new "
                    "pods are ready, then look again; do not restart it a second time.")
            command = f"kubectl argo rollouts get rollout {name} -n {ns} --watch"
        else:
            text = ("The Rollout or its pods are changing, or its status is not one argo-doctor knows: look again in "
                    "a few minutes and read its conditions and events before acting.")
            command = f"kubectl argo rollouts get rollout {name} -n {ns}"
        return Finding(
            rule=self.id,
            severity=Severity.LOW,
            title=f"Rollout {ns}/{name} is Degraded and the input cannot tell whether it is stuck",
            summary=summary,
            objects=[rollout.ref] + ([app.ref] if app is not None else []),
            evidence=[_status_evidence(rollout, verdict), *_events(ctx, rollout)],
            remediation=Remediation(text=text, command=command, docs=(RESTART_DOCS,)),
        )


def _pod_line(name: str, restarts: int) -> str:
    return f"{name} ready" + (f", {plural(restarts, 'old restart')}" if restarts else "")


def _versions_sentence(ctx: Context, version: str | None, bugs: list[knowledge.KnownBug]) -> str:
    if version is not None:
        head = f"The Argo Rollouts controller runs {version}"
        if not bugs:
            return head + ", which has no known upstream bug with this symptom in argo-doctor's list."
        return head + ", which has known upstream bugs with this symptom: " + _bug_list(bugs) + "."
    found = controllers(ctx.snap)
    if found:
        versions = sorted({c.version or "untagged" for c in found})
        head = f"The Argo Rollouts controllers run {', '.join(versions)}, so which bugs apply is unclear"
    else:
        head = "The Argo Rollouts controller is not in the input, so its version is unknown"
    return head + (f"; known upstream bugs with this symptom: {_bug_list(bugs)}." if bugs else ".")


def _bug_list(bugs: list[knowledge.KnownBug]) -> str:
    return ", ".join(f"{b.number} ({'fixed in ' + b.fixed if b.fixed else 'still open'})" for b in bugs)


def _restart_remediation(verdict: RolloutVerdict, version: str | None, bugs: list[knowledge.KnownBug],
                         now: str) -> Remediation:
    ns, name = verdict.namespace, verdict.name
    text = ("Restart the Rollout now: `kubectl argo rollouts restart` (or Argo CD's restart action) sets "
            "spec.restartAt to the current time, the controller evicts the pods created before it one at a time "
            "(honouring PodDisruptionBudgets), and the new pods' progress clears the condition.")
    if verdict.desired <= 1:
        text += (" This Rollout has a single replica: the restart evicts that pod before its replacement is ready, "
                 "so expect downtime (scale it to 2 first if that matters).")
    fixed = [b for b in bugs if b.fixed]
    still_open = [b for b in bugs if not b.fixed]
    if fixed:
        target = max((b.fixed for b in fixed if b.fixed), key=lambda v: knowledge.parse_version(v) or (0, 0, 0))
        text += (f" For good, upgrade Argo Rollouts{' from ' + version if version else ''} to {target} or later, "
                 f"which fixes {', '.join(b.number for b in fixed)}")
        text += (f"; {', '.join(b.number for b in still_open)} {'is' if len(still_open) == 1 else 'are'} still "
                 "open upstream, so keep this check in place after the upgrade." if still_open else ".")
    elif still_open:
        text += (f" The upstream bug{'s' if len(still_open) > 1 else ''} "
                 f"{', '.join(b.number for b in still_open)} {'are' if len(still_open) > 1 else 'is'} still open: "
                 "no release fixes this yet, so restart it whenever it happens (argo-doctor serve can do it safely).")
    patch = '{"spec":{"restartAt":"' + now + '"}}'
    return Remediation(
        text=text + ' The restart is the JSON merge patch {"spec":{"restartAt":"<now, RFC 3339 UTC>"}} on the Rollout '
        f"(the patch shown uses the snapshot's time, {now}).",
        patch=patch,
        command=f"kubectl argo rollouts restart {name} -n {ns}",
        docs=(RESTART_DOCS, *(b.issue for b in bugs)),
    )


def _status_evidence(rollout: Obj, verdict: RolloutVerdict) -> Evidence:
    progressing = next((c for c in rollout.status.get("conditions") or [] if isinstance(c, dict)
                        and c.get("type") == "Progressing"), None)
    if progressing is not None:
        excerpt = (f"phase {rollout.status.get('phase') or '?'}; Progressing {progressing.get('status')} "
                   f"{progressing.get('reason')}: {progressing.get('message')}")
        return object_evidence(rollout, ".status.conditions[type=Progressing]", excerpt, verdict.since)
    return object_evidence(rollout, ".status.message", f"phase {rollout.status.get('phase')}: {verdict.message}",
                           verdict.since)


def _current_rs(ctx: Context, rollout: Obj, verdict: RolloutVerdict) -> Obj | None:
    for rs in ctx.snap.of_kind("ReplicaSet", "apps", rollout.namespace):
        owner = ctx.snap.owner(rs)
        if rs.labels.get(HASH_LABEL) == verdict.pod_hash and (owner is None or owner is rollout):
            return rs
    return None


def _rs_and_pod_evidence(ctx: Context, rollout: Obj, rs: Obj | None, verdict: RolloutVerdict) -> list[Evidence]:
    found: list[Evidence] = []
    if rs is not None:
        status = rs.status
        found.append(object_evidence(
            rs, ".status", f"replicas {status.get('replicas', 0)}, ready {status.get('readyReplicas', 0)}, "
            f"available {status.get('availableReplicas', 0)} of {rs.spec.get('replicas', 1)} desired"))
    for pod in verdict.pods[:MAX_PODS]:
        obj = ctx.snap.get("Pod", pod.name, rollout.namespace, "")
        if obj is not None:
            found.append(object_evidence(obj, ".status", f"{pod.phase}, Ready {pod.ready}, "
                                         f"{plural(pod.restarts, 'restart')}"))
    return found


def _controller_evidence(ctx: Context) -> list[Evidence]:
    found = []
    for component in controllers(ctx.snap):
        obj = component.workload or (component.pods[0] if component.pods else None)
        if obj is not None and component.image:
            path = ".spec.template.spec.containers[0].image" if component.workload else ".spec.containers[0].image"
            found.append(object_evidence(obj, path, component.image))
    return found


def _events(ctx: Context, rollout: Obj) -> list[Evidence]:
    return [event_evidence(e) for e in ctx.snap.warnings_about([rollout.ref])[-MAX_EVENTS:]]
