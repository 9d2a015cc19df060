"""The check behind `argo-doctor github-app check`: ask GitHub for an installation token the way Argo CD does.

The JWT is built as bradleyfalzon/ghinstallation builds it for Argo CD (iat = now − 30 s truncated
to the second, exp = iat + 2 min, iss = the app id, RS256), optionally with the clock shifted to
sign as a skewed node would. The result says what GitHub answered, GitHub's own message (which
Argo CD never logs), how far the local clock is from GitHub's (read from the response `Date`,
bounded by the round trip), and the JWT's window as GitHub saw it. The token GitHub returns and
the private key are never printed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import jwt
import msgspec
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from argo_doctor.errors import ConfigError
from argo_doctor.github import DEFAULT_API_URL
from argo_doctor.github.jwt_window import IAT_BACKDATE, LIFETIME, Window
from argo_doctor.sources.files import decode_json

TIMEOUT = 15.0
MAX_ANSWER_BYTES = 1 << 20


@dataclass(frozen=True)
class SignedJWT:
    """An app JWT and its claims (the JWT itself is a credential: never print it)."""

    token: str
    iat: int
    exp: int
    iss: str


def load_private_key(pem: bytes) -> Any:
    """The app's RSA private key; ConfigError (without the key's content) when it is not one."""
    try:
        return load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"the private key is not an unencrypted PEM RSA key ({type(exc).__name__})") from None


def sign_app_jwt(app_id: str, key: Any, now: float) -> SignedJWT:
    """The JWT ghinstallation signs at `now` (seconds since the epoch, by the signer's clock)."""
    iat = math.floor(now - IAT_BACKDATE)
    exp = iat + LIFETIME
    token = jwt.encode({"iat": iat, "exp": exp, "iss": app_id}, key, algorithm="RS256")
    return SignedJWT(token, iat, exp, app_id)


@dataclass(frozen=True)
class CheckResult:
    """What `check` learned."""

    url: str
    status: int | None
    github_message: str | None
    clock_offset: float
    jwt_iat: int
    jwt_exp: int
    server_offset: float | None
    """Local clock − GitHub's clock, from the response Date header (None without one)."""
    server_offset_bound: float | None
    error: str | None = None

    @property
    def iat_in(self) -> float | None:
        """Seconds from GitHub's now to the JWT's iat, as GitHub saw it."""
        return None if self.server_offset is None else self.jwt_iat - self._github_now

    @property
    def exp_in(self) -> float | None:
        """Seconds from GitHub's now to the JWT's exp, as GitHub saw it."""
        return None if self.server_offset is None else self.jwt_exp - self._github_now

    @property
    def _github_now(self) -> float:
        # the JWT was signed at local time t + clock_offset; GitHub's clock read t - server_offset
        return self.jwt_iat + IAT_BACKDATE - self.clock_offset - (self.server_offset or 0.0)

    @property
    def verdict(self) -> str:
        """One sentence: what the answer means."""
        if self.error is not None:
            return f"GitHub could not be reached: {self.error}"
        if self.status == 201:
            return "GitHub issued an installation token: these credentials work with this clock."
        message = self.github_message or ""
        if self.status == 401 and ("'exp'" in message or "'iat'" in message):
            window = Window(self.clock_offset + (self.server_offset or 0.0))
            return (
                f"GitHub rejected the JWT's time claims: {window.explain()}. The signing clock, not the "
                "credentials, is the problem."
            )
        if self.status == 401:
            return "GitHub rejected the JWT itself (wrong private key for this app, or wrong app id)."
        if self.status == 404:
            return "GitHub does not know this installation for this app (wrong installation id, or app uninstalled)."
        if self.status == 403:
            return "GitHub refused the request (app suspended, or rate limited)."
        return f"Unexpected answer from GitHub: HTTP {self.status}."


def check(
    app_id: str, installation_id: str, private_key_pem: bytes, api_url: str = DEFAULT_API_URL,
    clock_offset: float = 0.0, client: httpx.Client | None = None,
) -> CheckResult:
    """Request an installation token with a JWT signed `clock_offset` seconds off the local clock."""
    key = load_private_key(private_key_pem)
    signed = sign_app_jwt(app_id, key, time.time() + clock_offset)
    url = f"{api_url.rstrip('/')}/app/installations/{installation_id}/access_tokens"
    headers = {
        "Authorization": f"Bearer {signed.token}",
        "Accept": "application/vnd.github+json",
        "User-Agent": "argo-doctor",
    }
    own = client is None
    http = client or httpx.Client(timeout=TIMEOUT)
    sent = time.time()
    try:
        with http.stream("POST", url, headers=headers) as response:
            body = _bounded_body(response)
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        return CheckResult(url, None, None, clock_offset, signed.iat, signed.exp, None, None, reason)
    finally:
        if own:
            http.close()
    received = time.time()
    offset, bound = _server_offset(response.headers.get("date"), sent, received)
    return CheckResult(url, response.status_code, _message(response.status_code, body), clock_offset, signed.iat,
                       signed.exp, offset, bound)


def _bounded_body(response: httpx.Response) -> bytes:
    """What arrives of the answer within TIMEOUT seconds, at most MAX_ANSWER_BYTES decompressed: GitHub's is a few
    hundred bytes, and `--api-url` may name a server that never stops sending."""
    parts: list[bytes] = []
    size = 0
    until = time.monotonic() + TIMEOUT
    for chunk in response.iter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= MAX_ANSWER_BYTES or time.monotonic() > until:
            break
    return b"".join(parts)[:MAX_ANSWER_BYTES]


def _server_offset(date: str | None, sent: float, received: float) -> tuple[float | None, float | None]:
    if not date:
        return None, None
    try:
        server = parsedate_to_datetime(date).timestamp() + 0.5  # Date is truncated to the second
    except (TypeError, ValueError):
        return None, None
    return (sent + received) / 2 - server, (received - sent) / 2 + 0.5


def _message(status: int, body: bytes) -> str | None:
    """GitHub's message, never the token of a successful answer."""
    try:
        doc = decode_json(body)
    except msgspec.DecodeError:
        doc = None
    if status == 201:
        if doc is None:
            return None
        expires = doc.get("expires_at") if isinstance(doc, dict) else None
        return f"installation token issued (expires {expires})" if expires else "installation token issued"
    if doc is None:
        return body[:300].decode("utf-8", "replace") or None
    return str(doc.get("message")) if isinstance(doc, dict) and doc.get("message") else None
