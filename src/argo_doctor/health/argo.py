"""Health of Argo kinds: Workflow (gitops-engine, Go) and Rollout (Argo CD's built-in Lua check).

The Rollout check re-implements, in Python, the decision order of Argo CD's
`resource_customizations/argoproj.io/Rollout/health.lua`, including its handling of Rollouts
written by Argo Rollouts v0.9 (hash-valued observedGeneration) and v1.0 (no workloadRef).
`lua_result` reads a re-implemented script's result as Argo CD reads the original's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from argo_doctor.health.luaish import getn, index, ipairs, less_than, tonumber, truthy
from argo_doctor.health.types import Health, HealthStatus

Obj = Mapping[str, Any]

INVALID_HEALTH_STATUS = "Lua returned an invalid health status"
WORKLOAD_GENERATION_ANNOTATION = "rollout.argoproj.io/workload-generation"


def workflow_health(obj: Obj, version: str) -> Health:
    """argoproj.io Workflow (any version): by status.phase, with status.message.

    gitops-engine reads both with NestedString and ignores its errors: a missing field, a
    non-object status or a non-string value reads as "", so this check never fails.
    """
    status = obj.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    message = status.get("message") if isinstance(status, Mapping) else None
    phase = phase if isinstance(phase, str) else ""
    message = message if isinstance(message, str) else ""
    if phase in ("", "Pending", "Running"):
        return Health(HealthStatus.PROGRESSING, message)
    if phase == "Succeeded":
        return Health(HealthStatus.HEALTHY, message)
    if phase in ("Failed", "Error"):
        return Health(HealthStatus.DEGRADED, message)
    return Health(HealthStatus.UNKNOWN, message)


# --- Lua results, as Argo CD reads them -------------------------------------------------------


def lua_result(status: Any, message: Any) -> Health | None:
    """What Argo CD makes of a script's result table {status=..., message=...}.

    The table goes through JSON into a struct of two strings: an empty table, or a status or
    message that is not a string (a number, a boolean, a table), gives an empty health, which
    argo-doctor reports as no health (None); a status that is not a health status is Unknown.
    """
    if status is None and message is None:
        return None
    if not isinstance(status, str | None) or not isinstance(message, str | None):
        return None
    if status not in {s.value for s in HealthStatus}:
        return Health(HealthStatus.UNKNOWN, INVALID_HEALTH_STATUS)
    return Health(HealthStatus(status), message or "")


def _progressing(message: str) -> Health:
    return Health(HealthStatus.PROGRESSING, message)


def _generation_observed(obj: Obj) -> bool:
    """v0.10+ Rollouts carry a numeric observedGeneration; older ones a hash (always "observed")."""
    status = obj.get("status")
    if status is None:
        return False
    observed = tonumber(index(status, "observedGeneration"))
    if observed is None:
        return True
    generation = index(index(obj, "metadata"), "generation")
    if less_than(generation, observed):
        # A number above the generation is a v0.9 hash that happens to be all digits.
        return True
    return isinstance(generation, int | float) and not isinstance(generation, bool) and observed == generation


def _workload_generation_observed(obj: Obj) -> bool:
    """For Rollouts with a workloadRef (v1.1+): the referenced workload's generation is observed."""
    if index(index(obj, "spec"), "workloadRef") is None:
        return True
    annotations = index(index(obj, "metadata"), "annotations")
    if annotations is None:
        return True
    wanted = tonumber(index(annotations, WORKLOAD_GENERATION_ANNOTATION))
    seen = tonumber(index(obj.get("status"), "workloadObservedGeneration"))
    return wanted == seen


def _number_or(value: Any, default: float) -> Any:
    return default if value is None else value


def _stable_rs(status: Any) -> Any:
    """status.stableRS, or the pre-v0.8 status.canary.stableRS (which may be nil)."""
    stable = index(status, "stableRS")
    if stable is not None:
        return stable
    canary = index(status, "canary")
    if canary is not None:
        return index(canary, "stableRS")
    return ""


def rollout_health(obj: Obj, version: str) -> Health | None:
    """argoproj.io Rollout, following Argo CD's built-in health.lua decision order."""
    status = obj.get("status")
    if not _generation_observed(obj) or not _workload_generation_observed(obj):
        return _progressing("Waiting for rollout spec update to be observed")

    # Argo Rollouts v1.0+ records phase and message; Argo CD shows them as they are.
    phase = index(status, "phase")
    if phase is not None:
        return lua_result("Suspended" if phase == "Paused" else phase, index(status, "message"))

    # Legacy (pre-v1.0) Rollouts: work it out from conditions and replica counts.
    for cond in ipairs(index(status, "conditions")):
        cond_type = index(cond, "type")
        if cond_type == "InvalidSpec" or (
            cond_type == "Progressing" and index(cond, "reason") in ("RolloutAborted", "ProgressDeadlineExceeded")
        ):
            return lua_result("Degraded", index(cond, "message"))

    spec = index(obj, "spec")
    pause_conditions = index(status, "pauseConditions")
    if (pause_conditions is not None and getn(pause_conditions) > 0) or truthy(index(spec, "paused")):
        return Health(HealthStatus.SUSPENDED, "Rollout is paused")

    pod_hash = index(status, "currentPodHash")
    if pod_hash is None:
        return _progressing("Waiting for rollout to finish: status has not been reconciled.")

    desired = _number_or(index(spec, "replicas"), 1)
    replicas = _number_or(index(status, "replicas"), 0)
    updated = _number_or(index(status, "updatedReplicas"), 0)
    available = _number_or(index(status, "availableReplicas"), 0)
    if less_than(updated, desired):
        return _progressing("Waiting for roll out to finish: More replicas need to be updated")
    if less_than(available, updated):
        return _progressing("Waiting for roll out to finish: updated replicas are still becoming available")

    stable = _stable_rs(status)
    strategy = index(spec, "strategy")
    if index(strategy, "blueGreen") is not None:
        blue_green = index(status, "blueGreen")
        if blue_green is None or index(blue_green, "activeSelector") != pod_hash:
            return _progressing("active service cutover pending")
        if stable != "" and stable != pod_hash:
            return _progressing("waiting for analysis to complete")
    elif index(strategy, "canary") is not None:
        if less_than(updated, replicas):
            return _progressing("Waiting for roll out to finish: old replicas are pending termination")
        if stable == "" or stable != pod_hash:
            return _progressing("Waiting for rollout to finish steps")
    return Health(HealthStatus.HEALTHY, "")
