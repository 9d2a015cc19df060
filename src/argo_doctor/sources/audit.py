"""kube-apiserver audit logs: one audit.k8s.io/v1 Event JSON per line, streamed lazily."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from argo_doctor.model import Problem
from argo_doctor.sources.files import open_input
from argo_doctor.timeutil import parse_time


@dataclass(frozen=True, slots=True)
class AuditFile:
    """One audit log file (plain or gzip); `root` is the input folder it must stay inside."""

    path: Path
    display: str
    root: Path | None = None


class _ObjectRef(msgspec.Struct, omit_defaults=True):
    resource: str = ""
    namespace: str = ""
    name: str = ""
    apiGroup: str = ""
    apiVersion: str = ""
    subresource: str = ""


class _User(msgspec.Struct, omit_defaults=True):
    username: str = ""
    groups: list[str] = []
    extra: Any = None
    """`user.extra`: a map of string lists (e.g. the pod a ServiceAccount token is bound to); anything else in it
    is dropped, not a reason to skip the record."""


class _Status(msgspec.Struct, omit_defaults=True):
    code: int = 0
    status: str = ""
    reason: str = ""
    message: str = ""


class _RawAuditEvent(msgspec.Struct, omit_defaults=True):
    auditID: str = ""
    stage: str = ""
    requestURI: str = ""
    verb: str = ""
    user: _User = msgspec.field(default_factory=_User)
    userAgent: str = ""
    objectRef: _ObjectRef | None = None
    responseStatus: _Status | None = None
    requestReceivedTimestamp: str = ""
    stageTimestamp: str = ""
    annotations: dict[str, str] = {}
    kind: str = ""


_DECODER = msgspec.json.Decoder(_RawAuditEvent)
BLOCK = 1 << 20
MAX_AUDIT_LINE = 16 << 20
"""An event is a few KiB, a RequestResponse one with its objects a few MiB at most (the API server takes
request bodies of up to 3 MiB); a longer line is skipped."""
MAX_GZIP_RATIO = 200
"""Decompressed bytes per compressed byte read so far. Audit JSON compresses 15 to 25 times (each event has
its own ID and times); deflate reaches 1032 on anything that repeats verbatim, which a gzip bomb does and no
audit log does."""
GZIP_RATIO_FLOOR = 16 << 10
"""The ratio is taken over at least this many compressed bytes: the first 3.2 MiB always pass."""
MAX_GZIP_BYTES = 16 << 30
"""Decompressed bytes per gzip file. The API server rotates its log at --audit-log-maxsize (megabytes,
100 to 500 in practice); a file that expands past this would take longer to read than anyone waits."""
_EVENT_LINE = re.compile(rb"^[ \t\r\f\v]*+\{", re.M)
"""The start of a line whose first non-blank byte is `{`: only those can be events."""
_OTHER_LINE = re.compile(rb"^[ \t\r\f\v]*+[^\s{]", re.M)
"""The start of a line that is neither blank nor an event candidate."""
_BLANK_LINE = re.compile(rb"^[ \t\r\f\v]*+\n", re.M)


class GzipLimit(Exception):
    """A gzip file expands past a limit: the rest is not read."""


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audit record, with its source location."""

    audit_id: str
    stage: str
    request_uri: str
    verb: str
    username: str
    user_agent: str
    resource: str
    namespace: str
    name: str
    api_group: str
    api_version: str
    subresource: str
    code: int
    received: datetime | None
    annotations: dict[str, str]
    location: str
    extra: dict[str, list[str]] = field(default_factory=dict)
    """`user.extra`: authenticator-provided attributes, e.g. `authentication.kubernetes.io/pod-name`."""


@dataclass
class _Skipped:
    """Lines of one file that held no event: counted, and reported in one problem."""

    blank: int = 0
    bad: int = 0
    long: int = 0
    first: Problem | None = None
    """The first line that held something other than an event, and why it is not one."""
    first_blank: str = ""
    """Where the first blank line is."""

    def counts(self) -> str:
        """`N lines skipped (…)`, or "" when none were."""
        total = self.bad + self.long + self.blank
        parts = [f"{n:,} {what[n > 1]}" for n, what in (
            (self.bad, ("not an audit event", "not audit events")),
            (self.long, (f"over {_size(MAX_AUDIT_LINE)}",) * 2),
            (self.blank, ("blank",) * 2),
        ) if n]
        return f"{total:,} {'lines' if total > 1 else 'line'} skipped ({', '.join(parts)})" if total else ""

    def problem(self) -> Problem | None:
        """The one problem for the file's skipped lines, at the first of them."""
        if self.first is not None:
            alone = self.bad + self.long + self.blank == 1
            return self.first if alone else Problem(self.first.location, f"{self.first.message}; {self.counts()}")
        return Problem(self.first_blank, self.counts()) if self.blank else None


def read_audit_file(audit_file: AuditFile, problems: list[Problem]) -> Iterator[AuditEvent]:
    """Yield the audit events of one file (plain, or gzip when it ends in `.gz`).

    Lines that hold no event (blank, not JSON, not an event, over MAX_AUDIT_LINE) are skipped and
    reported in one problem per file, at the first of them. A gzip file is read while it expands less
    than MAX_GZIP_RATIO times and to at most MAX_GZIP_BYTES; past that, one problem says where it
    stopped. Only blocks and lines that start with `{` cost Python work, so a file of blank lines or
    junk is skipped at the speed of a byte search.
    """
    display = audit_file.display
    try:
        handle = open_input(audit_file.path, audit_file.root)
    except OSError as exc:
        problems.append(Problem(display, f"cannot read: {exc.strerror or exc}"))
        return
    skipped = _Skipped()
    line = 1  # the number of the line that starts at buf[0]
    with handle:
        # read1: a cut gzip loses at most what one read of it decompresses
        gz = gzip.GzipFile(fileobj=handle, mode="rb") if audit_file.path.suffix == ".gz" else None
        buf = bytearray()
        skipping = False  # inside a line over MAX_AUDIT_LINE
        try:
            for block in bounded_blocks(gz.read1 if gz is not None else handle.read, handle, gz is not None):
                if skipping:
                    end = block.find(b"\n")
                    if end < 0:
                        continue
                    skipping, line, block = False, line + 1, block[end + 1:]
                buf += block
                cut = buf.rfind(b"\n") + 1
                line = yield from _lines(buf, cut, line, display, skipped)
                del buf[:cut]
                if len(buf) > MAX_AUDIT_LINE:
                    _skip_long(skipped, f"{display}:{line}")
                    skipping = True
                    buf.clear()
            if buf and not skipping:
                buf += b"\n"  # the last line has no newline
                line = yield from _lines(buf, len(buf), line, display, skipped)
        except GzipLimit as exc:
            counts = skipped.counts()
            problems.append(Problem(f"{display}:{line}", f"{exc}; the rest of the file is skipped"
                                    + (f"; before it, {counts}" if counts else "")))
            return
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            problems.append(Problem(f"{display}:{line}", f"audit log cut short: {exc}"))
    found = skipped.problem()
    if found is not None:
        problems.append(found)


def _skip_long(skipped: _Skipped, location: str) -> None:
    skipped.long += 1
    skipped.first = skipped.first or Problem(location, f"audit event over {_size(MAX_AUDIT_LINE)}")


def bounded_blocks(read: Callable[[int], bytes], raw: BinaryIO, gz: bool) -> Iterator[bytes]:
    """The bytes `read` gives, in blocks; with `gz`, GzipLimit once they are more than MAX_GZIP_RATIO times what was
    read of the compressed file `raw` (from GZIP_RATIO_FLOOR) or more than MAX_GZIP_BYTES."""
    out = 0
    while block := read(BLOCK):
        out += len(block)
        if gz and out > MAX_GZIP_RATIO * max(raw.tell(), GZIP_RATIO_FLOOR):
            raise GzipLimit(f"gzip expands more than {MAX_GZIP_RATIO} times ({out:,} bytes out of the first "
                         f"{raw.tell():,} read), like a compression bomb")
        if gz and out > MAX_GZIP_BYTES:
            raise GzipLimit(f"gzip expands past {_size(MAX_GZIP_BYTES)}")
        yield block


def _lines(
    buf: bytearray, end: int, line: int, display: str, skipped: _Skipped
) -> Generator[AuditEvent, None, int]:
    """Decode the lines of buf[:end] (whole lines); return the number of the line after them."""
    pos = 0
    while pos < end:
        found = _EVENT_LINE.search(buf, pos, end)
        start = end if found is None else found.start()
        if start > pos:
            line = _count_skipped(buf, pos, start, line, display, skipped)
            pos = start
        if found is None:
            break
        stop = buf.find(b"\n", start, end)
        if stop - start > MAX_AUDIT_LINE:
            _skip_long(skipped, f"{display}:{line}")
        else:
            try:
                raw = _DECODER.decode(buf[start:stop])
            except (msgspec.DecodeError, RecursionError) as exc:  # msgspec recurses even into fields it skips
                skipped.bad += 1
                why = "JSON nested too deeply to read" if isinstance(exc, RecursionError) else str(exc)
                skipped.first = skipped.first or Problem(f"{display}:{line}", f"not an audit event: {why}")
            else:
                yield _event(raw, f"{display}:{line}")
        line += 1
        pos = stop + 1
    return line


def _count_skipped(buf: bytearray, pos: int, end: int, line: int, display: str, skipped: _Skipped) -> int:
    """Count the lines of buf[pos:end], none of which starts with `{`, with byte searches only; return the
    number of the line after them."""
    lines = buf.count(b"\n", pos, end)
    bad = sum(1 for _ in _OTHER_LINE.finditer(buf, pos, end))
    skipped.bad += bad
    skipped.blank += lines - bad
    if bad and skipped.first is None:
        other = _OTHER_LINE.search(buf, pos, end)
        assert other is not None
        text = bytes(buf[other.start():buf.find(b"\n", other.start(), end)])
        number = line + buf.count(b"\n", pos, other.start())
        skipped.first = Problem(f"{display}:{number}", _why_not(text))
    if lines > bad and not skipped.first_blank:
        blank = _BLANK_LINE.search(buf, pos, end)
        assert blank is not None
        number = line + buf.count(b"\n", pos, blank.start())
        skipped.first_blank = f"{display}:{number}"
    return line + lines


def _size(limit: int) -> str:
    return f"{limit >> 20:,} MiB" if limit % (1 << 20) == 0 else f"{limit:,} bytes"


def _why_not(text: bytes) -> str:
    """Why a line is not an audit event, in the decoder's words."""
    try:
        _DECODER.decode(text)
    except msgspec.DecodeError as exc:
        return f"not an audit event: {exc}"
    return "not an audit event"  # not reached: only lines that do not start with `{` come here


def _event(raw: _RawAuditEvent, location: str) -> AuditEvent:
    ref = raw.objectRef or _ObjectRef()
    status: Any = raw.responseStatus
    return AuditEvent(
        audit_id=raw.auditID,
        stage=raw.stage,
        request_uri=raw.requestURI,
        verb=raw.verb,
        username=raw.user.username,
        user_agent=raw.userAgent,
        resource=ref.resource,
        namespace=ref.namespace,
        name=ref.name,
        api_group=ref.apiGroup,
        api_version=ref.apiVersion,
        subresource=ref.subresource,
        code=status.code if status is not None else 0,
        received=parse_time(raw.requestReceivedTimestamp),
        annotations=raw.annotations,
        location=location,
        extra={str(key): [str(v) for v in values if isinstance(v, str)]
               for key, values in raw.user.extra.items() if isinstance(values, list)}
        if isinstance(raw.user.extra, dict) else {},
    )
