"""Helm checks that honour the values in use: --set parsing, conditions evaluated with the values, sub-charts
(folders and archives) with what the parent passes them, variable scopes, and agreement with real renders."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from argo_doctor.helm import ChartReport, NondeterministicUse, scan_chart
from argo_doctor.helm.conditions import override_of
from argo_doctor.helm.values import SetError, apply_set, merge, parse_set

CHARTS = Path(__file__).resolve().parent / "charts"
GATED = CHARTS / "gated-platform"
CA_BUNDLE = ("webhooks", "[]", "clientConfig", "caBundle")


def _found(report: ChartReport, certain: bool | None = None) -> set[tuple[str, str]]:
    """(function, output file) of the uses, optionally only the certain or the uncertain ones."""
    return {(u.function, u.output.rsplit(":", 1)[0]) for u in report.uses if certain is None or u.certain is certain}


# -- --set as helm parses it ------------------------------------------------------------------------------------


def test_set_expressions_as_helm_types_them() -> None:
    assert parse_set("image.tag=v1.4.0,replicaCount=3,webhook.enabled=false,extra=null") == [
        (("image", "tag"), "v1.4.0"),
        (("replicaCount",), 3),
        (("webhook", "enabled"), False),
        (("extra",), None),
    ]
    # leading zeros stay strings, as do values helm cannot read as a 64-bit integer
    assert parse_set("zone=007,big=99999999999999999999,neg=-5") == [
        (("zone",), "007"), (("big",), "99999999999999999999"), (("neg",), -5)
    ]
    assert parse_set("tolerations[1].key=dedicated,args={--v=2,--leader-elect}") == [
        (("tolerations", 1, "key"), "dedicated"),
        (("args",), ["--v=2", "--leader-elect"]),
    ]
    # escaped dots belong to the key, escaped commas to the value, `=` after the first one to the value
    assert parse_set(r"podAnnotations.prometheus\.io/scrape=true,note=a\,b,dsn=host=db") == [
        (("podAnnotations", "prometheus.io/scrape"), True),
        (("note",), "a,b"),
        (("dsn",), "host=db"),
    ]
    assert parse_set("replicaCount=3,enabled=true", as_string=True) == [
        (("replicaCount",), "3"), (("enabled",), "true")
    ]


@pytest.mark.parametrize("text", ["webhook.enabled", "a[x]=1", "=1", "[0]=x", "list[99999999]=1", "args={a,b"])
def test_set_expressions_helm_refuses(text: str) -> None:
    with pytest.raises(SetError):
        parse_set(text)


def test_set_builds_lists_and_maps_and_merge_drops_nulls() -> None:
    values: dict[str, Any] = {"tolerations": [{"key": "a"}], "image": {"tag": "v1", "pullPolicy": "IfNotPresent"}}
    out = apply_set(values, "tolerations[1].key=b,image.tag=v2")
    assert out == {"tolerations": [{"key": "a"}, {"key": "b"}], "image": {"tag": "v2", "pullPolicy": "IfNotPresent"}}
    assert values["image"]["tag"] == "v1"  # the input is left alone
    assert merge(values, {"image": {"pullPolicy": None}}) == {"tolerations": [{"key": "a"}], "image": {"tag": "v1"}}


# -- the values decide which calls are reached ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def defaults() -> ChartReport:
    return scan_chart(GATED)


def test_defaults_reach_the_webhook_certificates_and_the_aliased_cache_password(defaults: ChartReport) -> None:
    assert defaults.problems == []
    assert _found(defaults, certain=True) == {
        ("genCA", "templates/webhook.yaml"),
        ("genSignedCert", "templates/webhook.yaml"),
        ("randAlphaNum", "charts/cache/templates/secret.yaml"),
    }
    (bundle,) = [u for u in defaults.uses if u.field == CA_BUNDLE]
    assert bundle.resource_kind == "ValidatingWebhookConfiguration" and bundle.certain
    (password,) = [u for u in defaults.uses if u.function == "randAlphaNum" and u.output.startswith("charts/")]
    # the cache chart renders once, under the alias `sessions`; `cache` itself is off by its condition
    assert password.via[0] == "alias sessions"
    assert {s.settings for s in password.switches} == {
        (("sessions.password", "<set>"),),
        (("sessions.enabled", "false"),),
    }


def test_a_condition_on_the_cluster_is_may_be_reached(defaults: ChartReport) -> None:
    (probe,) = [u for u in defaults.uses if u.output.startswith("templates/probe.yaml")]
    assert probe.certain is False and probe.switches == ()


def test_calls_the_defaults_do_not_reach_are_not_findings(defaults: ChartReport) -> None:
    outputs = {u.output.rsplit(":", 1)[0] for u in defaults.uses}
    for quiet in ("templates/token.yaml", "templates/scoped.yaml", "templates/release.yaml",
                  "templates/legacy-certs.yaml", "charts/audit/templates/configmap.yaml"):
        assert quiet not in outputs


@pytest.mark.parametrize(
    ("sets", "present", "absent"),
    [
        (["webhook.certManager.enabled=true"], set(), {("genCA", "templates/webhook.yaml")}),
        (["webhook.enabled=false"], set(), {("genSignedCert", "templates/webhook.yaml")}),
        (["auth.mode=generated"], {("randAlphaNum", "templates/token.yaml")}, set()),
        (["salt.random=true"], {("randAlphaNum", "templates/scoped.yaml")}, set()),
        # `.Release.IsInstall` is true under `helm template`, so only the value decides
        (["stampInstall=true"], {("uuidv4", "templates/release.yaml")}, set()),
        (["global.stampRenders=true"], {("now", "charts/audit/templates/configmap.yaml")}, set()),
        # tags switch the audit sub-chart off, with its `now`
        (["global.stampRenders=true", "tags.compliance=false"], set(),
         {("now", "charts/audit/templates/configmap.yaml")}),
        (["sessions.password=fixed"], set(), {("randAlphaNum", "charts/cache/templates/secret.yaml")}),
    ],
)
def test_values_turn_calls_on_and_off(sets: list[str], present: set[tuple[str, str]],
                                      absent: set[tuple[str, str]]) -> None:
    found = _found(scan_chart(GATED, sets=sets), certain=True)
    assert present <= found
    assert not absent & found


def test_a_condition_that_also_asks_the_cluster_is_may_be_reached_when_the_values_allow_it() -> None:
    report = scan_chart(GATED, sets=["compat.legacyCerts=true"])
    (legacy,) = [u for u in report.uses if u.output.startswith("templates/legacy-certs.yaml")]
    assert legacy.certain is False
    assert [s.settings for s in legacy.switches] == [(("compat.legacyCerts", "false"),)]


def test_values_files_then_set_then_set_string(tmp_path: Path) -> None:
    prod = tmp_path / "prod.yaml"
    prod.write_text("auth:\n  mode: generated\n")
    assert ("randAlphaNum", "templates/token.yaml") in _found(scan_chart(GATED, values_files=[prod]))
    # --set comes after -f, --set-string after --set
    assert ("randAlphaNum", "templates/token.yaml") not in _found(
        scan_chart(GATED, values_files=[prod], sets=["auth.mode=static"]))
    assert ("randAlphaNum", "templates/token.yaml") in _found(
        scan_chart(GATED, sets=["auth.mode=static"], set_strings=["auth.mode=generated"]))


def _apply(switch_settings: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, token in switch_settings:
        out = merge(out, apply_set({}, f"{path}=x"))  # build the nested path, then put the real value there
        node = out
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        node[last] = override_of(path, token)
    return out


def _same_use(a: NondeterministicUse, b: NondeterministicUse) -> bool:
    return (a.function, a.call, a.via, a.output, a.field) == (b.function, b.call, b.via, b.output, b.field)


@pytest.mark.parametrize(
    ("chart", "sets"),
    [
        (GATED, []),
        (GATED, ["auth.mode=generated", "salt.random=true", "cache.enabled=true", "global.stampRenders=true"]),
        (CHARTS / "webhook-certs", []),
        (CHARTS / "direct", []),
        (CHARTS / "lookup-secret", []),
        (CHARTS / "umbrella", []),
    ],
)
def test_every_suggested_setting_clears_its_finding(chart: Path, sets: list[str], tmp_path: Path) -> None:
    report = scan_chart(chart, sets=sets)
    given: dict[str, Any] = {}
    for text in sets:
        given = apply_set(given, text)
    tried = 0
    for use in report.uses:
        for switch in use.switches:
            override = tmp_path / f"switch-{tried}.yaml"
            override.write_text(_yaml(merge(given, _apply(switch.settings))))
            after = scan_chart(chart, values_files=[override])
            assert not any(_same_use(use, other) for other in after.uses), (use, switch.text)
            tried += 1
    assert tried or not any(u.switches for u in report.uses)


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data)


# -- variables: `:=` scopes and `=` assignments -------------------------------------------------------------------


def test_a_shadowing_declaration_inside_if_does_not_leak_out() -> None:
    report = scan_chart(GATED, sets=["rotate.enabled=true", "webhook.enabled=false", "sessions.enabled=false"])
    scoped = [u for u in report.uses if u.output.startswith("templates/scoped.yaml")]
    # the inner $token := randAlphaNum ends with its if: token-hint writes the outer, fixed $token
    assert not [u for u in scoped if u.field == ("data", "token-hint")]
    # the random value is never written out: at most a "may be reached" note where it is made
    assert all(not u.certain and u.call == "templates/scoped.yaml:5" for u in scoped)


def test_an_assignment_inside_if_reaches_the_outer_variable() -> None:
    report = scan_chart(GATED, sets=["salt.random=true"])
    (salt,) = [u for u in report.uses if u.output.startswith("templates/scoped.yaml")]
    assert (salt.call, salt.field, salt.certain) == ("templates/scoped.yaml:10", ("data", "salt"), True)
    assert [s.settings for s in salt.switches] == [(("salt.random", "false"),)]


def _chart(root: Path, values: str, templates: dict[str, str]) -> Path:
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: scopes\nversion: 0.1.0\n")
    (root / "values.yaml").write_text(values)
    for name, text in templates.items():
        (root / "templates" / name).write_text(text)
    return root


def test_scopes_of_range_with_and_define(tmp_path: Path) -> None:
    chart = _chart(tmp_path, "ports: [80, 443]\nlabels:\n  team: web\n", {
        "_helpers.tpl": '{{- define "s.id" -}}{{- $id := uuidv4 -}}fixed-id{{- end -}}\n',
        "cm.yaml": (
            "{{- $id := \"static\" }}\n"
            "{{- range $p := .Values.ports }}\n"
            "{{- $id := randAlphaNum 6 }}\n"
            "{{- end }}\n"
            "{{- with .Values.labels }}\n"
            "{{- $id = printf \"%s-%s\" $id (randAlpha 4) }}\n"
            "{{- end }}\n"
            "kind: ConfigMap\n"
            "metadata:\n  name: scopes\n"
            "data:\n"
            "  id: {{ $id }}\n"
            "  other: {{ include \"s.id\" . }}\n"
        ),
    })
    landed = {(u.function, u.field) for u in scan_chart(chart).uses if u.certain}
    # range's $id is its own; with's `=` changes the outer one; the define's $id never leaves it
    assert landed == {("randAlpha", ("data", "id"))}


# -- sub-charts: folders and packaged archives ----------------------------------------------------------------------


def _pack(source: Path, archive: Path, extra: dict[str, tarfile.TarInfo] | None = None) -> None:
    """A chart archive as `helm package` lays it out: <name>/Chart.yaml, <name>/templates/..."""
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(source.rglob("*")):
            tar.add(path, arcname=f"notifier/{path.relative_to(source).as_posix()}", recursive=False)
        for info in (extra or {}).values():
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)


@pytest.fixture
def packaged(tmp_path: Path) -> Path:
    chart = tmp_path / "gated-platform"
    shutil.copytree(GATED, chart)
    _pack(CHARTS / "packaged-notifier", chart / "charts" / "notifier-0.1.0.tgz")
    return chart


def test_a_packaged_sub_chart_is_read_and_located_inside_the_archive(packaged: Path) -> None:
    report = scan_chart(packaged)
    assert report.problems == []
    (key,) = [u for u in report.uses if u.function == "uuidv4"]
    assert key.output == "charts/notifier-0.1.0.tgz!/notifier/templates/secret.yaml:10"
    assert (key.resource_kind, key.resource_name, key.field) == ("Secret", "notifier-signing", ("stringData", "key"))
    assert [s.settings for s in key.switches] == [(("notifier.signingKey", "<set>"),)]
    assert "uuidv4" not in {u.function for u in scan_chart(packaged, sets=["notifier.signingKey=k1"]).uses}


def test_hostile_or_broken_archives_are_problems_not_crashes(tmp_path: Path) -> None:
    chart = tmp_path / "c"
    shutil.copytree(GATED, chart)
    link = tarfile.TarInfo("notifier/templates/escape.yaml")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    up = tarfile.TarInfo("../../outside.yaml")
    up.size = 4
    _pack(CHARTS / "packaged-notifier", chart / "charts" / "notifier-0.1.0.tgz", {"link": link, "up": up})
    (chart / "charts" / "broken-1.0.0.tgz").write_bytes(b"\x1f\x8b\x08 not really gzip")
    (chart / "charts" / "empty-1.0.0.tgz").write_bytes(b"")
    report = scan_chart(chart)
    assert not (tmp_path / "outside.yaml").exists()
    assert "uuidv4" in {u.function for u in report.uses}  # the good part of the archive is still read
    assert not [u for u in report.uses if "escape.yaml" in u.output]
    broken = {loc for loc, msg in report.problems if "packaged sub-chart not read" in msg}
    assert broken == {"charts/broken-1.0.0.tgz", "charts/empty-1.0.0.tgz"}


# -- helm-check on bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["missing", "file", "no-chart-yaml", "malformed", "bad-set", "no-values-file"])
def test_helm_check_on_bad_input_exits_2_with_one_line(case: str, tmp_path: Path) -> None:
    args: list[str] = []
    if case == "missing":
        target = tmp_path / "nowhere"
    elif case == "file":
        target = tmp_path / "Chart.yaml"
        target.write_text("apiVersion: v2\nname: x\nversion: 1.0.0\n")
    elif case == "no-chart-yaml":
        target = tmp_path
        (tmp_path / "templates").mkdir()
    elif case == "malformed":
        target = tmp_path
        (tmp_path / "Chart.yaml").write_text("name: [unclosed\n")
    elif case == "bad-set":
        target, args = GATED, ["--set", "webhook.enabled"]
    else:
        target, args = GATED, ["-f", str(tmp_path / "prod.yaml")]
    result = CliRunner().invoke(main, ["helm-check", str(target), *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("argo-doctor: error: "), result.output
    assert "Traceback" not in result.output


def test_helm_check_set_options_and_may_be_reached_in_the_output() -> None:
    cleared = CliRunner().invoke(main, ["helm-check", str(CHARTS / "webhook-certs"), "--set", "enableCertManager=true"])
    assert cleared.exit_code == 0, cleared.output
    text = CliRunner().invoke(main, ["helm-check", str(GATED), "--set-string", "auth.mode=generated"])
    assert text.exit_code == 1
    assert "randAlphaNum (random) at templates/token.yaml:8\n" in text.output
    assert "randAlphaNum (random) at templates/probe.yaml:7 — may be reached" in text.output


# -- agreement with two real renders --------------------------------------------------------------------------------


def _render(helm: str, chart: Path, sets: list[str]) -> dict[str, str]:
    cmd = [helm, "template", str(chart), "--name-template", "x", "--skip-tests", *[a for s in sets for a in
                                                                                  ("--set", s)]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, str] = {}
    for doc in done.stdout.split("\n---\n"):
        first, _, body = doc.lstrip("-\n").partition("\n")
        source = first.removeprefix("# Source: ").split("/", 1)[1]
        out[source] = out.get(source, "") + body
    return out


def _helm_source(use: NondeterministicUse) -> str:
    """Where helm's `# Source:` puts a use's output: aliased and packaged sub-charts by their rendered name."""
    path = use.output.rsplit(":", 1)[0]
    if ".tgz!/" in path:
        head, _, rest = path.partition(".tgz!/")
        path = head.rsplit("/", 1)[0] + "/" + rest
    if use.via[:1] and use.via[0].startswith("alias "):
        parts = path.split("/")
        parts[1] = use.via[0].removeprefix("alias ")
        path = "/".join(parts)
    return path


@pytest.mark.parametrize(
    "sets",
    [
        [],
        ["webhook.certManager.enabled=true", "sessions.enabled=false"],
        ["auth.mode=generated", "salt.random=true", "rotate.enabled=true", "cache.enabled=true"],
        ["webhook.enabled=false", "sessions.password=p", "notifier.signingKey=k", "stampInstall=true"],
    ],
)
def test_static_verdict_agrees_with_two_real_renders(real_helm: str, packaged: Path, sets: list[str]) -> None:
    report = scan_chart(packaged, sets=sets)
    first, second = _render(real_helm, packaged, sets), _render(real_helm, packaged, sets)
    changed = {source for source in first if first[source] != second.get(source)}
    certain = {_helm_source(u) for u in report.uses if u.certain and u.kind == "random"}
    reported = {_helm_source(u) for u in report.uses}
    assert certain <= changed, "a call reported as reached does not change helm's output"
    assert changed <= reported, "helm's output changes where the scan saw nothing"


def test_an_archive_that_unpacks_too_large_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argo_doctor.sources import charts

    monkeypatch.setattr(charts, "MAX_UNPACKED_BYTES", 4096)
    chart = tmp_path / "c"
    shutil.copytree(CHARTS / "umbrella", chart)
    padding = tarfile.TarInfo("notifier/docs/padding.bin")
    padding.size = 8192  # zeros compress to almost nothing
    _pack(CHARTS / "packaged-notifier", chart / "charts" / "notifier-0.1.0.tgz", {"padding": padding})
    report = scan_chart(chart)
    assert ("charts/notifier-0.1.0.tgz", "packaged sub-chart not read: unpacks to more than 4,096 bytes") in \
        report.problems
    assert "uuidv4" in {u.function for u in report.uses}  # the folder sub-chart is still analysed


def test_conditions_on_template_output_are_may_be_reached_and_lookups_are_empty(tmp_path: Path) -> None:
    chart = _chart(tmp_path, "mode: generate\nkeepExisting: true\n", {
        "_helpers.tpl": '{{- define "s.mode" -}}{{ .Values.mode }}{{- end -}}\n',
        "secret.yaml": (
            "kind: Secret\n"
            "metadata:\n  name: s\n"
            "data:\n"
            "{{- if eq (include \"s.mode\" .) \"generate\" }}\n"
            "  a: {{ randAlphaNum 8 | b64enc }}\n"
            "{{- end }}\n"
            "{{- $old := lookup \"v1\" \"Secret\" .Release.Namespace \"s\" }}\n"
            "{{- if and .Values.keepExisting $old }}\n"
            "  b: {{ index $old.data \"b\" }}\n"
            "{{- else }}\n"
            "  b: {{ randAlphaNum 8 | b64enc }}\n"
            "{{- end }}\n"
        ),
    })
    uses = {u.field: u for u in scan_chart(chart).uses}
    assert set(uses) == {("data", "a"), ("data", "b")}
    assert uses[("data", "a")].certain is False  # decided by a template's output
    assert uses[("data", "b")].certain is True  # lookup finds nothing under helm template: the else always runs
    assert uses[("data", "b")].function == "randAlphaNum"
    assert [s.settings for s in uses[("data", "b")].switches] == []


def test_render_twice_uses_the_same_set_values(real_helm: str) -> None:
    report = scan_chart(GATED, render_twice=True, sets=["webhook.enabled=false", "sessions.password=p"],
                        set_strings=["auth.mode=generated"])
    assert report.render_diff
    changed = {line.split(":")[0].strip("+- ") for line in report.render_diff.splitlines()
               if line[:1] in "+-" and line[:3] not in ("+++", "---")}
    assert changed == {"token", "probe-id"}
