"""The import layers of docs/architecture.md hold, and the check behind `make lint` catches each kind of breach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "argo_doctor"


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the project's contracts, over the package found first in `src`."""
    command = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
               "sys.exit(lint_imports_command())", "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"]
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_package_keeps_its_layers(tmp_path: Path) -> None:
    done = _lint(ROOT / "src", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 6 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "reported"),
    [
        # a base type reaching up into a reader
        ("model.py", "from argo_doctor.sources import redact", "argo_doctor.model -> argo_doctor.sources.redact"),
        # a fact reading an analyzer
        ("facts/clock.py", "from argo_doctor.analyzers import Context",
         "argo_doctor.facts.clock -> argo_doctor.analyzers"),
        # two siblings of one layer that must stay independent
        ("health/core.py", "from argo_doctor.facts import webhooks", "argo_doctor.health.core -> argo_doctor.facts"),
        # an analyzer rendering a report
        ("analyzers/common.py", "from argo_doctor.report import json", "argo_doctor.analyzers.common -> "),
        # the Snapshot depending on a loader
        ("snapshot.py", "from argo_doctor.sources import bundle", "argo_doctor.snapshot -> argo_doctor.sources.bundle"),
        # a loader reaching above the Snapshot
        ("sources/bundle.py", "from argo_doctor.engine import run_scan",
         "argo_doctor.sources.bundle -> argo_doctor.engine"),
        # one rule module leaning on another instead of a fact or `analyzers.common`
        ("analyzers/webhook_blast_radius.py", "from argo_doctor.analyzers.webhook_ca_mismatch import fingerprint_of",
         "argo_doctor.analyzers.webhook_blast_radius -> argo_doctor.analyzers.webhook_ca_mismatch"),
        # an analyzer or a fact opening files itself instead of reading the Snapshot
        ("analyzers/sync_failed.py", "from pathlib import Path", "argo_doctor.analyzers.sync_failed -> pathlib"),
        ("facts/webhooks.py", "import subprocess", "argo_doctor.facts.webhooks -> subprocess"),
        # the MCP server reaching what writes to a cluster
        ("mcp/tools.py", "from argo_doctor.remediate import kube", "argo_doctor.mcp.tools -> argo_doctor.remediate"),
    ],
)
def test_an_upward_import_breaks_the_check(tmp_path: Path, module: str, line: str, reported: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "argo_doctor", ignore=shutil.ignore_patterns("__pycache__"))
    target = src / "argo_doctor" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa: E402\n")
    done = _lint(src, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert reported in " ".join(done.stdout.split())  # the report wraps long lines
    assert "0 broken" not in done.stdout
