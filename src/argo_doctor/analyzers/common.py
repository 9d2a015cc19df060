"""Helpers shared by analyzers: evidence from objects, events and logs, and what a Context tells several rules."""

from __future__ import annotations

from datetime import datetime

from argo_doctor.analyzers import Context
from argo_doctor.facts.webhooks import Webhook
from argo_doctor.model import Evidence
from argo_doctor.snapshot import KEvent, Obj
from argo_doctor.sources.logs import LogRecord


def object_evidence(obj: Obj, path: str, excerpt: str, time: datetime | None = None) -> Evidence:
    """Evidence pointing at a field of an object: `file:line Kind/ns/name .field.path`."""
    return Evidence("object", f"{obj.location} {obj.ref} {path}", excerpt, time)


def event_evidence(event: KEvent) -> Evidence:
    """Evidence from a Kubernetes Event."""
    count = f" (x{event.count})" if event.count > 1 else ""
    about = f" {event.involved}" if event.involved else ""
    return Evidence(
        "event", event.obj.location, f"{event.type} {event.reason}{about}: {event.message}{count}", event.time
    )


def log_evidence(record: LogRecord) -> Evidence:
    """Evidence from one log line."""
    return Evidence("log", record.location, record.raw.strip(), record.time)


def plural(count: int, word: str) -> str:
    """`1 pod`, `3 pods`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def regenerating_chart(ctx: Context, hook: Webhook) -> str | None:
    """The chart call that regenerates this webhook's caBundle, when the managing app's chart has one."""
    config = hook.config
    app = ctx.snap.app_of(config)
    if app is None:
        return None
    for use in ctx.chart_uses(app):
        if use.resource_kind == config.kind and "caBundle" in use.field:
            return f"{use.function} at {use.call}, through {use.output} (Application {app.name})"
    return None
