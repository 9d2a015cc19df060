"""`argo-doctor deprecations`: uses of deprecated and removed Kubernetes APIs."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from argo_doctor import deprecations
from argo_doctor.cli.common import DEPLOYED_NEEDS, live_args, live_bundle, live_options, table_width
from argo_doctor.cli.group import EXIT_FINDINGS, errors_to_exit, main, problem_lines
from argo_doctor.errors import ConfigError
from argo_doctor.model import Problem
from argo_doctor.report import deprecations as deprecations_report
from argo_doctor.report import sarif as sarif_report
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import load_yaml_file


@main.command("deprecations", short_help="Deprecated and removed Kubernetes APIs in use.")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--target-version", help="Kubernetes version to check against (e.g. 1.25); default: the cluster "
              "version in a bundle's bundle.yaml, else every known deprecation is listed.")
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json", "markdown", "sarif"]), default="table",
              show_default=True, help="table, json, markdown, or SARIF 2.1.0 for code scanning (docs/sarif.md).")
@live_options
def deprecations_command(paths: tuple[Path, ...], target_version: str | None, output: str, **live_kwargs: Any) -> None:
    """List uses of deprecated and removed APIs in manifests, chart templates, Kustomize trees and
    bundles (live objects: per managedFields manager and last-applied annotation). In chart templates,
    `.Capabilities` conditions (semverCompare on KubeVersion, APIVersions.Has) are decided at the target
    version; a use behind a condition that cannot be decided is listed as "may be used".

    Exit status: 0 when nothing found is certainly removed in the target version, 1 when something is,
    2 for bad options or when no input can be read.

    \b
    Example:
      argo-doctor deprecations charts/ manifests/ --target-version 1.32
    """
    from argo_doctor.helm.scan import chart_template_apis  # the reader of chart templates

    with errors_to_exit(), tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        target = deprecations.parse_version(target_version) if target_version else None
        if target_version and target is None:
            raise ConfigError(f"--target-version {target_version!r} is not a Kubernetes version like 1.25")
        problems: list[Problem] = []
        # live: the objects Applications deploy, with their managedFields, and the API server's metrics
        folder = live_bundle(paths, Path(workdir), live_args(live_kwargs), DEPLOYED_NEEDS, metrics=True)
        if folder is not None:
            paths = (folder,)
        elif not paths:
            raise ConfigError("nothing to read: give manifests, charts or bundles, or --live")
        inputs = list(bundle.readable_inputs(paths, Path(workdir), problems))  # tarballs extracted as `scan` does
        roots = [item.path for item in inputs]
        target = target or _cluster_version(roots)
        labels = {item.path: f"{item.given.name}!" for item in inputs if item.extracted}
        if output == "sarif" and folder is None:  # SARIF: paths from the current directory, as code scanning reads
            labels = {item.path: f"{item.given}!" if item.extracted else str(item.given) for item in inputs}
        uses, found = deprecations.scan_paths(roots, target, chart_template_apis, labels)
        problems += found
    if output == "sarif":
        click.echo(sarif_report.deprecations_sarif(uses, problems, target, files=folder is None))
    else:
        click.echo(deprecations_report.render(uses, problems, target, "table" if output == "wide" else output,
                                              table_width(), output == "wide"))
    problem_lines(problems)
    if deprecations.removed(uses):
        sys.exit(EXIT_FINDINGS)


def _cluster_version(roots: list[Path]) -> tuple[int, int] | None:
    """The cluster version of the first bundle among the folders (bundle.yaml `cluster.version`)."""
    for root in roots:
        # the scan's own loader for settings files (regular file inside the bundle, size, depth and alias guards);
        # its problems are the scan's to report, not this look-up's
        doc = load_yaml_file(root / "bundle.yaml", "bundle.yaml", [], root, unique_keys=True)
        cluster = doc.get("cluster") if isinstance(doc, dict) else None
        if isinstance(cluster, dict):
            return deprecations.parse_version(str(cluster.get("version") or ""))
    return None
