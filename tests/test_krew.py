"""deploy/krew/argo-doctor.yaml passes krew's manifest rules, its sha256 is the archive's, and the launcher runs
the installed argo-doctor as `kubectl-argo_doctor`.

The rules are those of krew's `validate-krew-manifest`, which krew's index runs on every plugin
(kubernetes-sigs/krew `internal/index/validation/validate.go` and `cmd/validate-krew-manifest/main.go`): apiVersion
and kind, a safe name equal to the file's name, a one-line shortDescription, a `v`-prefixed semantic version, and
for each platform a uri, a lowercase sha256, a bin, valid `files`, and a selector on `os`/`arch` only that matches a
platform krew ships for, no two platforms selecting the same one; installing it must extract the bin and a licence.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "deploy" / "krew" / "argo-doctor.yaml"
LAUNCHER = ROOT / "deploy" / "krew" / "kubectl-argo_doctor"

# krew's validate-krew-manifest: the platforms krew is released for, and its name and sha256 patterns.
KREW_PLATFORMS = [("windows", "386"), ("windows", "amd64"), ("windows", "arm64"), ("linux", "386"),
                  ("linux", "amd64"), ("linux", "arm"), ("linux", "arm64"), ("linux", "ppc64le"),
                  ("darwin", "386"), ("darwin", "amd64"), ("darwin", "arm64")]
SAFE_NAME = re.compile(r"^[\w-]+$")
SHA256 = re.compile(r"^[a-f0-9]{64}$")
SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
LICENSE_NAMES = {"license", "license.txt", "license.md", "licenses", "licenses.txt", "licenses.md", "copying",
                 "copying.txt"}


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("krew_plugin", ROOT / "tools" / "krew_plugin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


krew_plugin = load_tool()


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return doc


def selector_matches(selector: dict[str, Any], os_name: str, arch: str) -> bool:
    """A Kubernetes label selector on the labels {os, arch}, as krew evaluates it."""
    labels = {"os": os_name, "arch": arch}
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        value, values = labels.get(expr["key"]), expr.get("values") or []
        if expr["operator"] == "In" and value not in values:
            return False
        if expr["operator"] == "NotIn" and value in values:
            return False
        if expr["operator"] not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def krew_problems(name: str, plugin: dict[str, Any]) -> list[str]:
    """What krew's validate-krew-manifest says of this manifest, short of installing it."""
    problems = []
    spec = plugin.get("spec") or {}
    if plugin.get("apiVersion") != "krew.googlecontainertools.github.com/v1alpha2":
        problems.append(f"apiVersion {plugin.get('apiVersion')!r} not supported")
    if plugin.get("kind") != "Plugin":
        problems.append(f"kind {plugin.get('kind')!r}, not Plugin")
    if not SAFE_NAME.match(name):
        problems.append(f"name {name!r} not allowed")
    if (plugin.get("metadata") or {}).get("name") != name:
        problems.append(f"plugin should be named {name!r} like its file")
    short = spec.get("shortDescription") or ""
    if not short or "\n" in short or "\r" in short:
        problems.append("shortDescription missing or not on one line")
    if not spec.get("description"):
        problems.append("description missing")
    if not SEMVER.match(str(spec.get("version", ""))):
        problems.append(f"version {spec.get('version')!r} is not a v-prefixed semantic version")
    platforms = spec.get("platforms") or []
    if not platforms:
        problems.append("no platform")
    for i, platform in enumerate(platforms):
        for key in ("uri", "sha256", "bin"):
            if not platform.get(key):
                problems.append(f"platforms[{i}]: `{key}` has to be set")
        if not SHA256.match(str(platform.get("sha256", ""))):
            problems.append(f"platforms[{i}]: sha256 {platform.get('sha256')!r} not 64 lowercase hex digits")
        files = platform.get("files")
        if files is not None and (not files or any(not op.get("from") or not op.get("to") for op in files)):
            problems.append(f"platforms[{i}]: `files` must be unset, or each with from and to")
        selector = platform.get("selector")
        if not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions")):
            problems.append(f"platforms[{i}]: empty selector")
            continue
        keys = [*(selector.get("matchLabels") or {}), *(e["key"] for e in selector.get("matchExpressions") or [])]
        if set(keys) - {"os", "arch"}:
            problems.append(f"platforms[{i}]: selector keys {keys}: only os and arch")
        if not any(selector_matches(selector, *pair) for pair in KREW_PLATFORMS):
            problems.append(f"platforms[{i}]: selector matches no platform krew supports")
    for pair in KREW_PLATFORMS:
        chosen = [i for i, p in enumerate(platforms) if p.get("selector") and selector_matches(p["selector"], *pair)]
        if len(chosen) > 1:
            problems.append(f"platforms {chosen} overlap on {pair}")
    return problems


def test_the_manifest_passes_krews_rules(manifest: dict[str, Any]) -> None:
    assert MANIFEST.suffix == ".yaml"
    assert krew_problems(MANIFEST.stem, manifest) == []


def test_the_rules_catch_what_krew_refuses(manifest: dict[str, Any]) -> None:
    """The look-alikes: each breach of a rule is named."""
    def broken(change: Any) -> dict[str, Any]:
        doc: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
        change(doc)
        return doc

    platform = manifest["spec"]["platforms"][0]
    assert krew_problems("argo_doctor", manifest) == ["plugin should be named 'argo_doctor' like its file"]
    assert krew_problems("argo-doctor", broken(lambda d: d["spec"].update(version="0.1.0"))) == [
        "version '0.1.0' is not a v-prefixed semantic version"]
    assert krew_problems("argo-doctor", broken(lambda d: d["spec"].update(shortDescription="a\nb"))) == [
        "shortDescription missing or not on one line"]
    assert krew_problems("argo-doctor", broken(
        lambda d: d["spec"]["platforms"][0].update(sha256=platform["sha256"].upper()))) == [
        f"platforms[0]: sha256 {platform['sha256'].upper()!r} not 64 lowercase hex digits"]
    assert krew_problems("argo-doctor", broken(lambda d: d["spec"]["platforms"][0].pop("bin"))) == [
        "platforms[0]: `bin` has to be set"]
    assert krew_problems("argo-doctor", broken(lambda d: d["spec"]["platforms"].append(platform))) == [
        f"platforms [0, 1] overlap on {pair}" for pair in KREW_PLATFORMS if pair[0] != "windows"]
    assert krew_problems("argo-doctor", broken(
        lambda d: d["spec"]["platforms"][0]["selector"]["matchExpressions"][0].update(values=["plan9"]))) == [
        "platforms[0]: selector matches no platform krew supports"]


def test_the_manifest_names_this_release(manifest: dict[str, Any]) -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version, homepage = meta["version"], meta["urls"]["Homepage"]
    spec = manifest["spec"]
    assert spec["version"] == f"v{version}"
    assert spec["homepage"] == homepage
    [platform] = spec["platforms"]
    assert platform["uri"] == f"{homepage}/releases/download/v{version}/kubectl-argo_doctor-v{version}.tar.gz"
    # Windows runs only .exe plugins under krew (kubernetes-sigs/krew#131): the sh launcher is for macOS and Linux.
    assert [pair for pair in KREW_PLATFORMS if selector_matches(platform["selector"], *pair)] == [
        pair for pair in KREW_PLATFORMS if pair[0] in ("darwin", "linux")]


def test_the_sha256_is_the_archives_and_the_build_is_reproducible(manifest: dict[str, Any]) -> None:
    archive = krew_plugin.build_archive()
    assert krew_plugin.build_archive() == archive
    [platform] = manifest["spec"]["platforms"]
    assert hashlib.sha256(archive).hexdigest() == platform["sha256"], (
        "the launcher or LICENSE changed since deploy/krew/argo-doctor.yaml was written: run `make krew` "
        "(a zlib other than the usual one compresses differently: build releases where the manifest was written)")
    check = [sys.executable, str(ROOT / "tools" / "krew_plugin.py"), "--check"]
    assert subprocess.run(check, check=False).returncode == 0


def test_installing_the_archive_as_krew_does_gives_the_bin_and_a_licence(
        manifest: dict[str, Any], tmp_path: Path) -> None:
    [platform] = manifest["spec"]["platforms"]
    with tarfile.open(fileobj=io.BytesIO(krew_plugin.build_archive()), mode="r:gz") as tar:
        members = tar.getmembers()
        # krew extracts regular files and folders only (internal/download/downloader.go).
        assert all(m.isreg() for m in members)
        tar.extractall(tmp_path, filter="data")
    assert platform.get("files") is None, "all files are installed, as krew does when `files` is unset"
    installed = {p.name for p in tmp_path.iterdir()}
    assert installed == {"kubectl-argo_doctor", "LICENSE"}
    assert {name.lower() for name in installed} & LICENSE_NAMES, "krew's index requires a licence among the files"
    assert (tmp_path / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    binary = tmp_path / platform["bin"]
    assert binary.read_bytes() == LAUNCHER.read_bytes()
    assert os.access(binary, os.X_OK)


# --- the launcher ------------------------------------------------------------------------------------------------

def stub(folder: Path, name: str) -> Path:
    """A program that prints its name and each argument on its own line."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\necho "{name}"\nfor a in "$@"; do echo "[$a]"; done\n')
    path.chmod(0o755)
    return path


def launch(path_dirs: list[Path], *args: str, launcher: Path = LAUNCHER) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"])}
    return subprocess.run([str(launcher), *args], capture_output=True, text=True, env=env, timeout=30, check=False)


def test_the_launcher_runs_the_kubectl_script_installed_beside_argo_doctor(tmp_path: Path) -> None:
    """Run as kubectl-argo_doctor, argo-doctor names itself `kubectl argo-doctor` in its help and errors."""
    stub(tmp_path / "venv", "argo-doctor")
    stub(tmp_path / "venv", "kubectl-argo_doctor")
    done = launch([tmp_path / "venv"], "scan", "--live", "a b", "")
    assert (done.returncode, done.stdout, done.stderr) == (0, "kubectl-argo_doctor\n[scan]\n[--live]\n[a b]\n[]\n", "")


def test_the_launcher_runs_argo_doctor_when_no_kubectl_script_is_beside_it(tmp_path: Path) -> None:
    """An install older than the kubectl script, or one that put only argo-doctor on PATH."""
    stub(tmp_path / "venv", "argo-doctor")
    stub(tmp_path / "elsewhere", "kubectl-argo_doctor")
    done = launch([tmp_path / "venv", tmp_path / "elsewhere"], "--version")
    assert done.stdout == "argo-doctor\n[--version]\n"


def test_the_launcher_never_runs_itself(tmp_path: Path) -> None:
    """Were krew's link beside argo-doctor, running the link again would loop."""
    stub(tmp_path / "bin", "argo-doctor")
    (tmp_path / "bin" / "kubectl-argo_doctor").symlink_to(LAUNCHER)
    done = launch([tmp_path / "bin"], "rules", launcher=tmp_path / "bin" / "kubectl-argo_doctor")
    assert (done.returncode, done.stdout) == (0, "argo-doctor\n[rules]\n")


def test_without_argo_doctor_the_launcher_says_how_to_install_it(tmp_path: Path, manifest: dict[str, Any]) -> None:
    homepage = manifest["spec"]["homepage"]
    install = f"pipx install git+{homepage}"
    done = launch([tmp_path], "scan", "--live")
    assert done.returncode == 127, "command not found, as a shell says"
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "kubectl argo-doctor: argo-doctor is not installed. Install it (Python 3.11 or newer) with:", f"  {install}"]
    # The same line in the krew caveats and on the README's first screen.
    assert install in manifest["spec"]["caveats"]
    assert install in "\n".join((ROOT / "README.md").read_text().splitlines()[:24])
