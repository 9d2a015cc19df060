"""The `health` table: the health Argo CD would show for each object, fitted to the terminal's width unless `wide`."""

from __future__ import annotations

from collections.abc import Sequence

from argo_doctor.health import Health, HealthStatus, is_worse
from argo_doctor.report.columns import text_columns
from argo_doctor.snapshot import Obj
from argo_doctor.sources.redact import SecretScrubber, clean

HEADER = ("KIND", "NAMESPACE", "NAME", "HEALTH", "MESSAGE")
Row = tuple[Obj, Health | None]
"""An object and its health (None: Argo CD assesses no health for its kind)."""
_RANK = {status: sum(is_worse(other, status) for other in HealthStatus) for status in HealthStatus}
"""How many statuses each one is worse than, in gitops-engine's order (`health.is_worse`)."""


def worst_first(rows: Sequence[Row]) -> list[Row]:
    """`rows` from the least healthy to the healthiest as Argo CD ranks them (Unknown, Degraded, Missing,
    Progressing, Suspended, Healthy), then the objects without a health; in their order within each status."""
    return sorted(rows, key=lambda row: len(_RANK) if row[1] is None else -_RANK[row[1].status])


def health_table(rows: Sequence[Row], locations: bool = False, scrubber: SecretScrubber | None = None,
                 width: int | None = None, wide: bool = False) -> str:
    """One line per object, in the order given: kind, namespace, name, health and message, every text redacted
    and printable. With `locations` (an object read more than once), the LOCATION of each first. Fitted to `width`
    unless `wide`: the message cut, or on a line of its own under its object when little room is left for it; the
    other columns only when they alone are too wide (a location keeps its file name and line)."""
    lines: list[tuple[str, ...]] = [HEADER]
    lines += clean([
        (o.kind, o.namespace, o.name, h.status.value if h else "-", " ".join(h.message.split()) if h else "")
        for o, h in rows
    ], scrubber, human=True)
    width = None if wide else width
    if not locations:
        return "\n".join(text_columns(lines, width, 4))
    where = clean([o.location for o, _ in rows], scrubber, human=True)
    lines = [(at, *line) for at, line in zip(["LOCATION", *where], lines, strict=True)]
    return "\n".join(text_columns(lines, width, 5, locations=(0,)))
