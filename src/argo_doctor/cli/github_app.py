"""`argo-doctor github-app`: GitHub App credentials as Argo CD uses them."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from argo_doctor.cli.common import option_file
from argo_doctor.cli.group import EXIT_FINDINGS, EXIT_USAGE, errors_to_exit, main
from argo_doctor.github import DEFAULT_API_URL
from argo_doctor.report.json import encode


@main.group("github-app", short_help="GitHub App credentials, as Argo CD uses them.")
def github_app_group() -> None:
    """GitHub App credentials, as Argo CD uses them."""


@github_app_group.command("check", short_help="Ask GitHub for a token as Argo CD would.")
@click.option("--app-id", required=True, help="The GitHub App's id (githubAppID).")
@click.option("--installation-id", required=True, help="The installation id (githubAppInstallationID).")
@click.option("--private-key", "private_key", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="PEM file of the app's private key (githubAppPrivateKey). Never printed.")
@click.option("--api-url", default=DEFAULT_API_URL, show_default=True,
              help="GitHub's API; for GitHub Enterprise Server, https://HOST/api/v3.")
@click.option("--clock-offset", type=float, default=0.0, show_default=True,
              help="Sign as a host whose clock is this many seconds ahead (negative: behind).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def github_app_check(
    app_id: str, installation_id: str, private_key: Path, api_url: str, clock_offset: float, output: str
) -> None:
    """Request an installation token with the JWT Argo CD would sign, and explain the answer.

    Exit status: 0 when GitHub issues a token, 1 when it refuses, 2 for bad options or an
    unreachable GitHub.

    \b
    Example:
      argo-doctor github-app check --app-id 123 --installation-id 456 --private-key key.pem
    """
    from argo_doctor.github import app as github_app
    from argo_doctor.report import github as github_report

    with errors_to_exit():
        pem = option_file(private_key, "--private-key", "private key")
        result = github_app.check(app_id, installation_id, pem, api_url, clock_offset)
    if output == "json":
        click.echo(encode(github_report.result_json(result)))
    else:
        click.echo(github_report.result_text(result))
    if result.error is not None:
        sys.exit(EXIT_USAGE)
    if result.status != 201:
        sys.exit(EXIT_FINDINGS)
