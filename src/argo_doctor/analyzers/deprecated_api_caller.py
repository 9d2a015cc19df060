"""deprecated-api-caller: who calls deprecated APIs at run time, from the API server's audit log.

Audit records that carry `k8s.io/deprecated: "true"` (or, under an audit policy that omits the
annotation, whose group/version/resource is in `knowledge/deprecated_apis.yaml`) are grouped by
caller (user agent product and version, and user), verb and group/version/resource. Each group is
attributed through `knowledge/deprecated_callers.yaml` (component, version range, request shape →
code path, harm, fixed version) and tied to what the caller was doing: named reads of a CRD during
the sync windows of the Applications that contain that CRD, watches since controller restarts.
`metrics/*.prom` adds `apiserver_requested_deprecated_apis` joined with `apiserver_request_total`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence, plural
from argo_doctor.deprecations import DeprecatedApi, deprecated_apis, parse_version
from argo_doctor.knowledge import load_rows
from argo_doctor.model import Evidence, Finding, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.audit import AuditEvent
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

WINDOW_SLACK = timedelta(seconds=5)
MAX_TIMES = 5000
_METRIC = re.compile(r"^(?P<name>[a-zA-Z_:][\w:]*)\{(?P<labels>[^}]*)\}\s+(?P<value>[-+0-9.eE]+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?")


def parse_user_agent(agent: str) -> tuple[str, str]:
    """(product, version) of a Kubernetes client user agent: `argocd-application-controller/v2.0.5+4c9 (…)`."""
    head = agent.split(" ", 1)[0]
    product, _, version = head.partition("/")
    return product, version


def semver_key(text: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]] | None:
    """A sort key with semver 2.0 precedence (a pre-release sorts before its release)."""
    found = _SEMVER.match(text.strip().split("+", 1)[0])
    if not found:
        return None
    pre = found.group(4)
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split(".")) if pre else ()
    return int(found.group(1)), int(found.group(2)), int(found.group(3)), 0 if pre else 1, parts


def in_ranges(version: str, ranges: list[list[str]]) -> bool:
    """Whether a version falls in one of the [min_inclusive, max_exclusive] pairs."""
    key = semver_key(version)
    if key is None:
        return False
    for low, high in ranges:
        lo, hi = semver_key(str(low)), semver_key(str(high))
        if lo is not None and hi is not None and lo <= key < hi:
            return True
    return False


@cache
def known_callers() -> tuple[dict[str, Any], ...]:
    """The rows of `knowledge/deprecated_callers.yaml`."""
    return tuple(load_rows("deprecated_callers.yaml"))


@cache
def _by_resource() -> dict[tuple[str, str, str], DeprecatedApi]:
    return {(api.group, api.version, api.resource): api for api in deprecated_apis().values() if api.resource}


@dataclass
class _Calls:
    """Deprecated calls of one caller to one group/version/resource."""

    product: str
    version: str
    username: str
    group: str
    api_version: str
    resource: str
    subresource: str
    removed: str | None
    annotated: bool
    verbs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    names: dict[str, list[datetime]] = field(default_factory=lambda: defaultdict(list))
    times: list[datetime] = field(default_factory=list)
    examples: list[AuditEvent] = field(default_factory=list)

    @property
    def count(self) -> int:
        """Requests in all."""
        return sum(self.verbs.values())

    @property
    def gvr(self) -> str:
        """`group/version resource`."""
        api = f"{self.group}/{self.api_version}" if self.group else self.api_version
        return f"{api} {self.resource}" + (f"/{self.subresource}" if self.subresource else "")


class DeprecatedApiCaller(Analyzer):
    """Run-time callers of deprecated APIs, attributed to a code path when known."""

    id = "deprecated-api-caller"
    title = "Deprecated API called at run time"
    audit = True

    def __init__(self) -> None:
        self._groups: dict[tuple[str, ...], _Calls] = {}

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per caller and deprecated group/version/resource."""
        groups = self._groups
        metrics = self._metrics(ctx)
        cluster = parse_version(str(mapping(ctx.snap.meta.get("cluster")).get("version") or ""))
        for calls in sorted(groups.values(), key=lambda c: (-c.count, c.product, c.gvr)):
            api = _by_resource().get((calls.group, calls.api_version, calls.resource))
            if not calls.annotated and cluster is not None and (api is None or api.status_at(cluster) is None):
                continue  # matched by the table only, and not deprecated yet at the cluster's version
            yield self._finding(ctx, calls, metrics.get((calls.group, calls.api_version, calls.resource), []), cluster)

    def on_audit(self, event: AuditEvent) -> None:
        """Group deprecated requests by caller and group/version/resource."""
        if event.stage not in ("", "ResponseComplete") or not event.resource:
            return
        annotated = event.annotations.get("k8s.io/deprecated") == "true"
        api = _by_resource().get((event.api_group, event.api_version, event.resource))
        if not annotated and (api is None or api.component):
            return
        removed = event.annotations.get("k8s.io/removed-release") or (api.removed_in if api else None)
        product, version = parse_user_agent(event.user_agent)
        key = (product, version, event.username, event.api_group, event.api_version, event.resource,
               event.subresource)
        calls = self._groups.get(key)
        if calls is None:
            calls = self._groups[key] = _Calls(product, version, event.username, event.api_group, event.api_version,
                                               event.resource, event.subresource, removed, annotated)
        calls.verbs[event.verb] += 1
        if event.received is not None and len(calls.times) < MAX_TIMES:
            calls.times.append(event.received)
            if event.name:
                calls.names[event.name].append(event.received)
        if len(calls.examples) < 2:
            calls.examples.append(event)

    def _metrics(self, ctx: Context) -> dict[tuple[str, str, str], list[Evidence]]:
        """`apiserver_requested_deprecated_apis` rows with the matching `apiserver_request_total` counts."""
        deprecated: dict[tuple[str, str, str], tuple[str, int]] = {}
        totals: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for root in ctx.snap.roots:
            folder = root / "metrics"
            for path in sorted(folder.glob("*.prom")) if folder.is_dir() else []:
                display = path.relative_to(root).as_posix()
                for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                    found = _METRIC.match(line)
                    if not found:
                        continue
                    labels = dict(_LABEL.findall(found.group("labels")))
                    key = (labels.get("group", ""), labels.get("version", ""), labels.get("resource", ""))
                    if found.group("name") == "apiserver_requested_deprecated_apis":
                        deprecated[key] = (f"{display}:{number}", int(float(found.group("value"))))
                    elif found.group("name") == "apiserver_request_total":
                        totals[key].append(f"{labels.get('verb')} {labels.get('code')}: {found.group('value')}")
        return {
            key: [Evidence("metric", location, f"apiserver_requested_deprecated_apis{{{key[0]}/{key[1]} {key[2]}}} "
                           f"= {value}; apiserver_request_total: {', '.join(totals.get(key, [])) or 'none'}")]
            for key, (location, value) in deprecated.items()
        }

    def _finding(
        self, ctx: Context, calls: _Calls, metrics: list[Evidence], cluster: tuple[int, int] | None
    ) -> Finding:
        known = self._known(calls)
        verbs = ", ".join(f"{n} {v.upper()}" for v, n in sorted(calls.verbs.items(), key=lambda kv: -kv[1]))
        first, last = min(calls.times, default=None), max(calls.times, default=None)
        caller = f"{calls.product} {calls.version}".strip() or calls.username
        removed = f"removed in Kubernetes {calls.removed}" if calls.removed else "deprecated"
        lines = [
            f"{caller} (user {calls.username}) called {calls.gvr}, {removed}: {verbs}, "
            f"from {format_time(first)} to {format_time(last)}."
            + ("" if calls.annotated else " The audit records carry no k8s.io/deprecated annotation (audit policy); "
               "the API was matched against the deprecation table.")
        ]
        evidence = [Evidence("audit", r.location, f"{r.verb} {r.request_uri} by {r.username} ({r.user_agent}), "
                             f"code {r.code}", r.received) for r in calls.examples]
        evidence += metrics
        moments, moment_evidence = self._moments(ctx, calls)
        lines += moments
        evidence += moment_evidence
        removed_at = parse_version(calls.removed) if calls.removed else None
        breaks = cluster is not None and removed_at is not None and removed_at <= cluster
        if known is not None:
            lines.append(
                f"Known call: {known['code_path']}, {known['when']}. "
                + ("Harmless" if not known.get("harmful") else "Harmful") + f": {' '.join(str(known['why']).split())}"
                + (f" Fixed in {known['fixed_in']}." if known.get("fixed_in") else "")
            )
            severity = Severity.LOW if not known.get("harmful") else Severity.HIGH
        else:
            if calls.product.startswith("argocd") and self._known_for_other_versions(calls):
                lines.append(f"The known Argo CD code path that makes this call does not apply to {calls.version}: "
                             "another caller in it makes the request.")
            severity = Severity.MEDIUM
        if breaks:
            severity = max(severity, Severity.HIGH)
            assert cluster is not None
            lines.append(f"The cluster runs {cluster[0]}.{cluster[1]} (≥ {calls.removed}): these requests fail now.")
        api = _by_resource().get((calls.group, calls.api_version, calls.resource))
        fix = (known.get("fixed_in") if known else None)
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"{caller} calls {calls.gvr} ({removed})"
            + (f": {known['id']}" if known is not None else ""),
            summary=" ".join(lines),
            objects=[Ref("v1", "ServiceAccount", *calls.username.split(":")[2:4])]
            if calls.username.startswith("system:serviceaccount:") and calls.username.count(":") == 3 else [],
            evidence=evidence,
            remediation=Remediation(
                text=(f"Upgrade {calls.product} to {fix}. " if fix else "")
                + (f"Use {api.replacement} instead. " if api is not None and api.replacement else "")
                + ("Nothing breaks when the API is removed, but the call keeps it on deprecation reports until then."
                   if known is not None and not known.get("harmful") else
                   "Find the client by its user agent and move it to the replacement API before upgrading the "
                   "cluster."),
                command="argo-doctor deprecations <repo> --target-version " + (calls.removed or ""),
                docs=tuple(s.strip() for s in str(known["source"]).split(";")) if known else
                ("https://kubernetes.io/docs/reference/using-api/deprecation-guide/",),
            ),
        )

    def _known(self, calls: _Calls) -> dict[str, Any] | None:
        for row in known_callers():
            if row.get("component") != calls.product or not in_ranges(calls.version, row.get("versions") or []):
                continue
            if _request_matches(mapping(row.get("request")), calls):
                return row
        return None

    def _known_for_other_versions(self, calls: _Calls) -> bool:
        return any(row.get("component") == calls.product and _request_matches(mapping(row.get("request")), calls)
                   for row in known_callers())

    def _moments(self, ctx: Context, calls: _Calls) -> tuple[list[str], list[Evidence]]:
        """Tie named CRD reads to the syncs of Applications containing those CRDs; watches to restarts."""
        lines: list[str] = []
        evidence: list[Evidence] = []
        if calls.resource == "customresourcedefinitions" and calls.names:
            for app in ctx.snap.applications():
                crds = {str(mapping(e).get("name")) for e in as_list(app.status.get("resources"))
                        if mapping(e).get("kind") == "CustomResourceDefinition"}
                windows = _sync_windows(app)
                for name in sorted(crds & set(calls.names)):
                    inside = [t for t in calls.names[name] if any(a - WINDOW_SLACK <= t <= b + WINDOW_SLACK
                                                                  for a, b, _ in windows)]
                    used = [w for w in windows if any(w[0] - WINDOW_SLACK <= t <= w[1] + WINDOW_SLACK for t in inside)]
                    if inside:
                        lines.append(f"{plural(len(inside), 'request')} for customresourcedefinitions/{name} fell in "
                                     f"the {plural(len(used), 'sync')} of Application {app.name}, which contains that "
                                     f"CRD ({', '.join(format_time(w[0]) or '' for w in used)}).")
                        evidence.extend(object_evidence(app, w[2], f"sync {format_time(w[0])} → {format_time(w[1])}",
                                                        w[0]) for w in used[:3])
        elif set(calls.verbs) & {"list", "watch"}:
            restarts = _restarts(ctx, calls.product)
            if restarts:
                lines.append(f"{calls.product} (re)started at {', '.join(format_time(t) or '' for t in restarts)}; "
                             "it lists and watches every resource it caches from then on.")
        return lines, evidence


def _request_matches(request: dict[str, Any], calls: _Calls) -> bool:
    def ok(key: str, value: str) -> bool:
        wanted = request.get(key)
        return wanted in (None, "*") or str(wanted) == value

    if not (ok("group", calls.group) and ok("version", calls.api_version) and ok("resource", calls.resource)):
        return False
    verbs = [str(v) for v in as_list(request.get("verbs"))]
    if verbs and not set(calls.verbs) <= set(verbs):
        return False
    if request.get("named") is True and not calls.names:
        return False
    return str(request.get("subresource") or "") == calls.subresource


def _sync_windows(app: Obj) -> list[tuple[datetime, datetime, str]]:
    windows = []
    for index, entry in enumerate(as_list(app.status.get("history"))):
        entry = mapping(entry)
        start, end = parse_time(entry.get("deployStartedAt")), parse_time(entry.get("deployedAt"))
        if start and end:
            windows.append((start, end, f".status.history[{index}]"))
    op = mapping(app.status.get("operationState"))
    start, end = parse_time(op.get("startedAt")), parse_time(op.get("finishedAt"))
    if start and end and all(abs((start - w[0]).total_seconds()) > 1 for w in windows):
        windows.append((start, end, ".status.operationState"))
    return windows


def _restarts(ctx: Context, product: str) -> list[datetime]:
    found = []
    for component in ctx.snap.components:
        if f"argocd-{component.name}" != product:
            continue
        for pod in component.pods:
            for status in as_list(pod.status.get("containerStatuses")):
                started = parse_time(mapping(mapping(mapping(status).get("state")).get("running")).get("startedAt"))
                if started is not None:
                    found.append(started)
    return sorted(found)
