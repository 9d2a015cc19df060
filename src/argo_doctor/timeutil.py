"""Timestamps: everything argo-doctor keeps is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """Parse an RFC 3339 / ISO 8601 timestamp into aware UTC; naive times are taken as UTC."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00
        return None


def format_time(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with a `Z`, milliseconds only when present."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    text = value.isoformat(timespec="milliseconds" if value.microsecond else "seconds")
    return text.replace("+00:00", "Z")
