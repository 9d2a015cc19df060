"""The objects a finding names: apiVersion and namespace as the cluster has them, whatever Argo CD record they
come from (core-group `group: ""` or absent, cluster-scoped objects without a namespace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from argo_doctor.analyzers.common import api_version, resource_ref
from argo_doctor.model import Ref
from argo_doctor.sources import bundle
from tests.conftest import EXAMPLES
from tests.conftest import scan_json as scan

UNWANTED = EXAMPLES / "incidents" / "unwanted-sync"
EXAMPLE_DIRS = sorted(p.parent for p in EXAMPLES.rglob("bundle.yaml"))


@pytest.mark.parametrize(("group", "version", "expected"), [
    (None, "v1", "v1"), ("", "v1", "v1"), ("apps", "v1", "apps/v1"),
    ("admissionregistration.k8s.io", "v1", "admissionregistration.k8s.io/v1"), ("apps", None, ""), (None, None, ""),
])
def test_api_version_of_group_and_version(group: str | None, version: str | None, expected: str) -> None:
    assert api_version(group, version) == expected


def test_resource_ref_of_a_core_group_sync_result() -> None:
    entry = {"kind": "Secret", "name": "aws-load-balancer-tls", "namespace": "kube-system", "version": "v1",
             "status": "Synced", "message": "secret/aws-load-balancer-tls configured"}
    assert resource_ref(entry) == Ref("v1", "Secret", "kube-system", "aws-load-balancer-tls")
    assert resource_ref({**entry, "group": ""}) == resource_ref(entry)


def test_the_regenerated_secret_is_named_as_in_the_cluster() -> None:
    doc = scan(UNWANTED)
    secrets = {(f["rule"], o["apiVersion"], o["namespace"]) for f in doc["findings"] for o in f["objects"]
               if o["kind"] == "Secret" and o["name"] == "aws-load-balancer-tls"}
    assert secrets == {("auto-sync-without-change", "v1", "kube-system"),
                       ("helm-nondeterministic-render", "v1", "kube-system")}
    (helm,) = [f for f in doc["findings"] if f["rule"] == "helm-nondeterministic-render"]
    assert len(helm["objects"]) == len({tuple(o.values()) for o in helm["objects"]})  # once per object
    (auto,) = [f for f in doc["findings"] if f["rule"] == "auto-sync-without-change"]
    excerpts = [e["excerpt"] for e in auto["evidence"]]
    assert any(e.startswith("Secret/kube-system/aws-load-balancer-tls: ") for e in excerpts)
    assert any(e.startswith("MutatingWebhookConfiguration/aws-load-balancer-webhook: ") for e in excerpts)
    assert not any("//" in e.split(":", 1)[0] for e in excerpts)


def _namespaced(path: Path) -> dict[tuple[str, str], set[str]]:
    """(kind, name) → the namespaces of the namespaced objects of that kind and name in the input."""
    found: dict[tuple[str, str], set[str]] = {}
    for obj in bundle.load([path], None).all():
        if obj.namespace:
            found.setdefault((obj.kind, obj.name), set()).add(obj.namespace)
    return found


@pytest.mark.parametrize("path", EXAMPLE_DIRS, ids=lambda p: p.name)
def test_no_finding_object_lacks_its_api_version_group_or_namespace(path: Path) -> None:
    namespaced = _namespaced(path)
    for finding in scan(path)["findings"]:
        for obj in finding["objects"]:
            assert "None" not in obj["apiVersion"] and not obj["apiVersion"].startswith("/"), (finding["rule"], obj)
            if not obj["namespace"]:
                assert (obj["kind"], obj["name"]) not in namespaced, (finding["rule"], obj)
