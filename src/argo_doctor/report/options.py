"""What a command asks of its report, beside the result itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    """How a command asked for its report: the `--fail-on` threshold (JUnit failures), the rules whose groups of
    findings are listed in full (`--expand RULE`), the panels of every finding (`--details`) or one line each
    (`wide`: untruncated, with objects and evidence), and how many findings of each severity `--min-severity` hid
    (most severe first)."""

    fail_on: str = "high"
    expand: frozenset[str] = frozenset()
    details: bool = False
    wide: bool = False
    hidden: tuple[tuple[str, int], ...] = ()
