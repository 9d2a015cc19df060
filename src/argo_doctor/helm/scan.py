"""Analyse a chart's output templates (read by `sources.charts`); for `helm-check`, optionally render it twice
with helm."""

from __future__ import annotations

import difflib
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argo_doctor.errors import InputError
from argo_doctor.helm.analysis import Act, Chart, Define, Entry, TemplateFile, split_scopes
from argo_doctor.helm.capabilities import TemplateApi, template_apis
from argo_doctor.helm.conditions import Setting, lookup_value, reach, settings_text, ways_to_make
from argo_doctor.helm.expr import ParseError, parse_action
from argo_doctor.helm.functions import nondeterministic_functions
from argo_doctor.helm.layout import resource_of
from argo_doctor.helm.lexer import lex
from argo_doctor.helm.model import ChartReport, NondeterministicUse, Switch
from argo_doctor.helm.values import SetError, apply_set, merge, subchart_values
from argo_doctor.sources.charts import ChartFiles, TemplateText, YamlDoc, read_chart
from argo_doctor.sources.files import exists, is_dir, is_regular

HELM_TIMEOUT = 60.0
RENDER_TWICE = "--render-twice"
"""The location of the problem that says why the two renders with helm could not be made."""


def _load_values(docs: Sequence[YamlDoc], problems: list[tuple[str, str]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for doc in docs:
        problems.extend(doc.problems)
        if doc.data is None:
            continue
        if not isinstance(doc.data, Mapping):
            problems.append((doc.label, "values file is not a mapping"))
            continue
        values = merge(values, doc.data)
    return values


def _load_file(template: TemplateText, problems: list[tuple[str, str]]) -> tuple[TemplateFile, list[Define]] | None:
    rel, text = template.rel, template.text
    if text is None:
        problems.append((rel, template.error or "unreadable template"))
        return None
    lexed = lex(text)
    if lexed.error is not None:
        line, message = lexed.error
        problems.append((f"{rel}:{line}", message))
    acts: list[Act] = []
    for raw in lexed.actions:
        if raw.comment:
            continue
        try:
            parsed = parse_action(raw.text)
        except ParseError as exc:
            problems.append((f"{rel}:{raw.line}", f"cannot parse action {{{{ {raw.text[:60]} }}}}: {exc}"))
            continue
        except RecursionError:
            problems.append((f"{rel}:{raw.line}", "action nested too deeply to analyse"))
            continue
        acts.append(Act(rel, raw.line, raw.col, parsed))
    top, defines, split_problems = split_scopes(rel, acts)
    problems.extend(split_problems)
    tf = TemplateFile(rel, tuple(text.split("\n")), lexed.skeleton, top)
    return tf, defines


def _is_output(rel_to_templates: str) -> bool:
    name = rel_to_templates.rsplit("/", 1)[-1]
    return not name.startswith("_") and name != "NOTES.txt"


def _chart_meta(chart: ChartFiles, problems: list[tuple[str, str]]) -> tuple[str, str | None]:
    name, version = chart.path.name, None
    if chart.meta is None:
        problems.append((chart.prefix + "Chart.yaml", "missing"))
        return name, version
    problems.extend(chart.meta.problems)
    meta = chart.meta.data
    if isinstance(meta, Mapping):
        name = str(meta.get("name") or name)
        version = str(meta["version"]) if meta.get("version") is not None else None
    elif meta is not None:
        problems.append((chart.prefix + "Chart.yaml", "not a mapping"))
    return name, version


def chart_error(chart: ChartFiles) -> str | None:
    """Why `chart` cannot be analysed as a chart at all (no Chart.yaml, or one that is not a readable mapping)."""
    if chart.meta is None:
        return f"{chart.path}: not a Helm chart (no Chart.yaml)"
    if not isinstance(chart.meta.data, Mapping):
        why = "; ".join(f"{loc}: {msg}" for loc, msg in chart.meta.problems) or "not a mapping"
        return f"{chart.path}: cannot read Chart.yaml ({why})"
    return None


def values_error(chart: ChartFiles, values_files: Sequence[Path] = ()) -> str | None:
    """Why helm would refuse to render `chart` for one of its values files (its values.yaml, a sub-chart's, one
    of the `-f` files it was read with): invalid YAML, or a top level that is not a mapping (an empty file or a
    null document is fine); or why argo-doctor could not read one (its size, nesting and alias limits). A file of
    the chart is named under the chart's path, a `-f` file as given."""
    for doc, path, user in _values_docs(chart, len(values_files)):
        prefix = "" if user else f"{chart.path}/"
        if doc.problems:
            return "; ".join(f"{prefix}{loc}: {msg}" for loc, msg in doc.problems)
        if doc.data is not None and not isinstance(doc.data, Mapping):
            line = _top_level_line(Path(doc.label) if user else path)
            where = prefix + doc.label + (f":{line}" if line is not None else "")
            return f"{where}: the top level is {_kind(doc.data)}, not a mapping of values (helm refuses it too)"
    return None


def _values_docs(chart: ChartFiles, user: int = 0) -> Iterator[tuple[YamlDoc, Path, bool]]:
    """Every values file of the chart tree: (document, where the chart's own would be on disk, whether it is one
    of the `user` `-f` files read last with the top chart)."""
    own = len(chart.values) - user
    for index, doc in enumerate(chart.values):
        yield doc, chart.path / "values.yaml", index >= own
    for sub in chart.subcharts:
        yield from _values_docs(sub)


def _kind(value: Any) -> str:
    """What a YAML document is, for people: "a number", "a list"..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _top_level_line(path: Path) -> int | None:
    """The line where a values file's document starts (after comments, blank lines, directives and `---`); None
    when the file is not on disk (a packaged sub-chart's)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(text.splitlines(), 1):
        content = line.strip()
        if content.startswith("---"):
            content = content[3:].strip()
        if content and not content.startswith(("#", "%")):
            return number
    return None


@dataclass
class _Instance:
    """One chart of the tree as it renders: its files, its values, and where its values sit in the top chart's."""

    files: ChartFiles
    values: dict[str, Any]
    prefix: str  # "" for the top chart, "metrics." for a sub-chart under the key metrics
    enabled_by: tuple[Switch, ...] = ()  # the dependency conditions that would disable it
    alias: tuple[str, ...] = ()  # ("alias sessions",) when a dependency renders the sub-chart under another name


def _enabled(dep: Mapping[str, Any], values: Mapping[str, Any], top: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """Whether a Chart.yaml dependency renders, as helm decides it: the first `condition` path holding a bool,
    else any `tags` entry true, else yes. Also the condition paths that hold a bool."""
    paths = [p.strip() for p in str(dep.get("condition") or "").split(",") if p.strip()]
    for path in paths:
        value = lookup_value(values, path)
        if isinstance(value, bool):
            return value, [path]
    tag_values = [lookup_value(top, f"tags.{t}") for t in _list(dep.get("tags")) if isinstance(t, str)]
    if any(isinstance(v, bool) for v in tag_values):
        return any(v is True for v in tag_values), []
    return True, []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _instances(
    chart: ChartFiles, values: dict[str, Any], prefix: str, top: Mapping[str, Any], problems: list[tuple[str, str]]
) -> list[_Instance]:
    """The chart and every sub-chart that renders with these values, each with the values it gets."""
    out = [_Instance(chart, values, prefix)]
    meta = chart.meta.data if chart.meta is not None and isinstance(chart.meta.data, Mapping) else {}
    deps = [d for d in _list(meta.get("dependencies")) if isinstance(d, Mapping)]
    vendored = {_chart_meta(sub, [])[0] for sub in chart.subcharts}
    for dep in deps:
        if str(dep.get("name")) not in vendored:
            problems.append((f"{chart.prefix}Chart.yaml", f"dependency {dep.get('name')} is not vendored in charts/ "
                             "(Argo CD runs helm dependency build): its templates are not analysed"))
    for sub in chart.subcharts:
        sub_problems: list[tuple[str, str]] = []
        name, _ = _chart_meta(sub, sub_problems)
        problems.extend(p for p in sub_problems if p not in problems)
        entries = [d for d in deps if str(d.get("name")) == name] or [{"name": name}]
        for dep in entries:
            on, paths = _enabled(dep, values, top)
            if not on:
                continue
            key = str(dep.get("alias") or name)
            alias = (f"alias {key}",) if dep.get("alias") else ()
            sub_values = subchart_values(values, _load_values(sub.values, []), key)
            switches = tuple(Switch(*settings_text(frozenset({Setting(p, "falsy")}), values, prefix))
                             for p in paths)
            for inst in _instances(sub, sub_values, f"{prefix}{key}.", top, problems):
                out.append(_Instance(inst.files, inst.values, inst.prefix, switches + inst.enabled_by,
                                     inst.alias or alias))
    return out


def template_values(chart: Path, paths: Mapping[str, Path]) -> dict[str, Mapping[str, Any] | str]:
    """For each template file of the chart at `chart` (display name → path), the values it renders with by default:
    the chart's values.yaml, handed down to its sub-charts as helm does; for a file of a sub-chart those values do
    not render, why."""
    top_files = read_chart(chart)
    problems: list[tuple[str, str]] = []
    top = _load_values(top_files.values, problems)
    renders: dict[Path, Mapping[str, Any] | str] = {}

    def visit(files: ChartFiles, values: Mapping[str, Any] | str) -> None:
        renders[files.path.resolve()] = values
        meta = files.meta.data if files.meta is not None and isinstance(files.meta.data, Mapping) else {}
        deps = [d for d in _list(meta.get("dependencies")) if isinstance(d, Mapping)]
        for sub in files.subcharts:
            name, _ = _chart_meta(sub, [])
            dep = next((d for d in deps if str(d.get("name")) == name), {"name": name})
            key = str(dep.get("alias") or name)
            if isinstance(values, str):
                visit(sub, values)
                continue
            on, conditions = _enabled(dep, values, top)
            off = ", ".join(f"{path}: false" for path in conditions) or "its tags are off"
            visit(sub, subchart_values(values, _load_values(sub.values, []), key) if on else
                  f"the sub-chart {key} does not render with the chart's values ({off})")

    visit(top_files, top)
    found: dict[str, Mapping[str, Any] | str] = {}
    for display, path in paths.items():
        folders = [folder for folder in renders if folder in path.resolve().parents]
        if folders:
            found[display] = renders[max(folders, key=lambda f: len(f.parts))]
    return found


def chart_template_apis(chart: Path | None, files: Mapping[str, str], paths: Mapping[str, Path],
                        version: tuple[int, int, int], has: Callable[[str], bool | None]) -> Iterator[TemplateApi]:
    """`capabilities.template_apis` of one chart's template files, each judged with the values it renders with
    by default (`template_values`), when the files are a chart's."""
    values = template_values(chart, paths) if chart is not None and (chart / "Chart.yaml").is_file() else None
    return template_apis(files, version, has, values)


def _switches(entry: Entry, values: Mapping[str, Any], prefix: str) -> tuple[Switch, ...]:
    seen: list[frozenset[Setting]] = []
    for cond in sorted(entry.conds, key=repr):
        for way in ways_to_make(cond.formula, not cond.want):
            if way not in seen:
                seen.append(way)
    out: list[Switch] = []
    for way in seen:
        pairs, text = settings_text(way, values, prefix)
        switch = Switch(pairs, text)
        if switch not in out:
            out.append(switch)
    return tuple(sorted(out, key=lambda s: (len(s.settings), s.settings)))


def _render(chart: Path, name: str, args: Sequence[str], helm: str) -> tuple[str | None, str | None]:
    """Output of one `helm template` run, or an error message."""
    cmd = [helm, "template", str(chart), "--name-template", name, "--skip-tests", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=HELM_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return None, f"helm template timed out after {HELM_TIMEOUT:.0f} s"
    except OSError as exc:
        return None, f"cannot run helm: {exc}"
    if done.returncode != 0:
        return None, f"helm template failed (exit {done.returncode}): {_helm_error(done.stderr)}"
    return done.stdout, None


def _helm_error(stderr: str) -> str:
    """helm's own error line (`Error: …`, without the prefix and the `--debug` hint that follows it), else its last
    line of output."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    error = next((line for line in lines if line.startswith("Error:")), None)
    if error is not None:
        return error.removeprefix("Error:").strip()
    return lines[-1] if lines else "no error message"


def _render_twice(
    chart: Path, name: str, args: Sequence[str], helm: str, problems: list[tuple[str, str]]
) -> str | None:
    outputs: list[str] = []
    for _ in range(2):
        out, error = _render(chart, name, args, helm)
        if error is not None or out is None:
            problems.append((RENDER_TWICE, error or "helm template gave no output"))
            return None
        outputs.append(out)
    first, second = outputs
    diff = difflib.unified_diff(
        first.splitlines(keepends=True), second.splitlines(keepends=True), "render-1", "render-2"
    )
    return "".join(diff)


def analyse_chart(chart: ChartFiles, overrides: Sequence[Mapping[str, Any]] = ()) -> ChartReport:
    """Find every non-deterministic call that the chart's output templates (and those of the sub-charts that
    render) reach with its values, `overrides` merged over them in order (no I/O)."""
    problems: list[tuple[str, str]] = []
    name, version = _chart_meta(chart, problems)
    report = ChartReport(path=chart.path, name=name, version=version, problems=problems)
    values = _load_values(chart.values, problems)
    for override in overrides:
        values = merge(values, override)
    instances = _instances(chart, values, "", values, problems)
    problems.extend(p for inst in instances for p in inst.files.layout_problems)

    files: dict[str, TemplateFile] = {}
    defines: dict[str, Define] = {}
    rendered = {t.rel for inst in instances for t in inst.files.templates}
    # helm parses the deepest templates first, so a parent's define of the same name wins; the defines of a sub-chart
    # the values disable are kept (without its problems), for the parent's branches that would call them
    for template in sorted(_every_template(chart), key=lambda t: (t.rel.count("/"), t.rel), reverse=True):
        loaded = _load_file(template, problems if template.rel in rendered else [])
        if loaded is not None:
            if template.rel in rendered:
                files[loaded[0].rel] = loaded[0]
            defines.update((d.name, d) for d in loaded[1])
    analysis = Chart(files, defines, nondeterministic_functions())
    seen: set[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = set()
    for inst in instances:
        for template in inst.files.templates:
            rel = template.rel
            if rel not in files or not _is_output(rel.rsplit("/templates/", 1)[-1].removeprefix("templates/")):
                continue
            try:
                out = analysis.analyse_file(rel)
            except RecursionError:
                problems.append((rel, "includes or expressions nested too deeply to analyse"))
                continue
            tf = files[rel]
            placed = [(entry, act, True) for entry, act in out.landed]
            placed += [(entry, act, False) for entry, act in out.unlanded]  # not written out: may reach the output
            for entry, act, written in placed:
                reached = reach(entry.conds, inst.values)
                via = inst.alias + entry.via
                ident = (entry.function, entry.call, via, act.loc, entry.field)
                if reached is False or ident in seen:
                    continue
                seen.add(ident)
                kind, rname = resource_of(tf.skeleton, tf.raw_lines, act.line - 1)
                report.uses.append(
                    NondeterministicUse(
                        function=entry.function,
                        kind=entry.kind,
                        call=entry.call,
                        via=via,
                        output=act.loc,
                        resource_kind=kind,
                        resource_name=rname,
                        field=entry.field,
                        switches=_switches(entry, inst.values, inst.prefix) + inst.enabled_by,
                        certain=reached is True and written,
                    )
                )
    problems.extend(p for p in analysis.problems if p not in problems)
    return report


def _every_template(chart: ChartFiles) -> Iterator[TemplateText]:
    """The templates of a chart and of every sub-chart it vendors, rendered or not."""
    yield from chart.templates
    for sub in chart.subcharts:
        yield from _every_template(sub)


def values_args(sets: Sequence[str] = (), set_strings: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`--set` then `--set-string` expressions as overrides for `analyse_chart`; SetError when one is refused."""
    out: list[dict[str, Any]] = []
    for text in sets:
        out.append(apply_set({}, text))
    for text in set_strings:
        out.append(apply_set({}, text, as_string=True))
    return out


def scan_chart(
    path: Path,
    values_files: Sequence[Path] = (),
    render_twice: bool = False,
    sets: Sequence[str] = (),
    set_strings: Sequence[str] = (),
    strict: bool = False,
) -> ChartReport:
    """`argo-doctor helm-check`: read the chart at `path` and analyse it with its values, the `-f` files, then
    `--set` and `--set-string` (helm's order); with `render_twice`, also render it twice with the helm binary on
    PATH and keep the difference, or say under RENDER_TWICE in the problems why it could not. With `strict`,
    InputError when the path is not a readable chart, for a values file helm would refuse (see `values_error`) and
    for a refused `--set`."""
    if strict and not is_dir(Path(path)):
        raise InputError(f"{path}: {'not a directory' if exists(Path(path)) else 'no such directory'}; "
                         "give the folder that holds Chart.yaml")
    files = read_chart(path, values_files)
    if strict and (error := chart_error(files)) is not None:
        raise InputError(error)
    if strict and (bad := next((f for f in values_files if not is_regular(Path(f))), None)) is not None:
        raise InputError(f"{bad}: {'not a regular file' if exists(Path(bad)) else 'no such file'} (-f)")
    try:
        overrides = values_args(sets, set_strings)
    except SetError as exc:
        if strict:
            raise InputError(f"--set: {exc}") from None
        overrides = []
    if strict and (error := values_error(files, values_files)) is not None:
        raise InputError(error)
    report = analyse_chart(files, overrides)
    helm = shutil.which("helm")
    report.helm_available = helm is not None
    if render_twice and helm is None:
        report.problems.append((RENDER_TWICE, "no helm binary on PATH: the chart was not rendered"))
    elif render_twice and helm is not None:
        args = [a for f in values_files for a in ("-f", str(f))]
        args += [a for t in sets for a in ("--set", t)] + [a for t in set_strings for a in ("--set-string", t)]
        report.render_diff = _render_twice(Path(path), report.name, args, helm, report.problems)
    return report
