"""The HTML report in a real browser: headless Chromium from Debian's `chromium` package (`make chromium` installs it;
`make test` depends on it), driven by Playwright with that executable; no browser is downloaded.

The page must load with no console error (a Content-Security-Policy violation is one) and no request beside the file
itself; its findings and chain arrows match the JSON; wheel, drag and the buttons move the view; hovering a mark
shows its full line; the screenshot is not blank; the secret canaries of tests/hostile appear nowhere in it.
There is no skip: without Chromium the test fails and says how to install it.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Request, sync_playwright
from tools.screenshot import ARGS, CHROMIUM

from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, EvidenceKind, TimelineEntry
from argo_doctor.report.html import render
from argo_doctor.snapshot import Snapshot
from tests.conftest import EXAMPLES
from tests.hostile import test_canaries as canaries
from tests.report.test_html import EVIDENCE_SHOWN, blob, chain_edges, make_finding, render_page, run, with_old_event

UNWANTED_SYNC = EXAMPLES / "incidents" / "unwanted-sync"


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """Chromium with a fresh profile."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make chromium` as root (apt-get install chromium); "
                    "the HTML report's browser test does not skip")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(tmp_path_factory.mktemp("chromium-profile")),
                                                   executable_path=str(CHROMIUM), args=ARGS, headless=True,
                                                   viewport={"width": 1280, "height": 900})
        yield ctx
        ctx.close()


class Loaded:
    """A page opened from a file, with what it asked for and complained about."""

    def __init__(self, context: BrowserContext, path: Path) -> None:
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.failed: dict[str, str | None] = {}
        self.page: Page = context.new_page()
        self.page.on("request", self._request)
        self.page.on("requestfailed", lambda request: self.failed.update({request.url: request.failure}))
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("#chart svg")

    def _request(self, request: Request) -> None:
        self.requests.append(request.url)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def outside(self) -> list[str]:
        """Requests for anything but the page itself and data: URIs."""
        return [url for url in self.requests if url != self.url and not url.startswith("data:")]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The unwanted-sync HTML report and its JSON."""
    path = tmp_path_factory.mktemp("html") / "unwanted-sync.html"
    path.write_text(run("scan", str(UNWANTED_SYNC), "-o", "html", "--fail-on", "never"))
    return path, json.loads(run("scan", str(UNWANTED_SYNC), "-o", "json", "--fail-on", "never"))


@pytest.fixture
def loaded(context: BrowserContext, report: tuple[Path, dict[str, Any]]) -> Iterator[Loaded]:
    """The report opened in a new tab."""
    opened = Loaded(context, report[0])
    yield opened
    opened.page.close()


def test_the_page_loads_without_error_or_request(loaded: Loaded) -> None:
    loaded.page.click("button[data-act=expand-all]")
    loaded.page.click("button[data-act=all]")
    loaded.page.wait_for_timeout(200)
    assert loaded.requests == [loaded.url]
    assert loaded.outside() == [] and loaded.errors == []
    # the page's policy is what keeps it so: an image from elsewhere slipped into the page is refused
    loaded.page.evaluate("""() => { const img = document.createElement('img');
        img.src = 'http://127.0.0.1:9/pixel.png'; document.body.appendChild(img); }""")
    loaded.page.wait_for_timeout(200)
    assert loaded.failed == {"http://127.0.0.1:9/pixel.png": "csp"}  # asked for, and blocked before any network
    assert any("Content Security Policy" in error for error in loaded.errors), loaded.errors


def test_findings_and_chain_arrows_match_the_json(loaded: Loaded, report: tuple[Path, dict[str, Any]]) -> None:
    doc = report[1]
    page = loaded.page
    assert page.locator("details.finding").count() == len(doc["findings"]) == 6
    arrows = page.locator("#chart svg path.chain-arrow").count()
    assert arrows == chain_edges(doc) == len(blob(report[0].read_text())["edges"]) == 6
    gaps = page.locator("#chart svg .gap-label").all_text_contents()
    assert gaps[:2] == ["+1.943 s", "+0.502 s"]
    marks = page.locator("#chart svg circle.mark").count()
    assert marks == len(doc["timeline"])
    lanes = page.locator("#chart svg .lane-label").all_text_contents()
    assert lanes[:2] == ["repo-server", "application-controller"] and "kube-apiserver" in lanes


def test_wheel_drag_and_buttons_move_the_view(loaded: Loaded) -> None:
    page = loaded.page
    plot = page.locator("#plot")
    box = page.locator("#chart svg").bounding_box()
    assert box is not None
    mark = page.locator("#chart circle.mark").first
    start = plot.get_attribute("transform"), page.locator("#view-range").text_content(), mark.get_attribute("cx")
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 60)
    page.mouse.wheel(0, -400)
    page.wait_for_timeout(100)
    zoomed = plot.get_attribute("transform"), page.locator("#view-range").text_content(), mark.get_attribute("cx")
    assert zoomed[1] != start[1] and zoomed[2] != start[2]
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] - 5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] - 5, steps=5)
    page.mouse.up()
    dragged = plot.get_attribute("transform")
    assert dragged != zoomed[0]
    page.click("button[data-act=all]")
    assert page.locator("#view-range").text_content() != zoomed[1]
    page.fill("#around", "2026-11-22T15:03:00Z")
    page.fill("#window", "20s")
    page.click("button[data-act=window]")
    assert page.locator("#view-range").text_content() == "2026-11-22T15:02:50.000Z → 2026-11-22T15:03:10.000Z"
    # a window of a second, a hundred thousand times narrower than the input: the helm template line is drawn in it
    page.fill("#around", "2026-11-22T15:02:57.3Z")
    page.fill("#window", "1s")
    page.click("button[data-act=window]")
    entries = page.evaluate("JSON.parse(document.getElementById('report-data').textContent).entries")
    index = next(i for i, e in enumerate(entries) if "helm template" in e["excerpt"])
    seen = page.locator(f"#chart circle.mark[data-i='{index}']").bounding_box()
    assert seen is not None and box["x"] + 190 < seen["x"] < box["x"] + box["width"]
    assert page.locator(f"#chart circle.mark[data-i='{index}']").is_visible()


def test_hover_shows_the_full_line_and_its_location(loaded: Loaded, report: tuple[Path, dict[str, Any]]) -> None:
    page = loaded.page
    entries = blob(report[0].read_text())["entries"]
    index = next(i for i, e in enumerate(entries) if "helm template" in e["excerpt"])
    assert len(entries[index]["excerpt"]) > 300  # longer than anything the page shows elsewhere in one line
    page.locator(f"#chart circle.mark[data-i='{index}']").hover(force=True)
    tip = page.locator("#tip")
    tip.wait_for(state="visible")
    text = tip.text_content() or ""
    assert entries[index]["excerpt"] in text and entries[index]["location"] in text
    page.mouse.move(2, 2)
    page.wait_for_timeout(50)
    assert tip.is_hidden()


def test_the_copy_button_copies_the_command(loaded: Loaded, context: BrowserContext) -> None:
    page = loaded.page
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("button[data-act=expand-all]")
    block = page.locator(".code").first
    block.locator("button.copy").click()
    page.wait_for_function("() => document.querySelector('.code button.copy').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == block.locator("pre").text_content()
    assert loaded.errors == []


def test_the_screenshot_is_not_blank(loaded: Loaded) -> None:
    image = Image.open(io.BytesIO(loaded.page.screenshot(full_page=False))).convert("RGB")
    colours = image.getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 200
    # the timeline picture itself: many distinct colours and no colour covering nearly all of it
    chart = loaded.page.locator("#chart").screenshot()
    picture = Image.open(io.BytesIO(chart)).convert("RGB")
    counts = picture.getcolors(maxcolors=1_000_000)
    assert counts is not None and len(counts) > 50
    assert max(n for n, _ in counts) < 0.9 * picture.width * picture.height


def test_no_secret_canary_in_the_html(context: BrowserContext, tmp_path_factory: pytest.TempPathFactory) -> None:
    bundle = canaries.bundle.__wrapped__(tmp_path_factory)
    pages = {"scan": run("scan", str(bundle), "-o", "html", "--fail-on", "never"),
             "timeline": run("timeline", str(bundle), "-o", "html")}
    for name, text in pages.items():
        data = json.dumps(blob(text), ensure_ascii=False)
        for place, value in canaries.CANARY.items():
            for form in (value, base64.b64encode(value.encode()).decode(), html.escape(value)):
                assert form not in text and form not in html.unescape(text) and form not in data, (name, place)
        assert "<redacted" in data, name  # the canaries were reached, and redacted
        path = tmp_path_factory.mktemp("canary-html") / f"{name}.html"
        path.write_text(text)
        opened = Loaded(context, path)
        assert opened.outside() == [] and opened.errors == [], name
        shown = opened.page.locator("body").inner_text()
        assert not [place for place, value in canaries.CANARY.items() if value in shown], name
        opened.page.close()


def test_a_scan_without_findings_or_timeline_loads_cleanly(context: BrowserContext, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n"
                                             "  namespace: default\ndata:\n  key: value\n")
    path = tmp_path / "empty.html"
    path.write_text(run("scan", str(tmp_path / "in"), "-o", "html"))
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.resolve().as_uri())
    assert page.locator("details.finding").count() == 0 and page.locator("#chart").count() == 0
    assert "No finding." in page.locator("#findings").inner_text()
    assert "No timestamped fact in the input." in page.locator("#timeline").inner_text()
    assert page.locator("button[data-act=expand-all]").count() == 0  # nothing to expand
    assert errors == []
    page.close()


def test_show_all_reveals_the_capped_evidence_and_hostile_text_stays_text(context: BrowserContext,
                                                                          tmp_path: Path) -> None:
    path = tmp_path / "many.html"
    path.write_text(render_page([make_finding("many lines", evidence=EVIDENCE_SHOWN + 30)]))
    opened = Loaded(context, path)
    page = opened.page
    page.click("details.finding > summary")
    rows = page.locator("table.evidence tr:visible")
    assert rows.count() == EVIDENCE_SHOWN + 1  # and the header
    page.click("button.show-all")
    assert rows.count() == EVIDENCE_SHOWN + 31
    assert page.locator("button.show-all").text_content() == f"show fewer {EVIDENCE_SHOWN + 30} rows"
    # the hostile excerpts are shown as text: no alert, no element of theirs, no request
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    assert "</script><script>alert(1)</script>" in page.locator("table.evidence").inner_text()
    assert opened.outside() == [] and opened.errors == []
    page.close()


def _range(page: Page) -> tuple[datetime, datetime]:
    """The time range the chart shows, from its caption."""
    start, end = (page.locator("#view-range").text_content() or "").split(" → ")
    return datetime.fromisoformat(start), datetime.fromisoformat(end)


def _marks_in_view(page: Page) -> int:
    """Marks drawn inside the chart's plot (right of the lane labels)."""
    return int(page.evaluate("""() => {
        const svg = document.querySelector('#chart svg').getBoundingClientRect();
        const rect = document.querySelector('#plot-clip rect');
        const left = svg.left + +rect.getAttribute('x'), right = left + +rect.getAttribute('width');
        return [...document.querySelectorAll('#chart circle.mark')].filter(m => {
            const b = m.getBoundingClientRect();
            return b.width > 0 && b.left >= left && b.right <= right; }).length; }"""))


def test_a_resize_keeps_the_time_range_in_view(loaded: Loaded) -> None:
    page = loaded.page
    before, marks = _range(page), _marks_in_view(page)
    assert marks > 10
    for width in (1000, 760, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(150)
        after = _range(page)
        assert abs((after[0] - before[0]).total_seconds()) < 0.01, (width, before, after)
        assert abs((after[1] - before[1]).total_seconds()) < 0.01, (width, before, after)
        assert _marks_in_view(page) == marks, width
    # printing lays the page out anew, at another width: the chart still shows the same marks
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 900, "height": 900})
    page.wait_for_timeout(150)
    assert _marks_in_view(page) == marks and abs((_range(page)[0] - before[0]).total_seconds()) < 0.01
    page.emulate_media(media="screen")
    page.set_viewport_size({"width": 1280, "height": 900})


GAP_BOXES = """() => [...document.querySelectorAll('#chart .gap-label')].map(t => {
    const b = t.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height, text: t.textContent}; })"""
MARK_BOXES = """() => [...document.querySelectorAll('#chart circle.mark')].map(m => {
    const b = m.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height}; })"""


def _crossing(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two boxes share an area."""
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


@pytest.mark.parametrize("args", [("scan", "--fail-on", "never"),
                                  ("timeline", "--around", "2026-11-22T15:03:00Z", "--window", "2m")],
                         ids=["scan", "timeline-2m"])
def test_gap_labels_overlap_neither_each_other_nor_marks(context: BrowserContext, tmp_path: Path,
                                                         args: tuple[str, ...]) -> None:
    path = tmp_path / "chain.html"
    path.write_text(run(args[0], str(UNWANTED_SYNC), "-o", "html", *args[1:]))
    opened = Loaded(context, path)
    page = opened.page
    if args[0] == "timeline":  # the window asked for, not the span of the facts in it
        assert page.locator("#view-range").text_content() == "2026-11-22T15:02:00.000Z → 2026-11-22T15:04:00.000Z"
    for _ in range(2):  # as opened, then zoomed out
        labels, marks = page.evaluate(GAP_BOXES), page.evaluate(MARK_BOXES)
        assert len(labels) >= 4, labels
        assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if _crossing(a, b)]
        assert not [a["text"] for a in labels for m in marks if _crossing(a, m)]
        page.click("button[data-act=zoom-out]")
    # every arrow says its gap in its tooltip, shown as a label or not
    titles = page.locator("#chart .chain-edge > title").all_text_contents()
    gaps = [edge["gap"] for edge in blob(path.read_text())["edges"]]
    assert len(titles) == len(gaps) and all(t.startswith(f"+{g:g} s · ") for t, g in zip(titles, gaps, strict=True))
    assert opened.errors == []
    page.close()


def test_the_lane_column_fits_the_names_and_cuts_a_very_long_one(context: BrowserContext, tmp_path: Path) -> None:
    path = tmp_path / "basic.html"
    path.write_text(run("scan", str(EXAMPLES / "argocd-basic"), "-o", "html", "--fail-on", "never"))
    opened = Loaded(context, path)
    labels = opened.page.evaluate("""() => [...document.querySelectorAll('#chart .lane-label')].map(t => {
        const b = t.getBBox(); return {text: t.textContent, right: b.x + b.width}; })""")
    plot = float(opened.page.evaluate("+document.querySelector('#plot-clip rect').getAttribute('x')"))
    assert "payments-api-7c9d8f6b5d-cpbcd" in [label["text"] for label in labels]
    assert all(label["right"] < plot for label in labels) and plot < max(label["right"] for label in labels) + 40
    opened.page.close()
    # a name no column could hold: cut with an ellipsis, whole in its tooltip
    long_name = "payments-api-canary-" + "x" * 80 + "-7c9d8f6b5d-cpbcd"
    start = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)
    entries = [TimelineEntry(start + timedelta(seconds=i), name, "log", f"logs/{name}.log:{i + 1}", f"line {i}", ())
               for i, name in enumerate(["repo-server", long_name])]
    out = io.StringIO()
    render(ScanResult(Snapshot("long-lanes"), [], entries, []), out)
    path = tmp_path / "long.html"
    path.write_text(out.getvalue())
    opened = Loaded(context, path)
    lane = opened.page.locator("#chart .lane-label").nth(1)
    shown = lane.evaluate("t => t.firstChild.nodeValue")
    assert shown.endswith("…") and long_name.startswith(shown[:-1])
    assert lane.locator("title").text_content() == long_name
    right = float(lane.evaluate("t => t.getBBox().x + t.getBBox().width"))
    plot = float(opened.page.evaluate("+document.querySelector('#plot-clip rect').getAttribute('x')"))
    assert right < plot <= 300 and opened.errors == []
    opened.page.close()


PLOT = """() => { const svg = document.querySelector('#chart svg').getBoundingClientRect();
    const rect = document.querySelector('#plot-clip rect'), left = svg.left + +rect.getAttribute('x');
    return {left: left, right: left + +rect.getAttribute('width'), svgRight: svg.right}; }"""
AXIS_LABELS = """() => [...document.querySelectorAll('#chart .axis text')].map(t => {
    const b = t.getBoundingClientRect(); return {text: t.textContent, left: b.left, right: b.right}; })"""


def _axis_labels_outside(page: Page) -> tuple[int, list[dict[str, Any]]]:
    """How many axis labels are drawn, and those not whole inside the plot (right of the lane names, left of the
    chart's edge)."""
    plot, labels = page.evaluate(PLOT), page.evaluate(AXIS_LABELS)
    return len(labels), [label for label in labels if label["left"] < plot["left"] - 0.5
                         or label["right"] > min(plot["right"], plot["svgRight"]) + 0.5]


def test_every_axis_label_is_whole_inside_the_plot(context: BrowserContext, tmp_path: Path) -> None:
    path = tmp_path / "unwanted-sync.html"
    path.write_text(run("scan", str(UNWANTED_SYNC), "-o", "html", "--fail-on", "never"))
    opened = Loaded(context, path)
    page = opened.page
    for width in (1280, 760):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        views = ["opened", "all", "chains", "zoom-in", "right", "right", "right", "left", "zoom-out", "zoom-out"]
        for view in views:
            if view != "opened":
                page.click(f"button[data-act={view}]")
            count, outside = _axis_labels_outside(page)
            assert count >= 3 and outside == [], (width, view, outside)
    assert opened.errors == []
    page.close()


def two_hundred_applications() -> str:
    """The HTML report of 200 Applications each auto-synced once in ten minutes, each sync a causal chain of four
    facts in three lanes (cache miss, helm template, sync, webhook failure), as auto-sync-without-change writes it."""
    start = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)
    repo_server = "logs/argocd/argocd-repo-server-6d9f7c8b5-x2x7q/repo-server.log"
    steps: list[tuple[str, EvidenceKind, str, str]] = [
        ("repo-server", "log", repo_server, "manifest cache miss: {app}"),
        ("repo-server", "log", repo_server, "helm template . --name-template {app} --namespace {app}"),
        ("application-controller", "log", "logs/argocd/argocd-application-controller-0/application-controller.log",
         "Initiated automated sync to '9d2c4e1f7a3b' application={app}"),
        ("events", "event", "objects/events.yaml",
         "Warning FailedCreate ReplicaSet/{app}/{app}-7c9d: failed calling webhook: x509: certificate signed by "
         "unknown authority")]
    findings, entries = [], []
    for i in range(200):
        app, when = f"app-{i:03d}", start + timedelta(seconds=i * 3 % 600, milliseconds=i * 37 % 1000)
        evidence = []
        for j, (_, kind, location, text) in enumerate(steps):
            when += timedelta(milliseconds=300 + (i * 131 + j * 977) % 2400)
            evidence.append(Evidence(kind, f"{location}:{i * 4 + j + 1}", text.format(app=app), when))
        finding = make_finding(f"{app} auto-synced 2 times without a new commit", name=app)
        finding.evidence, finding.chain = evidence, [0, 1, 2, 3]
        findings.append(finding)
        entries += [TimelineEntry(at, step[0], e.kind, e.location, e.excerpt, (finding.id,))
                    for step, e in zip(steps, evidence, strict=True) if (at := e.time) is not None]
    out = io.StringIO()
    render(ScanResult(Snapshot("200-applications"), findings, sorted(entries, key=lambda e: e.time), []), out)
    return out.getvalue()


GAP_LAYOUT = """() => {
    const paths = [...document.querySelectorAll('#chart .chain-edge path')];
    const labels = [...document.querySelectorAll('#chart .gap-label')].map(t => {
        const b = t.getBBox(), path = paths[+t.getAttribute('data-edge')], length = path.getTotalLength();
        let near = Infinity;  // from the label's box to the nearest point of its own arrow
        for (let i = 0; i <= 40; i++) {
            const p = path.getPointAtLength(length * i / 40);
            const dx = Math.max(b.x - p.x, 0, p.x - b.x - b.width), dy = Math.max(b.y - p.y, 0, p.y - b.y - b.height);
            near = Math.min(near, Math.hypot(dx, dy));
        }
        return {x: b.x, y: b.y, w: b.width, h: b.height, text: t.textContent, near: near}; });
    return {labels: labels, marks: [...document.querySelectorAll('#chart circle.mark')].map(m => {
        const b = m.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height}; })}; }"""


def test_gap_labels_stay_apart_and_by_their_arrow_with_200_applications(context: BrowserContext,
                                                                        tmp_path: Path) -> None:
    path = tmp_path / "200-applications.html"
    path.write_text(two_hundred_applications())
    opened = Loaded(context, path)
    page = opened.page
    assert page.locator("#chart path.chain-arrow").count() == 600
    shown = 0
    # as opened, zoomed in, panned both ways (the labels move with the marks, laid out once), zoomed out
    for view in ["opened", "zoom-in", "zoom-in", "left", "left", "right", "right", "right", "right", "zoom-out"]:
        if view != "opened":
            page.click(f"button[data-act={view}]")
        layout = page.evaluate(GAP_LAYOUT)
        labels, marks = layout["labels"], layout["marks"]
        shown = max(shown, len(labels))
        assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
                    if _crossing(a, b)], view
        assert not [a["text"] for a in labels for m in marks if _crossing(a, m)], view
        assert not [a for a in labels if a["near"] > 16], view  # each label reads as its own arrow's
    assert shown >= 20  # zoomed in, there is room for many
    assert opened.errors == []
    page.close()


def test_one_old_event_leaves_the_findings_the_width_and_the_cut_is_marked(context: BrowserContext,
                                                                           tmp_path: Path) -> None:
    path = tmp_path / "old-event.html"
    path.write_text(run("timeline", str(with_old_event(tmp_path)), "-o", "html"))
    opened = Loaded(context, path)
    page = opened.page
    for view in ["opened", "all"]:  # no chain here: the page opens on everything
        if view != "opened":
            page.click(f"button[data-act={view}]")
        plot = page.evaluate(PLOT)
        cited = page.evaluate("""() => { const data = JSON.parse(document.getElementById('report-data').textContent);
            return [...document.querySelectorAll('#chart circle.mark')].filter(m =>
                data.entries[+m.getAttribute('data-i')].findings.length).map(m => {
                const b = m.getBoundingClientRect(); return [b.left, b.right]; }); }""")
        assert len(cited) == 11
        spread = max(r for _, r in cited) - min(left for left, _ in cited)
        assert spread > 0.6 * (plot["right"] - plot["left"]), (view, spread, plot)
        # the cut: one hatched band between the old Event and the rest, saying how long it is, dates in its tooltip
        band = page.locator("#chart .cut")
        assert band.count() == 1
        box = band.locator("rect").bounding_box()
        old = page.locator("#chart circle.mark").first.bounding_box()
        assert box is not None and old is not None
        assert old["x"] + old["width"] < box["x"] and box["x"] + box["width"] < min(left for left, _ in cited)
        label = band.locator("text.cut-label")
        assert re.fullmatch(r"\d+d \d\dh cut", label.text_content() or ""), label.text_content()
        title = band.locator("title").text_content() or ""
        assert "2026-08-28T09:12:00.000Z" in title and "2026-11-26T13:02:41.000Z" in title
        assert page.locator("#view-cuts").text_content() == " (1 in view, 90d 04h in all)"
        assert _axis_labels_outside(page)[1] == []
    assert opened.errors == []
    page.close()


def test_the_events_lane_is_called_kubernetes_events(loaded: Loaded) -> None:
    page = loaded.page
    lane = page.locator("#chart .lane-label", has_text="Kubernetes Events")
    assert lane.count() == 1 and lane.evaluate("t => t.firstChild.nodeValue") == "Kubernetes Events"
    assert lane.locator("title").text_content() == "Kubernetes Events (component events)"
    assert "events" not in page.locator("#chart .lane-label").evaluate_all("ts => ts.map(t => t.firstChild.nodeValue)")
    entries = page.evaluate("JSON.parse(document.getElementById('report-data').textContent).entries")
    index = next(i for i, e in enumerate(entries) if e["component"] == "events")
    page.click("button[data-act=all]")
    page.locator(f"#chart circle.mark[data-i='{index}']").hover(force=True)
    page.locator("#tip").wait_for(state="visible")
    assert "  ·  Kubernetes Events  ·  event" in (page.locator("#tip .tip-time").text_content() or "")
