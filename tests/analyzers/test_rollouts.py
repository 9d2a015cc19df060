"""rollout-stuck-degraded and rollout-degraded through the engine, on Rollouts as kubectl prints them: stuck ones get
a restart (the patch, the command, the downtime of a single replica, the controller version and its known bugs),
Degraded ones their reason and never a restart, undecidable ones a low finding saying what is missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest

from argo_doctor.analyzers import Context
from argo_doctor.analyzers.rollout_stuck_degraded import MAX_EVENTS, _events
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.health import HealthAssessor
from argo_doctor.model import Finding, Severity
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES, EXAMPLES, scan_json

RULES = ("rollout-stuck-degraded", "rollout-degraded")


def _scan(path: Path) -> dict[tuple[str, str], Finding]:
    """The findings of both rules, by (rule, namespace/name of the Rollout)."""
    result = run_scan(bundle.load([path]), select_analyzers(only=RULES))
    found: dict[tuple[str, str], Finding] = {}
    for finding in result.findings:
        rollout = next(r for r in finding.objects if r.kind == "Rollout")
        key = (finding.rule, f"{rollout.namespace}/{rollout.name}")
        assert key not in found, key
        found[key] = finding
    return found


@pytest.fixture(scope="module")
def mixed() -> dict[tuple[str, str], Finding]:
    return _scan(BUNDLES / "rollouts-mixed")


def test_every_rollout_gets_the_right_rule(mixed: dict[tuple[str, str], Finding]) -> None:
    assert sorted(mixed) == sorted([
        ("rollout-stuck-degraded", "shop/web"), ("rollout-stuck-degraded", "billing/invoices"),
        ("rollout-stuck-degraded", "search/indexer"), ("rollout-stuck-degraded", "profile/profile-api"),
        *(("rollout-degraded", r) for r in ("orders/orders-api", "media/thumbnailer", "batch/reporter",
                                            "config/settings-api", "reviews/reviews-api", "payments/checkout",
                                            "auth/login", "catalog/catalog-api", "ads/ad-server")),
    ])
    assert not any(key[1] == "news/feed" for key in mixed)


def test_a_stuck_rollout_gets_a_restart(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-stuck-degraded", "shop/web")]
    assert f.severity == Severity.HIGH
    assert f.title == "Rollout shop/web is stuck Degraded (ProgressDeadlineExceeded) although its 3 pods are ready"
    assert "has been Degraded for 2 h 14 min (since 2026-11-24T08:16:00Z)" in f.summary
    assert "all its 3 pods Running, Ready and available" in f.summary
    assert "Application argocd/shop manages it and shows Degraded" in f.summary
    assert "The Argo Rollouts controller runs v1.7.1" in f.summary
    assert "#3534 (fixed in v1.8.0), #3843 (fixed in v1.8.0), #2109 (still open)" in f.summary
    assert "#939" not in f.summary and "#3414" not in f.summary  # not bugs of v1.7.1
    r = f.remediation
    assert r.patch == '{"spec":{"restartAt":"2026-11-24T10:30:00Z"}}'
    assert json.loads(r.patch) == {"spec": {"restartAt": "2026-11-24T10:30:00Z"}}
    assert r.command == "kubectl argo rollouts restart web -n shop"
    assert "upgrade Argo Rollouts from v1.7.1 to v1.8.0 or later" in r.text
    assert "single replica" not in r.text
    assert "https://github.com/argoproj/argo-rollouts/issues/3843" in r.docs
    assert [str(o) for o in f.objects] == ["Rollout/shop/web", "Application/argocd/shop"]
    locations = [e.location for e in f.evidence]
    assert any("ReplicaSet/shop/web-6d4b9c7f58 .status" in loc for loc in locations)
    assert sum("Pod/shop/web-6d4b9c7f58-" in loc for loc in locations) == 3
    assert any("Deployment/argo-rollouts/argo-rollouts" in loc for loc in locations)


def test_a_single_replica_restart_warns_of_downtime(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-stuck-degraded", "search/indexer")]
    assert f.title.endswith("although its pod is ready")
    assert "single replica" in f.remediation.text and "downtime" in f.remediation.text


def test_a_stuck_blue_green_rollout_without_an_application(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-stuck-degraded", "billing/invoices")]
    assert f.severity == Severity.HIGH and "Application" not in f.summary
    assert f.remediation.command == "kubectl argo rollouts restart invoices -n billing"


def test_a_pending_restart_is_low_and_says_wait(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-stuck-degraded", "profile/profile-api")]
    assert f.severity == Severity.LOW and f.remediation.patch is None
    assert "a restart is already pending" in f.summary
    assert "do not restart it a second time" in f.remediation.text


@pytest.mark.parametrize(("rollout", "reason", "command"), [
    ("orders/orders-api", "CrashLoopBackOff", "kubectl logs orders-api-8c5f7d9b6c-crv68 -n orders --previous"),
    ("media/thumbnailer", "ImagePullBackOff", "kubectl describe pod thumbnailer-7c9d6b5f8d-"),
    ("batch/reporter", "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu", "kubectl describe pod reporter-"),
    ("config/settings-api", 'secret "settings-api-db" not found', "kubectl describe pod settings-api-"),
    ("reviews/reviews-api", "Running but not Ready", "kubectl describe pod reviews-api-"),
    ("payments/checkout", "metric success-rate Failed (last failed value [0.7921]; failed 2; query prometheus: "
                          "sum(irate(",
     "kubectl argo rollouts retry rollout checkout -n payments"),
    ("auth/login", "aborted at 2026-11-24T07:30:00Z", "kubectl argo rollouts retry rollout login -n auth"),
    ("catalog/catalog-api", "InvalidSpec: The Rollout \"catalog-api\" is invalid",
     "kubectl argo rollouts get rollout catalog-api -n catalog"),
    ("ads/ad-server", "paused by the controller (BlueGreenPause", "kubectl argo rollouts promote ad-server -n ads"),
])
def test_a_rollout_degraded_for_a_real_reason_gets_it_and_no_restart(
        mixed: dict[tuple[str, str], Finding], rollout: str, reason: str, command: str) -> None:
    f = mixed[("rollout-degraded", rollout)]
    assert f.severity == Severity.HIGH
    assert reason in f.summary
    assert f.remediation.command is not None and f.remediation.command.startswith(command)
    assert f.remediation.patch is None and "restartAt" not in f.remediation.text
    assert "rollouts restart" not in (f.remediation.command or "")
    assert "A restart would not fix this" in f.remediation.text


def test_degraded_evidence_shows_the_failing_pod_its_log_and_events(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-degraded", "orders/orders-api")]
    kinds = [e.kind for e in f.evidence]
    assert kinds.count("log") == 3 and "event" in kinds
    assert any("does not exist" in e.excerpt for e in f.evidence if e.kind == "log")
    assert any("Back-off restarting failed container" in e.excerpt for e in f.evidence if e.kind == "event")


def test_a_failed_analysis_run_is_an_object_of_the_finding(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-degraded", "payments/checkout")]
    assert "AnalysisRun/payments/checkout-6f8b9d5c7b-5-1" in [str(o) for o in f.objects]
    assert any(e.location.endswith(".status.metricResults") for e in f.evidence)


def test_a_paused_rollout_on_an_affected_version_names_the_bugs(mixed: dict[tuple[str, str], Finding]) -> None:
    f = mixed[("rollout-degraded", "ads/ad-server")]
    assert "Argo Rollouts v1.7.1 has upstream bugs that turn paused Rollouts Degraded: #3534" in f.summary
    assert "Upgrade Argo Rollouts to v1.8.0 or later" in f.remediation.text


def test_without_pods_it_cannot_decide_and_says_what_is_missing() -> None:
    found = _scan(BUNDLES / "rollouts-no-pods")
    assert sorted(found) == [("rollout-degraded", "shop/cart"), ("rollout-stuck-degraded", "shop/web")]
    f = found[("rollout-stuck-degraded", "shop/web")]
    assert f.severity == Severity.LOW and f.remediation.patch is None
    assert "the input lacks the pods of namespace shop" in f.summary
    assert f.remediation.command == ("kubectl get replicasets,pods,analysisruns -n shop "
                                     "-l rollouts-pod-template-hash=6d4b9c7f58 -o yaml")


def test_an_unknown_controller_version_lists_the_bugs_unconfirmed(tmp_path: Path) -> None:
    import shutil
    root = tmp_path / "bundle"
    shutil.copytree(BUNDLES / "rollouts-mixed", root)
    (root / "objects" / "argo-rollouts.yaml").unlink()
    f = _scan(root)[("rollout-stuck-degraded", "shop/web")]
    assert "The Argo Rollouts controller is not in the input, so its version is unknown" in f.summary
    assert "#939 (fixed in v1.0.0)" in f.summary and "#2109 (still open)" in f.summary


def test_the_json_output_validates() -> None:
    doc = scan_json(BUNDLES / "rollouts-mixed", "--rule", RULES[0], "--rule", RULES[1])
    stuck = [f for f in doc["findings"] if f["rule"] == "rollout-stuck-degraded" and f["severity"] == "high"]
    assert len(stuck) == 3 and all(f["remediation"]["patch"].startswith('{"spec":{"restartAt":') for f in stuck)


def test_the_stuck_rollout_example() -> None:
    doc = scan_json(EXAMPLES / "incidents" / "stuck-rollout")
    stuck = [f for f in doc["findings"] if f["rule"] == "rollout-stuck-degraded"]
    degraded = [f for f in doc["findings"] if f["rule"] == "rollout-degraded"]
    assert [f["severity"] for f in stuck] == ["high"]
    assert stuck[0]["title"].startswith("Rollout storefront/frontend is stuck Degraded")
    assert sorted(f["title"].split(" ")[1] for f in degraded) == ["storefront/cart", "storefront/recommendations"]


def test_a_stuck_rollout_cites_its_own_warning_events() -> None:
    """The Rollout's Warning Events, in its namespace, the last MAX_EVENTS of them; not a namesake's, not Normal."""
    snap = Snapshot("test")
    snap.add(RawObject({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                        "metadata": {"name": "api", "namespace": "a"}}, "rollouts.yaml:1"))
    events = [("w0", "a", "Warning"), ("w1", "a", "Warning"), ("w2", "a", "Warning"), ("w3", "a", "Warning"),
              ("other-ns", "b", "Warning"), ("n1", "a", "Normal")]
    for minute, (name, namespace, type_) in enumerate(events):
        snap.add(RawObject({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
                            "type": type_, "reason": "R", "message": name,
                            "lastTimestamp": f"2026-11-20T10:0{minute}:00Z",
                            "involvedObject": {"kind": "Rollout", "name": "api", "namespace": namespace}},
                           f"events.yaml#{name}"))
    (rollout,) = snap.of_kind("Rollout", "argoproj.io")
    cited = _events(Context(snap, cast(HealthAssessor, None)), rollout)  # the Events need no health
    assert MAX_EVENTS == 3 and [e.excerpt.rsplit(": ", 1)[-1] for e in cited] == ["w1", "w2", "w3"]
