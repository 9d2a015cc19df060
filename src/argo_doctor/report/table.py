"""The default terminal output: findings most severe first, rendered with rich.

Many findings of one pattern show as one group (report/groups.py) unless `--expand` names their rule. The
output fits the width of the terminal, or `COLUMNS`, or 100 columns when written to a pipe or file; it has
no escape sequence when `NO_COLOR` is set, nor when it goes to a pipe or file unless `FORCE_COLOR` is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO

from rich.console import Console
from rich.console import Group as RenderGroup
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, Finding, Problem, Severity
from argo_doctor.report.groups import Group, blocks
from argo_doctor.report.json import problem_kind
from argo_doctor.report.options import ReportOptions
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time

STYLES = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}
MAX_EXCERPT = 220
PIPED_WIDTH = 100
"""The width of output to a pipe or file when `COLUMNS` does not say."""
MIN_WIDTH = 40
"""The narrowest output: below it no panel is readable, whatever `COLUMNS` says."""
WIDE = 120
"""From this width on, evidence is a table of time, location and excerpt; below it, each item takes two lines."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXCERPT else text[: MAX_EXCERPT - 1] + "…"


def _evidence(items: list[Evidence], wide: bool) -> Table:
    """A table of time, location and excerpt when there is room; else each item as `time location` over its
    excerpt, so that no column gets too narrow to read."""
    table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=False)
    if wide:
        table.add_column(style="dim", no_wrap=True)
        table.add_column(style="magenta", overflow="fold")
        table.add_column(overflow="fold")
        for item in items:
            table.add_row(format_time(item.time) or "", escape(item.location), escape(_short(item.excerpt)))
        return table
    table.add_column(overflow="fold")
    for item in items:
        when = format_time(item.time)
        head = Text.assemble(*(((when, "dim"), " ") if when else ()), (item.location, "magenta"), overflow="fold")
        table.add_row(RenderGroup(head, Padding(Text(_short(item.excerpt), overflow="fold"), (0, 0, 0, 2))))
    return table


def _panel(body: Table, severity: Severity, title: str, subtitle: str, width: int) -> Panel:
    """A panel headed by the severity and the title; a title too long for the top border (which would cut it)
    becomes the body's first line instead."""
    style = STYLES[severity]
    heading = Text.assemble((f" {severity.label.upper()} ", style), " ", (title, "bold"))
    if heading.cell_len > width - 6:
        rows = body
        body = Table.grid(padding=(0, 1))
        body.add_column(overflow="fold")
        body.add_row(Text(title, style="bold", overflow="fold"))
        body.add_row(rows)
        heading = Text(f" {severity.label.upper()} ", style)
    return Panel(body, title=heading, title_align="left", subtitle=subtitle, subtitle_align="right")


def _finding_panel(finding: Finding, width: int) -> Panel:
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold", no_wrap=True)
    body.add_column(overflow="fold")
    body.add_row("why", escape(finding.summary))
    if finding.objects:
        body.add_row("objects", escape(", ".join(str(r) for r in finding.objects)))
    if finding.evidence:
        body.add_row("evidence", _evidence(finding.evidence, width >= WIDE))
    if finding.chain:
        steps = []
        previous = None
        for index in finding.chain:
            item = finding.evidence[index]
            gap = ""
            if item.time is not None and previous is not None:
                gap = f"(+{(item.time - previous).total_seconds():g} s) "
            previous = item.time or previous
            steps.append(f"{gap}{escape(_short(item.excerpt)[:90])}")
        body.add_row("chain", "\n→ ".join(steps))
    fix = escape(finding.remediation.text)
    if finding.remediation.command:
        fix += f"\n[green]$ {escape(finding.remediation.command)}[/green]"
    body.add_row("fix", fix)
    if finding.remediation.docs:
        body.add_row("docs", escape(" ".join(finding.remediation.docs)))
    return _panel(body, finding.severity, finding.title, finding.rule, width)


def _group_panel(group: Group, width: int) -> Panel:
    """One block for a group: the count, the shared cause, the worst findings and how to list them all."""
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold", no_wrap=True)
    body.add_column(overflow="fold")
    body.add_row("cause", escape(group.cause))
    worst = Text()
    for index, finding in enumerate(group.worst):
        worst.append("\n" if index else "")
        worst.append(f"{finding.severity.label} ", STYLES[finding.severity])
        worst.append(finding.title)
    body.add_row("worst", worst)
    more = len(group.findings) - len(group.worst)
    body.add_row("all", escape(f"{more} more; " if more else "") + f"[green]--expand {escape(group.rule)}[/green] "
                 f"lists all {len(group.findings)}")
    return _panel(body, group.findings[0].severity, f"{len(group.findings)} × {group.title}",
                  f"{group.rule} · group", width)


def width(environ: Mapping[str, str], tty: bool) -> int | None:
    """The output's width: `COLUMNS` when it is a number (at least MIN_WIDTH), else the terminal's (None: rich
    asks it), else PIPED_WIDTH."""
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    return None if tty else PIPED_WIDTH


def make_console(out: IO[str], environ: Mapping[str, str] | None = None) -> Console:
    """A rich Console for `out`: fitted to the width; colours and styles only on a terminal (or with
    `FORCE_COLOR`) and never with `NO_COLOR`, so that a file or a pipe gets plain text."""
    environ = os.environ if environ is None else environ
    tty = out.isatty()
    terminal = tty or environ.get("FORCE_COLOR", "") != ""
    plain = environ.get("NO_COLOR", "") != "" or not terminal
    return Console(file=out, width=width(environ, tty), force_terminal=terminal, no_color=plain,
                   color_system=None if plain else "auto", highlight=False, soft_wrap=False, emoji=False,
                   markup=True, force_jupyter=False, force_interactive=False, legacy_windows=False)


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the findings, most severe first (a group of many findings of one pattern as one block, unless
    `--expand` names its rule), then a summary line and input errors; every text redacted and without control
    characters."""
    options = options or ReportOptions()
    console = make_console(out)
    snap = result.snapshot
    source = clean(snap.source, snap.scrubber, human=True)
    result = clean(result, snap.scrubber, human=True)
    console.print(
        f"[bold]argo-doctor[/bold] scanned {escape(source)}: {len(snap)} objects, "
        f"{len(snap.log_files)} log files, {len(snap.audit_files)} audit files"
    )
    groups = 0
    for block in blocks(result.findings):
        if isinstance(block, Finding):
            console.print(_finding_panel(block, console.width))
        elif block.expanded(options.expand):
            console.print(f"[bold]{len(block.findings)} × {escape(block.title)}[/bold] ({escape(block.rule)}, "
                           "worst first)")
            for finding in block.findings:
                console.print(_finding_panel(finding, console.width))
        else:
            groups += 1
            console.print(_group_panel(block, console.width))
    counts = ", ".join(
        f"[{STYLES[s]}]{sum(1 for f in result.findings if f.severity == s)} {s.label}[/]"
        for s in sorted(Severity, reverse=True)
        if any(f.severity == s for f in result.findings)
    )
    shown = f" ({groups} group(s) shown as one block each)" if groups else ""
    console.print(f"{len(result.findings)} finding(s)" + (f": {counts}" if counts else "") + shown)
    print_problems(console, result.problems)


def problem_groups(problems: list[Problem]) -> list[tuple[str, list[Problem]]]:
    """The input errors (what the scan went on without), then the notes on the input, each under its heading;
    only the groups that have any."""
    errors = [p for p in problems if problem_kind(p) == "error"]
    notes = [p for p in problems if problem_kind(p) == "note"]
    groups = [(f"{len(errors)} input error(s); the scan went on without them:", errors),
              (f"{len(notes)} note(s) on the input:", notes)]
    return [(heading, group) for heading, group in groups if group]


def print_problems(console: Console, problems: list[Problem]) -> None:
    """`problem_groups`, one line each; the texts already redacted and printable."""
    for heading, group in problem_groups(problems):
        style = "yellow" if problem_kind(group[0]) == "error" else "default"
        console.print(f"[{style}]{escape(heading)}[/{style}]")
        for problem in group:
            console.print(f"  [magenta]{escape(problem.location)}[/magenta]: {escape(problem.message)}")
