"""Health of the Argo projects' own kinds that Argo CD judges with built-in Lua scripts.

Python re-implementations of the decision order, statuses and messages of Argo CD v3.5.1's
`resource_customizations/argoproj.io/<Kind>/health.lua` for AnalysisRun, Experiment,
CronWorkflow, EventBus and ApplicationSet (Rollout is in `argo.py`). Values are read as the
scripts read them (`luaish`), so a malformed object fails, or gets no
health, where the script would. Argo CD v3.5.1 has no health check for EventSource or Sensor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from argo_doctor.health.argo import lua_result
from argo_doctor.health.luaish import index, ipairs, pairs, truthy
from argo_doctor.health.types import Health, HealthStatus

Obj = Mapping[str, Any]

PROGRESSING = HealthStatus.PROGRESSING
HEALTHY = HealthStatus.HEALTHY
DEGRADED = HealthStatus.DEGRADED
UNKNOWN = HealthStatus.UNKNOWN

_RUN_UNRECONCILED = "Waiting for analysis run to finish: status has not been reconciled."
_RUN_PHASES: dict[str, tuple[HealthStatus, str, bool]] = {
    # phase: (status, message, whether status.message replaces the message when set)
    "Pending": (PROGRESSING, "Analysis run is running", False),
    "Running": (PROGRESSING, "Analysis run is running", False),
    "Successful": (HEALTHY, "Analysis run completed successfully", True),
    "Failed": (DEGRADED, "Analysis run failed", True),
    "Error": (DEGRADED, "Analysis run had an error", True),
    "Inconclusive": (UNKNOWN, "Analysis run was inconclusive", True),
}

_EXPERIMENT_UNRECONCILED = "Waiting for experiment to finish: status has not been reconciled."
_EXPERIMENT_PHASES: dict[str, tuple[HealthStatus, str]] = {
    "Pending": (PROGRESSING, "Experiment is pending"),
    "Running": (PROGRESSING, "Experiment is running"),
    "Successful": (HEALTHY, "Experiment is successful"),
    "Failed": (DEGRADED, "Experiment has failed"),
    "Error": (DEGRADED, "Experiment had an error"),
}

CRONWORKFLOW_HEALTHY = "CronWorkflow is healthy."
EVENTBUS_WAITING = "Waiting for initialization"
APPLICATIONSET_WAITING = "Waiting for the status to be reported"

# ApplicationSet: the passes over the conditions, in order; the first match of a pass decides.
_APPSET_PASSES: tuple[tuple[str, str, HealthStatus], ...] = (
    ("ErrorOccurred", "True", DEGRADED),
    ("ResourcesUpToDate", "False", DEGRADED),
    ("RolloutProgressing", "True", PROGRESSING),
    ("ResourcesUpToDate", "True", HEALTHY),
)


def _phase(obj: Obj) -> tuple[bool, Any]:
    """(whether there is a status, its phase) as the phase-driven scripts read them."""
    status = obj.get("status")
    if status is None:
        return False, None
    return True, index(status, "phase")


def analysisrun_health(obj: Obj, version: str) -> Health | None:
    """AnalysisRun: by status.phase; a finished run shows status.message when it has one.

    No status: Progressing, not reconciled yet. A phase the script does not know: no health.
    """
    has_status, phase = _phase(obj)
    if not has_status:
        return Health(PROGRESSING, _RUN_UNRECONCILED)
    if not isinstance(phase, str) or phase not in _RUN_PHASES:
        return None
    status, message, own_message = _RUN_PHASES[phase]
    if own_message:
        custom = index(obj.get("status"), "message")
        if custom is not None:
            return lua_result(status.value, custom)
    return Health(status, message)


def experiment_health(obj: Obj, version: str) -> Health | None:
    """Experiment: by status.phase, with fixed messages; no status is Progressing, not reconciled yet."""
    has_status, phase = _phase(obj)
    if not has_status:
        return Health(PROGRESSING, _EXPERIMENT_UNRECONCILED)
    if not isinstance(phase, str) or phase not in _EXPERIMENT_PHASES:
        return None
    status, message = _EXPERIMENT_PHASES[phase]
    return Health(status, message)


def _conditions(obj: Obj) -> Any:
    """status.conditions, or None when there is no status."""
    status = obj.get("status")
    return None if status is None else index(status, "conditions")


def cronworkflow_health(obj: Obj, version: str) -> Health | None:
    """CronWorkflow: the first SpecError/SubmissionError (Degraded) or Completed (Healthy) condition
    with status "True" decides, with its message; otherwise Healthy.
    """
    conditions = _conditions(obj)
    if conditions is not None:
        for cond in pairs(conditions):
            cond_type = index(cond, "type")
            if cond_type in ("SpecError", "SubmissionError") and index(cond, "status") == "True":
                return lua_result(DEGRADED.value, index(cond, "message"))
            if cond_type == "Completed" and index(cond, "status") == "True":
                return lua_result(HEALTHY.value, index(cond, "message"))
    return Health(HEALTHY, CRONWORKFLOW_HEALTHY)


def eventbus_health(obj: Obj, version: str) -> Health | None:
    """EventBus: the first Deployed condition that is "False" (Degraded) or "True" (Healthy) decides,
    with its message, else its reason; otherwise Progressing, waiting for initialization.
    """
    conditions = _conditions(obj)
    if conditions is not None:
        for cond in ipairs(conditions):
            if index(cond, "type") != "Deployed":
                continue
            cond_status = index(cond, "status")
            if cond_status in ("False", "True"):
                message = index(cond, "message")
                if not truthy(message):  # Lua's `message or reason`
                    message = index(cond, "reason")
                return lua_result((DEGRADED if cond_status == "False" else HEALTHY).value, message)
    return Health(PROGRESSING, EVENTBUS_WAITING)


def applicationset_health(obj: Obj, version: str) -> Health | None:
    """ApplicationSet: ErrorOccurred=True, then ResourcesUpToDate=False (Degraded), then
    RolloutProgressing=True (Progressing), then ResourcesUpToDate=True (Healthy), each looked for
    through all the conditions, with the condition's message; otherwise Progressing.
    """
    conditions = _conditions(obj)
    if conditions is not None:
        for cond_type, cond_status, verdict in _APPSET_PASSES:
            for cond in pairs(conditions):
                if index(cond, "type") == cond_type and index(cond, "status") == cond_status:
                    return lua_result(verdict.value, index(cond, "message"))
    return Health(PROGRESSING, APPLICATIONSET_WAITING)


ARGO_LUA_CHECKS: dict[str, Callable[[Obj, str], Health | None]] = {
    "AnalysisRun": analysisrun_health,
    "Experiment": experiment_health,
    "CronWorkflow": cronworkflow_health,
    "EventBus": eventbus_health,
    "ApplicationSet": applicationset_health,
}
"""The argoproj.io kinds above, by kind."""
