"""progressing-forever: a resource of an Application whose health stays Progressing because the piece that would
finish it is missing.

Argo CD's health checks (gitops-engine pkg/health) keep an Ingress and a LoadBalancer Service Progressing until a
controller writes an address in `status.loadBalancer.ingress`, and a PersistentVolumeClaim until it is Bound. When
no controller will ever do that, the Application stays Progressing for ever. The rule names the missing piece from
the input: the IngressClass the Ingress asks for, a default class, the controller of that class; the load-balancer
controller's refusal (Events); the StorageClass, or a WaitForFirstConsumer claim that no pod uses. It reports only
resources older than `min-minutes`, and says when the input cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import age, claim_users, event_evidence, object_evidence
from argo_doctor.facts.inventory import holds
from argo_doctor.health import HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping

DEFAULT_CLASS = ("ingressclass.kubernetes.io/is-default-class", "storageclass.kubernetes.io/is-default-class")
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
INGRESS_CONTROLLERS = {
    "k8s.io/ingress-nginx": ("ingress-nginx/controller", "ingress-nginx-controller"),
    "traefik.io/ingress-controller": ("traefik",),
    "ingress.k8s.aws/alb": ("aws-load-balancer-controller",),
    "haproxy.org/ingress-controller/haproxy": ("haproxy-ingress",),
}
"""IngressClass `spec.controller` values and what the controller's image or workload name holds (the projects'
documented IngressClass controllers)."""
K8S_GROUPS = (".k8s.io", "argoproj.io")
"""Groups whose resources Kubernetes or Argo serve (their health has its own rules)."""
GENERIC_WORDS = frozenset({"apps", "core", "example", "github", "cloud", "internal", "io"})
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/health/",
        "https://kubernetes.io/docs/concepts/services-networking/ingress/#ingress-class")


class ProgressingForever(Analyzer):
    """Managed resources that stay Progressing for lack of a controller, a class or a consumer."""

    id = "progressing-forever"
    title = "Resource stays Progressing"
    options: ClassVar[dict[str, str]] = {
        "min-minutes": "Minutes a resource exists before it is reported (default 15)",
    }
    needs = Needs(frozenset({"argoproj.io/Application", "networking.k8s.io/Ingress", "networking.k8s.io/IngressClass",
                             "Service", "PersistentVolumeClaim", "storage.k8s.io/StorageClass", "Pod"}),
                  events=True, app_resources=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        least = ctx.option(self.id, "min-minutes", 15)
        for app in ctx.snap.applications():
            if app.meta.get("deletionTimestamp"):
                continue
            for _, obj in ctx.snap.app_resources(app):
                explain = None if obj is None else _explainer(obj)
                if obj is None or explain is None or obj.created is None or (
                        now - obj.created).total_seconds() / 60 < least:
                    continue
                health = ctx.health.assess(obj.raw)
                if health is None or health.status != HealthStatus.PROGRESSING:
                    continue
                why = explain(ctx, obj)
                if why is not None:
                    yield _finding(ctx, app, obj, why, now)


Why = tuple[str, str, bool]
"""What is missing, the fix, and whether the input shows it for certain (False: the likely cause)."""


def _explainer(obj: Obj) -> Callable[[Context, Obj], Why | None] | None:
    """What names the missing piece for the object's kind, None for a kind it never can: asked before its health,
    whose assessment of every managed resource would be most of the rule's time."""
    if obj.kind == "Ingress" and obj.group == "networking.k8s.io":
        return _ingress
    if obj.kind == "Service" and not obj.group:
        return _load_balancer
    if obj.kind == "PersistentVolumeClaim" and not obj.group:
        return _claim
    if "." in obj.group and not obj.group.endswith(K8S_GROUPS):
        return _custom
    return None


def _load_balancer(ctx: Context, obj: Obj) -> Why | None:
    """A LoadBalancer Service without an address."""
    if mapping(obj.raw.get("spec")).get("type") != "LoadBalancer" or _addresses(obj):
        return None
    failed = [e for e in ctx.snap.warnings_about({obj.ref}) if "LoadBalancer" in e.reason]
    if failed:
        return (f"the load-balancer controller refuses it: {' '.join(failed[-1].message.split())}",
                "Fix what the Event names (annotations, subnets, quotas), or make the Service a ClusterIP behind "
                "an Ingress.", True)
    return ("no load-balancer controller has given it an address (no Event from one either): on a cluster "
            "without a cloud provider, a controller such as MetalLB must be installed",
            "Install or fix the load-balancer controller, or change the Service's type.", False)


def _custom(ctx: Context, obj: Obj) -> Why | None:
    """A custom resource without any status: its controller never looked at it. Only said when no workload of the
    input is named after the group's project (then at low severity: a controller may run elsewhere)."""
    if obj.status:
        return None
    words = {w for w in obj.group.split(".")[:-1] if len(w) > 3 and w not in GENERIC_WORDS}
    workloads = [w for kind in ("Deployment", "StatefulSet", "DaemonSet")
                 for w in ctx.snap.of_kind(kind, "apps")]
    if not workloads or any(word in w.name or any(word in str(mapping(c).get("image") or "") for c in as_list(
            mapping(mapping(mapping(w.raw.get("spec")).get("template")).get("spec")).get("containers")))
            for w in workloads for word in words):
        return None
    return (f"it has no status at all: no controller of {obj.group} has looked at it, and no workload of the input "
            f"is named after {', '.join(sorted(words)) or obj.group}",
            f"Install (or start) the operator that serves {obj.group}, or remove the resource from Git if it is not "
            "meant to run here.", False)


def _addresses(obj: Obj) -> list[object]:
    return as_list(mapping(obj.status.get("loadBalancer")).get("ingress"))


def _ingress(ctx: Context, ingress: Obj) -> Why | None:
    """An Ingress without an address: the class it asks for, or that class's controller, is missing."""
    if _addresses(ingress):
        return None
    spec = mapping(ingress.raw.get("spec"))
    wanted = str(spec.get("ingressClassName") or ingress.annotations.get(INGRESS_CLASS_ANNOTATION) or "")
    if not holds(ctx.snap, "IngressClass", "", "networking.k8s.io"):
        return None  # the input cannot tell which classes and controllers the cluster has
    classes = ctx.snap.of_kind("IngressClass", "networking.k8s.io")
    names = ", ".join(sorted(c.name for c in classes)) or "none"
    if not wanted:
        default = [c for c in classes if c.annotations.get(DEFAULT_CLASS[0]) == "true"]
        if default:
            return None
        return (f"it names no ingress class and no IngressClass is the default (classes: {names}): no controller "
                "picks it up", "Set spec.ingressClassName to the class of the cluster's ingress controller in Git, or "
                f"mark that class as the default ({DEFAULT_CLASS[0]}: \"true\").", True)
    chosen = next((c for c in classes if c.name == wanted), None)
    if chosen is None:
        return (f"it asks for ingress class {wanted!r}, which the cluster does not have (classes: {names})",
                "Set spec.ingressClassName to one of the cluster's classes in Git, or install the controller of "
                f"{wanted!r}.", True)
    controller = str(mapping(chosen.raw.get("spec")).get("controller") or "")
    marks = INGRESS_CONTROLLERS.get(controller)
    if marks is None:
        return None
    running = [p for p in ctx.snap.of_kind("Pod") if p.status.get("phase") == "Running" and any(
        any(m in str(mapping(c).get("image") or "") or m in p.name for m in marks)
        for c in as_list(mapping(p.raw.get("spec")).get("containers")))]
    if running or not ctx.snap.of_kind("Pod"):  # no pod at all in the input: it cannot tell
        return None
    return (f"its class {wanted!r} is served by {controller}, and no pod of that controller runs in the input",
            f"Install or start the {controller} controller, or choose another class in Git.", False)


def _claim(ctx: Context, claim: Obj) -> Why | None:
    """A claim still Pending: its StorageClass, or a consumer that never came."""
    if claim.status.get("phase") != "Pending":
        return None
    waiting = [e for e in ctx.snap.events_about(claim.kind, claim.name) if e.reason == "WaitForFirstConsumer"
               and e.involved is not None and e.involved.namespace == claim.namespace]
    failed = [e for e in ctx.snap.warnings_about({claim.ref}) if e.reason == "ProvisioningFailed"]
    if failed:
        return (f"provisioning fails: {' '.join(failed[-1].message.split())}",
                "Fix what the provisioner says (the StorageClass's parameters, quotas, the CSI driver).", True)
    users = claim_users(ctx.snap, claim)
    if waiting and not users:
        return ("its StorageClass binds on first use (WaitForFirstConsumer) and no pod uses the claim, so it stays "
                "Pending, and Argo CD counts a Pending claim as Progressing",
                "Deploy the pod that uses the claim in the same Application (or remove the unused claim); to keep "
                "an unused claim, give PersistentVolumeClaim a health customization in argocd-cm.", True)
    wanted = mapping(claim.raw.get("spec")).get("storageClassName")
    if holds(ctx.snap, "StorageClass", "", "storage.k8s.io"):
        classes = ctx.snap.of_kind("StorageClass", "storage.k8s.io")
        names = ", ".join(sorted(c.name for c in classes)) or "none"
        if wanted and not any(c.name == wanted for c in classes):
            return (f"it asks for StorageClass {wanted!r}, which the cluster does not have (classes: {names})",
                    "Set storageClassName to one of the cluster's classes in Git.", True)
        if wanted is None and not any(c.annotations.get(DEFAULT_CLASS[1]) == "true" for c in classes):
            return (f"it names no StorageClass and none is the default (classes: {names})",
                    "Set storageClassName in Git, or mark a class as the default.", True)
    return None


def _finding(ctx: Context, app: Obj, obj: Obj, why: Why, now: datetime) -> Finding:
    missing, fix, certain = why
    created = obj.created
    since = "" if created is None else f" for {age((now - created).total_seconds() / 60)}"
    evidence: list[Evidence] = [object_evidence(obj, ".status", f"Progressing{since}: {missing}", created)]
    evidence.extend(event_evidence(e) for e in ctx.snap.warnings_about({obj.ref})[-3:])
    summary = (f"{obj.ref}, managed by Application {app.namespace}/{app.name}, has been Progressing{since}: {missing}. "
               "Argo CD shows the Application Progressing until that changes"
               + ("." if certain else "; the input suggests this cause but cannot prove it."))
    return Finding(
        rule="progressing-forever",
        severity=Severity.MEDIUM if certain else Severity.LOW,
        title=f"{obj.kind} {obj.namespace}/{obj.name} of {app.name} stays Progressing: {_headline(missing)}",
        summary=summary,
        objects=[app.ref, obj.ref],
        evidence=evidence,
        remediation=Remediation(text=fix, command=f"kubectl -n {obj.namespace} describe {obj.kind.lower()} "
                                f"{obj.name}", docs=DOCS),
    )


def _headline(missing: str) -> str:
    """The first clause of what is missing, for a title."""
    cut = min((i for i in (missing.find(" ("), missing.find(":"), missing.find(", ")) if i > 0), default=len(missing))
    return missing[:cut]
