"""Uses of deprecated and removed APIs in manifests, chart templates, Kustomize trees and live objects.

Each use is judged by the table (`deprecations.table`) at a target version. Live objects tell
which manager wrote through an old API (`metadata.managedFields[].apiVersion`, which Argo CD-applied
and server-side-applied objects carry) and what the last client-side apply sent
(`kubectl.kubernetes.io/last-applied-configuration`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argo_doctor.deprecations.table import DeprecatedApi, Version, deprecated_apis, lookup
from argo_doctor.model import Problem
from argo_doctor.sources.files import UnsafeInput, read_input
from argo_doctor.sources.metrics import MetricsFile, read_metrics_file
from argo_doctor.sources.objects import (
    MAX_OBJECT_FILE_BYTES,
    OBJECT_SUFFIXES,
    as_list,
    mapping,
    read_object_file,
)
from argo_doctor.sources.redact import LAST_APPLIED

NOT_OBJECTS = {"bundle.yaml", "clock.yaml", "Chart.yaml", "Chart.lock", "kustomization.yaml", "kustomization.yml",
               "Kustomization"}
_TEMPLATE_LINE = re.compile(r"^\s*(apiVersion|kind):\s*[\"']?([^\"'\s#]+)")
_ACTION = re.compile(r"\{\{-?\s*(if|else if|else|with|range|end)\b(.*?)-?\}\}")


@dataclass(frozen=True)
class Use:
    """One use of a deprecated API."""

    api: DeprecatedApi
    status: str
    location: str
    how: str
    subject: str


def _use(api_version: str, kind: str, target: Version | None, location: str, how: str, subject: str) -> Use | None:
    api = lookup(api_version, kind)
    if api is None:
        return None
    status = api.status_at(target)
    return Use(api, status, location, how, subject) if status is not None else None


def object_uses(raw: dict[str, Any], location: str, target: Version | None) -> Iterator[Use]:
    """Uses in one object: its own apiVersion, its managedFields per manager, its last-applied copy."""
    kind = str(raw.get("kind") or "")
    meta = mapping(raw.get("metadata"))
    namespace = f"{meta['namespace']}/" if meta.get("namespace") else ""
    subject = f"{kind}/{namespace}{meta.get('name') or '?'}"
    own = _use(str(raw.get("apiVersion") or ""), kind, target, location, "manifest", subject)
    if own is not None:
        yield own
    for index, entry in enumerate(as_list(meta.get("managedFields"))):
        entry = mapping(entry)
        use = _use(str(entry.get("apiVersion") or ""), kind, target, f"{location} .metadata.managedFields[{index}]",
                   f"written by manager {entry.get('manager')} ({entry.get('operation')}) at {entry.get('time')}",
                   subject)
        if use is not None:
            yield use
    applied = mapping(meta.get("annotations")).get(LAST_APPLIED)
    if isinstance(applied, str) and applied.startswith("{"):
        try:
            version = str(mapping(json.loads(applied)).get("apiVersion") or "")
        except ValueError:
            version = ""
        use = _use(version, kind, target, f"{location} .metadata.annotations[{LAST_APPLIED}]",
                   "last kubectl apply sent it", subject)
        if use is not None:
            yield use


def template_uses(text: str, display: str, target: Version | None) -> Iterator[Use]:
    """apiVersion/kind pairs in a Go template, read as text; `.Capabilities` conditionals are flagged."""
    api_version: tuple[str, int, bool] | None = None
    stack: list[bool] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("---"):
            api_version = None
        for action in _ACTION.finditer(line):
            word, rest = action.group(1), action.group(2)
            if word in ("if", "with", "range"):
                stack.append(".Capabilities" in rest)
            elif word == "end" and stack:
                stack.pop()
            elif word in ("else", "else if") and stack and ".Capabilities" in rest:
                stack[-1] = True
        found = _TEMPLATE_LINE.match(line)
        if not found or "{{" in found.group(2):
            continue
        if found.group(1) == "apiVersion":
            api_version = (found.group(2), number, any(stack))
        elif api_version is not None:
            version, line_no, conditional = api_version
            how = "template, chosen by a .Capabilities conditional" if conditional else "template"
            use = _use(version, found.group(2), target, f"{display}:{line_no}", how, found.group(2))
            if use is not None:
                yield use
            api_version = None


def scan_paths(
    paths: Sequence[Path], target: Version | None, labels: Mapping[Path, str] | None = None
) -> tuple[list[Use], list[Problem]]:
    """Every use in files and folders (manifests, charts, Kustomize trees, bundles). A folder's files are shown
    under its name, or under its label in `labels` (a tarball's `NAME!`). Only regular files inside a folder are
    read: a link leading outside it, a FIFO or a device is one problem."""
    uses: list[Use] = []
    problems: list[Problem] = []
    for root in paths:
        folder = root.is_dir()
        if folder:
            uses.extend(metric_uses(root, labels[root].rstrip("/") if labels and root in labels else root.name,
                                    target, problems))
        for path in sorted(p for p in root.rglob("*") if not p.is_dir()) if folder else [root]:
            parts = path.relative_to(root).parts if folder else ()
            if not _manifest(path, parts):
                continue
            if not folder:
                display = str(path)
            elif labels and root in labels:
                display = "/".join((labels[root], *parts))
            else:
                display = str(path.relative_to(root.parent))
            try:
                data = read_input(path, root if folder else None, MAX_OBJECT_FILE_BYTES)
                text = data.decode("utf-8", errors="replace")
            except OSError as exc:
                reason = str(exc.strerror) if isinstance(exc, UnsafeInput) else f"cannot read: {exc.strerror or exc}"
                problems.append(Problem(display, reason))
                continue
            if "{{" in text:
                uses.extend(template_uses(text, display, target))
                continue
            for raw in read_object_file(path, display, problems):
                uses.extend(object_uses(raw.data, raw.location, target))
    return uses, [p for p in problems if "no Kubernetes objects" not in p.message
                  and "not a Kubernetes object" not in p.message]


def metric_uses(root: Path, display: str, target: Version | None, problems: list[Problem]) -> Iterator[Use]:
    """Uses the API server itself counted (`metrics/*.prom` of a bundle: `apiserver_requested_deprecated_apis`,
    one sample per group, version and resource that a client requested since the API server started)."""
    folder = root / "metrics"
    if not folder.is_dir():
        return
    by_resource = {(api.group, api.version, api.resource): api for api in deprecated_apis().values()}
    for path in sorted(folder.glob("*.prom")):
        metrics_file = MetricsFile(path, f"{display}/metrics/{path.name}", root)
        for sample in read_metrics_file(metrics_file, problems, {"apiserver_requested_deprecated_apis"}):
            labels = sample.labels
            api = by_resource.get((labels.get("group", ""), labels.get("version", ""), labels.get("resource", "")))
            status = api.status_at(target) if api is not None else None
            if api is not None and status is not None:
                yield Use(api, status, sample.location, "requested from the API server (apiserver_requested_"
                          f"deprecated_apis, removed_release {labels.get('removed_release') or '?'})",
                          f"{api.kind} ({api.resource})")


def _manifest(path: Path, parts: tuple[str, ...]) -> bool:
    """Whether a file may hold manifests or templates; `parts`, its path in a folder, leaves hidden files and a
    bundle's logs, audit and metrics out."""
    if any(part.startswith(".") for part in parts) or {"logs", "audit", "metrics"} & set(parts[:-1]):
        return False
    return (path.suffix.lower() in (*OBJECT_SUFFIXES, ".tpl") and path.name not in NOT_OBJECTS
            and not path.name.startswith("values"))


def removed(uses: Iterable[Use]) -> list[Use]:
    """The uses that would fail at the target version."""
    return [u for u in uses if u.status == "removed"]
