"""The `timeline` table: every timestamped fact in order, the time since the previous one in human units (`+4m36s`),
then the causal chains and the input's problems; fitted to the terminal's width unless `wide`.

A log line often starts with its own time again (`kubectl logs --timestamps`, then logrus' `time="…"`): a leading
timestamp equal to the entry's time, to the second, is left out of its text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone

from argo_doctor.model import Finding, Problem, TimelineEntry
from argo_doctor.report.columns import INDENT, cut, text_columns, wrap
from argo_doctor.report.json import chain_json
from argo_doctor.report.table import problem_groups
from argo_doctor.timeutil import format_time

HEADER = ("TIME", "GAP", "COMPONENT", "WHAT", "WHERE")
WHAT, WHERE = 3, 4
MAX_WHAT = 160
"""The most characters of an entry's text the full (`wide`) table shows; `-o json` has all."""
MAX_STEP = 140
"""The same for a step of a causal chain."""
ONE_LINE_WHAT = 60
"""The room an entry's text needs for the entry to take one line; with less, its text goes on a line of its own."""

_STAMP = (r"(?P<y>\d{4})[-/](?P<mo>\d\d)[-/](?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,]\d+)?"
          r"(?P<zone>Z|[+-]\d\d:?\d\d)?")
_LEADING = (
    re.compile(rf"{_STAMP}(?:\s+|$)"),  # RFC 3339 (kubectl --timestamps, zap), Go's log `2026/11/20 14:24:45`
    re.compile(rf"(?:time|ts)=(?P<q>\"?){_STAMP}(?P=q)(?:\s+|$)"),  # logfmt: logrus, go-kit
)
_KLOG = re.compile(r"(?P<level>[IWEF])(?P<mo>\d\d)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.\d+)?\s+\d+ ")
"""klog's header: severity, month and day, time, thread id; the year is not in it."""


def human_gap(seconds: float) -> str:
    """A signed duration in its two largest units: `+850ms`, `+4.2s`, `+21s`, `+4m36s`, `+2h3m`, `+3d4h`."""
    sign = "-" if seconds < 0 else "+"
    millis = int(abs(seconds) * 1000 + 0.5)
    if millis < 1000:
        return f"{sign}{millis}ms" if millis else "+0s"
    if millis < 10_000:
        return f"{sign}{millis / 1000:.1f}".removesuffix(".0") + "s"
    total = millis // 1000
    for big, small, size, unit in (("d", "h", 86400, 3600), ("h", "m", 3600, 60), ("m", "s", 60, 1)):
        if total >= size:
            rest = total % size // unit
            return f"{sign}{total // size}{big}" + (f"{rest}{small}" if rest else "")
    return f"{sign}{total}s"


def _zone(text: str | None) -> timezone:
    if not text or text == "Z":
        return UTC
    hours, minutes = int(text[1:3]), int(text[-2:])
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(-offset if text[0] == "-" else offset)


def _same_second(found: re.Match[str], when: datetime) -> bool:
    """Whether the stamp `found` names the second of `when` (a stamp without a zone is taken as UTC)."""
    try:
        stamp = datetime(int(found["y"]), int(found["mo"]), int(found["d"]), int(found["h"]), int(found["mi"]),
                         int(found["s"]), tzinfo=_zone(found["zone"]))
    except ValueError:  # 30 February
        return False
    return stamp.astimezone(UTC) == when.astimezone(UTC).replace(microsecond=0)


def without_time(text: str, when: datetime) -> str:
    """`text` without the timestamps it starts with that name the second of `when`: RFC 3339 or Go's log format,
    logfmt's `time=`/`ts=` field, klog's header (its severity letter is kept). `text` itself when nothing else
    would be left."""
    rest = text
    for _ in range(3):  # e.g. the kubectl prefix, then logrus' own time field
        klog = _KLOG.match(rest)
        if klog is not None:
            utc = when.astimezone(UTC)
            fields = (int(klog[k]) for k in ("mo", "d", "h", "mi", "s"))
            if tuple(fields) == (utc.month, utc.day, utc.hour, utc.minute, utc.second):
                rest = f"{klog['level']} {rest[klog.end():]}"
            break
        found = next((m for m in (p.match(rest) for p in _LEADING) if m is not None), None)
        if found is None or not _same_second(found, when):
            break
        rest = rest[found.end():]
    return rest if rest.strip() else text


def _what(entry: TimelineEntry) -> str:
    return without_time(" ".join(entry.excerpt.split()), entry.time)


def _entries(entries: Sequence[TimelineEntry], width: int | None) -> list[str]:
    """The entries as a table: one line each when the text gets at least ONE_LINE_WHAT columns (or all it needs),
    else each entry's text on a line of its own under its time, component and location."""
    rows: list[tuple[str, ...]] = [HEADER]
    previous = None
    for entry in entries:
        gap = "" if previous is None else human_gap((entry.time - previous).total_seconds())
        previous = entry.time
        what = _what(entry)
        rows.append((format_time(entry.time) or "", gap, entry.component,
                     what if width is not None or len(what) <= MAX_WHAT else what[:MAX_WHAT - 1] + "…",
                     entry.location))
    return text_columns(rows, width, WHAT, (WHERE,), (WHERE,), ONE_LINE_WHAT)


def timeline_table(entries: Sequence[TimelineEntry], chained: Sequence[Finding], problems: list[Problem],
                   every_count: int, width: int | None = None, wide: bool = False) -> str:
    """The timeline as text: the entries (or why there is none: `every_count` is how many timestamped facts the
    input holds before the window and the components were applied), each finding's causal chain, the input's
    errors and notes; every text already redacted and printable. Fitted to `width` unless `wide` (or no width),
    which prints every column whole: an entry's text up to MAX_WHAT characters, a chain step's up to MAX_STEP."""
    width = None if wide else width
    if entries:
        out = _entries(entries, width)
    elif every_count:
        out = wrap(f"no timeline entry: none of the {every_count} timestamped facts of the input is in the window "
                   "or of the components chosen", width)
    else:
        out = wrap("no timeline entry: the input holds no timestamped log line, event, audit record or object", width)
    for finding in chained:
        out += ["", *wrap(f"Causal chain ({finding.rule}): {finding.title}", width, hanging=INDENT)]
        for step in chain_json(finding):
            item = finding.evidence[step["evidence"]]
            gap = "" if step["gapSeconds"] is None else f"{human_gap(step['gapSeconds'])}  "
            text = " ".join(item.excerpt.split())
            text = without_time(text, item.time) if item.time is not None else text
            line = f"  → {format_time(item.time) or '-'}  {gap}"
            out.append(line + text[:MAX_STEP] if width is None else cut(line + text, width))
    for heading, group in problem_groups(problems):
        out += ["", *wrap(heading, width)]
        for problem in group:
            out += wrap(f"{problem.location}: {problem.message}", width, "  ", INDENT)
    return "\n".join(out)
