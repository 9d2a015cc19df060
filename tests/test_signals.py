"""A scan killed by SIGTERM, SIGHUP or SIGINT removes its temporary directories before it exits, a live collection
stuck in its requests included."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

OBJECT_FILES, OBJECTS_PER_FILE = 200, 20
LOG_LINES = 100_000


def _add(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(f"bundle/{name}")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def big_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle tarball that takes seconds to scan: thousands of ConfigMaps and a long repo-server log."""
    path = tmp_path_factory.mktemp("signals") / "big-bundle.tar"
    with tarfile.open(path, "w") as tar:
        _add(tar, "bundle.yaml", "collectedAt: 2026-11-20T15:00:00Z\n")
        for f in range(OBJECT_FILES):
            docs = [
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{f}-{i}\n  namespace: ns-{f % 50}\n"
                f"  labels:\n    app.kubernetes.io/name: app-{i}\ndata:\n  key: value-{f}-{i}\n"
                for i in range(OBJECTS_PER_FILE)
            ]
            _add(tar, f"objects/ns-{f % 50}/configmaps-{f}.yaml", "---\n".join(docs))
        line = 'time="2026-11-20T14:00:00Z" level=info msg="Normalized app spec" application=argocd/app-{}\n'
        _add(tar, "logs/argocd/argocd-repo-server-abc-1/repo-server.log",
             "".join(line.format(i) for i in range(LOG_LINES)))
    return path


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_killed_scan_leaves_no_temporary_directory(big_bundle: Path, tmp_path: Path, signo: signal.Signals) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    command = [sys.executable, "-c", "from argo_doctor.cli import main; main()", "scan", str(big_bundle),
               "-o", "json"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = _interrupt(proc, signo, lambda: any(tmpdir.glob("argo-doctor-*/bundle-*/*")),
                        "the scan never extracted the tarball")  # interrupted while it extracts
    assert proc.returncode == 128 + signo, stderr.decode()
    assert list(tmpdir.iterdir()) == []


def _interrupt(proc: subprocess.Popen[bytes], signo: signal.Signals, ready: Callable[[], bool], never: str) -> bytes:
    """Send `signo` once `ready()` holds, while the process still runs; its stderr once it has ended."""
    try:
        deadline = time.monotonic() + 60  # a safety net, not a timing assertion
        while not ready():
            assert proc.poll() is None, "the process ended before it could be interrupted"
            assert time.monotonic() < deadline, never
            time.sleep(0.01)
        assert proc.poll() is None, "the process ended before it could be interrupted"
        proc.send_signal(signo)
        return proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


REPO_FLAPPING = Path(__file__).resolve().parents[1] / "examples" / "incidents" / "repo-flapping"


@pytest.mark.parametrize("command", ["scan", "collect"])
@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_live_collection_stuck_in_requests_ends_on_a_signal_and_leaves_nothing(
    tmp_path: Path, command: str, signo: signal.Signals
) -> None:
    """The API server never answers the log requests: the Secrets are already in the private folder, every thread
    of the collection waits on the API, and the signal still ends the process, its folder removed."""
    from tests.live.fakeapi import FakeApiServer, load_bundle, write_kubeconfig

    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    tmpdir.mkdir()
    out.mkdir()
    objects, logs = load_bundle(REPO_FLAPPING)
    with FakeApiServer(objects, logs) as api:
        api.fault(r"/log\?", "hang", seconds=3600, times=-1)
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        args = ["scan", "--live", "-o", "json"] if command == "scan" else ["collect", "-o", str(out / "b.tar.gz")]
        proc = subprocess.Popen(
            [sys.executable, "-c", "from argo_doctor.cli import main; main()", *args, "--kubeconfig",
             str(kubeconfig), "-q"], env={**os.environ, "TMPDIR": str(tmpdir)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        private = tmpdir if command == "scan" else out

        def waiting() -> bool:
            """Every thread of the collection waits on the API, after the Secrets were written."""
            if len(api.requests_matching(r"/log\?")) < 8:
                return False
            assert list(private.glob("*argo-doctor-*/*/objects/secrets.core/*.json")), "Secrets were read"
            return True

        stderr = _interrupt(proc, signo, waiting, "the collection never asked for logs")
    assert proc.returncode == 128 + signo, stderr.decode()
    assert list(tmpdir.iterdir()) == []
    assert list(out.iterdir()) == []
