"""The remediation policy: which Applications and namespaces may be touched, how often, and whether for real."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argo_doctor.errors import ConfigError
from argo_doctor.model import Problem
from argo_doctor.sources.objects import load_yaml_file
from argo_doctor.timeutil import parse_go_duration

DEFAULT_COOLDOWN = 15 * 60.0
"""Seconds between two restarts of one Rollout when the policy names no cooldown."""
DEFAULT_MAX_RESTARTS_PER_HOUR = 10
"""Restarts in any rolling hour, all Rollouts together, when the policy names no cap: a storm of notifications
(a bad release everywhere) restarts a few Rollouts, not all of them."""
KEYS = {"dryRun", "allow", "cooldown", "maxRestartsPerHour", "allowSingleReplica"}
ALLOW_KEYS = {"namespaces", "applications"}


@dataclass(frozen=True)
class Policy:
    """What the restarter may do. Empty allow-lists allow nothing: a policy must name what it lets be touched."""

    dry_run: bool = True
    namespaces: tuple[str, ...] = ()
    applications: tuple[str, ...] = ()
    cooldown: float = DEFAULT_COOLDOWN
    max_restarts_per_hour: int = DEFAULT_MAX_RESTARTS_PER_HOUR
    allow_single_replica: bool = False
    source: str = "built-in"
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def namespace_allowed(self, namespace: str) -> bool:
        """Whether a Rollout in `namespace` may be read and restarted (globs, `*` allows every namespace)."""
        return any(fnmatch.fnmatchcase(namespace, pattern) for pattern in self.namespaces)

    def application_allowed(self, app_namespace: str, app: str) -> bool:
        """Whether `app_namespace/app` may trigger restarts (globs such as `argocd/*`)."""
        return any(fnmatch.fnmatchcase(f"{app_namespace}/{app}", pattern) for pattern in self.applications)


def parse_policy(doc: Any, source: str) -> Policy:
    """A Policy from the parsed YAML document; ConfigError naming `source` and the bad key otherwise."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: a policy is a YAML mapping, not {type(doc).__name__}")
    unknown = sorted(set(doc) - KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown policy key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    allow = doc.get("allow") or {}
    if not isinstance(allow, dict) or set(allow) - ALLOW_KEYS:
        raise ConfigError(f"{source}: allow takes namespaces and applications, lists of globs")
    lists = {key: _globs(allow.get(key), f"{source}: allow.{key}") for key in ALLOW_KEYS}
    cooldown_text = doc.get("cooldown")
    cooldown = DEFAULT_COOLDOWN
    if cooldown_text is not None:
        seconds = parse_go_duration(cooldown_text) if isinstance(cooldown_text, str) else None
        if seconds is None or seconds < 0:
            raise ConfigError(f"{source}: cooldown {cooldown_text!r} is not a Go duration ≥ 0 like 15m or 1h30m")
        cooldown = seconds
    cap = doc.get("maxRestartsPerHour", DEFAULT_MAX_RESTARTS_PER_HOUR)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ConfigError(f"{source}: maxRestartsPerHour must be a whole number ≥ 0, not {cap!r}")
    return Policy(
        dry_run=_flag(doc, "dryRun", True, source),
        namespaces=lists["namespaces"],
        applications=lists["applications"],
        cooldown=cooldown,
        max_restarts_per_hour=cap,
        allow_single_replica=_flag(doc, "allowSingleReplica", False, source),
        source=source,
        raw=doc,
    )


def load_policy(path: Path) -> Policy:
    """Read a policy file with the guarded YAML loader of settings files."""
    problems: list[Problem] = []
    doc = load_yaml_file(path, str(path), problems, unique_keys=True)
    if problems:
        raise ConfigError(f"{problems[0].location}: {problems[0].message}")
    return parse_policy(doc, str(path))


def _flag(doc: dict[str, Any], key: str, default: bool, source: str) -> bool:
    value = doc.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: {key} must be true or false, not {value!r}")
    return value


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f"{where} must be a list of globs")
    return tuple(value)
