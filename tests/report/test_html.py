"""The HTML report without a browser: the page of every example is self-contained and small, holds every finding,
draws one arrow per chain edge, keeps hostile text inert, caps evidence rows and folds groups of one pattern.
tests/report/test_html_browser.py opens the pages in Chromium."""

from __future__ import annotations

import io
import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, Finding, Ref, Remediation, Severity, TimelineEntry
from argo_doctor.report.html import EVIDENCE_SHOWN, axis_cuts, render, script_json
from argo_doctor.report.options import ReportOptions
from argo_doctor.snapshot import Snapshot
from tests.conftest import EXAMPLES

EXAMPLE_BUNDLES = sorted(p.parent for p in EXAMPLES.rglob("bundle.yaml"))
HOSTILE = '</script><script>alert(1)</script><!-- <img src="https://evil.example/x.png" onerror=alert(2)> &amp;'


def run(*args: str) -> str:
    """stdout of a command that exits 0 or 1 (findings)."""
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), (args, result.output, result.exception)
    return result.stdout


def blob(page: str) -> dict[str, Any]:
    """The JSON the page's script draws from."""
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert found, "no data blob"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of <script> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def parse(page: str) -> Tags:
    """The page's tags."""
    tags = Tags()
    tags.feed(page)
    return tags


def chain_edges(doc: dict[str, Any]) -> int:
    """Edges of the causal chains of `scan -o json`, counting only steps with a time (those on the timeline)."""
    return sum(max(0, sum(1 for s in f["chain"] if f["evidence"][s["evidence"]]["time"]) - 1) for f in doc["findings"])


@pytest.mark.parametrize("bundle", EXAMPLE_BUNDLES, ids=lambda p: p.name)
def test_every_example_renders_a_small_self_contained_page(bundle: Path) -> None:
    page = run("scan", str(bundle), "-o", "html", "--fail-on", "never")
    doc = json.loads(run("scan", str(bundle), "-o", "json", "--fail-on", "never"))
    assert len(page.encode()) < 1_000_000
    tags = parse(page)
    names = [name for name, _ in tags.tags]
    # the policy comes before any style or script, and allows nothing from elsewhere
    assert names[:3] == ["html", "head", "meta"] and tags.tags[3][1].get("http-equiv") == "Content-Security-Policy"
    policy = tags.tags[3][1]["content"] or ""
    assert "default-src 'none'" in policy and "http" not in policy and "unsafe-inline" not in policy
    assert "link" not in names and "img" not in names and "iframe" not in names
    assert not [attrs for _, attrs in tags.tags if "src" in attrs]
    assert sum(1 for name, attrs in tags.tags if name == "details" and "finding" in (attrs.get("class") or "")) \
        == len(doc["findings"])
    data = blob(page)
    assert data["findingCount"] == len(doc["findings"])
    assert len(data["edges"]) == chain_edges(doc)
    assert len(data["entries"]) == len(doc["timeline"])
    assert {e["component"] for e in data["entries"]} == set(data["lanes"])


def test_the_unwanted_sync_chain_is_drawn_with_its_gaps() -> None:
    """The reference incident: cache miss → helm template → sync → webhook failure → Workflow failed."""
    page = run("scan", str(EXAMPLES / "incidents" / "unwanted-sync"), "-o", "html", "--fail-on", "never")
    data = blob(page)
    edges = [e for e in data["edges"] if e["finding"].startswith("auto-sync-without-change:")]
    path = [data["entries"][edges[0]["from"]]] + [data["entries"][e["to"]] for e in edges]
    assert [e["component"] for e in path[:3]] == ["repo-server", "repo-server", "application-controller"]
    assert "manifest cache miss" in path[0]["excerpt"] and "helm template" in path[1]["excerpt"]
    assert "x509" in path[-2]["excerpt"]
    assert [e["gap"] for e in edges][:2] == [1.943, 0.502]
    assert all(e["gap"] >= 0 for e in edges)
    assert "argo-cd v2.9.6 (application-controller, repo-server, server)" in page
    assert "2026-11-22T15:30:00Z" in page and "prod-us-1 v1.29.8" in page


def test_timeline_html_keeps_the_window_it_was_asked_for() -> None:
    bundle = str(EXAMPLES / "incidents" / "unwanted-sync")
    every = json.loads(run("timeline", bundle, "-o", "json"))
    some = json.loads(run("timeline", bundle, "-o", "json", "--around", "2026-11-22T15:03:00Z", "--window", "20s"))
    page = run("timeline", bundle, "-o", "html", "--around", "2026-11-22T15:03:00Z", "--window", "20s")
    data = blob(page)
    assert data["around"] == "2026-11-22T15:03:00Z" and data["window"] == "20s"
    assert len(data["entries"]) == len(some["timeline"]) < len(every["timeline"])
    assert [e["location"] for e in data["entries"]] == [e["location"] for e in some["timeline"]]
    assert page.count('class="finding ') == len(some["chains"])


def test_script_json_cannot_close_its_element() -> None:
    doc = {"text": HOSTILE, "line": "a\u2028b"}
    text = script_json(doc)
    assert "</" not in text and "<!--" not in text and "<" not in text and "\u2028" not in text
    assert json.loads(text) == doc


def make_finding(title: str, evidence: int = 2, severity: Severity = Severity.HIGH, name: str = "web") -> Finding:
    """A finding of an Application whose evidence lines and command carry hostile markup."""
    start = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)
    return Finding(
        rule="auto-sync-without-change", severity=severity, title=title, summary=f"summary of {title} {HOSTILE}",
        objects=[Ref("argoproj.io/v1alpha1", "Application", "argocd", name)],
        evidence=[Evidence("log", f"logs/argocd/repo/repo-server.log:{i + 1}", f"line {i} {HOSTILE}",
                           start + timedelta(seconds=i)) for i in range(evidence)],
        remediation=Remediation(text="Fix it.", command=f"kubectl get app {name} {HOSTILE}", patch="spec: {}\n",
                                docs=("https://argo-cd.readthedocs.io/en/stable/",)),
        chain=[0, 1] if evidence > 1 else [],
    )


def render_page(findings: list[Finding], options: ReportOptions | None = None) -> str:
    """The HTML report of these findings, with their timed evidence as the timeline."""
    entries = [TimelineEntry(e.time, "repo-server", e.kind, e.location, e.excerpt, (f.id,))
               for f in findings for e in f.evidence if e.time is not None]
    out = io.StringIO()
    render(ScanResult(Snapshot("hostile-bundle"), findings, entries, []), out, options)
    return out.getvalue()


def test_hostile_text_stays_text() -> None:
    page = render_page([make_finding("a title with <b>markup</b>", evidence=3)])
    tags = parse(page)
    assert [name for name, _ in tags.tags].count("script") == 2  # the data blob and the report's own script
    assert "img" not in [name for name, _ in tags.tags] and "<b>" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page and "&amp;amp;" in page
    data = blob(page)
    assert data["entries"][0]["excerpt"] == f"line 0 {HOSTILE}"


def test_evidence_rows_are_capped_but_all_in_the_file() -> None:
    page = render_page([make_finding("many lines", evidence=EVIDENCE_SHOWN + 30)])
    first, more = re.search(r'<table class="evidence">.*?<tbody>(.*?)</tbody><tbody class="more" hidden>(.*?)</tbody>',
                            page, re.S).groups()  # type: ignore[union-attr]
    assert first.count("<tr>") == EVIDENCE_SHOWN and more.count("<tr>") == 30
    assert f"show all {EVIDENCE_SHOWN + 30} rows" in page
    assert 'class="show-all"' not in render_page([make_finding("few lines", evidence=3)])


def test_findings_of_one_pattern_fold_into_a_group_holding_every_member() -> None:
    findings = [make_finding(f"app-{i} auto-synced {i + 2} times without a new commit", name=f"app-{i}",
                         severity=Severity.HIGH if i < 2 else Severity.MEDIUM) for i in range(8)]
    findings.append(make_finding("other", severity=Severity.LOW))
    page = render_page(findings)
    start = page.index('<details class="group sev-high" data-group="')
    alone = page.rindex('<details class="finding ', 0, page.index('<span class="title">other</span>'))
    group = page[start:alone]  # the group comes first (its worst member is more severe), then the lone finding
    assert "8 × high" in group and "… auto-synced N times without a new commit" in group
    assert page.count('<details class="finding ') == 9 and group.count('<details class="finding ') == 8
    assert '<details class="group-rest"><summary>show all 8' in page
    expanded = render_page(findings, ReportOptions(expand=frozenset({"auto-sync-without-change"})))
    assert re.search(r'<details class="group sev-high" data-group="[^"]+" open>', expanded)
    assert 'class="group-rest"' not in expanded and expanded.count('<details class="finding ') == 9


def test_counts_are_singular_for_one_and_an_empty_scan_has_no_expand_buttons() -> None:
    one = render_page([make_finding("one line", evidence=1)])
    assert "(1 fact, 0 chain arrows)" in one and "1 facts" not in one
    assert 'data-act="expand-all"' in one
    bundle = str(EXAMPLES / "argocd-basic")
    page = run("timeline", bundle, "-o", "html", "--around", "2026-11-18T09:31:12Z", "--window", "1s")
    assert "(1 fact, 0 chain arrows)" in page
    empty = render_page([])
    assert "0 objects, 0 log files, 0 audit files" in empty and "No finding." in empty
    assert 'data-act="expand-all"' not in empty and 'data-act="collapse-all"' not in empty


def test_an_empty_window_says_how_many_facts_lie_outside_it() -> None:
    bundle = str(EXAMPLES / "incidents" / "unwanted-sync")
    every = json.loads(run("timeline", bundle, "-o", "json"))["timeline"]
    page = run("timeline", bundle, "-o", "html", "--around", "2030-01-01T00:00:00Z", "--window", "2m")
    assert f"None of the {len(every)} timestamped facts of the input is in the window (2m around " \
           "2030-01-01T00:00:00Z) or of the components chosen." in page
    assert "No timestamped fact" not in page
    other = run("timeline", bundle, "-o", "html", "--component", "no-such-component")
    assert f"None of the {len(every)} timestamped facts of the input is of the components chosen." in other


OLD_EVENT = """apiVersion: v1
kind: Event
metadata:
  name: frontend.17e2c4a1b6d0f3aa
  namespace: storefront
  creationTimestamp: "2026-08-28T09:12:00Z"
involvedObject:
  apiVersion: argoproj.io/v1alpha1
  kind: Rollout
  name: frontend
  namespace: storefront
reason: RolloutUpdated
message: Rollout updated to revision 3
type: Normal
count: 1
firstTimestamp: "2026-08-28T09:12:00Z"
lastTimestamp: "2026-08-28T09:12:00Z"
"""
"""A stale Event, three months older than everything else in stuck-rollout (an events TTL raised, a mirror)."""


def with_old_event(tmp_path: Path) -> Path:
    """The stuck-rollout incident with one Event three months older than its other facts."""
    bundle = tmp_path / "stuck-rollout-old-event"
    shutil.copytree(EXAMPLES / "incidents" / "stuck-rollout", bundle)
    (bundle / "objects" / "storefront" / "old-event.yaml").write_text(OLD_EVENT)
    return bundle


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def test_one_old_event_is_cut_out_of_the_time_axis(tmp_path: Path) -> None:
    page = run("timeline", str(with_old_event(tmp_path)), "-o", "html")
    data = blob(page)
    first_fact = min(e["t"] for e in data["entries"] if e["t"] != _ms("2026-08-28T09:12:00Z"))
    assert data["cuts"] == [[_ms("2026-08-28T09:12:00Z"), first_fact]]  # the one empty stretch, whole
    assert "Hatched bands are stretches without any fact, cut out of the time axis" in page
    # the look-alike: the same incident without the old Event spreads over 77 minutes, with no gap to cut
    plain = run("timeline", str(EXAMPLES / "incidents" / "stuck-rollout"), "-o", "html")
    assert blob(plain)["cuts"] == [] and "Hatched bands" not in plain
    # a window asked for is drawn whole, however old the facts in it
    window = run("timeline", str(with_old_event(tmp_path / "again")), "-o", "html", "--around",
                 "2026-10-12T00:00:00Z", "--window", "2880h")
    assert len(blob(window)["entries"]) == len(data["entries"]) and blob(window)["cuts"] == []


def test_axis_cuts_take_only_a_jump_in_length() -> None:
    minute = 60_000
    assert axis_cuts([0, 1000, 2000, 90 * 24 * 60 * minute]) == [[2000, 90 * 24 * 60 * minute]]
    # facts every 20-40 minutes: no gap stands out, nothing is cut
    assert axis_cuts([0, 20 * minute, 60 * minute, 90 * minute, 130 * minute]) == []
    # one gap ten times the others but under five minutes (a window of seconds): drawn as it is
    assert axis_cuts([0, 100, 200, 4 * minute]) == []
    # daily syncs a day apart and a burst of seconds: each day's gap is cut
    day = 24 * 60 * minute
    assert axis_cuts([0, day, 2 * day, 3 * day, 3 * day + 1500, 3 * day + 4000]) == [
        [0, day], [day, 2 * day], [2 * day, 3 * day]]


def test_the_events_lane_is_called_kubernetes_events_in_the_page_only() -> None:
    bundle = str(EXAMPLES / "incidents" / "unwanted-sync")
    data = blob(run("scan", bundle, "-o", "html", "--fail-on", "never"))
    assert "events" in data["lanes"] and data["laneNames"] == {"events": "Kubernetes Events"}
    # the JSON contract and --component keep the id
    doc = json.loads(run("scan", bundle, "-o", "json", "--fail-on", "never"))
    assert "events" in {e["component"] for e in doc["timeline"]}
    assert "Kubernetes Events" not in json.dumps(doc)
    only = json.loads(run("timeline", bundle, "-o", "json", "--component", "events"))
    assert only["timeline"] and {e["component"] for e in only["timeline"]} == {"events"}
