"""auto-sync-without-change: automated syncs that apply the revision already deployed.

Nobody pushed, yet Argo CD synced: the manifests it rendered from the same revision differed
from what was live. The usual cause is a chart that renders differently every time (generated
certificates, random passwords) re-rendered after the repo-server's manifest cache expired. The
finding lists when it happened and how often, which resources the last such sync changed, the
likely trigger with the repo-server's `manifest cache miss` and `helm template` lines before each
sync, and what broke right after (calls to webhooks the sync reconfigured), as a causal chain.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any, NamedTuple

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import (
    event_evidence,
    log_evidence,
    object_evidence,
    plural,
    resource_ref,
    revision_of,
)
from argo_doctor.facts.managed_fields import foreign_writes
from argo_doctor.facts.webhooks import CONFIG_KINDS, WEBHOOK_NEEDS, failed_webhook_name
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.audit import AuditEvent
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import format_time, parse_go_duration, parse_time, shift

MAX_LINES = 20_000
MAX_TEXT = 4096
"""A kept log line keeps this much of its message (the cache key is at its start) and only the field the
rule reads."""
MAX_EXCERPT = 512
"""A kept audit write keeps this much of its excerpt (about 200 characters as the API server writes it)."""
BURST_GAP = 600.0
"""Seconds between two controller writes that make them two syncs."""
MAX_BURSTS = 32
"""Bursts of controller writes kept per object: the latest (an object synced once a day: a month)."""
MAX_KEPT_BURSTS = 50_000
"""Bursts kept over all objects, under 1 KiB each; an object first written once this many are kept is not
followed (its writes are counted)."""
BURST_HEAD = 3
"""Writes kept at the start of each burst, to cut it exactly at the last deploy when that falls inside it."""
MAX_NAME = 253
"""A Kubernetes object name is at most this long; writes to longer names are not kept."""
BEFORE = timedelta(minutes=10)
AFTER = timedelta(minutes=5)
DEFAULT_CACHE_EXPIRATION = 24 * 3600.0
HASH_SUFFIX = re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{10}$")
"""The content hash kustomize appends to a generated ConfigMap or Secret name (10 characters of its alphabet
without vowels and look-alikes, `api/hasher`)."""
GENERATED_DOCS = (
    "https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/configmapgenerator/",
    "https://helm.sh/docs/howto/charts_tips_and_tricks/#automatically-roll-deployments",
)
CACHE_KEYS = ("reposerver.repo.cache.expiration", "reposerver.default.cache.expiration")
DOCS = (
    "https://argo-cd.readthedocs.io/en/stable/user-guide/helm/#random-data",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/diffing/",
    "https://argo-cd.readthedocs.io/en/stable/operator-manual/high_availability/#argocd-repo-server",
)


@dataclass
class _Instance:
    """One automated sync of an unchanged revision."""

    start: datetime
    revision: str
    source: str
    evidence: list[Evidence] = field(default_factory=list)
    """What shows this sync; the correlated lines and failures follow."""
    chain: list[int] = field(default_factory=list)
    trigger: str = ""
    failures: list[str] = field(default_factory=list)
    workflow_failed: bool = False
    """A Workflow step's pod was refused by a webhook the sync reconfigured."""


class _Write(NamedTuple):
    """One write of the application controller, as the finding shows it."""

    time: datetime
    location: str
    excerpt: str


@dataclass(slots=True)
class _Burst:
    """Controller writes to one object, each within BURST_GAP of the one before."""

    head: list[_Write]
    """The first BURST_HEAD writes, oldest first."""
    last: _Write
    count: int


@dataclass(slots=True)
class _Object:
    """The kept bursts of one object, oldest first, and what fell out of them."""

    bursts: list[_Burst] = field(default_factory=list)
    dropped_until: datetime | None = None
    """The last write of the bursts dropped (the oldest go first)."""


class _Writes:
    """The application controller's writes by object, as bursts: bounded memory whatever the audit log
    holds (MAX_BURSTS per object, MAX_KEPT_BURSTS in all, BURST_HEAD writes and the last per burst),
    whatever the order of the records."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], _Object] = {}
        self.kept = 0
        self.dropped = 0
        """Writes not kept: in bursts that fell out, or to objects not followed."""
        self.unfollowed = False
        """Some object was not followed (MAX_KEPT_BURSTS reached before its first write)."""

    def add(self, key: tuple[str, str, str], write: _Write) -> None:
        """Add one write to its object's bursts, merging the bursts it joins."""
        obj = self.objects.get(key)
        if obj is None:
            if self.kept >= MAX_KEPT_BURSTS:
                self.dropped += 1
                self.unfollowed = True
                return
            obj = self.objects[key] = _Object()
        bursts = obj.bursts
        if bursts and bursts[-1].last.excerpt == write.excerpt:
            write = write._replace(excerpt=bursts[-1].last.excerpt)  # one string for an object's same writes
        gap = timedelta(seconds=BURST_GAP)
        at = len(bursts)
        while at and bursts[at - 1].head[0].time - gap > write.time:
            at -= 1
        joined = [b for b in bursts[max(at - 2, 0):at] if b.last.time + gap >= write.time]
        if not joined:
            bursts.insert(at, _Burst([write], write, 1))
            self.kept += 1
        else:  # it joins the burst before it, or closes the gap between two
            merged = joined[-1]
            merged.head = sorted([*(w for b in joined for w in b.head), write])[:BURST_HEAD]
            merged.last = max([*(b.last for b in joined), write], key=lambda w: w.time)
            merged.count = sum(b.count for b in joined) + 1
            if len(joined) == 2:
                del bursts[at - 2]
                self.kept -= 1
        if len(bursts) > MAX_BURSTS or self.kept > MAX_KEPT_BURSTS:
            oldest = bursts.pop(0)
            self.kept -= 1
            self.dropped += oldest.count
            obj.dropped_until = max(obj.dropped_until or oldest.last.time, oldest.last.time)


def _cache_key(message: str) -> str | None:
    """`repo|path` of a repo-server cache key (`…RepoURL:<repo>,Path:<path>,…`) in a message: the first
    comma-separated part holding `RepoURL:` that the part `Path:…` and another comma follow. A regex with
    `[^,]*` would run to the next comma from each `RepoURL:`: quadratic on a line of them."""
    parts = message.split(",")
    for index in range(len(parts) - 2):
        at = parts[index].find("RepoURL:")
        if at >= 0 and parts[index + 1].startswith("Path:"):
            return f"{parts[index][at + len('RepoURL:'):]}|{parts[index + 1][len('Path:'):].strip('/')}"
    return None


def _line_keys(sig: str, record: LogRecord, match: re.Match[str] | None) -> list[str]:
    """The keys a kept line is found by: repo|path, release, or application name."""
    if sig == "argocd.manifest-cache-miss":
        key = _cache_key(record.message[:MAX_TEXT])  # a line kept unparsed is not trimmed yet
        return [key] if key is not None else []
    if sig == "argocd.helm-template":
        return [match.group("release")] if match is not None else []
    if sig == "argocd.operation-phase":
        return [match.group("app")] if match is not None else []
    if sig == "argocd.automated-sync":
        return [str(record.fields.get("application") or "")]
    return [""]


_Line = tuple[LogRecord, re.Match[str] | None]
_UNTIMED = datetime.min.replace(tzinfo=UTC)


def _line_time(line: _Line) -> datetime:
    return line[0].time or _UNTIMED


def _app_keys(app: Obj, sig: str) -> tuple[str, ...]:
    """The keys that tie lines of `sig` to `app` (see `_line_keys`)."""
    source = mapping(app.spec.get("source"))
    if sig == "argocd.manifest-cache-miss":
        return (f"{source.get('repoURL')}|{str(source.get('path') or '').strip('/')}",)
    if sig == "argocd.helm-template":
        return (str(mapping(source.get("helm")).get("releaseName") or app.name),)
    if sig in ("argocd.operation-phase", "argocd.automated-sync"):
        return (app.name, f"{app.namespace}/{app.name}")
    return ("",)


class AutoSyncWithoutChange(Analyzer):
    """Automated syncs without a new commit."""

    id = "auto-sync-without-change"
    title = "Automated sync without a new commit"
    needs = Needs(frozenset({"argoproj.io/Application"}) | WEBHOOK_NEEDS, events=True, audit=True, app_resources=True)
    audit = True
    signatures = (
        "argocd.manifest-cache-miss",
        "argocd.helm-template",
        "argocd.automated-sync",
        "argocd.operation-phase",
        "k8s.webhook-call-failed",
    )

    def __init__(self) -> None:
        self._lines: dict[str, deque[tuple[LogRecord, re.Match[str] | None]]] = {
            sig: deque(maxlen=MAX_LINES) for sig in self.signatures
        }
        self._writes = _Writes()
        self._lost: set[tuple[str, str]] = set()
        """Applications some of whose writes after the last deploy were not kept."""
        self._index: dict[tuple[str, str], list[_Line]] | None = None
        self._sorted: dict[tuple[str, tuple[str, ...]], tuple[list[datetime], list[_Line]]] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the lines (bounded) for correlation with each Application's syncs."""
        if record.time is None:
            return
        # a line not parsed yet is short (EXCERPT_LIMIT): kept as it is, and parsed only if read
        if record.parsed and (len(record.message) > MAX_TEXT or len(record.fields) > 1):
            application = record.fields.get("application")
            record = record.trimmed(record.message[:MAX_TEXT],
                                    {"application": application} if application is not None else {})
        self._lines[signature.id].append((record, match))

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per Application with automated syncs of an unchanged revision."""
        for app in ctx.snap.applications():
            instances = self._instances(ctx, app)
            if instances:
                yield self._finding(ctx, app, instances)

    def _instances(self, ctx: Context, app: Obj) -> list[_Instance]:
        """Automated syncs of the revision already deployed. A self-heal sync of an unchanged
        revision is partial (only the OutOfSync resources), and Argo CD records history only for
        full syncs (controller/sync.go), so besides history pairs this reads the operation state,
        the controller's `Initiated automated sync` lines, the Application's events, and the
        controller's writes to the app's resources in the audit log, after the last full deploy."""
        history = [mapping(h) for h in as_list(app.status.get("history"))]
        history.sort(key=lambda h: (as_int(h.get("id")), str(h.get("deployedAt") or "")))
        found: list[_Instance] = []
        for index, (prev, cur) in enumerate(pairwise(history), start=1):
            revision = revision_of(cur)
            automated = mapping(cur.get("initiatedBy")).get("automated") is True
            start = parse_time(cur.get("deployStartedAt")) or parse_time(cur.get("deployedAt"))
            if revision and revision == revision_of(prev) and automated and start is not None \
                    and not _spec_changed(prev, cur):
                found.append(_Instance(start, revision, f".status.history[{index}]", [object_evidence(
                    app, f".status.history[{index}]",
                    f"automated sync {format_time(start)} deployed {revision[:12]} again "
                    f"(history id {prev.get('id')} → {cur.get('id')})", start)]))
        if not history:
            return found
        deployed, since = revision_of(history[-1]), parse_time(history[-1].get("deployedAt"))
        if not deployed or since is None:
            return found
        if since.microsecond == 0:  # stored to the second: the deploy's own writes and lines may follow within it
            since = shift(since, timedelta(seconds=1))
        candidates: list[tuple[datetime, Evidence]] = []
        op = mapping(app.status.get("operationState"))
        operation = mapping(op.get("operation"))
        started = parse_time(op.get("startedAt"))
        if (mapping(operation.get("initiatedBy")).get("automated") is True and started is not None and started > since
                and str(mapping(operation.get("sync")).get("revision") or "") == deployed):
            partial = as_list(mapping(operation.get("sync")).get("resources"))
            candidates.append((started, object_evidence(
                app, ".status.operationState",
                f"automated sync of {deployed[:12]} started {format_time(started)}, phase {op.get('phase')}"
                + (f", partial: {plural(len(partial), 'resource')} out of sync" if partial else ""), started)))
        for record, match in self._app_lines(app, "argocd.automated-sync"):
            if match is not None and match.group("revision") == deployed and record.time and record.time > since:
                candidates.append((record.time, log_evidence(record)))
        for event in ctx.snap.events_about("Application", app.name):
            if f"automated sync to '{deployed}'" in event.message and event.time and event.time > since:
                candidates.append((event.time, event_evidence(event)))
        candidates.extend(self._audit_bursts(ctx, app, since))
        for when, item in sorted(candidates, key=lambda c: c[0]):
            same = next((i for i in found if abs((i.start - when).total_seconds()) <= 120), None)
            if same is None:
                found.append(_Instance(when, deployed, item.location, [item]))
            else:
                same.start = min(same.start, when)
                same.evidence.append(item)
        found.sort(key=lambda i: i.start)
        return found

    def on_audit(self, event: AuditEvent) -> None:
        """Keep the application controller's completed writes, by object, as bursts (bounded)."""
        if (event.verb in ("patch", "update") and "argocd-application-controller" in event.username
                and event.stage in ("", "ResponseComplete") and event.received is not None
                and max(len(event.resource), len(event.namespace), len(event.name)) <= MAX_NAME):
            excerpt = (f"{event.verb} {event.resource}/{event.name} by {event.username} ({event.user_agent}), "
                       f"code {event.code}")[:MAX_EXCERPT]
            self._writes.add((event.resource, event.namespace, event.name),
                             _Write(event.received, event.location, excerpt))

    def _audit_bursts(self, ctx: Context, app: Obj, since: datetime) -> list[tuple[datetime, Evidence]]:
        """The first write after `since` of each burst of writes by the application controller to the app's
        resources, its bursts merged over all of them."""
        targets = {(str(e.get("kind") or "").lower() + "s", str(e.get("namespace") or ""), str(e.get("name") or ""))
                   for e, _ in ctx.snap.app_resources(app)}
        objects = self._writes.objects
        lost = self._writes.unfollowed and any(t not in objects for t in targets)
        spans: list[tuple[_Write, datetime]] = []
        for target in targets & objects.keys():
            obj = objects[target]
            lost = lost or (obj.dropped_until is not None and obj.dropped_until > since)
            for burst in obj.bursts:
                if burst.last.time <= since:
                    continue
                first = next((w for w in burst.head if w.time > since), None)
                if first is None:  # the deploy falls inside the burst, past its kept head
                    first, lost = burst.last, True
                spans.append((first, burst.last.time))
        if lost:
            self._lost.add((app.namespace, app.name))
        bursts: list[tuple[datetime, Evidence]] = []
        end: datetime | None = None
        for first, last in sorted(spans):
            if end is None or (first.time - end).total_seconds() > BURST_GAP:
                bursts.append((first.time, Evidence("audit", first.location, first.excerpt, first.time)))
            end = last if end is None else max(end, last)
        return bursts

    def _line_index(self) -> dict[tuple[str, str], list[_Line]]:
        """The kept lines by (signature, the key that ties them to an app), built once."""
        if self._index is None:
            self._index = defaultdict(list)
            for sig, lines in self._lines.items():
                for record, match in lines:
                    for key in _line_keys(sig, record, match):
                        self._index[(sig, key)].append((record, match))
        return self._index

    def _app_lines(self, app: Obj, sig: str) -> list[_Line]:
        return self._timed(sig, _app_keys(app, sig))[1]

    def _timed(self, sig: str, keys: tuple[str, ...]) -> tuple[list[datetime], list[_Line]]:
        """The lines of `sig` under `keys` sorted by time (untimed first), with their times, built once: the lines of
        the empty key are shared by every Application, and sorting them again for each would cost apps × lines."""
        cached = self._sorted.get((sig, keys))
        if cached is None:
            index = self._line_index()
            found = [line for key in keys for line in index.get((sig, key), [])]
            found.sort(key=_line_time)
            cached = self._sorted[(sig, keys)] = ([_line_time(line) for line in found], found)
        return cached

    def _correlate(self, ctx: Context, app: Obj, instance: _Instance, webhook_names: set[str]) -> None:
        start = instance.start

        def near(sig: str, low: timedelta, high: timedelta) -> list[_Line]:
            times, lines = self._timed(sig, _app_keys(app, sig))
            window = lines[bisect_left(times, shift(start, -low)):bisect_right(times, shift(start, high))]
            return [(r, m) for r, m in window if r.time is not None]

        misses = near("argocd.manifest-cache-miss", BEFORE, timedelta(seconds=5))
        renders = near("argocd.helm-template", BEFORE, timedelta(seconds=5))
        initiated = near("argocd.automated-sync", timedelta(seconds=60), timedelta(seconds=60))
        phases = near("argocd.operation-phase", timedelta(seconds=5), timedelta(minutes=5))
        steps: list[Evidence] = []
        for group in (misses[-1:], renders[-1:], initiated[:1]):
            steps.extend(log_evidence(r) for r, _ in group)
        running = [r for r, m in phases if m is not None and m.group("phase") == "Running"][:1]
        done = [r for r, m in phases if m is not None and m.group("phase") in ("Succeeded", "Failed", "Error")][:1]
        steps.extend(log_evidence(r) for r in (*running, *done))
        failures = [f for f in ctx.webhook_failures() if f.webhook in webhook_names and f.time is not None
                    and start <= f.time <= shift(start, AFTER)] if webhook_names else []
        failure_logs = [r for r, _ in near("k8s.webhook-call-failed", timedelta(0), AFTER)
                        if failed_webhook_name(r.raw) in webhook_names] if webhook_names else []
        firsts = sorted([*(f.evidence for f in failures), *(log_evidence(r) for r in failure_logs)],
                        key=lambda e: e.time or start)
        instance.failures = sorted({f.webhook for f in failures}
                                   | {failed_webhook_name(r.raw) or "" for r in failure_logs} - {""})
        steps.extend(firsts[:1])
        workflow = [f.evidence for f in failures if f.source == "workflow"]
        if workflow and workflow[0] not in steps:
            steps.append(workflow[0])
        instance.workflow_failed = bool(workflow)
        steps.sort(key=lambda e: e.time or start)
        base = len(instance.evidence)
        instance.evidence.extend(steps)
        instance.chain = list(range(base, base + len(steps)))
        instance.trigger = "manifest cache miss" if misses else ""

    def _finding(self, ctx: Context, app: Obj, instances: list[_Instance]) -> Finding:
        snap = ctx.snap
        op = mapping(app.status.get("operationState"))
        result = mapping(op.get("syncResult"))
        latest = instances[-1]
        changed = [mapping(r) for r in as_list(result.get("resources"))
                   if "unchanged" not in str(mapping(r).get("message") or "") and mapping(r).get("status") == "Synced"]
        op_start = parse_time(op.get("startedAt"))
        same_op = op_start is not None and abs((op_start - latest.start).total_seconds()) <= 120
        configs = [r for r in changed if str(r.get("kind")) in CONFIG_KINDS] if same_op else []
        webhook_names = {
            str(mapping(w).get("name"))
            for r in configs
            if (live := snap.get(str(r.get("kind")), str(r.get("name")), "", str(r.get("group") or ""))) is not None
            for w in as_list(live.raw.get("webhooks"))
        }
        evidence: list[Evidence] = []
        where: dict[tuple[str, str], int] = {}
        for instance in instances:
            if instance is latest:
                self._correlate(ctx, app, instance, webhook_names)
            moved = []
            for item in instance.evidence:  # the same line can show several syncs' facts: keep it once
                key = (item.location, item.excerpt)
                if key not in where:
                    where[key] = len(evidence)
                    evidence.append(item)
                moved.append(where[key])
            instance.chain = list(dict.fromkeys(moved[i] for i in instance.chain))
        if same_op:
            evidence.extend(object_evidence(app, ".status.operationState.syncResult.resources",
                                            f"{resource_ref(r)}: {r.get('message')}", parse_time(op.get('finishedAt')))
                            for r in changed)
        times = [i.start for i in instances]
        gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
        expiry = self._cache_expiration(ctx)
        periodic = bool(gaps) and all(abs(g - expiry) <= max(3600.0, 0.1 * expiry) for g in gaps)
        fights = [(live, d) for _, live in snap.app_resources(app) if live is not None for d in foreign_writes(live)]
        if fights:  # self-heal undoing another writer: the render is not what changed
            live, first = fights[0]
            cause = (f"Here the live state moves, not the render: {first.writer} changes {first.dotted} of {live.ref} "
                     f"(Git {json.dumps(first.desired)}, live {json.dumps(first.live)}; see out-of-sync-writer), and "
                     "each time Argo CD writes Git's value back.")
        else:
            cause = ("So the same revision rendered different manifests. "
                     + self._trigger(ctx, latest, periodic, expiry))
        summary = (
            f"Argo CD synced {app.namespace}/{app.name} automatically {plural(len(instances), 'time')} without a "
            f"new commit: each time it deployed revision {latest.revision[:12]}, already deployed before "
            f"({', '.join(format_time(t) or '' for t in times)}). Automated sync runs when the live state differs "
            "from what the repo-server renders. " + cause
        )
        if same_op and changed:
            summary += (f" The last of these syncs changed {plural(len(changed), 'resource')}: "
                        + ", ".join(f"{r.get('kind')} {r.get('name')}" for r in changed) + ".")
        if latest.failures:
            summary += (f" Right after it, calls to the webhook(s) {', '.join(latest.failures)} that the sync "
                        "reconfigured failed (see webhook-blast-radius): the new caBundle reached the API server "
                        "before the new certificate reached the serving pods.")
        summary += self._chart_note(ctx, app)
        if (app.namespace, app.name) in self._lost:
            summary += (" Not every write of the application controller in the audit log was kept (per object, the "
                        f"latest {MAX_BURSTS} bursts of writes with the first {BURST_HEAD} and the last write of each; "
                        f"{MAX_KEPT_BURSTS:,} bursts in all; {self._writes.dropped:,} writes fell out): a sync seen "
                        "only in writes not kept is missing from this list, or dated by the last write of its burst.")
        return Finding(
            rule=self.id,
            severity=Severity.HIGH if latest.failures else Severity.MEDIUM,
            title=f"{app.name} auto-synced {plural(len(instances), 'time')} without a new commit"
            + (f", then webhook {latest.failures[0]} failed" if latest.failures else ""),
            summary=summary,
            objects=[app.ref, *(resource_ref(r) for r in changed)],
            evidence=evidence,
            remediation=Remediation(
                text=_fix_text(ctx, app, changed, latest),
                command=f"argocd app history {app.namespace}/{app.name}",
                docs=DOCS + (GENERATED_DOCS if any(_generated(r) for r in changed) else ()),
            ),
            chain=latest.chain,
        )

    def _cache_expiration(self, ctx: Context) -> float:
        params = ctx.snap.settings.cmd_params
        for key in CACHE_KEYS:
            value = parse_go_duration(params.get(key))
            if value:
                return value
        return DEFAULT_CACHE_EXPIRATION

    def _trigger(self, ctx: Context, latest: _Instance, periodic: bool, expiry: float) -> str:
        hours = f"{expiry / 3600:g} h"
        reconcile = ctx.snap.settings.cm.get("timeout.reconciliation") or "180s"
        if latest.trigger:
            text = (f"The repo-server logged a manifest cache miss for this source before the last one and re-ran "
                    f"the render: its manifest cache (expiration {hours}) had expired, and the next reconciliation "
                    f"(every {reconcile}) rendered the chart anew.")
        else:
            text = ("No repo-server cache miss for this source is in the logs of the input; a hard refresh, a "
                    "repo-server restart or an expired manifest cache makes the repo-server render again.")
        if periodic:
            text += f" The syncs recur every ~{hours}, the manifest cache's expiration."
        restarts = [c for c in ctx.snap.components if c.name in ("application-controller", "repo-server")]
        for component in restarts:
            for pod in component.pods:
                for status in as_list(pod.status.get("containerStatuses")):
                    running = mapping(mapping(mapping(status).get("state")).get("running"))
                    started = parse_time(running.get("startedAt"))
                    if started is not None and timedelta(0) <= latest.start - started <= BEFORE:
                        text += (f" The {component.name} pod {pod.name} (re)started at {format_time(started)}, "
                                 "just before.")
        return text

    def _chart_note(self, ctx: Context, app: Obj) -> str:
        uses = ctx.chart_uses(app)
        if not uses:
            return ""
        functions = sorted({u.function for u in uses})
        return (f" The chart of this Application in the input calls {', '.join(functions)} (see "
                "helm-nondeterministic-render).")


def _generated(resource: dict[str, Any]) -> bool:
    """Whether a synced resource is a ConfigMap or Secret named with a content hash."""
    return str(resource.get("kind")) in ("ConfigMap", "Secret") and bool(HASH_SUFFIX.search(str(resource.get("name"))))


def _fix_text(ctx: Context, app: Obj, changed: list[dict[str, Any]], latest: _Instance) -> str:
    """The fix for what the last sync changed: generated names, generated certificates or Secrets, what
    helm-nondeterministic-render found in the Application's chart, and retries for what failed right after."""
    generated = [r for r in changed if _generated(r)]
    certs = [r for r in changed if str(r.get("kind")) in CONFIG_KINDS
             or (str(r.get("kind")) == "Secret" and r not in generated)]
    uses = ctx.chart_uses(app)
    parts = ["Make the render of the same revision give the same manifests."]
    if generated:
        names = ", ".join(f"{r.get('kind')} {r.get('name')}" for r in generated)
        parts.append(
            f"The sync created {names}, named with a hash of its content (a kustomize configMapGenerator or "
            "secretGenerator, or a chart that names it by checksum): its content differs between renders, and the "
            "workloads that reference it roll to each new name. Keep the generator's inputs fixed (no timestamp, "
            "build id or random value in the files or literals it reads); in a Helm chart, roll the pods with a "
            "`checksum/config` annotation over the ConfigMap's content instead, so they change only when the "
            "config does. `argocd app diff` after a hard refresh shows what changed.")
    if uses:
        functions = ", ".join(sorted({u.function for u in uses}))
        parts.append(f"The chart calls {functions}: helm-nondeterministic-render lists the fields they change "
                     "and the values that pin them.")
    if certs:
        parts.append("For generated certificates and keys, give the chart fixed values (its own values, such as "
                     "webhookTLS.* in charts that generate a webhook certificate) or let cert-manager issue them.")
    if uses or certs or not generated:
        parts.append("Or tell Argo CD to ignore the generated fields with ignoreDifferences"
                     + (" (the exact paths are in helm-nondeterministic-render)" if uses else "")
                     + " together with the sync option RespectIgnoreDifferences=true.")
    if not (generated or uses or certs):
        parts.append("To find what changes, compare the live objects with a fresh render (`argocd app diff` "
                     "after a hard refresh).")
    if latest.workflow_failed:
        parts.append("Until then, consumers of a regenerated webhook certificate should retry: e.g. a "
                     "retryStrategy with backoff on Workflow steps.")
    elif latest.failures:
        parts.append("Until then, requests the webhook refuses right after each sync fail: their clients "
                     "should retry with backoff.")
    return " ".join(parts)


def _spec_changed(prev: dict[str, Any], cur: dict[str, Any]) -> bool:
    """Whether two history entries deployed different Application sources (parameter overrides, kustomize images
    written back by the Image Updater, a new path): a sync of the same revision that is still a change. History
    without `source`/`sources` (older Argo CD) cannot tell, and counts as unchanged."""
    return any(key in prev and key in cur and prev[key] != cur[key] for key in ("source", "sources"))
