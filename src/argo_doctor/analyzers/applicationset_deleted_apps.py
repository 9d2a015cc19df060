"""applicationset-deleted-apps: an ApplicationSet that deleted Applications it had generated.

A generator that returns fewer parameter sets (nothing at all: a pull request generator with
continueOnRepoNotFoundError on a 404, a git generator whose paths match nothing) makes the controller delete the
Applications no longer generated, when its policy is sync or create-delete (applicationset_controller.go
deleteInCluster: Event `Deleted` "Deleted Application %q", log "Deleted application"). An Application generated with
the resources finalizer takes its resources with it. Read from those Events and lines and from owned Applications
being deleted; an ApplicationSet whose policy forbids deletion is never said to delete.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import event_evidence, log_evidence, object_evidence, plural
from argo_doctor.facts.applicationsets import FINALIZER, policy_of
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature

DELETED = re.compile(r'Deleted Application \\?"(?P<app>[^"\\]+)')
MAX_LINES = 5
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/Controlling-Resource-Modification/",
        "https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/Application-Deletion/")


class ApplicationSetDeletedApps(Analyzer):
    """ApplicationSets that deleted the Applications they had generated."""

    id = "applicationset-deleted-apps"
    title = "ApplicationSet deleted its Applications"
    signatures = ("argocd.appset-deleted-application",)
    needs = Needs(frozenset({"argoproj.io/ApplicationSet", "argoproj.io/Application"}), events=True)

    def __init__(self) -> None:
        self._lines: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the controller's last `Deleted application` lines, per ApplicationSet."""
        appset = record.fields.get("applicationset") or record.fields.get("appSet") or ""
        lines = self._lines[appset.split("/")[-1]]
        lines.append(record)
        del lines[:-MAX_LINES]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for appset in ctx.snap.of_kind("ApplicationSet", "argoproj.io"):
            policy = policy_of(ctx.snap, appset)
            if not policy.deletes:
                continue  # create-only or create-update: the controller never deletes its Applications
            events = [e for e in ctx.snap.events_about("ApplicationSet", appset.name)
                      if e.reason == "Deleted" and (e.involved is None or e.involved.namespace == appset.namespace)]
            deleted = list(dict.fromkeys(m["app"] for e in events if (m := DELETED.search(e.message))))
            going = [a for a in ctx.snap.children(appset, "Application") if a.meta.get("deletionTimestamp")]
            lines = self._lines.get(appset.name, [])
            if deleted or going:
                yield _finding(appset, policy.name, policy.source, policy.preserve, deleted, going,
                               [event_evidence(e) for e in events[-3:]] + [log_evidence(r) for r in lines[-2:]])


def _finding(appset: Obj, policy: str, source: str, preserve: bool, deleted: list[str], going: list[Obj],
             evidence: list[Evidence]) -> Finding:
    names = list(dict.fromkeys([*deleted, *(a.name for a in going)]))
    with_resources = [a for a in going if FINALIZER in a.meta.get("finalizers", [])]
    cascading = bool(with_resources) or (not preserve and not going)
    shown = ", ".join(names[:8]) + (f" (and {len(names) - 8} more)" if len(names) > 8 else "")
    summary = (f"ApplicationSet {appset.namespace}/{appset.name} deleted {plural(len(names), 'Application')} it had "
               f"generated ({shown}): its generators stopped returning them, and its policy ({policy}, {source}) lets "
               "the controller delete what they no longer return.")
    if with_resources:
        summary += (f" {plural(len(with_resources), 'Application')} being deleted "
                    f"{'carries' if len(with_resources) == 1 else 'carry'} {FINALIZER}: Argo CD deletes "
                    f"{'its' if len(with_resources) == 1 else 'their'} resources in the clusters first.")
    elif cascading:
        summary += (" Without preserveResourcesOnDeletion the generated Applications carried the resources finalizer, "
                    "so their resources were deleted with them.")
    else:
        summary += " preserveResourcesOnDeletion kept their resources in the clusters."
    evidence += [object_evidence(a, ".metadata.deletionTimestamp", f"being deleted since "
                                 f"{a.meta.get('deletionTimestamp')}") for a in going[:3]]
    return Finding(
        rule="applicationset-deleted-apps",
        severity=Severity.CRITICAL if cascading else Severity.HIGH,
        title=f"ApplicationSet {appset.name} deleted {plural(len(names), 'Application')}"
              + (" and their resources" if cascading else ""),
        summary=summary,
        objects=[appset.ref, *(a.ref for a in going[:10])],
        evidence=evidence or [object_evidence(appset, ".spec.generators", "generators")],
        remediation=Remediation(
            text="Find why the generators return less (the pull request, repository, directory or cluster they read), "
                 "and keep Applications from following a generator's bad day: syncPolicy.applicationsSync: "
                 "create-update on the ApplicationSet (or the controller's --policy create-update) and "
                 "syncPolicy.preserveResourcesOnDeletion: true. Applications still being deleted can be kept by "
                 "removing their resources finalizer only once you are sure their resources must stay.",
            command=f"kubectl -n {appset.namespace} get events --field-selector involvedObject.name={appset.name}",
            docs=DOCS),
    )
