"""Log parsing and the single-pass scanner, on the formats Argo components and kubectl write."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from argo_doctor.model import Problem
from argo_doctor.sources import logs
from argo_doctor.sources.logs import (
    LogFile,
    LogRecord,
    LogSignature,
    ScanStats,
    logfmt_fields,
    parse_line,
    scan_logs,
)

REF = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
FILE = LogFile(Path("/dev/null"), "logs/argocd/p/c.log", "argocd", "p", "c")
MISS = LogSignature("miss", b"manifest cache miss", re.compile(r'manifest cache miss: (?P<key>[^"\s]+)'))


def test_kubectl_timestamp_prefix_and_logrus_text() -> None:
    rec = parse_line(
        '2026-11-20T15:02:55.123456789Z time="2026-11-20T15:02:55Z" level=info '
        'msg="manifest cache miss: a/b" dir="/tmp/_argocd-repo/x y" execID=abc12',
        FILE, 7, REF,
    )
    assert rec.time == datetime(2026, 11, 20, 15, 2, 55, 123456, tzinfo=UTC)
    assert (rec.level, rec.message) == ("info", "manifest cache miss: a/b")
    assert rec.fields["dir"] == "/tmp/_argocd-repo/x y" and rec.fields["execID"] == "abc12"
    assert rec.location == "logs/argocd/p/c.log:7"


def test_logrus_time_in_another_zone_becomes_utc() -> None:
    rec = parse_line('time="2026-11-20T17:02:57+02:00" level=warning msg="x"', FILE, 1, REF)
    assert rec.time == datetime(2026, 11, 20, 15, 2, 57, tzinfo=UTC) and rec.level == "warning"


def test_logrus_json() -> None:
    rec = parse_line(
        '{"application":"argocd/guestbook","level":"info","msg":"Reconciliation completed",'
        '"time":"2026-11-20T15:02:58Z","time_ms":12.5}', FILE, 1, REF,
    )
    assert rec.message == "Reconciliation completed" and rec.fields["application"] == "argocd/guestbook"
    assert rec.fields["time_ms"] == "12.5" and rec.time == datetime(2026, 11, 20, 15, 2, 58, tzinfo=UTC)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("E1120 14:02:57.409455   1 reflector.go:138] failed", datetime(2026, 11, 20, 14, 2, 57, 409455, tzinfo=UTC)),
        # a December line in a bundle collected in January belongs to the previous year
        ("I1231 23:59:59.000001 1 x.go:1] y", datetime(2025, 12, 31, 23, 59, 59, 1, tzinfo=UTC)),
    ],
)
def test_klog_lines(line: str, expected: datetime) -> None:
    reference = REF if expected.month == 11 else datetime(2026, 1, 2, tzinfo=UTC)
    rec = parse_line(line, FILE, 1, reference)
    assert rec.time == expected
    assert rec.fields["caller"] in ("reflector.go:138", "x.go:1")


def test_plain_text_keeps_best_timestamp() -> None:
    assert parse_line("2026-11-20 15:00:01,250 INFO start", FILE, 1, REF).time == datetime(
        2026, 11, 20, 15, 0, 1, 250000, tzinfo=UTC
    )
    assert parse_line("2026/11/20 14:23:45 fatal: config missing", FILE, 1, REF).time == datetime(
        2026, 11, 20, 14, 23, 45, tzinfo=UTC
    )
    assert parse_line("panic: open /etc/config.yaml: no such file", FILE, 1, REF).time is None


def _scan(path: Path, sigs: list[LogSignature]) -> tuple[list[tuple[int, str]], list[Problem], ScanStats]:
    seen: list[tuple[int, str]] = []
    problems: list[Problem] = []
    stats = ScanStats()

    def dispatch(sig: LogSignature, rec: LogRecord, match: re.Match[str] | None) -> None:
        seen.append((rec.line, match.group("key") if match else rec.message))

    lf = LogFile(path, "repo-server.log", "argocd", "p", "c")
    scan_logs([(lf, sigs)], dispatch, problems, REF, stats, workers=1)
    return seen, problems, stats


def test_line_numbers_are_exact_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "CHUNK_SIZE", 97)  # tiny chunks: every line straddles a boundary somewhere
    lines = [f'time="2026-11-20T15:00:{i % 60:02d}Z" level=info msg="manifest cache hit: k{i}"' for i in range(300)]
    for n in (3, 150, 299):
        lines[n - 1] = f'time="2026-11-20T15:00:00Z" level=info msg="manifest cache miss: key{n}"'
    path = tmp_path / "r.log"
    path.write_text("\n".join(lines))  # no trailing newline on the last line
    seen, problems, stats = _scan(path, [MISS])
    assert seen == [(3, "key3"), (150, "key150"), (299, "key299")]
    assert problems == [] and stats.bytes == path.stat().st_size


def test_huge_line_binary_junk_and_bad_utf8_never_stop_the_scan(tmp_path: Path) -> None:
    path = tmp_path / "r.log"
    with path.open("wb") as out:
        out.write(b'time="2026-11-20T15:00:00Z" level=info msg="manifest cache miss: first"\n')
        out.write(b"x" * (10 << 20) + b" manifest cache miss: inhuge\n")  # 10 MB single line, needle at its end
        out.write(b"\x00\x01\xfe\xff junk \x00 bytes\n")
        out.write(b'time="2026-11-20T15:00:01Z" level=error msg="manifest cache miss: caf\xe9"\n')
        out.write(b'time="2026-11-20T15:00:02Z" level=info msg="manifest cache miss: last"\n')
    seen, problems, _ = _scan(path, [MISS])
    # the needle sits past the first MiB of the 10 MB line 2: not read, and said so
    assert seen == [(1, "first"), (4, "caf\ufffd"), (5, "last")]
    by_kind = {p.message.split()[0]: p.location for p in problems}
    assert by_kind["line"] == "repo-server.log:2"  # "line longer than 1 MiB"
    assert by_kind["binary"] == "repo-server.log:3"
    assert by_kind["log"] == "repo-server.log:4"  # "log line is not valid UTF-8"


def test_byte_range_of_a_shared_file(tmp_path: Path) -> None:
    path = tmp_path / "logs.txt"
    head = b"==== START logs for container a of pod ns/p ====\n"
    body = b'time="2026-11-20T15:00:00Z" msg="manifest cache miss: in-a"\n'
    path.write_bytes(head + body + b"manifest cache miss: outside\n")
    lf = LogFile(path, "ns/p/logs.txt", "ns", "p", "a", False, len(head), len(head) + len(body), 2)
    seen: list[int] = []
    scan_logs([(lf, [MISS])], lambda s, r, m: seen.append(r.line), [], REF, ScanStats(), workers=1)
    assert seen == [2]


def test_parallel_pieces_give_the_same_lines_as_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_pool = logs.worker_pool
    monkeypatch.setattr(logs, "PIECE_SIZE", 4096)  # many line-aligned pieces per file
    monkeypatch.setattr(logs, "PARALLEL_THRESHOLD", 0)
    files = []
    for f in range(3):
        line = '{{"level":"info","msg":"manifest cache {what}: {key}","time":"2026-11-20T15:00:00Z"}}'
        lines = [line.format(what="hit", key=f"{f}-{i}") for i in range(2000)]
        for n in range(7, 2000, 191):
            lines[n - 1] = line.format(what="miss", key=f"{f}-{n}")
        path = tmp_path / f"{f}.log"
        path.write_text("\n".join(lines) + "\n")
        files.append(LogFile(path, f"{f}.log", "argocd", f"p{f}", "c"))

    def collect(workers: int) -> list[tuple[str, int]]:
        seen: list[tuple[str, int]] = []
        scan_logs([(lf, [MISS]) for lf in files], lambda s, r, m: seen.append((r.location, r.line)), [], REF,
                  ScanStats(), workers=workers)
        return seen

    pools: list[int] = []
    monkeypatch.setattr(logs, "worker_pool", lambda n: pools.append(n) or real_pool(n))
    expected = [(f"{f}.log:{n}", n) for f in range(3) for n in range(7, 2000, 191)]
    assert collect(1) == expected and pools == []
    assert collect(2) == expected and pools == [2]  # the workers of sources.workers (tests/sources/test_workers.py)


def test_impossible_dates_give_no_time_instead_of_an_error() -> None:
    assert parse_line("E0230 10:00:00.000000 1 x.go:1] boom", FILE, 1, REF).time is None
    assert parse_line('time="0001-01-01T00:00:00+01:00" level=info msg="x"', FILE, 1, REF).time is None


def test_logfmt_fields_as_a_plain_key_value_regex_reads_them() -> None:
    """The linear scanner gives what `findall` of the obvious regex gives, on lines built from the
    characters that matter (keys, `=`, quotes, escapes, blanks, non-ASCII word characters)."""
    reference = re.compile(r'([A-Za-z_][\w.\-/]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)')

    def expected(line: str) -> dict[str, str]:
        return {key: logs._unquote(value) for key, value in reference.findall(line)}

    rng = random.Random(8)
    alphabet = 'ab_9.-/="\\ \tкé√x\n'
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert logfmt_fields(line) == expected(line), line
    line = ('time="2026-11-20T15:02:55Z" level=info msg="manifest cache miss: a \\"b\\"" dir="/tmp/x y" '
            '9x=no k=v=w empty= q="open')
    assert logfmt_fields(line) == expected(line) == {
        "time": "2026-11-20T15:02:55Z", "level": "info", "msg": 'manifest cache miss: a "b"', "dir": "/tmp/x y",
        "x": "no", "k": "v=w", "empty": "", "q": ""}


HOSTILE_LINES = {
    "one token": "a" * (1 << 20),
    "logfmt, one token": "level=error msg=failed " + "a" * (1 << 20),
    "logfmt, an open quote": 'level=error msg="' + "a" * (1 << 20),
    "logfmt, open quotes": "level=" + 'k="' * (1 << 18),
    "logfmt, escapes": "level=" + 'k="\\' * (1 << 18),
    "logfmt, digits then =": "time=" + "9" * (1 << 20) + "=",
    "logfmt, fields": "level=" + "a=b " * (1 << 18),
    "klog, no bracket": "I1120 10:00:00.000001 1 " + "a" * (1 << 20),
    "klog, blanks": "I1120 10:00:00.1 " + " " * (1 << 20),
    "digits": "1" * (1 << 20),
    "dates": "2026-11-20T" * (1 << 16),
    "json": "{" + '"a":' * (1 << 18),
}


def test_one_mib_lines_of_hostile_shapes_parse_in_linear_time() -> None:
    """Each shape at 1 MiB, then every signature regex on 1 MiB of its needle repeated: well under a
    second each in linear time, hours if anything is quadratic. A child process with a generous timeout is the
    safety net; nothing here measures time."""
    code = (
        "import sys\n"
        "from datetime import UTC, datetime\n"
        "from pathlib import Path\n"
        "from argo_doctor import knowledge\n"
        "from argo_doctor.sources.logs import LogFile, parse_line\n"
        "from tests.sources.test_logs import HOSTILE_LINES\n"
        "signatures = [s for s in knowledge.log_signatures().values() if s.pattern is not None]\n"
        "for name, line in HOSTILE_LINES.items():\n"
        "    record = parse_line(line, LogFile(Path('x.log'), 'x.log', 'ns', 'p', 'c'), 1, datetime.now(UTC))\n"
        "    print(name, len(record.fields))\n"
        "for sig in signatures:  # the needle again and again, each time without the rest of the pattern\n"
        "    unit = sig.needle.decode() + 'a' * 40\n"
        "    for line in (unit * ((1 << 20) // len(unit)), sig.needle.decode() * ((1 << 20) // len(sig.needle))):\n"
        "        sig.pattern.search(line)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0, done.stderr
    assert [line.rsplit(" ", 1)[0] for line in done.stdout.splitlines()] == list(HOSTILE_LINES)


def test_a_fifo_in_place_of_a_log_is_refused_without_blocking(tmp_path: Path) -> None:
    """In a child process with a timeout, so that a blocking open fails the test instead of hanging it."""
    fifo = tmp_path / "repo-server.log"
    os.mkfifo(fifo)
    code = (
        "import re, sys; from datetime import UTC, datetime; from pathlib import Path\n"
        "from argo_doctor.sources.logs import LogFile, LogSignature, ScanStats, scan_logs\n"
        "problems = []\n"
        "sig = LogSignature('miss', b'manifest cache miss')\n"
        "lf = LogFile(Path(sys.argv[1]), 'repo-server.log', 'argocd', 'p', 'c')\n"
        "scan_logs([(lf, [sig])], lambda *a: None, problems, datetime.now(UTC), ScanStats(), workers=1)\n"
        "print(*(f'{p.location}: {p.message}' for p in problems), sep='\\n')\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["repo-server.log: cannot read: not a regular file (a FIFO); skipped"]


LAZY_LINES = [
    '2026-11-20T15:02:55.123456789Z {"level":"error","msg":"boom","time":"2026-11-20T15:02:50Z","n":[1e2]}',
    '2026-11-20T15:02:55Z time="2026-11-20T15:02:50Z" level=info msg="a \\"b\\"\\n" k=v',
    "2026-11-20T15:02:55Z I1120 15:02:50.000001 1 x.go:1] klog time wins",
    "2026-11-20T15:02:55Z E0230 10:00:00.000000 1 x.go:1] impossible klog date",
    "2026-11-21T00:00:01+01:00 plain text 2026-01-01T00:00:00Z",
    "2026-13-45T99:99:99Z {\"time\":\"2026-11-20T15:02:50Z\"}",
    "2026-11-20T15:02:55Z {not json",
    "2026-11-20T15:02:55Z ",
    '{"ts":"2026-11-20T15:02:50+02:00","severity":"WARNING","message":"x"}',
    'level=error msg=x time="2026-11-20T15:02:50Z" time=bad',
    "W1120 15:02:50.1 7 y.go:2] no prefix",
    "no time at all",
    "",
    '{"time":[1],"msg":"a time that is not text"}',
    '{"x":1e999,"time":"2026-11-20T15:02:50Z"}',
    '{"level":"info","ts":"2026-11-20T15:02:50+02:00","time":"2026-11-20T15:02:51Z"}',
    '{"msg":"no time field 2026-11-20T15:02:50Z"}',
    '{broken json 2026-11-20T15:02:50Z',
    'time=a msg="time=b"',
    'time="2026-11-20T15:02:50Z" level=info msg="x" time="2026-11-20T15:02:51Z"',
    'level=info time="2026-11-20T15:02:50\\"Z" msg=y',
    'time=2026-11-20T15:02:50Z"quoted" msg=z',
]


@pytest.mark.parametrize("line", LAZY_LINES)
@pytest.mark.parametrize("time_first", [True, False])
def test_a_line_parsed_when_read_is_the_line_parse_line_makes(line: str, time_first: bool) -> None:
    eager = parse_line(line, FILE, 3, REF)
    lazy = LogRecord.unparsed(line, FILE, 3, REF)
    assert not lazy.parsed
    if time_first:
        assert lazy.time == eager.time
    assert (lazy.level, lazy.message, dict(lazy.fields), lazy.time) == (
        eager.level, eager.message, dict(eager.fields), eager.time)
    assert lazy == eager and repr(lazy) == repr(eager) and lazy.parsed


def test_the_kubectl_prefix_gives_the_time_without_parsing_the_rest() -> None:
    for line in LAZY_LINES[:2]:
        lazy = LogRecord.unparsed(line, FILE, 3, REF)
        assert lazy.time == datetime(2026, 11, 20, 15, 2, 55, 123456 if ".123" in line else 0, tzinfo=UTC)
        assert not lazy.parsed
    klog = LogRecord.unparsed(LAZY_LINES[2], FILE, 3, REF)
    assert klog.time == datetime(2026, 11, 20, 15, 2, 50, 1, tzinfo=UTC) and klog.parsed


def test_a_trimmed_record_keeps_the_line_and_time() -> None:
    record = LogRecord.unparsed(LAZY_LINES[1], FILE, 3, REF).trimmed("short", {"k": "v"})
    assert (record.message, dict(record.fields), record.level) == ("short", {"k": "v"}, "info")
    assert record.raw == LAZY_LINES[1]
    assert record.time == datetime(2026, 11, 20, 15, 2, 55, tzinfo=UTC) and record.location == "logs/argocd/p/c.log:3"


def test_scanned_lines_are_the_lines_parse_line_makes(tmp_path: Path) -> None:
    """Short lines reach the rules unparsed, long ones parsed: both as `parse_line` reads them."""
    path = tmp_path / "c.log"
    lines = [*LAZY_LINES, "2026-11-20T15:02:55Z level=error msg=" + "x" * 3000]
    path.write_text("".join(f"{line} needle\n" for line in lines), encoding="utf-8")
    got: list[LogRecord] = []
    scan_logs([(LogFile(path, "c.log", "ns", "p", "c"), [LogSignature("n", b"needle")])],
              lambda sig, record, match: got.append(record), [], REF, ScanStats(), workers=1)
    log_file = LogFile(path, "c.log", "ns", "p", "c")
    assert got == [parse_line(f"{line} needle", log_file, n, REF) for n, line in enumerate(lines, start=1)]


def test_a_json_line_nested_too_deeply_is_one_problem_and_the_scan_goes_on(tmp_path: Path) -> None:
    """A logrus JSON line 1,000 levels deep (5 KB) is read as plain text and reported once; the lines after it,
    and lines whose strings only look deep, are read as JSON."""
    deep = '{"level":"error","msg":"manifest cache miss: deep","x":' + '{"a":' * 1000 + "1" + "}" * 1001
    looks_deep = '{"level":"info","msg":"manifest cache miss: strings","x":"' + "{[" * 1000 + '"}'
    path = tmp_path / "r.log"
    path.write_text("\n".join([
        f"2026-11-20T15:00:00.000000001Z {deep}",
        f"2026-11-20T15:00:01.000000001Z {deep}",
        f"2026-11-20T15:00:02.000000001Z {looks_deep}",
        '2026-11-20T15:00:03.000000001Z {"level":"info","msg":"manifest cache miss: after"}',
    ]) + "\n")
    records: list[LogRecord] = []
    problems: list[Problem] = []
    scan_logs([(LogFile(path, "repo-server.log", "argocd", "p", "c"), [LogSignature("n", b"manifest cache miss")])],
              lambda sig, rec, match: records.append(rec), problems, REF, ScanStats(), workers=1)
    assert [(r.line, r.level, r.message[:30]) for r in records] == [
        (1, None, deep[:30]), (2, None, deep[:30]), (3, "info", "manifest cache miss: strings"),
        (4, "info", "manifest cache miss: after")]
    assert problems == [Problem("repo-server.log:1", "JSON nested more than 256 levels deep; read as plain text")]
    assert parse_line(deep, FILE, 1, REF).message == deep


def _hostile_log(path: Path) -> None:
    """Lines as the Argo components write them, with what a byte search can trip on: needles that overlap or repeat
    on a line, a needle cut by a chunk boundary, NUL bytes, a line past MAX_LINE, no final line break."""
    rows = []
    for i in range(400):
        rows.append(f'time="2026-11-20T15:00:{i % 60:02d}Z" level=info msg="manifest cache hit: k{i}"'.encode())
        if i % 7 == 0:
            rows.append(f'time="2026-11-20T15:00:00Z" level=error msg="manifest cache miss: k{i} level=error '
                        f'manifest cache miss: again"'.encode())
        if i % 53 == 0:
            rows.append(b'{"level":"error","msg":"rpc error: \x00 manifest cache miss: nul","time":"x"}')
    rows.append(b"manifest cache miss: " + b"y" * (2 * logs.MAX_LINE) + b" level=error")
    rows.append(b"level=errorlevel=error manifest cache miss: end")
    path.write_bytes(b"\n".join(rows))


NEEDLES = (b"manifest cache miss: ", b"level=error", b"cache miss", b'"level":"error"', b"error", b"absent")


@pytest.mark.skipif(logs._native() is None, reason="the native engine is checked where it installs (next test)")
@pytest.mark.parametrize("chunk", [97, 4096, 1 << 20])
def test_the_native_search_finds_what_the_search_needle_by_needle_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    path = tmp_path / "r.log"
    _hostile_log(path)
    monkeypatch.setattr(logs, "CHUNK_SIZE", chunk)
    native = logs._prefilter(path, 0, None, NEEDLES)
    monkeypatch.setattr(logs, "_database", lambda needles: None)
    by_needle = logs._prefilter(path, 0, None, NEEDLES)
    assert native == by_needle
    assert len(native.hits) == 58 + 8 + 2 and {len(found) for _, _, found in native.hits} == {2, 4}
    assert {kind for kind, _ in native.flags} == {"binary", "long"}  # the long line's head only is searched


def test_the_native_engine_is_there_where_wheels_are() -> None:
    """CI's platform has a wheel of the native engine: the search it runs is the one users get, not the fallback."""
    import platform

    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert logs._native() is not None and logs._database((b"needle",)) is not None
    assert logs._database((b"a\x00b",)) is None and logs._database(()) is None  # what it cannot take as given


@pytest.mark.skipif(logs._native() is None, reason="the native engine is checked where it installs")
def test_a_range_made_of_needles_is_searched_needle_by_needle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each native match is a call into Python: a range denser in matches than MATCHES_PER_KIB goes to the search
    that skips to the end of a line at its first match, and finds the same lines."""
    path = tmp_path / "dense.log"
    path.write_bytes(b"\n".join([b"ab" * 5000, b"x" * 100, b"ab ok"] * 50) + b"\n")
    calls: list[int] = []
    real = logs._hits
    monkeypatch.setattr(logs, "_hits", lambda buf, begin, end, needles: calls.append(end - begin) or real(
        buf, begin, end, needles))
    raw = logs._prefilter(path, 0, None, (b"ab",))
    assert calls and [line for line, _, _ in raw.hits] == [n for n in range(150) if n % 3 != 1]
    calls.clear()
    path.write_bytes(b"\n".join([b"ab" + b"x" * 100] * 50) + b"\n")
    assert len(logs._prefilter(path, 0, None, (b"ab",)).hits) == 50 and calls == []
