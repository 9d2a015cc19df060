"""argo-doctor installs as users install command-line tools, from a fresh clone of the last commit.

`pip install CLONE` and `pipx install git+file://CLONE`, each into a clean virtualenv, with the dependencies
resolved from the package index pip is configured for; then the installed program, not the source tree, prints its
version and scans an example bundle. kubectl runs the pipx install through the krew launcher (deploy/krew/) and the
program names itself `kubectl argo-doctor`. pipx is installed into a temporary virtualenv when the machine has
none. Nothing here skips: without git, the index, pipx or kubectl these tests fail and say which.

The clone and the pipx install are made once for the module and shared by its tests.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # seconds per test: run first (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/argocd-basic"
# What a user's shell would not have: the test run's own virtualenv and Python settings.
DROPPED = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PIP_USER", "PIPX_HOME",
           "PIPX_BIN_DIR", "PIPX_MAN_DIR", "PIPX_SHARED_LIBS", "PIPX_DEFAULT_PYTHON")


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: pip's own settings kept, this test run's virtualenv left out of it."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    own_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != own_bin)
    env.update(extra)
    return env


def run(cmd: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run a command to its end; a failure shows the command and its output."""
    args = [str(c) for c in cmd]
    done = subprocess.run(args, cwd=cwd, env=env or user_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n"
                    f"--- stderr\n{done.stderr[-4000:]}", pytrace=False)
    return done


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of the last commit of the repository these tests are in (CI's clean clone, or a work tree)."""
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is not on PATH: the install tests clone the repository")
    if not (ROOT / ".git").exists():
        pytest.fail(f"{ROOT} is not a git checkout: the install tests install a clone of its last commit")
    dest = tmp_path_factory.mktemp("install") / "argo-doctor"
    run([git, "clone", "--quiet", "--no-hardlinks", ROOT, dest], cwd=dest.parent)
    return dest


@pytest.fixture(scope="module")
def version(clone: Path) -> str:
    found: str = tomllib.loads((clone / "pyproject.toml").read_text())["project"]["version"]
    return found


def check_program(bin_dir: Path, clone: Path, version: str, cwd: Path) -> None:
    """The installed program prints its version, and scans an example bundle with the data files it ships."""
    for script in ("argo-doctor", "kubectl-argo_doctor"):
        assert (bin_dir / script).is_file(), f"{script} not installed in {bin_dir}"
    program = bin_dir / "argo-doctor"
    assert run([program, "--version"], cwd=cwd).stdout.startswith(f"argo-doctor {version} ")

    scan = run([program, "scan", clone / EXAMPLE, "-o", "json", "--fail-on", "never"], cwd=cwd)
    doc = json.loads(scan.stdout)
    assert doc["tool"] == {"name": "argo-doctor", "version": version}
    rules = {finding["rule"] for finding in doc["findings"]}
    assert "component-known-bug" in rules, "knowledge/known_bugs.yaml is installed with the package"
    assert "app-unhealthy" in rules

    html = run([program, "scan", clone / EXAMPLE, "-o", "html", "--fail-on", "never"], cwd=cwd).stdout
    for asset in ("report.css", "report.js"):
        text = (clone / "src" / "argo_doctor" / "report" / "assets" / asset).read_text().strip()
        assert text in html, f"report/assets/{asset} is installed with the package and inlined in the report"


def test_pip_installs_a_fresh_clone(clone: Path, version: str, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "."], cwd=clone)
    where = run([venv / "bin" / "python", "-c", "import argo_doctor; print(argo_doctor.__file__)"], cwd=tmp_path)
    installed = Path(where.stdout.strip())
    assert installed.is_relative_to(venv / "lib"), f"imported from {installed}: an installed copy, not the clone"
    check_program(venv / "bin", clone, version, tmp_path)
    # the documentation `argo-doctor mcp` serves as resources travels in the package (src/argo_doctor/docs links it)
    docs = run([venv / "bin" / "python", "-c", "from argo_doctor.mcp.server import docs_folder; "
                "print(sorted(p.name for p in docs_folder().glob('*.md')))"], cwd=tmp_path)
    assert docs.stdout.strip() == str(sorted(p.name for p in (clone / "docs").glob("*.md")))


@pytest.fixture(scope="module")
def pipx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The machine's pipx, else pipx installed from the package index into a virtualenv of its own."""
    found = shutil.which("pipx", path=user_env()["PATH"])
    if found:
        return Path(found)
    venv = tmp_path_factory.mktemp("pipx") / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=venv.parent)
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "pipx"], cwd=venv.parent)
    return venv / "bin" / "pipx"


@pytest.fixture(scope="module")
def pipx_bin(clone: Path, pipx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pipx install git+file://CLONE`, with pipx's home and bin folders in a temporary folder."""
    home = tmp_path_factory.mktemp("pipx-home")
    env = user_env(PIPX_HOME=str(home / "pipx"), PIPX_BIN_DIR=str(home / "bin"), PIPX_MAN_DIR=str(home / "man"))
    run([pipx, "install", f"git+{clone.as_uri()}"], cwd=home, env=env)
    return home / "bin"


def test_pipx_installs_from_a_git_url(pipx_bin: Path, clone: Path, version: str, tmp_path: Path) -> None:
    check_program(pipx_bin, clone, version, tmp_path)


def test_kubectl_runs_the_pipx_install_through_the_krew_plugin(pipx_bin: Path, version: str, tmp_path: Path) -> None:
    """Installed as krew installs it (the archive unpacked in its store, a kubectl-argo_doctor link in its bin)."""
    kubectl = shutil.which("kubectl", path=user_env()["PATH"])
    if kubectl is None:
        pytest.fail("kubectl is not on PATH: this test runs `kubectl argo-doctor` (`make kubectl`)")
    spec = importlib.util.spec_from_file_location("krew_plugin", ROOT / "tools" / "krew_plugin.py")
    assert spec and spec.loader
    krew_plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(krew_plugin)
    store = tmp_path / "krew" / "store" / "argo-doctor" / f"v{version}"
    store.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(krew_plugin.build_archive()), mode="r:gz") as tar:
        tar.extractall(store, filter="data")
    (tmp_path / "krew" / "bin").mkdir()
    (tmp_path / "krew" / "bin" / "kubectl-argo_doctor").symlink_to(store / "kubectl-argo_doctor")

    # krew's bin first, as its setup asks; pipx's bin, which holds a kubectl-argo_doctor too, after it.
    env = user_env(PATH=os.pathsep.join([str(tmp_path / "krew" / "bin"), str(pipx_bin), "/usr/bin", "/bin"]),
                   COLUMNS="100")
    help_text = run([kubectl, "argo-doctor", "--help"], cwd=tmp_path, env=env).stdout
    assert help_text.startswith("Usage: kubectl argo-doctor "), help_text[:200]
    assert run([kubectl, "argo-doctor", "--version"], cwd=tmp_path, env=env).stdout.startswith(
        f"argo-doctor {version} ")


def test_the_readme_opens_with_install_and_quickstart() -> None:
    """The first screen of an 80-column terminal: the install line, the quickstart on a cluster, then contributors'
    commands and where `make demo` put the program."""
    homepage = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Homepage"]
    screen = (ROOT / "README.md").read_text().splitlines()[:32]
    commands = [line.split("#")[0].strip() for line in screen]
    for command in (f"pipx install git+{homepage}", "argo-doctor scan --live", "argo-doctor collect -o bundle.tgz",
                    "argo-doctor scan bundle.tgz -o html > report.html", "make demo", "make test"):
        assert command in commands
    assert commands.index(f"pipx install git+{homepage}") < commands.index("argo-doctor scan --live") < commands.index(
        "make demo")
    makefile = (ROOT / "Makefile").read_text()
    assert "VENV := .venv" in makefile and "BIN := $(VENV)/bin" in makefile
    assert "`.venv/bin/argo-doctor`" in "\n".join(screen)
    assert all(len(line) <= 80 for line in screen), "fits an 80-column terminal"
