"""applicationset-error: an ApplicationSet whose generators, template or generated Applications fail.

The controller writes `ErrorOccurred` (True) with the reason and the raw error on the ApplicationSet
(applicationset/controllers/applicationset_controller.go); on a generator or template error it creates, updates and
deletes nothing and tries again three minutes later, so new Applications do not appear and changes are not applied.
The finding says what failed (a generator, an SCM provider's rate limit with `argocd_github_api_rate_limit_remaining`
when present, the template, a name two Applications share, a project that does not exist), since when the
controller's log has said so (`unable to generate applications`), and, since a generator that returns nothing
instead deletes what it made, what the ApplicationSet's policy would let it delete. Log lines alone, for an
ApplicationSet whose status the input lacks, are reported at low.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.facts.applicationsets import FINALIZER, policy_of
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.metrics import Sample
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/Controlling-Resource-Modification/",)
REASONS = {
    "ApplicationGenerationFromParamsError": "a generator failed",
    "RenderTemplateParamsError": "the template does not render with the generated parameters",
    "ApplicationValidationError": "a generated Application is invalid",
    "CreateApplicationError": "the controller could not create a generated Application",
    "UpdateApplicationError": "the controller could not update a generated Application",
    "DeleteApplicationError": "the controller could not delete an Application it no longer generates",
    "ApplicationSetRolloutError": "its progressive sync is misconfigured",
}
"""Reasons of the ErrorOccurred condition (pkg/apis/application/v1alpha1/applicationset_types.go)."""
HALTS = ("ApplicationGenerationFromParamsError", "RenderTemplateParamsError")
RATE_LIMIT = re.compile(r"rate limit", re.I)
DUPLICATE = re.compile(r"contains applications with duplicate name: (?P<name>\S+)")
NO_PROJECT = re.compile(r"references project (?P<project>\S+) which does not exist")
FAILED = "unable to generate applications: "


@dataclass
class _Failures:
    """The controller's `unable to generate applications` lines of one ApplicationSet: how many, first and last."""

    count: int = 0
    first: LogRecord | None = None
    last: LogRecord | None = None
    messages: set[str] = field(default_factory=set)


class ApplicationSetError(Analyzer):
    """ApplicationSets whose generation fails."""

    id = "applicationset-error"
    title = "ApplicationSet generation fails"
    signatures = ("argocd.appset-generation-failed",)
    needs = Needs(frozenset({"argoproj.io/ApplicationSet", "argoproj.io/Application"}), metrics=True)

    def __init__(self) -> None:
        self._failures: dict[tuple[str, str], _Failures] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Count the controller's failed generations per ApplicationSet (`applicationset=<namespace>/<name>`)."""
        namespace, _, name = (record.fields.get("applicationset") or "").rpartition("/")
        if not name or FAILED not in record.message:
            return
        failures = self._failures.setdefault((namespace, name), _Failures())
        failures.count += 1
        failures.first = failures.first or record
        failures.last = record
        if len(failures.messages) < 3:
            failures.messages.add(record.message.partition(FAILED)[2].strip())

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        remaining = {(m.labels.get("appset_namespace", ""), m.labels.get("appset_name", "")): m
                     for m in ctx.snap.metrics(("argocd_github_api_rate_limit_remaining",))}
        seen = set()
        for appset in ctx.snap.of_kind("ApplicationSet", "argoproj.io"):
            key = (appset.namespace, appset.name)
            conditions = [(i, mapping(c)) for i, c in enumerate(as_list(appset.status.get("conditions")))]
            error = next(((i, c) for i, c in conditions if c.get("type") == "ErrorOccurred"
                          and c.get("status") == "True"), None)
            if error is not None:
                yield _finding(ctx, appset, *error, remaining.get(key), self._failures.get(key))
            if conditions:  # the controller's current verdict: a later success clears the lines before it
                seen.add(key)
        for (namespace, name), failures in sorted(self._failures.items()):
            if (namespace, name) not in seen and failures.last is not None:
                yield _logged_only(namespace, name, failures)


def _since(failures: _Failures) -> str:
    """How long the controller's log shows the generation failing, as a sentence."""
    if failures.first is None or failures.last is None:
        return ""
    first, last = failures.first.time, failures.last.time
    end = "%H:%M:%S" if first and last and first.date() == last.date() else "%Y-%m-%d %H:%M:%S"
    span = f" from {first:%Y-%m-%d %H:%M:%S} to {last.strftime(end)} UTC" if first and last else ""
    return f" The controller's log shows {plural(failures.count, 'failed attempt')}{span}."


def _lines(failures: _Failures) -> list[Evidence]:
    """The first and the last failed attempt's lines."""
    records = [failures.first, *([failures.last] if failures.last is not failures.first else [])]
    return [log_evidence(r) for r in records if r is not None]


def _logged_only(namespace: str, name: str, failures: _Failures) -> Finding:
    """A finding from the controller's lines alone: the input holds no status of the ApplicationSet."""
    assert failures.last is not None
    message = sorted(failures.messages)[0] if failures.messages else ""
    return Finding(
        rule="applicationset-error",
        severity=Severity.LOW,
        title=f"ApplicationSet {name}: the controller failed to generate its Applications",
        summary=(f"The applicationset controller logged `unable to generate applications` for {namespace}/{name}: "
                 f"{message}.{_since(failures)} The input holds no conditions of that ApplicationSet, so whether "
                 "it still fails cannot be told; while it fails, the controller creates, updates and deletes nothing "
                 "for it."),
        objects=[Ref("argoproj.io/v1alpha1", "ApplicationSet", namespace, name)],
        evidence=_lines(failures),
        remediation=Remediation(text="Read the ApplicationSet's conditions to see whether it still fails, then mend "
                                     "what the message names.",
                                command=f"kubectl -n {namespace} get applicationset {name} "
                                        "-o jsonpath='{.status.conditions}'", docs=DOCS),
    )


def _finding(ctx: Context, appset: Obj, index: int, condition: dict[str, object], metric: Sample | None,
             failures: _Failures | None) -> Finding:
    reason = str(condition.get("reason") or "")
    message = str(condition.get("message") or "")
    what = REASONS.get(reason, "the controller reports an error")
    apps = ctx.snap.children(appset, "Application")
    parts = [f"ApplicationSet {appset.namespace}/{appset.name} reports an error: {what} ({reason or 'no reason'}: "
             f"{message})."]
    evidence: list[Evidence] = [object_evidence(appset, f".status.conditions[{index}]",
                                                f"ErrorOccurred {reason}: {message}",
                                                parse_time(condition.get("lastTransitionTime")))]
    fix = "Mend what the message names, then check the ApplicationSet's conditions again."
    if RATE_LIMIT.search(message):
        parts.append("The SCM provider's API rate limit is spent: every generator of this kind fails until it resets.")
        app = "appSecretName" in str(appset.spec.get("generators"))
        fix = ("Lower the calls: a longer requeueAfterSeconds on the generator, webhooks instead of polling"
               + (", fewer generators sharing the GitHub App's installation" if app else
                  ", a GitHub App (appSecretName: its own, larger limit) rather than a token") + ".")
    found = DUPLICATE.search(message)
    if found:
        fix = (f"Make the template's name unique for every parameter set (two sets give {found['name']}), e.g. with a "
               "parameter that differs between them.")
    found = NO_PROJECT.search(message)
    if found:
        fix = f"Create AppProject {found['project']}, or fix spec.template.spec.project."
    if metric is not None and metric.value == 0:
        parts.append("argocd_github_api_rate_limit_remaining is 0 for it.")
        evidence.append(Evidence("metric", metric.location, "argocd_github_api_rate_limit_remaining 0"))
    if failures is not None and failures.last is not None:
        parts.append(_since(failures).strip())
        evidence.extend(_lines(failures))
    if reason in HALTS:
        parts.append("Until it succeeds, the controller creates, updates and deletes nothing for it and tries again "
                     "every three minutes: new Applications do not appear and template changes are not applied.")
    policy = policy_of(ctx.snap, appset)
    if apps:
        guarded = policy.preserve or all(FINALIZER not in a.meta.get("finalizers", []) for a in apps)
        if policy.deletes:
            parts.append("An error deletes nothing, but a generator that returns nothing instead (a repository or pull "
                         "request that disappears, a path that matches nothing) deletes what it made: its policy "
                         f"({policy.name}, {policy.source}) lets the controller delete its "
                         f"{plural(len(apps), 'Application')}"
                         + (", and they would keep their resources (no resources finalizer)." if guarded else
                            ", with their resources (resources finalizer)."))
            fix += (" To keep the Applications whatever the generators return, set syncPolicy.applicationsSync: "
                    "create-update (or the controller's policy) and preserveResourcesOnDeletion: true.")
    return Finding(
        rule="applicationset-error",
        severity=Severity.MEDIUM,
        title=f"ApplicationSet {appset.name}: {what}",
        summary=" ".join(parts),
        objects=[appset.ref],
        evidence=evidence,
        remediation=Remediation(text=fix, command=f"kubectl -n {appset.namespace} get applicationset {appset.name} "
                                                  "-o jsonpath='{.status.conditions}'", docs=DOCS),
    )
