"""component-known-bug: an installed Argo component runs a version with known upstream bugs.

Every Argo CD, Argo Rollouts and Argo CD Image Updater workload found in the input (`Snapshot.components`, versions
from image tags) is checked against `knowledge/known_bugs.yaml`: one finding per product and version lists every
row whose affected range holds that version, with the release that fixes it. A row names the rule whose finding
shows its symptom (`shown_by`); where the symptom can be seen cheaply in this input (a GitHub App token refresh
refused with 401 in the log of an affected Argo CD pod, an automated sync refused by FailOnSharedResource) the
finding cites it and is medium, otherwise low. Rows with the stuck-Rollout symptom stay at info: rollout-stuck-degraded
and rollout-degraded cite them inline for the Rollouts they concern. Components whose version is unknown (`latest`, a
digest without a tag) get one info finding in all, since nothing can be checked for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Component, Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_list, mapping

PRODUCT_OF_COMPONENT: dict[str, str] = {
    "server": "argo-cd",
    "repo-server": "argo-cd",
    "application-controller": "argo-cd",
    "applicationset-controller": "argo-cd",
    "notifications-controller": "argo-cd",
    "rollouts-controller": "argo-rollouts",
    "image-updater": "argocd-image-updater",
}
"""Catalogue components (knowledge/components.yaml) whose image tag is the product's version. Dex and Redis run
their own images, whose tags say nothing about Argo CD."""

PRODUCT_NAMES = {"argo-cd": "Argo CD", "argo-rollouts": "Argo Rollouts",
                 "argocd-image-updater": "Argo CD Image Updater"}

DEFERRED_SYMPTOMS = {"rollout-degraded-although-healthy": "rollout-stuck-degraded"}
"""Symptoms whose rule already cites the known bugs in its own finding: listed here at info only."""

TOKEN_SYMPTOM = "github-app-token-refresh-failing"
LOOP_SYMPTOM = "auto-sync-loop"
_UNAUTHORIZED = re.compile(r"401 Unauthorized")
_SHARED_RESOURCE = re.compile(r"^Shared resour?ce found")  # early releases wrote "resouce"
MAX_SEEN = 3


@dataclass
class _Seen:
    """Where this input shows a bug's symptom."""

    text: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    objects: list[Ref] = field(default_factory=list)


@dataclass
class _TokenFailures:
    count: int = 0
    first: LogRecord | None = None


class ComponentKnownBug(Analyzer):
    """Installed Argo components whose version has known upstream bugs."""

    id = "component-known-bug"
    title = "Installed Argo component version has known upstream bugs"
    signatures = ("github.installation-token-refresh",)
    needs = Needs(frozenset({"argoproj.io/Application"}))

    def __init__(self) -> None:
        self._token_failures: dict[tuple[str, str], _TokenFailures] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Count GitHub App token refreshes that GitHub refused with 401, per pod."""
        if _UNAUTHORIZED.search(record.raw):
            failures = self._token_failures.setdefault((record.file.namespace, record.file.pod), _TokenFailures())
            failures.count += 1
            failures.first = failures.first or record

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per product and version with known bugs; one info finding for every unknown version."""
        groups: dict[tuple[str, str], list[Component]] = {}
        unknown: list[Component] = []
        for component in ctx.snap.components:
            product = PRODUCT_OF_COMPONENT.get(component.name)
            if product is None:
                continue
            if component.version is None or knowledge.parse_version(component.version) is None:
                unknown.append(component)
            else:
                groups.setdefault((product, component.version), []).append(component)
        for (product, version), components in groups.items():
            bugs = knowledge.bugs_affecting(product, version)
            if bugs:
                yield self._finding(ctx, product, version, components, bugs)
        if unknown:
            yield self._unknown(unknown)

    def _finding(self, ctx: Context, product: str, version: str, components: list[Component],
                 bugs: list[knowledge.KnownBug]) -> Finding:
        name = PRODUCT_NAMES[product]
        seen = {b.id: self._seen(ctx, b, components) for b in bugs}
        seen = {k: v for k, v in seen.items() if v.text}
        deferred = [b for b in bugs if b.symptom in DEFERRED_SYMPTOMS]
        severity = (Severity.MEDIUM if seen else Severity.LOW if len(deferred) < len(bugs) else Severity.INFO)
        where = ", ".join(_where(c) for c in components)
        images = sorted({c.image for c in components if c.image})
        summary = (f"{name} {version} runs in {where}" + (f" (image {', '.join(images)})" if images else "")
                   + f". Known upstream bugs of this version ({len(bugs)}): "
                   + " ".join(f"({i}) {_describe(b, seen.get(b.id))}" for i, b in enumerate(bugs, 1)))
        evidence = [e for c in components for e in _image_evidence(c)]
        objects = [_ref(c) for c in components]
        for found in seen.values():
            evidence.extend(found.evidence)
            objects.extend(r for r in found.objects if r not in objects)
        title = f"{name} {version} has {plural(len(bugs), 'known upstream bug')}"
        if seen:
            title += f", {len(seen)} with {'its symptom' if len(seen) == 1 else 'their symptoms'} in this input"
        elif len(deferred) == len(bugs):
            title += " (stuck Rollouts; cited by rollout-stuck-degraded when one is stuck)"
        return Finding(rule=self.id, severity=severity, title=title, summary=summary, objects=objects,
                       evidence=evidence, remediation=_remediation(product, version, bugs))

    def _seen(self, ctx: Context, bug: knowledge.KnownBug, components: list[Component]) -> _Seen:
        found = _Seen()
        if bug.symptom == TOKEN_SYMPTOM:
            for component in components:
                for pod in component.pods:
                    failures = self._token_failures.get((pod.namespace, pod.name))
                    if failures is None or failures.first is None or len(found.evidence) >= MAX_SEEN:
                        continue
                    refreshes = plural(failures.count, "GitHub App token refresh")
                    found.text.append(f"pod {pod.namespace}/{pod.name} logged {refreshes} refused with 401 "
                                      "Unauthorized")
                    found.evidence.append(log_evidence(failures.first))
                    found.objects.append(pod.ref)
        elif bug.symptom == LOOP_SYMPTOM and bug.component == "argo-cd":
            for app in ctx.snap.of_kind("Application", "argoproj.io"):
                message = _refused_automated_sync(app)
                if message is not None and len(found.evidence) < MAX_SEEN:
                    found.text.append(f"Application {app.namespace}/{app.name}: automated sync failed with "
                                      f"\"{message}\"")
                    found.evidence.append(object_evidence(app, ".status.operationState.message", message))
                    found.objects.append(app.ref)
        return found

    def _unknown(self, components: list[Component]) -> Finding:
        listed = "; ".join(f"{_where(c)} ({c.image or 'no image'})" for c in components)
        return Finding(
            rule=self.id,
            severity=Severity.INFO,
            title=f"The version of {plural(len(components), 'Argo component')} is unknown, so known upstream bugs "
                  "cannot be checked",
            summary=(f"argo-doctor reads a component's version from its image tag; these images carry no release tag "
                     f"(`latest`, a branch name or only a digest): {listed}. Known upstream bugs "
                     "(knowledge/known_bugs.yaml) are not checked for them."),
            objects=[_ref(c) for c in components],
            evidence=[e for c in components for e in _image_evidence(c)],
            remediation=Remediation(
                text="Pin each image to its release tag (for example quay.io/argoproj/argocd:v2.14.11, or the tag "
                     "together with the digest: `:v2.14.11@sha256:...`) so that the version is known, and scan "
                     "again."),
        )


def _where(component: Component) -> str:
    obj = component.workload or (component.pods[0] if component.pods else None)
    return f"{obj.kind} {obj.namespace}/{obj.name}" if obj is not None else component.name


def _ref(component: Component) -> Ref:
    obj = component.workload or component.pods[0]
    return obj.ref


def _image_evidence(component: Component) -> list[Evidence]:
    obj = component.workload or (component.pods[0] if component.pods else None)
    if obj is None or not component.image:
        return []
    path = ".spec.template.spec.containers[0].image" if component.workload else ".spec.containers[0].image"
    return [object_evidence(obj, path, component.image)]


def _describe(bug: knowledge.KnownBug, seen: _Seen | None) -> str:
    text = f"{bug.number} {bug.title.rstrip('.')} ({bug.issue}) - "
    if bug.fixed:
        others = [v for v in bug.fixed_in if v != bug.fixed]
        text += f"fixed in {bug.fixed}" + (f" (and {', '.join(others)} in later release lines)" if others else "")
    else:
        text += "no fix released yet"
    deferred = DEFERRED_SYMPTOMS.get(bug.symptom)
    if deferred is not None:
        text += (f"; listed for information: rule {deferred} cites it for any Rollout stuck this way in this scan")
    elif seen is not None:
        text += "; SEEN in this input: " + "; ".join(seen.text)
        if bug.shown_by:
            text += f" (rule {bug.shown_by} reports this symptom in this scan)"
    elif bug.shown_by:
        text += f"; run `argo-doctor scan`: rule {bug.shown_by} reports this symptom when the input shows it"
    return text + "."


def _refused_automated_sync(app: Obj) -> str | None:
    """The message of an automated sync that FailOnSharedResource refused, on an Application with automated sync."""
    policy = mapping(app.at("spec", "syncPolicy"))
    if not policy.get("automated"):
        return None
    options = {str(o) for o in as_list(policy.get("syncOptions"))}
    state = mapping(app.at("status", "operationState"))
    initiated = mapping(mapping(state.get("operation")).get("initiatedBy"))
    message = str(state.get("message") or "")
    if ("FailOnSharedResource=true" in options and state.get("phase") in ("Failed", "Error")
            and initiated.get("automated") is True and _SHARED_RESOURCE.match(message)):
        return message
    return None


def _remediation(product: str, version: str, bugs: list[knowledge.KnownBug]) -> Remediation:
    """Upgrade to the first release above `version` (its own minor line first) that none of the product's fixed
    bugs affects, so that the advice does not trade the installed version's bugs for those of the versions between."""
    name = PRODUCT_NAMES[product]
    parsed = knowledge.parse_version(version) or (0, 0, 0)
    fixable = [b for b in bugs if b.fixed]
    still_open = [b for b in bugs if not b.fixed]
    every_fixed = [b for b in knowledge.bugs_of(product) if b.fixed]

    def key(candidate: str) -> tuple[int, int, int]:
        return knowledge.parse_version(candidate) or (0, 0, 0)

    def clears(candidate: str) -> bool:
        return all(not knowledge.in_range(key(candidate), b.affected) for b in every_fixed)

    candidates = sorted({v for b in every_fixed for v in b.fixed_in if key(v) > parsed}, key=key)
    same_line = [v for v in candidates if key(v)[:2] == parsed[:2] and clears(v)]
    target = same_line[0] if same_line else next((v for v in candidates if clears(v)), None)
    parts = []
    if target is not None and fixable:
        parts.append(f"Upgrade {name} from {version} to {target} or later, which fixes "
                     f"{', '.join(b.number for b in fixable)}; {target} is the first release above {version} that "
                     "none of the fixed bugs in argo-doctor's list affects.")
    elif fixable:
        parts.append(f"Upgrade {name} from {version} to a release that fixes them: "
                     + ", ".join(f"{b.number} in {b.upgrade_to(parsed) or b.fixed}" for b in fixable) + ".")
    if still_open:
        parts.append(f"No fix is released yet for {', '.join(b.number for b in still_open)}: follow "
                     f"{'the issue' if len(still_open) == 1 else 'the issues'} upstream and keep the check in place.")
    parts.append("Read the release notes between the two versions before upgrading.")
    return Remediation(text=" ".join(parts), docs=tuple(dict.fromkeys(b.issue for b in bugs)))
