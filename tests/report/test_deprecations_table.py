"""report.deprecations: the table shows KIND, NAMESPACE, NAME, API VERSION, REPLACEMENT and REMOVED IN, grouped by the
release that removes the API (soonest first, then the add-ons' releases, then the APIs no release removes), fits 80
and 200 columns; `wide` adds where and how each use was seen; JSON and Markdown do not change with the width."""

from __future__ import annotations

import re
from typing import Any

import pytest

from argo_doctor.deprecations import Use, Version, lookup, object_uses, scan_paths
from argo_doctor.helm.scan import chart_template_apis
from argo_doctor.report.deprecations import render
from tests.conftest import EXAMPLES
from tests.report.fitting import WIDTHS, too_wide, whole_or_cut

CALLERS = EXAMPLES / "incidents" / "deprecated-callers"
SIX = ["KIND", "NAMESPACE", "NAME", "API VERSION", "REPLACEMENT", "REMOVED IN"]
TARGET: Version = (1, 25)
SPLIT = re.compile(r"\s{3,}")


@pytest.fixture(scope="module")
def uses() -> list[Use]:
    found, problems = scan_paths([CALLERS], TARGET, chart_template_apis)
    assert found and not problems
    return found


def groups(text: str) -> dict[str, list[list[str]]]:
    """Heading → the cells of its rows (its header row first)."""
    out: dict[str, list[list[str]]] = {}
    heading = ""
    for line in text.split("\n")[1:]:
        if line.startswith(">>>"):
            heading = line
            out[heading] = []
        elif line:
            out[heading].append(SPLIT.split(line))
    return out


def test_grouped_by_the_release_that_removes_them(uses: list[Use]) -> None:
    text = render(uses, [], TARGET, "table")
    assert text.split("\n")[0] == "target Kubernetes version: 1.25"
    found = groups(text)
    assert list(found) == [">>> removed in 1.22 (the target 1.25 no longer serves it) <<<",
                           ">>> removed in 1.25 (the target 1.25 no longer serves it) <<<"]
    for heading, rows in found.items():
        assert rows[0] == SIX and all(len(row) == 6 for row in rows[1:])
        assert {row[5] for row in rows[1:]} == {heading.split()[3]}
    assert sum(len(rows) - 1 for rows in found.values()) == len(uses)
    ingress = [row for row in found[next(iter(found))] if row[0] == "Ingress" and row[1] == "web"]
    assert ingress and all(row[2:] == ["web", "extensions/v1beta1", "networking.k8s.io/v1 (1.19+)", "1.22"]
                           for row in ingress)
    crds = [row for row in found[next(iter(found))] if row[0] == "CustomResourceDefinition" and row[1] == "-"]
    assert {"certificates.cert-manager.io", "deprecated-callers/metrics/apiserver.prom:76"} <= {r[2] for r in crds}
    psp = next(row for row in found[list(found)[1]] if row[0] == "PodSecurityPolicy")
    assert psp[4] == "-"  # no replacement API


@pytest.mark.parametrize("width", WIDTHS)
def test_the_table_fits(uses: list[Use], width: int) -> None:
    text = render(uses, [], TARGET, "table", width)
    assert not too_wide(text, width)
    full = groups(render(uses, [], TARGET, "table"))
    fitted = groups(text)
    assert list(fitted) == list(full)
    for heading, rows in fitted.items():
        for row, whole in zip(rows[1:], full[heading][1:], strict=True):
            assert all(whole_or_cut(cell, text) for cell, text in zip(row[:4], whole[:4], strict=True))
            assert row[5] == whole[5]
            if width == 200:  # kind, namespace, name and API version whole
                assert row[:4] == whole[:4]


def test_wide_adds_where_and_how_each_use_was_seen(uses: list[Use]) -> None:
    text = render(uses, [], TARGET, "table", 80, wide=True)
    for rows in groups(text).values():
        assert rows[0] == [*SIX, "WHERE", "HOW"]
    assert all(u.location in text and u.how in text for u in uses)
    assert max(len(line) for line in text.split("\n")) > 300


def _use(raw: dict[str, Any], target: Version | None) -> Use:
    (use,) = object_uses(raw, f"objects/{raw['kind'].lower()}.yaml:1", target)
    return use


@pytest.mark.parametrize("target", [None, (1, 22)])
def test_add_ons_after_kubernetes_and_no_removal_last(target: Version | None) -> None:
    meta = {"name": "web", "namespace": "shop"}
    uses = [
        _use({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "etcd-0"}}, target),
        _use({"apiVersion": "cert-manager.io/v1alpha2", "kind": "Certificate", "metadata": meta}, target),
        _use({"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": meta}, target),
        _use({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": meta}, target),
    ]
    api = lookup("extensions/v1beta1", "Ingress")
    assert api is not None
    uses.append(Use(api, uses[-1].status, "chart/templates/ingress.yaml:3", "template, may be used", "Ingress", True))
    found = groups(render(uses, [], target, "table", 200))
    if target is None:
        assert list(found) == [">>> removed in 1.22 <<<", ">>> removed in 1.25 <<<",
                               ">>> removed in cert-manager 1.6 <<<", ">>> no removal planned <<<"]
    else:
        assert list(found) == [">>> removed in 1.22 (the target 1.22 no longer serves it) <<<",
                               ">>> removed in 1.25 (the target 1.22 still serves it, deprecated) <<<",
                               ">>> removed in cert-manager 1.6 <<<", ">>> no removal planned <<<"]
    ingresses, _, certificates, statuses = found.values()
    assert [row[1:3] for row in ingresses[1:]] == [["shop", "web"],  # the certain use first
                                                   ["-", "chart/templates/ingress.yaml:3 (may be used)"]]
    assert certificates[1][5] == "cert-manager 1.6"
    assert statuses[1][:3] == ["ComponentStatus", "-", "etcd-0"]


def test_json_and_markdown_do_not_change_with_the_width(uses: list[Use]) -> None:
    for output in ("json", "markdown"):
        assert render(uses, [], TARGET, output, 80) == render(uses, [], TARGET, output) \
            == render(uses, [], TARGET, output, 200, wide=True)
    assert render([], [], TARGET, "table", 80) == "target Kubernetes version: 1.25\nno deprecated API found"


def test_a_name_without_room_keeps_its_start_and_end() -> None:
    """Six columns of a CustomResourceDefinition do not fit 80 columns: the widest are cut in their middle."""
    raw = {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "clusterwidenetworkpolicies.networking.very-long-vendor-name.example.com"}}
    text = render([_use(raw, TARGET)], [], TARGET, "table", 80)
    assert not too_wide(text, 80)
    (row,) = groups(text)[">>> removed in 1.22 (the target 1.25 no longer serves it) <<<"][1:]
    assert row[2] != raw["metadata"]["name"] and whole_or_cut(row[2], raw["metadata"]["name"])
    assert row[5] == "1.22"
