"""deprecated-api-caller on audit records as kube-apiserver writes them."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argo_doctor.analyzers import Context, deprecated_api_caller
from argo_doctor.analyzers.deprecated_api_caller import in_ranges, parse_user_agent, semver_key
from argo_doctor.cli import main
from argo_doctor.engine import health_assessor, run_scan, select_analyzers
from argo_doctor.model import Finding
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.audit import AuditEvent
from argo_doctor.sources.objects import RawObject
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
    assert "2.2.8" in finding.summary and "The call fails nothing by itself" in finding.summary
    fix = finding.remediation.text
    assert fix.startswith("Upgrade argocd-application-controller to a release with the fix: Argo CD v2.2.8 or a "
                          "later 2.2 release, or v2.3.0 and later")
    # the poll is Argo CD's own code, and the row's text is the user's: no developer notes, no contradiction
    for wrong in ("Use apiextensions.k8s.io/v1 CustomResourceDefinition instead", "Nothing breaks",
                  "incident report", "release notes", "Harmless"):
        assert wrong not in fix and wrong not in finding.summary
    assert '"no matches for kind"' in fix
    assert {e.kind for e in finding.evidence} >= {"audit", "object"}


def test_a_caller_past_the_fix_is_told_the_replacement_api(tmp_path: Path) -> None:
    """Only a call no known row explains gets "Use <replacement> instead": it may be a manifest the user owns."""
    agent = "argocd-application-controller/v2.4.7+1c4a7d8 (linux/amd64) kubernetes/$Format"
    (finding,) = findings(make_bundle(tmp_path / "b", [crd_get(agent, "2021-08-02T09:14:04Z")]))
    assert "Use apiextensions.k8s.io/v1 CustomResourceDefinition instead." in finding.remediation.text


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
    # legacy-web's Ingress template picks networking.k8s.io/v1 when the cluster serves it, as 1.22 does
    assert not any("legacy-web" in u["location"] for u in uses)
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


# --- the command's target version, and the calling pod -----------------------------------------------------


def test_the_deprecations_command_targets_the_removal_release(tmp_path: Path) -> None:
    agent = "argocd-application-controller/v2.4.7+1c4a7d8 (linux/amd64) kubernetes/$Format"
    (finding,) = findings(make_bundle(tmp_path / "b", [crd_get(agent, "2021-08-02T09:14:04Z")]))
    assert finding.remediation.command == "argo-doctor deprecations <repo> --target-version v1.22"


def _crd_version_read(when: str) -> dict[str, Any]:
    """A read of a CRD version its CRD marks deprecated: annotated, with no removal release."""
    record = audit("list", "/apis/certmanager.example.io/v1alpha2/issuers",
                   {"resource": "issuers", "apiGroup": "certmanager.example.io", "apiVersion": "v1alpha2"},
                   "issuer-sync/2.1.0", when, user="system:serviceaccount:certs:issuer-sync")
    del record["annotations"]["k8s.io/removed-release"]
    return record


def test_without_a_removal_release_the_command_targets_the_cluster(tmp_path: Path) -> None:
    root = make_bundle(tmp_path / "b", [_crd_version_read("2021-08-02T09:40:00Z")])
    (finding,) = findings(root)
    assert finding.remediation.command == "argo-doctor deprecations <repo> --target-version v1.21"
    (root / "bundle.yaml").write_text("collectedAt: 2021-08-02T12:00:00Z\n")
    (finding,) = findings(root)
    assert finding.remediation.command == "argo-doctor deprecations <repo>"


@dataclass(frozen=True, slots=True)
class _WithExtra(AuditEvent):
    """An audit record with `user.extra`, as `sources.audit` reads it."""

    extra: dict[str, list[str]] = field(default_factory=dict)


CONTROLLER_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "argocd-application-controller-0", "namespace": "argocd", "uid": "38b2ec66-54e6-4866-9459-4877f09bd42f",
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "argocd-application-controller",
                         "uid": "b36528d8-9d93-44ee-b9d6-b93640810171", "controller": True}]},
    "spec": {"nodeName": "gke-stage-1-pool-2b7e91c4-q5lm", "containers": [{"name": "c", "image": "x"}]}}
CONTROLLER_SET = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {
    "name": "argocd-application-controller", "namespace": "argocd", "uid": "b36528d8-9d93-44ee-b9d6-b93640810171"}}


def _event(pod: str, uid: str, node: str = "", when: str = "2022-08-16T09:20:11Z") -> AuditEvent:
    extra = {"authentication.kubernetes.io/pod-name": [pod], "authentication.kubernetes.io/pod-uid": [uid]}
    if node:
        extra["authentication.kubernetes.io/node-name"] = [node]
    return _WithExtra(
        "id", "ResponseComplete", "/apis/extensions/v1beta1/ingresses?watch=true", "watch", CONTROLLER,
        "argocd-application-controller/v2.4.7+1c4a7d8 (linux/amd64) kubernetes/$Format", "ingresses", "", "",
        "extensions", "v1beta1", "", 200, datetime(2022, 8, 16, 9, 20, 11, tzinfo=UTC),
        {"k8s.io/deprecated": "true", "k8s.io/removed-release": "1.22"}, "audit/a.log:1", extra,
    )


def _run(events: list[AuditEvent], objects: list[dict[str, Any]]) -> Finding:
    snap = Snapshot("test", {"collectedAt": "2022-08-16T10:00:00Z"})
    for index, raw in enumerate(objects):
        snap.add(RawObject(raw, f"objects/argocd.yaml:{index * 20 + 1}"))
    rule = deprecated_api_caller.DeprecatedApiCaller()
    for event in events:
        rule.on_audit(event)
    (finding,) = rule.analyze(Context(snap, health_assessor(snap)))
    return finding


def test_the_calling_pod_is_named_and_found_in_the_snapshot() -> None:
    uid = "38b2ec66-54e6-4866-9459-4877f09bd42f"
    finding = _run([_event("argocd-application-controller-0", uid)] * 3, [CONTROLLER_SET, CONTROLLER_POD])
    assert ("The requests came from pod argocd/argocd-application-controller-0 of StatefulSet "
            "argocd-application-controller: 3 requests (the pod bound to the caller's token") in finding.summary
    (pod,) = [e for e in finding.evidence if e.location.endswith(".metadata.uid")]
    assert pod.excerpt == f"Pod argocd-application-controller-0 uid {uid} on node gke-stage-1-pool-2b7e91c4-q5lm"
    assert [r.kind for r in finding.objects] == ["ServiceAccount"]  # the finding's id does not follow pods


def test_an_earlier_or_absent_pod_is_said_so() -> None:
    events = [_event("argocd-application-controller-0", "0c1d2e3f-aaaa-4bbb-8ccc-123456789abc",
                     node="gke-stage-1-pool-2b7e91c4-zz9k"),
              _event("argocd-application-controller-1", "9a8b7c6d-dddd-4eee-8fff-cba987654321"),
              _event("argocd-application-controller-1", "9a8b7c6d-dddd-4eee-8fff-cba987654321")]
    finding = _run(events, [CONTROLLER_SET, CONTROLLER_POD])
    assert ("pods argocd/argocd-application-controller-1 (not in the input): 2 requests; "
            "argocd/argocd-application-controller-0 (uid 0c1d2e3f-aaaa-4bbb-8ccc-123456789abc: an earlier pod of that "
            "name; the input holds the one with uid 38b2ec66-54e6-4866-9459-4877f09bd42f) on node "
            "gke-stage-1-pool-2b7e91c4-zz9k: 1 request") in finding.summary
    assert not any(e.location.endswith(".metadata.uid") for e in finding.evidence)


def test_pods_past_the_limit_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deprecated_api_caller, "MAX_PODS", 1)
    finding = _run([_event("web-1", "u1"), _event("web-2", "u2"), _event("web-3", "u3")], [])
    assert "pod argocd/web-1 (not in the input): 1 request; and 2 requests from more pods" in finding.summary


def test_without_user_extra_no_pod_is_named(tmp_path: Path) -> None:
    agent = "argocd-application-controller/v2.4.7+1c4a7d8 (linux/amd64) kubernetes/$Format"
    (finding,) = findings(make_bundle(tmp_path / "b", [crd_get(agent, "2021-08-02T09:14:04Z")]))
    assert "came from pod" not in finding.summary


def test_the_fixed_bundle_names_the_calling_pods() -> None:
    """`user.extra` read from the audit log: the controller's pod is in the input, the PSP auditor's is not."""
    doc = scan_json(BUNDLES / "deprecated-callers-fixed")
    by_title = {f["title"].split(" calls ")[0]: f for f in doc["findings"] if f["rule"] == "deprecated-api-caller"}
    controller = by_title["argocd-application-controller v2.4.7+1c4a7d8"]
    assert ("The requests came from pod argocd/argocd-application-controller-0 of StatefulSet "
            "argocd-application-controller: 2 requests") in controller["summary"]
    auditor = by_title["psp-audit v0.4.2"]
    assert "pod kube-system/psp-audit-27677370-xk2lp (not in the input): 2 requests" in auditor["summary"]
    assert auditor["remediation"]["command"] == "argo-doctor deprecations <repo> --target-version v1.25"
