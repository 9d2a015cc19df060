"""How rollout-degraded and rollout-analysis-inconclusive tell a failed analysis (the release was judged bad) from an
errored one (nothing was measured) and an inconclusive one, on AnalysisRuns as Argo Rollouts writes them
(analysis/analysis.go, utils/evaluate/evaluate.go), and knowledge/analysis_errors.yaml on the providers' messages."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor import knowledge
from tests.conftest import BUNDLES, scan_json

MIXED = BUNDLES / "rollouts-mixed"
PAYMENTS = Path("objects") / "payments.yaml"
RULES = ("rollout-degraded", "rollout-analysis-inconclusive")
EMPTY = ('could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned '
         'from the metric provider')


def _checkout(tmp_path: Path, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The two rules' findings about Rollout payments/checkout, `change(rollout, analysis_run)` applied first."""
    bundle = tmp_path / "bundle"
    shutil.copytree(MIXED, bundle)
    items = list(yaml.safe_load_all((bundle / PAYMENTS).read_text()))
    objects = [i for doc in items for i in (doc.get("items", [doc]) if doc else [])]
    rollout = next(o for o in objects if o["kind"] == "Rollout" and o["metadata"]["name"] == "checkout")
    run = next(o for o in objects if o["kind"] == "AnalysisRun" and o["metadata"]["name"] == "checkout-6f8b9d5c7b-5-1")
    change(rollout, run)
    (bundle / PAYMENTS).write_text(yaml.safe_dump_all(items))
    args = [a for rule in RULES for a in ("--rule", rule)]
    return [f for f in scan_json(bundle, *args)["findings"] if any(o["name"] == "checkout" for o in f["objects"])]


def _errored(message: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(rollout: dict[str, Any], run: dict[str, Any]) -> None:
        text = f'Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): ' \
               f'"Error Message: {message}"'
        status = run["status"]
        status.update(phase="Error", message=text)
        result = status["metricResults"][0]
        result.update(phase="Error", failed=0, error=5, consecutiveError=5, count=1, message=message)
        result["measurements"] = [result["measurements"][0]] + [
            {"phase": "Error", "message": message, "startedAt": f"2026-11-24T09:55:{10 * i:02d}Z",
             "finishedAt": f"2026-11-24T09:55:{10 * i:02d}Z"} for i in range(5)]
        abort = f"Rollout aborted update to revision 5: Step-based analysis phase error/failed: {text}"
        for cond in rollout["status"]["conditions"]:
            if cond.get("reason") == "RolloutAborted":
                cond["message"] = abort
        rollout["status"]["message"] = f"RolloutAborted: {abort}"
    return change


def test_a_failed_analysis_judged_the_release() -> None:
    [finding] = [f for f in scan_json(MIXED, "--rule", "rollout-degraded")["findings"]
                 if f["objects"][0]["name"] == "checkout"]
    assert finding["title"] == "Rollout payments/checkout is Degraded: its analysis failed (metric success-rate)"
    assert ("AnalysisRun checkout-6f8b9d5c7b-5-1 (AnalysisTemplate success-rate) judged the new version bad: metric "
            "success-rate (prometheus) Failed: last values [0.8134], [0.7921]; against successCondition result[0] >= "
            "0.95; failed 2.") in finding["summary"]
    assert finding["remediation"]["text"].startswith("The analysis judged the new version bad")


def test_an_empty_result_indexed_by_the_condition_is_an_error_that_says_nothing_of_the_release(tmp_path: Path) -> None:
    [finding] = _checkout(tmp_path, _errored(EMPTY))
    assert finding["title"] == ("Rollout payments/checkout is Degraded: its analysis could not measure "
                                "(empty result indexed), the release may be fine")
    assert "could not measure the new version, so it says nothing about it (the release may be fine)" in \
        finding["summary"]
    assert "The query returned no data" in finding["summary"]
    text = finding["remediation"]["text"]
    assert "nothing says the version is bad" in text and "len(result) > 0 && result[0] >= 0.95" in text
    assert "judged the new version bad" not in text


@pytest.mark.parametrize(("message", "cause"), [
    ("reflect: slice index out of range", "empty-result-indexed"),  # v1.0.0, argoproj/argo-rollouts#1466
    ('received authentication error response code: 403 {"errors": ["Forbidden"]}', "provider-credentials"),
    ('Post "http://prometheus.monitoring:9090/api/v1/query": dial tcp 10.0.4.17:9090: connect: connection refused',
     "provider-unreachable"),
    ("bad_data: 1:35: parse error: unexpected character inside braces: '!'", "provider-query-refused"),
])
def test_each_provider_error_gets_its_cause(tmp_path: Path, message: str, cause: str) -> None:
    [finding] = _checkout(tmp_path, _errored(message))
    assert finding["title"].endswith(f"could not measure ({cause.replace('-', ' ')}), the release may be fine")


def test_a_rollout_paused_by_an_inconclusive_run_is_waiting_for_a_person(tmp_path: Path) -> None:
    def inconclusive(rollout: dict[str, Any], run: dict[str, Any]) -> None:
        status = rollout["status"]
        status["conditions"] = [c for c in status["conditions"] if c.get("reason") != "RolloutAborted"]
        status.update(phase="Paused", message="InconclusiveAnalysisRun", abort=False,
                      pauseConditions=[{"reason": "InconclusiveAnalysisRun", "startTime": "2026-11-24T09:56:01Z"}])
        status.pop("abortedAt", None)
        for cond in status["conditions"]:
            if cond["type"] == "Progressing":
                cond.update(status="True", reason="RolloutPaused", message="Rollout is paused")
        message = ("Pod checkout-smoke-9x2kd, container smoke has terminal error (ImagePullBackOff): Back-off pulling "
                   "image \"registry.example.com/qa/smoke:4.1\"\n")
        result = run["status"]["metricResults"][0]
        result.update(phase="Inconclusive", failed=0, inconclusive=1, message=message)
        result["measurements"] = [{"phase": "Inconclusive", "message": message, "startedAt": "2026-11-24T09:55:00Z",
                                   "finishedAt": "2026-11-24T09:56:01Z"}]
        run["status"].update(phase="Inconclusive", message='Metric "success-rate" assessed Inconclusive due to '
                                                           'inconclusive (1) > inconclusiveLimit (0)')

    [finding] = _checkout(tmp_path, inconclusive)
    assert finding["rule"] == "rollout-analysis-inconclusive" and finding["severity"] == "medium"
    assert finding["title"] == "Rollout payments/checkout is paused: its analysis was inconclusive (success-rate)"
    assert "it never times out, and Argo CD shows it Suspended" in finding["summary"]
    assert "was inconclusive: neither its success nor its failure condition held" in finding["summary"]
    assert finding["remediation"]["text"].startswith("An analysis Job's pod cannot start")
    assert "kubectl argo rollouts promote checkout -n payments" in finding["remediation"]["text"]


@pytest.mark.parametrize("row", knowledge.analysis_errors(), ids=lambda r: r.id)
def test_every_row_matches_its_example_first_and_names_its_source(row: knowledge.KnownError) -> None:
    first = next(r for r in knowledge.analysis_errors() if r.pattern.search(row.example))
    assert first.id == row.id
    assert row.source.startswith("https://")


def test_dry_run_metrics_by_regular_expression_and_malformed_phases_are_left_out() -> None:
    from argo_doctor.facts.analysis import outcome

    run = {"metadata": {"name": "r-1"}, "spec": {"dryRun": [{"metricName": ".*-shadow"}], "metrics": [
        {"name": "rate", "provider": {"prometheus": {"query": "q"}}}]},
           "status": {"phase": "Failed", "metricResults": [
               {"name": "rate", "phase": "Failed", "failed": 1},
               {"name": "latency-shadow", "phase": "Failed", "failed": 1},
               {"name": "odd", "phase": ["Failed"]},
               {"name": "flagged", "phase": "Failed", "dryRun": True}]}}
    result = outcome(run)
    assert result is not None and [m.name for m in result.metrics] == ["rate"]
