"""Health of CustomResourceDefinitions, as Argo CD's built-in Lua check
`resource_customizations/apiextensions.k8s.io/CustomResourceDefinition/health.lua` decides it
(Argo CD v3.5.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from argo_doctor.health.luaish import concat, index, length, pairs
from argo_doctor.health.types import Health, HealthStatus

Obj = Mapping[str, Any]
NO_CONDITIONS = "Status conditions not found"
INSTALLING = "CRD is being installed"


def crd_health(obj: Obj, version: str) -> Health:
    """CustomResourceDefinition (any version), as the v3.5 script decides it.

    Terminating first (deletionTimestamp, then conditions), then the conditions in the order
    they are listed: the first Terminating=True, NamesAccepted=False, NonStructuralSchema=True,
    or Established=False with reason Installing decides; otherwise Healthy when Established=True.
    """
    if index(index(obj, "metadata"), "deletionTimestamp") is not None:
        # Only reachable for objects Argo CD does not already call "Pending deletion".
        return Health(HealthStatus.PROGRESSING, "CRD is terminating")
    conditions = index(obj.get("status"), "conditions")
    if conditions is None or length(conditions) == 0:
        return Health(HealthStatus.PROGRESSING, NO_CONDITIONS)

    established = False
    for cond in pairs(conditions):
        cond_type, cond_status = index(cond, "type"), index(cond, "status")
        if cond_type == "Terminating" and cond_status == "True":
            return Health(HealthStatus.PROGRESSING, concat("CRD is terminating: ", index(cond, "message")))
        if cond_type == "NamesAccepted" and cond_status == "False":
            return Health(HealthStatus.DEGRADED, concat("CRD names have not been accepted: ", index(cond, "message")))
        if cond_type == "NonStructuralSchema" and cond_status == "True":
            return Health(HealthStatus.DEGRADED, concat("Schema violations found: ", index(cond, "message")))
        if cond_type == "Established":
            if cond_status == "True":
                established = True
            elif index(cond, "reason") == "Installing":
                return Health(HealthStatus.PROGRESSING, INSTALLING)

    if not established:
        return Health(HealthStatus.DEGRADED, "CRD is not established")
    return Health(HealthStatus.HEALTHY, "CRD is healthy")
