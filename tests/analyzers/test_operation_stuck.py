"""operation-stuck: a sync waiting on a hook or a resource that cannot go on is named with why; an operation under
way is not stuck."""

from __future__ import annotations

import pytest

from argo_doctor.analyzers.operation_stuck import parse_wait
from argo_doctor.model import Severity
from tests.analyzers.stuck_operations import BUNDLE, Raw, named, scan
from tests.conftest import scan_json

RULE = "operation-stuck"


@pytest.mark.parametrize(("message", "expected"), [
    ("waiting for completion of hook batch/Job/db-migrate", ("completion", "batch", "Job", "db-migrate", 0)),
    ("waiting for completion of hook /Pod/smoke-test and 2 more hooks", ("completion", "", "Pod", "smoke-test", 2)),
    ("waiting for healthy state of apps/Deployment/web and 3 more resources",
     ("health", "apps", "Deployment", "web", 3)),
    ("waiting for deletion of hook argoproj.io/Workflow/pre", ("deletion", "argoproj.io", "Workflow", "pre", 0)),
    ("waiting for pruning confirmation of /ConfigMap/old", ("confirmation", "", "ConfigMap", "old", 0)),
])
def test_the_messages_gitops_engine_writes_are_read(message: str, expected: tuple[str, str, str, str, int]) -> None:
    waited = parse_wait(message)
    assert waited is not None and (waited.waits, waited.group, waited.kind, waited.name, waited.more) == expected


@pytest.mark.parametrize("message", ["one or more tasks are running", "", "successfully synced (all tasks run)",
                                     "ConfigMap/x is part of applications argocd/a and argocd/b"])
def test_other_messages_name_nothing_waited_on(message: str) -> None:
    assert parse_wait(message) is None


def test_a_hook_whose_image_cannot_be_pulled_holds_the_sync_and_the_running_one_is_left_alone() -> None:
    doc = scan_json(BUNDLE)
    found = [f for f in doc["findings"] if f["rule"] == RULE]
    assert [f["title"] for f in found] == [
        "Sync of billing stuck waiting for Job billing/billing-db-migrate: pod billing-db-migrate-x7k2p "
        "cannot start (migrate ImagePullBackOff)"]
    finding = found[0]
    assert finding["severity"] == "high"
    assert "registry.example-shop.com/billing/migrate:2.14.0" in finding["remediation"]["text"]
    assert finding["remediation"]["command"] == "argocd app terminate-op argocd/billing"
    assert any("not found" in e["excerpt"] for e in finding["evidence"] if e["kind"] == "event")


def _hook_running(items: list[Raw]) -> None:
    pod = named(items, "Pod", "billing-db-migrate-x7k2p")
    pod["status"] = {"phase": "Running", "containerStatuses": [
        {"name": "migrate", "ready": True, "restartCount": 0,
         "state": {"running": {"startedAt": "2026-11-27T08:12:00Z"}}}]}


def test_a_hook_that_simply_runs_is_reported_only_after_stuck_minutes() -> None:
    assert scan(RULE, _hook_running) == []  # 52 minutes: a long migration may take that
    [late] = [f for f in scan(RULE, _hook_running, collected="2026-11-27T10:30:00Z") if "billing" in f.title]
    assert late.severity == Severity.MEDIUM and "It is still running" in late.summary


def test_a_hook_the_cluster_no_longer_holds_is_named_as_gone() -> None:
    def gone(items: list[Raw]) -> None:
        job = named(items, "Job", "billing-db-migrate")
        job["metadata"]["name"] = "billing-report-29384710"  # another Job: the namespace's Jobs were collected
        items[:] = [o for o in items if o["metadata"].get("labels", {}).get("job-name") != "billing-db-migrate"]
    [finding] = scan(RULE, gone)
    assert finding.severity == Severity.HIGH and "it is not in the cluster" in finding.summary
    assert "hook-delete-policy" in finding.summary
    def uncollected(items: list[Raw]) -> None:
        items[:] = [o for o in items if o["kind"] != "Job" and o["metadata"].get("labels", {}).get("job-name") is None]
    assert scan(RULE, uncollected) == []  # no Job of the namespace in the input: its absence proves nothing


def test_a_wave_waiting_on_a_degraded_resource_names_it() -> None:
    def degraded(items: list[Raw]) -> None:
        deployment = named(items, "Deployment", "checkout")
        deployment["status"]["conditions"][1] = {
            "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": 'ReplicaSet "checkout-7f8d6c9b4" has timed out progressing.'}
    [finding] = [f for f in scan(RULE, degraded, collected="2026-11-27T09:30:00Z") if "checkout" in f.title]
    assert finding.severity == Severity.HIGH and "it is Degraded" in finding.summary
    assert "sync wave cannot advance" in finding.remediation.text


def test_a_finished_operation_is_not_stuck() -> None:
    def finished(items: list[Raw]) -> None:
        named(items, "Application", "billing")["status"]["operationState"]["phase"] = "Succeeded"
    assert [f for f in scan(RULE, finished) if "billing" in f.title] == []





def test_refused_syncs_and_the_controller_resuming_are_evidence() -> None:
    doc = scan_json(BUNDLE)
    [finding] = [f for f in doc["findings"] if f["rule"] == RULE]
    logs = [e["location"] for e in finding["evidence"] if e["kind"] == "log"]
    assert sum("argocd-server.log" in loc for loc in logs) == 2
    assert sum("argocd-application-controller.log" in loc for loc in logs) == 3  # the last three resumptions
    assert "2 sync requests were refused" in finding["summary"]
    assert "2 operations were running" in finding["summary"]  # billing's and checkout's: the log names neither
