"""applicationset-error and applicationset-deleted-apps: ApplicationSets, their conditions and Events as the
applicationset controller writes them (applicationset_controller.go), its log lines and GitHub metrics."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

BUNDLE = EXAMPLES / "incidents" / "applicationset-deletion"


def _scan(tmp_path: Path, change: Any = None, *rules: str) -> list[dict[str, Any]]:
    """The rules' findings on a copy of the example, `change(objects, applications)` applied first."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    paths = [bundle / "objects" / "argocd" / name for name in ("argocd.yaml", "applications.yaml")]
    docs = [yaml.safe_load(p.read_text()) for p in paths]
    if change is not None:
        change(docs[0]["items"], docs[1]["items"])
    for path, doc in zip(paths, docs, strict=True):
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    args = [a for rule in rules for a in ("--rule", rule)]
    return list(scan_json(bundle, *args)["findings"])


def _appset(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(i for i in items if i["kind"] == "ApplicationSet" and i["metadata"]["name"] == name)


def test_a_generator_that_returned_nothing_deleted_the_previews_and_their_resources(tmp_path: Path) -> None:
    [deleted] = _scan(tmp_path, None, "applicationset-deleted-apps")
    assert deleted["severity"] == "critical"
    assert deleted["title"] == "ApplicationSet previews deleted 4 Applications and their resources"
    assert "(preview-pr-412, preview-pr-415, preview-pr-418, preview-pr-421)" in deleted["summary"]
    assert "its policy (sync, the controller's default)" in deleted["summary"]
    assert "applicationsSync: create-update" in deleted["remediation"]["text"]


def test_a_protected_application_set_is_never_said_to_delete(tmp_path: Path) -> None:
    def protected(items: list[dict[str, Any]], _: list[dict[str, Any]]) -> None:
        _appset(items, "previews")["spec"]["syncPolicy"] = {"applicationsSync": "create-update"}
    assert _scan(tmp_path / "a", protected, "applicationset-deleted-apps") == []

    def by_controller(items: list[dict[str, Any]], _: list[dict[str, Any]]) -> None:
        deployment = next(i for i in items if i["kind"] == "Deployment")
        deployment["spec"]["template"]["spec"]["containers"][0]["env"] = [
            {"name": "ARGOCD_APPLICATIONSET_CONTROLLER_POLICY", "value": "create-only"}]
    assert _scan(tmp_path / "b", by_controller, "applicationset-deleted-apps") == []


def test_preserved_resources_make_it_high_not_critical(tmp_path: Path) -> None:
    def preserved(items: list[dict[str, Any]], apps: list[dict[str, Any]]) -> None:
        _appset(items, "previews")["spec"]["syncPolicy"] = {"preserveResourcesOnDeletion": True}
        del apps[0]["metadata"]["finalizers"]  # generated without the resources finalizer
    [deleted] = _scan(tmp_path, preserved, "applicationset-deleted-apps")
    assert deleted["severity"] == "high" and deleted["title"] == "ApplicationSet previews deleted 4 Applications"
    assert "preserveResourcesOnDeletion kept their resources" in deleted["summary"]


def test_a_rate_limited_generator_halts_without_a_claim_of_deletion(tmp_path: Path) -> None:
    [error] = _scan(tmp_path, None, "applicationset-error")
    assert error["title"] == "ApplicationSet team-apps: a generator failed"
    assert "403 API rate limit exceeded" in error["summary"] and "argocd_github_api_rate_limit_remaining is 0" in \
           error["summary"]
    assert "creates, updates and deletes nothing for it and tries again every three minutes" in error["summary"]
    assert "deletes what it made" not in error["summary"]
    assert "fewer generators sharing the GitHub App's installation" in error["remediation"]["text"]


def test_an_unprotected_failing_application_set_says_what_an_empty_result_would_delete(tmp_path: Path) -> None:
    def unprotected(items: list[dict[str, Any]], _: list[dict[str, Any]]) -> None:
        del _appset(items, "team-apps")["spec"]["syncPolicy"]
    [error] = _scan(tmp_path, unprotected, "applicationset-error")
    assert "its policy (sync, the controller's default) lets the controller delete its 4 Applications, and they " \
           "would keep their resources (no resources finalizer)" in error["summary"]


def test_a_duplicate_name(tmp_path: Path) -> None:
    def duplicate(items: list[dict[str, Any]], _: list[dict[str, Any]]) -> None:
        condition = _appset(items, "platform")["status"]["conditions"][0]
        condition.update({"status": "True", "reason": "ApplicationValidationError",
                          "message": "ApplicationSet platform contains applications with duplicate name: ingress"})
    [error] = [f for f in _scan(tmp_path, duplicate, "applicationset-error") if "platform" in f["title"]]
    assert error["title"] == "ApplicationSet platform: a generated Application is invalid"
    assert "two sets give ingress" in error["remediation"]["text"]


def test_a_progressive_sync_held_by_a_degraded_application(tmp_path: Path) -> None:
    [held] = _scan(tmp_path, None, "applicationset-rollout-stuck")
    assert held["severity"] == "high"
    assert held["title"] == "ApplicationSet regions: progressive sync held in step 2 by checkout-eu"
    assert "checkout-eu is Degraded (Deployment \"checkout\" exceeded its progress deadline), Progressing for " \
           "2h04m" in held["summary"]
    assert "1 Application of later steps waits behind it (checkout-ap)" in held["summary"]


def test_a_step_rolling_out_normally_or_recently_is_not_held(tmp_path: Path) -> None:
    def healthy(_: list[dict[str, Any]], apps: list[dict[str, Any]]) -> None:
        next(a for a in apps if a["metadata"]["name"] == "checkout-eu")["status"]["health"] = {"status": "Healthy"}
    assert _scan(tmp_path / "a", healthy, "applicationset-rollout-stuck") == []

    def recent(items: list[dict[str, Any]], _: list[dict[str, Any]]) -> None:
        _appset(items, "regions")["status"]["applicationStatus"][1]["lastTransitionTime"] = "2026-11-30T16:00:00Z"
    assert _scan(tmp_path / "b", recent, "applicationset-rollout-stuck") == []


def test_the_controller_s_failed_attempts_say_since_when_it_fails(tmp_path: Path) -> None:
    [error] = _scan(tmp_path, None, "applicationset-error")
    assert "10 failed attempts from 2026-11-30 15:41:07 to 16:08:16 UTC" in error["summary"]
    logged = [e for e in error["evidence"] if e["kind"] == "log"]
    assert [e["location"].rsplit(":", 1)[1] for e in logged] == ["1", "15"]
    assert all("unable to generate applications: error listing repos" in e["excerpt"] for e in logged)


def test_failed_attempts_of_an_application_set_the_input_lacks_are_low_and_say_so(tmp_path: Path) -> None:
    def without_team_apps(objects: list[dict[str, Any]], _apps: list[dict[str, Any]]) -> None:
        objects.remove(_appset(objects, "team-apps"))

    [error] = _scan(tmp_path, without_team_apps, "applicationset-error")
    assert error["severity"] == "low" and error["objects"][0]["name"] == "team-apps"
    assert "cannot be told" in error["summary"] and "403 API rate limit exceeded" in error["summary"]


def test_failed_attempts_before_a_success_are_history(tmp_path: Path) -> None:
    def recovered(objects: list[dict[str, Any]], _apps: list[dict[str, Any]]) -> None:
        appset = _appset(objects, "team-apps")
        appset["status"]["conditions"] = [{
            "type": "ErrorOccurred", "status": "False", "reason": "ApplicationSetUpToDate",
            "message": "Successfully generated parameters for all Applications",
            "lastTransitionTime": "2026-11-30T16:21:00Z"}]

    assert _scan(tmp_path, recovered, "applicationset-error") == []
