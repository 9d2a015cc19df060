"""Shared fixtures: paths of the bundles under tests/bundles and examples/."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = ROOT / "tests" / "bundles"
EXAMPLES = ROOT / "examples"


@pytest.fixture
def bundles() -> Path:
    """The folder of test bundles."""
    return BUNDLES
