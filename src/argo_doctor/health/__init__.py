"""Argo CD-compatible resource health.

`HealthAssessor.assess` gives, for a Kubernetes object as `kubectl get -o yaml|json` prints
it, the health status and message Argo CD would show: gitops-engine's built-in checks, Argo
CD's built-in Lua checks for Rollouts and CRDs, and Lua customizations from argocd-cm or a
`resource_customizations`-style directory, run in a sandbox.
"""

from argo_doctor import ARGOCD_PARITY
from argo_doctor.health.assess import HealthAssessor
from argo_doctor.health.luascripts import LuaHealthScripts, LuaScript
from argo_doctor.health.types import Health, HealthProblem, HealthStatus, application_health, is_worse, worst

__all__ = [
    "ARGOCD_PARITY",
    "Health",
    "HealthAssessor",
    "HealthProblem",
    "HealthStatus",
    "LuaHealthScripts",
    "LuaScript",
    "application_health",
    "is_worse",
    "worst",
]
