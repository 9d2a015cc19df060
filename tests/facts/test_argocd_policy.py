"""Argo CD's RBAC policy enforced as util/rbac/rbac.go and assets/model.conf do, on policies written as in Argo CD's
documentation (docs/operator-manual/rbac.md)."""

from __future__ import annotations

import pytest

from argo_doctor.facts.argocd_policy import decide, matches, policy_of
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject

TEAM = """\
# comments and blank lines are skipped

p, role:team-a, applications, sync, team-a/*, allow
p, role:team-a, applications, sync, team-a/prod-*, deny
p, role:team-a, applications, update/*/Pod/*/*, team-a/*, allow
p, "role:quoted,name", projects, delete, *, allow
g, org:team-a, role:team-a
g, alice, org:team-a
"""


def test_glob_has_no_separators_and_knows_classes_and_alternatives() -> None:
    assert matches("team-a/*", "team-a/ns/web")  # `*` spans `/`
    assert matches("update/*/Pod/*/*", "update//Pod/default/web-1")
    assert matches("{dev,qa}-*", "qa-web") and not matches("{dev,qa}-*", "prod-web")
    assert matches("web-[0-9]", "web-7") and matches("web-[!0-9]", "web-x") and not matches("web-?", "web-10")
    assert not matches("[unclosed", "[unclosed")  # gobwas cannot compile it: it matches nothing


def test_regex_mode_is_unanchored() -> None:
    assert matches("prod", "team-a/prod-web", "regex")
    assert not matches("^prod", "team-a/prod-web", "regex")
    assert not matches("(", "(", "regex")


def test_a_deny_wins_and_roles_are_inherited_through_g_lines() -> None:
    policy = policy_of({"policy.csv": TEAM})
    allowed = decide(policy, "alice", "applications", "sync", "team-a/web")
    assert allowed.allowed and [g.role for g in allowed.via] == ["org:team-a", "role:team-a"]
    denied = decide(policy, "alice", "applications", "sync", "team-a/prod-web")
    assert not denied.allowed and denied.lines[0].number == 4 and denied.lines[0].origin == "policy.csv"
    assert decide(policy, "alice", "applications", "update//Pod/team-a/web-1", "team-a/web").allowed
    assert not decide(policy, "alice", "applications", "update/apps/Deployment/team-a/web", "team-a/web").allowed
    assert decide(policy, "role:quoted,name", "projects", "delete", "anything").allowed


def test_the_default_role_is_tried_first_and_its_allow_is_final() -> None:
    policy = policy_of({"policy.csv": "p, mallory, applications, get, */*, deny", "policy.default": "role:readonly"})
    decision = decide(policy, "mallory", "applications", "get", "team-a/web")
    assert decision.allowed and decision.subject == "role:readonly"
    assert not decide(policy, "mallory", "applications", "sync", "team-a/web").allowed


def test_groups_count_only_when_a_g_line_names_them() -> None:
    policy = policy_of({"policy.csv": "p, org:sre, clusters, delete, *, allow\ng, org:ops, role:admin"},
                       builtin=False)
    assert not decide(policy, "bob", "clusters", "delete", "https://a", groups=("org:sre",)).allowed
    assert not decide(policy, "bob", "clusters", "delete", "https://a", groups=("org:ops",)).allowed  # no builtin
    with_builtin = policy_of({"policy.csv": "g, org:ops, role:admin"})
    assert decide(with_builtin, "bob", "clusters", "delete", "https://a", groups=("org:ops",)).allowed


def test_project_scoped_resources_take_star_as_every_object() -> None:
    policy = policy_of({"policy.csv": "p, carol, applications, get, */*, allow"}, builtin=False)
    assert decide(policy, "carol", "applications", "get", "*").allowed
    assert decide(policy, "carol", "applications", "get", "").allowed


def test_app_project_roles_add_their_policies_and_a_projects_get() -> None:
    snap = Snapshot("test")
    snap.add(RawObject({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                        "metadata": {"name": "payments", "namespace": "argocd"},
                        "spec": {"roles": [{"name": "ci", "groups": ["org:ci"], "policies": [
                            "p, proj:payments:ci, applications, sync, payments/*, allow"]}]}}, "objects/p.yaml:1"))
    policy = policy_of({}, snap.of_kind("AppProject", "argoproj.io"), builtin=False)
    assert decide(policy, "proj:payments:ci", "applications", "sync", "payments/api").allowed
    assert decide(policy, "proj:payments:ci", "projects", "get", "payments").allowed
    assert decide(policy, "dev", "applications", "sync", "payments/api", groups=("org:ci",)).allowed


@pytest.mark.parametrize(("line", "message"), [
    ("p, bob, applications, get, */* allow", "a p line has 6 fields, this one 5"),
    ("g, alice", "a g line has 3 fields, this one 2"),
    ("x, alice, role:a", "unknown section 'x'"),
])
def test_lines_argo_cd_cannot_load_are_errors_with_their_line_number(line: str, message: str) -> None:
    policy = policy_of({"policy.csv": "p, a, applications, get, */*, allow\n" + line}, builtin=False)
    [(where, why)] = policy.errors
    assert where.number == 2 and message in why


def test_an_effect_that_is_neither_allow_nor_deny_never_decides() -> None:
    policy = policy_of({"policy.csv": "p, carol, applications, get, */*, alow"}, builtin=False)
    assert not decide(policy, "carol", "applications", "get", "a/b").allowed
    assert "'alow' is neither allow nor deny" in policy.ignored[0][1]


def test_extra_csv_keys_follow_policy_csv_in_sorted_order_with_their_own_line_numbers() -> None:
    policy = policy_of({"policy.z.csv": "g, z, role:admin", "policy.csv": "g, c, role:admin",
                        "policy.a.csv": "\n\ng, a, role:admin", "policy.default": ""}, builtin=False)
    assert [(g.line.origin, g.line.number) for g in policy.grants] == [
        ("policy.csv", 1), ("policy.a.csv", 3), ("policy.z.csv", 1)]


def test_inheritance_stops_at_ten_levels() -> None:
    chain = "\n".join(f"g, r{i}, r{i + 1}" for i in range(12)) + "\np, r11, clusters, get, *, allow"
    policy = policy_of({"policy.csv": chain}, builtin=False)
    assert decide(policy, "r1", "clusters", "get", "x").allowed
    assert not decide(policy, "r0", "clusters", "get", "x").allowed


def test_trailing_spaces_are_kept_as_go_s_csv_reader_keeps_them() -> None:
    policy = policy_of({"policy.csv": "p, role:x , clusters, get, *, allow\ng, bob, role:x"}, builtin=False)
    assert not decide(policy, "bob", "clusters", "get", "https://a").allowed


def test_a_glob_of_many_stars_is_matched_without_backtracking() -> None:
    assert not matches("*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000)
    assert matches("*a*a*b", "xxaxxaxxb")
