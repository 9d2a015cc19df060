"""`argo-doctor scan`: the findings of bundles, dumps, files or the cluster."""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from argo_doctor.cli.common import (
    Progress,
    live_args,
    live_options,
    lua_dir_option,
    scope_of,
    scope_options,
    snapshot,
)
from argo_doctor.cli.group import ENDING, EXIT_FINDINGS, EXIT_INTERNAL, SEVERITIES, errors_to_exit, fail, main
from argo_doctor.engine import (
    ScanResult,
    needs_for,
    parse_options,
    run_scan,
    select_analyzers,
)
from argo_doctor.errors import ConfigError
from argo_doctor.model import Severity
from argo_doctor.report import REPORTERS, ReportOptions
from argo_doctor.report.groups import unknown_expand
from argo_doctor.snapshot import gc_paused
from argo_doctor.sources import bundle


def _check_expand(expand: tuple[str, ...]) -> None:
    """A usage error for an `--expand` value that is neither a rule id, a group id nor `all`."""
    rules = sorted(analyzer.id for analyzer in select_analyzers())
    bad = unknown_expand(expand, rules)
    if bad:
        raise ConfigError(f"--expand {bad[0]!r} is neither a rule id, a group id (RULE:group:HEX, as the reports "
                          f"show) nor 'all'; rule ids: {', '.join(rules)}")


TERMINAL = ("table", "wide")
TERMINAL_MIN = "low"
"""The default `--min-severity` of the terminal outputs: INFO findings are context, shown when asked for."""


def _shown(result: ScanResult, least: str | None) -> tuple[ScanResult, tuple[tuple[str, int], ...]]:
    """The result with only the findings at least `least` severe, and how many of each severity it leaves out
    (most severe first); the exit status still counts every finding."""
    if least is None:
        return result, ()
    floor = Severity.parse(least)
    hidden = Counter(f.severity for f in result.findings if f.severity < floor)
    if not hidden:
        return result, ()
    kept = [f for f in result.findings if f.severity >= floor]
    return replace(result, findings=kept), tuple((s.label, hidden[s]) for s in sorted(hidden, reverse=True))


@main.command(short_help="Find what is wrong and why: one line per finding.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(sorted(REPORTERS)), default="table", show_default=True,
              help="table: one line per finding; wide: with its first object and first evidence, untruncated.")
@click.option("-v", "--details", is_flag=True, help="With -o table: each finding in full (why, objects, evidence, "
                                                     "fix).")
@click.option("--min-severity", type=click.Choice(SEVERITIES), metavar="LEVEL",
              help="Show only findings at least this severe (default for table and wide: low; other formats show "
                   "every finding unless it is given). One of: " + ", ".join(SEVERITIES) + ".")
@click.option(
    "--fail-on", type=click.Choice([*SEVERITIES, "never"]), default="high", show_default=True,
    help="Exit 1 when a finding is at least this severe.",
)
@click.option("--rule", "rules", multiple=True, help="Run only this rule (repeatable).")
@click.option("--skip-rule", "skip_rules", multiple=True, help="Do not run this rule (repeatable).")
@click.option("--option", "option_pairs", multiple=True, metavar="RULE.KEY=VALUE",
              help="A rule option, e.g. node-clock-skew.threshold=5 (`argo-doctor rules` lists them).")
@click.option("--expand", "expand", multiple=True, metavar="RULE|GROUP",
              help="List every finding of this rule's groups, or of this group id, instead of the group "
                   "(repeatable; `all` for every group).")
@lua_dir_option
@scope_options
@live_options
def scan(
    paths: tuple[Path, ...], output: str, details: bool, min_severity: str | None, fail_on: str,
    rules: tuple[str, ...], skip_rules: tuple[str, ...], option_pairs: tuple[str, ...], expand: tuple[str, ...],
    lua_dirs: tuple[Path, ...], **live_kwargs: Any,
) -> None:
    """Scan bundles, tarballs, cluster-info dumps or object files, or the cluster with --live, and report findings.
    A folder that holds several bundles (a folder of collections) is scanned bundle by bundle, each reported on
    its own.

    Exit status: 0 when no finding reaches --fail-on, 1 when one does, 2 for a usage error or
    unreadable input.

    \b
    Example:
      argo-doctor scan --live                  # or: argo-doctor scan bundle.tgz
    """
    # no cyclic GC (in `timeline` and `map` too): what the command makes lives until it ends, and it makes few
    # cycles (737 objects on the bench bundle), while each collection after a load or a pass would walk everything
    # that the pass made
    ENDING.at_once = True  # in `timeline` and `map` too (see `run`)
    crashed: list[str] = []
    failed = False
    with errors_to_exit() as guard, tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir, \
            gc_paused(freeze=True):
        if details and output != "table":
            raise ConfigError(f"--details shows each finding in full in the table output; -o {output} has no "
                              "such choice")
        analyzers = select_analyzers(rules, skip_rules)
        options = parse_options(option_pairs, analyzers)
        _check_expand(expand)
        live = live_args(live_kwargs)
        each = bundle.bundles_in(paths[0]) if output in TERMINAL and len(paths) == 1 and not live.live else []
        runs = [(b,) for b in each] if len(each) > 1 else [paths]
        for n, inputs in enumerate(runs):
            if len(runs) > 1:
                click.echo(("\n" if n else "") + f"── {inputs[0]} ({n + 1} of {len(runs)}) ──")
            with Progress(live.quiet or live.live) as progress:
                progress.reading(inputs)
                if n:  # a rule keeps what it gathered from one input: each bundle gets its own
                    analyzers = select_analyzers(rules, skip_rules)
                snap = guard.watch(snapshot(inputs, Path(workdir), live, needs_for(analyzers)))
                progress.phase(f"scanning {len(snap):,} objects, {len(snap.log_files):,} log files, "
                               f"{len(snap.audit_files):,} audit files")
                result = run_scan(snap, analyzers, lua_dirs, options)
            narrowed = scope_of(snap, live_kwargs)
            if not narrowed.everything:
                snap.source += f" (only {narrowed.describe()})"
                result = replace(result, findings=[f for f in result.findings if narrowed.finding(f)])
            shown, hidden = _shown(result, min_severity or (TERMINAL_MIN if output in TERMINAL else None))
            REPORTERS[output](shown, sys.stdout, ReportOptions(fail_on, frozenset(expand), details, hidden=hidden))
            sys.stdout.flush()
            crashed += result.crashed
            failed = failed or (fail_on != "never" and any(f.severity >= Severity.parse(fail_on)
                                                           for f in result.findings))
    if crashed:
        fail(f"internal error in rule(s) {', '.join(dict.fromkeys(crashed))}; their findings may be missing (see "
             "errors)", EXIT_INTERNAL)
    if failed:
        sys.exit(EXIT_FINDINGS)
