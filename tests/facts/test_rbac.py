"""Effective permissions of a ServiceAccount: bindings, subjects, aggregated ClusterRoles (empty and filled), built-in
roles absent from the input, and `allows` with the RBAC authorizer's semantics (namespaces, wildcards, subresources,
resourceNames, non-resource URLs)."""

from __future__ import annotations

from typing import Any

import pytest

from argo_doctor.facts.rbac import (
    Grant,
    Permissions,
    allows,
    effective_permissions,
    grant_allows,
    resolve,
    selector_matches,
)
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES

Raw = dict[str, Any]
RBAC = "rbac.authorization.k8s.io/v1"


def snapshot(*objects: Raw) -> Snapshot:
    snap = Snapshot("test")
    for index, obj in enumerate(objects):
        snap.add(RawObject(obj, f"objects/rbac.yaml:{index * 20 + 1}"))
    return snap


def rule(groups: str, resources: str, verbs: str, names: str = "") -> Raw:
    found: Raw = {"apiGroups": ["" if g == "core" else g for g in groups.split()], "resources": resources.split(),
                  "verbs": verbs.split()}
    if names:
        found["resourceNames"] = names.split()
    return found


def role(name: str, namespace: str, *rules: Raw) -> Raw:
    return {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": namespace},
            "rules": list(rules)}


def cluster_role(name: str, *rules: Raw, labels: dict[str, str] | None = None,
                 aggregate: list[Raw] | None = None) -> Raw:
    obj: Raw = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name, "labels": labels or {}}}
    if aggregate is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": aggregate}
    if rules:
        obj["rules"] = list(rules)
    return obj


def binding(kind: str, name: str, role_kind: str, role_name: str, *subjects: Raw, namespace: str = "") -> Raw:
    meta: Raw = {"name": name}
    if kind == "RoleBinding":
        meta["namespace"] = namespace
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
            "subjects": list(subjects)}


def sa(name: str, namespace: str | None = None) -> Raw:
    found: Raw = {"kind": "ServiceAccount", "name": name}
    if namespace is not None:
        found["namespace"] = namespace
    return found


def group(name: str) -> Raw:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


def grant(resource: str = "pods", verbs: str = "get", group_: str = "", namespace: str | None = None,
          names: tuple[str, ...] = (), urls: tuple[str, ...] = ()) -> Grant:
    return Grant(group_, resource, tuple(verbs.split()), namespace, names, urls, ("test",), "here")


def perms(*grants: Grant) -> Permissions:
    return Permissions("argocd", "x", grants, ())


# -- bindings and subjects ----------------------------------------------------------------------------------------

def test_rolebinding_to_a_clusterrole_grants_in_its_namespace_only() -> None:
    snap = snapshot(
        cluster_role("pod-reader", rule("core", "pods pods/log", "get list watch")),
        binding("RoleBinding", "read-shop", "ClusterRole", "pod-reader", sa("argocd-server", "argocd"),
                namespace="shop"),
    )
    found = effective_permissions(snap, "argocd", "argocd-server")
    assert {(g.resource, g.namespace) for g in found.grants} == {("pods", "shop"), ("pods/log", "shop")}
    assert found.grants[0].via == ("RoleBinding/shop/read-shop", "ClusterRole/pod-reader")
    assert found.grants[0].evidence_location == "objects/rbac.yaml:1 ClusterRole/pod-reader .rules[0]"
    assert allows(found, "list", "", "pods", "shop") is not None
    assert allows(found, "list", "", "pods", "billing") is None
    assert allows(found, "list", "", "pods", None) is None  # a namespaced grant never allows a cluster-wide need
    assert allows(found, "delete", "", "pods", "shop") is None


def test_clusterrolebinding_grants_everywhere_and_cluster_scoped() -> None:
    snap = snapshot(
        cluster_role("node-reader", rule("core", "nodes", "get list")),
        binding("ClusterRoleBinding", "nodes", "ClusterRole", "node-reader", sa("argo-rollouts", "argo-rollouts")),
    )
    found = effective_permissions(snap, "argo-rollouts", "argo-rollouts")
    assert [g.namespace for g in found.grants] == [None]
    assert allows(found, "list", "", "nodes", None) is not None
    assert allows(found, "get", "", "nodes", "anything") is not None  # cluster-wide covers every namespace


def test_subject_namespace_defaults_to_the_rolebinding_and_roles_come_from_its_namespace() -> None:
    snap = snapshot(
        role("updater", "argocd", rule("argoproj.io", "applications", "get list update patch")),
        role("updater", "shop", rule("core", "secrets", "*")),
        binding("RoleBinding", "updater", "Role", "updater", sa("argocd-image-updater"), namespace="argocd"),
        binding("RoleBinding", "elsewhere", "Role", "updater", sa("argocd-image-updater"), namespace="shop"),
    )
    found = effective_permissions(snap, "argocd", "argocd-image-updater")
    # the binding in shop names shop/argocd-image-updater (its namespace by default), not argocd's
    assert [(g.api_group, g.resource, g.namespace) for g in found.grants] == [
        ("argoproj.io", "applications", "argocd")]
    other = effective_permissions(snap, "shop", "argocd-image-updater")
    assert [(g.resource, g.verbs) for g in other.grants] == [("secrets", ("*",))]


def test_a_clusterrolebinding_to_a_role_is_ignored() -> None:
    snap = snapshot(role("r", "argocd", rule("core", "pods", "get")),
                    binding("ClusterRoleBinding", "bad", "Role", "r", sa("x", "argocd")))
    assert effective_permissions(snap, "argocd", "x").grants == ()


def test_groups_and_the_service_account_user_name_are_subjects() -> None:
    snap = snapshot(
        cluster_role("secret-reader", rule("core", "secrets", "get list")),
        cluster_role("cm-reader", rule("core", "configmaps", "get")),
        cluster_role("lease", rule("coordination.k8s.io", "leases", "get")),
        cluster_role("events", rule("core", "events", "create")),
        binding("ClusterRoleBinding", "all-sa", "ClusterRole", "secret-reader", group("system:serviceaccounts")),
        binding("ClusterRoleBinding", "argocd-sa", "ClusterRole", "cm-reader", group("system:serviceaccounts:argocd")),
        binding("ClusterRoleBinding", "other-sa", "ClusterRole", "lease", group("system:serviceaccounts:shop")),
        binding("ClusterRoleBinding", "authn", "ClusterRole", "events", group("system:authenticated")),
        binding("RoleBinding", "as-user", "ClusterRole", "lease",
                {"kind": "User", "name": "system:serviceaccount:argocd:argocd-server"}, namespace="argocd"),
    )
    found = effective_permissions(snap, "argocd", "argocd-server")
    vias = {g.resource: g.via[0] for g in found.grants}
    assert vias == {
        "secrets": "ClusterRoleBinding/all-sa (to Group system:serviceaccounts)",
        "configmaps": "ClusterRoleBinding/argocd-sa (to Group system:serviceaccounts:argocd)",
        "events": "ClusterRoleBinding/authn (to Group system:authenticated)",
        "leases": "RoleBinding/argocd/as-user (to User system:serviceaccount:argocd:argocd-server)",
    }
    assert next(g for g in found.grants if g.resource == "leases").namespace == "argocd"  # not the shop group's
    assert [b.by_group for b in resolve(snap, "argocd", "argocd-server").bindings] == [True, True, True, False]


def test_an_input_without_namespaces_matches_service_accounts_by_name() -> None:
    snap = snapshot(cluster_role("c", rule("core", "pods", "get")),
                    binding("ClusterRoleBinding", "c", "ClusterRole", "c", sa("argocd-server", "argocd")))
    found = effective_permissions(snap, "", "argocd-server")
    assert len(found.grants) == 1
    assert any("gives no namespace" in n for n in found.notes)


# -- absent and built-in roles ------------------------------------------------------------------------------------

def test_absent_cluster_admin_is_known_other_absent_roles_are_unknown() -> None:
    snap = snapshot(
        binding("ClusterRoleBinding", "updater-admin", "ClusterRole", "cluster-admin",
                sa("argocd-image-updater", "argocd")),
        binding("RoleBinding", "updater-edit", "ClusterRole", "edit", sa("argocd-image-updater", "argocd"),
                namespace="shop"),
        binding("RoleBinding", "metrics", "ClusterRole", "metrics-reader", sa("argocd-image-updater", "argocd"),
                namespace="shop"),
        binding("RoleBinding", "gone", "Role", "deleted-role", sa("argocd-image-updater"), namespace="argocd"),
    )
    found = effective_permissions(snap, "argocd", "argocd-image-updater")
    assert {(g.api_group, g.resource, g.verbs, g.non_resource_urls) for g in found.grants} == {
        ("*", "*", ("*",), ()), ("", "", ("*",), ("*",))}
    assert all(g.via == ("ClusterRoleBinding/updater-admin", "ClusterRole/cluster-admin", "built-in, not in the input")
               for g in found.grants)
    assert found.grants[0].evidence_location == "objects/rbac.yaml:1 ClusterRoleBinding/updater-admin .roleRef"
    notes = " | ".join(found.notes)
    assert "ClusterRole/cluster-admin (bound by ClusterRoleBinding/updater-admin): built-in, not in the input" in notes
    assert "ClusterRole/edit (a Kubernetes built-in role, bound by RoleBinding/shop/updater-edit) not in the input: " \
           "its grants are unknown" in notes
    assert "ClusterRole/metrics-reader (bound by RoleBinding/shop/metrics) not in the input: its grants are unknown" \
           in notes
    assert "Role/argocd/deleted-role (bound by RoleBinding/argocd/gone) not in the input" in notes
    assert allows(found, "list", "", "secrets", None) is not None
    assert allows(found, "get", "", "/healthz", None) is not None


# -- aggregation --------------------------------------------------------------------------------------------------

def test_aggregated_clusterrole_with_empty_rules_is_computed_from_its_selectors() -> None:
    snap = bundle.load([BUNDLES / "rbac-aggregation"])
    found = resolve(snap, "argo-rollouts", "argo-rollouts")
    by_resource = {s.grant.resource: s for s in found.sources}
    assert set(by_resource) == {"pods/exec", "pods/log", "nodes/proxy", "secrets"}  # not rollouts-ops-old's `*`
    secrets = by_resource["secrets"].grant
    assert secrets.via == ("ClusterRoleBinding/argo-rollouts-ops", "ClusterRole/rollouts-ops",
                           "aggregated from ClusterRole/rollouts-ops-extra",
                           "aggregated from ClusterRole/rollouts-ops-secrets")
    assert secrets.namespace is None and secrets.verbs == ("get", "list")
    assert secrets.evidence_location.startswith("objects/cluster.yaml:")
    assert secrets.evidence_location.endswith("ClusterRole/rollouts-ops-secrets .rules[0]")
    assert by_resource["nodes/proxy"].grant.via[2] == "aggregated from ClusterRole/rollouts-ops-nodes"  # by expression
    assert by_resource["secrets"].role is not None and by_resource["secrets"].role.name == "rollouts-ops-secrets"
    notes = " | ".join(found.notes)
    assert "ClusterRole/rollouts-ops: rules computed from its aggregationRule (empty in the input): " \
           "ClusterRole/rollouts-ops-debug, ClusterRole/rollouts-ops-extra, ClusterRole/rollouts-ops-nodes" in notes
    assert "ClusterRole/rollouts-ops-extra: aggregation cycle through ClusterRole/rollouts-ops ignored" in notes
    perms_ = found.permissions
    assert allows(perms_, "create", "", "pods/exec", None) is not None
    assert allows(perms_, "watch", "", "secrets", "shop") is None


def test_aggregated_clusterrole_with_filled_rules_is_used_as_it_is() -> None:
    snap = bundle.load([BUNDLES / "rbac-aggregation"])
    found = resolve(snap, "argo-rollouts", "argo-rollouts-dashboard")
    assert {s.grant.namespace for s in found.sources} == {"shop"}
    assert all(s.role is not None and s.role.name == "edit" for s in found.sources)  # its own, filled rules
    rollouts = next(s for s in found.sources if s.grant.resource == "rollouts")
    assert rollouts.grant.via == ("RoleBinding/shop/rollouts-dashboard-edit", "ClusterRole/edit",
                                  "aggregated from ClusterRole/argo-rollouts-aggregate-to-edit")
    assert rollouts.grant.evidence_location.endswith("ClusterRole/edit .rules[7]")
    notes = " | ".join(found.notes)
    assert "ClusterRole/edit: rules as the aggregation controller filled them in (its aggregationRule selects " \
           "ClusterRole/argo-rollouts-aggregate-to-edit, ClusterRole/system:aggregate-to-edit)" in notes
    assert "ClusterRole/shop-metrics-reader (bound by RoleBinding/shop/rollouts-dashboard-metrics) not in the " \
           "input: its grants are unknown" in notes
    assert allows(found.permissions, "patch", "argoproj.io", "rollouts", "shop") is not None
    assert allows(found.permissions, "patch", "argoproj.io", "rollouts", "argo-rollouts") is None


def test_aggregation_with_no_matching_role_grants_nothing_and_says_so() -> None:
    snap = snapshot(cluster_role("agg", aggregate=[{"matchLabels": {"x": "y"}}]),
                    binding("ClusterRoleBinding", "b", "ClusterRole", "agg", sa("s", "argocd")))
    found = effective_permissions(snap, "argocd", "s")
    assert found.grants == ()
    assert found.notes == ("ClusterRole/agg: rules computed from its aggregationRule (empty in the input): none in "
                           "the input",)


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ({}, {"a": "1"}, True),  # an empty selector selects everything
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, {"a": "2"}, False),
])
def test_label_selectors(selector: Raw, labels: dict[str, str], expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


# -- allows -----------------------------------------------------------------------------------------------------

def test_resource_names_restrict() -> None:
    found = perms(grant("secrets", "get", names=("argocd-notifications-secret",), namespace="argocd"))
    assert allows(found, "get", "", "secrets", "argocd", "argocd-notifications-secret") is not None
    assert allows(found, "get", "", "secrets", "argocd", "argocd-secret") is None
    assert allows(found, "get", "", "secrets", "argocd") is None  # no name: the grant does not apply
    assert allows(found, "list", "", "secrets", "argocd", "argocd-notifications-secret") is None


def test_subresources_and_resource_wildcards() -> None:
    pods = perms(grant("pods", "get create"))
    assert allows(pods, "create", "", "pods/exec", None) is None  # `pods` never covers its subresources
    assert allows(perms(grant("pods/*", "create")), "create", "", "pods/exec", None) is None  # not a pattern
    assert allows(perms(grant("*", "create")), "create", "", "pods/exec", None) is not None
    scale = perms(grant("*/scale", "update", group_="apps"))
    assert allows(scale, "update", "apps", "deployments/scale", None) is not None
    assert allows(scale, "update", "apps", "deployments", None) is None
    assert allows(perms(grant("pods/exec", "create")), "create", "", "pods/exec", "shop") is not None
    assert allows(perms(grant("pods/eviction", "create")), "create", "", "pods/eviction", "shop") is not None
    assert allows(perms(grant("nodes/proxy", "get")), "get", "", "nodes/proxy", None) is not None


def test_group_and_verb_wildcards() -> None:
    every = perms(grant("*", "*", group_="*"))
    assert allows(every, "impersonate", "", "serviceaccounts", None) is not None
    assert allows(every, "escalate", "rbac.authorization.k8s.io", "clusterroles", None) is not None
    apps = perms(grant("deployments", "*", group_="apps"))
    assert allows(apps, "patch", "apps", "deployments", "shop") is not None
    assert allows(apps, "patch", "extensions", "deployments", "shop") is None
    assert allows(apps, "patch", "apps", "statefulsets", "shop") is None


def test_non_resource_urls() -> None:
    urls = perms(grant("", "get", urls=("/healthz/*", "/metrics")))
    assert allows(urls, "get", "", "/metrics", None) is not None
    assert allows(urls, "get", "", "/healthz/etcd", None) is not None
    assert allows(urls, "get", "", "/version", None) is None
    assert allows(urls, "post", "", "/metrics", None) is None
    assert allows(perms(grant("", "*", urls=("*",))), "get", "", "/anything", None) is not None
    assert not grant_allows(grant("", "get", urls=("/metrics",)), "get", "", "metrics", None)  # a resource request


def test_non_resource_urls_are_not_granted_through_a_rolebinding() -> None:
    snap = snapshot(
        cluster_role("metrics", {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, rule("core", "pods", "list")),
        binding("RoleBinding", "m", "ClusterRole", "metrics", sa("prometheus"), namespace="argocd"),
    )
    found = effective_permissions(snap, "argocd", "prometheus")
    assert [(g.resource, g.non_resource_urls) for g in found.grants] == [("pods", ())]
    assert allows(found, "get", "", "/metrics", None) is None
    assert any("nonResourceURLs of ClusterRole/metrics are not granted through a RoleBinding" in n
               for n in found.notes)


def test_a_rolebinding_grants_a_role_of_its_own_namespace_to_a_service_account_of_another() -> None:
    """Argo CD's usual layout: the controller's ServiceAccount in argocd, a Role and RoleBinding in each namespace
    it deploys to; a Role of the same name in argocd (the ServiceAccount's namespace) is not the one bound."""
    snap = snapshot(
        role("deployer", "shop", rule("apps", "deployments", "get list watch update patch")),
        role("deployer", "argocd", rule("core", "secrets", "*")),
        binding("RoleBinding", "argocd-deployer", "Role", "deployer", sa("argocd-application-controller", "argocd"),
                namespace="shop"),
    )
    found = effective_permissions(snap, "argocd", "argocd-application-controller")
    assert [(g.api_group, g.resource, g.namespace) for g in found.grants] == [("apps", "deployments", "shop")]
    assert allows(found, "patch", "apps", "deployments", "shop") is not None
    assert allows(found, "get", "", "secrets", "argocd") is None


def test_a_scale_grant_is_no_exec_grant_and_a_url_grant_no_prefix() -> None:
    scale = perms(grant("*/scale", "create get update", group_="*"))
    assert allows(scale, "create", "", "pods/exec", "shop") is None and allows(scale, "get", "", "pods/exec",
                                                                               "shop") is None
    assert allows(scale, "update", "apps", "statefulsets/scale", "shop") is not None
    urls = perms(grant("", "get", urls=("/metrics",)))
    assert allows(urls, "get", "", "/metricsfoo", None) is None and allows(urls, "get", "", "/metrics/x", None) is None


def test_an_absent_role_named_cluster_admin_grants_nothing() -> None:
    """Only the built-in ClusterRole cluster-admin is known without the input; a namespaced Role of that name is
    someone's own, and absent it grants nothing."""
    snap = snapshot(binding("RoleBinding", "admins", "Role", "cluster-admin", sa("argocd-server", "argocd"),
                            namespace="argocd"))
    found = effective_permissions(snap, "argocd", "argocd-server")
    assert found.grants == ()
    assert any("Role/argocd/cluster-admin (bound by RoleBinding/argocd/admins) not in the input" in n
               for n in found.notes)
