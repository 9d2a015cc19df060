"""`argo-doctor health`: built-in verdicts, Lua from an argocd-cm among the inputs and from --lua-dir."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

from click.testing import CliRunner

from argo_doctor.cli import main
from tests.conftest import BUNDLES, EXAMPLES

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
    assert scripts["kubectl-argo_doctor"] == scripts["argo-doctor"] == "argo_doctor.cli:run"


DUPLICATES = BUNDLES / "duplicate-objects" / "objects"


def test_each_file_is_assessed_as_it_is_duplicates_included() -> None:
    """Two collections of one namespace given together: every copy is assessed, with its location, and no copy is
    reported as an input problem."""
    doc = _health(str(DUPLICATES / "whole-cluster.yaml"), str(DUPLICATES / "argocd-namespace.yaml"))
    seen = {(o["kind"], o["name"], o["location"].rsplit("/", 1)[-1]): o["health"] for o in doc["objects"]}
    assert seen[("Pod", "argocd-application-controller-0", "whole-cluster.yaml:50")] == {
        "status": "Degraded", "message": "back-off 5m0s restarting failed container=argocd-application-controller "
                                         "pod=argocd-application-controller-0_argocd(0a8b61f3-27c9-4e55-9d1a-e4c03b7f8d29)"}
    assert seen[("Pod", "argocd-application-controller-0", "argocd-namespace.yaml:50")] == {
        "status": "Healthy", "message": ""}
    assert {k: v for k, v in seen.items() if k[0] == "Application"} == {  # each copy's own health, as Argo CD shows
        ("Application", "guestbook", "whole-cluster.yaml:99"): {
            "status": "Degraded", "message": 'Deployment "guestbook-ui" exceeded its progress deadline'},
        ("Application", "guestbook", "argocd-namespace.yaml:92"): {"status": "Healthy", "message": ""},
        ("Application", "billing", "whole-cluster.yaml:135"): {"status": "Healthy", "message": ""},
    }
    assert len(doc["objects"]) == 7 and doc["errors"] == []


def test_the_table_shows_where_each_copy_was_read() -> None:
    result = CliRunner().invoke(main, ["health", str(DUPLICATES.parent)])
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["LOCATION", "KIND", "NAMESPACE", "NAME", "HEALTH", "MESSAGE"]
    controller = [line.split()[:5] for line in lines if " argocd-application-controller-0 " in line]
    assert controller == [
        ["objects/argocd-namespace.yaml:50", "Pod", "argocd", "argocd-application-controller-0", "Healthy"],
        ["objects/whole-cluster.yaml:50", "Pod", "argocd", "argocd-application-controller-0", "Degraded"],
    ]


def test_an_old_cluster_info_dump() -> None:
    doc = _health(str(BUNDLES / "cluster-info-dump-old"))
    by_name = {(o["apiVersion"], o["kind"], o["name"]): o["health"] for o in doc["objects"]}
    assert by_name[("apps/v1", "Deployment", "argocd-repo-server")] == {"status": "Healthy", "message": ""}
    assert by_name[("v1", "Pod", "argocd-repo-server-5b8f7c9d4-k2x8p")]["status"] == "Healthy"
    assert doc["errors"] == []


CERTIFICATE = """apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
  namespace: shop
  resourceVersion: "{version}"
spec:
  secretName: web-tls
"""


def test_the_lua_note_counts_every_copy_health_shows(tmp_path: Path) -> None:
    """Six files holding one Certificate: six rows, and the note on the missing script says so, as a note."""
    for version in range(1, 7):
        (tmp_path / f"cert-{version}.yaml").write_text(CERTIFICATE.format(version=version))
    doc = _health(str(tmp_path))
    assert [o["location"] for o in doc["objects"]] == [f"cert-{n}.yaml:1" for n in range(1, 7)]
    (note,) = doc["errors"]
    assert note["kind"] == "note" and "Certificate (cert-manager.io, 1 object(s) in 6 copies)" in note["message"]
