"""`kubectl cluster-info dump --output-directory` trees.

Layout (kubectl `pkg/cmd/clusterinfo/clusterinfo_dump.go`): `nodes.<ext>` at the top, then per
namespace `events`, `replication-controllers`, `services`, `daemonsets`, `deployments`,
`replicasets` and `pods` lists (`.json` by default, `.yaml` with `-o yaml`), and
`<namespace>/<pod>/logs.txt` holding every container's log between
`==== START logs for container C of pod NS/POD ====` and `==== END logs ... ====` lines.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from argo_doctor.model import Problem
from argo_doctor.sources.files import UnsafeInput, open_input
from argo_doctor.sources.logs import LogFile
from argo_doctor.sources.objects import ItemType

LIST_ITEM_TYPES: dict[str, ItemType] = {
    "nodes": ("v1", "Node"),
    "events": ("v1", "Event"),
    "replication-controllers": ("v1", "ReplicationController"),
    "services": ("v1", "Service"),
    "daemonsets": ("apps/v1", "DaemonSet"),
    "deployments": ("apps/v1", "Deployment"),
    "replicasets": ("apps/v1", "ReplicaSet"),
    "pods": ("v1", "Pod"),
}
"""The (apiVersion, kind) of the items of each list kubectl writes, by file name: the core/v1 and apps/v1 clients of
current kubectl's `clusterinfo_dump.go`. Old kubectl left kind and apiVersion out (`objects._typed_list`)."""
DUMP_LISTS = tuple(name for name in LIST_ITEM_TYPES if name != "nodes")
_START = re.compile(rb"^==== START logs for container (\S+) of pod ([^/\s]+)/(\S+) ====\r?$", re.M)
_END = re.compile(rb"^==== END logs for container \S+ of pod \S+ ====\r?$", re.M)
_SCAN_CHUNK = 8 << 20
_MARKER_MAX = 4096
"""No marker line is longer than this (names are at most 253 characters)."""


def is_cluster_info_dump(root: Path) -> bool:
    """A directory is a dump when a namespace folder has a pods list, and `nodes.<ext>` is at the top or, in a dump
    without it (cut down, or written without the rights to list nodes), that folder also has kubectl's
    `replication-controllers` list, which no hand-made manifest folder is likely to have."""
    has_nodes = any(os.path.lexists(root / f"nodes.{ext}") for ext in ("json", "yaml", "txt"))
    try:
        return any(any(child.glob("pods.*")) and (has_nodes or any(child.glob("replication-controllers.*")))
                   for child in _folders(root))
    except OSError:  # an entry that cannot even be looked at (a link to an over-long name): not a dump
        return False


def dump_object_files(root: Path) -> Iterator[Path]:
    """The object list files of a dump, nodes first, as named: the caller checks each is a regular file inside
    the input. Links to folders are not followed."""
    for ext in ("json", "yaml"):
        if os.path.lexists(root / f"nodes.{ext}"):
            yield root / f"nodes.{ext}"
    for ns_dir in _folders(root):
        for name in DUMP_LISTS:
            for ext in ("json", "yaml"):
                candidate = ns_dir / f"{name}.{ext}"
                if os.path.lexists(candidate):
                    yield candidate


def list_item_type(path: Path) -> ItemType | None:
    """The (apiVersion, kind) of the items of a dump's list file, from its name (`deployments.json`: apps/v1
    Deployment)."""
    return LIST_ITEM_TYPES.get(path.name.rpartition(".")[0])


def dump_log_files(root: Path, problems: list[Problem], display: Callable[[Path], str]) -> Iterator[LogFile]:
    """Every container section of every `<namespace>/<pod>/logs.txt`, as a LogFile over its byte range; a
    `logs.txt` that is not a regular file inside `root` (a FIFO, a device, a link leading outside) is one problem."""
    logs = (pod_dir / "logs.txt" for ns_dir in _folders(root) for pod_dir in _folders(ns_dir))
    for path in sorted(p for p in logs if os.path.lexists(p)):
        try:
            yield from _sections(path, root, display(path))
        except OSError as exc:
            reason = str(exc.strerror) if isinstance(exc, UnsafeInput) else f"cannot read: {exc.strerror or exc}"
            problems.append(Problem(display(path), reason))


def _folders(parent: Path) -> list[Path]:
    """The folders right under `parent`; links to folders are not followed, as `Path.rglob` does not follow them."""
    return sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())


def _sections(path: Path, root: Path, display: str) -> Iterator[LogFile]:
    """Find the START/END markers in one pass and yield the range of each container's log."""
    markers: list[tuple[int, int, re.Match[bytes] | None]] = []  # (offset, line, START match, None for END)
    base = line = 0  # file offset and line number of the start of `carry`
    carry = b""
    with open_input(path, root) as handle:
        while chunk := handle.read(_SCAN_CHUNK):
            buf = carry + chunk
            cut = buf.rfind(b"\n") + 1
            if b"==== " in buf[:cut]:
                found: list[tuple[int, re.Match[bytes] | None]] = [(m.start(), m) for m in _START.finditer(buf, 0, cut)]
                found += [(m.start(), None) for m in _END.finditer(buf, 0, cut)]
                counted, current = 0, line
                for start, match in sorted(found, key=lambda item: item[0]):
                    current += buf.count(b"\n", counted, start)
                    counted = start
                    markers.append((base + start, current, match))
            line += buf.count(b"\n", 0, cut)
            if len(buf) - cut > _MARKER_MAX:  # a long line without an end cannot be a marker: drop it
                cut = len(buf)
            base += cut
            carry = buf[cut:]
    markers.append((base + len(carry), line, None))
    for index, (start, start_line, match) in enumerate(markers[:-1]):
        if match is None:
            continue
        header_end = start + len(match.group(0)) + 1
        end = markers[index + 1][0]
        container, namespace, pod = (g.decode("utf-8", "replace") for g in match.groups())
        yield LogFile(path, display, namespace, pod, container, False, header_end, end, start_line + 2)
