"""A validator for the JSON contract of docs/json-output.md (schema version 1)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from argo_doctor.report.groups import GROUP_MIN

TOP = {"schemaVersion", "tool", "source", "findings", "timeline", "errors"}
SOURCE = {"inputs", "format", "collectedAt", "cluster", "objects", "logFiles", "auditFiles"}
FINDING = {"id", "rule", "severity", "title", "summary", "objects", "evidence", "remediation", "chain"}
SCAN_FINDING = FINDING | {"group"}
"""A finding of `scan`: also its group (added within schema version 1)."""
GROUP = re.compile(r"^(?P<rule>.+):group:[0-9a-f]{12}$")
REF = {"apiVersion", "kind", "namespace", "name"}
EVIDENCE = {"kind", "time", "location", "excerpt"}
TIMELINE = {"time", "component", "kind", "location", "excerpt", "findings"}
SEVERITIES = ("critical", "high", "medium", "low", "info")
KINDS = {"object", "log", "audit", "event", "metric", "probe"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")


def _time(value: Any, nullable: bool) -> None:
    assert (value is None and nullable) or (isinstance(value, str) and TIME.match(value)), value


def validate(doc: dict[str, Any]) -> None:
    """Raise AssertionError where `doc` breaks the documented contract."""
    assert set(doc) == TOP
    assert doc["schemaVersion"] == 1
    assert doc["tool"]["name"] == "argo-doctor" and isinstance(doc["tool"]["version"], str)
    assert set(doc["source"]) == SOURCE
    _time(doc["source"]["collectedAt"], nullable=True)
    ids = set()
    order = []
    groups: dict[str, list[str]] = {}
    for finding in doc["findings"]:
        assert set(finding) == SCAN_FINDING, set(finding) ^ SCAN_FINDING
        group = finding["group"]
        assert group is None or ((match := GROUP.match(group)) and match["rule"] == finding["rule"]), group
        if group is not None:
            groups.setdefault(group, []).append(finding["id"])
        assert re.match(rf"^{re.escape(finding['rule'])}:[0-9a-f]{{12}}$", finding["id"])
        assert finding["id"] not in ids
        ids.add(finding["id"])
        assert finding["severity"] in SEVERITIES
        order.append(SEVERITIES.index(finding["severity"]))
        assert finding["title"] and "\n" not in finding["title"] and finding["summary"]
        for ref in finding["objects"]:
            assert set(ref) == REF and all(isinstance(v, str) for v in ref.values())
        for item in finding["evidence"]:
            assert set(item) == EVIDENCE and item["kind"] in KINDS and item["location"]
            _time(item["time"], nullable=True)
        remediation = finding["remediation"]
        assert set(remediation) <= {"text", "patch", "command", "docs"} and {"text", "docs"} <= set(remediation)
        assert isinstance(remediation["docs"], list)
        previous = None
        for step in finding["chain"]:
            assert set(step) == {"evidence", "gapSeconds"} and 0 <= step["evidence"] < len(finding["evidence"])
            when = finding["evidence"][step["evidence"]]["time"]
            if when is not None and previous is not None:
                printed = (datetime.fromisoformat(when) - previous).total_seconds()
                assert abs(step["gapSeconds"] - printed) <= 0.002  # printed times are truncated to the ms
            previous = datetime.fromisoformat(when) if when is not None else previous
    assert order == sorted(order), "findings are not most severe first"
    assert all(len(members) >= GROUP_MIN for members in groups.values()), groups
    times = []
    for entry in doc["timeline"]:
        assert set(entry) == TIMELINE and entry["kind"] in KINDS
        _time(entry["time"], nullable=False)
        assert entry["findings"] and set(entry["findings"]) <= ids
        times.append(datetime.fromisoformat(entry["time"]))
    assert times == sorted(times)
    for error in doc["errors"]:
        assert set(error) == {"location", "message", "kind"} and error["location"] and error["message"]
        assert error["kind"] in ("error", "note")
