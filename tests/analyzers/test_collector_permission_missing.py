"""collector-permission-missing: refused reads recorded by `collect` in bundle.yaml are one finding naming them and
the rules that lost input; other failed requests are input errors; a complete collection says nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding, Problem
from argo_doctor.sources import bundle

BUNDLE = Path(__file__).resolve().parents[1] / "bundles" / "engine-basic"
SECRETS = {"what": "list secrets in argocd", "request": "GET /api/v1/namespaces/argocd/secrets?limit=500",
           "reason": 'Forbidden: secrets is forbidden: User "system:serviceaccount:argocd:argo-doctor" cannot list '
                     'resource "secrets" in API group "" in the namespace "argocd"', "need": "kind:Secret",
           "status": "403"}
LEASES = {"what": "list leases", "request": "GET /apis/coordination.k8s.io/v1/leases?limit=500",
          "reason": "403 Forbidden", "need": "kind:coordination.k8s.io/Lease", "status": "403"}
TIMEOUT = {"what": "list services", "request": "GET /api/v1/services?limit=500", "reason": "no answer within 30 s "
           "(timeout)", "need": "kind:Service", "status": ""}


def _scan(tmp_path: Path, skipped: list[dict[str, str]]) -> tuple[list[Finding], list[Problem]]:
    root = tmp_path / "bundle"
    shutil.copytree(BUNDLE, root)
    meta = yaml.safe_load((root / "bundle.yaml").read_text()) or {}
    meta["skipped"] = skipped
    (root / "bundle.yaml").write_text(yaml.safe_dump(meta))
    result = run_scan(bundle.load([root], tmp_path), select_analyzers())
    return [f for f in result.findings if f.rule == "collector-permission-missing"], result.problems


def test_refused_reads_are_one_finding_with_the_rules_that_lost_input(tmp_path: Path) -> None:
    (finding,), _ = _scan(tmp_path, [SECRETS, LEASES])
    assert finding.title == "The collector was refused 2 reads: list leases, list secrets in argocd"
    lost = finding.summary.split("may have missed problems: ")[1]
    for rule in ("webhook-ca-mismatch", "node-clock-skew", "github-app-token-clock"):
        assert rule in lost
    assert "sync-failed" not in lost
    assert [e.location for e in finding.evidence] == [f"collection: {SECRETS['request']}",
                                                      f"collection: {LEASES['request']}"]


def test_a_failed_request_that_was_not_refused_is_an_input_error(tmp_path: Path) -> None:
    findings, problems = _scan(tmp_path, [TIMEOUT])
    assert findings == []
    assert [(p.location, p.message) for p in problems if p.location.startswith("collection: ")] == [
        (f"collection: {TIMEOUT['request']}", TIMEOUT["reason"])]


def test_a_complete_collection_says_nothing(tmp_path: Path) -> None:
    findings, problems = _scan(tmp_path, [])
    assert findings == [] and not any(p.location.startswith("collection: ") for p in problems)


def test_refused_kinds_that_only_applications_deploy_are_low(tmp_path: Path) -> None:
    jobs = {"what": "list cronjobs in batch-jobs",
            "request": "GET /apis/batch/v1/namespaces/batch-jobs/cronjobs?limit=500",
            "reason": "403 Forbidden", "need": "kind:batch/CronJob", "status": "403"}
    (finding,), _ = _scan(tmp_path, [jobs])
    assert finding.severity.label == "low"
    assert "app-unhealthy" in finding.summary and "node-clock-skew" not in finding.summary
    (both,), _ = _scan(tmp_path / "again", [jobs, SECRETS])
    assert both.severity.label == "medium"
    hooks = {**jobs, "what": "list jobs in batch-jobs", "need": "kind:batch/Job",
             "request": "GET /apis/batch/v1/namespaces/batch-jobs/jobs?limit=500"}
    (refused,), _ = _scan(tmp_path / "hooks", [hooks])  # operation-stuck reads hook Jobs, which no Application lists
    assert refused.severity.label == "medium" and "operation-stuck" in refused.summary
