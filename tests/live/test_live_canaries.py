"""No secret read from a live cluster reaches a collected bundle or any output of any command, in any format."""

from __future__ import annotations

import base64
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from tests.live.fakeapi import FakeApiServer, load_bundle, write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "examples" / "argocd-basic"
JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJjYW5hcnktand0LTdmM2EifQ."
       "c2lnbmF0dXJlLWNhbmFyeS1qd3QtN2YzYS1zaWduZWQtYnktbm9ib2R5")
CANARIES = {
    "secret-data": "canary-secret-data-1f4e9a",
    "secret-string-data": "canary-string-data-8b2c71",
    "configmap-url": "canary-cm-password-3d9e0f",
    "annotation": "canary-annotation-token-5a7c2e",
    "helm-values": "canary-helm-password-9c1d44",
    "helm-values-object": "canary-helm-object-token-2e8f61",
    "env": "canary-env-password-6b3a90",
    "log-url": "canary-log-password-0f7d3c",
    "log-jwt": JWT,
}


def _planted() -> tuple[list[dict[str, Any]], dict[tuple[str, str, str, bool], str]]:
    objects, logs = load_bundle(BUNDLE)
    objects = [o for o in objects if o.get("kind") != "Secret"]
    objects.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {
        "name": "repo-creds", "namespace": "argocd", "labels": {"argocd.argoproj.io/secret-type": "repository"},
        "annotations": {"example.com/token": f"token={CANARIES['annotation']}"}},
        "data": {"password": base64.b64encode(CANARIES["secret-data"].encode()).decode()},
        "stringData": {"sshPrivateKey": CANARIES["secret-string-data"]}})
    objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-notifications-cm",
                    "namespace": "argocd"}, "data": {"service.webhook.hook": "url: https://bot:"
                                                     f"{CANARIES['configmap-url']}@hooks.example.com/x"}})
    for obj in objects:
        if obj.get("kind") in ("Application", "Event"):  # the Secret's value, reused where no pattern would see it
            obj.setdefault("metadata", {}).setdefault("annotations", {})["example.com/note"] = \
                f"reused {CANARIES['secret-data']} here"
            if obj.get("kind") == "Event":
                obj["message"] = f"pulled with {CANARIES['secret-data']}"
        if obj.get("kind") == "Application":
            obj.setdefault("spec", {}).setdefault("source", {})["helm"] = {
                "values": f"db:\n  password: {CANARIES['helm-values']}\n",
                "valuesObject": {"api": {"token": CANARIES["helm-values-object"]}}}
        if obj.get("kind") == "Deployment" and obj["metadata"]["name"] == "argocd-repo-server":
            containers = obj["spec"]["template"]["spec"]["containers"]
            containers[0].setdefault("env", []).append({"name": "GIT_PASSWORD", "value": CANARIES["env"]})
    key = next(k for k in logs if k[1].startswith("argocd-repo-server"))
    logs[key] += (f'2026-11-20T14:30:00.000000001Z time="2026-11-20T14:30:00Z" level=error msg="fetch '
                  f'https://git:{CANARIES["log-url"]}@git.example.com/repo.git failed" token="Bearer {JWT}"\n')
    return objects, logs


def _leaks(text: str) -> list[str]:
    found = []
    for name, value in CANARIES.items():
        if value in text or base64.b64encode(value.encode()).decode() in text:
            found.append(name)
    return found


def _tree_text(root: Path) -> str:
    if root.is_file():
        with tarfile.open(root) as tar:
            return "\n".join(tar.extractfile(m).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                             for m in tar.getmembers() if m.isfile())
    return "\n".join(p.read_text("utf-8", "replace") for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    objects, logs = _planted()
    with FakeApiServer(objects, logs) as api:
        yield api, write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig", {"test": api}, "test")


def test_a_collected_bundle_holds_no_canary(cluster: Any, tmp_path: Path) -> None:
    _api, kubeconfig = cluster
    for out in (tmp_path / "folder", tmp_path / "bundle.tar.gz"):
        result = CliRunner().invoke(main, ["collect", "-o", str(out), "--kubeconfig", str(kubeconfig), "-q"])
        assert result.exit_code == 0, result.output
        assert _leaks(_tree_text(out)) == []
        assert _leaks(result.output) == []
    text = _tree_text(tmp_path / "folder")
    assert "sha256:" in text and "repo-creds" in text, "the Secret is there, fingerprinted"


def test_no_redact_keeps_values_and_warns(cluster: Any, tmp_path: Path) -> None:
    _api, kubeconfig = cluster
    result = CliRunner().invoke(main, ["collect", "-o", str(tmp_path / "raw"), "--kubeconfig", str(kubeconfig), "-q",
                                       "--no-redact"])
    assert "WARNING" in result.stderr and "--no-redact" in result.stderr
    assert "secret-string-data" in _leaks(_tree_text(tmp_path / "raw"))


@pytest.mark.parametrize("args", [
    ["scan", "-o", "json"], ["scan", "-o", "table"], ["scan", "-o", "markdown"],
    ["timeline", "-o", "json"], ["timeline"], ["health", "-o", "json"], ["health"],
    ["deprecations", "-o", "json"], ["deprecations"],
])
def test_no_output_of_a_live_command_holds_a_canary(cluster: Any, args: list[str]) -> None:
    _api, kubeconfig = cluster
    result = CliRunner().invoke(main, [*args, "--live", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code in (0, 1), result.output
    assert _leaks(result.stdout + result.stderr) == []
    if args[0] == "scan" and args[-1] == "json":
        assert json.loads(result.stdout)["findings"]
