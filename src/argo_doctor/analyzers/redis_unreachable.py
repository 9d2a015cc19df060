"""redis-unreachable: an Argo CD component that cannot use its Redis cache.

Each component that uses Redis (its address from --redis/REDIS_SERVER, facts/installation.py) is checked against the
NetworkPolicies between its pods and the pods the Redis Service selects (facts/network_policies.py): a policy that
isolates either end without admitting the other on the Redis port is named. The components' log lines for failed
Redis calls (DNS, refused, timeouts, authentication) say what failed, and the Redis Service, its pods and the password
Secret say why.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence
from argo_doctor.facts.installation import InstalledComponent, installation
from argo_doctor.facts.network_policies import Pod, connection
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_list, mapping

MAX_LINES = 3
CLIENTS = ("application-controller", "server", "repo-server")
"""The Argo CD components that use Redis (util/cache/cache.go callers)."""
CAUSES = (
    ("no such host", "the Redis Service name does not resolve (the Service is missing, in another namespace, or DNS "
                     "fails)"),
    ("NOAUTH", "Redis wants a password the component does not send (REDIS_PASSWORD from the argocd-redis Secret)"),
    ("WRONGPASS", "the component sends a password Redis refuses (the argocd-redis Secret changed after Redis "
                  "started, or the two read different Secrets)"),
    ("connection refused", "nothing listens behind the Redis Service (no ready Redis pod, or the wrong port)"),
    ("i/o timeout", "packets to Redis are dropped (a NetworkPolicy, a firewall, or a node's network)"),
    ("connection pool timeout", "Redis answers too slowly for the component's pool (Redis overloaded or throttled)"),
)
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/high_availability/",
        "https://kubernetes.io/docs/concepts/services-networking/network-policies/")


class RedisUnreachable(Analyzer):
    """Argo CD components that cannot reach their Redis cache."""

    id = "redis-unreachable"
    title = "Argo CD component cannot reach Redis"
    signatures = ("argocd.redis-error", "argocd.redis-dns", "argocd.redis-noauth", "argocd.redis-wrongpass")
    needs = Needs(frozenset({"networking.k8s.io/NetworkPolicy", "Service", "Namespace"}))

    def __init__(self) -> None:
        self._lines: dict[tuple[str, str], list[tuple[LogRecord, str]]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep each pod's last failed Redis calls, with what failed."""
        if match is None:
            return
        lines = self._lines[(record.file.namespace, record.file.pod)]
        lines.append((record, match.group("error")))
        del lines[:-MAX_LINES]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        by_component: dict[str, list[tuple[LogRecord, str]]] = defaultdict(list)
        for (namespace, pod), lines in self._lines.items():
            by_component[ctx.snap.component_of_pod(namespace, pod) or ""] += lines
        for comp in installation(ctx.snap):
            address = comp.settings.get("redis")
            if comp.component not in CLIENTS or not address:
                continue
            host, _, port_text = address.rpartition(":")
            port = int(port_text) if port_text.isdigit() else 6379
            service = ctx.snap.get("Service", host.split(".")[0], _service_namespace(host, comp.namespace), "")
            lines = sorted(by_component.get(comp.component, []), key=lambda line: line[0].line)[-MAX_LINES:]
            finding = self._check(ctx, comp, host, port, service, lines)
            if finding is not None:
                yield finding

    def _check(self, ctx: Context, comp: InstalledComponent, host: str, port: int, service: Obj | None,
               lines: list[tuple[LogRecord, str]]) -> Finding | None:
        source = Pod(comp.namespace, _pod_labels(ctx, comp))
        targets = _service_pods(ctx, service) if service is not None else []
        evidence: list[Evidence] = [log_evidence(r) for r, _ in lines]
        parts: list[str] = []
        blocking: tuple[Obj, ...] = ()
        verdict = None
        for target in targets if source.labels else []:  # unknown labels: which policies select it is not known
            verdict = connection(ctx.snap, source, target, _target_port(service, port),
                                 (f"the {comp.component}'s pods", "Redis's pods"))
            if verdict.allowed is not True:
                blocking = verdict.blocking
                break
        if verdict is not None and verdict.allowed is False:
            parts.append(f"NetworkPolicy blocks it: {verdict.why} (the {comp.component}'s pods are labelled "
                         f"{', '.join(f'{k}={v}' for k, v in sorted(source.labels.items())) or 'without labels'}).")
            evidence += [object_evidence(p, ".spec", f"isolates for {' and '.join(verdict.directions)} without "
                                         f"letting {comp.component} reach Redis on {port}") for p in blocking]
        elif verdict is not None and verdict.allowed is None and lines:
            parts.append(f"Whether NetworkPolicies let it through is not certain: {verdict.why}.")
        if lines:
            seen = list(dict.fromkeys(error for _, error in lines))
            causes = [why for key, why in CAUSES if any(key.lower() in e.lower() for e in seen)]
            parts.insert(0, f"The {comp.component}'s log shows its Redis calls to {host}:{port} failing "
                            f"({', '.join(seen)}){': ' + '; '.join(causes) if causes else ''}.")
            if service is None and ctx.snap.of_kind("Service", "", comp.namespace):
                parts.append(f"The input holds no Service {host.split('.')[0]} in {comp.namespace}.")
            elif service is not None and not targets:
                parts.append(f"Service {service.namespace}/{service.name} selects no Redis pod of the input.")
            elif service is not None:
                pods = [p for p in ctx.snap.of_kind("Pod", "", service.namespace) if _selected(service, p)]
                unready = [p for p in pods if not _ready(p)]
                if pods and len(unready) == len(pods):
                    parts.append(f"No Redis pod behind Service {service.name} is Ready ("
                                 + ", ".join(f"{p.name}: {p.status.get('phase') or 'unknown'}" for p in unready[:3])
                                 + ").")
                    evidence += [object_evidence(p, ".status.conditions", "not Ready") for p in unready[:3]]
        if not parts or ((verdict is None or verdict.allowed is not False) and not lines):
            return None
        blocked = verdict is not None and verdict.allowed is False
        fixes = []
        if blocked and verdict is not None and "ingress" in verdict.directions:
            fixes.append(f"Admit the {comp.component} where Redis is isolated: add to the ingress rule for port {port} "
                         f"a `from` entry `podSelector: {{matchLabels: {_name_label(source)}}}`.")
        if blocked and verdict is not None and "egress" in verdict.directions:
            redis = _name_label(targets[0]) if targets else "{app.kubernetes.io/name: argocd-redis}"
            fixes.append(f"Let the {comp.component} send to Redis where it is isolated for egress: add to "
                         f"{', '.join(p.name for p in blocking if 'Egress' in str(p.raw.get('spec')))} an egress rule "
                         f"`to: [{{podSelector: {{matchLabels: {redis}}}}}]` with `ports: [{{protocol: TCP, port: "
                         f"{_target_port(service, port)}}}]`.")
        fix = " ".join(fixes) or ("Check the Redis pods and Service, and that the component and Redis read the same "
                                  "argocd-redis Secret.")
        return Finding(
            rule=self.id,
            severity=Severity.HIGH if lines else Severity.MEDIUM,
            title=f"Argo CD {comp.component} cannot reach Redis"
                  + (f": NetworkPolicy {blocking[0].name} blocks it" if blocked else f" ({lines[-1][1]})"),
            summary=(f"{comp.component} ({comp.namespace}) uses Redis at {host}:{port} for its cache"
                     + ("" if lines else ", and nothing in the input shows it failing yet") + ". " + " ".join(parts)
                     + " Without Redis, every refresh renders manifests again and the UI and API slow down or fail."),
            objects=[*(o.ref for o in (comp.workload, service) if o is not None), *(p.ref for p in blocking)],
            evidence=evidence,
            remediation=Remediation(text=fix, docs=DOCS),
        )


def _service_namespace(host: str, default: str) -> str:
    """The namespace of a Service address `name`, `name.ns` or `name.ns.svc…`."""
    parts = host.split(".")
    return parts[1] if len(parts) > 1 else default


def _service_pods(ctx: Context, service: Obj) -> list[Pod]:
    """The pods (or workload templates) a Service selects, with their container ports by name."""
    selector = {str(k): str(v) for k, v in mapping(mapping(service.raw.get("spec")).get("selector")).items()}
    if not selector:
        return []
    found = []
    for obj in (*ctx.snap.of_kind("Pod", "", service.namespace), *ctx.snap.of_kind("Deployment", "apps",
                                                                                   service.namespace),
                *ctx.snap.of_kind("StatefulSet", "apps", service.namespace)):
        spec = mapping(obj.raw.get("spec"))
        labels = dict(obj.labels) if obj.kind == "Pod" else {
            str(k): str(v) for k, v in mapping(mapping(mapping(spec.get("template")).get("metadata")).get(
                "labels")).items()}
        pod_spec = spec if obj.kind == "Pod" else mapping(mapping(spec.get("template")).get("spec"))
        if all(labels.get(k) == v for k, v in selector.items()):
            ports = {str(p.get("name")): int(p["containerPort"]) for c in as_list(pod_spec.get("containers"))
                     for p in map(mapping, as_list(mapping(c).get("ports")))
                     if p.get("name") and isinstance(p.get("containerPort"), int)}
            found.append(Pod(obj.namespace, labels, ports))
    return found


def _selected(service: Obj, pod: Obj) -> bool:
    selector = mapping(mapping(service.raw.get("spec")).get("selector"))
    return bool(selector) and all(pod.labels.get(str(k)) == str(v) for k, v in selector.items())


def _ready(pod: Obj) -> bool:
    return any(mapping(c).get("type") == "Ready" and mapping(c).get("status") == "True"
               for c in as_list(pod.status.get("conditions")))


def _target_port(service: Obj | None, port: int) -> int:
    """The container port behind a Service port (its targetPort when numeric)."""
    for entry in as_list(mapping(service.raw.get("spec") if service is not None else {}).get("ports")):
        entry = mapping(entry)
        if entry.get("port") == port and isinstance(entry.get("targetPort"), int):
            return int(entry["targetPort"])
    return port


def _pod_labels(ctx: Context, comp: InstalledComponent) -> dict[str, str]:
    """The labels of the component's pods: its workload's template, else a pod of the input; {} when unknown."""
    if comp.workload is not None:
        spec = mapping(comp.workload.raw.get("spec"))
        labels = mapping(mapping(mapping(spec.get("template")).get("metadata")).get("labels"))
        if labels:
            return {str(k): str(v) for k, v in labels.items()}
    found = next((c for c in ctx.snap.components if c.name == comp.component and c.namespace == comp.namespace
                  and c.pods), None)
    return dict(found.pods[0].labels) if found is not None else {}


def _name_label(pod: Pod) -> str:
    key = "app.kubernetes.io/name" if "app.kubernetes.io/name" in pod.labels else next(iter(sorted(pod.labels)), "")
    return f"{{{key}: {pod.labels.get(key, '')}}}" if key else "{}"
