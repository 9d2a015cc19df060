"""rbac-missing: what a component's mode needs and its ServiceAccount lacks, on bundles made from the upstream
manifests; never asserted when the input cannot tell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding, Severity
from argo_doctor.snapshot import Snapshot
from tests.conftest import BUNDLES
from tests.facts.test_installation import container, load, variant

RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def findings(snap: Snapshot) -> list[Finding]:
    return run_scan(snap, select_analyzers(("rbac-missing",))).findings


def titles(snap: Snapshot) -> list[tuple[str, str]]:
    return [(f.severity.label, f.title) for f in findings(snap)]


def test_git_write_back_secret_outside_the_granted_namespace() -> None:
    (finding,) = findings(load("map-updater-v0"))
    assert finding.severity == Severity.MEDIUM
    assert finding.title == "Image Updater v0.15.2 argocd/argocd-image-updater may not get secrets git-creds in shop"
    assert "get secrets git-creds in shop" in finding.summary
    assert [str(r) for r in finding.objects] == ["Deployment/argocd/argocd-image-updater",
                                                 "ServiceAccount/argocd/argocd-image-updater"]
    assert finding.remediation.command == ("kubectl auth can-i get secrets/git-creds -n shop "
                                           "--as system:serviceaccount:argocd:argocd-image-updater")
    patch = finding.remediation.patch or ""
    assert "kind: Role\nmetadata:\n  name: image-updater-missing\n  namespace: shop" in patch
    assert 'resourceNames: ["git-creds"]' in patch and "verbs: [get]" in patch
    # what it has on Secrets, and where from, is in the evidence
    assert any("Role/argocd/argocd-image-updater .rules[0]" in e.location and "in argocd" in e.excerpt
               for e in finding.evidence)


def test_v1_watching_every_namespace_with_the_namespaced_rbac() -> None:
    found = {f.title.split(" may not ")[0]: f for f in findings(load("map-updater-v1"))}
    updater = found["Image Updater v1.3.0 argocd/argocd-image-updater-controller"]
    assert updater.severity == Severity.MEDIUM
    assert ("may not: list applications.argoproj.io cluster-wide; watch applications.argoproj.io cluster-wide; "
            "list imageupdaters.argocd-image-updater.argoproj.io cluster-wide; watch "
            "imageupdaters.argocd-image-updater.argoproj.io cluster-wide; update applications.argoproj.io in shop; "
            "get secrets git-creds in shop;") in updater.summary.replace("do not let its ServiceAccount:", "may not:")
    assert "kind: ClusterRole\n" in (updater.remediation.patch or "")
    rollouts = found["Argo Rollouts controller v1.7.1 argo-rollouts/argo-rollouts"]
    assert rollouts.title.endswith("may not create pods/eviction in shop")
    assert rollouts.severity == Severity.MEDIUM


def test_argocd_api_mode_without_token_and_rollouts_without_rbac() -> None:
    assert titles(load("map-updater-v0-api")) == [  # no RBAC object in this input: nothing on permissions
        ("medium", "Image Updater v0.14.0 argocd/argocd-image-updater uses the Argo CD API without a usable token")]
    token = findings(load("map-updater-v0-api"))[0]
    assert "Secret argocd-image-updater-secret key argocd.token (key absent): ARGOCD_TOKEN is empty" in token.summary
    assert any(e.excerpt == "no key argocd.token" for e in token.evidence)


def test_token_present_is_fine(tmp_path: Path) -> None:
    def token(item: dict[str, Any]) -> dict[str, Any]:
        if item["kind"] == "Secret" and item["metadata"]["name"] == "argocd-image-updater-secret":
            item["data"] = {"argocd.token": "ZXlKaGJHY2lPaUpJVXpJMU5pSjkuY2FuYXJ5"}
        return item

    assert [t for t in titles(variant(tmp_path, "map-updater-v0-api", token)) if "Image Updater" in t[1]] == []


def test_token_cannot_be_told_without_secrets(tmp_path: Path) -> None:
    snap = variant(tmp_path, "map-updater-v0-api", lambda i: None if i["kind"] == "Secret" else i)
    (token,) = [f for f in findings(snap) if "Image Updater" in f.title]
    assert token.severity == Severity.INFO
    assert token.title == ("Cannot tell whether Image Updater v0.14.0 argocd/argocd-image-updater has its Argo CD API "
                           "token")


def test_no_rbac_in_the_input_is_never_a_missing_permission(tmp_path: Path) -> None:
    """Most bundles hold no RBAC object: that is no reason for a finding, not even an info one."""
    snap = variant(tmp_path, "map-updater-v0", lambda i: None if i["kind"] in RBAC_KINDS else i)
    assert findings(snap) == []


def test_refused_rbac_collection_cannot_decide(tmp_path: Path) -> None:
    snap = load("map-updater-v0")
    snap.unread.append({"what": "list clusterroles", "request": "GET /apis/rbac.authorization.k8s.io/v1/clusterroles",
                        "reason": "403 Forbidden", "need": "kind:rbac.authorization.k8s.io/ClusterRole",
                        "status": "403"})
    (finding,) = findings(snap)
    assert finding.severity == Severity.INFO and "refused list clusterroles" in finding.summary


def test_the_v014_role_with_a_v015_image_cannot_list_every_namespace(tmp_path: Path) -> None:
    """v0.15 lists Applications in every namespace; the v0.14 manifests granted them in Argo CD's namespace only."""

    def v014_rbac(item: dict[str, Any]) -> dict[str, Any] | None:
        name = item["metadata"]["name"]
        if item["kind"] in ("ClusterRole", "ClusterRoleBinding") and name == "argocd-image-updater":
            return None
        if item["kind"] == "Role" and name == "argocd-image-updater":
            item["rules"].append({"apiGroups": ["argoproj.io"], "resources": ["applications"],
                                  "verbs": ["get", "list", "update", "patch"]})
        return item

    (finding,) = findings(variant(tmp_path, "map-updater-v0", v014_rbac))
    assert finding.title == ("Image Updater v0.15.2 argocd/argocd-image-updater may not list applications.argoproj.io "
                             "cluster-wide (and 1 more)")
    assert "update applications" not in finding.summary  # granted in argocd, where the Applications are


def test_application_namespace_flag_narrows_the_need(tmp_path: Path) -> None:
    def narrowed(item: dict[str, Any]) -> dict[str, Any] | None:
        name = item["metadata"]["name"]
        if item["kind"] in ("ClusterRole", "ClusterRoleBinding") and name == "argocd-image-updater":
            return None
        if item["kind"] == "Role" and name == "argocd-image-updater":
            item["rules"].append({"apiGroups": ["argoproj.io"], "resources": ["applications"],
                                  "verbs": ["get", "list", "update", "patch"]})
        if item["kind"] == "Deployment" and name == "argocd-image-updater":
            container(item)["image"] = "quay.io/argoprojlabs/argocd-image-updater:v0.17.0"
            container(item)["args"] = ["run", "--application-namespace=argocd"]
        if item["kind"] == "Application" and "argocd-image-updater.argoproj.io/write-back-method" in \
                item["metadata"].get("annotations", {}):
            item["metadata"]["annotations"]["argocd-image-updater.argoproj.io/write-back-method"] = \
                "git:secret:argocd/git-creds"
        return item

    assert findings(variant(tmp_path, "map-updater-v0", narrowed)) == []


def test_an_unbound_service_account_is_low(tmp_path: Path) -> None:
    def unbound(item: dict[str, Any]) -> dict[str, Any] | None:
        if item["kind"] in RBAC_KINDS and item["metadata"]["name"] == "argocd-image-updater":
            return None
        return item

    (finding,) = findings(variant(tmp_path, "map-updater-v0", unbound))
    assert finding.severity == Severity.LOW
    assert "No RoleBinding or ClusterRoleBinding in the input names this ServiceAccount" in finding.summary


def test_rollouts_namespaced_mode_needs_eviction_in_its_namespace(tmp_path: Path) -> None:
    def namespaced(item: dict[str, Any]) -> dict[str, Any] | None:
        if item["kind"] == "Deployment" and item["metadata"]["name"] == "argo-rollouts":
            container(item)["args"] = ["--namespaced"]
        return item

    found = [f for f in findings(variant(tmp_path, "map-updater-v1", namespaced)) if "Rollouts" in f.title]
    assert [f.title for f in found] == [
        "Argo Rollouts controller v1.7.1 argo-rollouts/argo-rollouts may not create pods/eviction in argo-rollouts"]


@pytest.mark.parametrize("name", ["rbac-argocd-defaults", "rbac-hand-made"])
def test_upstream_defaults_need_nothing_more(name: str) -> None:
    if not (BUNDLES / name).is_dir():
        pytest.skip(f"{name} not present")
    assert [f for f in findings(load(name)) if f.severity > Severity.INFO] == []


def test_chart_installs_need_nothing_more() -> None:
    """The argo-helm Rollouts dashboard runs as its own ServiceAccount: it is not the controller, which needs
    pods/eviction."""
    assert findings(load("install-charts")) == []
