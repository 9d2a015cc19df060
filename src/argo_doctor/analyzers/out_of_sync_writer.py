"""out-of-sync-writer: why a resource stays OutOfSync — another writer, admission, the schema, or Git itself.

For each OutOfSync resource, the fields Argo CD applied (its last-applied configuration) are compared with the live
object and each differing field is matched with the manager that last wrote it (`metadata.managedFields`,
facts/managed_fields.py; knowledge/field_writers.yaml). Fields only Argo CD wrote that differ changed on the way in
(normalisation, a mutating webhook); fields Git sets that the CRD does not declare are pruned; with server-side apply
a field another manager took over is the likely cause. Resources none of these explain, of an Application whose
compared revision is not the deployed one, differ because Git changed (info). Fields Git does not set are no
difference in Argo CD's comparison and are never blamed.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural, resource_ref, revision_of
from argo_doctor.facts.ignore_differences import coverage, json_pointer, near_misses, respects_ignore_differences
from argo_doctor.facts.managed_fields import (
    Difference,
    Manager,
    applied_server_side,
    dropped_fields,
    foreign_writes,
    own_changes,
    same_quantity,
    server_side_takeovers,
)
from argo_doctor.facts.schemas import pruned, schema_of
from argo_doctor.facts.webhooks import mutations_of
from argo_doctor.facts.webhooks import plural as plural_kind
from argo_doctor.knowledge import FieldWriter
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_int, as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
MAX_LINES = 3
"""Controller lines of self-heal kept per Application."""
DOCS = ("https://argo-cd.readthedocs.io/en/stable/user-guide/diffing/",
        "https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/#respect-ignore-difference-configs")


class OutOfSyncWriter(Analyzer):
    """OutOfSync resources whose fields another writer changes."""

    id = "out-of-sync-writer"
    title = "Another writer keeps a resource OutOfSync"
    signatures = ("argocd.automated-sync", "argocd.autoheal-backoff")
    needs = Needs(frozenset({"argoproj.io/Application"}), app_resources=True)

    def __init__(self) -> None:
        self._heals: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the controller's last automated syncs and self-heal back-offs, per Application."""
        app = record.fields.get("application", "")
        if app:
            lines = self._heals[app]
            lines.append(record)
            del lines[:-MAX_LINES]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        for app in ctx.snap.applications():
            if app.meta.get("deletionTimestamp"):
                continue
            unexplained: list[tuple[dict[str, Any], Obj | None]] = []
            for entry, live in ctx.snap.app_resources(app):
                if mapping(entry).get("status") != "OutOfSync":
                    continue
                if live is None:
                    unexplained.append((entry, live))
                    continue
                differences = foreign_writes(live)
                if differences:
                    yield self._finding(ctx, app, live, differences)
                    continue
                changed = own_changes(live)
                if changed:
                    yield _changed_on_the_way_in(ctx, app, live, changed)
                    continue
                takeovers = server_side_takeovers(live)
                if takeovers:
                    yield _taken_over(app, live, takeovers)
                    continue
                said = mutations_of(ctx.snap, live)[0] if applied_server_side(live) else []
                if said:
                    yield _mutated_server_side(app, live, said)
                    continue
                schema = schema_of(ctx.snap, live)
                lost = [(p, v, cut) for p, v in dropped_fields(live) if schema is not None
                        and (cut := pruned(schema, p)) is not None]
                if lost:
                    yield _pruned(app, live, lost)
                    continue
                unexplained.append((entry, live))
            if unexplained and (finding := _git_changed(app, unexplained)) is not None:
                yield finding

    def _finding(self, ctx: Context, app: Obj, live: Obj, differences: list[Difference]) -> Finding:
        """The fields, their writers, the fight with self-heal, and the entry that clears it."""
        name = f"{app.namespace}/{app.name}"
        self_heal = bool(mapping(mapping(app.spec.get("syncPolicy")).get("automated")).get("selfHeal"))
        evidence: list[Evidence] = []
        lines = []
        pointers = []
        covered: list[str] = []
        missed: list[str] = []
        for diff in differences:
            when = format_time(diff.manager.time) if diff.manager.time else "an unknown time"
            lines.append(f"{diff.dotted}: Git {_shown(diff.desired)}, live {_shown(diff.live)}, written by "
                         f"{diff.writer} ({diff.manager.operation} at {when})")
            evidence.append(object_evidence(live, ".metadata.managedFields",
                                            f"{diff.manager.name} {diff.manager.operation}"
                                            + (f" ({diff.manager.subresource})" if diff.manager.subresource else "")
                                            + f" owns {diff.dotted}", diff.manager.time))
            pointer = json_pointer([str(p) for p in diff.path])
            if pointer is not None:
                pointers.append(pointer)
            cover = coverage(app, live, [str(p) for p in diff.path])
            if cover.by:
                covered.append(f"{diff.dotted} is ignored by {', '.join(cover.by)}")
            missed += near_misses(app, live, [str(p) for p in diff.path])
        summary = (f"{live.ref} of Application {name} is OutOfSync because another writer changes what Git sets: "
                   + "; ".join(lines) + ".")
        scalers = [h for h in ctx.snap.of_kind("HorizontalPodAutoscaler", "autoscaling", live.namespace)
                   if mapping(mapping(h.raw.get("spec")).get("scaleTargetRef")).get("name") == live.name
                   and mapping(mapping(h.raw.get("spec")).get("scaleTargetRef")).get("kind") == live.kind]
        if scalers and any(d.path == ("spec", "replicas") for d in differences):
            spec = mapping(scalers[0].raw.get("spec"))
            summary += (f" HorizontalPodAutoscaler {scalers[0].namespace}/{scalers[0].name} scales it between "
                        f"{spec.get('minReplicas', 1)} and {spec.get('maxReplicas')} replicas.")
            evidence.append(object_evidence(scalers[0], ".spec.scaleTargetRef", f"scales {live.ref}"))
        if self_heal:
            summary += (" With self-heal, Argo CD writes Git's value back and the other writer changes it again: they "
                        "take turns, and the resource is OutOfSync between the two.")
            heals = self._heals.get(name, [])
            if heals:
                summary += (" The controller's log shows its last self-heal syncs and back-offs: "
                            + ", ".join(format_time(r.time) or "?" for r in heals) + ".")
                evidence.extend(log_evidence(r) for r in heals)
            state = mapping(app.status.get("operationState"))
            attempts = as_int(mapping(mapping(state.get("operation")).get("sync")).get("autoHealAttemptsCount"))
            if attempts:
                started = state.get("startedAt")
                summary += (f" Argo CD has self-healed it {attempts} times at this revision (the last attempt started "
                            f"{started}), each after a longer back-off.")
                evidence.append(object_evidence(app, ".status.operationState.operation.sync.autoHealAttemptsCount",
                                                f"{attempts} self-heal attempts, last started {started}",
                                                parse_time(started)))
        if missed:
            summary += (" The Application has ignoreDifferences entries for this kind that do not cover it: "
                        + "; ".join(dict.fromkeys(missed)) + ".")
        if covered:
            summary += " " + "; ".join(covered) + ", yet Argo CD reports the resource OutOfSync: the entry may not " \
                       "apply to the sync (see RespectIgnoreDifferences) or another field differs."
        return Finding(
            rule=self.id,
            severity=Severity.HIGH if self_heal else Severity.MEDIUM,
            title=f"{live.kind} {live.namespace}/{live.name} of {app.name} OutOfSync: {differences[0].dotted} "
                  f"written by {differences[0].manager.name}",
            summary=summary,
            objects=[app.ref, live.ref],
            evidence=(shown := [object_evidence(app, ".status.resources", f"{live.ref} OutOfSync"), *evidence]),
            chain=_fight(shown),
            remediation=_remediation(app, live, differences, pointers, self_heal),
        )


def _git_changed(app: Obj, resources: list[tuple[dict[str, Any], Obj | None]]) -> Finding | None:
    """OutOfSync resources no other writer touched, of an Application whose compared revision is not the deployed
    one: Git changed, and the difference is Git's (info). None when the revisions do not tell."""
    history = as_list(app.status.get("history"))
    compared = revision_of(mapping(app.status.get("sync")))
    deployed = revision_of(mapping(history[-1])) if history else ""
    if not compared or not deployed or compared == deployed:
        return None
    names, added, removed = [], 0, 0
    for entry, live in resources:
        names.append(str(resource_ref(entry)))
        added += live is None and mapping(entry.get("health")).get("status") == "Missing"
        removed += bool(entry.get("requiresPruning"))
    counts = [f"{n} {w}" for n, w in ((added, "new in Git"), (removed, "removed from Git")) if n]
    shown = ", ".join(names[:5]) + (f" (and {len(names) - 5} more)" if len(names) > 5 else "")
    automated = bool(mapping(app.spec.get("syncPolicy")).get("automated"))
    name = f"{app.namespace}/{app.name}"
    state = mapping(app.status.get("operationState"))
    attempted = revision_of(mapping(mapping(state.get("operation")).get("sync"))) == compared
    evidence = [object_evidence(app, ".status.sync", f"compared at {compared[:12]}"),
                object_evidence(app, f".status.history[{len(history) - 1}]", f"deployed {deployed[:12]}",
                                parse_time(mapping(history[-1]).get("deployedAt")))]
    fix = "Review the change and sync it when it is wanted."
    if not automated:
        after = " The Application syncs only when someone syncs it."
    elif attempted and state.get("phase") in ("Failed", "Error"):
        evidence.append(object_evidence(app, ".status.operationState.phase", f"automated sync of {compared[:12]} "
                                        f"{state.get('phase')}", parse_time(state.get("finishedAt"))))
        fix = "Mend what failed the sync (its error is in operationState.message), then sync."
        after = (f" Automated sync tried this revision and ended {state.get('phase')} ({state.get('finishedAt')}); "
                 "Argo CD does not retry a revision it failed to sync until Git changes again or someone syncs it "
                 "(controller: \"Skipping auto-sync: failed previous sync attempt\"). The sync's error is the cause.")
    else:
        after = (" Automated sync applies the new revision unless a sync window or a running operation holds it (see "
                 "the Application's operationState and conditions).")
    return Finding(
        rule="out-of-sync-writer",
        severity=Severity.INFO,
        title=f"Application {name} OutOfSync because Git changed ({deployed[:7]} deployed, {compared[:7]} in Git)",
        summary=(f"Application {name} compares revision {compared[:12]} with the cluster, and {deployed[:12]} is the "
                 f"revision last deployed: {plural(len(names), 'resource')} differ{'s' if len(names) == 1 else ''} "
                 f"because Git changed ({shown}{'; ' + ', '.join(counts) if counts else ''}). No other writer changed "
                 "what Argo CD applied to them." + after),
        objects=[app.ref],
        evidence=evidence,
        remediation=Remediation(
            text=fix,
            command=f"argocd app diff {name} && argocd app sync {name}",
            docs=("https://argo-cd.readthedocs.io/en/stable/user-guide/auto_sync/",)),
    )


def _changed_on_the_way_in(ctx: Context, app: Obj, live: Obj,
                           changed: list[tuple[tuple[str | int, ...], Any, Any]]) -> Finding:
    """Fields only Argo CD wrote that the cluster stores otherwise: the API server's normalisation of a quantity, a
    mutating webhook that left its record, or one whose rules match (the likely cause, at low severity)."""
    dotted = ".".join(str(p) for p in changed[0][0])
    fields = "; ".join(f"{'.'.join(str(p) for p in f)}: Git {_shown(w)}, live {_shown(a)}" for f, w, a in changed[:3])
    said, hooks = mutations_of(ctx.snap, live)
    evidence = [object_evidence(app, ".status.resources", f"{live.ref} OutOfSync"),
                object_evidence(live, ".metadata.managedFields", f"{dotted} written by Argo CD alone")]
    if all(same_quantity(w, a) for _, w, a in changed):
        severity, cause = Severity.LOW, (
            "the API server stores these quantities in its own spelling (the same value): Argo CD compares Git's "
            "spelling with the stored one")
        fix = ("Write the quantities in Git as the API server stores them, or let Argo CD compare through the API "
               "server with the sync option ServerSideDiff=true (compare-options annotation "
               "`argocd.argoproj.io/compare-options: ServerSideDiff=true`).")
    elif said:
        severity = Severity.MEDIUM
        cause = f"a mutating admission controller changed them on the way in: {'; '.join(said)}"
        fix = ("Make the policy leave these fields alone (exclude the Application's resources from it), or write in "
               "Git what the policy writes, or ignore the fields with an ignoreDifferences entry (jsonPointers "
               "below) and RespectIgnoreDifferences=true; ServerSideDiff=true lets Argo CD see what admission makes "
               "of Git's manifests.")
    elif hooks:
        names = ", ".join(dict.fromkeys(f"{h.config.name} ({h.name})" for h in hooks))
        severity, cause = Severity.LOW, (
            f"no other manager wrote them, so they changed on the way in; the mutating webhooks whose rules match "
            f"{plural_kind(live.kind)} are {names}, the likely cause (admission changes are recorded under the "
            "applying manager, Argo CD)")
        fix = ("Check what the named webhook does to this kind; then change the webhook's policy or Git, or ignore the "
               "fields (ignoreDifferences and RespectIgnoreDifferences=true); ServerSideDiff=true shows admission's "
               "result in the diff.")
    else:
        severity, cause = Severity.LOW, (
            "no other manager wrote them and no mutating webhook of the input matches: a webhook outside the input or "
            "the API server's defaulting changed them on the way in")
        fix = "ServerSideDiff=true makes Argo CD compare with what the API server would store."
    evidence += [object_evidence(h.config, f"{h.path}.rules", f"mutating webhook {h.name} intercepts "
                                 f"{plural_kind(live.kind)}") for h in hooks[:3]]
    pointers = [p for p in (json_pointer([str(s) for s in f]) for f, _, _ in changed) if p]
    return Finding(
        rule="out-of-sync-writer",
        severity=severity,
        title=f"{live.kind} {live.namespace}/{live.name} of {app.name} OutOfSync: {dotted} changed on the way in",
        summary=(f"{live.ref} of Application {app.namespace}/{app.name} is OutOfSync on fields only Argo CD wrote: "
                 f"{fields}. {cause[0].upper()}{cause[1:]}."),
        objects=[app.ref, live.ref],
        evidence=evidence,
        remediation=Remediation(text=fix + (f" Pointers: {', '.join(pointers)}." if pointers else ""), docs=DOCS),
    )


def _taken_over(app: Obj, live: Obj,
                takeovers: list[tuple[Manager, tuple[str | int, ...], FieldWriter | None]]) -> Finding:
    """An object applied server-side whose field another writer took over: the likely cause, at low severity."""
    manager, path, row = takeovers[0]
    writer = row.writer if row is not None else f"the manager {manager.name!r}"
    dotted = ".".join(str(p) for p in path)
    when = format_time(manager.time) if manager.time else "an unknown time"
    pointer = json_pointer([str(p) for p in path])
    return Finding(
        rule="out-of-sync-writer",
        severity=Severity.LOW,
        title=f"{live.kind} {live.namespace}/{live.name} of {app.name} OutOfSync: {dotted} likely written by "
              f"{manager.name}",
        summary=(f"{live.ref} of Application {app.namespace}/{app.name} is OutOfSync, and {writer} took "
                 f"{dotted} over from Argo CD's server-side apply ({manager.operation} at {when}). With server-side "
                 "apply the object does not record what Argo CD applied, so whether Git sets this field is not "
                 "certain: if it does, this is the difference."),
        objects=[app.ref, live.ref],
        evidence=[object_evidence(app, ".status.resources", f"{live.ref} OutOfSync"),
                  object_evidence(live, ".metadata.managedFields", f"{manager.name} {manager.operation}"
                                  + (f" ({manager.subresource})" if manager.subresource else "") + f" owns {dotted}",
                                  manager.time)],
        remediation=Remediation(
            text=f"Check with `argocd app diff {app.namespace}/{app.name}` that {dotted} is the difference; then "
                 "remove it from Git if the other writer owns it, or ignore it (`managedFieldsManagers: "
                 f"[{manager.name}]`{f' or jsonPointers {pointer}' if pointer else ''} in ignoreDifferences, with "
                 "RespectIgnoreDifferences=true under self-heal).", docs=DOCS),
    )


def _mutated_server_side(app: Obj, live: Obj, said: list[str]) -> Finding:
    """An object applied server-side that a mutating policy changed at admission (its record says so): the likely
    cause, at low severity, since what Git sets is not in the object."""
    name = f"{app.namespace}/{app.name}"
    options = [o for o in str(app.annotations.get(COMPARE_OPTIONS) or "").split(",") if o.strip()]
    value = ",".join([*(o for o in options if not o.strip().startswith("ServerSideDiff=")), "ServerSideDiff=true"])
    return Finding(
        rule="out-of-sync-writer",
        severity=Severity.LOW,
        title=f"{live.kind} {live.namespace}/{live.name} of {app.name} OutOfSync: likely changed at admission",
        summary=(f"{live.ref} of Application {name} is OutOfSync, no other manager took a field from Argo CD's "
                 f"server-side apply, and a mutating admission controller changed it on the way in: {'; '.join(said)}. "
                 "Admission changes are recorded under the applying manager, so a field the policy rewrites differs "
                 "from Git on every comparison unless Argo CD diffs through the API server. With server-side apply "
                 "the object does not record what Git sets: the policy is the likely cause, not a certain one."),
        objects=[app.ref, live.ref],
        evidence=[object_evidence(app, ".status.resources", f"{live.ref} OutOfSync"),
                  object_evidence(live, ".metadata.annotations", "; ".join(said))],
        remediation=Remediation(
            text=f"Check with `argocd app diff {name}` that the policy's fields are the difference; then let Argo CD "
                 "compare what admission makes of Git's manifests (ServerSideDiff=true), write in Git what the policy "
                 "writes, or exclude the Application's resources from the policy.",
            command=f"kubectl -n {app.namespace} annotate application {app.name} --overwrite "
                    f"{COMPARE_OPTIONS}={value}",
            docs=DOCS),
    )


def _pruned(app: Obj, live: Obj, lost: list[tuple[tuple[str | int, ...], Any, tuple[str | int, ...]]]) -> Finding:
    """Fields Git sets that the API server dropped because the CRD's schema does not declare them."""
    cuts = list(dict.fromkeys(".".join(str(p) for p in cut) for _, _, cut in lost))
    shown = ", ".join(cuts[:3]) + (f" (and {len(cuts) - 3} more)" if len(cuts) > 3 else "")
    version = live.api_version
    return Finding(
        rule="out-of-sync-writer",
        severity=Severity.MEDIUM,
        title=f"{live.kind} {live.namespace}/{live.name} of {app.name} OutOfSync: {cuts[0]} pruned by the API server",
        summary=(f"{live.ref} of Application {app.namespace}/{app.name} is OutOfSync for ever: Git sets {shown}, which "
                 f"the schema of {version} {live.kind} (its CustomResourceDefinition) does not declare, so the API "
                 "server drops it on every apply and Argo CD never finds it live."),
        objects=[app.ref, live.ref],
        evidence=[object_evidence(app, ".status.resources", f"{live.ref} OutOfSync"),
                  object_evidence(live, ".metadata.annotations", f"last applied with {shown}; absent live")],
        remediation=Remediation(
            text=f"Fix the field in Git (a misspelt name, or a field of another version of {live.kind}: check the "
                 "CRD's versions), or upgrade the CRD to the version that declares it; a schema that should keep "
                 "unknown fields marks them with x-kubernetes-preserve-unknown-fields.",
            command=f"kubectl explain {live.kind.lower()}.{cuts[0].rsplit('.', 1)[0]} --api-version={version}",
            docs=("https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/"
                  "#field-pruning", *DOCS)),
    )


def _fight(evidence: list[Evidence]) -> list[int]:
    """The causal chain of a fight: the other writer's last write, then the controller's self-heal lines after it
    (evidence indices, in time order); empty without both."""
    writes = [(e.time, i) for i, e in enumerate(evidence) if e.kind == "object" and e.time is not None
              and ".metadata.managedFields" in e.location]
    if not writes:
        return []
    start, first = max(writes)
    heals = sorted((e.time, i) for i, e in enumerate(evidence) if e.kind == "log" and e.time is not None
                   and e.time >= start)
    return [first, *(i for _, i in heals)] if heals else []


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _remediation(app: Obj, live: Obj, differences: list[Difference], pointers: list[str],
                 self_heal: bool) -> Remediation:
    """The ignoreDifferences entry (with the Application's existing ones, which a merge patch would drop) and the
    sync option that make Argo CD leave the other writer's fields alone."""
    managers_named = sorted({d.manager.name for d in differences})
    group = live.group
    entry = {"group": group, "kind": live.kind, "jsonPointers": sorted(set(pointers))} if pointers else \
        {"group": group, "kind": live.kind, "managedFieldsManagers": managers_named}
    if not group:
        del entry["group"]
    entries = [*as_list(app.spec.get("ignoreDifferences")), entry]  # a merge patch replaces the whole list
    patch = json.dumps({"spec": {"ignoreDifferences": entries}})
    text = (f"If the other writer is right to change these fields (an autoscaler owns the replicas), tell Argo CD to "
            f"ignore them: add to Application {app.namespace}/{app.name} the ignoreDifferences entry of the patch "
            f"(or `managedFieldsManagers: [{', '.join(managers_named)}]`, or the same entry for every Application as "
            f"`resource.customizations.ignoreDifferences.{(group + '_') if group else ''}{live.kind}` in argocd-cm)")
    if self_heal:
        text += ", and the sync option RespectIgnoreDifferences=true, without which self-heal still writes Git's value"
    text += ("; and remove the field from Git when Git should not set it (a Deployment scaled by an HPA should not "
             "set replicas). If nobody should change it, find and stop the writer named above.")
    options = as_list(mapping(app.spec.get("syncPolicy")).get("syncOptions"))
    if self_heal and not respects_ignore_differences(app):
        options = [*options, "RespectIgnoreDifferences=true"]
        patch = json.dumps({"spec": {"ignoreDifferences": entries, "syncPolicy": {"syncOptions": options}}})
    return Remediation(text=text, patch=patch, command=f"kubectl -n {app.namespace} patch application {app.name} "
                       f"--type merge -p '{patch}'", docs=DOCS)
