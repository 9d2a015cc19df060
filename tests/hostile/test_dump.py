"""A `kubectl cluster-info dump` tree with special files and links: `logs.txt` as a FIFO or a link to
/dev/zero, `nodes.json` as a link to a file outside the input. Every reader opens only regular files
inside the input, with the same rule as for bundles.

The dump shares objects and adds nodes to examples/argocd-basic, which it is given beside: what must
survive is what the two give when the bad file is a harmless twin instead (an empty `logs.txt`, a
`nodes.json` without nodes).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import BUNDLES
from tests.hostile.conftest import Argo, Baseline, assert_no_canary, assert_reader, write_outside

LOGS = "argocd/argocd-repo-server-6c9f6d8b9-x2x7q/logs.txt"


EMPTY_NODES = '{"apiVersion": "v1", "kind": "NodeList", "items": []}'


def logs_fifo(dump: Path, outside: Path) -> None:
    """`logs.txt` is a named pipe nobody writes to."""
    (dump / LOGS).unlink()
    os.mkfifo(dump / LOGS)


def logs_dev_zero(dump: Path, outside: Path) -> None:
    """`logs.txt` is a link to /dev/zero."""
    (dump / LOGS).unlink()
    os.symlink("/dev/zero", dump / LOGS)


def nodes_outside(dump: Path, outside: Path) -> None:
    """`nodes.json` is a link to a file outside the input."""
    (dump / "nodes.json").unlink()
    os.symlink(write_outside(outside / "nodes.json"), dump / "nodes.json")


HOSTILE: dict[str, tuple[Callable[[Path, Path], None], str, str, tuple[str, str], tuple[str, ...]]] = {
    "logs-fifo": (logs_fifo, "logs.txt", "regular file|FIFO", (LOGS, ""), ("scan", "timeline", "health")),
    "logs-dev-zero": (logs_dev_zero, "logs.txt", "outside the input|regular file|device", (LOGS, ""),
                      ("scan", "timeline", "health")),
    "nodes-outside": (nodes_outside, "nodes.json", "outside the input", ("nodes.json", EMPTY_NODES),
                      ("scan", "timeline", "health", "deprecations")),
}
CASES = [(case, command) for case, (*_, commands) in sorted(HOSTILE.items()) for command in commands]


@pytest.mark.parametrize(("case", "command"), CASES)
def test_hostile_dump(argo: Argo, good: Baseline, tmp_path: Path, case: str, command: str) -> None:
    """The special file or link is named in `errors` and not read; exit 0/1, no hang; nothing of the good
    input lost; nothing of the outside file in any output."""
    make, named, phrase, (harmless, content), _ = HOSTILE[case]
    dump, twin = tmp_path / "input" / "dump", tmp_path / "twin" / "dump"
    for copy in (dump, twin):
        shutil.copytree(BUNDLES / "cluster-info-dump", copy)
    (twin / harmless).write_text(content)
    (tmp_path / "outside").mkdir()
    make(dump, tmp_path / "outside")
    run = assert_reader(argo, command, dump, named, phrase, good, twin=twin)
    assert_no_canary(run)
