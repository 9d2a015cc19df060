"""app-deletion-stuck: what holds a deleted Application, and a fix that does not start with its finalizer; no other
rule advises to sync an Application being deleted."""

from __future__ import annotations

from argo_doctor.model import Severity
from tests.analyzers.stuck_operations import BUNDLE, Raw, named, scan
from tests.conftest import scan_json

RULE = "app-deletion-stuck"


def test_a_claim_held_by_a_pod_on_a_lost_node_holds_the_namespace_and_the_application() -> None:
    [finding] = scan(RULE)
    assert finding.severity == Severity.HIGH
    assert finding.title == ("Application search is deleted but still there: PersistentVolumeClaim/search/"
                             "data-opensearch-0 in it keeps its finalizers (kubernetes.io/pvc-protection)")
    assert "still used by pod opensearch-0, itself deleted but still there because its node " \
           "ip-10-0-3-17.eu-west-1.compute.internal stopped reporting" in finding.summary
    assert "Some content in the namespace has finalizers remaining" in finding.summary
    fix = finding.remediation.text
    assert fix.startswith("Pod opensearch-0 waits for its node") and "--grace-period=0 --force" in fix
    assert fix.index("last resort") > fix.index("opensearch-0")  # the Application's finalizer comes last


def test_no_rule_advises_to_sync_an_application_being_deleted() -> None:
    doc = scan_json(BUNDLE, "--min-severity", "info")
    about = [f for f in doc["findings"] if any(o["name"] == "search" and o["kind"] == "Application"
                                               for o in f["objects"])]
    assert [f["rule"] for f in about] == [RULE]


def test_a_deletion_under_way_is_left_alone_and_one_without_argo_finalizer_is_not_argo_s() -> None:
    assert scan(RULE, collected="2026-11-26T16:42:00Z") == []

    def no_finalizer(items: list[Raw]) -> None:
        named(items, "Application", "search")["metadata"]["finalizers"] = ["example.com/keep"]
    assert scan(RULE, no_finalizer) == []


def test_a_deletion_error_and_a_running_operation_are_named() -> None:
    def error(items: list[Raw]) -> None:
        app = named(items, "Application", "search")
        app["status"]["conditions"] = [{"type": "DeletionError", "message": "error getting permitted app live "
                                        "objects: dial tcp 10.0.9.9:443: i/o timeout",
                                        "lastTransitionTime": "2026-11-26T16:41:00Z"}]
        app["status"]["operationState"] = {"phase": "Running", "startedAt": "2026-11-26T16:30:00Z",
                                           "message": "waiting for completion of hook batch/Job/reindex"}
        items[:] = [o for o in items if o["metadata"].get("namespace") != "search" and o["kind"] != "Namespace"]
    [finding] = scan(RULE, error)
    assert "an operation is still running" in finding.summary and "i/o timeout" in finding.summary
    assert finding.remediation.text.startswith("End the operation first: `argocd app terminate-op argocd/search`")


def test_nothing_found_to_hold_it_is_said_at_a_lower_severity() -> None:
    def clean(items: list[Raw]) -> None:
        items[:] = [o for o in items if o["metadata"].get("namespace") != "search" and o["kind"] != "Namespace"]
    [finding] = scan(RULE, clean)
    assert finding.severity == Severity.MEDIUM and "The input shows nothing that holds it" in finding.summary
