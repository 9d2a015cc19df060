"""Uses of deprecated and removed APIs in manifests, chart templates, Kustomize trees and live objects.

Each use is judged by the table (`deprecations.table`) at a target version. Live objects tell
which manager wrote through an old API (`metadata.managedFields[].apiVersion`, which Argo CD-applied
and server-side-applied objects carry) and what the last client-side apply sent
(`kubectl.kubernetes.io/last-applied-configuration`).

Chart templates are read by a `TemplateReader` (the caller passes `helm.scan.chart_template_apis`),
which decides `.Capabilities` branches at the target version, or without one at the newest release the
table knows; a branch it cannot decide, or one the chart's default values switch off (`rbac.pspEnabled:
false`), is a use that "may" happen, below the certain ones.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from argo_doctor.deprecations.table import DeprecatedApi, Version, deprecated_apis, lookup, newest_release, served
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


@dataclass(frozen=True)
class Use:
    """One use of a deprecated API; `maybe` when a template emits it only on a branch that cannot be decided."""

    api: DeprecatedApi
    status: str
    location: str
    how: str
    subject: str
    maybe: bool = False


class TemplateApi(Protocol):
    """An apiVersion/kind pair a chart template emits (see `helm.capabilities.TemplateApi`)."""

    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def verdict(self) -> bool | None: ...
    @property
    def why(self) -> tuple[str, ...]: ...


#: Reads the template files of one chart (display name → text, and → path) at a Kubernetes version (major, minor,
#: patch), answering `.Capabilities.APIVersions.Has` with the callable, with the values the chart whose folder is
#: given (None outside a chart) renders them with.
TemplateReader = Callable[[Path | None, Mapping[str, str], Mapping[str, Path], tuple[int, int, int],
                           Callable[[str], bool | None]], Iterable[TemplateApi]]


def _use(api_version: str, kind: str, target: Version | None, location: str, how: str, subject: str,
         maybe: bool = False) -> Use | None:
    api = lookup(api_version, kind)
    if api is None:
        return None
    status = api.status_at(target)
    return Use(api, status, location, how, subject, maybe) if status is not None else None


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
        except (ValueError, RecursionError):
            version = ""
        use = _use(version, kind, target, f"{location} .metadata.annotations[{LAST_APPLIED}]",
                   "last kubectl apply sent it", subject)
        if use is not None:
            yield use


def template_uses(chart: Path | None, files: Mapping[str, str], paths: Mapping[str, Path], target: Version | None,
                  reader: TemplateReader) -> Iterator[Use]:
    """Uses in the templates of one chart, `.Capabilities` decided at the target (else the newest release the
    table knows, since `helm template` without `--kube-version` picks a version of its own); a template its
    default values switch off only may be used."""
    version = target or newest_release()
    if target is not None:
        at = f"at Kubernetes v{version[0]}.{version[1]}.0"
    else:
        at = (f"at v{version[0]}.{version[1]}.0, the newest release the table knows (no target version; helm "
              "template without --kube-version assumes the version built into helm, Argo CD passes the cluster's)")
    for found in reader(chart, files, paths, (version[0], version[1], 0), lambda name: served(name, version)):
        if found.verdict is False:
            continue
        why = "; ".join(found.why)
        if found.verdict is None:
            how = f"template, may be used {at}: {why or 'chosen by a condition that cannot be decided statically'}"
        else:
            how = f"template, chosen by .Capabilities {at}: {why}" if why else "template"
        use = _use(found.api_version, found.kind, target, f"{found.file}:{found.line}", how, found.kind,
                   maybe=found.verdict is None)
        if use is not None:
            yield use


def scan_paths(
    paths: Sequence[Path], target: Version | None, reader: TemplateReader, labels: Mapping[Path, str] | None = None
) -> tuple[list[Use], list[Problem]]:
    """Every use in files and folders (manifests, charts, Kustomize trees, bundles). A folder's files are shown
    under its name, or under its label in `labels` (a tarball's `NAME!`). Only regular files inside a folder are
    read: a link leading outside it, a FIFO or a device is one problem. Templates are read by `reader`, a chart
    (with its subcharts, which share helpers) at a time."""
    uses: list[Use] = []
    problems: list[Problem] = []
    for root in paths:
        folder = root.is_dir()
        charts: dict[Path, dict[str, str]] = {}
        locations: dict[str, Path] = {}
        if folder:
            uses.extend(metric_uses(root, functools.partial(_display, root=root, labels=labels), target, problems))
        for path in sorted(p for p in root.rglob("*") if not p.is_dir()) if folder else [root]:
            parts = path.relative_to(root).parts if folder else ()
            if not _manifest(path, parts):
                continue
            display = _display(path, root, labels) if folder else str(path)
            try:
                data = read_input(path, root if folder else None, MAX_OBJECT_FILE_BYTES)
                text = data.decode("utf-8", errors="replace")
            except OSError as exc:
                reason = str(exc.strerror) if isinstance(exc, UnsafeInput) else f"cannot read: {exc.strerror or exc}"
                problems.append(Problem(display, reason))
                continue
            if "{{" in text:
                charts.setdefault(_chart(path, root if folder else None), {})[display] = text
                locations[display] = path
                continue
            for raw in read_object_file(path, display, problems):
                uses.extend(object_uses(raw.data, raw.location, target))
        for chart, files in charts.items():
            uses.extend(template_uses(chart, files, {name: locations[name] for name in files}, target, reader))
    return uses, [p for p in problems if "no Kubernetes objects" not in p.message
                  and "not a Kubernetes object" not in p.message]


def _display(path: Path, root: Path, labels: Mapping[Path, str] | None) -> str:
    """How a file of the folder `root` is shown: under the folder's label, else its name (nothing for `.`)."""
    if labels and root in labels:
        return "/".join((labels[root].rstrip("/"), *path.relative_to(root).parts))
    return str(path.relative_to(root.parent))


def metric_uses(root: Path, display: Callable[[Path], str], target: Version | None,
                problems: list[Problem]) -> Iterator[Use]:
    """Uses the API server itself counted (`metrics/*.prom` of a bundle: `apiserver_requested_deprecated_apis`,
    one sample per group, version and resource that a client requested since the API server started); each file
    shown as `display` shows it."""
    folder = root / "metrics"
    if not folder.is_dir():
        return
    by_resource = {(api.group, api.version, api.resource): api for api in deprecated_apis().values()}
    for path in sorted(folder.glob("*.prom")):
        metrics_file = MetricsFile(path, display(path), root)
        for sample in read_metrics_file(metrics_file, problems, {"apiserver_requested_deprecated_apis"}):
            labels = sample.labels
            api = by_resource.get((labels.get("group", ""), labels.get("version", ""), labels.get("resource", "")))
            status = api.status_at(target) if api is not None else None
            if api is not None and status is not None:
                yield Use(api, status, sample.location, "requested from the API server (apiserver_requested_"
                          f"deprecated_apis, removed_release {labels.get('removed_release') or '?'})",
                          f"{api.kind} ({api.resource})")


def _chart(path: Path, root: Path | None) -> Path:
    """The outermost chart (folder with a Chart.yaml) holding a template inside `root`, else its folder."""
    chart = path.parent
    for parent in path.parents:
        if (parent / "Chart.yaml").is_file():
            chart = parent
        if root is None or parent == root:
            break
    return chart


def _manifest(path: Path, parts: tuple[str, ...]) -> bool:
    """Whether a file may hold manifests or templates; `parts`, its path in a folder, leaves hidden files and a
    bundle's logs, audit and metrics out."""
    if any(part.startswith(".") for part in parts) or {"logs", "audit", "metrics"} & set(parts[:-1]):
        return False
    return (path.suffix.lower() in (*OBJECT_SUFFIXES, ".tpl") and path.name not in NOT_OBJECTS
            and not path.name.startswith("values"))


def removed(uses: Iterable[Use]) -> list[Use]:
    """The uses that would fail at the target version (not those that only may happen)."""
    return [u for u in uses if u.status == "removed" and not u.maybe]
