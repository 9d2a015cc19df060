"""`argo-doctor map`: the installation, its integrations and permissions."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import live_args, live_options, scope_of, scope_options, snapshot, table_width
from argo_doctor.cli.group import ENDING, errors_to_exit, main, problem_lines
from argo_doctor.engine import (
    installation_map,
    map_needs,
)
from argo_doctor.report import map as map_report
from argo_doctor.report import sarif as sarif_report
from argo_doctor.snapshot import gc_paused


@main.command("map", short_help="Components, integrations and permissions.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice([*map_report.OUTPUTS, "wide", "sarif"]), default="table",
              show_default=True, help="table, json (docs/map-output.md), a graph: mermaid, dot, or the findings as "
                                      "SARIF 2.1.0 (docs/sarif.md).")
@scope_options
@live_options
def map_command(paths: tuple[Path, ...], output: str, **live_kwargs: Any) -> None:
    """Map the installation: every Argo component with its version, replicas, nodes and ServiceAccount, how it
    integrates (which API, with what auth, for what), the permissions its ServiceAccount really has (aggregated
    ClusterRoles resolved) and the findings of rbac-overbroad, rbac-missing and component-known-bug.

    Exit status: 0, or 2 for a usage error or unreadable input.

    \b
    Example:
      argo-doctor map bundle.tgz -o mermaid
    """
    ENDING.at_once = True
    with errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir, \
            gc_paused(freeze=True):  # as `scan`
        snap = guard.watch(snapshot(paths, Path(workdir), live_args(live_kwargs), map_needs()))
        found = installation_map(snap)
        narrowed = scope_of(snap, live_kwargs)
        if not narrowed.everything:
            found = replace(found, result=replace(found.result, findings=[
                f for f in found.result.findings if narrowed.finding(f)]))
        if output == "sarif":
            click.echo(sarif_report.scan_sarif(found.result))
        else:
            click.echo(map_report.render("table" if output == "wide" else output, found.components, found.permissions,
                                         found.result.findings, snap.scrubber, table_width(), output == "wide"))
    problem_lines(found.result.problems, snap.scrubber)
