"""A `kubectl cluster-info dump` tree with special files and links: each is one problem, never read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

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
