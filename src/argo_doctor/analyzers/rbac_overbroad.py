"""rbac-overbroad: an Argo component's ServiceAccount may do far more than its job needs.

For the ServiceAccount of every Argo component found, and every ServiceAccount of an Argo namespace that a binding
names, the effective permissions (`facts.rbac`, aggregated ClusterRoles resolved) are searched for what turns a
compromised or buggy component into a cluster compromise: cluster-admin, wildcards, Secrets readable in every
namespace, the escalate/bind/impersonate verbs (and minting ServiceAccount tokens), `nodes/proxy` and `pods/exec`.
One finding per binding and role, naming the path that grants it (aggregation included), with each rule's place in
the input, and the narrower rule to use instead.

What the Argo projects' own installation manifests grant (Argo CD's application controller has every verb on
every resource, its server get/patch/delete on everything, Rollouts, Workflows and Events read Secrets or exec
into pods cluster-wide) is reported at info as the documented default, with how to restrict it. A grant counts as
shipped when the shipped rules for that component cover it, compared rule by rule (knowledge/rbac_defaults.yaml,
from the install manifests of every release line), not by the role's name: a role named like the default with a
rule added is reported for that rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import object_evidence
from argo_doctor.facts.rbac import RBAC_GROUP, RBAC_NEEDS, Binding, Grant, Source, grant_allows, resolve
from argo_doctor.knowledge import OptIn, Shipped, in_range, parse_version, shipped_rbac
from argo_doctor.model import Evidence, Finding, Needs, Ref, Remediation, Severity
from argo_doctor.snapshot import Component, Obj
from argo_doctor.sources.objects import as_list, mapping

MAX_RULE_EVIDENCE = 8
READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
K8S_DOCS = "https://kubernetes.io/docs/concepts/security/rbac-good-practices/"
BROAD_BUILTINS = ("admin", "edit")
"""Built-in ClusterRoles that, whatever the cluster adds to them, read and write Secrets and exec into pods."""


# -- risks ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Risk:
    """One dangerous thing a grant allows."""

    key: str
    severity: Severity
    text: str


def _scope(grant: Grant) -> str:
    if grant.namespace is None:
        return "cluster-wide"
    return f"in namespace {grant.namespace}" if grant.namespace else "in the RoleBinding's namespace"


def _verbs_allowed(grant: Grant, verbs: Iterable[str], group: str, resource: str) -> list[str]:
    return [v for v in verbs if grant_allows(grant, v, group, resource, grant.namespace)]


def risks(grant: Grant) -> list[Risk]:
    """What a grant allows that this rule reports, worst first."""
    cluster = grant.namespace is None
    high_or_medium = Severity.HIGH if cluster else Severity.MEDIUM
    scope = _scope(grant)
    if grant.non_resource_urls:
        if "*" in grant.verbs or "*" in grant.non_resource_urls:  # `/api/*` (system:discovery) is no risk
            return [Risk("wildcard", Severity.MEDIUM, f"wildcard on non-resource URLs "
                         f"({', '.join(grant.non_resource_urls)}: {', '.join(grant.verbs)})")]
        return []
    if grant.api_group == "*" and grant.resource == "*" and "*" in grant.verbs and not grant.resource_names:
        if cluster:
            return [Risk("cluster-admin", Severity.HIGH, "every verb on every resource cluster-wide: cluster-admin")]
        return [Risk("namespace-admin", Severity.MEDIUM, f"every verb on every resource {scope}: Secrets, pods/exec, "
                     "Roles and RoleBindings (escalate, bind) included")]
    found: list[Risk] = []
    secrets = _verbs_allowed(grant, READ_VERBS, "", "secrets")
    if cluster and secrets:
        found.append(Risk("secrets", Severity.HIGH, f"reads Secrets in every namespace ({', '.join(secrets)})"))
    for verb in ("escalate", "bind"):
        if _verbs_allowed(grant, (verb,), RBAC_GROUP, "clusterroles" if cluster else "roles"):
            found.append(Risk(verb, high_or_medium, f"`{verb}` on roles {scope}: can grant itself any permission"))
    targets = [r for g, r in (("", "serviceaccounts"), ("", "users"), ("", "groups"),
                              ("authentication.k8s.io", "uids"), ("authentication.k8s.io", "userextras/scopes"))
               if _verbs_allowed(grant, ("impersonate",), g, r)]
    if targets:
        found.append(Risk("impersonate", high_or_medium, f"`impersonate` on {', '.join(targets)} {scope}"))
    if _verbs_allowed(grant, ("create",), "", "serviceaccounts/token"):
        found.append(Risk("token", high_or_medium, f"creates tokens of any ServiceAccount {scope} "
                          "(serviceaccounts/token create): acts as any of them"))
    if cluster and _verbs_allowed(grant, ("get", "create", "update", "patch", "delete", "*"), "", "nodes/proxy"):
        found.append(Risk("nodes-proxy", Severity.HIGH, "`nodes/proxy`: the kubelet API of every node, exec into any "
                          "pod included"))
    execs = _verbs_allowed(grant, ("create", "get"), "", "pods/exec")
    if execs:
        how = "create on pods/exec" if "create" in execs else \
            "get on pods/exec, which is enough to exec from Kubernetes 1.31 on, as Argo CD's web-terminal guide says"
        found.append(Risk("pods-exec", high_or_medium, f"execs into pods {scope} ({how})"))
    wildcard = "*" in grant.verbs or "*" in (grant.api_group, grant.resource) or grant.resource.startswith("*/")
    if wildcard:
        ns_secrets = not cluster and bool(secrets)
        severity = Severity.MEDIUM if cluster or ns_secrets else Severity.LOW
        found.append(Risk("wildcard", severity, f"wildcard {scope}: {_grant_text(grant)}"))
    return sorted(found, key=lambda r: -r.severity)


def _grant_text(grant: Grant) -> str:
    group = grant.api_group or "core"
    names = f" names {', '.join(grant.resource_names)}" if grant.resource_names else ""
    return f"{', '.join(grant.verbs)} on {grant.resource} ({group}){names}"


# -- shipped defaults ----------------------------------------------------------------------------------------------

def _covers(rule: dict[str, Any], cluster: bool, grant: Grant, verb: str, sa_namespace: str) -> bool:
    """Whether a shipped rule, granted cluster-wide (`cluster`) or in the install namespace, covers one verb of a
    grant (wildcards only by wildcards)."""
    if not cluster and (grant.namespace is None or grant.namespace not in (sa_namespace, "")):
        return False
    verbs = [str(v) for v in as_list(rule.get("verbs"))]
    if "*" not in verbs and verb not in verbs:
        return False
    if grant.non_resource_urls:
        urls = [str(u) for u in as_list(rule.get("nonResourceURLs"))]
        return all("*" in urls or u in urls for u in grant.non_resource_urls)
    groups = [str(g) for g in as_list(rule.get("apiGroups"))]
    if "*" not in groups and grant.api_group not in groups:
        return False
    resources = [str(r) for r in as_list(rule.get("resources"))]
    covered = "*" in resources or grant.resource in resources or (
        "/" in grant.resource and not grant.resource.startswith("*")
        and f"*/{grant.resource.split('/', 1)[1]}" in resources)
    names = [str(n) for n in as_list(rule.get("resourceNames"))]
    return covered and (not names or (bool(grant.resource_names) and set(grant.resource_names) <= set(names)))


def _installed_by(entry: Shipped, source: Source) -> bool:
    """Whether a grant's role may be one the entry ships: any role for the project's own manifests, one labelled
    with the entry's chart (`helm.sh/chart: argo-rollouts-2.41.0`) for a chart's row."""
    if not entry.charts:
        return True
    label = source.role.labels.get("helm.sh/chart", "") if source.role is not None else ""
    return label.rpartition("-")[0] in entry.charts


def _covered(rules: Iterable[tuple[dict[str, Any], bool]], grant: Grant, sa_namespace: str) -> bool:
    rules = list(rules)
    return all(any(_covers(rule, cluster, grant, verb, sa_namespace) for rule, cluster in rules)
               for verb in grant.verbs)


def shipped_for(components: list[Component], service_account: str) -> list[Shipped]:
    """The shipped entries of a ServiceAccount: by the components that run as it, else by its name."""
    found = []
    for entry in shipped_rbac():
        running = [c for c in components if c.name in entry.components]
        by_name = service_account in entry.service_accounts
        if not (running or by_name):
            continue
        versions = [parse_version(c.version) for c in running]
        known = [v for v in versions if v is not None]
        if entry.versions != "*" and known and not any(in_range(v, entry.versions) for v in known):
            continue
        found.append(entry)
    return found


# -- the rule --------------------------------------------------------------------------------------------------

@dataclass
class Flagged:
    """One grant with what it risks, whether a shipped or documented rule covers it, and where it comes from."""

    source: Source
    risks: list[Risk]
    shipped: Shipped | None
    opt_in: OptIn | None


@dataclass
class Group:
    """The flagged grants of one binding and role, for one ServiceAccount (or one group of them)."""

    binding: Binding
    who: str
    namespace: str
    service_accounts: list[str] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    flagged: list[Flagged] = field(default_factory=list)
    builtin: str | None = None
    notes: list[str] = field(default_factory=list)


class RbacOverbroad(Analyzer):
    """ServiceAccounts of Argo components with wildcards, Secrets everywhere, escalation, exec or cluster-admin."""

    id = "rbac-overbroad"
    title = "An Argo component's ServiceAccount has over-broad permissions"
    needs = Needs(RBAC_NEEDS | {"argoproj.io/Application"})

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        """One finding per binding and role that grants something dangerous."""
        groups: dict[tuple[str, ...], Group] = {}
        for (namespace, name), components in _service_accounts(ctx).items():
            resolution = resolve(ctx.snap, namespace, name)
            shipped = shipped_for(components, name)
            for binding in resolution.bindings:
                if binding.role is None and binding.role_kind == "ClusterRole" and binding.role_name in BROAD_BUILTINS:
                    group = self._group(groups, binding, namespace, name, components)
                    group.builtin = binding.role_name
            for source in resolution.sources:
                found = risks(source.grant)
                if not found:
                    continue
                group = self._group(groups, source.binding, namespace, name, components)
                if any(_same(f.source, source) for f in group.flagged):
                    continue
                group.notes.extend(n for n in _notes(resolution.notes, source) if n not in group.notes)
                entry = next((s for s in shipped if _installed_by(s, source) and _covered(
                    ((r, role.kind == "ClusterRole") for role in s.roles for r in role.rules),
                    source.grant, namespace)), None)
                opt_in = None if entry or source.binding.by_group else next(
                    (o for s in shipped for o in s.opt_ins if _covered(((o.rule, True),), source.grant, namespace)),
                    None)
                group.flagged.append(Flagged(source, found, None if source.binding.by_group else entry, opt_in))
        for group in groups.values():
            if group.flagged or group.builtin:
                yield self._finding(ctx, group)

    @staticmethod
    def _group(groups: dict[tuple[str, ...], Group], binding: Binding, namespace: str, name: str,
               components: list[Component]) -> Group:
        who_key = binding.subject if binding.by_group else f"{namespace}/{name}"
        key = (str(binding.obj.key), binding.role_label, who_key)
        group = groups.get(key)
        if group is None:
            who = binding.subject if binding.by_group else \
                f"ServiceAccount {namespace + '/' if namespace else ''}{name}"
            group = groups[key] = Group(binding, who, namespace)
        if name not in group.service_accounts:
            group.service_accounts.append(name)
        group.components.extend(c for c in components if c not in group.components)
        return group

    def _finding(self, ctx: Context, group: Group) -> Finding:
        binding = group.binding
        own = [f for f in group.flagged if f.shipped is None and f.opt_in is None]
        opted = [f for f in group.flagged if f.opt_in is not None]
        shipped = [f for f in group.flagged if f.shipped is not None]
        builtin_risk = _builtin_risk(group)
        worst = max([r.severity for f in own for r in f.risks] + ([builtin_risk.severity] if builtin_risk else []),
                    default=Severity.LOW if opted else Severity.INFO)
        keys = list(dict.fromkeys(r.key for f in (own or opted or shipped) for r in f.risks))
        if builtin_risk is not None and not own:
            keys = [builtin_risk.key, *keys]
        if "cluster-admin" in keys:  # says it all
            keys = [k for k in keys if k != "wildcard"]
        names = list(dict.fromkeys(c.name for c in group.components))
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        who = group.who + (f" (ServiceAccounts of {shown})" if binding.by_group and names else
                           f" ({shown})" if names else "")
        title = f"{who} {_short(keys)} through {binding.role_label} ({binding.obj.ref})"
        entries = list(dict.fromkeys(f.shipped for f in shipped if f.shipped is not None))
        if not own and not builtin_risk and not opted and entries:
            title += f": {possessive(entries[0].product)} documented default"
        elif not own and not builtin_risk and opted:
            title += ": a documented opt-in"
        lines = [f"{binding.role_label}, bound to {group.who} by {binding.obj.ref}, grants:"]
        if builtin_risk is not None:
            lines.append(f"- {builtin_risk.text}.")
        for flagged in group.flagged:
            source = flagged.source
            where = (f"{source.role.ref} .rules[{source.rule_index}]" if source.role is not None else
                     f"{binding.role_label}, built-in, not in the input")
            path = " → ".join(v for v in source.grant.via if not v.startswith("built-in"))
            lines.append(f"- {'; '.join(r.text for r in flagged.risks)}: {where}, granted through {path}"
                         + (f" [documented opt-in: {flagged.opt_in.why}]" if flagged.opt_in else "")
                         + (" [no more than the shipped default]" if flagged.shipped and own else "")
                         + (f" [shipped by {_shipper(flagged.shipped)}]"
                            if flagged.shipped and len(entries) > 1 else "")
                         + ".")
        if binding.by_group:
            lines.append(f"The binding names a group, so every ServiceAccount in it gets these grants (here: "
                         f"{', '.join(group.service_accounts)}); bind the one ServiceAccount that needs them instead.")
        if entries:
            shippers = _and([_shipper(e) for e in entries])
            sources = "; ".join(dict.fromkeys(e.source for e in entries))
            if own or builtin_risk is not None:
                lines.append(f"The grants marked as the shipped default are what {shippers} give this ServiceAccount "
                             f"({sources}); the others go beyond what the project ships or documents.")
            else:
                these = "The grants not marked as documented opt-ins are" if opted else "These grants are"
                product = entries[0].product
                lines.append(
                    (f"{these} what {shippers} ship for this ServiceAccount"
                     if any(_ships_role(e, binding.role_name) for e in entries) else
                     f"{binding.role_label} is not a role {product} ships, but what it grants here is no more than "
                     f"what {shippers} give this ServiceAccount")
                    + f" ({sources}): not a misconfiguration; the fix says how to narrow them.")
        if own and opted and not entries:
            lines.append("The grants not marked as documented opt-ins go beyond what the project ships or documents.")
        if group.notes:
            lines.append("Note: " + "; ".join(group.notes) + ".")
        return Finding(
            rule=self.id,
            severity=worst,
            title=title,
            summary="\n".join(lines),
            objects=_objects(group),
            evidence=_evidence(group),
            remediation=_remediation(ctx, group, own, entries, builtin_risk),
        )


def _ships_role(entry: Shipped, name: str) -> bool:
    """Whether a role name is one the entry ships (a Helm release may prefix it)."""
    return any(name == role.name or name.endswith(f"-{role.name}") for role in entry.roles)


def _same(a: Source, b: Source) -> bool:
    return (a.grant.evidence_location, a.grant.api_group, a.grant.resource, a.grant.via) == (
        b.grant.evidence_location, b.grant.api_group, b.grant.resource, b.grant.via)


def _notes(notes: Iterable[str], source: Source) -> list[str]:
    """The notes of a resolution that concern a grant: its binding, its roles (aggregation computed or filled),
    an input without namespaces."""
    labels = {source.binding.role_label, *(f"ClusterRole/{v.removeprefix('aggregated from ClusterRole/')}"
                                           for v in source.grant.via if v.startswith("aggregated from "))}
    return [n for n in notes if any(n.startswith(f"{label}:") for label in labels)
            or n.startswith((f"{source.binding.obj.ref}:", "ServiceAccount "))]


def _builtin_risk(group: Group) -> Risk | None:
    if group.builtin is None:
        return None
    cluster = group.binding.namespace is None
    scope = "in every namespace" if cluster else f"in namespace {group.binding.namespace}"
    return Risk("secrets" if cluster else "pods-exec", Severity.HIGH if cluster else Severity.MEDIUM,
                f"Kubernetes' built-in ClusterRole {group.builtin} (not in the input) {scope}: it reads and writes "
                "Secrets, execs into pods and impersonates ServiceAccounts there (bootstrap policy of every "
                "Kubernetes release since 1.6)")


SHORT = {
    "cluster-admin": "is cluster-admin", "namespace-admin": "has every permission in a namespace",
    "secrets": "reads Secrets cluster-wide", "escalate": "may escalate", "bind": "may bind any role",
    "impersonate": "may impersonate", "token": "may mint ServiceAccount tokens", "nodes-proxy": "has nodes/proxy",
    "pods-exec": "may exec into pods", "wildcard": "has wildcard grants",
}


def _shipper(entry: Shipped) -> str:
    """Who ships an entry's roles: `Argo CD's installation manifests`, `the argo-rollouts Helm chart`."""
    if entry.charts:
        return f"the {entry.charts[0]} Helm chart"
    return f"{possessive(entry.product)} installation manifests"


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


def possessive(name: str) -> str:
    """`Argo CD's`, `Argo Rollouts'`."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _short(keys: list[str]) -> str:
    shown = [SHORT.get(k, k) for k in keys[:3]]
    more = f" (+{len(keys) - 3} more)" if len(keys) > 3 else ""
    return (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]) + more


def _objects(group: Group) -> list[Ref]:
    refs = [group.binding.obj.ref]
    if group.binding.role is not None:
        refs.append(group.binding.role.ref)
    for flagged in group.flagged:
        role = flagged.source.role
        if role is not None and role.ref not in refs:
            refs.append(role.ref)
    for component in group.components:
        if component.workload is not None and component.workload.ref not in refs:
            refs.append(component.workload.ref)
    return refs


def _rule_excerpt(rule: dict[str, Any]) -> str:
    parts = []
    for key in ("apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs"):
        values = as_list(rule.get(key))
        if values or (key in ("apiGroups", "resources") and "nonResourceURLs" not in rule):
            parts.append(f"{key} [{', '.join(json.dumps(v) if v in ('', '*') else str(v) for v in values)}]")
    return " ".join(parts)


def _evidence(group: Group) -> list[Evidence]:
    binding = group.binding
    evidence = [object_evidence(binding.obj, f".subjects[{binding.subject_index}]",
                                f"roleRef {binding.role_label}, subject {binding.subject}")]
    seen: set[tuple[str, int | None]] = set()
    for flagged in group.flagged:
        source = flagged.source
        key = (source.grant.evidence_location, source.rule_index)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > MAX_RULE_EVIDENCE:
            break
        via = " ← ".join(v for v in source.grant.via[2:])
        excerpt = _rule_excerpt(source.rule) + (f" ({via})" if via else "")
        if source.role is None:
            evidence.append(Evidence("object", source.grant.evidence_location, excerpt))
        else:
            evidence.append(object_evidence(source.role, f".rules[{source.rule_index}]", excerpt))
    return evidence


# -- remediation ------------------------------------------------------------------------------------------------

def _yaml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(v) if v in ("", "*") or not v.replace("-", "").replace(".", "").replace(
        "/", "").isalnum() else v for v in values) + "]"


def _rules_yaml(rules: Iterable[dict[str, Any]], indent: str = "") -> str:
    lines = []
    for rule in rules:
        first = True
        for key in ("apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs"):
            if key in rule:
                prefix = "- " if first else "  "
                lines.append(f"{indent}{prefix}{key}: {_yaml_list(str(v) for v in rule[key])}")
                first = False
    return "\n".join(lines)


def _plural(kind: str) -> str:
    """Kubernetes' own guess of a resource from a kind (UnsafeGuessKindToResource)."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def _deployed_kinds(ctx: Context) -> dict[str, list[str]]:
    """The kinds the Applications of the input deploy, by API group."""
    found: dict[str, list[str]] = {}
    for app in ctx.snap.applications():
        for entry in as_list(app.at("status", "resources")):
            entry = mapping(entry)
            kind = str(entry.get("kind") or "")
            kinds = found.setdefault(str(entry.get("group") or ""), []) if kind else []
            if kind and kind not in kinds:
                kinds.append(kind)
    return dict(sorted(found.items()))


def _kinds(ctx: Context, group: str) -> list[str]:
    return _deployed_kinds(ctx).get(group, [])


def _deployed(ctx: Context) -> dict[str, list[str]]:
    """The API groups and (guessed) resources the Applications of the input deploy."""
    return {group: [_plural(k) for k in kinds] for group, kinds in _deployed_kinds(ctx).items()}


def _narrowed(ctx: Context, flagged: list[Flagged]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The flagged rules rewritten narrower: (rules that stay in the role, rules moved to a Role in the
    ServiceAccount's namespace). Wildcards become what the Applications deploy (or a placeholder); reading Secrets
    cluster-wide becomes reading them in one namespace; escalate/bind/impersonate, token creation, nodes/proxy and
    pods/exec are dropped."""
    deployed = _deployed(ctx)
    kept: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in flagged:
        rule = item.source.rule
        key = json.dumps(rule, sort_keys=True)
        if key in seen or rule.get("nonResourceURLs"):
            continue
        seen.add(key)
        verbs = [str(v) for v in as_list(rule.get("verbs"))]
        verbs = [v for v in (list(WRITE_VERBS) if "*" in verbs else verbs)
                 if v not in ("escalate", "bind", "impersonate")]
        resources = [str(r) for r in as_list(rule.get("resources"))
                     if r not in ("nodes/proxy", "pods/exec", "serviceaccounts/token")]
        groups = [str(g) for g in as_list(rule.get("apiGroups"))]
        if not (resources and verbs):
            continue
        if "*" in groups or "*" in resources:
            if deployed:
                kept.extend({"apiGroups": [g], "resources": plurals, "verbs": verbs} for g, plurals in deployed.items())
            else:
                kept.append({"apiGroups": ["<api group>"], "resources": ["<resources it needs>"], "verbs": verbs})
            continue
        narrowed: dict[str, Any] = {"apiGroups": groups, "resources": resources, "verbs": verbs}
        if rule.get("resourceNames"):
            narrowed["resourceNames"] = list(as_list(rule.get("resourceNames")))
        cluster_secrets = any(r.key == "secrets" for r in item.risks)
        (moved if cluster_secrets else kept).append(narrowed)
    return kept, moved


def _binding_yaml(kind: str, name: str, namespace: str, role_kind: str, sa: str) -> str:
    meta = f"  name: {name}\n" + (f"  namespace: {namespace or '<namespace>'}\n" if kind == "RoleBinding" else "")
    return (f"apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n{meta}roleRef:\n"
            f"  apiGroup: rbac.authorization.k8s.io\n  kind: {role_kind}\n  name: {name}\n"
            f"subjects:\n- kind: ServiceAccount\n  name: {sa}\n  namespace: {namespace or '<namespace>'}\n")


def _role_yaml(kind: str, name: str, namespace: str, rules: list[dict[str, Any]]) -> str:
    meta = f"  name: {name}\n" + (f"  namespace: {namespace or '<namespace>'}\n" if kind == "Role" else "")
    return f"apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n{meta}rules:\n{_rules_yaml(rules)}\n"


def _narrowed_patch(ctx: Context, group: Group, flagged: list[Flagged], sa: str) -> str:
    """A patch with the flagged rules narrowed: what stays in the role, and a Role with what moves to one
    namespace."""
    binding = group.binding
    kept, moved = _narrowed(ctx, flagged)
    parts = []
    if kept:
        placeholders = "<" in json.dumps(kept)
        guessed = " (resource names guessed from the kinds the Applications deploy: check them with `kubectl " \
                  "api-resources`)" if _deployed(ctx) and placeholders is False and any(
                      "*" in as_list(f.source.rule.get("resources")) for f in flagged) else \
            "; fill in the placeholders" if placeholders else ""
        parts.append(f"# {binding.role_label}: in place of its flagged rules{guessed}; keep its other rules\n"
                     + _rules_yaml(kept) + "\n")
    if moved:
        name = f"{sa}-secrets"
        parts.append(f"# Secrets read in {group.namespace or 'its own namespace'} only, not cluster-wide (add "
                     "resourceNames when it reads known Secrets, and a RoleBinding in each other namespace it "
                     "must read)\n" + _role_yaml("Role", name, group.namespace, moved) + "---\n"
                     + _binding_yaml("RoleBinding", name, group.namespace, "Role", sa))
    if not parts:
        parts.append(f"# {binding.role_label}: remove the flagged rules\n")
    return "---\n".join(parts)


def _namespaced_patch(group: Group, flagged: list[Flagged], sa: str) -> str:
    """The flagged rules as they are, in a Role of the ServiceAccount's namespace: the namespaced installation's
    form."""
    binding = group.binding
    rules = list({json.dumps(f.source.rule, sort_keys=True): f.source.rule for f in flagged}.values())
    name = f"{sa}-namespaced"
    return (f"# The rules of {binding.role_label} flagged here, as a Role in {group.namespace or 'its namespace'}: "
            "the namespaced installation turns the whole ClusterRole into such a Role, with a RoleBinding in each "
            "namespace it serves, and has no ClusterRole\n"
            + _role_yaml("Role", name, group.namespace, rules) + "---\n"
            + _binding_yaml("RoleBinding", name, group.namespace, "Role", sa))


def _remediation(ctx: Context, group: Group, own: list[Flagged], entries: list[Shipped],
                 builtin: Risk | None) -> Remediation:
    binding = group.binding
    sa = group.service_accounts[0]
    if not own and builtin is None:
        if not entries:  # documented opt-ins only
            why = "; ".join(dict.fromkeys(f.opt_in.why for f in group.flagged if f.opt_in))
            return Remediation(
                text=f"These rules are documented additions for {why}. Keep them only while the feature is in use; "
                     "otherwise remove them from the role.",
                docs=(K8S_DOCS,))
        entry = entries[0]
        summary = " ".join(dict.fromkeys(_restrict(e, group) for e in entries))
        opt_ins = [f.opt_in for f in group.flagged if f.opt_in is not None]
        if opt_ins:
            summary += (" The rules marked as documented opt-ins serve "
                     + "; ".join(dict.fromkeys(o.why for o in opt_ins)) + ": keep them only while that is in use"
                     + _exec_setting(ctx, opt_ins) + ".")
        argocd_wide = entry.product == "Argo CD" and any(
            r.key in ("cluster-admin", "wildcard") for f in group.flagged for r in f.risks)
        patch: str | None = _narrowed_patch(ctx, group, group.flagged, sa) if argocd_wide else \
            _namespaced_patch(group, group.flagged, sa) if binding.role_kind == "ClusterRole" else None
        if argocd_wide and any(c.name == "application-controller" for c in group.components):
            inclusions = "\n".join(
                f"    - apiGroups: [{json.dumps(g)}]\n      kinds: {_yaml_list(_kinds(ctx, g))}\n"
                "      clusters: [\"*\"]" for g in _deployed(ctx)
            ) or "    - apiGroups: [\"<api group>\"]\n      kinds: [\"<Kind>\"]\n      clusters: [\"*\"]"
            patch = (f"{patch or ''}---\n# argocd-cm: watch only what is deployed\ndata:\n"
                     f"  resource.inclusions: |\n{inclusions}\n")
        return Remediation(text=summary, patch=patch, docs=tuple(dict.fromkeys((*entry.docs, K8S_DOCS))))
    docs: list[str] = []
    candidates = shipped_for(group.components, sa) if not binding.by_group else []
    manifests = [c for c in candidates if not c.charts] or candidates  # the project's roles, not a chart's
    ship = manifests[-1] if manifests else None  # the newest generation when the version is unknown
    text = [f"Remove what {binding.role_label} grants beyond the ServiceAccount's job."]
    if binding.by_group:
        text.append(f"Bind roles to the ServiceAccounts that need them, never to the group "
                    f"{binding.subject.removeprefix('Group ')}.")
        sa = "<the ServiceAccount that needs it>"
    command = None
    added = _added_rules(group, own)
    role = binding.role
    if added is not None and role is not None:
        ops = ",".join(f'{{"op":"remove","path":"/rules/{i}"}}' for i in sorted(added, reverse=True))
        command = (f"kubectl patch {role.kind.lower()} {role.name}"
                   + (f" -n {role.namespace}" if role.kind == "Role" else "") + f" --type=json -p '[{ops}]'")
        text.append(f"{binding.role_label} is the role {(ship or entries[0]).product} ships, with rules added: remove "
                    f"those ({', '.join(f'.rules[{i}]' for i in sorted(added))}) and keep the rest.")
    elif not entries and not any(f.opt_in for f in group.flagged):
        command = f"kubectl delete {binding.obj.kind.lower()} {binding.obj.name}" + (
            f" -n {binding.obj.namespace}" if binding.obj.kind == "RoleBinding" and binding.obj.namespace else "")
    if ship is not None:
        text.append(f"{ship.product} needs no more than its shipped roles, below. {_restrict(ship, group)}")
        if command is not None and command.startswith("kubectl delete"):
            text.append("If the grant was added because a pull secret or git credentials Secret in another namespace "
                        "was forbidden, grant get on that Secret by name there (a Role with resourceNames and its "
                        "RoleBinding) before deleting the binding.")
        docs.extend(ship.docs)
        parts = []
        bound = {b.role_name for b in resolve(ctx.snap, group.namespace, group.service_accounts[0]).bindings}
        for role_def in ship.roles:
            parts.append(_role_yaml(role_def.kind, role_def.name, group.namespace, list(role_def.rules)))
            kind = "ClusterRoleBinding" if role_def.kind == "ClusterRole" else "RoleBinding"
            parts.append(_binding_yaml(kind, role_def.name, group.namespace, role_def.kind, sa))
        already = sorted(n for n in bound if _ships_role(ship, n) and n != binding.role_name)
        head = (f"# What {ship.product} ships for ServiceAccount {sa} ({ship.source})"
                + (f"; already bound in this input: {', '.join(already)}" if already else "") + "\n")
        patch = head + "---\n".join(parts)
    else:
        text.append("Use a Role in the namespace where it works instead of cluster-wide grants, explicit resources "
                    "and verbs instead of wildcards, named Secrets, and no escalate/bind/impersonate, nodes/proxy or "
                    "pods/exec.")
        patch = _narrowed_patch(ctx, group, own, sa)
    return Remediation(text=" ".join(text), patch=patch, command=command,
                       docs=tuple(dict.fromkeys((*docs, K8S_DOCS))))


def _restrict(entry: Shipped, group: Group) -> str:
    """How to narrow a documented default. Several rows share the application controller's advice on its
    cluster-wide ClusterRole: for a grant in one namespace, or a component that is not the controller, it is
    reworded for the role and the component at hand."""
    binding = group.binding
    shared = next((s.restrict for s in shipped_rbac()
                   if s.product == entry.product and "application-controller" in s.components), None)
    names = list(dict.fromkeys(c.name for c in group.components))
    controller = "application-controller" in names
    if entry.restrict != shared or (controller and binding.namespace is None):
        return entry.restrict
    who = group.who
    if binding.namespace is not None:
        own = " (its ServiceAccount's namespace)" if binding.namespace == group.namespace else ""
        return (f"{binding.role_label} grants only in namespace {binding.namespace}{own}: Argo CD's security guide "
                "restricts the cluster-wide ClusterRoles, not this grant. To narrow it, edit "
                f"{binding.role_label} so that it lists the resources and verbs {who} uses there instead of wildcards.")
    return (f"Argo CD's security guide says it needs cluster-wide read but not full write: edit {binding.role_label} "
            f"so that the writes it grants {who} are limited to the kinds (and, with Roles per namespace, the "
            "namespaces) Argo CD manages; or use the namespaced installation (namespace-install.yaml), which has no "
            "ClusterRole and deploys through cluster credentials limited to the namespaces listed.")


def _exec_setting(ctx: Context, opt_ins: list[OptIn]) -> str:
    """What argocd-cm says of the web terminal, when an opt-in is its `pods/exec` rule."""
    if not any("pods/exec" in as_list(o.rule.get("resources")) for o in opt_ins):
        return ""
    if ctx.snap.settings.cm.get("exec.enabled") == "true":
        return " (argocd-cm has exec.enabled: \"true\": the web terminal is on)"
    return " (exec.enabled is not \"true\" in argocd-cm: the web terminal is off, so the rule can go)"


def _added_rules(group: Group, own: list[Flagged]) -> list[int] | None:
    """The indexes of the rules someone added to a role the project ships (when every over-broad grant comes from
    such a rule of the bound role itself), else None."""
    binding = group.binding
    role = binding.role
    shipped = [f.shipped for f in group.flagged if f.shipped is not None]
    if role is None or not own or not shipped or not _ships_role(shipped[0], binding.role_name):
        return None
    if any(f.source.role is not role or f.source.rule_index is None for f in own):
        return None
    return sorted({f.source.rule_index for f in own if f.source.rule_index is not None})


# -- which ServiceAccounts -------------------------------------------------------------------------------------------

def _pod_spec(component: Component) -> dict[str, Any]:
    if component.workload is not None:
        return mapping(mapping(component.workload.spec.get("template")).get("spec"))
    return component.pods[0].spec if component.pods else {}


def component_service_account(component: Component) -> tuple[str, str]:
    """(namespace, ServiceAccount) a component runs as (`default` when its pod spec names none)."""
    spec = _pod_spec(component)
    namespace = component.workload.namespace if component.workload is not None else (
        component.pods[0].namespace if component.pods else "")
    return namespace, str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def _service_accounts(ctx: Context) -> dict[tuple[str, str], list[Component]]:
    """The ServiceAccounts of the components, every ServiceAccount of their namespaces that a binding names or the
    input holds, and those named like the Argo projects' own, with the components that run as each."""
    found: dict[tuple[str, str], list[Component]] = {}
    for component in ctx.snap.components:
        found.setdefault(component_service_account(component), []).append(component)
    namespaces = {ns for ns, _ in found}
    unnamed = {name for ns, name in found if not ns}
    known = {name for entry in shipped_rbac() for name in entry.service_accounts}

    def add(namespace: str, name: str) -> None:
        """A ServiceAccount of an Argo namespace, or one named as the Argo projects name theirs (when the input
        lacks its workload, or labels it in a way the component table does not know)."""
        if (namespace in namespaces or name in known) and name and name not in unnamed:
            found.setdefault((namespace, name), [])

    for obj in ctx.snap.of_kind("ServiceAccount", ""):
        add(obj.namespace, obj.name)
    for binding in _all_bindings(ctx):
        for subject in as_list(binding.raw.get("subjects")):
            subject = mapping(subject)
            kind, name = str(subject.get("kind") or ""), str(subject.get("name") or "")
            if kind == "ServiceAccount":
                add(str(subject.get("namespace") or (binding.namespace if binding.kind == "RoleBinding" else "")),
                    name)
            elif kind == "User" and name.startswith("system:serviceaccount:") and name.count(":") == 3:
                add(*name.split(":")[2:4])
    return dict(sorted(found.items()))


def _all_bindings(ctx: Context) -> Iterator[Obj]:
    yield from ctx.snap.of_kind("ClusterRoleBinding", RBAC_GROUP)
    yield from ctx.snap.of_kind("RoleBinding", RBAC_GROUP)
