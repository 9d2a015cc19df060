"""JUnit XML output (`scan -o junit`) for CI systems: one test suite per rule that ran, one test case per finding
(named for its main object), a failure for each finding at or above `--fail-on`; a rule without findings is one
passing test case. Every text is redacted and stripped of control characters (XML 1.0 cannot hold them)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import IO

from argo_doctor.engine import ScanResult
from argo_doctor.model import Finding, Severity
from argo_doctor.report.options import ReportOptions
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time

_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 cannot hold beside the control characters `clean(human=True)` removes: surrogates, non-characters."""


def fails(finding: Finding, fail_on: str) -> bool:
    """Whether the finding reaches the `--fail-on` threshold (`never`: none does)."""
    return fail_on != "never" and finding.severity >= Severity.parse(fail_on)


def case_name(finding: Finding) -> str:
    """`Kind/namespace/name` of the finding's main object, or its title when it names none."""
    return str(finding.objects[0]) if finding.objects else finding.title


def finding_body(finding: Finding) -> str:
    """The summary, the evidence (time, location, excerpt), the fix and its command."""
    lines = [f"[{finding.severity.label}] {finding.title}", "", finding.summary]
    if finding.evidence:
        lines += ["", "Evidence:"]
    for item in finding.evidence:
        when = f"{format_time(item.time)} " if item.time else ""
        lines.append(f"  {when}{item.location}: {' '.join(item.excerpt.split())}")
    if finding.remediation.text:
        lines += ["", f"Fix: {finding.remediation.text}"]
    if finding.remediation.command:
        lines.append(f"  $ {finding.remediation.command}")
    lines += [f"  {doc}" for doc in finding.remediation.docs]
    lines.append(f"Finding id: {finding.id}")
    return "\n".join(lines)


def _suite(rule: str, findings: Sequence[Finding], fail_on: str) -> ET.Element:
    suite = ET.Element("testsuite", name=rule)
    failures = 0
    names = [case_name(f) for f in findings]
    for finding, name in zip(findings, names, strict=True):
        if names.count(name) > 1:  # one object, several findings of the rule: tell the cases apart
            name = f"{name}: {finding.title}"
        case = ET.SubElement(suite, "testcase", classname=rule, name=name)
        if fails(finding, fail_on):
            failures += 1
            failure = ET.SubElement(case, "failure", message=finding.title, type=finding.severity.label)
            failure.text = finding_body(finding)
        else:
            ET.SubElement(case, "system-out").text = finding_body(finding)
    if not findings:
        ET.SubElement(suite, "testcase", classname=rule, name=rule)
    suite.set("tests", str(max(len(findings), 1)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    return suite


def junit_xml(result: ScanResult, fail_on: str) -> str:
    """The XML document: `<testsuites>` with a suite per rule, in the order the rules ran (then any other rule a
    finding names); an analyzer that crashed is one error."""
    findings = clean(result.findings, result.snapshot.scrubber, human=True)
    by_rule: dict[str, list[Finding]] = {rule: [] for rule in result.rules}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    root = ET.Element("testsuites", name="argo-doctor")
    for rule, members in by_rule.items():
        suite = _suite(rule, members, fail_on)
        if rule in result.crashed:
            case = ET.SubElement(suite, "testcase", classname=rule, name=f"{rule} (internal error)")
            ET.SubElement(case, "error", message="the rule's analyzer raised; its findings may be missing",
                          type="internal")
            suite.set("tests", str(int(suite.get("tests", "0")) + 1))
            suite.set("errors", "1")
        root.append(suite)
    for attribute in ("tests", "failures", "errors"):
        root.set(attribute, str(sum(int(s.get(attribute, "0")) for s in root)))
    ET.indent(root)
    return _NOT_XML.sub("\ufffd", ET.tostring(root, encoding="unicode", xml_declaration=True))


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the scan's JUnit XML."""
    out.write(junit_xml(result, (options or ReportOptions()).fail_on))
    out.write("\n")
