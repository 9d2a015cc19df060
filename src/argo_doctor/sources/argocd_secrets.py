"""What an Argo CD repository, repo-creds or cluster Secret says in public, derived before its values become
fingerprints: the fields Argo CD itself shows (`argocd repo list`, `argocd cluster list`: url, server, name, project…),
which ways a cluster Secret authenticates, and when its credentials expire (a bearer token's JWT `exp`, a client
certificate's NotAfter). No credential, nor any part of one, is kept."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

SECRET_TYPE = "argocd.argoproj.io/secret-type"
TYPES = ("repository", "repo-creds", "cluster")
KEY = "argocdPublic"
"""The key a Secret object carries its public facts under, in a snapshot and in a redacted bundle."""
FIELDS = ("url", "type", "name", "project", "server", "namespaces", "shard", "clusterResources", "proxy")
MAX_TOKEN = 64 << 10
"""A bearer token longer than this is not decoded."""


def public_facts(obj: dict[str, Any], clean: Callable[[str], str]) -> dict[str, Any] | None:
    """The public facts of an Argo CD Secret (each text passed through `clean`, which removes credentials a URL may
    embed); None for any other object. A Secret already redacted keeps the facts it carries."""
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    kind = labels.get(SECRET_TYPE) if isinstance(labels, dict) else None
    if kind not in TYPES:
        return None
    if isinstance(obj.get(KEY), dict):  # a bundle redacted before: its facts, cleaned again, never trusted raw
        return {str(k): clean(v) if isinstance(v, str) else [clean(str(x)) for x in v] if isinstance(v, list) else v
                for k, v in obj[KEY].items() if isinstance(v, str | list | int | bool)}
    facts: dict[str, Any] = {}
    for key in FIELDS:
        value = _plain(obj, key)
        if value:
            facts[key] = clean(value)
    if kind == "cluster":
        facts.update(_cluster_auth(_plain(obj, "config"), clean))
    return facts


def _plain(obj: dict[str, Any], key: str) -> str:
    """A Secret value as text (`stringData`, else base64 `data`); "" when absent or not decodable."""
    plain = obj.get("stringData")
    if isinstance(plain, dict) and isinstance(plain.get(key), str):
        return str(plain[key])
    data = obj.get("data")
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return ""


def _cluster_auth(config_text: str, clean: Callable[[str], str]) -> dict[str, Any]:
    """How a cluster Secret's `config` authenticates, and when its token or client certificate expires."""
    try:
        config = json.loads(config_text) if config_text else {}
    except ValueError:
        return {"auth": ["unreadable config"]}
    if not isinstance(config, dict):
        return {}
    auth: list[str] = []
    facts: dict[str, Any] = {}
    token = config.get("bearerToken")
    if isinstance(token, str) and token:
        auth.append("bearerToken")
        expiry = _token_expiry(token)
        if expiry is not None:
            facts["tokenExpiresAt"] = expiry
    if config.get("username") or config.get("password"):
        auth.append("basic")
    tls = config.get("tlsClientConfig")
    if isinstance(tls, dict) and tls.get("certData"):
        auth.append("clientCertificate")
        not_after = _certificate_expiry(str(tls["certData"]))
        if not_after is not None:
            facts["certNotAfter"] = not_after
    exec_config = config.get("execProviderConfig")
    if isinstance(exec_config, dict):
        auth.append("execProvider")
        args = exec_config.get("args")
        facts["execCommand"] = clean(" ".join(str(p) for p in [exec_config.get("command") or "",
                                                                 *(args if isinstance(args, list) else [])] if p))
    aws = config.get("awsAuthConfig")
    if isinstance(aws, dict):
        auth.append("awsAuthConfig")
        facts["awsClusterName"] = clean(str(aws.get("clusterName") or ""))
        if aws.get("roleARN"):
            facts["awsRoleARN"] = clean(str(aws["roleARN"]))
    facts["auth"] = auth
    return facts


def _token_expiry(token: str) -> str | None:
    """The `exp` of a JWT bearer token (its payload read without verifying, never kept), as RFC 3339; None for a
    token that is no JWT or has no expiry (a legacy ServiceAccount token)."""
    parts = token.split(".")
    if len(token) > MAX_TOKEN or len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        exp = payload.get("exp") if isinstance(payload, dict) else None
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            return datetime.fromtimestamp(exp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (binascii.Error, ValueError, OverflowError, OSError):
        return None
    return None


def _certificate_expiry(cert_data: str) -> str | None:
    """The NotAfter of the first certificate of a base64 PEM (`tlsClientConfig.certData`); None when unreadable.
    cryptography is imported here only: a scan that meets no client certificate does not load it."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(cert_data, validate=True))
    except (binascii.Error, ValueError):
        return None
    return cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
