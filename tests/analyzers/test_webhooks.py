"""webhook-blast-radius and webhook-ca-mismatch on objects as kubectl prints them."""

from __future__ import annotations

import base64
import json
from typing import Any

from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES
from tests.report.contract import validate

OLD_CA = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIQOld\n-----END CERTIFICATE-----\n"
NEW_CA = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIQNew\n-----END CERTIFICATE-----\n"
FAILED = ('Error creating: Internal error occurred: failed calling webhook "validate.policy.example.com": failed to '
          'call webhook: Post "https://policy-webhook.policy.svc:443/validate?timeout=10s": tls: failed to verify '
          "certificate: x509: certificate signed by unknown authority")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config(kind: str, name: str, hook: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, "uid": f"uid-{name}"}, "webhooks": [hook]}


def policy_hook(ca: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "validate.policy.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"caBundle": b64(ca), "service": {"name": "policy-webhook", "namespace": "policy",
                                                          "path": "/validate", "port": 443}},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["pods"], "scope": "*"}],
        "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                    "values": ["kube-system"]}]},
        **extra,
    }


def serving(sub_path: bool, ready: bool = True) -> list[dict[str, Any]]:
    mounts = [{"name": "certs", "mountPath": "/certs/tls.crt", "subPath": "tls.crt"}] if sub_path else [
        {"name": "certs", "mountPath": "/certs", "readOnly": True}]
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "policy-webhook", "namespace": "policy"},
         "spec": {"selector": {"app": "policy-webhook"}, "ports": [{"port": 443, "targetPort": 8443}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "policy-webhook-x7k2f", "namespace": "policy",
                      "labels": {"kubernetes.io/service-name": "policy-webhook"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.3.7"], "conditions": {"ready": ready}}]},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "policy-webhook-6d5f7-abcde", "namespace": "policy", "labels": {"app": "policy-webhook"}},
         "spec": {"nodeName": "node-a", "containers": [{"name": "webhook", "image": "policy:1.2",
                                                        "volumeMounts": mounts}],
                  "volumes": [{"name": "certs", "secret": {"secretName": "policy-webhook-tls"}}]},
         "status": {"phase": "Running"}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
         "metadata": {"name": "policy-webhook-tls", "namespace": "policy"},
         "data": {"ca.crt": b64(NEW_CA), "tls.crt": b64("cert"), "tls.key": b64("key")}},
    ]


def failure_event() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web-5f7.18ea", "namespace": "shop", "creationTimestamp": "2026-11-22T15:03:00Z"},
            "involvedObject": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5f7", "namespace": "shop"},
            "reason": "FailedCreate", "type": "Warning", "message": FAILED, "count": 4,
            "firstTimestamp": "2026-11-22T15:03:00Z", "lastTimestamp": "2026-11-22T15:04:10Z",
            "source": {"component": "replicaset-controller"}}


def scan(objects: list[dict[str, Any]]) -> list[Finding]:
    snap = Snapshot("test", {"collectedAt": "2026-11-22T15:30:00Z"})
    for index, obj in enumerate(objects):
        snap.add(RawObject(obj, f"objects/all.yaml:{index * 30 + 1}"))
    analyzers = [a for a in select_analyzers() if a.id.startswith("webhook-")]
    result = run_scan(snap, analyzers)
    assert not result.crashed
    return result.findings


def test_mismatched_ca_with_subpath_and_observed_failures() -> None:
    findings = scan([config("ValidatingWebhookConfiguration", "policy-webhook", policy_hook(OLD_CA)),
                     *serving(sub_path=True), failure_event()])
    (mismatch,) = [f for f in findings if f.rule == "webhook-ca-mismatch"]
    assert mismatch.severity.label == "critical" and "does not match" in mismatch.title
    assert "subPath" in mismatch.summary and "policy-webhook-tls" in mismatch.summary
    assert OLD_CA not in repr(mismatch) and NEW_CA not in repr(mismatch) and b64(NEW_CA) not in repr(mismatch)
    assert any(e.kind == "event" and "x509" in e.excerpt for e in mismatch.evidence)
    (blast,) = [f for f in findings if f.rule == "webhook-blast-radius"]
    assert blast.severity.label == "critical" and "4 calls failed" in blast.title
    assert "NotIn (kube-system)" in blast.summary and blast.remediation.patch


def test_matching_ca_whole_volume_is_quiet_but_a_broad_fail_webhook_is_a_latent_risk() -> None:
    findings = scan([config("ValidatingWebhookConfiguration", "policy-webhook", policy_hook(NEW_CA)),
                     *serving(sub_path=False)])
    assert [f.rule for f in findings] == ["webhook-blast-radius"]
    assert findings[0].severity.label == "medium"


def test_narrow_or_ignore_webhooks_are_fine_unless_unreachable() -> None:
    narrow = policy_hook(NEW_CA, objectSelector={"matchLabels": {"policy.example.com/enforce": "true"}})
    assert scan([config("ValidatingWebhookConfiguration", "policy-webhook", narrow), *serving(False)]) == []
    ignore = policy_hook(NEW_CA, failurePolicy="Ignore")
    assert scan([config("MutatingWebhookConfiguration", "injector", ignore), *serving(False, ready=False)]) == []
    down = scan([config("ValidatingWebhookConfiguration", "policy-webhook", narrow), *serving(False, ready=False)])
    assert [f.rule for f in down] == ["webhook-blast-radius"] and "no ready endpoint" in down[0].title


def _other_service() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "policy-metrics", "namespace": "policy"},
            "spec": {"selector": {"app": "policy-webhook"}, "ports": [{"port": 8080, "targetPort": 8080}]}}


def test_a_service_missing_from_a_collected_namespace_is_unreachable() -> None:
    narrow = policy_hook(NEW_CA, objectSelector={"matchLabels": {"policy.example.com/enforce": "true"}})
    (blast,) = scan([config("ValidatingWebhookConfiguration", "policy-webhook", narrow), _other_service()])
    assert blast.severity.label == "high" and "no ready endpoint" in blast.title
    assert "does not exist: the input holds the Services of namespace policy and it is not among them" in blast.summary
    assert "unknown" not in blast.summary


def test_a_service_of_a_namespace_the_input_lacks_is_unknown_not_missing() -> None:
    narrow = policy_hook(NEW_CA, objectSelector={"matchLabels": {"policy.example.com/enforce": "true"}})
    (blast,) = scan([config("ValidatingWebhookConfiguration", "policy-webhook", narrow)])
    assert blast.severity.label == "low"
    assert blast.title.endswith("; its Service is not in the input") and "no ready endpoint" not in blast.title
    assert ("Service policy/policy-webhook, which is not in the input: the input holds no Service in namespace "
            "policy (that kind was not collected there), so whether it exists is unknown") in blast.summary
    assert "does not exist" not in blast.summary


def test_an_unknown_service_does_not_lower_a_broad_webhook() -> None:
    (blast,) = scan([config("ValidatingWebhookConfiguration", "policy-webhook", policy_hook(NEW_CA))])
    assert blast.severity.label == "medium" and "cluster-wide" in blast.title
    assert "whether it exists is unknown" in blast.summary


def test_the_ca_mismatch_bundle() -> None:
    result = CliRunner().invoke(main, ["scan", str(BUNDLES / "webhook-ca-mismatch"), "-o", "json",
                                       "--fail-on", "never"])
    doc = json.loads(result.stdout)
    validate(doc)
    assert doc["errors"] == []
    (mismatch,) = [f for f in doc["findings"] if f["rule"] == "webhook-ca-mismatch"]
    assert mismatch["severity"] == "critical" and "subPath" in mismatch["summary"]
    blast = [f for f in doc["findings"] if f["rule"] == "webhook-blast-radius"]
    assert [f["title"].split()[1] for f in blast] == ["validate.policy.example.com"]  # the Ignore webhook is not
