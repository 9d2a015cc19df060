"""What `--app` and `-n/--namespace` keep of a report: the objects an Application manages (its `status.resources`,
what carries its tracking label or annotation, and what those own: ReplicaSets, Pods, Jobs), the objects of the
namespaces asked for, and the findings and timeline entries about them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from argo_doctor.errors import ConfigError
from argo_doctor.model import Finding, Ref, TimelineEntry
from argo_doctor.snapshot import Obj, Snapshot

Key = tuple[str, str, str]
"""(kind, namespace, name) of an object."""


@dataclass
class Scope:
    """The objects (and namespaces) a report is narrowed to; `everything` when neither option was given."""

    apps: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    keys: set[Key] = field(default_factory=set)
    pods: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, name) of the Pods in scope: their logs are."""

    @property
    def everything(self) -> bool:
        return not self.apps and not self.namespaces

    def describe(self) -> str:
        """`Application argocd/payments-api, namespace payments`: what the report is narrowed to."""
        parts = [f"Application {app}" for app in self.apps] + [f"namespace {ns}" for ns in self.namespaces]
        return ", ".join(parts)

    def ref(self, ref: Ref) -> bool:
        if self.everything:
            return True
        if self.apps and (ref.kind, ref.namespace, ref.name) not in self.keys:
            return False
        return not self.namespaces or ref.namespace in self.namespaces

    def obj(self, obj: Obj) -> bool:
        return self.ref(obj.ref)

    def finding(self, finding: Finding) -> bool:
        """A finding about an object in scope."""
        return self.everything or any(self.ref(ref) for ref in finding.objects)

    def entry(self, entry: TimelineEntry, findings: set[str]) -> bool:
        """A timeline entry of a finding in scope (ids in `findings`), of an object in scope (named in its location)
        or of the logs of a Pod in scope."""
        if self.everything or findings.intersection(entry.findings):
            return True
        location = entry.location
        if location.startswith("logs/"):
            parts = location.split("/")
            return len(parts) > 2 and (parts[1], parts[2]) in self.pods
        return any(f"{kind}/{ns}/{name}" in location if ns else f"{kind}/{name}" in location
                   for kind, ns, name in self.keys) if self.apps else any(
            f"/{ns}/" in location for ns in self.namespaces)


def scope(snap: Snapshot, apps: Iterable[str], namespaces: Iterable[str], names: tuple[str, str] = ("--app", "-n")
          ) -> Scope:
    """The scope of `--app [NS/]NAME` (repeatable) and `-n NS` (repeatable) in `snap`; ConfigError naming the
    Applications the input does not hold (with the ones it does), and the option (`names`) as the user gave it."""
    found = Scope(tuple(apps), tuple(namespaces))
    if found.everything:
        return found
    objects = list(snap.all())
    present = {o.namespace for o in objects} | {o.name for o in objects if o.kind == "Namespace"}
    unknown = [ns for ns in found.namespaces if ns not in present]
    if unknown:
        known = ", ".join(sorted(n for n in present if n)) or "none"
        raise ConfigError(f"{names[1]} {', '.join(unknown)}: no object of the input is in that namespace (namespaces: "
                          f"{known})")
    for ns in found.namespaces:
        found.pods.update((ns, o.name) for o in objects if o.kind == "Pod" and o.namespace == ns)
    if not found.apps:
        return found
    applications = snap.applications()
    missing = []
    for wanted in found.apps:
        namespace, _, name = wanted.rpartition("/")
        matches = [a for a in applications if a.name == name and (not namespace or a.namespace == namespace)]
        if not matches:
            missing.append(wanted)
        for app in matches:
            found.keys |= _managed(snap, app)
    if missing:
        known = ", ".join(sorted(f"{a.namespace}/{a.name}" for a in applications)) or "none"
        raise ConfigError(f"{names[0]} {', '.join(missing)}: no such Application in the input (Applications: {known})")
    found.pods |= {(ns, name) for kind, ns, name in found.keys if kind == "Pod"}
    return found


def _managed(snap: Snapshot, app: Obj) -> set[Key]:
    """The Application itself, its `status.resources`, the objects that carry its tracking label or annotation, and
    what those own, transitively (a Deployment's ReplicaSets and their Pods)."""
    keys = {(app.kind, app.namespace, app.name)}
    resources = app.status.get("resources")
    for entry in resources if isinstance(resources, list) else ():
        if isinstance(entry, dict) and entry.get("kind") and entry.get("name"):
            keys.add((str(entry["kind"]), str(entry.get("namespace") or ""), str(entry["name"])))
    stack = [*snap.tracked_by(app)]
    stack += [o for o in (snap.get(kind, name, ns) for kind, ns, name in keys) if o is not None]
    seen: set[int] = set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        keys.add((obj.kind, obj.namespace, obj.name))
        stack.extend(snap.children(obj))
    return keys
