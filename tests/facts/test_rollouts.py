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
    rollout["status"]["currentStepIndex"] = 5  # past its steps, as before
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


# -- Argo Rollouts' own semantics: what must never be called stuck (rollout/sync.go, rollout/restart.go) -------------
def _background_run(rollout: Raw, phase: str) -> Raw:
    """A background AnalysisRun of the current revision, as the controller creates it."""
    name = f"web-{rollout['status']['currentPodHash']}-9"
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
            "metadata": {"name": name, "namespace": "shop",
                         "labels": {"rollout-type": "Background",
                                    "rollouts-pod-template-hash": rollout["status"]["currentPodHash"]},
                         "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web",
                                              "uid": rollout["metadata"]["uid"], "controller": True}]},
            "spec": {"metrics": [{"name": "error-rate", "interval": "1m",
                                  "provider": {"prometheus": {"query": "sum(rate(errors[1m]))"}}}]},
            "status": {"phase": phase, "startedAt": "2026-11-24T08:00:00Z"} if phase else {}}


@pytest.mark.parametrize("phase", ["Running", "Pending", ""])
def test_a_running_background_analysis_is_mid_analysis_not_stuck(phase: str) -> None:
    rollout, rss, pods, _ = namespace("shop")
    rollout["spec"]["strategy"]["canary"]["analysis"] = {"templates": [{"templateName": "error-rate"}]}
    run = _background_run(rollout, phase)
    rollout["status"]["canary"] = {"currentBackgroundAnalysisRunStatus": {"name": run["metadata"]["name"],
                                                                         "status": phase or "Pending"}}
    v = assess_rollout(rollout, rss, pods, [run])
    assert v.state == RolloutState.UNDETERMINED
    assert v.reasons == (f"AnalysisRun web-6d4b9c7f58-9 of the current revision is {phase or 'not started'}: the "
                         "Rollout is mid-analysis",)
    run["status"] = {"phase": "Successful"}
    assert assess_rollout(rollout, rss, pods, [run]).state == RolloutState.STUCK


def test_a_blue_green_pre_promotion_analysis_running_is_mid_analysis() -> None:
    rollout, rss, pods, _ = namespace("billing")
    rollout["spec"]["strategy"]["blueGreen"]["prePromotionAnalysis"] = {"templates": [{"templateName": "smoke"}]}
    run = _background_run(rollout, "Running")
    run["metadata"].update(namespace="billing", name="invoices-pre", labels={
        "rollout-type": "PrePromotion", "rollouts-pod-template-hash": rollout["status"]["currentPodHash"]})
    run["metadata"]["ownerReferences"][0]["name"] = "invoices"
    rollout["status"]["blueGreen"] = {"prePromotionAnalysisRunStatus": {"name": "invoices-pre", "status": "Running"}}
    v = assess_rollout(rollout, rss, pods, [run])
    assert v.state == RolloutState.UNDETERMINED
    assert v.reasons == ("AnalysisRun invoices-pre of the current revision is Running: the Rollout is mid-analysis",)
    assert assess_rollout(rollout, rss, pods, None).reasons == (
        "missing: the AnalysisRuns of namespace billing (the Rollout uses analysis)",)


def test_an_experiment_of_the_current_revision_is_running() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["canary"] = {"currentExperiment": "web-6d4b9c7f58-9-2"}
    v = assess_rollout(rollout, rss, pods, runs)
    assert (v.state, v.reasons) == (RolloutState.UNDETERMINED,
                                    ("Experiment web-6d4b9c7f58-9-2 of the current revision is running",))
    rollout["status"]["canary"] = {}
    rollout["spec"]["strategy"]["canary"]["steps"].append({"experiment": {"templates": [
        {"name": "baseline", "specRef": "stable"}], "analyses": [{"name": "compare", "templateName": "compare"}]}})
    rollout["status"]["currentStepIndex"] = 5
    assert assess_rollout(rollout, rss, pods, None).reasons == (
        "missing: the AnalysisRuns of namespace shop (the Rollout uses analysis)",)  # experiment analyses unknown


@pytest.mark.parametrize(("index", "kind"), [(1, "pause"), (3, "pause")])
def test_a_rollout_at_a_step_the_controller_never_times_out_is_not_stuck(index: int, kind: str) -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["currentStepIndex"] = index
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED
    assert v.reasons == (f"it is at step {index} of 4 ({kind}), where the controller waits and never times it out",)


def test_a_canary_mid_update_is_judged_with_its_stable_replicaset() -> None:
    """Ready canary pods, a stable ReplicaSet still serving: a restart would evict the stable pods and not promote."""
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["stableRS"] = "qrd7967jtn"
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED
    (reason,) = v.reasons
    assert reason.startswith("a canary update is under way: stable ReplicaSet web-qrd7967jtn still serves and "
                             "web-6d4b9c7f58 is the new one; a restart would evict the stable pods too")
    assert "kubectl argo rollouts promote web -n shop" in reason and "kubectl argo rollouts abort web -n shop" in reason


def _evicted(pod: Raw) -> Raw:
    """A copy of a pod of the ReplicaSet as the kubelet leaves it after an eviction."""
    left = copy.deepcopy(pod)
    left["metadata"]["name"] = pod["metadata"]["name"][:-5] + "x2k9p"
    left["status"] = {"phase": "Failed", "reason": "Evicted", "startTime": "2026-11-20T01:00:00Z",
                      "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 64Mi."}
    return left


def test_a_leftover_evicted_pod_beside_ready_replacements_is_no_reason() -> None:
    rollout, rss, pods, runs = namespace("shop")
    v = assess_rollout(rollout, rss, [*pods, _evicted(pods[0])], runs)
    assert v.state == RolloutState.STUCK
    assert v.summary.endswith("although all 3 pods of ReplicaSet web-6d4b9c7f58 are ready and available")
    assert any("ended (Failed: Evicted: The node was low on resource: memory." in r and "and was replaced" in r
               for r in v.reasons)
    v = assess_rollout(rollout, rss, [*pods[1:], _evicted(pods[0])], runs)  # not replaced yet: a real reason
    assert v.state == RolloutState.DEGRADED
    assert v.reasons[0].startswith("pod web-6d4b9c7f58-") and ": Failed: Evicted: The node was low" in v.reasons[0]


@pytest.mark.parametrize(("change", "state", "reason"), [
    ("abort-pending", RolloutState.DEGRADED, "aborted ("),
    ("generation-behind", RolloutState.UNDETERMINED,
     "the controller has not yet observed generation 15 of the Rollout (observed 14): its status may be stale"),
    ("replica-failure", RolloutState.DEGRADED,
     'ReplicaFailure: pods "web-6d4b9c7f58-" is forbidden: exceeded quota: compute'),
    ("terminating-beside-ready", RolloutState.UNDETERMINED, "pod web-6d4b9c7f58-"),
    ("restart-unreadable-time", RolloutState.UNDETERMINED,
     "a restart is already pending (spec.restartAt 'yesterday', a time that cannot be read, status.restartedAt "
     "2026-11-18T07:30:00Z): wait for it"),
    ("inconclusive-run", RolloutState.DEGRADED, "AnalysisRun web-6d4b9c7f58-9 Inconclusive"),
    ("scaled-to-zero", RolloutState.UNDETERMINED,
     "the current ReplicaSet web-6d4b9c7f58 is scaled to 0: there is no pod to judge"),
    ("paused-with-stale-timeout", RolloutState.NOT_DEGRADED, "Paused"),
    ("ready-unknown", RolloutState.UNDETERMINED, "pod web-6d4b9c7f58-"),
])
def test_inputs_where_the_verdict_must_not_be_stuck(change: str, state: RolloutState, reason: str) -> None:
    """Each with its state and its reason, so that a mutant that reaches STUCK another way fails too."""
    rollout, rss, pods, runs = namespace("shop")
    current = next(r for r in rss if r["metadata"]["name"] == "web-6d4b9c7f58")
    if change == "abort-pending":
        rollout["status"]["abort"] = True  # set by `kubectl argo rollouts abort`, not processed yet
    elif change == "generation-behind":
        rollout["metadata"]["generation"] = 15
    elif change == "replica-failure":
        rollout["status"]["conditions"].append({
            "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
            "message": 'pods "web-6d4b9c7f58-" is forbidden: exceeded quota: compute'})
    elif change == "terminating-beside-ready":
        pods.append(copy.deepcopy(pods[0]))
        pods[-1]["metadata"]["name"] += "-old"
        pods[-1]["metadata"]["deletionTimestamp"] = "2026-11-24T10:29:50Z"
    elif change == "restart-unreadable-time":
        rollout["spec"]["restartAt"] = "yesterday"
    elif change == "inconclusive-run":
        runs = [_background_run(rollout, "Inconclusive")]
    elif change == "scaled-to-zero":
        current["spec"]["replicas"] = 0
        current["status"] = {"replicas": 0, "observedGeneration": 4}
        pods = []
    elif change == "paused-with-stale-timeout":
        rollout["status"]["phase"] = "Paused"
        rollout["status"]["message"] = "CanaryPauseStep"
        rollout["status"]["pauseConditions"] = [{"reason": "CanaryPauseStep", "startTime": "2026-11-24T09:00:00Z"}]
    else:
        ready = next(c for c in pods[0]["status"]["conditions"] if c["type"] == "Ready")
        ready.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == state
    assert any(r.startswith(reason) for r in v.reasons) or v.summary.startswith(reason), v.reasons


def test_a_restart_inside_the_default_progress_deadline_counts() -> None:
    """Without progressDeadlineSeconds the controller's default (600 s) sets the window a restart counts in."""
    rollout, rss, pods, runs = namespace("shop")
    del rollout["spec"]["progressDeadlineSeconds"]
    container = pods[0]["status"]["containerStatuses"][0]
    container["restartCount"] = 1
    container["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                             "finishedAt": "2026-11-24T08:08:00Z"}}  # 480 s before the deadline
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.UNDETERMINED
    container["lastState"]["terminated"]["finishedAt"] = "2026-11-24T08:05:00Z"  # 660 s before: outside
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


def test_two_rollouts_sharing_a_pod_hash_are_told_apart_by_owner() -> None:
    rollout, rss, pods, runs = namespace("shop")
    twins_rs, twins_pods = copy.deepcopy(rss), copy.deepcopy(pods)
    for obj in twins_rs:
        obj["metadata"]["name"] = obj["metadata"]["name"].replace("web-", "web2-")
        obj["metadata"]["ownerReferences"][0].update(name="web2", uid="0f0f0f0f-0000-4000-8000-000000000002")
    for pod in twins_pods:
        pod["metadata"]["name"] = pod["metadata"]["name"].replace("web-", "web2-")
        pod["metadata"]["ownerReferences"][0]["name"] = "web2-6d4b9c7f58"
        pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                             "reason": "Unschedulable", "message": "no nodes"}]}
    v = assess_rollout(rollout, twins_rs + rss, twins_pods + pods, runs)
    assert v.state == RolloutState.STUCK and {p.name[:15] for p in v.pods} == {"web-6d4b9c7f58-"}


def test_a_refused_analysis_run_list_is_unknown_never_none() -> None:
    """403 on analysisruns during a live collection (`bundle.yaml` `skipped`) while the Rollout uses analysis."""
    snap = Snapshot("live")
    rollout, rss, pods, _ = namespace("shop")
    rollout["spec"]["strategy"]["canary"]["analysis"] = {"templates": [{"templateName": "error-rate"}]}
    for index, obj in enumerate([rollout, *rss, *pods]):
        snap.add(RawObject(obj, f"objects/shop.yaml:{index}"))
    snap.meta["options"] = {"needs": ["argoproj.io/Rollout", "argoproj.io/AnalysisRun", "apps/ReplicaSet", "Pod"]}
    assert rollout_inputs(snap, snap.get("Rollout", "web", "shop", "argoproj.io")).analysis_runs == []
    snap.unread.append({"what": "list analysisruns", "request": "GET /apis/argoproj.io/v1alpha1/analysisruns",
                        "reason": "403 Forbidden", "need": "kind:argoproj.io/AnalysisRun", "status": "403"})
    inputs = rollout_inputs(snap, snap.get("Rollout", "web", "shop", "argoproj.io"))
    assert inputs.analysis_runs is None
    v = assess_rollout(rollout, inputs.replicasets, inputs.pods, inputs.analysis_runs)
    assert (v.state, v.reasons) == (RolloutState.UNDETERMINED,
                                    ("missing: the AnalysisRuns of namespace shop (the Rollout uses analysis)",))


# -- each pod state on its own, the pod's Ready condition left True as a stale snapshot can show it -----------------
_CRASH = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container=web"}}
_EXIT = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-11-24T09:00:00Z"}}


@pytest.mark.parametrize(("status", "problem"), [
    ({"containerStatuses": [{"name": "web", "ready": False, "restartCount": 1, "state": _CRASH, "lastState": _EXIT}]},
     "CrashLoopBackOff (container web, 1 restart, last exit: Error, exit code 1, at 2026-11-24T09:00:00Z)"),
    ({"containerStatuses": [{"name": "web", "ready": False, "restartCount": 0,
                             "state": {"waiting": {"reason": "ContainerCreating"}}}]},
     "ContainerCreating (container web)"),
    ({"containerStatuses": [{"name": "web", "ready": False, "restartCount": 0,
                             "state": {"waiting": {"message": "pulling"}}}]}, "Waiting (container web): pulling"),
    ({"containerStatuses": [{"name": "web", "ready": False, "restartCount": 2, "lastState": _EXIT, "state": {
        "waiting": {"reason": "CreateContainerConfigError", "message": 'secret "db" not found'}}}]},
     'CreateContainerConfigError (container web): secret "db" not found (last exit: Error, exit code 1, at '
     "2026-11-24T09:00:00Z)"),
    ({"containerStatuses": [{"name": "web", "ready": False, "restartCount": 0, "state": {
        "terminated": {"exitCode": 0, "reason": "Completed"}}}]}, "Completed (container web), exit code 0"),
    ({"containerStatuses": [{"name": "web", "ready": False, "restartCount": 0, "state": {
        "terminated": {"exitCode": 2, "message": " disk full\n"}}}]},
     "Terminated (container web), exit code 2: disk full"),
    ({"initContainerStatuses": [{"name": "migrate", "ready": False, "restartCount": 0, "state": {
        "terminated": {"exitCode": 3, "reason": "Error"}}}]}, "Error (init container migrate), exit code 3"),
    ({"initContainerStatuses": [{"name": "migrate", "ready": False, "restartCount": 0,
                                 "state": {"running": {"startedAt": "2026-11-24T08:00:00Z"}}}]},
     "init container migrate has not completed"),
    ({"phase": "Pending"}, "Pending (no container is running yet)"),
    ({"phase": "Succeeded"}, "Succeeded: its containers exited"),
    ({"phase": "Failed"}, "Failed"),
    ({"phase": "Failed", "reason": "Evicted"}, "Failed: Evicted"),
    ({"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available"}],
      "phase": "Pending"}, "Unschedulable: 0/3 nodes are available"),
    ({"conditions": [{"type": "Ready", "status": "False"}]}, "Running but not Ready: its Ready condition is False"),
    ({"conditions": [], "containerStatuses": [{"name": "web", "ready": False, "state": {"running": {}}},
                                              {"name": "proxy", "ready": True, "state": {"running": {}}}]},
     "Running but not Ready: its Ready condition is False"),
    ({"conditions": [], "containerStatuses": []}, "Running but not Ready: its Ready condition is False"),
])
def test_each_pod_problem_is_a_real_reason_even_beside_a_stale_ready_condition(status: Raw, problem: str) -> None:
    """A pod problem dropped would leave every pod ready and the Rollout STUCK: a restart it must not get."""
    rollout, rss, pods, runs = namespace("shop")
    pod = pods[0]
    pod["status"].update(status)
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.DEGRADED, v.reasons
    assert v.summary == f"Degraded (ProgressDeadlineExceeded): pod {pod['metadata']['name']}: {problem}"


@pytest.mark.parametrize("status", [
    {"initContainerStatuses": [{"name": "migrate", "ready": True, "restartCount": 0,
                                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]},
    {"initContainerStatuses": [{"name": "sidecar", "ready": True, "restartCount": 0, "state": {"running": {}}}]},
    {"conditions": [], "containerStatuses": [{"name": "web", "ready": True, "state": {"running": {}}}]},
    {"conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]},
])
def test_pod_states_that_are_no_problem(status: Raw) -> None:
    """A completed init container, a running native sidecar (an init container that is ready), every container
    ready without a Ready condition: none of them is a reason."""
    rollout, rss, pods, runs = namespace("shop")
    pods[0]["status"].update(status)
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


def _restart_at(pods: list[Raw], finished: str, count: int = 1) -> None:
    container = pods[0]["status"]["containerStatuses"][0]
    container["restartCount"] = count
    container["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": finished}}


@pytest.mark.parametrize(("finished", "count", "state"), [
    ("2026-11-24T08:06:00Z", 1, RolloutState.UNDETERMINED),  # the first instant of the window
    ("2026-11-24T08:16:00Z", 1, RolloutState.UNDETERMINED),  # the last
    ("2026-11-24T08:05:59Z", 1, RolloutState.STUCK),
    ("2026-11-24T08:16:01Z", 1, RolloutState.STUCK),
    ("2026-11-24T08:10:00Z", 0, RolloutState.STUCK),  # a last state without a restart count is no restart
])
def test_the_progress_window_includes_both_ends(finished: str, count: int, state: RolloutState) -> None:
    rollout, rss, pods, runs = namespace("shop")
    _restart_at(pods, finished, count)
    assert assess_rollout(rollout, rss, pods, runs).state == state


def test_the_window_ends_at_the_last_update_not_the_first_transition() -> None:
    rollout, rss, pods, runs = namespace("shop")
    progressing = rollout["status"]["conditions"][-1]
    progressing["lastTransitionTime"] = "2026-11-24T05:00:00Z"
    _restart_at(pods, "2026-11-24T08:10:00Z")
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED and "restarted 1 time (last exit: OOMKilled" in v.summary
    del progressing["lastUpdateTime"]  # then the transition sets the window: 08:10 is outside [04:50, 05:00]
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


@pytest.mark.parametrize("deadline", [None, 2**62, 0, -(2**62)])
def test_a_window_without_bounds_counts_every_restart(deadline: int | None) -> None:
    """No time on the Progressing condition, a deadline past what a timedelta holds, or one the controller rejects:
    a restart of any time before the deadline passed counts."""
    rollout, rss, pods, runs = namespace("shop")
    progressing = rollout["status"]["conditions"][-1]
    if deadline is None:
        del progressing["lastUpdateTime"], progressing["lastTransitionTime"]
    else:
        rollout["spec"]["progressDeadlineSeconds"] = deadline
    _restart_at(pods, "2020-01-01T00:00:00Z")
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED and "restarted 1 time" in v.summary


def test_objects_are_the_rollouts_by_owner_uid_when_both_have_one() -> None:
    """A Rollout deleted and created again under the same name: the old one's ReplicaSets are not its own."""
    rollout, rss, pods, runs = namespace("shop")
    rollout["metadata"]["uid"] = "0f0f0f0f-0000-4000-8000-00000000000a"
    v = assess_rollout(rollout, rss, pods, runs)
    assert (v.state, v.reasons) == (RolloutState.UNDETERMINED, ("missing: the ReplicaSet of pod hash 6d4b9c7f58",))
    for rs in rss:
        del rs["metadata"]["ownerReferences"][0]["uid"]  # without a uid on the reference, the name decides
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK
    for rs in rss:
        rs["metadata"]["ownerReferences"][0]["kind"] = "Deployment"
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.UNDETERMINED


def test_objects_without_owner_references_are_judged_by_their_label() -> None:
    """Exports that strip ownerReferences: the hash label and the namespace still pick the current objects."""
    rollout, rss, pods, runs = namespace("shop")
    for obj in rss + pods:
        del obj["metadata"]["ownerReferences"]
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK
    pods[1]["status"]["phase"] = "Failed"
    pods.pop(2)
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.DEGRADED and v.reasons[0].endswith(": Failed")


def test_the_same_rollout_in_another_namespace_is_not_judged_with_this_one() -> None:
    """Staging and production from the same manifests share the pod hash and the ReplicaSet's name."""
    rollout, rss, pods, runs = namespace("shop")
    staging = copy.deepcopy(pods)
    for pod in staging:
        pod["metadata"]["namespace"] = "shop-staging"
        pod["status"]["phase"] = "Pending"
    v = assess_rollout(rollout, rss, pods + staging, runs)
    assert v.state == RolloutState.STUCK and len(v.pods) == 3
    foreign = copy.deepcopy(pods[0])  # a pod of another template in the namespace, unowned
    foreign["metadata"].update(name="batch-1", labels={"rollouts-pod-template-hash": "other"})
    del foreign["metadata"]["ownerReferences"]
    foreign["status"]["phase"] = "Pending"
    assert assess_rollout(rollout, rss, [*pods, foreign], runs).state == RolloutState.STUCK


def test_a_missing_current_replicaset_is_named_and_never_stuck() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rss = [r for r in rss if r["metadata"]["name"] != "web-6d4b9c7f58"]
    v = assess_rollout(rollout, rss, pods, runs)
    assert (v.state, v.reasons) == (RolloutState.UNDETERMINED, ("missing: the ReplicaSet of pod hash 6d4b9c7f58",))
    assert len(v.pods) == 3  # the pods of the hash are still shown


def test_fewer_pods_than_desired_is_real_when_the_replicaset_has_fewer_too() -> None:
    rollout, rss, pods, runs = namespace("shop")
    current = next(r for r in rss if r["metadata"]["name"] == "web-6d4b9c7f58")
    current["status"].update(replicas=2, readyReplicas=2, availableReplicas=2)
    v = assess_rollout(rollout, rss, pods[:2], runs)
    assert v.state == RolloutState.DEGRADED
    assert v.reasons == ("only 2 of 3 pods of ReplicaSet web-6d4b9c7f58 exist and are ready (the ReplicaSet has 2)",)


def test_a_replicaset_without_replicas_wants_one() -> None:
    rollout, rss, pods, runs = namespace("search")
    for rs in rss:
        rs["spec"].pop("replicas", None)
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


def test_a_single_replica_replaced_after_an_eviction_is_stuck_and_said_in_the_singular() -> None:
    rollout, rss, pods, runs = namespace("search")
    (pod,) = [p for p in pods if p["metadata"]["labels"].get("rollouts-pod-template-hash") == rollout["status"][
        "currentPodHash"]]
    v = assess_rollout(rollout, rss, [*pods, _evicted(pod)], runs)
    assert v.state == RolloutState.STUCK
    assert v.summary.endswith(f"although the only pod of ReplicaSet {v.pods[0].name.rsplit('-', 1)[0]} is ready and "
                              "available")


def test_degraded_is_read_from_the_conditions_only_for_its_reasons() -> None:
    rollout, rss, pods, runs = namespace("news")
    del rollout["status"]["phase"]
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.NOT_DEGRADED
    rollout["status"]["phase"] = "Progressing"
    rollout["status"]["message"] = "more replicas need to be updated"
    assert assess_rollout(rollout, rss, pods, runs).summary == "Progressing: more replicas need to be updated"


def test_an_invalid_spec_condition_is_a_reason_whatever_the_message() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["conditions"].append({"type": "InvalidSpec", "status": "True", "reason": "InvalidSpec",
                                            "message": "The Rollout \"web\" is invalid: spec.strategy: Required"})
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.DEGRADED
    assert v.summary == 'Degraded: InvalidSpec: The Rollout "web" is invalid: spec.strategy: Required'


def test_an_abort_says_what_aborted_it() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"].update(abort=True, abortedAt="2026-11-24T09:00:00Z")
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.summary == ('Degraded: aborted at 2026-11-24T09:00:00Z (RolloutAborted: ReplicaSet "web-6d4b9c7f58" has '
                         "timed out progressing.)")
    rollout["status"]["message"] = "RolloutAborted: Rollout aborted update to revision 9"
    assert assess_rollout(rollout, rss, pods, runs).summary == (
        "Degraded: aborted at 2026-11-24T09:00:00Z (RolloutAborted: Rollout aborted update to revision 9)")


def test_an_abort_shown_by_the_condition_alone_is_lifted_by_a_cleared_flag() -> None:
    rollout, rss, pods, runs = namespace("shop")
    progressing = rollout["status"]["conditions"][-1]
    progressing.update(reason="RolloutAborted", message="Rollout aborted update to revision 9")
    rollout["status"]["abort"] = False
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED and v.summary.startswith(
        "Degraded (RolloutAborted) but a retry is pending: status.abort was cleared")


def test_a_cleared_abort_flag_on_a_rollout_never_aborted_changes_nothing() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["abort"] = False
    assert assess_rollout(rollout, rss, pods, runs).state == RolloutState.STUCK


def test_a_controller_pause_names_its_reason_and_time() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["pauseConditions"] = [{"reason": "CanaryPauseStep", "startTime": "2026-11-24T09:00:00Z"}]
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.DEGRADED and v.summary == (
        "Degraded: paused by the controller (CanaryPauseStep since 2026-11-24T09:00:00Z): it waits to be promoted or "
        "resumed")


def test_only_the_analysis_runs_the_status_names_are_current() -> None:
    """An old failed run of the same pod hash (before a retry) is history when the status names a newer one."""
    rollout, rss, pods, _ = namespace("shop")
    old, current = _background_run(rollout, "Failed"), _background_run(rollout, "Successful")
    old["metadata"]["name"], current["metadata"]["name"] = "web-6d4b9c7f58-3", "web-6d4b9c7f58-4"
    rollout["status"]["canary"]["currentBackgroundAnalysisRunStatus"] = {"name": "web-6d4b9c7f58-4",
                                                                         "status": "Successful"}
    assert assess_rollout(rollout, rss, pods, [old, current]).state == RolloutState.STUCK


def test_a_running_analysis_the_status_does_not_name_is_still_mid_analysis() -> None:
    rollout, rss, pods, _ = namespace("shop")
    run = _background_run(rollout, "Running")
    rollout["status"]["canary"].pop("currentBackgroundAnalysisRunStatus", None)
    v = assess_rollout(rollout, rss, pods, [run])
    assert v.state == RolloutState.UNDETERMINED and "is Running: the Rollout is mid-analysis" in v.summary


def test_a_blue_green_update_under_way_is_named_so() -> None:
    rollout, rss, pods, runs = namespace("billing")
    rollout["status"]["stableRS"] = "0000000000"
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.state == RolloutState.UNDETERMINED
    assert v.summary.startswith("Degraded (ProgressDeadlineExceeded) but a blue-green update is under way: stable "
                                f"ReplicaSet {rollout['metadata']['name']}-0000000000 still serves")


def test_the_first_step_counts_as_a_step() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["currentStepIndex"] = 1  # pause
    assert "it is at step 1 of 4 (pause)" in assess_rollout(rollout, rss, pods, runs).summary
    rollout["spec"]["strategy"]["canary"]["steps"].insert(0, {"pause": {}})
    rollout["status"]["currentStepIndex"] = 0
    assert "it is at step 0 of 5 (pause)" in assess_rollout(rollout, rss, pods, runs).summary


def test_an_observed_generation_of_zero_is_behind() -> None:
    rollout, rss, pods, runs = namespace("shop")
    rollout["status"]["observedGeneration"] = "0"
    v = assess_rollout(rollout, rss, pods, runs)
    assert v.summary == ("Degraded (ProgressDeadlineExceeded) but the controller has not yet observed generation 14 "
                         "of the Rollout (observed 0): its status may be stale")
