"""Secret values never survive loading or excerpting."""

from __future__ import annotations

import base64
import json
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argo_doctor.health import HealthStatus
from argo_doctor.sources import redact as redact_module
from argo_doctor.sources.redact import (
    Redactor,
    SecretScrubber,
    clean,
    fingerprint,
    printable,
    redact,
    redact_object,
    redact_text,
    secret_values,
)
from tests.conftest import BUNDLES, EXAMPLES

KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4Vd0QJc1Xr\n-----END RSA PRIVATE KEY-----"
JWT = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiIxMjM0NTYiLCJpYXQiOjE3MDB9.c2lnbmF0dXJlLWJ5dGVz"


def test_secret_data_becomes_fingerprints() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "repo",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"k":"czNjcjN0"}}'},
        },
        "data": {"githubAppPrivateKey": base64.b64encode(KEY.encode()).decode(), "type": "Z2l0"},
        "stringData": {"password": "hunter2"},
    }
    redacted = redact_object(secret)
    text = repr(redacted)
    assert "hunter2" not in text and "czNjcjN0" not in text and "MIIE" not in text
    assert redacted["data"]["type"] == f"<redacted {fingerprint(b'git')}>"
    assert redacted["stringData"]["password"] == f"<redacted {fingerprint('hunter2')}>"
    assert redacted["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == "<redacted>"


def test_other_kinds_are_untouched() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"password": "plain"}}
    assert redact_object(dict(cm)) == cm


def test_tokens_keys_and_passwords_in_text() -> None:
    text = (
        f"key={KEY} jwt {JWT} token ghs_16C7e42F292c6912E7710c838347Ae178B4a "
        "url https://admin:s3cr3tpass@git.example.com/repo.git Authorization: Bearer abcdefghijklmnop1234 "
        'password=swordfish {"client_secret": "xyz987"}'
    )
    out = redact_text(text)
    for secret in ("MIIE", JWT, "ghs_16C7", "s3cr3tpass", "abcdefghijklmnop1234", "swordfish", "xyz987"):
        assert secret not in out
    assert "https://admin:<redacted>@git.example.com" in out


def test_error_messages_keep_their_meaning() -> None:
    line = (
        "could not refresh installation id 12345's token: received non 2xx response status "
        '"401 Unauthorized" when fetching https://api.github.com/app/installations/12345/access_tokens'
    )
    assert redact_text(line) == line


def test_key_value_forms_seen_in_logs() -> None:
    cases = {
        'level=info msg="connecting" password="hunter2 with spaces"': "hunter2",
        "DB_PASSWORD=correcthorse": "correcthorse",
        "PGPASSWORD=battery1": "battery1",
        "password: swordfish": "swordfish",
        "client-secret: 9f8e7d6c5b4a": "9f8e7d6c5b4a",
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "wJalrXUtnFEMI",
        '{"token": "s.Xyz12345abcdef"}': "s.Xyz12345abcdef",
        "token: 4f9d2a1b7c6e5d8f": "4f9d2a1b7c6e5d8f",
    }
    for line, secret in cases.items():
        assert secret not in redact_text(line), line


def test_prose_about_tokens_is_kept() -> None:
    for line in (
        "failed to get token: context deadline exceeded",
        "secret: argocd-repo-creds-github not found",
        "access token expired, refreshing",
    ):
        assert redact_text(line) == line


@pytest.mark.parametrize(("line", "secret"), [
    ("Authorization: Token 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
    ("authorization: token gho-short", "gho-short"),
    ("Proxy-Authorization: Basic cm9ib3Q6aHVudGVy", "cm9ib3Q6aHVudGVy"),
    ('{"Authorization":["Negotiate YIIGhgYGKwYBBQUCoIIGejCCBnag"]}', "YIIGhgYG"),
    ('time="t" level=info msg="body {\\"user\\":\\"bob\\",\\"password\\":\\"hunter 2\\"}"', "hunter 2"),
    ("git fetch https://deploy:ab/cd+ef@git.example.com/acme/repo.git", "ab/cd+ef"),
    ('{"auths":{"registry.example.com":{"auth":"cm9ib3Q6aHVudGVyMg=="}}}', "cm9ib3Q6aHVudGVyMg=="),
    ("client_secret=onlylowercaseletters&grant_type=client_credentials", "onlylowercaseletters"),
    ('{"clientSecret": "onlylowercaseletters"}', "onlylowercaseletters"),
    ("secret=abcdefgh", "abcdefgh"),
    ("AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ('"AKIAIOSFODNN7EXAMPLE","wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "wJalrXUtnFEMI"),
    ("2026-11-20T14:50:03.1Z MIIEowIBAAKCAQEAuP4NeM4AhQa9JxVsSz98oKlDvfaSITvTlftUxXL/rCG70TI2", "MIIEowIB"),
    ("2026-11-20T14:50:03.2Z sQry574hBG7rbNnpQcYvlUcO==", "sQry574h"),
    ("sQry574hBG7rbNnpQcYvlUcO==\n-----END RSA PRIVATE KEY-----", "sQry574h"),
    ("token=550e8400-e29b-41d4-a716-446655440000", "550e8400"),
    ("set adminPassword (now \"hunter2hunter2\")", "hunter2hunter2"),
])
def test_patterns_that_used_to_pass(line: str, secret: str) -> None:
    out = redact_text(line)
    assert secret not in out, out
    assert redact_text(out) == out  # idempotent: the edge may redact twice


@pytest.mark.parametrize("line", [
    "could not refresh installation id 1's token: received non 2xx response status",
    "image ghcr.io/acme/api@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "revision 4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39 uid cd82a661-0e18-4010-9633-ca98c87e53a9",
    "caBundle fingerprint sha256:659ab054a73809a2, Secret <redacted sha256:0f1e2d3c4b5a6978>",
    "Sync/0 resource /Secret:monitoring/grafana obj->obj (,,)",
    '{"automountServiceAccountToken":true,"secretName":"argocd-secret"}',
    "clientSecret: $dex.github.clientSecret",
    "cert-manager.io/inject-ca-from-secret: cert-manager/cert-manager-webhook-ca",
    "authorization: RBAC: allowed by ClusterRoleBinding \"argocd\"",
    '{"authorization.k8s.io/decision":"allow"}',
    "basic authentication failed; Bearer token expired",
    "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "https://proxy.example.com:8443/charts/index.yaml@v1",
    "set rollOnEveryRender: false (now true)",
])
def test_prose_stays_readable(line: str) -> None:
    assert redact_text(line) == line


def _example_lines() -> list[str]:
    lines = []
    for root in (EXAMPLES, BUNDLES):
        for path in sorted(root.rglob("*.log")) + sorted(root.rglob("events*.yaml")):
            lines.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
    return lines


def test_example_logs_and_events_hold_no_credential_pattern() -> None:
    """The example bundles' logs and events are prose: the redactor changes none of their lines."""
    changed = [line for line in _example_lines() if redact_text(line) != line]
    assert changed == []


def test_secret_values_include_stored_decoded_and_registry_credentials() -> None:
    docker = {"auths": {"registry.example.com": {"username": "robot", "password": "hunter2-registry",
                                                 "auth": base64.b64encode(b"robot:hunter2-registry").decode()}}}
    secret = {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"password": base64.b64encode(b"s3cr3t-value").decode(), "url": "aHR0cHM6Ly9naXQ=",
                 ".dockerconfigjson": base64.b64encode(json.dumps(docker).encode()).decode()},
        "stringData": {"token": "plain-token-1"},
    }
    found = {value: (key, name) for value, key, name in secret_values(secret)}
    values = set(found)
    assert {"s3cr3t-value", base64.b64encode(b"s3cr3t-value").decode(), "plain-token-1",
            base64.b64encode(b"plain-token-1").decode(), "hunter2-registry", "robot:hunter2-registry",
            base64.b64encode(b"robot:hunter2-registry").decode()} <= values
    assert "https://git" not in values and "aHR0cHM6Ly9naXQ=" not in values  # the url is public
    assert found["s3cr3t-value"] == ("password", "s") and found["plain-token-1"] == ("token", "s")


def test_names_of_the_input_and_short_values_are_not_scrubbed_and_said_so() -> None:
    """An OIDC client id (`argo-server`, Argo Workflows' quick-start) or a Redis password equal to the namespace
    (`argocd`): scrubbing them would blank every name that holds them."""
    secrets = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "argo"},
                "stringData": data} for name, data in (
        ("argo-server-sso", {"clientID": "argo-server", "clientSecret": "Zq8f-0d1c-4b9e-secret"}),
        ("redis", {"redis-password": "argocd", "pin": "1234", "auth-token": "x7", "user": "bob"}))]
    scrubber = SecretScrubber()
    for secret in secrets:
        scrubber.add_values(secret_values(secret))
    scrubber.add_names(["argo-server", "argocd", "app.kubernetes.io/name"])
    text = "ServiceAccount argocd/argo-server uses Zq8f-0d1c-4b9e-secret and pin 1234"
    assert scrubber.scrub(text) == "ServiceAccount argocd/argo-server uses <redacted secret value> and pin 1234"
    assert scrubber.not_hidden() == [  # a short user name or pin is no credential a user expects hidden
        ("argo/argo-server-sso", "clientID", "the name of an object, a namespace or a label in the input"),
        ("argo/redis", "auth-token", "shorter than 6 characters"),
        ("argo/redis", "redis-password", "the name of an object, a namespace or a label in the input")]
    note = scrubber.note()
    assert note is not None and note.startswith("3 Secret value(s) are left as they are in texts")
    assert not any(value in note for value in ("argo-server ", "argocd", "1234", "Zq8f", "x7", "bob"))


def test_scrubber_replaces_values_but_not_words_containing_them() -> None:
    scrubber = SecretScrubber()
    scrubber.add_values(["deploy", "s3cr3t-value", "czNjcjN0LXZhbHVl"])
    assert scrubber.scrub("user deploy pushed s3cr3t-value (czNjcjN0LXZhbHVl); redeployed") == (
        "user <redacted secret value> pushed <redacted secret value> (<redacted secret value>); redeployed")


def test_printable_strips_control_sequences() -> None:
    hostile = "a\x1b]0;title\x07b\x1b]52;c;Y2xpcA==\x1b\\c\x1b[2J\x1b[1;31md\x9b31me\rf\x00g\x7f\th\ni"
    assert printable(hostile) == "abcdef" + "g\th\ni"
    assert printable("plain text — ünïcode") == "plain text — ünïcode"


@dataclass(frozen=True)
class _Row:
    message: str
    status: HealthStatus
    count: int


def test_clean_walks_outputs_and_keeps_types() -> None:
    scrubber = SecretScrubber()
    scrubber.add_values(["s3cr3t-value"])
    doc = {"rows": [_Row("got s3cr3t-value\x1b[2J", HealthStatus.DEGRADED, 2)], "pair": ("password=x", 1),
           "path": Path("/tmp/x")}
    machine = clean(doc, scrubber)
    assert machine["rows"][0] == _Row("got <redacted secret value>\x1b[2J", HealthStatus.DEGRADED, 2)
    assert machine["pair"] == ("password=<redacted>", 1) and machine["path"] == Path("/tmp/x")
    human = clean(doc, scrubber, human=True)
    assert human["rows"][0].message == "got <redacted secret value>"
    assert redact("password=x s3cr3t-value", scrubber) == "password=<redacted> <redacted secret value>"


def test_clean_reuses_what_an_earlier_call_made_of_a_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan cleans findings once; the JSON report cleans the timeline, whose texts are mostly the same, with
    what that made of them: each text is redacted once, and the outputs are those of a fresh call."""
    scrubber = SecretScrubber()
    scrubber.add_values(["s3cr3t-value"])
    seen: list[str] = []
    real = redact_module.redact
    monkeypatch.setattr(redact_module, "redact", lambda text, scrub=None: seen.append(text) or real(text, scrub))
    cache: dict[str, str] = {}
    findings = clean(["got s3cr3t-value", "password=x", "plain"], scrubber, cache=cache)
    timeline = clean({"excerpt": "got s3cr3t-value", "component": "repo-server"}, scrubber, cache=cache)
    assert seen == ["got s3cr3t-value", "password=x", "plain", "excerpt", "component", "repo-server"]
    assert timeline == clean({"excerpt": "got s3cr3t-value", "component": "repo-server"}, scrubber)
    assert findings[0] == timeline["excerpt"] == "got <redacted secret value>"


class _Text(str):
    """A str subclass that is no enum: cleaned like a str."""


@dataclass(frozen=True)
class _Cached:
    rows: list[_Row]
    note: str = field(default="password=x", init=False)


def test_clean_keeps_what_nothing_changes_and_copies_the_rest() -> None:
    """An output none of whose texts changes comes back as it is, even when the cache holds an equal copy of its
    texts; a changed text is replaced in a copy of what holds it, whatever the subclass of str, and a field that
    `__init__` does not take is left to the dataclass."""
    cache: dict[str, str] = {}
    first = clean([_Row("".join(["pl", "ain"]), HealthStatus.HEALTHY, 1)], cache=cache)
    again = [_Row("".join(["pla", "in"]), HealthStatus.HEALTHY, 1)]
    assert again[0].message is not first[0].message and clean(again, cache=cache) is again
    doc = _Cached([_Row("plain", HealthStatus.HEALTHY, 1), _Row(_Text("token=abcdef123456"), HealthStatus.HEALTHY, 2)])
    done = clean(doc, cache=cache)
    assert done is not doc and done.rows[0] is doc.rows[0] and done.note == "password=x"
    assert done.rows[1].message == "token=<redacted>"


def _secret(**data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data}


def test_a_redacted_secret_reads_to_the_same_fingerprints() -> None:
    """A bundle written by the Redactor holds fingerprints; reading keeps them rather than fingerprinting them."""
    original = _secret(password=base64.b64encode(b"s3cr3t-value").decode())
    written = Redactor().obj(original)
    assert written["data"] == {"password": fingerprint(b"s3cr3t-value")} and original["data"] != written["data"]
    assert redact_object(json.loads(json.dumps(written)))["data"] == redact_object(original)["data"]
    assert secret_values(written) == []  # a fingerprint is nothing to scrub
    assert Redactor().obj(written) is written  # idempotent


def test_redactor_counts_by_kind_and_never_keeps_a_value() -> None:
    redactor = Redactor()
    redactor.obj(_secret(password=base64.b64encode(b"s3cr3t-value").decode()))
    assert redactor.text(f"got s3cr3t-value; jwt {JWT}; password=hunter2") == (
        "got <redacted secret value>; jwt <redacted jwt>; password=<redacted>")
    assert redactor.counts == Counter({"secret-value": 1, "secret-copy": 1, "jwt": 1, "password": 1})
    assert "s3cr3t" not in repr(redactor.counts)


def test_redactor_is_safe_from_threads() -> None:
    redactor = Redactor()

    def work(n: int) -> str:
        redactor.obj(_secret(key=base64.b64encode(f"value-{n:04d}-secret".encode()).decode()))
        return redactor.text(f"password=x{n} value-{n:04d}-secret")

    with ThreadPoolExecutor(8) as pool:
        lines = list(pool.map(work, range(400)))
    assert all(line == "password=<redacted> <redacted secret value>" for line in lines)
    assert redactor.counts == Counter({"secret-value": 400, "password": 400, "secret-copy": 400})


def test_redactor_remembers_only_the_texts_the_patterns_leave_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short text met again is redacted and counted again; one the patterns leave alone is not run through them
    again (the cache of `_redact`), and a Secret value learnt later still leaves it."""
    patterned: Counter[str] = Counter()
    patterns = redact_module._patterns

    def counted(text: str, counts: Counter[str] | None) -> str:
        patterned[text] += 1
        return patterns(text, counts)

    monkeypatch.setattr(redact_module, "_patterns", counted)
    redactor = Redactor()
    for _ in range(3):
        assert redactor.text("password=hunter2") == "password=<redacted>"
        assert redactor.text("IfNotPresent") == "IfNotPresent"
        assert redactor.strings({"jwt": JWT, "short": "tok"}) == {"jwt": "<redacted jwt>", "short": "tok"}
    assert redactor.counts == Counter({"password": 3, "jwt": 3})
    assert patterned == Counter({"password=hunter2": 3, JWT: 3, "IfNotPresent": 1, "tok": 1})
    assert redactor.text("hunter2-value-01") == "hunter2-value-01"
    redactor.obj(_secret(password=base64.b64encode(b"hunter2-value-01").decode()))
    assert redactor.text("hunter2-value-01") == "<redacted secret value>"


@pytest.mark.parametrize("unit", ["x.", "a-", "://a:b", "eyJ-", "Ab1-", "\\", "password=", "x_token.secret:",
                                  "cookie:", "Cookie: a=b; ", "a:a!", "--token ", "value: a ", "name: a value: ",
                                  "/hooks/a1"])
def test_patterns_take_linear_time(unit: str) -> None:
    """No pattern tries every start inside a long run (a 10 MB line of a log must not take hours)."""
    text = unit * (400_000 // len(unit)) + "token"
    started = time.perf_counter()
    redact_text(text)
    assert time.perf_counter() - started < 5


def test_values_named_like_credentials_are_masked_and_references_kept() -> None:
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "a", "annotations": {
        "example.com/deploy-token": "deploy-token-value", "cert-manager.io/inject-ca-from-secret": "cm/webhook-ca",
        "checksum/secret": "7e2b9d4c1a8f3e6b0d5c2a9f7e4b1d8c"}},
        "spec": {"source": {"helm": {
            "values": 'db:\n  password: "quoted pw"   # set by hand\n  token: my-token-value\n'
                      "  existingSecret: db/creds\n  instanceLabelKey: app.kubernetes.io/instance\n",
            "valuesObject": {"api": {"token": "canary-object-token"}, "auth": {"existingSecret": "db/creds"}}}}},
        "status": {"conditions": [{"type": "CorruptDockerOverlay2", "message": "ok"}]}}
    redactor = Redactor()
    done = redactor.obj(app)
    assert done["metadata"]["annotations"] == {"example.com/deploy-token": "<redacted>",
                                               "cert-manager.io/inject-ca-from-secret": "cm/webhook-ca",
                                               "checksum/secret": "7e2b9d4c1a8f3e6b0d5c2a9f7e4b1d8c"}
    helm = done["spec"]["source"]["helm"]
    assert helm["values"] == ("db:\n  password: <redacted>   # set by hand\n  token: <redacted>\n"
                              "  existingSecret: db/creds\n  instanceLabelKey: app.kubernetes.io/instance\n")
    assert helm["valuesObject"] == {"api": {"token": "<redacted>"}, "auth": {"existingSecret": "db/creds"}}
    assert done["status"] is app["status"]  # identifiers are no base64 blobs
    assert redactor.counts == Counter({"annotation": 1, "helm-value": 3})


def _every_pattern(text: str, counts: Counter[str]) -> str:
    """The patterns without their needles: each one run on every text (what the needles may only speed up)."""
    for kind, _, pattern, repl in redact_module._PATTERNS:
        text = pattern.sub(redact_module._counting(kind, repl, counts), text)
    return text


_PIECES = (
    "password", "PassWord", "pa\u017fsword", "TOKEN", "to\u212aen", "\u017fecret", "\u0130", "credentials", "pwd",
    "passphrase", "identitytoken", "client_secret", "api-key", "Authorization: ", "Bearer ", "basic ",
    '"auth":"', '\\"auth\\":\\"', '(now "', "(already ", "=", ": ", '"', "'", " ", "\n", "AKIAABCDEFGHIJKLMNOP",
    "ghp_" + "a1" * 15, "xoxb-1234567890ab", JWT, "://user:pw@host", KEY, "QmFzZTY0" * 9, "s3cr3tValue+/9",
    "Cookie: ", "set-cookie=", "@tcp(", "--token ", "?sig=", "&code=", "hooks.slack.com/services/", "redis://:",
    "/hooks/a1b2c3d4e5f6g7h8i9j0", "name: X-Api-Key\n", "value: ", "\x1b[31m", "Bearer%20",
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=12)), max_size=10))
def test_needles_never_skip_a_match(parts: list[str]) -> None:
    """A pattern skipped for want of its needle could not have matched, whatever the case folding (the long s and the
    dotted capital I fold to ASCII letters in the regex engine, not in str.lower)."""
    text = "".join(parts)
    expected_counts: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    assert redact_module._patterns(text, counts) == _every_pattern(text, expected_counts)
    assert counts == expected_counts


@pytest.mark.parametrize(
    "text", ["pa\u017fsword=hunter2hunter2", "credent\u0130al=abcdef123456", "\u017fecret: 'x1y2z3w4'",
             "to\u212aen=x1y2z3w4", "author\u0131zation: Bearer abcdefghijkl1234", "\u2192 PA\u017fSWORD: x"]
)
def test_case_folding_beyond_ascii(text: str) -> None:
    """The regex engine folds these to `password`, `credential`, `secret`, `token`, `authorization`: the value is
    hidden as for the ASCII name."""
    assert "<redacted>" in redact_text(text)
    assert redact_text(text) == _every_pattern(text, Counter())


def test_folded_to_ascii_is_what_the_regex_engine_folds() -> None:
    """Every character beyond ASCII that a case-ignoring pattern takes for an ASCII letter is written as that letter
    before the folded needles are looked for, and no other: checked over every code point."""
    beyond = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    folded = {c: next(a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(f"(?i){a}", c))
              for c in re.findall("(?i)[a-z]", beyond)}
    table = {chr(k): v for k, v in redact_module._FOLDED_TO_ASCII.items()}
    assert table == folded


PASSWORD = "Hunter2Secret99"


def _scrubber(*secrets: dict[str, object]) -> SecretScrubber:
    scrubber = SecretScrubber()
    for secret in secrets:
        scrubber.add_values(secret_values(secret))
    return scrubber


def _stored(name: str, namespace: str, data: dict[str, str], **labels: str) -> dict[str, object]:
    """A Secret as `kubectl get secret -o yaml` prints it: every value base64 under `data`."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})},
            "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


@pytest.mark.parametrize("line", [
    f"2026-11-20T14:50:01.200000000Z db: authentication failed for \x1b[31m{PASSWORD}\x1b[0m",
    f'time="2026-11-20T14:50:02Z" level=error msg="login failed: \x1b[1;31m{PASSWORD}\x1b[0m"',
    f'{{"level":"error","msg":"login failed: \\u001b[31m{PASSWORD}\\u001b[0m","time":"2026-11-20T14:50:03Z"}}',
    f"2026-11-20T14:50:04.000000000Z db: connecting with \x1b[33mpassword\x1b[0m={PASSWORD}",
    "2026-11-20T14:50:05.000000000Z db: Hunter2\x1b[0mSecret99 rejected",
])
def test_colour_codes_hide_no_secret_in_any_form(line: str) -> None:
    """A Secret value or a `password=` coloured by a terminal logger: redacted in the text as it is (kept for JSON)
    and as it is shown (tables, Markdown), and in a redacted bundle's log."""
    secret = _stored("payments-db", "payments", {"password": PASSWORD})
    scrubber = _scrubber(secret)
    redactor = Redactor()
    redactor.learn(secret)
    for out in (redact(line, scrubber), clean(line, scrubber, human=True), printable(redact(line, scrubber)),
                "".join(redactor.lines([line + "\n"]))):
        assert PASSWORD not in printable(out) and "Hunter2" not in out, out
        assert "<redacted" in out
    assert "\x1b[31m<redacted secret value>\x1b[0m" in redact(
        f"db: authentication failed for \x1b[31m{PASSWORD}\x1b[0m", scrubber)  # the colour stays where it can


def test_a_colour_code_before_a_password_key_is_seen_through() -> None:
    line = f'time="2026-11-20T14:50:04Z" level=info msg="connecting" \x1b[36mpassword\x1b[0m={PASSWORD}'
    assert redact(line) == 'time="2026-11-20T14:50:04Z" level=info msg="connecting" password=<redacted>'
    assert redact("\x1b[36mlevel\x1b[0m=info msg=synced") == "\x1b[36mlevel\x1b[0m=info msg=synced"  # look-alike


CLUSTER_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Qz7clusterKEYline\nQz7lastKEYlineAb12\n" \
              "-----END RSA PRIVATE KEY-----\n"
CA = "-----BEGIN CERTIFICATE-----\nMIIC5zCCAc+gAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n" \
     "-----END CERTIFICATE-----\n"


def cluster_secret() -> dict[str, object]:
    """An Argo CD cluster Secret as Argo CD stores it: `config` JSON with a bearer token and TLS client config."""
    config = {"bearerToken": "Qz7clusterBEARERtoken01",
              "tlsClientConfig": {"insecure": False, "caData": base64.b64encode(CA.encode()).decode(),
                                  "keyData": base64.b64encode(CLUSTER_KEY.encode()).decode()},
              "execProviderConfig": {"command": "argocd-k8s-auth", "args": ["aws", "--cluster-name", "prod-eks-1"],
                                     "apiVersion": "client.authentication.k8s.io/v1beta1",
                                     "env": {"AWS_SECRET_ACCESS_KEY": "onlylowercaseawssecret"}}}
    return _stored("cluster-prod", "argocd", {"name": "prod", "server": "https://prod.example.com:6443",
                                              "config": json.dumps(config)},
                   **{"argocd.argoproj.io/secret-type": "cluster"})


def test_values_inside_structured_secrets_are_learned_on_their_own() -> None:
    """A cluster Secret's `config` is one JSON value: its bearer token, its client key's lines and its exec
    plugin's secret env are each hidden where a log quotes them alone; its CA, command line and server are not."""
    values_yaml = "image:\n  pullPolicy: IfNotPresent\nauth:\n  password: onlylowercasepw\n"
    registry = json.dumps({"auths": {"ghcr.io": {"auth": base64.b64encode(b"robot:Qz7kanikoREGISTRY").decode()}}})
    scrubber = _scrubber(cluster_secret(), _stored("chart-values", "apps", {"values.yaml": values_yaml}),
                         _stored("kaniko", "ci", {"config.json": registry}))
    lines = {
        'time="2026-11-20T14:50:01Z" level=error msg="token Qz7clusterBEARERtoken01 rejected"': "Qz7clusterBEARER",
        "2026-11-20T14:50:02.0Z panic: bad key line MIIEpAIBAAKCAQEA3Qz7clusterKEYline": "Qz7clusterKEYline",
        "2026-11-20T14:50:03.0Z env AWS secret onlylowercaseawssecret": "onlylowercaseawssecret",
        "2026-11-20T14:50:04.0Z db: login with onlylowercasepw failed": "onlylowercasepw",
        "2026-11-20T14:50:05.0Z push to ghcr.io: denied for Qz7kanikoREGISTRY": "Qz7kanikoREGISTRY",
    }
    for line, secret in lines.items():
        assert secret not in scrubber.scrub(line), line
    kept = ("exec argocd-k8s-auth aws --cluster-name prod-eks-1 (client.authentication.k8s.io/v1beta1) "
            "against https://prod.example.com:6443; pullPolicy IfNotPresent; "
            "caBundle MIIC5zCCAc+gAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl")
    assert scrubber.scrub(kept) == kept


def test_forms_a_secret_value_takes_in_logs_are_scrubbed() -> None:
    value = 'Qz7p/w+d"x&y'
    raw = value.encode()
    scrubber = _scrubber(_stored("api", "payments", {"api-key": value}))
    forms = {
        "url-encoded": "GET /v1/charge?auth=Qz7p%2Fw%2Bd%22x%26y HTTP/1.1",
        "json-escaped": '{"level":"info","msg":"key Qz7p/w+d\\"x&y loaded"}',
        "go-escaped": '{"level":"info","msg":"key Qz7p/w+d\\"x\\u0026y loaded"}',
        "base64url": "jwt kid " + base64.urlsafe_b64encode(raw).decode().rstrip("=") + " unknown",
        "hex": "dump " + raw.hex() + " end",
    }
    for form, line in forms.items():
        assert "<redacted secret value>" in scrubber.scrub(line), form
    assert scrubber.scrub("GET /v1/charge?auth=Qz7p%2Fw HTTP/1.1") == "GET /v1/charge?auth=Qz7p%2Fw HTTP/1.1"


def test_a_line_of_a_multi_line_value_after_an_escaped_line_break() -> None:
    """A PEM key logged inside a JSON string: each of its lines follows a `\\n`, whose `n` is no word."""
    scrubber = _scrubber(_stored("repo-ssh", "argocd", {"sshPrivateKey": CLUSTER_KEY}))
    line = '{"level":"error","msg":"bad key: MIIEpAIBAAKCAQEA3Qz7clusterKEYline\\nQz7lastKEYlineAb12\\n-----END"}'
    assert "Qz7lastKEYline" not in scrubber.scrub(line)
    assert scrubber.scrub("nQz7lastKEYlineAb12") == "nQz7lastKEYlineAb12"  # inside a word: left alone


@pytest.mark.parametrize(("line", "secret", "look_alike"), [
    ("2026-11-20T14:50:01Z [mysql] dsn=app:Qz7mysqlPW@tcp(mysql.payments:3306)/ledger?parseTime=true",
     "Qz7mysqlPW", "[mysql] connecting to app@tcp(mysql.payments:3306)/ledger"),
    ("dial unix: app:Qz7sockPW@unix(/run/mysqld/mysqld.sock)/ledger", "Qz7sockPW",
     "image registry.example.com/api:1.8@sha256:0123456789abcdef"),
    ("GET /api/v1/applications Cookie: argocd.token=abc; _oauth2_proxy=Qz7oauthCOOKIE; theme=dark", "Qz7oauth",
     "Cookie: none sent"),
    ('level=info msg="login" Set-Cookie="session=Qz7sessionCOOKIE; Path=/; HttpOnly; SameSite=Lax"', "Qz7session",
     "cookie=chocolate chip"),
    ("exec: argocd login argocd.example.com --username admin --password Qz7cliPASS --grpc-web", "Qz7cliPASS",
     "exec: docker login --password-stdin ghcr.io; argocd-repo-server --token-ttl 5m --password /run/secrets/pw;"
     "      --auth-token string   Authentication token"),
    ('cmd=["vault", "login", "-token", "s.Qz7vaultTOKEN"]', "Qz7vault", "--token $VAULT_TOKEN"),
    ("GET https://acme.blob.core.windows.net/charts/index.yaml?sv=2022-11-02&sr=b&sig=Qz7sasSIG%2Bx%3D", "Qz7sas",
     "exit code=1, signal=none"),
    ("GET /auth/callback?code=Qz7oauthCODE&state=8f2b HTTP/1.1", "Qz7oauthCODE", "status code=401 Unauthorized"),
    ("GET /api/badge?name=guestbook&token=guestbook-badge-token HTTP/1.1", "guestbook-badge-token",
     "secret=argocd-repo-creds"),
    ("POST https://hooks.slack.com/services/T0ACME01/B0ACME02/Qz7slackHOOKpath0123 failed: 404", "Qz7slack",
     "POST https://slack.com/api/chat.postMessage failed"),
    ("POST https://discord.com/api/webhooks/1234567890/Qz7discord-HOOK_token failed", "Qz7discord",
     "see https://discord.com/developers/docs"),
    ("POST https://acme.webhook.office.com/webhookb2/0a1b2c3d@4e5f/IncomingWebhook/Qz7teams/99 failed", "Qz7teams",
     "https://learn.microsoft.com/office/webhooks"),
    ("POST https://chat.acme.example/hooks/qz7mattermost0hook4k9x2w failed", "qz7mattermost",
     "GET https://gitlab.com/api/v4/projects/1/hooks/2"),
    ("redis: dial redis://:Qz7redisPW@argocd-redis:6379/0", "Qz7redisPW", "listening on tcp://:6379 and :8080"),
    ("webhook.github.secret: onlylowercasesecret", "onlylowercasesecret",
     'github.token: $GITHUB_TOKEN; avoided by: set apiToken: "static"'),
    ("X-Api-Key: onlylowercasekey", "onlylowercasekey", "failed to get token: expired"),
    ("session eyJhbGciOiJIUzI1NiJ9.e30.Qz7sig expired", "Qz7sig",
     "config eyJhbGciOiJIUzI1NiJ9 missing"),
    ("POST /proxy body=header%3DAuthorization%3A%20Bearer%20Qz7bearerURL12", "Qz7bearerURL12",
     "Bearer token expired"),
    ("upstream rejected Bearer token Qz7wordedBEARER1", "Qz7worded", "basic auth disabled"),
    ("grpc metadata bearer=Qz7metaBEARER", "Qz7metaBEARER", "bearer: true"),
])
def test_free_text_credential_forms(line: str, secret: str, look_alike: str) -> None:
    out = redact_text(line)
    assert secret not in out and "<redacted" in out, out
    assert redact_text(out) == out
    assert redact_text(look_alike) == look_alike


def test_notification_service_headers_in_text() -> None:
    """A Notifications service's headers as the ConfigMap holds them (YAML), and as JSON: a credential header's value
    is hidden, the others kept; so is an env list's."""
    service = ("url: https://alerts.example.com/api/v2/alerts\nheaders:\n"
               "- name: Content-Type\n  value: application/json\n- name: X-Api-Key\n  value: onlylowercaseapikey\n"
               "- name: Authorization\n  value: Basic cm9ib3Q6cHc=\n- value: qz7reversedtoken\n  name: X-Auth-Token\n"
               "- name: X-Events-Token\n  value: Bearer $events-bridge-token\n")
    assert redact_text(service) == (
        "url: https://alerts.example.com/api/v2/alerts\nheaders:\n"
        "- name: Content-Type\n  value: application/json\n- name: X-Api-Key\n  value: <redacted>\n"
        "- name: Authorization\n  value: <redacted>\n- value: <redacted>\n  name: X-Auth-Token\n"
        "- name: X-Events-Token\n  value: Bearer $events-bridge-token\n")
    logged = '{"headers":[{"name":"X-Api-Key","value":"onlylowercaseapikey"},{"name":"Accept","value":"text/plain"}]}'
    assert redact_text(logged) == (
        '{"headers":[{"name":"X-Api-Key","value":"<redacted>"},{"name":"Accept","value":"text/plain"}]}')
    env = "env:\n- name: DB_PASSWORD\n  value: onlylowercasepw\n- name: DB_HOST\n  value: payments-db\n"
    assert redact_text(env) == "env:\n- name: DB_PASSWORD\n  value: <redacted>\n- name: DB_HOST\n  value: payments-db\n"


@pytest.mark.parametrize("dsn", [
    "postgresql://audit:p%zzHunter2Secret99@db.argo-doctor.svc:5432/audit",
    "host=db.argo-doctor.svc user=audit password=Hunter2 Secret99 dbname=audit",
    "host=db.argo-doctor.svc user=audit password=Hunter2 Secret99=x dbname=audit",
    "postgresql://audit:Hunter2 Secret99@db.argo-doctor.svc/audit",
    "postgresql://audit:Hunter2Secret99@[db.argo-doctor.svc/audit",
    "postgresql://:Hunter2Secret99@db.argo-doctor.svc/audit?sslmode=require&foo=bar",
    "host=db.argo-doctor.svc 'password=Hunter2Secret99' dbname=audit",
    r"host=db.argo-doctor.svc password='Hunter2\' Secret99' dbname=audit sslmode=verify",
])
def test_scrub_dsn_leaves_no_part_of_a_password_in_psycopg_errors(dsn: str) -> None:
    """The connection string and what psycopg says of it (libpq's parse errors quote a token of it)."""
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
        message = ""
    except psycopg.Error as exc:
        message = str(exc)
    for text in (dsn, message, f"cannot open the audit store {dsn}: {message}"):
        done = redact_module.scrub_dsn(text)
        assert "Hunter2" not in done and "Secret99" not in done, done
        assert redact_module.scrub_dsn(done) == done


def test_scrub_dsn_keeps_what_holds_no_password() -> None:
    """Host, user, database and options stay, and so do libpq's messages that quote no part of the string."""
    for text in ("host=db.argo-doctor.svc port=5432 user=audit dbname=audit sslmode=require",
                 "postgresql://audit@db.argo-doctor.svc:5432/audit?sslmode=require&application_name=argo-doctor",
                 'connection failed: connection to server at "10.0.0.12", port 5432 failed: FATAL:  password '
                 'authentication failed for user "audit"',
                 "unterminated quoted string in connection info string",
                 'invalid URI query parameter: "sslmod"'):
        assert redact_module.scrub_dsn(text) == text
    assert redact_module.scrub_dsn("host=db password=Hunter2Secret99 sslmode=require") == (
        "host=db password=<redacted> sslmode=require")
    assert redact_module.scrub_dsn('missing "=" after "Secret99" in connection info string') == (
        'missing "=" after "<redacted>" in connection info string')


@pytest.mark.parametrize(("text", "expected"), [
    # a lone credential after Authorization: mixed case is enough from 16 characters on; a short one is no credential
    ("Authorization: QwErTyUiOpAsDfGhJk", "Authorization: <redacted>"),
    ("authorization: ab12", "authorization: ab12"),
    # a reference to where a password is stays whole, `}` included; a value that only starts like one does not
    ("password: ${DB_PASSWORD}", "password: ${DB_PASSWORD}"),
    ("{password: ${X}}", "{password: ${X}}"),
    ("password: ${a}bc1234", "password: <redacted>"),
    # an OAuth client secret is hidden even when it reads like a Kubernetes name
    ("client_secret=argo-cd-oauth-value", "client_secret=<redacted>"),
    # a JSON value with a space or `&`, which the bare-value pattern stops at; a reference there stays
    ('{"apiKey": "two words&more"}', '{"apiKey": "<redacted>"}'),
    ('{"apiKey": "$API_KEY"}', '{"apiKey": "$API_KEY"}'),
    # an HTTP status in a query is no credential, an OAuth code is
    ("GET /callback?code=404 then ?code=Zk12abc9", "GET /callback?code=404 then ?code=<redacted>"),
    # Set-Cookie: the cookie's value, not its attributes; Cookie: every value
    ("Set-Cookie: session=Zx81aa; Path=/; HttpOnly", "Set-Cookie: session=<redacted>; Path=/; HttpOnly"),
    ("Cookie: a=1; b=Zx81aa", "Cookie: a=<redacted>; b=<redacted>"),
])
def test_each_credential_form_is_hidden_and_its_look_alikes_kept(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_a_value_of_the_last_applied_configuration_is_hidden_in_logs_after_it_changed() -> None:
    """`kubectl apply` leaves the previous value in the annotation; a log written before the change holds it."""
    old = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "repo", "namespace": "argocd"},
           "stringData": {"password": "older-Pa55word"}}
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "repo", "namespace": "argocd",
                           "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(old)}},
              "data": {"password": base64.b64encode(b"newer-Pa55word").decode()}}
    redactor = Redactor()
    redactor.obj(secret)
    line = "level=info msg=\"retrying with older-Pa55word\" then newer-Pa55word"
    assert redactor.text(line) == (
        "level=info msg=\"retrying with <redacted secret value>\" then <redacted secret value>")
    assert {v for v, _, _ in secret_values(secret)} >= {
        "older-Pa55word", "newer-Pa55word"}


def test_a_config_map_value_is_no_secret_to_hide() -> None:
    redactor = Redactor()
    redactor.obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                  "data": {"password-policy": "minimum-length-12"}})
    assert redactor.text("policy is minimum-length-12") == "policy is minimum-length-12"


def test_names_of_a_list_and_objects_without_metadata_are_read() -> None:
    """A Secret value equal to a namespace named in a List's item stays (it would blank the namespace everywhere);
    an item or an object without metadata, or with a field of no name, is no error."""
    redactor = Redactor()
    redactor.obj({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "payments-prod"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"": "x", "_": "y"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "payments-prod"},
         "stringData": {"tenant": "payments-prod", "token": "Zq8f-0d1c-4b9e"}}]})
    redactor.obj({"apiVersion": "v1", "kind": "Pod", "spec": {"-": "z"}})
    assert redactor.text("namespace payments-prod token Zq8f-0d1c-4b9e") == (
        "namespace payments-prod token <redacted secret value>")


def test_the_note_names_three_values_and_counts_the_rest() -> None:
    scrubber = SecretScrubber()
    for n in range(5):
        scrubber.add_values(secret_values({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s{n}"},
                                           "stringData": {"password": f"12{n}"}}))
    note = scrubber.note()
    assert note is not None and note.count("key password of Secret") == 3 and "; and 2 more)" in note


def test_a_typed_list_of_secrets_without_kinds_is_redacted_and_learned() -> None:
    """The API's `SecretList` gives items without apiVersion and kind: they are Secrets all the same."""
    listed = {"apiVersion": "v1", "kind": "SecretList", "items": [
        {"metadata": {"name": "repo", "namespace": "argocd"},
         "data": {"password": base64.b64encode(b"Gh-s3cret-value").decode()}}]}
    redactor = Redactor()
    done = redactor.obj(listed)
    assert done["items"][0]["data"]["password"] == fingerprint(b"Gh-s3cret-value")
    assert "kind" not in done["items"][0]  # what it is read as is not added
    assert redactor.text("auth with Gh-s3cret-value") == "auth with <redacted secret value>"


def test_a_private_key_across_log_lines_is_masked_line_by_line_up_to_its_end() -> None:
    lines = ["2026-11-20T10:00:00Z loaded key:\n", "-----BEGIN EC PRIVATE KEY-----\n", "MHcCAQEEIBkg4LVW\n",
             "ab12\n", "-----END EC PRIVATE KEY-----\n", "-----BEGIN CERTIFICATE----- follows\n", "plain line\n"]
    assert list(Redactor().lines(lines)) == [
        "2026-11-20T10:00:00Z loaded key:\n", "<redacted private key>\n", "<redacted private key>\n",
        "<redacted private key>\n", "<redacted private key>\n", "-----BEGIN CERTIFICATE----- follows\n",
        "plain line\n"]


def test_the_redactor_notes_the_values_it_left() -> None:
    redactor = Redactor()
    assert redactor.note() is None
    redactor.obj({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "x"},
                  "stringData": {"password": "abc"}})
    note = redactor.note()
    assert note is not None and "key password of Secret x/db: shorter than" in note


def test_last_applied_configurations_are_redacted_as_the_objects_they_hold() -> None:
    """kubectl keeps the whole applied object in an annotation: a Secret's values, a ConfigMap's password, an
    annotation that does not parse (masked for a Secret, its credentials masked otherwise)."""
    applied = "kubectl.kubernetes.io/last-applied-configuration"

    def obj(kind: str, text: str) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "ns",
                                                              "annotations": {applied: text}}}
    redactor = Redactor()
    secret = redactor.obj(obj("Secret", json.dumps({"apiVersion": "v1", "kind": "Secret",
                                                    "data": {"token": base64.b64encode(b"Zx9-applied").decode()}})))
    kept = json.loads(secret["metadata"]["annotations"][applied])  # type: ignore[index]
    assert kept["data"]["token"] == fingerprint(b"Zx9-applied")
    config = redactor.obj(obj("ConfigMap", json.dumps({"data": {"db.url": "postgres://app:Hunter2x@db:5432/app"}})
                              + "\n"))
    text = config["metadata"]["annotations"][applied]  # type: ignore[index]
    assert "Hunter2x" not in text and text.endswith("\n") and json.loads(text)["data"]["db.url"].startswith(
        "postgres://app:")
    broken = redactor.obj(obj("Secret", '{"data": {"token": "WnR5LWFwcGxpZWQ='))
    assert broken["metadata"]["annotations"][applied] == "<redacted>"  # type: ignore[index]
    loose = redactor.obj(obj("ConfigMap", "not json, password=Hunter2x"))
    assert loose["metadata"]["annotations"][applied] == "not json, password=<redacted>"  # type: ignore[index]


def test_env_values_are_masked_by_the_name_of_their_variable() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"},
                  "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "web:1", "env": [
                      {"name": "DB_PASSWORD", "value": "plainword"}, {"name": "LOG_LEVEL", "value": "debug"},
                      {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}}]}]}}}}
    env = Redactor().obj(deployment)["spec"]["template"]["spec"]["containers"][0]["env"]  # type: ignore[index]
    assert env[0] == {"name": "DB_PASSWORD", "value": "<redacted>"}
    assert env[1] == {"name": "LOG_LEVEL", "value": "debug"}
    assert env[2] == {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}}
