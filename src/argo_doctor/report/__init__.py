"""Reporters render a ScanResult: table (rich), json (the documented contract), markdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

from argo_doctor.engine import ScanResult
from argo_doctor.report import json as json_report
from argo_doctor.report import markdown, table

Reporter = Callable[[ScanResult, IO[str]], None]

REPORTERS: dict[str, Reporter] = {
    "table": table.render,
    "json": json_report.render,
    "markdown": markdown.render,
}
