"""The HTML report: one self-contained file (inline CSS, JavaScript and SVG, no request to any other address) with
the findings, collapsible and severity-coloured, and the timeline as a picture drawn from a JSON blob in the page.

A Content-Security-Policy in the page allows only its own inline style and script (by hash) and `data:` images, so
that a browser loads nothing else even if a text slipped through. Every text is redacted before it is written and
HTML-escaped; the JSON blob is escaped so that no `</script>` or `<!--` can close or confuse its element.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape
from importlib import resources
from itertools import pairwise
from typing import IO, Any

from argo_doctor import __version__
from argo_doctor.engine import ScanResult
from argo_doctor.facts.installation import installation
from argo_doctor.model import Evidence, Finding, Problem, Severity, TimelineEntry
from argo_doctor.report.groups import Group, blocks
from argo_doctor.report.json import chain_json
from argo_doctor.report.options import ReportOptions
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import COMPONENT_TITLES, full_timeline
from argo_doctor.timeutil import format_time

EVIDENCE_SHOWN = 20
"""Evidence rows shown per finding; the rest are in the file behind "show all"."""
_LANE_ORDER = ("repo-server", "application-controller", "server", "applicationset-controller",
               "notifications-controller", "commit-server", "image-updater", "rollouts-controller",
               "events-controller", "events-eventsource", "events-sensor", "workflow-controller", "workflows-server",
               "kubelet", "nodes", "events", "kube-apiserver", "objects")
"""Lanes top to bottom: Argo CD, then Rollouts, Events, Workflows, then the cluster; other components (pods of
unknown components) sit between the Argo lanes and the cluster's."""
CUT_MIN_MS = 5 * 60 * 1000
"""The shortest stretch without a fact that the timeline cuts out of its axis."""


def _asset(name: str) -> str:
    return resources.files("argo_doctor.report").joinpath("assets", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def script_json(doc: Any) -> str:
    """JSON for a `<script type="application/json">` element: `<`, `>` and `&` as \\u escapes, so that neither
    `</script>` nor `<!--` can appear, and U+2028/U+2029 escaped too."""
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def _count(n: int, noun: str) -> str:
    """`1 fact`, `2 facts`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _e(text: str | None) -> str:
    return escape(text or "", quote=True)


def _millis(when: datetime) -> int:
    return round(when.timestamp() * 1000)


def versions(snap: Snapshot) -> list[str]:
    """`product version (components)` for every product installed, in catalogue order."""
    by_product: dict[str, dict[str, list[str]]] = {}
    for comp in installation(snap):
        names = by_product.setdefault(comp.product, {}).setdefault(comp.version or "version unknown", [])
        if comp.component not in names:
            names.append(comp.component)
    return [f"{product} {version} ({', '.join(names)})"
            for product, found in by_product.items() for version, names in found.items()]


def _header(snap: Snapshot, title: str, counts: dict[str, int] | None) -> str:
    cluster = snap.meta.get("cluster")
    name = cluster.get("name") if isinstance(cluster, dict) else None
    kube = cluster.get("version") if isinstance(cluster, dict) else None
    collected = format_time(snap.reference_time) if snap.meta.get("collectedAt") else None
    rows = [("Scanned", f"{snap.source} ({', '.join(dict.fromkeys(snap.formats)) or 'files'})"),
            ("Cluster", " ".join(str(p) for p in (name, kube) if p) or "not named in the input"),
            ("Collected at", collected or "not stated in the input"),
            ("Argo components", "; ".join(versions(snap)) or "none found in the input"),
            ("Input", f"{_count(len(snap), 'object')}, {_count(len(snap.log_files), 'log file')}, "
                      f"{_count(len(snap.audit_files), 'audit file')}")]
    cells = "".join(f"<tr><th>{_e(k)}</th><td>{_e(clean(v, snap.scrubber, human=True))}</td></tr>" for k, v in rows)
    badges = ""
    if counts is not None:
        badges = '<p class="counts">' + "".join(
            f'<span class="badge sev-{label}">{count} {label}</span>' for label, count in counts.items()) + "</p>"
    return (f'<header><h1>{_e(title)}</h1><p class="tool">argo-doctor {_e(__version__)}</p>'
            f'<table class="meta">{cells}</table>{badges}</header>')


def _code(kind: str, text: str) -> str:
    return (f'<div class="code"><div class="code-head"><span>{_e(kind)}</span>'
            f'<button type="button" class="copy">Copy</button></div><pre><code>{_e(text)}</code></pre></div>')


def _evidence_row(item: Evidence) -> str:
    return (f"<tr><td class=\"time\">{_e(format_time(item.time) or '')}</td><td>{_e(item.kind)}</td>"
            f"<td class=\"loc\"><code>{_e(item.location)}</code></td>"
            f"<td class=\"excerpt\">{_e(item.excerpt)}</td></tr>")


def _finding(finding: Finding, opened: bool = False) -> str:
    sev = finding.severity.label
    parts = [f'<details class="finding sev-{sev}" id="{_e(finding.id)}" data-id="{_e(finding.id)}"'
             f'{" open" if opened else ""}><summary><span class="badge sev-{sev}">{sev}</span> '
             f'<span class="title">{_e(finding.title)}</span> <span class="rule">{_e(finding.rule)}</span></summary>'
             f'<div class="body"><p class="summary">{_e(finding.summary)}</p>']
    if finding.objects:
        parts.append("<h4>Objects</h4><ul class=\"objects\">" + "".join(
            f"<li><code>{_e(str(ref))}</code> <span class=\"api\">{_e(ref.api_version)}</span></li>"
            for ref in finding.objects) + "</ul>")
    if finding.evidence:
        rows = [_evidence_row(item) for item in finding.evidence]
        more = ""
        if len(rows) > EVIDENCE_SHOWN:
            more = (f'<tbody class="more" hidden>{"".join(rows[EVIDENCE_SHOWN:])}</tbody>')
        parts.append(f'<h4>Evidence ({len(rows)})</h4><table class="evidence"><thead><tr><th>time</th><th>kind</th>'
                     f'<th>location</th><th>excerpt</th></tr></thead><tbody>{"".join(rows[:EVIDENCE_SHOWN])}</tbody>'
                     f'{more}</table>')
        if more:
            parts.append(f'<button type="button" class="show-all">show all {len(rows)} rows</button>')
    if finding.chain:
        steps = []
        for step in chain_json(finding):
            item = finding.evidence[step["evidence"]]
            gap = "" if step["gapSeconds"] is None else f'<span class="gap">+{step["gapSeconds"]:g} s</span> '
            steps.append(f"<li>{gap}<span class=\"time\">{_e(format_time(item.time) or 'no time')}</span> "
                         f"{_e(' '.join(item.excerpt.split())[:300])} <code>{_e(item.location)}</code></li>")
        parts.append(f'<h4>Causal chain</h4><ol class="chain">{"".join(steps)}</ol>')
    fix = finding.remediation
    parts.append(f'<h4>Fix</h4><p class="fix">{_e(fix.text)}</p>')
    if fix.command:
        parts.append(_code("command", fix.command))
    if fix.patch:
        parts.append(_code("patch", fix.patch))
    if fix.docs:
        parts.append("<h4>Docs</h4><ul class=\"docs\">" + "".join(
            f'<li><a href="{_e(url)}" rel="noreferrer noopener">{_e(url)}</a></li>' for url in fix.docs) + "</ul>")
    parts.append("</div></details>")
    return "".join(parts)


def _group(group: Group, expanded: bool) -> str:
    sev = group.findings[0].severity.label
    shown = group.findings if expanded else group.worst
    rest = group.findings[len(shown):]
    body = "".join(_finding(f) for f in shown)
    if rest:
        body += (f'<details class="group-rest"><summary>show all {len(group.findings)} '
                 f'(--expand {_e(group.rule)})</summary>{"".join(_finding(f) for f in rest)}</details>')
    cause = f'<p class="summary">{_e(group.cause)}</p>' if group.cause else ""
    return (f'<details class="group sev-{sev}" data-group="{_e(group.id)}"{" open" if expanded else ""}><summary>'
            f'<span class="badge sev-{sev}">{len(group.findings)} × {sev}</span> <span class="title">'
            f'{_e(group.title)}</span> <span class="rule">{_e(group.rule)}</span></summary><div class="body">'
            f'{cause}<p class="note">The {len(shown)} worst of '
            f'{len(group.findings)}:</p>{body}</div></details>')


def _problems(problems: Sequence[Problem]) -> str:
    parts = []
    for kind, heading in (("error", "Input errors"), ("note", "Notes on the input")):
        items = [p for p in problems if p.kind == kind]
        if items:
            parts.append(f'<details class="problems"><summary>{heading} ({len(items)})</summary><ul>' + "".join(
                f"<li><code>{_e(p.location)}</code>: {_e(p.message)}</li>" for p in items) + "</ul></details>")
    return "".join(parts)


def _lanes(components: Iterable[str]) -> list[str]:
    order = {name: i for i, name in enumerate(_LANE_ORDER)}
    return sorted(set(components), key=lambda c: (order.get(c, order["kubelet"] - 0.5), c))


def axis_cuts(times: Iterable[int]) -> list[list[int]]:
    """The stretches without any fact that the timeline picture cuts out of its axis, as `[last ms before, first ms
    after]`, oldest first, so that one old event does not squeeze every other mark to one edge. The cuts are the
    longest gaps between facts: each at least `CUT_MIN_MS` long, at least ten times longer than every gap kept (the
    largest such jump in length decides), and together more than half of the whole span. The page draws each cut as
    a hatched band labelled with its length."""
    points = sorted(set(times))
    gaps = sorted(((b - a, a, b) for a, b in pairwise(points)), reverse=True)
    count, jump = 0, 10.0
    for i in range(len(gaps) - 1):
        if gaps[i][0] < CUT_MIN_MS:
            break
        ratio = gaps[i][0] / gaps[i + 1][0]
        if ratio >= jump:
            count, jump = i + 1, ratio
    cut = gaps[:count]
    if not cut or 2 * sum(length for length, _, _ in cut) <= points[-1] - points[0]:
        return []
    return sorted([a, b] for _, a, b in cut)


def timeline_data(entries: Sequence[TimelineEntry], findings: Sequence[Finding], around: datetime | None = None,
                  window: str = "10m") -> dict[str, Any]:
    """What the page's script draws: the entries (time in ms, component, kind, location, excerpt, finding ids), the
    lanes and the names shown for them where these differ, the worst severity of each finding, the chain edges between
    entries with their gaps in seconds, and the empty stretches cut out of the axis (none in a window asked for)."""
    index = {(e.location, e.excerpt): i for i, e in enumerate(entries)}
    edges = []
    for finding in findings:
        placed = [index[key] for key in ((finding.evidence[s].location, finding.evidence[s].excerpt)
                                         for s in finding.chain) if key in index]
        for a, b in pairwise(placed):
            gap = round((entries[b].time - entries[a].time).total_seconds(), 3)
            edges.append({"from": a, "to": b, "gap": gap, "finding": finding.id,
                          "severity": finding.severity.label})
    lanes = _lanes(e.component for e in entries)
    return {
        "entries": [{"t": _millis(e.time), "time": format_time(e.time), "component": e.component, "kind": e.kind,
                     "location": e.location, "excerpt": e.excerpt, "findings": list(e.findings)} for e in entries],
        "lanes": lanes,
        "laneNames": {lane: COMPONENT_TITLES[lane] for lane in lanes if lane in COMPONENT_TITLES},
        "severity": {f.id: f.severity.label for f in findings},
        "titles": {f.id: f.title for f in findings},
        "edges": edges,
        "cuts": [] if around else axis_cuts(_millis(e.time) for e in entries),  # a window asked for is drawn whole
        "around": format_time(around),
        "window": window,
    }


def _timeline_section(data: dict[str, Any], total: int | None = None) -> str:
    """The timeline's heading, controls and chart; when it is empty, why: no timestamped fact at all, or none of the
    `total` facts of the input in the window asked for."""
    count = len(data["entries"])
    if not count:
        where = (f"is in the window ({_e(data['window'])} around {_e(data['around'])}) or of the components chosen"
                 if data["around"] else "is of the components chosen")
        why = (f"None of the {_count(total, 'timestamped fact')} of the input {where}." if total
               else "No timestamped fact in the input.")
        return f'<section id="timeline"><h2>Timeline</h2><p>{why}</p></section>'
    cuts = (' Hatched bands are stretches without any fact, cut out of the time axis<span id="view-cuts"></span>.'
            if data["cuts"] else "")
    return (
        f'<section id="timeline"><h2>Timeline <span class="muted">({_count(count, "fact")}, '
        f'{_count(len(data["edges"]), "chain arrow")})</span></h2>'
        '<div class="controls"><button type="button" data-act="zoom-in" title="zoom in">+</button>'
        '<button type="button" data-act="zoom-out" title="zoom out">−</button>'
        '<button type="button" data-act="left" title="pan left">◀</button>'
        '<button type="button" data-act="right" title="pan right">▶</button>'
        '<button type="button" data-act="chains">Fit chains</button><button type="button" data-act="all">Fit all'
        '</button><label>around <input id="around" type="text" placeholder="YYYY-MM-DDThh:mm:ssZ" size="24">'
        '</label><label>window <input id="window" type="text" size="6"></label>'
        '<button type="button" data-act="window">Show window</button><span id="view-range" class="muted"></span>'
        '</div><p class="hint">Wheel to zoom, drag to pan, hover a mark for its line; click a mark to centre the '
        f'window on it.{cuts}</p><div id="chart"></div>'
        '<div id="tip" role="tooltip" hidden></div></section>'
    )


def _page(title: str, body: str, data: dict[str, Any]) -> str:
    css, js = _asset("report.css"), _asset("report.js")
    policy = (f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(js)}; img-src data:; "
              "font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(policy)}">'
        '<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width">'
        f"<title>{_e(title)}</title><style>{css}</style></head><body>{body}"
        f'<script type="application/json" id="report-data">{script_json(data)}</script>'
        f"<script>{js}</script></body></html>\n"
    )


def _severity_counts(findings: Sequence[Finding]) -> dict[str, int]:
    return {sev.label: sum(1 for f in findings if f.severity == sev) for sev in sorted(Severity, reverse=True)}


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the scan as one self-contained HTML page: header, findings (groups of one pattern folded), timeline
    picture, input errors; every text redacted and escaped."""
    options = options or ReportOptions()
    snap = result.snapshot
    result = clean(result, snap.scrubber, human=True)
    findings = result.findings
    parts = [_header(snap, "argo-doctor report", _severity_counts(findings))]
    data = timeline_data(result.timeline, findings)
    parts.append(_timeline_section(data))
    buttons = ('<button type="button" data-act="expand-all">expand all</button>'
               '<button type="button" data-act="collapse-all">collapse all</button>') if findings else ""
    parts.append(f'<section id="findings"><h2>Findings <span class="muted">({len(findings)})</span>{buttons}</h2>')
    if not findings:
        parts.append("<p>No finding.</p>")
    for block in blocks(findings):
        parts.append(_group(block, block.expanded(options.expand)) if isinstance(block, Group) else _finding(block))
    parts.append("</section>")
    parts.append(_problems(result.problems))
    data["findingCount"] = len(findings)
    out.write(_page(f"argo-doctor report: {clean(snap.source, snap.scrubber, human=True)}", "".join(parts), data))


def render_timeline(snap: Snapshot, entries: Sequence[TimelineEntry], findings: Sequence[Finding],
                    problems: Sequence[Problem], out: IO[str], around: datetime | None, window: str) -> None:
    """Write `timeline -o html`: the header, the timeline picture (marks coloured by the findings citing them, the
    causal chains as arrows), each finding with a chain, and the input errors; all redacted again here."""
    entries = clean(list(entries), snap.scrubber, human=True)
    findings = clean(list(findings), snap.scrubber, human=True)
    problems = clean(list(problems), snap.scrubber, human=True)
    chained = [f for f in findings if f.chain]
    data = timeline_data(entries, findings, around, window)
    total = None if entries else len(full_timeline(snap, list(findings)))
    parts = [_header(snap, "argo-doctor timeline", None), _timeline_section(data, total)]
    if chained:
        parts.append(f'<section id="findings"><h2>Causal chains <span class="muted">({len(chained)})</span></h2>')
        parts.extend(_finding(f, opened=True) for f in chained)
        parts.append("</section>")
    parts.append(_problems(problems))
    data["findingCount"] = len(chained)
    out.write(_page(f"argo-doctor timeline: {clean(snap.source, snap.scrubber, human=True)}", "".join(parts), data))
