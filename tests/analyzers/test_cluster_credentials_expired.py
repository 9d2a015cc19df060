"""cluster-credentials-expired: cluster Secrets as Argo CD stores them (config JSON with a JWT bearer token, a client
certificate, an AWS role), the controller's `Failed to sync cluster` lines and the Applications' conditions."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

RULE = "cluster-credentials-expired"
BUNDLE = EXAMPLES / "incidents" / "cluster-credentials"


def _copy(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    return bundle, yaml.safe_load((bundle / "objects" / "argocd" / "argocd.yaml").read_text())


def _save(bundle: Path, doc: dict[str, Any]) -> None:
    (bundle / "objects" / "argocd" / "argocd.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def test_an_expired_token_and_a_certificate_about_to_expire(tmp_path: Path) -> None:
    doc = scan_json(BUNDLE)
    expired, soon = [f for f in doc["findings"] if f["rule"] == RULE]
    assert expired["severity"] == "high" and expired["title"] == "Cluster prod-eu: Argo CD's credentials expired"
    assert "its bearer token expired at 2026-11-29T23:00:00Z" in expired["summary"]
    assert "Applications deploying there: argocd/tracking-api, argocd/route-planner" in expired["summary"]
    assert sum(e["location"].endswith(".log:1") or ".log:" in e["location"] for e in expired["evidence"]) == 3
    assert "argocd cluster rotate-auth https://prod-eu.k8s.acme-logistics.example:6443" in \
           expired["remediation"]["text"]
    assert [e["excerpt"] for e in expired["evidence"] if e["kind"] == "metric"] == [
        "argocd_cluster_connection_status{server=https://prod-eu.k8s.acme-logistics.example:6443} 0"]
    assert soon["severity"] == "medium"
    assert soon["title"] == "Cluster staging: Argo CD's client certificate expires in 4 days"
    assert not [f for f in doc["findings"] if f["rule"] == "app-unhealthy"]


def test_no_credential_appears_in_any_output() -> None:
    doc = yaml.safe_load((BUNDLE / "objects" / "argocd" / "argocd.yaml").read_text())
    configs = [json.loads(base64.b64decode(s["data"]["config"])) for s in doc["items"] if s["kind"] == "Secret"]
    token = configs[0]["bearerToken"]
    key = base64.b64decode(configs[1]["tlsClientConfig"]["keyData"]).decode().splitlines()[1]
    for output in ("json", "markdown", "sarif", "html"):
        from click.testing import CliRunner

        from argo_doctor.cli import main
        text = CliRunner().invoke(main, ["scan", str(BUNDLE), "-o", output, "--fail-on", "never"]).stdout
        for part in (token, token.split(".")[1], token.split(".")[2][:24], key):
            assert part not in text, output


def test_a_refusal_without_a_known_expiry_is_reported_as_refused(tmp_path: Path) -> None:
    bundle, doc = _copy(tmp_path)
    prod = doc["items"][0]
    prod["data"]["config"] = base64.b64encode(json.dumps({"execProviderConfig": {
        "command": "argocd-k8s-auth", "args": ["gcp"], "apiVersion": "client.authentication.k8s.io/v1beta1"}})
        .encode()).decode()
    _save(bundle, doc)
    [refused] = [f for f in scan_json(bundle, "--rule", RULE)["findings"] if "prod-eu" in f["title"]]
    assert refused["title"] == "Cluster prod-eu: Argo CD's credentials are refused"
    assert "authenticating with execProvider" in refused["summary"]
    assert "argocd-k8s-auth gcp" in refused["remediation"]["text"]


def test_credentials_far_from_expiry_and_without_errors_are_silent(tmp_path: Path) -> None:
    bundle, doc = _copy(tmp_path)
    doc["items"] = [i for i in doc["items"] if i["metadata"]["name"] != "cluster-prod-eu"]
    _save(bundle, doc)
    (bundle / "logs").rename(tmp_path / "logs-away")
    findings = scan_json(bundle, "--rule", RULE, "--option", "cluster-credentials-expired.warn-days=3")["findings"]
    assert findings == []


def test_an_unknown_application_of_a_cluster_without_a_secret_stays_app_unhealthy_s(tmp_path: Path) -> None:
    bundle, doc = _copy(tmp_path)
    doc["items"] = [i for i in doc["items"] if i["kind"] != "Secret"]
    _save(bundle, doc)
    rules = {f["rule"] for f in scan_json(bundle)["findings"]}
    assert "app-unhealthy" in rules and RULE not in rules
