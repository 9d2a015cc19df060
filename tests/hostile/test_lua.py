"""A Lua health script from the input's argocd-cm that never returns from one library call.

`string.find` with a backtracking pattern runs in C, where no instruction hook fires: the script must
be stopped all the same, each time, and the scan as a whole stays within a budget instead of spending a
wall timeout per object while abandoned threads keep spinning (the runner's CPU limit counts them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.hostile.conftest import Argo, assert_contract, write_tree

WIDGETS = 6
SCRIPT = 'local s = string.rep("a", 5000)\nreturn {status = "Healthy", message = tostring(s:find(".-.-.-.-.-.-b"))}\n'
KEY = "example.com_Widget"


def bundle(root: Path) -> Path:
    """argocd-cm with the script for example.com/Widget, a CRD, six Widgets and a Degraded Application
    that manages them."""
    names = [f"widget-{i}" for i in range(WIDGETS)]
    docs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "argocd"},
         "data": {f"resource.customizations.health.{KEY}": SCRIPT,
                  f"resource.customizations.useOpenLibs.{KEY}": "true"}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "widgets.example.com"},
         "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
                  "versions": [{"name": "v1", "served": True, "storage": True}]}},
        *({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "shop"},
           "spec": {"size": 1}} for name in names),
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "widgets",
                                                                                    "namespace": "argocd"},
         "spec": {"project": "default", "destination": {"namespace": "shop"},
                  "source": {"repoURL": "https://git.example.com/shop.git", "path": "widgets"}},
         "status": {"health": {"status": "Degraded"}, "sync": {"status": "Synced"},
                    "resources": [{"group": "example.com", "version": "v1", "kind": "Widget", "namespace": "shop",
                                   "name": name, "health": {"status": "Degraded"}} for name in names]}},
    ]
    return write_tree(root, {"objects/widgets.yaml": yaml.safe_dump_all(docs)})


@pytest.mark.parametrize("command", ["scan", "health"])
def test_runaway_lua_library_call(argo: Argo, tmp_path: Path, command: str) -> None:
    """The script is stopped and reported, naming its argocd-cm key; the Application is still reported."""
    root = bundle(tmp_path / "bundle")
    if command == "scan":
        doc = assert_contract(argo("scan", root, "-o", "json", "--fail-on", "never"), KEY, phrase="Lua", codes=(0,))
        assert any(f["rule"] == "app-unhealthy" and "widgets" in f["title"] for f in doc["findings"]), doc["findings"]
    else:
        doc = assert_contract(argo("health", root, "-o", "json"), KEY, phrase="Lua", codes=(0,))
        assert {o["name"] for o in doc["objects"] if o["kind"] == "Widget"} == {f"widget-{i}" for i in range(WIDGETS)}
