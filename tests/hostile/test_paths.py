"""Special files and links given to every command: a link out of a bundle (which `scan` refuses and
`deprecations` followed), and a FIFO or a device given directly as a path argument (which hung)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile.conftest import Argo, Baseline, assert_no_canary, assert_reader, write_outside

COMMANDS = ("scan", "timeline", "health", "deprecations")


@pytest.mark.parametrize("command", COMMANDS)
def test_link_out_of_a_bundle(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """`objects/link.yaml` leads outside the input: named in `errors`, never read."""
    bundle = tmp_path / "input" / "bundle"
    (bundle / "objects").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(write_outside(tmp_path / "outside" / "ingress.yaml"), bundle / "objects" / "link.yaml")
    run = assert_reader(argo, command, bundle, "objects/link.yaml", "outside the input", good)
    assert_no_canary(run)


@pytest.mark.parametrize("command", COMMANDS)
def test_fifo_argument(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """A named pipe nobody writes to, given as a path: refused at once (exit 2, or an input error
    while the good input is reported), never opened for reading."""
    os.mkfifo(tmp_path / "pipe.yaml")
    assert_reader(argo, command, tmp_path / "pipe.yaml", "pipe.yaml", "regular file|FIFO", good, codes=(0, 2))


@pytest.mark.parametrize("command", COMMANDS)
def test_device_argument(argo: Argo, good: Baseline, command: str) -> None:
    """/dev/zero given as a path: refused at once, never read."""
    assert_reader(argo, command, "/dev/zero", "/dev/zero", "regular file|device", good, codes=(0, 2))
