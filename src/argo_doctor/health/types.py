"""Value types shared by the health checks: statuses, verdicts, problems and their ordering."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal


class HealthStatus(str, enum.Enum):  # noqa: UP042 - the public API promises (str, Enum)
    """A resource health status, spelled as Argo CD spells it."""

    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"
    MISSING = "Missing"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Health:
    """A health verdict: status plus the message Argo CD shows next to it."""

    status: HealthStatus
    message: str = ""


@dataclass(frozen=True)
class HealthProblem:
    """Something wrong with a health customization (a Lua script or its configuration), or a note about the scripts
    in use (`kind` "note", e.g. which cached release applies)."""

    location: str
    message: str
    kind: Literal["error", "note"] = "error"


LUA_SCRIPTS_LOCATION = "Lua health scripts"
"""Where problems about the health scripts as a whole (not one script) are reported."""


# gitops-engine's healthOrder, most healthy first; IsWorse compares positions in it.
_ORDER: tuple[HealthStatus, ...] = (
    HealthStatus.HEALTHY,
    HealthStatus.SUSPENDED,
    HealthStatus.PROGRESSING,
    HealthStatus.MISSING,
    HealthStatus.DEGRADED,
    HealthStatus.UNKNOWN,
)
_RANK = {status: rank for rank, status in enumerate(_ORDER)}


def is_worse(current: HealthStatus, new: HealthStatus) -> bool:
    """True when `new` ranks below `current` in gitops-engine's health order (IsWorse)."""
    return _RANK[HealthStatus(new)] > _RANK[HealthStatus(current)]


def worst(statuses: Iterable[HealthStatus]) -> HealthStatus:
    """The least healthy of `statuses`; Healthy for none, as Argo CD starts from Healthy."""
    result = HealthStatus.HEALTHY
    for status in statuses:
        if is_worse(result, status):
            result = HealthStatus(status)
    return result


def application_health(obj: Mapping[str, Any]) -> Health | None:
    """An Argo CD Application's own health, as the UI and `argocd app get` show it (`status.health`); None for any
    other object, or an Application not assessed yet."""
    if obj.get("kind") != "Application" or not str(obj.get("apiVersion") or "").startswith("argoproj.io/"):
        return None
    status = obj.get("status")
    found = status.get("health") if isinstance(status, Mapping) else None
    value = found.get("status") if isinstance(found, Mapping) else None
    try:
        health = HealthStatus(value)
    except ValueError:
        return None
    message = found.get("message") if isinstance(found, Mapping) else None
    return Health(health, str(message) if message else "")
