"""`argo-doctor timeline`: every timestamped fact in one order, with the findings' causal chains."""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import live_args, live_options, scope_of, scope_options, snapshot, table_width
from argo_doctor.cli.group import ENDING, errors_to_exit, main
from argo_doctor.engine import (
    needs_for,
    run_scan,
    select_analyzers,
)
from argo_doctor.errors import ConfigError
from argo_doctor.report import html as html_report
from argo_doctor.report.json import chain_json, encode, evidence_json, problem_json, timeline_json
from argo_doctor.report.timeline import timeline_table
from argo_doctor.snapshot import gc_paused
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import around_time, full_timeline, select, window_centre
from argo_doctor.timeutil import format_time, parse_go_duration, shift


@main.command(short_help="Every timestamped fact in one order, causal chains.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--around", metavar="WHEN",
              help="Centre of the window: a time (2026-11-22T15:03:00Z, or 2026-11-22 15:03 in UTC), a duration "
                   "before the input's last entry (-2h), or a finding's id (its first evidence).")
@click.option("--window", default="10m", show_default=True, help="Width of the window around --around (Go duration).")
@click.option("--component", "components", multiple=True,
              help="Only this component (repo-server, application-controller, events, kube-apiserver, ...).")
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json", "html"]), default="table",
              show_default=True, help="table: fitted to the terminal; wide: every text whole.")
@scope_options
@live_options
def timeline(
    paths: tuple[Path, ...], around: str | None, window: str, components: tuple[str, ...], output: str,
    **live_kwargs: Any,
) -> None:
    """Print one ordered timeline of every timestamped fact of every component, with the causal
    chains the findings establish.

    \b
    Example:
      argo-doctor timeline bundle.tgz --around 2026-11-22T15:03:00Z --window 20m
    """
    ENDING.at_once = True
    with errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir, \
            gc_paused(freeze=True):  # as `scan`
        centre = around_time(around, "--around") if around else None
        width = parse_go_duration(window)
        if width is None:
            raise ConfigError(f"--window {window!r} is not a Go duration of at most 2562047h (e.g. 10m, 2h)")
        analyzers = select_analyzers()
        snap = guard.watch(snapshot(paths, Path(workdir), live_args(live_kwargs), needs_for(analyzers)))
        result = run_scan(snap, analyzers)
        narrowed = scope_of(snap, live_kwargs)
        if not narrowed.everything:
            result = replace(result, findings=[f for f in result.findings if narrowed.finding(f)])
        human = output != "json"
        every = full_timeline(snap, result.findings)
        if around and centre is None:
            centre = window_centre(around, every, result.findings, "--around")
        if not narrowed.everything:
            ids = {f.id for f in result.findings}
            every = [e for e in every if narrowed.entry(e, ids)]
        entries = clean(select(every, centre, width, components), snap.scrubber, human=human)
        chained = clean([f for f in result.findings if f.chain], snap.scrubber, human=human)
        # the timeline's own reads (logs around the findings) may add problems after the scan
        problems = clean(list(dict.fromkeys(snap.problems)), snap.scrubber, human=human)
        if output == "html":
            html_report.render_timeline(snap, entries, result.findings, problems, sys.stdout, centre, window)
            return
        if not human:
            doc = {
                "timeline": [timeline_json(e) for e in entries],
                "chains": [{"finding": f.id, "title": f.title, "steps": [
                    {**evidence_json(f.evidence[s["evidence"]]), "gapSeconds": s["gapSeconds"]} for s in chain_json(f)
                ]} for f in chained],
                "errors": [problem_json(p) for p in problems],
            }
            click.echo(encode(doc, snap.scrubber))
            return
        if centre is not None:
            half = timedelta(seconds=width / 2)
            click.echo(f"window: {format_time(shift(centre, -half))} to {format_time(shift(centre, half))} "
                       f"(--around {around}, --window {window}): {len(entries)} of {len(every)} entries")
        click.echo(timeline_table(entries, chained, problems, len(every), table_width(), output == "wide"))
