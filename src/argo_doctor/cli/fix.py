"""`argo-doctor fix`: what is safe to fix, decided as `scan` explains."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from argo_doctor.cli.common import instance, kube_options
from argo_doctor.cli.group import EXIT_FINDINGS, errors_to_exit, fail, main
from argo_doctor.errors import ConfigError
from argo_doctor.remediate.policy import Policy, load_policy
from argo_doctor.report.json import encode


@main.group("fix", short_help="Fix what is safe to fix (dry run unless --apply).")
def fix_group() -> None:
    """Fix what is safe to fix, deciding with the rules that `scan` explains with (dry run unless --apply)."""


@fix_group.command("rollout-restart", short_help="Restart the Rollouts stuck Degraded with healthy pods.")
@click.option("-n", "--namespace", help="The namespace of the Rollouts (default: the kubeconfig context's).")
@click.option("-A", "--all-namespaces", is_flag=True, help="The Rollouts of every namespace the policy allows.")
@click.option("--app", help="Only the Rollouts of this Argo CD Application: NAME or APP-NAMESPACE/NAME "
                            "(default namespace argocd).")
@click.option("--name", help="Only this Rollout.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A policy file as `serve` takes (allow-lists, cooldown, cap, single replicas); its dryRun is "
                   "ignored here: only --apply writes. Default: this namespace, 15m cooldown, no single replica.")
@click.option("--apply", is_flag=True, help="Send the patches (default: only print them).")
@click.option("--audit-db", help="Record the decisions in this audit store, and take its cooldowns into account "
                                 "(sqlite:///ABS/PATH, a path, or postgresql://...).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@kube_options
def fix_rollout_restart(namespace: str | None, all_namespaces: bool, app: str | None, name: str | None,
                        policy_file: Path | None, apply: bool, audit_db: str | None, output: str,
                        kubeconfig: Path | None, context: str | None) -> None:
    """Restart the Rollouts that rollout-stuck-degraded finds stuck: Degraded for ProgressDeadlineExceeded while
    every pod of the current ReplicaSet is ready. Others are never restarted; each decision says why. The patch
    is `kubectl argo rollouts restart`'s, guarded by the Rollout's resourceVersion.

    Exit status: 0 when every decision was carried out (or only printed), 1 when a patch failed or the Rollout
    --name names does not exist, 2 for bad options or an unreachable cluster.

    \b
    Example:
      argo-doctor fix rollout-restart -n payments      # then with --apply
    """
    from argo_doctor.remediate.kube import KubeClient
    from argo_doctor.remediate.restarter import NOT_FOUND, Restarter
    from argo_doctor.remediate.store import open_store
    from argo_doctor.report import remediate as remediate_report

    with errors_to_exit():
        if all_namespaces and (namespace or name):
            raise ConfigError("-A reads every namespace: give it without -n and --name")
        target = None
        if app:
            app_ns, _, app_name = app.rpartition("/")
            target = (app_ns or "argocd", app_name)
        store = open_store(audit_db) if audit_db else None
        client = KubeClient.connect(kubeconfig, context)
        try:
            where = None if all_namespaces else namespace or client.namespace
            rules_policy = load_policy(policy_file) if policy_file else Policy(
                namespaces=(where or "*",), applications=("*",), source="default")
            restarter = Restarter(client, rules_policy, store, source="fix", instance=instance(), dry_run=not apply)
            result = restarter.rollouts(where, app=target, name=name)
        finally:
            client.close()
            if store is not None:
                store.close()
    if output == "json":
        click.echo(encode(remediate_report.decisions_json(result, apply)))
    else:
        click.echo(remediate_report.decisions_text(result, apply))
    if name and any(o.reason == NOT_FOUND for o in result.outcomes):
        fail(f"Rollout {where}/{name} not found", EXIT_FINDINGS)
    if any(o.action == "failed" for o in result.outcomes):
        sys.exit(EXIT_FINDINGS)
