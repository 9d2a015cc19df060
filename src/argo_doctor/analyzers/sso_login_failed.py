"""sso-login-failed: single sign-on that cannot work as configured, or whose logins the API server refuses.

`oidc.config` or `dex.config` in argocd-cm, against `url` (from which Argo CD builds its redirect URL and Dex's
issuer) and the API server's log: `Failed to verify oidc token` (another issuer, another audience, an expired token,
a signature it cannot check, keys it cannot fetch). A policy that
grants by group while the OIDC config does not ask for a groups claim is said at low severity: some providers send
groups anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence
from argo_doctor.facts.installation import config_data
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_list, mapping

MAX_LINES = 3
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/user-management/",)
CAUSES = (
    (re.compile(r'issued by a different provider, expected \\?"(?P<want>[^"\\]+)\\?" got \\?"(?P<got>[^"\\]+)'),
     "issuer", "the token comes from issuer {got}, and Argo CD expects {want}"),
    (re.compile(r'expected audience \\?"(?P<want>[^"\\]+)\\?" got \[(?P<got>[^\]]*)\]'),
     "audience", "the token is for audience {got}, and Argo CD expects its client id {want}"),
    (re.compile(r"token is expired"), "expired",
     "the token expired before Argo CD checked it (a clock off on the server's node or the provider, or a stale "
     "session)"),
    (re.compile(r"failed to verify signature|failed to verify id token signature"), "signature",
     "Argo CD cannot check the token's signature with the provider's published keys (keys rotated, or the token "
     "comes from another provider)"),
    (re.compile(r"x509:|no such host|connection refused|i/o timeout|context deadline exceeded"), "unreachable",
     "the API server cannot reach the provider's discovery or key endpoints"),
    (re.compile(r"^unregistered redirect_uri (?P<got>\S+)"), "redirect",
     "Dex refuses the redirect URI {got}: Argo CD registers url + /auth/callback, and the user came through another "
     "address"),
    (re.compile(r"is not in any of the required groups (?P<want>\[[^\]]*\])"), "required-groups",
     "Dex's connector admits only members of {want}, and the user is in none of them"),
    (re.compile(r"invalid_client|unauthorized_client|Bad credentials|bad_verification_code"), "connector-client",
     "the identity provider refuses the client id or secret of Dex's connector"),
)


class SsoLoginFailed(Analyzer):
    """Single sign-on that cannot work as configured, or whose logins fail."""

    id = "sso-login-failed"
    title = "Single sign-on fails"
    signatures = ("argocd.oidc-verify-failed", "dex.auth-failed", "dex.unregistered-redirect")
    needs = Needs(frozenset({"ConfigMap"}))

    def __init__(self) -> None:
        self._lines: list[tuple[LogRecord, str]] = []

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep the API server's and Dex's last failed logins, with the error (Dex's redirect refusals marked)."""
        if match is not None:
            error = match.group("error")
            self._lines.append((record, f"unregistered redirect_uri {error}" if signature.id ==
                                "dex.unregistered-redirect" else error))
            del self._lines[:-MAX_LINES]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        cm = ctx.snap.config_map("argocd-cm")
        if cm is None:
            return
        data = config_data(cm)
        oidc, dex = _yaml(data.get("oidc.config")), _yaml(data.get("dex.config"))
        if not oidc and not dex:
            return
        url = data.get("url", "").strip().rstrip("/")
        if not url:
            yield Finding(
                rule=self.id, severity=Severity.HIGH,
                title="SSO is configured but argocd-cm has no url",
                summary=(f"{cm.namespace}/{cm.name} configures {'OIDC' if oidc else 'Dex'} but not `url`: Argo CD "
                         "builds the redirect URL it sends to the provider (url + /auth/callback)"
                         + (" and Dex's issuer (url + /api/dex)" if dex else "") + " from it, so logins cannot "
                         "complete."),
                objects=[cm.ref], evidence=[object_evidence(cm, ".data", "oidc.config or dex.config, no url")],
                remediation=Remediation(text="Set `url` in argocd-cm to the address users open Argo CD at, and "
                                             "register url + /auth/callback as a redirect URI with the provider.",
                                        docs=DOCS))
        if self._lines:
            yield _failed_logins(cm, oidc, url, self._lines)
        yield from _groups_not_requested(ctx, cm, oidc)


def _yaml(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return {}
    return value if isinstance(value, dict) else {}


def _failed_logins(cm: Obj, oidc: dict[str, Any], url: str, lines: list[tuple[LogRecord, str]]) -> Finding:
    """The API server's refused logins, each error explained against the configuration."""
    issuer = str(oidc.get("issuer") or (f"{url}/api/dex" if url else ""))
    said, fixes = [], []
    for _, error in lines:
        for pattern, kind, text in CAUSES:
            found = pattern.search(error)
            if found is None:
                continue
            groups = {k: v.replace('\\"', "").replace('"', "") for k, v in found.groupdict().items()}
            said.append(text.format(**groups))
            if kind == "issuer":
                fixes.append(f"Make `issuer` in oidc.config exactly {groups['got']} (the provider's `iss`, trailing "
                             "slash included)" if oidc else
                             f"Make `url` in argocd-cm the address users open (Dex's issuer is url + /api/dex: "
                             f"{groups['want']} now)")
            elif kind == "audience":
                fixes.append(f"Set `clientID` in oidc.config to the client the provider issues tokens for "
                             f"({groups['got']}), or list it under `allowedAudiences`")
            elif kind == "expired":
                fixes.append("Check the API server node's clock (rule node-clock-skew) and the provider's")
            elif kind == "signature":
                fixes.append(f"Check that {issuer or 'the issuer'} publishes the key the tokens are signed with")
            elif kind == "redirect":
                fixes.append(f"Open Argo CD only at `url` ({url or 'unset'}), or list the other address under "
                             "`additionalUrls` in argocd-cm")
            elif kind == "required-groups":
                fixes.append("Add the user to one of the connector's required orgs or groups (dex.config), or widen "
                             "that list")
            elif kind == "connector-client":
                fixes.append("Check the connector's clientID and clientSecret in dex.config against the provider's "
                             "application settings")
            else:
                fixes.append(f"Let the API server reach {issuer or 'the provider'} (DNS, egress, its CA in "
                             "oidc.config `rootCA`)")
            break
    said = list(dict.fromkeys(said)) or [lines[-1][1]]
    evidence: list[Evidence] = [log_evidence(r) for r, _ in lines]
    evidence.append(object_evidence(cm, ".data['oidc.config']" if oidc else ".data['dex.config']",
                                    f"issuer {issuer}" if issuer else "SSO configuration"))
    return Finding(
        rule="sso-login-failed",
        severity=Severity.HIGH,
        title="SSO logins fail: " + said[0],
        summary=(f"Argo CD's log shows {len(lines)} failed SSO login(s): " + "; ".join(said) + "."),
        objects=[cm.ref],
        evidence=evidence,
        remediation=Remediation(text=". ".join(dict.fromkeys(fixes)) + "." if fixes else
                                "Compare oidc.config (issuer, clientID) with the provider's settings.", docs=DOCS),
    )


def _group_like(line: str) -> bool:
    """A `g` line whose member reads like an IdP group (`org:team`), not a role or a project role."""
    parts = [p.strip() for p in line.split(",")]
    return len(parts) == 3 and ":" in parts[1] and not parts[1].startswith(("role:", "proj:"))


def _groups_not_requested(ctx: Context, cm: Obj, oidc: dict[str, Any]) -> Iterable[Finding]:
    """A policy that grants by group while OIDC does not ask for the groups claim."""
    if not oidc or "requestedScopes" not in oidc or "groups" in mapping(oidc.get("requestedIDTokenClaims")):
        return  # the default scopes, or an ID token claim asked for by name (Azure), carry groups
    scopes = [str(s) for s in as_list(oidc.get("requestedScopes"))]
    rbac = next((c for c in ctx.snap.of_kind("ConfigMap", "", cm.namespace) if c.name == "argocd-rbac-cm"), None)
    if rbac is None or "groups" in scopes:
        return
    data = config_data(rbac)
    claim = [str(c) for c in as_list(_yaml(f"s: {data.get('scopes') or '[groups]'}").get("s"))] or ["groups"]
    if "groups" not in claim:
        return
    grouped = [line.strip() for key, text in data.items() if key.startswith("policy.") and key.endswith(".csv")
               for line in text.splitlines() if line.strip().startswith("g,") and _group_like(line)]
    if not grouped:
        return
    yield Finding(
        rule="sso-login-failed",
        severity=Severity.LOW,
        title="RBAC grants by group, but oidc.config does not request the groups scope",
        summary=(f"argocd-rbac-cm grants roles to groups ({grouped[0]}{' …' if len(grouped) > 1 else ''}) from the "
                 f"`groups` claim, and oidc.config requests only {', '.join(scopes) or 'no scope'}: unless the "
                 "provider sends groups without being asked, users get no group and only the default role."),
        objects=[cm.ref, rbac.ref],
        evidence=[object_evidence(cm, ".data['oidc.config']", f"requestedScopes: {scopes}"),
                  object_evidence(rbac, ".data", grouped[0])],
        remediation=Remediation(text="Add `groups` to requestedScopes in oidc.config (or the provider's scope that "
                                     "carries groups, with `scopes` in argocd-rbac-cm naming that claim).",
                                docs=DOCS),
    )
