"""`argo-doctor fix rollout-restart`: the service's decision, printed; only --apply writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from argo_doctor.cli import main
from tests.live.fakeapi import FakeApiServer, write_kubeconfig


def fix(kubeconfig: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["fix", "rollout-restart", "--kubeconfig", str(kubeconfig), *args])
    return result.exit_code, result.output


def test_dry_run_prints_each_decision_and_the_patch(api: FakeApiServer, kubeconfig: Path) -> None:
    code, out = fix(kubeconfig, "-n", "apps")
    assert code == 0, out
    assert out.startswith("dry run: nothing is written without --apply")
    assert "apps/checkout: dry-run: would restart: " in out
    assert "kubectl argo rollouts restart checkout -n apps" in out
    assert "apps/payments: skipped: degraded" in out and "never restarted" in out
    assert "apps/solo: skipped: 1 replica" in out
    assert [r for r in api.requests if r.method != "GET"] == []


def test_apply_restarts_the_stuck_rollout_once(api: FakeApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'audit.db'}"
    code, out = fix(kubeconfig, "-n", "apps", "--apply", "--audit-db", db, "-o", "json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["applied"] is True
    actions = {d["rollout"]: d["action"] for d in doc["decisions"]}
    assert actions == {"apps/catalog": "skipped", "apps/checkout": "restarted", "apps/payments": "skipped",
                       "apps/solo": "skipped"}
    assert [r.path for r in api.requests if r.method == "PATCH"] == [
        "/apis/argoproj.io/v1alpha1/namespaces/apps/rollouts/checkout"]
    code, again = fix(kubeconfig, "-n", "apps", "--apply", "--audit-db", db)
    assert "apps/checkout: skipped: a restart is already pending" in again
    audit = CliRunner().invoke(main, ["audit", "--audit-db", db, "-o", "json"])
    assert audit.exit_code == 0, audit.output


def test_by_application_and_by_name_with_a_policy(api: FakeApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"allow": {"namespaces": ["apps"], "applications": ["argocd/*"]},
                                      "allowSingleReplica": True}))
    code, out = fix(kubeconfig, "-n", "apps", "--app", "argocd/shop", "--policy", str(policy))
    assert code == 0 and "apps/solo: dry-run" in out
    code, out = fix(kubeconfig, "-n", "apps", "--name", "payments")
    assert [line.split(":")[0] for line in out.splitlines()[1:] if line.startswith("apps/")] == ["apps/payments"]


def test_a_namespace_outside_the_policy_is_not_read(api: FakeApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow:\n  namespaces: [prod]\n")
    code, out = fix(kubeconfig, "-n", "apps", "--policy", str(policy))
    assert code == 0 and "not in the policy's allow.namespaces" in out
    assert api.requests == []


@pytest.mark.parametrize(("text", "words"), [
    ("cooldown: soon\n", "cooldown 'soon' is not a Go duration"),
    ("allow: [apps]\n", "allow takes namespaces and applications"),
    ("dryrun: true\n", "unknown policy key 'dryrun'"),
    ("maxRestartsPerHour: -1\n", "maxRestartsPerHour must be a whole number"),
    ("a: [\n", "policy.yaml:"),
])
def test_bad_policies_are_one_line(kubeconfig: Path, tmp_path: Path, text: str, words: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    code, out = fix(kubeconfig, "-n", "apps", "--policy", str(policy))
    assert code == 2 and words in out and len(out.strip().splitlines()) == 1


def test_the_hourly_cap_holds_within_one_run_without_a_store(api: FakeApiServer, kubeconfig: Path,
                                                           tmp_path: Path) -> None:
    from tests.remediate import cluster

    for obj in cluster.stuck("basket"):
        api.add_object(obj)
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow: {namespaces: [apps]}\nmaxRestartsPerHour: 1\n")
    code, out = fix(kubeconfig, "-n", "apps", "--policy", str(policy), "--apply")
    assert code == 0
    assert "apps/basket: restarted" in out and "apps/checkout: skipped: hourly cap reached" in out
    assert len([r for r in api.requests if r.method == "PATCH"]) == 1


def test_an_application_outside_the_policy_is_refused(api: FakeApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow: {namespaces: [apps], applications: [argocd/other]}\n")
    code, out = fix(kubeconfig, "-n", "apps", "--app", "shop", "--policy", str(policy), "--apply")
    assert code == 0 and "application argocd/shop is not in the policy's allow.applications" in out
    assert api.requests == []


def test_a_failure_on_one_rollout_does_not_hide_the_others(api: FakeApiServer, kubeconfig: Path) -> None:
    from tests.remediate import cluster

    for obj in cluster.stuck("basket"):
        api.add_object(obj)
    api.fault(r"rollouts/basket$", "status", status=503, method="PATCH", times=-1)
    code, out = fix(kubeconfig, "-n", "apps", "--apply")
    assert code == 1
    assert "apps/basket: failed: " in out and "503" in out
    assert "apps/checkout: restarted" in out


def test_the_namespace_is_the_kubeconfig_contexts_as_kubectl_takes_it(api: FakeApiServer, tmp_path: Path) -> None:
    in_apps = write_kubeconfig(tmp_path / "apps", {"fake": api}, "fake", namespace="apps")
    code, out = fix(in_apps)
    assert code == 0 and "apps/checkout: dry-run: would restart" in out
    code, out = fix(write_kubeconfig(tmp_path / "default", {"fake": api}, "fake"))
    assert code == 0 and "apps/" not in out  # the context names none: `default`, which holds no Rollout


def test_all_namespaces_reads_every_rollout_the_policy_allows(api: FakeApiServer, kubeconfig: Path,
                                                               tmp_path: Path) -> None:
    code, out = fix(kubeconfig, "-A")
    assert code == 0 and "apps/checkout: dry-run: would restart" in out and "apps/payments: skipped" in out
    assert any(r.path == "/apis/argoproj.io/v1alpha1/rollouts" for r in api.requests)
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow:\n  namespaces: [prod]\n")
    code, out = fix(kubeconfig, "-A", "--policy", str(policy))
    assert code == 0 and "apps/" not in out
    code, out = fix(kubeconfig, "-A", "-n", "apps")
    assert code == 2 and "-A reads every namespace" in out


def test_a_rollout_that_does_not_exist_is_an_error(api: FakeApiServer, kubeconfig: Path) -> None:
    code, out = fix(kubeconfig, "-n", "apps", "--name", "nope")
    assert code == 1 and "Rollout apps/nope not found" in out


@pytest.mark.parametrize("columns", [80, 200])
def test_the_audit_table_fits_the_terminal_and_wide_keeps_every_reason(api: FakeApiServer, kubeconfig: Path,
                                                                       tmp_path: Path, columns: int) -> None:
    db = f"sqlite:///{tmp_path / 'audit.db'}"
    code, _ = fix(kubeconfig, "-n", "apps", "--apply", "--audit-db", db)
    assert code == 0
    env = {"COLUMNS": str(columns)}
    fitted = CliRunner(env=env).invoke(main, ["audit", "--audit-db", db]).stdout.splitlines()
    assert len(fitted) > 4 and all(len(line) <= columns for line in fitted), fitted
    wide = CliRunner(env=env).invoke(main, ["audit", "--audit-db", db, "-o", "wide"]).stdout
    reasons = [d["reason"] for d in json.loads(CliRunner().invoke(
        main, ["audit", "--audit-db", db, "-o", "json"]).stdout)]
    assert reasons and all(" ".join(reason.split()) in wide for reason in reasons)
