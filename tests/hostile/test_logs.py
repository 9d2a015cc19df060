"""A logfmt-looking log line with a long token and no `=`: field parsing must stay linear.

The line holds `level=error`, a needle every component's logs are searched for, so the engine parses
it; 100 KB are enough to expose a quadratic field regex (minutes of CPU, past the runner's CPU limit).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import Argo, Baseline, assert_reader, write_tree

LINE = 'time="2026-11-20T14:20:00Z" level=error msg=failed ' + "a" * 100_000


@pytest.mark.parametrize("command", ["scan", "timeline"])
def test_long_logfmt_token_without_equals(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """The line is read like any other: exit 0, no crash, nothing of the good input lost."""
    hostile = write_tree(tmp_path / "hostile", {
        "logs/argocd/argocd-repo-server-6c9f6d8b9-x2x7q/argocd-repo-server.log": f"{LINE}\n{LINE} b=c\n",
    })
    assert_reader(argo, command, hostile, None, "", good)


@pytest.mark.parametrize("command", ["scan", "timeline"])
def test_json_line_nested_too_deeply(argo: Argo, good: Baseline, tmp_path: Path, command: str) -> None:
    """A logrus JSON line nested 1,000 levels deep is one input error, read as plain text; the scan goes on."""
    deep = '{"level":"error","msg":"failed","time":"2026-11-20T14:20:00Z","x":' + '{"a":' * 1000 + "1" + "}" * 1001
    hostile = write_tree(tmp_path / "hostile", {
        "logs/argocd/argocd-repo-server-6c9f6d8b9-x2x7q/argocd-repo-server.log": f"{deep}\n{LINE}\n",
    })
    assert_reader(argo, command, hostile, "argocd-repo-server.log:1", "nested more than 256 levels deep", good)
