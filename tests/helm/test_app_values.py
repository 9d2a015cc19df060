"""helm-nondeterministic-render with each Application's Helm values (tests/bundles/helm-values): valueFiles from the
bundle's repo/, values, valuesObject and parameters in Argo CD's order, and notes for what cannot be read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.model import Finding, Severity
from argo_doctor.sources import bundle

TESTS = Path(__file__).resolve().parents[1]
BUNDLE = TESTS / "bundles" / "helm-values"
CHART = TESTS / "helm" / "charts" / "gated-platform"


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Finding]:
    root = tmp_path_factory.mktemp("bundle") / "helm-values"
    shutil.copytree(BUNDLE, root)
    shutil.copytree(CHART, root / "repo" / "charts" / "gated-platform")
    result = run_scan(bundle.load([root]), select_analyzers(only=("helm-nondeterministic-render",)))
    out: dict[str, Finding] = {}
    for finding in result.findings:
        (app,) = [r.name for r in finding.objects if r.kind == "Application"]
        out[app] = finding
    return out


def test_defaults_generate_the_webhook_ca(findings: dict[str, Finding]) -> None:
    finding = findings["platform-defaults"]
    assert finding.severity == Severity.HIGH
    assert "ValidatingWebhookConfiguration gated-validator webhooks[].clientConfig.caBundle ← genCA" in finding.summary
    assert "set webhook.certManager.enabled: true (now false)" in finding.summary
    assert "Values:" not in finding.summary


def test_a_value_file_from_the_repo_clears_what_it_turns_off(findings: dict[str, Finding]) -> None:
    finding = findings["platform-prod"]
    # values-prod.yaml turns cert-manager on and the sessions cache off: only the cluster-dependent probe is left
    assert finding.severity == Severity.LOW
    assert finding.title.startswith("Chart gated-platform may regenerate ConfigMap data.probe-id")
    assert "genCA" not in finding.summary and "gated-webhook-tls" not in finding.summary
    assert "may be reached" in finding.summary


def test_values_object_and_parameters_apply_after_the_files(findings: dict[str, Finding]) -> None:
    finding = findings["platform-params"]
    assert finding.severity == Severity.HIGH
    assert "Secret gated-api-token data.token ← randAlphaNum" in finding.summary  # parameter auth.mode=generated
    assert "genCA" not in finding.summary  # valuesObject turned cert-manager on
    assert "data.password" not in finding.summary  # forceString parameter set the sessions password


def test_inline_values_and_an_ignored_missing_file(findings: dict[str, Finding]) -> None:
    finding = findings["platform-inline"]
    assert finding.severity == Severity.LOW
    assert "genCA" not in finding.summary and "data.password" not in finding.summary
    assert "values-eu.yaml" not in finding.summary  # ignoreMissingValueFiles: true


def test_a_value_file_of_another_source_is_a_note(findings: dict[str, Finding]) -> None:
    finding = findings["platform-multi"]
    assert finding.severity == Severity.HIGH  # the chart's own values generate the CA
    assert "value file $values/envs/eu-1/platform.yaml comes from another source of the Application: not read" \
        in finding.summary


def test_one_finding_per_application_and_none_for_the_chart_alone(findings: dict[str, Finding]) -> None:
    assert set(findings) == {"platform-defaults", "platform-prod", "platform-params", "platform-inline",
                             "platform-multi"}


def test_value_files_across_the_repo_and_those_that_cannot_be_read(tmp_path: Path) -> None:
    root = tmp_path / "helm-values"
    shutil.copytree(BUNDLE, root)
    shutil.copytree(CHART, root / "repo" / "charts" / "gated-platform")
    (root / "repo" / "envs" / "eu-1").mkdir(parents=True)
    (root / "repo" / "envs" / "eu-1" / "platform.yaml").write_text("auth:\n  mode: generated\n")
    (root / "repo" / "charts" / "gated-platform" / "values-broken.yaml").write_text("webhook: [unclosed\n")
    apps = root / "objects" / "argocd" / "applications.yaml"
    apps.write_text(apps.read_text().replace(
        "      - values-prod.yaml",
        "      - values-prod.yaml\n      - ../../envs/eu-1/platform.yaml\n      - values-missing.yaml\n"
        "      - /envs/shared.yaml\n      - ../../../outside.yaml\n      - https://config.example.org/platform.yaml\n"
        "      - envs/*.yaml\n      - values-broken.yaml",
    ))
    result = run_scan(bundle.load([root]), select_analyzers(only=("helm-nondeterministic-render",)))
    (prod,) = [f for f in result.findings if any(r.name == "platform-prod" for r in f.objects)]
    assert prod.severity == Severity.HIGH
    assert "Secret gated-api-token data.token ← randAlphaNum" in prod.summary  # from ../../envs/eu-1/platform.yaml
    assert "genCA" not in prod.summary  # values-prod.yaml was read too
    assert "value file values-missing.yaml is not in the input's repo/" in prod.summary
    assert "value file /envs/shared.yaml is not in the input's repo/" in prod.summary  # from the repository root
    assert "value file ../../../outside.yaml is outside the repository: not read" in prod.summary
    assert "value file https://config.example.org/platform.yaml is a URL: not read" in prod.summary
    assert "value file pattern envs/*.yaml not expanded" in prod.summary
    assert "value file charts/gated-platform/values-broken.yaml:2: invalid YAML" in prod.summary


def test_a_vendored_sub_chart_is_reported_within_its_parent_only(tmp_path: Path) -> None:
    root = tmp_path / "helm-values"
    shutil.copytree(BUNDLE, root)
    (root / "objects" / "argocd" / "applications.yaml").unlink()
    shutil.copytree(TESTS / "helm" / "charts" / "umbrella", root / "repo" / "shop")
    result = run_scan(bundle.load([root]), select_analyzers(only=("helm-nondeterministic-render",)))
    (finding,) = result.findings
    assert finding.title.startswith("Chart shop regenerates")
    assert "metrics-scrape-token" in finding.summary  # the sub-chart's own output, with the parent's values
    assert "set metrics.scrapeToken" in finding.summary
