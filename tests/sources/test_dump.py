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
