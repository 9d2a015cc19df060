"""Output of `argo-doctor deprecations`: table, JSON or Markdown."""

from __future__ import annotations

from typing import Any

from argo_doctor.deprecations import Use, Version, parse_version
from argo_doctor.model import Problem
from argo_doctor.report.columns import columns, wrap
from argo_doctor.report.json import dumps
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import location_key

ORDER = {"removed": 0, "deprecated": 1}
HEADER = ("KIND", "NAMESPACE", "NAME", "API VERSION", "REPLACEMENT", "REMOVED IN")
"""The table's columns, as kubent and Pluto name them."""
WIDE_HEADER = ("WHERE", "HOW")
"""The columns `-o wide` adds."""


def _rank(use: Use) -> int:
    """Removed, deprecated, then the uses that only may happen (a template branch not decided), then listed."""
    return ORDER.get(use.status, 4) + (2 if use.maybe else 0)


def _status(use: Use) -> str:
    return f"{use.status} (may be used)" if use.maybe else use.status


def deprecations_json(uses: list[Use], problems: list[Problem], target: Version | None) -> dict[str, Any]:
    """The JSON document (`{targetVersion, uses, errors}`), every text redacted, removed uses first, then those
    that only may be used."""
    uses, problems = clean((uses, problems))
    return {
        "targetVersion": f"{target[0]}.{target[1]}" if target else None,
        "uses": [
            {
                "status": u.status, "certain": not u.maybe, "apiVersion": u.api.api_version,
                "kind": u.api.kind, "location": u.location, "how": u.how, "object": u.subject,
                "deprecatedIn": u.api.deprecated_in,
                "removedIn": u.api.removed_in, "replacement": u.api.replacement, "component": u.api.component,
                "notes": u.api.notes, "source": u.api.source,
            }
            for u in sorted(uses, key=lambda u: (_rank(u), location_key(u.location)))
        ],
        "errors": [{"location": p.location, "message": p.message} for p in problems],
    }


def render(uses: list[Use], problems: list[Problem], target: Version | None, output: str, width: int | None = None,
           wide: bool = False) -> str:
    """The uses; every text redacted, and without control characters but in JSON. JSON and Markdown list them
    removed ones first, those that only may happen after the certain ones; the table groups them by the release
    that removes them (see `_table`), fitted to `width` unless `wide`."""
    if output == "json":
        return dumps(deprecations_json(uses, problems, target))
    uses, problems = clean((uses, problems), human=True)
    uses = sorted(uses, key=lambda u: (_rank(u), location_key(u.location)))
    version = f"{target[0]}.{target[1]}" if target else None
    if output == "markdown":
        lines = [f"# Deprecated APIs (target {version or 'any'})", "", "| status | API | where | how | fix |",
                 "|---|---|---|---|---|"]
        lines += [f"| {_status(u)} | `{u.api.api_version} {u.api.kind}` | `{u.location}` | {u.how} | "
                  f"{u.api.describe()} |" for u in uses]
        return "\n".join(lines)
    head = f"target Kubernetes version: {version or 'none (every known deprecation is listed)'}"
    if not uses:
        return head + "\nno deprecated API found"
    return head + "\n" + _table(uses, target, width, wide)


def _object(use: Use) -> tuple[str, str]:
    """(namespace, name) of the object in use ("-" for no namespace), or ("-", where it was seen) when no object is
    named (a template, the API server's metrics); "(may be used)" after it when a template only may emit it."""
    parts = use.subject.split("/")  # Kind/namespace/name, Kind/name, or a kind alone
    namespace, name = ("-", use.location) if len(parts) < 2 else ("-" if len(parts) == 2 else parts[1], parts[-1])
    return namespace, f"{name} (may be used)" if use.maybe else name


def _removal(use: Use) -> tuple[int, tuple[int, ...], str]:
    """Sort key of a use's removal: Kubernetes releases first, soonest first, then the add-ons' releases, then the
    APIs with no removal planned."""
    api = use.api
    found = parse_version(api.removed_in)
    if found is None:
        return 2, (), api.component or ""
    return (1 if api.component else 0), found, api.component or ""


def _replacement(use: Use) -> str:
    """The API to use instead, its kind only when it differs, and since when it is served: `batch/v1 (1.21+)`."""
    api = use.api
    if not api.replacement:
        return "-"
    version, _, kind = api.replacement.partition(" ")
    since = f" ({api.replacement_available_in}+)" if api.replacement_available_in else ""
    return f"{version}{f' {kind}' if kind and kind != api.kind else ''}{since}"


def _removed_in(use: Use) -> str:
    owner = f"{use.api.component} " if use.api.component else ""
    return f"{owner}{use.api.removed_in}" if use.api.removed_in else "-"


def _heading(use: Use, target: Version | None) -> str:
    """The line over one removal version's uses, saying what that version means for the target."""
    if not use.api.removed_in:
        return ">>> no removal planned <<<"
    at = f"{target[0]}.{target[1]}" if target else ""
    state = {"removed": f" (the target {at} no longer serves it)",
             "deprecated": f" (the target {at} still serves it, deprecated)"}
    return f">>> removed in {_removed_in(use)}{state.get(use.status, '')} <<<"


def _table(uses: list[Use], target: Version | None, width: int | None, wide: bool) -> str:
    """One group per removal version, soonest first, headed by the version; within one, the certain uses first.
    `wide` adds where each use was seen and how."""
    uses = sorted(uses, key=lambda u: (_removal(u), u.maybe, location_key(u.location)))
    header = HEADER + WIDE_HEADER if wide else HEADER
    rows: list[tuple[str, ...]] = []
    headings: dict[int, str] = {}
    for use in uses:
        heading = _heading(use, target)
        if heading not in headings.values():
            headings[len(rows)] = heading
            rows.append(header)
        api = use.api
        row = (api.kind, *_object(use), api.api_version, _replacement(use), _removed_in(use))
        rows.append((*row, use.location, use.how) if wide else row)
    lines = columns(rows, None if wide else width, flexible=(4,)).split("\n")
    out: list[str] = []
    for index, line in enumerate(lines):
        if index in headings:
            out += [""] if out else []
            out += wrap(headings[index], None if wide else width)
        out.append(line)
    return "\n".join(out)
