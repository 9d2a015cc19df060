"""`argo-doctor audit` output: the table and the JSON of audit entries, redacted."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from argo_doctor.remediate.store import AuditEntry
from argo_doctor.report.audit import render

SECRET = "Hunter2Secret99"
TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


def entries() -> list[AuditEntry]:
    restarted = AuditEntry(
        time=datetime(2026, 11, 23, 8, 12, 40, 250000, tzinfo=UTC), source="serve", instance="argo-doctor-7c9-x2k",
        rollout="apps/web", action="restarted",
        reason="Degraded (ProgressDeadlineExceeded) although all 3 pods\nare ready",
        notification={"app": "shop", "namespace": "apps", "note": f"password={SECRET}"},
        state={"state": "stuck", "desired": 3}, verdict="stuck", policy="allowed",
        patch={"metadata": {"resourceVersion": "1234"}, "spec": {"restartAt": "2026-11-23T08:12:40Z"}},
        api_answer="200 OK resourceVersion 1240", latency_ms=18.4567, id=2,
    )
    failed = AuditEntry(
        time=datetime(2026, 11, 23, 8, 0, 0, tzinfo=UTC), source="fix", instance="laptop", rollout="apps/api",
        action="failed", reason=f"patch refused: Authorization: Bearer {TOKEN} \x1b[31mred", notification=None,
        state=None, verdict="stuck", policy="allowed", patch=None, api_answer=f"401 Unauthorized token {TOKEN}",
        latency_ms=3.0, id=1,
    )
    return [restarted, failed]


def test_table() -> None:
    text = render(entries(), "table")
    lines = text.splitlines()
    assert lines[0].split() == ["TIME", "INSTANCE", "ROLLOUT", "ACTION", "REASON", "LATENCY"]
    assert lines[1].startswith("2026-11-23T08:12:40.250Z   argo-doctor-7c9-x2k   apps/web   restarted   ")
    assert "all 3 pods are ready   18.5 ms" in lines[1]  # one line per entry
    assert lines[2].startswith("2026-11-23T08:00:00Z")
    assert lines[2].endswith("3.0 ms")
    assert TOKEN not in text and "Bearer <redacted" in text
    assert "\x1b" not in text  # no terminal control sequence from a stored string
    assert len(lines) == 3


def test_empty_table() -> None:
    assert render([], "table") == "no audit entry"


def test_json() -> None:
    text = render(entries(), "json")
    assert SECRET not in text and TOKEN not in text
    doc = json.loads(text)
    assert [e["id"] for e in doc] == [2, 1]
    first = doc[0]
    assert list(first) == ["id", "time", "source", "instance", "rollout", "action", "reason", "verdict", "policy",
                           "notification", "state", "patch", "apiAnswer", "latencyMs"]
    assert first["time"] == "2026-11-23T08:12:40.250Z"
    assert first["notification"] == {"app": "shop", "namespace": "apps", "note": "password=<redacted>"}
    assert first["patch"]["spec"]["restartAt"] == "2026-11-23T08:12:40Z"
    assert first["latencyMs"] == 18.457
    assert doc[1]["reason"].startswith("patch refused: Authorization: Bearer <redacted")
    assert doc[1]["apiAnswer"] == "401 Unauthorized token <redacted github token>"
    assert doc[1]["notification"] is None and doc[1]["patch"] is None
    assert render([], "json").strip() == "[]"
