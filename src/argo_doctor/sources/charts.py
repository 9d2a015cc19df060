"""Read Helm charts from disk (a bundle's `repo/`, or the chart `helm-check` is given) into memory, for
`helm.analyse_chart`: Chart.yaml and values files with the guards of settings files, template files as
text, sub-charts in `charts/` (folders, and `.tgz` archives unpacked with limits). Only regular files are read,
and of an input's `repo/` only those inside it; a file that cannot be used is recorded as a problem at its place,
and the rest of the chart is still read."""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from argo_doctor.model import Problem
from argo_doctor.sources.files import UnsafeInput, is_dir, is_regular, read_input
from argo_doctor.sources.objects import MAX_OBJECT_FILE_BYTES, MAX_SETTINGS_FILE_BYTES, load_yaml_file

Located = tuple[str, str]
"""(location, message): a problem inside a chart, located relative to the chart."""

MAX_ARCHIVE_BYTES = 16 << 20
"""A packaged sub-chart larger than this (compressed) is not read."""
MAX_ARCHIVE_ENTRIES = 5_000
MAX_UNPACKED_BYTES = 64 << 20
"""What one packaged sub-chart may unpack to, in all."""
MAX_EXTRA_VALUE_FILES = 100
"""YAML files of a bundle's `repo/` that an Application may name in `valueFiles`, read at most per chart (those of
the chart's folder first, then the nearest)."""
_NOT_VALUES = frozenset({"templates", "crds"})
_CHART_FILES = frozenset({"Chart.yaml", "Chart.lock", "requirements.yaml", "requirements.lock"})


@dataclass(frozen=True)
class YamlDoc:
    """One YAML settings file of a chart (Chart.yaml, values.yaml, a `-f` file): its document, or None."""

    label: str
    data: Any
    problems: tuple[Located, ...]


@dataclass(frozen=True)
class TemplateText:
    """One file under a `templates/` folder, by its path relative to the top chart; `error` says why it has no
    text."""

    rel: str
    text: str | None
    error: str | None = None


@dataclass(frozen=True)
class ChartFiles:
    """What a chart is made of, in the order the analysis reads it."""

    path: Path
    meta: YamlDoc | None
    """Chart.yaml; None when the chart has none."""
    values: tuple[YamlDoc, ...]
    """values.yaml (when present), then each `-f` file, in order."""
    layout_problems: tuple[Located, ...]
    """Sub-charts that could not be read."""
    subcharts: tuple[ChartFiles, ...]
    """Each sub-chart under `charts/` (a folder or an archive), with its own sub-charts."""
    templates: tuple[TemplateText, ...]
    """The chart's own templates."""
    prefix: str = ""
    """Where the chart sits in the top chart: "" for the top one, "charts/metrics/", "charts/db-1.0.0.tgz!/db/"."""
    value_files: tuple[YamlDoc, ...] = ()
    """For a chart of a bundle's `repo/`: the YAML files of `repo/` outside `templates/` and `crds/` folders, by
    `repo/`-relative path, for the `valueFiles` of Applications (see MAX_EXTRA_VALUE_FILES)."""


def find_charts(root: Path) -> list[Path]:
    """Directories holding a Chart.yaml under root (root included, sub-charts too), sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = {p.parent for p in root.rglob("Chart.yaml") if p.is_file()}
    return sorted(found)


def read_chart(path: Path, values_files: Sequence[Path] = (), root: Path | None = None) -> ChartFiles:
    """The chart at `path`: only regular files, and with `root` (an input's `repo/`) only files inside it; a chart
    the user names (`helm-check`) may link to shared templates elsewhere. `values_files` are the user's own `-f`
    files; with `root`, the YAML files of `root` that may be value files are read too (`ChartFiles.value_files`)."""
    chart = Path(path)
    user = tuple(_yaml(Path(f), str(f), None) for f in values_files)
    extra = _value_files(chart, root) if root is not None else ()
    return _read(chart, chart, "", root, user, extra, depth=0)


def _read(
    disk: Path, shown: Path, prefix: str, root: Path | None, user: tuple[YamlDoc, ...], extra: tuple[YamlDoc, ...],
    depth: int,
) -> ChartFiles:
    meta = _yaml(disk / "Chart.yaml", prefix + "Chart.yaml", root) if is_regular(disk / "Chart.yaml") else None
    values = [_yaml(disk / "values.yaml", prefix + "values.yaml", root)] if is_regular(disk / "values.yaml") else []
    layout: list[Located] = []
    subs: list[ChartFiles] = []
    charts_dir = disk / "charts"
    if is_dir(charts_dir) and depth < 10:
        for child in sorted(charts_dir.iterdir()):
            rel = f"{prefix}charts/{child.name}"
            if is_dir(child) and is_regular(child / "Chart.yaml"):
                subs.append(_read(child, shown / "charts" / child.name, rel + "/", root, (), (), depth + 1))
            elif child.name.endswith((".tgz", ".tar.gz")) and is_regular(child):
                sub = _packaged(child, shown / "charts" / child.name, rel, root, layout, depth + 1)
                if sub is not None:
                    subs.append(sub)
    templates = _templates(disk, prefix, root)
    return ChartFiles(shown, meta, (*values, *user), tuple(layout), tuple(subs), templates, prefix, extra)


def _packaged(
    archive: Path, shown: Path, rel: str, root: Path | None, problems: list[Located], depth: int
) -> ChartFiles | None:
    """A `charts/*.tgz` sub-chart, unpacked into a temporary folder with limits, read, and the folder removed."""
    try:
        data = read_input(archive, root, MAX_ARCHIVE_BYTES)
    except OSError as exc:
        problems.append((rel, f"packaged sub-chart not read: {exc.strerror or exc}"))
        return None
    with tempfile.TemporaryDirectory(prefix="argo-doctor-chart-") as tmp:
        try:
            top = _unpack(data, Path(tmp))
        except (tarfile.TarError, OSError, EOFError, ValueError, _Refused) as exc:
            problems.append((rel, f"packaged sub-chart not read: {exc}"))
            return None
        if top is None:
            problems.append((rel, "packaged sub-chart not read: no <name>/Chart.yaml inside"))
            return None
        return _read(Path(tmp) / top, shown, f"{rel}!/{top}/", Path(tmp), (), (), depth)


class _Refused(Exception):
    """A packaged sub-chart over a limit."""


def _unpack(data: bytes, dest: Path) -> str | None:
    """Write the regular files of a chart archive under `dest` (no links, no absolute or `..` names, limited
    count and size); the name of the chart folder inside, if it holds a Chart.yaml."""
    total, count, top = 0, 0, None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for member in tar:
            count += 1
            if count > MAX_ARCHIVE_ENTRIES:
                raise _Refused(f"more than {MAX_ARCHIVE_ENTRIES:,} entries")
            total += max(member.size, 0)  # skipped entries count too: skipping means decompressing
            if total > MAX_UNPACKED_BYTES:
                raise _Refused(f"unpacks to more than {MAX_UNPACKED_BYTES:,} bytes")
            name = PurePosixPath(member.name)
            if not member.isfile() or name.is_absolute() or ".." in name.parts or len(name.parts) < 2:
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            target = dest.joinpath(*name.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(handle.read(member.size))
            if len(name.parts) == 2 and name.parts[1] == "Chart.yaml":
                top = top or name.parts[0]
    return top


def _value_files(chart: Path, root: Path) -> tuple[YamlDoc, ...]:
    """YAML files of `root` that may be value files, labelled by their path in `root`: the chart's own folder first,
    then by distance from it."""
    try:
        base = chart.resolve().relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return ()
    candidates: list[tuple[int, str, Path]] = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.suffix not in (".yaml", ".yml") or path.name in _CHART_FILES or _NOT_VALUES & set(rel.parts[:-1]):
            continue
        shared = 0
        for mine, theirs in zip(base.parts, rel.parts[:-1], strict=False):
            if mine != theirs:
                break
            shared += 1
        distance = len(base.parts) - shared + len(rel.parts) - 1 - shared
        candidates.append((distance, rel.as_posix(), path))
    found: list[YamlDoc] = []
    for _, label, path in sorted(candidates)[:MAX_EXTRA_VALUE_FILES]:
        if is_regular(path):
            found.append(_yaml(path, label, root))
    return tuple(found)


def _yaml(path: Path, label: str, root: Path | None) -> YamlDoc:
    found: list[Problem] = []
    data = load_yaml_file(path, label, found, root, MAX_SETTINGS_FILE_BYTES)
    return YamlDoc(label, data, tuple((p.location, p.message) for p in found))


def _templates(chart: Path, prefix: str, root: Path | None) -> tuple[TemplateText, ...]:
    tdir = chart / "templates"
    if not is_dir(tdir):
        return ()
    return tuple(
        _template(prefix + path.relative_to(chart).as_posix(), path, root)
        for path in sorted(p for p in tdir.rglob("*") if p.is_file())
    )


def _template(rel: str, path: Path, root: Path | None) -> TemplateText:
    try:
        return TemplateText(rel, read_input(path, root, MAX_OBJECT_FILE_BYTES).decode("utf-8"))
    except UnsafeInput as exc:
        return TemplateText(rel, None, f"unreadable template: {exc.strerror}")
    except (OSError, UnicodeDecodeError) as exc:
        return TemplateText(rel, None, f"unreadable template: {exc}")
