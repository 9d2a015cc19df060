"""The deprecated and removed API table (`knowledge/deprecated_apis.yaml`) and the status of a row at a
target Kubernetes version.

A use is `removed` at a target when the API was removed in or before it, `deprecated` when it was
deprecated in or before it, and not reported when the target predates the deprecation; without a
target every row is `listed`. Rows of add-ons (`component`) are listed whatever the target.

`served` answers `.Capabilities.APIVersions.Has` from the same table: a row's API is served from
`introduced_in` (or at least from its deprecation) until its removal, a replacement from
`replacement_available_in`, a replacement's new group/version from `replacement_group_version_since`; a
group/version whose every listed kind is removed is gone; anything else is unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from argo_doctor.knowledge import load_rows
from argo_doctor.sources.objects import split_api_version

Version = tuple[int, int]
_VERSION = re.compile(r"v?(\d+)\.(\d+)")


def parse_version(text: str | None) -> Version | None:
    """`v1.29.4`, `1.29`, `1.29.0-eks-…` → (1, 29)."""
    found = _VERSION.match(str(text or "").strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


@dataclass(frozen=True)
class DeprecatedApi:
    """One row of the deprecated API table."""

    group: str
    version: str
    kind: str
    resource: str
    deprecated_in: str | None
    removed_in: str | None
    replacement: str | None
    replacement_available_in: str | None
    notes: str
    source: str
    component: str | None
    replacement_group_version_since: str | None = None
    introduced_in: str | None = None

    @property
    def api_version(self) -> str:
        """`group/version`, or `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def status_at(self, target: Version | None) -> str | None:
        """`removed`, `deprecated` or `listed` (no target), None when not yet deprecated at target."""
        if target is None or self.component:  # add-on releases are not Kubernetes releases
            return "listed"
        removed, deprecated = parse_version(self.removed_in), parse_version(self.deprecated_in)
        if removed is not None and target >= removed:
            return "removed"
        if deprecated is not None and target >= deprecated:
            return "deprecated"
        return None

    def describe(self) -> str:
        """`deprecated in 1.14, removed in 1.22; use networking.k8s.io/v1 Ingress (1.19+)`."""
        parts = []
        owner = f"{self.component} " if self.component else ""
        if self.deprecated_in:
            parts.append(f"deprecated in {owner}{self.deprecated_in}")
        if self.removed_in:
            parts.append(f"removed in {owner}{self.removed_in}")
        text = ", ".join(parts) or "deprecated"
        if self.replacement:
            since = f" ({self.replacement_available_in}+)" if self.replacement_available_in else ""
            text += f"; use {self.replacement}{since}"
        return text


@cache
def deprecated_apis() -> dict[tuple[str, str, str], DeprecatedApi]:
    """The table by (group, version, kind)."""
    table = {}
    for row in load_rows("deprecated_apis.yaml"):
        api = DeprecatedApi(
            group=str(row.get("group") or ""), version=str(row["version"]), kind=str(row["kind"]),
            resource=str(row.get("resource") or ""), deprecated_in=_opt(row.get("deprecated_in")),
            removed_in=_opt(row.get("removed_in")), replacement=_opt(row.get("replacement")),
            replacement_available_in=_opt(row.get("replacement_available_in")), notes=str(row.get("notes") or ""),
            source=str(row["source"]), component=_opt(row.get("component")),
            replacement_group_version_since=_opt(row.get("replacement_group_version_since")),
            introduced_in=_opt(row.get("introduced_in")),
        )
        table[(api.group, api.version, api.kind)] = api
    return table


def _opt(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def lookup(api_version: str, kind: str) -> DeprecatedApi | None:
    """The row for an apiVersion and kind, if deprecated."""
    group, version = split_api_version(api_version)
    return deprecated_apis().get((group, version, kind))


@dataclass(frozen=True)
class _Serving:
    """What the table tells of one group/version/kind: first release known to serve it (from a replacement),
    a release it was served in (its deprecation), its removal."""

    introduced: Version | None
    seen: Version | None
    removed: Version | None

    def at(self, target: Version) -> bool | None:
        if self.removed is not None and target >= self.removed:
            return False
        if self.introduced is not None:
            return target >= self.introduced
        return True if self.seen is not None and target >= self.seen else None


@cache
def _serving() -> tuple[dict[tuple[str, str], dict[str, _Serving]], dict[tuple[str, str], Version]]:
    """Kubernetes APIs by group/version and kind, and the release each new replacement group/version came in."""
    facts: dict[tuple[str, str, str], dict[str, Version | None]] = {}
    since: dict[tuple[str, str], Version] = {}

    def merge(key: tuple[str, str, str], name: str, value: Version | None) -> None:
        if value is None:
            return
        entry = facts.setdefault(key, {"introduced": None, "seen": None, "removed": None})
        old = entry[name]
        entry[name] = value if old is None or value < old else old

    for api in deprecated_apis().values():
        if api.component:
            continue
        merge((api.group, api.version, api.kind), "introduced", parse_version(api.introduced_in))
        merge((api.group, api.version, api.kind), "seen", parse_version(api.deprecated_in))
        merge((api.group, api.version, api.kind), "removed", parse_version(api.removed_in))
        facts.setdefault((api.group, api.version, api.kind), {"introduced": None, "seen": None, "removed": None})
        if api.replacement:
            group_version, _, kind = api.replacement.partition(" ")
            group, version = split_api_version(group_version)
            merge((group, version, kind), "introduced", parse_version(api.replacement_available_in))
            first = parse_version(api.replacement_group_version_since)
            if first is not None:
                since[(group, version)] = min(first, since.get((group, version), first))
    table: dict[tuple[str, str], dict[str, _Serving]] = {}
    for (group, version, kind), entry in facts.items():
        table.setdefault((group, version), {})[kind] = _Serving(entry["introduced"], entry["seen"], entry["removed"])
    return table, since


def served(api: str, target: Version) -> bool | None:
    """Whether a Kubernetes release serves `group/version` or `group/version/Kind` (core: `v1`, `v1/Kind`), as
    `.Capabilities.APIVersions.Has` asks; None when the table cannot tell (custom resources, unlisted kinds)."""
    parts = api.strip().split("/")
    kind: str | None = None
    if len(parts) == 1 or (len(parts) == 2 and parts[1][:1].isupper()):
        group, version = "", parts[0]
        kind = parts[1] if len(parts) == 2 else None
    elif len(parts) in (2, 3):
        group, version = parts[0], parts[1]
        kind = parts[2] if len(parts) == 3 else None
    else:
        return None
    if (group, version) == ("", "v1") and kind is None:
        return True
    table, since = _serving()
    kinds = table.get((group, version), {})
    first = since.get((group, version))
    if first is not None and target < first:
        return False
    if kind is not None and kind in kinds:
        return kinds[kind].at(target)
    answers = [serving.at(target) for serving in kinds.values()]
    if kind is None and True in answers:
        return True
    gone = bool(kinds) and all(s.removed is not None and target >= s.removed for s in kinds.values())
    return False if gone else None


@cache
def newest_release() -> Version:
    """The newest Kubernetes release the table names: where chart templates are judged without a target."""
    releases = [parse_version(value) for api in deprecated_apis().values() if not api.component
                for value in (api.deprecated_in, api.removed_in, api.replacement_available_in)]
    return max(r for r in releases if r is not None)
