"""report.sarif: every SARIF output (scan of each example bundle, a live scan, deprecations, helm-check of each test
chart, map) is valid against the official SARIF 2.1.0 JSON schema (`make sarif-schema`), and says what the JSON
output says: one result per finding or use, levels from severities, fingerprints from finding ids, locations that
point at the file and line of the evidence, live findings kept with their objects only."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from jsonschema import Draft7Validator

from argo_doctor.analyzers import all_analyzers
from argo_doctor.cli import main
from argo_doctor.engine import MAP_RULES, run_scan, select_analyzers
from argo_doctor.model import Finding, Ref, Severity
from argo_doctor.report.groups import group_ids
from argo_doctor.report.json import dumps
from argo_doctor.report.sarif import (
    DEFAULT_SEVERITY,
    FINGERPRINT,
    LEVELS,
    SECURITY_RULES,
    SECURITY_SEVERITY,
    SRCROOT,
    findings_log,
    physical_location,
    scan_sarif,
)
from argo_doctor.sources import bundle
from tests.conftest import EXAMPLES, ROOT
from tests.live.fakeapi import FakeApiServer, load_bundle, write_kubeconfig

SCHEMA = Path(sys.prefix) / "share" / "sarif" / "sarif-schema-2.1.0.json"
OFFICIAL_ID = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"
EXAMPLE_BUNDLES = sorted(p.parent.relative_to(ROOT).as_posix() for p in EXAMPLES.rglob("bundle.yaml"))
CHARTS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "helm" / "charts").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    """The official schema, as `make sarif-schema` installs it; the test fails (never skips) without it."""
    assert SCHEMA.is_file(), f"{SCHEMA} missing: run `make sarif-schema` (make test does)"
    schema = json.loads(SCHEMA.read_text())
    assert schema["$id"] == OFFICIAL_ID and schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    return Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run from the repository's root, with relative paths, as in a CI job."""
    monkeypatch.chdir(ROOT)


def valid(validator: Draft7Validator, text: str) -> dict[str, Any]:
    """The parsed log, after checking it against the schema (every error listed when it fails)."""
    doc: dict[str, Any] = json.loads(text)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    return doc


def invoke(*args: str, codes: tuple[int, ...] = (0, 1)) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in codes, (args, result.output, result.exception)
    return result.stdout


def check_files(run: dict[str, Any]) -> int:
    """Every physical location under %SRCROOT% names a file of the repository and a line inside it; the count."""
    count = 0
    for result in run["results"]:
        for loc in [*result.get("locations", []), *result.get("relatedLocations", [])]:
            physical = loc.get("physicalLocation")
            if physical is None:
                continue
            artifact = physical["artifactLocation"]
            assert artifact["uriBaseId"] == SRCROOT
            path = ROOT / artifact["uri"]
            assert path.is_file(), artifact["uri"]
            if "region" in physical:
                assert 1 <= physical["region"]["startLine"] <= len(path.read_bytes().splitlines()), physical
            count += 1
    return count


URI_REFERENCE = re.compile(r"(?:file://)?(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})+")
"""An RFC 3986 URI reference of a path (the schema's `uri-reference`, which the validator cannot check without
rfc3987): unreserved characters, sub-delimiters such as the `!` of a tarball member, percent-escapes."""


def located(run: dict[str, Any], cwd: Path) -> list[tuple[Path, int]]:
    """The file and line of every physical location, resolved as a SARIF consumer does: a relative URI against
    %SRCROOT% (the directory the command ran in, `cwd`), never climbing out of it; any other an absolute file URI
    without a base."""
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == cwd.as_uri() + "/"
    found = []
    for result in run["results"]:
        for loc in [*result.get("locations", []), *result.get("relatedLocations", [])]:
            if "physicalLocation" not in loc:
                continue
            artifact = loc["physicalLocation"]["artifactLocation"]
            uri = artifact["uri"]
            assert URI_REFERENCE.fullmatch(uri), uri
            if uri.startswith("file://"):
                assert "uriBaseId" not in artifact
                path = Path(unquote(urlsplit(uri).path))
            else:
                assert artifact["uriBaseId"] == SRCROOT and ":" not in uri.split("/")[0] and ".." not in uri.split("/")
                path = cwd / unquote(uri)
            found.append((path, loc["physicalLocation"]["region"]["startLine"]))
    assert found
    return found


def assert_in_files(found: list[tuple[Path, int]], folder: Path, member: Path | None = None) -> None:
    """Every location is a file of `folder` (`member`: a tarball there, of which `folder` is the source) and a
    line inside it."""
    for path, line in found:
        if member is not None:
            archive, _, inside = path.as_posix().partition("!/")
            assert Path(archive) == member, path
            path = folder / inside
        assert path.resolve().is_relative_to(folder.resolve()) and path.is_file(), path
        assert 1 <= line <= len(path.read_bytes().splitlines()), (path, line)


@pytest.mark.parametrize("command", ["scan", "map"])
@pytest.mark.parametrize(("cwd", "given", "relative"), [
    ("{tmp}", "{root}/examples/incidents/image-updater", False),  # absolute, outside the current directory
    ("docs", "../examples/incidents/image-updater", False),  # `..`, outside
    (".", "{root}/examples/incidents/image-updater", True),  # absolute, inside: relative
    ("examples", "../examples/incidents/image-updater", True),  # `..`, back inside
])
def test_an_input_given_from_elsewhere_is_located(validator: Draft7Validator, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, command: str, cwd: str,
                                                  given: str, relative: bool) -> None:
    """Whatever the current directory and however the input is given, every URI leads to the file: relative to
    %SRCROOT% when the input is inside the current directory, else an absolute file URI."""
    here = (ROOT / cwd.format(tmp=tmp_path)).resolve()
    monkeypatch.chdir(here)
    text = invoke(command, given.format(root=ROOT), "-o", "sarif", *(["--fail-on", "never"] if command == "scan"
                                                                      else []))
    found = located(valid(validator, text)["runs"][0], here)
    assert_in_files(found, EXAMPLES / "incidents" / "image-updater")
    assert ("file://" not in text.replace(here.as_uri() + "/", "")) is relative


@pytest.mark.parametrize("example", EXAMPLE_BUNDLES)
def test_scan_of_each_example(validator: Draft7Validator, example: str) -> None:
    doc = valid(validator, invoke("scan", example, "-o", "sarif", "--fail-on", "never"))
    findings = json.loads(invoke("scan", example, "-o", "json", "--fail-on", "never"))["findings"]
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "argo-doctor" and driver["semanticVersion"] == driver["version"]
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [cls.id for cls in all_analyzers()]
    assert len(run["results"]) == len(findings) > 0
    for result, finding in zip(run["results"], findings, strict=True):
        assert result["ruleId"] == finding["rule"] == rules[result["ruleIndex"]]["id"]
        assert result["partialFingerprints"] == {FINGERPRINT: finding["id"]}
        assert result["level"] == {"critical": "error", "high": "error", "medium": "warning"}.get(
            finding["severity"], "note")
        assert result["message"]["text"].startswith(finding["title"])
        assert finding["summary"] in result["message"]["text"]
        if finding["objects"]:
            names = [loc["fullyQualifiedName"] for loc in result["locations"][0]["logicalLocations"]]
            assert names == list(dict.fromkeys(
                f"{o['kind']}/{o['namespace'] + '/' if o['namespace'] else ''}{o['name']}" for o in finding["objects"]))
    assert check_files(run) > 0
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == ROOT.as_uri() + "/"


def test_a_primary_location_is_the_first_evidence_in_a_file(validator: Draft7Validator) -> None:
    doc = valid(validator, invoke("scan", "examples/incidents/stuck-rollout", "-o", "sarif", "--fail-on", "never"))
    findings = json.loads(invoke("scan", "examples/incidents/stuck-rollout", "-o", "json", "--fail-on", "never"))
    for result, finding in zip(doc["runs"][0]["results"], findings["findings"], strict=True):
        in_files = [e["location"] for e in finding["evidence"] if physical_location(e["location"]) is not None]
        if not in_files:
            assert all("physicalLocation" not in loc for loc in result.get("locations", []))
            continue
        path, _, rest = in_files[0].partition(":")
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == f"examples/incidents/stuck-rollout/{path}"
        assert physical["region"]["startLine"] == int(rest.split()[0].split("#")[0])
        assert len(result.get("relatedLocations", [])) == min(len(in_files) - 1, 50)


def test_live_findings_are_kept_with_their_objects(validator: Draft7Validator) -> None:
    """A live scan's files are gone when the report is read: its results have logical locations only."""
    snap = bundle.load([EXAMPLES / "incidents" / "unwanted-sync"])
    snap.source = "live: prod-eu"
    result = run_scan(snap, select_analyzers())
    doc = valid(validator, scan_sarif(result))
    run = doc["runs"][0]
    assert len(run["results"]) == len(result.findings) > 0
    assert "originalUriBaseIds" not in run
    for res, finding in zip(run["results"], result.findings, strict=True):
        assert "relatedLocations" not in res
        for loc in res.get("locations", []):
            assert "physicalLocation" not in loc
            assert [lg["fullyQualifiedName"] for lg in loc["logicalLocations"]] == list(
                dict.fromkeys(str(r) for r in finding.objects))
            assert all(lg["kind"] == "resource" for lg in loc["logicalLocations"])


def test_fingerprints_match_across_runs_of_other_rules() -> None:
    """A rerun with fewer rules gives the same fingerprint to the same finding, so code scanning matches them."""
    every = json.loads(invoke("scan", "examples/incidents/image-updater", "-o", "sarif", "--fail-on", "never"))
    one = json.loads(invoke("scan", "examples/incidents/image-updater", "-o", "sarif", "--fail-on", "never",
                            "--rule", "rbac-overbroad"))
    mine = {r["partialFingerprints"][FINGERPRINT] for r in one["runs"][0]["results"]}
    assert mine and mine <= {r["partialFingerprints"][FINGERPRINT] for r in every["runs"][0]["results"]}
    assert [r["id"] for r in one["runs"][0]["tool"]["driver"]["rules"]] == ["rbac-overbroad"]


def test_security_rules_carry_a_security_severity() -> None:
    doc = json.loads(invoke("scan", "examples/incidents/image-updater", "-o", "sarif", "--fail-on", "never"))
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    for rule_id, rule in rules.items():
        security = rule_id in SECURITY_RULES
        assert ("security" in rule["properties"]["tags"]) == security
        assert ("security-severity" in rule["properties"]) == security
        assert rule["defaultConfiguration"]["level"] == LEVELS[DEFAULT_SEVERITY[rule_id]]
    assert rules["rbac-overbroad"]["properties"]["security-severity"] == "8.0"
    overbroad = [r for r in run["results"] if r["ruleId"] == "rbac-overbroad"]
    assert overbroad
    for result in overbroad:
        severity = result["properties"]["severity"]
        assert result["properties"].get("security-severity") == {
            s.label: v for s, v in SECURITY_SEVERITY.items()}.get(severity)
        assert 0 < float(result["properties"].get("security-severity", "0.1")) <= 10
    assert all("security-severity" not in r["properties"] for r in run["results"] if r["ruleId"] not in SECURITY_RULES)


def test_every_rule_has_a_default_severity() -> None:
    assert set(DEFAULT_SEVERITY) == {cls.id for cls in all_analyzers()}


def test_deprecations(validator: Draft7Validator) -> None:
    folder = "examples/incidents/deprecated-callers"
    doc = valid(validator, invoke("deprecations", folder, "-o", "sarif"))
    uses = json.loads(invoke("deprecations", folder, "-o", "json"))["uses"]
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["deprecated-api"]
    assert run["properties"]["targetVersion"] == "1.21"
    results = run["results"]
    assert len(results) == len(uses) > 0
    assert sorted((r["properties"]["apiVersion"], r["properties"]["status"]) for r in results) == sorted(
        (u["apiVersion"], u["status"]) for u in uses)
    for result in results:
        want = {"removed": "error", "deprecated": "warning"}.get(result["properties"]["status"], "note")
        assert result["level"] == (want if result["properties"]["certain"] else {"error": "warning"}.get(want, "note"))
    assert check_files(run) == len(results)
    fingerprints = [r["partialFingerprints"][FINGERPRINT] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)


def test_deprecations_at_a_removing_release_are_errors(validator: Draft7Validator) -> None:
    doc = valid(validator, invoke("deprecations", "examples/incidents/deprecated-callers", "--target-version",
                                  "1.25", "-o", "sarif"))
    levels = {(r["properties"]["status"], r["level"]) for r in doc["runs"][0]["results"]}
    assert ("removed", "error") in levels


@pytest.mark.parametrize("chart", CHARTS)
def test_helm_check_of_each_chart(validator: Draft7Validator, chart: str) -> None:
    doc = valid(validator, invoke("helm-check", chart, "-o", "sarif"))
    report = json.loads(invoke("helm-check", chart, "-o", "json"))
    run = doc["runs"][0]
    results = run["results"]
    assert len(results) == len(report["uses"])
    for result, use in zip(results, report["uses"], strict=True):
        assert result["ruleId"] == "helm-nondeterministic-call" and result["ruleIndex"] == 0
        assert result["level"] == ("warning" if use["reached"] == "yes" else "note")
        assert result["properties"]["function"] == use["function"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith(
            chart + "/" + use["call"].partition(":")[0])
    assert check_files(run) >= len(results)
    fingerprints = [r["partialFingerprints"][FINGERPRINT] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    notes = run["invocations"][0].get("toolExecutionNotifications", [])
    assert len(notes) == len(report["errors"])


def test_map(validator: Draft7Validator) -> None:
    doc = valid(validator, invoke("map", "examples/incidents/image-updater", "-o", "sarif"))
    findings = json.loads(invoke("map", "examples/incidents/image-updater", "-o", "json"))["findings"]
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [c.id for c in all_analyzers() if c.id in MAP_RULES]
    assert [r["partialFingerprints"][FINGERPRINT] for r in run["results"]] == [f["id"] for f in findings]
    assert findings and check_files(run) > 0


def test_no_secret_in_deprecations_sarif(validator: Draft7Validator, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A credential in a managedFields manager (`--token=`) is redacted, as in the other outputs."""
    token = "sarifcanary7Qx2k9LmZ4"
    (tmp_path / "pdb.yaml").write_text(
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: api\n  namespace: shop\n"
        "  managedFields:\n  - manager: deployer --token=" + token + "\n    operation: Update\n"
        "    apiVersion: policy/v1beta1\n    time: '2026-11-01T08:00:00Z'\nspec:\n  minAvailable: 1\n")
    monkeypatch.chdir(tmp_path)
    text = invoke("deprecations", ".", "--target-version", "1.25", "-o", "sarif")
    doc = valid(validator, text)
    assert token not in text and "--token=<redacted>" in text
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]} == {
        "pdb.yaml"}


@pytest.mark.parametrize(("location", "expected"), [
    ("objects/argocd/apps.yaml:12", ("objects/argocd/apps.yaml", 12)),
    ("objects/cluster/leases.json:4#items[3] Lease/kube-node-lease/n1 .spec.renewTime",
     ("objects/cluster/leases.json", 4)),
    ("logs/argocd/repo-server-0/repo-server.log:88", ("logs/argocd/repo-server-0/repo-server.log", 88)),
    ("bundle.tgz!/objects/a b.yaml:3", None),  # a space ends the path: `b.yaml:3` is not the file
    ("bundle.tgz!/objects/ab.yaml:3", ("bundle.tgz!/objects/ab.yaml", 3)),
    ("collection: GET /api/v1/namespaces/argocd/secrets?limit=500", None),
    ("Lua health scripts", None),
    ("analyzer sync-failed", None),
])
def test_physical_location(location: str, expected: tuple[str, int] | None) -> None:
    physical = physical_location(location)
    if expected is None:
        assert physical is None
        return
    assert physical is not None
    assert (physical["artifactLocation"]["uri"], physical["region"]["startLine"]) == expected
    assert physical_location(location, "examples/x")["artifactLocation"]["uri"] == "examples/x/" + expected[0]


def test_a_tarball_is_located_inside_the_archive(validator: Draft7Validator, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with tarfile.open(tmp_path / "prod.tgz", "w:gz") as archive:
        archive.add(EXAMPLES / "incidents" / "stuck-rollout", arcname=".")
    monkeypatch.chdir(tmp_path)
    doc = valid(validator, invoke("scan", "prod.tgz", "-o", "sarif", "--fail-on", "never"))
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]
            for loc in r.get("locations", []) if "physicalLocation" in loc}
    assert uris and all(u.startswith("prod.tgz!/objects/") or u.startswith("prod.tgz!/logs/") for u in uris), uris


@pytest.mark.parametrize(("cwd", "given", "relative"), [
    ("elsewhere", "{tmp}/in/prod.tgz", False),
    ("elsewhere", "../in/prod.tgz", False),
    (".", "{tmp}/in/prod.tgz", True),
])
def test_a_tarball_given_from_elsewhere_is_located(validator: Draft7Validator, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, cwd: str, given: str,
                                                   relative: bool) -> None:
    """A tarball's members keep their `ARCHIVE!/path` form, under %SRCROOT% or in a file URI by the same rule."""
    source = EXAMPLES / "incidents" / "stuck-rollout"
    (tmp_path / "in").mkdir()
    (tmp_path / "elsewhere").mkdir()
    with tarfile.open(tmp_path / "in" / "prod.tgz", "w:gz") as archive:
        archive.add(source, arcname=".")
    here = (tmp_path / cwd).resolve()
    monkeypatch.chdir(here)
    text = invoke("scan", given.format(tmp=tmp_path), "-o", "sarif", "--fail-on", "never")
    found = located(valid(validator, text)["runs"][0], here)
    assert_in_files(found, source, member=(tmp_path / "in" / "prod.tgz").resolve() if not relative
                    else here / "in" / "prod.tgz")
    uris = re.findall(r'"uri": "([^"]+!/[^"]*)"', text)
    assert uris and all(u.startswith("in/prod.tgz!/" if relative else (tmp_path / "in").resolve().as_uri() +
                                     "/prod.tgz!/") for u in uris), uris


def test_findings_of_one_pattern_carry_their_group(validator: Draft7Validator) -> None:
    """Every finding stays a result; those of a group say which, with the JSON output's group id."""
    findings = [Finding("auto-sync-without-change", Severity.MEDIUM, f"Application app-{i} auto-synced without a new "
                        "commit", "same revision", objects=[Ref("argoproj.io/v1alpha1", "Application", "argocd",
                                                               f"app-{i}")]) for i in range(12)]
    doc = valid(validator, dumps(findings_log(findings, ["auto-sync-without-change"], [], "")))
    ids = group_ids(findings)
    assert ids
    results = doc["runs"][0]["results"]
    assert len(results) == 12
    assert [r["properties"].get("group") for r in results] == [ids.get(f.id) for f in findings]


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fake API server serving the objects and logs of an example bundle (CRDs written through a removed API,
    an Argo CD with known bugs), and a kubeconfig for it."""
    objects, logs = load_bundle(EXAMPLES / "incidents" / "deprecated-callers")
    with FakeApiServer(objects, logs) as api:
        yield write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig", {"test": api}, "test")


@pytest.mark.parametrize("command", ["scan", "map", "deprecations"])
def test_live_commands_keep_every_finding_without_files(validator: Draft7Validator, kubeconfig: Path,
                                                        command: str) -> None:
    """Read from a cluster, the SARIF has the JSON's findings, located by their objects, none by a file."""
    live = ["--live", "--kubeconfig", str(kubeconfig), "-q"]
    extra = ["--fail-on", "never"] if command == "scan" else []
    doc = valid(validator, invoke(command, *live, *extra, "-o", "sarif"))
    listed = json.loads(invoke(command, *live, *extra, "-o", "json"))
    run = doc["runs"][0]
    expected = listed["uses"] if command == "deprecations" else listed["findings"]
    assert len(run["results"]) == len(expected) > 0
    assert "originalUriBaseIds" not in run
    for result in run["results"]:
        assert "relatedLocations" not in result
        for loc in result.get("locations", []):
            assert "physicalLocation" not in loc and loc["logicalLocations"]


def test_several_bundles_are_located_from_the_current_directory(validator: Draft7Validator) -> None:
    doc = valid(validator, invoke("scan", "examples/incidents/stuck-rollout", "examples/incidents/repo-flapping",
                                  "-o", "sarif", "--fail-on", "never"))
    run = doc["runs"][0]
    assert check_files(run) > 0
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
            for loc in r.get("locations", []) if "physicalLocation" in loc}
    assert {u.split("/")[2] for u in uris} == {"stuck-rollout", "repo-flapping"}


def test_helm_render_diff_is_an_error(validator: Draft7Validator, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --render-twice and the real helm (`make helm`), two renders that differ are one error result."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    assert shutil.which("helm", path=path), "no helm: run `make helm` (make test does)"
    monkeypatch.setenv("PATH", path)
    doc = valid(validator, invoke("helm-check", "tests/helm/charts/direct", "--render-twice", "-o", "sarif"))
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["helm-nondeterministic-call", "helm-render-diff"]
    diffs = [r for r in run["results"] if r["ruleId"] == "helm-render-diff"]
    assert len(diffs) == 1 and diffs[0]["level"] == "error" and diffs[0]["ruleIndex"] == 1
    assert "admin-password" in diffs[0]["message"]["text"]
    assert check_files(run) == len(run["results"])
    same = valid(validator, invoke("helm-check", "tests/helm/charts/deterministic", "--render-twice", "-o", "sarif"))
    assert same["runs"][0]["results"] == []
