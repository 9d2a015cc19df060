"""Native health of the Argo projects' kinds that Argo CD v3.5.1 judges with built-in Lua scripts.

One case per case of each kind's upstream health_test.yaml (fixtures under fixtures/argo/, in
the upstream shapes, with their own names and content), the Lua value quirks the scripts meet
on malformed objects, the Workflow check of gitops-engine, and precedence: a Lua script for the
kind still wins over the native check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from argo_doctor.health import Health, HealthAssessor, LuaHealthScripts
from argo_doctor.health.argo_kinds import ARGO_LUA_CHECKS
from tests.health.objects import D, H, P, S, U, names, obj

CASES: dict[str, dict[str, Health | None]] = {
    "argo/analysisruns.yaml": {
        "checkout-latency-queued": Health(P, "Analysis run is running"),
        "checkout-latency-fresh": Health(P, "Waiting for analysis run to finish: status has not been reconciled."),
        "checkout-latency-measuring": Health(P, "Analysis run is running"),
        "checkout-latency-passed": Health(H, "Analysis run completed successfully"),
        "checkout-errors-failed": Health(D, "Analysis run failed"),
        "checkout-errors-failed-explained": Health(
            D, 'Metric "error-rate" assessed Failed due to failed (1) > failureLimit (0)'
        ),
        "checkout-web-error": Health(D, "Analysis run had an error"),
        "checkout-web-error-explained": Health(
            D, 'Metric "smoke" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4)'
        ),
        "checkout-saturation-unsure": Health(U, "Analysis run was inconclusive"),
        "checkout-saturation-unsure-explained": Health(
            U, 'Metric "cpu-saturation" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)'
        ),
        "checkout-loadtest-stopped": Health(H, "Run Terminated"),
    },
    "argo/experiments.yaml": {
        "search-ranking-queued": Health(P, "Experiment is pending"),
        "search-ranking-new": Health(P, "Waiting for experiment to finish: status has not been reconciled."),
        "search-ranking-live": Health(P, "Experiment is running"),
        "search-ranking-done": Health(H, "Experiment is successful"),
        "search-ranking-rejected": Health(D, "Experiment has failed"),
        # status.message is not shown for Experiments, unlike AnalysisRuns.
        "search-ranking-misconfigured": Health(D, "Experiment had an error"),
    },
    "argo/cronworkflows.yaml": {
        "nightly-backup-finished": Health(H, "stop strategy reached after 30 successful runs"),
        "nightly-backup-bad-schedule": Health(
            D, "cron schedule 0 25 * * * is malformed: end of range (25) above maximum (23): 25"
        ),
        "nightly-backup-cannot-submit": Health(
            D, 'Failed to submit Workflow: serviceaccounts "backup-runner" not found'
        ),
        "nightly-backup-new": Health(H, "CronWorkflow is healthy."),
        "nightly-backup-fixed": Health(H, "CronWorkflow is healthy."),
    },
    "argo/eventbuses.yaml": {
        "default": Health(H, "JetStream is deployed"),
        "bad-version": Health(
            D,
            'failed to get jetstream version, err: unsupported version "1.0-beta", '
            'supported versions: "2.10.10,latest"',
        ),
    },
    "argo/applicationsets.yaml": {
        "tenants": Health(H, "All applications have been generated successfully"),
        "tenants-broken-matrix": Health(D, "found 1 generators, but matrix requires exactly two generators"),
        "tenants-just-applied": Health(P, "Waiting for the status to be reported"),
        "tenants-create-failed": Health(
            D,
            "application destination spec for tenant-initech is invalid: "
            "namespace initech is not permitted in project 'tenants-restricted'",
        ),
        "tenants-rolling": Health(P, "ApplicationSet is performing rollout of step 2"),
    },
}

UPSTREAM_CASES = [(f, n, expected) for f, table in CASES.items() for n, expected in table.items()]


@pytest.mark.parametrize(("filename", "name", "expected"), UPSTREAM_CASES, ids=[c[1] for c in UPSTREAM_CASES])
def test_upstream_case(filename: str, name: str, expected: Health) -> None:
    assert HealthAssessor().assess(obj(filename, name)) == expected


@pytest.mark.parametrize("filename", list(CASES))
def test_every_fixture_has_an_expectation(filename: str) -> None:
    assert sorted(names(filename)) == sorted(CASES[filename])


def _with_status(kind: str, status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "odd", "namespace": "ops"},
        "spec": {},
        "status": status,
    }


# --- phases the scripts do not know, and results Argo CD cannot read -----------------------


@pytest.mark.parametrize("kind", ["AnalysisRun", "Experiment"])
@pytest.mark.parametrize("phase", ["", "Terminating", None, 3])
def test_unknown_phase_is_no_health(kind: str, phase: Any) -> None:
    # The script returns an empty table: Argo CD records no health for the resource.
    assert HealthAssessor().assess(_with_status(kind, {"phase": phase})) is None


def test_analysisrun_empty_message_replaces_the_default() -> None:
    run = _with_status("AnalysisRun", {"phase": "Failed", "message": ""})
    assert HealthAssessor().assess(run) == Health(D, "")


@pytest.mark.parametrize("message", [42, True, False, {"text": "x"}, ["x"]])
def test_analysisrun_non_string_message_is_no_health(message: Any) -> None:
    # A non-string message cannot be decoded into Argo CD's health struct.
    run = _with_status("AnalysisRun", {"phase": "Error", "message": message})
    assert HealthAssessor().assess(run) is None


def test_analysisrun_running_ignores_message() -> None:
    run = _with_status("AnalysisRun", {"phase": "Running", "message": 42})
    assert HealthAssessor().assess(run) == Health(P, "Analysis run is running")


def test_cronworkflow_condition_without_message() -> None:
    cron = _with_status("CronWorkflow", {"conditions": [{"type": "SubmissionError", "status": "True"}]})
    assert HealthAssessor().assess(cron) == Health(D, "")


def test_cronworkflow_first_listed_true_condition_wins() -> None:
    conditions = [
        {"type": "Completed", "status": "True", "message": "done"},
        {"type": "SpecError", "status": "True", "message": "bad spec"},
    ]
    assert HealthAssessor().assess(_with_status("CronWorkflow", {"conditions": conditions})) == Health(H, "done")


def test_cronworkflow_conditions_as_an_object_are_still_visited() -> None:
    # pairs() visits an object's values too.
    conditions = {"first": {"type": "SpecError", "status": "True", "message": "bad spec"}}
    assert HealthAssessor().assess(_with_status("CronWorkflow", {"conditions": conditions})) == Health(D, "bad spec")


def test_eventbus_falls_back_to_reason() -> None:
    conditions = [{"type": "Deployed", "status": "False", "reason": "JetStreamStatefulSetFailed"}]
    bus = _with_status("EventBus", {"conditions": conditions})
    assert HealthAssessor().assess(bus) == Health(D, "JetStreamStatefulSetFailed")


def test_eventbus_empty_message_is_kept() -> None:
    # "" is true in Lua: the reason is not used.
    conditions = [{"type": "Deployed", "status": "True", "message": "", "reason": "Succeeded"}]
    assert HealthAssessor().assess(_with_status("EventBus", {"conditions": conditions})) == Health(H, "")


def test_eventbus_deployed_unknown_keeps_waiting() -> None:
    conditions = [{"type": "Deployed", "status": "Unknown", "message": "reconciling"}]
    bus = _with_status("EventBus", {"conditions": conditions})
    assert HealthAssessor().assess(bus) == Health(P, "Waiting for initialization")


def test_eventbus_conditions_as_an_object_are_not_visited() -> None:
    # ipairs() sees no items in an object.
    conditions = {"deployed": {"type": "Deployed", "status": "False", "message": "broken"}}
    bus = _with_status("EventBus", {"conditions": conditions})
    assert HealthAssessor().assess(bus) == Health(P, "Waiting for initialization")


def test_applicationset_error_wins_over_listed_order() -> None:
    conditions = [
        {"type": "RolloutProgressing", "status": "True", "message": "step 1"},
        {"type": "ResourcesUpToDate", "status": "True", "message": "up to date"},
        {"type": "ErrorOccurred", "status": "True", "message": "generator failed"},
    ]
    appset = _with_status("ApplicationSet", {"conditions": conditions})
    assert HealthAssessor().assess(appset) == Health(D, "generator failed")


def test_applicationset_without_known_conditions_waits() -> None:
    conditions = [{"type": "ParametersGenerated", "status": "True", "message": "ok"}]
    appset = _with_status("ApplicationSet", {"conditions": conditions})
    assert HealthAssessor().assess(appset) == Health(P, "Waiting for the status to be reported")


# --- malformed objects: the script's own outcome, never an exception -----------------------

MALFORMED: list[tuple[str, Any, Health | None]] = [
    # A string status reads every field as nil (the string library has none of these keys).
    ("AnalysisRun", "Running", None),
    ("Experiment", "Running", None),
    ("CronWorkflow", "Completed", Health(H, "CronWorkflow is healthy.")),
    ("EventBus", "Deployed", Health(P, "Waiting for initialization")),
    ("ApplicationSet", "ok", Health(P, "Waiting for the status to be reported")),
    # A number (or boolean) status cannot be indexed: the script fails.
    ("AnalysisRun", 7, Health(U, "attempt to index a non-table object(number) with key 'phase'")),
    ("Experiment", True, Health(U, "attempt to index a non-table object(boolean) with key 'phase'")),
    ("CronWorkflow", 7, Health(U, "attempt to index a non-table object(number) with key 'conditions'")),
    ("EventBus", False, Health(U, "attempt to index a non-table object(boolean) with key 'conditions'")),
    ("ApplicationSet", 0, Health(U, "attempt to index a non-table object(number) with key 'conditions'")),
    # A list status has no named fields.
    ("AnalysisRun", ["Running"], None),
    ("CronWorkflow", [{"type": "Completed"}], Health(H, "CronWorkflow is healthy.")),
    # Conditions that are not a list of objects.
    ("CronWorkflow", {"conditions": "SpecError"}, Health(U, "bad argument #1 to pairs (table expected, got string)")),
    ("ApplicationSet", {"conditions": 3}, Health(U, "bad argument #1 to pairs (table expected, got number)")),
    ("EventBus", {"conditions": "Deployed"}, Health(U, "bad argument #1 to ipairs (table expected, got string)")),
    # Argo CD drops the null items of an array: they do not end ipairs() as holes would.
    (
        "EventBus",
        {"conditions": ["Deployed", None, 5]},
        Health(U, "attempt to index a non-table object(number) with key 'type'"),
    ),
    ("EventBus", {"conditions": [None, {"type": "Deployed", "status": "True", "message": "up"}]}, Health(H, "up")),
    ("EventBus", {"conditions": [5]}, Health(U, "attempt to index a non-table object(number) with key 'type'")),
    ("CronWorkflow", {"conditions": ["Completed", None]}, Health(H, "CronWorkflow is healthy.")),
    (
        "ApplicationSet",
        {"conditions": [True]},
        Health(U, "attempt to index a non-table object(boolean) with key 'type'"),
    ),
    ("ApplicationSet", {"conditions": []}, Health(P, "Waiting for the status to be reported")),
]


@pytest.mark.parametrize(("kind", "status", "expected"), MALFORMED)
def test_malformed_status(kind: str, status: Any, expected: Health | None) -> None:
    assert HealthAssessor().assess(_with_status(kind, status)) == expected


ODD_VALUES: list[Any] = [None, "", "x", 0, 1.5, True, False, [], {}, [None], [1, "a"], {"a": None}, {"a": [{}]}]


@pytest.mark.parametrize("kind", [*ARGO_LUA_CHECKS, "Rollout", "Workflow"])
@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
def test_bad_input_never_raises(kind: str, value: Any) -> None:
    assessor = HealthAssessor()
    shapes = [
        _with_status(kind, value),
        _with_status(kind, {"phase": value, "message": value, "conditions": value}),
        _with_status(kind, {"conditions": [value, {"type": value, "status": value, "message": value}]}),
        _with_status(kind, {"conditions": [{"type": "Deployed", "status": "True", "message": value}]}),
        {**_with_status(kind, {}), "metadata": value, "spec": value},
    ]
    for shape in shapes:
        health = assessor.assess(shape)
        assert health is None or isinstance(health, Health)


# --- kinds without a check, precedence --------------------------------------------------------


@pytest.mark.parametrize("kind", ["EventSource", "Sensor", "AnalysisTemplate", "WorkflowTemplate"])
def test_argo_kinds_without_a_health_check(kind: str) -> None:
    # Argo CD v3.5.1 ships no health.lua for these: no health, not a guess.
    assert HealthAssessor().assess(_with_status(kind, {"conditions": [{"type": "Ready", "status": "False"}]})) is None


ALWAYS_SUSPENDED = 'return {status = "Suspended", message = "held by the platform team"}\n'


def test_argocd_cm_script_wins_over_the_native_check() -> None:
    scripts = LuaHealthScripts.from_argocd_cm(
        {"resource.customizations.health.argoproj.io_AnalysisRun": ALWAYS_SUSPENDED}
    )
    run = obj("argo/analysisruns.yaml", "checkout-errors-failed")
    with HealthAssessor(scripts) as assessor:
        assert assessor.assess(run) == Health(S, "held by the platform team")


def test_lua_dir_script_wins_over_the_native_check(tmp_path: Path) -> None:
    script = tmp_path / "argoproj.io" / "EventBus" / "health.lua"
    script.parent.mkdir(parents=True)
    script.write_text(ALWAYS_SUSPENDED, encoding="utf-8")
    bus = obj("argo/eventbuses.yaml", "bad-version")
    with HealthAssessor(LuaHealthScripts.from_dir(tmp_path)) as assessor:
        assert assessor.assess(bus) == Health(S, "held by the platform team")
        # Other kinds keep their native checks.
        assert assessor.assess(obj("argo/cronworkflows.yaml", "nightly-backup-new")) == Health(
            H, "CronWorkflow is healthy."
        )


def test_pending_deletion_comes_first() -> None:
    appset = obj("argo/applicationsets.yaml", "tenants")
    appset["metadata"]["deletionTimestamp"] = "2025-08-24T00:00:00Z"
    assert HealthAssessor().assess(appset) == Health(P, "Pending deletion")


# --- Workflow (gitops-engine, Go) and Rollout results ------------------------------------------


def _workflow(status: Any) -> dict[str, Any]:
    wf = _with_status("Workflow", status)
    wf["spec"] = {"entrypoint": "main", "notAWorkflowField": "ignored"}
    if status is None:
        del wf["status"]
    return wf


WORKFLOWS: list[tuple[Any, Health]] = [
    ({"phase": "Running", "message": "step 2 of 5 running"}, Health(P, "step 2 of 5 running")),
    ({"phase": "Succeeded", "message": "all steps passed"}, Health(H, "all steps passed")),
    (None, Health(P, "")),
    ({"phase": "Pending"}, Health(P, "")),
    ({"phase": "Failed", "message": "child 'build' failed"}, Health(D, "child 'build' failed")),
    ({"phase": "Error", "message": "pod deleted"}, Health(D, "pod deleted")),
    ({"phase": "Skipped", "message": "when condition false"}, Health(U, "when condition false")),
    # gitops-engine reads phase and message with NestedString and ignores its errors.
    ("Running", Health(P, "")),
    ({"phase": 3, "message": "odd"}, Health(P, "odd")),
    ({"phase": "Failed", "message": ["not", "text"]}, Health(D, "")),
]


@pytest.mark.parametrize(("status", "expected"), WORKFLOWS)
def test_workflow(status: Any, expected: Health) -> None:
    assert HealthAssessor().assess(_workflow(status)) == expected


def test_rollout_phase_with_non_string_message_is_no_health() -> None:
    rollout = _with_status("Rollout", {"phase": "Healthy", "message": 7})
    rollout["metadata"]["generation"] = 1
    rollout["status"]["observedGeneration"] = "1"
    assert HealthAssessor().assess(rollout) is None


def test_rollout_string_status_reads_fields_as_nil() -> None:
    # Every field of a string reads as nil, up to the legacy branch's ipairs over no conditions.
    rollout = _with_status("Rollout", "Healthy")
    assert HealthAssessor().assess(rollout) == Health(U, "bad argument #1 to ipairs (table expected, got nil)")


def test_crd_null_condition_items_are_dropped() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "backups.ops.example.com"},
        "spec": {"group": "ops.example.com", "names": {"kind": "Backup", "plural": "backups"}, "scope": "Namespaced"},
        "status": {"conditions": [None, {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}]},
    }
    assert HealthAssessor().assess(crd) == Health(H, "CRD is healthy")
