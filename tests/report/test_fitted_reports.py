"""The `map`, `audit` and `helm-check` texts fit 80 and 200 columns: a component's name, an audit entry's time,
rollout and action stay whole, prose is wrapped without losing a word; `wide` (and no width) is the text as before."""

from __future__ import annotations

from dataclasses import replace

import pytest

from argo_doctor import helm
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.facts.installation import InstalledComponent, component_permissions, installation
from argo_doctor.model import Finding
from argo_doctor.report import audit
from argo_doctor.report import map as map_report
from argo_doctor.report.helm import report_text
from argo_doctor.report.map import PermissionsByComponent
from argo_doctor.sources import bundle
from argo_doctor.sources.redact import SecretScrubber, clean
from tests.conftest import BUNDLES, ROOT
from tests.report.fitting import WIDTHS, too_wide
from tests.report.test_audit_report import entries

MAPS = ("map-updater-v0", "map-updater-v1")
CHARTS = ROOT / "tests" / "helm" / "charts"
MapArgs = tuple[list[InstalledComponent], PermissionsByComponent, list[Finding], SecretScrubber]


@pytest.fixture(scope="module")
def maps() -> dict[str, MapArgs]:
    """The arguments of `map.render` for each bundle."""
    out: dict[str, MapArgs] = {}
    for name in MAPS:
        snap = bundle.load([BUNDLES / name])
        comps = installation(snap)
        found = run_scan(snap, select_analyzers(("rbac-missing", "rbac-overbroad"))).findings
        out[name] = (comps, component_permissions(snap, comps), found, snap.scrubber)
    return out


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_map_fits(maps: dict[str, MapArgs], name: str, width: int) -> None:
    comps, perms, found, scrubber = maps[name]
    text = map_report.render("table", comps, perms, found, scrubber, width)
    whole = map_report.render("table", comps, perms, found, scrubber)
    assert not too_wide(text, width) and too_wide(whole, width)
    lines = text.split("\n")
    doc = map_report.map_json(comps, perms, found, scrubber)
    rows = [line for line in lines if line and not line.startswith(" ") and line.split()[0] in
            {c["name"] for c in doc["components"]}]
    assert [row.split()[:2] for row in rows] == [[c["name"], c["namespace"]] for c in doc["components"]]
    if width == 200:
        assert lines[0].split() == list(map_report.HEADER)
    else:  # the component, nodes and ServiceAccount under each component's line
        assert lines[0].split() == ["NAME", "NAMESPACE", "VERSION", "REPLICAS"]
        for row, comp in zip(rows, doc["components"], strict=True):
            under = _words(lines[lines.index(row) + 1] + " " + lines[lines.index(row) + 2])
            assert under.startswith(f"{comp['component']} on {','.join(comp['nodes']) or '-'}, ServiceAccount "
                                    f"{comp['serviceAccount']}")
    flat = _words(text)
    for comp in doc["components"]:  # prose is wrapped, not cut
        for item in comp["integrations"]:
            assert f"auth: {_words(item['auth'])}" in flat and f"for: {_words(item['purpose'])}" in flat


@pytest.mark.parametrize("name", MAPS)
def test_the_wide_map_is_the_map_as_before(maps: dict[str, MapArgs], name: str) -> None:
    comps, perms, found, scrubber = maps[name]
    assert map_report.render("table", comps, perms, found, scrubber, 80, wide=True) \
        == map_report.render("table", comps, perms, found, scrubber) \
        == map_report.map_table(comps, perms, found, scrubber)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_audit_trail_fits(width: int) -> None:
    trail = entries() * 3
    text = audit.render(trail, "table", width)
    assert not too_wide(text, width)
    lines = text.split("\n")
    heads = [line for line in lines if not line.startswith(" ")]
    assert len(heads) == len(trail) + 1
    for line, entry in zip(heads[1:], clean(trail, human=True), strict=True):
        assert line.split()[1:4] == [entry.instance, entry.rollout, entry.action]
    if width == 80:  # the reason under its entry
        assert lines[1] == "    REASON" and lines[3].startswith("    Degraded (ProgressDeadlineExceeded)")
    else:
        assert "all 3 pods are ready   18.5 ms" in lines[1]


def test_the_wide_audit_trail_is_as_before() -> None:
    assert audit.render(entries(), "table", 80, wide=True) == audit.render(entries(), "table")


@pytest.mark.parametrize("chart", ["webhook-certs", "gated-platform", "umbrella", "malformed"])
@pytest.mark.parametrize("width", WIDTHS)
def test_helm_check_fits_and_loses_no_word(chart: str, width: int) -> None:
    report = helm.scan_chart(CHARTS / chart, (), False, (), (), strict=True)
    text = report_text(report, width)
    whole = report_text(report)
    assert not too_wide(text, width) and _words(text) == _words(whole)
    assert report_text(report, 80, wide=True) == whole
    if width == 80 and chart == "webhook-certs":
        assert too_wide(whole, 80) and len(text.split("\n")) > len(whole.split("\n"))


def test_helm_check_cuts_the_lines_of_a_render_diff() -> None:
    report = helm.scan_chart(CHARTS / "webhook-certs", (), False, (), (), strict=True)
    diff = "--- render 1\n+++ render 2\n-  caBundle: " + "A" * 300 + "\n+  caBundle: " + "B" * 300
    text = report_text(replace(report, render_diff=diff), 80)
    assert not too_wide(text, 80)
    tail = text.split("\n")[-4:]
    assert tail[:2] == ["--- render 1", "+++ render 2"] and tail[2].startswith("-  caBundle: AAA")
    assert tail[3].endswith("B…") and len(tail[3]) == 80
    assert report_text(replace(report, render_diff=diff)).endswith(diff)
