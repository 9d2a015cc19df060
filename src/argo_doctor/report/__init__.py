"""Reporters render a ScanResult: table (rich), json (the documented contract), markdown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import IO

from argo_doctor.engine import ScanResult
from argo_doctor.report import brief, junit, markdown, sarif, table
from argo_doctor.report import html as html_report
from argo_doctor.report import json as json_report
from argo_doctor.report.options import ReportOptions

Reporter = Callable[[ScanResult, IO[str], ReportOptions], None]

__all__ = ["REPORTERS", "ReportOptions", "Reporter"]



def _terminal(result: ScanResult, out: IO[str], options: ReportOptions) -> None:
    """One line per finding, or with `--details` a panel each."""
    (table.render if options.details else brief.render)(result, out, options)


def _wide(result: ScanResult, out: IO[str], options: ReportOptions) -> None:
    brief.render(result, out, replace(options, wide=True))


REPORTERS: dict[str, Reporter] = {
    "table": _terminal,
    "wide": _wide,
    "json": json_report.render,
    "markdown": markdown.render,
    "html": html_report.render,
    "sarif": sarif.render,
    "junit": junit.render,
}
