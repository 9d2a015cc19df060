"""Container logs: line parsing (kubectl --timestamps, logrus text/JSON, klog, plain) and the
single-pass scanner that prefilters on bytes and parses only the lines that match."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from argo_doctor.model import Problem
from argo_doctor.timeutil import parse_time

CHUNK_SIZE = 8 << 20
MAX_LINE = 1 << 20
"""Lines longer than this are searched in their first MAX_LINE bytes only, and reported."""
EXCERPT_LIMIT = 2000

_KUBECTL_PREFIX = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
_LOGFMT_PAIR = re.compile(r'([A-Za-z_][\w.\-/]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)')
_KLOG = re.compile(r"([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?\s+\d+ ([^\]]*)\] ?(.*)", re.S)
_ANY_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?")
_KLOG_LEVELS = {"I": "info", "W": "warning", "E": "error", "F": "fatal"}
_GO_ESCAPES = re.compile(r"\\(.)")
_JSON_TIME_KEYS = ("time", "ts", "timestamp", "@timestamp")


@dataclass(frozen=True, slots=True)
class LogFile:
    """One container's log, or a byte range of a file that holds several (cluster-info dump)."""

    path: Path
    display: str
    namespace: str
    pod: str
    container: str
    previous: bool = False
    start: int = 0
    end: int | None = None
    first_line: int = 1


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One parsed log line."""

    file: LogFile
    line: int
    time: datetime | None
    level: str | None
    message: str
    fields: Mapping[str, str]
    raw: str

    @property
    def location(self) -> str:
        """`path:line`, as evidence locations are written."""
        return f"{self.file.display}:{self.line}"


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return _GO_ESCAPES.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value[1:-1])
    return value


def _klog_time(match: re.Match[str], reference: datetime) -> datetime:
    month, day, hour, minute, second = (int(match.group(i)) for i in range(2, 7))
    micros = int((match.group(7) or "0")[:6].ljust(6, "0"))
    year = reference.year
    stamp = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
    if (stamp - reference).days > 1:  # klog omits the year: a December line read in January
        stamp = stamp.replace(year=year - 1)
    return stamp


def parse_line(text: str, file: LogFile, line: int, reference: datetime) -> LogRecord:
    """Parse one log line in whatever format it is in; never raises."""
    raw = text[:EXCERPT_LIMIT]
    time: datetime | None = None
    prefix = _KUBECTL_PREFIX.match(text)
    if prefix:
        time = parse_time(prefix.group(1))
        text = text[prefix.end():]
    body = text.strip()
    fields: dict[str, str] = {}
    level: str | None = None
    message = body
    if body.startswith("{"):
        try:
            decoded: Any = msgspec.json.decode(body)
        except msgspec.DecodeError:
            decoded = None
        if isinstance(decoded, dict):
            fields = {str(k): v if isinstance(v, str) else msgspec.json.encode(v).decode() for k, v in decoded.items()}
            message = fields.pop("msg", None) or fields.pop("message", "")
            level = fields.pop("level", None) or fields.pop("severity", None)
            for key in _JSON_TIME_KEYS:
                if key in fields:
                    time = time or parse_time(fields[key])
                    break
    elif body.startswith(("time=", "level=")):
        fields = {k: _unquote(v) for k, v in _LOGFMT_PAIR.findall(body)}
        message = fields.pop("msg", "")
        level = fields.pop("level", None)
        time = time or parse_time(fields.get("time"))
    else:
        klog = _KLOG.match(body)
        if klog:
            level = _KLOG_LEVELS[klog.group(1)]
            fields = {"caller": klog.group(8)}
            message = klog.group(9)
            time = _klog_time(klog, time or reference)
        elif time is None:
            found = _ANY_TIME.search(body)
            if found:
                time = parse_time(found.group(0).replace(",", "."))
    return LogRecord(file, line, time, level.lower() if level else None, message, fields, raw)


@dataclass(frozen=True)
class LogSignature:
    """A log message an analyzer cares about: a literal byte needle plus an optional regex."""

    id: str
    needle: bytes
    pattern: re.Pattern[str] | None = None
    components: frozenset[str] = frozenset()
    source: str = ""

    def applies_to(self, component: str | None) -> bool:
        """Whether files of `component` can hold this message."""
        return not self.components or component in self.components


Dispatch = Callable[[LogSignature, LogRecord, "re.Match[str] | None"], None]


@dataclass
class ScanStats:
    """What the log pass read."""

    files: int = 0
    bytes: int = 0
    matched_lines: int = 0
    dispatched: int = 0


@dataclass
class _FileState:
    file: LogFile
    problems: list[Problem]
    reported: set[str] = field(default_factory=set)

    def report(self, kind: str, line: int, message: str) -> None:
        if kind not in self.reported:
            self.reported.add(kind)
            self.problems.append(Problem(f"{self.file.display}:{line}", message))


def scan_log_file(
    file: LogFile,
    signatures: Sequence[LogSignature],
    dispatch: Dispatch,
    problems: list[Problem],
    reference: datetime,
    stats: ScanStats,
) -> None:
    """Read one log once, in bounded chunks, and dispatch every line that matches a signature."""
    by_needle: dict[bytes, list[LogSignature]] = {}
    for sig in signatures:
        by_needle.setdefault(sig.needle, []).append(sig)
    needles = list(by_needle)
    state = _FileState(file, problems)
    line_no = file.first_line
    carry = b""
    skipping = False  # inside a line longer than MAX_LINE, already searched
    try:
        handle = file.path.open("rb")
    except OSError as exc:
        problems.append(Problem(file.display, f"cannot read: {exc.strerror or exc}"))
        return
    with handle:
        handle.seek(file.start)
        remaining = None if file.end is None else file.end - file.start
        stats.files += 1
        while True:
            size = CHUNK_SIZE if remaining is None else min(CHUNK_SIZE, remaining)
            chunk = handle.read(size) if size > 0 else b""
            if remaining is not None:
                remaining -= len(chunk)
            stats.bytes += len(chunk)
            eof = not chunk
            if skipping:
                cut = chunk.find(b"\n")
                if cut < 0 and not eof:
                    continue
                skipping = False
                line_no += 1
                chunk = b"" if cut < 0 else chunk[cut + 1:]
            buf = carry + chunk if carry else chunk
            cut = len(buf) if eof else buf.rfind(b"\n") + 1
            region, carry = buf[:cut], buf[cut:]
            if region:
                line_no = _match_region(region, line_no, needles, by_needle, state, dispatch, reference, stats)
            if len(carry) > MAX_LINE:
                # A line longer than MAX_LINE: search its head, then skip to its end.
                state.report("long", line_no, f"line longer than {MAX_LINE >> 20} MiB; only its first MiB was read")
                _match_region(carry[:MAX_LINE], line_no, needles, by_needle, state, dispatch, reference, stats)
                carry, skipping = b"", True
            if eof:
                return


def _match_region(
    region: bytes,
    line_no: int,
    needles: list[bytes],
    by_needle: dict[bytes, list[LogSignature]],
    state: _FileState,
    dispatch: Dispatch,
    reference: datetime,
    stats: ScanStats,
) -> int:
    """Dispatch the matching lines of a region of whole lines; return the line number after it."""
    nul = region.find(b"\x00")
    if nul >= 0:
        state.report("binary", line_no + region.count(b"\n", 0, nul), "binary data (NUL bytes) in log line")
    hits: dict[int, tuple[int, list[bytes]]] = {}
    end_of_region = len(region)
    for needle in needles:
        pos = region.find(needle)
        while pos >= 0:
            start = region.rfind(b"\n", 0, pos) + 1
            end = region.find(b"\n", pos)
            if end < 0:
                end = end_of_region
            entry = hits.get(start)
            if entry is None:
                hits[start] = (end, [needle])
            else:
                entry[1].append(needle)
            pos = region.find(needle, end)
    if hits:
        counted_to, current = 0, line_no
        for start in sorted(hits):
            current += region.count(b"\n", counted_to, start)
            counted_to = start
            end, matched = hits[start]
            _dispatch_line(region[start:end], current, matched, by_needle, state, dispatch, reference, stats)
    return line_no + region.count(b"\n")


def _dispatch_line(
    data: bytes,
    line_no: int,
    matched: list[bytes],
    by_needle: dict[bytes, list[LogSignature]],
    state: _FileState,
    dispatch: Dispatch,
    reference: datetime,
    stats: ScanStats,
) -> None:
    if len(data) > MAX_LINE:
        state.report("long", line_no, f"line longer than {MAX_LINE >> 20} MiB; only its first MiB was read")
        data = data[:MAX_LINE]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        state.report("utf8", line_no, "log line is not valid UTF-8; undecodable bytes replaced")
        text = data.decode("utf-8", errors="replace")
    text = text.replace("\x00", "").rstrip("\r")
    record = parse_line(text, state.file, line_no, reference)
    stats.matched_lines += 1
    for needle in matched:
        for sig in by_needle[needle]:
            found = None
            if sig.pattern is not None:
                found = sig.pattern.search(text)
                if found is None:
                    continue
            stats.dispatched += 1
            dispatch(sig, record, found)
