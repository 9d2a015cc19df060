"""Audit logs: audit.k8s.io/v1 Event JSON lines, plain or gzip, with bad lines."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

from argo_doctor.model import Problem
from argo_doctor.sources.audit import AuditFile, read_audit_file

EVENT = {
    "kind": "Event",
    "apiVersion": "audit.k8s.io/v1",
    "level": "Metadata",
    "auditID": "6f2b9b1e-3f3e-4d8e-9a55-2f1d2c3b4a5e",
    "stage": "ResponseComplete",
    "requestURI": "/apis/extensions/v1beta1/ingresses?limit=500&resourceVersion=0",
    "verb": "list",
    "user": {
        "username": "system:serviceaccount:argocd:argocd-application-controller",
        "groups": ["system:authenticated"],
    },
    "sourceIPs": ["10.0.3.17"],
    "userAgent": "argocd-application-controller/v2.0.5 (linux/amd64) kubernetes/c8cd2f2",
    "objectRef": {"resource": "ingresses", "apiGroup": "extensions", "apiVersion": "v1beta1"},
    "responseStatus": {"metadata": {}, "code": 200},
    "requestReceivedTimestamp": "2021-08-02T09:14:03.118431Z",
    "stageTimestamp": "2021-08-02T09:14:03.125101Z",
    "annotations": {
        "authorization.k8s.io/decision": "allow",
        "k8s.io/deprecated": "true",
        "k8s.io/removed-release": "1.22",
    },
}


def _read(path: Path) -> tuple[list, list[Problem]]:  # type: ignore[type-arg]
    problems: list[Problem] = []
    return list(read_audit_file(AuditFile(path, path.name), problems)), problems


def test_events_with_bad_lines_between(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    good = json.dumps(EVENT)
    path.write_text("\n".join([good, "not json", "[1, 2]", "", good, '{"user": "not-an-object"}']) + "\n")
    events, problems = _read(path)
    assert [e.location for e in events] == ["audit.log:1", "audit.log:5"]
    first = events[0]
    assert (first.verb, first.resource) == ("list", "ingresses")
    assert (first.api_group, first.api_version) == ("extensions", "v1beta1")
    assert first.received == datetime(2021, 8, 2, 9, 14, 3, 118431, tzinfo=UTC) and first.code == 200
    assert first.annotations["k8s.io/removed-release"] == "1.22"
    assert problems[0].location == "audit.log:2" and problems[-1].message == "3 lines in all were not audit events"


def test_gzip_and_a_cut_gzip(tmp_path: Path) -> None:
    whole = tmp_path / "audit.log.gz"
    with gzip.open(whole, "wt") as out:
        for _ in range(2000):
            out.write(json.dumps(EVENT) + "\n")
    events, problems = _read(whole)
    assert len(events) == 2000 and problems == []
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    events, problems = _read(cut)
    assert 0 < len(events) < 2000
    assert len(problems) == 1 and "cut short" in problems[0].message
