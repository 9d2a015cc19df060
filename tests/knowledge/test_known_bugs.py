"""knowledge/known_bugs.yaml and known_bugs(): version ranges, unknown versions, and the shape of every row."""

from __future__ import annotations

import pytest

from argo_doctor import knowledge
from argo_doctor.knowledge import in_range, known_bugs, parse_version

STUCK = "rollout-degraded-although-healthy"


@pytest.mark.parametrize(("text", "expected"), [
    ("v1.7.1", (1, 7, 1)), ("1.7.1", (1, 7, 1)), ("v1.8", (1, 8, 0)), ("2", (2, 0, 0)),
    ("v1.8.0-rc1", (1, 8, 0)), ("v1.7.2+build.5", (1, 7, 2)), (" v1.6.5 ", (1, 6, 5)),
    ("latest", None), ("", None), (None, None), ("sha256:abc", None), ("v1.x", None),
])
def test_parse_version(text: str | None, expected: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize(("version", "affected", "inside"), [
    ((1, 7, 1), ">=1.7.0 <1.8.0", True), ((1, 8, 0), ">=1.7.0 <1.8.0", False), ((1, 6, 9), ">=1.7.0 <1.8.0", False),
    ((0, 10, 2), "<1.0.0", True), ((1, 0, 0), "<1.0.0", False), ((1, 1, 0), ">=1.1.0, <1.1.1", True),
    ((1, 2, 0), ">1.1.0", True), ((1, 1, 0), "<=1.1.0", True), ((1, 1, 0), "==1.1.0", True),
    ((1, 1, 1), "1.1.0", False),
    ((9, 9, 9), "", True), ((9, 9, 9), "*", True),
])
def test_in_range(version: tuple[int, int, int], affected: str, inside: bool) -> None:
    assert in_range(version, affected) is inside


@pytest.mark.parametrize("affected", ["<", ">=one", "~1.2"])
def test_a_malformed_range_is_refused(affected: str) -> None:
    with pytest.raises(ValueError, match="malformed version range"):
        in_range((1, 0, 0), affected)


def test_the_bugs_of_v1_7_1() -> None:
    bugs = known_bugs("argo-rollouts", STUCK, "v1.7.1")
    assert [(b.number, b.fixed, b.confirmed) for b in bugs] == [
        ("#3534", "v1.8.0", True), ("#3843", "v1.8.0", True), ("#2109", None, True)]


@pytest.mark.parametrize(("version", "numbers"), [
    ("v0.10.2", ["#939", "#3414", "#3534", "#3843"]),
    ("v1.1.0", ["#1624", "#3414", "#3534", "#3843"]),
    ("v1.1.1", ["#3414", "#3534", "#3843"]),
    ("v1.6.5", ["#3414", "#3534", "#3843", "#2109"]),
    ("v1.7.0", ["#3534", "#3843", "#2109"]),
    ("v1.8.0", ["#2109"]),
    ("v1.10.0-rc1", ["#2109"]),
])
def test_fixed_versions_leave_the_list(version: str, numbers: list[str]) -> None:
    assert [b.number for b in known_bugs("argo-rollouts", STUCK, version)] == numbers


@pytest.mark.parametrize("version", [None, "latest", "sha256:0f3c"])
def test_an_unknown_version_gets_every_row_unconfirmed(version: str | None) -> None:
    bugs = known_bugs("argo-rollouts", STUCK, version)
    assert [b.number for b in bugs] == ["#939", "#1624", "#3414", "#3534", "#3843", "#2109"]
    assert not any(b.confirmed for b in bugs)


def test_other_symptoms_and_components_are_apart() -> None:
    assert [b.number for b in known_bugs("argo-rollouts", "rollout-progressing-although-crashlooping", "v1.7.1")] == [
        "#3765"]
    assert known_bugs("argo-cd", STUCK, "v2.13.3") == []


def test_every_row_is_complete() -> None:
    for row in knowledge.load_rows("known_bugs.yaml"):
        assert {"id", "component", "affected", "symptom", "title", "issue", "fixed", "source"} <= set(row), row
        assert row["issue"].startswith(("https://github.com/argoproj/", "https://github.com/argoproj-labs/")), row
        assert row["fixed"] is None or parse_version(row["fixed"]) is not None
        in_range((1, 0, 0), row["affected"])
        if row["fixed"]:  # the fixed release is outside the affected range
            assert not in_range(parse_version(row["fixed"]) or (0, 0, 0), row["affected"]), row["id"]
