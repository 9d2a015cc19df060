"""Built-in health of Kubernetes kinds, as gitops-engine's `pkg/health` judges them.

Each check takes the object and its apiVersion's version and returns a `Health`, or raises
`CheckError` (Argo CD then shows Unknown with that message). Only the versions gitops-engine
converts to typed structs are accepted; any other version of a known kind is the same
"unsupported ... GVK" error Argo CD reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from argo_doctor.health.fields import (
    CheckError,
    ConversionError,
    go_quote,
    gvk_string,
    obj_bool,
    obj_int,
    obj_list,
    obj_map,
    obj_opt_int,
    obj_str,
)
from argo_doctor.health.types import Health, HealthStatus

Obj = Mapping[str, Any]
Check = Callable[[Obj, str], Health]
F = TypeVar("F", bound=Check)

HEALTHY = HealthStatus.HEALTHY
PROGRESSING = HealthStatus.PROGRESSING
DEGRADED = HealthStatus.DEGRADED
SUSPENDED = HealthStatus.SUSPENDED
UNKNOWN = HealthStatus.UNKNOWN

IGNORE_RESTART_POLICY = "argocd.argoproj.io/ignore-restart-policy"
ARGO_HOOK = "argocd.argoproj.io/hook"
HELM_HOOK = "helm.sh/hook"
_ARGO_HOOK_TYPES = ("PreSync", "Sync", "PostSync", "SyncFail", "Skip")


def _typed(label: str, group: str, kind: str, versions: tuple[str, ...] | None) -> Callable[[F], F]:
    """Reject unsupported versions and turn field type errors into conversion errors."""

    def wrap(check: F) -> F:
        def run(obj: Obj, version: str) -> Health:
            if versions is not None and version not in versions:
                raise CheckError(f"unsupported {label} GVK: {gvk_string(group, version, kind)}")
            try:
                return check(obj, version)
            except ConversionError as exc:
                raise CheckError(f"failed to convert unstructured {label} to typed: {exc}") from exc

        run.__doc__ = check.__doc__
        return run  # type: ignore[return-value]

    return wrap


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj_map(obj.get("metadata"), "metadata")


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj_map(obj.get("spec"), "spec")


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj_map(obj.get("status"), "status")


def _conditions(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = obj_list(status.get("conditions"), "status.conditions")
    return [obj_map(c, f"status.conditions[{i}]") for i, c in enumerate(items)]


def _first_condition(status: Mapping[str, Any], cond_type: str) -> Mapping[str, Any] | None:
    for cond in _conditions(status):
        if obj_str(cond.get("type"), "condition.type") == cond_type:
            return cond
    return None


# --- Pod -----------------------------------------------------------------------------------


def _has(mapping: Mapping[str, Any], key: str) -> bool:
    """Whether a Go pointer field would be non-nil: present and not null."""
    return mapping.get(key) is not None


def _pod_ready(status: Mapping[str, Any]) -> bool:
    cond = _first_condition(status, "Ready")
    return cond is not None and obj_str(cond.get("status"), "condition.status") == "True"


def _pod_running_health(status: Mapping[str, Any], containers: Sequence[Mapping[str, Any]]) -> Health:
    message = obj_str(status.get("message"), "status.message")
    if _pod_ready(status):
        return Health(HEALTHY, message)
    for ctr in containers:
        if _has(obj_map(ctr.get("lastState"), "lastState"), "terminated"):
            return Health(DEGRADED, message)
    return Health(PROGRESSING, message)


def _container_fail_message(ctr: Mapping[str, Any]) -> str:
    state = obj_map(ctr.get("state"), "state")
    if not _has(state, "terminated"):
        return ""
    term = obj_map(state.get("terminated"), "state.terminated")
    message = obj_str(term.get("message"), "terminated.message")
    if message:
        return message
    if obj_str(term.get("reason"), "terminated.reason") == "OOMKilled":
        return "OOMKilled"
    code = obj_int(term.get("exitCode"), "terminated.exitCode")
    if code != 0:
        return f"container {go_quote(obj_str(ctr.get('name'), 'name'))} failed with exit code {code}"
    return ""


def _containers(status: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = obj_list(status.get(key), f"status.{key}")
    return [obj_map(c, f"status.{key}[{i}]") for i, c in enumerate(items)]


def is_hook(annotations: Mapping[str, Any]) -> bool:
    """gitops-engine's hook.IsHook: an Argo CD hook (unless only `Skip`), else a Helm hook but crd-install."""
    if ARGO_HOOK in annotations:
        text = annotations.get(ARGO_HOOK)
        values = dict.fromkeys(v.strip() for v in (text if isinstance(text, str) else "").split(","))
        types = [v for v in values if v in _ARGO_HOOK_TYPES]
        return types != ["Skip"]
    return HELM_HOOK in annotations and annotations.get(HELM_HOOK) != "crd-install"


@_typed("Pod", "", "Pod", ("v1",))
def pod_health(obj: Obj, version: str) -> Health:
    """Pod: waiting errors (long-running pods only), then by phase and readiness.

    A pod is long-running with restartPolicy Always, or with the ignore-restart-policy
    annotation set to "true" when it is not a hook (the annotation is not honoured on hooks).
    """
    spec, status = _spec(obj), _status(obj)
    restart_policy = obj_str(spec.get("restartPolicy"), "spec.restartPolicy")
    containers = _containers(status, "containerStatuses")
    message = obj_str(status.get("message"), "status.message")
    annotations = obj_map(_meta(obj).get("annotations"), "metadata.annotations")
    ignore_policy = annotations.get(IGNORE_RESTART_POLICY) == "true" and not is_hook(annotations)
    long_running = restart_policy == "Always" or ignore_policy

    # Hook pods (OnFailure/Never) must not fail early on an image pull error.
    if long_running:
        waiting_messages: list[str] = []
        for ctr in containers:
            state = obj_map(ctr.get("state"), "state")
            if not _has(state, "waiting"):
                continue
            waiting = obj_map(state.get("waiting"), "state.waiting")
            reason = obj_str(waiting.get("reason"), "waiting.reason")
            if reason.startswith("Err") or reason.endswith("Error") or reason.endswith("BackOff"):
                waiting_messages.append(obj_str(waiting.get("message"), "waiting.message"))
        if waiting_messages:
            return Health(DEGRADED, ", ".join(waiting_messages))

    phase = obj_str(status.get("phase"), "status.phase")
    if phase == "Pending":
        return Health(PROGRESSING, message)
    if phase == "Succeeded":
        return Health(HEALTHY, message)
    if phase == "Failed":
        if message:
            return Health(DEGRADED, message)
        for ctr in _containers(status, "initContainerStatuses") + containers:
            fail = _container_fail_message(ctr)
            if fail:
                return Health(DEGRADED, fail)
        return Health(DEGRADED, "")
    if phase == "Running":
        if long_running:
            return _pod_running_health(status, containers)
        if restart_policy in ("OnFailure", "Never"):
            # Finite pods are usually hooks: Progressing until they finish.
            return Health(PROGRESSING, message)
    return Health(UNKNOWN, message)


# --- Service, Ingress, PVC -----------------------------------------------------------------


@_typed("Service", "", "Service", ("v1",))
def service_health(obj: Obj, version: str) -> Health:
    """Service: a LoadBalancer is Progressing until it has an ingress point."""
    if obj_str(_spec(obj).get("type"), "spec.type") == "LoadBalancer":
        lb = obj_map(_status(obj).get("loadBalancer"), "status.loadBalancer")
        if obj_list(lb.get("ingress"), "status.loadBalancer.ingress"):
            return Health(HEALTHY)
        return Health(PROGRESSING)
    return Health(HEALTHY)


def ingress_health(obj: Obj, version: str) -> Health:
    """Ingress (any version): Healthy once status.loadBalancer.ingress is non-empty."""
    status = obj.get("status")
    lb = status.get("loadBalancer") if isinstance(status, Mapping) else None
    ingress = lb.get("ingress") if isinstance(lb, Mapping) else None
    if isinstance(ingress, list) and ingress:
        return Health(HEALTHY)
    return Health(PROGRESSING)


@_typed("PersistentVolumeClaim", "", "PersistentVolumeClaim", ("v1",))
def pvc_health(obj: Obj, version: str) -> Health:
    """PersistentVolumeClaim: by phase (Bound, Pending, Lost)."""
    phase = obj_str(_status(obj).get("phase"), "status.phase")
    status = {"Lost": DEGRADED, "Pending": PROGRESSING, "Bound": HEALTHY}.get(phase, UNKNOWN)
    return Health(status)


# --- Workloads -----------------------------------------------------------------------------


@_typed("Deployment", "apps", "Deployment", ("v1",))
def deployment_health(obj: Obj, version: str) -> Health:
    """Deployment: paused, generation observed, progress deadline, then replica counts."""
    meta, spec, status = _meta(obj), _spec(obj), _status(obj)
    if obj_bool(spec.get("paused"), "spec.paused"):
        return Health(SUSPENDED, "Deployment is paused")
    generation = obj_int(meta.get("generation"), "metadata.generation")
    if generation > obj_int(status.get("observedGeneration"), "status.observedGeneration"):
        return Health(
            PROGRESSING,
            "Waiting for rollout to finish: observed deployment generation less than desired generation",
        )
    cond = _first_condition(status, "Progressing")
    if cond is not None and obj_str(cond.get("reason"), "condition.reason") == "ProgressDeadlineExceeded":
        name = obj_str(meta.get("name"), "metadata.name")
        return Health(DEGRADED, f"Deployment {go_quote(name)} exceeded its progress deadline")
    replicas = obj_opt_int(spec.get("replicas"), "spec.replicas")
    updated = obj_int(status.get("updatedReplicas"), "status.updatedReplicas")
    current = obj_int(status.get("replicas"), "status.replicas")
    available = obj_int(status.get("availableReplicas"), "status.availableReplicas")
    if replicas is not None and updated < replicas:
        return Health(
            PROGRESSING,
            f"Waiting for rollout to finish: {updated} out of {replicas} new replicas have been updated...",
        )
    if current > updated:
        return Health(
            PROGRESSING,
            f"Waiting for rollout to finish: {current - updated} old replicas are pending termination...",
        )
    if available < updated:
        return Health(
            PROGRESSING,
            f"Waiting for rollout to finish: {available} of {updated} updated replicas are available...",
        )
    return Health(HEALTHY)


@_typed("StatefulSet", "apps", "StatefulSet", ("v1",))
def statefulset_health(obj: Obj, version: str) -> Health:
    """StatefulSet: generation observed, ready pods, then by update strategy."""
    meta, spec, status = _meta(obj), _spec(obj), _status(obj)
    observed = obj_int(status.get("observedGeneration"), "status.observedGeneration")
    if observed == 0 or obj_int(meta.get("generation"), "metadata.generation") > observed:
        return Health(PROGRESSING, "Waiting for statefulset spec update to be observed...")
    replicas = obj_opt_int(spec.get("replicas"), "spec.replicas")
    ready = obj_int(status.get("readyReplicas"), "status.readyReplicas")
    if replicas is not None and ready < replicas:
        return Health(PROGRESSING, f"Waiting for {replicas - ready} pods to be ready...")
    strategy = obj_map(spec.get("updateStrategy"), "spec.updateStrategy")
    strategy_type = obj_str(strategy.get("type"), "spec.updateStrategy.type")
    updated = obj_int(status.get("updatedReplicas"), "status.updatedReplicas")
    if strategy_type == "RollingUpdate" and _has(strategy, "rollingUpdate"):
        rolling = obj_map(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate")
        partition = obj_opt_int(rolling.get("partition"), "spec.updateStrategy.rollingUpdate.partition")
        if replicas is not None and partition is not None and updated < replicas - partition:
            return Health(
                PROGRESSING,
                "Waiting for partitioned roll out to finish: "
                f"{updated} out of {replicas - partition} new pods have been updated...",
            )
        # Reached for every defaulted apps/v1 StatefulSet (rollingUpdate.partition: 0).
        return Health(HEALTHY, f"partitioned roll out complete: {updated} new pods have been updated...")
    if strategy_type == "OnDelete":
        return Health(HEALTHY, f"statefulset has {ready} ready pods")
    update_rev = obj_str(status.get("updateRevision"), "status.updateRevision")
    current_rev = obj_str(status.get("currentRevision"), "status.currentRevision")
    if update_rev != current_rev:
        return Health(
            PROGRESSING,
            f"waiting for statefulset rolling update to complete {updated} pods at revision {update_rev}...",
        )
    current = obj_int(status.get("currentReplicas"), "status.currentReplicas")
    return Health(HEALTHY, f"statefulset rolling update complete {current} pods at revision {current_rev}...")


@_typed("DaemonSet", "apps", "DaemonSet", ("v1",))
def daemonset_health(obj: Obj, version: str) -> Health:
    """DaemonSet: generation observed, OnDelete, then updated and available pods."""
    meta, spec, status = _meta(obj), _spec(obj), _status(obj)
    if obj_int(meta.get("generation"), "metadata.generation") > obj_int(
        status.get("observedGeneration"), "status.observedGeneration"
    ):
        return Health(
            PROGRESSING,
            "Waiting for rollout to finish: observed daemon set generation less than desired generation",
        )
    strategy = obj_map(spec.get("updateStrategy"), "spec.updateStrategy")
    updated = obj_int(status.get("updatedNumberScheduled"), "status.updatedNumberScheduled")
    desired = obj_int(status.get("desiredNumberScheduled"), "status.desiredNumberScheduled")
    available = obj_int(status.get("numberAvailable"), "status.numberAvailable")
    name = go_quote(obj_str(meta.get("name"), "metadata.name"))
    if obj_str(strategy.get("type"), "spec.updateStrategy.type") == "OnDelete":
        return Health(HEALTHY, f"daemon set {updated} out of {desired} new pods have been updated")
    if updated < desired:
        return Health(
            PROGRESSING,
            f"Waiting for daemon set {name} rollout to finish: "
            f"{updated} out of {desired} new pods have been updated...",
        )
    if available < desired:
        return Health(
            PROGRESSING,
            f"Waiting for daemon set {name} rollout to finish: {available} of {desired} updated pods are available...",
        )
    return Health(HEALTHY)


@_typed("ReplicaSet", "apps", "ReplicaSet", ("v1",))
def replicaset_health(obj: Obj, version: str) -> Health:
    """ReplicaSet: generation observed, ReplicaFailure, then available replicas."""
    meta, spec, status = _meta(obj), _spec(obj), _status(obj)
    if obj_int(meta.get("generation"), "metadata.generation") > obj_int(
        status.get("observedGeneration"), "status.observedGeneration"
    ):
        return Health(
            PROGRESSING,
            "Waiting for rollout to finish: observed replica set generation less than desired generation",
        )
    cond = _first_condition(status, "ReplicaFailure")
    if cond is not None and obj_str(cond.get("status"), "condition.status") == "True":
        return Health(DEGRADED, obj_str(cond.get("message"), "condition.message"))
    replicas = obj_opt_int(spec.get("replicas"), "spec.replicas")
    available = obj_int(status.get("availableReplicas"), "status.availableReplicas")
    if replicas is not None and available < replicas:
        return Health(
            PROGRESSING,
            f"Waiting for rollout to finish: {available} out of {replicas} new replicas are available...",
        )
    return Health(HEALTHY)


@_typed("Job", "batch", "Job", ("v1",))
def job_health(obj: Obj, version: str) -> Health:
    """Job: by its Failed, Complete and Suspended conditions (whatever their status)."""
    failed = complete = suspended = False
    fail_message = message = ""
    for cond in _conditions(_status(obj)):
        cond_type = obj_str(cond.get("type"), "condition.type")
        cond_message = obj_str(cond.get("message"), "condition.message")
        if cond_type == "Failed":
            failed = complete = True
            fail_message = cond_message
        elif cond_type == "Complete":
            complete = True
            message = cond_message
        elif cond_type == "Suspended":
            # A resumed Job keeps Suspended=False, which still counts as "complete" upstream.
            complete = True
            message = cond_message
            if obj_str(cond.get("status"), "condition.status") == "True":
                suspended = True
    if not complete:
        return Health(PROGRESSING, message)
    if failed:
        return Health(DEGRADED, fail_message)
    if suspended:
        return Health(SUSPENDED, fail_message)
    return Health(HEALTHY, message)


# --- HorizontalPodAutoscaler ---------------------------------------------------------------

HPA_CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
_HPA_WAITING = Health(PROGRESSING, "Waiting to Autoscale")
_HPA_DEGRADED = {
    ("AbleToScale", "FailedGetScale"),
    ("AbleToScale", "FailedUpdateScale"),
    ("ScalingActive", "FailedGetResourceMetric"),
    ("ScalingActive", "FailedGetObjectMetric"),
    ("ScalingActive", "FailedGetPodsMetric"),
    ("ScalingActive", "FailedGetExternalMetric"),
    ("ScalingActive", "FailedComputeMetricsReplicas"),
    ("ScalingActive", "InvalidSelector"),
}
_HPA_HEALTHY_TYPES = ("AbleToScale", "ScalingLimited")


def _hpa_verdict(conditions: list[dict[str, str]]) -> Health:
    # Every condition is checked for a degraded reason (whatever its status) before any is
    # checked for health; within each pass the first listed condition wins.
    for cond in conditions:
        if (cond["type"], cond["reason"]) in _HPA_DEGRADED:
            return Health(DEGRADED, cond["message"])
    for cond in conditions:
        if cond["type"] in _HPA_HEALTHY_TYPES and cond["status"] == "True":
            return Health(HEALTHY, cond["message"])
    return _HPA_WAITING


def _hpa_annotation_conditions(text: str) -> list[dict[str, str]]:
    """Conditions from the v1 annotation, decoded as Go's case-insensitive json.Unmarshal would."""
    try:
        raw = json.loads(text)
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise ValueError(f"cannot unmarshal {type(raw).__name__} into []hpaCondition")
        result = []
        for item in raw:
            if item is None:
                item = {}
            if not isinstance(item, dict):
                raise ValueError("cannot unmarshal a non-object into hpaCondition")
            folded = {str(k).lower(): v for k, v in item.items()}
            cond = {}
            for field in ("type", "reason", "message", "status"):
                value = folded.get(field)
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"cannot unmarshal {type(value).__name__} into hpaCondition.{field}")
                cond[field] = value or ""
            result.append(cond)
        return result
    except ValueError as exc:
        raise CheckError(f"failed to convert conditions annotation to typed: {exc}") from exc
    except RecursionError as exc:
        raise CheckError("failed to convert conditions annotation to typed: nested too deeply to read") from exc


@_typed("HPA", "autoscaling", "HorizontalPodAutoscaler", ("v1", "v2beta1", "v2beta2", "v2"))
def hpa_health(obj: Obj, version: str) -> Health:
    """HorizontalPodAutoscaler: v1 reads the conditions annotation, later versions status.conditions."""
    if version == "v1":
        annotations = obj_map(_meta(obj).get("annotations"), "metadata.annotations")
        text = annotations.get(HPA_CONDITIONS_ANNOTATION)
        if text is None:
            return _HPA_WAITING
        conditions = _hpa_annotation_conditions(obj_str(text, "annotation"))
        return _hpa_verdict(conditions) if conditions else _HPA_WAITING
    conditions = [
        {f: obj_str(c.get(f), f"condition.{f}") for f in ("type", "reason", "message", "status")}
        for c in _conditions(_status(obj))
    ]
    return _hpa_verdict(conditions)


# --- APIService ----------------------------------------------------------------------------


@_typed("APIService", "apiregistration.k8s.io", "APIService", ("v1", "v1beta1"))
def apiservice_health(obj: Obj, version: str) -> Health:
    """APIService: the first Available condition decides; Progressing until there is one."""
    cond = _first_condition(_status(obj), "Available")
    if cond is None:
        return Health(PROGRESSING, "Waiting to be processed")
    reason = obj_str(cond.get("reason"), "condition.reason")
    text = f"{reason}: {obj_str(cond.get('message'), 'condition.message')}"
    healthy = obj_str(cond.get("status"), "condition.status") == "True"
    return Health(HEALTHY if healthy else PROGRESSING, text)


# --- registry ------------------------------------------------------------------------------

GO_CHECKS: dict[tuple[str, str], Check] = {
    ("apps", "Deployment"): deployment_health,
    ("apps", "StatefulSet"): statefulset_health,
    ("apps", "ReplicaSet"): replicaset_health,
    ("apps", "DaemonSet"): daemonset_health,
    ("extensions", "Ingress"): ingress_health,
    ("networking.k8s.io", "Ingress"): ingress_health,
    ("apiregistration.k8s.io", "APIService"): apiservice_health,
    ("", "Service"): service_health,
    ("", "PersistentVolumeClaim"): pvc_health,
    ("", "Pod"): pod_health,
    ("batch", "Job"): job_health,
    ("autoscaling", "HorizontalPodAutoscaler"): hpa_health,
}
"""gitops-engine's GetHealthCheckFunc, keyed by (group, kind); argoproj.io/Workflow lives in argo.py."""
