"""Where `deprecations` shows the API server's metrics: relative to the input, as the objects beside them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from argo_doctor.cli import main
from tests.conftest import EXAMPLES

CALLERS = EXAMPLES / "incidents" / "deprecated-callers"


@pytest.mark.parametrize(("argument", "prefix"), [(".", ""), (str(CALLERS), "deprecated-callers/")])
def test_metrics_and_objects_are_shown_alike(monkeypatch: pytest.MonkeyPatch, argument: str, prefix: str) -> None:
    """`deprecations .` in the bundle showed `/metrics/apiserver.prom:76` beside `objects/...`."""
    monkeypatch.chdir(CALLERS)
    result = CliRunner().invoke(main, ["deprecations", argument, "-o", "json"])
    doc = json.loads(result.stdout)
    wheres = {row["location"].split()[0].rsplit(":", 1)[0] for row in doc["uses"]}
    assert f"{prefix}metrics/apiserver.prom" in wheres and f"{prefix}objects/web/ingress.yaml" in wheres
    assert all(where.startswith(prefix) and not where.startswith("/") for where in wheres)
