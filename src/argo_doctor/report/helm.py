"""Output of `argo-doctor helm-check`."""

from __future__ import annotations

from typing import Any

from argo_doctor.helm import ChartReport
from argo_doctor.report.columns import INDENT, cut, wrap
from argo_doctor.sources.redact import clean


def report_json(report: ChartReport) -> dict[str, Any]:
    """The chart report as JSON, every string redacted."""
    report = clean(report)
    return {
        "chart": {"name": report.name, "version": report.version, "path": str(report.path)},
        "uses": [
            {
                "function": u.function,
                "kind": u.kind,
                "call": u.call,
                "via": list(u.via),
                "output": u.output,
                "resource": {"kind": u.resource_kind, "name": u.resource_name},
                "field": list(u.field),
                "switches": [{"settings": dict(s.settings), "text": s.text} for s in u.switches],
                "reached": "yes" if u.certain else "maybe",
            }
            for u in report.uses
        ],
        "renderDiff": report.render_diff,
        "helmAvailable": report.helm_available,
        "errors": [{"location": loc, "message": msg} for loc, msg in report.problems],
    }


def report_text(report: ChartReport, width: int | None = None, wide: bool = False) -> str:
    """The chart report as text: one block per call, then the render comparison and problems; every text
    redacted and without control characters. Fitted to `width` unless `wide`: lines wrapped (no word cut), the
    lines of the render diff cut."""
    report = clean(report, human=True)
    width = None if wide else width
    lines = wrap(f"chart {report.name} {report.version or ''} ({report.path})".rstrip(), width, "", INDENT)
    if not report.uses:
        lines.append("no template function that changes on every render")
    else:
        lines.append(f"{len(report.uses)} call(s) whose output changes on every render:")
        for use in report.uses:
            field = ".".join(use.field).replace(".[]", "[]")
            reached = "" if use.certain else " — may be reached (a condition on the way depends on more than values)"
            lines += wrap(f"{use.function} ({use.kind}) at {use.call}{reached}", width, "  ", "      ")
            lines += wrap(f"lands in {use.resource_kind or '?'} {use.resource_name or '?'} {field} ({use.output})",
                          width, INDENT, INDENT + "  ")
            if use.via:
                lines += wrap(f"via {' → '.join(use.via)}", width, INDENT, INDENT + "  ")
            for switch in use.switches:
                lines += wrap(f"avoided by: {switch.text}", width, INDENT, INDENT + "  ")
    if report.render_diff is not None:
        lines.append("two renders with helm: " + ("identical" if not report.render_diff else "DIFFERENT"))
        if report.render_diff:
            diff = report.render_diff.split("\n")
            lines += diff if width is None else [cut(line, width) for line in diff]
    for loc, msg in report.problems:
        lines += wrap(f"error: {loc}: {msg}", width, "", INDENT)
    return "\n".join(lines)
