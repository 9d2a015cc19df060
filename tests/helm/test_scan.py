"""Helm chart scan: non-deterministic template calls, where they land, and the values that avoid them."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from argo_doctor.helm import ChartReport, NondeterministicUse, nondeterministic_functions, scan_chart
from argo_doctor.sources.charts import find_charts

CHARTS = Path(__file__).resolve().parent / "charts"
CA_BUNDLE = ("webhooks", "[]", "clientConfig", "caBundle")


def _uses(report: ChartReport, function: str) -> list[NondeterministicUse]:
    return [u for u in report.uses if u.function == function]


def _settings(use: NondeterministicUse) -> set[tuple[tuple[str, str], ...]]:
    return {s.settings for s in use.switches}


# -- 1. webhook certificates generated in a define, reached through fromYaml(include ...) --------------


@pytest.fixture(scope="module")
def webhook() -> ChartReport:
    return scan_chart(CHARTS / "webhook-certs")


def test_webhook_chart_metadata(webhook: ChartReport) -> None:
    assert (webhook.name, webhook.version) == ("gateway-admission", "0.7.2")
    assert webhook.problems == []


def test_ca_lands_in_both_webhook_configurations(webhook: ChartReport) -> None:
    bundles = [u for u in _uses(webhook, "genCA") if u.field == CA_BUNDLE]
    assert {(u.resource_kind, u.resource_name) for u in bundles} == {
        ("MutatingWebhookConfiguration", "gateway-admission-mutator"),
        ("ValidatingWebhookConfiguration", "gateway-admission-validator"),
    }
    for use in bundles:
        assert use.kind == "random"
        assert use.call == "templates/_helpers.tpl:42"
        assert use.via == ("templates/webhook.yaml:2", "define gateway-admission.webhookTLS")
    assert {u.output for u in bundles} == {"templates/webhook.yaml:13", "templates/webhook.yaml:36"}


def test_caBundle_carries_the_ca_only(webhook: ChartReport) -> None:
    # $tls.caCert holds genCA's output; the signed leaf goes to tlsCert / tlsKey only.
    assert not [u for u in _uses(webhook, "genSignedCert") if u.field == CA_BUNDLE]


def test_generated_material_lands_in_the_tls_secret(webhook: ChartReport) -> None:
    secret = [u for u in webhook.uses if u.resource_kind == "Secret"]
    assert {u.resource_name for u in secret} == {"gateway-admission-webhook-tls"}
    assert {(u.function, u.field) for u in secret} == {
        ("genCA", ("data", "ca.crt")),
        ("genCA", ("data", "tls.crt")),
        ("genCA", ("data", "tls.key")),
        ("genSignedCert", ("data", "tls.crt")),
        ("genSignedCert", ("data", "tls.key")),
    }
    assert all(u.field[0] == "data" for u in secret)


def test_webhook_switches(webhook: ChartReport) -> None:
    expected = {
        (("enableCertManager", "true"),),
        (("webhookTLS.caCert", "<set>"), ("webhookTLS.cert", "<set>"), ("webhookTLS.key", "<set>")),
    }
    for use in webhook.uses:
        assert _settings(use) == expected, use
    texts = {s.text for s in webhook.uses[0].switches}
    assert "set enableCertManager: true (now false)" in texts
    assert "set webhookTLS.caCert, webhookTLS.cert and webhookTLS.key (now unset)" in texts


def test_values_files_change_the_reported_defaults(tmp_path: Path) -> None:
    override = tmp_path / "prod.yaml"
    override.write_text("webhookTLS:\n  caCert: PEM\n")
    report = scan_chart(CHARTS / "webhook-certs", values_files=[override])
    texts = {s.text for s in report.uses[0].switches}
    assert "set enableCertManager: true (now false)" in texts
    assert any('webhookTLS.caCert (already "PEM")' in t and "webhookTLS.cert" in t for t in texts)


def test_a_values_file_that_turns_the_generating_branch_off_clears_the_finding(tmp_path: Path) -> None:
    override = tmp_path / "prod.yaml"
    override.write_text("enableCertManager: true\n")
    assert scan_chart(CHARTS / "webhook-certs", values_files=[override]).uses == []
    assert scan_chart(CHARTS / "webhook-certs", sets=["enableCertManager=true"]).uses == []
    # --set-string gives the string "true": still truthy in a template
    assert scan_chart(CHARTS / "webhook-certs", set_strings=["enableCertManager=true"]).uses == []
    # all three fixed TLS values given: the else branch that generates them is not reached either
    tls = "webhookTLS.caCert=PEM,webhookTLS.cert=PEM,webhookTLS.key=PEM"
    assert scan_chart(CHARTS / "webhook-certs", sets=[tls]).uses == []
    assert scan_chart(CHARTS / "webhook-certs", sets=["webhookTLS.caCert=PEM"]).uses


def test_cert_manager_and_deployment_templates_are_clean(webhook: ChartReport) -> None:
    assert {u.output.split(":")[0] for u in webhook.uses} == {"templates/webhook.yaml"}


# -- 2. calls written straight into the manifest --------------------------------------------------


@pytest.fixture(scope="module")
def direct() -> ChartReport:
    return scan_chart(CHARTS / "direct")


def test_random_password_in_secret_data(direct: ChartReport) -> None:
    (use,) = [u for u in _uses(direct, "randAlphaNum") if u.field == ("data", "password")]
    assert use.call == use.output == "templates/secret.yaml:9"
    assert use.via == ()
    assert (use.resource_kind, use.resource_name) == ("Secret", "{{ .Release.Name }}-db")
    assert use.switches == ()


def test_time_in_an_annotation(direct: ChartReport) -> None:
    (use,) = _uses(direct, "now")
    assert use.kind == "time"
    assert use.field == ("metadata", "annotations", "example.org/generated-on")


def test_default_with_a_random_fallback_is_avoided_by_setting_the_value(direct: ChartReport) -> None:
    (use,) = [u for u in _uses(direct, "randAlphaNum") if u.field == ("data", "admin-password")]
    (switch,) = use.switches
    assert switch.settings == (("adminPassword", "<set>"),)
    assert switch.text == 'set adminPassword (now "")'


def test_random_pod_annotation_is_avoided_by_turning_the_flag_off(direct: ChartReport) -> None:
    (use,) = _uses(direct, "uuidv4")
    assert use.field == ("spec", "template", "metadata", "annotations", "example.org/roll")
    assert use.resource_kind == "Deployment"
    assert [s.settings for s in use.switches] == [(("rollOnEveryRender", "false"),)]


# -- 3. "keep the existing secret" through lookup -------------------------------------------------------


@pytest.fixture(scope="module")
def lookup_secret() -> ChartReport:
    return scan_chart(CHARTS / "lookup-secret")


def test_lookup_and_its_random_fallback_in_a_define(lookup_secret: ChartReport) -> None:
    found = {
        (u.function, u.kind, u.call)
        for u in lookup_secret.uses
        if u.output == "templates/secret.yaml:7" and u.field == ("data", "password")
    }
    # `helm template` has no cluster: the lookup finds nothing, so the branch that reuses the existing Secret is
    # never taken and the random fallback always is
    assert found == {("randAlphaNum", "random", "templates/_helpers.tpl:9")}
    assert all(u.certain for u in lookup_secret.uses if u.function == "randAlphaNum")


def test_lookup_and_random_fallback_through_variables(lookup_secret: ChartReport) -> None:
    uses = [u for u in lookup_secret.uses if u.output == "templates/cache-secret.yaml:16"]
    assert {u.function for u in uses} == {"randAlphaNum"}  # the lookup branch is never taken under helm template
    assert all(u.field == ("data", "cache-password") for u in uses)
    assert all(u.resource_name == "session-cache-auth" for u in uses)
    (rand,) = [u for u in uses if u.function == "randAlphaNum"]
    assert rand.call == "templates/cache-secret.yaml:8"
    assert [s.settings for s in rand.switches] == [(("cache.password", "<set>"),)]


# -- 4. an ordinary chart -----------------------------------------------------------------------------


def test_deterministic_chart_has_no_uses() -> None:
    report = scan_chart(CHARTS / "deterministic")
    assert report.uses == []
    assert report.problems == []  # NOTES.txt calls `now`, but it is not a manifest


# -- 5. a malformed template --------------------------------------------------------------------------


def test_malformed_template_is_a_problem_and_the_rest_is_analysed() -> None:
    report = scan_chart(CHARTS / "malformed")
    assert ("templates/configmap.yaml:6", "unclosed action (no matching '}}')") in report.problems
    assert ("templates/job.yaml:1", "if has no matching end") in report.problems
    (use,) = report.uses
    assert (use.function, use.output, use.field) == ("randAlphaNum", "templates/secret.yaml:6", ("stringData", "token"))


def test_bad_files_never_raise(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("name: [unclosed\n")
    (tmp_path / "values.yaml").write_text("- a list, not a map\n")
    (tmp_path / "templates" / "blob.yaml").write_bytes(b"\xff\xfe\x00binary")
    (tmp_path / "templates" / "odd.yaml").write_text(
        'a: {{ include }}\nb: {{ ( }}\n{{ end }}\n{{ else }}\nc: {{ include "missing" . }}\n'
        'd: {{ "}}" | randAscii }}\n{{- /* a comment with }} inside */ -}}\n{{/* unclosed comment\n'
    )
    report = scan_chart(tmp_path, values_files=[tmp_path / "no-such-file.yaml"])
    assert report.name == tmp_path.name
    locations = {loc for loc, _ in report.problems}
    assert {"Chart.yaml", "values.yaml", "templates/blob.yaml"} <= {loc.split(":")[0] for loc in locations}
    assert str(tmp_path / "no-such-file.yaml") in locations
    for where in (
        "templates/odd.yaml:1",
        "templates/odd.yaml:2",
        "templates/odd.yaml:3",
        "templates/odd.yaml:4",
        "templates/odd.yaml:5",
        "templates/odd.yaml:8",
    ):
        assert where in locations, where
    assert [(u.function, u.field) for u in report.uses] == [("randAscii", ("d",))]


def test_missing_chart_directory(tmp_path: Path) -> None:
    report = scan_chart(tmp_path / "nowhere")
    assert report.uses == [] and ("Chart.yaml", "missing") in report.problems


# -- sub-charts ------------------------------------------------------------------------------------------


def test_find_charts_lists_sub_charts() -> None:
    charts = find_charts(CHARTS)
    assert charts == sorted(charts)
    assert CHARTS / "umbrella" in charts and CHARTS / "umbrella" / "charts" / "metrics" in charts
    assert find_charts(CHARTS / "does-not-exist") == []


def test_sub_chart_outputs_are_analysed_with_the_parent_and_its_defines_are_shared() -> None:
    parent = scan_chart(CHARTS / "umbrella")
    by_function = {u.function: u for u in parent.uses}
    assert set(by_function) == {"randAlpha", "uuidv4"}
    use = by_function["randAlpha"]
    assert use.call == "charts/metrics/templates/_helpers.tpl:2"
    assert use.via == ("templates/configmap.yaml:6", "define metrics.instanceId")
    assert use.field == ("data", "metrics-instance")
    token = by_function["uuidv4"]
    assert token.output == "charts/metrics/templates/token.yaml:6"
    # the sub-chart's own value, set from the parent under the sub-chart's name
    assert [s.settings for s in token.switches] == [(("metrics.scrapeToken", "<set>"),)]
    assert {u.function for u in scan_chart(CHARTS / "umbrella", sets=["metrics.scrapeToken=abc"]).uses} == {
        "randAlpha"
    }
    child = scan_chart(CHARTS / "umbrella" / "charts" / "metrics")
    assert [(u.function, u.output) for u in child.uses] == [("uuidv4", "templates/token.yaml:6")]


# -- 6. render twice ---------------------------------------------------------------------------------------


def test_render_twice_without_helm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    report = scan_chart(CHARTS / "direct", render_twice=True)
    assert report.helm_available is False
    assert report.render_diff is None
    assert report.uses
    assert report.problems == [("--render-twice", "no helm binary on PATH: the chart was not rendered")]
    assert scan_chart(CHARTS / "direct").problems == []  # not asked for a render: nothing to say about helm


def _fake_helm(directory: Path, body: str) -> None:
    helm = directory / "helm"
    helm.write_text("#!/bin/sh\n" + body)
    helm.chmod(helm.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(os.name != "posix" or shutil.which("sh") is None, reason="needs a POSIX shell")
def test_render_twice_diffs_two_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    counter = tmp_path / "n"
    _fake_helm(tmp_path, f'echo x >> "{counter}"\necho "password: $(wc -l < "{counter}")"\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    report = scan_chart(CHARTS / "direct", render_twice=True)
    assert report.helm_available is True
    assert report.render_diff is not None
    assert "-password: 1" in report.render_diff and "+password: 2" in report.render_diff


@pytest.mark.skipif(os.name != "posix" or shutil.which("sh") is None, reason="needs a POSIX shell")
def test_render_twice_records_a_failing_helm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_helm(tmp_path, 'echo "Error: chart requires dependencies" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    report = scan_chart(CHARTS / "direct", render_twice=True)
    assert report.render_diff is None
    assert ("--render-twice", "helm template failed (exit 1): chart requires dependencies") in report.problems


# -- 7. against a real helm ---------------------------------------------------------------------------------
# `make test` installs a pinned helm v3 as .venv/bin/helm (the Makefile's `helm` target); these tests put the
# interpreter's bin directory first on PATH, so `.venv/bin/pytest` finds it with no activated venv. A missing helm
# fails them: the render-twice check must never pass by being skipped.


def test_real_helm_renders_twice(real_helm: str) -> None:
    report = scan_chart(CHARTS / "direct", render_twice=True)
    assert report.helm_available is True
    assert report.problems == []
    assert report.render_diff
    changed = [line for line in report.render_diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    assert {line.split(":")[0].strip("+- ") for line in changed} == {"password", "admin-password", "example.org/roll"}
    assert scan_chart(CHARTS / "deterministic", render_twice=True).render_diff == ""


def _rendered_by_source(helm: str, chart: Path) -> dict[tuple[Path, str], str] | None:
    """One `helm template` run split by its `# Source:` headers, keyed by (chart directory, template path)."""
    cmd = [helm, "template", str(chart), "--name-template", "x", "--skip-tests"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        return None
    out: dict[tuple[Path, str], str] = {}
    for doc in done.stdout.split("\n---\n"):
        first, _, body = doc.lstrip("-\n").partition("\n")
        assert first.startswith("# Source: "), first
        parts = first.removeprefix("# Source: ").split("/")[1:]  # drop the chart's own name
        where = chart
        while parts[0] == "charts":
            where, parts = where / "charts" / parts[1], parts[2:]
        key = (where, "/".join(parts))
        out[key] = out.get(key, "") + body
    return out


def _by_source(chart: Path, use: NondeterministicUse) -> tuple[Path, str]:
    """A use's output location ("charts/metrics/templates/x.yaml:3") as a `_rendered_by_source` key; helm names a
    sub-chart rendered under an alias by the alias."""
    parts = use.output.rsplit(":", 1)[0].split("/")
    where = chart
    while parts[0] == "charts":
        packed = parts[1].endswith("!")  # charts/sub-0.1.0.tgz!/sub/templates/...
        where, parts = where / "charts" / parts[1 + packed], parts[2 + packed :]
    if use.via[:1] and use.via[0].startswith("alias "):
        where = where.parent / use.via[0].removeprefix("alias ")
    return where, "/".join(parts)


def test_static_analysis_agrees_with_two_real_renders(real_helm: str) -> None:
    """Every template whose output differs between two `helm template` runs holds a call the scan reports, and
    every random call the scan reports changes its template's output (`now` keeps its value within a day, and
    `lookup` renders empty without a cluster, so only the random kind must show)."""
    rendered, differing = 0, 0
    for chart in find_charts(CHARTS):
        report = scan_chart(chart)
        first, second = _rendered_by_source(real_helm, chart), _rendered_by_source(real_helm, chart)
        if first is None or second is None:
            assert report.problems, f"helm cannot render {chart.name} but the scan found nothing wrong"
            continue
        rendered += 1
        assert first.keys() == second.keys()
        changed = {key for key in first if first[key] != second[key]}
        reported = {_by_source(chart, u) for u in report.uses}
        random = {_by_source(chart, u) for u in report.uses if u.kind == "random" and u.certain}
        assert changed <= reported, f"{chart.name}: helm output changes where the scan saw nothing"
        assert random <= changed, f"{chart.name}: reported random calls that helm renders the same twice"
        differing += bool(changed)
    assert rendered >= 6 and differing >= 5  # every fixture chart but `malformed` renders; all but one differ


# -- the data file -------------------------------------------------------------------------------------------


def test_function_table_has_sources_and_examples() -> None:
    table = nondeterministic_functions()
    for name in ("genCA", "genSignedCert", "randAlphaNum", "uuidv4", "now", "lookup", "date"):
        assert name in table
    for info in table.values():
        assert info.source.startswith("https://") and info.example
        assert info.name in info.example or (info.requires and info.requires in info.example)
    assert table["lookup"].kind == "lookup" and table["now"].kind == "time"


def test_defines_of_a_sub_chart_the_values_disable_are_still_known(tmp_path: Path) -> None:
    """As argo-helm's argo-cd chart names `redis-ha.fullname` (its vendored redis-ha, off by default) in a branch its
    values guard: helm shares defines across a chart and its sub-charts; an undefined name is still one problem."""
    chart = tmp_path / "argo-cd"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: argo-cd\nversion: 10.1.1\ndependencies:\n"
                                      "- name: redis-ha\n  version: 4.38.0\n  condition: redis-ha.enabled\n")
    (chart / "values.yaml").write_text("redis-ha:\n  enabled: false\n")
    (chart / "templates" / "_helpers.tpl").write_text(
        '{{- define "argo-cd.redis.fullname" -}}\n'
        '{{- if index .Values "redis-ha" "enabled" -}}\n'
        '{{- include "redis-ha.fullname" (dict "Chart" (dict "Name" "redis-ha") "Release" .Release "Values" '
        '(index .Values "redis-ha")) }}-haproxy\n'
        '{{- else -}}\n{{ .Release.Name }}-redis\n{{- end -}}\n{{- end -}}\n')
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cmd-params-cm\ndata:\n"
        '  redis.server: {{ include "argo-cd.redis.fullname" . }}:6379\n'
        '  other: {{ include "nowhere.fullname" . }}\n')
    sub = chart / "charts" / "redis-ha"
    (sub / "templates").mkdir(parents=True)
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: redis-ha\nversion: 4.38.0\n")
    (sub / "templates" / "_helpers.tpl").write_text(
        '{{- define "redis-ha.fullname" -}}\n{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 -}}\n'
        '{{- end -}}\n')
    report = scan_chart(chart)
    assert [message for _, message in report.problems] == [
        'no template named "nowhere.fullname" (include/template of an undefined name)']
