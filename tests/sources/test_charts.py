"""Helm charts read from disk into memory: what the analysis gets, in order, and what a bundle's `repo/` may not
reach."""

from __future__ import annotations

import shutil
from pathlib import Path

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.helm import analyse_chart, scan_chart
from argo_doctor.sources import bundle
from argo_doctor.sources.charts import read_chart

CHARTS = Path(__file__).resolve().parents[1] / "helm" / "charts"
UNWANTED_SYNC = Path(__file__).resolve().parents[2] / "examples" / "incidents" / "unwanted-sync"


def test_a_chart_is_read_with_its_unpacked_sub_charts() -> None:
    chart = read_chart(CHARTS / "umbrella")
    assert chart.meta is not None and chart.meta.data["name"] == "shop"
    assert [doc.label for doc in chart.values] == ["values.yaml"]
    assert [t.rel for t in chart.templates] == ["templates/configmap.yaml"]
    assert [[t.rel for t in sub.templates] for sub in chart.subcharts] == [
        ["charts/metrics/templates/_helpers.tpl", "charts/metrics/templates/token.yaml"]
    ]
    assert all(t.text is not None and t.error is None for t in chart.templates)


def test_analysis_of_what_was_read_equals_the_helm_check_of_the_folder() -> None:
    for name in ("webhook-certs", "umbrella", "malformed", "lookup-secret"):
        assert analyse_chart(read_chart(CHARTS / name)) == scan_chart(CHARTS / name)


def test_a_missing_chart_yaml_and_a_binary_template_are_problems_in_place(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "a.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "templates" / "b.yaml").write_bytes(b"\xff\xfe\x00binary")
    chart = read_chart(tmp_path)
    assert chart.meta is None
    assert chart.templates[1].text is None and chart.templates[1].error is not None
    assert chart.templates[1].error.startswith("unreadable template: ")
    report = analyse_chart(chart)
    assert report.problems[0] == ("Chart.yaml", "missing")
    assert ("templates/b.yaml", chart.templates[1].error) in report.problems


def _bundle_with_link_out(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(UNWANTED_SYNC, root)
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ndata:\n  token: {{ randAlphaNum 32 }}\n")
    templates = next((root / "repo").rglob("templates"))
    (templates / "linked.yaml").symlink_to(outside)
    return root


def test_a_bundle_template_linking_out_of_the_bundle_is_not_read(tmp_path: Path) -> None:
    snap = bundle.load([_bundle_with_link_out(tmp_path)])
    (chart,) = snap.charts
    linked = next(t for t in chart.templates if t.rel.endswith("linked.yaml"))
    assert linked.text is None
    assert linked.error == "unreadable template: a link to a file outside the input; skipped"


def test_the_scan_reads_charts_only_through_the_snapshot(tmp_path: Path) -> None:
    snap = bundle.load([_bundle_with_link_out(tmp_path)])
    result = run_scan(snap, select_analyzers(only=("helm-nondeterministic-render",)))
    assert any(p.location.endswith("templates/linked.yaml") and "outside the input" in p.message
               for p in result.problems)
    assert result.findings, "the chart's own templates are still analysed"
    assert not any("linked.yaml" in e.location for f in result.findings for e in f.evidence)
