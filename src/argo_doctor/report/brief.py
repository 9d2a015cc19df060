"""The short terminal output of `scan`: one line per finding (or per group of findings), most severe first, then
one summary line, as `kubectl get` prints a list. `--details` gives the panels of report/table.py; `-o wide`
adds the object and the first piece of evidence, untruncated."""

from __future__ import annotations

from typing import IO

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from argo_doctor.engine import ScanResult
from argo_doctor.model import Finding, Severity
from argo_doctor.report.groups import Group, blocks
from argo_doctor.report.options import ReportOptions
from argo_doctor.report.table import STYLES, hidden_note, make_console, print_problems, print_words, scanned
from argo_doctor.sources.redact import clean

OBJECT_FROM = 120
"""From this width on, the short output has an OBJECT column; below it the title (which names the object) alone."""
GAP = "  "


def _cut(text: str, room: int) -> str:
    """`text` in at most `room` cells, its end replaced by `…` when it is longer."""
    if cell_len(text) <= room:
        return text
    while text and cell_len(text) > room - 1:
        text = text[:-1]
    return text.rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _row(block: Finding | Group, wide: bool) -> tuple[Severity, str, str, str, str]:
    """Severity, rule, object, title and (wide) first evidence of a finding or a group left unexpanded."""
    if isinstance(block, Group):
        first = block.findings[0]
        title = f"{len(block.findings)} × {block.title} (--expand {block.rule} lists them)"
        return first.severity, block.rule, f"{len(block.findings)} objects", _one_line(title), ""
    objects = [str(ref) for ref in block.objects]
    shown = objects[0] + (f" (+{len(objects) - 1})" if len(objects) > 1 else "") if objects else "-"
    evidence = ""
    if wide and block.evidence:
        item = block.evidence[0]
        evidence = _one_line(f"{item.location}  {item.excerpt}")
    return block.severity, block.rule, shown, _one_line(block.title), evidence


def _rows(result: ScanResult, options: ReportOptions) -> list[tuple[Severity, str, str, str, str]]:
    rows = []
    for block in blocks(result.findings):
        if isinstance(block, Group) and block.expanded(options.expand):
            rows += [_row(finding, options.wide) for finding in block.findings]
        else:
            rows.append(_row(block, options.wide))
    return rows


def summary(result: ScanResult, options: ReportOptions) -> str:
    """`12 finding(s): 4 high, …; 4 info hidden (…)`: the counts by severity, what the threshold hid."""
    counts = ", ".join(f"{sum(1 for f in result.findings if f.severity == s)} {s.label}"
                       for s in sorted(Severity, reverse=True) if any(f.severity == s for f in result.findings))
    return f"{len(result.findings)} finding(s)" + (f": {counts}" if counts else "") + hidden_note(options)


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the header line, one line per finding or group, the summary and the input problems."""
    options = options or ReportOptions()
    console = make_console(out)
    snap = result.snapshot
    source = clean(snap.source, snap.scrubber, human=True)
    result = clean(result, snap.scrubber, human=True)
    print_words(console, Text.assemble(("argo-doctor", "bold"), scanned(source, snap)))
    rows = _rows(result, options)
    if rows:
        with_object = options.wide or console.width >= OBJECT_FROM
        _table(console, rows, with_object, options.wide)
    print_words(console, Text(summary(result, options)))
    if result.findings and not options.wide:
        print_words(console, Text("Each finding in full: --details; with its objects and first evidence: -o wide",
                                  "dim"))
    print_problems(console, result.problems)


def _table(console: Console, rows: list[tuple[Severity, str, str, str, str]], with_object: bool, wide: bool) -> None:
    """The rows under their headings, fitted to the console's width (`wide`: every cell whole)."""
    heads = ("SEVERITY", "RULE", "OBJECT", "TITLE", "EVIDENCE")
    keep = [0, 1, *([2] if with_object else []), 3, *([4] if wide else [])]
    cells = [[head for i, head in enumerate(heads) if i in keep]]
    cells += [[(row[0].label.upper() if i == 0 else str(row[i])) for i in keep] for row in rows]
    widths = [max(cell_len(line[c]) for line in cells) for c in range(len(keep))]
    if not wide:  # the object at most a third of what is left after severity and rule; the title takes the rest
        room = console.width - sum(widths[:2]) - len(GAP) * (len(keep) - 1)
        if with_object:
            widths[2] = min(widths[2], max(12, room // 3))
            room -= widths[2]
        widths[-1] = max(10, room)
    for n, line in enumerate(cells):
        text = Text()
        for c, cell in enumerate(line):
            last = c == len(line) - 1
            shown = cell if wide else _cut(cell, widths[c])
            style = "bold" if n == 0 else STYLES[rows[n - 1][0]] if c == 0 else ""
            text.append(shown if last else shown + " " * (widths[c] - cell_len(shown)), style)
            if not last:
                text.append(GAP)
        console.print(text, soft_wrap=True)
