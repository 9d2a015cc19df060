"""What the input holds, so that an object absent from it can be told apart from an object absent from the cluster.

A collection reads some kinds in some namespaces only (a live scan reads Secrets only where Argo runs or webhooks
serve, a hand-made bundle holds whatever was exported), so an object missing from the input is missing from the
cluster only when the input holds other objects of its kind in its namespace, and no collection of that kind
failed.
"""

from __future__ import annotations

import enum

from argo_doctor.snapshot import Obj, Snapshot


class Presence(enum.StrEnum):
    """Whether a referenced object is in the cluster, as far as the input tells."""

    PRESENT = "present"
    MISSING = "missing"
    """The input holds that kind in that namespace and the object is not among them."""
    UNKNOWN = "unknown"
    """The input holds nothing of that kind in that namespace (not collected), or its collection failed."""


def holds(snap: Snapshot, kind: str, namespace: str, group: str = "") -> bool:
    """Whether the input holds objects of `group/kind` in `namespace` and no collection of the kind failed."""
    need = f"kind:{group}/{kind}" if group else f"kind:{kind}"
    for record in snap.unread:  # `list secrets in shop`, `list nodes`, `discovery of v1`
        what = record.get("what", "")
        if record.get("need") == need and (" in " not in what or what.endswith(f" in {namespace}")):
            return False
    return bool(snap.of_kind(kind, group, namespace))


def lookup(snap: Snapshot, kind: str, name: str, namespace: str, group: str = "") -> tuple[Presence, Obj | None]:
    """The object and whether it is present, missing, or unknown to the input."""
    found = snap.get(kind, name, namespace, group)
    if found is not None:
        return Presence.PRESENT, found
    return (Presence.MISSING if holds(snap, kind, namespace, group) else Presence.UNKNOWN), None


def not_collected(kind: str, namespace: str) -> str:
    """The sentence that says why an object's absence proves nothing."""
    where = f"in namespace {namespace}" if namespace else "cluster-wide"
    return (f"the input holds no {kind} {where} (that kind was not collected there), so whether it exists is "
            "unknown")
