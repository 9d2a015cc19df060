"""What a command asks of its report, beside the result itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    """How a command asked for its report: the `--fail-on` threshold (JUnit failures), the rules whose groups of
    findings are listed in full (`--expand RULE`)."""

    fail_on: str = "high"
    expand: frozenset[str] = frozenset()
