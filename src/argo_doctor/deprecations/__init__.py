"""Deprecated and removed APIs: the table and its statuses (`table`), and the scanners that find uses of them
in files and objects (`scan`). `argo-doctor deprecations` renders them through `report.deprecations`."""

from __future__ import annotations

from argo_doctor.deprecations.scan import (
    NOT_OBJECTS,
    TemplateApi,
    TemplateReader,
    Use,
    object_uses,
    removed,
    scan_paths,
    template_uses,
)
from argo_doctor.deprecations.table import (
    DeprecatedApi,
    Version,
    deprecated_apis,
    lookup,
    newest_release,
    parse_version,
    served,
)

__all__ = [
    "NOT_OBJECTS",
    "DeprecatedApi",
    "TemplateApi",
    "TemplateReader",
    "Use",
    "Version",
    "deprecated_apis",
    "lookup",
    "newest_release",
    "object_uses",
    "parse_version",
    "removed",
    "scan_paths",
    "served",
    "template_uses",
]
