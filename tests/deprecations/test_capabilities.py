"""Chart templates judged with `.Capabilities` decided at the target version (fixtures in charts/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.deprecations import Use, newest_release, removed, scan_paths, served
from argo_doctor.helm.capabilities import template_apis
from argo_doctor.helm.scan import chart_template_apis

CHARTS = Path(__file__).parent / "charts"


Found = tuple[str, str, str, str, bool]


def uses_at(chart: str, target: tuple[int, int] | None) -> list[Found]:
    uses, problems = scan_paths([CHARTS / chart], target, chart_template_apis)
    assert problems == []
    return sorted((u.location, u.api.api_version, u.api.kind, u.status, u.maybe) for u in uses)


def chosen(chart: str, minor: int) -> dict[str, set[tuple[str, bool | None]]]:
    """apiVersions each template emits at 1.<minor> (file → {(apiVersion, verdict)})."""
    root = CHARTS / chart
    files = {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.parent.name == "templates"}
    out: dict[str, set[tuple[str, bool | None]]] = {}
    for api in template_apis(files, (1, minor, 0), lambda name: served(name, (1, minor))):
        out.setdefault(api.file.rsplit("/", 1)[-1], set()).add((api.api_version, api.verdict))
    return out


ROUTE = ("webshop/templates/route.yaml:10", "extensions/v1beta1", "Ingress")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ((1, 18), [(*ROUTE, "deprecated", True)]),
        ((1, 22), [
            ("webshop/templates/hpa.yaml:2", "autoscaling/v2beta1", "HorizontalPodAutoscaler", "deprecated", False),
            ("webshop/templates/psp.yaml:2", "policy/v1beta1", "PodSecurityPolicy", "deprecated", True),  # values off
            (*ROUTE, "removed", True),
        ]),
        ((1, 25), [(*ROUTE, "removed", True)]),
        ((1, 29), [
            ("webshop/templates/flowschema.yaml:1", "flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema",
             "deprecated", False),
            (*ROUTE, "removed", True),
        ]),
    ],
)
def test_webshop_findings_follow_the_branch_taken_at_each_version(target: tuple[int, int],
                                                                  expected: list[Found]) -> None:
    assert uses_at("webshop", target) == sorted(expected)


def test_webshop_branches_chosen_per_version() -> None:
    """The helpers pick the API helm would render: semverCompare (with and without an override helper),
    Minor with trimSuffix, APIVersions.Has with a kind."""
    old, mid, new = chosen("webshop", 18), chosen("webshop", 22), chosen("webshop", 25)
    assert old["ingress.yaml"] == {("networking.k8s.io/v1beta1", True)}
    assert mid["ingress.yaml"] == new["ingress.yaml"] == {("networking.k8s.io/v1", True)}
    assert old["hpa.yaml"] == mid["hpa.yaml"] == {("autoscaling/v2beta1", True)}
    assert new["hpa.yaml"] == {("autoscaling/v2", True)}
    assert old["cronjob.yaml"] == {("batch/v1beta1", True)} and mid["cronjob.yaml"] == {("batch/v1", True)}
    assert old["pdb.yaml"] == {("policy/v1beta1", True)} and mid["pdb.yaml"] == {("policy/v1", True)}
    assert "psp.yaml" in mid and "psp.yaml" not in new
    # a custom resource the table cannot know: both sides may be rendered
    assert new["route.yaml"] == {("gateway.networking.k8s.io/v1", None), ("extensions/v1beta1", None)}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ((1, 18), []),
        ((1, 22), []),
        ((1, 25), [("catalog/templates/servicemonitor.yaml:7", "autoscaling/v2beta2", "HorizontalPodAutoscaler",
                    "deprecated", True)]),
        ((1, 29), [("catalog/templates/servicemonitor.yaml:7", "autoscaling/v2beta2", "HorizontalPodAutoscaler",
                    "removed", True)]),
    ],
)
def test_catalog_with_library_subchart_helpers(target: tuple[int, int], expected: list[Found]) -> None:
    assert uses_at("catalog", target) == expected


def test_catalog_helpers_with_a_context_map_and_values_switches() -> None:
    old, new = chosen("catalog", 18), chosen("catalog", 22)
    # `(dict "context" $)` helpers of the library subchart, with the version overrides left unset
    assert old["pdb-workers.yaml"] == {("policy/v1beta1", True)} and new["pdb-workers.yaml"] == {("policy/v1", True)}
    assert old["endpointslice.yaml"] == {("discovery.k8s.io/v1beta1", True)}
    assert new["endpointslice.yaml"] == {("discovery.k8s.io/v1", True)}
    # `if and .Values.pdb.enabled (semverCompare ...)` / `else if .Values.pdb.enabled`: the old API only below 1.21
    assert old["pdb.yaml"] == {("policy/v1beta1", True)} and new["pdb.yaml"] == {("policy/v1", True)}
    # batch/v1 is known to be served from 1.21 (CronJob); before, the table cannot tell
    assert new["cronjob.yaml"] == {("batch/v1", True)}
    assert old["cronjob.yaml"] == {("batch/v1", None), ("batch/v1beta1", None)}


def test_how_says_what_chose_the_api_and_at_which_version() -> None:
    uses, _ = scan_paths([CHARTS / "webshop"], (1, 22), chart_template_apis)
    hpa = next(u for u in uses if u.api.kind == "HorizontalPodAutoscaler")
    assert hpa.how == ('template, chosen by .Capabilities at Kubernetes v1.22.0: and (eq .Capabilities.KubeVersion.'
                       'Major "1") (ge (int (trimSuffix "+" .Capabilities.KubeVersion.Minor)) 23) is false')
    psp = next(u for u in uses if u.api.kind == "PodSecurityPolicy")
    assert ".Values.kubeVersionOverride assumed unset" in psp.how
    assert "with .Values.podSecurityPolicy.create set" in psp.how  # the chart renders it so when asked
    assert psp.maybe and psp.how.startswith("template, may be used at Kubernetes v1.22.0: ")
    assert psp.how.endswith("is false with the chart's values (podSecurityPolicy.create: false)")  # but not by default
    route = next(u for u in uses if u.api.kind == "Ingress")
    assert route.maybe
    assert route.how.startswith("template, may be used at Kubernetes v1.22.0: .Capabilities.APIVersions.Has "
                                '"gateway.networking.k8s.io/v1/HTTPRoute" cannot be decided statically')
    assert removed(uses) == []  # a use that only may happen does not fail the check


def test_without_a_target_branches_are_taken_at_the_newest_release_and_rows_listed() -> None:
    assert newest_release() >= (1, 33)
    uses, _ = scan_paths([CHARTS / "webshop"], None, chart_template_apis)
    by_file = {u.location.rsplit("/", 1)[-1]: u for u in uses}
    assert set(by_file) == {"flowschema.yaml:1", "route.yaml:10"}  # old branches are not listed
    assert {u.status for u in uses} == {"listed"}
    assert "the newest release the table knows" in by_file["flowschema.yaml:1"].how
    assert "helm template without --kube-version" in by_file["flowschema.yaml:1"].how


@pytest.mark.parametrize(
    ("api", "answers"),
    [
        ("policy/v1", [False, True, True, True]),
        ("policy/v1/PodDisruptionBudget", [False, True, True, True]),
        ("policy/v1beta1", [True, True, False, False]),
        ("networking.k8s.io/v1", [True, True, True, True]),  # NetworkPolicy before Ingress
        ("networking.k8s.io/v1/Ingress", [False, True, True, True]),
        ("networking.k8s.io/v1beta1/Ingress", [True, False, False, False]),
        ("extensions/v1beta1", [True, False, False, False]),
        ("autoscaling/v2", [False, False, True, True]),
        ("autoscaling/v2beta2", [True, True, True, False]),
        ("batch/v1/CronJob", [False, True, True, True]),
        ("storage.k8s.io/v1/CSIDriver", [False, True, True, True]),
        ("flowcontrol.apiserver.k8s.io/v1", [False, False, False, True]),
        ("v1", [True, True, True, True]),
        ("monitoring.coreos.com/v1", [None, None, None, None]),
        ("batch/v1/Job", [None, None, None, None]),
        ("not/an/api/version", [None, None, None, None]),
    ],
)
def test_served_answers_apiversions_has_from_the_table(api: str, answers: list[bool | None]) -> None:
    assert [served(api, (1, minor)) for minor in (18, 22, 25, 29)] == answers


def test_cli_json_marks_uncertain_uses_and_keeps_exit_0_for_them() -> None:
    result = CliRunner().invoke(main, ["deprecations", str(CHARTS / "catalog"), "--target-version", "1.29",
                                       "-o", "json"])
    assert result.exit_code == 0, result.output
    (use,) = json.loads(result.stdout)["uses"]
    assert (use["status"], use["certain"], use["kind"]) == ("removed", False, "HorizontalPodAutoscaler")
    table = CliRunner().invoke(main, ["deprecations", str(CHARTS / "webshop"), "--target-version", "1.22"])
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert [line for line in lines if line.startswith(">>>")] == [  # grouped by the release that removes them
        ">>> removed in 1.22 (the target 1.22 no longer serves it) <<<",
        ">>> removed in 1.25 (the target 1.22 still serves it, deprecated) <<<"]
    rows = [line for line in lines if "v2beta1" in line or "v1beta1" in line]
    assert [row.split()[0] for row in rows] == ["Ingress", "HorizontalPodAutoscaler", "PodSecurityPolicy"]
    assert "(may be used)" not in rows[1] and "(may be used)" in rows[0] and "(may be used)" in rows[2]  # certain first


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: {{ include \"missing.helper\" . }}\nkind: Ingress\n",
        "{{- if semverCompare \">=1.19-0\" .Capabilities.KubeVersion.Version }}\napiVersion: extensions/v1beta1\n",
        "{{- end }}\napiVersion: extensions/v1beta1\nkind: Ingress\n{{ if",
        "{{- if semverCompare \"not a constraint\" .Capabilities.KubeVersion.Version }}\n"
        "apiVersion: extensions/v1beta1\n{{- end }}\nkind: Ingress\n",
        "{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}apiVersion: {{ include \"loop\" . }}\nkind: Ingress\n",
        "apiVersion: {{ printf \"%s/%s\" \"extensions\" \"v1beta1\" }}\nkind: Ingress\n{{ (.) }}{{ |bad }}\n",
    ],
)
def test_bad_templates_never_crash(tmp_path: Path, text: str) -> None:
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "x.yaml").write_text(text)
    uses: list[Use] = scan_paths([tmp_path / "chart"], (1, 25), chart_template_apis)[0]
    assert all(u.api.kind == "Ingress" for u in uses)


def test_an_undecidable_constraint_is_may_be_used_and_printf_is_evaluated(tmp_path: Path) -> None:
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "a.yaml").write_text('{{- if semverCompare "not a constraint" .Capabilities.KubeVersion.Version }}\n'
                                  "apiVersion: extensions/v1beta1\nkind: Ingress\n{{- end }}\n")
    (chart / "b.yaml").write_text('apiVersion: {{ printf "%s/%s" "extensions" "v1beta1" }}\nkind: Ingress\n')
    uses = scan_paths([tmp_path / "chart"], (1, 25), chart_template_apis)[0]
    assert sorted((u.location, u.maybe) for u in uses) == [("chart/templates/a.yaml:2", True),
                                                            ("chart/templates/b.yaml:1", False)]


@pytest.mark.parametrize(("pattern", "subject", "listed"), [
    ("^1\\.2[0-9]$", "1.25", True),  # an ordinary pattern is run: the branch is taken
    ("^1\\.1[0-9]$", "1.25", False),  # ... or not
    ("^(a|a)*$", "a" * 40 + "b", True),  # exponential in a backtracking engine, linear in Go's: not run, so the
    ("^(a+)+$", "a" * 40 + "b", True),  # branch is listed as any branch the template analysis cannot decide
    ("a*a*a*a*a*b", "a" * 60, True),  # a power of the subject's length per star
    ("(" * 3000 + "a" + ")" * 3000, "b", True),  # nested too deeply to compile
])
def test_regex_match_runs_only_patterns_of_bounded_cost(tmp_path: Path, pattern: str, subject: str,
                                                      listed: bool) -> None:
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "psp.yaml").write_text(f"{{{{- if regexMatch {json.dumps(pattern)} {json.dumps(subject)} }}}}\n"
                                    "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\n{{- end }}\n")
    uses = scan_paths([tmp_path / "chart"], (1, 25), chart_template_apis)[0]
    assert [(u.api.kind, u.how) for u in uses] == ([("PodSecurityPolicy", "template")] if listed else [])


def test_a_variable_set_from_capabilities_decides_like_the_expression(tmp_path: Path) -> None:
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "hpa.yaml").write_text(
        '{{- $stable := semverCompare ">=1.23-0" .Capabilities.KubeVersion.Version -}}\n'
        '{{- $crd := .Capabilities.APIVersions.Has "keda.sh/v1alpha1" -}}\n'
        "{{- if $stable }}\napiVersion: autoscaling/v2\n{{- else }}\napiVersion: autoscaling/v2beta2\n{{- end }}\n"
        "kind: HorizontalPodAutoscaler\n---\n"
        "{{- if not $crd }}\napiVersion: autoscaling/v2beta1\nkind: HorizontalPodAutoscaler\n{{- end }}\n")
    old = scan_paths([tmp_path / "chart"], (1, 22), chart_template_apis)[0]
    assert sorted((u.location, u.api.version, u.maybe) for u in old) == [
        ("chart/templates/hpa.yaml:11", "v2beta1", True)]  # v2beta2 is chosen at 1.22 but deprecated only in 1.23
    new = scan_paths([tmp_path / "chart"], (1, 25), chart_template_apis)[0]
    assert sorted((u.location, u.api.version, u.status, u.maybe) for u in new) == [
        ("chart/templates/hpa.yaml:11", "v2beta1", "removed", True)]
    assert new[0].how.endswith("not $crd cannot be decided statically")


PSP = """{{- if .Values.global.podSecurityPolicy.enabled }}
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: {{ template "certs.fullname" . }}
spec:
  privileged: false
{{- end }}
"""


def _chart(root: Path, name: str, values: str, templates: dict[str, str], requirements: str = "") -> Path:
    """A chart as `helm create` lays it out (Chart.yaml, values.yaml, templates/), optionally with dependencies."""
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n{requirements}")
    (root / "values.yaml").write_text(values)
    (root / "templates" / "_helpers.tpl").write_text(
        f'{{{{- define "{name}.fullname" -}}}}{{{{ .Release.Name }}}}-{name}{{{{- end }}}}\n')
    for file, text in templates.items():
        (root / "templates" / file).write_text(text)
    return root


@pytest.mark.parametrize(("enabled", "maybe"), [("false", True), ("true", False)])
def test_a_template_the_charts_values_switch_off_only_may_be_used(tmp_path: Path, enabled: str, maybe: bool) -> None:
    """As cert-manager ships its PodSecurityPolicies (global.podSecurityPolicy.enabled: false) and eks-charts theirs
    (rbac.pspEnabled: false): removed in 1.25, but not rendered by default, so not "removed, certain"."""
    _chart(tmp_path / "certs", "certs", f"global:\n  podSecurityPolicy:\n    enabled: {enabled}\n", {"psp.yaml": PSP})
    (use,) = scan_paths([tmp_path / "certs"], (1, 31), chart_template_apis)[0]
    assert (use.api.kind, use.status, use.maybe) == ("PodSecurityPolicy", "removed", maybe)
    if maybe:
        assert use.how.endswith(".Values.global.podSecurityPolicy.enabled is false with the chart's values "
                                "(global.podSecurityPolicy.enabled: false)")
        assert removed([use]) == []
    result = CliRunner().invoke(main, ["deprecations", str(tmp_path / "certs"), "--target-version", "1.31"])
    assert result.exit_code == (0 if maybe else 1), result.output


def test_a_value_not_set_at_all_switches_off_too(tmp_path: Path) -> None:
    _chart(tmp_path / "aws", "aws", "rbac:\n  create: true\n",
           {"psp.yaml": "{{- if and .Values.rbac.create .Values.rbac.pspEnabled }}\n" + PSP.split("\n", 1)[1]})
    (use,) = scan_paths([tmp_path / "aws"], (1, 31), chart_template_apis)[0]
    assert use.maybe and "(rbac.create: true, rbac.pspEnabled: not set)" in use.how


def test_a_sub_chart_the_values_disable_only_may_be_used(tmp_path: Path) -> None:
    parent = _chart(tmp_path / "stack", "stack", "legacy:\n  enabled: false\n", {},
                    "dependencies:\n- name: legacy\n  version: 1.0.0\n  condition: legacy.enabled\n")
    _chart(parent / "charts" / "legacy", "legacy", "", {"psp.yaml": PSP.replace(
        "{{- if .Values.global.podSecurityPolicy.enabled }}\n", "").replace("{{- end }}\n", "")})
    (use,) = scan_paths([parent], (1, 31), chart_template_apis)[0]
    assert use.maybe and use.location == "stack/charts/legacy/templates/psp.yaml:1"
    assert use.how.endswith("the sub-chart legacy does not render with the chart's values (legacy.enabled: false)")
    (parent / "values.yaml").write_text("legacy:\n  enabled: true\n")
    (use,) = scan_paths([parent], (1, 31), chart_template_apis)[0]
    assert not use.maybe
