"""Output of `argo-doctor audit`: the audit trail as aligned columns or JSON, every string redacted."""

from __future__ import annotations

from typing import Any

from argo_doctor.remediate.store import AuditEntry
from argo_doctor.report.columns import text_columns
from argo_doctor.report.json import encode
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time

HEADER = ("TIME", "INSTANCE", "ROLLOUT", "ACTION", "REASON", "LATENCY")
REASON = 4


def entry_json(entry: AuditEntry) -> dict[str, Any]:
    """One entry with every field, keys in camelCase as in the other JSON outputs (not yet redacted)."""
    return {
        "id": entry.id,
        "time": format_time(entry.time),
        "source": entry.source,
        "instance": entry.instance,
        "rollout": entry.rollout,
        "action": entry.action,
        "reason": entry.reason,
        "verdict": entry.verdict,
        "policy": entry.policy,
        "notification": entry.notification,
        "state": entry.state,
        "patch": entry.patch,
        "apiAnswer": entry.api_answer,
        "latencyMs": round(entry.latency_ms, 3),
    }


def _line(text: str) -> str:
    return " ".join(text.split())


def render(entries: list[AuditEntry], output: str, width: int | None = None, wide: bool = False) -> str:
    """The entries in the order given (the store's: newest first): a JSON array of objects for `json`, else
    one line per decision, fitted to `width` unless `wide` (the reason cut, or on a line of its own under its
    decision when little room is left for it)."""
    if output == "json":
        return encode([entry_json(e) for e in entries])
    entries = clean(entries, human=True)
    if not entries:
        return "no audit entry"
    rows = [HEADER]
    rows += [(format_time(e.time) or "", _line(e.instance), _line(e.rollout), _line(e.action), _line(e.reason),
              f"{e.latency_ms:.1f} ms") for e in entries]
    return "\n".join(text_columns(rows, None if wide else width, REASON))
