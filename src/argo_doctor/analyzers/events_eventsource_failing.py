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
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import after, failing, line_order, log_evidence, object_evidence, plural, pod_evidence
from argo_doctor.facts.events import (
    GROUP,
    SOURCE_LABEL,
    Notifier,
    bus_of,
    condition_evidence,
    failed_conditions,
    generated_pods,
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
    """An EventSource's lines of one kind: how many, and the last few."""

    count: int = 0
    last: list[LogRecord] = field(default_factory=list)


class EventsEventSourceFailing(Analyzer):
    """Argo Events EventSources that do not deliver their events."""

    id = "events-eventsource-failing"
    title = "Argo Events EventSource does not deliver events"
    signatures = ("events.listen-failed", "events.publish-failed", "events.publish-succeeded",
                  "events.method-mismatch", "argocd.notification-failed")
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
        lines.last = sorted([*lines.last, record], key=line_order)[-KEEP:]

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
                merged.last = sorted([*merged.last, *lines.last], key=line_order)[-KEEP:]
        return merged

    def _source(self, ctx: Context, source: Obj, callers: list[Notifier]) -> Finding | None:
        ns, name = source.namespace, source.name
        pods = generated_pods(ctx.snap, source, SOURCE_LABEL)
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
        if last_publish is not None and not _latest_after(published, publish):
            evidence.extend(log_evidence(r) for r in publish.last[-2:])
            heads.append("it cannot publish to its EventBus")
            parts.append(f"It cannot publish to its EventBus: {plural(publish.count, 'event')} lost "
                         f"({last_publish.fields.get('error', 'see the line')}); callers get 500 `failed to record "
                         "event` (events-eventbus-unhealthy says what ails the bus).")
            fix.append("Mend the EventBus; Argo CD retries a webhook that answers 5xx (retryMax, 3 by default).")
        if refused.count and not _latest_after(published, refused):
            evidence.extend(log_evidence(r) for r in refused.last[-1:])
            methods = ", ".join(sorted({r.method or "no method" for r in routes(source)}))
            heads.append("it refuses requests with another method")
            parts.append(f"It refused {plural(refused.count, 'request')} for their method (its routes accept "
                         f"{methods}; the log's http-method field is the route's, not the caller's).")
        severity = Severity.HIGH if heads and heads != ["it refuses requests with another method"] \
            else Severity.LOW
        for caller in callers:
            severity = max(severity, self._caller(source, caller, parts, heads, evidence, fix))
        if not parts:
            return None
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"EventSource {name}: " + next((h for h in heads if h.startswith(("Argo CD's", "its route"))),
                                                 heads[0]),
            summary=f"EventSource {ns}/{name} does not deliver events. " + " ".join(parts),
            objects=[source.ref, *(c.config.ref for c in callers), *(p.ref for p, _ in unhealthy[:3])],
            evidence=evidence,
            remediation=Remediation(text=" ".join(dict.fromkeys(fix)) or "Fix what the lines name.",
                                    command=f"kubectl -n {ns} logs -l {SOURCE_LABEL}={name} --tail=50", docs=DOCS),
        )

    def _caller(self, source: Obj, caller: Notifier, parts: list[str], heads: list[str], evidence: list[Evidence],
                fix: list[str]) -> Severity:
        """An Argo CD notification template that reaches the EventSource with a path or method it does not serve."""
        failed = self._lines.get(("", "service", caller.service))
        where = f"template.{caller.template}'s webhook.{caller.service}"
        route = caller.route
        if route is None and caller.templated:
            return Severity.INFO  # the path is rendered per notification: it cannot be matched here
        if route is None:
            served = ", ".join(f"{r.endpoint} on port {r.port}" for r in routes(source)) or "no webhook route"
            heads.append(f"Argo CD's webhook {caller.service} calls a path it does not serve")
            parts.append(f"Argo CD notifications call it through {caller.service} at {caller.url} ({where}), a path "
                         f"or port it does not serve ({served}): the server answers 404.")
            evidence.append(object_evidence(caller.config, ".data", f"{where} calls {caller.url}"))
            fix.append(f"Point service.webhook.{caller.service}'s url (and the template's path) at a route of "
                       f"EventSource {source.name} ({served}).")
        elif not route.method:
            heads.append(f"its route {route.event} sets no method, so it refuses every request")
            parts.append(f"Its route {route.event} sets no `method`: the webhook server compares each request's "
                         "method with it and refuses them all with 400 `http method does not match`; Argo CD "
                         f"notifications call it through {caller.service}.")
            evidence.append(object_evidence(source, f".spec.webhook.{route.event}", "no method"))
            fix.append(f"Set `method: {caller.method}` on route {route.event} of EventSource {source.name}.")
        elif caller.method != route.method:
            heads.append(f"Argo CD's webhook {caller.service} sends {caller.method}, route {route.event} accepts only "
                         f"{route.method}")
            parts.append(f"Argo CD notifications call it through {caller.service} with {caller.method} ({where}: "
                         f"GET when it sets no method), and route {route.event} accepts only {route.method}: every "
                         "notification is refused with 400 `http method does not match`.")
            evidence.append(object_evidence(caller.config, ".data", f"{where} sends {caller.method} to "
                                                                    f"{caller.url}"))
            fix.append(f"Set `method: {route.method}` under webhook.{caller.service} in template.{caller.template} "
                       f"of argocd-notifications-cm (or the route's method to {caller.method}).")
        else:
            return Severity.INFO
        if failed is not None and not any("Failed to notify" in e.excerpt for e in evidence):
            evidence.extend(log_evidence(r) for r in failed.last[-1:])
            parts.append(f"The notifications controller logged {plural(failed.count, 'failed delivery')} to it.")
        return Severity.HIGH


def _latest_after(later: _Lines, earlier: _Lines) -> bool:
    """Whether the last line of `later` comes after the last of `earlier` (the trouble is history)."""
    return bool(later.last and earlier.last) and after(later.last[-1], earlier.last[-1])
