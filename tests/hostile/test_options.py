"""Special files given to the options that read a file (a token, a key, a kubeconfig): refused at once, with one
line and exit 2, as inputs are (a FIFO nobody writes to hung `serve` and `github-app check`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile.conftest import Argo, assert_contract

OPTIONS = {
    "serve --token-file": ["serve", "--policy", "{policy}", "--audit-db", "audit.db", "--token-file"],
    "serve --hmac-secret-file": ["serve", "--policy", "{policy}", "--audit-db", "audit.db", "--hmac-secret-file"],
    "github-app check --private-key": ["github-app", "check", "--app-id", "1", "--installation-id", "2",
                                       "--private-key"],
    "scan --live --kubeconfig": ["scan", "--live", "-q", "--kubeconfig"],
    "fix rollout-restart --kubeconfig": ["fix", "rollout-restart", "-n", "apps", "--kubeconfig"],
}


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_file_given_to_a_file_option(argo: Argo, tmp_path: Path, option: str, special: str) -> None:
    path = tmp_path / "pipe" if special == "fifo" else Path(special)
    if special == "fifo":
        os.mkfifo(path)
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow:\n  namespaces: [apps]\n")
    run = argo(*(arg.format(policy=policy) for arg in OPTIONS[option]), path)
    assert_contract(run, codes=(2,))
    kind = "a FIFO" if special == "fifo" else "a character device"
    (line,) = run.stderr.splitlines()
    assert line.startswith("argo-doctor: error: ") and f"{path}: " in line, run.describe()
    assert line.endswith(f"not a regular file ({kind})"), run.describe()
