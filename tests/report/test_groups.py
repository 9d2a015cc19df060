"""Grouping at scale: a thousand Applications auto-synced without a commit are one group in the table and Markdown,
listed in full with `--expand`, and every one of them stays in the JSON with its group id.

The bundle is built here: 1,000 Applications whose `status.history` records automated syncs that deployed the
revision already deployed (1 to 4 of them, so that some are worse than others), 30 Deployments past their progress
deadline that no Application manages, and 2 StatefulSets with a crashing pod (too few to group).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from argo_doctor.analyzers import all_analyzers
from argo_doctor.cli import main
from argo_doctor.model import Finding, Ref, Severity
from argo_doctor.report.groups import GROUP_MIN, _blank_name, group_findings, group_ids, pattern
from tests.report.contract import validate

pytestmark = pytest.mark.slow  # seconds per test: run first (tests/conftest.py)

APPS = 1000
DEPLOYMENTS = 30
STATEFULSETS = 2
SYNC = "auto-sync-without-change"
DEGRADED = "workload-degraded"
START = datetime(2026, 11, 2, 3, 0, tzinfo=UTC)


def _time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _revision(index: int) -> str:
    return f"{index * 2654435761 % 16**40:040x}"


def application(index: int) -> dict[str, Any]:
    """An auto-synced Application whose history shows `index % 4 + 1` automated syncs of the revision it already
    had, one a day (the manifest cache expiring and a chart rendering differently each time)."""
    name = f"tenant-{index:04d}-web"
    source = {"repoURL": "https://git.example.org/platform/tenants.git", "path": f"tenants/{name}",
              "targetRevision": "main", "helm": {"valueFiles": ["values.yaml"]}}
    revision = _revision(index + 1)
    first = START + timedelta(minutes=index)
    history = [{"id": 0, "revision": revision, "deployStartedAt": _time(first),
                "deployedAt": _time(first + timedelta(seconds=3)), "initiatedBy": {"username": "ci@example.org"},
                "source": source}]
    for repeat in range(1, index % 4 + 2):
        when = first + timedelta(days=repeat)
        history.append({"id": repeat, "revision": revision, "deployStartedAt": _time(when),
                        "deployedAt": _time(when + timedelta(seconds=2)), "initiatedBy": {"automated": True},
                        "source": source})
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "uid": f"00000000-0000-4000-8000-{index:012d}"},
        "spec": {"project": "tenants", "source": source,
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": name},
                 "syncPolicy": {"automated": {"prune": True, "selfHeal": True}}},
        "status": {"sync": {"status": "Synced", "revision": revision},
                   "health": {"status": "Healthy"}, "history": history,
                   "reconciledAt": _time(START + timedelta(days=6))},
    }


def deployment(index: int) -> dict[str, Any]:
    """A Deployment in namespace `reports` past its progress deadline, with none of its replicas available."""
    name = f"report-worker-{index:02d}"
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "reports", "uid": f"00000000-0000-4000-9000-{index:012d}",
                     "generation": 3, "labels": labels},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "worker", "image": f"registry.example.org/reports/worker:1.{index}.0"}]}}},
        "status": {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "unavailableReplicas": 2,
                   "conditions": [
                       {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                        "message": "Deployment does not have minimum availability.",
                        "lastUpdateTime": "2026-11-08T09:00:00Z", "lastTransitionTime": "2026-11-08T09:00:00Z"},
                       {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                        "message": f'ReplicaSet "{name}-6d9f7c5b8" has timed out progressing.',
                        "lastUpdateTime": "2026-11-08T09:10:00Z", "lastTransitionTime": "2026-11-08T09:10:00Z"}]},
    }


def statefulset(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A StatefulSet of one replica whose pod crash-loops, and that pod."""
    name = ("ledger-db", "audit-db")[index]
    labels = {"app.kubernetes.io/name": name}
    sts: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "ledger", "uid": f"00000000-0000-4000-a000-{index:012d}",
                     "generation": 1},
        "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "postgres", "image": "registry.example.org/postgres:16.4"}]}}},
        "status": {"observedGeneration": 1, "replicas": 1, "availableReplicas": 0, "currentReplicas": 1,
                   "updatedReplicas": 1, "currentRevision": f"{name}-7b9c", "updateRevision": f"{name}-7b9c"},
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-0", "namespace": "ledger",
                     "labels": {**labels, "controller-revision-hash": f"{name}-7b9c",
                                "statefulset.kubernetes.io/pod-name": f"{name}-0"},
                     "uid": f"00000000-0000-4000-b000-{index:012d}",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name,
                                          "uid": sts["metadata"]["uid"], "controller": True}]},
        "spec": {"restartPolicy": "Always",
                 "containers": [{"name": "postgres", "image": "registry.example.org/postgres:16.4"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                   "containerStatuses": [{
                       "name": "postgres", "ready": False, "restartCount": 12 + index,
                       "image": "registry.example.org/postgres:16.4",
                       "state": {"waiting": {"reason": "CrashLoopBackOff",
                                             "message": f"back-off 5m0s restarting failed container=postgres "
                                                        f"pod={name}-0_ledger"}},
                       "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                    "finishedAt": "2026-11-08T09:20:00Z"}}}]},
    }
    return sts, pod


def _write_list(path: Path, items: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle described in the module docstring."""
    root = tmp_path_factory.mktemp("groups") / "tenants"
    (root / "objects").mkdir(parents=True)
    (root / "bundle.yaml").write_text('collectedAt: "2026-11-09T12:00:00Z"\ncluster:\n  name: tenants-eu\n')
    _write_list(root / "objects/argocd/applications.yaml", [application(i) for i in range(APPS)])
    _write_list(root / "objects/reports/deployments.yaml", [deployment(i) for i in range(DEPLOYMENTS)])
    _write_list(root / "objects/ledger/statefulsets.yaml",
                [obj for i in range(STATEFULSETS) for obj in statefulset(i)])
    return root


def _run(bundle: Path, *args: str) -> str:
    """`scan` 200 columns wide, without colours; the table with `--details`."""
    env = {"COLUMNS": "200", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
    details = () if "-o" in args else ("--details",)  # the panels
    result = CliRunner(env=env).invoke(main, ["scan", str(bundle), *details, "--fail-on", "never", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def doc(bundle: Path) -> dict[str, Any]:
    """The JSON report of the bundle, checked against the contract."""
    document: dict[str, Any] = json.loads(_run(bundle, "-o", "json"))
    validate(document)
    return document


def test_json_keeps_every_finding_with_its_group(doc: dict[str, Any]) -> None:
    syncs = [f for f in doc["findings"] if f["rule"] == SYNC]
    degraded = [f for f in doc["findings"] if f["rule"] == DEGRADED]
    assert len(syncs) == APPS
    assert len({f["group"] for f in syncs}) == 1 and syncs[0]["group"].startswith(f"{SYNC}:group:")
    deployments = [f for f in degraded if f["title"].startswith("Deployment ")]
    assert len(deployments) == DEPLOYMENTS and len({f["group"] for f in deployments}) == 1
    assert deployments[0]["group"] != syncs[0]["group"]
    lone = [f for f in degraded if f["title"].startswith("StatefulSet ")]
    assert len(lone) == STATEFULSETS and all(f["group"] is None for f in lone)


def test_group_ids_are_the_same_on_a_rerun(bundle: Path, doc: dict[str, Any]) -> None:
    again = json.loads(_run(bundle, "-o", "json"))
    assert {f["id"]: f["group"] for f in again["findings"]} == {f["id"]: f["group"] for f in doc["findings"]}


def _worst_titles(doc: dict[str, Any]) -> list[str]:
    """The worst of the group: of the apps that auto-synced 4 times (the most evidence), the five whose last sync
    is the most recent (index 999 first: each app's history starts a minute after the one before)."""
    titles = [f"tenant-{i:04d}-web auto-synced 4 times without a new commit" for i in (999, 995, 991, 987, 983)]
    assert all(any(f["title"] == title for f in doc["findings"]) for title in titles)
    return titles


def test_the_table_shows_one_block_with_the_count_the_cause_and_the_five_worst(bundle: Path,
                                                                               doc: dict[str, Any]) -> None:
    text = _run(bundle)
    assert f"{APPS} × … auto-synced N times without a new commit" in text
    assert f"{DEPLOYMENTS} × Deployment … is Degraded" in text
    assert "the same revision rendered different manifests" in text  # the cause every member shares
    shown = {f["title"] for f in doc["findings"] if f["rule"] == SYNC and f["title"] in text}
    assert shown == set(_worst_titles(doc))
    assert f"{APPS - 5} more; --expand {SYNC} lists all {APPS}" in text
    assert "StatefulSet ledger/ledger-db is" in text and "StatefulSet ledger/audit-db is" in text
    assert f"{len(doc['findings'])} finding(s)" in text and "(2 groups shown as one block each)" in text
    assert "worst most severe first, then most evidence, then most recent evidence:" in text
    single = _run(bundle, "--rule", SYNC)
    assert single.rstrip().endswith(f"{APPS} finding(s): {APPS} medium (1 group shown as one block)")


def test_a_group_cause_does_not_repeat_its_title(bundle: Path) -> None:
    """The Deployments' summaries open with the title ("Deployment reports/x is Degraded: Deployment "x" exceeded
    …"); the group's cause says only what follows it."""
    for text in (_run(bundle), _run(bundle, "-o", "markdown")):
        assert 'Deployment … is Degraded: Deployment' not in " ".join(text.replace("│", " ").split())
        assert 'Deployment "…" exceeded its progress deadline.' in " ".join(text.replace("│", " ").split())


def test_expand_lists_every_member_of_that_rule_only(bundle: Path, doc: dict[str, Any]) -> None:
    text = _run(bundle, "--expand", SYNC)
    titles = [f["title"] for f in doc["findings"] if f["rule"] == SYNC]
    assert all(title in text for title in titles)
    assert f"{APPS} × … auto-synced N times without a new commit" in text
    assert f"{DEPLOYMENTS} × Deployment … is Degraded" in text and f"--expand {DEGRADED}" in text
    everything = _run(bundle, "--expand", "all")
    assert all(f["title"] in everything for f in doc["findings"])
    assert "--expand" not in everything


def test_expand_takes_a_group_id_and_refuses_anything_else(bundle: Path, doc: dict[str, Any]) -> None:
    (group,) = {f["group"] for f in doc["findings"] if f["rule"] == DEGRADED and f["group"]}
    text = _run(bundle, "-o", "markdown", "--expand", group)
    assert text.count(f"*Rule* `{DEGRADED}` · *id*") == DEPLOYMENTS + STATEFULSETS
    assert text.count(f"*Rule* `{SYNC}` · *id*") == 0 and f"`--expand {SYNC}` lists all {APPS}." in text
    for bad in ("nosuch-rule", "nosuch-rule:group:35ac73dad375", f"{group}0", "ALL"):
        result = CliRunner().invoke(main, ["scan", str(bundle), "--expand", bad])
        assert result.exit_code == 2, (bad, result.output)
        (line,) = result.stderr.splitlines()
        assert repr(bad) in line and DEGRADED in line
        assert f"rule ids: {', '.join(sorted(a.id for a in all_analyzers()))}" in line  # every one, sorted


def test_markdown_shows_the_group_and_expands_it(bundle: Path, doc: dict[str, Any]) -> None:
    text = _run(bundle, "-o", "markdown")
    (group,) = {f["group"] for f in doc["findings"] if f["rule"] == SYNC}
    assert f"## [MEDIUM] {APPS} × … auto-synced N times without a new commit\n" in text
    assert f"*group* `{group}`" in text
    listed = re.findall(rf"^- \*\*medium\*\* (.+) \(`({SYNC}:[0-9a-f]{{12}})`\)$", text, re.MULTILINE)
    assert [title for title, _ in listed] == _worst_titles(doc)
    assert f"`--expand {SYNC}` lists all {APPS}." in text
    assert text.count(f"*Rule* `{SYNC}` · *id*") == 0
    expanded = _run(bundle, "-o", "markdown", "--expand", SYNC)
    assert expanded.count(f"*Rule* `{SYNC}` · *id*") == APPS
    assert expanded.count(f"*Rule* `{DEGRADED}` · *id*") == STATEFULSETS


def _finding(name: str, title: str, severity: Severity = Severity.MEDIUM, evidence: int = 0) -> Finding:
    from argo_doctor.model import Evidence

    return Finding("rule-a", severity, title, f"{name} failed. The cache was cold.",
                   [Ref("apps/v1", "Deployment", "shop", name)],
                   [Evidence("object", f"objects/shop.yaml:{i}", "x") for i in range(evidence)])


def test_below_the_threshold_nothing_is_grouped() -> None:
    few = [_finding(f"api-{i}", f"Deployment shop/api-{i} is Degraded") for i in range(GROUP_MIN - 1)]
    assert group_findings(few) == ([], few)
    assert group_ids(few) == {}


def test_names_and_numbers_are_blanked_but_words_are_not() -> None:
    one = _finding("api-1", "api-1 restarted 1 time after 30 s")
    many = _finding("web-7", "web-7 restarted 12 times after 45 s")
    other = _finding("web-8", "web-8 restarted 12 times before 45 s")
    assert pattern(one) == pattern(many) == "… restarted N time after N s"
    assert pattern(other) != pattern(many)
    numbered = _finding("db", "db: x509 from v1 after 30s, 5 of 6 left")
    assert pattern(numbered) == "…: x509 from v1 after 30s, N of N left"
    # a name inside a longer word is left alone
    assert pattern(_finding("api", "rapid api restarts")) == "rapid … restarts"


def test_worst_first_and_cause_and_order() -> None:
    findings = [_finding(f"api-{i}", f"Deployment shop/api-{i} is Degraded", evidence=i) for i in range(6)]
    findings.insert(3, _finding("db", "something else", Severity.HIGH))
    groups, alone = group_findings(findings)
    (group,) = groups
    assert [f.objects[0].name for f in group.worst] == ["api-5", "api-4", "api-3", "api-2", "api-1"]
    assert group.cause == "… failed. The cache was cold."
    assert group.id == group_ids(findings)[findings[0].id] and group.rule == "rule-a"
    assert [f.title for f in alone] == ["something else"]


def test_ties_go_to_the_most_recent_evidence() -> None:
    from argo_doctor.model import Evidence

    start = datetime(2026, 11, 8, 9, 0, tzinfo=UTC)
    findings = [_finding(f"api-{i}", f"Deployment shop/api-{i} is Degraded", evidence=1) for i in range(7)]
    for minutes, finding in zip((5, 30, None, 10, 20, 1, 40), findings, strict=True):
        when = None if minutes is None else start + timedelta(minutes=minutes)
        finding.evidence = [Evidence("object", "objects/shop.yaml:1", "x", when)]
    findings[3].evidence.append(Evidence("object", "objects/shop.yaml:9", "y"))  # more evidence comes first
    (group,), _ = group_findings(findings)
    assert [f.objects[0].name for f in group.worst] == ["api-3", "api-6", "api-1", "api-4", "api-0"]
    assert group.findings[-1].objects[0].name == "api-2"  # no time: last


def test_a_summary_that_opens_with_the_title_gives_a_cause_without_it() -> None:
    findings = [Finding("rule-a", Severity.MEDIUM, f"Deployment shop/api-{i} is Degraded",
                        f'Deployment shop/api-{i} is Degraded: Deployment "api-{i}" exceeded its progress deadline. '
                        "No Application manages it.", [Ref("apps/v1", "Deployment", "shop", f"api-{i}")], [])
                for i in range(GROUP_MIN)]
    (group,), _ = group_findings(findings)
    assert group.cause == 'Deployment "…" exceeded its progress deadline. No Application manages it.'


@pytest.mark.parametrize(("text", "name"), [
    ("api api-2 x.api api.x api_ (api) api/api", "api"),
    ("aa aaa a-a éa aé a…a", "a"),
    ("shop/api shop/api-2 kind/shop/api.", "shop/api"),
    ("", "x"),
    ("x", "x"),
])
def test_a_name_is_blanked_where_the_pattern_of_its_edges_would_match(text: str, name: str) -> None:
    expected = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "…", text)
    assert _blank_name(text, name) == expected
