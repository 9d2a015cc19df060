"""Load bundles (directory or tarball), cluster-info dumps and loose object files into a Snapshot."""

from __future__ import annotations

import contextlib
import gc
import os
import tarfile
import tempfile
import zlib
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import yaml

from argo_doctor.errors import InputError, UnsafeArchiveError
from argo_doctor.model import Problem
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import dump
from argo_doctor.sources.audit import AuditFile
from argo_doctor.sources.logs import LogFile
from argo_doctor.sources.objects import OBJECT_SUFFIXES, AliasBomb, FileLoad, expanded_size, load_object_file
from argo_doctor.timeutil import parse_time

TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar")
BUNDLE_MARKERS = ("bundle.yaml", "objects", "logs", "audit")
PARALLEL_OBJECT_BYTES = 16 << 20
"""Below this many bytes of object files, parsing in this process beats starting workers."""


def load(paths: Iterable[str | Path], workdir: Path | None = None) -> Snapshot:
    """Read every input into one Snapshot. Tarballs are extracted under `workdir` (a temp dir)."""
    inputs = [Path(p) for p in paths]
    if not inputs:
        raise InputError("no input given")
    snap = Snapshot(source=", ".join(str(p) for p in inputs))
    for path in inputs:
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if path.is_file() and path.name.endswith(TARBALL_SUFFIXES):
            if workdir is None:
                raise InputError(f"{path}: a tarball needs a working directory to be extracted into")
            root = _extract(path, Path(tempfile.mkdtemp(prefix="bundle-", dir=workdir)), snap.problems)
            _load_dir(snap, root, prefix=f"{path.name}!/" if len(inputs) > 1 else "")
        elif path.is_dir():
            _load_dir(snap, path, prefix=f"{path.name}/" if len(inputs) > 1 else "")
        else:
            snap.formats.append("files")
            _load_objects(snap, [(path, str(path))])
    return snap


def _single_child(root: Path) -> Path:
    """A tarball that holds one top folder is read from inside it."""
    entries = [p for p in root.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not any((root / m).exists() for m in BUNDLE_MARKERS):
        return entries[0]
    return root


def _extract(archive: Path, dest: Path, problems: list[Problem]) -> Path:
    """Extract safely: refuse escaping, absolute, special and outside-link entries; keep what a
    truncated archive holds up to the damage and report the damage."""
    try:
        tar = tarfile.open(archive, "r|*")  # noqa: SIM115 - closed by the `with` below
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{archive}: not a readable tar archive ({exc})") from None
    with tar:
        try:
            for member in tar:
                if member.name.startswith(("/", "\\")) or (len(member.name) > 1 and member.name[1] == ":"):
                    raise UnsafeArchiveError(f"{archive}: refused unsafe entry {member.name!r}: absolute path")
                try:
                    tar.extract(member, dest, filter="data")
                except tarfile.FilterError as exc:
                    raise UnsafeArchiveError(f"{archive}: refused unsafe entry {member.name!r}: {exc}") from None
                except (tarfile.ExtractError, KeyError) as exc:  # e.g. a hard link to a missing member
                    problems.append(Problem(f"{archive}!/{member.name}", f"cannot extract: {exc}; skipped"))
        except (tarfile.ReadError, EOFError, zlib.error, OSError) as exc:
            problems.append(Problem(str(archive), f"archive is truncated or damaged; read what came before: {exc}"))
    return _single_child(dest)


def _rel(path: Path, root: Path, prefix: str) -> str:
    return prefix + path.relative_to(root).as_posix()


def _visible_files(folder: Path, root: Path, prefix: str, problems: list[Problem]) -> list[Path]:
    """Files under `folder`, hidden ones left out; links that lead outside `root` are refused."""
    real_root = root.resolve()
    found = []
    for path in sorted(folder.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts) or not path.is_file():
            continue
        if path.is_symlink() and not path.resolve().is_relative_to(real_root):
            problems.append(Problem(_rel(path, root, prefix), "a link to a file outside the input; skipped"))
            continue
        found.append(path)
    return found


def _load_dir(snap: Snapshot, root: Path, prefix: str) -> None:
    snap.roots.append(root)
    if dump.is_cluster_info_dump(root):
        snap.formats.append("cluster-info-dump")
        _load_objects(snap, [(p, _rel(p, root, prefix)) for p in dump.dump_object_files(root)])
        snap.log_files.extend(dump.dump_log_files(root, snap.problems, prefix))
        return
    if not any((root / marker).exists() for marker in BUNDLE_MARKERS):
        snap.formats.append("files")
        files = _visible_files(root, root, prefix, snap.problems)
        _load_objects(snap, [(p, _rel(p, root, prefix)) for p in files if _is_object_file(p)])
        return
    snap.formats.append("bundle-v1")
    _read_bundle_meta(snap, root / "bundle.yaml", prefix)
    objects = root / "objects"
    if objects.is_dir():
        files = [p for p in _visible_files(objects, root, prefix, snap.problems) if _is_object_file(p)]
        _load_objects(snap, [(p, _rel(p, root, prefix)) for p in files])
    logs = root / "logs"
    if logs.is_dir():
        for path in _visible_files(logs, root, prefix, snap.problems):
            log_file = _log_file(path, root, prefix, snap.problems)
            if log_file is not None:
                snap.log_files.append(log_file)
    audit = root / "audit"
    if audit.is_dir():
        snap.audit_files.extend(
            AuditFile(p, _rel(p, root, prefix)) for p in _visible_files(audit, root, prefix, snap.problems)
        )


def _is_object_file(path: Path) -> bool:
    return path.suffix.lower() in OBJECT_SUFFIXES


def _read_bundle_meta(snap: Snapshot, path: Path, prefix: str) -> None:
    """Keep the fields of bundle.yaml argo-doctor uses, as plain strings: collectedAt, collectedBy,
    cluster.name and cluster.version. The first input's values win."""
    if not path.is_file():
        return
    display = prefix + "bundle.yaml"
    try:
        meta: Any = yaml.load(path.read_text(encoding="utf-8", errors="replace"), Loader=yaml.CSafeLoader)
        expanded_size(meta)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        snap.problems.append(Problem(f"{display}:{mark.line + 1 if mark else 1}", f"invalid YAML: {exc}"))
        return
    except (AliasBomb, RecursionError) as exc:
        snap.problems.append(Problem(display, f"refused: {exc}"))
        return
    if not isinstance(meta, dict):
        snap.problems.append(Problem(display, "bundle.yaml is not a mapping; ignored"))
        return
    collected = meta.get("collectedAt")
    if collected is not None:
        when = parse_time(collected if isinstance(collected, datetime) else str(collected))
        if when is None:
            message = f"collectedAt {str(collected)[:40]!r} is not an RFC 3339 time; ignored"
            snap.problems.append(Problem(display, message))
        else:
            snap.meta.setdefault("collectedAt", when)
    if isinstance(meta.get("collectedBy"), str | int | float):
        snap.meta.setdefault("collectedBy", str(meta["collectedBy"]))
    cluster = meta.get("cluster")
    if isinstance(cluster, dict):
        fields = {k: str(cluster[k]) for k in ("name", "version") if isinstance(cluster.get(k), str | int | float)}
        snap.meta.setdefault("cluster", fields)


def _log_file(path: Path, root: Path, prefix: str, problems: list[Problem]) -> LogFile | None:
    display = _rel(path, root, prefix)
    parts = path.relative_to(root / "logs").parts
    name = path.name
    if len(parts) != 3 or not name.endswith(".log"):
        problems.append(Problem(display, "not a log in the layout logs/<namespace>/<pod>/<container>.log; skipped"))
        return None
    previous = name.endswith(".previous.log")
    container = name[: -len(".previous.log")] if previous else name[: -len(".log")]
    return LogFile(path, display, parts[0], parts[1], container, previous)


def _load_objects(snap: Snapshot, files: list[tuple[Path, str]]) -> None:
    """Parse object files on a process pool when there is enough to parse; index them in order."""
    total = 0
    for path, _ in files:
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    workers = min(os.cpu_count() or 1, len(files))
    # Objects live as long as the scan: the cyclic GC would walk them again and again for nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if workers > 1 and total >= PARALLEL_OBJECT_BYTES:
            with ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=gc.disable) as pool:
                _index_all(snap, pool.map(load_object_file, files, chunksize=4))
        else:
            _index_all(snap, map(load_object_file, files))
    finally:
        if was_enabled:
            gc.enable()


def _index_all(snap: Snapshot, loads: Iterable[FileLoad]) -> None:
    for load in loads:
        snap.problems.extend(load.problems)
        snap.scrubber.add_values(load.secrets)
        for loaded in load.objects:
            snap.add_loaded(loaded)
