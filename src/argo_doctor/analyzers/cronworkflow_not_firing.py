"""cronworkflow-not-firing: an Argo Workflows CronWorkflow that stopped starting its Workflows, and why.

From the cron controller (workflow/cron/operator.go): a spec the controller refuses (`SpecError`), a submission it
could not make (`SubmissionError`), `suspend`, a stop strategy reached (phase Stopped), `concurrencyPolicy: Forbid`
while an earlier Workflow is still active; and runs it missed: a schedule due since `lastScheduledTime` with none of
those reasons (a missed run is dropped without a line unless startingDeadlineSeconds covers it, so the controller
was down or its log says why: `invalid cron workflow`). Not a missed run: one `spec.when` may have skipped, or one
due under a schedule changed since (the `last-used-schedule` annotation differs: the controller owes no backfill).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence
from argo_doctor.facts.cron import CronError, last_due
from argo_doctor.facts.workflows import WORKFLOW_GROUP
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

DOCS = ("https://argo-workflows.readthedocs.io/en/latest/cron-workflows/",)
GRACE = timedelta(minutes=2)
"""How late a run may start before it counts as missed (the controller checks every CRON_SYNC_PERIOD, 10s)."""
LAST_USED = "cronworkflows.argoproj.io/last-used-schedule"


class CronWorkflowNotFiring(Analyzer):
    """CronWorkflows that do not start their Workflows."""

    id = "cronworkflow-not-firing"
    title = "CronWorkflow does not start its Workflows"
    signatures = ("workflows.cron-invalid",)
    needs = Needs(frozenset({"argoproj.io/CronWorkflow", "argoproj.io/Workflow"}))

    def __init__(self) -> None:
        self._invalid: dict[tuple[str, str], LogRecord] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the controller's last `invalid cron workflow` line per CronWorkflow."""
        namespace, _, name = (record.fields.get("cronWorkflow") or "").rpartition("/")
        namespace = namespace or record.fields.get("namespace", "")
        name = name or record.fields.get("workflow", "")
        if name:
            self._invalid[(namespace, name)] = record

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        for cron in sorted(ctx.snap.of_kind("CronWorkflow", WORKFLOW_GROUP), key=lambda c: (c.namespace, c.name)):
            finding = self._cron(ctx, cron, now)
            if finding is not None:
                yield finding

    def _cron(self, ctx: Context, cron: Obj, now: datetime) -> Finding | None:
        ns, name = cron.namespace, cron.name
        evidence: list[Evidence] = []
        for index, raw in enumerate(as_list(cron.status.get("conditions"))):
            cond = mapping(raw)
            if cond.get("type") in ("SpecError", "SubmissionError") and cond.get("status") == "True":
                evidence.append(object_evidence(cron, f".status.conditions[{index}]",
                                                f"{cond.get('type')}: {cond.get('message')}"))
                what = ("the controller refuses its spec" if cond.get("type") == "SpecError" else
                        "the controller cannot submit its Workflow")
                return self._finding(cron, Severity.HIGH, what, f"{what[0].upper()}{what[1:]}: "
                                     f"{cond.get('message')}.", evidence,
                                     "Fix what the condition says (a SubmissionError is often the controller's "
                                     "ServiceAccount or an admission webhook refusing the Workflow).")
        invalid = self._invalid.get((ns, name))
        last = parse_time(cron.status.get("lastScheduledTime"))
        if invalid is not None and (last is None or (invalid.time is not None and invalid.time > last)):
            return self._finding(cron, Severity.HIGH, "the controller refuses its spec",
                                 f"The workflow-controller logged `invalid cron workflow` for it "
                                 f"({invalid.fields.get('error', 'see the line')}) and it has run nothing since: "
                                 "the controller schedules no CronWorkflow it refuses.", [log_evidence(invalid)],
                                 "Fix the spec as the line says (argo cron lint checks it).")
        if cron.spec.get("suspend"):
            return self._finding(cron, Severity.LOW, "it is suspended", "spec.suspend is true: it starts nothing "
                                 "until resumed.", [object_evidence(cron, ".spec.suspend", "true")],
                                 f"Resume it when it should run again: argo cron resume {name} -n {ns}.")
        if cron.status.get("phase") == "Stopped":
            return self._finding(cron, Severity.LOW, "its stop strategy was reached", "Its phase is Stopped: "
                                 "spec.stopStrategy's condition held, and it starts nothing more.",
                                 [object_evidence(cron, ".status.phase", "Stopped")],
                                 "Change or remove spec.stopStrategy if it should run again.")
        return self._missed(ctx, cron, now)

    def _missed(self, ctx: Context, cron: Obj, now: datetime) -> Finding | None:
        """A run due since the last one that did not start."""
        ns = cron.namespace
        schedules = [str(s) for s in as_list(cron.spec.get("schedules"))] or \
            ([str(cron.spec["schedule"])] if cron.spec.get("schedule") else [])
        last = parse_time(cron.status.get("lastScheduledTime")) or cron.created
        if last is None or not schedules or cron.spec.get("when"):
            return None  # `when` skips runs on purpose, without a line
        zone = str(cron.spec.get("timezone") or "")
        used = cron.annotations.get(LAST_USED)
        if used is not None and used != ",".join(f"CRON_TZ={zone} {s}" if zone else s for s in schedules):
            return None  # the schedule changed since the last run: the controller owes no run of the old one
        try:
            due = max((d for s in schedules if (d := last_due(s, now - GRACE, zone)) is not None), default=None)
            before = max((d for s in schedules if due is not None and
                          (d := last_due(s, due - timedelta(minutes=1), zone)) is not None), default=None)
        except CronError:
            return None  # robfig refuses it too: the controller's SpecError or log line says so
        if due is None or due <= last:
            return None
        missed = _missed_times(schedules, zone, last, due)
        evidence = [object_evidence(cron, ".status.lastScheduledTime",
                                    f"last run scheduled {cron.status.get('lastScheduledTime') or 'never'}; due "
                                    f"{due:%Y-%m-%dT%H:%M:%SZ} ({', '.join(schedules)})")]
        active = [ctx.snap.get("Workflow", str(mapping(a).get("name")), ns, WORKFLOW_GROUP)
                  for a in as_list(cron.status.get("active"))]
        running = [w for w in active if w is not None and w.status.get("phase") in (None, "", "Pending", "Running")]
        if cron.spec.get("concurrencyPolicy") == "Forbid" and running:
            held = running[0]
            started = parse_time(held.status.get("startedAt")) or held.created
            long = started is not None and before is not None and started < before
            evidence.append(object_evidence(held, ".status.phase", f"{held.status.get('phase') or 'Pending'} since "
                                            f"{held.status.get('startedAt') or held.meta.get('creationTimestamp')}"))
            return self._finding(cron, Severity.MEDIUM if long else Severity.LOW,
                                 f"Forbid holds it behind Workflow {held.name}",
                                 f"{missed} did not start: concurrencyPolicy Forbid skips every run while Workflow "
                                 f"{ns}/{held.name} is active "
                                 f"({held.status.get('phase') or 'Pending'} since "
                                 f"{held.status.get('startedAt') or held.meta.get('creationTimestamp')}).", evidence,
                                 f"Find out why {held.name} does not finish (argo get {held.name} -n {ns}); give "
                                 "the Workflow an activeDeadlineSeconds shorter than the schedule's period, or "
                                 "use concurrencyPolicy Replace.")
        controller = ctx.snap.component("workflow-controller")
        return self._finding(cron, Severity.MEDIUM, "a scheduled run did not start",
                             f"{missed} did not start (its schedule, timezone "
                             f"{cron.spec.get('timezone') or 'the controller’s'}) and its last run was scheduled "
                             f"{cron.status.get('lastScheduledTime') or 'never'}: the controller dropped or never "
                             "saw it (it drops a missed run without a line unless startingDeadlineSeconds covers "
                             "it)." + ("" if controller is not None else " The input holds no workflow-controller."),
                             evidence, "Check that the workflow-controller runs and watches this namespace (its "
                             "--namespaced/--managed-namespace settings and its log), and set "
                             "startingDeadlineSeconds so that a run missed while it was down still starts.")

    def _finding(self, cron: Obj, severity: Severity, what: str, why: str, evidence: list[Evidence],
                 fix: str) -> Finding:
        ns, name = cron.namespace, cron.name
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"CronWorkflow {name} starts nothing: {what}",
            summary=f"CronWorkflow {ns}/{name} does not start its Workflows. {why}",
            objects=[cron.ref],
            evidence=evidence,
            remediation=Remediation(text=fix, command=f"argo cron get {name} -n {ns}", docs=DOCS),
        )


def _missed_times(schedules: list[str], zone: str, last: datetime, due: datetime, limit: int = 4) -> str:
    """`The runs due at 04:30 and 08:30 UTC`: the due times after the last scheduled run, the latest `limit`."""
    found: list[datetime] = []
    cursor = due
    while cursor > last and len(found) <= limit:
        found.append(cursor)
        previous = max((d for s in schedules if (d := last_due(s, cursor - timedelta(minutes=1), zone)) is not None),
                       default=None)
        if previous is None:
            break
        cursor = previous
    shown = [f"{t:%Y-%m-%d %H:%M}" for t in reversed(found[:limit])]
    more = " (and earlier ones)" if len(found) > limit else ""
    if len(shown) == 1:
        return f"The run due at {shown[0]} UTC"
    return f"The runs due at {', '.join(shown[:-1])} and {shown[-1]} UTC{more}"
