"""Keep secret values and terminal control sequences out of every output.

`clean` is the one function every outgoing text passes through: it replaces the Secret values a
snapshot holds (`SecretScrubber`: each value, the values inside a JSON or YAML one, and the forms they take in
logs), then credential patterns (`redact_text`), and for human-oriented formats strips control characters
(`printable`). A text is redacted as it is and as it is shown, colour codes removed, so that neither form gives a
secret away. It walks whole outputs (strings, lists, dicts, dataclasses) so that a reporter or command hands it
what it is about to print. `scrub_dsn` removes the password from a PostgreSQL connection string and from the
errors that quote one.

`Redactor` is the redactor of bundles written to disk (`collect`, `redact`): Secret values become
fingerprints, the places that hold credentials by name (env values, ConfigMap data, annotations, Helm
values and parameters) are masked, every other string goes through the same patterns and known Secret
values as `clean`, and it counts what it replaced by kind of secret, never keeping a value.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote, quote_plus

import yaml

from argo_doctor.sources.argocd_secrets import KEY as PUBLIC_KEY
from argo_doctor.sources.argocd_secrets import public_facts

T = TypeVar("T")
_Repl = str | Callable[[re.Match[str]], str]

PLACEHOLDER = "<redacted>"
VALUE_PLACEHOLDER = "<redacted secret value>"

_B64 = "A-Za-z0-9+/"
_NOT_REDACTED = r"(?!<redacted)"  # a placeholder already in place is left alone (redaction is idempotent)
_BARE = r"[^\s,;&\"'}\]\\]"
"""A character of a bare value (a `}` inside one is taken too, when more of it follows)."""


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
    """A value under a secret/token/key-like name: credentials, or any value after `=` or a JSON colon, or any bare
    value long enough under a setting's name (`webhook.github.secret: x`, `X-Api-Key: x`, not prose's `token: expired`
    or helm-check's advice `set apiToken: "static"`), except a Kubernetes resource name (`secret=argocd-repo-creds`,
    `/Secret:monitoring/grafana`), a short number, a reference or a literal; and anything under OAuth's
    `client_secret`."""
    key, sep, quote, value = match.group(1), match.group(2), match.group(3), match.group(4)
    if _not_a_value(value):
        return match.group(0)
    if not _ANY_VALUE_KEY.search(key):
        if _resource_like(value) or (value.isdigit() and len(value) < 8):
            return match.group(0)
        if (not (("=" in sep or '"' in sep) and len(value) >= 4) and not _credential_like(value)
                and not (_SETTING_NAME.search(key) and not quote and len(value) >= MIN_SECRET_LENGTH)):
            return match.group(0)
    return f"{key}{sep}{quote}{PLACEHOLDER}"


def _json_secret_value(match: re.Match[str]) -> str:
    """Any value of a JSON field named like a secret, but a reference, a literal or a resource name."""
    key, value = match.group(2), match.group(4)
    if _not_a_value(value) or (_resource_like(value) and not _ANY_VALUE_KEY.search(key)):
        return match.group(0)
    return f"{match.group(1)}{PLACEHOLDER}"


_ANY_VALUE_KEY = re.compile(r"(?i)client[_.-]?secret$|secret[_.-]?(?:access[_.-]?)?key$|webhook[_.-]?secret$")
_SETTING_NAME = re.compile(r"[A-Za-z0-9][._-][A-Za-z0-9]|[a-z][A-Z]")
"""A name of a setting or a header (`webhook.github.secret`, `X-Api-Key`, `clientSecret`), not a word of prose."""


_FLAG_TYPES = frozenset({"string", "strings", "stringArray", "stringToString"})
"""What a Go program's usage text writes after a flag in place of its value (`--auth-token string`)."""


def _flag_value(match: re.Match[str]) -> str:
    """`--password VALUE`: the value, but a reference, a literal or the type a usage text names."""
    value = match.group(3)
    return match.group(0) if _not_a_value(value) or value in _FLAG_TYPES else match.group(1) + PLACEHOLDER


def _query_value(match: re.Match[str]) -> str:
    """A credential in a URL's query (`?sig=`, `&code=`, `?token=`): any value but a short number or a reference."""
    value = match.group(2)
    if _not_a_value(value) or (value.isdigit() and len(value) < 8):
        return match.group(0)
    return match.group(1) + PLACEHOLDER


_COOKIE_PAIR = re.compile(r"([A-Za-z0-9!#$%&*+.^_`|~-]+=)" + _NOT_REDACTED + r"[^;,\s\"'\]\\]+")


def _cookies(match: re.Match[str]) -> str:
    """The values of a `Cookie` header, or of the cookie a `Set-Cookie` sets (its attributes stay)."""
    head, pairs = match.group(1), match.group(2)
    if head[:4].lower() != "set-":
        return head + _COOKIE_PAIR.sub(r"\1<redacted>", pairs)
    return head + (_COOKIE_PAIR.sub(r"\1<redacted>", pairs, count=1) if _COOKIE_PAIR.match(pairs) else pairs)


_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})


def _header_value(match: re.Match[str]) -> str:
    """The value of a `name:`/`value:` pair (a Notifications service's headers, an env list in text) whose name
    says it is a credential, but a literal or a reference (`Bearer $events-bridge-token`)."""
    name, words = match.group("name"), match.group("value").split()
    if not (_secret_name(name) or name.lower() in _CREDENTIAL_HEADERS) or not words or _not_a_value(words[-1]):
        return match.group(0)
    text, start = match.group(0), match.start()
    return text[: match.start("value") - start] + PLACEHOLDER + text[match.end("value") - start:]


_KEY_END = r"(?![A-Za-z0-9])"
_SEP = r"(\\*[\"']?[ \t]*[=:][ \t]*\[?)"  # `=`, `: `, `":` (also JSON-escaped in a string: `\":`), Go's `:[`

_Q = r"\\*[\"']?"  # an optional quote, also JSON-escaped


def _pair_value(word: str) -> str:
    """The value of a `name`/`value` pair: quoted, or bare words of `word` characters (`Bearer x`)."""
    return (r"(?P<quote>\\*[\"'])?" + _NOT_REDACTED
            + rf"(?P<value>(?(quote)(?:(?!(?P=quote)).)*|{word}+(?:[ \t]+{word}+)*))")


_PAIR_NAME = r"(?P<name>[A-Za-z0-9_.-]+)"
_PAIR_GAP = r"[ \t]*(?:,[ \t]*|\r?\n[ \t]*)"
"""Between the `name:` and `value:` of one entry: a comma (JSON, YAML flow), or a line break (a YAML block)."""

_TIMESTAMP = r"[ \t]*(?:\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)\s+)?"
"""The `kubectl logs --timestamps` prefix a log line may start with."""


class _Needles(NamedTuple):
    """Strings one of which every match of a pattern holds: a pattern runs only on a text that holds one (a cheap
    `in` spares the regex engine a walk over the text). With `fold`, they are lower case and looked for in the
    lower-cased text, as the pattern ignores case, after `_FOLDED_TO_ASCII`."""

    words: tuple[str, ...]
    fold: bool = False


_FOLDED_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
"""The characters beyond ASCII that the regex engine, ignoring case, takes for an ASCII letter (the dotted capital I,
the dotless i, the long s, the Kelvin sign), as that letter: `str.lower` leaves the long s and the dotless i as they
are and makes the dotted capital I two characters. A test checks every code point against the engine."""


_RUN = "<base64 run>"
"""The needle of the base64 patterns: a run of 16 base64 characters (`_BASE64_RUN`)."""
_BASE64_RUN = re.compile(rf"[{_B64}]{{16}}")

_PATTERNS: tuple[tuple[str, _Needles, re.Pattern[str], _Repl], ...] = (
    # (kind of secret, needles, pattern, replacement). No pattern tries more than one start inside a run of the
    # characters it scans (a name, a base64 run, backslashes), so that the work stays linear in the text's length.
    (
        "private-key", _Needles(("PRIVATE KEY-----",)),
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
        "<redacted private key>",
    ),
    # the end of a key whose BEGIN line is not in the text (the last lines of a log), with the body before it
    (
        "private-key", _Needles(("PRIVATE KEY-----",)),
        re.compile(
            rf"(?:(?:^|(?<=\s)|(?<=\\n))[{_B64}]{{4,}}={{0,2}}(?:\s|\\n)+){{0,2}}-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
        "<redacted private key>",
    ),
    # a JWT, looked for from the first `eyJ` at a word start of a run of base64url characters; its claims may be as
    # short as `e30` (`{}`) and its signature empty (`alg: none`)
    (
        "jwt", _Needles(("eyJ",)),
        re.compile(r"(?<![A-Za-z0-9_-])(?>([A-Za-z0-9_-]*?)\beyJ)[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{2,}+\."
                   r"[A-Za-z0-9_-]*+"),
        r"\1<redacted jwt>",
    ),
    ("token", _Needles(("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
     re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
     "<redacted github token>"),
    ("token", _Needles(("glpat-", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "AIza")),
     re.compile(r"\b(?:glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})"),
     "<redacted token>"),
    # an AWS key id, and the secret access key written right after it (`AKIA… wJalr…`, `AKIA…:wJalr…`)
    (
        "aws-key", _Needles(("AKIA", "ASIA")),
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b(?:([\s\"',:;=|\\]{1,8})[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?"),
        lambda m: "<redacted aws key id>" + (f"{m.group(1)}<redacted aws secret>" if m.group(1) else ""),
    ),
    # a base64 run as long as a PEM body line (64) or longer, of random bytes: a key or secret blob
    ("base64-blob", _Needles((_RUN,)), re.compile(rf"(?<![{_B64}_.-])[{_B64}]{{60,}}={{0,2}}(?![{_B64}=_.-])"),
     _base64_run),
    # a log line that is nothing but base64 (after its timestamp): e.g. the last line of a PEM body
    ("base64-blob", _Needles((_RUN,)), re.compile(rf"(?m)^({_TIMESTAMP})([{_B64}]{{16,}}={{0,2}})[ \t\r]*$"),
     _base64_line),
    (
        "authorization", _Needles(("authorization",), fold=True),
        re.compile(
            r"(?i)((?<![A-Za-z0-9])(?:proxy-)?authorization\\*[\"']?\s*[=:]\s*\[?\\*[\"']?)"
            rf"{_NOT_REDACTED}([A-Za-z][A-Za-z0-9-]*\s+)?{_NOT_REDACTED}([^\s\"'\],;\\]+)"
        ),
        _authorization,
    ),
    (
        # a credential after Bearer/Basic anywhere (`Bearer%20…` in a URL, `Bearer token …`), when it is not a word
        # ("basic authentication")
        "authorization", _Needles(("bearer", "basic"), fold=True),
        re.compile(r"(?:\b|(?<=%20))((?i:bearer|basic)(?:\s+|%20|\+)(?:(?i:token)\s+)?)"
                   r"(?=[A-Za-z0-9._~+/=-]*(?:[0-9+/=]|[A-Z][a-z]|[a-z][A-Z]))[A-Za-z0-9._~+/=-]{12,}"),
        r"\1<redacted>",
    ),
    # a password in a URL: `scheme://user:password@host` or `redis://:password@host`, the password possibly
    # holding `/` (not a `:port/`)
    (
        "url-password", _Needles(("://",)),
        re.compile(r"(://[^/\s:@\"']*:)(?!\d+(?:/|$))" + _NOT_REDACTED + r"(?:(?!://)[^@\s\"'])+@"),
        r"\1<redacted>@",
    ),
    # a Go MySQL driver DSN: `user:password@tcp(host:3306)/db`, `user:password@unix(/run/mysqld.sock)/db`
    (
        "url-password", _Needles(("@tcp", "@udp", "@unix(")),
        re.compile(r"(?<![A-Za-z0-9_.~!$%^&*+/:@-])([A-Za-z0-9_.-]*:)" + _NOT_REDACTED
                   + r"[A-Za-z0-9_.~!$%^&*+/:-]+@(?=(?:tcp[46]?|udp[46]?|unix)\()"),
        r"\1<redacted>@",
    ),
    # a chat webhook URL, whose path is the credential: Slack, Discord, Microsoft Teams; and a Mattermost-like
    # `/hooks/<key>` whose key looks random (GitLab's `/hooks/2` is an id)
    (
        "webhook-url", _Needles(("hooks.slack", "discord", "office.com/webhook", "office365.com/webhook"), fold=True),
        re.compile(r"(?i)((?<![A-Za-z0-9.-])(?:hooks\.slack(?:-gov)?\.com/(?:services|workflows|triggers)/"
                   r"|(?:[a-z0-9-]+\.)*discord(?:app)?\.com/api/(?:v\d+/)?webhooks/"
                   r"|[a-z0-9-]+\.webhook\.office\.com/webhookb2/|outlook\.office(?:365)?\.com/webhook/))"
                   + _NOT_REDACTED + r"[^\s\"'<>\\]+"),
        r"\1<redacted>",
    ),
    (
        "webhook-url", _Needles(("/hooks/",)),
        re.compile(r"(?<=[A-Za-z0-9])(/hooks/)(?=[a-z0-9]*[0-9])(?=[a-z0-9]*[a-z])[a-z0-9]{20,}(?![A-Za-z0-9])"),
        r"\1<redacted>",
    ),
    # a credential in a URL's query: a signature (`sig`, Azure's SAS; `X-Amz-Signature`), an OAuth `code`, any
    # `…token`, `…secret`, `…key`, password; also after a JSON-escaped `&` (`\u0026`)
    (
        "query-credential", _Needles(("sig", "code=", "token=", "secret=", "key=", "password=", "passwd=",
                                      "credential="), fold=True),
        re.compile(r"(?i)((?:[?&]|\\u0026)(?:x-(?:amz|goog)-)?(?:sig|signature|credential|code|[a-z_-]*token"
                   r"|[a-z_-]*secret|[a-z_-]*key|password|passwd)=)" + _NOT_REDACTED + r"([^&#\s\"'<>\\]+)"),
        _query_value,
    ),
    # the values of a `Cookie` header, the value of the cookie a `Set-Cookie` sets
    (
        "cookie", _Needles(("cookie",), fold=True),
        re.compile(r"(?i)((?<![A-Za-z0-9_-])(?:set-)?cookie\\*[\"']?[ \t]*[=:][ \t]*\[?\\*[\"']?)"
                   r"((?:[A-Za-z0-9!#$%&*+.^_`|~-]+=[^;,\s\"'\]\\]*(?:;[ \t]*)?)+)"),
        _cookies,
    ),
    # the value of an entry named like a credential in a list of `name`/`value` pairs (a Notifications service's
    # `headers`, an `env` list in text), the name first or last
    (
        "header-value", _Needles(("value",), fold=True),
        re.compile(r"(?i)(?<![A-Za-z0-9_-])" + _Q + "name" + _Q + r"[ \t]*[:=][ \t]*" + _Q + _PAIR_NAME + _Q
                   + _PAIR_GAP + _Q + "value" + _Q + r"[ \t]*[:=][ \t]*" + _pair_value(r"[^\s,}\]\"'\\#]")),
        _header_value,
    ),
    (
        "header-value", _Needles(("value",), fold=True),
        # a bare value without `:`, so that a try never runs past the next `value:`
        re.compile(r"(?i)(?<![A-Za-z0-9_-])" + _Q + "value" + _Q + r"[ \t]*[:=][ \t]*"
                   + _pair_value(r"[^\s,}\]\"'\\#:]") + r"(?(quote)(?P=quote))" + _PAIR_GAP
                   + _Q + "name" + _Q + r"[ \t]*[:=][ \t]*" + _Q + _PAIR_NAME + "(?![A-Za-z0-9_.-])"),
        _header_value,
    ),
    # password-like names: any value, quoted, escaped-quoted or bare (`password="x"`, `DB_PASSWORD=x`,
    # `pgpassword: x`, `{\"password\":\"x\"}` inside a JSON-escaped log message); a whole `${VAR}` reference stays
    (
        "password", _Needles(("password", "passwd", "passphrase", "pwd"), fold=True),
        re.compile(
            r"(?i)((?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd)" + _KEY_END + ")"
            + _SEP + r"(\\*[\"'])?" + _NOT_REDACTED + r"((?(3)(?:(?!\3).)*|(?:\$\{[^}\s]*\}(?!" + _BARE + ")|"
            + _BARE + r"+(?:\}+" + _BARE + "+)*)))"
        ),
        _password_value,
    ),
    # a command line flag named like a credential and its value after a space or in the next item of an argument
    # list (`--password VALUE`, `"-token", "VALUE"`), not a file (`--password /run/secrets/db`, `--password-file`) or
    # the next flag
    (
        "password", _Needles(("password", "passwd", "passphrase", "token", "secret", "apikey", "api-key"), fold=True),
        re.compile(r"(?i)((?<![A-Za-z0-9_-])--?[A-Za-z0-9-]*(?:password|passwd|passphrase|token|secret|api-?key)"
                   r"(?![A-Za-z0-9_-])(?:[ \t]+|\\*[\"'][ \t]*,[ \t]*)(\\*[\"'])?)" + _NOT_REDACTED + r"(?![-$/~.])"
                   r"((?(2)(?:(?!\2).)+|[^\s\"'\\]+))"),
        _flag_value,
    ),
    # secret/token/key-like names: see _secret_value
    (
        "secret-field", _Needles(("secret", "token", "key", "credential", "auth", "bearer"), fold=True),
        re.compile(
            r"((?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*"
            r"(?i:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|\bauth|bearer)" + _KEY_END + ")"
            + _SEP + r"(\\*[\"']?)" + _NOT_REDACTED + r"([A-Za-z0-9+/._~=:!@#$%^*-]+)"
        ),
        _secret_value,
    ),
    # a JSON field named like a secret, possibly JSON-escaped: any value
    (
        "secret-field", _Needles(("secret", "token", "key"), fold=True),
        re.compile(
            r"(?i)((?<!\\)\\*\"([A-Za-z0-9_.-]*(?:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
            r"identitytoken))\\*\"\s*:\s*(\\*\"))" + _NOT_REDACTED + r"((?:(?!\3).)*)"
        ),
        _json_secret_value,
    ),
    ("secret-field", _Needles(('"auth',), fold=True),
     re.compile(r"(?i)((?<!\\)\\*\"auth\\*\"\s*:\s*(\\*\"))" + _NOT_REDACTED + r"(?:(?!\2).)*"),
     r"\1<redacted>"),
    # the current value of a chart setting named like a credential, as helm-check words it:
    # `set adminPassword (now "…")`, `set auth.token to something other than "x" (already "…")`; an empty or
    # absent value or a boolean (`""`, `unset`, `null`, `true`, `false`, `{}`, `[]`: a switch such as
    # `config.secret.create`) holds no secret and stays
    (
        "secret-field", _Needles(("(now ", "(already "), fold=True),
        re.compile(
            r"(?i)((?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
            r"credentials?)(?![A-Za-z0-9])[^()\n]{0,80}?\((?:now|already) )" + _NOT_REDACTED
            + r"(?!(?:\"\"|unset|null|true|false|\{\}|\[\])\))(\"(?:[^\"\\]|\\.)*\"|[^()\s]+)(?=\))"
        ),
        r"\1<redacted>",
    ),
)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


_FOLDED_WORDS = tuple(dict.fromkeys(w for _, n, _, _ in _PATTERNS if n.fold for w in n.words))
_EXACT_WORDS = tuple(dict.fromkeys(w for _, n, _, _ in _PATTERNS if not n.fold for w in n.words if w != _RUN))


def _needles_in(text: str) -> frozenset[str]:
    """The needles of the patterns that `text` holds (see `_Needles`)."""
    lowered = (text if text.isascii() else text.translate(_FOLDED_TO_ASCII)).lower()
    found = [word for word in _FOLDED_WORDS if word in lowered]
    found += [word for word in _EXACT_WORDS if word in text]
    if _BASE64_RUN.search(text):
        found.append(_RUN)
    return frozenset(found)


def redact_text(text: str) -> str:
    """Replace every secret-looking value in `text` with a placeholder."""
    return _patterns(text, None)


_PG_PASSWORD = re.compile(r"(?i)(?<![A-Za-z0-9_?&])(password\s*=\s*)" + _NOT_REDACTED
                          + r"('(?:[^'\\]|\\.)*'?|[^\s']+(?:[ \t]+(?![A-Za-z_]+\s*=)[^\s']+)*)")
"""libpq's `password=` keyword, its value single-quoted with backslash escapes (unterminated too) or bare, up to the
next keyword (a bare one with spaces is an error that libpq quotes)."""
_PG_URL = re.compile(r"(?i)(postgres(?:ql)?://[^:/?#@\s]*:)" + _NOT_REDACTED + r"[^/?#\n]*@")
"""The password of a PostgreSQL URL, up to the last `@` before the path: spaces and `@` included."""
MAX_DSN = 1024
"""The longest part of a connection string a parse error's quote is taken for (a try never runs further)."""
_PG_ECHOED = re.compile(
    r"(?m)((?:invalid percent-encoded token: |unexpected spaces found in |missing \"=\" after |invalid connection "
    r"option )\")" + _NOT_REDACTED + rf"[^\n]{{0,{MAX_DSN}}}?"
    r"(?=\"(?: in connection info string|, use percent-encoded|\s*$))"
)
"""The part of a connection string that libpq's and psycopg's parse errors quote: any token of it, a password's
included (`missing "=" after "Secret99"` from `password=Hunter2 Secret99`)."""


def scrub_dsn(text: str) -> str:
    """`text` (a PostgreSQL connection string or URL, or an error message about one) without its password: libpq's
    `password=` keyword, a URL's password, the parts of the string that parse errors quote, and every credential
    pattern of `redact_text` (`?password=`, `PGPASSWORD=`)."""
    text = _PG_PASSWORD.sub(r"\1<redacted>", text)
    text = _PG_URL.sub(r"\1<redacted>@", text)
    return redact_text(_PG_ECHOED.sub(r"\1<redacted>", text))


def _patterns(text: str, counts: Counter[str] | None) -> str:
    """`text` through every pattern; each replacement counted in `counts` by kind of secret when it is given."""
    needles = _needles_in(text)
    if not needles:
        return text
    for kind, wanted, pattern, repl in _PATTERNS:
        if not needles.isdisjoint(wanted.words):
            done = pattern.sub(repl if counts is None else _counting(kind, repl, counts), text)
            if done != text:
                text = done
                needles = _needles_in(text)
    return text


def _counting(kind: str, repl: _Repl, counts: Counter[str]) -> Callable[[re.Match[str]], str]:
    """`repl` that counts the matches it changes."""
    def replace(match: re.Match[str]) -> str:
        done = repl(match) if callable(repl) else match.expand(repl)
        if done != match.group(0):
            counts[kind] += 1
        return done

    return replace


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


_ESCAPED_SEQUENCE = r"\\(?:u001[bB]|x1[bB]|033|e)\[[0-?]*[ -/]*[@-~]"
"""A CSI sequence written escaped, as a JSON log or Go's `%q` writes a colour code (`\\u001b[31m`)."""
_ESCAPED_CONTROL = re.compile(_ESCAPED_SEQUENCE)


def _shown(text: str) -> str:
    """`text` as a terminal or a log viewer shows it: without control sequences, raw or escaped."""
    shown = printable(text)
    return _ESCAPED_CONTROL.sub("", shown) if "\\" in shown and "[" in shown else shown


def fingerprint(value: str | bytes) -> str:
    """A short, non-reversible fingerprint for comparing secret values without showing them."""
    raw = value.encode() if isinstance(value, str) else value
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:16]


_FINGERPRINT = re.compile(r"sha256:[0-9a-f]{16}")


def is_fingerprint(value: Any) -> bool:
    """Whether `value` is a fingerprint as `fingerprint` writes it: a Secret value of a bundle already redacted."""
    return isinstance(value, str) and _FINGERPRINT.fullmatch(value) is not None


def _value_fingerprint(value: Any, decode: bool) -> str:
    """The fingerprint of a Secret value: of its decoded bytes under `data` (`decode`), of its text under
    `stringData`; a value that already is a fingerprint (a redacted bundle) is its own, so that the fingerprints of
    a bundle survive its redaction. (Kubernetes refuses such a value under `data`, which is not base64.)"""
    if is_fingerprint(value):
        return str(value)
    return fingerprint(_decoded(value) if decode else str(value))


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
_TIMESTAMP_VALUE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
"""A time (argocd-secret's `admin.passwordMtime`) is no credential, and scrubbing it would blank the same time
wherever it appears."""
_PUBLIC_NESTED_KEYS = PUBLIC_SECRET_KEYS | {
    "caData", "certData", "serverName", "command", "args", "apiVersion", "installHint", "clusterName", "roleARN",
    "email",
}
"""Fields inside a structured Secret value that hold no credential: a cluster Secret's `config` (its CA and client
certificates, its exec plugin's command line), a registry config's e-mail address."""
MAX_STRUCTURED = 1 << 16
"""A Secret value longer than this is not read as JSON or YAML: its lines are scrubbed, not the values inside it."""
_NESTING = 2
"""How deep values are looked for inside values (a registry `auth` inside a config inside a Secret value)."""
_YAML_ALIAS = re.compile(r"(?:^|[\s\[{,:-])[&*][^\s,\]}]", re.M)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PRINTABLE_TEXT = re.compile(r"[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")


def _structured(text: str) -> Any:
    """The JSON or YAML document a Secret value holds (an Argo CD cluster `config`, a registry config, a config
    file); None for anything else, a value too long and YAML with anchors or aliases (an expansion bomb)."""
    if len(text) > MAX_STRUCTURED or not text:
        return None
    if text[0] in "{[":
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass
    if "\n" not in text or ":" not in text or text.startswith("-----BEGIN ") or _YAML_ALIAS.search(text):
        return None
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None


def _nested(doc: Any) -> Iterator[tuple[str, str]]:
    """(key, value) of each string inside a parsed document; a list's items under the key of the list."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            stack.extend((str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((key, v) for v in item)
        elif isinstance(item, str):
            yield key, item


def _base64_text(value: str) -> str | None:
    """The text a base64 value encodes (a cluster config's `keyData`, a registry `auth`); None when it is not
    base64 of printable UTF-8."""
    if len(value) < 8 or len(value) % 4:
        return None
    try:
        text = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, ValueError):
        return None
    return text if _PRINTABLE_TEXT.fullmatch(text) else None


def _forms(value: str) -> Iterator[str]:
    """The forms a value takes in logs: URL-encoded, JSON-escaped (as Python and Go write it), base64 (also without
    padding), base64url without padding, hex."""
    raw = value.encode()
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    yield from (quote(value, safe=""), quote_plus(value, safe=""), escaped, json.dumps(value)[1:-1],
                escaped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"),
                base64.b64encode(raw).decode(), base64.b64encode(raw).decode().rstrip("="),
                base64.urlsafe_b64encode(raw).decode().rstrip("="), raw.hex())


def _learnable(text: str, depth: int = 0) -> Iterator[str]:
    """What of one decoded Secret value to scrub, when long enough: the value and its forms (`_forms`), each of its
    lines; in a JSON or YAML document, the same of each value inside it that may be a credential (under a key named
    like one, or random-looking: not a plain setting such as `IfNotPresent`), of the text a base64 one encodes, and
    of the password of a registry `auth` (`user:password`)."""
    value = text.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return
    yield value
    yield from _forms(value)
    yield from text.splitlines()
    if depth >= _NESTING:
        return
    for key, nested in _nested(_structured(value)):
        if key in _PUBLIC_NESTED_KEYS or not (_secret_name(key) or _credential_like(nested)):
            continue
        yield from _learnable(nested, depth + 1)
        decoded = _base64_text(nested.strip())
        if decoded is not None:
            yield from _learnable(decoded, depth + 1)
            if key.lower() == "auth":
                yield from _learnable(decoded.partition(":")[2], depth + 1)


def _is_secret(obj: dict[str, Any]) -> bool:
    """Whether `obj` is a core v1 Secret."""
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def _last_applied(obj: dict[str, Any]) -> Any:
    """The object's last-applied configuration, parsed; None when it has none or it does not parse."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    applied = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(applied, str):
        return None
    try:
        return json.loads(applied)
    except (ValueError, RecursionError):
        return None


SecretValue = tuple[str, str, str]
"""A value of a Secret, its key and the Secret (`namespace/name`): the value is never shown."""


def secret_values(obj: dict[str, Any]) -> list[SecretValue]:
    """The values of a Secret to scrub from output, each with where it is: each whole value, decoded (even a short
    one, which the scrubber then names as too short to hide); when long enough to mean something, the value as stored
    (base64 under `data`) and what `_learnable` finds in it: its forms in logs, its lines (a PEM body, a config file),
    the values inside a JSON or YAML one (a cluster `config`'s `bearerToken`, a registry config's password). Those of
    its last-applied configuration too (an older value may still show in a log); never a fingerprint (a redacted
    bundle) or a time."""
    if not _is_secret(obj):
        return []
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    secret = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p) or "?"
    found: dict[str, tuple[str, str]] = {}
    applied = _last_applied(obj)
    if isinstance(applied, dict):
        named = {key: meta[key] for key in ("namespace", "name") if key in meta}  # not its annotation again
        found.update((value, (key, name)) for value, key, name in secret_values(
            {**applied, "kind": "Secret", "apiVersion": "v1", "metadata": named}))
    for key, decode in (("data", True), ("stringData", False)):
        values = obj.get(key)
        if not isinstance(values, dict):
            continue
        for name, value in values.items():
            if name in PUBLIC_SECRET_KEYS or value is None or is_fingerprint(value):
                continue
            where = (str(name), secret)
            raw = _decoded(value) if decode else str(value).encode()
            text = raw.decode("utf-8", "replace")
            if text.strip():
                found.setdefault(text.strip(), where)
            for part in (str(value), base64.b64encode(raw).decode(), *_learnable(text)):
                if len(part.strip()) >= MIN_SECRET_LENGTH:
                    found.setdefault(part.strip(), where)
    return sorted((value, *where) for value, where in found.items() if not _TIMESTAMP_VALUE.fullmatch(value))


NOT_HIDDEN_SHOWN = 3
"""How many of the Secret values left in the output the note on them names (where they are, never the value)."""


class SecretScrubber:
    """Remembers the Secret values of a snapshot (in memory only) and removes them from any text, but those not worth
    hiding: shorter than MIN_SECRET_LENGTH, or a name of the input (an object's name or namespace, a label: a Secret
    that holds the name of a namespace or an OIDC client id such as `argo-server` would otherwise blank that name
    wherever it appears). `not_hidden` says where those are."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[str, str]] = {}
        """Each value, and the key and the Secret it was first met in."""
        self._names: set[str] = set()
        self._by_prefix: dict[str, tuple[str, ...]] | None = None
        self._lock = threading.Lock()
        """Values may be added by one thread while another scrubs (`collect` writes pages on a pool)."""

    def add_values(self, values: Iterable[SecretValue | str]) -> None:
        """Remember values returned by `secret_values` (a plain string: a value of some Secret)."""
        with self._lock:
            for value in values:
                text, key, secret = (value, "", "?") if isinstance(value, str) else value
                self._values.setdefault(text, (key, secret))
            self._by_prefix = None

    def add_names(self, names: Iterable[str]) -> None:
        """Remember names of the input (objects' names and namespaces, label keys and values): a Secret value equal
        to one is not hidden."""
        with self._lock:
            self._names.update(names)
            self._by_prefix = None

    def hides(self, value: str) -> bool:
        """Whether a remembered value is replaced in texts."""
        return len(value) >= MIN_SECRET_LENGTH and value not in self._names

    def not_hidden(self) -> list[tuple[str, str, str]]:
        """(Secret, key, why) of each Secret's whole value left in texts that its user may expect hidden: one equal
        to a name of the input, and a short one under a key named for a credential (a password of five letters;
        not a user name), by Secret and key."""
        with self._lock:
            values = dict(self._values)
        found: dict[tuple[str, str], str] = {}
        for value, (key, secret) in values.items():
            if value in self._names:
                found.setdefault((secret, key), "the name of an object, a namespace or a label in the input")
            elif len(value) < MIN_SECRET_LENGTH and _secret_name(key):
                found.setdefault((secret, key), f"shorter than {MIN_SECRET_LENGTH} characters")
        return sorted((secret, key, why) for (secret, key), why in found.items())

    def note(self) -> str | None:
        """One sentence on the values `not_hidden` gives, None when there is none."""
        left = self.not_hidden()
        if not left:
            return None
        shown = "; ".join(f"key {key} of Secret {secret}: {why}" for secret, key, why in left[:NOT_HIDDEN_SHOWN])
        more = f"; and {len(left) - NOT_HIDDEN_SHOWN} more" if len(left) > NOT_HIDDEN_SHOWN else ""
        return (f"{len(left)} Secret value(s) are left as they are in texts, not worth hiding ({shown}{more}); "
                "passwords, tokens and keys in their usual forms are masked all the same")

    def scrub(self, text: str) -> str:
        """`text` with every remembered value replaced, the longest one where several start at the same
        place. A value that begins or ends with a letter or digit is replaced only where it is not part of
        a longer word (a username `deploy` leaves "deployed" alone). One pass over the text, whatever
        the number of values: they are indexed by their first MIN_SECRET_LENGTH characters."""
        if not self._values or len(text) < MIN_SECRET_LENGTH:
            return text
        index = self._index()
        if not index:
            return text
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
        built = self._by_prefix
        if built is None:
            with self._lock:
                index: dict[str, list[str]] = {}
                for value in sorted(self._values, key=len, reverse=True):
                    if self.hides(value):
                        index.setdefault(value[:MIN_SECRET_LENGTH], []).append(value)
                self._by_prefix = built = {prefix: tuple(values) for prefix, values in index.items()}
        return built


def names_of(obj: dict[str, Any]) -> Iterator[str]:
    """The names an object shows anyway (its name, namespace, label keys and values), and those of a List's items:
    a Secret value equal to one is not worth hiding."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in ("name", "namespace", "generateName"):
            if isinstance(meta.get(key), str):
                yield meta[key]
        labels = meta.get("labels")
        if isinstance(labels, dict):
            for key, value in labels.items():
                yield str(key)
                yield str(value)
    items = obj.get("items")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                yield from names_of(item)


_ESCAPE_BEFORE = re.compile(r"(?:\\[nrt]|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|" + _ESCAPED_SEQUENCE + ")$")
"""What ends in a letter without being part of a word: an escaped line break or tab (`\\n`, a JSON string), a colour
code, raw or escaped (`\x1b[31m`, `\\u001b[31m`)."""


def _bounded(text: str, at: int, value: str) -> bool:
    """Whether `value` at `at` in `text` is not the middle of a word."""
    end = at + len(value)
    if (value[0].isalnum() and at > 0 and text[at - 1].isalnum()
            and not _ESCAPE_BEFORE.search(text, max(0, at - 16), at)):
        return False
    return not (value[-1].isalnum() and end < len(text) and text[end].isalnum())


def redact(text: str, scrubber: SecretScrubber | None = None) -> str:
    """`text` without anything that looks like a credential and without the snapshot's Secret values. The patterns
    run first, so that a Secret value replaced inside a URL or a header cannot hide the rest of the credential from
    them, and again when the scrubber changed the text. A text with control sequences (colour codes) is redacted as
    it is and as it is shown: when only the shown text gives a secret away, the shown text, redacted, is returned."""
    return _redact(text, scrubber, None)


PLAIN_KEPT, PLAIN_LENGTH = 100_000, 128
"""How many texts a `Redactor` remembers the patterns leave alone, and the longest: the short values that Kubernetes
objects repeat (`True`, `default`, `IfNotPresent`, a label or image name) are most of the texts of a bundle, six
times over each in the benchmark's live collection; at most about 20 MB."""


def _redact(text: str, scrubber: SecretScrubber | None, counts: Counter[str] | None,
            plain: set[str] | None = None) -> str:
    """`redact`, each replacement counted in `counts` when it is given (a Secret value as `secret-copy`). `plain`:
    texts known to go through the patterns unchanged, to which those met are added."""
    done = _redact_as_is(text, scrubber, counts, plain)
    shown = _shown(done)
    if shown == done:
        return done
    again = _redact_as_is(shown, scrubber, counts, plain)
    return done if again == shown else again


def _redact_as_is(text: str, scrubber: SecretScrubber | None, counts: Counter[str] | None,
                  plain: set[str] | None) -> str:
    """`_redact` of the text as it is, control sequences and all."""
    if plain is not None and text in plain:
        done = text
    else:
        before = counts.total() if counts is not None else 0
        done = _patterns(text, counts)
        if (plain is not None and done == text and len(text) <= PLAIN_LENGTH and len(plain) < PLAIN_KEPT
                and (counts is None or counts.total() == before)):
            plain.add(text)
    if scrubber is None:
        return done
    scrubbed = scrubber.scrub(done)
    if scrubbed == done:
        return done
    if counts is not None:
        counts["secret-copy"] += scrubbed.count(VALUE_PLACEHOLDER) - done.count(VALUE_PLACEHOLDER)
    return _patterns(scrubbed, counts)


def clean(value: T, scrubber: SecretScrubber | None = None, *, human: bool = False,
          cache: dict[str, str] | None = None) -> T:
    """A copy of an output (a string, or lists, tuples, dicts and dataclasses of them) with every
    string passed through `redact`, and through `printable` when `human` (table, markdown, text;
    JSON keeps control characters, which its encoder escapes). `cache`: what earlier calls with the same
    scrubber and `human` made of each text, reused and added to."""
    cache = {} if cache is None else cache

    def text(item: str) -> str:
        done = cache.get(item)
        if done is None:
            done = redact(item, scrubber)
            cache[item] = done = printable(done) if human else done
        return item if done == item else done  # the cache may hold an equal text, not this one

    def walk(item: Any) -> Any:
        """`item` itself when nothing in it changes, else a copy (dataclasses through `replace`)."""
        if type(item) is str or (isinstance(item, str) and not isinstance(item, enum.Enum)):
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
        names = _init_fields(type(item))
        if names is not None:
            changes = {}
            for name in names:
                old = getattr(item, name)
                new = walk(old)
                if new is not old:
                    changes[name] = new
            return dataclasses.replace(item, **changes) if changes else item
        return item

    result: T = walk(value)
    return result


def _init_fields(cls: type) -> tuple[str, ...] | None:
    """The names of the fields a dataclass's `__init__` takes; None for a class that is no dataclass."""
    try:
        return _INIT_FIELDS[cls]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init) if dataclasses.is_dataclass(cls) else None
        _INIT_FIELDS[cls] = names
        return names


_INIT_FIELDS: dict[type, tuple[str, ...] | None] = {}


def redact_object(obj: dict[str, Any]) -> dict[str, Any]:
    """Redact a Secret in place (values become fingerprints of the decoded bytes, or stay the fingerprints a
    redacted bundle holds; an Argo CD Secret keeps its public facts, `argocd_secrets.KEY`) and return it."""
    if not _is_secret(obj):
        return obj
    facts = public_facts(obj, redact_text)
    if facts is not None:
        obj[PUBLIC_KEY] = facts
    for key, decode in (("data", True), ("stringData", False)):
        values = obj.get(key)
        if isinstance(values, dict):
            obj[key] = {k: f"<redacted {_value_fingerprint(v, decode)}>" for k, v in values.items()}
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        annotations[LAST_APPLIED] = "<redacted>"
    return obj


_SECRET_NAME_WORDS = frozenset({
    "password", "passwd", "pwd", "passphrase", "pass", "secret", "secrets", "token", "tokens", "key", "apikey",
    "credential", "credentials", "auth",
})
"""Words of a name (`DB_PASSWORD`, `apiKey`, `example.com/deploy-token`) that say its value is a credential."""
_REFERENCE_WORDS = frozenset({
    "name", "names", "ref", "file", "path", "dir", "type", "kind", "url", "uri", "host", "endpoint", "mode",
    "enabled", "length", "size", "ttl", "algorithm",
})
"""Last words of a name that says where a credential is or what it is like, not what it is (`secretName`,
`TOKEN_FILE`, `AUTH_URL`)."""
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _secret_name(name: str) -> bool:
    """Whether a variable, key or field name says that its value is a credential (not a checksum of one, such as
    the `checksum/secret` annotation charts put on pod templates)."""
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    return (bool(words) and words[-1] not in _REFERENCE_WORDS and "checksum" not in words
            and any(w in _SECRET_NAME_WORDS for w in words))


_CREDENTIAL_ENDINGS = frozenset({"password", "passwd", "passphrase", "token", "secret", "apikey", "credential",
                                 "credentials"})
_KEY_PREFIXES = frozenset({"api", "access", "secret", "private"})


def _credential_field(name: str) -> bool:
    """Whether a field of an object is named for a credential itself (`status.token` of a TokenRequest,
    `bearerToken`, `clientSecret`, `apiKey`), not for something about one (`secretName`, `tokenExpirationSeconds`)."""
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    if not words:
        return False
    return words[-1] in _CREDENTIAL_ENDINGS or (words[-1] == "key" and len(words) > 1 and words[-2] in _KEY_PREFIXES)


def _may_name(name: str, value: str) -> bool:
    """Whether a value of a setting or annotation that looks like a Kubernetes name may be one: always as
    `namespace/name` (`cert-manager.io/inject-ca-from-secret`), else unless its name ends in a credential
    (`token: my-token-value` is a token, `instanceLabelKey: app.kubernetes.io/instance` a label key)."""
    return "/" in value or not _credential_field(name)


def _harmless(value: str, references: bool) -> bool:
    """A value under a credential-like name that is none: empty, several lines (a script, a config: the patterns
    look into it), a placeholder, a reference or a literal, a short number; a Kubernetes name or label key when
    `references` (settings and annotations name things, see `_may_name`; an env value is what the program gets,
    and is masked)."""
    value = value.strip()
    return (not value or "\n" in value or value.startswith("<redacted") or _not_a_value(value)
            or (value.isdigit() and len(value) < 8) or (references and _resource_like(value)))


_KEPT = frozenset({
    "apiVersion", "kind", "name", "generateName", "namespace", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "labels", "matchLabels", "matchExpressions", "selector",
    "ownerReferences", "finalizers", "image", "imageID", "caBundle", "valueFrom",
})
"""Fields never changed, at any depth: what analyzers match objects by (names, labels, selectors, owners,
images, versions), references to Secrets, and a webhook's caBundle (a public certificate)."""
_KEPT_SCALARS = frozenset({"type", "reason", "phase"})
"""Fields kept when they hold a string: identifiers such as a condition's type and reason, which a credential
pattern could take for a token (`CorruptDockerOverlay2` is base64 enough)."""
_FREE_TEXT = frozenset({"message", "msg", "note", "description"})
"""Fields of prose, where the Secret values of the bundle are removed too (an error quoting the value it refused).
Elsewhere only the patterns apply, so that a Secret value that happens to be a word, a host or a number leaves the
fields that hold the same word alone."""
_YAML_SETTING = re.compile(
    r"(?m)^([ \t]*(?:-[ \t]+)?([A-Za-z0-9_.-]+)[ \t]*:[ \t]+)" + _NOT_REDACTED
    + r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s#|>&*!{\[\"'][^\n#]*)"
)
"""A `key: value` line of YAML text with a scalar value (Helm values given as a string)."""
_OPEN_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_CLOSE_KEY = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_KEY_BODY = re.compile(rf"({_TIMESTAMP})(?:[{_B64}]{{1,100}}={{0,2}}|Proc-Type:.*|DEK-Info:.*"
                       rf"|{_CLOSE_KEY.pattern})[ \t\r]*")
"""A line of a PEM private key's body, headers or END line, after a log's timestamp."""


class Redactor:
    """The redactor of bundles written to disk, by `collect` and `redact`: one per bundle, since it learns the
    bundle's Secret values (`learn`, and `obj` of a Secret) to remove them from every later text. It counts what
    it replaces by kind of secret in `counts`, never keeping a value. Safe to use from several threads."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._scrubber = SecretScrubber()
        self._lock = threading.Lock()
        self._plain: set[str] = set()
        """Short texts the patterns leave unchanged (see `_redact`); added to by several threads, which is safe."""

    def learn(self, raw: dict[str, Any], as_kind: tuple[str, str] | None = None) -> None:
        """Remember the values of a Secret (or of the Secrets of a List) to remove them from texts, and the names of
        any object, which such a value is not hidden for."""
        values = list(self._secret_values(raw, as_kind))
        if values:
            self._scrubber.add_values(values)
        self._scrubber.add_names(names_of(raw))

    def note(self) -> str | None:
        """What the bundle's Secret values left in texts are (`SecretScrubber.note`)."""
        return self._scrubber.note()

    def obj(self, raw: dict[str, Any], as_kind: tuple[str, str] | None = None) -> dict[str, Any]:
        """A redacted copy of one object (or List) for a bundle; `raw` itself when nothing in it changes.
        `as_kind` (apiVersion, kind) is what to read it as when it names no kind (an item of a typed List, the
        body of a patch); it is not added. Learns its Secret values first (see `learn`)."""
        self.learn(raw, as_kind)
        counts: Counter[str] = Counter()
        done = self._object(raw, counts, as_kind)
        self._count(counts)
        return done

    def text(self, text: str) -> str:
        """One log line or any text, without credentials (the patterns) and the Secret values learnt so far."""
        counts: Counter[str] = Counter()
        done = _redact(text, self._scrubber, counts, self._plain)
        self._count(counts)
        return done

    def strings(self, value: Any) -> Any:
        """`value` (JSON-like) with every string through `text`, whatever its field; `value` when nothing changes."""
        counts: Counter[str] = Counter()
        done = self._strings(value, counts)
        self._count(counts)
        return done

    def secret_patch(self, ops: list[Any]) -> list[Any]:
        """A JSON patch of a Secret (the body of an audit request) with every string of each operation's `value`
        replaced by its fingerprint; `ops` when nothing changes."""
        counts: Counter[str] = Counter()
        done = _same([_same_dict(op, [
            (k, self._fingerprints(v, not str(op.get("path", "")).startswith("/stringData"), counts) if k == "value"
             else v) for k, v in op.items()]) if isinstance(op, dict) else op for op in ops], ops)
        self._count(counts)
        return done

    def lines(self, lines: Iterable[str]) -> Iterator[str]:
        """The lines of one log (each with or without its line ending, which is kept) through `text`, and the
        body of a PEM private key whose BEGIN line is in the log masked line by line up to its END line."""
        in_key = False
        for line in lines:
            body = line.rstrip("\r\n")
            end = line[len(body):]
            if in_key:
                found = _KEY_BODY.fullmatch(body)
                if found is not None:  # the key was counted at its BEGIN line
                    in_key = _CLOSE_KEY.search(body) is None
                    yield found.group(1) + "<redacted private key>" + end
                    continue
                if not body.strip():
                    yield line
                    continue
            in_key = _opens_key(body)
            yield self.text(body) + end

    def _count(self, counts: Counter[str]) -> None:
        if counts:
            with self._lock:
                self.counts.update(counts)

    def _secret_values(self, raw: dict[str, Any], as_kind: tuple[str, str] | None) -> Iterator[SecretValue]:
        view = _as_kind(raw, as_kind)
        items = view.get("items")
        kind = view.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            item_kind = _item_kind(view)
            for item in items:
                if isinstance(item, dict):
                    yield from self._secret_values(item, item_kind)
        else:
            yield from secret_values(view)

    def _object(self, raw: dict[str, Any], counts: Counter[str], as_kind: tuple[str, str] | None) -> dict[str, Any]:
        view = _as_kind(raw, as_kind)
        api, kind = str(view.get("apiVersion") or ""), view.get("kind")
        argo, secret = api.startswith("argoproj.io/"), _is_secret(view)
        listed = isinstance(kind, str) and kind.endswith("List") and isinstance(view.get("items"), list)
        pairs: list[tuple[Any, Any]] = []
        for key, value in view.items():
            if key == "items" and listed:
                item_kind = _item_kind(view)
                done: Any = _same([self._object(i, counts, item_kind) if isinstance(i, dict) else i for i in value],
                                  value)
            elif key in ("data", "stringData") and secret and isinstance(value, dict):
                done = _same_dict(value, [(k, self._fingerprint(v, key == "data", counts)) for k, v in value.items()])
            elif key == "data" and kind == "ConfigMap" and api == "v1" and isinstance(value, dict):
                done = _same_dict(value, [(k, self._config(str(k), v, counts)) for k, v in value.items()])
            elif key == "metadata" and isinstance(value, dict):
                done = _same_dict(value, [
                    (k, self._annotations(v, counts, secret) if k == "annotations" else self._walk(k, v, counts, argo))
                    for k, v in value.items()])
            else:
                done = self._walk(key, value, counts, argo)
            pairs.append((key, done))
        result = _same_dict(view, pairs)
        facts = public_facts(view, lambda text: self._text(text, counts)) if secret else None
        if facts is not None and facts != view.get(PUBLIC_KEY):
            result = {**result, PUBLIC_KEY: facts}
        if result is view:
            return raw
        return result if view is raw else {k: v for k, v in result.items() if k in raw or k == PUBLIC_KEY}

    def _walk(self, key: Any, value: Any, counts: Counter[str], argo: bool) -> Any:
        """A field of an object: by its name where that says what it holds, else every string in it."""
        if key in _KEPT or (key in _KEPT_SCALARS and not isinstance(value, dict | list)):
            return value
        if key in _FREE_TEXT and isinstance(value, str):
            return self._text(value, counts)
        if isinstance(value, str) and isinstance(key, str) and _credential_field(key):
            return self._named(key, value, "credential-field", counts, references=True)
        if key == "annotations" and isinstance(value, dict):
            return self._annotations(value, counts, False)
        if key == "managedFields" and isinstance(value, list):
            return _same([_same_dict(e, [(k, self._text(v, counts) if k == "manager" and isinstance(v, str) else v)
                                         for k, v in e.items()]) if isinstance(e, dict) else e for e in value], value)
        if key == "env" and isinstance(value, list):
            return _same([self._env(e, counts, argo) if isinstance(e, dict) else self._value(e, counts, argo)
                          for e in value], value)
        if key == "helm" and argo and isinstance(value, dict):
            return self._helm(value, counts)
        return self._value(value, counts, argo)

    def _value(self, value: Any, counts: Counter[str], argo: bool) -> Any:
        if isinstance(value, str):
            return self._text(value, counts, scrub=False)
        if isinstance(value, dict):
            return _same_dict(value, [(k, self._walk(k, v, counts, argo)) for k, v in value.items()])
        if isinstance(value, list):
            return _same([self._value(v, counts, argo) for v in value], value)
        return value

    def _strings(self, value: Any, counts: Counter[str]) -> Any:
        if isinstance(value, str):
            return self._text(value, counts)
        if isinstance(value, dict):
            return _same_dict(value, [(k, self._strings(v, counts)) for k, v in value.items()])
        if isinstance(value, list):
            return _same([self._strings(v, counts) for v in value], value)
        return value

    def _text(self, text: str, counts: Counter[str], scrub: bool = True) -> str:
        """`text` redacted (without the bundle's Secret values unless `scrub` is false); `text` itself when nothing
        changes (the walks keep what is unchanged by identity)."""
        done = _redact(text, self._scrubber if scrub else None, counts, self._plain)
        return text if done == text else done

    def _named(self, name: str, value: Any, kind: str, counts: Counter[str], references: bool = False) -> Any:
        """A value masked whole when its name says it is a credential, else through the patterns. With
        `references`, a Kubernetes name is kept (see `_may_name`)."""
        if not isinstance(value, str):
            return value
        if _secret_name(name) and not _harmless(value, references and _may_name(name, value)):
            counts[kind] += 1
            return PLACEHOLDER
        return self._text(value, counts)

    def _fingerprint(self, value: Any, decode: bool, counts: Counter[str]) -> Any:
        if value is None or is_fingerprint(value):
            return value
        counts["secret-value"] += 1
        return _value_fingerprint(value, decode)

    def _fingerprints(self, value: Any, decode: bool, counts: Counter[str]) -> Any:
        if isinstance(value, dict):
            return _same_dict(value, [(k, self._fingerprints(v, decode, counts)) for k, v in value.items()])
        if isinstance(value, list):
            return _same([self._fingerprints(v, decode, counts) for v in value], value)
        return self._fingerprint(value, decode, counts) if isinstance(value, str) else value

    def _config(self, key: str, value: Any, counts: Counter[str]) -> Any:
        """A ConfigMap entry; Argo CD's `resource.*` settings (health scripts, ignored differences of kinds named
        like `…Secret`) are never masked whole."""
        if key.startswith("resource."):
            return self._text(value, counts) if isinstance(value, str) else value
        return self._named(key, value, "configmap-value", counts, references=True)

    def _annotations(self, value: Any, counts: Counter[str], secret: bool) -> Any:
        if not isinstance(value, dict):
            return self._value(value, counts, False)
        return _same_dict(value, [(k, self._applied(v, counts, secret) if k == LAST_APPLIED
                                   else self._named(str(k), v, "annotation", counts, references=True))
                                  for k, v in value.items()])

    def _applied(self, value: Any, counts: Counter[str], secret: bool) -> Any:
        """The last-applied configuration: its JSON redacted as an object (a Secret's values become fingerprints)
        and written back compact, as kubectl writes it; a Secret's that does not parse is masked."""
        if not isinstance(value, str) or value.startswith("<redacted"):
            return value
        try:
            doc = json.loads(value)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict):
            done = self._object(doc, counts, ("v1", "Secret") if secret else None)
            if done is doc:
                return value
            return json.dumps(done, separators=(",", ":"), ensure_ascii=False) + ("\n" if value.endswith("\n") else "")
        if secret:
            counts["secret-value"] += 1
            return PLACEHOLDER
        return self._text(value, counts)

    def _env(self, entry: dict[str, Any], counts: Counter[str], argo: bool) -> dict[str, Any]:
        """One `env` entry (a container's, a plugin's): its value masked when its name looks like a credential."""
        name = entry.get("name")
        return _same_dict(entry, [
            (k, self._named(name, v, "env-value", counts) if k == "value" and isinstance(name, str)
             else self._walk(k, v, counts, argo))
            for k, v in entry.items()])

    def _helm(self, helm: dict[str, Any], counts: Counter[str]) -> dict[str, Any]:
        """An Application source's `helm`: values (YAML text), valuesObject and parameters, by setting name."""
        pairs: list[tuple[Any, Any]] = []
        for key, value in helm.items():
            if key == "values" and isinstance(value, str):
                done: Any = self._text(self._yaml_settings(value, counts), counts)
            elif key == "valuesObject":
                done = self._tree(value, "", counts)
            elif key == "parameters" and isinstance(value, list):
                done = _same([_same_dict(p, [
                    (k, self._named(str(p.get("name")), v, "helm-value", counts, references=True) if k == "value"
                     else self._walk(k, v, counts, True)) for k, v in p.items()]) if isinstance(p, dict) else p
                    for p in value], value)
            else:
                done = self._walk(key, value, counts, True)
            pairs.append((key, done))
        return _same_dict(helm, pairs)

    def _tree(self, value: Any, name: str, counts: Counter[str]) -> Any:
        """Helm values as an object: each string under a credential-like key masked, the others through the patterns."""
        if isinstance(value, dict):
            return _same_dict(value, [(k, self._tree(v, str(k), counts)) for k, v in value.items()])
        if isinstance(value, list):
            return _same([self._tree(v, name, counts) for v in value], value)
        return self._named(name, value, "helm-value", counts, references=True)

    def _yaml_settings(self, text: str, counts: Counter[str]) -> str:
        """YAML text with the scalar value of each credential-like key masked (comments and layout kept)."""
        def mask(match: re.Match[str]) -> str:
            name, value = match.group(2), match.group(3).rstrip()
            bare = value.strip("\"'")
            if not _secret_name(name) or _harmless(bare, _may_name(name, bare)):
                return match.group(0)
            counts["helm-value"] += 1
            return match.group(1) + PLACEHOLDER + match.group(3)[len(value):]

        done = _YAML_SETTING.sub(mask, text) if ":" in text else text
        return text if done == text else done


def _opens_key(line: str) -> bool:
    """Whether the last private key that begins in `line` does not end in it."""
    begin = line.rfind("-----BEGIN ")
    while begin >= 0 and _OPEN_KEY.match(line, begin) is None:
        begin = line.rfind("-----BEGIN ", 0, begin)
    return begin >= 0 and _CLOSE_KEY.search(line, begin) is None


def _as_kind(raw: dict[str, Any], as_kind: tuple[str, str] | None) -> dict[str, Any]:
    """`raw`, or a copy naming the apiVersion and kind it is to be read as when it names no kind."""
    if as_kind is None or raw.get("kind"):
        return raw
    return {"apiVersion": as_kind[0], "kind": as_kind[1], **raw}


def _item_kind(listed: dict[str, Any]) -> tuple[str, str] | None:
    """What the items of a typed List (`SecretList`) are, as the reader completes them; None for a `List`."""
    kind = str(listed.get("kind"))
    return (str(listed.get("apiVersion") or ""), kind[: -len("List")]) if kind != "List" else None


def _same(items: list[Any], old: list[Any]) -> list[Any]:
    """`old` when every item is the one it had, else `items`."""
    return old if all(a is b for a, b in zip(items, old, strict=True)) else items


def _same_dict(old: dict[Any, Any], pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """`old` when every value is the one it had, else a dict of `pairs`."""
    return old if all(v is old[k] for k, v in pairs) else dict(pairs)
