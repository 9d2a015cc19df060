"""The restart decision and the policy it applies: only a STUCK verdict is ever restarted, and every default of the
policy is the safe one; a policy file is read whole or refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from argo_doctor.errors import ConfigError
from argo_doctor.facts.rollouts import RolloutState, RolloutVerdict
from argo_doctor.remediate.decide import decide, restart_patch
from argo_doctor.remediate.policy import (
    DEFAULT_COOLDOWN,
    DEFAULT_MAX_RESTARTS_PER_HOUR,
    Policy,
    load_policy,
    parse_policy,
)

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
OPEN = Policy(dry_run=False, namespaces=("*",), applications=("*",), cooldown=0, max_restarts_per_hour=1000,
              allow_single_replica=True)
"""The most permissive policy: what is left to stop a restart is the verdict."""


def verdict(state: RolloutState, *, desired: int = 3, restart_at: datetime | None = None,
            pending: bool = False) -> RolloutVerdict:
    return RolloutVerdict(namespace="apps", name="checkout", state=state, summary=f"{state.value}: test",
                          reasons=("why",), message="ProgressDeadlineExceeded: x", since=NOW - timedelta(hours=1),
                          desired=desired, pod_hash="6d4b9c7f58", pods=(), restart_pending=pending,
                          restart_at=restart_at, resource_version="42")


@pytest.mark.parametrize("state", [RolloutState.UNDETERMINED, RolloutState.DEGRADED, RolloutState.NOT_DEGRADED])
def test_only_a_stuck_verdict_is_ever_restarted(state: RolloutState) -> None:
    decision = decide(verdict(state), OPEN, now=NOW, last_restart=None, restarts_last_hour=0, dry_run=False)
    assert (decision.action, decision.patch) == ("skipped", None)
    assert decision.reason.startswith(f"{state.value}: {state.value}: test")
    stuck = decide(verdict(RolloutState.STUCK), OPEN, now=NOW, last_restart=None, restarts_last_hour=0,
                   dry_run=False)
    assert stuck.action == "restart" and stuck.patch == {"spec": {"restartAt": "2026-11-23T09:00:00Z"},
                                                          "metadata": {"resourceVersion": "42"}}


def test_a_pending_restart_is_never_sent_again() -> None:
    decision = decide(verdict(RolloutState.STUCK, pending=True, restart_at=NOW - timedelta(minutes=1)), OPEN,
                      now=NOW, last_restart=None, restarts_last_hour=0, dry_run=False)
    assert decision.action == "skipped" and "already pending" in decision.reason


def test_the_defaults_are_the_safe_ones() -> None:
    policy = parse_policy({"allow": {"applications": ["argocd/*"]}}, "policy.yaml")
    assert (policy.dry_run, policy.allow_single_replica, policy.cooldown, policy.max_restarts_per_hour) == (
        True, False, DEFAULT_COOLDOWN, DEFAULT_MAX_RESTARTS_PER_HOUR)
    assert (DEFAULT_COOLDOWN, DEFAULT_MAX_RESTARTS_PER_HOUR) == (900.0, 10)
    assert policy.application_allowed("argocd", "shop") and not policy.namespace_allowed("apps")  # no namespace
    stuck = verdict(RolloutState.STUCK)
    decision = decide(stuck, policy, now=NOW, last_restart=None, restarts_last_hour=0, dry_run=policy.dry_run)
    assert decision.action == "skipped" and "not in allow.namespaces" in decision.reason
    opened = parse_policy({"allow": {"namespaces": ["apps"]}}, "policy.yaml")
    assert decide(stuck, opened, now=NOW, last_restart=None, restarts_last_hour=0,
                  dry_run=opened.dry_run).action == "dry-run"
    single = decide(verdict(RolloutState.STUCK, desired=1), opened, now=NOW, last_restart=None, restarts_last_hour=0,
                    dry_run=False)
    assert single.action == "skipped" and "allowSingleReplica is false" in single.reason
    capped = decide(stuck, opened, now=NOW, last_restart=None, restarts_last_hour=10, dry_run=False)
    assert capped.action == "skipped" and "maxRestartsPerHour 10" in capped.reason
    assert decide(stuck, opened, now=NOW, last_restart=None, restarts_last_hour=9, dry_run=False).action == "restart"


@pytest.mark.parametrize(("minutes", "action"), [(5, "skipped"), (14, "skipped"), (16, "restart")])
def test_a_restart_made_by_a_person_starts_the_cooldown(minutes: int, action: str) -> None:
    """`kubectl argo rollouts restart` minutes ago, done by the controller: spec.restartAt holds its time."""
    policy = parse_policy({"dryRun": False, "allow": {"namespaces": ["apps"]}}, "policy.yaml")
    by_hand = verdict(RolloutState.STUCK, restart_at=NOW - timedelta(minutes=minutes))
    decision = decide(by_hand, policy, now=NOW, last_restart=None, restarts_last_hour=0, dry_run=False)
    assert decision.action == action
    if action == "skipped":
        assert decision.reason.startswith(f"cooldown: last restart at {(NOW - timedelta(minutes=minutes)):%Y-%m-%d}")


@pytest.mark.parametrize(("text", "words"), [
    ("dryRun: false\ncooldown: -5m\n", "cooldown '-5m' is not a Go duration"),
    ("dryRun: false\ncooldown: 300\n", "cooldown 300 is not a Go duration"),
    ("dryRun: false\ncooldown: true\n", "cooldown True is not a Go duration"),
    ("maxRestartsPerHour: true\n", "maxRestartsPerHour must be a whole number"),
    ("maxRestartsPerHour: -1\n", "maxRestartsPerHour must be a whole number"),
    ("maxRestartsPerHour: 2.5\n", "maxRestartsPerHour must be a whole number"),
    ('allowSingleReplica: "false"\n', "allowSingleReplica must be true or false, not 'false'"),
    ('dryRun: "no"\n', "dryRun must be true or false, not 'no'"),
    ("dryRun: true\nallow:\n  namespaces: [apps]\ndryRun: false\n", "found duplicate key 'dryRun'"),
    ("allow:\n  namespaces: [apps]\n  namespaces: ['*']\n", "found duplicate key 'namespaces'"),
    ("dryRun: flase\n", "dryRun must be true or false, not 'flase'"),
    ("- dryRun: false\n", "a policy is a YAML mapping, not list"),
    ("allow:\n  namespace: ['*']\n", "allow takes namespaces and applications"),  # a typo never allows nothing
    ("allow: [apps]\n", "allow takes namespaces and applications"),
    ("allow:\n  namespaces: apps\n", "allow.namespaces must be a list of globs"),  # not the globs a, p, p, s
    ("allow:\n  namespaces: ['']\n", "allow.namespaces must be a list of globs"),
    ("allow:\n  applications: [argocd/*, 7]\n", "allow.applications must be a list of globs"),
])
def test_a_policy_file_is_read_whole_or_refused(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"policy\.yaml") as caught:
        load_policy(path)
    assert words in str(caught.value)


@pytest.mark.parametrize("text", ["", "# nothing allowed yet\n"])
def test_an_empty_policy_file_is_the_built_in_policy(tmp_path: Path, text: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    policy = load_policy(path)
    assert policy == Policy(source=str(path)) and policy.dry_run and not policy.namespaces and not policy.applications


def test_the_built_in_policy_is_a_dry_run_that_allows_nothing() -> None:
    policy = Policy()
    assert (policy.dry_run, policy.namespaces, policy.applications, policy.allow_single_replica) == (
        True, (), (), False)


def test_zero_is_a_cooldown_and_a_cap() -> None:
    """`maxRestartsPerHour: 0` stops every restart (a kill switch); `cooldown: 0s` allows one right after another."""
    policy = parse_policy({"dryRun": False, "allow": {"namespaces": ["apps"]}, "maxRestartsPerHour": 0,
                           "cooldown": "0s"}, "policy.yaml")
    assert (policy.max_restarts_per_hour, policy.cooldown) == (0, 0)
    stuck = verdict(RolloutState.STUCK, restart_at=NOW)
    assert decide(stuck, policy, now=NOW, last_restart=NOW, restarts_last_hour=0, dry_run=False).reason == (
        "hourly cap reached: 0 restarts in the last hour (maxRestartsPerHour 0)")


def test_the_cooldown_ends_at_its_last_instant_and_two_replicas_are_not_one() -> None:
    policy = parse_policy({"dryRun": False, "allow": {"namespaces": ["apps"]}, "cooldown": "15m"}, "policy.yaml")
    two = verdict(RolloutState.STUCK, desired=2)
    assert decide(two, policy, now=NOW, last_restart=NOW - timedelta(minutes=15), restarts_last_hour=1,
                  dry_run=False).action == "restart"
    assert decide(two, policy, now=NOW, last_restart=NOW - timedelta(minutes=15) + timedelta(microseconds=1),
                  restarts_last_hour=1, dry_run=False).action == "skipped"


def test_a_degraded_rollout_is_said_never_to_be_restarted_for_its_reason() -> None:
    decision = decide(verdict(RolloutState.DEGRADED), OPEN, now=NOW, last_restart=None, restarts_last_hour=0,
                      dry_run=False)
    assert decision.reason == "degraded: degraded: test (never restarted for this)"
    undetermined = decide(verdict(RolloutState.UNDETERMINED), OPEN, now=NOW, last_restart=None, restarts_last_hour=0,
                          dry_run=False)
    assert undetermined.reason == "undetermined: undetermined: test"


def test_a_patch_without_a_resource_version_carries_no_empty_guard() -> None:
    """A merge patch with `resourceVersion: null` would not guard anything and reads as if it did."""
    assert restart_patch(NOW, None) == restart_patch(NOW, "") == {"spec": {"restartAt": "2026-11-23T09:00:00Z"}}
    assert restart_patch(NOW.replace(microsecond=123), "42") == {"spec": {"restartAt": "2026-11-23T09:00:00Z"},
                                                                 "metadata": {"resourceVersion": "42"}}


def test_a_go_yaml_boolean_is_a_boolean(tmp_path: Path) -> None:
    """`dryRun: n` is false to Kubernetes' YAML reader, as to this one: not refused, not taken as a string."""
    path = tmp_path / "policy.yaml"
    path.write_text("dryRun: n\nallow:\n  namespaces: [apps]\n")
    assert load_policy(path).dry_run is False
