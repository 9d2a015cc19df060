"""app-unhealthy: the fix for a failing pod follows its containers' waiting reason.

An image that cannot be pulled or a missing Secret/ConfigMap never starts the container, so the
fix is about the image or the configuration, not "read why the container exits". The pods are
written as `kubectl get pod -o yaml` prints them.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from argo_doctor.analyzers.common import pod_fix
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import RawObject

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: ledger-api-6b7c9d8f5-qx4tn
  namespace: billing
  uid: 5d1f0c9e-2b7a-4c51-9a3e-7f61c2d0a811
  labels: {app: ledger-api, pod-template-hash: 6b7c9d8f5}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: ledger-api-6b7c9d8f5,
     uid: 0a4e6b2c-91d3-4f7e-8c25-3b9d1e6f4a72, controller: true, blockOwnerDeletion: true}
spec:
  restartPolicy: Always
  serviceAccountName: ledger-api
  imagePullSecrets:
  - name: harbor-pull
  containers:
  - name: api
    image: harbor.corp.example.net/billing/ledger-api:4.12.0
    envFrom:
    - secretRef: {name: ledger-db}
status:
  phase: Pending
  conditions:
  - {type: Initialized, status: "True", lastTransitionTime: "2026-11-24T09:40:02Z"}
  - {type: Ready, status: "False", reason: ContainersNotReady,
     message: "containers with unready status: [api]", lastTransitionTime: "2026-11-24T09:40:02Z"}
  - {type: ContainersReady, status: "False", reason: ContainersNotReady,
     message: "containers with unready status: [api]", lastTransitionTime: "2026-11-24T09:40:02Z"}
  - {type: PodScheduled, status: "True", lastTransitionTime: "2026-11-24T09:40:01Z"}
  containerStatuses:
  - name: api
    image: harbor.corp.example.net/billing/ledger-api:4.12.0
    imageID: ""
    ready: false
    restartCount: 0
    started: false
    lastState: {}
    state:
      waiting: {}
  hostIP: 10.20.3.14
  podIP: 100.96.3.77
  qosClass: Burstable
  startTime: "2026-11-24T09:40:02Z"
"""

IMAGE = "harbor.corp.example.net/billing/ledger-api:4.12.0"
BACKOFF = f'Back-off pulling image "{IMAGE}"'
ERR_PULL = (
    f'failed to pull and unpack image "{IMAGE}": failed to resolve reference "{IMAGE}": '
    "pulling from host harbor.corp.example.net failed with status code [manifests 4.12.0]: 401 Unauthorized"
)


def _pod(reason: str, message: str, *, pull_secrets: bool = True, image: str = IMAGE) -> dict[str, Any]:
    pod: dict[str, Any] = yaml.safe_load(POD)
    pod["spec"]["containers"][0]["image"] = image
    status = pod["status"]["containerStatuses"][0]
    status["image"] = image
    status["state"]["waiting"] = {"reason": reason, "message": message}
    if not pull_secrets:
        del pod["spec"]["imagePullSecrets"]
    return pod


def _crashing() -> dict[str, Any]:
    pod = _pod("CrashLoopBackOff", "back-off 2m40s restarting failed container=api pod=ledger-api-6b7c9d8f5-qx4tn")
    pod["status"]["phase"] = "Running"
    status = pod["status"]["containerStatuses"][0]
    status["restartCount"] = 6
    status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-24T09:49:00Z",
                                          "finishedAt": "2026-11-24T09:49:03Z"}}
    return pod


def _fix(raw: dict[str, Any], *others: dict[str, Any]) -> tuple[str, str]:
    snap = Snapshot("test")
    for index, other in enumerate(others):
        snap.add(RawObject(other, f"objects/billing.yaml:{index * 20 + 1}"))
    fix = pod_fix(snap, Obj.from_raw(raw, "objects/billing.yaml:1"))
    return fix.text, fix.command


@pytest.mark.parametrize(("reason", "message"), [("ImagePullBackOff", BACKOFF), ("ErrImagePull", ERR_PULL)])
def test_image_pull_errors_are_about_the_image(reason: str, message: str) -> None:
    text, command = _fix(_pod(reason, message))
    assert command == "kubectl -n billing describe pod ledger-api-6b7c9d8f5-qx4tn"
    assert f"({reason}: {message})" in text
    assert "no logs to read" in text and "why the container exits" not in text
    assert f"Check that {IMAGE} exists" in text and "in harbor.corp.example.net" in text
    assert "imagePullSecrets (harbor-pull)" in text and "`kubectl -n billing get secret harbor-pull`" in text


def test_image_pull_without_pull_secrets_names_the_service_account_route() -> None:
    text, _ = _fix(_pod("ImagePullBackOff", 'Back-off pulling image "ledger-api:4.12.0"', pull_secrets=False,
                        image="ledger-api:4.12.0"))
    assert "in docker.io" in text
    assert "a private registry needs imagePullSecrets on the pod or its ServiceAccount" in text


def test_invalid_image_name() -> None:
    image = "harbor.corp.example.net/Billing/ledger-api:4.12.0"
    message = (
        f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": '
        "invalid reference format: repository name must be lowercase"
    )
    text, command = _fix(_pod("InvalidImageName", message, image=image))
    assert f"The image reference {image!r} is not valid" in text
    assert command == "kubectl -n billing describe pod ledger-api-6b7c9d8f5-qx4tn"


@pytest.mark.parametrize(("message", "command"), [
    ('secret "ledger-db" not found', "kubectl -n billing get secret ledger-db"),
    ('configmap "ledger-flags" not found', "kubectl -n billing get configmap ledger-flags"),
    ("couldn't find key DB_PASSWORD in Secret billing/ledger-db", "kubectl -n billing get secret ledger-db -o yaml"),
    ("container has runAsNonRoot and image will run as root",
     "kubectl -n billing describe pod ledger-api-6b7c9d8f5-qx4tn"),
])
def test_create_container_config_error_is_about_configuration(message: str, command: str) -> None:
    text, got = _fix(_pod("CreateContainerConfigError", message))
    assert got == command
    assert f"(CreateContainerConfigError: {message})" in text
    assert "Secret or ConfigMap" in text and "no logs to read" in text


def _secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": "billing", "uid": f"uid-{name}"},
            "data": {"DB_PASSWORD": "c2VjcmV0LXZhbHVl"}}


def test_a_secret_not_found_among_the_collected_secrets_is_missing() -> None:
    text, _ = _fix(_pod("CreateContainerConfigError", 'secret "ledger-db" not found'), _secret("harbor-pull"))
    assert "The input holds the Secrets of namespace billing and ledger-db is not among them." in text
    assert "unknown" not in text


def test_a_secret_the_input_did_not_collect_is_unknown() -> None:
    text, _ = _fix(_pod("CreateContainerConfigError", 'secret "ledger-db" not found'))
    assert "The kubelet's message is the only word on Secret billing/ledger-db" in text
    assert "the input holds no Secret in namespace billing (that kind was not collected there)" in text
    assert "is not among them" not in text


def test_a_secret_the_input_holds_was_created_since() -> None:
    text, _ = _fix(_pod("CreateContainerConfigError", 'secret "ledger-db" not found'), _secret("ledger-db"))
    assert "The input holds Secret billing/ledger-db: it was created after the kubelet's last attempt" in text


def test_a_refused_secret_list_makes_absence_unknown() -> None:
    snap = Snapshot("test")
    snap.add(RawObject(_secret("harbor-pull"), "objects/billing.yaml:1"))
    snap.unread.append({"what": "list secrets in billing", "request": "GET /api/v1/namespaces/billing/secrets",
                        "reason": "forbidden", "need": "kind:Secret", "status": "403"})
    fix = pod_fix(snap, Obj.from_raw(_pod("CreateContainerConfigError", 'secret "ledger-db" not found'),
                                     "objects/billing.yaml:30"))
    assert "was not collected there" in fix.text


def test_a_crashing_container_still_gets_its_logs() -> None:
    text, command = _fix(_crashing())
    assert "why the container exits" in text
    assert command == "kubectl -n billing logs ledger-api-6b7c9d8f5-qx4tn --previous --all-containers"


def test_init_container_pull_error_counts() -> None:
    pod = _pod("PodInitializing", "")
    pod["spec"]["initContainers"] = [{"name": "migrate", "image": "harbor.corp.example.net/billing/migrate:4.12.0"}]
    pod["status"]["initContainerStatuses"] = [{
        "name": "migrate", "image": "harbor.corp.example.net/billing/migrate:4.12.0", "ready": False,
        "restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull", "message": "manifest unknown"}},
    }]
    text, _ = _fix(pod)
    assert "container migrate (ErrImagePull: manifest unknown)" in text
    assert "harbor.corp.example.net/billing/migrate:4.12.0 exists" in text


# --- through the engine ---------------------------------------------------------------------

OWNERS = """
- apiVersion: argoproj.io/v1alpha1
  kind: Application
  metadata: {name: ledger, namespace: argocd}
  spec:
    destination: {namespace: billing, server: https://kubernetes.default.svc}
    project: default
    source: {path: apps/ledger, repoURL: https://git.example.net/platform/deploy.git, targetRevision: main}
  status:
    health: {status: Degraded}
    sync: {status: Synced, revision: 9f2c4e1a7b3d5f6081a2c3d4e5f60718293a4b5c}
    reconciledAt: "2026-11-24T09:50:00Z"
    resources:
    - {group: apps, version: v1, kind: Deployment, namespace: billing, name: ledger-api, status: Synced}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: ledger-api, namespace: billing, uid: 7c3b1a9e-5d2f-4e8a-b6c1-2f9e0d4a3b57, generation: 4}
  spec:
    replicas: 1
    selector: {matchLabels: {app: ledger-api}}
    template:
      metadata: {labels: {app: ledger-api}}
      spec: {containers: [{name: api, image: harbor.corp.example.net/billing/ledger-api:4.12.0}]}
  status:
    observedGeneration: 4
    replicas: 1
    updatedReplicas: 1
    unavailableReplicas: 1
    conditions:
    - {type: Available, status: "False", reason: MinimumReplicasUnavailable,
       message: Deployment does not have minimum availability.}
    - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded,
       message: ReplicaSet "ledger-api-6b7c9d8f5" has timed out progressing.}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    name: ledger-api-6b7c9d8f5
    namespace: billing
    uid: 0a4e6b2c-91d3-4f7e-8c25-3b9d1e6f4a72
    ownerReferences:
    - {apiVersion: apps/v1, kind: Deployment, name: ledger-api, uid: 7c3b1a9e-5d2f-4e8a-b6c1-2f9e0d4a3b57,
       controller: true}
  spec:
    replicas: 1
    selector: {matchLabels: {app: ledger-api, pod-template-hash: 6b7c9d8f5}}
  status: {replicas: 1, observedGeneration: 1}
"""


def test_app_unhealthy_fix_for_an_image_pull_backoff() -> None:
    snap = Snapshot("test", {"collectedAt": "2026-11-24T09:55:00Z"})
    for index, raw in enumerate([*yaml.safe_load(OWNERS), _pod("ImagePullBackOff", BACKOFF)]):
        snap.add(RawObject(raw, f"objects/billing.yaml:{index * 30 + 1}"))
    result = run_scan(snap, select_analyzers(only=("app-unhealthy",)))
    (finding,) = result.findings
    assert "ledger-api-6b7c9d8f5-qx4tn" in finding.summary and "ImagePullBackOff" in finding.summary
    assert finding.remediation.command == "kubectl -n billing describe pod ledger-api-6b7c9d8f5-qx4tn"
    assert "cannot get the image of container api" in finding.remediation.text
    assert "why the container exits" not in finding.remediation.text
