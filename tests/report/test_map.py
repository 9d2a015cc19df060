"""report.map: the installation map as table, JSON (docs/map-output.md), Mermaid and DOT; no Secret or header value in
any of them; graphs that parse (every edge between declared nodes, labels escaped)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from typing import Any

import pytest

from argo_doctor.engine import run_scan, select_analyzers
from argo_doctor.facts.installation import InstalledComponent, Integration, component_permissions, installation
from argo_doctor.model import Evidence
from argo_doctor.report.map import OUTPUTS, map_dot, map_json, map_mermaid, map_table, render
from argo_doctor.sources import bundle
from tests.conftest import BUNDLES
from tests.report.contract import EVIDENCE, FINDING, REF

BUNDLE_NAMES = ("map-updater-v0", "map-updater-v1", "map-updater-v0-api")
CANARIES = ("canary-header-value-5150", "canary-secret-value-8d41f0")
TOP = {"schemaVersion", "components", "findings"}
COMPONENT = {"name", "namespace", "workload", "component", "product", "version", "replicas", "nodes", "serviceAccount",
             "settings", "integrations", "permissions", "permissionNotes"}
INTEGRATION = {"target", "api", "auth", "purpose", "evidence"}
PERMISSION = {"apiGroup", "resource", "verbs", "namespace", "resourceNames", "nonResourceURLs", "via", "location"}
MERMAID_NODE = re.compile(r'^    (\w+)(\["[^"]*"\]|\(\["[^"]*"\]\))$')
MERMAID_EDGE = re.compile(r'^    (\w+) -->\|"[^"]*"\| (\w+)$')
DOT_STRING = r'"(?:[^"\\]|\\.)*"'
DOT_NODE = re.compile(rf'^    ({DOT_STRING}) \[label={DOT_STRING}, shape=(box|ellipse)\];$')
DOT_EDGE = re.compile(rf'^    ({DOT_STRING}) -> ({DOT_STRING}) \[label={DOT_STRING}\];$')


def outputs(name: str) -> dict[str, str]:
    snap = bundle.load([BUNDLES / name], None)
    comps = installation(snap)
    perms = component_permissions(snap, comps)
    found = run_scan(snap, select_analyzers(("rbac-missing", "rbac-overbroad"))).findings
    return {output: render(output, comps, perms, found, snap.scrubber) for output in OUTPUTS}


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, str]]:
    return {name: outputs(name) for name in BUNDLE_NAMES}


@pytest.mark.parametrize("name", BUNDLE_NAMES)
@pytest.mark.parametrize("output", OUTPUTS)
def test_no_secret_or_header_value_reaches_any_output(rendered: dict[str, dict[str, str]], name: str,
                                                     output: str) -> None:
    text = rendered[name][output]
    for canary in CANARIES:
        assert canary not in text
        assert base64.b64encode(canary.encode()).decode()[:16] not in text
    assert "glpat-" not in text and "xoxb-" not in text and "BEGIN EC PRIVATE KEY" not in text


@pytest.mark.parametrize("name", BUNDLE_NAMES)
def test_json_follows_the_contract(rendered: dict[str, dict[str, str]], name: str) -> None:
    doc = json.loads(rendered[name]["json"])
    assert set(doc) == TOP and doc["schemaVersion"] == 1
    for comp in doc["components"]:
        assert set(comp) == COMPONENT, set(comp) ^ COMPONENT
        assert comp["workload"] is None or set(comp["workload"]) == REF
        assert isinstance(comp["replicas"], int | None) and all(isinstance(n, str) for n in comp["nodes"])
        assert all(isinstance(v, str) for v in comp["settings"].values())
        for item in comp["integrations"]:
            assert set(item) == INTEGRATION and all(isinstance(item[k], str) for k in ("target", "api", "auth"))
            assert all(set(e) == EVIDENCE and e["kind"] == "object" for e in item["evidence"])
        for grant in comp["permissions"]:
            assert set(grant) == PERMISSION
            assert grant["namespace"] is None or isinstance(grant["namespace"], str)
            assert grant["via"] and all(isinstance(v, str) for v in grant["via"])
    for finding in doc["findings"]:
        assert set(finding) == FINDING


def test_json_shows_the_updater_path_with_its_verbs_and_where_they_come_from(
        rendered: dict[str, dict[str, str]]) -> None:
    doc = json.loads(rendered["map-updater-v0"]["json"])
    (updater,) = [c for c in doc["components"] if c["component"] == "image-updater"]
    assert updater["workload"] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "argocd",
                                   "name": "argocd-image-updater"}
    (kube,) = [i for i in updater["integrations"] if i["target"] == "kubernetes-api"]
    assert kube["api"] == "Kubernetes API (argoproj.io/v1alpha1 applications: list, update)"
    (apps,) = [g for g in updater["permissions"] if g["resource"] == "applications"]
    assert apps["verbs"] == ["get", "list", "update", "patch"] and apps["namespace"] is None
    assert apps["via"] == ["ClusterRoleBinding/argocd-image-updater", "ClusterRole/argocd-image-updater"]
    assert re.match(r"^objects/argocd\.yaml:\d+ ClusterRole/argocd-image-updater \.rules\[1\]$", apps["location"])
    assert [f["rule"] for f in doc["findings"] if f["rule"] == "rbac-missing"] == ["rbac-missing"]


@pytest.mark.parametrize("name", BUNDLE_NAMES)
def test_mermaid_parses(rendered: dict[str, dict[str, str]], name: str) -> None:
    lines = rendered[name]["mermaid"].split("\n")
    assert lines[0] == "flowchart LR"
    nodes: set[str] = set()
    edges = 0
    for line in lines[1:]:
        node, edge = MERMAID_NODE.match(line), MERMAID_EDGE.match(line)
        assert node or edge, line
        if node:
            assert node.group(1) not in nodes
            nodes.add(node.group(1))
        elif edge:
            assert edge.group(1) in nodes and edge.group(2) in nodes, line
            edges += 1
    assert edges and len(nodes) > 3


@pytest.mark.parametrize("name", BUNDLE_NAMES)
def test_dot_parses(rendered: dict[str, dict[str, str]], name: str) -> None:
    text = rendered[name]["dot"]
    lines = text.split("\n")
    assert lines[0] == "digraph argo {" and lines[-1] == "}"
    nodes: set[str] = set()
    for line in lines[4:-1]:
        node, edge = DOT_NODE.match(line), DOT_EDGE.match(line)
        assert node or edge, line
        if node:
            nodes.add(node.group(1))
        elif edge:
            assert edge.group(1) in nodes and edge.group(2) in nodes, line
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg", "-o", "/dev/null"], input=text, text=True, check=True)


def test_graph_draws_the_paths(rendered: dict[str, dict[str, str]]) -> None:
    mermaid = rendered["map-updater-v0"]["mermaid"]
    assert ('c_argocd_argocd_image_updater -->|"Kubernetes API (argoproj.io/v1alpha1 applications: list, update) / '
            'ServiceAccount argocd/argocd-image-updater"| x_kubernetes_api') in mermaid
    assert 'x_clients -->|"gRPC + HTTPS on :8080' in mermaid
    assert "c_argocd_argocd_server -->|" in mermaid and "| c_argocd_argocd_redis" in mermaid
    assert 'x_webhook_rollout_restarter(["webhook:rollout-restarter"])' in mermaid
    dot = rendered["map-updater-v0-api"]["dot"]
    assert ('"c_argocd_argocd_image_updater" -> "c_argocd_argocd_server" [label="Argo CD API (gRPC) '
            'argocd-server.argocd:443 (TLS, certificate not verified) / Argo CD API token from Secret '
            'argocd-image-updater-secret key argocd.token (key absent)"];') in dot


def test_table_has_aligned_columns_integrations_permissions_and_findings(rendered: dict[str, dict[str, str]]) -> None:
    table = rendered["map-updater-v0"]["table"]
    lines = table.split("\n")
    header = lines[0]
    assert header.split() == ["NAME", "NAMESPACE", "COMPONENT", "VERSION", "REPLICAS", "NODES", "SERVICEACCOUNT"]
    row = next(line for line in lines if line.startswith("argocd-application-controller "))
    assert row.index("argocd ") == header.index("NAMESPACE") and row.index("3 ") == header.index("REPLICAS")
    assert "node-a,node-b,node-c" in row
    assert "    → kubernetes-api: Kubernetes API (argoproj.io/v1alpha1 applications: list, update)" in lines
    assert "        auth: ServiceAccount argocd/argocd-image-updater" in lines
    assert "PERMISSIONS" in lines and "FINDINGS" in lines
    assert any(line.startswith("ServiceAccount argocd/argocd-image-updater (argocd-image-updater)") for line in lines)
    assert any(re.match(r"^    applications\.argoproj\.io +get, list, update, patch +cluster-wide +via "
                        r"ClusterRoleBinding/argocd-image-updater → ClusterRole/argocd-image-updater$", line)
               for line in lines)
    assert any(re.match(r"^    MEDIUM +rbac-missing +Image Updater v0\.15\.2", line) for line in lines)
    assert all(line == line.rstrip() for line in lines)


def _hostile() -> list[InstalledComponent]:
    evil = 'a "quoted" ]label[ with |pipes| <b>html</b> #35; {braces} `tick` back\\slash\nnewline\x1b[31m'
    comp = InstalledComponent(
        name="evil", namespace="ns", component="server", product="argo-cd", workload=None, version='v1"]',
        replicas=None, nodes=(), service_account="sa", settings={"note": evil, "token": "ghp_" + "a1B2" * 9},
        integrations=(Integration("webhook:x\"y", evil, evil, evil, (Evidence("object", "f:1", evil),)),
                      Integration("kubernetes-api", "ghp_" + "a1B2" * 9, "ok", "p", ())))
    return [comp]


def test_labels_are_escaped_and_strings_redacted() -> None:
    comps = _hostile()
    mermaid = map_mermaid(comps, {}, [])
    for line in mermaid.split("\n")[1:]:
        assert MERMAID_NODE.match(line) or MERMAID_EDGE.match(line), line
    assert "\x1b" not in mermaid and "<b>" not in mermaid and "ghp_" not in mermaid
    dot = map_dot(comps, {}, [])
    for line in dot.split("\n")[4:-1]:
        assert DOT_NODE.match(line) or DOT_EDGE.match(line), line
    assert "\x1b" not in dot and "ghp_" not in dot
    table = map_table(comps, {}, [])
    assert "\x1b" not in table and "ghp_" not in table
    doc = map_json(comps, {}, [])
    assert "ghp_" not in json.dumps(doc)
    assert doc["components"][0]["permissions"] == [] and doc["components"][0]["workload"] is None


def test_render_refuses_an_unknown_output() -> None:
    with pytest.raises(ValueError, match="unknown map output"):
        render("yaml", [], {}, [])


def test_empty_map() -> None:
    assert map_table([], {}, []).startswith("no Argo component found")
    assert map_mermaid([], {}, []) == "flowchart LR"
    doc: dict[str, Any] = map_json([], {}, [])
    assert doc == {"schemaVersion": 1, "components": [], "findings": []}
