"""Whether a documented release change (knowledge/upgrades.yaml) hits this installation, and the evidence: a setting
of the Argo CD ConfigMaps present or absent, an RBAC policy line, a metric that alerts or dashboards read, objects of
a kind. A change that applies to everyone applies; one that objects cannot show is said to be unknown (None)."""

from __future__ import annotations

import re
from typing import Any

from argo_doctor.facts.argocd_policy import matches, policy_of
from argo_doctor.facts.installation import config_data
from argo_doctor.knowledge import UpgradeChange
from argo_doctor.model import Evidence
from argo_doctor.snapshot import Obj, Snapshot

MAX_EVIDENCE = 4
DASHBOARDS = re.compile(r"grafana|dashboard", re.I)


def _evidence(obj: Obj, path: str, excerpt: str) -> Evidence:
    return Evidence("object", obj.location, f"{obj.ref} {path}: {excerpt}")


def hit(snap: Snapshot, change: UpgradeChange) -> list[Evidence] | None:
    """The evidence that the change applies (a non-empty list), [] when it does not, None when the objects cannot
    tell (the ConfigMap is not in the input, or the change is not visible in objects at all)."""
    detect = change.detect
    kind = detect.get("kind")
    if kind == "always":
        return [Evidence("object", "", str(detect.get("note") or "applies to every installation"))]
    if kind in ("cm-key-absent", "cm-key-present"):
        cm = snap.config_map(str(detect.get("configmap")))
        if cm is None:
            return None
        data = config_data(cm)
        key = str(detect.get("key"))
        present = key in data and data[key].strip() != ""
        if kind == "cm-key-absent":
            rbac = snap.config_map("argocd-rbac-cm")
            exempt = rbac is not None and config_data(rbac).get("policy.default", "").strip() in [
                str(r) for r in detect.get("unless-default-role") or []]
            return [_evidence(cm, ".data", f"no key {key}: the default applies")] if not present and not exempt else []
        wanted = detect.get("value")
        if present and "contains" in detect and str(detect["contains"]) not in data[key]:
            return []
        if present and (wanted is None or data[key].strip() == str(wanted)):
            return [_evidence(cm, f".data[{key!r}]", f"{key}: {data[key].strip()[:80]}")]
        return []
    if kind == "rbac-line":
        cm = snap.config_map("argocd-rbac-cm")
        if cm is None:
            return None
        policy = policy_of(config_data(cm), snap.of_kind("AppProject", "argoproj.io"), builtin=False)
        resource, action = str(detect.get("resource")), str(detect.get("action"))
        lines = [r.line for r in policy.rules if r.effect == "allow" and matches(r.resource, resource)
                 and (r.action == action or r.action == "*")]
        return [_evidence(cm, ".data", f"{line.origin} line {line.number}: {line.text}")
                for line in lines[:MAX_EVIDENCE]]
    if kind == "metric-referenced":
        names = [str(n) for n in detect.get("names") or []]
        found = []
        for obj in (*snap.of_kind("PrometheusRule", "monitoring.coreos.com"),
                    *(c for c in snap.of_kind("ConfigMap", "") if DASHBOARDS.search(c.name)
                      or any(DASHBOARDS.search(k) for k in c.labels))):
            text = str(obj.raw.get("spec") or "") + str(obj.raw.get("data") or "")
            used = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
            if used:
                found.append(_evidence(obj, ".spec" if obj.kind == "PrometheusRule" else ".data",
                                       f"reads {', '.join(used)}"))
        return found[:MAX_EVIDENCE]
    if kind == "object-present":
        group, _, _ = str(detect.get("apiVersion") or "").rpartition("/")
        named = {str(n) for n in detect.get("names") or []}
        path = [str(p) for p in detect.get("where") or []]
        found = []
        for obj in snap.of_kind(str(detect.get("object")), group):
            if named and obj.name not in named:
                continue
            value = _at(obj.raw, path)
            if path and not value:
                continue
            if "contains" in detect and str(detect["contains"]) not in (value if isinstance(value, list) else []):
                continue
            found.append(_evidence(obj, "." + ".".join(path) if path else "", str(detect.get("contains") or
                                                                                   (str(value)[:80] if path else
                                                                                    "present"))))
        return found[:MAX_EVIDENCE]
    return None


def _at(raw: dict[str, Any], path: list[str]) -> Any:
    """The value at a path of keys (a key may hold dots, as an annotation's does); None when absent."""
    value: Any = raw
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
