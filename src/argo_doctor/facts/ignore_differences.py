"""Argo CD `ignoreDifferences`, evaluated against live objects.

An entry matches a resource by group, kind, and optionally name and namespace, and ignores the
fields its `jsonPointers` (RFC 6901) and `jqPathExpressions` (gojq; here the `jq` library)
select. `managedFieldsManagers` ignores what a manager owns and cannot be judged by path here.
(argo-cd `docs/user-guide/diffing.md`, `util/argo/diff/normalize.go`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from argo_doctor.jqpaths import jq_paths
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Coverage:
    """Which concrete paths of a field the Application's ignoreDifferences cover."""

    paths: tuple[Path, ...]
    covered: tuple[Path, ...]
    by: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Every concrete path of the field is ignored (and the field exists)."""
        return bool(self.paths) and len(self.covered) == len(self.paths)


def concrete_paths(obj: Any, field: Sequence[str]) -> list[Path]:
    """The paths in `obj` a field pattern names; `[]` stands for every list index."""
    results: list[Path] = [()]
    nodes: list[Any] = [obj]
    for segment in field:
        next_results, next_nodes = [], []
        for path, node in zip(results, nodes, strict=True):
            if segment == "[]":
                for index, item in enumerate(node if isinstance(node, list) else []):
                    next_results.append((*path, index))
                    next_nodes.append(item)
            elif isinstance(node, dict) and segment in node:
                next_results.append((*path, segment))
                next_nodes.append(node[segment])
        results, nodes = next_results, next_nodes
    return results


def _pointer(text: str) -> Path:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in text.split("/")[1:]]
    return tuple(int(t) if t.isdigit() else t for t in tokens)


def _matches(entry: dict[str, Any], obj: Obj) -> bool:
    if str(entry.get("kind") or "") != obj.kind:
        return False
    if str(entry.get("group") or "") not in ("", "*", obj.group):
        return False
    if entry.get("name") and entry.get("name") != obj.name:
        return False
    return not (entry.get("namespace") and entry.get("namespace") != obj.namespace)


def _prefix(rule: Path, path: Path) -> bool:
    return len(rule) <= len(path) and all(str(a) == str(b) for a, b in zip(rule, path, strict=False))


def coverage(app: Obj, live: Obj, field: Sequence[str]) -> Coverage:
    """How the Application's ignoreDifferences cover `field` of the live object."""
    paths = concrete_paths(live.raw, field)
    covered: set[Path] = set()
    by: list[str] = []
    problems: list[str] = []
    for index, entry in enumerate(as_list(app.spec.get("ignoreDifferences"))):
        entry = mapping(entry)
        if not _matches(entry, live):
            continue
        rules: list[tuple[str, Path]] = [
            (f"jsonPointers {p}", _pointer(str(p))) for p in as_list(entry.get("jsonPointers"))
        ]
        for expr in as_list(entry.get("jqPathExpressions")):
            selected = jq_paths(str(expr), live.raw)
            if isinstance(selected, str):
                problems.append(f".spec.ignoreDifferences[{index}].jqPathExpressions {expr!r}: {selected}")
                continue
            rules.extend((f"jqPathExpressions {expr}", tuple(p)) for p in selected)
        for label, rule in rules:
            hits = [p for p in paths if _prefix(rule, p)]
            if hits:
                covered.update(hits)
                by.append(f".spec.ignoreDifferences[{index}] {label}")
    return Coverage(tuple(paths), tuple(p for p in paths if p in covered), tuple(dict.fromkeys(by)), tuple(problems))


def respects_ignore_differences(app: Obj) -> bool:
    """Whether the sync option RespectIgnoreDifferences=true is set."""
    options = as_list(mapping(app.spec.get("syncPolicy")).get("syncOptions"))
    return any(str(o).replace(" ", "") == "RespectIgnoreDifferences=true" for o in options)


def jq_expression(field: Sequence[str]) -> str:
    """A jqPathExpression selecting a field pattern (`.webhooks[]?.clientConfig.caBundle`)."""
    out = ""
    for segment in field:
        if segment == "[]":
            out += "[]?"
        elif segment.replace("_", "").isalnum() and not segment[0].isdigit():
            out += f".{segment}"
        else:
            out += f'["{segment}"]'
    return out or "."


def json_pointer(field: Sequence[str]) -> str | None:
    """An RFC 6901 pointer for a field without list wildcards, else None."""
    if "[]" in field:
        return None
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in field)


def near_misses(app: Obj, live: Obj, field: Sequence[str]) -> list[str]:
    """Why each of the Application's ignoreDifferences entries for the object's kind does not cover `field`: another
    group, name or namespace, or paths that select other fields (`.spec.ignoreDifferences[1]: jsonPointers
    /spec/replica select nothing of /spec/replicas`)."""
    found = []
    paths = concrete_paths(live.raw, field)
    for index, entry in enumerate(as_list(app.spec.get("ignoreDifferences"))):
        entry = mapping(entry)
        if str(entry.get("kind") or "") != live.kind:
            continue
        where = f".spec.ignoreDifferences[{index}]"
        if str(entry.get("group") or "") not in ("", "*", live.group):
            found.append(f"{where} names group {entry.get('group')!r}, and the object's is {live.group!r}")
        elif entry.get("name") and entry.get("name") != live.name:
            found.append(f"{where} names {entry.get('name')!r}, not {live.name!r}")
        elif entry.get("namespace") and entry.get("namespace") != live.namespace:
            found.append(f"{where} names namespace {entry.get('namespace')!r}, not {live.namespace!r}")
        elif entry.get("managedFieldsManagers"):
            continue  # judged by who owns the field, not by path
        else:
            pointers = [str(p) for p in as_list(entry.get("jsonPointers"))]
            if pointers and not any(_prefix(_pointer(p), path) for p in pointers for path in paths):
                found.append(f"{where} jsonPointers {', '.join(pointers)} select none of it")
    return found
