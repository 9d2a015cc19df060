"""`argo-doctor upgrade-check`: the documented changes between the installed Argo CD and --to that hit the
installation, from knowledge/upgrades.yaml (Argo CD's upgrading guides)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from argo_doctor import knowledge
from argo_doctor.cli import main
from argo_doctor.facts.upgrades import dex_user
from tests.conftest import EXAMPLES
from tests.report.contract import validate

BASIC = EXAMPLES / "argocd-basic"
KINDS = {"always", "cm-key-absent", "cm-key-present", "rbac-line", "metric-referenced", "object-present",
         "workflow-field", "dex-subject", "manual"}
READINESS = EXAMPLES / "incidents" / "upgrade-readiness"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["upgrade-check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_basic_installation_on_its_way_to_3_0_is_hit_by_what_applies_to_it() -> None:
    code, out, _ = _run(str(BASIC), "--to", "v3.0.0", "-o", "json")
    doc = json.loads(out)
    validate(doc)
    titles = {f["title"]: f for f in doc["findings"]}
    assert code == 1
    tracking = titles["Argo CD v3.0.0: Default resource tracking switches from label to annotation"]
    assert tracking["severity"] == "high"
    assert any("no key application.resourceTrackingMethod" in e["excerpt"] for e in tracking["evidence"])
    update = next(f for t, f in titles.items() if "`applications, update` no longer covers" in t)
    assert any("policy.csv line" in e["excerpt"] for e in update["evidence"])
    # policy.default is role:readonly, which grants logs: the logs RBAC change does not bite; no LDAP connector
    assert not any("logs, get" in t for t in titles) and not any("LDAP" in t for t in titles)
    assert all(f["remediation"]["docs"] and f["remediation"]["docs"][0].startswith("https://github.com/argoproj/")
               for f in doc["findings"])


def test_a_patch_upgrade_with_no_documented_change_reports_nothing() -> None:
    code, out, _ = _run(str(BASIC), "--to", "v2.10.12")
    assert code == 0 and "0 finding(s)" in out


def test_a_target_before_the_installed_release_or_no_release_is_a_usage_error(tmp_path: Path) -> None:
    assert _run(str(BASIC), "--to", "v2.9.0")[0] == 2
    assert _run(str(BASIC), "--to", "latest")[0] == 2
    bundle = tmp_path / "bundle"
    shutil.copytree(BASIC / "objects", bundle / "objects")
    for path in bundle.rglob("*.yaml"):
        path.write_text(path.read_text().replace("quay.io/argoproj/argocd:v2.10.9", "quay.io/argoproj/argocd:latest"))
    code, _, err = _run(str(bundle), "--to", "v3.0.0")
    assert code == 2 and "give it with --from" in err
    assert _run(str(bundle), "--to", "v3.0.0", "--from", "v2.14.0")[0] == 1


@pytest.mark.parametrize("change", knowledge.upgrade_changes(), ids=lambda c: c.id)
def test_every_row_names_its_guide_and_a_detection_the_checker_knows(change: knowledge.UpgradeChange) -> None:
    guides = {"argo-cd": "https://github.com/argoproj/argo-cd/blob/master/docs/operator-manual/upgrading/",
              "argocd-image-updater": "https://github.com/argoproj-labs/argocd-image-updater/blob/master/docs/",
              "argo-workflows": "https://github.com/argoproj/argo-workflows/blob/",
              "argo-rollouts": "https://github.com/argoproj/argo-rollouts/blob/",
              "argo-events": "https://github.com/argoproj/argo-events/blob/"}
    assert change.source.startswith(guides[change.product])
    assert change.detect["kind"] in KINDS
    if change.detect["kind"] == "object-present":  # a kind alone would hit every installation that has one
        assert change.detect.get("where") or change.detect.get("names")


def test_rows_are_unique() -> None:
    rows = yaml.safe_load((Path(knowledge.__file__).parent / "upgrades.yaml").read_text())
    assert len({r["id"] for r in rows}) == len(rows)


def test_image_updater_v1_stops_reading_the_annotations_of_the_example_s_applications() -> None:
    image_updater = EXAMPLES / "incidents" / "image-updater"
    code, out, _ = _run(str(image_updater), "--to", "v2.14.12", "-o", "json")
    [change] = [f for f in json.loads(out)["findings"] if f["title"].startswith("Argo CD Image Updater")]
    assert change["severity"] == "medium" and "to v1.0.0 or later (no target given for it)" in change["summary"]
    code, out, _ = _run(str(image_updater), "--to", "v2.14.12", "--to-image-updater", "v1.0.0", "-o", "json")
    [change] = [f for f in json.loads(out)["findings"] if f["title"].startswith("Argo CD Image Updater")]
    assert code == 1 and change["severity"] == "high"
    assert any("argocd-image-updater.argoproj.io/image-list" in e["excerpt"] for e in change["evidence"])
    assert _run(str(image_updater), "--to", "v2.14.12", "--to-image-updater", "v0.16.1")[0] == 0


def test_workflows_renamed_metrics_are_found_in_the_alerts_that_read_them(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(BASIC / "objects", bundle / "objects")
    (bundle / "objects" / "workflows.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "workflow-controller",
                                                                     "namespace": "argo"},
         "spec": {"selector": {"matchLabels": {"app": "workflow-controller"}}, "template": {
             "metadata": {"labels": {"app": "workflow-controller"}}, "spec": {"containers": [
                 {"name": "workflow-controller", "image": "quay.io/argoproj/workflow-controller:v3.5.8"}]}}}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {
            "name": "argo-workflows", "namespace": "argo"}, "spec": {"groups": [{"name": "argo", "rules": [
                {"alert": "WorkflowsPiling", "expr": "sum(argo_workflows_count{status=\"Pending\"}) > 50"}]}]}}]}))
    code, out, _ = _run(str(bundle), "--to", "v2.10.12", "--to-workflows", "v3.6.0", "-o", "json")
    [renamed] = [f for f in json.loads(out)["findings"] if f["title"].startswith("Argo Workflows v3.6.0: Built-in")]
    assert code == 1 and any("reads argo_workflows_count" in e["excerpt"] for e in renamed["evidence"])


def _high(doc: dict[str, Any]) -> dict[str, list[str]]:
    return {f["title"]: [e["excerpt"] for e in f["evidence"]] for f in doc["findings"] if f["severity"] == "high"}


def test_the_upgrade_readiness_example_lists_what_each_target_breaks_with_its_evidence() -> None:
    code, out, _ = _run(str(READINESS), "--to", "v3.0.12", "--to-workflows", "v4.0.0", "--to-image-updater", "v1.0.0",
                        "-o", "json")
    doc = json.loads(out)
    validate(doc)
    high = _high(doc)
    assert code == 1 and len(high) == 13
    [dex] = [e for t, e in high.items() if "federated_claims.user_id" in t]
    assert "policy.csv line 1: subject Cgc1MjMwNDE3EgZn… is Dex's encoding of user 5230417 (connector github)" in dex[0]
    assert not any("Cgc1MjMwNDE3EgZnaXRodWI" in e for e in dex)  # the subject is cut, as a line of a policy is long
    [metrics] = [e for t, e in high.items() if "metrics removed" in t]
    assert any(e.startswith("PrometheusRule/monitoring/argocd-alerts") for e in metrics)
    assert any(e.startswith("ConfigMap/monitoring/grafana-dashboard-argocd") for e in metrics)
    [semaphore] = [e for t, e in high.items() if "synchronization.semaphore" in t]
    assert semaphore[0].startswith("WorkflowTemplate/batch/ledger-close .spec.templates[reconcile].synchronization")
    [mutex] = [e for t, e in high.items() if "synchronization.mutex" in t]
    assert mutex[0].startswith("CronWorkflow/batch/ledger-nightly .spec.workflowSpec.synchronization.mutex")
    [legacy] = [e for t, e in high.items() if "`repositories` in argocd-cm" in t]
    assert "\n" not in legacy[0] and legacy[0].endswith("- url: https://github.com/initech/platform-config.git - url: "
                                                         "https://github.com/")
    # upgrade-check reads PrometheusRules: no note calls them unread
    assert not any("no check reads" in p["message"] for p in doc["errors"])


def test_a_patch_target_lists_no_argo_cd_change_of_the_example_and_the_other_products_at_medium_at_most() -> None:
    code, out, _ = _run(str(READINESS), "--to", "v2.14.12", "-o", "json")
    findings = json.loads(out)["findings"]
    assert code == 0 and findings and not any(f["title"].startswith("Argo CD v") for f in findings)
    assert {f["severity"] for f in findings} <= {"medium", "info"}


@pytest.mark.parametrize(("subject", "user"), [
    ("Cgc1MjMwNDE3EgZnaXRodWI", ("5230417", "github")),
    ("CiQwOGE4Njg0Yi1kYjg4LTRiNzMtOTBhOS0zY2QxNjYxZjU0NjYSBWxvY2Fs", ("08a8684b-db88-4b73-90a9-3cd1661f5466", "local")),
    ("Cg9kZXZAZXhhbXBsZS5jb20SBmdpdGh1Yg==", ("dev@example.com", "github")),
    ("role:admin", None), ("initech:platform", None), ("Administrators", None), ("dev@example.com", None),
    # the guide's own illustration: its lengths do not match its fields, so no Dex wrote it
    ("ChdleGFtcGxlQGFyZ29wcm9qLmlvEgJkZXhfY29ubl9pZA", None),
    ("CgcxMjM0NTY3", None),  # the user id alone: no connector field
])
def test_dex_subjects_are_told_from_user_and_group_names(subject: str, user: tuple[str, str] | None) -> None:
    assert dex_user(subject) == user


def test_dex_without_encoded_subjects_in_the_policy_is_not_hit_by_the_subject_change(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(READINESS, bundle)
    objects = bundle / "objects" / "argocd" / "argocd.yaml"
    objects.write_text(objects.read_text().replace("g, Cgc1MjMwNDE3EgZnaXRodWI, role:admin", "g, ops@initech.example, "
                                                                                              "role:admin"))
    _, out, _ = _run(str(bundle), "--to", "v3.0.12", "-o", "json")
    titles = [f["title"] for f in json.loads(out)["findings"]]
    assert not any("federated_claims.user_id" in t for t in titles)
    assert any("`repositories` in argocd-cm" in t for t in titles)


def test_findings_name_their_objects_and_the_json_source_stays_the_input() -> None:
    _, out, _ = _run(str(READINESS), "--to", "v3.0.12", "--to-workflows", "v4.0.0", "-o", "json")
    doc = json.loads(out)
    assert doc["source"]["inputs"] == str(READINESS)
    objects = {f["title"]: {f"{o['kind']}/{o['namespace']}/{o['name']}" for o in f["objects"]}
               for f in doc["findings"]}
    [metrics] = [o for t, o in objects.items() if "metrics removed" in t]
    assert metrics == {"PrometheusRule/monitoring/argocd-alerts", "ConfigMap/monitoring/grafana-dashboard-argocd"}
    assert all(o for t, o in objects.items() if not t.startswith(("Argo Workflows v3.7", "Argo CD v3.0.0: Helm",
                                                                   "Argo CD v3.0.0: CRDs", "Argo CD v3.0.0: Diffs",
                                                                   "Argo CD v3.0.0: Empty", "Argo CD v3.0.0: System",
                                                                   "Argo CD v3.0.0: ApplicationSet")))
