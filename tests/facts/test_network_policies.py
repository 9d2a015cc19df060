"""NetworkPolicies evaluated as Kubernetes documents them, on policies written as Argo CD ships them
(manifests/base/redis/argocd-redis-network-policy.yaml) and as platform teams add them."""

from __future__ import annotations

from typing import Any

from argo_doctor.facts.network_policies import Pod, connection
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject

SERVER = Pod("argocd", {"app.kubernetes.io/name": "argocd-server"})
DEX = Pod("argocd", {"app.kubernetes.io/name": "argocd-dex-server"})
REDIS = Pod("argocd", {"app.kubernetes.io/name": "argocd-redis"}, {"tcp-redis": 6379})
REDIS_POLICY = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "argocd-redis"}}, "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "argocd-server"}}}],
                             "ports": [{"protocol": "TCP", "port": 6379}]}]}


def _snap(*specs: dict[str, Any], namespaces: dict[str, dict[str, str]] | None = None) -> Snapshot:
    snap = Snapshot("test")
    for index, spec in enumerate(specs):
        snap.add(RawObject({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                            "metadata": {"name": f"np-{index}", "namespace": "argocd"}, "spec": spec}, f"np:{index}"))
    for name, labels in (namespaces or {}).items():
        snap.add(RawObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
                           f"ns:{name}"))
    return snap


def test_no_policy_or_a_policy_selecting_neither_end_allows() -> None:
    assert connection(_snap(), SERVER, REDIS, 6379).allowed is True
    other = {"podSelector": {"matchLabels": {"app": "else"}}, "policyTypes": ["Ingress", "Egress"]}
    assert connection(_snap(other), SERVER, REDIS, 6379).allowed is True


def test_argo_cds_own_redis_policy_admits_its_clients_only_on_the_redis_port() -> None:
    snap = _snap(REDIS_POLICY)
    assert connection(snap, SERVER, REDIS, 6379).allowed is True
    refused = connection(snap, DEX, REDIS, 6379)
    assert refused.allowed is False and refused.directions == ("ingress",) and refused.blocking[0].name == "np-0"
    assert connection(snap, SERVER, REDIS, 6380).allowed is False


def test_named_ports_and_port_ranges() -> None:
    named = {**REDIS_POLICY, "ingress": [{"ports": [{"port": "tcp-redis"}]}]}
    assert connection(_snap(named), DEX, REDIS, 6379).allowed is True
    ranged = {**REDIS_POLICY, "ingress": [{"ports": [{"port": 6000, "endPort": 7000}]}]}
    assert connection(_snap(ranged), DEX, REDIS, 6379).allowed is True


def test_a_default_deny_egress_blocks_the_client_and_says_so() -> None:
    deny = {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}
    verdict = connection(_snap(REDIS_POLICY, deny), SERVER, REDIS, 6379)
    assert verdict.allowed is False and verdict.directions == ("egress",)
    allowed = {**deny, "egress": [{"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "argocd-redis"}}}],
                                   "ports": [{"port": 6379}]}]}
    assert connection(_snap(REDIS_POLICY, allowed), SERVER, REDIS, 6379).allowed is True


def test_namespace_selectors_use_the_name_label_or_say_they_cannot_tell() -> None:
    elsewhere = Pod("monitoring", {"app.kubernetes.io/name": "argocd-server"})
    by_name = {**REDIS_POLICY, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]}]}
    assert connection(_snap(by_name), elsewhere, REDIS, 6379).allowed is True
    by_team = {**REDIS_POLICY, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "obs"}}}]}]}
    assert connection(_snap(by_team), elsewhere, REDIS, 6379).allowed is None
    assert connection(_snap(by_team, namespaces={"monitoring": {"team": "obs"}}), elsewhere, REDIS, 6379).allowed
    assert connection(_snap(by_team, namespaces={"monitoring": {"team": "apps"}}), elsewhere, REDIS,
                      6379).allowed is False


def test_an_ip_block_cannot_be_told() -> None:
    ips = {**REDIS_POLICY, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}
    assert connection(_snap(ips), DEX, REDIS, 6379).allowed is None


def test_an_empty_egress_list_without_policy_types_isolates_ingress_only() -> None:
    admit_all = {"podSelector": {}, "ingress": [{}], "egress": []}
    assert connection(_snap(admit_all), DEX, REDIS, 6379).allowed is True
