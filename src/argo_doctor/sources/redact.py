"""Keep secret values out of every output: Secret data, tokens, JWTs and private keys."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
        "<redacted private key>",
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), "<redacted jwt>"),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "<redacted github token>"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "<redacted aws key id>"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 <redacted>"),
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), r"\1<redacted>@"),
    # password-like keys: any value, quoted or not (`password="x"`, `DB_PASSWORD=x`, `pgpassword: x`)
    (
        re.compile(
            r"(?i)(?<![A-Za-z0-9])([A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd))"
            r"(\s*[=:]\s*|\"\s*:\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&\"'}]+)"
        ),
        r"\1\2<redacted>",
    ),
    # secret/token/key-like keys: only values that look like credentials (8+ characters with a
    # digit, or 20+ with an upper-case letter or a base64 sign), so that prose such as
    # "installation id 1's token: received ..." and resource names stay readable
    (
        re.compile(
            r"(?<![A-Za-z0-9])([A-Za-z0-9_.-]*(?i:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?))"
            r"(\s*[=:]\s*|\"\s*:\s*)([\"']?)"
            r"((?=[A-Za-z0-9+/._~=-]*\d)[A-Za-z0-9+/._~=-]{8,}|(?=[a-z0-9._~-]*[A-Z+/=])[A-Za-z0-9+/._~=-]{20,})"
        ),
        r"\1\2\3<redacted>",
    ),
    # a JSON field named like a secret: any value
    (
        re.compile(r'(?i)("[A-Za-z0-9_.-]*(?:secret|token|api[_-]?key|access[_-]?key|private[_-]?key)"\s*:\s*")[^"]*"'),
        r'\1<redacted>"',
    ),
)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def redact_text(text: str) -> str:
    """Replace every secret-looking value in `text` with a placeholder."""
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def fingerprint(value: str | bytes) -> str:
    """A short, non-reversible fingerprint for comparing secret values without showing them."""
    raw = value.encode() if isinstance(value, str) else value
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:16]


def _decoded(value: Any) -> bytes:
    text = value if isinstance(value, str) else str(value)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text.encode()


PUBLIC_SECRET_KEYS = frozenset({
    "url", "type", "name", "project", "githubAppID", "githubAppInstallationID", "githubAppEnterpriseBaseUrl",
    "server", "namespaces", "clusterResources", "enableOCI", "insecure", "forceHttpBasicAuth", "enableLfs",
    "proxy", "noProxy",
})
"""Fields of Argo CD repository and cluster Secrets that Argo CD itself shows (`argocd repo list`)."""
MIN_SECRET_LENGTH = 6


def secret_values(obj: dict[str, Any]) -> list[str]:
    """The values of a Secret worth scrubbing from output: each whole value, and each line of a
    multi-line one (a PEM body, a config file), when long enough to mean something."""
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
        return []
    found: set[str] = set()
    for key, decode in (("data", True), ("stringData", False)):
        values = obj.get(key)
        if not isinstance(values, dict):
            continue
        for name, value in values.items():
            if name in PUBLIC_SECRET_KEYS or value is None:
                continue
            text = _decoded(value).decode("utf-8", "replace") if decode else str(value)
            found.update(p.strip() for p in (text, *text.splitlines()) if len(p.strip()) >= MIN_SECRET_LENGTH)
    return sorted(found)


class SecretScrubber:
    """Remembers the Secret values of a snapshot (in memory only) and removes them from any text."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def add_values(self, values: list[str]) -> None:
        """Remember values returned by `secret_values`."""
        self._values.update(values)

    def scrub(self, text: str) -> str:
        """`text` with every remembered value replaced, longest first."""
        if not self._values or not text:
            return text
        for value in sorted((v for v in self._values if v in text), key=len, reverse=True):
            text = text.replace(value, "<redacted secret value>")
        return text


def redact_object(obj: dict[str, Any]) -> dict[str, Any]:
    """Redact a Secret in place (values become fingerprints of the decoded bytes) and return it."""
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
        return obj
    for key, decode in (("data", True), ("stringData", False)):
        values = obj.get(key)
        if isinstance(values, dict):
            obj[key] = {
                k: f"<redacted {fingerprint(_decoded(v) if decode else str(v))}>" for k, v in values.items()
            }
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        annotations[LAST_APPLIED] = "<redacted>"
    return obj
