"""Admission webhooks as the snapshot shows them: configurations, their backing Service, its
ready endpoints and serving pods, and the failures to call them seen in Events and Workflows."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from argo_doctor.facts.inventory import Presence, lookup
from argo_doctor.model import Evidence
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import parse_time

CONFIG_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
ADMISSION_GROUP = "admissionregistration.k8s.io"
WEBHOOK_NEEDS = frozenset(f"{ADMISSION_GROUP}/{kind}" for kind in CONFIG_KINDS)
"""The webhook configuration kinds, as a rule declares them in its `needs`."""
_FAILED_CALL = re.compile(r'failed calling webhook \\?"(?P<webhook>[^"\\]+)')


@dataclass(frozen=True)
class Webhook:
    """One webhook of a Mutating/ValidatingWebhookConfiguration."""

    config: Obj
    index: int
    spec: dict[str, Any]

    @property
    def name(self) -> str:
        """`webhooks[].name`."""
        return str(self.spec.get("name") or "")

    @property
    def path(self) -> str:
        """The field path of this webhook in its configuration."""
        return f".webhooks[{self.index}]"

    @property
    def failure_policy(self) -> str:
        """`failurePolicy`, with the API default (Fail in v1, Ignore in v1beta1)."""
        default = "Ignore" if self.config.api_version.endswith("v1beta1") else "Fail"
        return str(self.spec.get("failurePolicy") or default)

    @property
    def timeout(self) -> int:
        """`timeoutSeconds`, with the API default (10 s in v1, 30 s in v1beta1)."""
        return as_int(self.spec.get("timeoutSeconds"), 30 if self.config.api_version.endswith("v1beta1") else 10)

    @property
    def service(self) -> dict[str, Any]:
        """`clientConfig.service`, empty when the webhook is called by URL."""
        return mapping(mapping(self.spec.get("clientConfig")).get("service"))

    @property
    def ca_bundle(self) -> str:
        """`clientConfig.caBundle` (base64), empty when absent."""
        return str(mapping(self.spec.get("clientConfig")).get("caBundle") or "")

    def intercepts(self, group: str, resource: str, operations: tuple[str, ...] = ("CREATE", "UPDATE")) -> bool:
        """Whether a rule of this webhook intercepts one of `operations` on `group`/`resource` (plural)."""
        for rule in as_list(self.spec.get("rules")):
            rule = mapping(rule)
            groups = [str(g) for g in as_list(rule.get("apiGroups"))]
            resources = [str(r) for r in as_list(rule.get("resources"))]
            verbs = [str(o) for o in as_list(rule.get("operations"))]
            if ((group in groups or "*" in groups) and (resource in resources or "*" in resources or "*/*" in resources)
                    and any(o in verbs or "*" in verbs for o in operations)):
                return True
        return False

    def matches_pods(self) -> bool:
        """Whether a rule intercepts pod creation."""
        for rule in as_list(self.spec.get("rules")):
            rule = mapping(rule)
            groups = [str(g) for g in as_list(rule.get("apiGroups"))]
            resources = [str(r) for r in as_list(rule.get("resources"))]
            operations = [str(o) for o in as_list(rule.get("operations"))]
            if (("" in groups or "*" in groups) and any(r in ("pods", "*", "*/*") for r in resources)
                    and any(o in ("CREATE", "*") for o in operations)):
                return True
        return False

    def selector_scope(self) -> str:
        """A plain description of which objects the selectors let through."""
        namespace = mapping(self.spec.get("namespaceSelector"))
        obj = mapping(self.spec.get("objectSelector"))
        if not namespace and not obj:
            return "every namespace and every object (no namespaceSelector, no objectSelector)"
        parts = []
        if namespace:
            parts.append(f"namespaces matching {_selector_text(namespace)}")
        if obj:
            parts.append(f"objects matching {_selector_text(obj)}")
        return " and ".join(parts)

    def is_broad(self) -> bool:
        """No objectSelector, and a namespaceSelector that only excludes (or is empty)."""
        if mapping(self.spec.get("objectSelector")):
            return False
        namespace = mapping(self.spec.get("namespaceSelector"))
        if mapping(namespace.get("matchLabels")):
            return False
        operators = {str(mapping(e).get("operator")) for e in as_list(namespace.get("matchExpressions"))}
        return operators <= {"NotIn", "DoesNotExist"}


def _selector_text(selector: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in mapping(selector.get("matchLabels")).items()]
    for expr in as_list(selector.get("matchExpressions")):
        expr = mapping(expr)
        values = ",".join(str(v) for v in as_list(expr.get("values")))
        parts.append(f"{expr.get('key')} {expr.get('operator')} ({values})" if values else
                     f"{expr.get('key')} {expr.get('operator')}")
    return "{" + ", ".join(parts) + "}"


def webhooks(snap: Snapshot) -> list[Webhook]:
    """Every webhook of every configuration in the snapshot."""
    found = []
    for kind in CONFIG_KINDS:
        for config in snap.of_kind(kind, ADMISSION_GROUP):
            for index, spec in enumerate(as_list(config.raw.get("webhooks"))):
                if isinstance(spec, dict):
                    found.append(Webhook(config, index, spec))
    return found


def backing_service(snap: Snapshot, hook: Webhook) -> Obj | None:
    """The Service the webhook calls."""
    service = hook.service
    if not service.get("name"):
        return None
    return snap.get("Service", str(service["name"]), str(service.get("namespace") or ""), "")


def service_presence(snap: Snapshot, hook: Webhook) -> Presence:
    """Whether the Service the webhook calls is present, missing from the cluster, or unknown to the input."""
    service = hook.service
    return lookup(snap, "Service", str(service.get("name") or ""), str(service.get("namespace") or ""))[0]


def ready_endpoints(snap: Snapshot, service: Obj) -> tuple[int, int] | None:
    """(ready, not ready) endpoint addresses of a Service, from EndpointSlices or Endpoints."""
    slices = [s for s in snap.of_kind("EndpointSlice", "discovery.k8s.io", service.namespace)
              if s.labels.get("kubernetes.io/service-name") == service.name]
    if slices:
        ready = not_ready = 0
        for endpoint_slice in slices:
            for endpoint in as_list(endpoint_slice.raw.get("endpoints")):
                condition = mapping(mapping(endpoint).get("conditions")).get("ready")
                if condition is False:
                    not_ready += 1
                else:
                    ready += 1
        return ready, not_ready
    endpoints = snap.get("Endpoints", service.name, service.namespace, "")
    if endpoints is None:
        return None
    ready = not_ready = 0
    for subset in as_list(endpoints.raw.get("subsets")):
        ready += len(as_list(mapping(subset).get("addresses")))
        not_ready += len(as_list(mapping(subset).get("notReadyAddresses")))
    return ready, not_ready


def serving_pods(snap: Snapshot, service: Obj) -> list[Obj]:
    """Pods the Service selects."""
    selector = {str(k): str(v) for k, v in mapping(service.spec.get("selector")).items()}
    if not selector:
        return []
    return [p for p in snap.of_kind("Pod", "", service.namespace)
            if all(p.labels.get(k) == v for k, v in selector.items())]


@dataclass(frozen=True)
class CallFailure:
    """A failure to call a webhook, seen in an Event or a Workflow node."""

    webhook: str
    time: datetime | None
    evidence: Evidence
    source: str
    """`event` or `workflow`."""
    count: int = 1


def call_failures(snap: Snapshot) -> list[CallFailure]:
    """`failed calling webhook "…"` in Events and Workflow node messages, oldest first."""
    found = []
    for event in snap.events:
        match = _FAILED_CALL.search(event.message)
        if match:
            about = f" {event.involved}" if event.involved else ""
            found.append(CallFailure(match.group("webhook"), event.time, Evidence(
                "event", event.obj.location, f"{event.type} {event.reason}{about}: {event.message}", event.time),
                "event", event.count))
    for workflow in snap.of_kind("Workflow", "argoproj.io"):
        for node_id, node in mapping(workflow.status.get("nodes")).items():
            node = mapping(node)
            match = _FAILED_CALL.search(str(node.get("message") or ""))
            if match:
                when = parse_time(node.get("finishedAt")) or parse_time(node.get("startedAt"))
                found.append(CallFailure(match.group("webhook"), when, Evidence(
                    "object", f"{workflow.location} {workflow.ref} .status.nodes.{node_id}",
                    f"Workflow node {node.get('displayName') or node.get('name')} {node.get('phase')}: "
                    f"{node.get('message')}", when), "workflow"))
    return sorted(found, key=lambda f: (f.time is None, f.time or datetime.min))


def failed_webhook_name(text: str) -> str | None:
    """The webhook named in a `failed calling webhook "…"` message."""
    match = _FAILED_CALL.search(text)
    return match.group("webhook") if match else None


KYVERNO_PATCHES = "policies.kyverno.io/last-applied-patches"
"""Where Kyverno records the mutations it made (`POLICY.RULE.kyverno.io: added /path`), kyverno/pkg/engine."""
GATEKEEPER_MUTATIONS = "gatekeeper.sh/mutations"
"""Where Gatekeeper records the mutators it applied (`Assign//name:generation`), with mutation annotations on."""


def plural(kind: str) -> str:
    """The resource name of a kind, as the API server makes it for most kinds (`Ingress` → `ingresses`)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def mutations_of(snap: Snapshot, obj: Obj) -> tuple[list[str], list[Webhook]]:
    """What changed `obj` at admission, by what it left behind (a Kyverno patch record, Gatekeeper's mutators), and
    the mutating webhooks whose rules intercept its kind (which may or may not have changed it)."""
    said = []
    for line in str(obj.annotations.get(KYVERNO_PATCHES) or "").splitlines():
        if line.strip():
            said.append(f"Kyverno ({' '.join(line.split())})")
    mutators = str(obj.annotations.get(GATEKEEPER_MUTATIONS) or "")
    if mutators:
        said.append(f"Gatekeeper mutators {mutators}")
    resource = plural(obj.kind)
    hooks = [h for h in webhooks(snap) if h.config.kind == "MutatingWebhookConfiguration"
             and h.intercepts(obj.group, resource)]
    return said, hooks
