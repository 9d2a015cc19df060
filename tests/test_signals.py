"""A scan killed by SIGTERM, SIGHUP or SIGINT removes its temporary directories before it exits."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import time
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
    try:
        deadline = time.monotonic() + 60  # a safety net, not a timing assertion
        while not any(tmpdir.glob("argo-doctor-*/bundle-*/*")):  # the tarball is being extracted
            assert proc.poll() is None, "the scan ended before it could be interrupted"
            assert time.monotonic() < deadline, "the scan never extracted the tarball"
            time.sleep(0.01)
        assert proc.poll() is None, "the scan ended before it could be interrupted"
        proc.send_signal(signo)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signo, stderr.decode()
    assert list(tmpdir.iterdir()) == []
