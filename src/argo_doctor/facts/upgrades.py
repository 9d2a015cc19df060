"""Whether a documented release change (knowledge/upgrades.yaml) hits this installation, and the evidence: a setting
of the Argo CD ConfigMaps present or absent, an RBAC policy line, a metric that alerts or dashboards read, objects of
a kind, a field of a workflow spec, a Dex-encoded subject in the policy. A change that applies to everyone applies;
one that objects cannot show is said to be unknown (None)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

from argo_doctor.errors import ConfigError
from argo_doctor.facts.argocd_policy import matches, policy_of
from argo_doctor.facts.installation import config_data
from argo_doctor.knowledge import UpgradeChange, Version, parse_version, upgrade_changes
from argo_doctor.model import Evidence, Ref
from argo_doctor.snapshot import Obj, Snapshot

PRODUCTS = {"argo-cd": "Argo CD", "argocd-image-updater": "Argo CD Image Updater", "argo-rollouts": "Argo Rollouts",
            "argo-workflows": "Argo Workflows", "argo-events": "Argo Events"}
"""The products upgrade-check reads, by the component table's product id."""
MAX_EVIDENCE = 4
DASHBOARDS = re.compile(r"grafana|dashboard", re.I)
WORKFLOW_SPECS = {"Workflow": ("spec",), "WorkflowTemplate": ("spec",), "ClusterWorkflowTemplate": ("spec",),
                  "CronWorkflow": ("spec", "workflowSpec")}
"""Where each Argo Workflows kind keeps its workflow spec."""


def version_text(version: Version) -> str:
    """`v3.0.12`."""
    return "v" + ".".join(str(p) for p in version)


def release_targets(given: Iterable[tuple[str, str, str | None]]) -> dict[str, Version]:
    """Each product's target release out of (product, the option as the user named it, the text given or None);
    ConfigError naming the option for a text that is not a release."""
    targets: dict[str, Version] = {}
    for product, option, text in given:
        if text is None:
            continue
        version = parse_version(text)
        if version is None:
            raise ConfigError(f"{option} {text!r} is not a release (vX.Y.Z)")
        targets[product] = version
    return targets


def installed_releases(snap: Snapshot, target: Version, given: str | None, options: tuple[str, str] = ("--from", "--to")
                       ) -> dict[str, tuple[Version, list[Evidence]]]:
    """Each product's installed release: `given` for Argo CD, else the oldest release among its components' image
    tags, with the evidence; ConfigError when Argo CD's is unknown or `target` is not after it (`options` name the
    installed and target releases in the message, as the caller's user gave them)."""
    found: dict[str, tuple[Version, list[Evidence]]] = {}
    if given is not None:
        version = parse_version(given)
        if version is None:
            raise ConfigError(f"{options[0]} {given!r} is not a release (vX.Y.Z)")
        found["argo-cd"] = (version, [])
    for component in snap.components:
        version = parse_version(component.version)
        if component.product not in PRODUCTS or version is None or (component.product in found and given):
            continue
        where = component.workload or (component.pods[0] if component.pods else None)
        evidence = [Evidence("object", where.location, f"{where.ref} runs {component.image}")] if where else []
        if component.product not in found or version < found[component.product][0]:
            found[component.product] = (version, evidence)
    if "argo-cd" not in found:
        raise ConfigError("the installed Argo CD release is not in the input (no Argo CD image with a release tag): "
                          f"give it with {options[0]}")
    if target <= found["argo-cd"][0]:
        raise ConfigError(f"{options[1]} {version_text(target)} is not after the installed "
                          f"{version_text(found['argo-cd'][0])}")
    return found


def kinds_read() -> frozenset[str]:
    """The kinds the detections read, as Needs spells them (`Kind` for core, `group/Kind`)."""
    kinds = {"ConfigMap", "argoproj.io/AppProject", "monitoring.coreos.com/PrometheusRule",
             *(f"argoproj.io/{kind}" for kind in WORKFLOW_SPECS)}
    for change in upgrade_changes():
        if change.detect.get("kind") == "object-present":
            group = str(change.detect.get("apiVersion") or "").rpartition("/")[0]
            kinds.add(f"{group}/{change.detect['object']}".lstrip("/"))
    return frozenset(kinds)


def _evidence(obj: Obj, path: str, excerpt: str) -> Evidence:
    return Evidence("object", obj.location, f"{obj.ref} {path}: {excerpt}")


def object_places(snap: Snapshot) -> dict[str, Ref]:
    """Every object by its place in the input (`file:line`), which is where `hit`'s evidence points."""
    return {o.location: o.ref for o in snap.all()}


def objects_of(places: dict[str, Ref], evidence: list[Evidence]) -> list[Ref]:
    """The objects the evidence points at, in the evidence's order."""
    return list(dict.fromkeys(places[e.location] for e in evidence if e.location in places))


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
            return [_evidence(cm, f".data[{key!r}]", f"{key}: {' '.join(data[key].split())[:80]}")]
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
    if kind == "workflow-field":
        return _workflow_fields(snap, [str(p) for p in detect.get("where") or []],
                                [str(p) for p in detect.get("template-where") or []])
    if kind == "dex-subject":
        return _dex_subjects(snap)
    return None


def _workflow_fields(snap: Snapshot, where: list[str], template_where: list[str]) -> list[Evidence]:
    """Workflows, templates and CronWorkflows whose workflow spec, or one of its templates, sets the field."""
    found = []
    for kind, root in WORKFLOW_SPECS.items():
        for obj in snap.of_kind(kind, "argoproj.io"):
            spec = _at(obj.raw, list(root))
            if not isinstance(spec, dict):
                continue
            if where and _at(spec, where) is not None:
                found.append(_evidence(obj, "." + ".".join([*root, *where]), str(_at(spec, where))[:80]))
                continue
            templates = spec.get("templates") if template_where else None
            for template in templates if isinstance(templates, list) else []:
                if isinstance(template, dict) and _at(template, template_where) is not None:
                    found.append(_evidence(obj, f".{'.'.join(root)}.templates[{template.get('name')}]."
                                           + ".".join(template_where), str(_at(template, template_where))[:80]))
                    break
    return found[:MAX_EVIDENCE]


def dex_user(subject: str) -> tuple[str, str] | None:
    """The (user id, connector id) a Dex `sub` encodes (base64 of a protobuf with fields 1 and 2), or None when the
    subject is not one: Dex's encoding, as the 2.14 → 3.0 upgrading guide decodes it."""
    if len(subject) < 8 or not re.fullmatch(r"[A-Za-z0-9+/_-]+=*", subject):
        return None
    try:
        raw = base64.urlsafe_b64decode(subject.replace("+", "-").replace("/", "_").rstrip("=") + "==")
    except (binascii.Error, ValueError):
        return None
    fields: list[str] = []
    for tag in (0x0A, 0x12):
        if len(raw) < 2 or raw[0] != tag or raw[1] > 127 or len(raw) < 2 + raw[1]:
            return None
        try:
            value = raw[2:2 + raw[1]].decode()
        except UnicodeDecodeError:
            return None
        if not value.isprintable():
            return None
        fields.append(value)
        raw = raw[2 + raw[1]:]
    return (fields[0], fields[1]) if not raw and fields[0] else None


def _dex_subjects(snap: Snapshot) -> list[Evidence] | None:
    """Policy lines whose subject is a Dex-encoded `sub`, when Dex is configured; [] without Dex or such lines."""
    cm, rbac = snap.config_map("argocd-cm"), snap.config_map("argocd-rbac-cm")
    if cm is None or rbac is None:
        return None
    if not config_data(cm).get("dex.config", "").strip():
        return []
    policy = policy_of(config_data(rbac), snap.of_kind("AppProject", "argoproj.io"), builtin=False)
    found, seen = [], set()
    for subject, line in [*((r.subject, r.line) for r in policy.rules), *((g.member, g.line) for g in policy.grants)]:
        user = dex_user(subject)
        if user and line.text not in seen:
            seen.add(line.text)
            found.append(_evidence(rbac, ".data", f"{line.origin} line {line.number}: subject {subject[:16]}… is "
                                                  f"Dex's encoding of user {user[0]} (connector {user[1]})"))
    return found[:MAX_EVIDENCE]


def _at(raw: dict[str, Any], path: list[str]) -> Any:
    """The value at a path of keys (a key may hold dots, as an annotation's does); None when absent."""
    value: Any = raw
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
