"""applicationset-error: an ApplicationSet whose generators, template or generated Applications fail.

The controller writes `ErrorOccurred` (True) with the reason and the raw error on the ApplicationSet
(applicationset/controllers/applicationset_controller.go); on a generator or template error it creates, updates and
deletes nothing and tries again three minutes later, so new Applications do not appear and changes are not applied.
The finding says what failed (a generator, an SCM provider's rate limit with `argocd_github_api_rate_limit_remaining`
when present, the template, a name two Applications share, a project that does not exist) and, since a generator
that returns nothing instead deletes what it made, what the ApplicationSet's policy would let it delete.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence, plural
from argo_doctor.facts.applicationsets import FINALIZER, policy_of
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
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


class ApplicationSetError(Analyzer):
    """ApplicationSets whose generation fails."""

    id = "applicationset-error"
    title = "ApplicationSet generation fails"
    needs = Needs(frozenset({"argoproj.io/ApplicationSet", "argoproj.io/Application"}), metrics=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        remaining = {(m.labels.get("appset_namespace", ""), m.labels.get("appset_name", "")): m
                     for m in ctx.snap.metrics(("argocd_github_api_rate_limit_remaining",))}
        for appset in ctx.snap.of_kind("ApplicationSet", "argoproj.io"):
            conditions = [(i, mapping(c)) for i, c in enumerate(as_list(appset.status.get("conditions")))]
            error = next(((i, c) for i, c in conditions if c.get("type") == "ErrorOccurred"
                          and c.get("status") == "True"), None)
            if error is not None:
                yield _finding(ctx, appset, *error, remaining.get((appset.namespace, appset.name)))


def _finding(ctx: Context, appset: Obj, index: int, condition: dict[str, object], metric: Sample | None) -> Finding:
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
