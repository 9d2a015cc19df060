"""rbac-overbroad on Argo installations as kubectl prints them: what the Argo projects' manifests ship is the
documented default at info, hand-made grants are high or medium, documented opt-ins low; each finding names the
binding and role (aggregation included), points at the rule, and proposes a narrower one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from argo_doctor.analyzers.rbac_overbroad import risks
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.facts.rbac import Grant
from argo_doctor.model import Finding, Severity
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES, EXAMPLES, scan_json

Raw = dict[str, Any]
RBAC = "rbac.authorization.k8s.io/v1"


def findings(path: Path) -> dict[str, Finding]:
    """The findings by the binding they are about."""
    result = run_scan(bundle.load([path]), select_analyzers(only=("rbac-overbroad",)))
    assert not result.crashed
    found: dict[str, Finding] = {}
    for finding in result.findings:
        key = str(finding.objects[0])
        assert key not in found, key
        found[key] = finding
    return found


def scan(*objects: Raw) -> list[Finding]:
    snap = Snapshot("test")
    for index, obj in enumerate(objects):
        snap.add(RawObject(obj, f"objects/all.yaml:{index * 20 + 1}"))
    result = run_scan(snap, select_analyzers(only=("rbac-overbroad",)))
    assert not result.crashed
    return result.findings


def controller(namespace: str = "argocd", name: str = "argocd-image-updater") -> Raw:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": name}},
            "spec": {"template": {"metadata": {"labels": {"app.kubernetes.io/name": name}},
                                  "spec": {"serviceAccountName": name, "containers": [
                                      {"name": "c", "image": f"quay.io/argoprojlabs/{name}:v0.18.0"}]}}}}


def cluster_role(name: str, *rules: Raw) -> Raw:
    return {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": list(rules)}


def role(name: str, namespace: str, *rules: Raw) -> Raw:
    return {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": namespace},
            "rules": list(rules)}


def binding(kind: str, name: str, role_kind: str, role_name: str, sa: str, namespace: str = "argocd") -> Raw:
    meta: Raw = {"name": name}
    if kind == "RoleBinding":
        meta["namespace"] = namespace
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "argocd"}]}


def grant(group: str, resource: str, verbs: str, namespace: str | None = None, names: tuple[str, ...] = ()) -> Grant:
    return Grant(group, resource, tuple(verbs.split()), namespace, names, (), ("x",), "here")


# -- the documented defaults ----------------------------------------------------------------------------------------

def test_argocd_and_image_updater_as_shipped_give_only_info() -> None:
    found = findings(BUNDLES / "rbac-argocd-defaults")
    assert sorted(found) == ["ClusterRoleBinding/argocd-application-controller",
                             "ClusterRoleBinding/argocd-applicationset-controller", "ClusterRoleBinding/argocd-server"]
    assert {f.severity for f in found.values()} == {Severity.INFO}
    assert all(f.title.endswith("Argo CD's documented default") for f in found.values())
    assert not any("image-updater" in f.title for f in found.values())

    control = found["ClusterRoleBinding/argocd-application-controller"]
    assert "is cluster-admin through ClusterRole/argocd-application-controller" in control.title
    assert "not a misconfiguration" in control.summary and "resource.inclusions" in control.remediation.text
    patch = control.remediation.patch or ""
    # narrowed to what the two Applications deploy, and the controller told to watch only that
    assert '- apiGroups: [apps]\n  resources: [deployments]\n  verbs: [get, list, watch, create, update, patch, ' \
           'delete]' in patch
    assert "resources: [services, configmaps]" in patch and "resources: [cronjobs]" in patch
    assert "resources: [ingresses]" in patch
    assert '    - apiGroups: ["networking.k8s.io"]\n      kinds: [Ingress]' in patch
    rule_evidence = [e for e in control.evidence if ".rules[" in e.location]
    assert rule_evidence[0].location.startswith("objects/cluster.yaml:")
    assert rule_evidence[0].location.endswith("ClusterRole/argocd-application-controller .rules[0]")
    assert rule_evidence[0].excerpt == 'apiGroups ["*"] resources ["*"] verbs ["*"]'

    server = found["ClusterRoleBinding/argocd-server"]
    for said in ("reads Secrets in every namespace (get)", "nodes/proxy", "get on pods/exec"):
        assert said in server.summary
    appset = found["ClusterRoleBinding/argocd-applicationset-controller"]
    assert "reads Secrets cluster-wide" in appset.title
    assert "ApplicationSets in any namespace" in appset.remediation.text
    assert "kind: Role\nmetadata:\n  name: argocd-applicationset-controller-namespaced\n  namespace: argocd" in (
        appset.remediation.patch or "")


def test_the_restrict_advice_follows_the_role_kind_and_the_component() -> None:
    """argocd-basic ships the controller's namespaced Role and the server's ClusterRole: neither is told to edit
    "the ClusterRole" so that "the controller" watches less."""
    found = findings(EXAMPLES / "argocd-basic")
    role = found["RoleBinding/argocd/argocd-application-controller"]
    assert role.remediation.text.startswith("Role/argocd/argocd-application-controller grants only in namespace "
                                            "argocd")
    assert role.remediation.patch is None  # already a Role: no namespaced copy of it
    server = found["ClusterRoleBinding/argocd-server"]
    for text in (role.remediation.text, role.summary, server.remediation.text, server.summary):
        assert "edit the ClusterRole" not in text and "make the controller watch" not in text
    assert "edit ClusterRole/argocd-server so that the writes it grants ServiceAccount argocd/argocd-server" in (
        server.remediation.text)
    control = found["ClusterRoleBinding/argocd-application-controller"]
    assert "make the controller watch only those kinds" in control.remediation.text


def test_the_scan_output_follows_the_contract() -> None:
    doc = scan_json(BUNDLES / "rbac-argocd-defaults", "--rule", "rbac-overbroad")
    assert doc["errors"] == []
    assert [f["severity"] for f in doc["findings"]] == ["info"] * 3


def test_a_role_that_is_not_shipped_but_grants_no_more_than_the_default_is_info() -> None:
    found = scan(controller("argocd", "argocd-application-controller"),
                 binding("ClusterRoleBinding", "controller-admin", "ClusterRole", "cluster-admin",
                         "argocd-application-controller"))
    (finding,) = found
    assert finding.severity is Severity.INFO
    assert "ClusterRole/cluster-admin is not a role Argo CD ships, but what it grants here is no more" in (
        finding.summary)


# -- hand-made grants -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hand_made() -> dict[str, Finding]:
    return findings(BUNDLES / "rbac-hand-made")


def test_hand_made_grants_get_their_severity(hand_made: dict[str, Finding]) -> None:
    assert {key: f.severity.label for key, f in hand_made.items()} == {
        "ClusterRoleBinding/argocd-image-updater-admin": "high",
        "RoleBinding/argocd/image-updater-secrets": "medium",
        "RoleBinding/shop/image-updater-edit": "medium",
        "ClusterRoleBinding/argocd-serviceaccounts-secret-reader": "high",
        "ClusterRoleBinding/argocd-applicationset-controller": "high",
        "ClusterRoleBinding/argocd-server": "low",
        "ClusterRoleBinding/argocd-application-controller": "info",
    }


def test_cluster_admin_bound_to_the_updater(hand_made: dict[str, Finding]) -> None:
    finding = hand_made["ClusterRoleBinding/argocd-image-updater-admin"]
    assert finding.title == ("ServiceAccount argocd/argocd-image-updater (image-updater) is cluster-admin through "
                             "ClusterRole/cluster-admin (ClusterRoleBinding/argocd-image-updater-admin)")
    assert "ClusterRole/cluster-admin, built-in, not in the input" in finding.summary
    assert finding.evidence[0].location.endswith("ClusterRoleBinding/argocd-image-updater-admin .subjects[0]")
    assert finding.evidence[1].location.endswith("ClusterRoleBinding/argocd-image-updater-admin .roleRef")
    remediation = finding.remediation
    assert remediation.command == "kubectl delete clusterrolebinding argocd-image-updater-admin"
    patch = remediation.patch or ""
    assert "What Argo CD Image Updater ships for ServiceAccount argocd-image-updater" in patch
    assert "already bound in this input: argocd-image-updater" in patch
    assert "- apiGroups: [argoproj.io]\n  resources: [applications]\n  verbs: [get, list, update, patch]" in patch
    assert "cluster-admin" not in patch.split("\n", 1)[1]


def test_namespaced_wildcards_and_builtin_edit(hand_made: dict[str, Finding]) -> None:
    secrets = hand_made["RoleBinding/argocd/image-updater-secrets"]
    assert "wildcard in namespace argocd: * on secrets (core)" in secrets.summary
    assert secrets.remediation.command == "kubectl delete rolebinding image-updater-secrets -n argocd"
    edit = hand_made["RoleBinding/shop/image-updater-edit"]
    assert "Kubernetes' built-in ClusterRole edit (not in the input) in namespace shop" in edit.summary


def test_a_group_binding_is_reported_once_for_every_service_account(hand_made: dict[str, Finding]) -> None:
    finding = hand_made["ClusterRoleBinding/argocd-serviceaccounts-secret-reader"]
    assert finding.title.startswith("Group system:serviceaccounts:argocd (ServiceAccounts of ")
    assert "argocd-image-updater, argocd-repo-server, argocd-server" in finding.summary
    assert "<the ServiceAccount that needs it>" in (finding.remediation.patch or "")


def test_a_rule_added_to_a_shipped_role_is_not_a_default(hand_made: dict[str, Finding]) -> None:
    finding = hand_made["ClusterRoleBinding/argocd-applicationset-controller"]
    assert "may impersonate" in finding.title and "documented default" not in finding.title
    assert "(get, list, watch): ClusterRole/argocd-applicationset-controller .rules[4]" in finding.summary
    assert "[no more than the shipped default]" in finding.summary
    assert finding.remediation.command == ("kubectl patch clusterrole argocd-applicationset-controller --type=json "
                                           "-p '[{\"op\":\"remove\",\"path\":\"/rules/7\"}]'")


def test_the_web_terminal_rule_is_a_documented_opt_in(hand_made: dict[str, Finding]) -> None:
    finding = hand_made["ClusterRoleBinding/argocd-server"]
    assert finding.title.endswith("a documented opt-in")
    assert "[documented opt-in: the web terminal" in finding.summary
    assert 'exec.enabled: "true": the web terminal is on' in finding.remediation.text


# -- aggregation ----------------------------------------------------------------------------------------------------

def test_aggregated_roles_name_the_whole_path() -> None:
    found = findings(BUNDLES / "rbac-aggregation")
    assert {k: f.severity.label for k, f in found.items()} == {
        "ClusterRoleBinding/argo-rollouts-ops": "high", "RoleBinding/shop/rollouts-dashboard-edit": "medium"}
    ops = found["ClusterRoleBinding/argo-rollouts-ops"]
    assert "may exec into pods and has nodes/proxy through ClusterRole/rollouts-ops" in ops.title
    assert ("ClusterRoleBinding/argo-rollouts-ops → ClusterRole/rollouts-ops → aggregated from "
            "ClusterRole/rollouts-ops-extra → aggregated from ClusterRole/rollouts-ops-secrets") in ops.summary
    assert "rules computed from its aggregationRule (empty in the input)" in ops.summary
    assert any(e.location.endswith("ClusterRole/rollouts-ops-nodes .rules[0]") for e in ops.evidence)
    dashboard = found["RoleBinding/shop/rollouts-dashboard-edit"]
    assert "rules as the aggregation controller filled them in" in dashboard.summary
    assert "`impersonate` on serviceaccounts in namespace shop" in dashboard.summary
    assert "creates tokens of any ServiceAccount in namespace shop" in dashboard.summary


# -- what counts as over-broad ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("grant_", "keys", "severity"), [
    (grant("*", "*", "*"), ["cluster-admin"], Severity.HIGH),
    (grant("*", "*", "*", "argocd"), ["namespace-admin"], Severity.MEDIUM),
    (grant("", "secrets", "list"), ["secrets"], Severity.HIGH),
    (grant("", "secrets", "get list watch", "argocd"), [], None),  # its own namespace's Secrets: fine
    (grant("", "secrets", "get", names=("argocd-redis",)), [], None),  # named Secrets only
    (grant("", "secrets", "*", "argocd"), ["wildcard"], Severity.MEDIUM),
    (grant("", "configmaps", "*", "argocd"), ["wildcard"], Severity.LOW),
    (grant("argoproj.io", "applications", "*"), ["wildcard"], Severity.MEDIUM),
    (grant("rbac.authorization.k8s.io", "clusterroles", "escalate bind"), ["escalate", "bind"], Severity.HIGH),
    (grant("rbac.authorization.k8s.io", "roles", "bind", "argocd"), ["bind"], Severity.MEDIUM),
    (grant("", "serviceaccounts", "impersonate"), ["impersonate"], Severity.HIGH),
    (grant("", "serviceaccounts/token", "create", "argocd"), ["token"], Severity.MEDIUM),
    (grant("", "nodes/proxy", "get"), ["nodes-proxy"], Severity.HIGH),
    (grant("", "nodes/proxy", "get", "argocd"), [], None),  # a RoleBinding cannot grant a cluster-scoped resource
    (grant("", "pods/exec", "create", "shop"), ["pods-exec"], Severity.MEDIUM),
    (grant("", "pods/log", "get"), [], None),
    (grant("", "pods", "get create"), [], None),
])
def test_risks(grant_: Grant, keys: list[str], severity: Severity | None) -> None:
    found = risks(grant_)
    assert [r.key for r in found] == keys
    assert (found[0].severity if found else None) == severity


def test_nothing_for_service_accounts_outside_the_argo_namespaces() -> None:
    assert scan(controller(),
                cluster_role("god", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                binding("ClusterRoleBinding", "other", "ClusterRole", "god", "somebody-else") | {
                    "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "ci"}]}) == []


def test_a_service_account_of_an_argo_namespace_bound_to_something_is_checked() -> None:
    (finding,) = scan(controller(),
                      role("all", "argocd", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                      binding("RoleBinding", "debug", "Role", "all", "debug-shell"))
    assert finding.severity is Severity.MEDIUM
    assert finding.title.startswith("ServiceAccount argocd/debug-shell has every permission in a namespace")


def test_the_bindings_every_cluster_has_are_no_finding() -> None:
    discovery = cluster_role("system:discovery", {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz",
                                                                      "/livez", "/openapi", "/openapi/*", "/readyz",
                                                                      "/version", "/version/"], "verbs": ["get"]})
    basic = cluster_role("system:basic-user", {"apiGroups": ["authorization.k8s.io"],
                                               "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                                               "verbs": ["create"]})
    to_all = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]
    assert scan(controller(), discovery, basic,
                binding("ClusterRoleBinding", "system:discovery", "ClusterRole", "system:discovery", "x")
                | {"subjects": to_all},
                binding("ClusterRoleBinding", "system:basic-user", "ClusterRole", "system:basic-user", "x")
                | {"subjects": to_all}) == []


def test_chart_installs_get_the_verdict_of_the_upstream_manifests() -> None:
    """Bitnami's and argo-helm's roles, renamed with the release, are what the projects (or the chart: argo-helm's
    providerRBAC for Rollouts, its notifications ClusterRole) ship: info, whatever they are called."""
    found = findings(BUNDLES / "install-charts")
    assert sorted(found) == [f"ClusterRoleBinding/{name}" for name in (
        "argo-events-binding", "argo-events-webhook-binding", "cd-argocd-notifications-controller",
        "gitops-argo-cd-argocd-app-controller", "gitops-argo-cd-argocd-server", "my-argo-argo-rollouts",
        "wf-argo-workflows-workflows-controller", "wf-argo-workflows-workflows-server")]
    assert {f.severity for f in found.values()} == {Severity.INFO}
    assert all(f.title.endswith("documented default") for f in found.values())
    rollouts = found["ClusterRoleBinding/my-argo-argo-rollouts"]
    assert "[shipped by the argo-rollouts Helm chart]" in rollouts.summary
    assert "Argo Rollouts' installation manifests and the argo-rollouts Helm chart ship" in rollouts.summary


def _chart_install_finding(tmp_path: Path, role: str, edit: Callable[[Raw], None], binding: str) -> Finding:
    """The finding about `binding` of the install-charts bundle with ClusterRole `role` changed by `edit`."""
    from tests.facts.test_installation import variant

    def change(item: Raw) -> Raw:
        if item["kind"] == "ClusterRole" and item["metadata"]["name"] == role:
            edit(item)
        return item

    result = run_scan(variant(tmp_path, "install-charts", change), select_analyzers(only=("rbac-overbroad",)))
    (found,) = [f for f in result.findings if str(f.objects[0]) == f"ClusterRoleBinding/{binding}"]
    return found


def test_a_charts_grants_are_default_only_in_the_charts_roles(tmp_path: Path) -> None:
    """Every verb on Gloo's routetables is argo-helm's default: in a role without the chart's label it is a grant
    someone added."""
    rollouts = _chart_install_finding(tmp_path, "my-argo-argo-rollouts",
                                      lambda role: role["metadata"]["labels"].pop("helm.sh/chart"),
                                      "my-argo-argo-rollouts")
    assert rollouts.severity == Severity.MEDIUM and "wildcard" in rollouts.title
    assert "the others go beyond what the project ships or documents" in rollouts.summary


def test_a_grant_added_to_a_bitnami_role_is_reported(tmp_path: Path) -> None:
    server = _chart_install_finding(
        tmp_path, "gitops-argo-cd-argocd-server",
        lambda role: role["rules"].append({"apiGroups": [""], "resources": ["serviceaccounts/token"],
                                           "verbs": ["create"]}),
        "gitops-argo-cd-argocd-server")
    assert server.severity == Severity.HIGH and "may mint ServiceAccount tokens" in server.title
    assert "[no more than the shipped default]" in server.summary


def test_no_finding_says_the_same_thing_in_its_why_and_its_fix() -> None:
    shown = findings(EXAMPLES / "argocd-basic")
    assert shown
    for finding in shown.values():
        fix = finding.remediation.text
        assert fix and not any(sentence.strip() in finding.summary for sentence in fix.split(". ")
                               if len(sentence) > 40), finding.title
