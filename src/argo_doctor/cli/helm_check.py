"""`argo-doctor helm-check`: template calls whose output changes on every render."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from argo_doctor import helm
from argo_doctor.cli.common import table_width
from argo_doctor.cli.group import EXIT_FINDINGS, EXIT_USAGE, errors_to_exit, main
from argo_doctor.report import helm as helm_report
from argo_doctor.report import sarif as sarif_report
from argo_doctor.report.json import encode


@main.command("helm-check", short_help="Chart calls that change on every render.")
@click.argument("chart", type=click.Path(path_type=Path))
@click.option("-f", "--values", "values_files", multiple=True, type=click.Path(path_type=Path),
              help="A values file, as helm template -f (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE[,KEY=VALUE]",
              help="Set values as helm template --set does (repeatable; after the -f files).")
@click.option("--set-string", "set_strings", multiple=True, metavar="KEY=VALUE[,KEY=VALUE]",
              help="Set string values as helm template --set-string does (repeatable; applied last).")
@click.option("--render-twice", is_flag=True,
              help="Also render twice with the helm binary on PATH and diff (exit 2 when that cannot be done).")
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json", "sarif"]), default="table",
              show_default=True, help="table (fitted to the terminal), wide (every line whole), json, or SARIF 2.1.0 "
                                      "for code scanning (docs/sarif.md).")
def helm_check(chart: Path, values_files: tuple[Path, ...], sets: tuple[str, ...], set_strings: tuple[str, ...],
               render_twice: bool, output: str) -> None:
    """Find template calls whose output changes on every render (genCA, randAlphaNum, now, lookup…) with the
    values in use; a call under a condition the values cannot decide is reported as "may be reached".

    Exit status: 0 when the chart renders the same every time, 1 when it does not, 2 for bad input (not a chart,
    an unreadable Chart.yaml, a values file or a --set helm would refuse). With --render-twice, 2 too when the two
    renders cannot be made (no helm on PATH, helm template fails: the reason is the last line), unless the
    analysis already found a call that changes on every render (1).

    \b
    Example:
      argo-doctor helm-check ./chart -f values-prod.yaml
    """
    with errors_to_exit():
        report = helm.scan_chart(chart, values_files, render_twice, sets, set_strings, strict=True)
    if output == "json":
        click.echo(encode(helm_report.report_json(report)))
    elif output == "sarif":
        click.echo(sarif_report.helm_sarif(report))
    else:
        click.echo(helm_report.report_text(report, table_width(), output == "wide"))
    if report.uses or report.render_diff:
        sys.exit(EXIT_FINDINGS)
    if render_twice and report.render_diff is None:
        sys.exit(EXIT_USAGE)
