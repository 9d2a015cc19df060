"""Markdown output, for tickets and chat; many findings of one pattern as one group (report/groups.py).

Every text from the input is escaped as the HTML report escapes it, so that no name or message can break the page
or add to it: metacharacters are backslash-escaped (no emphasis, link, image, raw HTML or entity), line breaks inside
headings, table cells and list items become spaces, a line of a paragraph cannot open a block (a heading, a quote, a
list, a code fence), code spans and code blocks are fenced with more backticks than the text holds, and only an
http(s) address becomes a link.
"""

from __future__ import annotations

import re
from typing import IO

from argo_doctor.engine import ScanResult
from argo_doctor.model import Finding
from argo_doctor.report.groups import WORST, Group, blocks
from argo_doctor.report.options import ReportOptions
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time

_INLINE = re.compile(r"([\\`*_\[\]<>|~&#])")
"""Characters that make Markdown of text: emphasis, code, links and images, raw HTML and entities, table cells,
strikethrough, a heading's closing `#`s."""
_BLOCK = re.compile(r"^(?:([+=-])|(\d+)([.)]))")
"""What opens a block at the start of a line once `_INLINE` is escaped: a list item, a setext underline, an ordered
list item."""
_TICKS = re.compile(r"`+")
_LINK = re.compile(r"https?://[^\s<>\x00-\x1f\x7f]+")


def _inline(text: str) -> str:
    """Text on one line (a heading, a table cell, a list item), its line breaks as spaces."""
    return _INLINE.sub(r"\\\1", " ".join(text.splitlines()))


def _unblock(match: re.Match[str]) -> str:
    """The block opener a line starts with, escaped."""
    return "\\" + match.group(1) if match.group(1) else f"{match.group(2)}\\{match.group(3)}"


def _paragraph(text: str) -> str:
    """Text of one or more paragraphs: each line escaped, without the indentation that would make it code, and
    ended by a hard line break (a list in a summary stays one item a line)."""
    lines = [_BLOCK.sub(_unblock, _inline(line.strip())) for line in text.splitlines()]
    return "\n".join(line + "\\" if line and following else line
                     for line, following in zip(lines, [*lines[1:], ""], strict=True))


def _fence(text: str, least: int) -> str:
    """Backticks more than the longest run of them in `text`, and at least `least`."""
    return "`" * max(least, max((len(run) for run in _TICKS.findall(text)), default=0) + 1)


def _code(text: str, cell: bool = False) -> str:
    """Text as a code span on one line; in a table `cell`, its pipes escaped (a table reads them first)."""
    text = " ".join(text.splitlines())
    if cell:
        text = text.replace("|", "\\|")
    fence = _fence(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _block(text: str, language: str) -> str:
    fence = _fence(text, 3)
    return f"{fence}{language}\n{text}\n{fence}\n\n"


def _doc(url: str) -> str:
    """A link when `url` is an http(s) address, else the text."""
    return f"<{url}>" if _LINK.fullmatch(url) else _inline(url)


def _finding(out: IO[str], finding: Finding, level: str) -> None:
    """One finding under a heading of `level` (`##`, or `###` inside a group)."""
    out.write(f"{level} [{finding.severity.label.upper()}] {_inline(finding.title)}\n\n")
    out.write(f"*Rule* {_code(finding.rule)} · *id* {_code(finding.id)}\n\n{_paragraph(finding.summary)}\n\n")
    if finding.objects:
        out.write("**Objects:** " + ", ".join(_code(str(r)) for r in finding.objects) + "\n\n")
    if finding.evidence:
        out.write("**Evidence**\n\n| time | kind | location | excerpt |\n|---|---|---|---|\n")
        for item in finding.evidence:
            out.write(
                f"| {format_time(item.time) or ''} | {_inline(item.kind)} | {_code(item.location, cell=True)} "
                f"| {_inline(item.excerpt)} |\n"
            )
        out.write("\n")
    if finding.chain:
        out.write("**Causal chain**\n\n")
        for step, index in enumerate(finding.chain, 1):
            item = finding.evidence[index]
            out.write(f"{step}. {format_time(item.time) or ''} {_code(item.location)}: {_inline(item.excerpt)}\n")
        out.write("\n")
    out.write(f"**Remediation:** {_paragraph(finding.remediation.text)}\n\n")
    if finding.remediation.command:
        out.write(_block(finding.remediation.command, "sh"))
    if finding.remediation.patch:
        out.write(_block(finding.remediation.patch, "yaml"))
    for doc in finding.remediation.docs:
        out.write(f"- {_doc(doc)}\n")
    out.write("\n")


def _group(out: IO[str], group: Group, expand: frozenset[str]) -> None:
    """A group: the count, the shared cause, the worst findings (or every one, when `--expand` names its rule or
    its id)."""
    severity = group.findings[0].severity.label.upper()
    out.write(f"## [{severity}] {len(group.findings)} × {_inline(group.title)}\n\n")
    out.write(f"*Rule* {_code(group.rule)} · *group* {_code(group.id)}\n\n")
    if group.cause:
        out.write(f"{_paragraph(group.cause)}\n\n")
    if group.expanded(expand):
        out.write(f"All {len(group.findings)}, {WORST}:\n\n")
        for finding in group.findings:
            _finding(out, finding, "###")
        return
    out.write(f"The {len(group.worst)} worst ({WORST}):\n\n")
    for finding in group.worst:
        out.write(f"- **{finding.severity.label}** {_inline(finding.title)} ({_code(finding.id)})\n")
    more = len(group.findings) - len(group.worst)
    out.write(f"\n{f'{more} more; ' if more else ''}{_code(f'--expand {group.rule}')} lists all "
              f"{len(group.findings)}.\n\n")


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the findings, the timeline and input errors as Markdown; every text redacted, without control
    characters and escaped."""
    options = options or ReportOptions()
    scrubber = result.snapshot.scrubber
    source = clean(result.snapshot.source, scrubber, human=True)
    result = clean(result, scrubber, human=True)
    out.write(f"# argo-doctor report\n\nSource: {_code(source)} — {len(result.findings)} finding(s)\n\n")
    for block in blocks(result.findings):
        if isinstance(block, Finding):
            _finding(out, block, "##")
        else:
            _group(out, block, options.expand)
    if result.timeline:
        out.write("## Timeline\n\n| time | component | location | excerpt |\n|---|---|---|---|\n")
        for entry in result.timeline:
            out.write(
                f"| {format_time(entry.time)} | {_inline(entry.component)} | {_code(entry.location, cell=True)} "
                f"| {_inline(entry.excerpt)} |\n"
            )
        out.write("\n")
    for kind, heading in (("error", "Input errors"), ("note", "Notes on the input")):
        problems = [p for p in result.problems if p.kind == kind]
        if problems:
            out.write(f"## {heading}\n\n")
        for problem in problems:
            out.write(f"- {_code(problem.location)}: {_inline(problem.message)}\n")
