"""app-deletion-stuck: an Application that was deleted but does not go away, and what holds it.

Argo CD deletes an Application's resources before it removes its `resources-finalizer.argocd.argoproj.io` (or the
`/background`, `/foreground` variants, and `post-delete-finalizer.argocd.argoproj.io` for post-delete hooks). The
controller processes a pending operation before a deletion (`processAppOperationQueueItem`), and records a
failed attempt as a `DeletionError` condition. What holds it, from the input: a running operation, that condition, a
managed resource being deleted whose own finalizers are not cleared (and who should clear them), the destination
namespace stuck Terminating (its `NamespaceDeletionContentFailure`, `NamespaceFinalizersRemaining` conditions). The
fix never starts with removing the Application's finalizer: it says what that would leave behind, and in which
order to unblock it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import age, claim_users, event_evidence, object_evidence, plural
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

FINALIZERS = ("resources-finalizer.argocd.argoproj.io", "post-delete-finalizer.argocd.argoproj.io",
              "pre-delete-finalizer.argocd.argoproj.io")
"""Argo CD's own finalizers on an Application (prefixes: `/background`, `/foreground` and hook variants)."""
NAMESPACE_CONDITIONS = ("NamespaceDeletionContentFailure", "NamespaceDeletionDiscoveryFailure",
                        "NamespaceDeletionGroupVersionParsingFailure", "NamespaceContentRemaining",
                        "NamespaceFinalizersRemaining")
"""A Terminating namespace's conditions that say what it waits for (status True)."""
DOCS = ("https://argo-cd.readthedocs.io/en/stable/user-guide/app_deletion/",
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/")


def argo_finalizers(app: Obj) -> list[str]:
    """The Argo CD finalizers an Application still carries."""
    return [str(f) for f in as_list(app.meta.get("finalizers")) if str(f).startswith(FINALIZERS)]


class AppDeletionStuck(Analyzer):
    """Applications deleted but still there."""

    id = "app-deletion-stuck"
    title = "Application deletion does not finish"
    options: ClassVar[dict[str, str]] = {
        "min-minutes": "Minutes since the deletion before a deletion still under way is reported (default 5)",
    }
    needs = Needs(frozenset({"argoproj.io/Application", "Namespace"}), events=True, app_resources=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        least = ctx.option(self.id, "min-minutes", 5)
        for app in ctx.snap.applications():
            deleted = parse_time(app.meta.get("deletionTimestamp"))
            finalizers = argo_finalizers(app)
            if deleted is None or not finalizers:
                continue
            minutes = (now - deleted).total_seconds() / 60
            if minutes < least:
                continue
            yield self._finding(ctx, app, deleted, minutes, finalizers)

    def _finding(self, ctx: Context, app: Obj, deleted: datetime, minutes: float, finalizers: list[str]) -> Finding:
        name = f"{app.namespace}/{app.name}"
        evidence: list[Evidence] = [object_evidence(app, ".metadata.deletionTimestamp",
                                                    f"deleted at {format_time(deleted)}, finalizers: "
                                                    + ", ".join(finalizers), deleted)]
        objects: list[Ref] = [app.ref]
        holds: list[str] = []
        steps: list[str] = []
        operation = mapping(app.status.get("operationState"))
        if operation.get("phase") == "Running" or app.raw.get("operation"):
            holds.append("an operation is still running, and the controller finishes an operation before it "
                         f"deletes ({operation.get('message') or 'no message'})")
            evidence.append(object_evidence(app, ".status.operationState", f"phase {operation.get('phase')}: "
                                            f"{operation.get('message')}", parse_time(operation.get("startedAt"))))
            steps.append(f"End the operation first: `argocd app terminate-op {name}` (see operation-stuck).")
        for condition in as_list(app.status.get("conditions")):
            condition = mapping(condition)
            if condition.get("type") == "DeletionError":
                message = " ".join(str(condition.get("message") or "").split())
                holds.append(f"the controller's last attempt failed: {message}")
                evidence.append(object_evidence(app, ".status.conditions", f"DeletionError: {message}",
                                                parse_time(condition.get("lastTransitionTime"))))
        live = [obj for _, obj in ctx.snap.app_resources(app) if obj is not None]
        terminating = [o for o in live if o.meta.get("deletionTimestamp") and o.meta.get("finalizers")]
        for obj in terminating:
            holds.append(_held(ctx, obj, "is being deleted but keeps", evidence))
            objects.append(obj.ref)
        destination = str(mapping(app.at("spec", "destination")).get("namespace") or "")
        namespace = ctx.snap.get("Namespace", destination) if destination else None
        if namespace is not None and namespace.status.get("phase") == "Terminating":
            left = [o for o in ctx.snap.all() if o.namespace == destination and o.meta.get("deletionTimestamp")
                    and o.meta.get("finalizers") and o not in terminating]
            for obj in left:
                holds.append(_held(ctx, obj, "in it keeps", evidence))
                objects.append(obj.ref)
            terminating += left
            reasons = [mapping(c) for c in as_list(namespace.status.get("conditions"))
                       if mapping(c).get("type") in NAMESPACE_CONDITIONS and mapping(c).get("status") == "True"]
            said = "; ".join(" ".join(str(c.get("message") or c.get("type")).split()) for c in reasons)
            holds.append(f"its destination namespace {destination} is stuck Terminating"
                         + (f": {said}" if said else ""))
            evidence.append(object_evidence(namespace, ".status", f"Terminating: {said or 'no condition'}"))
            objects.append(namespace.ref)
        evidence.extend(event_evidence(e) for e in ctx.snap.warnings_about(set(objects))[-5:])
        remaining = [o for o in live if not o.meta.get("deletionTimestamp")]
        summary = (f"Application {name} was deleted {age(minutes)} ago ({format_time(deleted)}) and is still there: "
                   f"its finalizers ({', '.join(finalizers)}) make Argo CD delete its resources first. ")
        if holds:
            summary += "What holds it: " + "; ".join(holds) + "."
        else:
            summary += ("The input shows nothing that holds it (no running operation, no DeletionError, no resource "
                        "stuck with a finalizer): read the application controller's log for this Application.")
        steps += [_unblock(ctx, obj) for obj in terminating]
        if namespace is not None and namespace.status.get("phase") == "Terminating":
            steps.append(f"Namespace {destination} ends when what its conditions name is gone: find the objects "
                         f"left (`kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get "
                         f"-n {destination} --ignore-not-found`) and the controllers their finalizers wait for.")
        leave = (f"the {plural(len(remaining), 'managed resource')} still in the cluster "
                 f"({', '.join(str(o.ref) for o in remaining[:3])}{', …' if len(remaining) > 3 else ''}) would stay, "
                 "unmanaged" if remaining else "what is still being deleted would be left to itself, and a new "
                 "Application deploying into the same namespace would meet it")
        steps.append(f"Removing the Application's own finalizer is the last resort, once what holds it is understood: "
                     f"Argo CD would then stop deleting, and {leave}.")
        severity = Severity.HIGH if holds else Severity.MEDIUM
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Application {app.name} is deleted but still there"
                  + (f": {holds[0].split(':')[0]}" if holds else ""),
            summary=summary,
            objects=objects,
            evidence=evidence,
            remediation=Remediation(text=" ".join(steps), command=f"kubectl -n {app.namespace} get application "
                                    f"{app.name} -o yaml", docs=DOCS),
        )


def _held(ctx: Context, obj: Obj, verb: str, evidence: list[Evidence]) -> str:
    """What holds one object being deleted (its finalizers and who should clear them); its evidence added."""
    own = ", ".join(str(f) for f in as_list(obj.meta.get("finalizers")))
    deleted = obj.meta.get("deletionTimestamp")
    evidence.append(object_evidence(obj, ".metadata.finalizers", f"deleted at {deleted}, finalizers: {own}",
                                    parse_time(deleted)))
    return f"{obj.ref} {verb} its finalizers ({own}): {_who_clears(ctx, obj)}"


def _who_clears(ctx: Context, obj: Obj) -> str:
    """Who should remove an object's finalizers, by their names."""
    names = [str(f) for f in as_list(obj.meta.get("finalizers"))]
    if "kubernetes.io/pvc-protection" in names:
        users = claim_users(ctx.snap, obj)
        return ("kube-controller-manager removes it when no pod uses the claim"
                + (f"; still used by {', '.join(_pod_state(ctx, p) for p in users)}" if users else ""))
    if "foregroundDeletion" in names:
        return "the garbage collector removes it when the objects it owns are gone"
    domains = sorted({f.split("/")[0] for f in names if "/" in f})
    return (f"the controller of {', '.join(domains)} removes them when it has cleaned up; if that controller is gone "
            "or broken, nothing ever will") if domains else "the controller that added them removes them"


def _pod_state(ctx: Context, pod: Obj) -> str:
    """`pod X` and, when it is being deleted too, why that does not end (its node stopped reporting)."""
    if not pod.meta.get("deletionTimestamp"):
        return f"pod {pod.name}"
    node = ctx.snap.get("Node", str(mapping(pod.raw.get("spec")).get("nodeName") or ""))
    ready = next((mapping(c) for c in as_list(node.status.get("conditions")) if mapping(c).get("type") == "Ready"),
                 {}) if node is not None else {}
    if ready.get("status") == "Unknown":
        return (f"pod {pod.name}, itself deleted but still there because its node {node.name if node else ''} "
                f"stopped reporting ({ready.get('message') or ready.get('reason')}): the kubelet that would end it "
                "is unreachable")
    return f"pod {pod.name}, itself being deleted"


def _unblock(ctx: Context, obj: Obj) -> str:
    """The first step to free one object: the pod its volume protection waits for, or its finalizers' owner."""
    ns = f"-n {obj.namespace} " if obj.namespace else ""
    if "kubernetes.io/pvc-protection" in [str(f) for f in as_list(obj.meta.get("finalizers"))]:
        for pod in claim_users(ctx.snap, obj):
            if pod.meta.get("deletionTimestamp") and "node" in _pod_state(ctx, pod):
                return (f"Pod {pod.name} waits for its node, which stopped reporting: bring the node back, or once it "
                        "is certainly down (its container may still write to the volume), delete the Node object or "
                        f"force-delete the pod (`kubectl {ns}delete pod {pod.name} --grace-period=0 --force`); then "
                        f"the claim's protection clears and the deletion goes on.")
            return f"Stop pod {pod.name}, which still uses {obj.ref}: its protection clears when no pod does."
    return (f"Find why {obj.ref} keeps its finalizers (`kubectl {ns}describe {obj.kind.lower()} {obj.name}`): bring "
            "back or fix the controller that owns them; only if that controller is gone for good, remove them from "
            "this object, knowing what they protect.")
