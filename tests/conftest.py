"""Shared fixtures: paths of the bundles under tests/bundles and examples/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = ROOT / "tests" / "bundles"
EXAMPLES = ROOT / "examples"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` first, each file's in its order: parallel workers (`make test` runs pytest-xdist)
    start on them rather than end on them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _empty_lua_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees an empty cache of Argo CD's Lua scripts, whatever the developer has fetched."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(autouse=True)
def _no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees a terminal size it did not set: pytest-xdist's workers inherit COLUMNS=80 and LINES=24, which
    the table output would take for the terminal's."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def bundles() -> Path:
    """The folder of test bundles."""
    return BUNDLES


def scan_json(path: Path, *args: str) -> dict[str, Any]:
    """`argo-doctor scan PATH -o json --fail-on never`, checked against the JSON contract."""
    from click.testing import CliRunner

    from argo_doctor.cli import main
    from tests.report.contract import validate

    result = CliRunner().invoke(main, ["scan", str(path), "-o", "json", "--fail-on", "never", *args])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    validate(doc)
    return doc
