"""Fuzz the readers of hostile input: object files, log lines and the log pass, audit logs, tarballs.

Properties: a reader never raises anything but its documented errors (none, except `InputError` for an
archive that cannot be read at all), never hangs, and every problem it reports names the file it is
about; what it yields is well-formed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from argo_doctor.errors import InputError
from argo_doctor.model import Problem
from argo_doctor.sources import bundle
from argo_doctor.sources.audit import AuditEvent, AuditFile, read_audit_file
from argo_doctor.sources.logs import LogFile, LogRecord, LogSignature, ScanStats, parse_line, scan_logs
from argo_doctor.sources.objects import load_object_file, read_object_file
from tests.fuzz.conftest import FUZZ, no_hang

REFERENCE = datetime(2026, 11, 20, 14, 30, tzinfo=UTC)
OBJECT_TOKENS = [
    b"apiVersion: v1\n", b"kind: ConfigMap\n", b"kind: List\n", b"kind: Secret\n", b"items:\n", b"metadata:\n",
    b"  name: x\n", b"data:\n", b"stringData:\n", b"---\n", b"- ", b"  ", b": ", b", ", b"&a ", b"*a", b"<<: *a\n",
    b"[", b"]", b"{", b"}", b'"', b"'", b"\\", b"\n", b"\t", b"\r", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"? ",
    b"|\n", b">-\n", b"#", b"%YAML 1.1\n", b"!!binary ", b"!!python/object:os.system ", b"!!str ", b"1e999",
    b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}', b'"items": [', b"null", b"~",
]
LOG_TOKENS = [
    "time=", "level=", "msg=", "level=error", '"', "\\", "=", " ", "a", "b=c", 'msg="x \\"y\\" z"', "\t",
    "2026-11-20T14:20:00Z ", "2026-11-20T14:20:00.123456789+02:00 ", "E1120 14:20:00.123456    1 x.go:1] ",
    '{"level":"error","msg":"m","time":"2026-11-20T14:20:00Z"}', "{", "}", "\x00", "\r", "\x1b[2J", "é", "\ud7ff",
]
NEEDLES = (b"needle-a", b"level=error")
ABSOLUTE = "/tmp/argo-doctor-fuzz-escaped.yaml"
"""An absolute entry name: extraction must never write there."""


def _joined(tokens: list[bytes], max_size: int) -> st.SearchStrategy[bytes]:
    """Bytes made of `tokens` and short random bytes, in any order."""
    return st.lists(st.one_of(st.sampled_from(tokens), st.binary(max_size=6)), max_size=max_size).map(b"".join)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the files of the examples (function-scoped fixtures do not mix with @given)."""
    return tmp_path_factory.mktemp("fuzz")


def _assert_located(problems: list[Problem], display: str) -> None:
    for problem in problems:
        assert problem.location.startswith(display), problem
        assert problem.message.strip(), problem


# --- object files ------------------------------------------------------------------------------------

OBJECT_FILES = st.one_of(_joined(OBJECT_TOKENS, 300), st.binary(max_size=2000))


@FUZZ
@given(data=OBJECT_FILES, suffix=st.sampled_from([".yaml", ".json"]))
def test_object_reader(scratch: Path, data: bytes, suffix: str) -> None:
    """`read_object_file` and the worker around it (redaction, encoding) report problems, never raise."""
    path = scratch / f"fuzz{suffix}"
    path.write_bytes(data)
    display = f"objects/fuzz{suffix}"
    problems: list[Problem] = []
    with no_hang():
        objects = list(read_object_file(path, display, problems))
        load = load_object_file((path, display))
    for obj in objects:
        assert isinstance(obj.data, dict) and obj.location.startswith(display)
    assert all(o.location.startswith(display) for o in load.objects)
    _assert_located(problems, display)
    _assert_located(load.problems, display)


# --- logs --------------------------------------------------------------------------------------------

LOG_LINES = st.one_of(
    st.lists(st.one_of(st.sampled_from(LOG_TOKENS), st.text(max_size=4)), max_size=60).map("".join),
    st.integers(0, 20_000).map(lambda n: 'time="2026-11-20T14:20:00Z" level=error msg=x ' + "k" * n),
    st.text(max_size=300),
)
LOG_FILE = LogFile(Path("/nonexistent"), "logs/ns/pod/c.log", "ns", "pod", "c")


@FUZZ
@given(text=LOG_LINES, line=st.integers(1, 1 << 40))
def test_log_line_parser(text: str, line: int) -> None:
    """`parse_line` parses anything, in linear time, and every time it finds is UTC."""
    with no_hang():
        record = parse_line(text, LOG_FILE, line, REFERENCE)
    assert isinstance(record, LogRecord) and record.line == line and record.file is LOG_FILE
    assert record.time is None or record.time.utcoffset() == timedelta(0)
    assert isinstance(record.message, str) and all(isinstance(v, str) for v in record.fields.values())


LOG_CONTENT = st.lists(
    st.one_of(
        _joined([t.encode() for t in LOG_TOKENS] + list(NEEDLES), 40),
        st.integers(0, 8_000).map(lambda n: b"needle-a " + b"x" * n),
    ),
    max_size=40,
).map(b"\n".join)


@FUZZ
@given(content=LOG_CONTENT)
def test_log_pass(scratch: Path, content: bytes) -> None:
    """The log pass dispatches every line that holds a needle, once, with its line number; problems name
    the file."""
    path = scratch / "c.log"
    path.write_bytes(content)
    log_file = LogFile(path, "logs/ns/pod/c.log", "ns", "pod", "c")
    signatures = [LogSignature(f"fuzz.{i}", needle) for i, needle in enumerate(NEEDLES)]
    seen: list[tuple[str, int]] = []
    problems: list[Problem] = []
    with no_hang():
        scan_logs([(log_file, signatures)], lambda sig, record, match: seen.append((sig.id, record.line)), problems,
                  REFERENCE, ScanStats(), workers=1)
    expected = [(f"fuzz.{i}", number) for number, line in enumerate(content.split(b"\n"), 1)
                for i, needle in enumerate(NEEDLES) if needle in line]
    assert sorted(seen) == sorted(expected)
    _assert_located(problems, "logs/ns/pod/c.log")


# --- audit logs --------------------------------------------------------------------------------------

AUDIT_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["Event", "EventList", 1]),
        "auditID": st.text(max_size=10),
        "stage": st.sampled_from(["ResponseComplete", "RequestReceived", "", None]),
        "verb": st.sampled_from(["patch", "update", "get", 7]),
        "user": st.one_of(st.fixed_dictionaries({"username": st.text(max_size=60)}), st.text(max_size=5)),
        "objectRef": st.fixed_dictionaries({}, optional={"resource": st.text(max_size=10),
                                                         "name": st.text(max_size=10)}),
        "requestReceivedTimestamp": st.one_of(st.sampled_from(["2026-11-20T14:20:00.123456Z", "yesterday"]),
                                              st.text(max_size=30)),
        "annotations": st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3),
    },
)


AUDIT_JUNK = _joined([b"{", b"}", b'"kind":"Event"', b"\x00", b"\xff"], 20)
AUDIT_CONTENT = st.lists(
    st.one_of(AUDIT_FIELDS.map(lambda fields: json.dumps(fields).encode()), AUDIT_JUNK),
    max_size=30,
).map(b"\n".join)


@FUZZ
@given(content=AUDIT_CONTENT, packing=st.sampled_from(["plain", "gzip", "cut", "junk"]), cut=st.integers(0, 1000))
def test_audit_reader(scratch: Path, content: bytes, packing: str, cut: int) -> None:
    """`read_audit_file` reads plain and damaged gzip audit logs, reporting problems, never raising."""
    packed = content if packing == "plain" else gzip.compress(content)
    if packing == "cut":
        packed = packed[: min(cut, len(packed))]
    elif packing == "junk":
        packed += content[:cut] or b"junk"
    path = scratch / ("audit.log" if packing == "plain" else "audit.log.gz")
    path.write_bytes(packed)
    display = f"audit/{path.name}"
    problems: list[Problem] = []
    with no_hang():
        events = list(read_audit_file(AuditFile(path, display), problems))
    for event in events:
        assert isinstance(event, AuditEvent) and event.location.startswith(display)
        assert event.received is None or event.received.utcoffset() == timedelta(0)
    _assert_located(problems, display)


# --- tarballs ----------------------------------------------------------------------------------------

NAMES = st.one_of(
    st.sampled_from([
        "bundle.yaml", "objects", "objects/a.yaml", "objects/a.yaml/b.yaml", "objects/b.json", "logs/ns/pod/c.log",
        "audit/a.log", "../../escaped.yaml", "objects/../../../escaped.yaml", ABSOLUTE, "./objects/c.yaml",
        "objects/" + "n" * 300 + ".yaml", "objects//d.yaml", "top/objects/e.yaml", ".hidden/f.yaml",
    ]),
    st.text(alphabet="abc./-_", min_size=1, max_size=12),
)
TYPES = st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE,
                         tarfile.BLKTYPE, tarfile.FIFOTYPE, tarfile.CONTTYPE])
MEMBER = st.tuples(NAMES, TYPES, NAMES, _joined(OBJECT_TOKENS, 20))
TAR = st.tuples(
    st.lists(MEMBER, max_size=8), st.sampled_from(["tar", "tgz"]), st.sampled_from(["whole", "cut", "junk"]),
    st.integers(0, 20_000),
)


def _tar(members: list[tuple[str, bytes, str, bytes]], form: str, damage: str, at: int) -> bytes:
    """The archive of `members` (name, type, link name, data), packed as `form`, with `damage` at `at`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, link, data in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, link, 0o755
            info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.CONTTYPE) else 0
            tar.addfile(info, io.BytesIO(data) if info.size else None)
    raw = buffer.getvalue()
    if damage == "junk":
        raw = raw[:at] + bytes(range(256)) * 2 + raw[at:]
    packed = gzip.compress(raw) if form == "tgz" else raw
    return packed[: at % (len(packed) + 1)] if damage == "cut" else packed


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            yield Path(folder) / name


@FUZZ
@given(tar=TAR)
def test_tarball_extraction(scratch: Path, tar: tuple[list[tuple[str, bytes, str, bytes]], str, str, int]) -> None:
    """`bundle.load` on any archive: a Snapshot or InputError; nothing written outside the one extraction
    folder in the working directory, and in it only regular files, folders and links that stay inside."""
    members, form, damage, at = tar
    with tempfile.TemporaryDirectory(dir=scratch) as sandbox:
        archive = Path(sandbox) / f"fuzz.{form}"
        archive.write_bytes(_tar(members, form, damage, at))
        workdir = Path(sandbox) / "work"
        workdir.mkdir()
        with no_hang():
            try:
                snap = bundle.load([archive], workdir)
            except InputError as exc:
                assert str(exc).strip()
                snap = None
        assert sorted(p.name for p in Path(sandbox).iterdir()) == ["fuzz." + form, "work"]
        assert not list(scratch.glob("escaped*")) and not Path(ABSOLUTE).exists()
        assert all(p.name.startswith("bundle-") and p.is_dir() for p in workdir.iterdir()), list(workdir.iterdir())
        for path in _walk(workdir):
            mode = path.lstat().st_mode
            assert stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode), path
            if stat.S_ISLNK(mode):  # realpath, unlike Path.resolve, accepts a link loop (which stays inside)
                assert Path(os.path.realpath(path)).is_relative_to(os.path.realpath(workdir)), os.readlink(path)
        for problem in snap.problems if snap is not None else []:
            assert problem.location.strip() and problem.message.strip(), problem
            assert not problem.location.startswith("/") or problem.location.startswith(str(archive)), problem
