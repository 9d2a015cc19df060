"""assess_rollout: stuck although healthy, Degraded for a real reason, undecidable, or not Degraded; on the Rollouts of
tests/bundles/rollouts-mixed as kubectl prints them, and on variations of them."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from argo_doctor.facts.rollouts import (
    PodSummary,
    RolloutInputs,
    RolloutState,
    analysis_problem,
    assess_rollout,
    duration,
    metric_query,
    rollout_inputs,
)
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES

MIXED = BUNDLES / "rollouts-mixed" / "objects"

Raw = dict[str, Any]


def namespace(ns: str, folder: str = "") -> tuple[Raw, list[Raw], list[Raw], list[Raw]]:
    """The Rollout, ReplicaSets, pods and AnalysisRuns of one namespace file of the bundle (fresh copies)."""
    path = (BUNDLES / folder / "objects" if folder else MIXED) / f"{ns}.yaml"
    items = yaml.safe_load(path.read_text())["items"]
    by_kind: dict[str, list[Raw]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], []).append(item)
    (rollout,) = by_kind["Rollout"]
    return rollout, by_kind.get("ReplicaSet", []), by_kind.get("Pod", []), by_kind.get("AnalysisRun", [])


def verdict(ns: str) -> Any:
    rollout, rss, pods, runs = namespace(ns)
    return assess_rollout(rollout, rss, pods, runs)


# -- stuck --------------------------------------------------------------------------------------------------------
def test_a_canary_degraded_for_the_deadline_with_every_pod_ready_is_stuck() -> None:
    v = verdict("shop")
    assert v.state == RolloutState.STUCK
    assert v.summary == ('Degraded (ProgressDeadlineExceeded) although all 3 pods of ReplicaSet web-6d4b9c7f58 are '
                         "ready and available")
    assert v.message == 'ProgressDeadlineExceeded: ReplicaSet "web-6d4b9c7f58" has timed out progressing.'
    assert v.since == datetime(2026, 11, 24, 8, 16, tzinfo=UTC)
    assert (v.namespace, v.name, v.desired, v.pod_hash) == ("shop", "web", 3, "6d4b9c7f58")
    assert [p.ready for p in v.pods] == [True, True, True] and all(p.problem is None for p in v.pods)
    assert all(p.name.startswith("web-6d4b9c7f58-") for p in v.pods)
    assert not v.restart_pending and v.restart_at is None
    assert v.resource_version == "48210137"
    assert any("3 of 3 pods Running and Ready" in r for r in v.reasons)


def test_a_blue_green_rollout_can_be_stuck_too() -> None:
    v = verdict("billing")
    assert v.state == RolloutState.STUCK and v.desired == 2 and len(v.pods) == 2


def test_a_single_replica_rollout_is_stuck_with_desired_one() -> None:
    v = verdict("search")
    assert v.state == RolloutState.STUCK and v.desired == 1


def test_replicas_default_to_one() -> None:
    rollout, rss, pods, runs = namespace("search")
    del rollout["spec"]["replicas"]
    assert assess_rollout(rollout, rss, pods, runs).desired == 1


def test_the_condition_alone_says_deadline_when_the_message_does_not() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["message"] = ""
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.STUCK
    assert v.message == 'ReplicaSet "web-6d4b9c7f58" has timed out progressing.'


def test_the_phase_is_derived_from_the_conditions_when_the_status_has_none() -> None:
    rollout, rss, pods, runs = namespace("shop")
    del rollout["status"]["phase"], rollout["status"]["message"]
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


def test_unrelated_objects_of_the_namespace_are_ignored() -> None:
    rollout, rss, pods, runs = namespace("shop")
    _, other_rss, other_pods, _ = namespace("billing")
    for obj in other_rss + other_pods:
        obj["metadata"]["namespace"] = "shop"
    v = assess_rollout(rollout, rss + other_rss, pods + other_pods, runs)
    assert v.state == RolloutState.STUCK and len(v.pods) == 3


def test_an_old_restart_before_the_progress_window_is_fine_but_a_recent_one_is_not() -> None:
    rollout, rss, pods, runs = namespace("shop")
    status = pods[0]["status"]["containerStatuses"][0]
    status["restartCount"] = 1
    status["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                          "finishedAt": "2026-11-20T02:00:00Z", "startedAt": "2026-11-19T02:00:00Z"}}
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK
    status["lastState"]["terminated"]["finishedAt"] = "2026-11-24T08:10:00Z"  # inside the 600 s before the timeout
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED
    assert "restarted 1 time (last exit: OOMKilled, exit code 137" in v.summary


# -- degraded for a real reason -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("ns", "expected"), [
    ("orders", "CrashLoopBackOff (container orders-api, 9 restarts, last exit: Error, exit code 1"),
    ("media", 'ImagePullBackOff (container thumbnailer): Back-off pulling image "registry.example.com/media/'
              'thumbnailer:2.8.0-rc1"'),
    ("batch", "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."),
    ("config", 'CreateContainerConfigError (container settings-api): secret "settings-api-db" not found'),
    ("reviews", "Running but not Ready: containers with unready status: [reviews-api]"),
])
def test_pods_that_cannot_run_are_real_reasons(ns: str, expected: str) -> None:
    v = verdict(ns)
    assert v.state == RolloutState.DEGRADED
    (bad,) = [p for p in v.pods if p.problem]
    assert bad.problem is not None and bad.problem.startswith(expected)
    assert v.reasons[0] == f"pod {bad.name}: {bad.problem}"
    assert v.reasons[-1].startswith("0 of 1 pods of ReplicaSet ")


def test_a_crash_loop_names_the_last_exit() -> None:
    (bad,) = [p for p in verdict("orders").pods if p.problem]
    assert bad.restarts == 9 and not bad.ready and bad.phase == "Running"
    assert bad.problem == ("CrashLoopBackOff (container orders-api, 9 restarts, last exit: Error, exit code 1, at "
                           "2026-11-24T10:26:51Z)")


def test_a_failed_analysis_run_gives_its_metric_message_value_and_query() -> None:
    v = verdict("payments")
    assert v.state == RolloutState.DEGRADED
    assert v.reasons[0].startswith("aborted at 2026-11-24T09:57:00Z (RolloutAborted: Rollout aborted update to "
                                   "revision 5: Step-based analysis phase error/failed")
    run = v.reasons[1]
    assert run.startswith('AnalysisRun checkout-6f8b9d5c7b-5-1 Failed: Metric "success-rate" assessed Failed due to '
                          "failed (2) > failureLimit (1) — metric success-rate Failed (")
    assert "last failed value [0.7921]" in run and "failed 2" in run
    assert 'query prometheus: sum(irate(istio_requests_total{reporter="source"' in run


def test_an_analysis_run_fails_the_rollout_even_before_it_aborts() -> None:
    rollout, rss, pods, runs = namespace("payments")
    for key in ("abort", "abortedAt"):
        del rollout["status"][key]
    rollout["status"]["conditions"][-1].update(reason="ProgressDeadlineExceeded",
                                               message='ReplicaSet "checkout-6f8b9d5c7b" has timed out progressing.')
    rollout["status"]["message"] = ('ProgressDeadlineExceeded: ReplicaSet "checkout-6f8b9d5c7b" has timed out '
                                    "progressing.")
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.DEGRADED and v.reasons[0].startswith("AnalysisRun checkout-6f8b9d5c7b-5-1 Failed")


def test_a_successful_or_unrelated_analysis_run_is_no_reason() -> None:
    rollout, rss, pods, _ = namespace("shop")
    _, _, _, failed = namespace("payments")
    other = copy.deepcopy(failed[0])  # another Rollout's run in the same namespace
    other["metadata"]["namespace"] = "shop"
    mine = copy.deepcopy(failed[0])
    mine["metadata"].update(namespace="shop", name="web-6d4b9c7f58-9-1")
    mine["metadata"]["labels"]["rollouts-pod-template-hash"] = "6d4b9c7f58"
    mine["metadata"]["ownerReferences"][0].update(name="web", uid=rollout["metadata"]["uid"])
    mine["status"]["phase"] = "Successful"
    assert assess_rollout(rollout, rss, pods, [other, mine]).state == RolloutState.STUCK
    mine["status"]["phase"] = "Error"
    assert assess_rollout(rollout, rss, pods, [other, mine]).state == RolloutState.DEGRADED


def test_aborted_by_hand() -> None:
    v = verdict("auth")
    assert v.state == RolloutState.DEGRADED
    assert v.reasons == ("aborted at 2026-11-24T07:30:00Z (RolloutAborted: Rollout aborted update to revision 12)",)


def test_an_invalid_spec() -> None:
    v = verdict("catalog")
    assert v.state == RolloutState.DEGRADED
    assert v.reasons[0].startswith('InvalidSpec: The Rollout "catalog-api" is invalid: spec.strategy.canary.'
                                   "stableService")
    assert v.since == datetime(2026, 11, 24, 10, 12, tzinfo=UTC)


def test_a_paused_rollout_is_never_stuck() -> None:
    v = verdict("ads")
    assert v.state == RolloutState.DEGRADED
    assert v.reasons == ("paused by the controller (BlueGreenPause since 2026-11-24T09:25:00Z): it waits to be "
                         "promoted or resumed",)
    rollout, rss, pods, runs = namespace("shop")
    rollout["spec"]["paused"] = True
    assert assess_rollout(rollout, rss, pods, runs).reasons[0].startswith("paused by hand (spec.paused: true)")


def test_controller_pause_without_pause_conditions_means_resumed() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["controllerPause"] = True
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


def test_a_replicaset_that_cannot_create_pods() -> None:
    rollout, rss, pods, runs = namespace("shop")
    current = next(r for r in rss if r["metadata"]["name"] == "web-6d4b9c7f58")
    current["status"].update(replicas=2, readyReplicas=2, availableReplicas=2, conditions=[{
        "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
        "message": 'pods "web-6d4b9c7f58-x" is forbidden: exceeded quota: compute, requested: cpu=100m'}])
    v = assess_rollout(rollout, rss, pods[:2], runs)
    assert v.state == RolloutState.DEGRADED
    assert v.reasons[0] == ('ReplicaSet web-6d4b9c7f58 cannot create pods: pods "web-6d4b9c7f58-x" is forbidden: '
                            "exceeded quota: compute, requested: cpu=100m")


# -- undetermined ---------------------------------------------------------------------------------------------------
def test_unknown_pods_or_replicasets_leave_it_undetermined() -> None:
    rollout, rss, _, runs = namespace("shop")
    v = assess_rollout(rollout, rss, None, runs)
    assert v.state == RolloutState.UNDETERMINED and v.reasons == ("missing: the pods of namespace shop",)
    v = assess_rollout(rollout, None, None, None)
    assert v.reasons == ("missing: the ReplicaSets of namespace shop", "missing: the pods of namespace shop")


def test_unknown_analysis_runs_matter_only_when_the_rollout_uses_analysis() -> None:
    rollout, rss, pods, _ = namespace("shop")
    assert assess_rollout(rollout, rss, pods, None).state == RolloutState.STUCK
    rollout["spec"]["strategy"]["canary"]["steps"].insert(1, {"analysis": {"templates": [{"templateName": "x"}]}})
    v = assess_rollout(rollout, rss, pods, None)
    assert v.state == RolloutState.UNDETERMINED
    assert v.reasons == ("missing: the AnalysisRuns of namespace shop (the Rollout uses analysis)",)
    assert assess_rollout(rollout, rss, pods, []).state == RolloutState.STUCK  # known: there are none


def test_an_empty_pod_list_is_not_the_same_as_an_unknown_one() -> None:
    rollout, rss, _, runs = namespace("shop")
    v = assess_rollout(rollout, rss, [], runs)
    assert v.state == RolloutState.UNDETERMINED
    assert v.reasons == ("the input holds 0 of the 3 pods of ReplicaSet web-6d4b9c7f58",)


def test_real_reasons_visible_on_the_rollout_need_no_pods() -> None:
    rollout, _, _, _ = namespace("auth")
    assert assess_rollout(rollout, None, None, None).state == RolloutState.DEGRADED


def test_a_pending_restart_leaves_it_undetermined() -> None:
    v = verdict("profile")
    assert v.state == RolloutState.UNDETERMINED and v.restart_pending
    assert v.restart_at == datetime(2026, 11, 24, 10, 29, 35, tzinfo=UTC)
    assert v.reasons[0].startswith("a restart is already pending (spec.restartAt 2026-11-24T10:29:35Z, "
                                   "status.restartedAt 2026-11-18T07:30:00Z)")


def test_a_restart_that_completed_is_not_pending() -> None:
    rollout, rss, pods, runs = namespace("profile")
    rollout["status"]["restartedAt"] = "2026-11-24T10:29:35.000Z"
    rollout["status"]["observedGeneration"] = "15"
    v = assess_rollout(rollout, rss, pods, runs)
    assert not v.restart_pending and v.state == RolloutState.STUCK


@pytest.mark.parametrize("change", ["terminating", "lagging-status", "no-hash", "scaled-to-zero", "unknown-reason"])
def test_changing_or_unexplained_states_are_undetermined(change: str) -> None:
    rollout, rss, pods, runs = namespace("shop")
    current = next(r for r in rss if r["metadata"]["name"] == "web-6d4b9c7f58")
    if change == "terminating":
        pods[0]["metadata"]["deletionTimestamp"] = "2026-11-24T10:29:50Z"
    elif change == "lagging-status":
        current["status"]["availableReplicas"] = 2
    elif change == "no-hash":
        del rollout["status"]["currentPodHash"]
    elif change == "scaled-to-zero":
        current["spec"]["replicas"] = 0
    else:
        rollout["status"]["message"] = "SomethingNew: the controller of tomorrow"
        rollout["status"]["conditions"][-1]["reason"] = "SomethingNew"
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.UNDETERMINED


# -- not degraded ---------------------------------------------------------------------------------------------------
def test_a_healthy_rollout_is_not_degraded() -> None:
    v = verdict("news")
    assert v.state == RolloutState.NOT_DEGRADED and v.reasons == () and v.summary == "Healthy"


# -- the pieces -----------------------------------------------------------------------------------------------------
def test_as_dict_is_json_ready() -> None:
    doc = verdict("shop").as_dict()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["state"] == "stuck" and doc["since"] == "2026-11-24T08:16:00Z" and len(doc["pods"]) == 3
    assert set(doc["pods"][0]) == {"name", "phase", "ready", "restarts", "problem"}


def test_pod_summaries_are_the_interface_type() -> None:
    assert all(isinstance(p, PodSummary) for p in verdict("orders").pods)


def test_metric_queries_of_other_providers() -> None:
    assert metric_query({"provider": {"datadog": {"apiVersion": "v2", "queries": {"a": "sum:requests.error{*}",
                                                                                    "b": "sum:requests{*}"}}}}) == (
        "datadog: a=sum:requests.error{*}; b=sum:requests{*}")
    assert metric_query({"provider": {"web": {"url": "http://checker/health"}}}) == "web: http://checker/health"
    assert metric_query({"provider": {"job": {"spec": {}}}}) == "job"
    assert metric_query({}) is None


def test_dry_run_metrics_are_not_reasons() -> None:
    _, _, _, runs = namespace("payments")
    run = runs[0]
    run["spec"]["dryRun"] = [{"metricName": "success-rate"}]
    assert "metric success-rate" not in analysis_problem(run)


def test_duration() -> None:
    from datetime import timedelta
    assert [duration(timedelta(seconds=s)) for s in (42, 600, 8040, 7200, 3 * 86400 + 4 * 3600, -5)] == [
        "42 s", "10 min", "2 h 14 min", "2 h", "3 d 4 h", "0 s"]


# -- rollout_inputs: not collected is not none ----------------------------------------------------------------------
def _snapshot(items: list[Raw], unread: list[dict[str, str]] | None = None) -> Snapshot:
    snap = Snapshot("test")
    for item in items:
        snap.add(RawObject(item, "objects/test.yaml"))
    snap.unread = unread or []
    return snap


def test_rollout_inputs_are_none_for_kinds_the_namespace_lacks() -> None:
    rollout, rss, pods, _ = namespace("shop")
    snap = _snapshot([rollout, *rss, *pods])
    obj = snap.get("Rollout", "web", "shop", "argoproj.io")
    assert obj is not None
    inputs = rollout_inputs(snap, obj)
    assert isinstance(inputs, RolloutInputs)
    assert len(inputs.replicasets or []) == 2 and len(inputs.pods or []) == 3 and inputs.analysis_runs is None
    snap = _snapshot([rollout, *rss])
    obj = snap.get("Rollout", "web", "shop", "argoproj.io")
    assert obj is not None and rollout_inputs(snap, obj).pods is None


def test_rollout_inputs_are_none_for_kinds_the_collection_was_refused() -> None:
    rollout, rss, pods, _ = namespace("shop")
    snap = _snapshot([rollout, *rss, *pods], unread=[{"need": "kind:Pod", "what": "list pods", "reason": "403"}])
    obj = snap.get("Rollout", "web", "shop", "argoproj.io")
    assert obj is not None and rollout_inputs(snap, obj).pods is None


def test_a_retried_or_fully_promoted_abort_is_in_transition() -> None:
    rollout, rss, pods, runs = namespace("auth")
    rollout["status"]["abort"] = None  # what `kubectl argo rollouts retry` and Argo CD's retry action leave
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED and v.reasons[0].startswith("a retry is pending")
    rollout["status"].update(abort=True, promoteFull=True)
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED and v.reasons[0].startswith("a full promotion is pending")


def test_a_message_alone_can_name_an_invalid_spec() -> None:
    rollout, rss, pods, runs = namespace("news")
    rollout["status"].update(phase="Degraded", message="InvalidSpec", conditions=[])
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.DEGRADED
    assert v.reasons == ("InvalidSpec: the spec is invalid (the status names no condition)",)


def test_rollout_inputs_trust_an_empty_namespace_only_when_the_kind_was_listed() -> None:
    rollout, rss, _, _ = namespace("shop")
    snap = _snapshot([rollout, *rss])
    snap.meta = {"options": {"needs": ["Pod", "apps/ReplicaSet", "argoproj.io/Rollout"]},
                 "absent": ["AnalysisRun (argoproj.io/v1alpha1): not served by this cluster"]}
    obj = snap.get("Rollout", "web", "shop", "argoproj.io")
    assert obj is not None
    inputs = rollout_inputs(snap, obj)
    assert inputs.pods == [] and inputs.analysis_runs == []  # listed cluster-wide / not served: there are none
    v = assess_rollout(obj.raw, *inputs)
    assert v.state == RolloutState.UNDETERMINED  # the ReplicaSet says 3 pods exist: the input does not hold them


def _with_restart(finished: str) -> list[dict[str, Any]]:
    """A stuck Rollout (deadline passed at 08:12:31) whose first pod's container restarted, finishing then."""
    from tests.remediate import cluster

    objects = cluster.stuck("w")
    pod = next(o for o in objects if o["kind"] == "Pod")
    status = pod["status"]["containerStatuses"][0]
    status["restartCount"] = 1
    status["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-23T07:00:00Z",
                                          "finishedAt": finished}}
    return objects


@pytest.mark.parametrize(("finished", "state"), [
    ("2026-11-23T08:05:00Z", RolloutState.UNDETERMINED),  # inside the progress window: may be why it timed out
    ("2026-11-23T10:30:00Z", RolloutState.STUCK),  # after the deadline, Ready again: did not cause it
    ("2026-11-23T07:50:00Z", RolloutState.STUCK),  # before the window began
])
def test_a_restart_counts_only_inside_the_progress_window(finished: str, state: RolloutState) -> None:
    objects = _with_restart(finished)
    by_kind = {k: [o for o in objects if o["kind"] == k] for k in ("Rollout", "ReplicaSet", "Pod")}
    verdict = assess_rollout(by_kind["Rollout"][0], by_kind["ReplicaSet"], by_kind["Pod"], [])
    assert verdict.state is state, verdict.summary
