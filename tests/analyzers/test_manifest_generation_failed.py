"""manifest-generation-failed: ComparisonErrors as the controller writes them, explained by the repo-server's pods,
logs and timeouts; an Application's own error is never blamed on the repo-server's load."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor import knowledge
from argo_doctor.facts.manifests import explain
from tests.conftest import EXAMPLES, scan_json

RULE = "manifest-generation-failed"
BUNDLE = EXAMPLES / "incidents" / "manifest-generation"
Doc = dict[str, Any]


def _findings(tmp_path: Path, change: Callable[[list[Doc], list[Doc]], None] | None = None,
              logs: bool = True) -> list[Doc]:
    """The rule's findings on a copy of the example, its objects changed by `change(argocd, applications)`."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    if not logs:
        shutil.rmtree(bundle / "logs")
    if change is not None:
        files = [bundle / "objects" / "argocd" / name for name in ("argocd.yaml", "applications.yaml")]
        lists = [yaml.safe_load(f.read_text()) for f in files]
        change(lists[0]["items"], lists[1]["items"])
        for path, doc in zip(files, lists, strict=True):
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return [f for f in scan_json(bundle, "--rule", RULE)["findings"]]


def _named(items: list[Doc], kind: str, name: str) -> Doc:
    return next(o for o in items if o["kind"] == kind and o["metadata"]["name"] == name)


def test_the_load_is_one_finding_with_the_oom_kills_the_unfinished_renders_and_the_timeouts(tmp_path: Path) -> None:
    load, own = _findings(tmp_path)
    assert load["severity"] == "high"
    assert load["title"] == "Repo-server cannot render 4 Applications: out of memory, timeouts do not nest"
    assert '3 with "context deadline exceeded" (shop-frontend, shop-api, payments-gateway)' in load["summary"]
    assert '1 with "error reading from server: EOF" (shop-search)' in load["summary"]
    assert "memory limit 1Gi, 7 restarts, last at 2026-11-30T09:21:36Z" in load["summary"]
    assert "3 renders started and never finished: shop-api, payments-gateway, shop-search" in load["summary"]
    assert "the application controller waits 1m00s, its default" in load["summary"]
    assert "a render that took 1m32s" in load["summary"]
    assert "9 requests were waiting for a repository lock when the metrics were read" in load["summary"]
    assert any(e["location"] == "metrics/argocd-repo-server.prom:3" for e in load["evidence"])
    fix = load["remediation"]["text"]
    assert "controller.repo.server.timeout.seconds and server.repo.server.timeout.seconds in argocd-cmd-params-cm " \
           "to 210" in fix
    assert "reposerver.parallelism.limit in argocd-cmd-params-cm is unlimited now" in fix
    assert "inventory" not in load["summary"]
    assert own["severity"] == "medium"
    assert own["title"] == "Manifests of inventory cannot be generated: apps/inventory/overlays/prod: app path does " \
                           "not exist"
    assert "Set spec.source.path to a directory that exists" in own["remediation"]["text"]
    assert "ARGOCD_PAUSE_GEN_MINUTES" in own["summary"]


def test_timeouts_that_nest_are_not_blamed_and_the_oom_stays(tmp_path: Path) -> None:
    def nested(argocd: list[Doc], apps: list[Doc]) -> None:
        _named(argocd, "ConfigMap", "argocd-cmd-params-cm")["data"].update({
            "controller.repo.server.timeout.seconds": "240", "server.repo.server.timeout.seconds": "240"})
    load, _ = _findings(tmp_path, nested)
    assert load["title"].endswith(": out of memory")
    assert "do not nest" not in load["summary"] and "210" not in load["remediation"]["text"]


def test_a_caller_deadline_without_a_known_cause_gets_the_row_s_advice(tmp_path: Path) -> None:
    def calm(argocd: list[Doc], apps: list[Doc]) -> None:
        for pod in argocd:
            if pod["kind"] == "Pod":
                for status in pod["status"]["containerStatuses"]:
                    status.pop("lastState", None)
        _named(argocd, "Deployment", "argocd-repo-server")["spec"]["template"]["spec"]["containers"][0]["env"][0][
            "value"] = "45s"
        for app in apps:
            if app["metadata"]["name"] == "shop-search":
                app["status"]["conditions"] = []
    load, _ = _findings(tmp_path, calm, logs=False)
    assert load["title"] == "Repo-server cannot render 3 Applications: caller deadline"
    assert "Make the caller wait longer than the repo-server lets a command run" in load["remediation"]["text"]


def test_an_own_cause_among_load_errors_is_never_grouped_with_the_load(tmp_path: Path) -> None:
    def values(argocd: list[Doc], apps: list[Doc]) -> None:
        app = _named(apps, "Application", "shop-api")
        app["status"]["conditions"][0]["message"] = (
            "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown "
            "desc = failed to execute helm template command: failed running helm: `helm template . --name-template "
            "shop-api --values <path to cached source>/charts/shop-api/values-prod.yaml --include-crds` failed exit "
            "status 1: Error: open <path to cached source>/charts/shop-api/values-prod.yaml: no such file or "
            "directory")
    findings = _findings(tmp_path, values)
    load = findings[0]
    assert load["title"].startswith("Repo-server cannot render 3 Applications")
    assert "shop-api" not in load["summary"].split("never finished")[0]
    [own] = [f for f in findings if "shop-api" in f["title"]]
    assert own["title"].endswith("values-prod.yaml: no such file or directory")
    assert "helm.ignoreMissingValueFiles" in own["remediation"]["text"]


def test_commands_killed_at_the_exec_timeout_are_cited(tmp_path: Path) -> None:
    timeout = ('2026-11-30T09:25:01.000000001Z time="2026-11-30T09:25:01Z" level=error msg="`helm template . '
               '--name-template shop-api --namespace shop --kube-version 1.30 <api versions removed> --include-crds` '
               'failed timeout after 3m0s" execID=9a8b7\n')

    def killed(argocd: list[Doc], apps: list[Doc]) -> None:
        for app in apps:
            for cond in app["status"].get("conditions", []):
                cond["message"] = cond["message"].replace(
                    "DeadlineExceeded desc = context deadline exceeded",
                    "Unknown desc = failed to execute helm template command: failed running helm: `helm template . "
                    "--name-template x --include-crds` failed timeout after 3m0s")
    bundle = tmp_path / "first"
    bundle.mkdir()
    findings = _findings(bundle, killed)
    log = tmp_path / "first" / "bundle" / "logs" / "argocd" / "argocd-repo-server-5f8b9c7d6d-z5m2c" / \
        "argocd-repo-server.log"
    log.write_text(log.read_text() + timeout)
    after = [f for f in scan_json(tmp_path / "first" / "bundle", "--rule", RULE)["findings"]]
    assert "killed at its exec timeout" not in findings[0]["summary"]
    assert "The repo-server's log shows 1 command killed at its exec timeout." in after[0]["summary"]
    assert any("failed timeout after 3m0s" in e["excerpt"] for e in after[0]["evidence"])


def test_app_unhealthy_and_sync_failed_leave_a_render_error_to_this_rule() -> None:
    doc = scan_json(EXAMPLES / "argocd-basic")
    about_legacy = [(f["rule"], f["severity"]) for f in doc["findings"] if "legacy-app" in f["title"]]
    assert about_legacy == [(RULE, "high")]
    [finding] = [f for f in doc["findings"] if f["rule"] == RULE]
    assert "Its last sync ended Error on the same error (2026-11-20T14:21:05Z)" in finding["summary"]
    assert finding["title"].endswith("chart requires kubeVersion: >=1.19.0-0 <1.25.0-0 which is incompatible with "
                                     "Kubernetes v1.29.0")


@pytest.mark.parametrize("row", knowledge.manifest_errors(), ids=lambda r: r.id)
def test_each_row_s_example_is_read_as_that_row(row: knowledge.KnownError) -> None:
    error = explain(row.example)
    assert error.row is not None and error.row.id == row.id
    assert error.code and error.detail and not error.detail.startswith(("rpc error", "Failed to load"))


AUTH = ("Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = "
        "failed to list refs: authentication required: Repository not found.")


def _auth(argocd: list[Doc], apps: list[Doc]) -> None:
    for name in ("shop-api", "payments-gateway"):
        _named(apps, "Application", name)["status"]["conditions"][0]["message"] = AUTH


def test_applications_of_one_repository_refused_for_one_reason_are_one_finding(tmp_path: Path) -> None:
    def with_secret(argocd: list[Doc], apps: list[Doc]) -> None:
        _auth(argocd, apps)
        argocd.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {
            "name": "repo-platform-deploy", "namespace": "argocd",
            "labels": {"argocd.argoproj.io/secret-type": "repository"}},
            "data": {"url": "aHR0cHM6Ly9naXQuYWNtZS1yZXRhaWwuZXhhbXBsZS9wbGF0Zm9ybS9kZXBsb3kuZ2l0",
                     "username": "Y2ktYm90", "password": "Z2xwYXQtc2VjcmV0LXZhbHVlLTEyMzQ1"}})
    findings = _findings(tmp_path, with_secret, logs=False)
    [repo] = [f for f in findings if "cannot reach" in f["title"]]
    assert repo["title"] == "2 Applications cannot reach https://git.acme-retail.example/platform/deploy.git: repo auth"
    assert "Argo CD sends the credentials of Secret argocd/repo-platform-deploy (repository, " \
           "https://git.acme-retail.example/platform/deploy.git: keys password, username)" in repo["summary"]
    assert "glpat-secret" not in str(findings) and "Y2ktYm90" not in str(findings)
    load = next(f for f in findings if f["title"].startswith("Repo-server"))
    assert "shop-api" not in load["summary"].split(".")[0]


def test_no_matching_secret_means_no_credentials_and_no_secrets_means_unknown(tmp_path: Path) -> None:
    def other_secret(argocd: list[Doc], apps: list[Doc]) -> None:
        _auth(argocd, apps)
        argocd.append({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "argocd-secret", "namespace": "argocd"}, "data": {"server.secretkey": "eA=="}})
    [repo] = [f for f in _findings(tmp_path / "a", other_secret, logs=False) if "cannot reach" in f["title"]]
    assert "No repository or repo-creds Secret of the input matches" in repo["summary"]
    [repo] = [f for f in _findings(tmp_path / "b", _auth, logs=False) if "cannot reach" in f["title"]]
    assert "The input holds no Secrets" in repo["summary"]
