"""Read Helm charts from disk (a bundle's `repo/`, or the chart `helm-check` is given) into memory, for
`helm.analyse_chart`: Chart.yaml and values files with the guards of settings files, template files as
text, sub-charts unpacked in `charts/`. Only regular files are read, and of an input's `repo/` only those inside
it; a file that cannot be used is recorded as a problem at its place, and the rest of the chart is still read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argo_doctor.model import Problem
from argo_doctor.sources.files import UnsafeInput, is_dir, is_regular, read_input
from argo_doctor.sources.objects import MAX_OBJECT_FILE_BYTES, load_yaml_file

Located = tuple[str, str]
"""(location, message): a problem inside a chart, located relative to the chart."""


@dataclass(frozen=True)
class YamlDoc:
    """One YAML settings file of a chart (Chart.yaml, values.yaml, a `-f` file): its document, or None."""

    label: str
    data: Any
    problems: tuple[Located, ...]


@dataclass(frozen=True)
class TemplateText:
    """One file under a `templates/` folder, by its chart-relative path; `error` says why it has no text."""

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
    """Sub-charts that could not be read (packaged ones)."""
    subcharts: tuple[tuple[TemplateText, ...], ...]
    """The templates of each unpacked sub-chart under `charts/`, depth first."""
    templates: tuple[TemplateText, ...]
    """The chart's own templates."""


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
    files."""
    chart = Path(path)
    meta = _yaml(chart / "Chart.yaml", "Chart.yaml", root) if is_regular(chart / "Chart.yaml") else None
    values = [_yaml(chart / "values.yaml", "values.yaml", root)] if is_regular(chart / "values.yaml") else []
    values += [_yaml(Path(f), str(f), None) for f in values_files]
    layout: list[Located] = []
    subcharts = tuple(_templates(chart, sub, root) for sub in _subcharts(chart, layout))
    return ChartFiles(chart, meta, tuple(values), tuple(layout), subcharts, _templates(chart, chart, root))


def _yaml(path: Path, label: str, root: Path | None) -> YamlDoc:
    found: list[Problem] = []
    data = load_yaml_file(path, label, found, root)
    return YamlDoc(label, data, tuple((p.location, p.message) for p in found))


def _subcharts(chart: Path, problems: list[Located]) -> list[Path]:
    out: list[Path] = []
    charts_dir = chart / "charts"
    if not is_dir(charts_dir):
        return out
    for child in sorted(charts_dir.iterdir()):
        if child.is_dir() and (child / "Chart.yaml").is_file():
            out.append(child)
            out.extend(_subcharts(child, problems))
        elif child.is_file() and child.name.endswith((".tgz", ".tar.gz")):
            problems.append((child.relative_to(chart).as_posix(), "packaged sub-chart not analysed (unpack it)"))
    return out


def _templates(top: Path, chart: Path, root: Path | None) -> tuple[TemplateText, ...]:
    tdir = chart / "templates"
    if not is_dir(tdir):
        return ()
    return tuple(_template(top, path, root) for path in sorted(p for p in tdir.rglob("*") if p.is_file()))


def _template(top: Path, path: Path, root: Path | None) -> TemplateText:
    rel = path.relative_to(top).as_posix()
    try:
        return TemplateText(rel, read_input(path, root, MAX_OBJECT_FILE_BYTES).decode("utf-8"))
    except UnsafeInput as exc:
        return TemplateText(rel, None, f"unreadable template: {exc.strerror}")
    except (OSError, UnicodeDecodeError) as exc:
        return TemplateText(rel, None, f"unreadable template: {exc}")
