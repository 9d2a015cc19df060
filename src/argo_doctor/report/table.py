"""The default terminal output: findings grouped by severity, rendered with rich."""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from argo_doctor.engine import ScanResult
from argo_doctor.model import Finding, Problem, Severity
from argo_doctor.report.json import problem_kind
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


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXCERPT else text[: MAX_EXCERPT - 1] + "…"


def _finding_panel(finding: Finding) -> Panel:
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold", no_wrap=True)
    body.add_column()
    body.add_row("why", escape(finding.summary))
    if finding.objects:
        body.add_row("objects", escape(", ".join(str(r) for r in finding.objects)))
    evidence = Table(show_header=False, box=None, padding=(0, 1), expand=False)
    evidence.add_column(style="dim", no_wrap=True)
    evidence.add_column(style="magenta")
    evidence.add_column()
    for item in finding.evidence:
        evidence.add_row(format_time(item.time) or "", escape(item.location), escape(_short(item.excerpt)))
    if finding.evidence:
        body.add_row("evidence", evidence)
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
    style = STYLES[finding.severity]
    title = Text.assemble((f" {finding.severity.label.upper()} ", style), " ", (finding.title, "bold"))
    return Panel(body, title=title, title_align="left", subtitle=finding.rule, subtitle_align="right")


def render(result: ScanResult, out: IO[str]) -> None:
    """Write the findings, most severe first, then a summary line and input errors; every text redacted
    and without control characters."""
    console = Console(file=out, width=140 if not out.isatty() else None, highlight=False, soft_wrap=False)
    snap = result.snapshot
    source = clean(snap.source, snap.scrubber, human=True)
    result = clean(result, snap.scrubber, human=True)
    console.print(
        f"[bold]argo-doctor[/bold] scanned {escape(source)}: {len(snap)} objects, "
        f"{len(snap.log_files)} log files, {len(snap.audit_files)} audit files"
    )
    for severity in sorted(Severity, reverse=True):
        for finding in (f for f in result.findings if f.severity == severity):
            console.print(_finding_panel(finding))
    counts = ", ".join(
        f"[{STYLES[s]}]{sum(1 for f in result.findings if f.severity == s)} {s.label}[/]"
        for s in sorted(Severity, reverse=True)
        if any(f.severity == s for f in result.findings)
    )
    console.print(f"{len(result.findings)} finding(s)" + (f": {counts}" if counts else ""))
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
