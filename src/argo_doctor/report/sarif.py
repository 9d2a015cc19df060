"""SARIF 2.1.0 output (`-o sarif`) of `scan`, `map`, `deprecations` and `helm-check`, for GitHub code scanning
and other SARIF consumers (docs/sarif.md). One run, one rule per analyzer (or per kind of use for deprecations and
helm-check), one result per finding; every string passes through `sources.redact.clean` first."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import quote

from argo_doctor import __version__
from argo_doctor.analyzers import Analyzer, all_analyzers
from argo_doctor.deprecations import Use, Version
from argo_doctor.engine import ScanResult
from argo_doctor.helm import ChartReport, NondeterministicUse
from argo_doctor.model import Evidence, Finding, Problem, Ref, Severity
from argo_doctor.report.groups import group_ids
from argo_doctor.report.json import dumps
from argo_doctor.report.options import ReportOptions
from argo_doctor.sources.bundle import TARBALL_SUFFIXES
from argo_doctor.sources.redact import clean

SARIF_VERSION = "2.1.0"
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/argo-doctor/argo-doctor"  # the Homepage of pyproject.toml
RULES_URI = f"{INFORMATION_URI}#rules"
SRCROOT = "%SRCROOT%"
"""The base of every relative artifact URI: the directory the command ran in."""
FINGERPRINT = "findingId/v1"
MAX_RELATED = 50
"""Further evidence locations of one result, beyond its primary one."""
MAX_DIFF = 4000
"""Characters of a helm render diff quoted in its result."""

LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note",
          Severity.INFO: "note"}
SECURITY_SEVERITY = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5", Severity.LOW: "2.0"}
"""GitHub's scale (critical over 9.0, high 7.0-8.9, medium 4.0-6.9, low 0.1-3.9); info findings get none."""
SECURITY_RULES = frozenset({"rbac-overbroad", "webhook-ca-mismatch"})
"""The rules whose findings are security weaknesses: more privilege than needed, and admission webhooks whose TLS
trust is wrong. The others (rbac-missing, webhook-blast-radius, clocks, syncs…) are about availability."""
DEFAULT_SEVERITY = {
    "github-app-token-clock": Severity.HIGH, "node-clock-skew": Severity.MEDIUM,
    "replica-error-divergence": Severity.MEDIUM, "auto-sync-without-change": Severity.MEDIUM,
    "helm-nondeterministic-render": Severity.MEDIUM, "deprecated-api-caller": Severity.MEDIUM,
    "webhook-blast-radius": Severity.HIGH, "webhook-ca-mismatch": Severity.HIGH, "app-unhealthy": Severity.HIGH,
    "sync-failed": Severity.HIGH, "rollout-stuck-degraded": Severity.HIGH, "rollout-degraded": Severity.HIGH,
    "workload-degraded": Severity.MEDIUM, "rbac-missing": Severity.MEDIUM, "rbac-overbroad": Severity.HIGH,
    "collector-permission-missing": Severity.MEDIUM, "component-known-bug": Severity.MEDIUM,
    "operation-stuck": Severity.HIGH, "app-deletion-stuck": Severity.HIGH, "shared-resource": Severity.MEDIUM,
    "progressing-forever": Severity.MEDIUM, "out-of-sync-writer": Severity.MEDIUM,
    "manifest-generation-failed": Severity.HIGH, "argocd-rbac-policy": Severity.MEDIUM,
    "cluster-credentials-expired": Severity.HIGH, "redis-unreachable": Severity.HIGH,
    "sso-login-failed": Severity.HIGH, "controller-sharding": Severity.MEDIUM,
    "applicationset-error": Severity.MEDIUM, "applicationset-deleted-apps": Severity.CRITICAL,
    "applicationset-rollout-stuck": Severity.HIGH, "events-eventbus-unhealthy": Severity.HIGH,
    "events-eventsource-failing": Severity.HIGH, "events-sensor-not-triggering": Severity.HIGH,
    "rollout-analysis-inconclusive": Severity.MEDIUM, "workflow-pending": Severity.MEDIUM,
    "cronworkflow-not-firing": Severity.MEDIUM, "image-updater-failing": Severity.HIGH,
    "rollout-traffic-routing": Severity.HIGH,
}
"""Each rule's usual severity, its `defaultConfiguration.level` (every result carries its own level)."""
_LOCATION = re.compile(r"(?P<path>[^\s:#]+):(?P<line>\d+)(?:#\S*)?(?:\s.*)?", re.DOTALL)
"""An evidence location in a file: `objects/ns/x.yaml:12`, `x.json:3#items[2] Kind/ns/name .field`, `b.tgz!/…`."""


@dataclass(frozen=True)
class Rule:
    """One SARIF rule (reportingDescriptor)."""

    id: str
    title: str
    description: str
    help: str
    severity: Severity
    help_uri: str = RULES_URI


DEPRECATED_API = Rule(
    "deprecated-api", "Deprecated or removed Kubernetes API in use",
    "A manifest, chart template, live object or API request uses an API version that Kubernetes (or an add-on) "
    "deprecates or removes.",
    "Move the object to the replacement API version named in the result before upgrading to the release that "
    "removes it; `argo-doctor deprecations -o json` lists the notes of each migration.",
    Severity.HIGH, f"{INFORMATION_URI}#deprecated-apis")
HELM_CALL = Rule(
    "helm-nondeterministic-call", "Helm template call changes on every render",
    "A chart template calls genCA, genSignedCert, randAlphaNum, now, lookup… so that every render differs and "
    "Argo CD shows the application OutOfSync after each refresh.",
    "Set the values the result names to keep the call out of the output, or pin the generated value (an existing "
    "Secret, cert-manager), or ignore the field with the Application's ignoreDifferences.",
    Severity.MEDIUM, f"{INFORMATION_URI}#helm-charts")
HELM_DIFF = Rule(
    "helm-render-diff", "Two helm renders differ",
    "`helm template` run twice with the same values gave different output.",
    "Read the diff in the result: the lines that change are what Argo CD sees as drift on every refresh.",
    Severity.HIGH, f"{INFORMATION_URI}#helm-charts")


def analyzer_rule(analyzer: type[Analyzer]) -> Rule:
    """The SARIF rule of an analyzer: its title, docstring and options."""
    description = " ".join((analyzer.__doc__ or analyzer.title).split())
    options = "".join(f" Option {analyzer.id}.{key}: {meaning}." for key, meaning in analyzer.options.items())
    help_text = (f"{description} Each result holds the finding's summary and fix; `argo-doctor scan -o json` has "
                 f"its evidence and causal chain.{options}")
    return Rule(analyzer.id, analyzer.title, description, help_text,
                DEFAULT_SEVERITY.get(analyzer.id, Severity.MEDIUM))


def _rules_for(ids: Iterable[str]) -> list[Rule]:
    """The rules of these analyzer ids, in the registry's order; an unknown id gets a bare rule."""
    wanted = list(dict.fromkeys(ids))
    known = {cls.id: cls for cls in all_analyzers()}
    ordered = [known[i] for i in known if i in wanted]
    extra = [Rule(i, i, i, i, Severity.MEDIUM) for i in wanted if i not in known]
    return [analyzer_rule(cls) for cls in ordered] + extra


def _pascal(rule_id: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", rule_id))


def rule_json(rule: Rule) -> dict[str, Any]:
    """A reportingDescriptor; security rules carry the `security` tag and GitHub's `security-severity`."""
    properties: dict[str, Any] = {"tags": ["security" if rule.id in SECURITY_RULES else "reliability", "kubernetes",
                                           "argo"]}
    if rule.id in SECURITY_RULES:
        properties["security-severity"] = SECURITY_SEVERITY.get(rule.severity, "2.0")
    return {
        "id": rule.id,
        "name": _pascal(rule.id),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.description},
        "help": {"text": rule.help},
        "helpUri": rule.help_uri,
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": properties,
    }


# -- locations ---------------------------------------------------------------------------------------------------


def from_cwd(path: str) -> str:
    """A file path as a SARIF consumer can find it: relative to the current directory (%SRCROOT%) when it is
    inside it, however given (`/abs/cwd/x`, `sub/../x`), else absolute. `..` is resolved on the disk (through
    links, as the OS does); a path without one is made absolute as written, so that a link inside the current
    directory stays inside it. A tarball member (`NAME!/path`) keeps its form."""
    full = Path(os.path.realpath(path) if ".." in PurePosixPath(path).parts else os.path.abspath(path))
    cwd = Path.cwd()
    return full.relative_to(cwd).as_posix() if full.is_relative_to(cwd) else full.as_posix()


def _uri(path: str) -> tuple[str, str | None]:
    """The URI of a file path and its base id: a path inside the current directory under %SRCROOT%, any other as
    an absolute file URI."""
    path = from_cwd(path)
    if path.startswith("/"):
        return "file://" + quote(path, safe="/!-._~"), None
    return quote(path, safe="/!-._~"), SRCROOT


def artifact_location(path: str) -> dict[str, Any]:
    """An artifactLocation for a file path."""
    uri, base = _uri(path)
    return {"uri": uri, "uriBaseId": base} if base else {"uri": uri}


def physical_location(location: str, prefix: str = "") -> dict[str, Any] | None:
    """The physicalLocation of an evidence location in a file (`path:LINE…`), with `prefix` (the input's folder)
    before the path; None for what is not in a file (`collection: GET …`, `analyzer x`)."""
    match = _LOCATION.fullmatch(location.strip())
    if match is None:
        return None
    path = str(PurePosixPath(prefix, match["path"])) if prefix else match["path"]
    physical: dict[str, Any] = {"artifactLocation": artifact_location(path)}
    line = int(match["line"])
    if line >= 1:
        physical["region"] = {"startLine": line}
    return physical


def logical_location(ref: Ref) -> dict[str, Any]:
    """A Kubernetes object as a logicalLocation (`Kind/namespace/name`)."""
    return {"name": ref.name, "fullyQualifiedName": str(ref), "kind": "resource",
            "properties": {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace}}


def input_prefix(result: ScanResult) -> str | None:
    """What evidence locations are relative to: one folder as given on the command line, `ARCHIVE!` for one
    tarball, the common parent of several folders and tarballs (shown as `NAME/…` and `NAME!/…`); "" when the
    locations already hold the path as given (files given) or when there is no one parent; None for a live scan,
    whose files are gone. `_uri` makes the result relative to the current directory or absolute."""
    source = result.snapshot.source
    if source.startswith("live:"):
        return None
    given = source.split(", ")
    if not all(Path(p).is_dir() or p.endswith(TARBALL_SUFFIXES) for p in given):
        return ""  # a file given is shown as given; with several inputs, mixed with folders, keep the paths shown
    if len(given) == 1:
        only = given[0].rstrip("/") or "/"
        return f"{only}!" if only.endswith(TARBALL_SUFFIXES) else only
    parents = {os.path.realpath(PurePosixPath(p).parent): PurePosixPath(p).parent.as_posix() for p in given}
    return parents.popitem()[1] if len(parents) == 1 else ""


# -- results -----------------------------------------------------------------------------------------------------


def finding_text(finding: Finding) -> str:
    """The message of a finding: title, summary and fix."""
    parts = [finding.title, finding.summary]
    if finding.remediation.text:
        parts.append(f"Fix: {finding.remediation.text}")
    if finding.remediation.command:
        parts.append(f"Command: {finding.remediation.command}")
    return "\n\n".join(p for p in parts if p)


def _evidence_locations(evidence: Sequence[Evidence], prefix: str | None) -> list[tuple[Evidence, dict[str, Any]]]:
    if prefix is None:
        return []
    found = []
    for item in evidence:
        physical = physical_location(item.location, prefix)
        if physical is not None:
            found.append((item, physical))
    return found


def finding_result(finding: Finding, rule_index: int, prefix: str | None, group: str | None = None) -> dict[str, Any]:
    """One result: level from the severity, the first evidence in a file as the location (with the finding's
    objects as logical locations), the rest as related locations; a live finding has its objects only. `group` is
    the id of the group of findings of one pattern it belongs to (`report.groups`), as in the JSON output."""
    located = _evidence_locations(finding.evidence, prefix)
    location: dict[str, Any] = {}
    if located:
        location["physicalLocation"] = located[0][1]
    if finding.objects:
        location["logicalLocations"] = [logical_location(r) for r in dict.fromkeys(finding.objects)]
    properties: dict[str, Any] = {"severity": finding.severity.label, "findingId": finding.id,
                                  "objects": [str(r) for r in finding.objects]}
    if finding.remediation.docs:
        properties["docs"] = list(finding.remediation.docs)
    if group is not None:
        properties["group"] = group
    if finding.rule in SECURITY_RULES and finding.severity in SECURITY_SEVERITY:
        properties["security-severity"] = SECURITY_SEVERITY[finding.severity]
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": finding_text(finding)},
        "partialFingerprints": {FINGERPRINT: finding.id},
        "properties": properties,
    }
    if location:
        result["locations"] = [location]
    related = [{"id": i, "physicalLocation": physical, "message": {"text": _excerpt(item)}}
               for i, (item, physical) in enumerate(located[1:MAX_RELATED + 1], start=1)]
    if related:
        result["relatedLocations"] = related
    return result


def _excerpt(item: Evidence) -> str:
    text = " ".join(item.excerpt.split())
    return (text[:497] + "…" if len(text) > 500 else text) or item.location


def notifications(problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """Input errors and notes as toolExecutionNotifications (warning and note)."""
    return [{"level": "note" if p.kind == "note" else "warning",
             "message": {"text": f"{p.location}: {p.message}"}} for p in problems]


def sarif_log(rules: Sequence[Rule], results: list[dict[str, Any]], notes: list[dict[str, Any]],
              successful: bool = True, base: bool = True) -> dict[str, Any]:
    """The whole log: one run of argo-doctor, with %SRCROOT% the current directory when `base`."""
    invocation: dict[str, Any] = {"executionSuccessful": successful}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "argo-doctor", "version": __version__, "semanticVersion": __version__,
                            "informationUri": INFORMATION_URI, "rules": [rule_json(r) for r in rules]}},
        "invocations": [invocation],
        "results": results,
    }
    if base:
        run["originalUriBaseIds"] = {SRCROOT: {"uri": Path.cwd().as_uri() + "/"}}
    return {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def findings_log(findings: Sequence[Finding], rule_ids: Iterable[str], problems: Sequence[Problem],
                 prefix: str | None, successful: bool = True) -> dict[str, Any]:
    """The log of findings (`scan`, `map`), with a rule for each id and for each finding's rule."""
    rules = _rules_for([*rule_ids, *(f.rule for f in findings)])
    index = {rule.id: i for i, rule in enumerate(rules)}
    groups = group_ids(findings)
    results = [finding_result(f, index[f.rule], prefix, groups.get(f.id)) for f in findings]
    return sarif_log(rules, results, notifications(problems), successful, base=prefix is not None)


def scan_sarif(result: ScanResult) -> str:
    """The SARIF log of a scan (or of `map`, whose result holds its rules' findings), redacted: what comes from the
    input is, before the log is built (the log's own keys and rule texts are not input)."""
    findings, problems, prefix = clean((result.findings, result.problems, input_prefix(result)),
                                       result.snapshot.scrubber)
    return dumps(findings_log(findings, result.rules, problems, prefix, not result.crashed))


def render(result: ScanResult, out: IO[str], options: ReportOptions | None = None) -> None:
    """Write the scan's SARIF log."""
    out.write(scan_sarif(result))
    out.write("\n")


# -- deprecations and helm-check ---------------------------------------------------------------------------------


def _digest(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _distinct(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results, a fingerprint given twice (two uses alike but for their line) numbered from its second one."""
    seen: dict[str, int] = {}
    for result in results:
        key = result["partialFingerprints"][FINGERPRINT]
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            result["partialFingerprints"][FINGERPRINT] = f"{key}#{seen[key]}"
    return results


def _path_of(location: str) -> str:
    match = _LOCATION.fullmatch(location.strip())
    return match["path"] if match else location


def deprecation_result(use: Use, files: bool = True) -> dict[str, Any]:
    """One use of a deprecated API: error when certainly removed at the target, warning when removed on an
    undecided branch or deprecated, note when it may be used or no target is known. Its location is the file and
    line when `files` (not for a live cluster, read into a folder that is gone), else the object it names."""
    if use.status == "removed":
        level = "warning" if use.maybe else "error"
    elif use.status == "deprecated":
        level = "note" if use.maybe else "warning"
    else:
        level = "note"
    status = f"{use.status} (may be used)" if use.maybe else use.status
    text = f"{use.api.api_version} {use.api.kind} is {status}: {use.api.describe()}. {use.subject}: {use.how}."
    result: dict[str, Any] = {
        "ruleId": DEPRECATED_API.id,
        "ruleIndex": 0,
        "level": level,
        "message": {"text": text},
        "partialFingerprints": {FINGERPRINT: "deprecated-api:" + _digest(
            use.api.api_version, use.api.kind, _path_of(use.location), use.subject, use.how)},
        "properties": {"status": use.status, "certain": not use.maybe, "apiVersion": use.api.api_version,
                       "kind": use.api.kind, "replacement": use.api.replacement, "source": use.api.source},
    }
    physical = physical_location(use.location) if files else None
    if physical is not None:
        result["locations"] = [{"physicalLocation": physical}]
    else:
        result["locations"] = [{"logicalLocations": [{"fullyQualifiedName": use.subject, "kind": "resource"}]}]
    return result


def deprecations_sarif(uses: Sequence[Use], problems: Sequence[Problem], target: Version | None,
                       files: bool = True) -> str:
    """The SARIF log of `deprecations`: one `deprecated-api` result per use, redacted; physical locations when the
    uses are in `files` (not a live cluster's)."""
    uses, problems = clean((list(uses), list(problems)))
    results = _distinct([deprecation_result(u, files) for u in uses])
    doc = sarif_log([DEPRECATED_API], results, notifications(problems), base=files)
    doc["runs"][0]["properties"] = {"targetVersion": f"{target[0]}.{target[1]}" if target else None}
    return dumps(doc)


def helm_result(chart: str, report: ChartReport, use: NondeterministicUse) -> dict[str, Any]:
    """One non-deterministic call: warning when reached with the values in use, note when it may be reached."""
    field = ".".join(use.field).replace(".[]", "[]")
    lands = f"{use.resource_kind or '?'} {use.resource_name or '?'} {field}".rstrip()
    lines = [f"{use.function} ({use.kind}) at {use.call} changes on every render; it lands in {lands} "
             f"({use.output})" + ("" if use.certain else ", may be reached (a condition on the way depends on more "
                                                          "than values)") + "."]
    if use.via:
        lines.append(f"Via {' → '.join(use.via)}.")
    lines += [f"Avoided by: {s.text}." for s in use.switches]
    result: dict[str, Any] = {
        "ruleId": HELM_CALL.id,
        "ruleIndex": 0,
        "level": "warning" if use.certain else "note",
        "message": {"text": "\n".join(lines)},
        "partialFingerprints": {FINGERPRINT: "helm-nondeterministic-call:" + _digest(
            report.name, use.function, _path_of(use.call), _path_of(use.output), use.resource_kind or "",
            use.resource_name or "", field)},
        "properties": {"function": use.function, "kind": use.kind, "reached": "yes" if use.certain else "maybe"},
    }
    physical = physical_location(use.call, chart)
    if physical is not None:
        result["locations"] = [{"physicalLocation": physical}]
    output = physical_location(use.output, chart)
    if output is not None and use.output != use.call:
        result["relatedLocations"] = [{"id": 1, "physicalLocation": output,
                                       "message": {"text": f"the output lands in {lands}"}}]
    return result


def helm_sarif(report: ChartReport) -> str:
    """The SARIF log of `helm-check`: one result per call, and one for a render diff; redacted."""
    report = clean(report)
    chart = report.path.as_posix()
    results = _distinct([helm_result(chart, report, u) for u in report.uses])
    rules = [HELM_CALL]
    if report.render_diff:
        diff = report.render_diff if len(report.render_diff) <= MAX_DIFF else report.render_diff[:MAX_DIFF] + "\n…"
        rules.append(HELM_DIFF)
        results.append({
            "ruleId": HELM_DIFF.id, "ruleIndex": 1, "level": "error",
            "message": {"text": f"Two renders of chart {report.name} with helm differ:\n{diff}"},
            "partialFingerprints": {FINGERPRINT: "helm-render-diff:" + _digest(report.name, chart)},
            "locations": [{"physicalLocation": {"artifactLocation": artifact_location(f"{chart}/Chart.yaml")}}],
        })
    notes = [{"level": "warning", "message": {"text": f"{loc}: {msg}"}} for loc, msg in report.problems]
    return dumps(sarif_log(rules, results, notes))
