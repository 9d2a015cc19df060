"""Markdown output, for tickets and chat; many findings of one pattern as one group (report/groups.py)."""

from __future__ import annotations

from typing import IO

from argo_doctor.engine import ScanResult
from argo_doctor.model import Finding
from argo_doctor.report.groups import WORST, Group, blocks
from argo_doctor.report.options import ReportOptions
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _finding(out: IO[str], finding: Finding, level: str) -> None:
    """One finding under a heading of `level` (`##`, or `###` inside a group)."""
    out.write(f"{level} [{finding.severity.label.upper()}] {finding.title}\n\n")
    out.write(f"*Rule* `{finding.rule}` · *id* `{finding.id}`\n\n{finding.summary}\n\n")
    if finding.objects:
        out.write("**Objects:** " + ", ".join(f"`{r}`" for r in finding.objects) + "\n\n")
    if finding.evidence:
        out.write("**Evidence**\n\n| time | kind | location | excerpt |\n|---|---|---|---|\n")
        for item in finding.evidence:
            out.write(
                f"| {format_time(item.time) or ''} | {item.kind} | `{_cell(item.location)}` "
                f"| {_cell(item.excerpt)} |\n"
            )
        out.write("\n")
    if finding.chain:
        out.write("**Causal chain**\n\n")
        for step, index in enumerate(finding.chain, 1):
            item = finding.evidence[index]
            out.write(f"{step}. {format_time(item.time) or ''} `{_cell(item.location)}`: {_cell(item.excerpt)}\n")
        out.write("\n")
    out.write(f"**Remediation:** {finding.remediation.text}\n\n")
    if finding.remediation.command:
        out.write(f"```sh\n{finding.remediation.command}\n```\n\n")
    if finding.remediation.patch:
        out.write(f"```yaml\n{finding.remediation.patch}\n```\n\n")
    for doc in finding.remediation.docs:
        out.write(f"- <{doc}>\n")
    out.write("\n")


def _group(out: IO[str], group: Group, expand: frozenset[str]) -> None:
    """A group: the count, the shared cause, the worst findings (or every one, when `--expand` names its rule or
    its id)."""
    severity = group.findings[0].severity.label.upper()
    out.write(f"## [{severity}] {len(group.findings)} × {group.title}\n\n")
    out.write(f"*Rule* `{group.rule}` · *group* `{group.id}`\n\n")
    if group.cause:
        out.write(f"{group.cause}\n\n")
    if group.expanded(expand):
        out.write(f"All {len(group.findings)}, {WORST}:\n\n")
        for finding in group.findings:
            _finding(out, finding, "###")
        return
    out.write(f"The {len(group.worst)} worst ({WORST}):\n\n")
    for finding in group.worst:
        out.write(f"- **{finding.severity.label}** {_cell(finding.title)} (`{finding.id}`)\n")
    more = len(group.findings) - len(group.worst)
    out.write(f"\n{f'{more} more; ' if more else ''}`--expand {group.rule}` lists all {len(group.findings)}.\n\n")


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the findings, the timeline and input errors as Markdown; every text redacted and without
    control characters."""
    options = options or ReportOptions()
    scrubber = result.snapshot.scrubber
    source = clean(result.snapshot.source, scrubber, human=True)
    result = clean(result, scrubber, human=True)
    out.write(f"# argo-doctor report\n\nSource: `{source}` — {len(result.findings)} finding(s)\n\n")
    for block in blocks(result.findings):
        if isinstance(block, Finding):
            _finding(out, block, "##")
        else:
            _group(out, block, options.expand)
    if result.timeline:
        out.write("## Timeline\n\n| time | component | location | excerpt |\n|---|---|---|---|\n")
        for entry in result.timeline:
            out.write(
                f"| {format_time(entry.time)} | {entry.component} | `{_cell(entry.location)}` "
                f"| {_cell(entry.excerpt)} |\n"
            )
        out.write("\n")
    for kind, heading in (("error", "Input errors"), ("note", "Notes on the input")):
        problems = [p for p in result.problems if p.kind == kind]
        if problems:
            out.write(f"## {heading}\n\n")
        for problem in problems:
            out.write(f"- `{_cell(problem.location)}`: {_cell(problem.message)}\n")
