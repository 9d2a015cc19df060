"""rollout-traffic-routing: the Warning Events and `rollout syncHandler error` lines Argo Rollouts' traffic routers
produce (rollout/trafficrouting.go), on the rollout-analysis example."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

BUNDLE = EXAMPLES / "incidents" / "rollout-analysis"


def _findings(bundle: Path) -> list[dict[str, Any]]:
    return list(scan_json(bundle, "--rule", "rollout-traffic-routing")["findings"])


def test_a_plugin_that_cannot_find_its_route_leaves_the_weights_unset() -> None:
    [finding] = _findings(BUNDLE)
    assert finding["title"] == ("Rollout payments/payments-gw: its traffic router refuses the canary weights "
                                "(TrafficRoutingError)")
    assert "through the argoproj-labs/gatewayAPI plugin" in finding["summary"]
    assert "refused the controller 42 times" in finding["summary"]
    assert 'httproutes.gateway.networking.k8s.io "payments" not found' in finding["summary"]
    assert sum(e["kind"] == "log" for e in finding["evidence"]) == 2
    assert finding["remediation"]["text"].startswith("Create httproutes.gateway.networking.k8s.io payments in "
                                                     "namespace payments")


def test_a_later_weight_update_makes_the_errors_history(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "rollouts.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["items"].append({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "payments-gw.18c1f2a3b4c5d6f0",
                                                                           "namespace": "payments"},
                         "involvedObject": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                            "name": "payments-gw", "namespace": "payments"},
                         "reason": "TrafficWeightUpdated", "message": "Traffic weight updated to 10", "type": "Normal",
                         "count": 1, "firstTimestamp": "2026-12-01T09:18:30Z", "lastTimestamp": "2026-12-01T09:18:30Z"})
    path.write_text(yaml.safe_dump(doc))
    assert _findings(bundle) == []


def test_a_rollout_without_traffic_routing_is_never_concerned(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "rollouts.yaml"
    doc = yaml.safe_load(path.read_text())
    rollout = next(i for i in doc["items"] if i["kind"] == "Rollout" and i["metadata"]["name"] == "payments-gw")
    del rollout["spec"]["strategy"]["canary"]["trafficRouting"]
    path.write_text(yaml.safe_dump(doc))
    assert _findings(bundle) == []


def _changed(tmp_path: Path, change: Any) -> list[dict[str, Any]]:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "rollouts.yaml"
    doc = yaml.safe_load(path.read_text())
    change(next(i for i in doc["items"] if i["kind"] == "Rollout" and i["metadata"]["name"] == "payments-gw"),
           [i for i in doc["items"] if i["kind"] == "Event"])
    path.write_text(yaml.safe_dump(doc))
    return _findings(bundle)


def test_an_applied_weight_a_healthy_rollout_or_an_old_failure_is_no_finding(tmp_path: Path) -> None:
    def applied(rollout: dict[str, Any], events: list[dict[str, Any]]) -> None:
        rollout["status"]["canary"] = {"weights": {"canary": {"weight": 10}, "stable": {"weight": 90}}}

    def healthy(rollout: dict[str, Any], events: list[dict[str, Any]]) -> None:
        rollout["status"]["phase"] = "Healthy"

    def old(rollout: dict[str, Any], events: list[dict[str, Any]]) -> None:
        for event in events:
            event["lastTimestamp"] = "2026-12-01T07:02:03Z"

    assert _changed(tmp_path / "a", applied) == []
    assert _changed(tmp_path / "b", healthy) == []
    assert _changed(tmp_path / "c", old) == []
