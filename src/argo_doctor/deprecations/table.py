"""The deprecated and removed API table (`knowledge/deprecated_apis.yaml`) and the status of a row at a
target Kubernetes version.

A use is `removed` at a target when the API was removed in or before it, `deprecated` when it was
deprecated in or before it, and not reported when the target predates the deprecation; without a
target every row is `listed`. Rows of add-ons (`component`) are listed whatever the target.
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
        )
        table[(api.group, api.version, api.kind)] = api
    return table


def _opt(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def lookup(api_version: str, kind: str) -> DeprecatedApi | None:
    """The row for an apiVersion and kind, if deprecated."""
    group, version = split_api_version(api_version)
    return deprecated_apis().get((group, version, kind))
