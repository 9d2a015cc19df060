"""gitops-engine's built-in checks: every fixture object and the verdict Argo CD shows for it.

Expected statuses and messages come from gitops-engine pkg/health (health_pod.go,
health_deployment.go, ...), not from running this code.
"""

from __future__ import annotations

import pytest

from argo_doctor.health import Health, HealthAssessor
from tests.health.objects import D, H, P, S, U, names, obj

CRASHLOOP = (
    "back-off 5m0s restarting failed container=payments "
    "pod=payments-7f8d6c5b4-m2n8v_shop(0c9e8d7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f)"
)
PULL_ERRORS = (
    'Back-off pulling image "registry.example.com/infra/envoy:1.30.1", '
    'rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.com/shop/search:9.9.9": '
    'failed to resolve reference "registry.example.com/shop/search:9.9.9": '
    "registry.example.com/shop/search:9.9.9: not found"
)
EVICTED = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 86412Ki. "
    "Container resizer was using 1890432Ki, request is 512Mi, has larger consumption of memory."
)

PODS = {
    "checkout-6d9f7b8c5d-4kq2x": Health(H, ""),  # Running, Ready
    "reports-5b7c9d8f6-zt9wq": Health(P, ""),  # Pending, unschedulable
    "payments-7f8d6c5b4-m2n8v": Health(D, CRASHLOOP),
    "search-54c8b7d9f-q7w3e": Health(D, PULL_ERRORS),  # every waiting error, joined with ", "
    "db-migrate": Health(P, ""),  # restartPolicy Never: ImagePullBackOff does not degrade a hook
    "smoke-test": Health(H, ""),  # Succeeded
    "nightly-export-28597320-x8k2p": Health(D, 'container "wait-for-db" failed with exit code 2'),
    "image-resizer-6f5d4c3b2-h8j9k": Health(D, EVICTED),  # Failed with status.message
    "thumbnailer-28597380-tt2kd": Health(D, "OOMKilled"),
    "nightly-export-28597400-p4r5s": Health(P, ""),  # OnFailure and Running: finite pod
    "spark-pi-driver": Health(H, ""),  # Never, but ignore-restart-policy annotation
    "inventory-8c7b6a5d4-w2e3r": Health(P, ""),  # Running, not ready yet
    "checkout-5c8d7e6f9-old01": Health(P, "Pending deletion"),
    "schema-check": Health(H, ""),  # deleting but held by the hook finalizer: judged normally
}

WORKLOADS = {
    "checkout": Health(H, ""),
    "catalog": Health(P, "Waiting for rollout to finish: 1 out of 3 new replicas have been updated..."),
    "cart": Health(P, "Waiting for rollout to finish: 1 old replicas are pending termination..."),
    "recommendations": Health(P, "Waiting for rollout to finish: 2 of 3 updated replicas are available..."),
    "payments": Health(D, 'Deployment "payments" exceeded its progress deadline'),
    "search": Health(S, "Deployment is paused"),
    "frontend": Health(P, "Waiting for rollout to finish: observed deployment generation less than desired generation"),
    # StatefulSets
    "postgres": Health(H, "partitioned roll out complete: 3 new pods have been updated..."),
    "kafka": Health(H, "statefulset has 3 ready pods"),
    "cassandra": Health(P, "Waiting for partitioned roll out to finish: 1 out of 3 new pods have been updated..."),
    "redis": Health(P, "Waiting for 2 pods to be ready..."),
    "zookeeper": Health(P, "Waiting for statefulset spec update to be observed..."),
    # DaemonSets
    "fluent-bit": Health(H, ""),
    "node-exporter": Health(
        P, 'Waiting for daemon set "node-exporter" rollout to finish: 2 out of 6 new pods have been updated...'
    ),
    "cilium": Health(P, 'Waiting for daemon set "cilium" rollout to finish: 4 of 6 updated pods are available...'),
    "csi-node": Health(H, "daemon set 1 out of 6 new pods have been updated"),
    "kube-proxy": Health(
        P, "Waiting for rollout to finish: observed daemon set generation less than desired generation"
    ),
    # ReplicaSets
    "checkout-6d9f7b8c5d": Health(H, ""),
    "catalog-7b8c9d6f5": Health(P, "Waiting for rollout to finish: 1 out of 3 new replicas are available..."),
    "batch-api-5c6d7e8f9": Health(
        D,
        'pods "batch-api-5c6d7e8f9-8kq2z" is forbidden: exceeded quota: compute-quota, '
        "requested: requests.cpu=2, used: requests.cpu=4, limited: requests.cpu=4",
    ),
    "cart-6c5d4e3f2": Health(
        P, "Waiting for rollout to finish: observed replica set generation less than desired generation"
    ),
}

BATCH = {
    "reindex": Health(P, ""),
    "nightly-export-28597440": Health(H, "Reached expected number of succeeded pods"),
    "nightly-export-28597320": Health(D, "Job has reached the specified backoff limit"),
    "backfill": Health(S, ""),  # upstream reports the (empty) failure message for a suspended Job
    "backfill-resumed": Health(H, "Job resumed"),  # a Suspended=False condition counts as "complete"
    # Workflows
    "etl-7xk2p": Health(P, ""),
    "etl-9mfz4": Health(H, ""),
    "batch-h2x9q": Health(D, "child 'batch-h2x9q-2847512304' failed"),
    "batch-k7p3d": Health(
        D,
        'Internal error occurred: failed calling webhook "mpod.elbv2.k8s.aws": failed to call webhook: '
        'Post "https://aws-load-balancer-webhook-service.kube-system.svc:443/mutate-v1-pod?timeout=10s": '
        "tls: failed to verify certificate: x509: certificate signed by unknown authority",
    ),
    "nightly-pending": Health(P, ""),
}

NETWORKING = {
    "checkout": Health(H, ""),  # ClusterIP
    "ingress-nginx-controller": Health(P, ""),  # LoadBalancer still waiting for an address
    "gateway": Health(H, ""),
    "storefront": Health(H, ""),
    "admin": Health(P, ""),
    "legacy-api": Health(H, ""),  # extensions/v1beta1 Ingress
    "data-postgres-0": Health(H, ""),
    "scratch": Health(P, ""),
    "data-legacy-0": Health(D, ""),
    "v1beta1.metrics.k8s.io": Health(H, "Passed: all checks passed"),
    "v1beta1.custom.metrics.k8s.io": Health(
        P,
        "FailedDiscoveryCheck: failing or missing response from "
        "https://10.0.2.31:6443/apis/custom.metrics.k8s.io/v1beta1: "
        'Get "https://10.0.2.31:6443/apis/custom.metrics.k8s.io/v1beta1": '
        "dial tcp 10.0.2.31:6443: connect: connection refused",
    ),
    "v1.apps": Health(H, "Local: Local APIServices are always available"),
    "v1alpha1.external.metrics.k8s.io": Health(P, "Waiting to be processed"),
}

WISHLIST_SCALE = (
    'the HPA controller was unable to get the target\'s current scale: deployments/scale.apps "wishlist" not found'
)
HPAS = {
    "checkout": Health(H, "recommended size matches current size"),  # v1, annotation
    "cart": Health(P, "Waiting to Autoscale"),  # v1 without the annotation
    "wishlist": Health(D, WISHLIST_SCALE),  # v1, FailedGetScale
    "argocd-repo-server": Health(H, "recommended size matches current size"),  # v2beta1
    "argocd-server": Health(H, "the HPA controller was able to update the target scale to 3"),  # v2beta2
    "frontend": Health(H, "recommended size matches current size"),  # v2
    "wishlist-v2": Health(D, WISHLIST_SCALE),
    # Degraded reasons are looked for first: ScalingActive=False wins over an earlier AbleToScale=True.
    "argocd-applicationset-controller": Health(
        D,
        "the HPA was unable to compute the replica count: failed to get memory utilization: missing request "
        "for memory in container applicationset-controller of Pod argocd-applicationset-controller-6b9c8d7f5-x2x7q",
    ),
    # FailedGetExternalMetric is a degraded reason since Argo CD v3.5.
    "queue-worker": Health(
        D,
        "the HPA was unable to compute the replica count: unable to get external metric "
        "jobs/sqs_messages_visible/nil: unable to fetch metrics from external metrics API: "
        "the server is currently unable to handle the request",
    ),
    "image-resizer": Health(
        D,
        "the HPA was unable to compute the replica count: failed to get cpu utilization: "
        "unable to get metrics for resource cpu: no metrics returned from resource metrics API",
    ),
    "reports": Health(P, "Waiting to Autoscale"),
}

CASES = [
    *(("pods.yaml", name, expected) for name, expected in PODS.items()),
    *(("workloads.yaml", name, expected) for name, expected in WORKLOADS.items()),
    *(("batch.yaml", name, expected) for name, expected in BATCH.items()),
    *(("networking.yaml", name, expected) for name, expected in NETWORKING.items()),
    *(("hpas.yaml", name, expected) for name, expected in HPAS.items()),
]


@pytest.mark.parametrize(("filename", "name", "expected"), CASES, ids=[f"{f}:{n}" for f, n, _ in CASES])
def test_builtin_verdict(filename: str, name: str, expected: Health) -> None:
    assert HealthAssessor().assess(obj(filename, name)) == expected


@pytest.mark.parametrize(
    ("filename", "table"),
    [("pods.yaml", PODS), ("workloads.yaml", WORKLOADS), ("batch.yaml", BATCH), ("networking.yaml", NETWORKING)],
)
def test_every_fixture_has_an_expectation(filename: str, table: dict[str, Health]) -> None:
    assert sorted(names(filename)) == sorted(table)


def test_every_hpa_fixture_has_an_expectation() -> None:
    assert sorted(names("hpas.yaml")) == sorted(HPAS)


def test_pod_restarted_but_not_ready_is_degraded() -> None:
    pod = obj("pods.yaml", "inventory-8c7b6a5d4-w2e3r")
    pod["status"]["containerStatuses"][0]["restartCount"] = 3
    pod["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "Error",
            "startedAt": "2024-05-14T13:11:00Z",
            "finishedAt": "2024-05-14T13:12:00Z",
        }
    }
    assert HealthAssessor().assess(pod) == Health(D, "")


def test_pod_running_without_restart_policy_is_unknown() -> None:
    pod = obj("pods.yaml", "inventory-8c7b6a5d4-w2e3r")
    del pod["spec"]["restartPolicy"]
    assert HealthAssessor().assess(pod) == Health(U, "")


def test_crashloop_of_a_never_pod_is_judged_by_phase() -> None:
    pod = obj("pods.yaml", "payments-7f8d6c5b4-m2n8v")
    pod["spec"]["restartPolicy"] = "Never"
    assert HealthAssessor().assess(pod) == Health(P, "")


def test_statefulset_without_rolling_update_block_compares_revisions() -> None:
    sts = obj("workloads.yaml", "postgres")
    del sts["spec"]["updateStrategy"]["rollingUpdate"]
    assert HealthAssessor().assess(sts) == Health(
        H, "statefulset rolling update complete 3 pods at revision postgres-6f7d8c9b5d..."
    )
    sts["status"]["updateRevision"] = "postgres-7a8b9c0d1e"
    assert HealthAssessor().assess(sts) == Health(
        P, "waiting for statefulset rolling update to complete 3 pods at revision postgres-7a8b9c0d1e..."
    )


def test_statefulset_never_observed_is_progressing() -> None:
    sts = obj("workloads.yaml", "postgres")
    del sts["status"]["observedGeneration"]
    assert HealthAssessor().assess(sts) == Health(P, "Waiting for statefulset spec update to be observed...")


def test_deployment_of_unsupported_version_is_unknown() -> None:
    deployment = obj("workloads.yaml", "checkout")
    deployment["apiVersion"] = "apps/v1beta2"
    assert HealthAssessor().assess(deployment) == Health(U, "unsupported Deployment GVK: apps/v1beta2, Kind=Deployment")


def test_extensions_deployment_has_no_check() -> None:
    deployment = obj("workloads.yaml", "checkout")
    deployment["apiVersion"] = "extensions/v1beta1"
    assert HealthAssessor().assess(deployment) is None


def test_field_of_wrong_type_is_a_conversion_error() -> None:
    deployment = obj("workloads.yaml", "checkout")
    deployment["spec"]["replicas"] = "three"
    health = HealthAssessor().assess(deployment)
    assert health is not None and health.status is U
    assert health.message.startswith("failed to convert unstructured Deployment to typed:")


def test_hpa_v1_annotation_that_is_not_json_is_unknown() -> None:
    hpa = obj("hpas.yaml", "checkout")
    hpa["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/conditions"] = "[{not json"
    health = HealthAssessor().assess(hpa)
    assert health is not None and health.status is U
    assert health.message.startswith("failed to convert conditions annotation to typed:")


def test_hpa_v1_annotation_with_empty_list_waits() -> None:
    hpa = obj("hpas.yaml", "checkout")
    hpa["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/conditions"] = "[]"
    assert HealthAssessor().assess(hpa) == Health(P, "Waiting to Autoscale")


def test_hpa_scaling_limited_true_is_healthy() -> None:
    hpa = obj("hpas.yaml", "queue-worker")
    del hpa["status"]["conditions"][1]  # drop the FailedGetExternalMetric condition, which would degrade it
    hpa["status"]["conditions"].append(
        {
            "lastTransitionTime": "2024-05-14T15:55:30Z",
            "message": "the desired replica count is more than the maximum replica count",
            "reason": "TooManyReplicas",
            "status": "True",
            "type": "ScalingLimited",
        }
    )
    assert HealthAssessor().assess(hpa) == Health(H, "the desired replica count is more than the maximum replica count")


def test_apiservice_v1beta1() -> None:
    service = obj("networking.yaml", "v1beta1.custom.metrics.k8s.io")
    service["apiVersion"] = "apiregistration.k8s.io/v1beta1"
    health = HealthAssessor().assess(service)
    assert health is not None and health.status is P
    assert health.message.startswith("FailedDiscoveryCheck: failing or missing response")


def test_deleted_object_without_health_check_is_pending_deletion() -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "checkout-config",
            "namespace": "shop",
            "deletionTimestamp": "2024-05-14T18:00:00Z",
            "finalizers": ["example.com/keep"],
        },
        "data": {"LOG_LEVEL": "info"},
    }
    assert HealthAssessor().assess(config_map) == Health(P, "Pending deletion")


def test_kinds_without_health_check() -> None:
    assessor = HealthAssessor()
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop"}}
    application = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "shop", "namespace": "argocd"},
        "status": {"health": {"status": "Degraded"}},
    }
    assert assessor.assess(config_map) is None
    assert assessor.assess(application) is None
    assert assessor.assess({"metadata": {"name": "no-kind"}}) is None
    assert assessor.problems == []
