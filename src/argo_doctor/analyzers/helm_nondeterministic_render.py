"""helm-nondeterministic-render: a chart in the input renders differently every time.

For each chart under the input's `repo/` (see `argo_doctor.helm`), the calls of functions whose
output changes on every render (genCA, randAlphaNum, now, …, and `lookup`, empty under Argo CD)
that the values in use reach, with the resources and fields they feed, the values that switch them off, and, for
each Application deploying the chart, whether its `ignoreDifferences` already cover those fields in
the live objects and whether `RespectIgnoreDifferences=true` is set. An Application's chart is analysed with the
values Argo CD gives `helm template` (reposerver `helmTemplate`, v3.5.1): the chart's values.yaml, then
`helm.valueFiles` in order, then `helm.valuesObject` (or the `helm.values` string), then `helm.parameters` as
`--set` and, with `forceString`, `--set-string`.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence, resource_ref
from argo_doctor.facts.ignore_differences import coverage, jq_expression, json_pointer, respects_ignore_differences
from argo_doctor.facts.webhooks import ADMISSION_GROUP, CONFIG_KINDS, WEBHOOK_NEEDS
from argo_doctor.helm import ChartReport, NondeterministicUse, analyse_chart
from argo_doctor.helm.values import SetError, apply_set
from argo_doctor.model import Evidence, Finding, Needs, Problem, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources import goyaml
from argo_doctor.sources.charts import ChartFiles
from argo_doctor.sources.objects import as_list, mapping

DOCS = (
    "https://argo-cd.readthedocs.io/en/stable/user-guide/helm/#random-data",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/diffing/",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/#respect-ignore-difference-configs",
    "https://github.com/argoproj/argo-cd/issues/5202",
)
SENSITIVE_KINDS = {"Secret", *CONFIG_KINDS}
MAX_INLINE_VALUES = 1 << 20
"""A `helm.values` string longer than this is not parsed."""


def _field_text(field: tuple[str, ...]) -> str:
    return ".".join(field).replace(".[]", "[]") or "(the whole document)"


class HelmNondeterministicRender(Analyzer):
    """Charts whose render changes every time."""

    id = "helm-nondeterministic-render"
    title = "Helm chart renders differently every time"
    needs = Needs(frozenset({"argoproj.io/Application"}) | WEBHOOK_NEEDS, app_resources=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per chart with non-deterministic output reached by its values (and per Application
        deploying it, with the Application's values)."""
        files = {str(c.path): c for c in ctx.snap.charts}
        apps_by_chart: dict[str, list[tuple[Obj, Mapping[str, Any]]]] = defaultdict(list)
        for app in ctx.snap.applications():
            for source in _sources(app):
                chart = _chart_at(files, str(source.get("path") or ""))
                if chart is not None:
                    apps_by_chart[str(chart.path)].append((app, source))
        reports = ctx.chart_reports()
        paths = {str(r.path) for r in reports}
        for report in reports:
            for location, message in report.problems:
                ctx.snap.problems.append(_problem(report, location, message))
            apps = apps_by_chart.get(str(report.path), [])
            chart = files.get(str(report.path))
            if not apps:
                # a vendored sub-chart is analysed with the values its parent passes, in the parent's finding
                in_parent = report.path.parent.name == "charts" and str(report.path.parent.parent) in paths
                if report.uses and not in_parent:
                    yield self._finding(ctx, report, None, [])
                continue
            for app, source in apps:
                notes: list[str] = []
                own = report
                if chart is not None:
                    overrides = _app_values(chart, mapping(source.get("helm")), notes)
                    if overrides:
                        own = analyse_chart(chart, overrides)
                if own.uses:
                    yield self._finding(ctx, own, app, notes)

    def _finding(self, ctx: Context, report: ChartReport, app: Obj | None, value_notes: list[str]) -> Finding:
        targets: dict[tuple[str | None, str | None, tuple[str, ...]], list[NondeterministicUse]] = defaultdict(list)
        for use in sorted(report.uses, key=lambda u: not u.certain):  # what surely changes first
            targets[(use.resource_kind, use.resource_name, use.field)].append(use)
        chart_dir = _display(report)
        evidence: list[Evidence] = []
        lines, covered_all, notes = [], True, []
        for (kind, name, field), uses in targets.items():
            functions = ", ".join(sorted({u.function for u in uses}))
            where = f"{kind or '?'} {name or '?'} {_field_text(field)}"
            status = ""
            if app is not None and kind and name:
                live = _live(ctx, app, kind, name)
                if live is None:
                    covered_all = False
                    status = " (no live object in the input to check ignoreDifferences against)"
                else:
                    cover = coverage(app, live, field)
                    for problem in cover.problems:
                        notes.append(f"Application {app.name} {problem}")
                    if cover.complete:
                        status = f" — ignored by {', '.join(cover.by)}"
                    else:
                        covered_all = False
                        status = " — not covered by ignoreDifferences"
            else:
                covered_all = False
            maybe = "" if any(u.certain for u in uses) else " (may be reached: a condition on the way depends on " \
                "more than values)"
            lines.append(f"{where} ← {functions}{maybe}{status}")
            for use in uses[:2]:
                evidence.append(Evidence("object", f"{chart_dir}/{use.call}",
                                         f"{use.function} reaches {where} via {' → '.join(use.via) or use.output}"))
        switches = sorted({s.text for u in report.uses for s in u.switches})
        respect = app is not None and respects_ignore_differences(app)
        summary = (
            f"Chart {report.name}{' ' + report.version if report.version else ''} ({chart_dir}) calls functions whose "
            "output changes on every render: " + "; ".join(lines) + ". Argo CD renders it again at every manifest "
            "cache miss (plain `helm template`, where lookup returns nothing), so the same revision yields new "
            "values, the Application goes OutOfSync and an automated sync applies them."
        )
        if switches:
            summary += " Values that avoid the calls: " + "; ".join(switches) + "."
        certain = {key for key, uses in targets.items() if any(u.certain for u in uses)}
        severity = Severity.HIGH if any(k in SENSITIVE_KINDS for k, _, _ in certain) else Severity.MEDIUM
        if not certain:
            severity = Severity.MEDIUM if any(k in SENSITIVE_KINDS for k, _, _ in targets) else Severity.LOW
        if app is not None:
            automated = bool(mapping(mapping(app.spec.get("syncPolicy")).get("automated")))
            summary += f" Application {app.namespace}/{app.name} deploys it" + (" with automated sync." if automated
                                                                              else " (manual sync).")
            if value_notes:
                summary += " Values: " + "; ".join(value_notes) + "."
            if covered_all and respect:
                severity = Severity.LOW
                summary += (" Its ignoreDifferences cover every generated field and RespectIgnoreDifferences=true "
                            "keeps syncs from applying them: the finding is downgraded, the chart still regenerates "
                            "values on each render.")
            elif covered_all:
                severity = min(severity, Severity.MEDIUM)
                summary += (" Its ignoreDifferences cover every generated field, so they no longer make it "
                            "OutOfSync, but without RespectIgnoreDifferences=true any sync still applies the new "
                            "values.")
        if report.render_diff:
            summary += " Rendering the chart twice with helm gives different output (diff in the evidence)."
            evidence.append(Evidence("object", chart_dir, report.render_diff[:2000]))
        summary += "".join(f" {n}." for n in notes)
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Chart {report.name} {'regenerates' if certain else 'may regenerate'} "
            + ", ".join(f"{k or '?'} {_field_text(f)}" for k, _, f in list(targets)[:3])
            + (f" on every render (Application {app.name})" if app is not None else " on every render"),
            summary=summary,
            objects=[*( [app.ref] if app is not None else []),
                     *dict.fromkeys(_target_ref(ctx, app, k, n) for k, n, _ in targets if k and n)],
            evidence=evidence + ([object_evidence(app, ".spec.ignoreDifferences", "ignoreDifferences: "
                                                  + str(app.spec.get("ignoreDifferences") or "none"))]
                                 if app is not None else []),
            remediation=Remediation(
                text=("Give the chart fixed inputs for what it generates: " + "; ".join(switches) + ". "
                      if switches else "Give the chart fixed inputs for what it generates. ")
                + "Or ignore the generated fields in the Application (patch below) with "
                "RespectIgnoreDifferences=true, so that neither diffs nor syncs touch them.",
                patch=_patch(ctx, targets, app),
                command=f"argo-doctor helm-check {chart_dir} --render-twice",
                docs=DOCS,
            ),
        )


def _sources(app: Obj) -> list[Mapping[str, Any]]:
    """The Application's sources that name a path in a repository (`source`, or each of `sources`)."""
    spec = mapping(app.at("spec"))
    found = [mapping(spec.get("source")), *(mapping(s) for s in as_list(spec.get("sources")))]
    return [s for s in found if s.get("path")]


def _repo_path(path: Any) -> str:
    parts = [str(p) for p in getattr(path, "parts", ())]
    return "/".join(parts[len(parts) - parts[::-1].index("repo"):]) if "repo" in parts else ""


def _chart_at(files: Mapping[str, ChartFiles], path: str) -> ChartFiles | None:
    """The chart of the input's `repo/` at a source's path."""
    wanted = posixpath.normpath(path.strip("/")) if path.strip("/") else ""
    return next((c for c in files.values() if wanted and _repo_path(c.path) == wanted), None)


def _set_text(name: str, value: str) -> str:
    """A parameter as Argo CD passes it to `--set`: commas in the value escaped, unless it is a `{a,b}` list."""
    if value.startswith("{") and value.endswith("}"):
        return f"{name}={value}"
    out, prev = [], ""
    for c in value:
        out.append("\\," if c == "," and prev != "\\" else c)
        prev = c
    return f"{name}={''.join(out)}"


def _value_file(chart: ChartFiles, name: str, ignore_missing: bool, notes: list[str]) -> Mapping[str, Any] | None:
    """One `valueFiles` entry read from the chart folder, or None with a note saying why not."""
    if name.startswith("$"):
        notes.append(f"value file {name} comes from another source of the Application: not read")
        return None
    if "://" in name:
        notes.append(f"value file {name} is a URL: not read")
        return None
    if any(c in name for c in "*?["):
        notes.append(f"value file pattern {name} not expanded")
        return None
    # a relative path starts at the chart's folder, an absolute one at the repository's root (Argo CD's
    # ResolveValueFilePathOrUrl)
    start = "" if name.startswith("/") else _repo_path(chart.path)
    rel = posixpath.normpath(posixpath.join(start, name.lstrip("/")))
    if rel.startswith("../") or rel == "..":
        notes.append(f"value file {name} is outside the repository: not read")
        return None
    docs = [d for d in chart.value_files if d.label == rel]
    if not docs:
        if not ignore_missing:
            notes.append(f"value file {name} is not in the input's repo/ (Argo CD fails to render without it, "
                         "unless ignoreMissingValueFiles is set)")
        return None
    data = docs[0].data
    notes.extend(f"value file {location}: {message}" for location, message in docs[0].problems)
    if data is not None and not isinstance(data, Mapping):
        notes.append(f"value file {name} is not a mapping: not used")
        return None
    return data or {}


def _app_values(chart: ChartFiles, helm: Mapping[str, Any], notes: list[str]) -> list[Mapping[str, Any]]:
    """The overrides an Application's `helm` settings put over the chart's values.yaml, in Argo CD's order."""
    out: list[Mapping[str, Any]] = []
    ignore_missing = helm.get("ignoreMissingValueFiles") is True
    for name in as_list(helm.get("valueFiles")):
        if isinstance(name, str) and name:
            data = _value_file(chart, name, ignore_missing, notes)
            if data is not None:
                out.append(data)
    inline = helm.get("valuesObject")
    if not isinstance(inline, Mapping):
        inline = _inline_values(helm.get("values"), notes)
    if inline:
        out.append(inline)
    params = [p for p in as_list(helm.get("parameters")) if isinstance(p, Mapping) and p.get("name")]
    for param in [p for p in params if p.get("forceString") is not True] + [p for p in params
                                                                             if p.get("forceString") is True]:
        text = _set_text(str(param["name"]), "" if param.get("value") is None else str(param.get("value")))
        try:
            out.append(apply_set({}, text, as_string=param.get("forceString") is True))
        except SetError as exc:
            notes.append(f"parameter {param['name']} not used: {exc}")
    if as_list(helm.get("fileParameters")):
        notes.append("fileParameters not read")
    return out


def _inline_values(text: Any, notes: list[str]) -> Mapping[str, Any] | None:
    """`helm.values`, a YAML string."""
    if not isinstance(text, str) or not text.strip():
        return None
    if len(text) > MAX_INLINE_VALUES:
        notes.append(f"helm.values longer than {MAX_INLINE_VALUES:,} characters: not read")
        return None
    try:
        data = goyaml.load(text)
    except (yaml.YAMLError, RecursionError):
        notes.append("helm.values is not valid YAML: not used")
        return None
    if data is not None and not isinstance(data, Mapping):
        notes.append("helm.values is not a mapping: not used")
        return None
    return data


def _display(report: ChartReport) -> str:
    parts = report.path.parts
    return "/".join(parts[parts.index("repo"):]) if "repo" in parts else str(report.path)


def _live(ctx: Context, app: Obj, kind: str, name: str) -> Obj | None:
    for entry, live in ctx.snap.app_resources(app):
        if live is not None and entry.get("kind") == kind and entry.get("name") == name:
            return live
    return next((o for o in ctx.snap.tracked_by(app) if o.kind == kind and o.name == name), None)


def _target_ref(ctx: Context, app: Obj | None, kind: str, name: str) -> Ref:
    """The object a chart renders, as deployed: the live object, else the Application's `status.resources`
    entry for it, else kind and name alone (apiVersion and namespace unknown)."""
    if app is not None:
        live = _live(ctx, app, kind, name)
        if live is not None:
            return live.ref
        for entry, _ in ctx.snap.app_resources(app):
            if entry.get("kind") == kind and entry.get("name") == name:
                return resource_ref(entry)
    return Ref("", kind, "", name)


def _patch(ctx: Context, targets: dict[tuple[str | None, str | None, tuple[str, ...]], list[NondeterministicUse]],
           app: Obj | None) -> str:
    lines = ["spec:", "  ignoreDifferences:"]
    for kind, name, field in targets:
        if not kind:
            continue
        group = ADMISSION_GROUP if kind in CONFIG_KINDS else ""
        lines.append(f"  - kind: {kind}" if not group else f"  - group: {group}\n    kind: {kind}")
        if name:
            lines.append(f"    name: {name}")
        pointer = json_pointer(field)
        if pointer is not None:
            lines += ["    jsonPointers:", f"    - {pointer or '/'}"]
        else:
            lines += ["    jqPathExpressions:", f"    - {jq_expression(field)}"]
    lines += ["  syncPolicy:", "    syncOptions:", "    - RespectIgnoreDifferences=true"]
    if app is not None:
        existing = mapping(app.spec.get("syncPolicy")).get("syncOptions")
        if existing:
            lines.append(f"    # keep the existing options too: {existing}")
    return "\n".join(lines) + "\n"


def _problem(report: ChartReport, location: str, message: str) -> Problem:
    return Problem(f"{_display(report)}/{location}", message)

