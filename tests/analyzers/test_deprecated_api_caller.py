"""deprecated-api-caller on audit records as kube-apiserver writes them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argo_doctor.analyzers import deprecated_api_caller
from argo_doctor.analyzers.deprecated_api_caller import in_ranges, parse_user_agent, semver_key
from argo_doctor.cli import main
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES, EXAMPLES, scan_json

CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"


def audit(verb: str, uri: str, ref: dict[str, str], agent: str, when: str, annotated: bool = True,
          user: str = CONTROLLER) -> dict[str, Any]:
    annotations = {"authorization.k8s.io/decision": "allow"}
    if annotated:
        annotations |= {"k8s.io/deprecated": "true", "k8s.io/removed-release": "1.22"}
    return {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": f"id-{when}-{verb}",
            "stage": "ResponseComplete", "requestURI": uri, "verb": verb, "user": {"username": user},
            "userAgent": agent, "objectRef": ref, "responseStatus": {"code": 200},
            "requestReceivedTimestamp": when, "stageTimestamp": when, "annotations": annotations}


def crd_get(agent: str, when: str, annotated: bool = True) -> dict[str, Any]:
    name = "sealedsecrets.bitnami.com"
    return audit("get", f"/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions/{name}",
                 {"resource": "customresourcedefinitions", "name": name, "apiGroup": "apiextensions.k8s.io",
                  "apiVersion": "v1beta1"}, agent, when, annotated)


def make_bundle(root: Path, records: list[dict[str, Any]]) -> Path:
    (root / "audit").mkdir(parents=True)
    (root / "audit" / "audit.log").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (root / "objects").mkdir()
    (root / "objects" / "app.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: sealed-secrets, namespace: argocd}\n"
        "spec: {destination: {namespace: kube-system}}\nstatus:\n  resources:\n"
        "  - {group: apiextensions.k8s.io, version: v1, kind: CustomResourceDefinition, "
        "name: sealedsecrets.bitnami.com, status: Synced}\n  history:\n"
        "  - {id: 1, revision: aaa, deployStartedAt: '2021-08-02T09:14:03Z', deployedAt: '2021-08-02T09:14:09Z'}\n"
        "  - {id: 2, revision: bbb, deployStartedAt: '2021-08-02T10:02:11Z', deployedAt: '2021-08-02T10:02:16Z'}\n"
    )
    (root / "bundle.yaml").write_text("collectedAt: 2021-08-02T12:00:00Z\ncluster: {version: v1.21.14}\n")
    return root


def findings(root: Path) -> list[Finding]:
    snap = bundle.load([root], None)
    return run_scan(snap, select_analyzers(("deprecated-api-caller",))).findings


def test_user_agents_and_versions() -> None:
    agent = "argocd-application-controller/v2.0.5+4c94d88 (linux/amd64) kubernetes/$Format"
    assert parse_user_agent(agent) == ("argocd-application-controller", "v2.0.5+4c94d88")
    assert semver_key("v2.3.0-rc5") < semver_key("2.3.0")  # type: ignore[operator]
    assert semver_key("2.3.0-0") < semver_key("2.3.0-rc5")  # type: ignore[operator]
    ranges = [["1.2.0", "2.2.8"], ["2.3.0-0", "2.3.0"]]
    assert in_ranges("v2.0.5+4c94d88", ranges) and in_ranges("v2.3.0-rc5", ranges)
    assert not in_ranges("v2.2.8", ranges) and not in_ranges("v2.3.0", ranges) and not in_ranges("nope", ranges)


def test_crd_reads_during_syncs_are_attributed(tmp_path: Path) -> None:
    agent = "argocd-application-controller/v2.0.5+4c94d88 (linux/amd64) kubernetes/$Format"
    records = [crd_get(agent, t) for t in ("2021-08-02T09:14:04Z", "2021-08-02T09:14:05Z",
                                            "2021-08-02T10:02:12Z", "2021-08-02T10:02:14Z")]
    (finding,) = findings(make_bundle(tmp_path / "b", records))
    assert "argocd-ensure-crd-ready" in finding.title and finding.severity.label == "low"
    assert "4 requests for customresourcedefinitions/sealedsecrets.bitnami.com fell in the 2 syncs of Application "\
           "sealed-secrets" in finding.summary
    assert "2.2.8" in finding.summary and "Harmless" in finding.summary
    assert {e.kind for e in finding.evidence} >= {"audit", "object"}


def test_a_version_past_the_fix_is_not_explained_by_the_known_path(tmp_path: Path) -> None:
    agent = "argocd-application-controller/v2.4.7+1c4a7d8 (linux/amd64) kubernetes/$Format"
    (finding,) = findings(make_bundle(tmp_path / "b", [crd_get(agent, "2021-08-02T09:14:04Z")]))
    assert "argocd-ensure-crd-ready" not in finding.title and finding.severity.label == "medium"
    assert "does not apply to v2.4.7" in finding.summary


@pytest.mark.parametrize("annotated", [True, False])
def test_with_and_without_the_deprecation_annotation(tmp_path: Path, annotated: bool) -> None:
    record = audit("list", "/apis/policy/v1beta1/podsecuritypolicies",
                   {"resource": "podsecuritypolicies", "apiGroup": "policy", "apiVersion": "v1beta1"},
                   "psp-reporter/0.3.1", "2021-08-02T09:30:00Z", annotated=annotated,
                   user="system:serviceaccount:kube-system:psp-reporter")
    apps = {"resource": "deployments", "apiGroup": "apps", "apiVersion": "v1"}
    ordinary = audit("list", "/apis/apps/v1/deployments", apps, "kubectl/v1.21.1", "2021-08-02T09:31:00Z",
                     annotated=False)
    (finding,) = findings(make_bundle(tmp_path / "b", [record, ordinary]))
    assert "psp-reporter 0.3.1 calls policy/v1beta1 podsecuritypolicies" in finding.title
    assert ("no k8s.io/deprecated annotation" in finding.summary) is (not annotated)


def test_the_incident_example() -> None:
    doc = scan_json(EXAMPLES / "incidents" / "deprecated-callers")
    callers = [f for f in doc["findings"] if f["rule"] == "deprecated-api-caller"]
    (crd,) = [f for f in callers if f["title"].endswith(": argocd-ensure-crd-ready")]
    (watch,) = [f for f in callers
                if "extensions/v1beta1 ingresses" in f["title"] and f["title"].startswith("argocd-application")]
    assert watch["title"].endswith(": argocd-discovery-watch")
    assert "12 requests for customresourcedefinitions/sealedsecrets.bitnami.com fell in the 3 syncs of Application "\
           "sealed-secrets" in crd["summary"] and "v2.2.8" in crd["summary"]
    assert "LIST" in watch["summary"] and "WATCH" in watch["summary"] and "Harmless" in watch["summary"]
    kinds = {e["kind"] for f in doc["findings"] if f["rule"] == "deprecated-api-caller" for e in f["evidence"]}
    assert {"audit", "metric", "object"} <= kinds
    assert any("psp-reporter" in f["title"] and "no k8s.io/deprecated annotation" in f["summary"]
               for f in doc["findings"])


def test_the_fixed_version_bundle() -> None:
    doc = scan_json(BUNDLES / "deprecated-callers-fixed")
    titles = [f["title"] for f in doc["findings"] if f["rule"] == "deprecated-api-caller"]
    assert titles and not any("argocd-ensure-crd-ready" in t for t in titles)


def test_deprecations_command_on_the_example() -> None:
    result = CliRunner().invoke(main, ["deprecations", str(EXAMPLES / "incidents" / "deprecated-callers"),
                                       "--target-version", "1.22", "-o", "json"])
    assert result.exit_code == 1
    uses = json.loads(result.stdout)["uses"]
    where = {(u["kind"], u["how"].split(" (")[0]) for u in uses}
    assert ("Ingress", "manifest") in where and ("Ingress", "written by manager argocd-application-controller") in where
    assert any(u["how"] == "template, chosen by a .Capabilities conditional" for u in uses)
    assert all(u["replacement"] for u in uses if u["kind"] in ("Ingress", "CronJob", "CustomResourceDefinition"))


def test_metrics_values_that_are_not_numbers_change_nothing_else(tmp_path: Path) -> None:
    """`e` and `1e999` in the example's metrics: each reported once, with its line; the findings stay."""
    example = EXAMPLES / "incidents" / "deprecated-callers"
    copy = tmp_path / "deprecated-callers"
    shutil.copytree(example, copy)
    prom = copy / "metrics" / "apiserver.prom"
    lines = prom.read_text().splitlines()
    numbers = {n for n, line in enumerate(lines, 1) if line.startswith("apiserver_request_total{")}
    first, second = sorted(numbers)[:2]
    lines[first - 1] = lines[first - 1].rsplit(" ", 1)[0] + " e"
    lines[second - 1] = lines[second - 1].rsplit(" ", 1)[0] + " 1e999"
    prom.write_text("\n".join(lines) + "\n")
    before, after = scan_json(example), scan_json(copy)
    assert [(f["rule"], f["title"]) for f in after["findings"]] == [(f["rule"], f["title"]) for f in before["findings"]]
    errors = {e["location"]: e["message"] for e in after["errors"]}
    assert errors[f"metrics/apiserver.prom:{first}"] == "not a Prometheus sample ('e' is not a number); skipped"
    assert errors[f"metrics/apiserver.prom:{second}"] == ("value 1e999 is beyond the range of a float; read as "
                                                          "+Inf")


def test_callers_past_the_limit_are_counted_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deprecated_api_caller, "MAX_GROUPS", 2)
    monkeypatch.setattr(deprecated_api_caller, "MAX_TIMES", 3)
    controller = "argocd-application-controller/v2.0.5+4c94d88 (linux/amd64) kubernetes/$Format"
    records = [crd_get(controller, f"2021-08-02T09:14:0{n}Z") for n in range(4, 9)]
    ingresses = {"resource": "ingresses", "apiGroup": "extensions", "apiVersion": "v1beta1"}
    records += [audit("list", "/apis/extensions/v1beta1/ingresses", ingresses, f"tool-{n}/1.0", "2021-08-02T09:20:00Z")
                for n in range(3)]
    tool, crd = findings(make_bundle(tmp_path / "b", records))  # medium, then low
    assert "3 requests for customresourcedefinitions/sealedsecrets.bitnami.com fell in the 1 sync" in crd.summary
    assert "The times of 2 more named requests were not kept" in crd.summary
    assert "tool-0 1.0 calls" in tool.title
    for finding in (crd, tool):
        assert "2 more deprecated requests by callers past the first 2 argo-doctor follows" in finding.summary
