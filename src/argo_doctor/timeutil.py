"""Timestamps: everything argo-doctor keeps is timezone-aware UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
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


def shift(when: datetime, delta: timedelta) -> datetime:
    """`when + delta`, held at the first or last instant a datetime holds instead of overflowing (a timestamp of
    year 9999 in the input, a window around it)."""
    try:
        return when + delta
    except OverflowError:
        return (datetime.max if delta > timedelta(0) else datetime.min).replace(tzinfo=when.tzinfo)


def format_time(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with a `Z`, milliseconds only when present."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    text = value.isoformat(timespec="milliseconds" if value.microsecond else "seconds")
    return text.replace("+00:00", "Z")


_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


MAX_GO_DURATION = 9_223_372_036.854775807
"""The longest Go duration in seconds (int64 nanoseconds, about 292 years): time.ParseDuration refuses longer."""


def parse_go_duration(text: str | None) -> float | None:
    """Seconds in a Go duration (`24h`, `3m0s`, `1h30m`, `180s`); a bare number counts as seconds. None for what
    Go refuses, a duration past MAX_GO_DURATION included."""
    if not text:
        return None
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        seconds = float(text)
    else:
        parts = _GO_DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return seconds if seconds <= MAX_GO_DURATION else None
