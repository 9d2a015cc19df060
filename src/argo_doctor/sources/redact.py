"""Keep secret values and terminal control sequences out of every output.

`clean` is the one function every outgoing text passes through: it replaces the Secret values a
snapshot holds (`SecretScrubber`), then credential patterns (`redact_text`), and for human-oriented
formats strips control characters (`printable`). It walks whole outputs (strings, lists, dicts,
dataclasses) so that a reporter or command hands it what it is about to print.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_Repl = str | Callable[[re.Match[str]], str]

PLACEHOLDER = "<redacted>"
VALUE_PLACEHOLDER = "<redacted secret value>"

_B64 = "A-Za-z0-9+/"
_NOT_REDACTED = r"(?!<redacted)"  # a placeholder already in place is left alone (redaction is idempotent)


def _credential_like(value: str) -> bool:
    """Random-looking: a digit or a base64 sign with 8+ characters, or mixed case with 16+."""
    if len(value) < 8:
        return False
    if any(c.isdigit() or c in "+/=" for c in value):
        return True
    return len(value) >= 16 and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _random_base64(value: str) -> bool:
    """Upper case, lower case and digits all present: base64 of random bytes, not a word or a hex digest."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


_PUBLIC_BASE64 = ("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", "AAAA")  # a PEM certificate; an SSH public key


def _base64_run(match: re.Match[str]) -> str:
    run = match.group(0)
    return "<redacted base64>" if _random_base64(run) and not run.startswith(_PUBLIC_BASE64) else run


def _base64_line(match: re.Match[str]) -> str:
    return match.group(1) + "<redacted base64>" if _random_base64(match.group(2)) else match.group(0)


AUTH_SCHEMES = (
    "bearer|basic|token|digest|negotiate|ntlm|apikey|api-key|key|hoba|mutual|vapid|dpop|oauth|jwt|ssws|splunk"
    "|aws4-hmac-sha256|gitlab-ci-token|scram-sha-1|scram-sha-256"
)
_SCHEME = re.compile(rf"(?i:{AUTH_SCHEMES})|[A-Z][A-Za-z0-9-]*")


def _authorization(match: re.Match[str]) -> str:
    """`Authorization: <scheme> <credentials>` with any scheme; a lone value when it looks random."""
    head, scheme, credentials = match.group(1), match.group(2), match.group(3)
    if scheme and _SCHEME.fullmatch(scheme.strip()):
        return f"{head}{scheme}{PLACEHOLDER}"
    if scheme is None and _credential_like(credentials):
        return f"{head}{PLACEHOLDER}"
    return match.group(0)


_REFERENCE = re.compile(r"\$(?:[A-Za-z_][\w.-]*|\{[^}]*\}|\([^)]*\))")
_LITERALS = frozenset({"", "true", "false", "null", "nil", "none", "yes", "no"})
_RESOURCE_PATH = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*(?:/[a-z0-9]+(?:[-.][a-z0-9]+)*)*")


def _not_a_value(value: str) -> bool:
    """A reference to where the credential is (`$dex.github.clientSecret`, `${TOKEN}`) or a literal
    such as `true` or `null`: nothing to hide."""
    return value.lower() in _LITERALS or bool(_REFERENCE.fullmatch(value))


def _resource_like(value: str) -> bool:
    """A Kubernetes name or `namespace/name` (`argocd-repo-creds`, `monitoring/grafana`), not hex or a UUID."""
    return (bool(_RESOURCE_PATH.fullmatch(value)) and any(c in "-./" for c in value)
            and any("g" <= c <= "z" for c in value))


def _password_value(match: re.Match[str]) -> str:
    """Any value under a password-like name, but a reference or a literal."""
    if _not_a_value(match.group(4)):
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{match.group(3) or ''}{PLACEHOLDER}"


def _secret_value(match: re.Match[str]) -> str:
    """A value under a secret/token/key-like name: credentials, or any value after `=` or a JSON
    colon, except a Kubernetes resource name (`secret=argocd-repo-creds`, `/Secret:monitoring/grafana`),
    a short number, a reference or a literal; and anything under OAuth's `client_secret`."""
    key, sep, quote, value = match.group(1), match.group(2), match.group(3), match.group(4)
    if _not_a_value(value):
        return match.group(0)
    if not _ANY_VALUE_KEY.search(key):
        if _resource_like(value) or (value.isdigit() and len(value) < 8):
            return match.group(0)
        if not (("=" in sep or '"' in sep) and len(value) >= 4) and not _credential_like(value):
            return match.group(0)
    return f"{key}{sep}{quote}{PLACEHOLDER}"


def _json_secret_value(match: re.Match[str]) -> str:
    """Any value of a JSON field named like a secret, but a reference, a literal or a resource name."""
    key, value = match.group(2), match.group(4)
    if _not_a_value(value) or (_resource_like(value) and not _ANY_VALUE_KEY.search(key)):
        return match.group(0)
    return f"{match.group(1)}{PLACEHOLDER}"


_ANY_VALUE_KEY = re.compile(r"(?i)client[_.-]?secret$|secret[_.-]?(?:access[_.-]?)?key$|webhook[_.-]?secret$")
_KEY_END = r"(?![A-Za-z0-9])"
_SEP = r"(\\*[\"']?[ \t]*[=:][ \t]*\[?)"  # `=`, `: `, `":` (also JSON-escaped in a string: `\":`), Go's `:[`

_PATTERNS: tuple[tuple[re.Pattern[str], _Repl], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
        "<redacted private key>",
    ),
    # the end of a key whose BEGIN line is not in the text (the last lines of a log), with the body before it
    (
        re.compile(
            rf"(?:(?:^|(?<=\s)|(?<=\\n))[{_B64}]{{4,}}={{0,2}}(?:\s|\\n)+){{0,2}}-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
        "<redacted private key>",
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), "<redacted jwt>"),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "<redacted github token>"),
    (re.compile(r"\b(?:glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})"),
     "<redacted token>"),
    # an AWS key id, and the secret access key written right after it (`AKIA… wJalr…`, `AKIA…:wJalr…`)
    (
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b(?:([\s\"',:;=|\\]{1,8})[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?"),
        lambda m: "<redacted aws key id>" + (f"{m.group(1)}<redacted aws secret>" if m.group(1) else ""),
    ),
    # a base64 run as long as a PEM body line (64) or longer, of random bytes: a key or secret blob
    (re.compile(rf"(?<![{_B64}_.-])[{_B64}]{{60,}}={{0,2}}(?![{_B64}=_.-])"), _base64_run),
    # a log line that is nothing but base64 (after its timestamp): e.g. the last line of a PEM body
    (
        re.compile(
            rf"(?m)^([ \t]*(?:\d{{4}}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)\s+)?)([{_B64}]{{16,}}={{0,2}})[ \t\r]*$"
        ),
        _base64_line,
    ),
    (
        re.compile(
            r"(?i)((?<![A-Za-z0-9])(?:proxy-)?authorization\\*[\"']?\s*[=:]\s*\[?\\*[\"']?)"
            rf"{_NOT_REDACTED}([A-Za-z][A-Za-z0-9-]*\s+)?{_NOT_REDACTED}([^\s\"'\],;\\]+)"
        ),
        _authorization,
    ),
    (
        # a credential after Bearer/Basic anywhere, when it is not a word ("basic authentication")
        re.compile(r"\b((?i:bearer|basic))\s+(?=[A-Za-z0-9._~+/=-]*(?:[0-9+/=]|[A-Z][a-z]|[a-z][A-Z]))"
                   r"[A-Za-z0-9._~+/=-]{12,}"),
        r"\1 <redacted>",
    ),
    # a password in a URL: `scheme://user:password@host`, the password possibly holding `/` (not a `:port/`)
    (re.compile(r"(://[^/\s:@\"']+:)(?!\d+(?:/|$))" + _NOT_REDACTED + r"[^@\s\"']+@"), r"\1<redacted>@"),
    # password-like names: any value, quoted, escaped-quoted or bare (`password="x"`, `DB_PASSWORD=x`,
    # `pgpassword: x`, `{\"password\":\"x\"}` inside a JSON-escaped log message)
    (
        re.compile(
            r"(?i)((?<![A-Za-z0-9])[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd)" + _KEY_END + ")"
            + _SEP + r"(\\*[\"'])?" + _NOT_REDACTED + r"((?(3)(?:(?!\3).)*|[^\s,;&\"'}\]\\]+))"
        ),
        _password_value,
    ),
    # secret/token/key-like names: see _secret_value
    (
        re.compile(
            r"((?<![A-Za-z0-9])[A-Za-z0-9_.-]*"
            r"(?i:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|\bauth)" + _KEY_END + ")"
            + _SEP + r"(\\*[\"']?)" + _NOT_REDACTED + r"([A-Za-z0-9+/._~=:!@#$%^*-]+)"
        ),
        _secret_value,
    ),
    # a JSON field named like a secret, possibly JSON-escaped: any value
    (
        re.compile(
            r"(?i)(\\*\"([A-Za-z0-9_.-]*(?:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
            r"identitytoken))\\*\"\s*:\s*(\\*\"))" + _NOT_REDACTED + r"((?:(?!\3).)*)"
        ),
        _json_secret_value,
    ),
    (re.compile(r"(?i)(\\*\"auth\\*\"\s*:\s*(\\*\"))" + _NOT_REDACTED + r"(?:(?!\2).)*"), r"\1<redacted>"),
    # the current value of a chart setting named like a credential, as helm-check words it:
    # `set adminPassword (now "…")`, `set auth.token to something other than "x" (already "…")`
    (
        re.compile(
            r"(?i)((?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
            r"credentials?)(?![A-Za-z0-9])[^()\n]{0,80}?\((?:now|already) )" + _NOT_REDACTED
            + r"(\"(?:[^\"\\]|\\.)*\"|[^()\s]+)(?=\))"
        ),
        r"\1<redacted>",
    ),
)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


_TRIGGER = re.compile(
    r"(?i)pass|pwd|secret|token|key|credential|auth|bearer|basic|-----|eyJ|gh[pousr]_|github_pat_|glpat-|xox[abprs]-"
    rf"|AIza|AKIA|ASIA|://|[{_B64}]{{16}}"
)
"""Something every pattern needs: a text without it is returned as it is, without running them all."""


def redact_text(text: str) -> str:
    """Replace every secret-looking value in `text` with a placeholder."""
    if not _TRIGGER.search(text):
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


_CONTROL_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, clear screen, colours
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS…: title, clipboard
    r"|\x1b[ -/]*[0-~]?"  # any other escape
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without terminal control sequences and C0/C1 control characters (newline and tab stay)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub("", _CONTROL_SEQUENCE.sub("", text))


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
DOCKER_CONFIG_KEYS = frozenset({".dockerconfigjson", ".dockercfg"})


def _docker_credentials(text: str) -> list[str]:
    """From a `.dockerconfigjson`/`.dockercfg` value: each `auth` (as stored and decoded, `user:password`),
    each password and each identity or registry token."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    registries = doc.get("auths", doc) if isinstance(doc, dict) else None
    found: list[str] = []
    for entry in registries.values() if isinstance(registries, dict) else ():
        if not isinstance(entry, dict):
            continue
        for key in ("auth", "password", "identitytoken", "registrytoken"):
            value = entry.get(key)
            if isinstance(value, str):
                found.append(value)
        auth = entry.get("auth")
        if isinstance(auth, str):
            pair = _decoded(auth).decode("utf-8", "replace")
            found.extend((pair, pair.partition(":")[2]))
    return found


def secret_values(obj: dict[str, Any]) -> list[str]:
    """The values of a Secret worth scrubbing from output, when long enough to mean something: each
    whole value as stored (base64 under `data`), decoded, and base64-encoded; each line of a multi-line
    one (a PEM body, a config file); and the credentials inside a registry config."""
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
            raw = _decoded(value) if decode else str(value).encode()
            text = raw.decode("utf-8", "replace")
            parts = [str(value), text, base64.b64encode(raw).decode(), *text.splitlines()]
            if name in DOCKER_CONFIG_KEYS:
                parts.extend(_docker_credentials(text))
            found.update(p.strip() for p in parts if len(p.strip()) >= MIN_SECRET_LENGTH)
    return sorted(found)


class SecretScrubber:
    """Remembers the Secret values of a snapshot (in memory only) and removes them from any text."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._by_prefix: dict[str, tuple[str, ...]] | None = None

    def add_values(self, values: list[str]) -> None:
        """Remember values returned by `secret_values`."""
        self._values.update(values)
        self._by_prefix = None

    def scrub(self, text: str) -> str:
        """`text` with every remembered value replaced, the longest one where several start at the same
        place. A value that begins or ends with a letter or digit is replaced only where it is not part of
        a longer word (a username `deploy` leaves "deployed" alone). One pass over the text, whatever
        the number of values: they are indexed by their first MIN_SECRET_LENGTH characters."""
        if not self._values or len(text) < MIN_SECRET_LENGTH:
            return text
        index = self._index()
        parts: list[str] = []
        start = i = 0
        last = len(text) - MIN_SECRET_LENGTH
        while i <= last:
            for value in index.get(text[i:i + MIN_SECRET_LENGTH], ()):
                if text.startswith(value, i) and _bounded(text, i, value):
                    parts += (text[start:i], VALUE_PLACEHOLDER)
                    i = start = i + len(value)
                    break
            else:
                i += 1
        return "".join((*parts, text[start:])) if parts else text

    def _index(self) -> dict[str, tuple[str, ...]]:
        if self._by_prefix is None:
            index: dict[str, list[str]] = {}
            for value in sorted(self._values, key=len, reverse=True):
                index.setdefault(value[:MIN_SECRET_LENGTH], []).append(value)
            self._by_prefix = {prefix: tuple(values) for prefix, values in index.items()}
        return self._by_prefix


def _bounded(text: str, at: int, value: str) -> bool:
    """Whether `value` at `at` in `text` is not the middle of a word."""
    end = at + len(value)
    if value[0].isalnum() and at > 0 and text[at - 1].isalnum():
        return False
    return not (value[-1].isalnum() and end < len(text) and text[end].isalnum())


def redact(text: str, scrubber: SecretScrubber | None = None) -> str:
    """`text` without anything that looks like a credential and without the snapshot's Secret values. The patterns
    run first, so that a Secret value replaced inside a URL or a header cannot hide the rest of the credential from
    them, and again when the scrubber changed the text."""
    done = redact_text(text)
    if scrubber is None:
        return done
    scrubbed = scrubber.scrub(done)
    return done if scrubbed == done else redact_text(scrubbed)


def clean(value: T, scrubber: SecretScrubber | None = None, *, human: bool = False) -> T:
    """A copy of an output (a string, or lists, tuples, dicts and dataclasses of them) with every
    string passed through `redact`, and through `printable` when `human` (table, markdown, text;
    JSON keeps control characters, which its encoder escapes)."""
    cache: dict[str, str] = {}

    def text(item: str) -> str:
        done = cache.get(item)
        if done is None:
            done = redact(item, scrubber)
            cache[item] = done = printable(done) if human else done
        return done

    def walk(item: Any) -> Any:
        """`item` itself when nothing in it changes, else a copy (dataclasses through `replace`)."""
        if isinstance(item, str) and not isinstance(item, enum.Enum):
            return text(item)
        if isinstance(item, list | tuple):
            items = [walk(i) for i in item]
            if all(a is b for a, b in zip(items, item, strict=True)):
                return item
            if isinstance(item, list):
                return items
            return type(item)(*items) if hasattr(item, "_fields") else tuple(items)  # a NamedTuple keeps its type
        if isinstance(item, dict):
            pairs = [(walk(k), walk(v)) for k, v in item.items()]
            unchanged = all(a is k and b is v for (a, b), (k, v) in zip(pairs, item.items(), strict=True))
            return item if unchanged else dict(pairs)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            changes = {}
            for f in dataclasses.fields(item):
                if f.init:
                    old = getattr(item, f.name)
                    new = walk(old)
                    if new is not old:
                        changes[f.name] = new
            return dataclasses.replace(item, **changes) if changes else item
        return item

    result: T = walk(value)
    return result


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
