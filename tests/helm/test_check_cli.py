"""`argo-doctor helm-check` as a user runs it: exit status and wording for render failures, a missing helm, values
files helm would refuse, and the current value of a credential-like setting."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from argo_doctor.cli import main

CHARTS = Path(__file__).resolve().parent / "charts"
NIL_POINTER = "  broken: {{ .Values.missing.deeper }}\n"  # helm: nil pointer evaluating interface {}.deeper


def _check(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["helm-check", *map(str, args)])


def _copy(name: str, tmp_path: Path) -> Path:
    chart = tmp_path / name
    shutil.copytree(CHARTS / name, chart)
    return chart


def _helm_renders(helm: str, chart: Path, *args: str) -> bool:
    done = subprocess.run([helm, "template", str(chart), *args], capture_output=True, text=True, timeout=60,
                          check=False)
    return done.returncode == 0


# -- --render-twice when helm cannot render ------------------------------------------------------------------------


def test_a_failing_helm_template_is_one_line_and_exit_2(real_helm: str, tmp_path: Path) -> None:
    chart = _copy("deterministic", tmp_path)
    with (chart / "templates" / "configmap.yaml").open("a") as out:
        out.write(NIL_POINTER)
    result = _check(chart, "--render-twice")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if "error" in line]
    assert len(errors) == 1 and errors == result.output.strip().splitlines()[-1:]
    assert errors[0].startswith("error: --render-twice: helm template failed (exit 1): template: static-site/")
    assert errors[0].endswith("nil pointer evaluating interface {}.deeper")  # helm's own line, not its --debug hint
    assert _check(chart).exit_code == 0  # the static analysis alone is complete


def test_a_failing_helm_template_after_static_findings_exits_1(real_helm: str, tmp_path: Path) -> None:
    chart = _copy("direct", tmp_path)
    with (chart / "templates" / "secret.yaml").open("a") as out:
        out.write(NIL_POINTER)
    result = _check(chart, "--render-twice", "-o", "json")
    assert result.exit_code == 1, result.output
    assert '"location": "--render-twice"' in result.output and '"renderDiff": null' in result.output


def test_without_helm_only_render_twice_mentions_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    plain = _check(CHARTS / "deterministic")
    assert plain.exit_code == 0 and "helm" not in plain.output.replace("tests/helm/", "")
    asked = _check(CHARTS / "deterministic", "--render-twice")
    assert asked.exit_code == 2
    assert asked.output.strip().splitlines()[-1] == (
        "error: --render-twice: no helm binary on PATH: the chart was not rendered"
    )


# -- values files helm refuses -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "where", "why"),
    [
        ("42\n", ":1", "the top level is a number, not a mapping of values"),
        ("# production\n---\n- replicaCount: 3\n", ":3", "the top level is a list, not a mapping of values"),
        ('"replicaCount: 3"\n', ":1", "the top level is a string, not a mapping of values"),
        ("image:\n  tag: [1.25\n", ":3", "invalid YAML: did not find expected ',' or ']'"),
    ],
)
def test_a_values_file_helm_refuses_is_exit_2_naming_file_and_line(
    real_helm: str, tmp_path: Path, body: str, where: str, why: str
) -> None:
    chart = _copy("deterministic", tmp_path)
    values = tmp_path / "prod.yaml"
    values.write_text(body)
    assert not _helm_renders(real_helm, chart, "-f", str(values))
    result = _check(chart, "-f", values)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [f"argo-doctor: error: {values}{where}: {why}" +
                                          ("" if "YAML" in why else " (helm refuses it too)")]

    (chart / "values.yaml").write_text(body)  # the chart's own values.yaml: helm refuses it as well
    assert not _helm_renders(real_helm, chart)
    own = _check(chart)
    assert own.exit_code == 2 and own.output.startswith(f"argo-doctor: error: {chart}/values.yaml{where}: {why}")


@pytest.mark.parametrize("body", ["", "~\n", "# nothing set here\n", "::: not yaml\n"])
def test_values_files_helm_accepts_are_accepted(real_helm: str, tmp_path: Path, body: str) -> None:
    values = tmp_path / "extra.yaml"
    values.write_text(body)  # `::: not yaml` is the mapping {"::": "not yaml"}
    assert _helm_renders(real_helm, CHARTS / "deterministic", "-f", str(values))
    result = _check(CHARTS / "deterministic", "-f", values)
    assert result.exit_code == 0, result.output


def test_a_sub_chart_values_file_helm_refuses_is_exit_2(real_helm: str, tmp_path: Path) -> None:
    chart = _copy("umbrella", tmp_path)
    (chart / "charts" / "metrics" / "values.yaml").write_text("---\n# the parent sets it\nscrapeToken: ''\n")
    assert _check(chart).exit_code == 1  # a mapping after `---` and a comment: fine
    (chart / "charts" / "metrics" / "values.yaml").write_text("- scrapeToken\n")
    assert not _helm_renders(real_helm, chart)
    result = _check(chart)
    assert result.exit_code == 2
    assert result.output == (f"argo-doctor: error: {chart}/charts/metrics/values.yaml:1: the top level is a list, "
                             "not a mapping of values (helm refuses it too)\n")


# -- the current value of a credential-like setting ----------------------------------------------------------------


def test_an_empty_credential_shows_as_empty_and_a_set_one_stays_redacted(tmp_path: Path) -> None:
    direct = _check(CHARTS / "direct")
    assert '    avoided by: set adminPassword (now "")\n' in direct.output
    assert '    avoided by: set cache.password (now "")\n' in _check(CHARTS / "lookup-secret").output

    chart = _copy("direct", tmp_path)
    (chart / "templates" / "token.yaml").write_text(
        "kind: Secret\nmetadata:\n  name: api\nstringData:\n"
        '{{- if ne .Values.apiToken "static" }}\n'
        "  token: {{ .Values.apiToken }}-{{ randAlphaNum 24 }}\n"
        "{{- end }}\n"
    )
    values = tmp_path / "prod.yaml"
    values.write_text("apiToken: tok-live-8f2a9c41\n")
    text = _check(chart, "-f", values)
    assert 'avoided by: set apiToken: "static" (now <redacted>)\n' in text.output
    assert "8f2a9c41" not in text.output
