"""HealthAssessor: the health Argo CD shows for one live object.

Order, as in gitops-engine's GetResourceHealth and Argo CD's Lua lookup:

1. an object being deleted (deletionTimestamp, unless held by Argo CD's hook finalizer) is
   Progressing "Pending deletion", whatever its kind;
2. a Lua script for the kind wins: argocd-cm, then `--lua-dir`, then the built-in scripts that
   `lua fetch` cached for the installation's Argo CD version (`health.cache`);
3. Argo CD's built-in Lua checks, re-implemented here: argoproj.io Rollout, AnalysisRun,
   Experiment, CronWorkflow, EventBus, ApplicationSet, and CustomResourceDefinition (a script
   for one of these from step 2 still wins; an empty or non-string result is no health);
4. gitops-engine's Go checks;
5. otherwise there is no health (None).

A check that fails is Unknown with the error as message, as in Argo CD.

Lua scripts run in a child process (`luaworker`) that is killed when a script overruns, and
the assessor bounds what they may cost a scan: `lua_budget` seconds in all (default 60 s), and
no more runs of a script stopped `max_timeouts` times for running too long (default 3). Past
either, the objects concerned are Unknown, "not assessed: ...", and one problem says so.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from argo_doctor.health.argo import rollout_health, workflow_health
from argo_doctor.health.argo_kinds import ARGO_LUA_CHECKS
from argo_doctor.health.core import GO_CHECKS
from argo_doctor.health.crd import crd_health
from argo_doctor.health.fields import CheckError, split_api_version
from argo_doctor.health.luascripts import (
    DEFAULT_MAX_CPU_SECONDS,
    DEFAULT_MAX_INSTRUCTIONS,
    DEFAULT_MAX_MEMORY,
    DEFAULT_WALL_TIMEOUT,
    TIMEOUTS,
    LuaHealthScripts,
    LuaLimits,
    LuaScript,
)
from argo_doctor.health.luaworker import LuaWorker
from argo_doctor.health.types import LUA_SCRIPTS_LOCATION, Health, HealthProblem, HealthStatus

HOOK_FINALIZER = "argocd.argoproj.io/hook-finalizer"
PENDING_DELETION = "Pending deletion"
DEFAULT_LUA_BUDGET = 60.0
"""Seconds a scan may spend in Lua health scripts: six wall timeouts, so that runaway scripts
cannot hold a scan for long, and room for some 50,000 objects at the 1 ms a normal script costs."""
DEFAULT_MAX_TIMEOUTS = 3
"""Times a script may be stopped for running too long before the scan stops running it."""

Check = Callable[[Mapping[str, Any], str], Health | None]

BUILTIN_LUA_CHECKS: dict[tuple[str, str], Check] = {
    ("argoproj.io", "Rollout"): rollout_health,
    **{("argoproj.io", kind): check for kind, check in ARGO_LUA_CHECKS.items()},
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
    """Assesses objects and collects the problems met in Lua customizations.

    Close it (or use it as a context manager) to stop the process that runs Lua scripts; it is
    also stopped when the assessor is garbage-collected and at exit.
    """

    def __init__(
        self,
        scripts: LuaHealthScripts | None = None,
        *,
        max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
        max_memory: int = DEFAULT_MAX_MEMORY,
        max_cpu_seconds: float = DEFAULT_MAX_CPU_SECONDS,
        wall_timeout: float = DEFAULT_WALL_TIMEOUT,
        lua_budget: float = DEFAULT_LUA_BUDGET,
        max_timeouts: int = DEFAULT_MAX_TIMEOUTS,
    ) -> None:
        self.scripts = scripts if scripts is not None else LuaHealthScripts()
        self.limits = LuaLimits(max_instructions, max_memory, max_cpu_seconds, wall_timeout)
        self.lua_budget = lua_budget
        self.max_timeouts = max_timeouts
        self.lua_seconds = 0.0
        """Time spent running Lua scripts so far."""
        self.problems: list[HealthProblem] = []
        self.worker = LuaWorker()
        self._seen: set[HealthProblem] = set()
        self._timeouts: Counter[LuaScript] = Counter()
        for problem in self.scripts.problems:
            self._report(problem)

    def __enter__(self) -> HealthAssessor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the process that runs Lua scripts (a later `assess` starts a new one)."""
        self.worker.close()

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
            return self._run(script, obj)

        check = BUILTIN_LUA_CHECKS.get((group, kind)) or GO_BUILTIN_CHECKS.get((group, kind))
        if check is None:
            return None
        try:
            return check(obj, version)
        except CheckError as exc:
            return Health(HealthStatus.UNKNOWN, str(exc))

    def basis(self, obj: Mapping[str, Any]) -> str:
        """Which check `assess` applies to the object, in words: pending deletion, a Lua script (and where it is),
        the built-in check of its kind, or none."""
        if not isinstance(obj, Mapping):
            return "not an object"
        if pending_deletion(obj):
            return "the object is being deleted (metadata.deletionTimestamp), which Argo CD shows as Progressing"
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return "no apiVersion or kind: no health check applies"
        group, _ = split_api_version(api_version)
        name = f"{group}/{kind}" if group else kind
        script = self.scripts.script_for(group, kind)
        if script is not None:
            origin = "a resource_customizations script" if script.builtin else "a health customization"
            return f"{origin} for {name} ({script.location})"
        if (group, kind) in BUILTIN_LUA_CHECKS or (group, kind) in GO_BUILTIN_CHECKS:
            return f"Argo CD's built-in health check for {name}"
        return f"Argo CD has no health check for {name}: it shows no health for it"

    def _run(self, script: LuaScript, obj: Mapping[str, Any]) -> Health | None:
        """The script's verdict, within the scan's budget and the script's allowance of timeouts."""
        if self._timeouts[script] >= self.max_timeouts:
            return Health(HealthStatus.UNKNOWN, f"not assessed: {self._benched(script)}")
        remaining = self.lua_budget - self.lua_seconds
        if remaining <= 0:
            return self._over_budget()
        limits = replace(self.limits, wall_timeout=min(self.limits.wall_timeout, remaining))
        started = time.monotonic()
        outcome = self.worker.run(script, obj, limits)
        self.lua_seconds += time.monotonic() - started
        if outcome.stop == "wall" and limits.wall_timeout < self.limits.wall_timeout:
            self.lua_seconds = max(self.lua_seconds, self.lua_budget)
            return self._over_budget()
        if outcome.stop in TIMEOUTS:
            self._timeouts[script] += 1
            if self._timeouts[script] >= self.max_timeouts:
                self._bench(script)
                return outcome.health
        if outcome.problem is not None:
            self._report(HealthProblem(script.location, outcome.problem))
        return outcome.health

    def _benched(self, script: LuaScript) -> str:
        return f"Lua health script stopped {self._timeouts[script]} times for running too long in this scan"

    def _bench(self, script: LuaScript) -> None:
        """One problem for a script that will not run again: it replaces the script's timeout problems."""
        timeouts = {self.limits.message(stop) for stop in TIMEOUTS}
        self.problems = [p for p in self.problems if p.location != script.location or p.message not in timeouts]
        self._report(
            HealthProblem(
                script.location,
                f"{self._benched(script)} (limits: {self.limits.max_instructions} instructions, "
                f"{self.limits.max_cpu_seconds:g} s of CPU time, {self.limits.wall_timeout:g} s of wall time); "
                "not run for the rest of the scan: the objects it applies to are Unknown",
            )
        )

    def _over_budget(self) -> Health:
        spent = f"the scan's budget of {self.lua_budget:g} s for Lua health scripts is spent"
        self._report(
            HealthProblem(LUA_SCRIPTS_LOCATION, f"{spent}; the objects that needed a script after that are Unknown")
        )
        return Health(HealthStatus.UNKNOWN, f"not assessed: {spent}")
