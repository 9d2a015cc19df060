"""Whether Kubernetes NetworkPolicies let one pod open a TCP connection to another, evaluated as the API documents it
(https://kubernetes.io/docs/concepts/services-networking/network-policies/): a pod selected by a policy of its
namespace whose policyTypes hold Ingress (Egress) accepts (opens) only what some rule of such a policy allows; a rule
allows a peer its `from`/`to` selects (no peers: every one) on a port its `ports` lists (none: every port). A peer
known only by an IP block, or a namespace the input does not describe, makes the answer undetermined."""

from __future__ import annotations

from dataclasses import dataclass, field

from argo_doctor.facts.rbac import selector_matches
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import as_list, mapping

NAME_LABEL = "kubernetes.io/metadata.name"
"""The label every namespace carries with its name (Kubernetes 1.21 on)."""


@dataclass(frozen=True)
class Pod:
    """One end of a connection: its namespace and labels (a workload's template labels stand for its pods), and
    its container ports by name."""

    namespace: str
    labels: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """Whether the connection is allowed (None: not determined), the policies that isolate each end without letting
    it through, and why."""

    allowed: bool | None
    blocking: tuple[Obj, ...] = ()
    why: str = ""
    directions: tuple[str, ...] = ()
    """`ingress` (the target refuses it), `egress` (the source may not send it), or both."""


def _types(policy: Obj) -> set[str]:
    spec = mapping(policy.raw.get("spec"))
    declared = {str(t) for t in as_list(spec.get("policyTypes"))}
    if declared:
        return declared
    return {"Ingress", *(("Egress",) if as_list(spec.get("egress")) else ())}  # API defaulting: egress rules given


def _selects(policy: Obj, pod: Pod) -> bool:
    return policy.namespace == pod.namespace and selector_matches(
        mapping(mapping(policy.raw.get("spec")).get("podSelector")), pod.labels)


def _peer(snap: Snapshot, policy: Obj, peer: dict[str, object], other: Pod) -> bool | None:
    """Whether a `from`/`to` peer selects the other end; None when it cannot be told (an IP block, a namespace
    selector on labels the input does not hold)."""
    if "ipBlock" in peer:
        return None
    pods, namespaces = peer.get("podSelector"), peer.get("namespaceSelector")
    if namespaces is None:
        in_namespace = other.namespace == policy.namespace
    else:
        namespace = snap.get("Namespace", other.namespace, "", "")
        labels = dict(namespace.labels) if namespace is not None else {}
        labels.setdefault(NAME_LABEL, other.namespace)
        selector = mapping(namespaces)
        needed = {str(k) for k in mapping(selector.get("matchLabels"))} | {
            str(mapping(e).get("key")) for e in as_list(selector.get("matchExpressions"))}
        if namespace is None and needed - {NAME_LABEL}:
            return None
        in_namespace = selector_matches(selector, labels)
    return in_namespace and (pods is None or selector_matches(mapping(pods), other.labels))


def _port(ports: object, target: Pod, port: int) -> bool:
    listed = as_list(ports)
    if not listed:
        return True
    for entry in listed:
        entry = mapping(entry)
        if str(entry.get("protocol") or "TCP") != "TCP":
            continue
        value = entry.get("port")
        if value is None:
            return True
        number = target.ports.get(value) if isinstance(value, str) else value
        end = entry.get("endPort")
        if isinstance(number, int) and (number == port or (isinstance(end, int) and number <= port <= end)):
            return True
    return False


def _direction(snap: Snapshot, policies: list[Obj], kind: str, selected: Pod, other: Pod, target: Pod,
               port: int, who: str) -> Verdict:
    """The verdict of one end: the policies of `kind` that select `selected`, and whether one lets `other` through."""
    isolating = [p for p in policies if kind.capitalize() in _types(p) and _selects(p, selected)]
    if not isolating:
        return Verdict(True)
    unknown = False
    for policy in isolating:
        for rule in as_list(mapping(policy.raw.get("spec")).get(kind)):
            rule = mapping(rule)
            if not _port(rule.get("ports"), target, port):
                continue
            peers = as_list(rule.get("from" if kind == "ingress" else "to"))
            if not peers:
                return Verdict(True)
            answers = [_peer(snap, policy, mapping(p), other) for p in peers]
            if any(a is True for a in answers):
                return Verdict(True)
            unknown = unknown or any(a is None for a in answers)
    names = ", ".join(p.name for p in isolating)
    one = len(isolating) == 1
    verb, admit = ("isolates", "admits") if one else ("isolate", "admit")
    if unknown:
        return Verdict(None, tuple(isolating), f"{names} {verb} {who} for {kind} and {admit} peers by IP block or by "
                                               "namespace labels the input does not hold", (kind,))
    return Verdict(False, tuple(isolating), f"{names} {verb} {who} for {kind}, and no rule of "
                                           f"{'it' if one else 'them'} lets the connection through on "
                                           f"port {port}", (kind,))


def connection(snap: Snapshot, source: Pod, target: Pod, port: int,
               names: tuple[str, str] = ("the source", "the target")) -> Verdict:
    """Whether `source` may open a TCP connection to `target` on `port`: the egress policies of the source and the
    ingress policies of the target must both let it through (`names` say who they are in the verdict's words)."""
    policies = list(snap.of_kind("NetworkPolicy", "networking.k8s.io"))
    if not policies:
        return Verdict(True)
    ingress = _direction(snap, policies, "ingress", target, source, target, port, names[1])
    egress = _direction(snap, policies, "egress", source, target, target, port, names[0])
    for state in (False, None):
        failing = [v for v in (ingress, egress) if v.allowed is state]
        if failing:
            return Verdict(state, tuple(dict.fromkeys(p for v in failing for p in v.blocking)),
                           "; ".join(v.why for v in failing), tuple(d for v in failing for d in v.directions))
    return Verdict(True)
