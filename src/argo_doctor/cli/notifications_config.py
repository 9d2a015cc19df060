"""`argo-doctor notifications-config`: the Argo CD Notifications configuration for `serve`."""

from __future__ import annotations

import click

from argo_doctor.cli.group import errors_to_exit, main
from argo_doctor.remediate.notifications import URL_HELP, notifications_config


@main.command("notifications-config", short_help="The Argo CD Notifications configuration for serve.")
@click.option("--url", required=True, help=URL_HELP)
@click.option("--argocd-namespace", default="argocd", show_default=True,
              help="Where Argo CD and its notifications controller run.")
def notifications_config_command(url: str, argocd_namespace: str) -> None:
    """Print the Argo CD Notifications configuration that calls `argo-doctor serve` when an Application turns
    Degraded: the argocd-notifications-cm entries (webhook service, template, trigger), the token key of
    argocd-notifications-secret (a placeholder) and the subscription annotation for Applications.

    Exit status: 0, or 2 for a bad URL.

    \b
    Example:
      argo-doctor notifications-config --url http://argo-doctor.ops.svc:8080
    """
    with errors_to_exit():
        click.echo(notifications_config(url, namespace=argocd_namespace), nl=False)

