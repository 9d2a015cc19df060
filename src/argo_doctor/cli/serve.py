"""`argo-doctor serve`: the Notifications webhook receiver that restarts stuck Rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from argo_doctor.cli.common import instance, kube_options, secret_file
from argo_doctor.cli.group import errors_to_exit, main
from argo_doctor.errors import ConfigError
from argo_doctor.remediate.policy import load_policy

if TYPE_CHECKING:  # imported where used: `scan` of files needs no HTTP client, database driver or web server
    from argo_doctor.remediate.kube import KubeClient


def _reachable(client: KubeClient) -> None:
    """The readiness probe's API check: GET /version answers."""
    client.get("/version")


@main.command(short_help="Restart stuck Rollouts when Argo CD calls.")
@click.option("--listen", default="0.0.0.0:8080", show_default=True, help="HOST:PORT to listen on.")
@click.option("--policy", "policy_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The policy file: dryRun, allow.namespaces, allow.applications, cooldown, maxRestartsPerHour, "
                   "allowSingleReplica.")
@click.option("--audit-db", required=True, envvar="ARGO_DOCTOR_AUDIT_DB",
              help="sqlite:///ABS/PATH (or a path), or postgresql://... for replicas sharing one store (env "
                   "ARGO_DOCTOR_AUDIT_DB keeps a password off the command line).")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the bearer token callers send as `Authorization: Bearer <token>`.")
@click.option("--hmac-secret-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the key of `X-Argo-Doctor-Signature: sha256=<hex HMAC-SHA256 of the body>`.")
@click.option("--insecure-no-auth", is_flag=True, help="Accept unauthenticated notifications (tests only).")
@kube_options
def serve(listen: str, policy_file: Path, audit_db: str, token_file: Path | None, hmac_secret_file: Path | None,
          insecure_no_auth: bool, kubeconfig: Path | None, context: str | None) -> None:
    """Receive Argo CD Notifications webhooks (POST /v1/notifications/argocd) and restart the Rollouts of the
    notified Application that are stuck Degraded, within the policy, with an audit trail. `notifications-config`
    prints the matching Argo CD configuration.

    Exit status: 0 after SIGTERM (requests in flight are finished), 2 for bad options or an unusable store.

    \b
    Example:
      argo-doctor serve --policy policy.yaml --audit-db audit.db --token-file tok
    """
    from argo_doctor.listen import parse_listen
    from argo_doctor.remediate.kube import KubeClient
    from argo_doctor.remediate.restarter import Restarter
    from argo_doctor.remediate.service import Auth, create_app
    from argo_doctor.remediate.service import run as run_service
    from argo_doctor.remediate.store import open_store

    with errors_to_exit():
        auth = Auth(secret_file(token_file, "--token-file", "token"),
                    secret_file(hmac_secret_file, "--hmac-secret-file", "HMAC secret"))
        if auth.open and not insecure_no_auth:
            raise ConfigError("refusing to serve without authentication: give --token-file or --hmac-secret-file "
                              "(or --insecure-no-auth for a test)")
        rules_policy = load_policy(policy_file)
        parse_listen(listen, "--listen", "0.0.0.0")
        store = open_store(audit_db)
        client = KubeClient.connect(kubeconfig, context)
        try:
            restarter = Restarter(client, rules_policy, store, source="serve", instance=instance())
            app = create_app(restarter, store, auth, api_ready=lambda: _reachable(client))
            run_service(app, listen, insecure=auth.open)
        finally:
            client.close()
            store.close()
