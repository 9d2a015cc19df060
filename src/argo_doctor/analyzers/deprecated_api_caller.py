"""deprecated-api-caller: who calls deprecated APIs at run time, from the API server's audit log.

Audit records that carry `k8s.io/deprecated: "true"` (or, under an audit policy that omits the
annotation, whose group/version/resource is in `knowledge/deprecated_apis.yaml`) are grouped by
caller (user agent product and version, and user), verb and group/version/resource. Each group is
attributed through `knowledge/deprecated_callers.yaml` (component, version range, request shape →
code path, harm, fixed version) and tied to what the caller was doing: named reads of a CRD during
the sync windows of the Applications that contain that CRD, watches since controller restarts.
`metrics/*.prom` adds `apiserver_requested_deprecated_apis` joined with `apiserver_request_total`. The pods
that made the calls come from the records' `user.extra` (the pod a ServiceAccount token is bound to), found in
the snapshot when it holds them; the fix runs `argo-doctor deprecations` at the API's removal release.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence, plural
from argo_doctor.deprecations import DeprecatedApi, deprecated_apis, parse_version
from argo_doctor.knowledge import load_rows
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.audit import AuditEvent
from argo_doctor.sources.metrics import format_value
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

WINDOW_SLACK = timedelta(seconds=5)
MAX_TIMES = 5000
"""Times of named CRD reads kept per caller, to tie them to syncs."""
MAX_KEPT_TIMES = 100_000
"""Times of named CRD reads kept over all callers (under 100 bytes each)."""
MAX_GROUPS = 1000
"""Callers (user agent, user, group/version/resource) followed; the requests of more are only counted. A
cluster has a few dozen deprecated callers."""
MAX_VERBS = 16
"""Distinct verbs counted per caller (Kubernetes has nine); more are counted as `other`."""
MAX_TEXT = 512
"""Kept strings from a record (user agent, user, request URI) are cut to this length."""
MAX_PODS = 16
"""Distinct calling pods kept per caller (a Deployment's replicas and their restarts); more are counted."""
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
# What the API server's ServiceAccount authenticator puts in the audit record's `user.extra` for a token bound to a
# pod (every projected token): k8s.io/apiserver/pkg/authentication/serviceaccount/util.go, PodNameKey, PodUIDKey
# and NodeNameKey; the node name since Kubernetes v1.30 (ServiceAccountTokenPodNodeInfo, KEP-4193).
_METRIC_NAMES = frozenset({"apiserver_requested_deprecated_apis", "apiserver_request_total"})
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
    named: bool = False
    """Some request named an object."""
    names: dict[str, list[datetime]] = field(default_factory=lambda: defaultdict(list))
    """Times of named CRD reads by name, up to MAX_TIMES."""
    timed: int = 0
    untimed: int = 0
    """Named CRD reads whose times were kept, and not kept."""
    first: datetime | None = None
    last: datetime | None = None
    examples: list[AuditEvent] = field(default_factory=list)
    pods: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    """Requests by calling pod (name, uid, node), from `user.extra`, up to MAX_PODS pods."""
    other_pods: int = 0
    """Requests by pods past MAX_PODS."""

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
    needs = Needs(frozenset({"argoproj.io/Application"}), audit=True, metrics=True)
    audit = True

    def __init__(self) -> None:
        self._groups: dict[tuple[str, ...], _Calls] = {}
        self._timed = 0
        self._dropped = 0
        """Requests of callers past MAX_GROUPS."""

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
        product, version = (part[:MAX_TEXT] for part in parse_user_agent(event.user_agent))
        username = event.username[:MAX_TEXT]
        key = (product, version, username, event.api_group, event.api_version, event.resource, event.subresource)
        calls = self._groups.get(key)
        if calls is None:
            if len(self._groups) >= MAX_GROUPS:
                self._dropped += 1
                return
            calls = self._groups[key] = _Calls(product, version, username, event.api_group, event.api_version,
                                               event.resource, event.subresource, removed, annotated)
        calls.verbs[event.verb if event.verb in calls.verbs or len(calls.verbs) < MAX_VERBS else "other"] += 1
        when = event.received
        if when is not None:
            calls.first = min(calls.first or when, when)
            calls.last = max(calls.last or when, when)
        if event.name:
            calls.named = True
            if when is not None and calls.resource == "customresourcedefinitions":
                if calls.timed < MAX_TIMES and self._timed < MAX_KEPT_TIMES:
                    calls.names[event.name[:MAX_TEXT]].append(when)
                    calls.timed += 1
                    self._timed += 1
                else:
                    calls.untimed += 1
        pod = _calling_pod(event)
        if pod is not None:
            if pod in calls.pods or len(calls.pods) < MAX_PODS:
                calls.pods[pod] += 1
            else:
                calls.other_pods += 1
        if len(calls.examples) < 2:
            calls.examples.append(replace(event, annotations={}, request_uri=event.request_uri[:MAX_TEXT],
                                          user_agent=event.user_agent[:MAX_TEXT], username=username))

    def _metrics(self, ctx: Context) -> dict[tuple[str, str, str], list[Evidence]]:
        """`apiserver_requested_deprecated_apis` rows with the matching `apiserver_request_total` counts."""
        deprecated: dict[tuple[str, str, str], tuple[str, float]] = {}
        totals: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for sample in ctx.snap.metrics(_METRIC_NAMES):
            labels = sample.labels
            key = (labels.get("group", ""), labels.get("version", ""), labels.get("resource", ""))
            if sample.name == "apiserver_requested_deprecated_apis":
                deprecated[key] = (sample.location, sample.value)
            else:
                totals[key].append(f"{labels.get('verb')} {labels.get('code')}: {format_value(sample.value)}")
        return {
            key: [Evidence("metric", location, f"apiserver_requested_deprecated_apis{{{key[0]}/{key[1]} {key[2]}}} "
                           f"= {format_value(value)}; apiserver_request_total: "
                           f"{', '.join(totals.get(key, [])) or 'none'}")]
            for key, (location, value) in deprecated.items()
        }

    def _finding(
        self, ctx: Context, calls: _Calls, metrics: list[Evidence], cluster: tuple[int, int] | None
    ) -> Finding:
        known = self._known(calls)
        verbs = ", ".join(f"{n} {v.upper()}" for v, n in sorted(calls.verbs.items(), key=lambda kv: -kv[1]))
        first, last = calls.first, calls.last
        caller = f"{calls.product} {calls.version}".strip() or calls.username
        removed = f"removed in Kubernetes {calls.removed}" if calls.removed else "deprecated"
        lines = [
            f"{caller} (user {calls.username}) called {calls.gvr}, {removed}: {verbs}, "
            f"from {format_time(first)} to {format_time(last)}."
            + ("" if calls.annotated else " The audit records carry no k8s.io/deprecated annotation (audit policy); "
               "the API was matched against the deprecation table.")
        ]
        if self._dropped:
            lines.append(f"The audit log holds {_count(self._dropped, 'more deprecated request')} by callers past "
                         f"the first {MAX_GROUPS:,} argo-doctor follows; they are in no finding.")
        evidence = [Evidence("audit", r.location, f"{r.verb} {r.request_uri} by {r.username} ({r.user_agent}), "
                             f"code {r.code}", r.received) for r in calls.examples]
        evidence += metrics
        origin, origin_evidence = _pods_sentence(ctx, calls)
        if origin:
            lines.append(origin)
        evidence += origin_evidence
        moments, moment_evidence = self._moments(ctx, calls)
        lines += moments
        evidence += moment_evidence
        removed_at = parse_version(calls.removed) if calls.removed else None
        breaks = cluster is not None and removed_at is not None and removed_at <= cluster
        if known is not None:
            lines.append(
                f"Known call: {known['code_path']}, {known['when']}. {' '.join(str(known['why']).split())}"
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
                text=(f"Upgrade {calls.product} to a release with the fix: {' '.join(str(fix).split())}. "
                      if fix else "")
                # a known call is the component's own code: its manifests' apiVersion is not the user's to change
                + (f"Use {api.replacement} instead. " if known is None and api is not None and api.replacement else "")
                + (" ".join(str(known.get("after_removal") or "Nothing breaks when the API is removed, but the call "
                                "keeps it on deprecation reports until then.").split())
                   if known is not None and not known.get("harmful") else
                   "Find the client by its user agent and move it to the replacement API before upgrading the "
                   "cluster."),
                command=_deprecations_command(removed_at or cluster),
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
            if calls.untimed:
                lines.append(f"The times of {_count(calls.untimed, 'more named request')} were not kept "
                             f"({MAX_TIMES:,} per caller, {MAX_KEPT_TIMES:,} in all): the counts of requests "
                             "during syncs are lower bounds.")
        elif set(calls.verbs) & {"list", "watch"}:
            restarts = _restarts(ctx, calls.product)
            if restarts:
                lines.append(f"{calls.product} (re)started at {', '.join(format_time(t) or '' for t in restarts)}; "
                             "it lists and watches every resource it caches from then on.")
        return lines, evidence


def _count(count: int, word: str) -> str:
    """`1 request`, `12,345 requests`."""
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _first(values: Any) -> str:
    """The first string of a `user.extra` value (a list of strings), cut to MAX_TEXT."""
    items = as_list(values)
    return str(items[0])[:MAX_TEXT] if items and isinstance(items[0], str) else ""


def _calling_pod(event: AuditEvent) -> tuple[str, str, str] | None:
    """(pod name, pod uid, node name) from the record's `user.extra`, when the caller's token is bound to a pod."""
    extra = event.extra
    name = _first(extra.get(POD_NAME_KEY))
    if not name:
        return None
    return name, _first(extra.get(POD_UID_KEY)), _first(extra.get(NODE_NAME_KEY))


def _pods_sentence(ctx: Context, calls: _Calls) -> tuple[str, list[Evidence]]:
    """Which pods made the requests, tied to the pods and workloads of the snapshot (in the text only: the
    finding's objects, and so its id, stay those of the caller)."""
    if not calls.pods:
        return "", []
    parts = calls.username.split(":")
    namespace = parts[2] if calls.username.startswith("system:serviceaccount:") and len(parts) == 4 else ""
    described: list[str] = []
    evidence: list[Evidence] = []
    for (name, uid, node), count in sorted(calls.pods.items(), key=lambda kv: (-kv[1], kv[0])):
        text = f"{namespace}/{name}" if namespace else name
        pod = ctx.snap.get("Pod", name, namespace, "") if namespace else None
        if pod is None:
            text += " (not in the input)"
        elif uid and pod.uid and pod.uid != uid:
            text += f" (uid {uid}: an earlier pod of that name; the input holds the one with uid {pod.uid})"
        else:
            workload = ctx.snap.workload_of(pod)
            if workload is not None:
                text += f" of {workload.kind} {workload.name}"
            if len(evidence) < 2:
                evidence.append(object_evidence(pod, ".metadata.uid", f"Pod {pod.name} uid {pod.uid}"
                                                + (f" on node {pod.node_name}" if pod.node_name else "")))
        if node:
            text += f" on node {node}"
        described.append(f"{text}: {_count(count, 'request')}")
    more = f"; and {_count(calls.other_pods, 'request')} from more pods" if calls.other_pods else ""
    return (f"The requests came from pod{'s' if len(described) > 1 else ''} " + "; ".join(described) + more
            + " (the pod bound to the caller's token, in the audit records' user.extra)."), evidence


def _deprecations_command(target: tuple[int, int] | None) -> str:
    """`argo-doctor deprecations` at the version the finding is about: the API's removal release, else the
    cluster's version (without either, at every known deprecation)."""
    option = f" --target-version v{target[0]}.{target[1]}" if target is not None else ""
    return f"argo-doctor deprecations <repo>{option}"


def _request_matches(request: dict[str, Any], calls: _Calls) -> bool:
    def ok(key: str, value: str) -> bool:
        wanted = request.get(key)
        return wanted in (None, "*") or str(wanted) == value

    if not (ok("group", calls.group) and ok("version", calls.api_version) and ok("resource", calls.resource)):
        return False
    verbs = [str(v) for v in as_list(request.get("verbs"))]
    if verbs and not set(calls.verbs) <= set(verbs):
        return False
    if request.get("named") is True and not calls.named:
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
