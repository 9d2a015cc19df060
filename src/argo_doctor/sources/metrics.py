"""Prometheus text exposition files (`metrics/*.prom`, e.g. the API server's /metrics), streamed.

The format is Prometheus' text format 0.0.4: `#` comment lines (`# HELP`, `# TYPE`) and samples
`name{label="value",...} value [timestamp]`. Values parse as Prometheus parses them: decimal
floats, `NaN`, `+Inf`, `-Inf` (any case, `Infinity` too). A value beyond the range of a float
(`1e999`) is read as ±Inf, the value Go's ParseFloat returns with its range error, and reported; a
line that does not parse is skipped. Each file reports each of the two once, at its first line.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

from argo_doctor.model import Problem
from argo_doctor.sources.files import open_input

MAX_METRICS_LINE = 64 << 10
"""A sample line is well under 1 KiB, a HELP line a few; longer lines are skipped as not a sample."""
MAX_METRICS_BYTES = 256 << 20
"""Per file. The API server's /metrics of a large cluster is tens of MiB; the rest of a larger file is skipped."""

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(
    r'[ \t]*(?P<name>[a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"(?P<value>(?:[^"\\]|\\.)*+)"[ \t]*(?P<comma>,?)'
)
_OPEN = re.compile(r"[ \t]*{")
_CLOSE = re.compile(r"[ \t]*}")
_VALUE = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf(?:inity)?))|(?i:nan)")
_INF = re.compile(r"[+-]?(?i:inf(?:inity)?)")
_TIMESTAMP = re.compile(r"-?[0-9]+")
_ESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True, slots=True)
class MetricsFile:
    """One Prometheus text file of the input; `root` is the input folder it must stay inside."""

    path: Path
    display: str
    root: Path | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample line: metric name, labels, value, and `file:line`."""

    name: str
    labels: dict[str, str]
    value: float
    location: str


def parse_value(text: str) -> float:
    """A sample value as Prometheus reads it; ValueError for anything else (Python's extras included:
    `1_000`, non-ASCII digits)."""
    if not _VALUE.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a number")
    return float(text)  # "1e999" is inf, as in Go


def format_value(value: float) -> str:
    """A value as Prometheus writes it: `42`, `0.25`, `NaN`, `+Inf`, `-Inf`."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


class _Parsed(NamedTuple):
    name: str
    labels: dict[str, str]
    value: float
    text: str
    """The value as written."""


def _parse_sample(line: str, names: Collection[str] | None) -> _Parsed | None:
    """One line; None for a comment, a blank line or a metric not in `names` (those lines are not
    checked further); ValueError with the reason for a line that is not a sample."""
    line = line.lstrip(" \t")
    if not line.strip() or line.startswith("#"):
        return None
    name = _NAME.match(line)
    if name is None:
        raise ValueError("no metric name")
    if names is not None and name.group() not in names:
        return None
    pos = name.end()
    labels: dict[str, str] = {}
    if (brace := _OPEN.match(line, pos)) is not None:
        pos = brace.end()
        while (close := _CLOSE.match(line, pos)) is None:
            label = _LABEL.match(line, pos)
            if label is None:
                raise ValueError("malformed label")
            labels[label["name"]] = _ESCAPE.sub(lambda m: "\n" if m[1] == "n" else m[1], label["value"])
            pos = label.end()
            if not label["comma"] and not _CLOSE.match(line, pos):
                raise ValueError("no comma between labels")
        pos = close.end()
    elif not line[pos:pos + 1].isspace():
        raise ValueError("no blank after the metric name")
    rest = line[pos:].split()
    if not rest or len(rest) > 2:
        raise ValueError("expected a value, then an optional timestamp")
    if len(rest) == 2 and not _TIMESTAMP.fullmatch(rest[1]):
        raise ValueError(f"timestamp {rest[1][:40]!r} is not an integer")
    return _Parsed(name.group(), labels, parse_value(rest[0]), rest[0])


@dataclass
class _Tally:
    """Lines of one kind in one file: one problem, at the first of them, with their number."""

    noun: str
    count: int = 0
    first: Problem | None = None

    def add(self, location: str, message: str) -> None:
        self.count += 1
        self.first = self.first or Problem(location, message)

    def problem(self) -> Problem | None:
        if self.first is None or self.count == 1:
            return self.first
        return Problem(self.first.location, f"{self.first.message}; {self.count:,} {self.noun} in all")


def read_metrics_file(
    metrics_file: MetricsFile, problems: list[Problem], names: Collection[str] | None = None
) -> Iterator[Sample]:
    """Yield the samples of one file (only those of the metrics in `names` when given).

    The file is opened only if it is a regular file inside the input (no FIFO, device or outside link),
    read line by line up to MAX_METRICS_LINE per line and MAX_METRICS_BYTES in all; each problem goes
    to `problems` once per file.
    """
    display = metrics_file.display
    try:
        handle = open_input(metrics_file.path, metrics_file.root)
    except OSError as exc:
        problems.append(Problem(display, f"cannot read: {exc.strerror or exc}"))
        return
    skipped = _Tally("lines skipped")
    overflowed = _Tally("values read as ±Inf")
    try:
        with handle:
            for number, data in _lines(handle, display, problems):
                location = f"{display}:{number}"
                try:
                    if data is None:
                        raise ValueError(f"line longer than {MAX_METRICS_LINE:,} bytes")
                    parsed = _parse_sample(data.decode("utf-8", errors="replace"), names)
                except ValueError as exc:
                    skipped.add(location, f"not a Prometheus sample ({exc}); skipped")
                    continue
                if parsed is None:
                    continue
                if math.isinf(parsed.value) and not _INF.fullmatch(parsed.text):
                    overflowed.add(location, f"value {parsed.text[:40]} is beyond the range of a float; read as "
                                             f"{format_value(parsed.value)}")
                yield Sample(parsed.name, parsed.labels, parsed.value, location)
    finally:  # also when the reader stops early
        problems.extend(p for p in (skipped.problem(), overflowed.problem()) if p is not None)


def _lines(handle: BinaryIO, display: str, problems: list[Problem]) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) up to MAX_METRICS_BYTES; None for a line over MAX_METRICS_LINE (read past)."""
    total = 0
    number = 0
    while data := handle.readline(MAX_METRICS_LINE + 1):
        number += 1
        total += len(data)
        long = len(data) > MAX_METRICS_LINE and not data.endswith(b"\n")
        while long and total <= MAX_METRICS_BYTES and (more := handle.readline(MAX_METRICS_LINE)):
            total += len(more)
            if more.endswith(b"\n"):
                break
        if total > MAX_METRICS_BYTES:
            size = os.fstat(handle.fileno()).st_size
            message = f"the file has {size:,} bytes, over the {MAX_METRICS_BYTES:,} read of a metrics file"
            problems.append(Problem(f"{display}:{number}", f"{message}; the rest of it is skipped"))
            return
        yield number, None if long else data
