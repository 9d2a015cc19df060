"""`kubectl cluster-info dump --output-directory` trees.

Layout (kubectl `pkg/cmd/clusterinfo/clusterinfo_dump.go`): `nodes.<ext>` at the top, then per
namespace `events`, `replication-controllers`, `services`, `daemonsets`, `deployments`,
`replicasets` and `pods` lists (`.json` by default, `.yaml` with `-o yaml`), and
`<namespace>/<pod>/logs.txt` holding every container's log between
`==== START logs for container C of pod NS/POD ====` and `==== END logs ... ====` lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from argo_doctor.model import Problem
from argo_doctor.sources.logs import LogFile

DUMP_LISTS = ("events", "replication-controllers", "services", "daemonsets", "deployments", "replicasets", "pods")
_START = re.compile(rb"^==== START logs for container (\S+) of pod ([^/\s]+)/(\S+) ====\r?$", re.M)
_END = re.compile(rb"^==== END logs for container \S+ of pod \S+ ====\r?$", re.M)
_SCAN_CHUNK = 8 << 20


def is_cluster_info_dump(root: Path) -> bool:
    """A directory is a dump when it has `nodes.<ext>` and a namespace folder with a pods list."""
    if not any((root / f"nodes.{ext}").is_file() for ext in ("json", "yaml", "txt")):
        return False
    return any(child.is_dir() and any(child.glob("pods.*")) for child in root.iterdir())


def dump_object_files(root: Path) -> Iterator[Path]:
    """The object list files of a dump, nodes first."""
    for ext in ("json", "yaml"):
        if (root / f"nodes.{ext}").is_file():
            yield root / f"nodes.{ext}"
    for ns_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for name in DUMP_LISTS:
            for ext in ("json", "yaml"):
                candidate = ns_dir / f"{name}.{ext}"
                if candidate.is_file():
                    yield candidate


def dump_log_files(root: Path, problems: list[Problem]) -> Iterator[LogFile]:
    """Every container section of every `logs.txt`, as a LogFile over its byte range."""
    for path in sorted(root.glob("*/*/logs.txt")):
        display = path.relative_to(root).as_posix()
        try:
            yield from _sections(path, display)
        except OSError as exc:
            problems.append(Problem(display, f"cannot read: {exc.strerror or exc}"))


def _sections(path: Path, display: str) -> Iterator[LogFile]:
    """Find the START/END markers in one pass and yield the range of each container's log."""
    markers: list[tuple[int, int, re.Match[bytes] | None]] = []  # (offset, line, START match, None for END)
    offset = line = 0
    carry = b""
    with path.open("rb") as handle:
        while chunk := handle.read(_SCAN_CHUNK):
            buf = carry + chunk
            cut = buf.rfind(b"\n") + 1
            region, carry = buf[:cut], buf[cut:]
            base = offset
            counted, current = 0, line
            if b"==== " in region:
                found: list[tuple[int, re.Match[bytes] | None]] = [(m.start(), m) for m in _START.finditer(region)]
                found += [(m.start(), None) for m in _END.finditer(region)]
                for start, match in sorted(found, key=lambda item: item[0]):
                    current += region.count(b"\n", counted, start)
                    counted = start
                    markers.append((base + start, current, match))
            offset += len(region)
            line += region.count(b"\n")
    markers.append((offset + len(carry), line, None))
    for index, (start, start_line, match) in enumerate(markers[:-1]):
        if match is None:
            continue
        header_end = start + len(match.group(0)) + 1
        end = markers[index + 1][0]
        container, namespace, pod = (g.decode("utf-8", "replace") for g in match.groups())
        yield LogFile(path, display, namespace, pod, container, False, header_end, end, start_line + 2)
