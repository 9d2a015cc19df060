"""`argo-doctor collect`: the cluster into a redacted bundle."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import cluster_options, collect_live, live_args
from argo_doctor.cli.group import errors_to_exit, main, problem_lines
from argo_doctor.engine import (
    needs_for,
    select_analyzers,
)
from argo_doctor.errors import ConfigError
from argo_doctor.model import Problem
from argo_doctor.sources import bundle, rewrite

NOT_WRITTEN = (".zip", ".7z", ".rar", ".bz2", ".tbz2", ".xz", ".txz", ".zst", ".gz", ".json", ".yaml", ".yml", ".txt")
"""Output names that promise a file collect does not write (a folder of that name would surprise)."""


@main.command("collect", short_help="Read the cluster into a redacted bundle to share.")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path),
              help="A new folder, or a FILE.tar.gz (or .tgz, .tar) to write.")
@click.option("--rule", "rules", multiple=True,
              help="Collect only what this rule reads (repeatable; default: every rule).")
@click.option("--no-redact", is_flag=True,
              help="Keep Secret values, tokens and passwords as they are. The bundle then holds credentials: do not "
                   "share it.")
@cluster_options
def collect_command(out: Path, rules: tuple[str, ...], no_redact: bool, **live_kwargs: Any) -> None:
    """Read the cluster (read-only) into a v1 bundle that `scan` reads as it reads the cluster, redacted.

    Exit status: 0 when the bundle is written (reads the API refused are listed in its bundle.yaml), 2 for bad
    options or an unreachable cluster.

    \b
    Example:
      argo-doctor collect -o bundle.tgz
    """
    problems: list[Problem] = []
    counts: dict[str, int] = {}
    with errors_to_exit():
        tarball = out.name.endswith(bundle.TARBALL_SUFFIXES)
        if not tarball and out.name.lower().endswith(NOT_WRITTEN):
            raise ConfigError(f"{out}: collect writes a folder or a {', '.join(bundle.TARBALL_SUFFIXES)} file, not "
                              f"{out.suffix}; e.g. -o bundle.tgz")
        if out.exists() and (tarball or not out.is_dir() or any(out.iterdir())):
            raise ConfigError(f"{out} exists; give a new folder or file name")
        parent = out.absolute().parent
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise ConfigError(f"cannot write into {parent}: not a folder this user may write to")
        if no_redact:
            click.echo("argo-doctor: WARNING: --no-redact: the bundle will hold Secret values, tokens and passwords "
                       "in clear text, readable only by this user. Do not share it; delete it when done.", err=True)
        live = live_args(live_kwargs)
        needs = needs_for(select_analyzers(rules))
        # the cluster is read as it is into a private folder beside the output (mode 0700, same file system); the
        # redaction's first pass then learns every Secret value before it writes anything
        with tempfile.TemporaryDirectory(prefix=".argo-doctor-", dir=parent) as workdir:
            raw = Path(workdir) / "bundle"
            umask = os.umask(0o077) if no_redact else None  # credentials in clear: files only this user reads
            try:
                collect_live(live, raw, needs)
            finally:
                if umask is not None:
                    os.umask(umask)
            if not no_redact:
                counts = dict(rewrite.redact_bundle(raw, out, problems))
            elif tarball:
                rewrite.write_tarball(raw, out)
                out.chmod(0o600)
            else:
                shutil.move(raw, out)
    problem_lines(problems)
    for kind, count in sorted(counts.items()):
        click.echo(f"argo-doctor: redacted {count} {kind}", err=True)
    click.echo(str(out))
    click.echo(f"argo-doctor: next: argo-doctor scan {shlex.quote(str(out))}   (or -o html > report.html)", err=True)
