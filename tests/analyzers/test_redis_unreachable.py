"""redis-unreachable: NetworkPolicies between the Argo CD components and their Redis, and the components' failed
Redis calls as their logs write them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

RULE = "redis-unreachable"
BUNDLE = EXAMPLES / "incidents" / "redis-networkpolicy"


def _scan(tmp_path: Path, change: Any = None) -> list[dict[str, Any]]:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "argocd" / "argocd.yaml"
    doc = yaml.safe_load(path.read_text())
    if change is not None:
        change(doc["items"], bundle)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return list(scan_json(bundle, "--rule", RULE)["findings"])


def test_an_egress_baseline_without_redis_is_named_for_each_component(tmp_path: Path) -> None:
    findings = _scan(tmp_path)
    assert [(f["severity"], f["title"]) for f in findings] == [
        ("high", "Argo CD application-controller cannot reach Redis: NetworkPolicy platform-egress-baseline blocks it"),
        ("high", "Argo CD repo-server cannot reach Redis: NetworkPolicy platform-egress-baseline blocks it"),
        ("medium", "Argo CD server cannot reach Redis: NetworkPolicy platform-egress-baseline blocks it")]
    controller = findings[0]
    assert "failing (i/o timeout): packets to Redis are dropped" in controller["summary"]
    assert "platform-egress-baseline isolates the application-controller's pods for egress" in controller["summary"]
    assert "egress rule `to: [{podSelector: {matchLabels: {app.kubernetes.io/name: argocd-redis}}}]` with `ports: " \
           "[{protocol: TCP, port: 6379}]`" in controller["remediation"]["text"]
    assert "nothing in the input shows it failing yet" in findings[2]["summary"]


def test_argo_cds_own_policies_are_silent_and_a_missing_peer_in_them_is_named(tmp_path: Path) -> None:
    def fixed(items: list[dict[str, Any]], bundle: Path) -> None:
        items[:] = [i for i in items if i["metadata"]["name"] != "platform-egress-baseline"]
        shutil.rmtree(bundle / "logs")
    assert _scan(tmp_path / "a", fixed) == []

    def no_server(items: list[dict[str, Any]], bundle: Path) -> None:
        fixed(items, bundle)
        policy = next(i for i in items if i["metadata"]["name"] == "argocd-redis-network-policy")
        policy["spec"]["ingress"][0]["from"] = policy["spec"]["ingress"][0]["from"][1:]
    [finding] = _scan(tmp_path / "b", no_server)
    assert finding["title"] == "Argo CD server cannot reach Redis: NetworkPolicy argocd-redis-network-policy blocks it"
    assert "`from` entry `podSelector: {matchLabels: {app.kubernetes.io/name: argocd-server}}`" in \
           finding["remediation"]["text"]


def test_an_authentication_failure_is_explained_without_a_policy(tmp_path: Path) -> None:
    def noauth(items: list[dict[str, Any]], bundle: Path) -> None:
        items[:] = [i for i in items if i["metadata"]["name"] != "platform-egress-baseline"]
        log = bundle / "logs" / "argocd" / "argocd-repo-server-6f7d8c9b5-wx4rz" / "argocd-repo-server.log"
        log.write_text('2026-11-30T08:44:03.000000001Z time="2026-11-30T08:44:03Z" level=error msg="finished unary '
                       'call with code Unknown" error="NOAUTH Authentication required." grpc.code=Unknown '
                       'grpc.method=GenerateManifest\n')
        (bundle / "logs" / "argocd" / "argocd-application-controller-0").rename(bundle / "controller-away")
    [finding] = _scan(tmp_path, noauth)
    assert finding["title"] == "Argo CD repo-server cannot reach Redis (NOAUTH Authentication required)"
    assert "Redis wants a password the component does not send" in finding["summary"]


def test_refused_calls_with_no_ready_redis_pod_say_so(tmp_path: Path) -> None:
    def down(items: list[dict[str, Any]], bundle: Path) -> None:
        items[:] = [i for i in items if i["metadata"]["name"] != "platform-egress-baseline"]
        redis = next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"].startswith("argocd-redis"))
        redis["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        redis["status"]["phase"] = "Pending"
        log = bundle / "logs" / "argocd" / "argocd-repo-server-6f7d8c9b5-wx4rz" / "argocd-repo-server.log"
        log.write_text(log.read_text().replace("i/o timeout", "connect: connection refused"))
        shutil.rmtree(bundle / "logs" / "argocd" / "argocd-application-controller-0")
    [finding] = _scan(tmp_path, down)
    assert finding["title"] == "Argo CD repo-server cannot reach Redis (connection refused)"
    assert "nothing listens behind the Redis Service" in finding["summary"]
    assert "No Redis pod behind Service argocd-redis is Ready (argocd-redis-5b6c7d8f9-k2p8v: Pending)" in \
           finding["summary"]
