"""argocd-rbac-policy: argocd-rbac-cm as kubectl returns it, and the API server's denied requests as its gRPC logging
writes them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

RULE = "argocd-rbac-policy"
BUNDLE = EXAMPLES / "incidents" / "rbac-policy"


def _scan(tmp_path: Path, data: dict[str, str] | None = None, logs: bool = True) -> list[dict[str, Any]]:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    if not logs:
        shutil.rmtree(bundle / "logs")
    if data is not None:
        path = bundle / "objects" / "argocd" / "argocd.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["items"][0]["data"] = data
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return list(scan_json(bundle, "--rule", RULE)["findings"])


def _objects(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A copy of the example without logs: the bundle, its object file and that file's list."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    shutil.rmtree(bundle / "logs")
    path = bundle / "objects" / "argocd" / "argocd.yaml"
    return bundle, path, yaml.safe_load(path.read_text())


def test_the_example_s_lines_that_never_take_effect_are_named_with_why(tmp_path: Path) -> None:
    lines, denials = _scan(tmp_path)
    assert lines["severity"] == "medium" and lines["title"] == "4 RBAC policy lines of argocd-rbac-cm never take effect"
    summary = lines["summary"]
    assert "policy.csv line 12 `g, northwind:oncall, role:on-call`: role:on-call is granted to northwind:oncall but " \
           "no line gives it a permission" in summary
    assert "resource 'application' is not one Argo CD checks" in summary
    assert "project 'shopping' is not among the input's AppProjects (default, payments, shop)" in summary
    assert "always overridden by the deny at policy.team-shop.csv line 2" in summary
    assert "payments/*, allow" not in summary  # the payments allow is wider than its deny: it does take effect
    assert denials["severity"] == "low"
    assert "ravi@northwind.example sync applications payments/prod-db: if ravi@northwind.example is in " \
           "northwind:payments, the deny at policy.csv line 7" in denials["summary"]
    assert "`p, mei@northwind.example, applications, action/apps/Deployment/restart, shop/storefront, allow` (or a " \
           "role with it) would" in denials["summary"]


def test_a_line_argo_cd_cannot_load_is_high_with_the_mended_line(tmp_path: Path) -> None:
    findings = _scan(tmp_path, {"policy.csv": "p, role:dev, applications, sync, dev/*, allow\n"
                                              "p, role:dev, applications, get, dev/* allow\ng, org:dev, role:dev"},
                     logs=False)
    [broken] = [f for f in findings if f["severity"] == "high"]
    assert broken["title"] == "argocd-rbac-cm holds 1 line Argo CD cannot load"
    assert "policy.csv line 2 `p, role:dev, applications, get, dev/* allow`: invalid RBAC policy: a p line has 6 " \
           "fields, this one 5" in broken["summary"]
    assert "`p, role:dev, applications, get, dev/*, allow`" in broken["remediation"]["text"]


def test_installed_policies_as_shipped_are_silent(tmp_path: Path) -> None:
    for data in ({}, {"policy.csv": "", "policy.default": "", "scopes": "[groups]"},  # argo-helm's defaults
                 {"policy.default": "role:readonly", "policy.csv": (
                     "p, role:org-admin, applications, *, */*, allow\np, role:org-admin, clusters, get, *, allow\n"
                     "p, role:org-admin, repositories, *, *, allow\np, role:org-admin, logs, get, *, allow\n"
                     "p, role:org-admin, exec, create, */*, allow\ng, your-github-org:your-team, role:org-admin")}):
        assert _scan(tmp_path / str(len(data)), data, logs=False) == []


def test_a_project_is_not_judged_without_app_projects_in_the_input(tmp_path: Path) -> None:
    bundle, path, doc = _objects(tmp_path)
    doc["items"] = [i for i in doc["items"] if i["kind"] != "AppProject"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    [lines] = scan_json(bundle, "--rule", RULE)["findings"]
    assert "shopping" not in lines["summary"] and lines["title"].startswith("3 RBAC policy lines")


def test_cluster_and_repository_urls_are_no_projects_and_a_role_line_of_a_project_is_its_own(tmp_path: Path) -> None:
    data = {"policy.csv": "p, role:ops, clusters, get, https://prod.k8s.example:6443, allow\n"
                          "p, role:ops, repositories, get, https://github.com/acme/*, allow\ng, org:ops, role:ops"}
    assert _scan(tmp_path / "a", data, logs=False) == []
    bundle, path, doc = _objects(tmp_path / "b")
    doc["items"][0]["data"] = data
    project = next(i for i in doc["items"] if i["kind"] == "AppProject" and i["metadata"]["name"] == "payments")
    project["spec"]["roles"][0]["policies"] = ["p, proj:payments:ci, applications, sync, payments/* allow"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    [finding] = scan_json(bundle, "--rule", RULE)["findings"]
    assert finding["title"] == "AppProject payments has a role policy Argo CD cannot load"
    assert finding["severity"] == "medium" and "argocd-rbac-cm" not in finding["title"]


def test_a_config_map_key_left_empty_is_an_empty_policy(tmp_path: Path) -> None:
    bundle, path, _ = _objects(tmp_path)
    text = path.read_text()
    start = text.index("    policy.default: role:readonly")
    end = text.index("- apiVersion: v1", start)
    path.write_text(text[:start] + "    policy.default:\n    policy.csv:\n" + text[end:])
    assert scan_json(bundle, "--rule", RULE)["findings"] == []


def test_an_application_the_input_does_not_hold_in_a_project_it_holds_is_named_at_low(tmp_path: Path) -> None:
    bundle, path, doc = _objects(tmp_path)
    doc["items"][0]["data"] = {"policy.csv": "p, role:pay, applications, sync, payments/ledger-api, allow\n"
                                             "p, role:pay, applications, sync, payments/payments-api, allow\n"
                                             "g, northwind:payments, role:pay\n"}
    doc["items"].append({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {
        "name": "payments-api", "namespace": "argocd"}, "spec": {"project": "payments", "destination": {
            "server": "https://kubernetes.default.svc", "namespace": "payments"}}})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    [finding] = scan_json(bundle, "--rule", RULE)["findings"]
    assert finding["severity"] == "low"
    assert "Application 'ledger-api' is not among the input's Applications of project 'payments'" in finding["summary"]
    assert "payments-api'" not in finding["summary"]
