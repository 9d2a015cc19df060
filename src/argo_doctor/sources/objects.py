"""Read Kubernetes objects from YAML and JSON files as kubectl writes them.

Single documents, multi-document YAML, `kind: List` (and typed `*List`) and JSON are all
accepted. A malformed document is reported with its file and line, and parsing resumes at
the next document separator. YAML alias bombs are refused by measuring the expanded size of
every document that uses anchors before anyone walks it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from argo_doctor.model import Problem
from argo_doctor.sources.redact import redact_object, secret_values

MAX_EXPANDED_NODES = 1_000_000
"""A document whose aliases expand past this many nodes is refused as an alias bomb."""

OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
_DOC_SEPARATOR = re.compile(r"^---", re.M)
_ANCHOR = re.compile(r"(?:^|[\s\[{,])&[^\s\]},]", re.M)
_JSON_BYTE = re.compile(r"byte (\d+)")


TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id"

ObjectHead = tuple[str, str, str, str, str, dict[str, str], tuple[dict[str, Any], ...], str, str, str]
"""(apiVersion, kind, name, namespace, uid, labels, ownerReferences, spec.nodeName, tracking id,
creationTimestamp):
what the snapshot's indexes need without decoding the whole object."""


def mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a dict, else an empty dict: for walking objects that may be malformed."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def as_int(value: Any, default: int = 0) -> int:
    """An integer field that may have been written as a string; `default` when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return default


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def object_head(raw: dict[str, Any]) -> ObjectHead:
    """The index fields of an object."""
    meta = mapping(raw.get("metadata"))
    owners = meta.get("ownerReferences")
    tracking = mapping(meta.get("annotations")).get(TRACKING_ANNOTATION)
    node = mapping(raw.get("spec")).get("nodeName") if raw.get("kind") == "Pod" else None
    return (
        str(raw.get("apiVersion") or ""),
        str(raw.get("kind") or ""),
        str(meta.get("name") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("uid") or ""),
        {str(k): str(v) for k, v in mapping(meta.get("labels")).items()},
        tuple(o for o in owners if isinstance(o, dict)) if isinstance(owners, list) else (),
        str(node or ""),
        str(tracking or ""),
        str(meta.get("creationTimestamp") or ""),
    )


@dataclass(frozen=True, slots=True)
class LoadedObject:
    """An object loaded by a worker: redacted, encoded as compact JSON, with its index fields."""

    location: str
    head: ObjectHead
    body: bytes


@dataclass
class FileLoad:
    """Everything read from one object file: objects, problems, and Secret values to scrub."""

    objects: list[LoadedObject]
    problems: list[Problem]
    secrets: list[str]


def load_object_file(job: tuple[Path, str]) -> FileLoad:
    """Read, redact and encode every object of one file (runs in a worker process)."""
    path, display = job
    problems: list[Problem] = []
    secrets: list[str] = []
    objects = []
    for raw in read_object_file(path, display, problems):
        try:
            values = secret_values(raw.data)
            data = redact_object(raw.data)
            objects.append(LoadedObject(raw.location, object_head(data), _ENCODER.encode(data)))
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            problems.append(Problem(raw.location, f"cannot index this object ({reason}); skipped"))
            continue
        secrets.extend(values)
    return FileLoad(objects, problems, secrets)


_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class RawObject:
    """An object as read from a file, with where it came from."""

    data: dict[str, Any]
    location: str


class AliasBomb(ValueError):
    """A YAML document whose aliases expand beyond the limit, or refer to themselves."""


def expanded_size(root: Any, limit: int = MAX_EXPANDED_NODES) -> int:
    """Count the nodes of `root` as if every shared reference were copied; stop past `limit`."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise AliasBomb("a YAML alias refers to the node that contains it")
        active.add(key)
        children = node.values() if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                raise AliasBomb(f"YAML aliases expand to more than {limit:,} nodes (alias bomb)")
        active.discard(key)
        memo[key] = total
        return total

    return size(root)


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, max(0, offset)) + 1


def _decode(data: bytes, display: str, problems: list[Problem]) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of_offset(data, exc.start)
        problems.append(
            Problem(f"{display}:{line}", "not valid UTF-8; undecodable bytes were replaced with U+FFFD")
        )
        return data.decode("utf-8", errors="replace")


def _yaml_documents(
    text: str, display: str, problems: list[Problem]
) -> Iterator[tuple[int, Any, list[int]]]:
    """Yield (line, document, line of each `items` entry) for every document; on a syntax error,
    report it and resume at the next `---` at or after the line of the error."""
    base_line = 0
    while True:
        loader = yaml.CSafeLoader(text)
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
        except RecursionError:
            problems.append(Problem(f"{display}:{base_line + local + 1}", "YAML nested too deeply to read"))
        finally:
            loader.dispose()
        start = _offset_of_line(text, local)
        match = _DOC_SEPARATOR.search(text, start)
        if match is not None and match.start() == 0:  # the error is on a separator we started at
            match = _DOC_SEPARATOR.search(text, 1)
        if match is None:
            return
        base_line += text.count("\n", 0, match.start())
        text = text[match.start():]


def _item_lines(node: yaml.Node, base_line: int) -> list[int]:
    """The line of each entry of a top-level `items` sequence (a `kind: List`), else []."""
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "items" and isinstance(value, yaml.SequenceNode):
            return [base_line + item.start_mark.line + 1 for item in value.value]
    return []


def _offset_of_line(text: str, line: int) -> int:
    """Offset of the start of 0-based `line` in `text` (len(text) if past the end)."""
    pos = 0
    for _ in range(line):
        nxt = text.find("\n", pos)
        if nxt < 0:
            return len(text)
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


def read_object_file(path: Path, display: str, problems: list[Problem]) -> Iterator[RawObject]:
    """Yield every Kubernetes object in one YAML or JSON file; problems go to `problems`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(display, f"cannot read: {exc.strerror or exc}"))
        return
    if not data.strip():
        problems.append(Problem(f"{display}:1", "empty file: no objects"))
        return
    if b"\x00" in data:
        line = _line_of_offset(data, data.index(b"\x00"))
        problems.append(Problem(f"{display}:{line}", "binary data (NUL byte) in an object file; skipped"))
        return
    if data.lstrip()[:1] in (b"{", b"["):  # JSON, whatever the suffix (YAML flow style falls back)
        yaml_suffix = path.suffix.lower() in (".yaml", ".yml")
        json_problems: list[Problem] = []
        objects = list(_read_json(data, display, json_problems))
        if not (yaml_suffix and json_problems and not objects):
            problems.extend(json_problems)
            yield from objects
            return
    yield from _read_yaml(data, display, problems)


def _read_json(data: bytes, display: str, problems: list[Problem]) -> Iterator[RawObject]:
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        found = _JSON_BYTE.search(str(exc))
        if found:
            line = _line_of_offset(data, int(found.group(1)))
        else:  # "truncated": the damage is at the end
            line = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        problems.append(Problem(f"{display}:{line}", f"invalid JSON: {exc}"))
        return
    except RecursionError:
        problems.append(Problem(f"{display}:1", "JSON nested too deeply to read"))
        return
    for doc_item in doc if isinstance(doc, list) else [doc]:
        yield from _flatten(doc_item, display, 1, [], problems)


def _read_yaml(data: bytes, display: str, problems: list[Problem]) -> Iterator[RawObject]:
    text = _decode(data, display, problems)
    anchors = "&" in text and "*" in text and _ANCHOR.search(text) is not None
    found = False
    for line, doc, item_lines in _yaml_documents(text, display, problems):
        if anchors:
            try:
                expanded_size(doc)
            except (AliasBomb, RecursionError) as exc:
                reason = exc if isinstance(exc, AliasBomb) else "YAML nested too deeply to read"
                problems.append(Problem(f"{display}:{line}", f"refused: {reason}"))
                continue
        for obj in _flatten(doc, display, line, item_lines, problems):
            found = True
            yield obj
    if not found and not any(p.location.startswith(display) for p in problems):
        problems.append(Problem(f"{display}:1", "no Kubernetes objects in this file"))
