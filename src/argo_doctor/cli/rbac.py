"""`argo-doctor rbac`: Argo CD's RBAC policy, answered offline as the API server would."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import yaml

from argo_doctor.cli.common import live_args, live_options, option_file, snapshot
from argo_doctor.cli.group import errors_to_exit, main
from argo_doctor.errors import ConfigError
from argo_doctor.facts.argocd_policy import Decision, Policy, decide, policy_of
from argo_doctor.facts.installation import config_data
from argo_doctor.model import Needs
from argo_doctor.report.json import encode

NEEDS = Needs(frozenset({"ConfigMap", "argoproj.io/AppProject"}))
ALIASES = {"app": "applications", "apps": "applications", "application": "applications",
           "appset": "applicationsets", "appsets": "applicationsets", "applicationset": "applicationsets",
           "cluster": "clusters", "proj": "projects", "project": "projects", "repo": "repositories",
           "repos": "repositories", "repository": "repositories", "cert": "certificates", "certs": "certificates",
           "certificate": "certificates", "account": "accounts", "key": "gpgkeys", "gpgkey": "gpgkeys",
           "log": "logs", "extension": "extensions"}
"""The short names `argocd admin settings rbac can` accepts for resources."""


@main.group("rbac", short_help="Argo CD's RBAC policy, answered offline.")
def rbac_group() -> None:
    """Argo CD's RBAC policy (argocd-rbac-cm, AppProject roles and the built-in policy), read as the API server reads
    it. `scan` reports lines that never take effect (rule argocd-rbac-policy).

    \b
    Example:
      argo-doctor rbac can alice@example.com sync applications team-a/web --from bundle/
    """


@rbac_group.command("can", short_help="Whether a subject may do an action, and the lines that decide.")
@click.argument("subject")
@click.argument("action")
@click.argument("resource")
@click.argument("obj", metavar="[OBJECT]", required=False, default="")
@click.option("-f", "--policy-file", type=click.Path(dir_okay=False, path_type=Path),
              help="A policy CSV, or an argocd-rbac-cm ConfigMap in YAML (instead of --from or --live).")
@click.option("--from", "paths", multiple=True, type=click.Path(path_type=Path), metavar="PATH",
              help="A bundle, dump or files holding argocd-rbac-cm and the AppProjects (repeatable).")
@click.option("--group", "groups", multiple=True, metavar="GROUP",
              help="A group of the subject's token (repeatable): tried when a g line names it, as Argo CD does.")
@click.option("--default-role", help="The default role (default: policy.default of the ConfigMap).")
@click.option("--use-builtin-policy/--no-use-builtin-policy", default=True, show_default=True,
              help="Include Argo CD's built-in role:readonly and role:admin.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@live_options
def can(subject: str, action: str, resource: str, obj: str, policy_file: Path | None, paths: tuple[Path, ...],
        groups: tuple[str, ...], default_role: str | None, use_builtin_policy: bool, output: str,
        **live_kwargs: Any) -> None:
    """Answer Yes or No, as `argocd admin settings rbac can SUBJECT ACTION RESOURCE OBJECT` does, and name the policy
    lines that decided (and the roles through which they apply). OBJECT is `<project>/<application>` for
    applications, logs and exec (`<project>/<namespace>/<application>` outside Argo CD's namespace); empty or `*`
    means every one. Exit status: 0 Yes, 1 No, 2 for bad input.

    \b
    Examples:
      argo-doctor rbac can alice@example.com sync applications team-a/web --from bundle/
      argo-doctor rbac can role:dev delete applications 'team-a/*' -f policy.csv
    """
    with errors_to_exit(), tempfile.TemporaryDirectory(prefix="argo-doctor-") as workdir:
        live = live_args(live_kwargs)
        if sum(bool(x) for x in (policy_file, paths, live.live)) != 1:
            raise ConfigError("give exactly one of --policy-file, --from or --live")
        if policy_file is not None:
            data = _policy_data(option_file(policy_file, "--policy-file", "policy file"), policy_file)
            policy = policy_of(data, builtin=use_builtin_policy)
        else:
            snap = snapshot(paths, Path(workdir), live, NEEDS)
            cm = snap.config_map("argocd-rbac-cm")
            if cm is None:
                raise ConfigError("no argocd-rbac-cm ConfigMap in the input: give it with --policy-file")
            data = config_data(cm)
            policy = policy_of(data, snap.of_kind("AppProject", "argoproj.io"), builtin=use_builtin_policy)
        if default_role is not None:
            policy.default_role = default_role
        resource = ALIASES.get(resource, resource)
        decision = decide(policy, subject, resource, action, obj, groups)
    if output == "json":
        sys.stdout.write(encode(_json(decision, policy)) + "\n")
    else:
        click.echo(_text(decision, policy))
    sys.exit(0 if decision.allowed else 1)


def _policy_data(raw: bytes, path: Path) -> dict[str, str]:
    """argocd-rbac-cm's data from a ConfigMap in YAML, or a bare CSV as its policy.csv."""
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        data = doc.get("data")
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the ConfigMap has no data")
        return {str(k): "" if v is None else str(v) for k, v in data.items()}
    return {"policy.csv": text}


def _text(decision: Decision, policy: Policy) -> str:
    lines = ["Yes" if decision.allowed else "No"]
    if decision.lines:
        how = "allowed" if decision.allowed else "denied"
        lines.append(f"{how} for {decision.subject} by:")
        lines += [f"  {line}" for line in decision.lines]
        lines += [f"  through {grant.line}" for grant in decision.via]
    elif not decision.allowed:
        lines.append("no policy line matches: Argo CD denies what nothing allows")
    if policy.errors:
        lines.append(f"warning: {len(policy.errors)} line(s) of the policy cannot be loaded; Argo CD refuses such a "
                     f"policy whole (first: {policy.errors[0][0]})")
    return "\n".join(lines)


def _json(decision: Decision, policy: Policy) -> dict[str, Any]:
    return {
        "allowed": decision.allowed, "subject": decision.subject, "matchMode": policy.match_mode,
        "defaultRole": policy.default_role,
        "lines": [{"origin": line.origin, "line": line.number, "text": line.text} for line in decision.lines],
        "through": [{"origin": g.line.origin, "line": g.line.number, "text": g.line.text} for g in decision.via],
        "errors": [{"origin": line.origin, "line": line.number, "text": line.text, "message": why}
                   for line, why in policy.errors],
    }
