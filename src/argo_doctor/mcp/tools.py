"""What each MCP tool answers, as JSON text within the size cap: plain functions of a State and the tool's
arguments, so that the server only registers them. Every text passes the scan's redaction; bad arguments raise
ConfigError, one line."""

from __future__ import annotations

import fnmatch
import sys
from collections import Counter
from datetime import timedelta
from typing import Any

from argo_doctor import deprecations
from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.errors import ConfigError
from argo_doctor.facts.scope import scope
from argo_doctor.facts.upgrades import installed_releases, release_targets, version_text
from argo_doctor.facts.webhooks import plural
from argo_doctor.health import HealthStatus, application_health
from argo_doctor.mcp.paging import page, query_key, read_cursor
from argo_doctor.mcp.session import State
from argo_doctor.model import Severity
from argo_doctor.report.deprecations import deprecations_json
from argo_doctor.report.health import worst_first
from argo_doctor.report.json import document, timeline_json
from argo_doctor.report.map import component_json
from argo_doctor.sources import bundle
from argo_doctor.sources.redact import clean
from argo_doctor.timeline import around_time, select, window_centre
from argo_doctor.timeutil import format_time, parse_go_duration, shift

MAX_ERRORS = 10
"""Input errors a result lists (with their count): the scan tool's header, not a log."""


def _texts(value: str | list[str] | None) -> tuple[str, ...]:
    """An argument that takes one text or several."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _ref_text(ref: dict[str, str]) -> str:
    """`Kind namespace/name` (`Kind name` when cluster-scoped): an object in few tokens."""
    return f"{ref['kind']} {ref['namespace']}/{ref['name']}" if ref["namespace"] else f"{ref['kind']} {ref['name']}"


def compact_finding(doc: dict[str, Any]) -> dict[str, Any]:
    """A finding of the JSON contract in few tokens: id, severity, rule, title, objects (and its group)."""
    short = {"id": doc["id"], "severity": doc["severity"], "rule": doc["rule"], "title": doc["title"],
             "objects": [_ref_text(r) for r in doc["objects"]]}
    if doc.get("group"):
        short["group"] = doc["group"]
    return short


def _errors(problems: list[dict[str, str]]) -> dict[str, Any]:
    """The first input problems, and how many of each kind (`error`: input not read; `note`: about the input)."""
    return {"errors": problems[:MAX_ERRORS], "errorCount": sum(1 for p in problems if p.get("kind") != "note"),
            "noteCount": sum(1 for p in problems if p.get("kind") == "note")}


def scan(state: State, cap: int, rule: str | list[str] | None = None, app: str | list[str] | None = None,
         namespace: str | list[str] | None = None, minSeverity: str | None = None, full: bool = False,
         cursor: str | None = None) -> str:
    """The findings, most severe first, filtered; compact unless `full`."""
    rules = _texts(rule)
    if rules:
        select_analyzers(rules)  # ConfigError for an unknown rule id, with the closest one
    narrowed = scope(state.snap, _texts(app), _texts(namespace), ("app", "namespace"))
    floor = Severity.parse(minSeverity) if minSeverity else Severity.INFO
    docs = {d["id"]: d for d in state.document["findings"]}
    kept = [docs[f.id] for f in state.result.findings
            if (not rules or f.rule in rules) and f.severity >= floor and narrowed.finding(f)]
    key = query_key("scan", {"rule": rules, "app": _texts(app), "namespace": _texts(namespace),
                             "minSeverity": minSeverity, "full": full})
    start = read_cursor(cursor, state.generation, key)
    head = {
        "source": state.document["source"],
        "rulesRun": len(state.result.rules),
        "bySeverity": dict(Counter(d["severity"] for d in kept)),
        **_errors(state.document["errors"]),
    }
    items = kept if full else [compact_finding(d) for d in kept]
    return page(head, "findings", items, start, cap, (state.generation, key))


def finding(state: State, cap: int, id: str, cursor: str | None = None) -> str:
    """One finding in full; its evidence paged when it is long."""
    found = state.finding(id)
    if found is None and id.startswith("upgrade-check:"):
        raise ConfigError(f"no change {id!r}: upgrade_check's changes answer here once upgrade_check has run on this "
                          "server with the targets that gave them")
    if found is None:
        ids = [d["id"] for d in state.document["findings"][:5]]
        raise ConfigError(f"no finding {id!r} in this input (call scan for the ids; the first: {', '.join(ids)})"
                          if ids else f"no finding {id!r}: the scan of this input found nothing")
    key = query_key("finding", {"id": id})
    start = read_cursor(cursor, state.generation, key)
    head = {k: v for k, v in found.items() if k != "evidence"}
    evidence = [{"index": i, **e} for i, e in enumerate(found["evidence"])]
    return page(head, "evidence", evidence, start, cap, (state.generation, key))


def timeline(state: State, cap: int, around: str | None = None, window: str = "10m",
             components: str | list[str] | None = None, cursor: str | None = None) -> str:
    """Timeline entries in a window around a time or a finding, oldest first."""
    centre = around_time(around, "around") if around else None
    width = parse_go_duration(window)
    if width is None or width <= 0:
        raise ConfigError(f"window {window!r} is not a positive Go duration (e.g. 10m, 2h)")
    every = state.timeline
    if around and centre is None:
        centre = window_centre(around, every, state.result.findings, "around")
    wanted = _texts(components)
    known = sorted({e.component for e in every})
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise ConfigError(f"components {', '.join(unknown)}: not in this timeline (its components: "
                          f"{', '.join(known) or 'none'})")
    entries = clean([timeline_json(e) for e in select(every, centre, width, wanted)], state.snap.scrubber,
                    cache=state.cleaned)
    key = query_key("timeline", {"around": around, "window": window, "components": wanted})
    start = read_cursor(cursor, state.generation, key)
    head: dict[str, Any] = {"entriesInInput": len(every), "components": known}
    if centre is not None:
        half = timedelta(seconds=width / 2)
        head["window"] = {"from": format_time(shift(centre, -half)), "to": format_time(shift(centre, half))}
    return page(head, "entries", entries, start, cap, (state.generation, key))


APPLICATION_BASIS = "the Application's own status.health, as Argo CD computed it"


def _kind_matches(wanted: str, kind: str) -> bool:
    """kubectl's leniency: `Rollout`, `rollout` and `rollouts` (the resource name) name one kind."""
    return wanted.lower() in (kind.lower(), plural(kind))


def health(state: State, cap: int, kind: str | None = None, namespace: str | None = None, name: str | None = None,
           unhealthyOnly: bool = False, cursor: str | None = None) -> str:
    """The health Argo CD would show for the matching objects, with its message and which check decided."""
    named: dict[tuple[str, str, str], list[str]] = {}
    for f in state.result.findings:
        for ref in f.objects:
            named.setdefault((ref.kind, ref.namespace, ref.name), []).append(f.id)
    assessed = []
    bases: dict[str, str] = {}
    kinds: set[str] = set()
    for obj in sorted(state.snap.all(), key=lambda o: (o.kind, o.namespace, o.name)):
        kinds.add(obj.kind)
        if (kind and not _kind_matches(kind, obj.kind)) or (namespace is not None and obj.namespace != namespace) \
                or (name and not fnmatch.fnmatchcase(obj.name, name)):
            continue
        own = application_health(obj.raw)
        verdict = own or state.assessor.assess(obj.raw)
        if verdict is None and not name and not kind:
            continue  # no health check: listed only for an object asked for by kind or name
        if not unhealthyOnly or (verdict is not None and verdict.status is not HealthStatus.HEALTHY):
            assessed.append((obj, verdict))
            bases[obj.location] = APPLICATION_BASIS if own else state.assessor.basis(obj.raw)
    if kind and not any(_kind_matches(kind, k) for k in kinds):
        raise ConfigError(f"kind {kind!r}: no object of that kind in this input (kinds: {', '.join(sorted(kinds))})")
    rows: list[dict[str, Any]] = [{
        "apiVersion": obj.api_version, "kind": obj.kind, "namespace": obj.namespace, "name": obj.name,
        "location": obj.location,
        "status": verdict.status.value if verdict else None,
        "message": verdict.message if verdict else "",
        "basis": bases[obj.location],
        "findings": named.get((obj.kind, obj.namespace, obj.name), []),
    } for obj, verdict in worst_first(assessed)]
    key = query_key("health", {"kind": kind, "namespace": namespace, "name": name, "unhealthyOnly": unhealthyOnly})
    start = read_cursor(cursor, state.generation, key)
    head = {"note": "objects without a health check (status null) are left out unless asked for by kind or name",
            "byStatus": dict(Counter(str(r["status"]) for r in rows))}
    return page(head, "objects", clean(rows, state.snap.scrubber, cache=state.cleaned), start, cap,
                (state.generation, key))


def installation(state: State, cap: int, component: str | None = None, permissions: bool = True,
                 cursor: str | None = None) -> str:
    """The components with their versions, integrations and (unless not wanted) permissions, and the map's
    findings."""
    found = state.installation
    components = [c for c in found.components
                  if not component or component in (c.name, c.component, c.product) or fnmatch.fnmatchcase(
                      c.name, component)]
    if component and not components:
        names = ", ".join(sorted({c.component for c in found.components}))
        raise ConfigError(f"component {component!r}: none in this installation (components: {names or 'none'})")
    docs = [{k: v for k, v in component_json(c, found.permissions.get((c.namespace, c.name))).items()
             if permissions or k not in ("permissions", "permissionNotes")} for c in components]
    if ("map",) not in state.cache:  # the map's findings, redacted as the JSON contract has them, once
        state.cache[("map",)] = [compact_finding(f) for f in document(found.result)["findings"]]
    key = query_key("map", {"component": component, "permissions": permissions})
    start = read_cursor(cursor, state.generation, key)
    head = {"findings": state.cache[("map",)]}
    return page(head, "components", clean(docs, state.snap.scrubber, cache=state.cleaned), start, cap,
                (state.generation, key))


def deprecated_apis(state: State, cap: int, targetVersion: str | None = None, cursor: str | None = None) -> str:
    """Uses of deprecated and removed Kubernetes APIs in the input, at a target version."""
    from argo_doctor.helm.scan import chart_template_apis  # the reader of chart templates, as `deprecations`

    target = deprecations.parse_version(targetVersion) if targetVersion else None
    if targetVersion and target is None:
        raise ConfigError(f"targetVersion {targetVersion!r} is not a Kubernetes version like 1.25")
    cache_key = ("deprecations", target)
    if cache_key not in state.cache:
        problems: list[Any] = []
        folder = state.folder / f"deprecations-{len(state.cache)}"
        folder.mkdir()
        inputs = list(bundle.readable_inputs(state.inputs, folder, problems))
        target = target or _cluster_version(state)
        labels = {item.path: f"{item.given.name}!" for item in inputs if item.extracted}
        uses, found = deprecations.scan_paths([item.path for item in inputs], target, chart_template_apis, labels)
        state.cache[cache_key] = clean(deprecations_json(uses, [*problems, *found], target), state.snap.scrubber)
    doc = state.cache[cache_key]
    key = query_key("deprecations", {"targetVersion": targetVersion})
    start = read_cursor(cursor, state.generation, key)
    head = {"targetVersion": doc["targetVersion"],
            "removedInTarget": sum(1 for u in doc["uses"] if u["status"] == "removed" and u["certain"]),
            **_errors(doc["errors"])}
    return page(head, "uses", doc["uses"], start, cap, (state.generation, key))


def _cluster_version(state: State) -> deprecations.Version | None:
    """The cluster version the input's bundle.yaml names."""
    cluster = state.snap.meta.get("cluster")
    version = cluster.get("version") if isinstance(cluster, dict) else None
    return deprecations.parse_version(str(version or ""))


PRODUCT_TARGETS = {"toImageUpdater": "argocd-image-updater", "toRollouts": "argo-rollouts",
                   "toWorkflows": "argo-workflows", "toEvents": "argo-events"}


def upgrade_check(state: State, cap: int, to: str, installed: str | None = None, full: bool = False,
                  cursor: str | None = None, **others: str | None) -> str:
    """The documented changes on the way to the target releases that hit this installation."""
    from argo_doctor.analyzers.upgrade_check import UpgradeCheck  # its table is read only when asked

    targets = release_targets((("argo-cd", "to", to),
                               *((PRODUCT_TARGETS[argument], argument, given) for argument, given in others.items())))
    wanted = targets["argo-cd"]
    cache_key = ("upgrade", tuple(sorted(targets.items())), installed)
    if cache_key not in state.cache:
        check = UpgradeCheck(targets, installed_releases(state.snap, wanted, installed, ("installed", "to")))
        result = run_scan(state.snap, [check], workers=1)
        doc = document(result)
        state.extra.update({f["id"]: f for f in doc["findings"]})
        state.cache[cache_key] = (doc["findings"], {
            product: {"installed": version_text(version),
                      "to": version_text(targets[product]) if product in targets else None}
            for product, (version, _) in sorted(check.installed.items())})
    findings, products = state.cache[cache_key]
    key = query_key("upgrade_check", {"to": to, "installed": installed, "full": full, **others})
    start = read_cursor(cursor, state.generation, key)
    head = {"installed": products["argo-cd"]["installed"], "to": version_text(wanted), "products": products,
            "breaking": sum(1 for f in findings if Severity.parse(f["severity"]) >= Severity.HIGH)}
    items = findings if full else [compact_finding(f) for f in findings]
    return page(head, "changes", items, start, cap, (state.generation, key))


def rules(state: State, cap: int, cursor: str | None = None) -> str:
    """Every rule: what it looks for, its options, and how many findings it raised in this input."""
    counts = Counter(f.rule for f in state.result.findings)
    items = []
    for analyzer in select_analyzers():
        module = sys.modules[type(analyzer).__module__]
        items.append({"id": analyzer.id, "title": analyzer.title,
                      "looksFor": " ".join((module.__doc__ or type(analyzer).__doc__ or "").split()),
                      "options": dict(analyzer.options), "findings": counts.get(analyzer.id, 0)})
    key = query_key("rules", {})
    start = read_cursor(cursor, state.generation, key)
    return page({"note": "a rule with 0 findings looked and found nothing in this input"}, "rules", items, start,
                cap, (state.generation, key))


def summary(state: State) -> dict[str, Any]:
    """What the input is, for `refresh` and the server's first line."""
    return {"source": state.document["source"], "findings": len(state.result.findings),
            "bySeverity": dict(Counter(f.severity.label for f in state.result.findings)),
            "errorCount": len(state.document["errors"])}
