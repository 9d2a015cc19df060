"""Reporters render a ScanResult: table (rich), json (the documented contract), markdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

from argo_doctor.engine import ScanResult
from argo_doctor.report import html as html_report
from argo_doctor.report import json as json_report
from argo_doctor.report import junit, markdown, sarif, table
from argo_doctor.report.options import ReportOptions

Reporter = Callable[[ScanResult, IO[str], ReportOptions], None]

__all__ = ["REPORTERS", "ReportOptions", "Reporter"]

REPORTERS: dict[str, Reporter] = {
    "table": table.render,
    "json": json_report.render,
    "markdown": markdown.render,
    "html": html_report.render,
    "sarif": sarif.render,
    "junit": junit.render,
}
