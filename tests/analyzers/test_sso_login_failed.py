"""sso-login-failed: argocd-cm's oidc.config against the API server's `Failed to verify oidc token` lines (go-oidc's
messages as Argo CD logs them)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

RULE = "sso-login-failed"
BUNDLE = EXAMPLES / "incidents" / "sso-login"
LOG = Path("logs/argocd/argocd-server-6d8b7f9c5-r7n4d/argocd-server.log")


def _scan(tmp_path: Path, data: dict[str, str] | None = None, log: str | None = None) -> list[dict[str, Any]]:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    if data is not None:
        path = bundle / "objects" / "argocd" / "argocd.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["items"][0]["data"] = data
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    if log is not None:
        (bundle / LOG).write_text(log)
    return list(scan_json(bundle, "--rule", RULE)["findings"])


def test_an_issuer_that_differs_by_a_slash_and_groups_never_requested(tmp_path: Path) -> None:
    refused, groups = _scan(tmp_path)
    assert refused["severity"] == "high"
    assert "the token comes from issuer https://login.acme-travel.example/oauth2/default/, and Argo CD expects " \
           "https://login.acme-travel.example/oauth2/default" in refused["summary"]
    assert "Make `issuer` in oidc.config exactly https://login.acme-travel.example/oauth2/default/" in \
           refused["remediation"]["text"]
    assert groups["severity"] == "low" and "requests only openid, profile, email" in groups["summary"]


def test_an_audience_mismatch_and_keys_that_cannot_be_fetched(tmp_path: Path) -> None:
    line = ('2026-11-30T13:02:19.880241016Z time="2026-11-30T13:02:19Z" level=warning msg="Failed to verify oidc '
            'token: failed to verify token: oidc: expected audience \\"0oa7k2x9mTRAVEL4d5\\" got '
            '[\\"0oa1other\\"]"\n'
            '2026-11-30T13:03:19.880241016Z time="2026-11-30T13:03:19Z" level=warning msg="Failed to verify oidc '
            'token: failed to verify token: failed to verify signature: fetching keys oidc: get keys failed: Get '
            '\\"https://login.acme-travel.example/oauth2/default/v1/keys\\": x509: certificate signed by unknown '
            'authority"\n')
    [refused, _] = _scan(tmp_path, log=line)
    assert "the token is for audience 0oa1other, and Argo CD expects its client id 0oa7k2x9mTRAVEL4d5" in \
           refused["summary"]
    assert "Argo CD cannot check the token's signature" in refused["summary"]


def test_sso_without_url_and_configs_that_are_fine(tmp_path: Path) -> None:
    oidc = ("name: Okta\nissuer: https://login.acme-travel.example/oauth2/default/\nclientID: x\n"
            "requestedScopes: [openid, profile, email, groups]\n")
    [no_url] = _scan(tmp_path / "a", {"oidc.config": oidc}, log="")
    assert no_url["title"] == "SSO is configured but argocd-cm has no url" and no_url["severity"] == "high"
    assert _scan(tmp_path / "b", {"url": "https://argocd.acme-travel.example", "oidc.config": oidc}, log="") == []
    assert _scan(tmp_path / "c", {"url": "https://argocd.acme-travel.example"}, log="") == []


def test_groups_asked_as_an_id_token_claim_and_role_inheritance_are_no_group_grant(tmp_path: Path) -> None:
    oidc = ("name: Azure\nissuer: https://login.microsoftonline.com/tid/v2.0\nclientID: x\n"
            "requestedScopes: [openid, profile, email]\nrequestedIDTokenClaims: {groups: {essential: true}}\n")
    assert _scan(tmp_path / "a", {"url": "https://argocd.acme-travel.example", "oidc.config": oidc}, log="") == []
    bundle = tmp_path / "b" / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "argocd" / "argocd.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["items"][1]["data"]["policy.csv"] = "p, role:ci, applications, sync, */*, allow\ng, role:ci, role:readonly\n"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    (bundle / LOG).write_text("")
    assert scan_json(bundle, "--rule", RULE)["findings"] == []


def test_dex_s_refusals_are_read_from_its_log(tmp_path: Path) -> None:
    dex = ("connectors:\n- type: github\n  id: github\n  name: GitHub\n  config:\n    clientID: abc\n"
           "    clientSecret: $dex.github.clientSecret\n    orgs:\n    - name: acme-travel\n")
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "argocd" / "argocd.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["items"][0]["data"] = {"url": "https://argocd.acme-travel.example", "dex.config": dex}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    (bundle / LOG).write_text("")
    folder = bundle / "logs" / "argocd" / "argocd-dex-server-5c8f7d9b6-m2k4p"
    folder.mkdir(parents=True)
    (folder / "dex.log").write_text(
        '2026-11-30T13:20:41.112Z time=2026-11-30T13:20:41.112Z level=ERROR msg="unregistered redirect_uri" '
        "redirect_uri=https://10.0.4.17:8080/auth/callback client_id=argo-cd\n"
        '2026-11-30T13:22:41.112Z time=2026-11-30T13:22:41.112Z level=ERROR msg="failed to authenticate" '
        'err="user \\"jdoe\\" is not in any of the required groups [acme-travel/platform]"\n')
    [finding] = scan_json(bundle, "--rule", RULE)["findings"]
    assert "Dex refuses the redirect URI https://10.0.4.17:8080/auth/callback" in finding["summary"]
    assert "Dex's connector admits only members of [acme-travel/platform]" in finding["summary"]
    assert "list the other address under `additionalUrls`" in finding["remediation"]["text"]
