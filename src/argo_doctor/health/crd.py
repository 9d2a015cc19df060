"""Health of CustomResourceDefinitions, as Argo CD's built-in Lua check
`resource_customizations/apiextensions.k8s.io/CustomResourceDefinition/health.lua` decides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from argo_doctor.health.luaish import concat, index, length
from argo_doctor.health.types import Health, HealthStatus

Obj = Mapping[str, Any]
NO_CONDITIONS = "Status conditions not found"


def crd_health(obj: Obj, version: str) -> Health:
    """CustomResourceDefinition (any version): terminating, names accepted, established, schema."""
    if index(index(obj, "metadata"), "deletionTimestamp") is not None:
        # Only reachable for objects Argo CD does not already call "Pending deletion".
        return Health(HealthStatus.PROGRESSING, "CRD is terminating")
    conditions = index(obj.get("status"), "conditions")
    if conditions is None or length(conditions) == 0:
        return Health(HealthStatus.PROGRESSING, NO_CONDITIONS)

    established = terminating = names_rejected = violations = False
    detail: Any = ""  # the message of the last condition that matched any test below
    for cond in conditions if isinstance(conditions, list) else ():
        if cond is None:
            continue
        cond_type, cond_status = index(cond, "type"), index(cond, "status")
        if cond_type == "Terminating" and cond_status == "True":
            terminating, detail = True, index(cond, "message")
        if cond_type == "NamesAccepted" and cond_status == "False":
            names_rejected, detail = True, index(cond, "message")
        if cond_type == "Established" and cond_status == "True":
            established, detail = True, index(cond, "message")
        if cond_type == "NonStructuralSchema" and cond_status == "True":
            violations, detail = True, index(cond, "message")

    if terminating:
        return Health(HealthStatus.PROGRESSING, concat("CRD is terminating: ", detail))
    if names_rejected:
        return Health(HealthStatus.DEGRADED, concat("CRD names have not been accepted: ", detail))
    if not established:
        return Health(HealthStatus.DEGRADED, "CRD is not established")
    if violations:
        return Health(HealthStatus.DEGRADED, concat("Schema violations found: ", detail))
    return Health(HealthStatus.HEALTHY, "CRD is healthy")
