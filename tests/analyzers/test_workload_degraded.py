"""workload-degraded, and failed Workflows' nodes in findings (workload-degraded and app-unhealthy).

The bundle `workloads-without-apps` is a namespace dump without any Application (README there); the smaller cases
are objects as `kubectl get -o yaml` prints them.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
import yaml

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.facts.workflows import derived_pod_name, failed_nodes, fnv32a
from argo_doctor.model import Finding
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import RawObject
from tests.conftest import BUNDLES, EXAMPLES, scan_json

BUNDLE = BUNDLES / "workloads-without-apps"


def _objects(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = yaml.safe_load((BUNDLE / "objects" / name).read_text())["items"]
    return items


def _scan(objects: list[dict[str, Any]], *rules: str) -> list[Finding]:
    snap = Snapshot("test", {"collectedAt": "2026-11-25T07:40:00Z"})
    for index, raw in enumerate(objects):
        snap.add(RawObject(raw, f"objects/all.yaml:{index * 40 + 1}"))
    result = run_scan(snap, select_analyzers(only=rules))
    assert not result.crashed
    return result.findings


def _by_title(doc: dict[str, Any], start: str) -> dict[str, Any]:
    (found,) = [f for f in doc["findings"] if f["title"].startswith(start)]
    return found


def test_the_bundle_without_applications_reports_its_failing_workloads_only() -> None:
    doc = scan_json(BUNDLE)
    assert doc["errors"] == []
    assert sorted(f["title"] for f in doc["findings"]) == [
        "Deployment ledger/statements-api is Degraded",
        "StatefulSet ledger/ledger-db is Progressing, with a Degraded pod",
        "Workflow batch/legacy-import-h2n8c Error: load Error",
        "Workflow batch/month-close-x8k2m Failed: reconcile(0) Failed (and 1 more)",
    ]
    assert {(f["rule"], f["severity"]) for f in doc["findings"]} == {("workload-degraded", "medium")}
    everything = str(doc)
    for quiet in ("log-shipper", "reports-web", "ledger-worker", "month-close-p3q7z", "ad-hoc-export-4tw9d"):
        assert quiet not in everything


def test_a_deployment_past_its_deadline_gets_the_image_fix() -> None:
    found = _by_title(scan_json(BUNDLE), "Deployment ledger/statements-api")
    assert "statements-api-5c8f7d9b6d-r7kqz Degraded (api ImagePullBackOff)" in found["summary"]
    assert "No Application in the input manages it" in found["summary"]
    assert found["remediation"]["command"] == "kubectl -n ledger describe pod statements-api-5c8f7d9b6d-r7kqz"
    text = found["remediation"]["text"]
    assert "imagePullSecrets (fin-registry)" in text and "in the workload's manifest and apply it" in text
    assert "Argo CD" not in text
    assert any(e["kind"] == "event" and "401 Unauthorized" in e["excerpt"] for e in found["evidence"])


def test_a_crash_looping_stateful_set_shows_its_last_log_lines() -> None:
    found = _by_title(scan_json(BUNDLE), "StatefulSet ledger/ledger-db")
    assert "ledger-db-0 Degraded (postgres CrashLoopBackOff, last exit code 1, 14 restarts)" in found["summary"]
    assert found["remediation"]["command"] == "kubectl -n ledger logs ledger-db-0 --previous --all-containers"
    assert any(e["kind"] == "log" and "could not load server certificate" in e["excerpt"] for e in found["evidence"])


def test_a_failed_workflow_names_its_failed_pods_and_the_pod_to_read() -> None:
    found = _by_title(scan_json(BUNDLE), "Workflow batch/month-close-x8k2m")
    summary = found["summary"]
    assert "(started by CronWorkflow month-close)" in summary
    assert ("its failed nodes: reconcile(0) (Pod, template reconcile) Failed: OOMKilled (exit code 137); "
            "reconcile(1) (Pod, template reconcile) Failed: Error (exit code 1) (3 enclosing step nodes failed with "
            "them).") in summary
    nodes = [e for e in found["evidence"] if ".status.nodes." in e["location"]]
    assert [e["location"].rsplit(".", 1)[1] for e in nodes] == ["month-close-x8k2m-1364560645",
                                                              "month-close-x8k2m-3310911544"]
    assert nodes[0]["excerpt"].endswith("(pod month-close-x8k2m-reconcile-1364560645)")  # derived, v2
    assert nodes[0]["time"] == "2026-11-25T05:27:02Z"
    # the pod in the input wins over the derived name
    assert found["remediation"]["command"] == "kubectl -n batch logs month-close-x8k2m-reconcile-3310911544 " \
                                              "--all-containers"
    assert "step reconcile(1)" in found["remediation"]["text"]


def test_a_workflow_without_the_pod_name_format_gets_argo_logs() -> None:
    found = _by_title(scan_json(BUNDLE), "Workflow batch/legacy-import-h2n8c")
    assert "load (Pod, template load) Error: pod deleted during operation" in found["summary"]
    assert found["remediation"]["command"] == "argo logs legacy-import-h2n8c -n batch"
    assert "(pod " not in str(found["evidence"])


def test_a_step_whose_pod_never_ran_has_no_logs_to_read() -> None:
    workflow = copy.deepcopy(_objects("batch.yaml")[2])
    del workflow["status"]["nodes"]["legacy-import-h2n8c-1431224832"]["hostNodeName"]
    hook = ('Internal error occurred: failed calling webhook "validate.policy.example.com": failed to call webhook: '
            'Post "https://policy-webhook.policy.svc:443/validate?timeout=10s": context deadline exceeded')
    workflow["status"]["nodes"]["legacy-import-h2n8c-1431224832"]["message"] = hook
    (finding,) = _scan([workflow], "workload-degraded")
    assert finding.remediation.command == "argo get legacy-import-h2n8c -n batch"
    assert "No failed step records a node it ran on (hostNodeName) or a container exit" in finding.remediation.text
    assert "most likely never created" not in finding.remediation.text
    assert "Admission webhook validate.policy.example.com refused the step's pod" in finding.remediation.text


# Trimmed from argo-workflows' workflow/controller/testdata/dag-disable-fail-fast.yaml: a 2019 Workflow whose Pod
# nodes record no hostNodeName (and no pod name format), though their messages show the containers ran.
_UPSTREAM_FAIL_FAST = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  creationTimestamp: 2019-06-26T09:11:58Z
  name: dag-disable-fail-fast-r6xdc
  namespace: default
status:
  finishedAt: 2019-06-26T09:12:46Z
  nodes:
    dag-disable-fail-fast-r6xdc:
      children: [dag-disable-fail-fast-r6xdc-3928436299]
      displayName: dag-disable-fail-fast-r6xdc
      finishedAt: 2019-06-26T09:12:46Z
      id: dag-disable-fail-fast-r6xdc
      name: dag-disable-fail-fast-r6xdc
      phase: Failed
      startedAt: 2019-06-26T09:11:58Z
      templateName: statis
      type: DAG
    dag-disable-fail-fast-r6xdc-3256495944:
      boundaryID: dag-disable-fail-fast-r6xdc
      displayName: C(0)
      finishedAt: 2019-06-26T09:12:08Z
      id: dag-disable-fail-fast-r6xdc-3256495944
      message: failed with exit code 2
      name: dag-disable-fail-fast-r6xdc.C(0)
      phase: Failed
      startedAt: 2019-06-26T09:12:03Z
      templateName: c
      type: Pod
  phase: Failed
  startedAt: 2019-06-26T09:11:58Z
"""


def test_a_step_whose_container_exited_is_not_said_to_have_never_run() -> None:
    (finding,) = _scan([yaml.safe_load(_UPSTREAM_FAIL_FAST)], "workload-degraded")
    text = finding.remediation.text
    assert "never created" not in text and "No failed step records" not in text
    assert "Its failed steps' containers ran (their status reports an exit code)" in text
    assert finding.remediation.command == "argo logs dag-disable-fail-fast-r6xdc -n default"


@pytest.mark.parametrize(("message", "outputs", "exited"), [
    ("failed with exit code 2", None, True),
    ("main: OOMKilled (exit code 137): ", None, True),
    ("Error (exit code 1)", None, True),
    ("", {"exitCode": "1"}, True),
    ('pods "x" is forbidden: exceeded quota', None, False),
    ("Pod was active on the node longer than the specified deadline", None, False),
])
def test_a_container_exit_shows_the_pod_ran(message: str, outputs: dict[str, str] | None, exited: bool) -> None:
    raw = yaml.safe_load(_UPSTREAM_FAIL_FAST)
    node = raw["status"]["nodes"]["dag-disable-fail-fast-r6xdc-3256495944"]
    node["message"] = message
    if outputs is not None:
        node["outputs"] = outputs
    snap = Snapshot("test", {})
    snap.add(RawObject(raw, "wf.yaml:1"))
    (workflow,) = snap.of_kind("Workflow", "argoproj.io")
    (failed,) = [n for n in failed_nodes(snap, workflow) if n.type == "Pod"]
    assert failed.exited is exited and failed.ran is exited


def test_running_succeeded_and_managed_workloads_are_left_alone() -> None:
    ledger = _objects("ledger.yaml")
    app = {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "statements", "namespace": "argocd"},
        "spec": {"destination": {"namespace": "ledger", "server": "https://kubernetes.default.svc"}},
        "status": {"health": {"status": "Degraded"}, "sync": {"status": "Synced"}, "resources": [
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "ledger", "name": "statements-api",
             "status": "Synced"}]},
    }
    findings = _scan([*ledger, app, *_objects("batch.yaml")[3:]], "workload-degraded", "app-unhealthy")
    assert sorted((f.rule, f.title) for f in findings) == [
        ("app-unhealthy", "Application statements is Degraded: Deployment/ledger/statements-api Degraded"),
        ("workload-degraded", "StatefulSet ledger/ledger-db is Progressing, with a Degraded pod"),
    ]


@pytest.mark.parametrize("bundle", ["rollouts-no-pods", "rollouts-mixed"])
def test_rollouts_are_left_to_the_rollout_rules(bundle: str) -> None:
    doc = scan_json(BUNDLES / bundle)
    assert [f for f in doc["findings"] if f["rule"] == "workload-degraded"] == []
    assert any(f["rule"].startswith("rollout-") for f in doc["findings"])


def test_app_unhealthy_shows_the_failed_nodes_of_a_workflow_it_manages() -> None:
    workflow = copy.deepcopy(_objects("batch.yaml")[0])
    del workflow["metadata"]["ownerReferences"]
    app = {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "month-close", "namespace": "argocd"},
        "spec": {"destination": {"namespace": "batch", "server": "https://kubernetes.default.svc"}},
        "status": {"health": {"status": "Degraded", "message": "child 'month-close-x8k2m-3594576176' failed"},
                   "sync": {"status": "Synced"}, "resources": [
                       {"group": "argoproj.io", "version": "v1alpha1", "kind": "Workflow", "namespace": "batch",
                        "name": "month-close-x8k2m", "status": "Synced"}]},
    }
    (finding,) = _scan([app, workflow, _objects("batch.yaml")[1]], "app-unhealthy", "workload-degraded")
    assert finding.rule == "app-unhealthy"
    assert "reconcile(1) (Pod, template reconcile) Failed: Error (exit code 1)" in finding.summary
    assert any(e.location.endswith(".status.nodes.month-close-x8k2m-1364560645") for e in finding.evidence)
    assert finding.remediation.command == "kubectl -n batch logs month-close-x8k2m-reconcile-3310911544 " \
                                          "--all-containers"


def test_app_unhealthy_tells_a_missing_resource_from_one_the_input_lacks() -> None:
    app = {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "ledger", "namespace": "argocd"},
        "spec": {"destination": {"namespace": "ledger", "server": "https://kubernetes.default.svc"}},
        "status": {"health": {"status": "Missing"}, "sync": {"status": "OutOfSync"}, "resources": [
            {"version": "v1", "kind": "ConfigMap", "namespace": "ledger", "name": "ledger-flags",
             "status": "OutOfSync"}]},
    }
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": "ledger"},
             "data": {"ca.crt": "not a real certificate"}}
    (collected,) = _scan([app, other], "app-unhealthy")
    assert "ConfigMap/ledger/ledger-flags is Missing: declared in Git but not found in the cluster" in collected.summary
    (lacking,) = _scan([app], "app-unhealthy")
    assert ("ConfigMap/ledger/ledger-flags is Unknown: OutOfSync and not in the input: the input holds no ConfigMap "
            "in namespace ledger (that kind was not collected there), so whether it exists is unknown"
            ) in lacking.summary
    assert "Missing:" not in lacking.summary


def test_node_ids_follow_upstream_hashing() -> None:
    # A v2 node id is `<workflow>-<FNV-1a 32 of the node name>`, as in the bundle's status.nodes.
    assert fnv32a("month-close-x8k2m[1].reconcile(1)") == 3310911544
    assert fnv32a("") == 0x811C9DC5


def _workflow(annotations: dict[str, str], name: str = "nightly-7bq2d") -> Obj:
    return Obj.from_raw({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                         "metadata": {"name": name, "namespace": "batch", "annotations": annotations}}, "wf.yaml:1")


@pytest.mark.parametrize(("annotations", "node", "expected"), [
    ({"workflows.argoproj.io/pod-name-format": "v2"},
     {"name": "nightly-7bq2d[0].load", "templateName": "load"}, "nightly-7bq2d-load-3921136429"),
    ({"workflows.argoproj.io/pod-name-format": "v2"},
     {"name": "nightly-7bq2d[0].load", "templateName": "load", "templateRef": {"name": "etl", "template": "copy"}},
     "nightly-7bq2d-copy-3921136429"),
    ({"workflows.argoproj.io/pod-name-format": "v1"}, {"name": "nightly-7bq2d[0].load", "templateName": "load"},
     "nightly-7bq2d-1822"),
    ({}, {"name": "nightly-7bq2d[0].load", "templateName": "load"}, None),
    ({}, {"name": "nightly-7bq2d", "templateName": "main"}, "nightly-7bq2d"),
])
def test_pod_names_are_derived_only_when_certain(annotations: dict[str, str], node: dict[str, Any],
                                                 expected: str | None) -> None:
    assert derived_pod_name(_workflow(annotations), "nightly-7bq2d-1822", node) == expected


def test_a_long_pod_name_prefix_is_cut_like_upstream() -> None:
    long_name = "w" * 250
    name = derived_pod_name(_workflow({"workflows.argoproj.io/pod-name-format": "v2"}, long_name), "x",
                            {"name": f"{long_name}[0].a", "templateName": "a"})
    assert name is not None and name == f"{'w' * 242}-{fnv32a(long_name + '[0].a')}"


def test_bad_node_status_does_not_crash() -> None:
    workflow = copy.deepcopy(_objects("batch.yaml")[0])
    workflow["status"]["nodes"] = {"a": "not a node", "b": {"phase": "Failed", "children": "x", "type": 3},
                                   "c": {"phase": "Error", "children": ["b", "missing"]}}
    snap = Snapshot("test")
    snap.add(RawObject(workflow, "wf.yaml:1"))
    nodes = failed_nodes(snap, snap.of_kind("Workflow")[0])
    assert sorted(n.id for n in nodes) == ["b", "c"]
    assert [n.id for n in nodes if n.encloses] == ["c"]
    (finding,) = _scan([workflow], "workload-degraded")
    assert finding.remediation.command == "argo logs month-close-x8k2m -n batch"


def _encloses_by_walk(nodes: dict[str, dict[str, Any]], start: str, failed: set[str]) -> bool:
    """The definition: a failed node is reachable from `start` through `children`, in one step or more."""
    seen: set[str] = set()
    todo = [str(c) for c in nodes[start].get("children") or []]
    while todo:
        current = todo.pop()
        if current not in seen and current in nodes:
            seen.add(current)
            todo.extend(str(c) for c in nodes[current].get("children") or [])
    return bool(seen & failed)


@pytest.mark.parametrize("seed", range(40))
def test_enclosing_failed_nodes_are_those_a_walk_finds(seed: int) -> None:
    """Random graphs of Steps nodes, with cycles, self-loops and missing children: the nodes said to enclose a
    failure are exactly those from which a walk through `children` reaches a failed node."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 30))]
    nodes = {name: {"id": name, "name": name, "type": "Steps", "phase": rng.choice(["Failed", "Succeeded", "Error"]),
                    "children": rng.sample([*names, "missing"], rng.randint(0, 3))} for name in names}
    workflow = copy.deepcopy(_objects("batch.yaml")[0])
    workflow["status"]["nodes"] = nodes
    snap = Snapshot("test")
    snap.add(RawObject(workflow, "wf.yaml:1"))
    failed = {k for k, n in nodes.items() if n["phase"] in ("Failed", "Error")}
    said = {n.id for n in failed_nodes(snap, snap.of_kind("Workflow")[0]) if n.encloses}
    assert said == {k for k in failed if _encloses_by_walk(nodes, k, failed)}


def test_fifty_thousand_chained_steps_are_read_once() -> None:
    """A walk per failed node was quadratic: 5,000 chained steps took 7 s, 50,000 more than 90 s."""
    count = 50_000
    workflow = copy.deepcopy(_objects("batch.yaml")[0])
    workflow["status"]["nodes"] = {f"s{i}": {"id": f"s{i}", "name": f"s{i}", "type": "Steps", "phase": "Failed",
                                             "children": [f"s{i + 1}"] if i + 1 < count else []}
                                   for i in range(count)}
    snap = Snapshot("test")
    snap.add(RawObject(workflow, "wf.yaml:1"))
    nodes = failed_nodes(snap, snap.of_kind("Workflow")[0])
    assert sum(n.encloses for n in nodes) == count - 1


def test_the_unwanted_sync_example_reports_the_refused_workflow() -> None:
    doc = scan_json(EXAMPLES / "incidents" / "unwanted-sync")
    (found,) = [f for f in doc["findings"] if f["rule"] == "workload-degraded"]
    assert found["title"] == "Workflow batch/nightly-ledger-export-7xk2p Failed: export-ledger Error"
    assert found["remediation"]["command"] == "argo get nightly-ledger-export-7xk2p -n batch"
    assert "Admission webhook mpod.elbv2.k8s.aws refused the step's pod" in found["remediation"]["text"]


def test_the_webhook_bundle_reports_the_crash_looping_injector() -> None:
    doc = scan_json(BUNDLES / "webhook-ca-mismatch")
    assert [f["title"] for f in doc["findings"] if f["rule"] == "workload-degraded"] == [
        "Deployment mesh/injector is Progressing, with a Degraded pod"]


def test_odd_shapes_do_not_crash() -> None:
    workflow = copy.deepcopy(_objects("batch.yaml")[0])
    workflow["metadata"]["annotations"]["workflows.argoproj.io/pod-name-format"] = ["v2"]
    pod = copy.deepcopy(_objects("batch.yaml")[1])
    pod["metadata"]["annotations"]["workflows.argoproj.io/node-id"] = ["month-close-x8k2m-3310911544"]
    listed = copy.deepcopy(workflow)
    listed["metadata"]["namespace"] = "other"
    listed["status"]["nodes"] = [{"phase": "Failed"}]
    findings = _scan([workflow, pod, listed, {"apiVersion": "apps/v1", "kind": "Deployment",
                                              "metadata": {"name": "x", "namespace": "ledger"}, "status": "broken"}],
                     "workload-degraded", "app-unhealthy")
    assert sorted(f.title for f in findings) == [
        "Workflow batch/month-close-x8k2m Failed: reconcile(0) Failed (and 1 more)",
        "Workflow other/month-close-x8k2m Failed",
    ]
    (other,) = [f for f in findings if f.title == "Workflow other/month-close-x8k2m Failed"]
    assert "its status holds no nodes" in other.summary
