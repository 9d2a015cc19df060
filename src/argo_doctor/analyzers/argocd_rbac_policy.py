"""argocd-rbac-policy: Argo CD RBAC policy lines that do not do what they say, and the requests it denied.

argocd-rbac-cm (and the AppProjects' roles) read as the API server reads them (facts/argocd_policy.py): lines it
cannot load, effects other than allow/deny, roles granted but never given a permission, resources and actions that
no request names, projects the input does not hold, allows that a deny of the same subject always overrides; and
from the API server's log, each subject's denied requests with the line that would grant them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.facts.argocd_policy import (
    ACTIONS,
    BUILTIN_ROLES,
    RESOURCES,
    Line,
    Policy,
    decide,
    matches,
    policy_of,
)
from argo_doctor.facts.installation import config_data
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature

DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/rbac/",)
GLOB = re.compile(r"[*?\[{\\]")
APP_SCOPED = frozenset({"applications", "applicationsets", "logs", "exec"})
"""Resources whose object starts with a project (clusters and repositories are URLs, or project/URL)."""
MAX_DENIALS = 20
"""Distinct denied requests kept."""


class ArgocdRbacPolicy(Analyzer):
    """Argo CD RBAC policy lines that never take effect, and denied requests."""

    id = "argocd-rbac-policy"
    title = "Argo CD RBAC policy does not do what it says"
    signatures = ("argocd.permission-denied",)
    needs = Needs(frozenset({"argoproj.io/AppProject", "argoproj.io/Application", "ConfigMap"}))

    def __init__(self) -> None:
        self._denied: dict[tuple[str, str, str, str], list[LogRecord]] = {}

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep each distinct denied request (subject, resource, action, object) with its last line."""
        if match is None:
            return
        key = (match.group("sub").strip(), match.group("res"), match.group("act"), match.group("obj"))
        if key in self._denied or len(self._denied) < MAX_DENIALS:
            self._denied.setdefault(key, []).append(record)
            del self._denied[key][:-1]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        cm = ctx.snap.config_map("argocd-rbac-cm")
        if cm is None:
            return
        projects = ctx.snap.of_kind("AppProject", "argoproj.io")
        data = config_data(cm)
        policy = policy_of(data, projects)
        if [e for e in policy.errors if e[0].origin.startswith("policy.")]:
            yield _unloadable(cm, policy)
        yield from _project_errors(projects, policy)
        apps: dict[str, set[str]] = {}
        for app in ctx.snap.applications():
            project = str(app.spec.get("project") or "default")
            apps.setdefault(project, set()).add(f"{project}/{app.name}")
        yield from _ineffective(cm, policy, {p.name for p in projects} if projects else None, apps)
        if self._denied:
            yield _denials(cm, policy, self._denied)


def _where(cm: Obj, line: Line) -> Evidence:
    key = line.origin if line.origin.startswith("policy.") else None
    path = f".data[{key!r}]" if key else ".data"
    return object_evidence(cm, path, f"{line.origin} line {line.number}: {line.text}")


def _unloadable(cm: Obj, policy: Policy) -> Finding:
    """Lines of argocd-rbac-cm Argo CD cannot load: the user policy is refused as a whole."""
    errors = [e for e in policy.errors if e[0].origin.startswith("policy.")]
    shown = "; ".join(f"{line.origin} line {line.number} `{line.text}`: {why}" for line, why in errors[:3])
    fixes = [f"`{_mended(line.text)}`" for line, _ in errors if _mended(line.text)]
    return Finding(
        rule="argocd-rbac-policy",
        severity=Severity.HIGH,
        title=f"argocd-rbac-cm holds {plural(len(errors), 'line')} Argo CD cannot load",
        summary=(f"Argo CD cannot load the RBAC policy of {cm.namespace}/{cm.name}: {shown}. A policy with such a line "
                 "is refused whole (\"invalid RBAC policy\"): the API server fails to start with it, or keeps logging "
                 "the error on every change, and none of the ConfigMap's grants can be trusted until it is mended."),
        objects=[cm.ref],
        evidence=[_where(cm, line) for line, _ in errors[:5]],
        remediation=Remediation(
            text="Mend each line (six fields for p: subject, resource, action, object, effect; three for g)"
                 + (f": {', '.join(fixes)}" if fixes else "") + ", then check the whole policy with "
                 "`argocd admin settings rbac validate`.",
            command=f"argocd admin settings rbac validate --namespace {cm.namespace}", docs=DOCS),
    )


def _project_errors(projects: list[Obj], policy: Policy) -> Iterable[Finding]:
    """AppProject role lines Argo CD cannot load: requests about that project are then judged without its roles."""
    for project in projects:
        origin = f"AppProject {project.name} role "
        errors = [(line, why) for line, why in policy.errors if line.origin.startswith(origin)]
        if not errors:
            continue
        line, why = errors[0]
        yield Finding(
            rule="argocd-rbac-policy",
            severity=Severity.MEDIUM,
            title=f"AppProject {project.name} has a role policy Argo CD cannot load",
            summary=(f"{line.origin} line {line.number} `{line.text}`: {why}. Argo CD then loads no role of project "
                     f"{project.name} (\"Failed to load project '{project.name}' policy\") and judges requests about "
                     "it by the global policy alone: tokens of the project's roles are refused."),
            objects=[project.ref],
            evidence=[object_evidence(project, ".spec.roles", f"{line.origin}: {line.text}")],
            remediation=Remediation(text="Mend the line: `p, proj:<project>:<role>, <resource>, <action>, "
                                         "<project>/<object>, allow|deny`.",
                                    command=f"argocd proj role list {project.name}", docs=DOCS))


def _mended(text: str) -> str:
    """A p line with a missing comma before its effect (`…, */* allow`), written with it; "" otherwise."""
    parts = [p.strip() for p in text.split(",")]
    if parts[0] == "p" and len(parts) == 5 and re.fullmatch(r"\S+\s+(allow|deny)", parts[-1]):
        obj, effect = parts[-1].split()
        return ", ".join([*parts[:-1], obj, effect])
    return ""


def _ineffective(cm: Obj, policy: Policy, projects: set[str] | None,
                 apps: dict[str, set[str]]) -> Iterable[Finding]:
    """Lines that load but never take effect, one finding per kind of mistake (`apps`: the input's Applications as
    `project/name`, by project; a project none of whose Applications the input holds is not judged)."""
    problems: list[tuple[Line, str]] = list(policy.ignored)
    defined = policy.defined_roles() | BUILTIN_ROLES
    user = [r for r in policy.rules if not r.line.origin.startswith("built-in")]
    for grant in policy.grants:
        if grant.role.startswith("role:") and grant.role not in defined:
            problems.append((grant.line, f"{grant.role} is granted to {grant.member} but no line gives it a "
                                         "permission or a role"))
    if policy.default_role and policy.default_role not in defined:
        problems.append((Line("policy.default", 1, policy.default_role),
                         f"the default role {policy.default_role} has no permission: users get nothing by default"))
    for rule in user:
        if not GLOB.search(rule.resource) and rule.resource not in RESOURCES:
            problems.append((rule.line, f"resource {rule.resource!r} is not one Argo CD checks "
                                        f"({', '.join(RESOURCES)})"))
        elif not GLOB.search(rule.action.split("/", 1)[0]) and rule.action.split("/", 1)[0] not in ACTIONS:
            problems.append((rule.line, f"action {rule.action!r} is not one Argo CD checks ({', '.join(ACTIONS)})"))
        project = rule.obj.split("/", 1)[0]
        if (projects is not None and rule.resource in APP_SCOPED and "/" in rule.obj and "://" not in rule.obj
                and not GLOB.search(project) and project not in projects and policy.match_mode == "glob"):
            problems.append((rule.line, f"project {project!r} is not among the input's AppProjects "
                                        f"({', '.join(sorted(projects)) or 'none'})"))
        elif (rule.resource == "applications" and rule.obj.count("/") == 1 and not GLOB.search(rule.obj)
              and policy.match_mode == "glob" and project in apps and rule.obj not in apps[project]):
            problems.append((rule.line, f"Application {rule.obj.split('/')[1]!r} is not among the input's "
                                        f"Applications of project {project!r}"))
    for allow in user:
        if allow.effect != "allow":
            continue
        roles = policy.roles_of(allow.subject)
        for deny in policy.rules:
            if (deny.effect == "deny" and deny.subject in roles and matches(deny.resource, allow.resource,
                                                                             policy.match_mode)
                    and matches(deny.action, allow.action, policy.match_mode)
                    and matches(deny.obj, allow.obj, policy.match_mode)):
                problems.append((allow.line, f"always overridden by the deny at {deny.line.origin} line "
                                             f"{deny.line.number} (`{deny.line.text}`): a deny wins over any allow"))
                break
    if not problems:
        return
    shown = "; ".join(f"{line.origin} line {line.number} `{line.text}`: {why}" for line, why in problems[:4])
    more = f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""
    only_projects = all("among the input's" in why for _, why in problems)  # the input may be partial: low
    yield Finding(
        rule="argocd-rbac-policy",
        severity=Severity.LOW if only_projects else Severity.MEDIUM,
        title=f"{plural(len(problems), 'RBAC policy line')} of {cm.name} never take{'s' if len(problems) == 1 else ''} "
              "effect",
        summary=(f"Argo CD loads these lines of {cm.namespace}/{cm.name} but they never grant or deny what they name: "
                 f"{shown}{more}."
                 + (" The input may not hold every AppProject or Application: check that they exist." if any(
                     "among the input's" in why for _, why in problems) else "")),
        objects=[cm.ref],
        evidence=[_where(cm, line) for line, _ in problems[:6]],
        remediation=Remediation(
            text="Fix each line as said (a role needs `p` lines of its own; resources and actions are those of the "
                 "RBAC documentation; a deny always wins, so narrow it or drop the allow); then check a request with "
                 "`argo-doctor rbac can SUBJECT ACTION RESOURCE OBJECT`.",
            command=f"argocd admin settings rbac validate --namespace {cm.namespace}", docs=DOCS),
    )


def _why_denied(policy: Policy, subject: str, resource: str, action: str, obj: str) -> str:
    """What the policy says of a denied request: the deny that matches it for a role the subject may hold through a
    group, the role that would allow it, or the line that would grant it."""
    decision = decide(policy, subject, resource, action, obj)
    if decision.allowed:
        return "the policy here allows it (it changed since, or the request came with another token)"
    others = policy.matching(resource, action, obj)
    denies = [r for r in others if r.effect == "deny" and policy.holders(r.subject)]
    if denies:
        rule = denies[0]
        held = ", ".join(policy.holders(rule.subject))
        return (f"if {subject} is in {held}, the deny at {rule.line.origin} line {rule.line.number} "
                f"(`{rule.line.text}`) decided it: an allow cannot override a deny, so narrow the deny if the request "
                "should pass")
    allows = [r for r in others if r.effect == "allow" and not r.line.origin.startswith("built-in")]
    if allows:
        rule = allows[0]
        held = ", ".join(policy.holders(rule.subject)) or "nobody"
        return (f"{rule.subject} allows it ({rule.line.origin} line {rule.line.number}) and is held by {held}: the "
                "subject's token did not carry that group (the claim must be one of `scopes`)")
    return f"no line allows it; `p, {subject}, {resource}, {action}, {obj}, allow` (or a role with it) would"


def _denials(cm: Obj, policy: Policy, denied: dict[tuple[str, str, str, str], list[LogRecord]]) -> Finding:
    """Requests the API server denied, each with what the policy says and the line that would allow it."""
    lines: list[str] = []
    evidence: list[Evidence] = []
    for (subject, resource, action, obj), records in denied.items():
        lines.append(f"{subject} {action} {resource} {obj}: {_why_denied(policy, subject, resource, action, obj)}")
        evidence.extend(log_evidence(r) for r in records)
    counts = Counter(s for s, _, _, _ in denied)
    return Finding(
        rule="argocd-rbac-policy",
        severity=Severity.LOW,
        title=f"Argo CD denied {plural(len(denied), 'request')} of {', '.join(counts)}",
        summary=("The API server denied: " + "; ".join(lines[:5]) + (f" (and {len(lines) - 5} more)" if len(lines) > 5
                                                                     else "")
                 + ". Denials are often intended: change the policy only for those that should pass."),
        objects=[cm.ref],
        evidence=evidence[:6],
        remediation=Remediation(
            text="Grant only what is meant: prefer a role (`p, role:NAME, …` and `g, SUBJECT, role:NAME`) over a line "
                 "per user; check the result before applying it.",
            command=f"argo-doctor rbac can {next(iter(denied))[0]} {next(iter(denied))[2]} "
                    f"{next(iter(denied))[1]} {next(iter(denied))[3]}",
            docs=DOCS),
    )
