"""Load bundles (directory or tarball), cluster-info dumps and loose object files into a Snapshot."""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import io
import lzma
import os
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, cast

from argo_doctor.errors import InputError
from argo_doctor.model import Problem
from argo_doctor.snapshot import Snapshot, gc_paused, pack_file, unpacker
from argo_doctor.sources import dump
from argo_doctor.sources.audit import AuditFile
from argo_doctor.sources.files import UnsafeInput, exists, is_dir, open_input
from argo_doctor.sources.logs import LogFile
from argo_doctor.sources.objects import OBJECT_SUFFIXES, FileLoad, ObjectJob, load_object_file, load_yaml_file
from argo_doctor.sources.workers import pool as worker_pool
from argo_doctor.timeutil import parse_time

TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar")
BUNDLE_MARKERS = ("bundle.yaml", "objects", "logs", "audit")
PARALLEL_OBJECT_BYTES = 16 << 20
"""Below this many bytes of object files, parsing in this process beats starting workers."""
MAX_TOTAL_BYTES = 4 << 30
"""Bytes a tarball may extract to in all: a 2,000-application bundle holds ~300 MB of objects and ~1 GiB of logs.
A sparse entry counts its real size, a link the size of the file it leads to (readers read it once more)."""
MAX_ENTRY_BYTES = 1 << 30
"""Bytes one entry may extract to: the kubelet rotates container logs at 10 MiB, and `kubectl get -o yaml` of every
Application of a large installation is a few hundred MB."""
MAX_ENTRIES = 20_000
"""Entries a tarball may hold. A bundle written one file per kind (as `collect` writes) has a few hundred; one file
per object of a 2,000-application installation would have ~50,000: unpack that one and scan the directory, which
has no entry limit. Each entry costs ~0.5 ms to extract here, so this bounds a bomb of empty entries to ~10 s."""
MAX_RATIO = 200
"""Decompressed bytes per compressed byte, counted as they stream once RATIO_GRACE bytes are out: logs and YAML
compress 10 to 50 times, a gzip bomb of zeros about 1,000 times."""
RATIO_GRACE = 64 << 20
MAX_HEADER_BYTES = 1 << 20
"""Bytes one entry's headers (GNU long names, pax records, a sparse map) may take; they are read into memory."""
_BLOCK = tarfile.BLOCKSIZE
_ZERO_BLOCK = bytes(_BLOCK)
_CHUNK = 1 << 20
_TRUNCATED_ENTRY = "the archive is truncated inside this entry; what was read of it and before it is scanned"
_HEADER_ERRORS = (tarfile.TarError, ValueError, UnicodeError, IndexError, KeyError, OverflowError)
"""What tarfile's header parsing raises on a damaged or hostile header."""


def load(paths: Iterable[str | Path], workdir: Path | None = None, early: EarlyLoads | None = None) -> Snapshot:
    """Read every input into one Snapshot. Tarballs are extracted under `workdir` (a temp dir). A path given twice
    is read once, and a file is read once whatever the inputs that hold it (`distinct_inputs`). The object files
    `early` has parsed already are taken from it."""
    inputs = [Path(p) for p in paths]
    if not inputs:
        raise InputError("no input given")
    snap = Snapshot(source=", ".join(str(p) for p in inputs))
    several = len(inputs) > 1
    for item in readable_inputs(distinct_inputs(inputs, snap.problems), workdir, snap.problems):
        given = str(item.given)
        if item.extracted:
            _load_dir(snap, item.path, f"{item.given.name}!/" if several else "", given, early)
        elif is_dir(item.path):
            _load_dir(snap, item.path, f"{item.given.name}/" if several else "", given, early)
        else:
            snap.formats.append("files")
            _load_objects(snap, [(item.path, given)], given, early)
    snap.settle_secrets()
    return snap


def is_bundle(path: Path) -> bool:
    """A bundle folder, a cluster-info dump or a tarball: one installation, read as one."""
    if path.is_file():
        return path.name.endswith(TARBALL_SUFFIXES)
    return path.is_dir() and (any(os.path.lexists(path / m) for m in BUNDLE_MARKERS) or dump.is_cluster_info_dump(path))


def bundles_in(folder: Path, depth: int = 2) -> list[Path]:
    """The bundles, dumps and tarballs a folder holds, `depth` levels down (`examples/`, a folder of collections),
    sorted; empty for a folder that is itself one, or that holds object files of its own (it is read as files)."""
    if depth <= 0 or not folder.is_dir() or is_bundle(folder):
        return []
    try:
        children = sorted(c for c in folder.iterdir() if not c.name.startswith("."))
    except OSError:
        return []
    if any(c.is_file() and _is_object_file(c) for c in children):
        return []
    found = []
    for child in children:
        if is_bundle(child):
            found.append(child)
        elif child.is_dir():
            found += bundles_in(child, depth - 1)
    return found


class EarlyLoads:
    """Object files parsed on a pool of forked workers as soon as they are written into the folder `root` (`scan
    --live`: the parsing overlaps the collection, which waits on the API server in one process), for `load` to take
    instead of parsing them again. Made before any other thread starts: the workers are forked at once."""

    def __init__(self, root: Path, workers: int) -> None:
        self.root = root
        self.pool = worker_pool(workers)
        self.pool.submit(int).result()  # the fork start method starts every worker with the first job
        self._started: dict[str, tuple[ObjectJob, Future[FileLoad]]] = {}

    def written(self, path: Path) -> None:
        """Start parsing the object file `path` of the folder (called from the collection's threads)."""
        job: ObjectJob = (path, _rel(path, self.root, ""))
        self._started[str(path)] = (job, _submit(self.pool, job))

    def take(self, job: ObjectJob) -> Future[FileLoad] | None:
        """The parsing started for exactly this job (path and display name), once."""
        started = self._started.pop(str(job[0]), None)
        return started[1] if started is not None and started[0] == job else None

    def close(self) -> None:
        """Stop the workers; a parsing not taken is dropped."""
        self.pool.shutdown(cancel_futures=True)


def distinct_inputs(paths: Sequence[Path], problems: list[Problem]) -> list[Path]:
    """The paths without those that lead where an earlier one does (`dir` and `dir/`, a link to it), each left
    out with one note. A folder or file inside another folder given is kept, with one note: the files both hold
    are read once (`Snapshot.files_read`)."""
    kept: list[Path] = []
    real: dict[str, Path] = {}
    for given in paths:
        resolved = os.path.realpath(given)
        if resolved in real:
            before = real[resolved]
            said = "given twice" if str(before) == str(given) else f"the same as {before}, given before"
            problems.append(Problem(str(given), f"{said}: read once", "note"))
            continue
        real[resolved] = given
        kept.append(given)
    for given in kept:
        resolved = os.path.realpath(given)
        if given.name.endswith(TARBALL_SUFFIXES):
            continue  # a folder does not read the tarballs inside it
        outer = next((other for path, other in real.items()
                      if path != resolved and resolved.startswith(path.rstrip(os.sep) + os.sep) and is_dir(other)),
                     None)
        if outer is not None:
            problems.append(Problem(str(given), f"inside {outer}, also given: the files both hold are read once",
                                    "note"))
    return kept


@dataclass(frozen=True)
class Input:
    """One path argument, ready to read: a directory, a regular file, or a tarball's extracted root."""

    given: Path
    path: Path

    @property
    def extracted(self) -> bool:
        """Whether `path` is where a tarball was extracted."""
        return self.path != self.given


def readable_inputs(paths: Sequence[Path], workdir: Path | None, problems: list[Problem]) -> Iterator[Input]:
    """Each path argument that can be read, tarballs extracted under `workdir`. One that cannot (missing, a FIFO,
    a device, a socket, not a tar archive) is one problem; InputError, after the others, when none can."""
    reasons = []
    for given in paths:
        try:
            yield _input(given, workdir, problems)
        except (InputError, OSError) as exc:
            reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
            problems.append(Problem(str(given), reason))
            reasons.append(f"{given}: {reason}")
    if len(reasons) == len(paths):
        raise InputError("; ".join(reasons))


def _input(given: Path, workdir: Path | None, problems: list[Problem]) -> Input:
    if is_dir(given):
        return Input(given, given)
    if not os.path.lexists(given):
        raise InputError("no such file or directory")
    if not given.name.endswith(TARBALL_SUFFIXES):
        open_input(given).close()  # a regular file, else UnsafeInput: never block on a FIFO or read a device
        return Input(given, given)
    if workdir is None:
        raise InputError("a tarball needs a working directory to be extracted into")
    return Input(given, extract(given, Path(tempfile.mkdtemp(prefix="bundle-", dir=workdir)), problems))


def _single_child(root: Path) -> Path:
    """A tarball that holds one top folder is read from inside it."""
    entries = [p for p in root.iterdir() if not p.name.startswith(".")]
    single = len(entries) == 1 and is_dir(entries[0]) and not entries[0].is_symlink()
    if single and not any(exists(root / m) for m in BUNDLE_MARKERS):
        return entries[0]
    return root


def extract(archive: Path, dest: Path, problems: list[Problem]) -> Path:
    """Extract a tarball (plain, gzip, bzip2 or xz) into `dest` entry by entry as it streams, with the rules of
    tarfile's `data` filter and the limits above, and return the folder to read. A refused entry, damage and a
    limit are each one problem, and what can still be read is extracted; InputError when no entry can be read."""
    with open_input(archive) as raw:
        stream = _Stream(raw, str(archive))
        try:
            _Extraction(archive, dest, problems).run(stream)
        finally:
            stream.data.close()
    return _single_child(dest)


class _Damaged(Exception):
    """The archive's stream cannot be read any further."""


class _Stop(Exception):
    """Extraction stops here, for the reason `problem` gives."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Skip(Exception):
    """This entry is not extracted, for the reason the message gives."""


class _Stream:
    """The decompressed bytes of a tarball, read forward only, the expansion ratio checked as they stream. It is
    also the `TarFile` that `tarfile.TarInfo.fromtarfile` reads headers from, so no member list builds up."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, raw: BinaryIO, display: str) -> None:
        self.raw, self.display = raw, display
        magic = raw.read(6)
        raw.seek(0)
        self.compression = ""
        self.data: BinaryIO | io.BufferedIOBase = raw
        if magic.startswith(b"\x1f\x8b"):
            self.compression, self.data = "gzip", gzip.GzipFile(fileobj=raw, mode="rb")
        elif magic.startswith(b"BZh"):
            self.compression, self.data = "bzip2", bz2.BZ2File(raw)
        elif magic.startswith(b"\xfd7zXZ\x00"):
            self.compression, self.data = "xz", lzma.LZMAFile(raw)  # noqa: SIM115 - extract() closes it
        self.fileobj = self
        self.offset = 0
        """Where the next header starts, as `TarInfo.fromtarfile` sets it."""
        self.pax_headers: dict[str, str] = {}
        self.position = 0
        self.budget: int | None = None
        """Bytes the headers being read may still take."""
        self._pushed = b""

    def tell(self) -> int:
        """The offset in the decompressed stream."""
        return self.position

    def read(self, size: int) -> bytes:
        """`size` bytes, fewer only at the end of the stream."""
        if self.budget is not None:
            if size > self.budget:
                raise tarfile.HeaderError(f"its headers take more than {MAX_HEADER_BYTES:,} bytes")
            self.budget -= size
        data, self._pushed = self._pushed[:size], self._pushed[size:]
        if len(data) < size:
            try:
                data += self.data.read(size - len(data))
            except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
                state = "truncated" if isinstance(exc, EOFError) else "damaged"
                raise _Damaged(f"the {self.compression or 'tar'} stream is {state} ({exc})") from None
        self.position += len(data)
        if self.compression and self.position > RATIO_GRACE and self.position > MAX_RATIO * self.raw.tell():
            raise _Stop(Problem(self.display, f"expands more than {MAX_RATIO}:1 ({self.position:,} bytes out of "
                                              f"{self.raw.tell():,}): extraction stopped there; what came before "
                                              "is scanned"))
        return data

    def unread(self, data: bytes) -> None:
        """Put back what was just read."""
        self._pushed = data + self._pushed
        self.position -= len(data)

    def skip_to(self, offset: int) -> bool:
        """Read on to `offset`; False when the stream ends before."""
        while self.position < offset:
            if not self.read(min(offset - self.position, _CHUNK)):
                return False
        return True


class _Extraction:
    """One tarball, extracted entry by entry under `root`."""

    def __init__(self, archive: Path, dest: Path, problems: list[Problem]) -> None:
        self.archive, self.problems = str(archive), problems
        self.root = os.path.realpath(dest)
        self.total = self.entries = 0
        self.started = False
        self.links: dict[tuple[str, ...], tarfile.TarInfo] = {}
        """Symbolic links, made after every other entry (as GNU tar does) so that no entry is written through one."""
        self.folders: set[str] = set()
        """Folders made so far (nothing removes a folder)."""

    def run(self, stream: _Stream) -> None:
        """Extract every entry that can be; each problem goes to `problems`."""
        try:
            self._members(stream)
        except _Stop as stop:
            self.problems.append(stop.problem)
        except _Damaged as exc:
            if not self.started:
                raise InputError(f"not a readable tar archive ({exc})") from None
            self.problems.append(Problem(self.archive, f"{exc}; what came before is scanned"))
        try:
            self._symlinks()
        except _Stop as stop:
            self.problems.append(stop.problem)

    def _members(self, stream: _Stream) -> None:
        while True:
            start = stream.position
            block = stream.read(_BLOCK)
            if block == _ZERO_BLOCK:  # the end-of-archive marker
                if stream.compression:  # read to the end, where gzip checks its CRC and length
                    while stream.read(_CHUNK):
                        pass
                return
            if len(block) < _BLOCK:
                if not self.started:
                    raise InputError("not a readable tar archive (" + ("empty" if not block else "too short") + ")")
                where = "after an entry, without the end-of-archive blocks" if not block else "inside a header"
                raise _Stop(Problem(self.archive, f"the archive is truncated: it ends {where}; what came before "
                                                  "is scanned"))
            member = self._header(stream, block, start)
            if member is None:
                continue
            self.started = True
            self.entries += 1
            if self.entries > MAX_ENTRIES:
                raise _Stop(Problem(self.archive, f"more than {MAX_ENTRIES:,} entries: extraction stopped there; "
                                                  "what came before is scanned"))
            with self._entry(member):
                self._member(stream, member)
            if not stream.skip_to(stream.offset):
                raise _Stop(Problem(self._location(member), _TRUNCATED_ENTRY))

    def _header(self, stream: _Stream, block: bytes, start: int) -> tarfile.TarInfo | None:
        """The entry whose header begins with `block`; None after damage, reported, with the stream at the next
        header."""
        try:
            tarfile.TarInfo.frombuf(block, stream.encoding, stream.errors)  # a wrong checksum: not a header
            stream.unread(block)
            stream.budget = MAX_HEADER_BYTES
            try:
                return tarfile.TarInfo.fromtarfile(cast(tarfile.TarFile, stream))
            finally:
                stream.budget = None
        except _HEADER_ERRORS as exc:
            if not self.started:
                raise InputError(f"not a readable tar archive ({exc})") from None
            reason = str(exc) or type(exc).__name__
        stream.skip_to(-(-max(stream.position, start + _BLOCK) // _BLOCK) * _BLOCK)
        while len(block := stream.read(_BLOCK)) == _BLOCK:
            if block != _ZERO_BLOCK and _is_header(block):
                stream.unread(block)
                self.problems.append(Problem(self.archive, f"{stream.position - start:,} bytes of junk or damage at "
                                                           f"offset {start:,} ({reason}); skipped to the next entry"))
                return None
        raise _Stop(Problem(self.archive, f"junk or damage from offset {start:,} ({reason}), and no entry after it"))

    @contextlib.contextmanager
    def _entry(self, member: tarfile.TarInfo) -> Iterator[None]:
        """A refused entry or a file system error is one problem, and extraction goes on."""
        try:
            yield
        except _Skip as skip:
            self.problems.append(Problem(self._location(member), f"{skip}; skipped"))
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise _Stop(Problem(self._location(member), f"cannot extract: {exc.strerror}: extraction stopped "
                                                            "there; what came before is scanned")) from None
            self.problems.append(Problem(self._location(member), f"cannot extract: {exc.strerror or exc}; skipped"))

    def _member(self, stream: _Stream, member: tarfile.TarInfo) -> None:
        parts = _entry_parts(member.name, "its path")
        if member.ischr() or member.isblk() or member.isfifo():
            raise _Skip(f"refused: a {'FIFO' if member.isfifo() else 'device file'}")
        if not parts:
            if member.isdir():  # `.` or `./`: the root itself
                return
            raise _Skip("refused: an entry without a name")
        self.links.pop(tuple(parts), None)  # a later entry replaces an earlier one
        if member.issym():
            self.links[tuple(parts)] = member
        elif member.isdir():
            self._folder(parts)
        elif member.islnk():
            self._hard_link(member, parts)
        else:  # a regular file, sparse or not; tar reads an unknown type as one too
            self._file(stream, member, parts)

    def _folder(self, parts: Sequence[str]) -> str:
        """The folder `parts` under the root, created as needed."""
        path = self.root
        for index, part in enumerate(parts):
            path = os.path.join(path, part)
            if path in self.folders:
                continue
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    raise _Skip(f"cannot extract: {'/'.join(parts[:index + 1])!r} is also a file or a link in the "
                                "archive") from None
            self.folders.add(path)
        return path

    def _leaf(self, parts: Sequence[str]) -> str:
        """Where the entry `parts` goes, its folder created and an earlier file or link of that name removed."""
        path = os.path.join(self._folder(parts[:-1]), parts[-1])
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                raise _Skip(f"cannot extract: {'/'.join(parts)!r} is also a folder in the archive")
            os.unlink(path)
        return path

    def _count(self, size: int, member: tarfile.TarInfo) -> None:
        """Add `size` bytes to the total extracted, or stop extracting when they pass the limit."""
        if self.total + size > MAX_TOTAL_BYTES:
            raise _Stop(Problem(self._location(member), f"extracting it would pass the limit of {MAX_TOTAL_BYTES:,} "
                                                        "bytes in all: extraction stopped there; what came before is "
                                                        "scanned"))
        self.total += size

    def _file(self, stream: _Stream, member: tarfile.TarInfo, parts: Sequence[str]) -> None:
        size = member.size  # a sparse file's real size
        if size > MAX_ENTRY_BYTES:
            raise _Skip(f"{size:,} bytes, over the limit of {MAX_ENTRY_BYTES:,} for one entry")
        sparse = cast("list[tuple[int, int]] | None", member.sparse)  # typeshed says bytes: it is not
        segments = [(0, size)] if sparse is None else sparse
        if any(offset < 0 or length < 0 or offset + length > size for offset, length in segments):
            raise _Skip("a damaged sparse map")
        path = self._leaf(parts)
        self._count(size, member)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(path, flags, 0o600), "wb") as out:
            for offset, length in segments:
                out.seek(offset)
                while length > 0:
                    chunk = stream.read(min(length, _CHUNK))
                    if not chunk:
                        raise _Stop(Problem(self._location(member), _TRUNCATED_ENTRY))
                    out.write(chunk)
                    length -= len(chunk)
            out.truncate(size)

    def _hard_link(self, member: tarfile.TarInfo, parts: Sequence[str]) -> None:
        target_parts = _entry_parts(member.linkname, "its link target")
        if target_parts == parts:
            raise _Skip("cannot extract: a hard link to itself")
        target = os.path.join(self.root, *target_parts)
        try:
            found = os.lstat(target)
        except OSError:
            raise _Skip(f"cannot extract: a hard link to {member.linkname!r}, which no entry before it "
                        "extracted") from None
        if stat.S_ISDIR(found.st_mode):
            raise _Skip(f"cannot extract: a hard link onto the folder {member.linkname!r}")
        if not stat.S_ISREG(found.st_mode):
            raise _Skip(f"cannot extract: a hard link to {member.linkname!r}, which is not a regular file")
        path = self._leaf(parts)
        self._count(found.st_size, member)  # the readers read it once more
        os.link(target, path, follow_symlinks=False)

    def _symlinks(self) -> None:
        """Make the symbolic links that lead inside the root; a link to a file counts the file's size again."""
        for parts, member in self.links.items():
            with self._entry(member):
                if os.path.isabs(member.linkname):
                    raise _Skip(f"refused: a link to the absolute path {member.linkname!r}")
                path = self._leaf(parts)
                target = os.path.realpath(os.path.join(os.path.dirname(path), member.linkname))
                if target != self.root and not target.startswith(self.root + os.sep):
                    raise _Skip(f"refused: a link to {member.linkname!r}, outside the archive")
                self._count(os.path.getsize(target) if os.path.isfile(target) else 0, member)
                os.symlink(member.linkname, path)

    def _location(self, member: tarfile.TarInfo) -> str:
        name = member.name if len(member.name) <= 200 else member.name[:200] + "…"
        return f"{self.archive}!/{name}"


def _entry_parts(name: str, what: str) -> list[str]:
    """The components of an entry's path; _Skip when it is absolute or goes up with `..`."""
    if name.startswith(("/", "\\")) or (len(name) > 2 and name[0].isalpha() and name[1] == ":" and name[2] in "/\\"):
        raise _Skip(f"refused: {what} is absolute")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _Skip(f"refused: {what} goes up with '..'")
    return parts


def _is_header(block: bytes) -> bool:
    try:
        tarfile.TarInfo.frombuf(block, _Stream.encoding, _Stream.errors)
    except _HEADER_ERRORS:
        return False
    return True


def _rel(path: Path, root: Path, prefix: str) -> str:
    """`path` as reports show it: relative to the input, after its prefix, bytes that are not UTF-8 replaced."""
    return (prefix + path.relative_to(root).as_posix()).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _visible_files(folder: Path, root: Path, prefix: str, problems: list[Problem]) -> list[Path]:
    """Files under `folder`, hidden ones left out; one that is not a regular file inside `root` (a link leading
    outside, a FIFO, a device, a socket) is one problem."""
    paths = [p for p in sorted(folder.rglob("*")) if not is_dir(p)]
    return _readable([p for p in paths if not any(part.startswith(".") for part in p.relative_to(folder).parts)],
                     root, prefix, problems)


def _readable(paths: Iterable[Path], root: Path, prefix: str, problems: list[Problem]) -> list[Path]:
    """The paths that are regular files inside `root`, by the one rule of `files.open_input`; each other path is
    one problem."""
    kept = []
    for path in paths:
        try:
            open_input(path, root).close()
        except OSError as exc:
            reason = str(exc.strerror) if isinstance(exc, UnsafeInput) else f"cannot read: {exc.strerror or exc}"
            problems.append(Problem(_rel(path, root, prefix), reason))
        else:
            kept.append(path)
    return kept


def _load_dir(snap: Snapshot, root: Path, prefix: str, given: str, early: EarlyLoads | None = None) -> None:
    """Read the folder `root` of the input `given`: a cluster-info dump, a bundle, or a folder of object files."""
    snap.roots.append(root)
    if dump.is_cluster_info_dump(root):
        snap.formats.append("cluster-info-dump")
        lists = _readable(dump.dump_object_files(root), root, prefix, snap.problems)
        _load_objects(snap, [(p, _rel(p, root, prefix), dump.list_item_type(p)) for p in lists], given, early)
        sections = list(dump.dump_log_files(root, snap.problems, lambda p: _rel(p, root, prefix)))
        fresh = {path for path in dict.fromkeys(s.path for s in sections) if _first_read(snap, path)}
        snap.log_files.extend(s for s in sections if s.path in fresh)  # a file holds the logs of several containers
        return
    if not any(os.path.lexists(root / marker) for marker in BUNDLE_MARKERS):
        snap.formats.append("files")
        files = _visible_files(root, root, prefix, snap.problems)
        _load_objects(snap, [(p, _rel(p, root, prefix)) for p in files if _is_object_file(p)], given, early)
        return
    snap.formats.append("bundle-v1")
    meta = root / "bundle.yaml"
    if os.path.lexists(meta) and _readable([meta], root, prefix, snap.problems):
        _read_bundle_meta(snap, meta, prefix)
    objects = _folder(root, "objects", prefix, snap.problems)
    if objects is not None:
        files = [p for p in _visible_files(objects, root, prefix, snap.problems) if _is_object_file(p)]
        _load_objects(snap, [(p, _rel(p, root, prefix)) for p in files], given, early)
    logs = _folder(root, "logs", prefix, snap.problems)
    if logs is not None:
        for path in _visible_files(logs, root, prefix, snap.problems):
            log_file = _log_file(path, root, prefix, snap.problems)
            if log_file is not None and _first_read(snap, path):
                snap.log_files.append(log_file)
    audit = _folder(root, "audit", prefix, snap.problems)
    if audit is not None:
        snap.audit_files.extend(AuditFile(p, _rel(p, root, prefix), root)
                                for p in _visible_files(audit, root, prefix, snap.problems) if _first_read(snap, p))
    metrics = _folder(root, "metrics", prefix, snap.problems)
    if metrics is not None:
        for path in sorted(metrics.glob("*.prom")):  # opened (or refused) by sources.metrics
            if _first_read(snap, path):
                snap.add_metrics_file(path, _rel(path, root, prefix), root)


def _first_read(snap: Snapshot, path: Path) -> bool:
    """Whether the file `path` is not read yet (by its device and inode: a link to a file, or a file of a folder
    given twice, is read once); a file that cannot be looked at is read, and its reader says why."""
    try:
        found = path.stat()
    except OSError:
        return True
    if (found.st_dev, found.st_ino) in snap.files_read:
        return False
    snap.files_read.add((found.st_dev, found.st_ino))
    return True


def _folder(root: Path, name: str, prefix: str, problems: list[Problem]) -> Path | None:
    """The bundle folder `name` when it is one; a link that leads to no folder is one problem."""
    path = root / name
    if is_dir(path):
        return path
    if path.is_symlink():
        problems.append(Problem(_rel(path, root, prefix), "a link that leads to no readable folder; skipped"))
    return None


def _is_object_file(path: Path) -> bool:
    return path.suffix.lower() in OBJECT_SUFFIXES


def _read_bundle_meta(snap: Snapshot, path: Path, prefix: str) -> None:
    """Keep the fields of bundle.yaml argo-doctor uses, as plain strings: collectedAt, collectedBy,
    cluster.name and cluster.version (the first input's values win), and what `collect` could not read
    (`skipped`, from every input)."""
    if not path.is_file():
        return
    display = prefix + "bundle.yaml"
    reported = len(snap.problems)
    meta: Any = load_yaml_file(path, display, snap.problems, path.parent, unique_keys=True)
    if not isinstance(meta, dict):
        if len(snap.problems) == reported:  # else load_yaml_file said why
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
        fields = {k: str(cluster[k]) for k in ("name", "version", "context")
                  if isinstance(cluster.get(k), str | int | float)}
        snap.meta.setdefault("cluster", fields)
    skipped = meta.get("skipped")
    for entry in skipped if isinstance(skipped, list) else []:
        if isinstance(entry, dict):
            record = {k: str(entry.get(k) or "") for k in ("what", "request", "reason", "need", "status")}
            snap.unread.append(record)
            if record["status"] not in ("401", "403"):  # refusals are a finding; other failures are input problems
                snap.problems.append(Problem(f"collection: {record['request']}", record["reason"]))


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


def _load_objects(snap: Snapshot, jobs: Sequence[ObjectJob], given: str, early: EarlyLoads | None = None) -> None:
    """Parse the object files of the input `given` on a process pool when there is enough to parse (on the pool of
    `early`, which may have parsed some already); index them in order. A file already read (a link to it, or the
    same file given twice) is not read again: its objects would only be duplicates of themselves."""
    files = [job for job in jobs if _first_read(snap, job[0])]
    total = 0
    for job in files:
        snap.input_of[job[1]] = given
        with contextlib.suppress(OSError):  # the reader says why
            total += job[0].stat().st_size
    workers = min(os.cpu_count() or 1, len(files))
    with gc_paused():  # objects live as long as the scan
        if early is not None or (workers > 1 and total >= PARALLEL_OBJECT_BYTES):
            _index_all(snap, _parallel_loads(files, workers, early))
        else:
            _index_all(snap, map(_load_packed, files))


def _parallel_loads(files: Sequence[ObjectJob], workers: int, early: EarlyLoads | None = None) -> Iterator[FileLoad]:
    """Each file's load, in order, parsed on a pool of forked workers (that of `early`, which may have started
    some). A worker that dies (a signal, the OOM killer) breaks the pool and fails every file not parsed yet: those
    are parsed again one at a time in a fresh single worker, so that a crash is pinned on the one file that causes
    it, which becomes one problem, and never reaches this process."""
    alone: ProcessPoolExecutor | None = None
    with contextlib.ExitStack() as stack:
        pool = early.pool if early is not None else stack.enter_context(worker_pool(workers))
        futures = [(early.take(job) if early is not None else None) or _submit(pool, job) for job in files]
        try:
            for job, future in zip(files, futures, strict=True):
                try:
                    yield future.result()
                    continue
                except BrokenProcessPool:
                    pass
                alone = alone or worker_pool(1)
                try:
                    yield alone.submit(_load_packed, job).result()
                except BrokenProcessPool:
                    alone.shutdown()
                    alone = None
                    yield FileLoad([], [Problem(job[1], "the process parsing this file died (killed by a signal, "
                                                        "or out of memory); skipped")], [])
        finally:
            if alone is not None:
                alone.shutdown()


def _submit(pool: ProcessPoolExecutor, job: ObjectJob) -> Future[FileLoad]:
    """`_load_packed(job)` on `pool`; when the pool is broken already, a future that says so."""
    try:
        return pool.submit(_load_packed, job)
    except BrokenProcessPool as exc:
        failed: Future[FileLoad] = Future()
        failed.set_exception(exc)
        return failed


def _load_packed(job: ObjectJob) -> FileLoad:
    """`load_object_file` with its objects packed (`pack_file`; run in a worker, so that compression is done there)."""
    load = load_object_file(job)
    load.objects, load.dictionary = pack_file(load.objects)
    return load


def _index_all(snap: Snapshot, loads: Iterable[FileLoad]) -> None:
    for load in loads:
        snap.problems.extend(load.problems)
        snap.scrubber.add_values(load.secrets)
        unpack = unpacker(load.dictionary)
        for loaded in load.objects:
            snap.add_loaded(loaded, unpack)
