"""knowledge/rbac_defaults.yaml: every row names its upstream manifests and holds well-formed roles and rules."""

from __future__ import annotations

from typing import Any

import pytest

from argo_doctor.knowledge import _policy_rule, in_range, load_rows, shipped_rbac

ROWS = load_rows("rbac_defaults.yaml")
KEYS = {"product", "components", "service_accounts", "roles", "restrict", "docs", "source"}
OPTIONAL = {"versions", "opt_ins", "charts"}
RULE_KEYS = {"apiGroups", "resources", "nonResourceURLs", "verbs", "resourceNames"}


def _well_formed(rule: Any) -> bool:
    if not isinstance(rule, dict) or set(rule) - RULE_KEYS:
        return False
    if not all(isinstance(v, list) and v and all(isinstance(x, str) for x in v) for v in rule.values()):
        return False
    if "nonResourceURLs" in rule:
        return set(rule) == {"nonResourceURLs", "verbs"}
    return {"apiGroups", "resources", "verbs"} <= set(rule)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['product']}:{r['service_accounts'][0]}")
def test_row(row: dict[str, Any]) -> None:
    assert KEYS <= set(row) <= KEYS | OPTIONAL
    assert str(row["source"]).startswith("https://github.com/")
    assert row["docs"] and all(str(d).startswith("https://") for d in row["docs"])
    assert row["components"] and all(isinstance(c, str) and c for c in row["components"])
    assert row["service_accounts"] and row["restrict"].strip()
    in_range((0, 0, 0), str(row.get("versions") or "*"))  # a well-formed range
    assert row["roles"]
    for role in row["roles"]:
        assert set(role) == {"kind", "name", "rules"} and role["kind"] in ("Role", "ClusterRole") and role["name"]
        assert role["rules"] and all(_well_formed(rule) for rule in role["rules"]), role["name"]
    assert all(isinstance(c, str) and c for c in row.get("charts") or ())
    for opt_in in row.get("opt_ins") or ():
        assert set(opt_in) == {"rule", "why"} and _well_formed(opt_in["rule"]) and opt_in["why"].strip()


def test_loader_keeps_every_row_in_file_order() -> None:
    entries = shipped_rbac()
    assert [(e.product, e.service_accounts) for e in entries] == \
        [(r["product"], tuple(r["service_accounts"])) for r in ROWS]
    (controller,) = [e for e in entries if "argocd-application-controller" in e.service_accounts]
    assert controller.roles[0].rules == ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                         {"nonResourceURLs": ["*"], "verbs": ["*"]})
    assert {e.versions for e in entries if e.product == "Argo CD Image Updater"} == {"<1.0.0", ">=1.0.0"}


@pytest.mark.parametrize("rule", [
    {}, {"apiGroups": [""], "resources": ["pods"]}, {"apiGroups": [""], "resources": ["pods"], "verbs": []},
    {"apiGroups": "", "resources": ["pods"], "verbs": ["get"]}, {"nonResourceURLs": ["/x"], "verbs": ["get"],
                                                                 "resources": ["pods"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourcenames": ["a"]}, ["get"],
])
def test_malformed_rules_are_refused(rule: Any) -> None:
    assert not _well_formed(rule)
    with pytest.raises(ValueError, match="malformed rule"):
        _policy_rule(rule, "test")
