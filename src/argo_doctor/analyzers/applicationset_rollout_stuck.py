"""applicationset-rollout-stuck: an ApplicationSet's progressive sync that does not leave a step.

With `strategy.type: RollingSync` the controller moves one step at a time and waits for every Application of the
step to become Healthy (applicationset/progressivesync: statuses Waiting, Pending, Progressing, Healthy in
`status.applicationStatus`, the `RolloutProgressing` condition). An Application of the current step that stays
Pending or Progressing while its own health is not Healthy holds every later step; the rule names it, its health,
since when, and what waits behind it. One younger than `min-minutes` is simply rolling out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import age, object_evidence, plural
from argo_doctor.model import Finding, Needs, Remediation, Severity
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/Progressive-Syncs/",)
MOVING = ("Pending", "Progressing")


class ApplicationSetRolloutStuck(Analyzer):
    """ApplicationSet progressive syncs held in a step."""

    id = "applicationset-rollout-stuck"
    title = "ApplicationSet progressive sync does not advance"
    options: ClassVar[dict[str, str]] = {
        "min-minutes": "Minutes an Application of the current step stays Pending or Progressing while not Healthy "
                       "before it is reported (default 30)"}
    needs = Needs(frozenset({"argoproj.io/ApplicationSet", "argoproj.io/Application"}))

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        least = ctx.option(self.id, "min-minutes", 30)
        for appset in ctx.snap.of_kind("ApplicationSet", "argoproj.io"):
            if mapping(appset.spec.get("strategy")).get("type") != "RollingSync":
                continue
            entries = [(i, mapping(e)) for i, e in enumerate(as_list(appset.status.get("applicationStatus")))]
            moving = [(i, e) for i, e in entries if e.get("status") in MOVING]
            if not moving:
                continue
            step = min((str(e.get("step") or "") for _, e in moving), key=_order)
            held = []
            for index, entry in moving:
                if str(entry.get("step") or "") != step:
                    continue
                app = ctx.snap.get("Application", str(entry.get("application") or ""), appset.namespace,
                                   "argoproj.io")
                health = mapping(mapping(app.status.get("health")) if app is not None else {})
                since = parse_time(entry.get("lastTransitionTime"))
                minutes = (now - since).total_seconds() / 60 if since is not None else None
                if app is None or health.get("status") == "Healthy" or minutes is None or minutes < least:
                    continue
                held.append((index, entry, app, health, minutes))
            if not held:
                continue
            waiting = [e for _, e in entries if e.get("status") == "Waiting"
                       and _order(str(e.get("step") or "")) > _order(step)]
            index, entry, app, health, minutes = held[0]
            lines = "; ".join(f"{a.name} is {h.get('status') or 'Unknown'}"
                              + (f" ({h.get('message')})" if h.get("message") else "")
                              + f", {e.get('status')} for {age(m)}" for _, e, a, h, m in held[:3])
            yield Finding(
                rule=self.id,
                severity=Severity.HIGH if waiting else Severity.MEDIUM,
                title=f"ApplicationSet {appset.name}: progressive sync held in step {step} by {app.name}",
                summary=(f"The progressive sync of ApplicationSet {appset.namespace}/{appset.name} waits in step "
                         f"{step} for every Application of the step to become Healthy: {lines}."
                         + (f" {plural(len(waiting), 'Application')} of later steps "
                            f"{'waits' if len(waiting) == 1 else 'wait'} behind it "
                            f"({', '.join(str(e.get('application')) for e in waiting[:5])})." if waiting else "")),
                objects=[appset.ref, *(a.ref for _, _, a, _, _ in held[:3])],
                evidence=[object_evidence(appset, f".status.applicationStatus[{i}]",
                                          f"{e.get('application')} {e.get('status')} in step {e.get('step')}: "
                                          f"{e.get('message') or ''}", parse_time(e.get("lastTransitionTime")))
                          for i, e, _, _, _ in held[:3]]
                         + [object_evidence(a, ".status.health", str(h.get("status") or "Unknown"))
                            for _, _, a, h, _ in held[:3]],
                remediation=Remediation(
                    text=f"Make {app.name} Healthy (its resources say why: `argocd app get {app.namespace}/"
                         f"{app.name}`), or, if this step should not wait for it, move it to another step of "
                         "spec.strategy.rollingSync.steps; the ApplicationSet resumes by itself once the step is "
                         "Healthy.",
                    command=f"argocd app get {app.namespace}/{app.name}", docs=DOCS),
            )


def _order(step: str) -> tuple[int, str]:
    """Steps in their numeric order ("2" before "10")."""
    return (int(step), "") if step.isdecimal() else (1 << 30, step)
