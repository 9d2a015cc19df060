"""`argo-doctor health`: built-in verdicts, Lua from an argocd-cm among the inputs and from --lua-dir."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

from click.testing import CliRunner

from argo_doctor.cli import main
from tests.conftest import EXAMPLES

WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: default
status:
  ready: false
  reason: WaitingForBackend
"""
ARGOCD_CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
data:
  resource.customizations.health.example.com_Widget: |
    hs = {}
    if obj.status ~= nil and obj.status.ready then
      hs.status = "Healthy"
    else
      hs.status = "Progressing"
      hs.message = "widget waiting: " .. obj.status.reason
    end
    return hs
"""


def _health(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(main, ["health", "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_builtin_verdicts_on_the_example() -> None:
    doc = _health(str(EXAMPLES / "argocd-basic" / "objects" / "payments" / "workloads.yaml"))
    by_name = {(o["kind"], o["name"]): o["health"] for o in doc["objects"]}
    assert by_name[("Deployment", "payments-api")] == {
        "status": "Degraded", "message": 'Deployment "payments-api" exceeded its progress deadline',
    }
    assert by_name[("ConfigMap", "payments-api-config-9m6k2h7tbd")] is None
    assert by_name[("Pod", "payments-api-7c9d8f6b5d-cpbcd")]["status"] == "Degraded"


def test_lua_from_argocd_cm_among_the_inputs(tmp_path: Path) -> None:
    (tmp_path / "widget.yaml").write_text(WIDGET)
    (tmp_path / "argocd-cm.yaml").write_text(ARGOCD_CM)
    doc = _health(str(tmp_path))
    widget = next(o for o in doc["objects"] if o["kind"] == "Widget")
    assert widget["health"] == {"status": "Progressing", "message": "widget waiting: WaitingForBackend"}


def test_lua_dir_and_a_runaway_script_is_stopped_and_reported(tmp_path: Path) -> None:
    (tmp_path / "widget.yaml").write_text(WIDGET)
    scripts = tmp_path / "lua" / "example.com" / "Widget"
    scripts.mkdir(parents=True)
    (scripts / "health.lua").write_text("while true do end\n")
    result = CliRunner().invoke(main, ["health", str(tmp_path / "widget.yaml"), "--lua-dir", str(tmp_path / "lua")])
    assert result.exit_code == 0
    assert "Widget" in result.stdout and "Unknown" in result.stdout
    assert "health.lua" in result.stderr and "instructions" in result.stderr


def test_table_output_is_kubectl_like() -> None:
    result = CliRunner().invoke(main, ["health", str(EXAMPLES / "argocd-basic" / "objects" / "batch.yaml")])
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["KIND", "NAMESPACE", "NAME", "HEALTH", "MESSAGE"]
    assert all(line == line.rstrip() for line in lines)
    assert any(line.split()[:4] == ["Job", "batch", "ledger-export-20261120", "Progressing"] for line in lines)


def test_installed_as_a_kubectl_plugin() -> None:
    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts["kubectl-argo_doctor"] == scripts["argo-doctor"] == "argo_doctor.cli:main"
