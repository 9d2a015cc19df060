"""HealthAssessor: the health Argo CD shows for one live object.

Order, as in gitops-engine's GetResourceHealth and Argo CD's Lua lookup:

1. an object being deleted (deletionTimestamp, unless held by Argo CD's hook finalizer) is
   Progressing "Pending deletion", whatever its kind;
2. a Lua script configured for the kind (argocd-cm, then the built-in directory) wins;
3. Argo CD's built-in Lua checks (Rollout, CustomResourceDefinition), re-implemented here;
4. gitops-engine's Go checks;
5. otherwise there is no health (None).

A check that fails is Unknown with the error as message, as in Argo CD.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from argo_doctor.health.argo import rollout_health, workflow_health
from argo_doctor.health.core import GO_CHECKS
from argo_doctor.health.crd import crd_health
from argo_doctor.health.fields import CheckError, split_api_version
from argo_doctor.health.luascripts import (
    DEFAULT_MAX_CPU_SECONDS,
    DEFAULT_MAX_INSTRUCTIONS,
    DEFAULT_MAX_MEMORY,
    DEFAULT_WALL_TIMEOUT,
    LuaHealthScripts,
    run_health_script,
)
from argo_doctor.health.types import Health, HealthProblem, HealthStatus

HOOK_FINALIZER = "argocd.argoproj.io/hook-finalizer"
PENDING_DELETION = "Pending deletion"

Check = Callable[[Mapping[str, Any], str], Health]

BUILTIN_LUA_CHECKS: dict[tuple[str, str], Check] = {
    ("argoproj.io", "Rollout"): rollout_health,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crd_health,
}
"""Argo CD's embedded resource_customizations scripts that argo-doctor re-implements."""

GO_BUILTIN_CHECKS: dict[tuple[str, str], Check] = {**GO_CHECKS, ("argoproj.io", "Workflow"): workflow_health}


def pending_deletion(obj: Mapping[str, Any]) -> bool:
    """Being deleted, and not merely held by Argo CD's hook finalizer."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("deletionTimestamp") in (None, ""):
        return False
    finalizers = meta.get("finalizers")
    return not (isinstance(finalizers, list) and HOOK_FINALIZER in finalizers)


class HealthAssessor:
    """Assesses objects and collects the problems met in Lua customizations."""

    def __init__(
        self,
        scripts: LuaHealthScripts | None = None,
        *,
        max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
        max_memory: int = DEFAULT_MAX_MEMORY,
        max_cpu_seconds: float = DEFAULT_MAX_CPU_SECONDS,
        wall_timeout: float = DEFAULT_WALL_TIMEOUT,
    ) -> None:
        self.scripts = scripts if scripts is not None else LuaHealthScripts()
        self.limits: dict[str, Any] = {
            "max_instructions": max_instructions,
            "max_memory": max_memory,
            "max_cpu_seconds": max_cpu_seconds,
            "wall_timeout": wall_timeout,
        }
        self.problems: list[HealthProblem] = []
        self._seen: set[HealthProblem] = set()
        for problem in self.scripts.problems:
            self._report(problem)

    def _report(self, problem: HealthProblem) -> None:
        if problem not in self._seen:
            self._seen.add(problem)
            self.problems.append(problem)

    def assess(self, obj: Mapping[str, Any]) -> Health | None:
        """Health as Argo CD shows it; None when Argo CD has no health check for this kind."""
        if not isinstance(obj, Mapping):
            return None
        if pending_deletion(obj):
            return Health(HealthStatus.PROGRESSING, PENDING_DELETION)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        group, version = split_api_version(api_version)

        script = self.scripts.script_for(group, kind)
        if script is not None:
            outcome = run_health_script(script, obj, **self.limits)
            if outcome.problem is not None:
                self._report(HealthProblem(script.location, outcome.problem))
            return outcome.health

        check = BUILTIN_LUA_CHECKS.get((group, kind)) or GO_BUILTIN_CHECKS.get((group, kind))
        if check is None:
            return None
        try:
            return check(obj, version)
        except CheckError as exc:
            return Health(HealthStatus.UNKNOWN, str(exc))
