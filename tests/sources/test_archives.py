"""Hostile tarballs, each generated here: unsafe entries, broken hard links, junk, truncation, name clashes,
expansion bombs. An unsafe or damaged entry is one problem; every other entry is extracted and scanned."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from argo_doctor.errors import InputError
from argo_doctor.model import Problem
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources import bundle
from tests.conftest import EXAMPLES

GOOD = EXAMPLES / "argocd-basic"
POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: argocd\nspec: {{}}\n"
Member = tuple[tarfile.TarInfo, bytes]


def member(name: str, data: bytes = b"", **fields: Any) -> Member:
    """A tar entry: a regular file holding `data` unless `fields` (type, linkname, size...) say otherwise."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def pods(name: str = "b/objects/pods.yaml", *names: str) -> Member:
    """An object file with a Pod per name (a and b by default)."""
    return member(name, "---\n".join(POD.format(name=n) for n in names or ("a", "b")).encode())


def tar_bytes(members: Iterable[Member], end: bool = True) -> bytes:
    """An uncompressed tar of `members`; without `end`, no end-of-archive blocks."""
    buffer = io.BytesIO()
    tar = tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT)  # noqa: SIM115 - closed below
    for info, data in members:
        tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    unterminated = buffer.getvalue()
    tar.close()
    return buffer.getvalue() if end else unterminated


def header(name: str, size: int) -> bytes:
    """The header alone of a regular file of `size` bytes, for data too large to hold."""
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(tarfile.GNU_FORMAT)


def gz(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def load(tmp_path: Path, data: bytes, name: str = "b.tar.gz") -> tuple[Snapshot, Path]:
    """Load `data` written as the tarball `name`; the snapshot, and where the archive is."""
    archive = tmp_path / name
    archive.write_bytes(data)
    work = tmp_path / "work"
    work.mkdir()
    return bundle.load([archive], work), archive


def entry_problems(snap: Snapshot, archive: Path) -> dict[str, str]:
    """Problems by the entry (or `""`, the archive) they name."""
    return {p.location.removeprefix(f"{archive}!/").removeprefix(str(archive)): p.message for p in snap.problems}


def pod_names(snap: Snapshot) -> list[str]:
    return sorted(o.name for o in snap.of_kind("Pod"))


def test_hard_links_missing_to_themselves_or_onto_a_folder_are_skipped(tmp_path: Path) -> None:
    snap, archive = load(tmp_path, gz(tar_bytes([
        member("b/objects", type=tarfile.DIRTYPE),
        member("b/objects/missing.yaml", type=tarfile.LNKTYPE, linkname="b/objects/nowhere.yaml"),
        member("b/objects/self.yaml", type=tarfile.LNKTYPE, linkname="b/objects/self.yaml"),
        member("b/objects/folder.yaml", type=tarfile.LNKTYPE, linkname="b/objects"),
        pods(),
        member("b/objects/again.yaml", type=tarfile.LNKTYPE, linkname="./b/objects/pods.yaml"),
    ])))
    assert entry_problems(snap, archive) == {
        "b/objects/missing.yaml": "cannot extract: a hard link to 'b/objects/nowhere.yaml', which no entry before "
                                  "it extracted; skipped",
        "b/objects/self.yaml": "cannot extract: a hard link to itself; skipped",
        "b/objects/folder.yaml": "cannot extract: a hard link onto the folder 'b/objects'; skipped",
    }
    root = snap.roots[0]
    assert (root / "objects" / "again.yaml").read_bytes() == (root / "objects" / "pods.yaml").read_bytes()
    assert len(snap.of_kind("Pod")) == 2
    assert snap.duplicates == [], "a hard link to a file already read is not read again"


@pytest.mark.parametrize(("bad", "reason"), [
    (member("../escape.yaml", b"x"), "refused: its path goes up with '..'"),
    (member("b/objects/../../escape.yaml", b"x"), "refused: its path goes up with '..'"),
    (member("/tmp/escape.yaml", b"x"), "refused: its path is absolute"),
    (member("b/dev", type=tarfile.CHRTYPE, devmajor=1, devminor=5), "refused: a device file"),
    (member("b/pipe", type=tarfile.FIFOTYPE), "refused: a FIFO"),
    (member("b/objects/passwd.yaml", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
     "refused: a link to the absolute path '/etc/passwd'"),
    (member("b/objects/up.yaml", type=tarfile.SYMTYPE, linkname="../../../escape.yaml"),
     "refused: a link to '../../../escape.yaml', outside the archive"),
    (member("b/objects/hard.yaml", type=tarfile.LNKTYPE, linkname="../escape.yaml"),
     "refused: its link target goes up with '..'"),
])
def test_an_unsafe_entry_is_skipped_and_the_rest_extracted(tmp_path: Path, bad: Member, reason: str) -> None:
    members = [pods("b/objects/first.yaml", "a"), bad, pods("b/objects/z.yaml", "b")]
    snap, archive = load(tmp_path, gz(tar_bytes(members)))
    assert entry_problems(snap, archive) == {bad[0].name: f"{reason}; skipped"}
    assert pod_names(snap) == ["a", "b"]
    assert not (tmp_path / "escape.yaml").exists() and not (tmp_path.parent / "escape.yaml").exists()


def test_no_entry_is_written_through_a_link(tmp_path: Path) -> None:
    """Links are made after every other entry: an entry below one goes into a real folder, and the link, which
    would replace that folder, is skipped."""
    snap, archive = load(tmp_path, gz(tar_bytes([
        member("b/up", type=tarfile.SYMTYPE, linkname=".."),
        member("b/up/escape.yaml", b"x"),
        pods(),
    ])))
    assert not (tmp_path / "work" / "escape.yaml").exists() and len(snap.of_kind("Pod")) == 2
    assert entry_problems(snap, archive) == {"b/up": "cannot extract: 'b/up' is also a folder in the archive; skipped"}


def test_junk_between_entries_is_reported_and_what_follows_extracted(tmp_path: Path) -> None:
    first = tar_bytes([pods("b/objects/a.yaml", "a")], end=False)
    rest = tar_bytes([pods("b/objects/b.yaml", "b")])
    snap, archive = load(tmp_path, gz(first + b"junk" * 256 + rest))
    assert pod_names(snap) == ["a", "b"]
    (message,) = entry_problems(snap, archive).values()
    assert message.startswith(f"1,024 bytes of junk or damage at offset {len(first):,} (")
    assert message.endswith("); skipped to the next entry")


def test_junk_to_the_end_is_reported(tmp_path: Path) -> None:
    first = tar_bytes([pods("b/objects/a.yaml", "a")], end=False)
    snap, archive = load(tmp_path, first + b"\xff" * 4096, name="b.tar")
    assert pod_names(snap) == ["a"]
    (message,) = entry_problems(snap, archive).values()
    assert message.startswith(f"junk or damage from offset {len(first):,} (")
    assert message.endswith("), and no entry after it")


def test_a_gzip_stream_cut_at_an_entry_boundary_is_reported(tmp_path: Path) -> None:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    data = packer.compress(tar_bytes([pods()], end=False)) + packer.flush(zlib.Z_FULL_FLUSH)  # no end, no trailer
    snap, archive = load(tmp_path, data)
    assert len(snap.of_kind("Pod")) == 2
    (message,) = entry_problems(snap, archive).values()
    assert message.startswith("the gzip stream is truncated (Compressed file ended before the end-of-stream marker")
    if shutil.which("gzip"):  # GNU gzip sees the same damage
        assert subprocess.run(["gzip", "-t", str(archive)], capture_output=True).returncode != 0


def test_a_tar_without_its_end_blocks_is_reported(tmp_path: Path) -> None:
    snap, archive = load(tmp_path, tar_bytes([pods()], end=False), name="b.tar")
    assert len(snap.of_kind("Pod")) == 2
    assert entry_problems(snap, archive) == {
        "": "the archive is truncated: it ends after an entry, without the end-of-archive blocks; what came "
            "before is scanned",
    }


def test_a_tarball_cut_inside_an_entry_keeps_what_was_read(tmp_path: Path) -> None:
    data = tar_bytes([pods("b/objects/a.yaml", "a"), member("b/logs/argocd/a/main.log", b"line\n" * 2000)])
    snap, archive = load(tmp_path, data[:5000], name="b.tar")
    assert pod_names(snap) == ["a"]
    assert entry_problems(snap, archive) == {
        "b/logs/argocd/a/main.log": "the archive is truncated inside this entry; what was read of it and before it "
                                    "is scanned",
    }
    assert 0 < (snap.roots[0] / "logs/argocd/a/main.log").stat().st_size < 10_000


def test_file_folder_clashes_and_over_long_names_skip_one_entry(tmp_path: Path) -> None:
    long_name = "b/objects/" + "x" * 300 + ".yaml"
    snap, archive = load(tmp_path, gz(tar_bytes([
        pods("b/objects/a.yaml", "a"),
        member("b/objects/a.yaml/under.yaml", b"x"),
        member("b/objects/d", type=tarfile.DIRTYPE),
        member("b/objects/d", b"x"),
        member(long_name, b"x"),
        pods("b/objects/z.yaml", "b"),
    ])))
    assert pod_names(snap) == ["a", "b"]
    assert entry_problems(snap, archive) == {
        "b/objects/a.yaml/under.yaml": "cannot extract: 'b/objects/a.yaml' is also a file or a link in the "
                                       "archive; skipped",
        "b/objects/d": "cannot extract: 'b/objects/d' is also a folder in the archive; skipped",
        long_name[:200] + "…": "cannot extract: File name too long; skipped",
    }


def test_a_non_utf8_name_is_shown_replaced(tmp_path: Path) -> None:
    raw = bytearray(tar_bytes([pods()]))
    raw[raw.index(b"pods.yaml") + 1] = 0xFF  # tarfile writes only UTF-8 names: mend the header's checksum
    raw[148:156] = b" " * 8
    raw[148:156] = b"%06o\0 " % sum(raw[:512])
    snap, _ = load(tmp_path, bytes(raw), name="b.tar")
    (pod,) = {o.location.split(":")[0] for o in snap.of_kind("Pod")}
    assert pod == "objects/p\ufffdds.yaml" and snap.problems == []


def sparse_entry(name: str, real_size: int, at: int, data: bytes) -> Member:
    """A GNU sparse file (pax format 1.0): `data` at offset `at` in a file of `real_size` bytes, holes elsewhere."""
    sparse_map = f"1\n{at}\n{len(data)}\n".encode().ljust(512, b"\0")
    return member(f"GNUSparseFile.0/{name}", sparse_map + data, pax_headers={
        "GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
        "GNU.sparse.realsize": str(real_size)})


def pax_tar(members: Iterable[Member]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_sparse_entries_count_their_real_size(tmp_path: Path) -> None:
    line = b'time="2026-11-20T15:00:00Z" level=info msg="hello"\n'
    snap, archive = load(tmp_path, gz(pax_tar([
        sparse_entry("b/logs/argocd/a/huge.log", 64 << 30, 1 << 30, line),
        sparse_entry("b/logs/argocd/a/main.log", 8192, 4096, line),
        pods(),
    ])))
    assert entry_problems(snap, archive) == {
        "b/logs/argocd/a/huge.log": "68,719,476,736 bytes, over the limit of 1,073,741,824 for one entry; skipped",
    }
    (log,) = snap.log_files
    assert log.path.read_bytes() == b"\0" * 4096 + line + b"\0" * (4096 - len(line))
    assert len(snap.of_kind("Pod")) == 2


LIMITS: dict[str, tuple[dict[str, int], Callable[[], list[Member]], str, str]] = {
    "total": ({"MAX_TOTAL_BYTES": 5000}, lambda: [
        pods("b/objects/a.yaml", "a"), member("b/logs/argocd/a/one.log", b"x" * 4000),
        member("b/logs/argocd/a/two.log", b"x" * 4000), pods("b/objects/z.yaml", "b"),
    ], "b/logs/argocd/a/two.log", "extracting it would pass the limit of 5,000 bytes in all: extraction stopped "
                                  "there; what came before is scanned"),
    "entry": ({"MAX_ENTRY_BYTES": 3000}, lambda: [
        pods("b/objects/a.yaml", "a"), member("b/logs/argocd/a/one.log", b"x" * 4000), pods("b/objects/z.yaml", "b"),
    ], "b/logs/argocd/a/one.log", "4,000 bytes, over the limit of 3,000 for one entry; skipped"),
    "count": ({"MAX_ENTRIES": 2}, lambda: [
        pods("b/objects/a.yaml", "a"), member("b/objects/d", type=tarfile.DIRTYPE), pods("b/objects/z.yaml", "b"),
    ], "", "more than 2 entries: extraction stopped there; what came before is scanned"),
    "links": ({"MAX_TOTAL_BYTES": 9000}, lambda: [
        pods("b/objects/a.yaml", "a"), member("b/logs/argocd/a/one.log", b"x" * 4000),
        *(member(f"b/logs/argocd/a/link{i}.log", type=tarfile.SYMTYPE, linkname="one.log") for i in range(3)),
        pods("b/objects/z.yaml", "b"),
    ], "b/logs/argocd/a/link1.log", "extracting it would pass the limit of 9,000 bytes in all: extraction stopped "
                                    "there; what came before is scanned"),
}


@pytest.mark.parametrize("case", sorted(LIMITS))
def test_each_limit_is_one_problem_and_what_came_before_is_scanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    limits, members, location, message = LIMITS[case]
    for name, value in limits.items():
        monkeypatch.setattr(bundle, name, value)
    snap, archive = load(tmp_path, gz(tar_bytes(members())))
    assert entry_problems(snap, archive) == {location: message}
    assert "a" in pod_names(snap)


def test_the_expansion_ratio_stops_a_bomb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "RATIO_GRACE", 1 << 20)
    entry = header("b/logs/argocd/a/zeros.log", 64 << 20)
    snap, archive = load(tmp_path, gz(tar_bytes([pods()], end=False) + entry) + gz(bytes(1 << 20)) * 64)
    (message,) = entry_problems(snap, archive).values()
    assert message.startswith("expands more than 200:1") and len(snap.of_kind("Pod")) == 2
    assert (snap.roots[0] / "logs/argocd/a/zeros.log").stat().st_size < 2 << 20


def test_headers_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "MAX_HEADER_BYTES", 2048)
    snap, archive = load(tmp_path, gz(tar_bytes([pods("b/objects/a.yaml", "a"),
                                                 member("b/" + "n" * 4000, b"x"), pods("b/objects/z.yaml", "b")])))
    assert pod_names(snap) == ["a", "b"]
    (message,) = entry_problems(snap, archive).values()
    assert "(its headers take more than 2,048 bytes); skipped to the next entry" in message


@pytest.mark.parametrize("data", [b"", b"not a tarball at all", gz(b"{}" * 300), gz(b"x" * 5000)[:40]])
def test_what_is_not_a_tarball_cannot_be_read(tmp_path: Path, data: bytes) -> None:
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(data)
    with pytest.raises(InputError, match=r"x\.tar\.gz: not a readable tar archive"):
        bundle.load([archive], tmp_path)
    problems: list[Problem] = []
    inputs = list(bundle.readable_inputs([archive, GOOD], tmp_path, problems))
    assert [i.path for i in inputs] == [GOOD] and [p.location for p in problems] == [str(archive)]


# --- the command line, run as a user runs it: TMPDIR on a fresh folder that must be empty afterwards --------------


def argo_doctor(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    command = [sys.executable, "-c", "from argo_doctor.cli import main; main()", *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(tmpdir)})
    assert list(tmpdir.iterdir()) == [], "temporary files left behind"
    return done


@pytest.fixture(scope="module")
def good_findings(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    done = argo_doctor(tmp_path_factory.mktemp("good"), "scan", GOOD, "-o", "json", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    findings = {(f["rule"], f["title"]) for f in json.loads(done.stdout)["findings"]}
    assert findings
    return findings


def bomb() -> bytes:
    """3 MB of gzip that a naive reader expands to 3 GiB of zeros (one entry of 3 GiB: over the entry limit)."""
    return gz(header("b/logs/argocd/a/zeros.log", 3 << 30)) + gz(bytes(16 << 20)) * 192 + gz(bytes(1024))


LINES = b"".join(b'time="2026-11-20T15:00:%02dZ" level=info msg="line %d"\n' % (i % 60, i) for i in range(50_000))


def cut(data: bytes) -> bytes:
    return data[: len(data) * 2 // 3]


HOSTILE: dict[str, tuple[Callable[[], bytes], str, str]] = {
    "hard-links": (lambda: gz(tar_bytes([pods(), member("b/objects/x.yaml", type=tarfile.LNKTYPE,
                                                        linkname="b/objects/x.yaml")])),
                   "!/b/objects/x.yaml", "hard link to itself"),
    "unsafe": (lambda: gz(tar_bytes([member("../../escape.yaml", b"x"), pods()])), "!/../../escape.yaml", "'..'"),
    "junk": (lambda: gz(tar_bytes([pods()], end=False) + b"junk" * 256 + tar_bytes([pods("b/objects/z.yaml")])),
             "b.tar.gz", "junk or damage"),
    "cut": (lambda: cut(gz(tar_bytes([pods(), member("b/logs/argocd/a/main.log", LINES)]))), "b.tar.gz",
            "gzip stream is truncated"),
    "bomb": (bomb, "!/b/logs/argocd/a/zeros.log", "over the limit of 1,073,741,824 for one entry"),
    "sparse": (lambda: gz(pax_tar([sparse_entry("b/logs/argocd/a/x.log", 64 << 30, 0, b"x"), pods()])),
               "!/b/logs/argocd/a/x.log", "68,719,476,736 bytes"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_scan_reports_the_bad_entry_and_keeps_the_good_input(
    tmp_path: Path, good_findings: set[tuple[str, str]], case: str
) -> None:
    make, named, phrase = HOSTILE[case]
    archive = tmp_path / "b.tar.gz"
    archive.write_bytes(make())
    done = argo_doctor(tmp_path, "scan", archive, GOOD, "-o", "json", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert good_findings <= {(f["rule"], f["title"]) for f in doc["findings"]}
    assert any(named in e["location"] and phrase in e["message"] for e in doc["errors"]), doc["errors"]
    assert not (tmp_path.parent / "escape.yaml").exists()


def test_scan_exits_2_only_when_no_input_can_be_read(tmp_path: Path) -> None:
    bogus = tmp_path / "x.tar.gz"
    bogus.write_bytes(b"junk")
    alone = argo_doctor(tmp_path, "scan", bogus)
    assert alone.returncode == 2 and "x.tar.gz: not a readable tar archive" in alone.stderr
    both = argo_doctor(tmp_path, "scan", bogus, GOOD, "-o", "json", "--fail-on", "never")
    assert both.returncode == 0
    assert [e["location"] for e in json.loads(both.stdout)["errors"]] == [str(bogus)]


def test_deprecations_reads_a_bundle_tarball_like_its_folder(tmp_path: Path) -> None:
    source = EXAMPLES / "incidents" / "deprecated-callers"
    archive = tmp_path / "deprecated-callers.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname="deprecated-callers")
    folder = json.loads(argo_doctor(tmp_path, "deprecations", source, "-o", "json").stdout)
    done = argo_doctor(tmp_path, "deprecations", archive, "-o", "json")
    packed = json.loads(done.stdout)
    assert done.returncode == 0 and packed["targetVersion"] == folder["targetVersion"] == "1.21"
    assert packed["uses"] and [u["location"].replace("deprecated-callers.tar.gz!/", "deprecated-callers/")
                               for u in packed["uses"]] == [u["location"] for u in folder["uses"]]
    assert packed["errors"] == folder["errors"] == []
