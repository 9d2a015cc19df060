"""Output of `argo-doctor deprecations`: table, JSON or Markdown."""

from __future__ import annotations

from argo_doctor.deprecations import Use, Version
from argo_doctor.model import Problem
from argo_doctor.report.columns import columns
from argo_doctor.report.json import encode
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import location_key

ORDER = {"removed": 0, "deprecated": 1}


def _rank(use: Use) -> int:
    """Removed, deprecated, then the uses that only may happen (a template branch not decided), then listed."""
    return ORDER.get(use.status, 4) + (2 if use.maybe else 0)


def _status(use: Use) -> str:
    return f"{use.status} (may be used)" if use.maybe else use.status


def render(uses: list[Use], problems: list[Problem], target: Version | None, output: str) -> str:
    """The uses, removed ones first, those that only may happen after the certain ones; every text redacted,
    and without control characters but in JSON."""
    uses, problems = clean((uses, problems), human=output != "json")
    uses = sorted(uses, key=lambda u: (_rank(u), location_key(u.location)))
    version = f"{target[0]}.{target[1]}" if target else None
    if output == "json":
        doc = {
            "targetVersion": version,
            "uses": [
                {
                    "status": u.status, "certain": not u.maybe, "apiVersion": u.api.api_version,
                    "kind": u.api.kind, "location": u.location, "how": u.how, "object": u.subject,
                    "deprecatedIn": u.api.deprecated_in,
                    "removedIn": u.api.removed_in, "replacement": u.api.replacement, "component": u.api.component,
                    "notes": u.api.notes, "source": u.api.source,
                }
                for u in uses
            ],
            "errors": [{"location": p.location, "message": p.message} for p in problems],
        }
        return encode(doc)
    if output == "markdown":
        lines = [f"# Deprecated APIs (target {version or 'any'})", "", "| status | API | where | how | fix |",
                 "|---|---|---|---|---|"]
        lines += [f"| {_status(u)} | `{u.api.api_version} {u.api.kind}` | `{u.location}` | {u.how} | "
                  f"{u.api.describe()} |" for u in uses]
        return "\n".join(lines)
    rows = [("STATUS", "API", "KIND", "WHERE", "HOW", "FIX")]
    rows += [(_status(u), u.api.api_version, u.api.kind, u.location, u.how, u.api.describe()) for u in uses]
    table = columns(rows)
    head = f"target Kubernetes version: {version or 'none (every known deprecation is listed)'}"
    return head + "\n" + (table if uses else "no deprecated API found")
