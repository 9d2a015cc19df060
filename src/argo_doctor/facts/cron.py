"""When a cron schedule was last due, as Argo Workflows' CronWorkflows read schedules (robfig/cron v3's standard
parser: minute hour day-of-month month day-of-week, names, `*/n`, ranges, lists, `?`, the @yearly … @hourly
descriptors, a `CRON_TZ=` prefix; when both day fields are restricted a day matches either, else both).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MONTHS = {name: i + 1 for i, name in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
DAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
               "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
HORIZON = 400
"""Days searched backwards for the last due time (a yearly schedule is found)."""


class CronError(ValueError):
    """A schedule this parser cannot read (robfig would refuse it, or it is `@every`, which has no fixed times)."""


def _field(text: str, low: int, high: int, names: dict[str, int] | None = None) -> tuple[set[int], bool]:
    """The values a field allows, and whether it is unrestricted (`*` or `?`)."""
    values: set[int] = set()
    star = text in ("*", "?")
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if body in ("*", "?"):
            start, end = low, high
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
    if not text.isdigit():
        raise CronError(f"{text!r} is not a number")
    return int(text)


def last_due(schedule: str, before: datetime, timezone: str = "") -> datetime | None:
    """The latest time at or before `before` the schedule fires (aware, UTC); None when it never fired in HORIZON
    days. Raises CronError for a schedule it cannot read."""
    text = schedule.strip()
    if text.startswith(("CRON_TZ=", "TZ=")):
        zone_text, _, text = text.partition(" ")
        timezone = zone_text.split("=", 1)[1]
    text = DESCRIPTORS.get(text.lower(), text)
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
    dows, dow_star = _field(fields[4], 0, 7, DAYS)
    if 7 in dows:
        dows.add(0)
    local = before.astimezone(zone).replace(second=0, microsecond=0)
    for back in range(HORIZON):
        day = (local - timedelta(days=back)).date()
        dom_ok, dow_ok = day.day in doms, (day.isoweekday() % 7) in dows
        if day.month not in months or not (dom_ok and dow_ok if dom_star or dow_star else dom_ok or dow_ok):
            continue
        for hour in sorted(hours, reverse=True):
            for minute in sorted(minutes, reverse=True):
                candidate = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
                if candidate <= local:
                    return candidate.astimezone(UTC)
    return None
