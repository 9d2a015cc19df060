"""`semverCompare` constraints as helm checks them (Masterminds/semver v3 rules, see helm.capabilities)."""

from __future__ import annotations

import pytest

from argo_doctor.helm.capabilities import parse_version, satisfies


@pytest.mark.parametrize(
    ("constraint", "version", "expected"),
    [
        # the chart idioms: `-0` lets prereleases (EKS, GKE builds) through
        (">=1.19-0", "v1.25.0", True),
        (">=1.19-0", "v1.18.20", False),
        (">=1.19-0", "v1.25.16-eks-8ccc7ba", True),
        (">=1.19", "v1.25.16-eks-8ccc7ba", False),
        ("<1.22-0", "v1.21.14-gke.3000", True),
        ("<1.22", "v1.21.14-gke.3000", False),
        (">= 1.21-0, < 1.25-0", "v1.24.17-eks-1", True),
        ("<1.25-0", "v1.25.0", False),
        ("<1.25-0", "v1.25.0-rc.1", False),  # "0" sorts before any other prerelease
        ("<1.25-0", "v1.24.9-rc.1", True),
        ("v1.29.0", "1.29.0", True),
        ("=1.29.0", "1.29.1", False),
        # build metadata is ignored
        (">=1.20", "v1.28.3+k3s2", True),
        ("1.28.3", "v1.28.3+rke2r1", True),
        # hyphen ranges need spaces around the hyphen
        ("1.2 - 1.4.5", "1.4.5", True),
        ("1.2 - 1.4.5", "1.4.6", False),
        ("2.3.4 - 4.5", "4.5.0", True),
        ("2.3.4 - 4.5", "4.5.1", True),  # `<= 4.5` takes every 4.5.x
        ("2.3.4 - 4.5", "4.6.0", False),
        ("1.2-1.4.5", "1.4.0", False),  # not a range: 1.2 with prerelease 1.4.5
        # wildcards and missing parts
        ("1.2.x", "1.2.9", True),
        ("1.2.x", "1.3.0", False),
        ("=1.27", "1.27.4", True),
        (">= 1.2.x", "1.5.0", True),
        ("<= 2.x", "2.9.9", True),
        ("<= 2.x", "3.0.0", False),
        ("*", "0.0.1", True),
        ("> 1.21", "1.21.5", False),
        ("> 1.21", "1.22.0", True),
        ("> 1", "1.30.0", False),
        ("!= 1.2.x", "1.2.7", False),
        ("!= 1.2.x", "1.3.0", True),
        # tilde: patch-level ranges, major-level without a minor
        ("~1.2.3", "1.2.9", True),
        ("~1.2.3", "1.3.0", False),
        ("~1.2.3", "1.2.2", False),
        ("~1", "1.99.0", True),
        ("~1", "2.0.0", False),
        ("~2.3", "2.3.7", True),
        ("~2.3", "2.4.0", False),
        ("~>1.2.x", "1.2.0", True),
        # caret: same major once >= 1.0.0, narrower below
        ("^1.2.3", "1.9.0", True),
        ("^1.2.3", "2.0.0", False),
        ("^1.2.3", "1.2.2", False),
        ("^2.x", "2.0.0", True),
        ("^0.2.3", "0.2.9", True),
        ("^0.2.3", "0.3.0", False),
        ("^0.0.3", "0.0.3", True),
        ("^0.0.3", "0.0.4", False),
        ("^0.0", "0.0.9", True),
        ("^0.0", "0.1.0", False),
        ("^0", "0.9.0", True),
        ("^0", "1.0.0", False),
        # OR of AND groups, space or comma separated
        (">= 1.2 < 3.0.0 || >= 4.2.3", "2.5.0", True),
        (">= 1.2 < 3.0.0 || >= 4.2.3", "3.5.0", False),
        (">= 1.2, < 3.0.0 || >= 4.2.3", "4.3.0", True),
        ("<1.16-0 || >=1.30-0", "v1.29.0", False),
    ],
)
def test_constraints(constraint: str, version: str, expected: bool) -> None:
    assert satisfies(constraint, version) is expected


def test_a_prerelease_in_one_comparison_lets_prereleases_through_its_whole_group() -> None:
    """The v3.4 rule: the prerelease flag belongs to the AND group, not to each comparison."""
    assert satisfies(">=1.19-0 <1.30", "v1.25.3-eks-1") is True
    assert satisfies(">=1.19 <1.30 || >=1.19-0", "v1.25.3-eks-1") is True
    assert satisfies(">=1.19 <1.30 || >=2.0", "v1.25.3-eks-1") is False


@pytest.mark.parametrize(("constraint", "version"), [(">=1.19", "latest"), ("bogus", "1.2.3"), ("", "1.2.3"),
                                                     (">=1.19 ||", "1.20.0")])
def test_invalid_input_is_an_error_as_in_helm(constraint: str, version: str) -> None:
    with pytest.raises(ValueError):
        satisfies(constraint, version)


def test_versions_are_read_loosely_as_helm_does() -> None:
    assert parse_version("v1.29") == parse_version("1.29.0")
    assert parse_version("v1.25.16-eks-8ccc7ba") is not None
    assert parse_version("v1.25.16-eks-8ccc7ba").pre == "eks-8ccc7ba"  # type: ignore[union-attr]
    assert parse_version("1.x") is None
