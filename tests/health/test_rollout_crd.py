"""Argo CD's built-in Lua checks for Rollouts and CRDs, as argo-doctor re-implements them.

Expected values follow resource_customizations/argoproj.io/Rollout/health.lua and
resource_customizations/apiextensions.k8s.io/CustomResourceDefinition/health.lua.
"""

from __future__ import annotations

from typing import Any

import pytest

from argo_doctor.health import Health, HealthAssessor
from argo_doctor.health.crd import crd_health
from tests.health.objects import D, H, P, S, U, names, obj

OBSERVING = "Waiting for rollout spec update to be observed"

ROLLOUTS = {
    "checkout": Health(H, ""),
    "catalog": Health(P, "more replicas need to be updated"),
    "cart": Health(S, "CanaryPauseStep"),  # phase Paused shows as Suspended
    "recommendations": Health(
        D,
        'RolloutAborted: Rollout aborted update to revision 30: Metric "success-rate" assessed Failed '
        "due to failed (1) > failureLimit (0)",
    ),
    # The stuck Rollout: Degraded for the deadline although every pod is ready and available.
    "payments": Health(D, 'ProgressDeadlineExceeded: ReplicaSet "payments-6c7d8e9f0a" has timed out progressing.'),
    "search": Health(P, OBSERVING),  # observedGeneration "8" < generation 9
    "wishlist": Health(P, OBSERVING),  # no status yet
    "frontend": Health(P, OBSERVING),  # workload generation 5 not yet observed (4)
    "rollout-ref-deployment": Health(H, ""),  # v1.0: workloadRef without workload generations
    "basic-v09": Health(H, ""),  # v0.9: hash observedGeneration, no phase
    "guestbook-bluegreen": Health(D, 'ReplicaSet "guestbook-bluegreen-6b8cf6f7db" has timed out progressing.'),
    "canary-v010": Health(P, "Waiting for roll out to finish: More replicas need to be updated"),
}

CRDS = {
    "rollouts.argoproj.io": Health(H, "CRD is healthy"),
    "widgets.shop.example.com": Health(D, 'CRD names have not been accepted: "ro" is already in use'),
    "gadgets.shop.example.com": Health(
        D,
        "Schema violations found: spec.versions[0].schema.openAPIV3Schema.type: Required value: "
        "must not be empty at the root",
    ),
    # deletionTimestamp: gitops-engine answers before the CRD script runs.
    "oldthings.shop.example.com": Health(P, "Pending deletion"),
    "sprockets.shop.example.com": Health(P, "Status conditions not found"),
    # Established=False with reason Installing: still being installed (Argo CD v3.5).
    "cogs.shop.example.com": Health(P, "CRD is being installed"),
}


@pytest.mark.parametrize(("name", "expected"), ROLLOUTS.items(), ids=list(ROLLOUTS))
def test_rollout(name: str, expected: Health) -> None:
    assert HealthAssessor().assess(obj("rollouts.yaml", name)) == expected


@pytest.mark.parametrize(("name", "expected"), CRDS.items(), ids=list(CRDS))
def test_crd(name: str, expected: Health) -> None:
    assert HealthAssessor().assess(obj("crds.yaml", name)) == expected


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(names("rollouts.yaml")) == sorted(ROLLOUTS)
    assert sorted(names("crds.yaml")) == sorted(CRDS)


def _legacy() -> dict[str, Any]:
    return obj("rollouts.yaml", "basic-v09")


def test_legacy_rollout_pause_conditions_are_suspended() -> None:
    rollout = _legacy()
    rollout["status"]["pauseConditions"] = [{"reason": "CanaryPauseStep", "startTime": "2020-11-13T00:50:00Z"}]
    assert HealthAssessor().assess(rollout) == Health(S, "Rollout is paused")


def test_legacy_rollout_spec_paused_is_suspended() -> None:
    rollout = _legacy()
    rollout["spec"]["paused"] = True
    assert HealthAssessor().assess(rollout) == Health(S, "Rollout is paused")


def test_legacy_rollout_aborted_is_degraded() -> None:
    rollout = _legacy()
    rollout["status"]["conditions"][0].update(reason="RolloutAborted", status="False", message="Rollout is aborted")
    assert HealthAssessor().assess(rollout) == Health(D, "Rollout is aborted")


def test_legacy_rollout_invalid_spec_is_degraded() -> None:
    rollout = _legacy()
    rollout["status"]["conditions"].append(
        {"type": "InvalidSpec", "status": "True", "reason": "InvalidSpec", "message": "The Rollout is invalid"}
    )
    assert HealthAssessor().assess(rollout) == Health(D, "The Rollout is invalid")


def test_legacy_canary_waiting_for_steps() -> None:
    rollout = obj("rollouts.yaml", "canary-v010")
    rollout["status"]["updatedReplicas"] = 5
    assert HealthAssessor().assess(rollout) == Health(P, "Waiting for rollout to finish steps")


def test_legacy_canary_old_replicas_pending_termination() -> None:
    rollout = _legacy()
    rollout["status"]["replicas"] = 2
    assert HealthAssessor().assess(rollout) == Health(
        P, "Waiting for roll out to finish: old replicas are pending termination"
    )


def test_legacy_canary_pre_v08_stable_rs_under_canary() -> None:
    rollout = _legacy()
    del rollout["status"]["stableRS"]
    rollout["status"]["canary"] = {"stableRS": "754cb84d5"}
    assert HealthAssessor().assess(rollout) == Health(H, "")


def test_legacy_rollout_without_pod_hash() -> None:
    rollout = _legacy()
    del rollout["status"]["currentPodHash"]
    assert HealthAssessor().assess(rollout) == Health(
        P, "Waiting for rollout to finish: status has not been reconciled."
    )


def test_legacy_rollout_waiting_for_available_replicas() -> None:
    rollout = _legacy()
    rollout["status"]["availableReplicas"] = 0
    assert HealthAssessor().assess(rollout) == Health(
        P, "Waiting for roll out to finish: updated replicas are still becoming available"
    )


def test_legacy_blue_green() -> None:
    rollout = obj("rollouts.yaml", "guestbook-bluegreen")
    status = rollout["status"]
    status["conditions"] = status["conditions"][:1]
    status.update(replicas=3, updatedReplicas=3)
    assert HealthAssessor().assess(rollout) == Health(P, "active service cutover pending")
    status["blueGreen"]["activeSelector"] = "6b8cf6f7db"
    # `canary: {}` without stableRS makes the stable ReplicaSet nil, which the script treats as
    # "not yet the current one".
    assert HealthAssessor().assess(rollout) == Health(P, "waiting for analysis to complete")
    del status["canary"]  # a v0.7 blue-green Rollout: no stable ReplicaSet recorded at all
    assert HealthAssessor().assess(rollout) == Health(H, "")
    status["stableRS"] = "8464d8564d"
    assert HealthAssessor().assess(rollout) == Health(P, "waiting for analysis to complete")
    status["stableRS"] = "6b8cf6f7db"
    assert HealthAssessor().assess(rollout) == Health(H, "")


def test_legacy_rollout_without_conditions_fails_like_the_lua_script() -> None:
    rollout = _legacy()
    del rollout["status"]["conditions"]
    assert HealthAssessor().assess(rollout) == Health(U, "bad argument #1 to ipairs (table expected, got nil)")


def test_rollout_with_numeric_hash_observed_generation_is_legacy() -> None:
    rollout = _legacy()
    rollout["status"]["observedGeneration"] = "8575574967"  # a v0.9 hash made only of digits
    assert HealthAssessor().assess(rollout) == Health(H, "")


def test_rollout_with_unknown_phase_is_invalid() -> None:
    rollout = obj("rollouts.yaml", "checkout")
    rollout["status"]["phase"] = "Failed"
    assert HealthAssessor().assess(rollout) == Health(U, "Lua returned an invalid health status")


def test_deleted_rollout_is_pending_deletion() -> None:
    rollout = obj("rollouts.yaml", "payments")
    rollout["metadata"]["deletionTimestamp"] = "2024-05-14T18:00:00Z"
    assert HealthAssessor().assess(rollout) == Health(P, "Pending deletion")


def test_crd_held_by_hook_finalizer_reaches_the_script() -> None:
    crd = obj("crds.yaml", "oldthings.shop.example.com")
    crd["metadata"]["finalizers"].append("argocd.argoproj.io/hook-finalizer")
    assert HealthAssessor().assess(crd) == Health(P, "CRD is terminating")


def test_crd_terminating_condition() -> None:
    crd = obj("crds.yaml", "oldthings.shop.example.com")
    del crd["metadata"]["deletionTimestamp"]
    assert crd_health(crd, "v1") == Health(P, "CRD is terminating: CustomResource deletion is in progress")


def test_crd_schema_message_is_the_violation_whatever_the_order() -> None:
    crd = obj("crds.yaml", "gadgets.shop.example.com")
    conditions = crd["status"]["conditions"]
    conditions.append(conditions.pop(1))  # Established listed after NonStructuralSchema
    assert HealthAssessor().assess(crd) == Health(
        D,
        "Schema violations found: spec.versions[0].schema.openAPIV3Schema.type: Required value: "
        "must not be empty at the root",
    )


def test_crd_v1beta1_and_empty_conditions() -> None:
    crd = obj("crds.yaml", "sprockets.shop.example.com")
    crd["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    crd["status"]["conditions"] = []
    assert HealthAssessor().assess(crd) == Health(P, "Status conditions not found")
