"""sync-failed: the last sync operation of an Application Failed or Errored.

Reports the operation's message, every resource result that failed (status SyncFailed, or a
hook that Failed/Errored), the Application's SyncError/ComparisonError conditions, the
controller's log lines for the operation, and what the error messages mean.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural, resource_ref
from argo_doctor.facts.manifests import generation_errors, is_generation_error
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import parse_time

FAILED_PHASES = ("Failed", "Error")
FAILED_RESULTS = ("SyncFailed",)
FAILED_HOOKS = ("Failed", "Error")
ERROR_CONDITIONS = ("SyncError", "ComparisonError")
MAX_LOG_LINES = 5
DOCS = ("https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/",)


class SyncFailed(Analyzer):
    """Applications whose last sync operation failed."""

    id = "sync-failed"
    title = "Sync operation failed"
    needs = Needs(frozenset({"argoproj.io/Application"}))
    signatures = ("argocd.operation-phase",)

    def __init__(self) -> None:
        self._lines: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the latest controller lines that record a failed operation, per app."""
        if match is None or match.group("phase") not in FAILED_PHASES:
            return
        lines = self._lines[match.group("app")]
        lines.append(record)
        if len(lines) > MAX_LOG_LINES:
            del lines[0]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per Application whose operationState phase is Failed or Error."""
        for app in ctx.snap.applications():
            if app.meta.get("deletionTimestamp"):  # being deleted: app-deletion-stuck says what holds it, never "sync"
                continue
            op = app.at("status", "operationState")
            if isinstance(op, dict) and op.get("phase") in FAILED_PHASES:
                if is_generation_error(str(op.get("message") or "")) and generation_errors(app):
                    continue  # the render failed, and still does: manifest-generation-failed says why
                yield self._finding(app, op)

    def _finding(self, app: Obj, op: dict[str, Any]) -> Finding:
        phase = str(op["phase"])
        message = str(op.get("message") or "")
        finished = parse_time(op.get("finishedAt")) or parse_time(op.get("startedAt"))
        operation = mapping(op.get("operation"))
        initiated = mapping(operation.get("initiatedBy"))
        who = "automated sync" if initiated.get("automated") else f"sync by {initiated.get('username') or 'a user'}"
        result = mapping(op.get("syncResult"))
        revision = str(result.get("revision") or mapping(operation.get("sync")).get("revision") or "")
        evidence: list[Evidence] = [
            object_evidence(app, ".status.operationState", f"phase {phase}: {message}", finished)
        ]
        failed = [r for r in as_list(result.get("resources")) if isinstance(r, dict) and _failed(r)]
        objects = [app.ref]
        for res in failed:
            ref = resource_ref(res)
            objects.append(ref)
            state = res.get("status") or res.get("hookPhase")
            evidence.append(
                object_evidence(app, ".status.operationState.syncResult.resources",
                                f"{ref} {state}: {res.get('message') or ''}".strip(), finished)
            )
        for cond in as_list(app.status.get("conditions")):
            if isinstance(cond, dict) and cond.get("type") in ERROR_CONDITIONS:
                evidence.append(object_evidence(app, ".status.conditions", f"{cond.get('type')}: {cond.get('message')}",
                                                parse_time(cond.get("lastTransitionTime"))))
        qualified = f"{app.namespace}/{app.name}"
        records = self._lines.get(qualified, []) + self._lines.get(app.name, [])
        evidence.extend(log_evidence(r) for r in records[-MAX_LOG_LINES:])

        messages = [message, *(str(r.get("message") or "") for r in failed)]
        messages += [e.excerpt for e in evidence if ".status.conditions" in e.location]
        advice = [a for a in knowledge.sync_error_advice() if any(a.pattern.search(m) for m in messages)]
        summary = f"The last {who} of {qualified}"
        summary += f" to revision {revision[:12]}" if revision else ""
        summary += f" ended in phase {phase}: {message.rstrip('.') or 'no message'}."
        if failed:
            summary += f" {plural(len(failed), 'resource')} failed: " + "; ".join(
                f"{o} ({_own(r, message)})" for o, r in zip(objects[1:], failed, strict=True)) + "."
        retry = as_int(op.get("retryCount"))
        if retry and f"retried {retry} time" not in message:
            summary += f" Argo CD retried {plural(retry, 'time')}."
        summary += "".join(f" {a.explanation}" for a in advice)
        remediation_text = " ".join(a.remediation for a in advice) or (
            "Read the failed resource messages above, fix the manifests in Git (or the cluster state they "
            "conflict with), then sync again."
        )
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Sync of {app.name} {phase.lower()}: " + (_first_line(message) or "no message"),
            summary=summary,
            objects=objects,
            evidence=evidence,
            remediation=Remediation(
                text=remediation_text,
                command=f"argocd app get {qualified} --show-operation",
                docs=tuple(dict.fromkeys([*DOCS, *(s.strip() for a in advice for s in a.source.split(";"))])),
            ),
        )


def _failed(result: dict[str, Any]) -> bool:
    return result.get("status") in FAILED_RESULTS or result.get("hookPhase") in FAILED_HOOKS


def _first_line(text: str, limit: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _own(result: dict[str, Any], message: str) -> str:
    """What a failed resource's result says, unless the operation's message already quotes it."""
    said = str(result.get("message") or "")
    if said and said.strip().rstrip(".") in message:
        return "the error above"
    return said or str(result.get("status") or "")
