"""The restart decision: the rule's verdict on a Rollout, then the policy. Pure, so `fix`, `serve` and the tests
decide the very same way, and the audit trail can say which step decided."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from argo_doctor.facts.rollouts import RolloutState, RolloutVerdict
from argo_doctor.remediate.policy import Policy
from argo_doctor.timeutil import format_time

Action = Literal["restart", "dry-run", "skipped"]
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Decision:
    """What to do with one Rollout and why; `patch` is what a restart sends (also shown in a dry run)."""

    rollout: str
    action: Action
    reason: str
    policy: str
    patch: dict[str, Any] | None = None


def restart_patch(now: datetime, resource_version: str | None) -> dict[str, Any]:
    """The JSON merge patch of `kubectl argo rollouts restart`, guarded by the Rollout's resourceVersion so that
    it fails with 409 if the Rollout changed since the decision."""
    patch: dict[str, Any] = {"spec": {"restartAt": format_time(now.replace(microsecond=0))}}
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


def decide(verdict: RolloutVerdict, policy: Policy, *, now: datetime, last_restart: datetime | None,
           restarts_last_hour: int, dry_run: bool) -> Decision:
    """Restart only a Rollout that the rule finds stuck, inside the allow-list, past its cooldown, under the
    hourly cap, with more than one replica unless the policy allows single-replica downtime."""
    key = f"{verdict.namespace}/{verdict.name}"

    def skip(reason: str, outcome: str) -> Decision:
        return Decision(key, "skipped", reason, outcome)

    if not policy.namespace_allowed(verdict.namespace):
        return skip(f"namespace {verdict.namespace} is not in allow.namespaces", "namespace not allowed")
    if verdict.restart_pending:
        return skip(f"a restart is already pending (spec.restartAt {format_time(verdict.restart_at)} not yet "
                    "done by the controller)", "allowed")
    if verdict.state is not RolloutState.STUCK:
        never = " (never restarted for this)" if verdict.state is RolloutState.DEGRADED else ""
        return skip(f"{verdict.state.value}: {verdict.summary}{never}", "allowed")
    if verdict.desired <= 1 and not policy.allow_single_replica:
        return skip("1 replica: a restart means downtime, and allowSingleReplica is false",
                    "single replica not allowed")
    last = max((t for t in (verdict.restart_at, last_restart) if t is not None), default=None)
    if last is not None and now - last < timedelta(seconds=policy.cooldown):
        until = format_time(last + timedelta(seconds=policy.cooldown))
        return skip(f"cooldown: last restart at {format_time(last)}, next allowed after {until}",
                    f"cooldown until {until}")
    cap = policy.max_restarts_per_hour
    if restarts_last_hour >= cap:
        return skip(f"hourly cap reached: {restarts_last_hour} restarts in the last hour (maxRestartsPerHour "
                    f"{cap})", "hourly cap reached")
    patch = restart_patch(now, verdict.resource_version)
    if dry_run:
        return Decision(key, "dry-run", f"would restart: {verdict.summary}", "allowed (dry run)", patch)
    return Decision(key, "restart", verdict.summary, "allowed", patch)
