"""Redact a bundle into a new one (`argo-doctor redact BUNDLE -o OUT`), with the `Redactor` that `collect` writes with.

The source is a bundle folder or tarball (extracted with `bundle.extract`, its limits and refusals); the output a
folder, or a tarball when its name ends in `.tar.gz`, `.tgz` or `.tar`. Two passes: the first reads every object
file to learn the bundle's Secret values, the second writes each file:

- `objects/**` object files are re-serialised in their own format, every object through `Redactor.obj`: YAML stays
  YAML (one document per document, multi-line strings as literal blocks, comments dropped), JSON stays JSON
  (indented by 2); an empty document is not written. A file the reader cannot parse (or refuses: too large, binary,
  an alias bomb) is copied through the text redaction instead, and reported.
- `audit/**`: each event's `requestObject` and `responseObject` through `Redactor.obj` (a patch of a Secret read as
  a Secret), its other strings through `Redactor.text` but the fields that identify the request (user, objectRef,
  IDs, times); an event nothing changes in keeps its line byte for byte.
- `repo/**` is copied as it is (templates must stay what Helm renders), but `values*.yaml`, which hold settings.
- Every other file (`logs/**`, `metrics/**`, `bundle.yaml`, `clock.yaml`, anything else) is copied line by line
  through `Redactor.lines`: a line that matches nothing is written byte for byte.

Text is read as UTF-8 with `surrogateescape`: bytes that are not UTF-8 (binary junk in a log) go through the patterns
as they are and come out unchanged, so that a redacted bundle differs from its source only where a secret was. A line
longer than MAX_TEXT_LINE is redacted in pieces of that size. A gzip file is redacted inside and written as gzip again,
with the audit reader's expansion limits; a file compressed otherwise cannot be redacted and is not copied. Hidden
files, links that lead outside the bundle and anything that is not a regular file are not copied either; each is one
problem. Redaction is idempotent: redacting the output again writes the same bytes (tarballs included: entries in
order, mode 0644, no owner, time 0).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tarfile
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import yaml

from argo_doctor.errors import ConfigError, InputError
from argo_doctor.model import Problem
from argo_doctor.snapshot import gc_paused
from argo_doctor.sources.audit import MAX_AUDIT_LINE, GzipLimit, bounded_blocks
from argo_doctor.sources.bundle import BUNDLE_MARKERS, TARBALL_SUFFIXES, extract
from argo_doctor.sources.files import UnsafeInput, is_dir, open_input
from argo_doctor.sources.objects import OBJECT_SUFFIXES, read_documents
from argo_doctor.sources.redact import Redactor

MAX_TEXT_LINE = MAX_AUDIT_LINE
"""A line longer than this (16 MiB) is redacted in pieces of this size: memory stays bounded whatever the input."""
BLOCK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_COMPRESSED = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip", b"\x28\xb5\x2f\xfd": "zstd",
               b"7z\xbc\xaf\x27\x1c": "7z"}
"""Compressed formats whose content the text redaction cannot see: such a file is not copied."""
_AUDIT_KEPT = frozenset({
    "kind", "apiVersion", "level", "auditID", "stage", "verb", "user", "impersonatedUser", "objectRef", "sourceIPs",
    "requestReceivedTimestamp", "stageTimestamp",
})
"""Fields of an audit event that identify the request: never changed."""
_AUDIT_BODIES = ("requestObject", "responseObject")
_Stream = BinaryIO | gzip.GzipFile
_BODY_KINDS = {"secrets": ("v1", "Secret"), "configmaps": ("v1", "ConfigMap")}
"""What the body of a request on these core resources is, when it names no kind (a patch)."""


def redact_bundle(source: Path, out: Path, problems: list[Problem], *, force: bool = False) -> Counter[str]:
    """Write a redacted copy of the bundle `source` (folder or tarball) to `out` (folder, or tarball by its name) and
    return what was replaced, by kind of secret. ConfigError when `out` is or is inside the source (or holds it), or
    exists and is not empty, unless `force` (then files are written over; others already there stay); InputError when
    the source is no bundle or cannot be read. Each file that cannot be read or redacted is one problem."""
    packed = out.name.endswith(TARBALL_SUFFIXES)
    _check_output(source, out, packed, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        made: list[Path] = []

        def work() -> Path:
            """A working folder beside the output (the same file system), made when a tarball needs it."""
            if not made:
                made.append(Path(stack.enter_context(
                    tempfile.TemporaryDirectory(prefix=".argo-doctor-redact-", dir=out.parent))))
            return made[0]

        root, prefix = _source_root(source, work, problems)
        target = work() / "out" if packed else out
        rewrite = _Rewrite(root, prefix, target, problems)
        with gc_paused():  # a page decodes into a million objects, none in a cycle: 0.5 of 3.5 s on the live bench
            rewrite.run()
        note = rewrite.redactor.note()
        if note is not None:
            problems.append(Problem(str(source), note, "note"))
        if packed:
            write_tarball(target, out)
    return Counter(rewrite.redactor.counts)


def _check_output(source: Path, out: Path, packed: bool, force: bool) -> None:
    where, origin = out.resolve(), source.resolve()
    if where == origin or where.is_relative_to(origin) or (is_dir(source) and origin.is_relative_to(where)):
        raise ConfigError(f"{out}: the output must be outside the bundle being redacted, and not hold it")
    if not os.path.lexists(out):
        return
    if packed:
        if is_dir(out):
            raise ConfigError(f"{out}: a folder, not a tarball")
        if not force:
            raise ConfigError(f"{out} exists; use --force to replace it")
    elif not is_dir(out):
        raise ConfigError(f"{out} exists and is not a folder")
    elif not force and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty; use --force to write into it")


def _source_root(source: Path, work: Callable[[], Path], problems: list[Problem]) -> tuple[Path, str]:
    """The folder to read and the prefix of the paths problems name: a tarball is extracted under `work()`."""
    if is_dir(source):
        root, prefix = source, ""
    elif not os.path.lexists(source):
        raise InputError(f"{source}: no such file or directory")
    elif not source.name.endswith(TARBALL_SUFFIXES):
        raise InputError(f"{source}: not a bundle folder or tarball ({', '.join(TARBALL_SUFFIXES)})")
    else:
        dest = work() / "source"
        dest.mkdir()
        root, prefix = extract(source, dest, problems), f"{source.name}!/"
    if not any(os.path.lexists(root / marker) for marker in BUNDLE_MARKERS):
        raise InputError(f"{source}: not a bundle (no {', '.join(BUNDLE_MARKERS)} in it)")
    return root, prefix


class _Rewrite:
    """One bundle folder, redacted into `out`."""

    def __init__(self, root: Path, prefix: str, out: Path, problems: list[Problem]) -> None:
        self.root, self.prefix, self.out, self.problems = root, prefix, out, problems
        self.redactor = Redactor()

    def run(self) -> None:
        """Learn the Secret values of every object file, then write every file."""
        files = self._files()
        unparsed = {rel: self._learn(rel) for rel in files if _is_object_file(rel)}
        self.out.mkdir(parents=True, exist_ok=True)
        for rel in files:
            target = self.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                if rel in unparsed:
                    self._objects(rel, target, unparsed[rel])
                elif rel.parts[0] == "audit":
                    self._text(rel, target, self._audit_lines)
                elif rel.parts[0] == "repo" and not _is_values_file(rel):
                    self._copy(rel, target)
                else:
                    self._text(rel, target, self.redactor.lines)
            except OSError as exc:
                reason = str(exc.strerror) if isinstance(exc, UnsafeInput) else f"cannot read: {exc.strerror or exc}"
                self.problems.append(Problem(self._display(rel), reason))
                with contextlib.suppress(OSError):
                    target.unlink()

    def _files(self) -> list[Path]:
        """The files of the bundle, relative to its root, in order; hidden ones and links to folders reported."""
        found: list[Path] = []
        for folder, dirs, names in os.walk(self.root):
            here = Path(folder).relative_to(self.root)
            for name in sorted(dirs):
                if name.startswith(".") or (Path(folder) / name).is_symlink():
                    what = "a hidden folder" if name.startswith(".") else "a link to a folder"
                    self.problems.append(Problem(self._display(here / name), f"{what}; not copied"))
                    dirs.remove(name)
            for name in names:
                if name.startswith("."):
                    self.problems.append(Problem(self._display(here / name), "a hidden file; not copied"))
                else:
                    found.append(here / name)
        return sorted(found, key=lambda rel: rel.as_posix())

    def _display(self, rel: Path) -> str:
        text = self.prefix + rel.as_posix()
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    def _learn(self, rel: Path) -> Problem | None:
        """Learn the Secret values of one object file; the first problem reading it, if any."""
        problems: list[Problem] = []
        for _, doc in read_documents(self.root / rel, self._display(rel), problems, self.root):
            for raw in doc if isinstance(doc, list) else [doc]:
                if isinstance(raw, dict):
                    self.redactor.learn(raw)
        return problems[0] if problems else None

    def _objects(self, rel: Path, target: Path, unparsed: Problem | None) -> None:
        """An object file written again in its format, each object redacted; through the text redaction when it
        does not parse (`unparsed` says why, or the second reading when the file changed since the first)."""
        if unparsed is not None:
            self._text(rel, target, self.redactor.lines, unparsed)
            return
        problems: list[Problem] = []
        with target.open("wb") as out:
            written = 0
            for form, doc in read_documents(self.root / rel, self._display(rel), problems, self.root):
                if doc is None:  # an empty document: writing it as `null` would add a document to each pass
                    continue
                done = self._document(doc)
                if form == "json":
                    out.write(msgspec.json.format(msgspec.json.encode(done), indent=2) + b"\n")
                else:
                    text = yaml.dump(done, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
                    out.write((b"---\n" if written else b"") + text.encode())
                written += 1
        if problems:
            self._text(rel, target, self.redactor.lines, problems[0])

    def _document(self, doc: Any) -> Any:
        if isinstance(doc, dict):
            return self.redactor.obj(doc)
        if isinstance(doc, list):  # a JSON array of objects
            return [self.redactor.obj(item) if isinstance(item, dict) else item for item in doc]
        return doc

    def _copy(self, rel: Path, target: Path) -> None:
        with open_input(self.root / rel, self.root) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out, BLOCK)

    def _text(self, rel: Path, target: Path, redact: Callable[[Iterator[str]], Iterator[str]],
              unparsed: Problem | None = None) -> None:
        """A file copied line by line through `redact` (plain, or gzip and written as gzip)."""
        display = self._display(rel)
        if unparsed is not None:
            self.problems.append(Problem(unparsed.location, f"not read as objects ({unparsed.message}): copied line "
                                                            "by line through the text redaction"))
        with open_input(self.root / rel, self.root) as raw:
            head = raw.read(8)
            raw.seek(0)
            for magic, name in _COMPRESSED.items():
                if head.startswith(magic):
                    self.problems.append(Problem(display, f"compressed with {name}: its content cannot be redacted; "
                                                          "not copied"))
                    return
            packed = head.startswith(_GZIP_MAGIC)
            with target.open("wb") as sink, _writer(sink, packed) as out:
                source: _Stream = gzip.GzipFile(fileobj=raw, mode="rb") if packed else raw
                lines = (line.decode("utf-8", "surrogateescape") for line in self._lines(source, raw, display))
                for line in redact(lines):
                    out.write(line.encode("utf-8", "surrogateescape"))

    def _lines(self, source: _Stream, raw: BinaryIO, display: str) -> Iterator[bytes]:
        """The lines of a file with their endings, longer ones in pieces of MAX_TEXT_LINE; a gzip file while it
        expands within the audit reader's limits (past them, or where it is damaged, one problem and the end)."""
        pending = b""
        try:
            for block in bounded_blocks(source.read, raw, source is not raw):
                pending += block
                start = 0
                while (end := pending.find(b"\n", start)) >= 0:
                    yield pending[start:end + 1]
                    start = end + 1
                pending = pending[start:]
                while len(pending) >= MAX_TEXT_LINE:
                    yield pending[:MAX_TEXT_LINE]
                    pending = pending[MAX_TEXT_LINE:]
        except GzipLimit as exc:
            self.problems.append(Problem(display, f"{exc}: the rest is not copied"))
        except (OSError, EOFError, zlib.error) as exc:
            self.problems.append(Problem(display, f"gzip stream damaged or cut short ({exc}): what came before it "
                                                  "is copied"))
        if pending:
            yield pending

    def _audit_lines(self, lines: Iterator[str]) -> Iterator[str]:
        """Audit log lines: each event redacted by its fields, other lines as text."""
        for line in lines:
            body = line.rstrip("\r\n")
            end = line[len(body):]
            event: Any = None
            if body.lstrip().startswith("{"):
                with contextlib.suppress(msgspec.DecodeError, UnicodeEncodeError, RecursionError):
                    event = msgspec.json.decode(body.encode())
            if not isinstance(event, dict):
                yield self.redactor.text(body) + end
                continue
            done = self._event(event)
            yield (line if done is event else msgspec.json.encode(done).decode() + end)

    def _event(self, event: dict[str, Any]) -> dict[str, Any]:
        ref = event.get("objectRef")
        hint = _BODY_KINDS.get(str(ref.get("resource"))) if isinstance(ref, dict) and not ref.get("apiGroup") else None
        pairs: list[tuple[str, Any]] = []
        for key, value in event.items():
            done: Any
            if key in _AUDIT_KEPT:
                done = value
            elif key in _AUDIT_BODIES and isinstance(value, dict):
                done = self.redactor.obj(value, hint)
            elif key in _AUDIT_BODIES and isinstance(value, list) and hint == _BODY_KINDS["secrets"]:
                done = self.redactor.secret_patch(value)
            else:
                done = self.redactor.strings(value)
            pairs.append((key, done))
        return event if all(done is event[key] for key, done in pairs) else dict(pairs)


def _is_object_file(rel: Path) -> bool:
    return rel.parts[0] == "objects" and rel.suffix.lower() in OBJECT_SUFFIXES


def _is_values_file(rel: Path) -> bool:
    return rel.name.startswith("values") and rel.suffix.lower() in (".yaml", ".yml")


@contextlib.contextmanager
def _writer(sink: BinaryIO, packed: bool) -> Iterator[_Stream]:
    """`sink`, or a gzip stream into it without a name or time (the same input writes the same bytes)."""
    if not packed:
        yield sink
        return
    with gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0) as out:
        yield out


class _Dumper(yaml.CSafeDumper):
    """YAML as kubectl writes it, near enough: multi-line strings as literal blocks."""


def _represent_str(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _represent_str)


def write_tarball(folder: Path, out: Path) -> None:
    """Write the files under `folder` as a tarball at `out` (gzip unless it ends in `.tar`), under one top folder
    named after it: regular files only, in order, mode 0644, no owner, time 0; replaced at once when complete."""
    top = next(out.name[: -len(suffix)] for suffix in TARBALL_SUFFIXES if out.name.endswith(suffix)) or "bundle"
    files = sorted((path for path in folder.rglob("*") if path.is_file()), key=lambda p: p.relative_to(folder).parts)
    handle, part = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with (os.fdopen(handle, "wb") as sink, _writer(sink, not out.name.endswith(".tar")) as stream,
              tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar):
            for path in files:
                info = tarfile.TarInfo(f"{top}/{path.relative_to(folder).as_posix()}")
                info.size, info.mode, info.mtime = path.stat().st_size, 0o644, 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with path.open("rb") as data:
                    tar.addfile(info, data)
        os.chmod(part, 0o644)
        os.replace(part, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
