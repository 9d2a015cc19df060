"""Effective permissions of a ServiceAccount, from the RBAC objects of the Snapshot.

RoleBindings grant in their own namespace (to a Role there, or to a ClusterRole, whose rules then apply in that
namespace only); ClusterRoleBindings grant cluster-wide, namespaced and cluster-scoped resources alike. A
ServiceAccount is a subject as `ServiceAccount` (its namespace defaulting to the RoleBinding's), as the user
`system:serviceaccount:<ns>:<name>`, and through the groups `system:serviceaccounts`,
`system:serviceaccounts:<ns>` and `system:authenticated`.

Aggregated ClusterRoles: in manifests, before the aggregation controller ran, `rules` is empty and the grants
come from the ClusterRoles that `aggregationRule.clusterRoleSelectors` select (computed here, recursively, with the
path kept in `via`); in a live cluster `rules` holds what the controller filled in, which is used as it is.
Kubernetes' built-in ClusterRoles are seldom in an input: `cluster-admin` is known (every verb on everything); any
other absent role is reported in `notes` with no grants, never guessed.

`allows` answers as the API server's RBAC authorizer does: a verb, an API group, a resource (`pods/exec` for a
subresource, a path starting with `/` for a non-resource URL), a namespace (None for a cluster-wide request) and
a name (resourceNames restrict).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import as_list, mapping

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_NEEDS = frozenset({f"{RBAC_GROUP}/Role", f"{RBAC_GROUP}/RoleBinding", f"{RBAC_GROUP}/ClusterRole",
                        f"{RBAC_GROUP}/ClusterRoleBinding", "ServiceAccount"})
"""The kinds effective permissions are computed from, as a rule declares them in its `needs`."""

BUILTIN_CLUSTER_ROLES: dict[str, tuple[dict[str, Any], ...]] = {
    "cluster-admin": ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                      {"nonResourceURLs": ["*"], "verbs": ["*"]}),
}
"""Kubernetes' built-in ClusterRoles whose grants do not depend on the cluster
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go)."""
KNOWN_BUILTINS = frozenset({"cluster-admin", "admin", "edit", "view"})
"""Built-in ClusterRoles an input usually lacks: `admin`, `edit` and `view` are aggregated from whatever the cluster
labels `aggregate-to-*`, so their grants are not known from the input."""
SERVICE_ACCOUNT_GROUPS = ("system:serviceaccounts", "system:authenticated")


@dataclass(frozen=True)
class Grant:
    """One (API group, resource) of one rule, as it reaches a ServiceAccount."""

    api_group: str
    """`""` for the core group; `"*"` kept as is."""
    resource: str
    """`pods`, `pods/exec`, `*`, `*/scale`...; `""` for a non-resource URL grant."""
    verbs: tuple[str, ...]
    namespace: str | None
    """None: cluster-wide (a ClusterRoleBinding); else the RoleBinding's namespace (`""` when the input does not
    say it)."""
    resource_names: tuple[str, ...]
    """() = every name."""
    non_resource_urls: tuple[str, ...]
    via: tuple[str, ...]
    """The path that grants it: the binding (with the group or user it names, when not the ServiceAccount itself),
    the role, then `aggregated from ClusterRole/x` for each aggregation step, or `built-in, not in the input`."""
    evidence_location: str
    """`file:line Kind/ns/name .rules[i]` of the rule that grants it (of the binding's roleRef for a built-in)."""


@dataclass(frozen=True)
class Permissions:
    """What a ServiceAccount may do, with what could not be known in `notes`."""

    namespace: str
    service_account: str
    grants: tuple[Grant, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Binding:
    """A RoleBinding or ClusterRoleBinding that names a ServiceAccount (directly or through a group)."""

    obj: Obj
    subject: str
    """How it names the ServiceAccount: `ServiceAccount ns/name`, `User system:serviceaccount:ns:name`, `Group
    system:serviceaccounts:ns`..."""
    subject_index: int
    role_kind: str
    role_name: str
    role: Obj | None
    """The Role or ClusterRole it refers to; None when absent from the input."""

    @property
    def namespace(self) -> str | None:
        """Where it grants: the RoleBinding's namespace, None for a ClusterRoleBinding."""
        return self.obj.namespace if self.obj.kind == "RoleBinding" else None

    @property
    def label(self) -> str:
        """`ClusterRoleBinding/x` or `RoleBinding/ns/x`, with the group or user when that is what names the
        ServiceAccount."""
        via = str(self.obj.ref)
        return via if self.subject.startswith("ServiceAccount ") else f"{via} (to {self.subject})"

    @property
    def role_label(self) -> str:
        """`ClusterRole/x` or `Role/ns/x`."""
        return f"Role/{self.obj.namespace}/{self.role_name}" if self.role_kind == "Role" else \
            f"ClusterRole/{self.role_name}"

    @property
    def by_group(self) -> bool:
        """Whether it names the ServiceAccount through a group (so it applies to many)."""
        return self.subject.startswith("Group ")


@dataclass(frozen=True)
class Source:
    """Where one grant comes from: the binding, and the role object and rule index holding it (None for a built-in
    role absent from the input)."""

    grant: Grant
    binding: Binding
    role: Obj | None
    rule_index: int | None
    rule: dict[str, Any]


@dataclass(frozen=True)
class Resolution:
    """Everything known about one ServiceAccount's permissions."""

    namespace: str
    service_account: str
    bindings: tuple[Binding, ...]
    sources: tuple[Source, ...]
    notes: tuple[str, ...]

    @property
    def permissions(self) -> Permissions:
        """The Permissions of the interface."""
        return Permissions(self.namespace, self.service_account, tuple(s.grant for s in self.sources), self.notes)


# -- the index, built once per snapshot --------------------------------------------------------------------------

@dataclass(frozen=True)
class _RoleRule:
    rule: dict[str, Any]
    index: int
    owner: Obj
    path: tuple[str, ...]  # ("aggregated from ClusterRole/x", ...)


class _Index:
    def __init__(self, snap: Snapshot) -> None:
        self.cluster_roles = {o.name: o for o in snap.of_kind("ClusterRole", RBAC_GROUP)}
        self.roles = {(o.namespace, o.name): o for o in snap.of_kind("Role", RBAC_GROUP)}
        self.bindings = [*snap.of_kind("ClusterRoleBinding", RBAC_GROUP), *snap.of_kind("RoleBinding", RBAC_GROUP)]
        self._rules: dict[str, tuple[list[_RoleRule], list[str]]] = {}

    def cluster_role_rules(self, role: Obj) -> tuple[list[_RoleRule], list[str]]:
        """The rules of a ClusterRole, aggregation resolved, and notes on how they were found."""
        if role.name not in self._rules:
            self._rules[role.name] = self._resolve(role, (role.name,))
        return self._rules[role.name]

    def _resolve(self, role: Obj, stack: tuple[str, ...]) -> tuple[list[_RoleRule], list[str]]:
        rules = [mapping(r) for r in as_list(role.raw.get("rules"))]
        aggregation = mapping(role.raw.get("aggregationRule"))
        selectors = [s for s in as_list(aggregation.get("clusterRoleSelectors")) if isinstance(s, dict)]
        own = [_RoleRule(rule, i, role, ()) for i, rule in enumerate(rules)]
        if not selectors:
            return own, []
        sources = [c for name, c in sorted(self.cluster_roles.items())
                   if name != role.name and any(selector_matches(s, c.labels) for s in selectors)]
        shown = ", ".join(f"ClusterRole/{c.name}" for c in sources) or "none in the input"
        if rules:
            own = [_RoleRule(r.rule, r.index, r.owner, self._filled_from(r.rule, sources)) for r in own]
            return own, [f"ClusterRole/{role.name}: rules as the aggregation controller filled them in (its "
                         f"aggregationRule selects {shown})"]
        notes = [f"ClusterRole/{role.name}: rules computed from its aggregationRule (empty in the input): {shown}"]
        found: list[_RoleRule] = []
        for source in sources:
            if source.name in stack:
                notes.append(f"ClusterRole/{role.name}: aggregation cycle through ClusterRole/{source.name} ignored")
                continue
            inner, inner_notes = self._resolve(source, (*stack, source.name))
            notes.extend(inner_notes)
            step = f"aggregated from ClusterRole/{source.name}"
            found.extend(_RoleRule(r.rule, r.index, r.owner, (step, *r.path)) for r in inner)
        return found, notes

    def _filled_from(self, rule: dict[str, Any], sources: list[Obj]) -> tuple[str, ...]:
        """The labelled ClusterRole a filled-in rule was copied from (the controller copies rules verbatim)."""
        for source in sources:
            if any(mapping(r) == rule for r in as_list(source.raw.get("rules"))):
                return (f"aggregated from ClusterRole/{source.name}",)
        return ()


_INDEXES: weakref.WeakKeyDictionary[Snapshot, _Index] = weakref.WeakKeyDictionary()


def _index(snap: Snapshot) -> _Index:
    found = _INDEXES.get(snap)
    if found is None:
        found = _INDEXES[snap] = _Index(snap)
    return found


# -- label selectors -----------------------------------------------------------------------------------------------

def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a metav1.LabelSelector (matchLabels and matchExpressions) selects these labels; an empty selector
    selects everything, as the API's LabelSelectorAsSelector does."""
    for key, value in mapping(selector.get("matchLabels")).items():
        if labels.get(str(key)) != str(value):
            return False
    for expression in as_list(selector.get("matchExpressions")):
        expression = mapping(expression)
        key = str(expression.get("key") or "")
        operator = str(expression.get("operator") or "")
        values = {str(v) for v in as_list(expression.get("values"))}
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # the API refuses such a selector: it selects nothing
    return True


# -- subjects and bindings -------------------------------------------------------------------------------------------

def _subject_match(subject: dict[str, Any], binding: Obj, namespace: str, name: str) -> str | None:
    """How a binding's subject names the ServiceAccount, or None. An input without namespaces (`""`, manifests
    meant for `kubectl apply -n`) matches ServiceAccount subjects by name."""
    kind = str(subject.get("kind") or "")
    subject_name = str(subject.get("name") or "")
    if kind == "ServiceAccount":
        subject_ns = str(subject.get("namespace") or (binding.namespace if binding.kind == "RoleBinding" else ""))
        if subject_name == name and (subject_ns == namespace or "" in (subject_ns, namespace)):
            return f"ServiceAccount {subject_ns or namespace or '?'}/{name}"
        return None
    groups = (*SERVICE_ACCOUNT_GROUPS, f"system:serviceaccounts:{namespace}")
    if (kind == "User" and subject_name == f"system:serviceaccount:{namespace}:{name}") or (
            kind == "Group" and subject_name in groups):
        return f"{kind} {subject_name}"
    return None


def _bindings(index: _Index, namespace: str, name: str) -> list[Binding]:
    found = []
    for obj in index.bindings:
        ref = mapping(obj.raw.get("roleRef"))
        role_kind = str(ref.get("kind") or "")
        role_name = str(ref.get("name") or "")
        for i, subject in enumerate(as_list(obj.raw.get("subjects"))):
            matched = _subject_match(mapping(subject), obj, namespace, name)
            if matched is None:
                continue
            if role_kind == "Role" and obj.kind == "RoleBinding":
                role = index.roles.get((obj.namespace, role_name))
            elif role_kind == "ClusterRole":
                role = index.cluster_roles.get(role_name)
            else:
                continue  # a ClusterRoleBinding cannot refer to a Role: the API refuses it
            found.append(Binding(obj, matched, i, role_kind, role_name, role))
            break
    return found


def _grants(rule: dict[str, Any], namespace: str | None, via: tuple[str, ...], location: str) -> Iterator[Grant]:
    """The grants of one PolicyRule in one scope. Non-resource URLs are granted by ClusterRoleBindings only."""
    verbs = tuple(str(v) for v in as_list(rule.get("verbs")))
    names = tuple(str(n) for n in as_list(rule.get("resourceNames")))
    for group in (str(g) for g in as_list(rule.get("apiGroups"))):
        for resource in (str(r) for r in as_list(rule.get("resources"))):
            yield Grant(group, resource, verbs, namespace, names, (), via, location)
    urls = tuple(str(u) for u in as_list(rule.get("nonResourceURLs")))
    if urls and namespace is None:
        yield Grant("", "", verbs, None, (), urls, via, location)


def resolve(snap: Snapshot, namespace: str, service_account: str) -> Resolution:
    """The bindings that name a ServiceAccount and every grant they give it, each with its source."""
    index = _index(snap)
    bindings = _bindings(index, namespace, service_account)
    sources: list[Source] = []
    notes: list[str] = []
    if not namespace:
        notes.append(f"ServiceAccount {service_account}: the input gives no namespace; ServiceAccount subjects are "
                     "matched by name in any namespace")
    for binding in bindings:
        scope = binding.namespace
        head = (binding.label, binding.role_label)
        role = binding.role
        if role is None:
            builtin = BUILTIN_CLUSTER_ROLES.get(binding.role_name) if binding.role_kind == "ClusterRole" else None
            if builtin is None:
                known = binding.role_kind == "ClusterRole" and (
                    binding.role_name in KNOWN_BUILTINS or binding.role_name.startswith("system:"))
                what = "a Kubernetes built-in role, " if known else ""
                notes.append(f"{binding.role_label} ({what}bound by {binding.obj.ref}) not in the input: its grants "
                             "are unknown")
                continue
            notes.append(f"{binding.role_label} (bound by {binding.obj.ref}): built-in, not in the input; its "
                         "Kubernetes meaning is used")
            location = f"{binding.obj.location} {binding.obj.ref} .roleRef"
            for rule in builtin:
                for grant in _grants(rule, scope, (*head, "built-in, not in the input"), location):
                    sources.append(Source(grant, binding, None, None, rule))
            continue
        if role.kind == "ClusterRole":
            rules, role_notes = index.cluster_role_rules(role)
            notes.extend(n for n in role_notes if n not in notes)
        else:
            rules = [_RoleRule(mapping(r), i, role, ()) for i, r in enumerate(as_list(role.raw.get("rules")))]
        for item in rules:
            location = f"{item.owner.location} {item.owner.ref} .rules[{item.index}]"
            if scope is not None and item.rule.get("nonResourceURLs") and binding.role_kind == "ClusterRole":
                note = (f"{binding.obj.ref}: the nonResourceURLs of {binding.role_label} are not granted through a "
                        "RoleBinding")
                if note not in notes:
                    notes.append(note)
            for grant in _grants(item.rule, scope, (*head, *item.path), location):
                sources.append(Source(grant, binding, item.owner, item.index, item.rule))
    return Resolution(namespace, service_account, tuple(bindings), tuple(sources), tuple(notes))


def effective_permissions(snap: Snapshot, namespace: str, service_account: str) -> Permissions:
    """What a ServiceAccount may do, from the RoleBindings and ClusterRoleBindings of the input."""
    return resolve(snap, namespace, service_account).permissions


# -- the authorizer ----------------------------------------------------------------------------------------------------

def _verb_matches(verbs: Iterable[str], verb: str) -> bool:
    return any(v in ("*", verb) for v in verbs)


def _resource_matches(granted: str, requested: str) -> bool:
    """k8s rbac ResourceMatches: `*`, an exact match (`pods/exec`), or `*/<subresource>`; `pods` never covers
    `pods/exec`, and `pods/*` means nothing special."""
    if granted == "*" or granted == requested:
        return True
    _, sep, sub = requested.partition("/")
    return bool(sep) and granted == f"*/{sub}"


def _url_matches(granted: str, path: str) -> bool:
    """k8s rbac NonResourceURLMatches: exact, `*`, or a prefix ending with `*`."""
    if granted in ("*", path):
        return True
    return granted.endswith("*") and path.startswith(granted[:-1])


def grant_allows(grant: Grant, verb: str, api_group: str, resource: str, namespace: str | None,
                 name: str | None = None) -> bool:
    """Whether this one grant allows the request (see `allows`)."""
    if not _verb_matches(grant.verbs, verb):
        return False
    if grant.namespace is not None and grant.namespace != namespace:
        return False  # a namespaced grant never allows a cluster-wide request, nor one in another namespace
    if resource.startswith("/"):
        return grant.namespace is None and any(_url_matches(u, resource) for u in grant.non_resource_urls)
    if not grant.resource or grant.api_group not in ("*", api_group):
        return False
    if not _resource_matches(grant.resource, resource):
        return False
    return not grant.resource_names or (name is not None and name in grant.resource_names)


def allows(perms: Permissions, verb: str, api_group: str, resource: str, namespace: str | None,
           name: str | None = None) -> Grant | None:
    """The grant that allows a request, or None. `resource` is `pods`, `pods/exec` for a subresource, or a path
    starting with `/` for a non-resource URL; `namespace` None asks for the request cluster-wide (every namespace,
    or a cluster-scoped resource); `name` is the object's name (a grant with resourceNames allows only those, so
    never list, watch or create without a name)."""
    return next((g for g in perms.grants if grant_allows(g, verb, api_group, resource, namespace, name)), None)
