"""rollout-analysis-inconclusive: a Rollout paused because its analysis could not decide.

An Inconclusive AnalysisRun (neither the success nor the failure condition held more often than inconclusiveLimit
allows, or an analysis Job's pod cannot start) pauses a canary with `InconclusiveAnalysisRun`, and an Inconclusive
Experiment with `InconclusiveExperiment` (rollout/analysis.go, rollout/experiment.go): the Rollout waits for a person,
without timing out, and Argo CD shows it Suspended. The finding names the run, its metrics and values, why it could not
decide, and the two ways on.
"""

from __future__ import annotations

from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence
from argo_doctor.facts.analysis import outcome
from argo_doctor.facts.rollouts import HASH_LABEL, ROLLOUT_GROUP, ROLLOUT_NEEDS, RolloutState, assess, rollouts
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping

DOCS = ("https://argo-rollouts.readthedocs.io/en/stable/features/analysis/#inconclusive-runs",)
PAUSES = ("InconclusiveAnalysisRun", "InconclusiveExperiment")
TERMINAL = "has terminal error"
"""The Job provider's message for an analysis pod that cannot start (metricproviders/job/job.go)."""


class RolloutAnalysisInconclusive(Analyzer):
    """Rollouts paused by an inconclusive analysis."""

    id = "rollout-analysis-inconclusive"
    title = "Rollout paused: its analysis was inconclusive"
    needs = Needs(ROLLOUT_NEEDS | {"argoproj.io/Experiment"})

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for rollout in rollouts(ctx.snap):
            pauses = [mapping(p) for p in as_list(rollout.status.get("pauseConditions"))
                      if mapping(p).get("reason") in PAUSES]
            if not pauses or assess(ctx.snap, rollout).state == RolloutState.DEGRADED:
                continue  # rollout-degraded reports a Degraded one, with this reason among its own
            runs = self._runs(ctx, rollout)
            yield self._finding(rollout, str(pauses[0].get("reason")), str(pauses[0].get("startTime") or ""), runs)

    def _runs(self, ctx: Context, rollout: Obj) -> list[Obj]:
        """The Inconclusive AnalysisRuns of the current pod template, the current Experiment's included."""
        current = str(rollout.status.get("currentPodHash") or "")
        experiment = str(mapping(rollout.status.get("canary")).get("currentExperiment") or "")
        found = []
        for run in ctx.snap.of_kind("AnalysisRun", ROLLOUT_GROUP, rollout.namespace):
            owner = next((o for o in run.owner_references() if o.get("controller")), {})
            mine = run.labels.get(HASH_LABEL) == current and owner.get("kind") == "Rollout" and \
                owner.get("name") == rollout.name
            if (mine or (experiment and owner.get("kind") == "Experiment" and owner.get("name") == experiment)) \
                    and run.status.get("phase") == "Inconclusive":
                found.append(run)
        return sorted(found, key=lambda r: r.name)

    def _finding(self, rollout: Obj, reason: str, since: str, runs: list[Obj]) -> Finding:
        ns, name = rollout.namespace, rollout.name
        outcomes = [o for o in (outcome(r.raw, rollout.raw) for r in runs) if o is not None]
        parts = [f"Rollout {ns}/{name} is paused ({reason}{' since ' + since if since else ''}): its analysis could "
                 "not decide, so the controller waits for someone to promote or abort it; it never times out, and "
                 "Argo CD shows it Suspended."]
        parts.extend(o.verdict() for o in outcomes)
        if not outcomes:
            parts.append("The inconclusive AnalysisRun is not in the input (kubectl get analysisruns -n "
                         f"{ns} adds it).")
        evidence: list[Evidence] = [object_evidence(rollout, ".status.pauseConditions", f"{reason} {since}".strip())]
        evidence.extend(object_evidence(r, ".status.metricResults", f"{r.status.get('phase')}: "
                                        f"{r.status.get('message') or 'no message'}") for r in runs)
        stuck_job = any(TERMINAL in m.message for o in outcomes for m in o.metrics)
        fix = ("An analysis Job's pod cannot start (its image or configuration, as the message says): fix the "
               "AnalysisTemplate's job, then retry the update. " if stuck_job else "")
        fix += (f"Decide now: promote it if the new version is good (kubectl argo rollouts promote {name} -n {ns}), "
                f"abort it otherwise (kubectl argo rollouts abort {name} -n {ns}). So that the analysis decides next "
                "time, make the success and failure conditions cover every value between them, or raise "
                "inconclusiveLimit.")
        return Finding(
            rule=self.id,
            severity=Severity.MEDIUM,
            title=f"Rollout {ns}/{name} is paused: its analysis was inconclusive"
                  + (f" ({', '.join(m.name for o in outcomes for m in o.metrics)})" if outcomes else ""),
            summary=" ".join(parts),
            objects=[rollout.ref, *(r.ref for r in runs)],
            evidence=evidence,
            remediation=Remediation(text=fix, command=f"kubectl argo rollouts get rollout {name} -n {ns}", docs=DOCS),
        )
