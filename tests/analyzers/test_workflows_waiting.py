"""workflow-pending and cronworkflow-not-firing: Workflows and CronWorkflows as the workflow-controller writes them
(workflow/controller, workflow/sync, workflow/cron), on the workflows-stalled example; facts/cron on schedules as
robfig/cron reads them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor.facts.cron import CronError, last_due
from tests.conftest import EXAMPLES, scan_json

BUNDLE = EXAMPLES / "incidents" / "workflows-stalled"
RULES = ("workflow-pending", "cronworkflow-not-firing")
Change = Callable[[list[dict[str, Any]]], None]


def _scan(tmp_path: Path, change: Change | None = None, logs: str = "") -> dict[str, dict[str, Any]]:
    """The two rules' findings by object name on a copy of the example, `change(batch items)` applied first."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "batch.yaml"
    doc = yaml.safe_load(path.read_text())
    if change is not None:
        change(doc["items"])
    path.write_text(yaml.safe_dump(doc))
    if logs:
        folder = bundle / "logs" / "argo" / "workflow-controller-6d8f9b7c5d-x2x7q"
        folder.mkdir(parents=True)
        (folder / "workflow-controller.log").write_text(logs)
    args = [a for rule in RULES for a in ("--rule", rule)]
    return {f["objects"][0]["name"]: f for f in scan_json(bundle, *args)["findings"]}


def _obj(items: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(i for i in items if i["kind"] == kind and i["metadata"]["name"] == name)


def test_the_example_names_what_holds_each_workflow(tmp_path: Path) -> None:
    found = _scan(tmp_path)
    assert sorted(found) == ["adhoc-export-7hq4d", "audit-sync-k2l9p", "ledger-sync", "ledger-sync-1796088600"]
    lock = found["audit-sync-k2l9p"]
    assert lock["severity"] == "high" and lock["title"] == ("Workflow audit-sync-k2l9p waits for lock "
                                                            "batch/Mutex/audit held by a Workflow that ended")
    assert ("held by batch/audit-sync-p7v3x. The holder batch/audit-sync-p7v3x (Failed at 2026-11-30T23:10:44Z) has "
            "ended, yet the lock is still held") in lock["summary"]
    quota = found["ledger-sync-1796088600"]
    assert "Step reconcile has waited 8h10m" in quota["summary"] and "requests.cpu 7500m of 8" in quota["summary"]
    postponed = found["adhoc-export-7hq4d"]
    assert "(namespaceParallelism 2; 2 Running in namespace batch, 2 in the input)" in postponed["summary"]
    cron = found["ledger-sync"]
    assert cron["title"] == "CronWorkflow ledger-sync starts nothing: Forbid holds it behind Workflow " \
                            "ledger-sync-1796088600"
    assert "The runs due at 2026-12-01 04:30 and 2026-12-01 08:30 UTC did not start" in cron["summary"]


def test_a_lock_held_by_a_running_workflow_is_medium_and_a_young_wait_is_silent(tmp_path: Path) -> None:
    def running_holder(items: list[dict[str, Any]]) -> None:
        _obj(items, "Workflow", "audit-sync-p7v3x")["status"].update(phase="Running", finishedAt=None)
        _obj(items, "Workflow", "adhoc-export-7hq4d")["metadata"]["creationTimestamp"] = "2026-12-01T09:35:00Z"

    found = _scan(tmp_path, running_holder)
    assert found["audit-sync-k2l9p"]["severity"] == "medium"
    assert "has ended" not in found["audit-sync-k2l9p"]["summary"]
    assert "adhoc-export-7hq4d" not in found


def test_a_semaphore_s_holders_are_read_from_the_waiting_list(tmp_path: Path) -> None:
    def semaphore(items: list[dict[str, Any]]) -> None:
        wf = _obj(items, "Workflow", "audit-sync-k2l9p")
        lock = "batch/ConfigMap/batch-limits/audit"
        wf["status"]["message"] = f"Waiting for {lock} lock. Lock status: 0/2"
        wf["status"]["synchronization"] = {"semaphore": {"waiting": [
            {"semaphore": lock, "holders": ["batch/audit-sync-p7v3x", "batch/reports-weekly-x8m2q"]}]}}

    finding = _scan(tmp_path, semaphore)["audit-sync-k2l9p"]
    assert "held by batch/audit-sync-p7v3x, batch/reports-weekly-x8m2q" in finding["summary"]
    assert "The holder batch/audit-sync-p7v3x (Failed at 2026-11-30T23:10:44Z) has ended" in finding["summary"]


@pytest.mark.parametrize(("status", "spec", "expected", "severity"), [
    ({"conditions": [{"type": "SpecError", "status": "True",
                      "message": "cron schedule 30 1 * * 7 is malformed: end of range (7) above maximum (6): 7"}]},
     {}, "the controller refuses its spec", "high"),
    ({"conditions": [{"type": "SubmissionError", "status": "True", "message": "Failed to submit Workflow: "
                      "workflows.argoproj.io \"ledger-sync-1796103000\" is forbidden: exceeded quota"}]},
     {}, "the controller cannot submit its Workflow", "high"),
    ({}, {"suspend": True}, "it is suspended", "low"),
    ({"active": []}, {"concurrencyPolicy": "Allow"}, "a scheduled run did not start", "medium"),
])
def test_why_a_cron_workflow_starts_nothing(tmp_path: Path, status: dict[str, Any], spec: dict[str, Any],
                                            expected: str, severity: str) -> None:
    def change(items: list[dict[str, Any]]) -> None:
        cron = _obj(items, "CronWorkflow", "ledger-sync")
        cron["status"].update(status)
        cron["spec"].update(spec)

    finding = _scan(tmp_path, change)["ledger-sync"]
    assert finding["title"] == f"CronWorkflow ledger-sync starts nothing: {expected}"
    assert finding["severity"] == severity


def test_a_cron_workflow_refused_from_creation_is_told_by_the_controller_s_line(tmp_path: Path) -> None:
    def fresh(items: list[dict[str, Any]]) -> None:
        cron = _obj(items, "CronWorkflow", "audit-sync")
        cron["status"] = {}

    line = ('2026-12-01T09:30:00.112000000Z time="2026-12-01T09:30:00.112Z" level=error msg="invalid cron workflow" '
            'cronWorkflow=batch/audit-sync error="cron schedule 0 */6 * * 7 is malformed: end of range (7) above '
            'maximum (6): 7"\n')
    finding = _scan(tmp_path, fresh, logs=line)["audit-sync"]
    assert finding["severity"] == "high" and "end of range (7) above maximum (6)" in finding["summary"]


def test_on_schedule_runs_are_silent(tmp_path: Path) -> None:
    def on_time(items: list[dict[str, Any]]) -> None:
        cron = _obj(items, "CronWorkflow", "ledger-sync")
        cron["status"].update(lastScheduledTime="2026-12-01T08:30:00Z", active=[])

    assert "ledger-sync" not in _scan(tmp_path, on_time)


BEFORE = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(("schedule", "timezone", "due"), [
    ("30 1 * * *", "Europe/Dublin", "2026-12-01T01:30"),  # GMT in winter
    ("30 1 * * *", "America/New_York", "2026-12-01T06:30"),  # EST: 01:30 is 06:30 UTC
    ("*/15 * * * *", "", "2026-12-01T09:30"),
    ("0 9 * * MON-FRI", "", "2026-12-01T09:00"),
    ("0 2 * * 0", "", "2026-11-29T02:00"),
    ("0 0 */1 * MON", "", "2026-11-30T00:00"),  # */1 is unrestricted: both day fields must match
    ("0 3 15 * 1", "", "2026-11-30T03:00"),  # both day fields restricted: either matches
    ("0 0 1 1 *", "", "2026-01-01T00:00"),
    ("@hourly", "", "2026-12-01T09:00"),
    ("CRON_TZ=Asia/Tokyo 0 18 * * *", "", "2026-12-01T09:00"),
    ("0 0 29 2 *", "", "2024-02-29T00:00"),  # beyond the horizon: never
])
def test_last_due(schedule: str, timezone: str, due: str) -> None:
    found = last_due(schedule, BEFORE, timezone)
    expected = datetime.fromisoformat(due).replace(tzinfo=UTC)
    assert found == (expected if (BEFORE - expected).days < 400 else None)


@pytest.mark.parametrize("schedule", ["0 0 * * 7", "61 * * * *", "@every 1h", "* * * *", "0 0 * JANUARY *",
                                      "*/x * * * *", "1- * * * *", "5/ * * * *", "@DAILY", "² * * * *",
                                      "*/5/2 * * * *"])
def test_schedules_robfig_refuses_are_errors(schedule: str) -> None:
    with pytest.raises(CronError):
        last_due(schedule, BEFORE)


def test_a_workflow_failed_by_the_executor_s_rbac_says_which_role_it_needs(tmp_path: Path) -> None:
    def refused(items: list[dict[str, Any]]) -> None:
        node = _obj(items, "Workflow", "audit-sync-p7v3x")["status"]["nodes"]["audit-sync-p7v3x-3355961021"]
        node.update(phase="Error", message='wait: Error (exit code 64): workflowtaskresults.argoproj.io is forbidden: '
                    'User "system:serviceaccount:batch:default" cannot create resource "workflowtaskresults" in API '
                    'group "argoproj.io" in the namespace "batch"')

    bundle = tmp_path / "bundle"
    _scan(tmp_path, refused)
    [failed] = [f for f in scan_json(bundle, "--rule", "workload-degraded")["findings"]
                if f["objects"][0]["name"] == "audit-sync-p7v3x"]
    assert "needs create and patch on workflowtaskresults.argoproj.io" in failed["remediation"]["text"]


def test_a_workflow_failed_by_its_artifact_repository_names_its_credentials(tmp_path: Path) -> None:
    def denied(items: list[dict[str, Any]]) -> None:
        node = _obj(items, "Workflow", "audit-sync-p7v3x")["status"]["nodes"]["audit-sync-p7v3x-3355961021"]
        node.update(phase="Error", message="wait: Error (exit code 64): failed to put file: Access Denied.")

    bundle = tmp_path / "bundle"
    _scan(tmp_path, denied)
    [failed] = [f for f in scan_json(bundle, "--rule", "workload-degraded")["findings"]
                if f["objects"][0]["name"] == "audit-sync-p7v3x"]
    assert "could not read or write its artifacts" in failed["remediation"]["text"]


def test_a_lock_holder_the_input_lacks_or_a_database_lock_is_never_called_lost(tmp_path: Path) -> None:
    def elsewhere(items: list[dict[str, Any]]) -> None:
        wf = _obj(items, "Workflow", "audit-sync-k2l9p")
        wf["status"]["synchronization"]["mutex"]["waiting"][0]["holder"] = "batch/audit-sync-elsewhere"

    assert _scan(tmp_path / "a", elsewhere)["audit-sync-k2l9p"]["severity"] == "medium"

    def database(items: list[dict[str, Any]]) -> None:
        wf = _obj(items, "Workflow", "audit-sync-k2l9p")
        wf["status"]["message"] = "Waiting for batch/Mutex/audit lock (mtx/batch/audit). Lock status: 1/1"

    assert _scan(tmp_path / "b", database)["audit-sync-k2l9p"]["severity"] == "medium"


def test_a_step_counts_its_own_wait_not_its_workflow_s(tmp_path: Path) -> None:
    def young_step(items: list[dict[str, Any]]) -> None:
        nodes = _obj(items, "Workflow", "reports-weekly-x8m2q")["status"]["nodes"]
        nodes["reports-weekly-x8m2q-upload"] = {"id": "reports-weekly-x8m2q-upload", "type": "Pod", "phase": "Pending",
                                                "displayName": "upload", "startedAt": "2026-12-01T09:39:50Z",
                                                "message": "ContainerCreating"}

    assert "reports-weekly-x8m2q" not in _scan(tmp_path, young_step)


def test_a_stale_invalid_line_when_or_a_changed_schedule_are_no_missed_run(tmp_path: Path) -> None:
    stale = ('2026-11-30T01:00:00.112000000Z time="2026-11-30T01:00:00.112Z" level=error msg="invalid cron workflow" '
             'cronWorkflow=batch/audit-sync error="cron schedule 0 */6 * * 7 is malformed"\n')
    assert "audit-sync" not in _scan(tmp_path / "a", logs=stale)

    def when(items: list[dict[str, Any]]) -> None:
        cron = _obj(items, "CronWorkflow", "ledger-sync")
        cron["spec"].update(concurrencyPolicy="Allow", when="{{= cronworkflow.failed == 0 }}")
        cron["status"]["active"] = []

    assert "ledger-sync" not in _scan(tmp_path / "b", when)

    def changed(items: list[dict[str, Any]]) -> None:
        cron = _obj(items, "CronWorkflow", "ledger-sync")
        cron["spec"]["concurrencyPolicy"] = "Allow"
        cron["status"]["active"] = []
        cron["metadata"]["annotations"] = {"cronworkflows.argoproj.io/last-used-schedule": "CRON_TZ=UTC 30 1 * * *"}

    assert "ledger-sync" not in _scan(tmp_path / "c", changed)
