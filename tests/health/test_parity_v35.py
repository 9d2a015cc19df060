"""Drift fixed to follow Argo CD v3.5.1: HPA degraded reasons, the CRD script, pod hook annotations.

The objects are written here in the shapes of gitops-engine's `pkg/health/testdata` (hpa-*, pod-*)
and of `resource_customizations/apiextensions.k8s.io/CustomResourceDefinition/testdata`; the
expected statuses and messages are what Argo CD v3.5.1 shows for those shapes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from argo_doctor.health import ARGOCD_PARITY, Health, HealthAssessor
from argo_doctor.health.core import is_hook
from argo_doctor.health.crd import crd_health
from tests.health.objects import D, H, P, U


def test_parity_release_is_stated() -> None:
    assert ARGOCD_PARITY == "v3.5.1"


# --- HorizontalPodAutoscaler ---------------------------------------------------------------

ABLE = {
    "type": "AbleToScale",
    "status": "True",
    "reason": "ReadyForNewScale",
    "message": "recommended size matches current size",
}


def _hpa_v2(*conditions: dict[str, str]) -> dict[str, Any]:
    return yaml.safe_load(
        """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: ledger, namespace: billing}
spec:
  maxReplicas: 6
  minReplicas: 2
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ledger}
status:
  currentReplicas: 2
  desiredReplicas: 2
"""
    ) | {"status": {"currentReplicas": 2, "desiredReplicas": 2, "conditions": list(conditions)}}


METRIC_FAILURES = {
    "FailedGetObjectMetric": "the HPA was unable to compute the replica count: unable to get metric "
    "http_requests_in_flight: Ingress on billing ledger/unable to fetch metrics from custom metrics API: "
    "the server could not find the metric http_requests_in_flight for ingresses.networking.k8s.io ledger",
    "FailedGetPodsMetric": "the HPA was unable to compute the replica count: unable to get metric "
    "queue_depth: unable to fetch metrics from custom metrics API: no custom metrics API "
    "(custom.metrics.k8s.io) registered",
    "FailedGetExternalMetric": "the HPA was unable to compute the replica count: unable to get external "
    "metric billing/pubsub_undelivered/&LabelSelector{MatchLabels:map[string]string{subscription: ledger,},}: "
    "no metrics returned from external metrics API",
    "FailedComputeMetricsReplicas": "invalid metrics (1 invalid out of 1), first error is: failed to get "
    "cpu resource metric value: failed to get cpu utilization: did not receive metrics for targeted pods "
    "(pods might be unready)",
}


@pytest.mark.parametrize(("reason", "message"), METRIC_FAILURES.items(), ids=list(METRIC_FAILURES))
def test_hpa_v2_metric_failures_are_degraded(reason: str, message: str) -> None:
    failing = {"type": "ScalingActive", "status": "False", "reason": reason, "message": message}
    # AbleToScale=True is listed first, but the degraded reason is looked for first.
    assert HealthAssessor().assess(_hpa_v2(ABLE, failing)) == Health(D, message)


def test_hpa_degraded_reason_counts_whatever_the_status() -> None:
    odd = {"type": "ScalingActive", "status": "True", "reason": "FailedGetPodsMetric", "message": "stale"}
    assert HealthAssessor().assess(_hpa_v2(ABLE, odd)) == Health(D, "stale")


def test_hpa_first_listed_degraded_condition_wins() -> None:
    scale = {"type": "AbleToScale", "status": "False", "reason": "FailedGetScale", "message": "no scale"}
    metric = {"type": "ScalingActive", "status": "False", "reason": "FailedGetObjectMetric", "message": "no metric"}
    assert HealthAssessor().assess(_hpa_v2(ABLE, metric, scale)) == Health(D, "no metric")


def test_hpa_other_scaling_active_reasons_stay_healthy() -> None:
    inactive = {"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled", "message": "disabled"}
    assert HealthAssessor().assess(_hpa_v2(inactive, ABLE)) == Health(H, "recommended size matches current size")


def test_hpa_v1_annotation_failed_get_object_metric() -> None:
    message = (
        "the HPA was unable to compute the replica count: unable to get metric active_sessions: "
        "Service on billing ledger/unable to fetch metrics from custom metrics API: "
        "the server could not find the metric active_sessions for services"
    )
    conditions = [
        {
            "type": "AbleToScale",
            "status": "True",
            "lastTransitionTime": "2025-03-02T08:00:00Z",
            "reason": "SucceededGetScale",
            "message": "the HPA controller was able to get the target's current scale",
        },
        {
            "type": "ScalingActive",
            "status": "False",
            "lastTransitionTime": "2025-03-02T08:00:12Z",
            "reason": "FailedGetObjectMetric",
            "message": message,
        },
    ]
    hpa = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "ledger",
            "namespace": "billing",
            "annotations": {"autoscaling.alpha.kubernetes.io/conditions": json.dumps(conditions)},
        },
        "spec": {"maxReplicas": 6, "minReplicas": 2, "scaleTargetRef": {"kind": "Deployment", "name": "ledger"}},
        "status": {"currentReplicas": 2, "desiredReplicas": 0},
    }
    assert HealthAssessor().assess(hpa) == Health(D, message)


# --- CustomResourceDefinition --------------------------------------------------------------

CRD_BASE = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.storage.example.org
spec:
  group: storage.example.org
  names: {kind: Backup, listKind: BackupList, plural: backups, singular: backup}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
status:
  acceptedNames: {kind: Backup, listKind: BackupList, plural: backups, singular: backup}
  storedVersions: [v1alpha1]
"""

NAMES_OK = {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}


def _crd(*conditions: dict[str, str] | None, deleting: bool = False) -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_BASE)
    if conditions != (None,):
        crd["status"]["conditions"] = list(conditions)
    if deleting:
        crd["metadata"]["deletionTimestamp"] = "2025-03-02T09:00:00Z"
        crd["metadata"]["finalizers"] = ["argocd.argoproj.io/hook-finalizer"]
    return crd


def _cond(cond_type: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": cond_type, "status": status, "reason": reason, "message": message}


CRD_CASES: dict[str, tuple[dict[str, Any], Health]] = {
    "healthy": (
        _crd(NAMES_OK, _cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")),
        Health(H, "CRD is healthy"),
    ),
    "names-not-accepted": (
        _crd(_cond("NamesAccepted", "False", "NameConflict", '"bk" is already in use')),
        Health(D, 'CRD names have not been accepted: "bk" is already in use'),
    ),
    "non-structural": (
        _crd(
            NAMES_OK,
            _cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
            _cond("NonStructuralSchema", "True", "Violations", "spec.preserveUnknownFields: Invalid value: true"),
        ),
        Health(D, "Schema violations found: spec.preserveUnknownFields: Invalid value: true"),
    ),
    "not-established": (
        _crd(NAMES_OK, _cond("Established", "False", "InitialNamesAccepted", "not yet")),
        Health(D, "CRD is not established"),
    ),
    "installing": (
        _crd(NAMES_OK, _cond("Established", "False", "Installing", "the initial names have not been accepted")),
        Health(P, "CRD is being installed"),
    ),
    "terminating-condition": (
        _crd(NAMES_OK, _cond("Terminating", "True", "InstanceDeletionInProgress", "deleting 3 backups")),
        Health(P, "CRD is terminating: deleting 3 backups"),
    ),
    # Held by the hook finalizer, so gitops-engine lets the script see the deletionTimestamp.
    "terminating-timestamp": (
        _crd(NAMES_OK, deleting=True),
        Health(P, "CRD is terminating"),
    ),
    "no-conditions": (_crd(None), Health(P, "Status conditions not found")),
}


@pytest.mark.parametrize(("crd", "expected"), CRD_CASES.values(), ids=list(CRD_CASES))
def test_crd_upstream_shapes(crd: dict[str, Any], expected: Health) -> None:
    assert HealthAssessor().assess(crd) == expected


def test_crd_first_listed_condition_decides() -> None:
    # NamesAccepted=False listed after a Terminating=True: terminating wins by position.
    crd = _crd(
        _cond("Terminating", "True", "InstanceDeletionInProgress", "going"),
        _cond("NamesAccepted", "False", "NameConflict", "taken"),
    )
    assert crd_health(crd, "v1") == Health(P, "CRD is terminating: going")
    crd["status"]["conditions"].reverse()
    assert crd_health(crd, "v1") == Health(D, "CRD names have not been accepted: taken")


def test_crd_installing_before_established_true() -> None:
    installing = _cond("Established", "False", "Installing", "")
    violation = _cond("NonStructuralSchema", "True", "Violations", "bad")
    assert crd_health(_crd(installing, violation), "v1") == Health(P, "CRD is being installed")
    assert crd_health(_crd(violation, installing), "v1") == Health(D, "Schema violations found: bad")


def test_crd_terminating_condition_without_message_is_a_lua_error() -> None:
    crd = _crd({"type": "Terminating", "status": "True"})
    health = HealthAssessor().assess(crd)
    assert health is not None and health.status is U
    assert "cannot perform concat operation between string and nil" in health.message


# --- Pod: ignore-restart-policy and hooks ---------------------------------------------------

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: spark-etl-driver
  namespace: data
  annotations:
    argocd.argoproj.io/ignore-restart-policy: "true"
spec:
  restartPolicy: Never
  containers:
  - name: driver
    image: registry.example.org/data/spark-etl:3.5.2
status:
  phase: Running
  conditions:
  - {type: Initialized, status: "True"}
  - {type: Ready, status: "True"}
  - {type: PodScheduled, status: "True"}
  containerStatuses:
  - name: driver
    image: registry.example.org/data/spark-etl:3.5.2
    ready: true
    restartCount: 0
    lastState: {}
    state:
      running: {startedAt: "2025-03-02T10:00:05Z"}
"""

PULL_BACKOFF = 'Back-off pulling image "registry.example.org/data/spark-etl:3.5.2"'


def _pod(annotations: dict[str, str], *, backoff: bool = False) -> dict[str, Any]:
    pod: dict[str, Any] = yaml.safe_load(POD)
    pod["metadata"]["annotations"] = annotations
    if backoff:
        pod["status"]["conditions"][1] = {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}
        ctr = pod["status"]["containerStatuses"][0]
        ctr["ready"] = False
        ctr["state"] = {"waiting": {"reason": "ImagePullBackOff", "message": PULL_BACKOFF}}
    return pod


IGNORE = {"argocd.argoproj.io/ignore-restart-policy": "true"}

POD_CASES: dict[str, tuple[dict[str, Any], Health]] = {
    "ignore-annotation": (_pod(IGNORE), Health(H, "")),
    "ignore-annotation-backoff": (_pod(IGNORE, backoff=True), Health(D, PULL_BACKOFF)),
    "ignore-annotation-on-argo-hook": (_pod(IGNORE | {"argocd.argoproj.io/hook": "PreSync"}), Health(P, "")),
    "ignore-annotation-on-argo-hook-backoff": (
        _pod(IGNORE | {"argocd.argoproj.io/hook": "PreSync"}, backoff=True),
        Health(P, ""),
    ),
    "ignore-annotation-on-helm-hook": (_pod(IGNORE | {"helm.sh/hook": "pre-upgrade"}), Health(P, "")),
    "ignore-annotation-skip-is-no-hook": (_pod(IGNORE | {"argocd.argoproj.io/hook": "Skip"}), Health(H, "")),
    "ignore-annotation-not-true": (_pod({"argocd.argoproj.io/ignore-restart-policy": "yes"}), Health(P, "")),
    "no-annotation": (_pod({}), Health(P, "")),
}


@pytest.mark.parametrize(("pod", "expected"), POD_CASES.values(), ids=list(POD_CASES))
def test_pod_ignore_restart_policy(pod: dict[str, Any], expected: Health) -> None:
    assert HealthAssessor().assess(pod) == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, False),
        ({"argocd.argoproj.io/hook": "PostSync"}, True),
        ({"argocd.argoproj.io/hook": "Skip"}, False),
        ({"argocd.argoproj.io/hook": " Skip , Skip"}, False),
        ({"argocd.argoproj.io/hook": "Skip,PreSync"}, True),
        ({"argocd.argoproj.io/hook": ""}, True),
        ({"helm.sh/hook": "post-install"}, True),
        ({"helm.sh/hook": "crd-install"}, False),
        ({"argocd.argoproj.io/hook": "Skip", "helm.sh/hook": "pre-install"}, False),
    ],
)
def test_is_hook(annotations: dict[str, str], expected: bool) -> None:
    assert is_hook(annotations) is expected
