"""`argo-doctor upgrade-check`: the documented changes on the way to a target release that hit this installation."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import live_args, live_options, snapshot
from argo_doctor.cli.group import EXIT_FINDINGS, errors_to_exit, main
from argo_doctor.engine import needs_for, run_scan
from argo_doctor.errors import ConfigError
from argo_doctor.facts.upgrades import PRODUCTS, installed_releases, release_targets, version_text
from argo_doctor.model import Severity
from argo_doctor.report import REPORTERS, ReportOptions


@main.command("upgrade-check", short_help="Release changes that would hit this installation.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--to", "target", required=True, metavar="vX.Y.Z", help="The Argo CD release to upgrade to.")
@click.option("--from", "current", metavar="vX.Y.Z",
              help="The installed Argo CD release (default: read from the images of its components).")
@click.option("--to-image-updater", "image_updater", metavar="vX.Y.Z",
              help="The Argo CD Image Updater release to upgrade to (default: its documented changes after the "
                   "installed one, at medium at most; so for the next three).")
@click.option("--to-rollouts", "rollouts", metavar="vX.Y.Z", help="The Argo Rollouts release to upgrade to.")
@click.option("--to-workflows", "workflows", metavar="vX.Y.Z", help="The Argo Workflows release to upgrade to.")
@click.option("--to-events", "events", metavar="vX.Y.Z", help="The Argo Events release to upgrade to.")
@click.option("-o", "--output", type=click.Choice(sorted(REPORTERS)), default="table", show_default=True,
              help="As scan: table, wide, json, markdown, html, sarif or junit.")
@click.option("--details", "-v", is_flag=True, help="Each change in full: why, evidence, fix (table output).")
@live_options
def upgrade_check(paths: tuple[Path, ...], target: str, current: str | None, image_updater: str | None,
                  rollouts: str | None, workflows: str | None, events: str | None, output: str, details: bool,
                  **live_kwargs: Any) -> None:
    """List each breaking or behaviour change documented in Argo CD's upgrading guides between the installed release
    and --to that applies to this installation (and in the Image Updater's, Rollouts', Workflows' and Events' notes,
    up to --to-image-updater, --to-rollouts, --to-workflows, --to-events), with
    the evidence (the setting, the RBAC policy line, the metric an alert or dashboard reads, the objects) and the
    guide's section. Changes that do not apply are not listed; one the objects cannot show is listed at info. The
    table comes from knowledge/upgrades.yaml, one row per change, each with its source.

    Exit status: 0 when nothing breaks, 1 when a breaking change applies, 2 for bad input.

    \b
    Example:
      argo-doctor upgrade-check bundle/ --to v3.0.0
    """
    # imported here: its needs come from knowledge/upgrades.yaml, which no other command reads
    from argo_doctor.analyzers.upgrade_check import UpgradeCheck

    with errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        if details and output != "table":
            raise ConfigError(f"--details shows each change in full in the table output; -o {output} has no such "
                              "choice")
        targets = release_targets((("argo-cd", "--to", target),
                                   ("argocd-image-updater", "--to-image-updater", image_updater),
                                   ("argo-rollouts", "--to-rollouts", rollouts),
                                   ("argo-workflows", "--to-workflows", workflows),
                                   ("argo-events", "--to-events", events)))
        wanted = targets["argo-cd"]
        check = UpgradeCheck(targets, {})
        snap = guard.watch(snapshot(paths, Path(workdir), live_args(live_kwargs), needs_for([check])))
        check.installed = installed_releases(snap, wanted, current)
        installed = check.installed["argo-cd"][0]
        result = run_scan(snap, [check])
        if output in ("table", "wide"):  # the JSON contract's source.inputs stays the inputs
            snap.source += f" ({PRODUCTS['argo-cd']} {version_text(installed)} → {version_text(wanted)})"
        REPORTERS[output](result, sys.stdout, ReportOptions("high", frozenset(), details))
        sys.stdout.flush()
    if any(f.severity >= Severity.HIGH for f in result.findings):
        sys.exit(EXIT_FINDINGS)
