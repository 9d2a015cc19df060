"""rollout-traffic-routing: a canary Rollout whose traffic router refuses the controller, so the weights of its steps
are not applied.

From Argo Rollouts (rollout/trafficrouting.go and the routers under rollout/trafficrouting/): a failed SetWeight is a
Warning Event `TrafficRoutingError` and the worker's `rollout syncHandler error: ...` line; a failed verification
`WeightVerifyError`; router Events `VirtualServiceNotFound`, `DestinationRuleNotFound`, `TrafficSplitNotCreated`,
`TargetGroupVerifyError`, `LoadBalancerNotFound`, `VirtualRouterNotFound`, `VirtualNodeNotFound`. A later
`TrafficWeightUpdated` makes them history. A router object missing from the start makes the Rollout InvalidSpec, which
rollout-degraded reports.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import event_evidence, log_evidence, plural
from argo_doctor.facts.rollouts import rollouts
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import KEvent, Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping

DOCS = ("https://argo-rollouts.readthedocs.io/en/stable/features/traffic-management/",)
FAILURES = ("TrafficRoutingError", "WeightVerifyError", "VirtualServiceNotFound", "DestinationRuleNotFound",
            "TrafficSplitNotCreated", "TargetGroupVerifyError", "LoadBalancerNotFound", "VirtualRouterNotFound",
            "VirtualNodeNotFound")
"""Warning Event reasons of Argo Rollouts' traffic routers (rollout/trafficrouting.go, istio, smi, alb, appmesh)."""
SUCCESS = "TrafficWeightUpdated"
RECENT = 3600
"""Seconds: a failure older than this before the input was taken, with no later one, is not reported."""
ROUTER_HINTS = (
    (re.compile(r"plugin", re.I), "a traffic router plugin (its entry in argo-rollouts-config, its binary, its own "
                                   "RBAC to the objects it edits)"),
    (re.compile(r"VirtualService|DestinationRule|istio", re.I), "Istio (the VirtualService's named routes and the "
                                                                "stable/canary Services in them)"),
    (re.compile(r"ingress|alb|TargetGroup|load balancer", re.I), "the Ingress (its rules for the stable Service, the "
                                                                 "canary Ingress the controller creates, the AWS "
                                                                 "Load Balancer Controller)"),
    (re.compile(r"TrafficSplit|smi", re.I), "the SMI TrafficSplit (its API version and owner)"),
)
KEEP = 2
MISSING = re.compile(r'(?P<kind>[a-z][\w.-]*) \\?"(?P<name>[^"\\]+)\\?" not found')
"""An API server NotFound inside a router's error: `httproutes.gateway.networking.k8s.io "payments" not found`."""


class RolloutTrafficRouting(Analyzer):
    """Canary Rollouts whose traffic router refuses the controller."""

    id = "rollout-traffic-routing"
    title = "Rollout traffic routing fails"
    signatures = ("rollouts.sync-error",)
    needs = Needs(frozenset({"argoproj.io/Rollout"}), events=True)

    def __init__(self) -> None:
        self._lines: dict[tuple[str, str], list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the controller's last sync errors per Rollout."""
        name = record.fields.get("rollout", "")
        if name:
            lines = self._lines[(record.fields.get("namespace", ""), name)]
            lines.append(record)
            del lines[:-KEEP]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for rollout in rollouts(ctx.snap):
            routing = mapping(mapping(mapping(rollout.spec.get("strategy")).get("canary")).get("trafficRouting"))
            if not routing:
                continue
            events = [e for e in ctx.snap.events_about("Rollout", rollout.name)
                      if e.involved is not None and e.involved.namespace == rollout.namespace]
            failures = [e for e in events if e.type == "Warning" and e.reason in FAILURES]
            if not failures:
                continue
            last = failures[-1]
            updated = [e for e in events if e.reason == SUCCESS and _when(e) > _when(last)]
            if updated or _settled(rollout) or not _recent(last, ctx.snap.reference_time):
                continue  # applied since (an Event only when the weight changes, or the status shows it), or old
            routers = sorted(k for k in routing if k != "plugins") + \
                [f"the {p} plugin" for p in sorted(mapping(routing.get("plugins")))]
            yield self._finding(rollout, routers, failures, self._lines.get((rollout.namespace, rollout.name), []))

    def _finding(self, rollout: Obj, routers: list[str], failures: list[KEvent], lines: list[LogRecord]) -> Finding:
        ns, name = rollout.namespace, rollout.name
        last = failures[-1]
        count = sum(max(e.count, 1) for e in failures)
        text = f"{last.reason}: {last.message}"
        hint = next((h for pattern, h in ROUTER_HINTS if pattern.search(text + " " + " ".join(routers))), None)
        step = rollout.status.get("currentStepIndex")
        summary = (f"Rollout {ns}/{name} routes its canary through {', '.join(routers)}, and the router refused the "
                   f"controller {plural(count, 'time')}, the last: {text}. The weights of its steps are not applied "
                   "(the traffic split stays where it was), and the controller retries every sync"
                   + (f"; it is at step {step}" if step is not None else "") + ".")
        evidence: list[Evidence] = [event_evidence(e) for e in failures[-3:]]
        evidence.extend(log_evidence(r) for r in lines)
        missing = MISSING.search(last.message)
        if missing is not None:
            fix = (f"Create {missing['kind']} {missing['name']} in namespace {ns}, or correct the name the Rollout's "
                   "spec.strategy.canary.trafficRouting gives for it; then watch for a TrafficWeightUpdated event.")
        else:
            fix = (f"Fix what the message names in {hint}, then watch for a TrafficWeightUpdated event."
                   if hint else "Fix what the message names in the traffic router's objects, then watch for a "
                                "TrafficWeightUpdated event.")
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Rollout {ns}/{name}: its traffic router refuses the canary weights ({last.reason})",
            summary=summary,
            objects=[rollout.ref],
            evidence=evidence,
            remediation=Remediation(text=fix, command=f"kubectl -n {ns} get events --field-selector "
                                                      f"involvedObject.name={name},reason={last.reason}", docs=DOCS),
        )


def _settled(rollout: Obj) -> bool:
    """Whether the Rollout no longer needs a weight (Healthy, fully promoted) or its status shows the weight of its
    current step applied (`status.canary.weights.canary.weight`, written only after a successful SetWeight)."""
    status = rollout.status
    if status.get("phase") == "Healthy" or (status.get("stableRS") and status.get("stableRS") ==
                                            status.get("currentPodHash")):
        return True
    steps = as_list(mapping(mapping(rollout.spec.get("strategy")).get("canary")).get("steps"))
    index = as_int(status.get("currentStepIndex"), -1)
    wanted = next((mapping(step).get("setWeight") for step in reversed(steps[:index + 1])
                   if "setWeight" in mapping(step)), None)
    weight = mapping(mapping(mapping(status.get("canary")).get("weights")).get("canary")).get("weight")
    return wanted is not None and weight is not None and as_int(weight, -1) == as_int(wanted, -2)


def _recent(event: KEvent, now: datetime) -> bool:
    """Whether the Event happened in the last RECENT seconds before the input was taken."""
    return event.time is None or (now - event.time).total_seconds() <= RECENT


def _when(event: KEvent) -> str:
    """An Event's last time as sortable text."""
    return event.time.isoformat() if event.time is not None else ""
