"""`argo-doctor timeline`: every timestamped fact in one order, with the findings' causal chains."""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import replace
from datetime import datetime, timedelta
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
from argo_doctor.model import Finding, TimelineEntry
from argo_doctor.report import html as html_report
from argo_doctor.report.json import chain_json, encode, evidence_json, problem_json, timeline_json
from argo_doctor.report.timeline import timeline_table
from argo_doctor.snapshot import gc_paused
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import full_timeline, select
from argo_doctor.timeutil import format_time, parse_go_duration, parse_time, shift

FINDING_ID = re.compile(r"[a-z0-9-]+:[0-9a-f]{12}")


def _before(around: str) -> float | None:
    """The seconds of `-2h`; None for anything else."""
    return parse_go_duration(around[1:]) if around.startswith("-") else None


def _centre(around: str, every: list[TimelineEntry], findings: list[Finding]) -> datetime:
    """The time `--around` names, relative to the input (`-2h`) or a finding (its id: the start of its causal
    chain, else its first timestamped evidence)."""
    seconds = _before(around)
    if seconds is not None:
        if not every:
            raise ConfigError(f"--around {around}: the input holds no timestamped entry to count back from")
        return shift(max(e.time for e in every), -timedelta(seconds=seconds))
    found = next((f for f in findings if f.id == around), None)
    if found is None:
        raise ConfigError(f"--around {around}: no such finding (the ids: {', '.join(f.id for f in findings[:5])}"
                          f"{', …' if len(findings) > 5 else ''})")
    chained = [found.evidence[i] for i in found.chain if 0 <= i < len(found.evidence)]
    times = [e.time for e in chained or found.evidence if e.time is not None]
    if not times:
        raise ConfigError(f"--around {around}: the finding has no timestamped evidence")
    return min(times)


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
        centre = parse_time(around) if around else None
        width = parse_go_duration(window)
        if around and centre is None and _before(around) is None and not FINDING_ID.fullmatch(around):
            raise ConfigError(f"--around {around!r} is neither a time (2026-11-22T15:03:00Z, 2026-11-22 15:03), a "
                              "duration before the input's last entry (-2h) nor a finding id (RULE:HEX, as "
                              "`scan -o json` shows)")
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
            centre = _centre(around, every, result.findings)
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
