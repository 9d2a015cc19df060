"""Chart templates judged with `.Capabilities` decided at the target version (fixtures in charts/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.deprecations import Use, newest_release, removed, scan_paths, served
from argo_doctor.helm.capabilities import template_apis

CHARTS = Path(__file__).parent / "charts"


Found = tuple[str, str, str, str, bool]


def uses_at(chart: str, target: tuple[int, int] | None) -> list[Found]:
    uses, problems = scan_paths([CHARTS / chart], target, template_apis)
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
            ("webshop/templates/psp.yaml:2", "policy/v1beta1", "PodSecurityPolicy", "deprecated", False),
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
    uses, _ = scan_paths([CHARTS / "webshop"], (1, 22), template_apis)
    hpa = next(u for u in uses if u.api.kind == "HorizontalPodAutoscaler")
    assert hpa.how == ('template, chosen by .Capabilities at Kubernetes v1.22.0: and (eq .Capabilities.KubeVersion.'
                       'Major "1") (ge (int (trimSuffix "+" .Capabilities.KubeVersion.Minor)) 23) is false')
    psp = next(u for u in uses if u.api.kind == "PodSecurityPolicy")
    assert ".Values.kubeVersionOverride assumed unset" in psp.how
    assert "with .Values.podSecurityPolicy.create set" in psp.how
    route = next(u for u in uses if u.maybe)
    assert route.how.startswith("template, may be used at Kubernetes v1.22.0: .Capabilities.APIVersions.Has "
                                '"gateway.networking.k8s.io/v1/HTTPRoute" cannot be decided statically')
    assert removed(uses) == []  # a use that only may happen does not fail the check


def test_without_a_target_branches_are_taken_at_the_newest_release_and_rows_listed() -> None:
    assert newest_release() >= (1, 33)
    uses, _ = scan_paths([CHARTS / "webshop"], None, template_apis)
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
    lines = [line for line in table.stdout.splitlines() if "v1beta1" in line]
    assert [line.split()[0] for line in lines] == ["deprecated", "removed"]  # certain first, then "may be used"
    assert "(may be used)" in lines[-1]


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
    uses: list[Use] = scan_paths([tmp_path / "chart"], (1, 25), template_apis)[0]
    assert all(u.api.kind == "Ingress" for u in uses)


def test_an_undecidable_constraint_is_may_be_used_and_printf_is_evaluated(tmp_path: Path) -> None:
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    (chart / "a.yaml").write_text('{{- if semverCompare "not a constraint" .Capabilities.KubeVersion.Version }}\n'
                                  "apiVersion: extensions/v1beta1\nkind: Ingress\n{{- end }}\n")
    (chart / "b.yaml").write_text('apiVersion: {{ printf "%s/%s" "extensions" "v1beta1" }}\nkind: Ingress\n')
    uses = scan_paths([tmp_path / "chart"], (1, 25), template_apis)[0]
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
    uses = scan_paths([tmp_path / "chart"], (1, 25), template_apis)[0]
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
    old = scan_paths([tmp_path / "chart"], (1, 22), template_apis)[0]
    assert sorted((u.location, u.api.version, u.maybe) for u in old) == [
        ("chart/templates/hpa.yaml:11", "v2beta1", True)]  # v2beta2 is chosen at 1.22 but deprecated only in 1.23
    new = scan_paths([tmp_path / "chart"], (1, 25), template_apis)[0]
    assert sorted((u.location, u.api.version, u.status, u.maybe) for u in new) == [
        ("chart/templates/hpa.yaml:11", "v2beta1", "removed", True)]
    assert new[0].how.endswith("not $crd cannot be decided statically")
