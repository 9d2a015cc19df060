"""helm-nondeterministic-render: a chart in the input renders differently every time.

For each chart under the input's `repo/` (see `argo_doctor.helm`), the calls of functions whose
output changes on every render (genCA, randAlphaNum, now, …, and `lookup`, empty under Argo CD)
with the resources and fields they feed, the values that switch them off, and, for each
Application deploying the chart, whether its `ignoreDifferences` already cover those fields in
the live objects and whether `RespectIgnoreDifferences=true` is set.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence
from argo_doctor.facts.ignore_differences import coverage, jq_expression, json_pointer, respects_ignore_differences
from argo_doctor.facts.webhooks import ADMISSION_GROUP, CONFIG_KINDS, WEBHOOK_NEEDS
from argo_doctor.helm import ChartReport, NondeterministicUse
from argo_doctor.model import Evidence, Finding, Needs, Problem, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import mapping

DOCS = (
    "https://argo-cd.readthedocs.io/en/stable/user-guide/helm/#random-data",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/diffing/",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/#respect-ignore-difference-configs",
    "https://github.com/argoproj/argo-cd/issues/5202",
)
SENSITIVE_KINDS = {"Secret", *CONFIG_KINDS}


def _field_text(field: tuple[str, ...]) -> str:
    return ".".join(field).replace(".[]", "[]") or "(the whole document)"


class HelmNondeterministicRender(Analyzer):
    """Charts whose render changes every time."""

    id = "helm-nondeterministic-render"
    title = "Helm chart renders differently every time"
    needs = Needs(frozenset({"argoproj.io/Application"}) | WEBHOOK_NEEDS, app_resources=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per chart with non-deterministic output (and per Application deploying it)."""
        apps_by_chart: dict[str, list[Obj]] = defaultdict(list)
        for app in ctx.snap.applications():
            report = ctx.chart_for(app)
            if report is not None:
                apps_by_chart[str(report.path)].append(app)
        for report in ctx.chart_reports():
            for location, message in report.problems:
                ctx.snap.problems.append(_problem(report, location, message))
            if not report.uses:
                continue
            apps = apps_by_chart.get(str(report.path), [])
            if not apps:
                yield self._finding(ctx, report, None)
            for app in apps:
                yield self._finding(ctx, report, app)

    def _finding(self, ctx: Context, report: ChartReport, app: Obj | None) -> Finding:
        targets: dict[tuple[str | None, str | None, tuple[str, ...]], list[NondeterministicUse]] = defaultdict(list)
        for use in report.uses:
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
            lines.append(f"{where} ← {functions}{status}")
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
        severity = Severity.HIGH if any(k in SENSITIVE_KINDS for k, _, _ in targets) else Severity.MEDIUM
        if app is not None:
            automated = bool(mapping(mapping(app.spec.get("syncPolicy")).get("automated")))
            summary += f" Application {app.namespace}/{app.name} deploys it" + (" with automated sync." if automated
                                                                              else " (manual sync).")
            if covered_all and respect:
                severity = Severity.LOW
                summary += (" Its ignoreDifferences cover every generated field and RespectIgnoreDifferences=true "
                            "keeps syncs from applying them: the finding is downgraded, the chart still regenerates "
                            "values on each render.")
            elif covered_all:
                severity = Severity.MEDIUM
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
            title=f"Chart {report.name} regenerates "
            + ", ".join(f"{k or '?'} {_field_text(f)}" for k, _, f in list(targets)[:3])
            + (f" on every render (Application {app.name})" if app is not None else " on every render"),
            summary=summary,
            objects=[*( [app.ref] if app is not None else []),
                     *(Ref("", k, "", n) for k, n, _ in targets if k and n)],
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


def _display(report: ChartReport) -> str:
    parts = report.path.parts
    return "/".join(parts[parts.index("repo"):]) if "repo" in parts else str(report.path)


def _live(ctx: Context, app: Obj, kind: str, name: str) -> Obj | None:
    for entry, live in ctx.snap.app_resources(app):
        if live is not None and entry.get("kind") == kind and entry.get("name") == name:
            return live
    return next((o for o in ctx.snap.tracked_by(app) if o.kind == kind and o.name == name), None)


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

