"""shared-resource: one object managed by two Applications, which overwrite each other's version of it.

Argo CD records it as a `SharedResourceWarning` condition (`Kind/name is part of applications A and B`,
controller/state.go) on the Application whose tracking label or annotation the object does not carry; the input
may also show the object listed in the `status.resources` of both. The Application named by the object's tracking
label or annotation is the one that applied it last.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from argo_doctor import knowledge
from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence
from argo_doctor.facts.clusters import destination_server, servers_by_name
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import parse_time

DOCS = ("https://argo-cd.readthedocs.io/en/stable/user-guide/resource_tracking/",
        "https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/#fail-the-sync-if-a-shared-resource-is-found")

Key = tuple[str, str, str]
"""(kind, namespace, name) of an object."""
Placed = tuple[str, str, str, str]
"""(destination cluster, kind, namespace, name): objects of the same name on two clusters are two objects."""


class SharedResource(Analyzer):
    """Objects two Applications manage."""

    id = "shared-resource"
    title = "Two Applications manage one object"
    needs = Needs(frozenset({"argoproj.io/Application"}), app_resources=True)

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        apps = {f"{a.namespace}/{a.name}": a for a in ctx.snap.applications()}
        owners: dict[Placed, set[str]] = defaultdict(set)
        said: dict[Placed, list[tuple[Obj, dict[str, object]]]] = defaultdict(list)
        clusters = servers_by_name(ctx.snap)
        for qualified, app in apps.items():
            cluster = destination_server(app, clusters)
            for entry in as_list(app.status.get("resources")):
                entry = mapping(entry)
                key = (cluster, str(entry.get("kind") or ""), str(entry.get("namespace") or ""),
                       str(entry.get("name") or ""))
                if key[1] and key[3]:
                    owners[key].add(qualified)
            for condition in as_list(app.status.get("conditions")):
                condition = mapping(condition)
                if condition.get("type") != "SharedResourceWarning":
                    continue
                found = _pattern().match(" ".join(str(condition.get("message") or "").split()))
                if found is None:
                    continue
                # an instance name from a tracking label is the bare name of an Application of the control plane's
                # namespace (`NS_NAME`, written NS/NAME, for one elsewhere)
                others = {n if "/" in n else f"{app.namespace}/{n}" for n in (found["first"], found["second"])}
                key = _locate(ctx, cluster, found["kind"], found["name"], owners, others)
                owners[key] |= others
                said[key].append((app, condition))
        for key, names in sorted(owners.items()):
            if len(names) > 1 or said.get(key):
                yield self._finding(ctx, key[1:], sorted(names), said.get(key, []), apps)

    def _finding(self, ctx: Context, key: Key, names: list[str], said: list[tuple[Obj, dict[str, object]]],
                 apps: dict[str, Obj]) -> Finding:
        kind, namespace, name = key
        obj = ctx.snap.get(kind, name, namespace)
        label = f"{kind}/{namespace + '/' if namespace else ''}{name}"
        evidence: list[Evidence] = [object_evidence(app, ".status.conditions",
                                                    f"SharedResourceWarning: {condition.get('message')}",
                                                    parse_time(condition.get("lastTransitionTime")))
                                    for app, condition in said]
        objects: list[Ref] = [apps[n].ref for n in names if n in apps]
        last = _tracked_by(ctx, obj) if obj is not None else None
        if obj is not None:
            objects.append(obj.ref)
            evidence.append(object_evidence(obj, ".metadata", f"tracked by {last or 'no Application'}"))
        automated = [n for n in names if n in apps and apps[n].at("spec", "syncPolicy", "automated") is not None]
        summary = (f"{label} is managed by {len(names)} Applications: {', '.join(names)}. Each sync of one applies its "
                   "own version over the other's and marks the object as its own, so the other shows it OutOfSync"
                   + (" and, with automated sync, syncs it back: they take turns for ever" if len(automated) > 1
                      else "") + ".")
        if last:
            summary += f" The object's tracking label or annotation names {last}: it applied it last."
        return Finding(
            rule=self.id,
            severity=Severity.HIGH if len(automated) > 1 else Severity.MEDIUM,
            title=f"{label} is managed by {' and '.join(names)}",
            summary=summary,
            objects=objects,
            evidence=evidence,
            remediation=Remediation(
                text=f"Decide which Application owns {label} and remove it from the source of the other (its "
                     "manifests, chart or kustomization in Git); two Applications that need the same object should "
                     "share a third one that deploys it. The sync option FailOnSharedResource=true makes a sync fail "
                     "instead of taking over an object another Application manages.",
                command=f"argocd app resources {names[0]}", docs=DOCS),
        )


def _pattern() -> re.Pattern[str]:
    return next(m.pattern for m in knowledge.operation_messages() if m.id == "shared-resource")


def _locate(ctx: Context, cluster: str, kind: str, name: str, owners: dict[Placed, set[str]],
            apps: set[str]) -> Placed:
    """The object a condition of an Application deploying to `cluster` names by kind and name only."""
    for key, names in owners.items():
        if key[0] == cluster and key[1] == kind and key[3] == name and names & apps:
            return key
    found = [o for o in ctx.snap.all() if o.kind == kind and o.name == name]
    return (cluster, kind, found[0].namespace if found else "", name)


def _tracked_by(ctx: Context, obj: Obj) -> str | None:
    """The Application the object's tracking annotation or label names (the one that applied it last)."""
    tracking = obj.annotations.get("argocd.argoproj.io/tracking-id")
    if tracking:
        return tracking.split(":", 1)[0].replace("_", "/")
    label = obj.labels.get(ctx.snap.settings.instance_label_key)
    return str(label) if label else None
