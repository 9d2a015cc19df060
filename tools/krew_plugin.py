"""The krew plugin's archive, and its version, address and sha256 in deploy/krew/argo-doctor.yaml (`make krew`).

The archive holds the launcher deploy/krew/kubectl-argo_doctor and LICENSE (krew's index requires a licence among
the installed files). It is built byte for byte the same from the same files (fixed times, owners and order), so
that the manifest's sha256 can be checked against a fresh build (tests/test_krew.py): `make krew` writes
dist/ARCHIVE and the manifest; upload dist/ARCHIVE as the release asset the manifest's `uri` names.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "deploy" / "krew" / "argo-doctor.yaml"
LAUNCHER = ROOT / "deploy" / "krew" / "kubectl-argo_doctor"
LICENSE = ROOT / "LICENSE"


def project(root: Path = ROOT) -> tuple[str, str]:
    """The version and home page that pyproject.toml gives."""
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return meta["version"], meta["urls"]["Homepage"]


def archive_name(version: str) -> str:
    return f"kubectl-argo_doctor-v{version}.tar.gz"


def release_uri(homepage: str, version: str) -> str:
    """Where the release publishes the archive: the GitHub release of tag vVERSION."""
    return f"{homepage.rstrip('/')}/releases/download/v{version}/{archive_name(version)}"


def build_archive(launcher: Path = LAUNCHER, license_file: Path = LICENSE) -> bytes:
    """The .tar.gz krew downloads: the launcher (mode 0755) and LICENSE (0644) at its top, nothing else."""
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, name, mode in ((launcher, "kubectl-argo_doctor", 0o755), (license_file, "LICENSE", 0o644)):
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    # GzipFile, not gzip.compress: its header names no file, no time and no operating system.
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(tar_bytes.getvalue())
    return out.getvalue()


def updated_manifest(text: str, version: str, uri: str, sha256: str) -> str:
    """The manifest with its version, uri and sha256 replaced; comments and everything else kept."""
    for key, value in (("version", f'"v{version}"'), ("uri", uri), ("sha256", f'"{sha256}"')):
        text, count = re.subn(rf"^(\s*(?:- )?{key}:) .*$", rf"\g<1> {value}", text, flags=re.M)
        if count == 0:
            raise SystemExit(f"{MANIFEST}: no `{key}:` line to update")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the archive (default: dist/)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the manifest is stale")
    args = parser.parse_args(argv)

    version, homepage = project()
    archive = build_archive()
    sha256 = hashlib.sha256(archive).hexdigest()
    text = MANIFEST.read_text()
    new = updated_manifest(text, version, release_uri(homepage, version), sha256)
    if args.check:
        if new != text:
            print(f"{MANIFEST.relative_to(ROOT)} is stale: run `make krew`", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / archive_name(version)).write_bytes(archive)
    MANIFEST.write_text(new)
    print(f"{args.out / archive_name(version)}  sha256 {sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
