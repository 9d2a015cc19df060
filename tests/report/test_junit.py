"""report.junit: `scan -o junit` parses as XML, has one suite per rule that ran and one case per finding, and fails
exactly the findings at or above `--fail-on`, as the JSON output counts them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from click.testing import CliRunner

from argo_doctor.analyzers import all_analyzers
from argo_doctor.cli import main
from argo_doctor.engine import ScanResult
from argo_doctor.model import Evidence, Finding, Ref, Remediation, Severity
from argo_doctor.report.junit import junit_xml
from argo_doctor.snapshot import Snapshot
from tests.conftest import EXAMPLES, ROOT

EXAMPLE_BUNDLES = sorted(str(p.parent.relative_to(ROOT)) for p in EXAMPLES.rglob("bundle.yaml"))
RANK = {s.label: s for s in Severity}


def invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), (args, result.output, result.exception)
    return result.stdout


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("example", EXAMPLE_BUNDLES)
@pytest.mark.parametrize("fail_on", ["high", "medium", "never"])
def test_counts_match_the_json(example: str, fail_on: str) -> None:
    root = ET.fromstring(invoke("scan", example, "-o", "junit", "--fail-on", fail_on).encode())
    findings = json.loads(invoke("scan", example, "-o", "json", "--fail-on", "never"))["findings"]
    per_rule = Counter(f["rule"] for f in findings)
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == [cls.id for cls in all_analyzers()]
    failing = [f for f in findings if fail_on != "never" and RANK[f["severity"]] >= RANK[fail_on]]
    assert int(root.get("failures", "-1")) == len(failing) == len(list(root.iter("failure")))
    assert int(root.get("tests", "-1")) == sum(max(per_rule[rule], 1) for rule in suites)
    for rule, suite in suites.items():
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases) == max(per_rule[rule], 1)
        assert int(suite.get("failures", "-1")) == sum(1 for f in failing if f["rule"] == rule)
        assert all(case.get("classname") == rule for case in cases)
        if not per_rule[rule]:  # a rule without findings passes
            assert [(c.get("name"), list(c)) for c in cases] == [(rule, [])]
    for finding in findings:  # each finding: a case named for its main object, failing or with its text
        rule_cases = suites[finding["rule"]].findall("testcase")
        main_object = finding["objects"][0] if finding["objects"] else None
        name = (f"{main_object['kind']}/{main_object['namespace'] + '/' if main_object['namespace'] else ''}"
                f"{main_object['name']}") if main_object else finding["title"]
        matching = [c for c in rule_cases if (c.get("name") or "").startswith(name) and
                    finding["id"] in ET.tostring(c, encoding="unicode")]
        assert len(matching) == 1, (finding["id"], name)
        failure = matching[0].find("failure")
        if finding in failing:
            assert failure is not None and failure.get("message") == finding["title"]
            assert failure.get("type") == finding["severity"]
            assert finding["summary"] in (failure.text or "")
        else:
            assert failure is None and finding["summary"] in (matching[0].findtext("system-out") or "")


def test_control_characters_and_markup_stay_text() -> None:
    """What the input says is escaped or dropped: the document parses, and its text keeps the words."""
    finding = Finding(
        "sync-failed", Severity.HIGH, "Sync failed <script>&amp;", "boom\x1b[2J\x00 ]]> \x9b31m done \ud800",
        objects=[Ref("argoproj.io/v1alpha1", "Application", "argocd", "shop")],
        evidence=[Evidence("log", "logs/argocd/c.log:3", 'msg="x\x07" <b>')],
        remediation=Remediation("retry", command="argocd app sync shop"),
    )
    other = Finding("sync-failed", Severity.LOW, "Second", "s",
                    objects=[Ref("argoproj.io/v1alpha1", "Application", "argocd", "shop")])
    text = junit_xml(ScanResult(Snapshot("x"), [finding, other], [], [], rules=["sync-failed", "app-unhealthy"]),
                     "high")
    root = ET.fromstring(text.encode())
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and failure.get("message") == "Sync failed <script>&amp;"
    assert "boom ]]>" in (failure.text or "") and "done" in (failure.text or "")
    assert 'logs/argocd/c.log:3: msg="x" <b>' in (failure.text or "")
    assert "$ argocd app sync shop" in (failure.text or "")
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["Application/argocd/shop: Sync failed <script>&amp;", "Application/argocd/shop: Second",
                     "app-unhealthy"]
    assert not any(ch in text for ch in "\x1b\x00\x07\x9b\ud800")


def test_a_crashed_rule_is_an_error() -> None:
    text = junit_xml(ScanResult(Snapshot("x"), [], [], [], crashed=["rbac-missing"], rules=["rbac-missing"]), "high")
    root = ET.fromstring(text.encode())
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("2", "1", "0")
