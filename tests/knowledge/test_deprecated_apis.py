"""The deprecated-API knowledge files are well formed (read with yaml.safe_load, independently of any loader)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

KNOWLEDGE = Path(__file__).resolve().parents[2] / "src" / "argo_doctor" / "knowledge"


def _rows(name: str) -> list[dict[str, Any]]:
    rows = yaml.safe_load((KNOWLEDGE / name).read_text(encoding="utf-8"))
    assert isinstance(rows, list) and rows, f"{name} must be a non-empty list of rows"
    assert all(isinstance(row, dict) for row in rows)
    return rows


APIS = _rows("deprecated_apis.yaml")
CALLERS = _rows("deprecated_callers.yaml")

URL = re.compile(r"^https?://[^\s;]+$")
GROUP = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
RESOURCE = re.compile(r"^[a-z][a-z0-9]*$")
RELEASE = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$")
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?$")
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


def _label(row: dict[str, Any]) -> str:
    if "id" in row:
        return str(row["id"])
    return f"{row.get('group')}/{row.get('version')} {row.get('kind')} ({row.get('component') or 'kubernetes'})"


def _release(value: str) -> tuple[int, ...]:
    return tuple(int(part) for part in value.split("."))


def _urls(source: Any) -> list[str]:
    return [part.strip() for part in str(source or "").split(";") if part.strip()]


def _semver_key(value: str) -> tuple[Any, ...]:
    match = SEMVER.match(value)
    if not match:
        raise ValueError(f"not a semantic version: {value!r}")
    major, minor, patch, pre = match.groups()
    if pre is None:  # a release sorts after all of its pre-releases
        return (int(major), int(minor), int(patch), 1, ())
    idents = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, idents)


def _ranges(value: Any) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"versions must be a non-empty list of [min, max) pairs, got {value!r}")
    out = []
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, str) for v in pair)):
            raise ValueError(f"not a [min_inclusive, max_exclusive] pair of strings: {pair!r}")
        low, high = (_semver_key(v) for v in pair)
        if not low < high:
            raise ValueError(f"empty range {pair!r}")
        out.append((low, high))
    return out


def _in_ranges(version: str, value: Any) -> bool:
    key = _semver_key(version.removeprefix("v").split("+", 1)[0])
    return any(low <= key < high for low, high in _ranges(value))


@pytest.mark.parametrize("row", APIS + CALLERS, ids=_label)
def test_every_row_has_a_source_url(row: dict[str, Any]) -> None:
    urls = _urls(row.get("source"))
    assert urls, f"{_label(row)}: no source"
    assert all(URL.match(u) for u in urls), f"{_label(row)}: source is not a URL: {row['source']!r}"
    for key in ("deprecated_in_source", "replacement_group_version_source"):
        if row.get(key) is not None:
            assert URL.match(str(row[key])), f"{_label(row)}: {key} is not a URL"
    for url in row.get("see_also") or []:
        assert URL.match(url), f"{_label(row)}: see_also entry is not a URL: {url!r}"


@pytest.mark.parametrize("row", APIS, ids=_label)
def test_api_rows_are_well_formed(row: dict[str, Any]) -> None:
    group, version, kind, resource = row["group"], row["version"], row["kind"], row["resource"]
    assert isinstance(group, str) and (group == "" or GROUP.match(group)), f"bad group {group!r}"
    assert isinstance(version, str) and VERSION.match(version), f"bad version {version!r}"
    assert isinstance(kind, str) and KIND.match(kind), f"bad kind {kind!r}"
    assert isinstance(resource, str) and RESOURCE.match(resource), f"bad resource {resource!r}"
    assert resource.endswith("s"), f"resource {resource!r} should be the plural"
    for key in ("deprecated_in", "removed_in", "replacement_available_in", "dropped_from_crds_in", "introduced_in",
                "replacement_group_version_since"):
        value = row.get(key)
        assert value is None or (isinstance(value, str) and RELEASE.match(value)), (
            f"{key}={value!r} must be a quoted release"
        )
    assert row.get("deprecated_in") or row.get("removed_in"), "a row must be deprecated, removed, or both"
    replacement = row.get("replacement")
    if replacement is None:
        assert row.get("replacement_available_in") is None
    else:
        gv, _, new_kind = replacement.partition(" ")
        new_group, _, new_version = gv.rpartition("/")
        assert new_group == "" or GROUP.match(new_group), f"bad replacement group in {replacement!r}"
        assert VERSION.match(new_version) and KIND.match(new_kind), (
            f"replacement must read 'group/version Kind': {replacement!r}"
        )
        assert (new_group, new_version, new_kind) != (group, version, kind)
        assert row.get("replacement_available_in"), "a replacement needs replacement_available_in"
    assert str(row.get("notes") or "").strip(), "notes must not be empty"
    assert "\n" not in str(row["notes"]), "notes is one line"
    component = row.get("component")
    assert component is None or (isinstance(component, str) and component.strip())


@pytest.mark.parametrize("row", APIS, ids=_label)
def test_removed_not_before_deprecated(row: dict[str, Any]) -> None:
    deprecated, removed = row.get("deprecated_in"), row.get("removed_in")
    if deprecated and removed:
        assert _release(removed) >= _release(deprecated)
    if removed and row.get("dropped_from_crds_in"):
        assert _release(row["dropped_from_crds_in"]) >= _release(removed)


@pytest.mark.parametrize("row", APIS, ids=_label)
def test_introduced_before_deprecated_and_group_versions_sourced(row: dict[str, Any]) -> None:
    introduced, deprecated, removed = row.get("introduced_in"), row.get("deprecated_in"), row.get("removed_in")
    if introduced:
        assert not row.get("component") and row.get("deprecated_in_source"), "introduced_in comes with its source"
        assert all(_release(introduced) <= _release(later) for later in (deprecated, removed) if later)
    since = row.get("replacement_group_version_since")
    if since:
        assert not row.get("component") and row.get("replacement_group_version_source")
        assert _release(since) <= _release(row["replacement_available_in"])
        group_version = row["replacement"].split(" ")[0]
        assert group_version.split("/")[-1] in row["replacement_group_version_source"]
    else:
        assert row.get("replacement_group_version_source") is None


def test_new_group_versions_agree_across_rows() -> None:
    since: dict[str, set[str]] = {}
    for row in APIS:
        if row.get("replacement_group_version_since"):
            since.setdefault(row["replacement"].split(" ")[0], set()).add(row["replacement_group_version_since"])
    assert {gv: v for gv, v in since.items() if len(v) > 1} == {}
    assert since["policy/v1"] == {"1.21"} and since["autoscaling/v2"] == {"1.23"}


@pytest.mark.parametrize("row", APIS, ids=_label)
def test_replacement_available_before_removal(row: dict[str, Any]) -> None:
    available, removed = row.get("replacement_available_in"), row.get("removed_in")
    if available and removed:
        assert _release(available) <= _release(removed)


def test_no_duplicate_group_version_kind() -> None:
    keys = Counter((r["group"], r["version"], r["kind"], r.get("component")) for r in APIS)
    assert [k for k, n in keys.items() if n > 1] == []


def test_group_version_resource_maps_to_one_kind() -> None:
    kinds: dict[tuple[str, str, str, Any], set[str]] = {}
    for r in APIS:
        kinds.setdefault((r["group"], r["version"], r["resource"], r.get("component")), set()).add(r["kind"])
    assert {k: v for k, v in kinds.items() if len(v) > 1} == {}


def test_guide_releases_are_covered() -> None:
    kubernetes = [r for r in APIS if not r.get("component")]
    removed = Counter(r["removed_in"] for r in kubernetes if r.get("removed_in"))
    assert set(removed) >= {"1.16", "1.22", "1.25", "1.26", "1.27", "1.29", "1.32"}
    gvks = {(r["group"], r["version"], r["kind"]) for r in kubernetes}
    for expected in [
        ("extensions", "v1beta1", "Ingress"),
        ("networking.k8s.io", "v1beta1", "Ingress"),
        ("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition"),
        ("extensions", "v1beta1", "PodSecurityPolicy"),
        ("policy", "v1beta1", "PodSecurityPolicy"),
        ("batch", "v1beta1", "CronJob"),
        ("autoscaling", "v2beta2", "HorizontalPodAutoscaler"),
        ("storage.k8s.io", "v1beta1", "CSIStorageCapacity"),
        ("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration"),
    ]:
        assert expected in gvks


def test_add_on_rows_name_their_component() -> None:
    core_groups = {r["group"] for r in APIS if not r.get("component")}
    for r in APIS:
        if r["group"].endswith("cert-manager.io"):
            assert r.get("component") == "cert-manager"
        if r.get("component"):
            assert r["group"] not in core_groups, f"{_label(r)} reuses a Kubernetes group"


@pytest.mark.parametrize("row", CALLERS, ids=_label)
def test_caller_rows_are_well_formed(row: dict[str, Any]) -> None:
    assert re.match(r"^[a-z0-9][a-z0-9-]*$", row["id"])
    assert isinstance(row["component"], str) and "/" not in row["component"]
    _ranges(row["versions"])
    request = row["request"]
    for key in ("group", "version", "resource"):
        assert isinstance(request[key], str)
    assert request["group"] in ("*", "") or GROUP.match(request["group"])
    assert request["version"] == "*" or VERSION.match(request["version"])
    assert request["resource"] == "*" or RESOURCE.match(request["resource"])
    assert request["verbs"] and set(request["verbs"]) <= VERBS
    assert request.get("subresource") is None or RESOURCE.match(request["subresource"])
    assert isinstance(request["named"], bool)
    assert isinstance(row["harmful"], bool)
    for key in ("code_path", "when", "why"):
        assert str(row.get(key) or "").strip(), f"{key} must not be empty"
    if "*" in (request["group"], request["version"], request["resource"]):
        assert row.get("deprecated_only") is True, "a wildcard request must be limited to deprecated APIs"
    else:
        gv = {(r["group"], r["version"], r["resource"]) for r in APIS}
        assert (request["group"], request["version"], request["resource"]) in gv, (
            "request must name a known deprecated API"
        )


def test_caller_ids_are_unique() -> None:
    ids = Counter(r["id"] for r in CALLERS)
    assert [i for i, n in ids.items() if n > 1] == []


def test_incident_1_versions_are_attributed() -> None:
    by_id = {r["id"]: r for r in CALLERS}
    crd = by_id["argocd-ensure-crd-ready"]["versions"]
    assert _in_ranges("v2.0.5", crd)
    assert _in_ranges("v2.2.7+1234abc", crd)
    assert _in_ranges("v2.3.0-rc5", crd)
    assert not _in_ranges("v2.2.8", crd)
    assert not _in_ranges("v2.3.0", crd)
    assert not _in_ranges("v2.4.0", crd)
    assert _in_ranges("v2.0.5", by_id["argocd-discovery-watch"]["versions"])


@pytest.mark.parametrize(
    "bad",
    [[], "1.0.0", [["1.0.0"]], [["2.0.0", "1.0.0"]], [["1.0", "2.0.0"]], [["1.0.0", "1.0.0"]], [[1, 2]]],
)
def test_malformed_version_ranges_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError):
        _ranges(bad)
