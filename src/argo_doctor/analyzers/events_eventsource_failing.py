"""events-eventsource-failing: an Argo Events EventSource that does not deliver its events, and why.

An EventSource delivers nothing when the controller could not deploy it (`SourcesProvided` / `Deployed` False:
pkg/reconciler/eventsource), when its pod does not run, when its webhook server cannot listen (`failed to listen and
serve`), when it cannot publish to the EventBus (`Failed to publish an event`: the caller gets 500 `failed to record
event`), or when callers reach it with a method or path it does not serve (`http method does not match`: 400). Argo
CD's notification webhooks are checked against the routes their URLs reach: a template without `method` sends GET
(notifications-engine's webhook service), which a POST route refuses.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import failing, log_evidence, object_evidence, plural, pod_evidence
from argo_doctor.facts.events import (
    GROUP,
    SOURCE_LABEL,
    Notifier,
    bus_of,
    condition_evidence,
    failed_conditions,
    notifiers,
    routes,
)
from argo_doctor.health.types import HealthStatus
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature

DOCS = ("https://argoproj.github.io/argo-events/eventsources/setup/webhook/",
        "https://argo-cd.readthedocs.io/en/stable/operator-manual/notifications/services/webhook/")
KEEP = 3


@dataclass
class _Lines:
    """An EventSource's lines of one kind: how many, the last few, and what the requests' methods were."""

    count: int = 0
    last: list[LogRecord] = field(default_factory=list)
    methods: Counter[str] = field(default_factory=Counter)


class EventsEventSourceFailing(Analyzer):
    """Argo Events EventSources that do not deliver their events."""

    id = "events-eventsource-failing"
    title = "Argo Events EventSource does not deliver events"
    signatures = ("events.listen-failed", "events.publish-failed", "events.publish-succeeded",
                  "events.method-mismatch", "events.bus-connect-failed", "argocd.notification-failed")
    needs = Needs(frozenset({"argoproj.io/EventSource", "argoproj.io/EventBus", "argoproj.io/Sensor", "Pod",
                             "Service", "ConfigMap"}), failing_pod_logs=True)

    def __init__(self) -> None:
        self._lines: dict[tuple[str, str, str], _Lines] = defaultdict(_Lines)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the last lines of each kind per EventSource (`eventSourceName`, else the pod) or notification
        service."""
        if signature.id == "argocd.notification-failed":
            key = ("", "service", match["service"] if match is not None else "")
        else:
            name = record.fields.get("eventSourceName")
            key = (record.file.namespace, name or f"pod:{record.file.pod}", signature.id)
        lines = self._lines[key]
        lines.count += 1
        lines.last.append(record)
        del lines.last[:-KEEP]
        if signature.id == "events.method-mismatch":
            lines.methods[record.fields.get("http-method", "?")] += 1

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        callers = notifiers(ctx.snap)
        for source in sorted(ctx.snap.of_kind("EventSource", GROUP), key=lambda s: (s.namespace, s.name)):
            finding = self._source(ctx, source, [n for n in callers if n.eventsource is source])
            if finding is not None:
                yield finding

    def _of(self, source: Obj, pods: list[Obj], kind: str) -> _Lines:
        """The EventSource's lines of one signature, its pods' lines merged in."""
        merged = _Lines()
        for key in [source.name, *(f"pod:{p.name}" for p in pods)]:
            lines = self._lines.get((source.namespace, key, kind))
            if lines is not None:
                merged.count += lines.count
                merged.last = sorted([*merged.last, *lines.last], key=lambda r: r.line)[-KEEP:]
                merged.methods.update(lines.methods)
        return merged

    def _source(self, ctx: Context, source: Obj, callers: list[Notifier]) -> Finding | None:
        ns, name = source.namespace, source.name
        pods = [p for p in ctx.snap.of_kind("Pod", "", ns) if p.labels.get(SOURCE_LABEL) == name]
        conditions = failed_conditions(source)
        unhealthy = failing(ctx, pods, (HealthStatus.DEGRADED,))
        listen = self._of(source, pods, "events.listen-failed")
        publish = self._of(source, pods, "events.publish-failed")
        published = self._of(source, pods, "events.publish-succeeded")
        refused = self._of(source, pods, "events.method-mismatch")
        parts: list[str] = []
        heads: list[str] = []
        evidence: list[Evidence] = condition_evidence(source, conditions)
        fix: list[str] = []
        if conditions:
            bus_name, _ = bus_of(ctx.snap, source)
            heads.append("the controller does not deploy it")
            parts.append("The controller does not deploy it: " + "; ".join(map(str, conditions)) + ".")
            fix.append(f"Create or mend EventBus {bus_name} in {ns}." if any(
                c.reason.startswith(("EventBus", "GetEventBus")) for c in conditions) else
                "Fix the EventSource's spec as the condition says.")
        if unhealthy:
            pod_parts: list[str] = []
            evidence.extend(pod_evidence(ctx, unhealthy, pod_parts))
            heads.append("its pod does not run")
            parts.append("Its pod does not run: " + "; ".join(pod_parts) + ".")
            fix.append(f"Read its last lines: kubectl -n {ns} logs -l {SOURCE_LABEL}={name} --previous.")
        if listen.count:
            evidence.extend(log_evidence(r) for r in listen.last[-1:])
            heads.append("its webhook server cannot listen")
            parts.append(f"Its webhook server cannot listen ({listen.last[-1].fields.get('error', 'see the line')}).")
            fix.append("Give each route a free port (two routes or another process on one port fail).")
        last_publish = publish.last[-1] if publish.last else None
        if last_publish is not None and not _after(published, publish):
            evidence.extend(log_evidence(r) for r in publish.last[-2:])
            heads.append("it cannot publish to its EventBus")
            parts.append(f"It cannot publish to its EventBus: {plural(publish.count, 'event')} lost "
                         f"({last_publish.fields.get('error', 'see the line')}); callers get 500 `failed to record "
                         "event` (events-eventbus-unhealthy says what ails the bus).")
            fix.append("Mend the EventBus; Argo CD retries a webhook that answers 5xx (retryMax, 3 by default).")
        if refused.count and not _after(published, refused):
            evidence.extend(log_evidence(r) for r in refused.last[-1:])
            seen = ", ".join(f"{m} ×{c}" for m, c in refused.methods.most_common())
            heads.append("it refuses requests with another method")
            parts.append(f"It refused {plural(refused.count, 'request')} with 400 `http method does not match` "
                         f"(methods: {seen}).")
        severity = Severity.HIGH if heads and heads != ["it refuses requests with another method"] \
            else Severity.LOW
        for caller in callers:
            severity = max(severity, self._caller(source, caller, parts, heads, evidence, fix))
        if not parts:
            return None
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"EventSource {name}: " + next((h for h in heads if h.startswith("Argo CD")), heads[0]),
            summary=f"EventSource {ns}/{name} does not deliver events. " + " ".join(parts),
            objects=[source.ref, *(c.config.ref for c in callers), *(p.ref for p, _ in unhealthy[:3])],
            evidence=evidence,
            remediation=Remediation(text=" ".join(dict.fromkeys(fix)) or "Fix what the lines name.",
                                    command=f"kubectl -n {ns} logs -l {SOURCE_LABEL}={name} --tail=50", docs=DOCS),
        )

    def _caller(self, source: Obj, caller: Notifier, parts: list[str], heads: list[str], evidence: list[Evidence],
                fix: list[str]) -> Severity:
        """An Argo CD notification webhook that reaches the EventSource with a path or method it does not serve."""
        failed = self._lines.get(("", "service", caller.service))
        key = f"service.webhook.{caller.service}"
        if caller.route is None:
            served = ", ".join(f"{r.endpoint} on port {r.port}" for r in routes(source)) or "no webhook route"
            heads.append(f"Argo CD notifications ({caller.service}) call a path it does not serve")
            parts.append(f"Argo CD notifications call it through {caller.service} at {caller.url}, a path or port it "
                         f"does not serve ({served}): the server answers 404.")
            evidence.append(object_evidence(caller.config, f".data[{key!r}]", f"url: {caller.url}"))
            fix.append(f"Point {key}'s url at a route of EventSource {source.name} ({served}).")
        else:
            wrong = [m for m in caller.methods if m != caller.route.method]
            if not wrong:
                return Severity.INFO
            heads.append(f"Argo CD notifications ({caller.service}) send {', '.join(wrong)}, it accepts "
                         f"{caller.route.method}")
            parts.append(f"Argo CD notifications call it through {caller.service} with {', '.join(wrong)} (a "
                         f"template's webhook.{caller.service}.method, GET when unset), and route "
                         f"{caller.route.event} accepts only {caller.route.method}: every notification is refused "
                         "with 400 `http method does not match`.")
            evidence.append(object_evidence(caller.config, ".data", f"templates send {', '.join(wrong)} to "
                                                                    f"{caller.service} ({caller.url})"))
            fix.append(f"Set `method: {caller.route.method}` under webhook.{caller.service} in each template of "
                       f"argocd-notifications-cm that sends to it (or the route's method to {wrong[0]}).")
        if failed is not None:
            evidence.extend(log_evidence(r) for r in failed.last[-1:])
            parts.append(f"The notifications controller logged {plural(failed.count, 'failed delivery')} to it.")
        return Severity.HIGH



def _after(later: _Lines, earlier: _Lines) -> bool:
    """Whether the last line of `later` comes after the last of `earlier` (the trouble is history)."""
    if not later.last or not earlier.last:
        return False
    first, second = earlier.last[-1], later.last[-1]
    if first.time is not None and second.time is not None:
        return second.time > first.time
    return first.file == second.file and second.line > first.line
