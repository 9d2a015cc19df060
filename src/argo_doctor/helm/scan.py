"""Analyse a chart's output templates (read by `sources.charts`); for `helm-check`, optionally render it twice
with helm."""

from __future__ import annotations

import difflib
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from argo_doctor.helm.analysis import Act, Chart, Define, Entry, TemplateFile, split_scopes
from argo_doctor.helm.conditions import Setting, settings_text, ways_to_make
from argo_doctor.helm.expr import ParseError, parse_action
from argo_doctor.helm.functions import nondeterministic_functions
from argo_doctor.helm.layout import resource_of
from argo_doctor.helm.lexer import lex
from argo_doctor.helm.model import ChartReport, NondeterministicUse, Switch
from argo_doctor.sources.charts import ChartFiles, TemplateText, YamlDoc, read_chart

HELM_TIMEOUT = 60.0


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Helm-style values merge: maps merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def _load_values(docs: Sequence[YamlDoc], problems: list[tuple[str, str]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for doc in docs:
        problems.extend(doc.problems)
        if doc.data is None:
            continue
        if not isinstance(doc.data, Mapping):
            problems.append((doc.label, "values file is not a mapping"))
            continue
        values = _merge(values, doc.data)
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
        problems.append(("Chart.yaml", "missing"))
        return name, version
    problems.extend(chart.meta.problems)
    meta = chart.meta.data
    if isinstance(meta, Mapping):
        name = str(meta.get("name") or name)
        version = str(meta["version"]) if meta.get("version") is not None else None
    elif meta is not None:
        problems.append(("Chart.yaml", "not a mapping"))
    return name, version


def _switches(entry: Entry, values: Mapping[str, Any]) -> tuple[Switch, ...]:
    seen: list[frozenset[Setting]] = []
    for cond in sorted(entry.conds, key=repr):
        for way in ways_to_make(cond.formula, not cond.want):
            if way not in seen:
                seen.append(way)
    out: list[Switch] = []
    for way in seen:
        pairs, text = settings_text(way, values)
        switch = Switch(pairs, text)
        if switch not in out:
            out.append(switch)
    return tuple(sorted(out, key=lambda s: (len(s.settings), s.settings)))


def _render(chart: Path, name: str, values_files: Sequence[Path], helm: str) -> tuple[str | None, str | None]:
    """Output of one `helm template` run, or an error message."""
    cmd = [helm, "template", str(chart), "--name-template", name, "--skip-tests"]
    for f in values_files:
        cmd += ["-f", str(f)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=HELM_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return None, f"helm template timed out after {HELM_TIMEOUT:.0f} s"
    except OSError as exc:
        return None, f"cannot run helm: {exc}"
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        return None, f"helm template failed (exit {done.returncode}): {tail}"
    return done.stdout, None


def _render_twice(
    chart: Path, name: str, values_files: Sequence[Path], helm: str, problems: list[tuple[str, str]]
) -> str | None:
    outputs: list[str] = []
    for _ in range(2):
        out, error = _render(chart, name, values_files, helm)
        if error is not None or out is None:
            problems.append(("helm template", error or "no output"))
            return None
        outputs.append(out)
    first, second = outputs
    diff = difflib.unified_diff(
        first.splitlines(keepends=True), second.splitlines(keepends=True), "render-1", "render-2"
    )
    return "".join(diff)


def analyse_chart(chart: ChartFiles) -> ChartReport:
    """Find every non-deterministic call reachable from the chart's output templates (no I/O)."""
    problems: list[tuple[str, str]] = []
    name, version = _chart_meta(chart, problems)
    report = ChartReport(path=chart.path, name=name, version=version, problems=problems)
    values = _load_values(chart.values, problems)
    problems.extend(chart.layout_problems)

    files: dict[str, TemplateFile] = {}
    defines: dict[str, Define] = {}
    outputs: list[str] = []
    for sub in reversed(chart.subcharts):
        for template in sub:
            loaded = _load_file(template, problems)
            if loaded is not None:
                files[loaded[0].rel] = loaded[0]
                defines.update((d.name, d) for d in loaded[1])
    for template in chart.templates:
        loaded = _load_file(template, problems)
        if loaded is None:
            continue
        files[loaded[0].rel] = loaded[0]
        defines.update((d.name, d) for d in loaded[1])
        if _is_output(template.rel.removeprefix("templates/")):
            outputs.append(loaded[0].rel)
    analysis = Chart(files, defines, nondeterministic_functions())
    seen: set[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = set()
    for rel in outputs:
        try:
            out = analysis.analyse_file(rel)
        except RecursionError:
            problems.append((rel, "includes or expressions nested too deeply to analyse"))
            continue
        tf = files[rel]
        for entry, act in [*out.landed, *out.unlanded]:
            ident = (entry.function, entry.call, entry.via, act.loc, entry.field)
            if ident in seen:
                continue
            seen.add(ident)
            kind, rname = resource_of(tf.skeleton, tf.raw_lines, act.line - 1)
            report.uses.append(
                NondeterministicUse(
                    function=entry.function,
                    kind=entry.kind,
                    call=entry.call,
                    via=entry.via,
                    output=act.loc,
                    resource_kind=kind,
                    resource_name=rname,
                    field=entry.field,
                    switches=_switches(entry, values),
                )
            )
    problems.extend(p for p in analysis.problems if p not in problems)
    return report


def scan_chart(path: Path, values_files: Sequence[Path] = (), render_twice: bool = False) -> ChartReport:
    """`argo-doctor helm-check`: read the chart at `path` and analyse it; with `render_twice`, also render it twice
    with the helm binary on PATH and keep the difference."""
    report = analyse_chart(read_chart(path, values_files))
    helm = shutil.which("helm")
    report.helm_available = helm is not None
    if render_twice and helm is not None:
        report.render_diff = _render_twice(Path(path), report.name, values_files, helm, report.problems)
    return report
