"""Bundle inputs: directories, tarballs (safely), cluster-info dumps, loose files."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.errors import InputError
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES, EXAMPLES

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: argocd\nspec: {{}}\n"


def _make_bundle(root: Path) -> Path:
    (root / "objects").mkdir(parents=True)
    (root / "objects" / "pods.yaml").write_text(POD.format(name="a") + "---\n" + POD.format(name="b"))
    logs = root / "logs" / "argocd" / "a"
    logs.mkdir(parents=True)
    (logs / "main.log").write_text('time="2026-11-20T15:00:00Z" level=info msg="hello"\n')
    (logs / "main.previous.log").write_text("panic: boom\n")
    (root / "audit").mkdir()
    (root / "audit" / "audit.log").write_text("")
    (root / "bundle.yaml").write_text("collectedAt: 2026-11-20T15:30:00Z\ncluster: {name: prod, version: v1.29.4}\n")
    return root


def test_directory_bundle(tmp_path: Path) -> None:
    snap = bundle.load([_make_bundle(tmp_path / "b")], tmp_path)
    assert sorted(o.name for o in snap.of_kind("Pod")) == ["a", "b"]
    assert {(f.container, f.previous, f.display) for f in snap.log_files} == {
        ("main", False, "logs/argocd/a/main.log"),
        ("main", True, "logs/argocd/a/main.previous.log"),
    }
    assert snap.meta["cluster"]["version"] == "v1.29.4"
    assert snap.reference_time.isoformat() == "2026-11-20T15:30:00+00:00"
    assert snap.get("Pod", "a", "argocd", "").location == "objects/pods.yaml:1"  # type: ignore[union-attr]


def _tar(path: Path, root: Path, extra: list[tarfile.TarInfo] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        tar.add(root, arcname="support-bundle")
        for info in extra or []:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return path


def test_tarball_with_a_top_folder(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "b.tar.gz", _make_bundle(tmp_path / "b"))
    work = tmp_path / "work"
    work.mkdir()
    snap = bundle.load([archive], work)
    assert len(snap.of_kind("Pod")) == 2 and len(snap.log_files) == 2 and snap.problems == []


@pytest.mark.parametrize(
    "entry",
    [
        tarfile.TarInfo("../escape.yaml"),
        tarfile.TarInfo("/etc/evil.yaml"),
    ],
)
def test_tarball_entries_escaping_the_root_are_skipped(tmp_path: Path, entry: tarfile.TarInfo) -> None:
    entry.size = 3
    archive = _tar(tmp_path / "evil.tar.gz", _make_bundle(tmp_path / "b"), [entry])
    work = tmp_path / "work"
    work.mkdir()
    snap = bundle.load([archive], work)
    assert len(snap.of_kind("Pod")) == 2
    (problem,) = snap.problems
    assert problem.location == f"{archive}!/{entry.name}" and problem.message.startswith("refused: its path")
    assert not (tmp_path / "escape.yaml").exists()


def test_tarball_device_and_outside_links_are_skipped(tmp_path: Path) -> None:
    device = tarfile.TarInfo("support-bundle/dev")
    device.type = tarfile.CHRTYPE
    link = tarfile.TarInfo("support-bundle/objects/link.yaml")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    for bad in (device, link):
        archive = _tar(tmp_path / "evil.tar.gz", _make_bundle(tmp_path / f"b-{bad.name[-3:]}"), [bad])
        work = tmp_path / f"work-{bad.name[-3:]}"
        work.mkdir()
        snap = bundle.load([archive], work)
        assert len(snap.of_kind("Pod")) == 2
        (problem,) = snap.problems
        assert problem.location == f"{archive}!/{bad.name}" and problem.message.startswith("refused: a ")


def test_truncated_tarball_keeps_what_it_holds(tmp_path: Path) -> None:
    root = _make_bundle(tmp_path / "b")
    (root / "objects" / "zz-big.yaml").write_bytes(b"# padding\n" * 200_000)  # something to cut into
    archive = _tar(tmp_path / "b.tar.gz", root)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) * 2 // 3])
    work = tmp_path / "work"
    work.mkdir()
    snap = bundle.load([archive], work)
    assert len(snap.of_kind("Pod")) == 2
    assert any("truncated" in p.message and p.location.endswith("b.tar.gz") for p in snap.problems)


def test_not_a_tarball(tmp_path: Path) -> None:
    bogus = tmp_path / "x.tar.gz"
    bogus.write_bytes(b"this is not gzip")
    with pytest.raises(InputError, match="not a readable tar archive"):
        bundle.load([bogus], tmp_path)


def test_missing_path() -> None:
    with pytest.raises(InputError, match="no such file"):
        bundle.load([Path("/nonexistent/bundle")], None)


def test_loose_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "manifests" / "sub").mkdir(parents=True)
    (tmp_path / "manifests" / "sub" / "p.yml").write_text(POD.format(name="x"))
    (tmp_path / "manifests" / "notes.txt").write_text("ignored")
    single = tmp_path / "one.json"
    single.write_text('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "y", "namespace": "argocd"}}')
    snap = bundle.load([tmp_path / "manifests", single], None)
    assert sorted(o.name for o in snap.of_kind("Pod")) == ["x", "y"]
    assert snap.formats == ["files", "files"]


def test_cluster_info_dump_is_detected(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    shutil.copytree(BUNDLES / "cluster-info-dump", root)
    snap = bundle.load([root], None)
    assert snap.formats == ["cluster-info-dump"]
    assert [o.name for o in snap.of_kind("Node")] == ["ip-10-0-1-17.eu-west-1.compute.internal"]
    pod = snap.get("Pod", "argocd-repo-server-6c9f6d8b9-x2x7q", "argocd", "")
    assert pod is not None and snap.node_of(pod) is not None
    sections = {f.container: f for f in snap.log_files}
    assert set(sections) == {"copyutil", "argocd-repo-server"}
    repo = sections["argocd-repo-server"]
    assert repo.first_line == 5 and repo.display == "argocd/argocd-repo-server-6c9f6d8b9-x2x7q/logs.txt"
    text = repo.path.read_bytes()[repo.start:repo.end].decode()
    assert text.startswith('time="2026-11-20T14:02:51Z"') and "==== END" not in text
    assert snap.component_of_pod("argocd", repo.pod) == "repo-server"


def test_links_leading_outside_the_bundle_are_refused(tmp_path: Path) -> None:
    root = _make_bundle(tmp_path / "b")
    secret = tmp_path / "outside.log"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "logs" / "argocd" / "a" / "evil.log").symlink_to(secret)
    (root / "objects" / "inside.yaml").symlink_to(root / "objects" / "pods.yaml")
    snap = bundle.load([root], tmp_path)
    assert {f.container for f in snap.log_files} == {"main"}
    assert [p.location for p in snap.problems] == ["logs/argocd/a/evil.log"]
    assert "outside the input" in snap.problems[0].message


def test_bundle_yaml_keeps_only_what_it_needs(tmp_path: Path) -> None:
    root = _make_bundle(tmp_path / "b")
    (root / "bundle.yaml").write_text(
        "collectedAt: 2026-11-20T15:30:00+01:00\n"
        "cluster: {name: prod, version: v1.29.4, token: ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, extra: {a: 1}}\n"
    )
    snap = bundle.load([root], tmp_path)
    assert snap.meta["cluster"] == {"name": "prod", "version": "v1.29.4"}
    assert snap.reference_time.isoformat() == "2026-11-20T14:30:00+00:00"
    (root / "bundle.yaml").write_text("collectedAt: yesterday\n")
    snap = bundle.load([root], tmp_path)
    assert "collectedAt" not in snap.meta and "not an RFC 3339 time" in snap.problems[0].message
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    (root / "bundle.yaml").write_text("cluster:\n  " + "\n  ".join(lines) + "\n")
    snap = bundle.load([root], tmp_path)
    assert "alias bomb" in snap.problems[0].message and "cluster" not in snap.meta


def test_tarball_hard_link_to_a_missing_member(tmp_path: Path) -> None:
    link = tarfile.TarInfo("support-bundle/objects/again.yaml")
    link.type = tarfile.LNKTYPE
    link.linkname = "support-bundle/objects/missing.yaml"
    archive = _tar(tmp_path / "b.tar.gz", _make_bundle(tmp_path / "b"), [link])
    work = tmp_path / "work"
    work.mkdir()
    snap = bundle.load([archive], work)
    assert len(snap.of_kind("Pod")) == 2
    (problem,) = snap.problems
    assert problem.location == f"{archive}!/support-bundle/objects/again.yaml"
    assert problem.message.startswith("cannot extract")


def test_a_fifo_or_device_path_argument_is_one_problem(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")  # nobody writes to it: opening it for reading would block
    good = _make_bundle(tmp_path / "b")
    snap = bundle.load([tmp_path / "pipe.yaml", Path("/dev/zero"), tmp_path / "gone.yaml", good], tmp_path)
    assert [(p.location, p.message) for p in snap.problems] == [
        (str(tmp_path / "pipe.yaml"), "not a regular file (a FIFO); skipped"),
        ("/dev/zero", "not a regular file (a character device); skipped"),
        (str(tmp_path / "gone.yaml"), "no such file or directory"),
    ]
    assert len(snap.of_kind("Pod")) == 2
    with pytest.raises(InputError, match=r"pipe\.yaml: not a regular file \(a FIFO\); skipped; /dev/zero: not a"):
        bundle.load([tmp_path / "pipe.yaml", Path("/dev/zero")], tmp_path)


def test_special_files_and_links_in_a_bundle_are_one_problem_each(tmp_path: Path) -> None:
    root = _make_bundle(tmp_path / "b")
    os.mkfifo(root / "objects" / "pipe.yaml")
    (root / "logs" / "argocd" / "a" / "zero.log").symlink_to("/dev/zero")
    (root / "objects" / "dangling.yaml").symlink_to("nowhere.yaml")
    outside = tmp_path / "bundle.yaml"
    outside.write_text("cluster: {name: elsewhere, version: v1.10.0}\n")
    (root / "bundle.yaml").unlink()
    (root / "bundle.yaml").symlink_to(outside)
    snap = bundle.load([root], tmp_path)
    assert sorted((p.location, p.message) for p in snap.problems) == [
        ("bundle.yaml", "a link to a file outside the input; skipped"),
        ("logs/argocd/a/zero.log", "a link to a file outside the input; skipped"),
        ("objects/dangling.yaml", "cannot read: No such file or directory"),
        ("objects/pipe.yaml", "not a regular file (a FIFO); skipped"),
    ]
    assert "cluster" not in snap.meta and len(snap.of_kind("Pod")) == 2 and len(snap.log_files) == 2


def test_a_file_name_that_is_not_utf8_is_shown_replaced(tmp_path: Path) -> None:
    root = _make_bundle(tmp_path / "b")
    os.rename(root / "objects" / "pods.yaml", os.path.join(os.fsencode(root / "objects"), b"p\xffds.yaml"))
    snap = bundle.load([root], tmp_path)
    assert {o.location for o in snap.of_kind("Pod")} == {"objects/p\ufffdds.yaml:1", "objects/p\ufffdds.yaml:8"}


ODD_FILES = {
    "tab.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n\tnamespace: a\n",
    "truncated.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"',
    "no-api-version.yaml": "kind: Pod\nmetadata:\n  name: p\n",
    "list.yaml": "apiVersion: v1\nkind: List\nitems:\n- 42\n- apiVersion: v1\n  kind: ConfigMap\n"
                 "  metadata: {name: in-list, namespace: a}\n",
    "metadata.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata: "argocd-cm"\n',
    "text.yaml": "kubectl get cm -o yaml > cms.yaml\n",
    "separators.yaml": "---\n---\n",
}


def test_each_odd_file_is_one_problem_with_its_line_and_the_scan_goes_on(tmp_path: Path) -> None:
    objects = tmp_path / "b" / "objects"
    objects.mkdir(parents=True)
    for name, text in ODD_FILES.items():
        (objects / name).write_text(text)
    (objects / "good.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n  namespace: a\n")
    result = run_scan(bundle.load([tmp_path / "b"], None), select_analyzers())
    assert sorted(o.name for o in result.snapshot.all()) == ["in-list", "ok"]
    assert sorted((p.location, p.message) for p in result.problems) == [
        ("objects/list.yaml:4", "not a Kubernetes object (no apiVersion and kind); skipped"),
        ("objects/metadata.yaml:1", "a ConfigMap whose metadata is not a mapping; skipped"),
        ("objects/no-api-version.yaml:1", "not a Kubernetes object (no apiVersion and kind); skipped"),
        ("objects/separators.yaml:1", "no Kubernetes objects in this file"),
        ("objects/tab.yaml:5", "invalid YAML: found a tab character that violates indentation"),
        ("objects/text.yaml:1", "not a Kubernetes object (no apiVersion and kind); skipped"),
        ("objects/truncated.json:1", "invalid JSON: Input data was truncated"),
    ]


BASIC = EXAMPLES / "argocd-basic"


def test_a_folder_given_twice_is_read_once(tmp_path: Path) -> None:
    """`scan B B/` (and a link to B): its logs, audit log and objects are counted once, with one note each."""
    (tmp_path / "link").symlink_to(BASIC.resolve())
    alone = bundle.load([BASIC], None)
    snap = bundle.load([BASIC, Path(f"{BASIC}/"), tmp_path / "link"], None)
    assert (len(snap), len(snap.log_files), len(snap.audit_files), len(snap.metrics_files)) == (
        len(alone), len(alone.log_files), len(alone.audit_files), len(alone.metrics_files))
    assert (len(snap.log_files), len(snap.audit_files)) == (7, 1) and snap.duplicates == []
    assert [(p.location, p.message, p.kind) for p in snap.problems] == [
        (str(BASIC), "given twice: read once", "note"),
        (str(tmp_path / "link"), f"the same as {BASIC}, given before: read once", "note")]


def test_a_folder_inside_another_given_is_read_once(tmp_path: Path) -> None:
    """`scan B/logs B`: each log is counted once, and one note says why."""
    snap = bundle.load([BASIC / "logs", BASIC], None)
    assert len(snap.log_files) == 7 and len(snap.audit_files) == 1 and snap.duplicates == []
    assert [(p.location, p.message, p.kind) for p in snap.problems] == [
        (str(BASIC / "logs"), f"inside {BASIC}, also given: the files both hold are read once", "note")]


def test_a_bundle_as_folder_and_as_tarball_is_one_note(tmp_path: Path) -> None:
    """The same bundle as a folder and as a tarball: every object is read twice, told in one note."""
    archive = tmp_path / "basic.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(BASIC, arcname="argocd-basic")
    (tmp_path / "work").mkdir()
    snap = bundle.load([BASIC, archive], tmp_path / "work")
    (note,) = snap.problems
    assert len(snap.duplicates) == len(snap) and all(d.identical for d in snap.duplicates)
    assert (note.location, note.message, note.kind) == (
        str(archive), f"{len(snap)} objects of {BASIC} are also in {archive}, all identical: one copy of each is used",
        "note")


def test_a_key_written_twice_in_bundle_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    """argo-doctor's own settings files are read whole or not at all: the second `collectedAt` would silently win."""
    root = tmp_path / "b"
    (root / "objects").mkdir(parents=True)
    (root / "objects" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n")
    (root / "bundle.yaml").write_text('collectedAt: "2026-11-20T08:30:00Z"\ncluster:\n  name: prod\n'
                                      'collectedAt: "2026-11-21T08:30:00Z"\n')
    snap = bundle.load([root])
    assert [(p.location, p.message) for p in snap.problems] == [
        ("bundle.yaml:4", "invalid YAML: found duplicate key 'collectedAt'")]
    assert "collectedAt" not in snap.meta
