"""Audit logs: audit.k8s.io/v1 Event JSON lines, plain or gzip, with bad lines, bombs and special files."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from argo_doctor.model import Problem
from argo_doctor.sources import audit
from argo_doctor.sources.audit import AuditFile, read_audit_file

EVENT = {
    "kind": "Event",
    "apiVersion": "audit.k8s.io/v1",
    "level": "Metadata",
    "auditID": "6f2b9b1e-3f3e-4d8e-9a55-2f1d2c3b4a5e",
    "stage": "ResponseComplete",
    "requestURI": "/apis/extensions/v1beta1/ingresses?limit=500&resourceVersion=0",
    "verb": "list",
    "user": {
        "username": "system:serviceaccount:argocd:argocd-application-controller",
        "groups": ["system:authenticated"],
    },
    "sourceIPs": ["10.0.3.17"],
    "userAgent": "argocd-application-controller/v2.0.5 (linux/amd64) kubernetes/c8cd2f2",
    "objectRef": {"resource": "ingresses", "apiGroup": "extensions", "apiVersion": "v1beta1"},
    "responseStatus": {"metadata": {}, "code": 200},
    "requestReceivedTimestamp": "2021-08-02T09:14:03.118431Z",
    "stageTimestamp": "2021-08-02T09:14:03.125101Z",
    "annotations": {
        "authorization.k8s.io/decision": "allow",
        "k8s.io/deprecated": "true",
        "k8s.io/removed-release": "1.22",
    },
}


def _read(path: Path, root: Path | None = None) -> tuple[list, list[Problem]]:  # type: ignore[type-arg]
    problems: list[Problem] = []
    return list(read_audit_file(AuditFile(path, path.name, root), problems)), problems


def _events(count: int) -> list[str]:
    """`count` events as the API server writes them: each with its own ID and time."""
    lines = []
    for n in range(count):
        when = f"2021-08-02T09:{n // 60 % 60:02d}:{n % 60:02d}.{n * 7919 % 1000000:06d}Z"
        lines.append(json.dumps(EVENT | {"auditID": f"6f2b9b1e-3f3e-4d8e-{n:04x}-{n * 104729 % 16**12:012x}",
                                         "requestReceivedTimestamp": when, "stageTimestamp": when}))
    return lines


def _gzip_of(path: Path, unit: bytes, size: int) -> Path:
    """A gzip of `unit` repeated to `size` bytes, written without holding them: a compression bomb."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: with the gzip header
    block = unit * ((1 << 20) // len(unit))
    with path.open("wb") as out:
        for _ in range(size // len(block)):
            out.write(packer.compress(block))
        out.write(packer.flush())
    return path


def test_events_with_bad_lines_between(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    good = json.dumps(EVENT)
    path.write_text("\n".join([good, "not json", "[1, 2]", "", good, '{"user": "not-an-object"}']) + "\n")
    events, problems = _read(path)
    assert [e.location for e in events] == ["audit.log:1", "audit.log:5"]
    first = events[0]
    assert (first.verb, first.resource) == ("list", "ingresses")
    assert (first.api_group, first.api_version) == ("extensions", "v1beta1")
    assert first.received == datetime(2021, 8, 2, 9, 14, 3, 118431, tzinfo=UTC) and first.code == 200
    assert first.annotations["k8s.io/removed-release"] == "1.22"
    (problem,) = problems  # one per file, at the first line that is not an event, with the counts
    assert problem.location == "audit.log:2" and problem.message.startswith("not an audit event: JSON is malformed")
    assert problem.message.endswith("4 lines skipped (3 not audit events, 1 blank)")


def test_gzip_and_a_cut_gzip(tmp_path: Path) -> None:
    whole = tmp_path / "audit.log.gz"
    with gzip.open(whole, "wt") as out:
        out.write("\n".join(_events(2000)) + "\n")
    events, problems = _read(whole)
    assert len(events) == 2000 and problems == []
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    events, problems = _read(cut)
    assert 0 < len(events) < 2000
    assert len(problems) == 1 and "cut short" in problems[0].message


@pytest.mark.parametrize(("unit", "skipped"), [(b"\n", "blank"), (b"x\n", "not audit events"),
                                               (b"{\n", "not audit events"), (b" ", "")])
def test_a_gzip_bomb_stops_early_with_one_problem(tmp_path: Path, unit: bytes, skipped: str) -> None:
    """64 MiB of one byte pattern in 64 KB: reading stops where the ratio passes 200, said once."""
    bomb = _gzip_of(tmp_path / "audit.log.gz", unit, 64 << 20)
    events, problems = _read(bomb)
    (problem,) = problems
    assert events == [] and "like a compression bomb; the rest of the file is skipped" in problem.message
    assert skipped in problem.message
    line = int(problem.location.rsplit(":", 1)[1])
    assert line < (16 << 20) // len(unit)  # it stopped within the first 16 MiB of the 64


def test_a_real_log_compressed_hard_is_no_bomb(tmp_path: Path) -> None:
    path = tmp_path / "audit.log.gz"
    path.write_bytes(gzip.compress(("\n".join(_events(20_000)) + "\n").encode(), 9))
    events, problems = _read(path)
    assert len(events) == 20_000 and problems == []


def test_the_absolute_gzip_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "MAX_GZIP_BYTES", 1 << 20)
    path = tmp_path / "audit.log.gz"
    path.write_bytes(gzip.compress(("\n".join(_events(4000)) + "\n").encode()))
    events, problems = _read(path)
    assert 0 < len(events) < 4000
    (problem,) = problems
    assert problem.location == f"audit.log.gz:{len(events) + 1}" and problem.message == (
        "gzip expands past 1 MiB; the rest of the file is skipped")


def test_blank_and_overlong_lines_are_counted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "MAX_AUDIT_LINE", 4096)
    monkeypatch.setattr(audit, "BLOCK", 1000)  # lines and blank runs straddle blocks
    good = _events(3)
    long = json.dumps(EVENT | {"requestURI": "/api/v1/" + "x" * 10_000})
    path = tmp_path / "audit.log"
    path.write_text("\n".join([good[0], "", "  ", long, good[1], *[""] * 5000, good[2]]))  # no final newline
    events, problems = _read(path)
    assert [e.location for e in events] == ["audit.log:1", "audit.log:5", "audit.log:5006"]
    assert problems == [Problem("audit.log:4", "audit event over 4,096 bytes; 5,003 lines skipped (1 over 4,096 "
                                               "bytes, 5,002 blank)")]


def test_blank_lines_alone(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text(_events(1)[0] + "\n\n\n")
    events, problems = _read(path)
    assert len(events) == 1 and problems == [Problem("audit.log:2", "2 lines skipped (2 blank)")]


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO and a link to /dev/zero under audit/: one problem each (in a child, so a hang fails)."""
    root = tmp_path / "bundle"
    (root / "audit").mkdir(parents=True)
    os.mkfifo(root / "audit" / "fifo.log")
    (root / "audit" / "zero.log").symlink_to("/dev/zero")
    code = (
        "import sys; from pathlib import Path; from argo_doctor.sources.audit import AuditFile, read_audit_file\n"
        "root = Path(sys.argv[1]); problems = []\n"
        "for name in ('fifo.log', 'zero.log'):\n"
        "    assert list(read_audit_file(AuditFile(root / 'audit' / name, name, root), problems)) == []\n"
        "print('\\n'.join(f'{p.location}: {p.message}' for p in problems))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fifo.log: cannot read: not a regular file (a FIFO); skipped",
                                        "zero.log: cannot read: a link to a file outside the input; skipped"]


@pytest.mark.parametrize(("first", "why"), [("object", "JSON nested too deeply to read"),
                                            ("array", "Expected `object`, got `array`")])
def test_an_event_nested_past_the_decoders_depth_is_one_bad_line(tmp_path: Path, first: str, why: str) -> None:
    """msgspec recurses into a field it skips (requestObject) and raises RecursionError past its depth; a deep
    array is refused at its first bracket."""
    deep = '{"a":' * 200_000 + "{}" + "}" * 200_000
    bad = (json.dumps({**EVENT, "requestObject": "DEEP"}).replace('"DEEP"', deep) if first == "object"
           else "[" * 200_000 + "]" * 200_000)
    path = tmp_path / "audit.log"
    path.write_text(f"{bad}\n{json.dumps(EVENT)}\n")
    events, problems = _read(path)
    assert [e.location for e in events] == ["audit.log:2"]
    (problem,) = problems
    assert problem.location == "audit.log:1"
    assert problem.message.startswith(f"not an audit event: {why}")
