"""image-updater-failing: Applications whose images the Argo CD Image Updater cannot update, and why.

From the updater's log (v0.x and v1, text or JSON; pkg/argocd/update.go): tags it cannot read (`Could not get tags
from registry`, `Could not set registry endpoint credentials`, `error fetching metadata for`: credentials, rate
limits, TLS, an unreachable registry) and new images it cannot write back (`Could not update application spec`: a
protected branch, a rejected push, Git credentials, the Application's RBAC), each explained from
knowledge/image_updater_errors.yaml; a later cycle with `errors=0` makes them history. v1's ImageUpdater resources
add their own verdict: `Ready` False (`ReconcileFailed`: the selection failed) and, without log lines, `Error` True
(`PartialErrors`); one that selects no Application is reported at low.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import after, line_order, log_evidence, object_evidence, plural
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping

DOCS = ("https://argocd-image-updater.readthedocs.io/en/stable/basics/update-methods/",
        "https://argocd-image-updater.readthedocs.io/en/stable/configuration/registries/")
GROUP = "argocd-image-updater.argoproj.io"
WRITE_BACK = "image-updater.writeback-failed"
KEEP = 2


@dataclass
class _Failure:
    """The lines of one Application's failures of one cause, and the updater (v1: its ImageUpdater) that logged them."""

    cause: knowledge.KnownError | None
    updater: str = ""
    images: set[str] = field(default_factory=set)
    lines: list[LogRecord] = field(default_factory=list)
    count: int = 0
    why: str = ""


class ImageUpdaterFailing(Analyzer):
    """Applications whose images the Image Updater cannot update."""

    id = "image-updater-failing"
    title = "Image Updater cannot update an Application's images"
    signatures = ("image-updater.tags-failed", "image-updater.credentials-failed", "image-updater.metadata-failed",
                  "image-updater.writeback-failed", "image-updater.cycle-results", "image-updater.no-candidate",
                  "image-updater.unsupported-source")
    needs = Needs(frozenset({"argoproj.io/Application", f"{GROUP}/ImageUpdater"}))

    def __init__(self) -> None:
        self._failures: dict[tuple[str, str], _Failure] = {}
        self._never: dict[tuple[str, str], _Failure] = {}
        self._cycles: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Group the failures by Application and cause; keep each updater's last two `Processing results` lines (v1
        logs one per ImageUpdater, v0.x one per cycle)."""
        updater = _updater_of(record)
        if signature.id == "image-updater.cycle-results":
            cycles = self._cycles[updater]
            cycles[:] = sorted([*cycles, record], key=line_order)[-2:]
            return
        if signature.id in ("image-updater.no-candidate", "image-updater.unsupported-source"):
            if match is None:
                return
            app = record.fields.get("application") or match.groupdict().get("app") or ""
            subject = match.groupdict().get("image") or match.groupdict().get("empty") or app
            failure = self._never.setdefault((app, subject), _Failure(None, updater, why=_never_why(match)))
        else:
            kind = "write-back" if signature.id == WRITE_BACK else "registry"
            cause = next((e for e in knowledge.image_updater_errors() if e.cause == kind
                          and e.pattern.search(record.message)), None)
            app = record.fields.get("application", "")
            failure = self._failures.setdefault((app, cause.id if cause else kind), _Failure(cause, updater))
            if record.fields.get("image_name"):
                failure.images.add(record.fields["image_name"])
        failure.lines = sorted([*failure.lines, record], key=line_order)[-KEEP:]
        failure.count += 1

    def _current(self, failure: _Failure) -> bool:
        """Whether the failure happened in its updater's last completed cycle or after it (not before)."""
        cycles = self._cycles.get(failure.updater, [])
        return len(cycles) < 2 or after(failure.lines[-1], cycles[-2])

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for (app, kind), failure in sorted(self._failures.items()):
            if self._current(failure):
                yield self._finding(ctx, app, kind, failure)
        for (app, subject), failure in sorted(self._never.items()):
            if self._current(failure):
                yield self._never_updated(ctx, app, subject, failure)
        for updater in ctx.snap.of_kind("ImageUpdater", GROUP):
            key = f"{updater.namespace}/{updater.name}"
            logged = key in self._cycles or any(f.updater == key for f in self._failures.values())
            finding = self._updater(ctx, updater, logged)
            if finding is not None:
                yield finding

    def _finding(self, ctx: Context, app: str, kind: str, failure: _Failure) -> Finding:
        cause = failure.cause
        writing = kind.startswith("write-back") or (cause is not None and cause.cause == "write-back")
        name, obj = _application(ctx, app)
        images = ", ".join(sorted(failure.images)) or "its images"
        secret, refs = "", []
        alias = failure.lines[-1].fields.get("image_alias", "")
        if cause is not None and cause.id in ("registry-unauthorized", "registry-credentials-unreadable") and alias:
            for updater in ctx.snap.of_kind("ImageUpdater", GROUP, obj.namespace if obj is not None else None):
                pull = _pull_secret(updater, alias)
                if pull:
                    secret = f" The image's pull secret is {pull} (ImageUpdater {updater.namespace}/{updater.name})."
                    refs.append(Ref(f"{GROUP}/v1alpha1", "ImageUpdater", updater.namespace, updater.name))
                    break
        what = ("cannot write the new image back" if writing else f"cannot read the tags of {images}")
        summary = (f"The Image Updater {what} for Application {app or '(not named by the line)'}: "
                   f"{plural(failure.count, 'failure')} in its log, the last: "
                   f"{_short(failure.lines[-1].message)}. "
                   + (cause.explanation if cause else "The message names the cause.")
                   + (" Argo CD keeps deploying the old image." if writing else
                      " Until it can, the image is never updated."))
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Image Updater {what} for {name or 'an Application'}"
                  + (f": {cause.id.partition('-')[2].replace('-', ' ')}" if cause else ""),
            summary=summary + secret,
            objects=[*([obj.ref] if obj is not None else []), *refs],
            evidence=[log_evidence(r) for r in failure.lines],
            remediation=Remediation(text=cause.remediation if cause else "Fix what the message names.",
                                    command="kubectl -n argocd logs deploy/argocd-image-updater-controller --tail=200",
                                    docs=DOCS),
        )

    def _never_updated(self, ctx: Context, app: str, subject: str, failure: _Failure) -> Finding:
        """An image no tag can update (its constraint, strategy or filters), or an Application it cannot write."""
        name, obj = _application(ctx, app)
        record, count, why = failure.lines[-1], failure.count, failure.why
        skipped = subject == app
        return Finding(
            rule=self.id,
            severity=Severity.MEDIUM,
            title=(f"Image Updater skips Application {name}: its source type" if skipped else
                   f"Image Updater never updates {subject}" + (f" for {name}" if name else "")),
            summary=f"{why} ({plural(count, 'line')} in its log, the last: {_short(record.message)}).",
            objects=[obj.ref] if obj is not None else [],
            evidence=[log_evidence(record)],
            remediation=Remediation(text=("Manage the Application as Helm or Kustomize (or give the updater a "
                                          "write-back target it can write), or stop selecting it." if skipped else
                                          "Make the constraint match the registry's tags (`~1.4`, `^1`; a `v` "
                                          "prefix or a pre-release is not semver to `1.x`), loosen allow-tags or "
                                          "ignore-tags, or fix the image name if the repository has no tags."),
                                    command="argocd-image-updater test IMAGE --semver-constraint CONSTRAINT",
                                    docs=DOCS),
        )

    def _updater(self, ctx: Context, updater: Obj, logged: bool) -> Finding | None:
        """An ImageUpdater resource whose conditions say it failed (its Error condition only when the log, which says
        more, is not in the input), or that selects no Application."""
        conditions = {str(mapping(c).get("type")): (i, mapping(c)) for i, c in
                      enumerate(as_list(updater.status.get("conditions")))}
        ready = conditions.get("Ready", (0, {}))
        error = conditions.get("Error", (0, {}))
        ref = Ref(f"{GROUP}/v1alpha1", "ImageUpdater", updater.namespace, updater.name)
        if ready[1].get("status") == "False":
            return self._condition(updater, ref, ready, Severity.HIGH, "its reconciliation fails")
        if error[1].get("status") == "True" and not logged:
            return self._condition(updater, ref, error, Severity.MEDIUM, "its last check had errors")
        matched = updater.status.get("applicationsMatched")
        apps = [a for a in ctx.snap.applications() if a.namespace == updater.namespace]
        if ready[1].get("status") == "True" and matched is not None and as_int(matched) == 0 and \
                not any(_selects(ref, a) for ref in as_list(updater.spec.get("applicationRefs")) for a in apps):
            return Finding(
                rule=self.id,
                severity=Severity.LOW,
                title=f"ImageUpdater {updater.namespace}/{updater.name} selects no Application",
                summary=(f"ImageUpdater {updater.namespace}/{updater.name} matched no Application in its last check "
                         f"(status.applicationsMatched 0), and its applicationRefs (namePattern, matchLabels) select "
                         f"none of the {plural(len(apps), 'Application')} of namespace {updater.namespace} the input "
                         "holds (it reads only its own namespace): it updates nothing."),
                objects=[ref],
                evidence=[object_evidence(updater, ".status.applicationsMatched", "0")],
                remediation=Remediation(text="Fix the applicationRefs (a namePattern is a glob over Application "
                                             "names; label selectors match the Applications' labels), or create the "
                                             "ImageUpdater in the Applications' namespace.",
                                        command=f"kubectl -n {updater.namespace} get imageupdater {updater.name} "
                                                "-o yaml", docs=DOCS),
            )
        return None

    def _condition(self, updater: Obj, ref: Ref, cond: tuple[int, dict[str, object]], severity: Severity,
                   what: str) -> Finding:
        index, body = cond
        text = f"{body.get('type')} {body.get('status')} {body.get('reason')}: {body.get('message')}"
        evidence: list[Evidence] = [object_evidence(updater, f".status.conditions[{index}]", text)]
        return Finding(
            rule=self.id,
            severity=severity,
            title=f"ImageUpdater {updater.namespace}/{updater.name}: {what}",
            summary=f"ImageUpdater {updater.namespace}/{updater.name} reports {text}.",
            objects=[ref],
            evidence=evidence,
            remediation=Remediation(text="Read the updater's log for the failing images or the selection error; a "
                                         "ReconcileFailed is the applicationRefs (a namePattern or label selector "
                                         "that does not parse) or listing the Applications.",
                                    command=f"kubectl -n {updater.namespace} describe imageupdater {updater.name}",
                                    docs=DOCS),
        )


def _pull_secret(updater: Obj, alias: str) -> str:
    """The pull secret an ImageUpdater gives the image of an alias: the image's, its ref's, else the common one."""
    common = str(mapping(updater.spec.get("commonUpdateSettings")).get("pullSecret") or "")
    for ref in as_list(updater.spec.get("applicationRefs")):
        ref = mapping(ref)
        for image in as_list(ref.get("images")):
            image = mapping(image)
            if image.get("alias") == alias:
                return str(mapping(image.get("commonUpdateSettings")).get("pullSecret") or
                           mapping(ref.get("commonUpdateSettings")).get("pullSecret") or common)
    return ""


def _updater_of(record: LogRecord) -> str:
    """The ImageUpdater a v1 line belongs to (`namespace/name`), "" for v0.x's single loop."""
    name = record.fields.get("imageUpdater_name", "")
    return f"{record.fields.get('imageUpdater_namespace', '')}/{name}" if name else ""


def _application(ctx: Context, app: str) -> tuple[str, Obj | None]:
    """The name of the Application a line names (`name` in v0.x, `namespace/name` in v1) and the object."""
    namespace, _, name = app.rpartition("/")
    return name, next((a for a in ctx.snap.applications() if a.name == name and (not namespace or
                                                                                   a.namespace == namespace)), None)


def _selects(ref: object, app: Obj) -> bool:
    """Whether an applicationRef selects an Application: its namePattern (a glob) and its labelSelectors'
    matchLabels (expressions are taken to match, so as not to claim that nothing is selected)."""
    ref = mapping(ref)
    pattern = str(ref.get("namePattern") or "*")
    labels = mapping(mapping(ref.get("labelSelectors")).get("matchLabels"))
    return fnmatch.fnmatchcase(app.name, pattern) and all(app.labels.get(k) == v for k, v in labels.items())


def _never_why(match: re.Match[str]) -> str:
    """Why an image is never updated, from a no-candidate or unsupported-source line."""
    found = match.groupdict()
    if found.get("type") is not None:
        return (f"The updater skips Application {found.get('app')} on every cycle: its source type "
                f"'{found.get('type') or 'unknown'}' is not one it can write (Helm, Kustomize; an Application never "
                "reconciled has none)")
    if found.get("empty"):
        return (f"No tag of {found['empty']} is left to consider: the repository has none, or allow-tags, "
                "ignore-tags or a digest constraint filter every one out")
    if found.get("constraint") is not None:
        return (f"No tag of {found.get('image')} matches the constraint \"{found['constraint']}\", so the image is "
                "never updated")
    return (f"Tags of {found.get('image')} exist but the {found.get('strategy')} strategy keeps none of them (for "
            "semver: no tag parses as a version)")


def _short(message: str, limit: int = 240) -> str:
    """A message on one line, cut."""
    text = " ".join(message.replace("\\n", " ").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"

