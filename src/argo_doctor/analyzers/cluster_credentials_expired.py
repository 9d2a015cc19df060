"""cluster-credentials-expired: a managed cluster whose credentials in Argo CD expired, expire soon or are refused.

Argo CD cluster Secrets (`argocd.argoproj.io/secret-type: cluster`) are read through the public facts the loader
derived before redacting them (sources/argocd_secrets.py): the server, the ways the Secret authenticates, and when a
bearer token (its JWT `exp`) or client certificate (NotAfter) expires; never a credential. An expiry past or near is
reported with the Applications of that destination; the controller's `Failed to sync cluster` lines and the
Applications' `Failed to load live state` conditions that say the cluster refused the credentials are the evidence,
and a cluster refusing them with no known expiry (an exec plugin, IRSA, a revoked token) is reported as such.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import ClassVar

from argo_doctor.analyzers import Analyzer, Context
from argo_doctor.analyzers.common import log_evidence, object_evidence, plural
from argo_doctor.facts.clusters import (
    cluster_secrets,
    credentials_refused,
    destination_server,
    refused_conditions,
    servers_by_name,
)
from argo_doctor.model import Evidence, Finding, Needs, Remediation, Severity
from argo_doctor.snapshot import Obj
from argo_doctor.sources.argocd_secrets import KEY
from argo_doctor.sources.logs import LogRecord, LogSignature
from argo_doctor.sources.objects import as_list, mapping
from argo_doctor.timeutil import format_time, parse_time

MAX_LINES = 3
DOCS = ("https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/#clusters",)


class ClusterCredentialsExpired(Analyzer):
    """Managed clusters whose credentials expired, expire soon or are refused."""

    id = "cluster-credentials-expired"
    title = "Managed cluster credentials expired or refused"
    signatures = ("argocd.cluster-sync-failed",)
    needs = Needs(frozenset({"Secret", "argoproj.io/Application"}), metrics=True)
    options: ClassVar[dict[str, str]] = {
        "warn-days": "Days before a credential's expiry from which it is reported (default 14)"}

    def __init__(self) -> None:
        self._lines: dict[str, list[LogRecord]] = defaultdict(list)

    def on_log(self, signature: LogSignature, record: LogRecord, match: re.Match[str] | None) -> None:
        """Keep, per server, the controller's last lines of a cluster that refused its credentials."""
        if credentials_refused(record.raw):
            server = record.fields.get("server") or (match.group("server") if match and match.group("server") else "")
            lines = self._lines[server.rstrip("/")]
            lines.append(record)
            del lines[:-MAX_LINES]

    def analyze(self, ctx: Context) -> Iterable[Finding]:
        now = ctx.snap.reference_time
        down = {str(m.labels.get("server") or "").rstrip("/"): m for m in ctx.snap.metrics(
            ("argocd_cluster_connection_status",)) if m.value == 0}
        warn = timedelta(days=ctx.option(self.id, "warn-days", 14))
        names = servers_by_name(ctx.snap)
        by_server: dict[str, list[Obj]] = defaultdict(list)
        for app in ctx.snap.applications():
            by_server[destination_server(app, names)].append(app)
        for secret in cluster_secrets(ctx.snap):
            facts = mapping(secret.raw.get(KEY))
            server = str(facts.get("server") or "").rstrip("/")
            if not server:
                continue
            apps = by_server.get(server, [])
            conditions = [(app, index, message) for app in apps for index, message in refused_conditions(app)
                          if server in message]
            lines = self._lines.get(server, [])
            expiries = [(what, when) for what, key in (("bearer token", "tokenExpiresAt"),
                                                       ("client certificate", "certNotAfter"))
                        if (when := parse_time(facts.get(key))) is not None]
            expired = [(w, t) for w, t in expiries if t <= now]
            soon = [(w, t) for w, t in expiries if now < t <= now + warn]
            if expired or conditions or lines:
                finding = self._refused(secret, facts, server, apps, conditions, lines, expired)
                if server in down:
                    sample = down[server]
                    finding.evidence.append(Evidence("metric", sample.location,
                                                     f"argocd_cluster_connection_status{{server={server}}} 0"))
                yield finding
            elif soon:
                yield _expiring(secret, str(facts.get("name") or server), server, apps, soon, now)

    def _refused(self, secret: Obj, facts: dict[str, object], server: str, apps: list[Obj],
                 conditions: list[tuple[Obj, int, str]], lines: list[LogRecord],
                 expired: list[tuple[str, datetime]]) -> Finding:
        auth = [str(a) for a in as_list(facts.get("auth"))]
        name = str(facts.get("name") or server)
        evidence: list[Evidence] = []
        parts = [f"Argo CD's credentials for cluster {name} ({server}, Secret {secret.namespace}/{secret.name}, "
                 f"authenticating with {', '.join(auth) or 'no credential'})"]
        if expired:
            parts[0] += " expired: " + "; ".join(f"its {what} expired at {format_time(when)}" for what, when in expired)
            evidence += [object_evidence(secret, f".{KEY}", f"{what} expires {format_time(when)}", when)
                         for what, when in expired]
        else:
            parts[0] += " are refused by the cluster"
        parts[0] += "."
        if conditions:
            parts.append(f"{plural(len({a.name for a, _, _ in conditions}), 'Application')} cannot load the "
                         f"cluster's live state: {conditions[0][2].rstrip('.')}.")
            evidence += [object_evidence(a, f".status.conditions[{i}]", message[:200]) for a, i, message in
                         conditions[:3]]
        if lines:
            parts.append("The application controller's log shows the cluster refusing it.")
            evidence += [log_evidence(r) for r in lines]
        if apps:
            shown = ", ".join(f"{a.namespace}/{a.name}" for a in apps[:5]) + (
                f" (and {len(apps) - 5} more)" if len(apps) > 5 else "")
            parts.append(f"Applications deploying there: {shown}; Argo CD can neither compare nor sync them.")
        exec_command = str(facts.get("execCommand") or "")
        if "execProvider" in auth or "awsAuthConfig" in auth:
            fix = (f"The Secret authenticates through {exec_command or 'AWS IAM (argocd-k8s-auth)'}: check that the "
                   "identity the controller runs as (its ServiceAccount's IRSA or workload identity role) may still "
                   "assume " + (f"{facts.get('awsRoleARN')} and " if facts.get("awsRoleARN") else "") +
                   "is mapped in the cluster (aws-auth or an access entry).")
        elif "bearerToken" in auth:
            fix = ("Give Argo CD a valid token: for a cluster added with `argocd cluster add`, `argocd cluster "
                   f"rotate-auth {server}` makes a new one; otherwise write a new token (a long-lived ServiceAccount "
                   "token Secret, or one renewed before it expires) into the Secret's config.bearerToken.")
        elif "clientCertificate" in auth:
            fix = "Issue a new client certificate for Argo CD and write it into the Secret's config.tlsClientConfig."
        else:
            fix = "Give the Secret's config credentials the cluster accepts."
        return Finding(
            rule=self.id,
            severity=Severity.HIGH,
            title=f"Cluster {name}: Argo CD's credentials " + ("expired" if expired else "are refused"),
            summary=" ".join(parts),
            objects=[secret.ref, *(a.ref for a in apps[:10])],
            evidence=evidence or [object_evidence(secret, ".metadata.labels", "cluster Secret")],
            remediation=Remediation(text=fix + " Then check the connection with `argocd cluster get`.",
                                    command=f"argocd cluster get {server}", docs=DOCS),
        )


def _expiring(secret: Obj, name: str, server: str, apps: list[Obj], soon: list[tuple[str, datetime]],
              now: datetime) -> Finding:
    what, when = min(soon, key=lambda s: s[1])
    days = max(0, (when - now).days)
    return Finding(
        rule="cluster-credentials-expired",
        severity=Severity.MEDIUM,
        title=f"Cluster {name}: Argo CD's {what} expires in {plural(days, 'day')}",
        summary=(f"The {what} of cluster Secret {secret.namespace}/{secret.name} ({server}) expires at "
                 f"{format_time(when)}; from then Argo CD cannot read or sync the cluster"
                 + (f", and {plural(len(apps), 'Application')} deploying there turn{'s' if len(apps) == 1 else ''} "
                    "Unknown." if apps else ".")),
        objects=[secret.ref, *(a.ref for a in apps[:10])],
        evidence=[object_evidence(secret, f".{KEY}", f"{what} expires {format_time(when)}", when)],
        remediation=Remediation(text=f"Renew the {what} before then and write it into the Secret's config.",
                                command=f"argocd cluster get {server}", docs=DOCS),
    )

