"""webhook-blast-radius: an admission webhook that can block every pod in the cluster.

A webhook with `failurePolicy: Fail` rejects the request whenever the API server cannot call it:
its Service has no ready endpoint, TLS fails (a caBundle that does not match the serving
certificate), or it answers slower than `timeoutSeconds`. When it also intercepts pod creation
with no selector narrowing it, a short outage of one controller stops every Deployment rollout,
Job and Workflow step of the cluster. Observed failures (`failed calling webhook "…"` in Events,
Workflow nodes and logs) are attached. A Service absent from an input that holds the Services of its
namespace does not exist; absent from one that holds none there, it was not collected: that is said, at low
severity when nothing else is wrong.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural, regenerating_chart
from argo_doctor.facts.inventory import Presence, not_collected
from argo_doctor.facts.webhooks import (
    WEBHOOK_NEEDS,
    Webhook,
    backing_service,
    ready_endpoints,
    service_presence,
    webhooks,
)
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.sources.logs import LogRecord, LogSignature

MAX_FAILURE_EVIDENCE = 4
DOCS = (
    "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#failure-policy",
    "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#matching-requests-objectselector",
    "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#avoiding-deadlocks-in-self-hosted-webhooks",
)


class WebhookBlastRadius(Analyzer):
    """Fail-closed webhooks that intercept pods broadly, or that cannot be called."""

    id = "webhook-blast-radius"
    title = "Admission webhook can block pod creation"
    needs = Needs(frozenset({"Service", "Endpoints", "discovery.k8s.io/EndpointSlice", "argoproj.io/Workflow",
                             "argoproj.io/Application"}) | WEBHOOK_NEEDS, events=True)
    signatures = ("k8s.webhook-call-failed",)

    def __init__(self) -> None:
        self._logs: dict[str, list[LogRecord]] = defaultdict(list)
        self._counts: dict[str, int] = defaultdict(int)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the first failures per webhook name."""
        if match is None:
            return
        name = match.group("webhook")
        self._counts[name] += 1
        if len(self._logs[name]) < MAX_FAILURE_EVIDENCE:
            self._logs[name].append(record)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per risky webhook."""
        failures = ctx.webhook_failures()
        for hook in webhooks(ctx.snap):
            if hook.failure_policy != "Fail":
                continue
            seen = [f for f in failures if f.webhook == hook.name]
            logged = self._logs.get(hook.name, [])
            service = backing_service(ctx.snap, hook)
            endpoints = ready_endpoints(ctx.snap, service) if service is not None else None
            # a Service absent from an input that holds no Service of its namespace may well exist
            absent = service_presence(ctx.snap, hook) if hook.service and service is None else None
            unknown = absent == Presence.UNKNOWN
            unreachable = bool(hook.service) and not unknown and (
                service is None or (endpoints is not None and endpoints[0] == 0))
            broad_pods = hook.matches_pods() and hook.is_broad()
            if not (broad_pods or seen or logged or unreachable or unknown):
                continue
            # one refused request shows in an Event, a Workflow node and log lines: count the best source once
            events = sum(f.count for f in seen if f.source == "event")
            observed = events or max(sum(1 for f in seen if f.source == "workflow"), self._counts.get(hook.name, 0))
            finding = self._finding(hook, broad_pods, unreachable, service is not None, endpoints,
                                    [f.evidence for f in seen], logged, observed)
            if unknown:
                namespace = str(hook.service.get("namespace") or "")
                finding.summary += (f" It calls Service {namespace}/{hook.service.get('name')}, which is not in the "
                                    f"input: {not_collected('Service', namespace)}.")
                if not (broad_pods or seen or logged):
                    finding.severity = Severity.LOW
                    finding.title += "; its Service is not in the input"
            regenerates = regenerating_chart(ctx, hook)
            if regenerates:
                finding.summary += (
                    f" Its caBundle is regenerated by the chart on every render ({regenerates}): each re-render "
                    "applies a new CA before the serving pods have the matching certificate (see "
                    "helm-nondeterministic-render and auto-sync-without-change)."
                )
            yield finding

    def _finding(
        self, hook: Webhook, broad_pods: bool, unreachable: bool, has_service: bool,
        endpoints: tuple[int, int] | None, events: list[Evidence], logs: list[LogRecord], observed: int,
    ) -> Finding:
        config = hook.config
        scope = ("can block pod creation cluster-wide" if broad_pods else
                 "can block pod creation" if hook.matches_pods() else "can block the requests it matches")
        lines = [
            f"Webhook {hook.name} of {config.kind} {config.name} has failurePolicy Fail, timeoutSeconds "
            f"{hook.timeout}, and intercepts {hook.selector_scope()}"
            + (" for pod CREATE." if hook.matches_pods() else ".")
        ]
        if broad_pods:
            lines.append(
                "Whenever the API server cannot call it (no ready endpoint, a TLS failure such as a caBundle that "
                f"does not match the serving certificate, or an answer slower than {hook.timeout} s), every "
                "request that creates a pod anywhere in the cluster is rejected: rollouts, Jobs, Workflow steps, "
                "and the webhook's own pods when they are recreated."
            )
        service = hook.service
        target = f"Service {service.get('namespace')}/{service.get('name')}" if service else "a URL"
        if unreachable:
            lines.append(f"It calls {target}, which " + (
                f"does not exist: the input holds the Services of namespace {service.get('namespace')} and it is not "
                "among them, so every call fails now." if not has_service else
                "has no ready endpoint: every call fails now."))
        elif endpoints is not None:
            lines.append(f"It calls {target}, with {plural(endpoints[0], 'ready endpoint')}.")
        if observed:
            lines.append(f"Calls to it failed {plural(observed, 'time')} in the input (events, Workflow nodes, logs).")
        evidence = [object_evidence(config, hook.path, f"{hook.name}: failurePolicy {hook.failure_policy}, "
                                                       f"{hook.selector_scope()}")]
        evidence += events[:MAX_FAILURE_EVIDENCE]
        evidence += [log_evidence(r) for r in logs[:MAX_FAILURE_EVIDENCE]]
        severity = Severity.HIGH if (observed or unreachable) else Severity.MEDIUM
        if broad_pods and (observed or unreachable):
            severity = Severity.CRITICAL
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"Webhook {hook.name} (failurePolicy Fail) {scope}"
            + (f"; {plural(observed, 'call')} failed" if observed else "")
            + ("; no ready endpoint" if unreachable else ""),
            summary=" ".join(lines),
            objects=[config.ref],
            evidence=evidence,
            remediation=Remediation(
                text=(
                    "Narrow what the webhook intercepts to what needs it: an objectSelector on an opt-in label, or a "
                    "namespaceSelector leaving out kube-system and namespaces of batch work. Where skipping the "
                    "webhook is safe, set failurePolicy: Ignore. Run the webhook with several replicas and a "
                    "PodDisruptionBudget, and make certificate rotation safe for it (see webhook-ca-mismatch). "
                    "Workloads that create pods (Workflows, Jobs) should retry with backoff."
                ),
                patch=(
                    f"# kubectl patch {config.kind.lower()} {config.name} --type=json -p '[...]' or, better, in "
                    "the chart's values\n"
                    f"webhooks:\n- name: {hook.name}\n  objectSelector:\n    matchExpressions:\n"
                    "    - key: webhooks.example.com/opt-in   # a label the pods that need it carry\n"
                    "      operator: Exists\n  namespaceSelector:\n    matchExpressions:\n"
                    "    - key: kubernetes.io/metadata.name\n      operator: NotIn\n      values: [kube-system]\n"
                ),
                docs=DOCS,
            ),
        )
