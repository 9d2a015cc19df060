"""Read Kubernetes objects from YAML and JSON files as kubectl writes them.

Single documents, multi-document YAML, `kind: List` (and typed `*List`) and JSON are all
accepted. A malformed document is reported with its file and line, and parsing resumes at
the next document separator.

Hostile files cost no more than their size, and never the process:

- a file over `MAX_OBJECT_FILE_BYTES` is refused from its size (fstat), never read; a NUL byte
  in its first block marks it binary before the rest is read;
- libyaml's composer recurses in C, and a few ten thousand levels of nesting crash the process.
  A bound computed from bytes alone (`_may_nest_deeper`) proves nearly every file shallow; the
  others are composed by an iterative composer that refuses a document nested more than
  `MAX_YAML_DEPTH` levels deep, and the other documents of the file still load;
- a document with a line over `MAX_YAML_LINE_BYTES` is skipped before anything parses it;
- aliases are expanded in the mind before anyone walks a document that uses anchors: past
  `MAX_EXPANDED_NODES` nodes or `MAX_EXPANDED_BYTES` of scalars it is an alias bomb.

`load_yaml_file` reads the single-document YAML settings files (bundle.yaml, clock.yaml, a
chart's values.yaml and Chart.yaml) with the same guards.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgspec
import yaml
from yaml.composer import ComposerError
from yaml.events import (
    AliasEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.scanner import ScannerError

from argo_doctor.model import Problem
from argo_doctor.sources import fast_yaml
from argo_doctor.sources.files import UnsafeInput, open_input, read_input
from argo_doctor.sources.goyaml import GoLoader
from argo_doctor.sources.redact import SecretValue, redact_object, secret_values

MAX_OBJECT_FILE_BYTES = 1 << 30
"""An object file larger than this (1 GiB) is refused unread. `kubectl get pods -A -o json` on 50,000
pods writes about 600 MB (some 12 KB a pod): the largest file a real cluster produces fits."""

MAX_SETTINGS_FILE_BYTES = 64 << 20
"""bundle.yaml, clock.yaml and a chart's values.yaml or Chart.yaml larger than this (64 MiB) are refused unread."""

MAX_YAML_DEPTH = 256
"""A YAML document nested more than this many collections deep is refused (Kubernetes objects stay
below 64, CRD schemas included)."""

MAX_YAML_LINE_BYTES = 16 << 20
"""A YAML document with a line longer than this (16 MiB, ten times the largest object etcd stores) is
skipped unparsed: a scalar that long is no Kubernetes object, and parsing it costs several times its size."""

MAX_EXPANDED_NODES = 1_000_000
"""A document whose aliases expand past this many nodes is refused as an alias bomb."""

MAX_EXPANDED_BYTES = 64 << 20
"""A document whose aliases expand past this many bytes of scalars (64 MiB, some 40 objects of the largest
size etcd stores; kubectl never writes anchors) is refused as an alias bomb."""

HEAD_BYTES = 8192
"""The first block of a file, checked for NUL bytes before the rest is read."""

OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
_DOC_SEPARATOR = re.compile(rb"^---", re.M)
_ANCHOR = re.compile(rb"&(?<![^\s\[{,]&)[^\s\]},]")  # `&` first, so that re looks for it at memchr speed
_JSON_BYTE = re.compile(r"byte (\d+)")
_NOT_SPACE = re.compile(rb"\S")

_PREFIX_LIMIT = 64
"""`_may_nest_deeper` proves block nesting shallow when no line starts with this many indentation and
indicator characters."""
_PREFIX_CHUNK = 16 << 20
_PREFIXES = bytes(
    0x20 if c in b" \t?:-\xef\xbb\xbf" else 0x0A if c in b"\n\r\x85\xa8\xa9" else 0x78 for c in range(256)
)
"""Maps the bytes a line prefix may hold (spaces, tabs, the `- ? :` indicators, a BOM, which libyaml skips) to a
space, the bytes that end a line (the last byte of NEL, LS and PS too) to a newline, and the others to `x`."""
_LONG_PREFIX = b"\n" + b" " * _PREFIX_LIMIT
_OPENS_AFTER = bytes(1 if c >= 0x80 or c in b" \t\r\n[]{},:?-\"'!&*|>" else 0 for c in range(256))
"""Whether a `[` or `{` right after this byte may open a collection that libyaml composes: after a blank, a line
break, an indicator, a quote or a non-ASCII byte (a BOM, NEL, LS, PS). After any other byte (a letter, a digit, `.`,
`/`, `=`…) it is inside a scalar (`fieldPath: spec.containers{app}`, in every Event about a container), or it ends a
plain scalar in a flow collection, where libyaml stops with an error before composing anything deeper; libyaml
wants a blank between a tag or an anchor and a collection. (yaml-rs takes `&x{` without one, but fast_yaml sends an
anchor after a `:` to PyYAML, and yaml-rs itself stops at 256 levels.)"""
_DOCUMENT_START = re.compile(rb"\n---(?=[ \t\r\n]|\Z)")


TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id"

Container = tuple[str, tuple[str, ...]]
"""A container's image and the programs it runs (`container_programs`)."""
ObjectHead = tuple[str, str, str, str, str, dict[str, str], tuple[dict[str, Any], ...], str, str, str,
                   tuple[Container, ...]]
"""(apiVersion, kind, name (`generateName` for an object created with one), namespace, uid, labels, ownerReferences,
spec.nodeName, tracking id, creationTimestamp, containers of a pod or of a workload's pod template): what the
snapshot's indexes and its components need without decoding the whole object."""
POD_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet"})
"""The kinds whose containers the head keeps (a pod's, a workload's pod template's)."""
WRAPPERS = frozenset({"sh", "bash", "ash", "dash", "-c", "-ec", "-ce", "-ex", "-xe", "-e", "--", "exec", "env",
                      "tini", "dumb-init", "entrypoint.sh", "docker-entrypoint.sh", "uid_entrypoint.sh"})
"""Words that start a container's command without being its program: shells and their `-c`, init shims, entrypoint
scripts that run the rest of the line."""


def mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a dict, else an empty dict: for walking objects that may be malformed."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


_INT = re.compile(r"-?[0-9]{1,19}")
"""An integer as Kubernetes writes one (int64: at most 19 digits), in ASCII digits only: `str.isdigit` also takes
`²`, which `int` refuses."""


def as_int(value: Any, default: int = 0) -> int:
    """An integer field that may have been written as a string; `default` when it is neither, or past int64."""
    if isinstance(value, str) and _INT.fullmatch(text := value.strip()):
        value = int(text)
    if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 63:
        return value
    return default


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def container_programs(container: dict[str, Any]) -> tuple[str, ...]:
    """What a container runs: the first two words of its command then args, as base names, before the first flag,
    wrappers skipped (`sh -c "entrypoint.sh argocd-repo-server --redis …"` → argocd-repo-server; `/shared/argocd-dex
    rundex` → argocd-dex, rundex; `[dashboard]` with the image's own entrypoint → dashboard)."""
    found: list[str] = []
    for part in (*as_list(container.get("command")), *as_list(container.get("args"))):
        for word in str(part).split():
            base = word.rstrip("/").rsplit("/", 1)[-1]
            if word in WRAPPERS or base in WRAPPERS:
                continue
            if word.startswith("-") or len(found) == 2:
                return tuple(found)
            found.append(base)
    return tuple(found)


def pod_containers(raw: dict[str, Any]) -> tuple[Container, ...]:
    """(image, programs) of each container of a pod, or of a workload's pod template; () for other kinds."""
    kind = raw.get("kind")
    if kind not in POD_KINDS:
        return ()
    spec = mapping(raw.get("spec"))
    if kind != "Pod":
        spec = mapping(mapping(spec.get("template")).get("spec"))
    return tuple((str(c.get("image") or ""), container_programs(c))
                 for c in map(mapping, as_list(spec.get("containers"))))


def object_head(raw: dict[str, Any]) -> ObjectHead:
    """The index fields of an object."""
    meta = mapping(raw.get("metadata"))
    owners = meta.get("ownerReferences")
    tracking = mapping(meta.get("annotations")).get(TRACKING_ANNOTATION)
    node = mapping(raw.get("spec")).get("nodeName") if raw.get("kind") == "Pod" else None
    return (
        str(raw.get("apiVersion") or ""),
        str(raw.get("kind") or ""),
        str(meta.get("name") or meta.get("generateName") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("uid") or ""),
        {str(k): str(v) for k, v in mapping(meta.get("labels")).items()},
        tuple(o for o in owners if isinstance(o, dict)) if isinstance(owners, list) else (),
        str(node or ""),
        str(tracking or ""),
        str(meta.get("creationTimestamp") or ""),
        pod_containers(raw),
    )


@dataclass(frozen=True, slots=True)
class LoadedObject:
    """An object loaded by a worker: redacted, encoded as compact JSON, with its index fields."""

    location: str
    head: ObjectHead
    body: bytes


@dataclass
class FileLoad:
    """Everything read from one object file: objects, problems, and Secret values to scrub; once packed
    (`snapshot.pack_file`), the dictionary its bodies are compressed against (b"": none)."""

    objects: list[LoadedObject]
    problems: list[Problem]
    secrets: list[SecretValue]
    dictionary: bytes = b""


ItemType = tuple[str, str]
"""(apiVersion, kind) of the items of a list file whose items may not say it: a cluster-info dump's lists."""

ObjectJob = tuple[Path, str] | tuple[Path, str, ItemType | None]
"""(path, display name) of an object file, and the ItemType of its items when the file says what they are."""


def load_object_file(job: ObjectJob) -> FileLoad:
    """Read, redact and encode every object of one file (runs in a worker process)."""
    path, display = job[0], job[1]
    item_type = job[2] if len(job) > 2 else None
    problems: list[Problem] = []
    secrets: list[SecretValue] = []
    objects = []
    try:
        for raw in read_object_file(path, display, problems, item_type):
            try:
                values = secret_values(raw.data)
                data = redact_object(raw.data)
                objects.append(LoadedObject(raw.location, object_head(data), _ENCODER.encode(data)))
            except (TypeError, ValueError, OverflowError, RecursionError) as exc:
                reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                problems.append(Problem(raw.location, f"cannot index this object ({reason}); skipped"))
                continue
            secrets.extend(values)
    except MemoryError:
        return FileLoad([], [Problem(display, "not enough memory to read this file; skipped")], [])
    return FileLoad(objects, problems, secrets)


_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class RawObject:
    """An object as read from a file, with where it came from."""

    data: dict[str, Any]
    location: str


class AliasBomb(ValueError):
    """A YAML document whose aliases expand beyond the limits, or refer to themselves."""


def expanded_size(root: Any) -> tuple[int, int]:
    """(nodes, bytes of scalars) of `root` as if every shared reference were copied; AliasBomb past
    MAX_EXPANDED_NODES or MAX_EXPANDED_BYTES."""
    max_nodes, max_bytes = MAX_EXPANDED_NODES, MAX_EXPANDED_BYTES
    memo: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def size(node: Any) -> tuple[int, int]:
        if not isinstance(node, dict | list):
            return 1, len(node) if isinstance(node, str | bytes) else 1
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise AliasBomb("a YAML alias refers to the node that contains it")
        active.add(key)
        nodes, length = 1, 0
        pairs = node.items() if isinstance(node, dict) else ((None, child) for child in node)
        for name, child in pairs:
            child_nodes, child_length = size(child)
            nodes += child_nodes
            length += child_length + (len(name) if isinstance(name, str) else 0)
            if nodes > max_nodes:
                raise AliasBomb(f"YAML aliases expand to more than {max_nodes:,} nodes (alias bomb)")
            if length > max_bytes:
                raise AliasBomb(f"YAML aliases expand to more than {max_bytes:,} bytes (alias bomb)")
        active.discard(key)
        memo[key] = nodes, length
        return nodes, length

    return size(root)


class _TooDeep(Exception):
    """A YAML document nested more than the limit: the 0-based line where it starts, and where it crossed it."""

    def __init__(self, document_line: int, line: int) -> None:
        super().__init__(document_line, line)
        self.document_line = document_line
        self.line = line


@dataclass(slots=True)
class _Open:
    """A collection being composed, and for a mapping the key that waits for its value."""

    node: SequenceNode | MappingNode
    key: Node | None = None


LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
"""libyaml's own error past 1,000 levels (libyaml 0.2.6, in the PyYAML 6.0.4 wheels). In a flow collection its
scanner looks that far ahead for a key before the composer is given the level past MAX_YAML_DEPTH, so that a deep
`[[[...` meets this error first; it is told as the composer's own (`_TooDeep`)."""


class _GuardedLoader(GoLoader):
    """GoLoader (libyaml, scalars as Kubernetes reads them) with an iterative composer that refuses a document nested
    more than MAX_YAML_DEPTH collections deep (libyaml's own composer recurses in C and crashes the process)."""

    _first = -1
    """The 0-based line of the first event of the document being composed, -1 outside one."""

    @contextmanager
    def _depth_limits(self) -> Iterator[None]:
        """libyaml's nesting error as `_TooDeep`, at the line where libyaml met it."""
        try:
            yield
        except ScannerError as exc:
            mark: Any = exc.problem_mark
            if exc.problem != LIBYAML_TOO_DEEP or mark is None:
                raise
            raise _TooDeep(self._first if self._first >= 0 else mark.line, mark.line) from exc

    def check_node(self) -> bool:
        """Whether another document follows."""
        with self._depth_limits():
            if self.check_event(StreamStartEvent):
                self.get_event()
            return not self.check_event(StreamEndEvent)

    def get_node(self) -> Node | None:
        """The root node of the next document."""
        with self._depth_limits():
            return None if self.check_event(StreamEndEvent) else self._compose_document()

    def get_single_node(self) -> Node | None:
        """The root node of the only document (None for an empty stream); ComposerError if there are more."""
        with self._depth_limits():
            self.get_event()
            document = None if self.check_event(StreamEndEvent) else self._compose_document()
            if not self.check_event(StreamEndEvent):
                event = self.get_event()
                first: Any = document.start_mark if document is not None else None
                second: Any = event.start_mark if event is not None else None
                raise ComposerError("expected a single document in the stream", first, "but found another document",
                                    second)
            self.get_event()
            return document

    def _compose_document(self) -> Node:
        self.get_event()  # DOCUMENT-START
        anchors: dict[str, Node] = {}
        stack: list[_Open] = []
        resolve = cast(Callable[..., str], self.resolve)
        first = self._first = -1
        while True:
            event = self.get_event()
            mark: Any = event.start_mark if event is not None else None
            if first < 0:
                first = self._first = mark.line if mark is not None else 0
            node: Node
            if isinstance(event, AliasEvent):
                if event.anchor not in anchors:
                    raise ComposerError(None, None, "found undefined alias", mark)
                node = anchors[event.anchor]
            elif isinstance(event, NodeEvent):
                if event.anchor is not None and event.anchor in anchors:
                    raise ComposerError("found duplicate anchor; first occurrence", anchors[event.anchor].start_mark,
                                        "second occurrence", mark)
                if isinstance(event, ScalarEvent):
                    tag = event.tag
                    if tag in (None, "!"):
                        tag = resolve(ScalarNode, event.value, event.implicit)
                    end: Any = event.end_mark
                    node = ScalarNode(tag, event.value, mark, end, style=event.style)
                else:
                    assert isinstance(event, SequenceStartEvent | MappingStartEvent)
                    if len(stack) >= MAX_YAML_DEPTH:
                        raise _TooDeep(first, mark.line if mark is not None else 0)
                    kind = SequenceNode if isinstance(event, SequenceStartEvent) else MappingNode
                    tag = event.tag if event.tag not in (None, "!") else resolve(kind, None, event.implicit)
                    node = kind(tag, [], mark, None, flow_style=event.flow_style)
                if event.anchor is not None:
                    anchors[event.anchor] = node
                if isinstance(node, SequenceNode | MappingNode):
                    stack.append(_Open(node))
                    continue
            else:  # SEQUENCE-END or MAPPING-END
                done = stack.pop()
                done.node.end_mark = event.end_mark if event is not None else None
                node = done.node
            if not stack:
                break
            top = stack[-1]
            if isinstance(top.node, SequenceNode):
                top.node.value.append(node)
            elif top.key is None:
                top.key = node
            else:
                top.node.value.append((top.key, node))
                top.key = None
        self.get_event()  # DOCUMENT-END
        self._first = -1
        return node


def _may_nest_deeper(data: bytes) -> bool:
    """Whether a document of this YAML could nest more than MAX_YAML_DEPTH collections deep, from bytes alone: False
    proves it cannot, so that libyaml's recursive composer is safe on it.

    A block collection starts after nothing but indentation and `- `, `? `, `: ` indicators on its line (libyaml
    refuses one after a scalar or a tag on the same line), and each column holds at most two levels (a mapping,
    and the sequence that is the value of one of its keys), so block nesting is below 2 × the longest such line
    prefix. Every flow collection that holds something starts with a `[` or `{` not directly closed, after a byte
    that may precede one (`_OPENS_AFTER`: not a letter, a digit, `.`, `/`…, as in `spec.containers{app}`), and each
    `[` may hold one implicit single-pair mapping. A document ends at a `---` line whatever it is in (a block
    scalar, a quoted scalar: there libyaml stops with an error), so flow nesting is counted per document."""
    if _long_prefix(data):
        return True
    budget = MAX_YAML_DEPTH - 2 * _PREFIX_LIMIT - 1
    if not _flow_over(data, 0, len(data), budget, empty=True):
        return False
    return any(_flow_over(data, start, end, budget) for start, end in fast_yaml.document_spans(data))


def _flow_over(data: bytes, start: int, end: int, budget: int, empty: bool = False) -> bool:
    """Whether the bound of flow nesting in data[start:end], 2 × `[` + `{` that may open a collection, exceeds
    `budget`; an empty `[]` or `{}` is counted only with `empty` (for a first, cheaper, look at the whole file)."""
    sequences = _openings(data, b"[", budget // 2, start, end, empty)
    return 2 * sequences + _openings(data, b"{", budget - 2 * sequences, start, end, empty) > budget


def _openings(data: bytes, byte: bytes, limit: int, start: int, end: int, empty: bool) -> int:
    """How many `byte` (`[` or `{`) in data[start:end] may open a collection (see _OPENS_AFTER), up to limit + 1;
    one closed right after it (`[]`) only with `empty`. bytes.find scans at memchr speed, several times faster than
    bytes.count, and the scan stops past the limit."""
    close = 0x5D if byte == b"[" else 0x7D
    count, at = 0, data.find(byte, start, end)
    while at >= 0 and count <= limit:
        if (at == 0 or _OPENS_AFTER[data[at - 1]]) and (empty or at + 1 >= end or data[at + 1] != close):
            count += 1
        at = data.find(byte, at + 1, end)
    return count


def _long_prefix(data: bytes) -> bool:
    """Whether a line starts with _PREFIX_LIMIT or more prefix bytes (looked for in translated chunks that overlap
    by a prefix, so that only one chunk is copied at a time)."""
    for start in range(0, len(data), _PREFIX_CHUNK):
        chunk = data[start:start + _PREFIX_CHUNK + _PREFIX_LIMIT].translate(_PREFIXES)
        if _LONG_PREFIX in chunk or (start == 0 and chunk.startswith(_LONG_PREFIX[1:])):
            return True
    return False


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, max(0, offset)) + 1


def _is_binary(data: bytes, display: str, problems: list[Problem]) -> bool:
    """Whether `data` holds a NUL byte (reported with its line)."""
    nul = data.find(b"\x00")
    if nul >= 0:
        location = f"{display}:{_line_of_offset(data, nul)}"
        problems.append(Problem(location, "binary data (NUL byte), not YAML or JSON; skipped"))
    return nul >= 0


def _read_guarded(
    path: Path, display: str, problems: list[Problem], limit: int, root: Path | None = None
) -> bytes | None:
    """The content of a regular input file; None, with one problem, when it is larger than `limit` (known
    from its size before reading), binary (a NUL byte in its first block stops the reading there) or unreadable."""
    try:
        with open_input(path, root) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                problems.append(Problem(display, f"{size:,} bytes, over the limit of {limit:,} for one file; skipped"))
                return None
            data = handle.read(HEAD_BYTES)
        if _is_binary(data, display, problems):
            return None
        if len(data) == HEAD_BYTES:
            data = read_input(path, root, limit)
    except OSError as exc:
        reason = str(exc.strerror) if isinstance(exc, UnsafeInput) else f"cannot read: {exc.strerror or exc}"
        problems.append(Problem(display, reason))
        return None
    return None if _is_binary(data, display, problems) else data


def _utf8(data: bytes, display: str, problems: list[Problem]) -> bytes:
    """`data`, its bytes that are not UTF-8 replaced with U+FFFD (and reported)."""
    if data.isascii():
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of_offset(data, exc.start)
        problems.append(
            Problem(f"{display}:{line}", "not valid UTF-8; undecodable bytes were replaced with U+FFFD")
        )
        return data.decode("utf-8", errors="replace").encode("utf-8")
    return data


def _long_line(data: bytes, limit: int) -> tuple[int, int] | None:
    """(offset, length) of the first line longer than `limit` bytes. Such a line holds a whole window of
    limit/2 bytes aligned on a grid of that step, so only windows without a line break are looked at."""
    window = max(1, limit // 2)
    pos = 0
    while pos + window <= len(data):
        if data.find(b"\n", pos, pos + window) >= 0:
            pos += window
            continue
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        if end - start > limit:
            return start, end - start
        pos = end
    return None


def _drop_long_lines(data: bytes, display: str, problems: list[Problem]) -> bytes:
    """`data` with every document that holds a line over MAX_YAML_LINE_BYTES blanked (its line breaks kept, so that
    the lines of the others do not move), each reported."""
    limit = MAX_YAML_LINE_BYTES
    while (found := _long_line(data, limit)) is not None:
        offset, length = found
        begin = max((m.start() + 1 for m in _DOCUMENT_START.finditer(data, 0, offset)), default=0)
        after = _DOCUMENT_START.search(data, offset)
        end = after.start() + 1 if after is not None else len(data)
        line = _line_of_offset(data, offset)
        problems.append(Problem(f"{display}:{line}", f"a line of {length:,} bytes, over the limit of {limit:,} "
                                                     "for one YAML line; document skipped"))
        data = data[:begin] + b"\n" * data.count(b"\n", begin, end) + data[end:]
    return data


def _yaml_documents(
    data: bytes, display: str, problems: list[Problem]
) -> Iterator[tuple[int, Any, list[int]]]:
    """Yield (line, document, line of each `items` entry) for every document; on a syntax error,
    report it and resume at the next `---` at or after the line of the error. A document nested too
    deeply is reported, and reading resumes at the next `---` after the line where it crossed the limit
    (libyaml's scanner costs depth × tokens: the rest of the document is never scanned).

    Documents go through yaml-rs (`fast_yaml`) when they read the same there as in PyYAML, which is five to ten
    times faster; the others, files that may nest deeply and everything yaml-rs refuses go through PyYAML."""
    guarded = _may_nest_deeper(data)
    if guarded or not fast_yaml.file_supported(data):
        yield from _pyyaml_documents(data, display, problems, guarded)
        return
    base_line = 0
    position = 0
    for start, end in fast_yaml.document_spans(data):
        base_line += data.count(b"\n", position, start)
        position = start
        chunk = data[start:end]
        try:
            doc = fast_yaml.load(chunk)
            lines = fast_yaml.item_lines(chunk, doc)
        except fast_yaml.Unsupported:
            # with the next document's marker, so that an error at it reads as it does in the whole file; the empty
            # document the marker opens is not one of this file's (the next span reads it), as no empty one is
            yield from (found for found in _pyyaml_documents(data[start:end + 3], display, problems, False, base_line)
                        if found[1] is not None)
            continue
        if doc is not None:
            yield base_line + fast_yaml.root_line(chunk) + 1, doc, [base_line + line + 1 for line in lines]


def _pyyaml_documents(
    data: bytes, display: str, problems: list[Problem], guarded: bool, base_line: int = 0
) -> Iterator[tuple[int, Any, list[int]]]:
    """`_yaml_documents` by PyYAML, the lines counted from `base_line` (0-based), with the guarded composer when
    `guarded`."""
    while True:
        loader = _GuardedLoader(data) if guarded else GoLoader(data)
        local = 0
        try:
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    continue
                local = node.start_mark.line
                yield base_line + local + 1, loader.construct_document(node), _item_lines(node, base_line)
            return
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            local = mark.line if mark is not None else local
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            problems.append(Problem(f"{display}:{base_line + local + 1}", f"invalid YAML: {problem}"))
        except _TooDeep as exc:
            local = exc.line + 1
            problems.append(Problem(f"{display}:{base_line + exc.document_line + 1}",
                                    f"YAML nested more than {MAX_YAML_DEPTH} levels deep (line "
                                    f"{base_line + exc.line + 1}); document skipped"))
        except RecursionError:  # merge keys (`<<`) chained through aliases
            problems.append(Problem(f"{display}:{base_line + local + 1}", "YAML nested too deeply to read"))
        finally:
            loader.dispose()
        start = _offset_of_line(data, local)
        match = _DOC_SEPARATOR.search(data, start)
        if match is not None and match.start() == 0:  # the error is on a separator we started at
            match = _DOC_SEPARATOR.search(data, 1)
        if match is None:
            return
        base_line += data.count(b"\n", 0, match.start())
        data = data[match.start():]


def _item_lines(node: yaml.Node, base_line: int) -> list[int]:
    """The line of each entry of a top-level `items` sequence (a `kind: List`; `Items` in an old cluster-info
    dump), else []."""
    if not isinstance(node, yaml.MappingNode):
        return []
    found: dict[str, list[int]] = {}
    for key, value in node.value:
        name = getattr(key, "value", None)
        if name in ("items", "Items") and isinstance(value, yaml.SequenceNode):
            found.setdefault(name, [base_line + item.start_mark.line + 1 for item in value.value])
    return found.get("items", found.get("Items", []))


def _offset_of_line(data: bytes, line: int) -> int:
    """Offset of the start of 0-based `line` in `data` (len(data) if past the end)."""
    pos = 0
    for _ in range(line):
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            return len(data)
        pos = nxt + 1
    return pos


def _flatten(
    doc: Any, display: str, line: int, item_lines: list[int], problems: list[Problem]
) -> Iterator[RawObject]:
    """Yield the Kubernetes objects in one document, unpacking Lists."""
    location = f"{display}:{line}"
    if doc is None:
        return
    is_object = isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind")
    if not is_object or not isinstance(doc["kind"], str):
        problems.append(Problem(location, "not a Kubernetes object (no apiVersion and kind); skipped"))
        return
    kind: str = doc["kind"]
    if not kind.endswith("List") or "items" not in doc:
        if doc.get("metadata") is not None and not isinstance(doc["metadata"], dict):
            problems.append(Problem(location, f"a {kind} whose metadata is not a mapping; skipped"))
            return
        yield RawObject(doc, location)
        return
    items = doc["items"]
    if not isinstance(items, list):
        problems.append(Problem(location, f"a {kind} whose items is not a list; skipped"))
        return
    item_kind = kind[: -len("List")] if kind != "List" else None
    for index, item in enumerate(items):
        if isinstance(item, dict) and item_kind and not item.get("kind"):
            item = {"kind": item_kind, "apiVersion": doc["apiVersion"], **item}
        if index < len(item_lines):
            yield from _flatten(item, display, item_lines[index], [], problems)
        else:  # JSON keeps no positions: point at the list and the index
            for obj in _flatten(item, display, line, [], problems):
                yield RawObject(obj.data, f"{location}#items[{index}]")


_OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "clusterName", "managedFields", "initializers",
})
"""The JSON names of metav1.ObjectMeta's fields, which Go writes at the top of an internal object (embedded)."""
_USER_KEYED = frozenset({
    "labels", "annotations", "matchLabels", "NodeSelector", "Selector", "Capacity", "Allocatable", "Limits",
    "Requests", "Options", "VolumeAttributes", "Parameters", "Data", "BinaryData", "Hard", "Used",
})
"""Fields of internal objects whose keys are data (label keys, resource names), never renamed."""
_GO_RENAMED = {"LastTerminationState": "lastState"}
"""Internal Go fields whose JSON name is not their name in lower camel case."""
_LEADING_CAPITALS = re.compile(r"[A-Z]+")


def _json_name(field: str) -> str:
    """The JSON name Kubernetes gives a Go field: `NodeName` → `nodeName`, `UID` → `uid`, `HTTPGet` → `httpGet`,
    `HostIP` → `hostIP`, `GCEPersistentDisk` → `gcePersistentDisk`."""
    if field in _GO_RENAMED:
        return _GO_RENAMED[field]
    capitals = _LEADING_CAPITALS.match(field)
    if capitals is None:
        return field
    run = capitals.end()
    if run == len(field):
        return field.lower()
    keep = run - 1 if run > 1 else run  # the last capital of a run starts the next word
    return field[:keep].lower() + field[keep:]


def _from_go_fields(value: Any, top: bool = False) -> Any:
    """An object of kubectl's internal types as Go's encoding/json wrote it (field names, `null` for nil, ObjectMeta
    embedded at the top) in the API's JSON form: names in lower camel case, nulls left out, ObjectMeta's fields under
    `metadata` (of the object, and of pod templates)."""
    if isinstance(value, list):
        return [_from_go_fields(item) for item in value]
    if not isinstance(value, dict):
        return value
    converted = {_json_name(key) if isinstance(key, str) else key: item if key in _USER_KEYED else _from_go_fields(item)
                 for key, item in value.items() if item is not None}
    if top or "Spec" in value:
        meta = {key: converted.pop(key) for key in list(converted) if key in _OBJECT_META_FIELDS}
        if meta and "metadata" not in converted:
            converted["metadata"] = meta
    return converted


def _typed_list(doc: Any, item_type: ItemType, location: str, problems: list[Problem]) -> Any:
    """A list document of a cluster-info dump, its items given the kind and apiVersion its file name says.

    The first `cluster-info dump` (kubernetes PR #20672, `pkg/kubectl/cmd/clusterinfo_dump.go`) printed the lists
    of kubectl's internal client, which carry no kind or apiVersion (kubernetes issue #65221: kubectl 1.11.0's
    printer refusing such an internal `core.NodeList`). Internal types have no JSON tags (kubernetes
    `pkg/apis/core/types.go`: `Items []Pod`, `metav1.ObjectMeta` embedded, `Spec PodSpec`), so encoding/json wrote
    `Items`, Go field names, `null` for every nil field, and ObjectMeta's fields at the top of each item: such
    items are turned back into the API's form (`_from_go_fields`). Current kubectl lists with the versioned core/v1
    and apps/v1 clients and sets the types (kubectl `pkg/cmd/clusterinfo/clusterinfo_dump.go`): the apiVersions
    filled in are those, so that an old dump reads as the objects a current one holds. A kind or apiVersion an item
    states is kept."""
    if not isinstance(doc, dict):
        return doc
    api_version, kind = item_type
    key = "items" if "items" in doc else "Items" if "Items" in doc else None
    if key is None:
        return doc
    items = [] if doc[key] is None else doc[key]
    typed = []
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict) and "metadata" not in item and key == "Items":  # Go's names, ObjectMeta inline
            try:
                item = _from_go_fields(item, top=True)
            except RecursionError:
                problems.append(Problem(f"{location}#items[{index}]", "nested too deeply to read; skipped"))
                item = None  # keeps the index of the items after it
        if isinstance(item, dict) and not item.get("kind"):
            item = {**item, "kind": kind, "apiVersion": item.get("apiVersion") or api_version}
        elif isinstance(item, dict) and item.get("kind") == kind and not item.get("apiVersion"):
            item = {**item, "apiVersion": api_version}
        typed.append(item)
    rest = {k: v for k, v in doc.items() if k not in ("items", "Items")}
    return {**rest, "kind": rest.get("kind") or f"{kind}List", "apiVersion": rest.get("apiVersion") or api_version,
            "items": typed if isinstance(items, list) else items}


def read_object_file(
    path: Path, display: str, problems: list[Problem], item_type: ItemType | None = None
) -> Iterator[RawObject]:
    """Yield every Kubernetes object in one YAML or JSON file; problems go to `problems`. With `item_type`, the file
    is a list of a cluster-info dump, whose items may not say their kind (see `_typed_list`)."""
    data = _read_guarded(path, display, problems, MAX_OBJECT_FILE_BYTES)
    if data is None:
        return
    first = _NOT_SPACE.search(data)
    if first is None:
        problems.append(Problem(f"{display}:1", "empty file: no objects"))
        return
    if data[first.start()] in b"{[":  # JSON, whatever the suffix (YAML flow style falls back)
        yaml_suffix = path.suffix.lower() in (".yaml", ".yml")
        json_problems: list[Problem] = []
        objects = list(_read_json(data, display, json_problems, item_type))
        if not (yaml_suffix and json_problems and not objects):
            del data
            problems.extend(json_problems)
            yield from objects
            return
    yield from _read_yaml(data, display, problems, item_type)


def read_documents(
    path: Path, display: str, problems: list[Problem], root: Path | None = None
) -> Iterator[tuple[str, Any]]:
    """Yield (format, document) for each document of one object file as `read_object_file` parses it, before a
    List is unpacked: "json" and the file's one value, or "yaml" and each document. The same guards apply; what
    cannot be read or parsed is reported in `problems` and left out."""
    data = _read_guarded(path, display, problems, MAX_OBJECT_FILE_BYTES, root)
    if data is None:
        return
    first = _NOT_SPACE.search(data)
    if first is not None and data[first.start()] in b"{[":
        json_problems: list[Problem] = []
        doc = _json_document(data, display, json_problems)
        if not (json_problems and path.suffix.lower() in (".yaml", ".yml")):  # else YAML flow style, maybe
            problems.extend(json_problems)
            if not json_problems:
                yield "json", doc
            return
    for _, doc, _ in _checked_yaml_documents(data, display, problems):
        yield "yaml", doc


def _json_document(data: bytes, display: str, problems: list[Problem]) -> Any:
    """The value of a JSON file; None, with one problem, when it does not parse."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        found = _JSON_BYTE.search(str(exc))
        if found:
            line = _line_of_offset(data, int(found.group(1)))
        else:  # "truncated": the damage is at the end
            line = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        problems.append(Problem(f"{display}:{line}", f"invalid JSON: {exc}"))
    except RecursionError:
        problems.append(Problem(f"{display}:1", "JSON nested too deeply to read"))
    return None


def _read_json(data: bytes, display: str, problems: list[Problem], item_type: ItemType | None) -> Iterator[RawObject]:
    reported = len(problems)
    doc = _json_document(data, display, problems)
    if len(problems) > reported:
        return
    for doc_item in doc if isinstance(doc, list) else [doc]:
        if item_type:
            doc_item = _typed_list(doc_item, item_type, f"{display}:1", problems)
        yield from _flatten(doc_item, display, 1, [], problems)


def _checked_yaml_documents(
    data: bytes, display: str, problems: list[Problem]
) -> Iterator[tuple[int, Any, list[int]]]:
    """`_yaml_documents` of YAML bytes, after the UTF-8 and line length checks, alias bombs refused."""
    data = _drop_long_lines(_utf8(data, display, problems), display, problems)
    anchors = b"&" in data and b"*" in data and _ANCHOR.search(data) is not None
    for line, doc, item_lines in _yaml_documents(data, display, problems):
        if anchors:
            try:
                expanded_size(doc)
            except (AliasBomb, RecursionError) as exc:
                reason = exc if isinstance(exc, AliasBomb) else "YAML nested too deeply to read"
                problems.append(Problem(f"{display}:{line}", f"refused: {reason}"))
                continue
        yield line, doc, item_lines


def _read_yaml(data: bytes, display: str, problems: list[Problem], item_type: ItemType | None) -> Iterator[RawObject]:
    found = False  # an object, or a List, even an empty one
    for line, doc, item_lines in _checked_yaml_documents(data, display, problems):
        doc = _typed_list(doc, item_type, f"{display}:{line}", problems) if item_type else doc
        found = found or (isinstance(doc, dict) and isinstance(doc.get("items"), list) and bool(doc.get("kind")))
        for obj in _flatten(doc, display, line, item_lines, problems):
            found = True
            yield obj
    if not found and not any(p.location.startswith(display) for p in problems):
        problems.append(Problem(f"{display}:1", "no Kubernetes objects in this file"))


class _UniqueKeysLoader(_GuardedLoader):
    """_GuardedLoader that refuses a key written twice in one mapping."""

    unique_keys = True


def load_yaml_file(
    path: Path, display: str, problems: list[Problem], root: Path | None = None, limit: int = MAX_SETTINGS_FILE_BYTES,
    *, unique_keys: bool = False,
) -> Any:
    """The one YAML document of a settings file (bundle.yaml, clock.yaml, a policy, a chart's values.yaml or
    Chart.yaml), read as a regular file inside `root` with the guards of object files: size, binary content, line
    length, nesting depth and alias expansion; with `unique_keys` (argo-doctor's own settings) a key written twice in
    a mapping is refused, where helm, reading a chart's files, keeps the last. None when the file is empty, or cannot
    be used: then `problems` says why (`display:line`)."""
    data = _read_guarded(path, display, problems, limit, root)
    if data is None:
        return None
    data = _utf8(data, display, problems)
    if (long_line := _long_line(data, MAX_YAML_LINE_BYTES)) is not None:
        problems.append(Problem(f"{display}:{_line_of_offset(data, long_line[0])}",
                                f"a line of {long_line[1]:,} bytes, over the limit of {MAX_YAML_LINE_BYTES:,} "
                                "for one YAML line; skipped"))
        return None
    loader = (_UniqueKeysLoader if unique_keys else _GuardedLoader)(data)
    try:
        node = loader.get_single_node()
        doc = loader.construct_document(node) if node is not None else None
        if _ANCHOR.search(data):
            expanded_size(doc)
        return doc
    except _TooDeep as exc:
        problems.append(Problem(f"{display}:{exc.line + 1}", f"YAML nested more than {MAX_YAML_DEPTH} levels deep; "
                                                              "skipped"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append(Problem(f"{display}:{mark.line + 1 if mark is not None else 1}", f"invalid YAML: {problem}"))
    except (AliasBomb, RecursionError) as exc:
        problems.append(Problem(display, f"refused: {exc if isinstance(exc, AliasBomb) else 'nested too deeply'}"))
    finally:
        loader.dispose()
    return None
