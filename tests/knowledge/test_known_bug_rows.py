"""knowledge/known_bugs.yaml across products: alternatives in ranges (`||`), fixed releases in several lines, the rule
that shows each symptom, and that every row is sourced and never calls a fixed release affected."""

from __future__ import annotations

import pytest

from argo_doctor import knowledge
from argo_doctor.analyzers import all_analyzers
from argo_doctor.knowledge import bugs_affecting, in_range, parse_version

KEYS = {"id", "component", "affected", "symptom", "title", "issue", "fixed", "source"}
OPTIONAL = {"fixed_in", "shown_by"}
COMPONENTS = {"argo-cd", "argo-rollouts", "argocd-image-updater"}
TWO_LINES = "<2.14.15 || >=3.0.0 <3.0.10"


@pytest.mark.parametrize(("version", "inside"), [
    ((2, 14, 14), True), ((2, 14, 15), False), ((2, 15, 0), False), ((3, 0, 0), True), ((3, 0, 9), True),
    ((3, 0, 10), False), ((3, 1, 0), False), ((1, 0, 0), True),
])
def test_alternatives(version: tuple[int, int, int], inside: bool) -> None:
    assert in_range(version, TWO_LINES) is inside


@pytest.mark.parametrize("affected", ["<1.0.0 ||", "|| <1.0.0", "<1.0.0 || || >2.0.0", ">=1.0.0 ~2", "<1 || >=one"])
def test_malformed_alternatives_and_late_comparators_are_refused(affected: str) -> None:
    with pytest.raises(ValueError, match="malformed version range"):
        in_range((5, 0, 0), affected)  # (5, 0, 0) fails the first comparator: the rest is checked all the same


def test_upgrade_to_prefers_the_installed_release_line() -> None:
    (bug,) = [b for b in knowledge.bugs_of("argo-cd") if b.id == "argo-cd-23357"]
    assert bug.fixed == "v2.14.15" and bug.fixed_in == ("v2.14.15", "v3.0.10", "v3.1.0")
    assert bug.upgrade_to((2, 14, 11)) == "v2.14.15"
    assert bug.upgrade_to((3, 0, 2)) == "v3.0.10"
    assert bug.upgrade_to((2, 9, 6)) == "v2.14.15"  # no fix in 2.9: the lowest release above
    assert bug.upgrade_to((3, 1, 0)) is None


def test_a_row_without_fixed_in_upgrades_to_fixed() -> None:
    (bug,) = [b for b in knowledge.bugs_of("argo-rollouts") if b.id == "argo-rollouts-3843"]
    assert bug.fixed_in == ("v1.8.0",) and bug.upgrade_to((1, 7, 1)) == "v1.8.0"


@pytest.mark.parametrize("version", [None, "", "latest", "sha256:0f3c", "main"])
def test_no_version_no_bugs(version: str | None) -> None:
    assert bugs_affecting("argo-cd", version) == []


@pytest.mark.parametrize(("component", "version", "ids"), [
    ("argocd-image-updater", "v0.15.0", ["argocd-image-updater-896", "argocd-image-updater-895",
                                         "argocd-image-updater-1357"]),
    ("argocd-image-updater", "v0.15.1", ["argocd-image-updater-895", "argocd-image-updater-1357"]),
    ("argocd-image-updater", "v0.14.0", ["argocd-image-updater-1357"]),
    ("argocd-image-updater", "v0.18.0", []),
    ("argocd-image-updater", "v1.0.1", ["argocd-image-updater-1357"]),
    ("argocd-image-updater", "v1.0.2", []),
    ("argo-rollouts", "v1.6.0", ["argo-rollouts-3414", "argo-rollouts-3534", "argo-rollouts-3843",
                                 "argo-rollouts-2109", "argo-rollouts-3095"]),
    ("argo-rollouts", "v1.6.1", ["argo-rollouts-3414", "argo-rollouts-3534", "argo-rollouts-3843",
                                 "argo-rollouts-2109"]),
    ("argo-cd", "v2.11.11", ["argo-cd-18326", "argo-cd-23357"]),
    ("argo-cd", "v2.11.12", ["argo-cd-18326", "argo-cd-21599", "argo-cd-23357"]),
    ("argo-cd", "v2.12.0", ["argo-cd-18326", "argo-cd-23357"]),
    ("argo-cd", "v2.14.10", ["argo-cd-23357"]),
    ("argo-cd", "v2.0.0", ["argo-cd-gitops-engine-378", "argo-cd-ghinstallation-jwt-window", "argo-cd-18326"]),
    ("argo-cd", "v1.8.7", ["argo-cd-gitops-engine-378", "argo-cd-18326"]),
])
def test_bugs_affecting(component: str, version: str, ids: list[str]) -> None:
    assert [b.id for b in bugs_affecting(component, version)] == ids


def test_every_row_is_sourced_and_consistent() -> None:
    rules = {cls.id for cls in all_analyzers()}
    rows = knowledge.load_rows("known_bugs.yaml")
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert KEYS <= set(row) <= KEYS | OPTIONAL, row["id"]
        assert row["component"] in COMPONENTS, row["id"]
        assert "https://github.com/" in row["source"] and row["title"].strip(), row["id"]
        assert row["issue"].startswith(("https://github.com/argoproj/", "https://github.com/argoproj-labs/")), row["id"]
        assert row.get("shown_by") is None or row["shown_by"] in rules, row["id"]
        fixed_in = row.get("fixed_in") or ([row["fixed"]] if row["fixed"] else [])
        if row["fixed"] is None:
            assert not fixed_in, row["id"]
        else:
            assert row["fixed"] == min(fixed_in, key=lambda v: parse_version(v) or (0, 0, 0)), row["id"]
        for release in fixed_in:  # no fixed release is inside an affected range
            parsed = parse_version(release)
            assert parsed is not None, row["id"]
            assert not in_range(parsed, row["affected"]), (row["id"], release)
        in_range((0, 0, 0), row["affected"])


def test_a_fixed_release_outside_fixed_in_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    row = {"id": "x", "component": "argo-cd", "affected": "<1.0.0", "symptom": "s", "issue": "https://github.com/a",
           "fixed": "v1.0.0", "fixed_in": ["v1.0.1"], "source": "https://github.com/a"}
    monkeypatch.setattr(knowledge, "load_rows", lambda name: [row])
    knowledge._known_bug_rows.cache_clear()
    try:
        with pytest.raises(ValueError, match="must be one of the versions of fixed_in"):
            knowledge.bugs_of("argo-cd")
    finally:
        monkeypatch.undo()
        knowledge._known_bug_rows.cache_clear()
