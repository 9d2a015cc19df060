"""The default terminal output: findings most severe first, rendered with rich.

Many findings of one pattern show as one group (report/groups.py) unless `--expand` names their rule. The
output fits the width of the terminal, or `COLUMNS`, or 100 columns when written to a pipe or file; it has
no escape sequence when `NO_COLOR` is set, nor when it goes to a pipe or file unless `FORCE_COLOR` is set.
No word is cut: a URL, a file location or any other word longer than the room it gets goes on a line of its own,
outdented to the panel's edge when that makes it fit, and longer than the width only when it alone is longer
(a terminal wraps such a line for the eye, and it still copies and opens whole).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import IO

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.console import Group as RenderGroup
from rich.markup import escape
from rich.measure import Measurement
from rich.padding import Padding
from rich.panel import Panel
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, Finding, Problem, Severity
from argo_doctor.report.groups import WORST, Group, blocks
from argo_doctor.report.options import ReportOptions
from argo_doctor.snapshot import Snapshot
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
_SLOT = re.compile("\ue000(\\d+)\ue001")
"""Where `_Words` left a word too long for its room: private-use characters around the word's index in `Slots`."""
_FORGED = str.maketrans("\ue000\ue001", "\ufffd\ufffd")
"""The slot's characters, where the input has them, become U+FFFD so that no input text passes for a slot."""
_WORD = re.compile(r"\S+")
_BORDER = "│"

Slots = list[str]
"""The words `_Words` took out of the text, to be put back whole by `_print`."""


class _Words:
    """A text whose words are never cut: each word wider than the room the text gets is replaced by a slot on a
    line of its own, which `_print` fills with the whole word."""

    def __init__(self, text: Text, slots: Slots) -> None:
        self.text = text.copy()
        self.text.plain = text.plain.translate(_FORGED)
        self.slots = slots

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        room, text, plain = options.max_width, self.text, self.text.plain
        out = Text(style=text.style, overflow="fold", end=text.end)
        position = 0
        for word in _WORD.finditer(plain):
            if cell_len(word.group()) <= room:
                continue
            out.append_text(text[position:word.start()])
            out.rstrip()
            if out.plain and not out.plain.endswith("\n"):
                out.append("\n")
            out.append(f"\ue000{len(self.slots)}\ue001", text.get_style_at_offset(console, word.start()))
            self.slots.append(word.group())
            position = len(plain) - len(plain[word.end():].lstrip(" \t"))
            if position < len(plain) and plain[position] != "\n":
                out.append("\n")
        out.append_text(text[position:])
        yield out


def _fill(line: list[Segment], slots: Slots, width: int) -> list[list[Segment]]:
    """A rendered line with its slot (if any) filled: the word in place when it fits there, else on a line of its own
    at the panel's inner edge, or alone at the start of the line when only that fits (wider than `width` only
    when the word itself is); whatever else the line holds is kept."""
    plain = "".join(segment.text for segment in line)
    slot = _SLOT.search(plain)
    if slot is None:
        return [line]
    word = slots[int(slot[1])]
    size = cell_len(word)
    start, end, total = cell_len(plain[:slot.start()]), cell_len(plain[:slot.end()]), cell_len(plain)
    before, inside, after = Segment.divide(line, [start, end, total])
    style = inside[0].style if inside else None
    boxed = plain.startswith(_BORDER) and plain.endswith(_BORDER)
    edge, _ = Segment.divide(line, [2, total])
    _, border = Segment.divide(line, [total - 1, total])

    def boxed_line(lead: list[Segment], at: int) -> list[Segment]:
        return [*lead, Segment(word, style), Segment(" " * (total - at - size - 1)), *border]

    first = plain[:slot.start()].strip(f" {_BORDER}") == ""
    last = plain[slot.end():].strip(f" {_BORDER}") == ""
    if last and start + size + (2 if boxed else 0) <= width:
        return [boxed_line(before, start) if boxed else [*before, Segment(word, style)]]
    rest = [] if first and last else [[*before, Segment(" " * (end - start)), *after]]
    if boxed and size + 4 <= total:
        return [*rest, boxed_line(edge, 2)]
    return [*rest, [Segment(word, style)]]


def _print(console: Console, renderable: RenderableType, slots: Slots) -> None:
    """Print `renderable` with the words `_Words` took out put back whole (so a line may be wider than the
    console)."""
    segments: list[Segment] = []
    for line in console.render_lines(renderable, console.options, pad=False):
        for filled in _fill(line, slots, console.width):
            segments.extend([*filled, Segment.line()])
    console.print(Segments(segments), soft_wrap=True, end="")
    slots.clear()


def print_words(console: Console, text: Text) -> None:
    """Print `text` wrapped to the console's width, no word cut (a word longer than the width on a line of its own)."""
    slots: Slots = []
    _print(console, _Words(text, slots), slots)


MAX_LINES = 40
"""The most lines of one text a table shows (a health message can hold a whole log; rich splits a text into
lines in time that grows with the square of their number)."""


def _capped(text: str) -> str:
    """`text`, or its first MAX_LINES lines and how many more there are (`-o json` has them all)."""
    more = text.count("\n") + 1 - MAX_LINES
    if more <= 0:
        return text
    return "\n".join(text.split("\n", MAX_LINES)[:MAX_LINES]) + f"\n… {more} more lines (-o json has them all)"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXCERPT else text[: MAX_EXCERPT - 1] + "…"


def _evidence(items: list[Evidence], wide: bool, slots: Slots) -> Table:
    """A table of time, location and excerpt when there is room; else each item as `time location` over its
    excerpt, so that no column gets too narrow to read."""
    table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=False)
    if wide:
        table.add_column(style="dim", no_wrap=True)
        table.add_column(style="magenta")
        table.add_column()
        for item in items:
            table.add_row(format_time(item.time) or "", _Words(Text(item.location), slots),
                          _Words(Text(_short(item.excerpt)), slots))
        return table
    table.add_column()
    for item in items:
        when = format_time(item.time)
        head = Text.assemble(*(((when, "dim"), " ") if when else ()), (item.location, "magenta"))
        table.add_row(RenderGroup(_Words(head, slots), Padding(_Words(Text(_short(item.excerpt)), slots),
                                                                (0, 0, 0, 2))))
    return table


def _rows() -> Table:
    """A panel's body: a bold label and its text, one row each."""
    body = Table.grid(padding=(0, 1))
    body.add_column(style="bold", no_wrap=True)
    body.add_column()
    return body


def _panel(body: Table, severity: Severity, title: str, subtitle: str, width: int, slots: Slots) -> Panel:
    """A panel headed by the severity and the title; a title too long for the top border (which would cut it)
    becomes the body's first line instead."""
    style = STYLES[severity]
    title = title.translate(_FORGED)
    heading = Text.assemble((f" {severity.label.upper()} ", style), " ", (title, "bold"))
    if heading.cell_len > width - 6:
        rows = body
        body = Table.grid(padding=(0, 1))
        body.add_column()
        body.add_row(_Words(Text(title, style="bold"), slots))
        body.add_row(rows)
        heading = Text(f" {severity.label.upper()} ", style)
    return Panel(body, title=heading, title_align="left", subtitle=subtitle, subtitle_align="right")


def _finding_panel(finding: Finding, width: int, slots: Slots) -> Panel:
    body = _rows()

    def row(label: str, text: Text | RenderableType) -> None:
        body.add_row(label, _Words(text, slots) if isinstance(text, Text) else text)

    row("why", Text(_capped(finding.summary)))
    if finding.objects:
        row("objects", Text(", ".join(str(r) for r in finding.objects)))
    if finding.evidence:
        row("evidence", _evidence(finding.evidence, width >= WIDE, slots))
    if finding.chain:
        steps = []
        previous = None
        for index in finding.chain:
            item = finding.evidence[index]
            gap = ""
            if item.time is not None and previous is not None:
                gap = f"(+{(item.time - previous).total_seconds():g} s) "
            previous = item.time or previous
            steps.append(f"{gap}{_short(item.excerpt)[:90]}")
        row("chain", Text("\n→ ".join(steps)))
    fix = Text(_capped(finding.remediation.text))
    if finding.remediation.command:
        fix.append(f"\n$ {finding.remediation.command}", "green")
    row("fix", fix)
    if finding.remediation.docs:
        row("docs", Text(" ".join(finding.remediation.docs)))
    return _panel(body, finding.severity, finding.title, finding.rule, width, slots)


def _group_panel(group: Group, width: int, slots: Slots) -> Panel:
    """One block for a group: the count, the shared cause, the worst findings (and what makes them so) and how to
    list them all."""
    body = _rows()
    if group.cause:
        body.add_row("cause", _Words(Text(group.cause), slots))
    worst = Text(f"{WORST}:", "dim")
    for finding in group.worst:
        worst.append("\n")
        worst.append(f"{finding.severity.label} ", STYLES[finding.severity])
        worst.append(finding.title)
    body.add_row("worst", _Words(worst, slots))
    more = len(group.findings) - len(group.worst)
    body.add_row("all", _Words(Text.assemble(f"{more} more; " if more else "", (f"--expand {group.rule}", "green"),
                                             f" lists all {len(group.findings)}"), slots))
    return _panel(body, group.findings[0].severity, f"{len(group.findings)} × {group.title}",
                  f"{group.rule} · group", width, slots)


def hidden_note(options: ReportOptions) -> str:
    """`; 4 info not shown (--min-severity info)`: what `--min-severity` left out, for a summary line; "" for none."""
    if not options.hidden:
        return ""
    hidden = ", ".join(f"{n} {label}" for label, n in options.hidden)
    return f"; {hidden} not shown (--min-severity {options.hidden[-1][0]})"


def scanned(source: str, snap: Snapshot) -> str:
    """` scanned SOURCE: 146 objects, 7 log files, 1 audit file`: what the header line says after the name."""
    counts = ((len(snap), "object"), (len(snap.log_files), "log file"), (len(snap.audit_files), "audit file"))
    return f" scanned {source}: " + ", ".join(f"{n} {word}{'' if n == 1 else 's'}" for n, word in counts)


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
    slots: Slots = []
    snap = result.snapshot
    source = clean(snap.source, snap.scrubber, human=True)
    result = clean(result, snap.scrubber, human=True)
    _print(console, _Words(Text.assemble(("argo-doctor", "bold"), scanned(source, snap)), slots), slots)
    groups = 0
    for block in blocks(result.findings):
        if isinstance(block, Finding):
            _print(console, _finding_panel(block, console.width, slots), slots)
        elif block.expanded(options.expand):
            _print(console, _Words(Text(f"{len(block.findings)} × {block.title} ({block.rule}, {WORST})", "bold"),
                                   slots), slots)
            for finding in block.findings:
                _print(console, _finding_panel(finding, console.width, slots), slots)
        else:
            groups += 1
            _print(console, _group_panel(block, console.width, slots), slots)
    counts = ", ".join(
        f"[{STYLES[s]}]{sum(1 for f in result.findings if f.severity == s)} {s.label}[/]"
        for s in sorted(Severity, reverse=True)
        if any(f.severity == s for f in result.findings)
    )
    shown = f" ({groups} group{'s' if groups > 1 else ''} shown as one block each)" if groups > 1 else \
        " (1 group shown as one block)" if groups else ""
    console.print(f"{len(result.findings)} finding(s)" + (f": {counts}" if counts else "") + shown
                  + hidden_note(options))
    print_problems(console, result.problems)


def problem_groups(problems: list[Problem]) -> list[tuple[str, list[Problem]]]:
    """The input errors (what the scan went on without), then the notes on the input, each under its heading;
    only the groups that have any."""
    errors = [p for p in problems if p.kind == "error"]
    notes = [p for p in problems if p.kind == "note"]
    groups = [(f"{len(errors)} input error(s); the scan went on without them:", errors),
              (f"{len(notes)} note(s) on the input:", notes)]
    return [(heading, group) for heading, group in groups if group]


def print_problems(console: Console, problems: list[Problem]) -> None:
    """`problem_groups`, one line each; the texts already redacted and printable."""
    for heading, group in problem_groups(problems):
        style = "yellow" if group[0].kind == "error" else "default"
        console.print(f"[{style}]{escape(heading)}[/{style}]")
        slots: Slots = []
        for problem in group:
            line = Text.assemble("  ", (problem.location, "magenta"), f": {_capped(problem.message)}")
            _print(console, _Words(line, slots), slots)
