"""Shared checks of the tables fitted to a terminal's width."""

from __future__ import annotations

from argo_doctor.report.columns import cells

WIDTHS = (80, 200)


def too_wide(text: str, width: int) -> list[str]:
    """The lines wider than `width` but those that are one word alone (a word is never cut: a terminal wraps it
    for the eye, and it still copies whole)."""
    return [line for line in text.split("\n") if cells(line) > width and len(line.split()) != 1]


def whole_or_cut(cell: str, text: str) -> bool:
    """Whether `cell` shows `text` whole, or cut in its middle with its start and end kept."""
    if cell == text:
        return True
    head, found, tail = cell.partition("…")
    return bool(found) and text.startswith(head) and text.endswith(tail)
