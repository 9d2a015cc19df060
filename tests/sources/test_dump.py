"""`kubectl cluster-info dump` trees: special files and links are one problem each, never read; dumps written by
kubectl before 1.11 (`Items`, no kinds) are read as current ones."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES

POD_DIR = "argocd/argocd-repo-server-6c9f6d8b9-x2x7q"
LOGS = f"{POD_DIR}/logs.txt"
OUTSIDE_NODES = '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "outside"}}]}'


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """A copy of the dump in tests/bundles, to spoil."""
    root = tmp_path / "dump"
    shutil.copytree(BUNDLES / "cluster-info-dump", root)
    return root


def pods(snap: Snapshot) -> list[str]:
    return sorted(o.name for o in snap.of_kind("Pod"))


def test_a_fifo_logs_txt_is_one_problem(dump: Path) -> None:
    (dump / LOGS).unlink()
    os.mkfifo(dump / LOGS)  # nobody writes to it: opening it for reading would block
    snap = bundle.load([dump], None)
    assert [(p.location, p.message) for p in snap.problems] == [(LOGS, "not a regular file (a FIFO); skipped")]
    assert snap.log_files == [] and "argocd-repo-server-6c9f6d8b9-x2x7q" in pods(snap)


def test_a_logs_txt_leading_to_dev_zero_is_one_problem(dump: Path) -> None:
    (dump / LOGS).unlink()
    (dump / LOGS).symlink_to("/dev/zero")
    snap = bundle.load([dump], None)
    assert [(p.location, p.message) for p in snap.problems] == [(LOGS, "a link to a file outside the input; skipped")]
    assert snap.log_files == []


def test_nodes_json_leading_outside_is_not_read(dump: Path, tmp_path: Path) -> None:
    outside = tmp_path / "nodes.json"
    outside.write_text(OUTSIDE_NODES)
    (dump / "nodes.json").unlink()
    (dump / "nodes.json").symlink_to(outside)
    snap = bundle.load([dump], None)
    assert snap.formats == ["cluster-info-dump"] and snap.of_kind("Node") == []
    assert [(p.location, p.message) for p in snap.problems] == [
        ("nodes.json", "a link to a file outside the input; skipped")]
    assert {f.container for f in snap.log_files} == {"copyutil", "argocd-repo-server"}


def test_links_to_folders_are_not_followed(dump: Path) -> None:
    """A namespace or pod folder that is a link would read the same lists and logs again, as many times as there
    are links."""
    (dump / "mirror").symlink_to("argocd")
    (dump / "argocd" / "again").symlink_to(POD_DIR.split("/")[1])
    snap = bundle.load([dump], None)
    assert snap.problems == [] and len(snap.log_files) == 2
    assert pods(snap) == pods(bundle.load([BUNDLES / "cluster-info-dump"], None))


def test_a_dump_without_nodes_json_is_read_as_a_dump(dump: Path) -> None:
    """kubectl writes nodes.json first; a dump cut down, or written without the right to list nodes, lacks it."""
    (dump / "nodes.json").unlink()
    snap = bundle.load([dump], None)
    assert "cluster-info-dump" in snap.formats
    assert pods(snap) == pods(bundle.load([BUNDLES / "cluster-info-dump"], None))
    assert snap.log_files, "the logs.txt of the dump are split into container logs"


def test_a_manifest_folder_with_pods_yaml_is_not_taken_for_a_dump(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "pods.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: a\n")
    (tmp_path / "app" / "configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a\n")
    snap = bundle.load([tmp_path], None)
    assert "cluster-info-dump" not in snap.formats
    assert snap.of_kind("ConfigMap")


OLD_DUMP = BUNDLES / "cluster-info-dump-old"
FAILING = "argocd-repo-server-5b8f7c9d4-k2x8p"


def test_an_old_dump_with_items_and_no_kinds_is_read() -> None:
    """kubectl before 1.11: `Items`, no kind or apiVersion on lists and items, null for an empty list."""
    snap = bundle.load([OLD_DUMP], None)
    assert snap.formats == ["cluster-info-dump"] and snap.problems == []
    assert sorted((o.api_version, o.kind, o.name) for o in snap.all() if o.kind not in ("Pod", "Event")) == [
        ("apps/v1", "Deployment", "argocd-repo-server"), ("apps/v1", "Deployment", "argocd-server"),
        ("apps/v1", "ReplicaSet", "argocd-repo-server-5b8f7c9d4"), ("apps/v1", "ReplicaSet", "argocd-server-6d5f8b7c9"),
        ("v1", "Node", "worker-a"), ("v1", "Service", "argocd-repo-server"),
    ]
    deployment = snap.get("Deployment", "argocd-repo-server", "argocd", "apps")
    assert deployment is not None and deployment.location == "argocd/deployments.json:1#items[0]"
    assert sorted(p.name for p in snap.pods_of(deployment)) == [FAILING, "argocd-repo-server-5b8f7c9d4-w7q4m"]
    assert snap.node_of(snap.pods_of(deployment)[0]).name == "worker-a"  # type: ignore[union-attr]
    (event,) = snap.events
    assert event.reason == "Unhealthy" and event.involved is not None and event.involved.name == FAILING
    sections = {(f.pod, f.container): f for f in snap.log_files}
    assert len(sections) == 3
    failing = sections[(FAILING, "argocd-repo-server")]
    assert failing.display == f"argocd/{FAILING}/logs.txt" and failing.first_line == 2
    assert [r.line for r in snap.log_tail(failing, 2)] == [5, 6]
    assert {c.name: c.version for c in snap.components} == {"repo-server": "v1.8.7", "server": "v1.8.7"}


def test_a_scan_of_an_old_dump_finds_the_replica_that_fails() -> None:
    result = run_scan(bundle.load([OLD_DUMP], None), select_analyzers())
    (finding,) = [f for f in result.findings if f.rule == "replica-error-divergence"]
    assert FAILING in finding.title and "1 of 2 replicas" in finding.title
    assert f"argocd/{FAILING}/logs.txt:3" in {e.location for e in finding.evidence}
    assert [(p.location, p.kind) for p in result.problems] == [("input", "note")]  # a dump holds no Application
    assert "a `kubectl cluster-info dump` never holds them" in result.problems[0].message


def test_an_old_dump_written_as_yaml_keeps_item_lines(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    (root / "argocd").mkdir(parents=True)
    (root / "nodes.yaml").write_text("metadata:\n  resourceVersion: \"7\"\nItems:\n- metadata:\n    name: worker-a\n")
    (root / "argocd" / "pods.yaml").write_text(
        "metadata: {}\nItems:\n- metadata:\n    name: a\n    namespace: argocd\n"
        "- metadata:\n    name: b\n    namespace: argocd\n")
    (root / "argocd" / "replication-controllers.yaml").write_text("metadata: {}\nItems: null\n")
    snap = bundle.load([root], None)
    assert snap.problems == []
    assert [(o.kind, o.name, o.location) for o in snap.all()] == [
        ("Node", "worker-a", "nodes.yaml:4"), ("Pod", "a", "argocd/pods.yaml:3"), ("Pod", "b", "argocd/pods.yaml:6")]


def test_a_damaged_list_of_an_old_dump_is_one_problem_and_the_rest_is_read(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    shutil.copytree(OLD_DUMP, root)
    pods_json = root / "argocd" / "pods.json"
    pods_json.write_bytes(pods_json.read_bytes()[:900])  # cut inside the first pod
    (root / "argocd" / "services.json").write_text('{"metadata": {}, "Items": "argocd-repo-server"}\n')
    last_line = pods_json.read_bytes().count(b"\n") + 1
    snap = bundle.load([root], None)
    assert [(p.location, p.message.split(":")[0]) for p in snap.problems] == [
        ("argocd/services.json:1", "a ServiceList whose items is not a list; skipped"),
        (f"argocd/pods.json:{last_line}", "invalid JSON"),
    ]
    assert snap.of_kind("Pod") == [] and len(snap.of_kind("Deployment")) == 2 and len(snap.log_files) == 3


def test_items_outside_a_dump_are_not_guessed(tmp_path: Path) -> None:
    """Only a dump's file names say what its items are: the same list among plain manifests is not read."""
    (tmp_path / "deployments.json").write_bytes((OLD_DUMP / "argocd" / "deployments.json").read_bytes())
    snap = bundle.load([tmp_path], None)
    assert len(snap) == 0
    assert [(p.location, p.message) for p in snap.problems] == [
        ("deployments.json:1", "not a Kubernetes object (no apiVersion and kind); skipped")]


GO_POD = {  # a Pod of kubectl's internal types as encoding/json writes it
    "name": "api-0", "namespace": "shop", "uid": "u-1", "creationTimestamp": "2021-03-09T10:00:00Z",
    "deletionTimestamp": None, "labels": {"App": "api", "tier": "web"},
    "Spec": {"Containers": [{"Name": "api", "Image": "shop/api:1.4", "Command": None}], "RestartPolicy": "Always",
             "NodeSelector": {"Disk": "ssd"}, "NodeName": "worker-b", "Volumes": None},
    "Status": {"Phase": "Running", "HostIP": "10.0.3.22", "Conditions": [
        {"Type": "Ready", "Status": "False", "LastProbeTime": None, "LastTransitionTime": "2021-03-09T10:05:00Z"}],
        "ContainerStatuses": [{
            "Name": "api", "Ready": False, "RestartCount": 7, "ContainerID": "docker://0f1e",
            "State": {"Waiting": {"Reason": "CrashLoopBackOff", "Message": "back-off 5m0s restarting failed container"},
                      "Running": None, "Terminated": None},
            "LastTerminationState": {"Waiting": None, "Running": None, "Terminated": {
                "ExitCode": 1, "Reason": "Error", "FinishedAt": "2021-03-09T10:04:00Z"}},
        }]},
}


def test_items_with_go_field_names_are_read_in_the_api_form(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    (root / "shop").mkdir(parents=True)
    (root / "nodes.json").write_text('{"selfLink": "/api/v1/nodes", "Items": null}')
    (root / "shop" / "pods.json").write_text(json.dumps({"selfLink": "/api/v1/namespaces/shop/pods",
                                                         "Items": [GO_POD]}))
    snap = bundle.load([root], None)
    assert snap.problems == []
    (pod,) = snap.of_kind("Pod")
    assert (pod.api_version, pod.name, pod.namespace, pod.uid) == ("v1", "api-0", "shop", "u-1")
    assert pod.node_name == "worker-b"
    assert pod.labels == {"App": "api", "tier": "web"} and pod.spec["nodeSelector"] == {"Disk": "ssd"}
    assert "deletionTimestamp" not in pod.meta and "command" not in pod.spec["containers"][0]
    status = pod.status["containerStatuses"][0]
    assert status["state"] == {"waiting": {"reason": "CrashLoopBackOff",
                                           "message": "back-off 5m0s restarting failed container"}}
    assert status["lastState"]["terminated"]["exitCode"] == 1 and status["containerID"] == "docker://0f1e"
    assert pod.status["hostIP"] == "10.0.3.22"


def test_an_item_nested_too_deeply_to_convert_is_one_problem(tmp_path: Path) -> None:
    """JSON a little under the decoder's own limit still overflows a recursive walk: that item is skipped, the
    items after it keep their places."""
    root = tmp_path / "dump"
    (root / "shop").mkdir(parents=True)
    (root / "nodes.json").write_text('{"Items": null}')
    deep = "[" * 900 + "]" * 900
    (root / "shop" / "pods.json").write_text('{"Items": [{"name": "a", "Spec": ' + deep + '}, {"name": "b"}]}')
    snap = bundle.load([root], None)
    assert [(p.location, p.message) for p in snap.problems] == [
        ("shop/pods.json:1#items[0]", "nested too deeply to read; skipped")]
    assert [(o.name, o.location) for o in snap.all()] == [("b", "shop/pods.json:1#items[1]")]
