"""A reader that goes away (`argo-doctor scan B -o json | head`) ends any command quietly, as grep and kubectl end:
killed by SIGPIPE (exit status 141 in a shell), with nothing on stderr and no temporary directory left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from argo_doctor.cli.group import _output_closed
from tests.conftest import BUNDLES

SCRIPT = Path(sys.executable).with_name("argo-doctor")
DUMP = BUNDLES / "cluster-info-dump"
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="no SIGPIPE on this platform")


def _script() -> str:
    """The installed console script, as users run it."""
    found = SCRIPT if SCRIPT.exists() else shutil.which("argo-doctor")
    if not found:
        pytest.skip("the argo-doctor console script is not installed")
    return str(found)


def _run_into_closed_pipe(args: list[str], tmpdir: Path) -> subprocess.CompletedProcess[bytes]:
    """Run the command with its stdout the write end of a pipe whose read end is already closed."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([_script(), *args], stdout=write, stderr=subprocess.PIPE, timeout=120,
                              env={**os.environ, "TMPDIR": str(tmpdir)}, check=False)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [
    ["scan", str(DUMP), "-o", "json"],
    ["scan", str(DUMP)],
    ["timeline", str(DUMP)],
    ["health", str(DUMP), "-o", "json"],
    ["map", str(BUNDLES / "engine-basic"), "-o", "json"],
    ["deprecations", str(DUMP), "-o", "json"],
    ["rules"],
    ["signatures", "--all"],
    ["--help"],
    ["--version"],
    ["fix", "--help"],
], ids=lambda a: " ".join(a[:1] + a[2:]))
def test_a_closed_pipe_ends_the_command_by_sigpipe_without_a_message(args: list[str], tmp_path: Path) -> None:
    proc = _run_into_closed_pipe(args, tmp_path)
    assert proc.returncode == -signal.SIGPIPE, proc.stderr.decode()
    assert proc.stderr == b""
    assert not list(tmp_path.iterdir()), "a temporary directory was left behind"


@pytest.fixture(scope="module")
def many_objects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Objects enough for `health -o json` to write far more than a pipe holds (64 KiB on Linux)."""
    path = tmp_path_factory.mktemp("pipe") / "deployments.yaml"
    doc = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-{i}\n  namespace: shop\n  generation: 2\n"
           "spec:\n  replicas: 3\nstatus:\n  observedGeneration: 1\n  replicas: 3\n  readyReplicas: 1\n")
    path.write_text("---\n".join(doc.format(i=i) for i in range(3000)))
    return path


def test_head_reads_the_start_and_the_command_ends_quietly(many_objects: Path, tmp_path: Path) -> None:
    """The shell pipeline itself: `head -c 100` leaves after 100 bytes, the rest of the output meets a closed
    pipe; with pipefail the pipeline's status is the command's: 141 as for `grep ... | head`, or 0 when the
    cut write was the command's last (Python's buffered writer reports a write the reader left halfway as done)."""
    if shutil.which("head") is None or shutil.which("bash") is None:
        pytest.skip("needs bash and head")
    stderr = tmp_path / "stderr"
    script = 'set -o pipefail; "$0" health "$1" -o json 2>"$2" | head -c 100; echo " status=$?"'
    out = subprocess.run(["bash", "-c", script, _script(), str(many_objects), str(stderr)],
                         capture_output=True, timeout=120, check=False, env={**os.environ, "TMPDIR": str(tmp_path)})
    text = out.stdout.decode()
    assert text.startswith("{") or text.startswith("["), text
    assert text.endswith((" status=141\n", " status=0\n")), text
    assert stderr.read_text() == ""
    assert [p.name for p in tmp_path.iterdir()] == ["stderr"]


def test_a_broken_pipe_elsewhere_is_still_an_error() -> None:
    """A connection to the cluster that breaks is not the reader of stdout going away."""
    assert not _output_closed(BrokenPipeError(32, "Broken pipe"))  # pytest's stdout and stderr are open
    assert not _output_closed(ValueError("boom"))
