"""Argo CD's repository credentials: Secrets labelled `argocd.argoproj.io/secret-type: repository` (one repository,
matched by its exact URL) or `repo-creds` (a credential template, matched by the longest URL prefix), as Argo CD's
settings manager picks them (util/db/repository_secrets.go). Only the public fields the loader derived
(sources/argocd_secrets.py) and the names of the credential keys are read, never a credential's value."""

from __future__ import annotations

from dataclasses import dataclass

from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.argocd_secrets import KEY, SECRET_TYPE
from argo_doctor.sources.objects import mapping

CREDENTIAL_KEYS = ("password", "username", "sshPrivateKey", "githubAppPrivateKey", "tlsClientCertKey",
                   "bearerToken", "gcpServiceAccountKey", "azureServicePrincipalClientSecret")
"""Keys that hold a credential in a repository Secret (docs/operator-manual/argocd-repositories.yaml)."""


@dataclass(frozen=True)
class RepoSecret:
    """A repository or repo-creds Secret: its kind, its URL and which credential keys it has."""

    secret: Obj
    kind: str
    url: str
    credentials: tuple[str, ...]


def public_field(secret: Obj, key: str) -> str:
    """A public field of an Argo CD Secret, as the loader derived it before redacting the values ("" when absent)."""
    value = mapping(secret.raw.get(KEY)).get(key)
    return str(value) if isinstance(value, str) else ""


def normal_url(url: str) -> str:
    """A repository URL compared as Argo CD does: lower case, without a trailing slash or `.git`."""
    url = url.strip().lower().rstrip("/")
    return url[:-4] if url.endswith(".git") else url


def repo_secrets(snap: Snapshot) -> list[RepoSecret]:
    """Every repository and repo-creds Secret of the input."""
    found = []
    for secret in snap.of_kind("Secret", ""):
        kind = secret.labels.get(SECRET_TYPE, "")
        if kind in ("repository", "repo-creds"):
            keys = {*mapping(secret.raw.get("data")), *mapping(secret.raw.get("stringData"))}
            found.append(RepoSecret(secret, kind, public_field(secret, "url"),
                                    tuple(k for k in CREDENTIAL_KEYS if k in keys)))
    return found


def credentials_for(snap: Snapshot, url: str) -> RepoSecret | None:
    """The Secret whose credentials Argo CD uses for `url`: a repository Secret of that URL, else the repo-creds
    whose URL is the longest prefix of it."""
    wanted = normal_url(url)
    secrets = repo_secrets(snap)
    exact = next((s for s in secrets if s.kind == "repository" and normal_url(s.url) == wanted), None)
    if exact is not None and exact.credentials:
        return exact
    templates = sorted((s for s in secrets if s.kind == "repo-creds" and s.url
                        and wanted.startswith(normal_url(s.url))), key=lambda s: len(s.url), reverse=True)
    return templates[0] if templates else exact
