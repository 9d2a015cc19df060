"""When a cron schedule was last due, as Argo Workflows' CronWorkflows read schedules (robfig/cron v3's standard
parser: minute hour day-of-month month day-of-week (0-6), names, `*/n`, ranges, lists, `?`, the @yearly … @hourly
descriptors, a `CRON_TZ=` prefix; when both day fields are restricted a day matches either, else both; a field whose
part starts with `*` or `?` with no step above 1 counts as unrestricted; local times a DST change skips never fire).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MONTHS = {name: i + 1 for i, name in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
DAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
               "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
PART = re.compile(r"(\*|\?|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:/([0-9]+))?", re.ASCII)
"""One comma-separated part of a field, as robfig's getRange accepts it."""
HORIZON = 400
"""Days searched backwards for the last due time (a yearly schedule is found)."""


class CronError(ValueError):
    """A schedule this parser cannot read (robfig would refuse it, or it is `@every`, which has no fixed times)."""


def _field(text: str, low: int, high: int, names: dict[str, int] | None = None) -> tuple[set[int], bool]:
    """The values a field allows, and whether it is unrestricted (robfig's star bit)."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        parsed = PART.fullmatch(part)
        if parsed is None:
            raise CronError(f"{part!r} is not a cron field")
        body, step_text = parsed.group(1), parsed.group(2)
        step = int(step_text) if step_text else 1
        if body in ("*", "?"):
            start, end = low, high
            star = star or step <= 1
        else:
            first, _, last = body.partition("-")
            start = _value(first, names)
            end = _value(last, names) if last else (high if step_text else start)
        if step < 1 or start < low or end > high or start > end:
            raise CronError(f"{part!r} is out of range {low}-{high}")
        values.update(range(start, end + 1, step))
    return values, star


def _value(text: str, names: dict[str, int] | None) -> int:
    if names and text.lower() in names:
        return names[text.lower()]
    if not (text.isascii() and text.isdigit()):
        raise CronError(f"{text!r} is not a number")
    return int(text)


def last_due(schedule: str, before: datetime, timezone: str = "") -> datetime | None:
    """The latest time at or before `before` the schedule fires (aware, UTC); None when it never fired in HORIZON
    days. Raises CronError for a schedule it cannot read."""
    text = schedule.strip()
    if text.startswith(("CRON_TZ=", "TZ=")):
        zone_text, _, text = text.partition(" ")
        timezone = zone_text.split("=", 1)[1]
    text = DESCRIPTORS.get(text, text)
    if text.startswith("@"):
        raise CronError(f"{text!r} has no fixed times")
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"{schedule!r} has {len(fields)} fields, not 5")
    try:
        zone = ZoneInfo(timezone) if timezone else UTC
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronError(f"unknown timezone {timezone!r}") from exc
    minutes, _ = _field(fields[0], 0, 59)
    hours, _ = _field(fields[1], 0, 23)
    doms, dom_star = _field(fields[2], 1, 31)
    months, _ = _field(fields[3], 1, 12, MONTHS)
    dows, dow_star = _field(fields[4], 0, 6, DAYS)
    local = before.astimezone(zone).replace(second=0, microsecond=0)
    for back in range(HORIZON):
        day = (local - timedelta(days=back)).date()
        dom_ok, dow_ok = day.day in doms, (day.isoweekday() % 7) in dows
        if day.month not in months or not (dom_ok and dow_ok if dom_star or dow_star else dom_ok or dow_ok):
            continue
        for hour in sorted(hours, reverse=True):
            for minute in sorted(minutes, reverse=True):
                naive = datetime(day.year, day.month, day.day, hour, minute)
                candidate = naive.replace(tzinfo=zone)
                if candidate.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive:
                    continue  # a local time the change to summer time skips
                if candidate <= local:
                    return candidate.astimezone(UTC)
    return None
