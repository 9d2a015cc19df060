"""sync-failed: a failed sync explained once: the operation's message, each failed resource's own message where the
operation's does not quote it already, the retries when the message does not say them."""

from __future__ import annotations

from typing import Any

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject
from tests.conftest import EXAMPLES, scan_json


def _app(message: str, resources: list[dict[str, Any]], retries: int) -> dict[str, Any]:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop", "namespace": "argocd"},
            "spec": {"destination": {"namespace": "shop", "server": "https://kubernetes.default.svc"}},
            "status": {"sync": {"status": "OutOfSync"}, "operationState": {
                "phase": "Failed", "message": message, "retryCount": retries,
                "startedAt": "2026-11-20T14:15:00Z", "finishedAt": "2026-11-20T14:15:11Z",
                "operation": {"sync": {"revision": "e3b1c9a47f0d"}, "initiatedBy": {"automated": True}},
                "syncResult": {"revision": "e3b1c9a47f0d", "resources": resources}}}}


def _findings(app: dict[str, Any]) -> list[Finding]:
    snap = Snapshot("test")
    snap.add(RawObject(app, "objects/argocd/applications.yaml:1"))
    result = run_scan(snap, select_analyzers(only=("sync-failed",)))
    assert not result.crashed
    return result.findings


def test_the_error_of_the_example_is_said_once() -> None:
    found = [f for f in scan_json(EXAMPLES / "argocd-basic")["findings"]
             if f["rule"] == "sync-failed" and "monitoring-stack" in f["title"]]
    summary = found[0]["summary"]
    assert summary.count("is already defined in ingress monitoring/grafana-legacy") == 1
    assert summary.count("retried 5 times") == 1 and "Ingress/monitoring/grafana (the error above)" in summary


def test_a_resource_message_the_operation_does_not_quote_is_kept_and_the_retries_said() -> None:
    resource = {"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web", "status": "SyncFailed",
                "message": 'Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value'}
    [finding] = _findings(_app("one or more objects failed to apply", [resource], 3))
    assert "Deployment/shop/web (Deployment.apps \"web\" is invalid" in finding.summary
    assert "Argo CD retried 3 times." in finding.summary
