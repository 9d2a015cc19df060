"""Hostile tarballs: broken hard links, junk and truncation, clashes and over-long names, expansion
bombs, unsafe entries, and `deprecations` on a tarball.

Most archives hold the hostile entries first and then the whole of examples/argocd-basic: the entry is
skipped and reported, and the scan of everything after it gives every finding the bundle gives alone.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import (
    DEPRECATED,
    GOOD,
    PROJECTIONS,
    Argo,
    Baseline,
    assert_contract,
    assert_keeps,
    assert_reader,
    gzip_stream,
    tar_bytes,
    tar_member,
)

CONFIG_MAP = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: default\n"
Member = tuple[tarfile.TarInfo, bytes]


def gz(data: bytes) -> bytes:
    """One complete gzip member."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def hostile_first(members: list[Member]) -> Callable[[], bytes]:
    """A .tgz of `members`, then examples/argocd-basic."""
    return lambda: gz(tar_bytes(members, GOOD))


# --- entries that cannot be extracted, and damage ------------------------------------------------------

def junk_between_members() -> bytes:
    """examples/argocd-basic, 1 KiB of junk where a header should be, one more entry, the end."""
    junk = bytes(range(256)) * 4
    return gz(tar_bytes([], GOOD, end=False) + junk + tar_bytes([tar_member("objects/after.yaml", CONFIG_MAP)]))


def cut_at_member_boundary() -> bytes:
    """examples/argocd-basic, then the gzip stream just stops: no end-of-archive blocks, no gzip trailer."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(tar_bytes([], GOOD, end=False)) + packer.flush(zlib.Z_SYNC_FLUSH)


DAMAGED: dict[str, tuple[Callable[[], bytes], str, str]] = {
    "hard-link-to-missing-member": (hostile_first([
        tar_member("objects/dangling.yaml", type=tarfile.LNKTYPE, linkname="objects/nowhere.yaml"),
    ]), "dangling.yaml", ""),
    "hard-link-to-itself": (hostile_first([
        tar_member("objects/self.yaml", type=tarfile.LNKTYPE, linkname="objects/self.yaml"),
    ]), "self.yaml", ""),
    "hard-link-onto-directory": (hostile_first([
        tar_member("objects/folder", type=tarfile.DIRTYPE, mode=0o755),
        tar_member("objects/onto-folder.yaml", type=tarfile.LNKTYPE, linkname="objects/folder"),
    ]), "onto-folder.yaml", ""),
    "file-then-directory": (hostile_first([
        tar_member("objects/clash.yaml", CONFIG_MAP),
        tar_member("objects/clash.yaml/inner.yaml", CONFIG_MAP),
    ]), "clash.yaml", ""),
    "directory-then-file": (hostile_first([
        tar_member("objects/clash.yaml", type=tarfile.DIRTYPE, mode=0o755),
        tar_member("objects/clash.yaml", CONFIG_MAP),
    ]), "clash.yaml", ""),
    "over-long-name": (hostile_first([
        tar_member("objects/" + "n" * 300 + ".yaml", CONFIG_MAP),
    ]), "hostile.tgz", "too long"),
    "link-to-over-long-name": (hostile_first([  # found by the fuzz test: the stat of the link failed
        tar_member("metrics", type=tarfile.SYMTYPE, linkname="n" * 300),
    ]), "metrics", ""),
    "junk-between-members": (junk_between_members, "hostile.tgz", "junk|damage|corrupt|invalid"),
    "gzip-cut-at-member-boundary": (cut_at_member_boundary, "hostile.tgz", "truncated|cut|incomplete|end"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_archive(argo: Argo, good: Baseline, tmp_path: Path, case: str) -> None:
    """The bad entry or the damage is one input error; exit 0 (not 2 or 3); every finding of the bundle
    around it is reported."""
    make, named, phrase = DAMAGED[case]
    archive = tmp_path / "hostile.tgz"
    archive.write_bytes(make())
    doc = assert_contract(argo("scan", archive, "-o", "json", "--fail-on", "never"), named, phrase=phrase, codes=(0,))
    assert_keeps("scan", doc, good.expected["scan"])


# --- unsafe entries ----------------------------------------------------------------------------------

UNSAFE: dict[str, tuple[Callable[[Path], Member], str]] = {
    "dot-dot": (lambda _: tar_member("../../escaped-dotdot.yaml", CONFIG_MAP), "escaped-dotdot.yaml"),
    "absolute": (lambda tmp: tar_member(f"{tmp}/escaped-absolute.yaml", CONFIG_MAP), "escaped-absolute.yaml"),
    "device": (lambda _: tar_member("objects/zero.yaml", type=tarfile.CHRTYPE, devmajor=1, devminor=5),
               "zero.yaml"),
    "fifo": (lambda _: tar_member("objects/pipe.yaml", type=tarfile.FIFOTYPE), "pipe.yaml"),
    "symlink-outside": (lambda _: tar_member("objects/passwd.yaml", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
                        "passwd.yaml"),
    "relative-symlink-outside": (lambda _: tar_member("objects/up.yaml", type=tarfile.SYMTYPE,
                                                      linkname="../../../../../../etc/passwd"), "up.yaml"),
    "hard-link-outside": (lambda _: tar_member("objects/hard.yaml", type=tarfile.LNKTYPE,
                                               linkname="../../outside.yaml"), "hard.yaml"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_entry_is_skipped(argo: Argo, good: Baseline, tmp_path: Path, case: str) -> None:
    """One unsafe entry is skipped and named in `errors`; the rest of the archive is scanned (exit 0,
    not 2); nothing is written outside the extraction folder."""
    make, named = UNSAFE[case]
    archive = tmp_path / "hostile.tgz"
    archive.write_bytes(hostile_first([make(tmp_path)])())
    doc = assert_contract(argo("scan", archive, "-o", "json", "--fail-on", "never"), named, codes=(0,))
    assert_keeps("scan", doc, good.expected["scan"])
    assert not list(tmp_path.rglob("escaped-*"))


@pytest.mark.parametrize("command", ["scan", "timeline", "health", "deprecations"])
def test_every_reader_skips_bad_entries(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """Every command extracts with the same rule: a dangling hard link and a `..` entry are skipped and
    reported beside a good input, and the entry after them is read (`health` lists it)."""
    archive = tmp_path / "hostile.tgz"
    archive.write_bytes(gz(tar_bytes([
        tar_member("objects/dangling.yaml", type=tarfile.LNKTYPE, linkname="objects/nowhere.yaml"),
        tar_member("../escaped-dotdot.yaml", CONFIG_MAP),
        tar_member("objects/kept.yaml", CONFIG_MAP),
    ])))
    run = assert_reader(argo, command, archive, "dangling.yaml", "", good)
    assert not list(tmp_path.rglob("escaped-*"))
    if command == "health":
        assert ("ConfigMap", "default", "kept") in PROJECTIONS["health"](run.json())


# --- expansion limits --------------------------------------------------------------------------------

def _num(value: int, width: int) -> bytes:
    """A tar number field: octal, or GNU base-256 when it does not fit."""
    if value < 8 ** (width - 1):
        return b"%0*o\0" % (width - 1, value)
    return b"\x80" + value.to_bytes(width - 1, "big")


def gnu_sparse_entry(name: str, real_size: int) -> bytes:
    """An old-GNU sparse entry ('S') of `real_size` bytes whose only data is its last 512 bytes."""
    header = bytearray(512)
    header[0:len(name)] = name.encode()
    header[100:108], header[108:116], header[116:124] = _num(0o644, 8), _num(0, 8), _num(0, 8)
    header[124:136], header[136:148] = _num(512, 12), _num(1_700_000_000, 12)
    header[148:156], header[156:157], header[257:265] = b" " * 8, b"S", b"ustar  \0"
    header[386:398], header[398:410] = _num(real_size - 512, 12), _num(512, 12)
    header[483:495] = _num(real_size, 12)
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header) + b"y" * 512


def sparse_entry() -> bytes:
    """An uncompressed tar: a 64 GiB sparse entry, then examples/argocd-basic."""
    return gnu_sparse_entry("objects/huge.yaml", 64 << 30) + tar_bytes([], GOOD)


def zero_bomb() -> bytes:
    """3 MB of gzip → 48 entries of 64 MiB of zeros (3 GiB). The 64 MiB are compressed once; the stream has
    no end, which only a reader that no limit stopped reaches."""
    entries = [tar_member(f"objects/zeros-{index:02d}.yaml", size=64 << 20)[0] for index in range(48)]
    zeros = b"\0" * (64 << 20)
    return gzip_stream([part for info in entries for part in ((info.tobuf(tarfile.PAX_FORMAT), 1), (zeros, 1))],
                       end=False)


def many_entries() -> bytes:
    """1,048,576 empty entries (512 MiB of tar) in 0.5 MB of gzip; the stream has no end (see zero_bomb)."""
    header = tar_member("objects/empty.yaml")[0].tobuf(tarfile.PAX_FORMAT)
    return gzip_stream([(header * 8192, 128)], end=False)


LIMIT = "limit|ratio|expand|too many|more than|(?<!file )too (large|big)"
"""What a limit's error says (not EFBIG's "File too large", which only the runner's file size limit causes)."""
BOMBS: dict[str, tuple[Callable[[], bytes], str, bool]] = {
    "entry-64g-sparse": (sparse_entry, "hostile.tar", False),
    "zeros-3g": (zero_bomb, "hostile.tgz", True),
    "million-entries": (many_entries, "hostile.tgz", True),
}


@pytest.mark.parametrize("case", sorted(BOMBS))
def test_expansion_limit(argo: Argo, good: Baseline, tmp_path: Path, case: str) -> None:
    """A limit (total bytes, compression ratio, one entry's size, entry count) stops or skips it, as one
    input error, within the memory, CPU and file size limits; exit 0. An entry that is skipped loses
    nothing after it (the sparse entry comes before examples/argocd-basic); a bomb that stops extraction
    leaves a good input given beside it whole."""
    make, name, beside = BOMBS[case]
    archive = tmp_path / name
    archive.write_bytes(make())
    run = argo("scan", *([GOOD] if beside else []), archive, "-o", "json", "--fail-on", "never")
    doc = assert_contract(run, name, phrase=LIMIT, codes=(0,))
    assert_keeps("scan", doc, good.expected["scan"])
    about = [e for e in doc["errors"] if re.search(LIMIT, e["message"], re.I)]
    assert len(about) <= 2, f"a limit is one error, not one per entry: {about[:5]}"


# --- deprecations ------------------------------------------------------------------------------------

def test_deprecations_reads_a_tarball(argo: Argo, tmp_path: Path) -> None:
    """`deprecations` on a bundle tarball lists the same uses as on the unpacked bundle."""
    archive = tmp_path / "deprecated-callers.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(DEPRECATED, DEPRECATED.name)
    runs = [argo("deprecations", DEPRECATED, "-o", "json"), argo("deprecations", archive, "-o", "json")]
    unpacked, packed = (assert_contract(run, codes=(0, 1)) for run in runs)
    assert runs[0].status == runs[1].status

    def uses(doc: dict[str, list[dict[str, str]]]) -> list[tuple[str, ...]]:
        return sorted((u["apiVersion"], u["kind"], u["object"], u["how"], u["status"]) for u in doc["uses"])

    assert uses(unpacked)
    assert uses(packed) == uses(unpacked)
