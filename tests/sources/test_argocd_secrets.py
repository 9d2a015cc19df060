"""The public facts of Argo CD Secrets, derived before their values become fingerprints: what Argo CD itself shows,
how a cluster Secret authenticates and when its credentials expire; never a credential."""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from argo_doctor.sources.argocd_secrets import KEY, public_facts
from argo_doctor.sources.redact import Redactor, redact_object, redact_text

UTC = datetime.UTC


def _b64(value: str | bytes) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


def _jwt(claims: dict[str, Any]) -> str:
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2lnbmF0dXJlU0VDUkVUc2ln"


def _certificate(not_after: datetime.datetime) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "argocd")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(7).not_valid_before(not_after - datetime.timedelta(days=365)).not_valid_after(not_after)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _cluster(config: dict[str, Any], server: str = "https://prod.example.com:6443") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "cluster-prod", "namespace": "argocd", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "data": {"name": _b64("prod"), "server": _b64(server), "config": _b64(json.dumps(config))}}


def test_a_bearer_token_s_expiry_and_a_client_certificate_s_not_after_are_kept_and_nothing_of_them() -> None:
    token = _jwt({"exp": 1796083200, "sub": "system:serviceaccount:kube-system:argocd-manager"})
    cert, key = _certificate(datetime.datetime(2027, 1, 2, 3, 4, 5, tzinfo=UTC))
    secret = _cluster({"bearerToken": token, "tlsClientConfig": {"certData": _b64(cert), "keyData": _b64(key)}})
    redact_object(secret)
    assert secret[KEY] == {"name": "prod", "server": "https://prod.example.com:6443",
                           "tokenExpiresAt": "2026-12-01T00:00:00Z", "certNotAfter": "2027-01-02T03:04:05Z",
                           "auth": ["bearerToken", "clientCertificate"]}
    text = json.dumps(secret)
    assert "c2lnbmF0dXJl" not in text and token[:30] not in text and "PRIVATE KEY" not in text
    assert all(str(v).startswith("<redacted sha256:") for v in secret["data"].values())


def test_tokens_without_expiry_unreadable_configs_and_other_secrets() -> None:
    legacy = _cluster({"bearerToken": "not-a-jwt-legacy-serviceaccount-token"})
    assert public_facts(legacy, redact_text) == {"name": "prod", "server": "https://prod.example.com:6443",
                                                 "auth": ["bearerToken"]}
    broken = _cluster({})
    broken["data"]["config"] = _b64("{not json")
    assert public_facts(broken, redact_text)["auth"] == ["unreadable config"]  # type: ignore[index]
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "data": {"password": _b64("pw")}}
    assert public_facts(plain, redact_text) is None


def test_credentials_in_a_repository_url_are_not_kept() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "repo", "labels": {"argocd.argoproj.io/secret-type": "repository"}},
        "data": {"url": _b64("https://deploy:glpat-Qz7xREPOpassword99@git.example.com/acme/app.git"),
                 "password": _b64("glpat-Qz7xREPOpassword99")}}
    facts = public_facts(secret, redact_text)
    assert facts is not None and "glpat" not in facts["url"] and "git.example.com/acme/app.git" in facts["url"]


def test_a_redacted_bundle_keeps_the_facts_and_reading_it_again_keeps_them() -> None:
    token = _jwt({"exp": 1764460800})
    written = Redactor().obj(_cluster({"bearerToken": token}))
    assert written[KEY]["tokenExpiresAt"] == "2025-11-30T00:00:00Z" and token not in json.dumps(written)
    again = redact_object(json.loads(json.dumps(written)))
    assert again[KEY] == written[KEY]


def test_odd_values_in_a_cluster_config_do_not_stop_the_redaction() -> None:
    secret = _cluster({"execProviderConfig": {"command": "argocd-k8s-auth", "args": 5}, "bearerToken": 7})
    written = Redactor().obj(secret)
    assert written[KEY]["auth"] == ["execProvider"] and written[KEY]["execCommand"] == "argocd-k8s-auth"


def test_facts_a_bundle_already_carries_are_cleaned_again() -> None:
    forged = _cluster({})
    forged[KEY] = {"url": "https://deploy:hunter2hunter2@git.example.com/x.git", "auth": ["bearerToken"], "x": {}}
    facts = public_facts(forged, redact_text)
    assert facts is not None and "hunter2" not in facts["url"] and "x" not in facts
