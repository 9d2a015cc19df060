"""`argo-doctor health`: the health Argo CD would show for every object."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import (
    DEPLOYED_NEEDS,
    live_args,
    live_options,
    lua_dir_option,
    scope_of,
    scope_options,
    snapshot,
    table_width,
)
from argo_doctor.cli.group import errors_to_exit, main, problem_lines
from argo_doctor.engine import (
    health_assessor,
)
from argo_doctor.health import HealthStatus, application_health
from argo_doctor.model import Problem
from argo_doctor.report.health import health_table, worst_first
from argo_doctor.report.json import encode, problem_json


@main.command(short_help="The health Argo CD would show for every object.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json"]), default="table", show_default=True,
              help="table: fitted to the terminal; wide: every message whole.")
@lua_dir_option
@click.option("--unhealthy", is_flag=True, help="Only what is not Healthy (objects without a health check left out), "
                                               "worst first.")
@scope_options
@live_options
def health(paths: tuple[Path, ...], output: str, lua_dirs: tuple[Path, ...], unhealthy: bool,
           **live_kwargs: Any) -> None:
    """Print the health Argo CD would show for every object in the files.

    Each file's objects are assessed as they are: an object read more than once (two collections of one cluster)
    is shown once per copy, and the table then starts with the LOCATION of each.
    Lua health customizations come from an argocd-cm ConfigMap among the inputs and from --lua-dir.

    \b
    Example:
      argo-doctor health --live --unhealthy
    """
    with errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        snap = guard.watch(snapshot(paths, Path(workdir), live_args(live_kwargs), DEPLOYED_NEEDS))
        assessor = health_assessor(snap, lua_dirs)
        # every copy of an object read more than once is assessed, with its location: no copy is left out here
        narrowed = scope_of(snap, live_kwargs)
        copies = [o for o in (*snap.all(), *(d.dropped for d in snap.duplicates)) if narrowed.obj(o)]
        rows = [(obj, application_health(obj.raw) or assessor.assess(obj.raw))
                for obj in sorted(copies, key=lambda o: (o.location.split(":")[0], o.kind, o.namespace, o.name))]
        if unhealthy:
            rows = worst_first([(o, h) for o, h in rows if h is not None and h.status is not HealthStatus.HEALTHY])
        notes = {d.note for d in snap.duplicates}
        problems = [*(p for p in snap.problems if p not in notes),
                    *(Problem(p.location, p.message, p.kind) for p in assessor.problems)]
        if output == "json":
            doc = {
                "objects": [
                    {
                        "apiVersion": o.api_version, "kind": o.kind, "namespace": o.namespace, "name": o.name,
                        "location": o.location,
                        "health": {"status": h.status.value, "message": h.message} if h else None,
                    }
                    for o, h in rows
                ],
                "errors": [problem_json(p) for p in problems],
            }
            sys.stdout.write(encode(doc, snap.scrubber) + "\n")
            return
        click.echo(health_table(rows, bool(snap.duplicates), snap.scrubber, table_width(), output == "wide"))
        problem_lines(problems, snap.scrubber)
