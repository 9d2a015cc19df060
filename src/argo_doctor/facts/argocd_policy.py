"""Argo CD's RBAC policy (argocd-rbac-cm, AppProject roles and the built-in policy) read and enforced as the API server
does (util/rbac/rbac.go, assets/model.conf): `p, subject, resource, action, object, effect` and `g, member, role`
lines; a request is allowed when some matching line allows and none denies; subjects match exactly or through `g`
(ten levels at most), resource, action and object by glob (no separators: `*` spans `/`) or, with
`policy.matchMode: regex`, by an unanchored regular expression; the default role is tried first and an allow by it
is final."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

from argo_doctor import knowledge
from argo_doctor.snapshot import Obj
from argo_doctor.sources.objects import as_list, mapping

RESOURCES = ("clusters", "projects", "applications", "applicationsets", "repositories", "write-repositories",
             "certificates", "accounts", "gpgkeys", "logs", "exec", "extensions")
"""Resources Argo CD's policies name (util/rbac/rbac.go)."""
ACTIONS = ("get", "create", "update", "delete", "sync", "override", "action", "invoke", "rollback")
PROJECT_SCOPED = frozenset({"applications", "applicationsets", "logs", "exec", "clusters", "repositories"})
BUILTIN_ROLES = frozenset({"role:admin", "role:readonly"})
MAX_DEPTH = 10
"""Levels of role inheritance casbin's role manager follows (NewRoleManagerImpl(10))."""
EFFECTS = ("allow", "deny")


@dataclass(frozen=True)
class Line:
    """One policy line: where it comes from (`policy.csv`, `policy.team-a.csv`, the built-in policy, an AppProject
    role) and its line number there (1-based)."""

    origin: str
    number: int
    text: str

    def __str__(self) -> str:
        return f"{self.origin}:{self.number}: {self.text}"


@dataclass(frozen=True)
class Rule:
    """A `p` line."""

    subject: str
    resource: str
    action: str
    obj: str
    effect: str
    line: Line


@dataclass(frozen=True)
class Grant:
    """A `g` line: `member` has `role`."""

    member: str
    role: str
    line: Line


@dataclass
class Policy:
    """A whole policy: its rules and grants, the lines Argo CD cannot load, the default role and the match mode."""

    rules: list[Rule] = field(default_factory=list)
    grants: list[Grant] = field(default_factory=list)
    errors: list[tuple[Line, str]] = field(default_factory=list)
    ignored: list[tuple[Line, str]] = field(default_factory=list)
    """Lines Argo CD loads but that never decide anything (an effect other than allow or deny)."""
    default_role: str = ""
    match_mode: str = "glob"

    def add(self, text: str, origin: str, first_line: int = 1) -> None:
        """Add the lines of a CSV policy text, as Argo CD's adapter reads them (loadPolicyLine)."""
        for offset, raw in enumerate(text.splitlines()):
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue
            line = Line(origin, first_line + offset, stripped)
            try:
                tokens = next(csv.reader([stripped], skipinitialspace=True))  # trailing spaces kept, as Go's reader
            except (csv.Error, StopIteration) as exc:
                self.errors.append((line, f"error parsing policy line: {exc}"))
                continue
            if not tokens or not tokens[0]:
                self.errors.append((line, "invalid RBAC policy: empty section"))
            elif tokens[0] == "p" and len(tokens) == 6:
                rule = Rule(tokens[1], tokens[2], tokens[3], tokens[4], tokens[5], line)
                self.rules.append(rule)
                if rule.effect not in EFFECTS:
                    self.ignored.append((line, f"effect {rule.effect!r} is neither allow nor deny: the line never "
                                               "decides anything"))
            elif tokens[0] == "g" and len(tokens) == 3:
                self.grants.append(Grant(tokens[1], tokens[2], line))
            elif tokens[0] in ("p", "g"):
                want = 6 if tokens[0] == "p" else 3
                self.errors.append((line, f"invalid RBAC policy: a {tokens[0]} line has {want} fields, this one "
                                          f"{len(tokens)} (a missing or extra comma?)"))
            else:
                self.errors.append((line, f"invalid RBAC policy: unknown section {tokens[0]!r} (p or g)"))

    def roles_of(self, subject: str) -> dict[str, list[Grant]]:
        """The roles a subject has through `g` lines (itself included, with no grants), each with the chain that
        gives it, at most MAX_DEPTH levels deep."""
        found: dict[str, list[Grant]] = {subject: []}
        frontier = [subject]
        for _ in range(MAX_DEPTH):
            following = []
            for member in frontier:
                for grant in self.grants:
                    if grant.member == member and grant.role not in found:
                        found[grant.role] = [*found[member], grant]
                        following.append(grant.role)
            if not following:
                break
            frontier = following
        return found

    def holders(self, role: str) -> list[str]:
        """The members a `g` line gives `role` (directly), in policy order."""
        return list(dict.fromkeys(g.member for g in self.grants if g.role == role))

    def matching(self, resource: str, action: str, obj: str) -> list[Rule]:
        """Every rule, whatever its subject, that matches a request."""
        return [r for r in self.rules if r.effect in EFFECTS and matches(r.resource, resource, self.match_mode)
                and matches(r.action, action, self.match_mode) and matches(r.obj, obj, self.match_mode)]

    def defined_roles(self) -> set[str]:
        """Roles that some line gives a permission or another role."""
        return {r.subject for r in self.rules} | {g.member for g in self.grants}


@dataclass(frozen=True)
class Decision:
    """The answer to one request, with the lines that decided it."""

    allowed: bool
    lines: tuple[Line, ...]
    subject: str
    """The subject whose lines decided: the default role, the user, or one of its groups."""
    via: tuple[Grant, ...] = ()


def builtin_lines() -> list[tuple[str, int]]:
    """The built-in policy's lines with their row number in knowledge/argocd_builtin_policy.yaml."""
    return [(row["line"], index + 1) for index, row in enumerate(knowledge.load_rows("argocd_builtin_policy.yaml"))]


def policy_of(data: Mapping[str, str], projects: Iterable[Obj] = (), builtin: bool = True) -> Policy:
    """The policy Argo CD enforces from argocd-rbac-cm's data: the built-in policy, `policy.csv`, then every other
    `policy.<name>.csv` key in sorted order (rbac.go PolicyCSV), and the AppProjects' roles."""
    policy = Policy(default_role=data.get("policy.default", "").strip(),
                    match_mode="regex" if data.get("policy.matchMode", "").strip() == "regex" else "glob")
    if builtin:
        for text, number in builtin_lines():
            policy.add(text, "built-in policy", number)
    keys = ["policy.csv", *sorted(k for k in data if k.startswith("policy.") and k.endswith(".csv")
                                  and k != "policy.csv")]
    for key in keys:
        if key in data:
            policy.add(data[key], key)
    for project in projects:
        for role in as_list(project.spec.get("roles")):
            role = mapping(role)
            name = str(role.get("name") or "")
            subject = f"proj:{project.name}:{name}"
            origin = f"AppProject {project.name} role {name}"
            policy.add(f"p, {subject}, projects, get, {project.name}, allow", origin, 0)
            for index, text in enumerate(as_list(role.get("policies"))):
                policy.add(str(text), origin, index + 1)
            for group in as_list(role.get("groups")):
                policy.add(f"g, {group}, {subject}", origin, 0)
    return policy


MAX_ALTERNATIVES = 64
"""Patterns a glob's `{a,b}` alternatives expand to, at most (more: the glob matches nothing here)."""
Unit = tuple[str, str]
"""One element of a glob: ("*", ""), ("?", ""), ("c", the character) or ("[", the class body)."""


@cache
def _glob(pattern: str) -> tuple[tuple[Unit, ...], ...] | None:
    """A gobwas glob without separators, read as its alternatives (`{a,b}` expanded), each a sequence of units:
    `*` any run, `?` one character, `[…]`/`[!…]` a class, `\\` an escape; None for a pattern gobwas would not
    compile (it then matches nothing)."""
    alternatives: list[list[Unit]] = [[]]
    stack: list[tuple[list[list[Unit]], list[list[Unit]]]] = []  # (before the group, branches done so far)
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            unit: Unit | None = ("c", pattern[i + 1])
            i += 1
        elif char == "*":
            unit = ("*", "")
        elif char == "?":
            unit = ("?", "")
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                return None
            unit, i = ("[", pattern[i + 1:end]), end
        elif char == "{":
            stack.append((alternatives, []))
            alternatives, unit = [[]], None
        elif char == "," and stack:
            stack[-1][1].extend(alternatives)
            alternatives, unit = [[]], None
        elif char == "}" and stack:
            before, branches = stack.pop()
            branches = [*branches, *alternatives]
            alternatives, unit = [[*b, *x] for b in before for x in branches], None
            if len(alternatives) > MAX_ALTERNATIVES:
                return None
        else:
            unit = ("c", char)
        if unit is not None:
            for alternative in alternatives:
                if not (unit[0] == "*" and alternative and alternative[-1][0] == "*"):
                    alternative.append(unit)
        i += 1
    if stack:
        return None
    return tuple(tuple(a) for a in alternatives)


def _one(unit: Unit, char: str) -> bool:
    kind, body = unit
    if kind == "?":
        return True
    if kind == "c":
        return body == char
    negate = body.startswith("!")
    body = body[1:] if negate else body
    inside, k = False, 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            inside = inside or body[k] <= char <= body[k + 2]
            k += 3
        else:
            inside = inside or body[k] == char
            k += 1
    return inside != negate


def _match_units(units: tuple[Unit, ...], value: str) -> bool:
    """Glob units against a text, by the usual two-pointer walk: linear in practice, never exponential."""
    u = v = 0
    star, mark = -1, 0
    while v < len(value):
        if u < len(units) and units[u][0] != "*" and _one(units[u], value[v]):
            u, v = u + 1, v + 1
        elif u < len(units) and units[u][0] == "*":
            star, mark, u = u, v, u + 1
        elif star >= 0:
            mark += 1
            u, v = star + 1, mark
        else:
            return False
    while u < len(units) and units[u][0] == "*":
        u += 1
    return u == len(units)


def matches(pattern: str, value: str, mode: str = "glob") -> bool:
    """Whether a policy token matches a request's value, in the policy's match mode."""
    if mode == "regex":
        try:
            return re.search(pattern, value) is not None
        except re.error:
            return False
    alternatives = _glob(pattern)
    return alternatives is not None and any(_match_units(units, value) for units in alternatives)


def _enforce(policy: Policy, subject: str, resource: str, action: str, obj: str) -> Decision:
    roles = policy.roles_of(subject)
    hits = [r for r in policy.rules if r.subject in roles and r.effect in EFFECTS
            and matches(r.resource, resource, policy.match_mode) and matches(r.action, action, policy.match_mode)
            and matches(r.obj, obj, policy.match_mode)]
    denies = [r for r in hits if r.effect == "deny"]
    allows = [r for r in hits if r.effect == "allow"]
    deciding = denies or allows
    via = tuple(dict.fromkeys(g for r in deciding for g in roles[r.subject]))
    return Decision(bool(allows) and not denies, tuple(r.line for r in deciding), subject, via)


def decide(policy: Policy, subject: str, resource: str, action: str, obj: str,
           groups: Iterable[str] = ()) -> Decision:
    """Whether `subject` (with the groups of its token) may do `action` on `resource` `obj`: the default role first,
    then the subject, then each group that some `g` line names (rbacpolicy.go EnforceClaims); an empty or `*`
    object of a project-scoped resource is `*/*` (as `argocd admin settings rbac can` asks)."""
    if resource in PROJECT_SCOPED and obj in ("", "*"):
        obj = "*/*"
    tried = []
    if policy.default_role:
        decision = _enforce(policy, policy.default_role, resource, action, obj)
        if decision.allowed:
            return decision
        tried.append(decision)
    members = {g.member for g in policy.grants}
    for who in [subject, *(g for g in groups if g in members)]:
        decision = _enforce(policy, who, resource, action, obj)
        if decision.allowed:
            return decision
        tried.append(decision)
    denying = next((d for d in tried if d.lines), None)
    return denying or Decision(False, (), subject)
