"""Secret values never survive loading or excerpting."""

from __future__ import annotations

import base64

from argo_doctor.sources.redact import fingerprint, redact_object, redact_text

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
