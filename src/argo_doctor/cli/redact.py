"""`argo-doctor redact`: a redacted copy of a bundle."""

from __future__ import annotations

from pathlib import Path

import click

from argo_doctor.cli.group import errors_to_exit, main, problem_lines
from argo_doctor.model import Problem
from argo_doctor.sources import bundle, rewrite


@main.command("redact", short_help="A redacted copy of a bundle.")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path),
              help="The redacted copy: a new folder, or FILE.tar.gz (default: SOURCE-redacted, or "
                   "NAME-redacted.tar.gz for a tarball).")
@click.option("--force", is_flag=True, help="Write into an output folder that is not empty.")
def redact_command(source: Path, out: Path | None, force: bool) -> None:
    """Write a redacted copy of a bundle (folder or tarball): Secret values become fingerprints, and tokens, keys
    and passwords are masked in objects, logs and audit events, as `collect` does. Prints what it masked, by kind,
    never a value; redacting the copy again changes nothing.

    Exit status: 0 when the copy is written, 2 for bad options or an unreadable bundle.

    \b
    Example:
      argo-doctor redact bundle/ -o bundle-redacted.tgz
    """
    problems: list[Problem] = []
    with errors_to_exit():
        if out is None:
            name = source.name
            for suffix in bundle.TARBALL_SUFFIXES:
                if name.endswith(suffix):
                    out = source.with_name(name.removesuffix(suffix) + "-redacted.tar.gz")
                    break
            else:
                out = source.with_name(name + "-redacted")
        counts = rewrite.redact_bundle(source, out, problems, force=force)
    problem_lines(problems)
    for kind, count in sorted(counts.items()):
        click.echo(f"argo-doctor: redacted {count} {kind}", err=True)
    if not counts:
        click.echo("argo-doctor: nothing to redact", err=True)
    click.echo(str(out))
