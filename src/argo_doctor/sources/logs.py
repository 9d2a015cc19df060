"""Container logs: line parsing (kubectl --timestamps, logrus text/JSON, klog, plain) and the
single-pass scanner that prefilters on bytes and parses only the lines that match."""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import msgspec

from argo_doctor.model import Problem
from argo_doctor.sources.files import MAX_JSON_DEPTH, decode_json, json_too_deep, open_input
from argo_doctor.sources.workers import pool as worker_pool
from argo_doctor.timeutil import parse_time

CHUNK_SIZE = 1 << 20
"""Bytes read at a time: every needle is searched in a chunk while it is in the CPU cache (8 MiB chunks
were 5-10% slower)."""
PIECE_SIZE = 16 << 20
"""Files larger than this are cut into line-aligned pieces read in parallel; the matched lines of a
piece are held until it is dispatched, so this also bounds memory when most lines match."""
PARALLEL_THRESHOLD = 32 << 20
"""Below this many bytes of logs, reading in this process is faster than starting workers."""
MAX_LINE = 1 << 20
"""Lines longer than this are searched in their first MAX_LINE bytes only, and reported."""
EXCERPT_LIMIT = 2000

_KUBECTL_PREFIX = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
_LOGFMT_TOKEN = re.compile(
    r'([A-Za-z_][\w.\-/]*+)=("[^"\\]*+(?:\\.[^"\\]*+)*+"|[^\s"]*+)'  # a field: key=value, the value Go-quoted or bare
    r"|[A-Za-z_][\w.\-/]*+"  # a word not followed by "=": no key starts inside it either, so skip it whole
    r"|(?:(?![A-Za-z_])[\w.\-/])++"  # word characters that cannot start a key
)
"""Matches never overlap and nothing backtracks, so `findall` reads a line once; a plain key=value
regex would retry inside every long token without `=`: quadratic (40 s for a 100 KB line). A quoted value
is read as runs of plain characters between escapes (`"[^"\\]*(?:\\.[^"\\]*)*"`), twice as fast as one
alternation per character."""
_LOGFMT_TIME = re.compile(r'time=("[^"\\]*+(?:\\.[^"\\]*+)*+"|[^\s"]*+)')
"""The value of a logfmt line's first field when it is `time`, as `_LOGFMT_TOKEN` reads it."""
_KLOG = re.compile(r"([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?\s+\d+ ([^\]]*)\] ?(.*)", re.S)
_ANY_TIME = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?")
_KLOG_LEVELS = {"I": "info", "W": "warning", "E": "error", "F": "fatal"}
_GO_ESCAPES = re.compile(r"\\(.)")
_ESCAPED = {"n": "\n", "t": "\t"}
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


_Parsed = tuple[datetime | None, str | None, str, Mapping[str, str]]
"""(time, level, message, fields) of a line."""
_UNSET: Any = object()
"""The time of a line not read yet."""


class LogRecord:
    """One log line: where it is, its excerpt, and its time, level, message and fields.

    A line the log pass dispatches is parsed on first use of its level, message or fields, and its time
    is read from the `kubectl --timestamps` prefix alone when the rest cannot change it, else from the
    time field of a JSON or logfmt line alone: a rule that sees tens of thousands of lines and keeps the
    last few thousand does not pay for the others. Such a line is at most EXCERPT_LIMIT characters, so
    it holds no more than its excerpt until it is parsed.
    """

    __slots__ = ("_parsed", "_reference", "_text", "_time", "file", "line", "raw")

    file: LogFile
    line: int
    raw: str
    _text: str | None
    _reference: datetime | None
    _time: datetime | None
    _parsed: _Parsed | None

    def __init__(
        self, file: LogFile, line: int, time: datetime | None, level: str | None, message: str,
        fields: Mapping[str, str], raw: str,
    ) -> None:
        self.file, self.line, self.raw = file, line, raw
        self._text, self._reference, self._time = None, None, time
        self._parsed = (time, level, message, fields)

    @classmethod
    def unparsed(cls, text: str, file: LogFile, line: int, reference: datetime) -> LogRecord:
        """The record `parse_line` would make of a line of at most EXCERPT_LIMIT characters, parsed when
        first read."""
        record = cls.__new__(cls)
        record.file, record.line, record.raw = file, line, text
        record._text, record._reference, record._time, record._parsed = text, reference, _UNSET, None
        return record

    def _fields(self) -> _Parsed:
        if self._parsed is None:
            assert self._text is not None and self._reference is not None
            self._parsed = _parse(self._text, self._reference)
            self._time = self._parsed[0]
            self._text = None
        return self._parsed

    @property
    def parsed(self) -> bool:
        """Whether the line's level, message and fields have been read (always, unless made `unparsed`)."""
        return self._parsed is not None

    @property
    def time(self) -> datetime | None:
        """When the line was written: its `kubectl --timestamps` prefix, unless a klog line's own time
        replaces it, else a time found in the line."""
        if self._time is _UNSET:
            assert self._text is not None
            known, time = _quick_time(self._text)
            self._time = time if known else self._fields()[0]
        return self._time

    @property
    def level(self) -> str | None:
        """The level, lower case."""
        return self._fields()[1]

    @property
    def message(self) -> str:
        """The message (the whole line when it has no known format)."""
        return self._fields()[2]

    @property
    def fields(self) -> Mapping[str, str]:
        """The other fields of a logfmt or JSON line (`caller` of a klog line)."""
        return self._fields()[3]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogRecord):
            return NotImplemented
        mine, theirs = (self.file, self.line, self.raw), (other.file, other.line, other.raw)
        return mine == theirs and self._fields() == other._fields()

    def __repr__(self) -> str:
        time, level, message, fields = self._fields()
        return (f"LogRecord(file={self.file!r}, line={self.line!r}, time={time!r}, level={level!r}, "
                f"message={message!r}, fields={fields!r}, raw={self.raw!r})")

    @property
    def location(self) -> str:
        """`path:line`, as evidence locations are written."""
        return f"{self.file.display}:{self.line}"

    def trimmed(self, message: str, fields: Mapping[str, str]) -> LogRecord:
        """This line with another message and fields (what a rule keeps of it)."""
        return LogRecord(self.file, self.line, self.time, self.level, message, fields, self.raw)


def _unescape(match: re.Match[str]) -> str:
    char = match.group(1)
    return _ESCAPED.get(char, char)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        inner = value[1:-1]
        return _GO_ESCAPES.sub(_unescape, inner) if "\\" in inner else inner
    return value


def logfmt_fields(body: str) -> dict[str, str]:
    """The `key=value` fields of a logfmt line, values unquoted; a repeated key keeps its last value.

    A key is `[A-Za-z_][\\w.\\-/]*`, a value a Go-quoted string or a run of characters other than
    spaces and quotes; a quoted value that never closes is empty. Linear in the length of the line.
    """
    return {key: _unquote(value) for key, value in _LOGFMT_TOKEN.findall(body) if key}


def _klog_time(match: re.Match[str], reference: datetime) -> datetime | None:
    month, day, hour, minute, second = (int(match.group(i)) for i in range(2, 7))
    micros = int((match.group(7) or "0")[:6].ljust(6, "0"))
    try:
        stamp = datetime(reference.year, month, day, hour, minute, second, micros, tzinfo=UTC)
        if (stamp - reference).days > 1:  # klog omits the year: a December line read in January
            stamp = stamp.replace(year=reference.year - 1)
    except ValueError:  # 30 February, or 29 February moved to a year without one
        return None
    return stamp


def parse_line(text: str, file: LogFile, line: int, reference: datetime) -> LogRecord:
    """Parse one log line in whatever format it is in; never raises."""
    time, level, message, fields = _parse(text, reference)
    return LogRecord(file, line, time, level, message, fields, text[:EXCERPT_LIMIT])


def _quick_time(text: str) -> tuple[bool, datetime | None]:
    """(True, the time `_parse` finds) when it is read without the rest of the line: the `kubectl --timestamps`
    prefix when the rest cannot replace it (a klog line's own time does), else the time field of a JSON or logfmt
    line, read without unquoting the other fields; else (False, None)."""
    prefix = _KUBECTL_PREFIX.match(text)
    if prefix is None:
        body = text.strip()
        if body.startswith("{"):
            try:
                decoded: Any = decode_json(body)
            except msgspec.DecodeError:
                return True, None
            return True, _json_time(decoded) if isinstance(decoded, dict) else None
        if body.startswith(("time=", "level=")):
            first = _LOGFMT_TIME.match(body) if body.count("time=") == 1 else None  # the only time field, first
            values = [first.group(1)] if first else [v for k, v in _LOGFMT_TOKEN.findall(body) if k == "time"]
            return True, parse_time(_unquote(values[-1])) if values else None
        return False, None
    time = parse_time(prefix.group(1))
    body = text[prefix.end():].strip()
    if time is None or (not body.startswith(("{", "time=", "level=")) and _KLOG.match(body)):
        return False, None
    return True, time


def _too_deep(text: str) -> bool:
    """Whether a line is a JSON object nested too deeply to decode, which `_parse` reads as plain text."""
    if text.count("{") + text.count("[") <= MAX_JSON_DEPTH:  # json_too_deep's own first test, before the regex
        return False
    prefix = _KUBECTL_PREFIX.match(text)
    body = text[prefix.end():].lstrip() if prefix else text.lstrip()
    return body.startswith("{") and json_too_deep(body)


def _json_text(value: Any) -> str:
    """A JSON line's field as text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _json_time(fields: dict[Any, Any]) -> datetime | None:
    """The time of a JSON line's fields: its first time key's (`_JSON_TIME_KEYS`)."""
    for key in _JSON_TIME_KEYS:
        if key in fields:
            return parse_time(_json_text(fields[key]))
    return None


def _parse(text: str, reference: datetime) -> _Parsed:
    """(time, level, message, fields) of a line in whatever format it is in; never raises."""
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
            decoded: Any = decode_json(body)
        except msgspec.DecodeError:
            decoded = None
        if isinstance(decoded, dict):
            fields = {str(k): _json_text(v) for k, v in decoded.items()}
            message = fields.pop("msg", "") or fields.pop("message", "")
            level = fields.pop("level", "") or fields.pop("severity", "") or None
            time = time or _json_time(fields)
    elif body.startswith(("time=", "level=")):
        fields = logfmt_fields(body)
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
                year, month, day, clock, fraction, zone = found.groups()
                fraction = f".{fraction[:6]}" if fraction else ""
                time = parse_time(f"{year}-{month}-{day}T{clock}{fraction}{zone or ''}")
    return time, level.lower() if level else None, message, fields


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
class _Raw:
    """What the byte prefilter found in one line-aligned range: picklable, nothing parsed."""

    newlines: int = 0
    size: int = 0
    hits: list[tuple[int, bytes, tuple[int, ...]]] = field(default_factory=list)
    """(line offset within the range, the line's bytes, indexes of the needles it holds)"""
    flags: list[tuple[str, int]] = field(default_factory=list)
    """(`binary`|`long`, line offset) for lines the user should hear about"""
    error: str | None = None


Checks = tuple[tuple["re.Pattern[str]", ...] | None, ...]
"""Per needle: the patterns of its signatures when each has one (a line that holds only such needles and matches
none of their patterns reaches no analyzer), else None (every line that holds it is dispatched)."""


def _prefilter(path: Path, start: int, end: int | None, needles: tuple[bytes, ...], checks: Checks = ()) -> _Raw:
    """Search one byte range of a file for the needles, in bounded chunks, without copying them; a line that
    `_unheard` finds would reach no one is left out here, on the worker, rather than sent for nothing."""
    raw = _Raw()
    buf = bytearray(CHUNK_SIZE + MAX_LINE)  # a carried partial line is at most MAX_LINE: room is left
    view = memoryview(buf)
    filled = 0  # bytes of buf in use: the carried partial line, then new data
    line = 0
    skipping = False  # inside a line longer than MAX_LINE, already searched
    try:
        # a regular file, never a FIFO or a device; os.fdopen(..., "rb") is a BufferedReader, typed BinaryIO
        handle = cast(io.BufferedReader, open_input(path))
    except OSError as exc:
        raw.error = f"cannot read: {exc.strerror or exc}"
        return raw
    with handle:
        handle.seek(start)
        remaining = None if end is None else end - start
        while True:
            want = len(buf) - filled if remaining is None else min(len(buf) - filled, remaining)
            got = handle.readinto(view[filled:filled + want]) if want > 0 else 0
            if remaining is not None:
                remaining -= got
            raw.size += got
            eof = got == 0
            limit = filled + got
            begin = 0
            if skipping:
                nl = buf.find(b"\n", 0, limit)
                if nl < 0 and not eof:
                    filled = 0
                    continue
                skipping = False
                line += 1
                raw.newlines += 1 if nl >= 0 else 0
                begin = limit if nl < 0 else nl + 1
            cut = limit if eof else buf.rfind(b"\n", begin, limit) + 1
            if cut <= begin and not eof:
                cut = begin
            if cut > begin:
                line = _search(buf, begin, cut, line, needles, raw, checks)
            carry = limit - cut
            if carry > MAX_LINE:
                # A line longer than MAX_LINE: search its head, then skip to its end.
                raw.flags.append(("long", line))
                _search(buf, cut, cut + MAX_LINE, line, needles, raw, checks)
                filled, skipping = 0, True
            else:
                buf[0:carry] = buf[cut:limit]
                filled = carry
            if eof:
                return raw


def _search(buf: bytearray, begin: int, end: int, line: int, needles: tuple[bytes, ...], raw: _Raw,
            checks: Checks = ()) -> int:
    """Record the lines of buf[begin:end] that hold a needle (but those `_unheard`); return the line number after
    it."""
    nul = buf.find(b"\x00", begin, end)
    if nul >= 0:
        raw.flags.append(("binary", line + buf.count(b"\n", begin, nul)))
    hits = _native_hits(buf, begin, end, needles)
    if hits is None:
        hits = _hits(buf, begin, end, needles)
    counted, current = begin, line  # newlines are counted once, from hit to hit, then to the end
    for first in sorted(hits):
        current += buf.count(b"\n", counted, first)
        counted = first
        last, found = hits[first]
        data = bytes(buf[first:min(last, first + MAX_LINE + 1)])
        if not (checks and _unheard(data, found, checks)):
            raw.hits.append((current, data, tuple(found)))
    newlines = current - line + buf.count(b"\n", counted, end)
    raw.newlines += newlines
    return line + newlines


_Hits = dict[int, tuple[int, list[int]]]
"""Lines that hold a needle: the offset of the line's first byte -> (the offset of its end, the indexes of the
needles it holds, ascending, each once)."""


def _hits(buf: bytearray, begin: int, end: int, needles: tuple[bytes, ...]) -> _Hits:
    """`_Hits` of buf[begin:end], each needle searched in turn (`bytes.find`)."""
    hits: _Hits = {}
    for index, needle in enumerate(needles):
        pos = buf.find(needle, begin, end)
        while pos >= 0:
            first = buf.rfind(b"\n", begin, pos) + 1 or begin
            last = buf.find(b"\n", pos, end)
            last = end if last < 0 else last
            entry = hits.get(first)
            if entry is None:
                hits[first] = (last, [index])
            else:
                entry[1].append(index)
            pos = buf.find(needle, last, end)
    return hits


MATCHES_PER_KIB = 64
"""Above this many native matches per KiB searched (a range made of needles), `_native_hits` gives up and the
needles are searched in turn, which skips to the end of a line at its first match: each match costs a call here."""


def _native_hits(buf: bytearray, begin: int, end: int, needles: tuple[bytes, ...]) -> _Hits | None:
    """`_Hits` of buf[begin:end] in one pass of the native engine over it; None without one (or when the range holds
    too many matches, see MATCHES_PER_KIB)."""
    database = _database(needles)
    native = _native()
    if database is None or native is None:
        return None
    ends: list[int] = []
    indexes: list[int] = []
    most = MATCHES_PER_KIB * ((end - begin) // 1024 + 1)

    def matched(index: int, _start: int, stop: int, _flags: int, _context: object) -> bool:
        ends.append(stop)
        indexes.append(index)
        return len(ends) > most  # True stops the scan

    try:
        database.scan(memoryview(buf)[begin:end], match_event_handler=matched)
    except native.ScanTerminated:
        return None
    hits: _Hits = {}
    first = last = -1
    found: list[int] = []
    for stop, index in sorted(zip(ends, indexes, strict=True)):
        at = begin + stop  # a needle holds no line break: the match ends on its line
        if at > last:
            first = buf.rfind(b"\n", begin, at) + 1 or begin
            last = buf.find(b"\n", at, end)
            last = end if last < 0 else last
            found = []
            hits[first] = (last, found)
        if index not in found:
            found.append(index)
    for _, found in hits.values():
        found.sort()
    return hits


@cache
def _native() -> ModuleType | None:
    """The native multi-needle search (Vectorscan, through the hyperscan package), imported when a log is first
    searched; None where no wheel of it installs (then needles are searched in turn)."""
    try:
        import hyperscan
    except ImportError:  # pragma: no cover (the platforms CI runs on have it)
        return None
    return hyperscan


_DATABASES = threading.local()
"""Each thread's compiled needle sets (a database's scratch space serves one scan at a time)."""


def _database(needles: tuple[bytes, ...]) -> Any:
    """The native engine's database of the needles (compiled once per thread and set), None without the engine or
    for needles it cannot take as given (empty, or holding a NUL or a line break)."""
    native = _native()
    if native is None or not needles or any(not n or b"\x00" in n or b"\n" in n for n in needles):
        return None
    cache: dict[tuple[bytes, ...], Any] = _DATABASES.__dict__.setdefault("cache", {})
    database = cache.get(needles)
    if database is None:
        database = native.Database(mode=native.HS_MODE_BLOCK)
        try:
            database.compile(expressions=list(needles), ids=list(range(len(needles))), elements=len(needles),
                             flags=0, literal=True)
        except native.error:
            return None
        cache[needles] = database
    return database


def _unheard(data: bytes, found: list[int], checks: Checks) -> bool:
    """Whether `_dispatch_line` would dispatch the line to no one and report nothing of it: ASCII (so decoded as it
    would be, without a UTF-8 problem), at most MAX_LINE bytes, not JSON nested too deep, and each of its needles has
    only signatures with patterns, none of which matches its text (the same patterns on the same text)."""
    if len(data) > MAX_LINE or not data.isascii():
        return False
    patterns: list[re.Pattern[str]] = []
    for index in found:
        these = checks[index]
        if these is None:
            return False
        patterns.extend(these)
    text = data.decode("ascii").replace("\x00", "").rstrip("\r")
    return not any(pattern.search(text) for pattern in patterns) and not _too_deep(text)


@dataclass(frozen=True)
class _Piece:
    index: int
    start: int
    end: int | None


def _plan(files: Sequence[LogFile]) -> list[_Piece]:
    """Cut large files into line-aligned pieces of about PIECE_SIZE bytes, for parallel reading."""
    pieces: list[_Piece] = []
    for index, log_file in enumerate(files):
        try:
            total = log_file.end if log_file.end is not None else log_file.path.stat().st_size
        except OSError:
            pieces.append(_Piece(index, log_file.start, log_file.end))
            continue
        at = log_file.start
        while total - at > PIECE_SIZE * 3 // 2:
            cut = _line_start_after(log_file.path, at + PIECE_SIZE, total)
            if cut is None:
                break
            pieces.append(_Piece(index, at, cut))
            at = cut
        pieces.append(_Piece(index, at, log_file.end if at == log_file.start else total))
    return pieces


def _line_start_after(path: Path, offset: int, limit: int) -> int | None:
    """The offset just after the first newline at or after `offset` (None if none soon)."""
    with open_input(path) as handle:
        handle.seek(offset)
        data = handle.read(min(MAX_LINE, limit - offset))
    nl = data.find(b"\n")
    return None if nl < 0 else offset + nl + 1


def _run_prefilter(job: tuple[Path, int, int | None, tuple[bytes, ...], Checks]) -> _Raw:
    return _prefilter(*job)


def scan_logs(
    jobs: Sequence[tuple[LogFile, Sequence[LogSignature]]],
    dispatch: Dispatch,
    problems: list[Problem],
    reference: datetime,
    stats: ScanStats,
    workers: int = 0,
) -> None:
    """Read every log once and dispatch each line that matches one of its file's signatures.

    The byte prefilter runs on `workers` processes (0: as many as CPUs, 1: in this process) when
    there is enough to read; parsing and dispatch happen here, in file and line order.
    """
    jobs = [(f, sigs) for f, sigs in jobs if sigs]
    files = [f for f, _ in jobs]
    tables: list[tuple[tuple[bytes, ...], dict[bytes, list[LogSignature]]]] = []
    checks: list[Checks] = []
    for _, sigs in jobs:
        by_needle: dict[bytes, list[LogSignature]] = {}
        for sig in sigs:
            by_needle.setdefault(sig.needle, []).append(sig)
        tables.append((tuple(by_needle), by_needle))
        checks.append(tuple(tuple(s.pattern for s in found if s.pattern is not None)
                            if all(s.pattern is not None for s in found) else None for found in by_needle.values()))
    pieces = _plan(files)
    work = [(files[p.index].path, p.start, p.end, tables[p.index][0], checks[p.index]) for p in pieces]
    workers = workers or os.cpu_count() or 1
    total = sum(_size(f) for f in files)
    if workers > 1 and len(work) > 1 and total >= PARALLEL_THRESHOLD:
        with worker_pool(min(workers, len(work))) as pool:
            results: Iterator[_Raw] = pool.map(_run_prefilter, work)
            _deliver_all(pieces, results, files, tables, dispatch, problems, reference, stats)
    else:
        _deliver_all(pieces, map(_run_prefilter, work), files, tables, dispatch, problems, reference, stats)


def _size(log_file: LogFile) -> int:
    if log_file.end is not None:
        return log_file.end - log_file.start
    try:
        return log_file.path.stat().st_size - log_file.start
    except OSError:
        return 0


def _deliver_all(
    pieces: list[_Piece],
    results: Iterator[_Raw],
    files: list[LogFile],
    tables: list[tuple[tuple[bytes, ...], dict[bytes, list[LogSignature]]]],
    dispatch: Dispatch,
    problems: list[Problem],
    reference: datetime,
    stats: ScanStats,
) -> None:
    current = -1
    state: _FileState | None = None
    line_base = 0
    for piece, raw in zip(pieces, results, strict=True):
        log_file = files[piece.index]
        if piece.index != current:
            current, line_base = piece.index, log_file.first_line
            state = _FileState(log_file, problems)
            stats.files += 1
        assert state is not None
        if raw.error:
            problems.append(Problem(log_file.display, raw.error))
            continue
        stats.bytes += raw.size
        for kind, offset in raw.flags:
            message = (
                f"line longer than {MAX_LINE >> 20} MiB; only its first MiB was read"
                if kind == "long" else "binary data (NUL bytes) in log line"
            )
            state.report(kind, line_base + offset, message)
        needles, by_needle = tables[piece.index]
        for offset, data, found in raw.hits:
            _dispatch_line(data, line_base + offset, [needles[i] for i in found], by_needle, state, dispatch,
                           reference, stats)
        line_base += raw.newlines


@dataclass
class _FileState:
    file: LogFile
    problems: list[Problem]
    reported: set[str] = field(default_factory=set)

    def report(self, kind: str, line: int, message: str) -> None:
        if kind not in self.reported:
            self.reported.add(kind)
            self.problems.append(Problem(f"{self.file.display}:{line}", message))


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
    if _too_deep(text):
        state.report("deep", line_no, f"JSON nested more than {MAX_JSON_DEPTH} levels deep; read as plain text")
    if len(text) <= EXCERPT_LIMIT:
        record = LogRecord.unparsed(text, state.file, line_no, reference)
    else:
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
