"""The fake Kubernetes API server answers as kube-apiserver does for what it serves, and injects faults on demand."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import re
import ssl
import threading
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client, ConnectionParams
from lightkube.config.kubeconfig import SingleConfig

from tests.live.fakeapi import (
    DEFAULT_USER,
    INCONSISTENT_CONTINUE,
    FakeApiServer,
    load_bundle,
    merge_patch,
    service_account_dir,
    synthetic_installation,
    write_kubeconfig,
)

ROOT = Path(__file__).resolve().parents[2]
_SSL = ssl.create_default_context()  # one context for every client: loading the CA store costs ~30 ms
PREFIX = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2}) ")
BYTES_PREFIX = re.compile(PREFIX.pattern.encode())


def cm(name: str, namespace: str = "argocd", **labels: str) -> dict[str, Any]:
    """A ConfigMap."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace,
                                                                 "labels": labels}, "data": {"k": name}}


def pod(name: str, namespace: str = "argocd", containers: tuple[str, ...] = ("main",), **labels: str) -> dict[str, Any]:
    """A Pod with the given containers."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers], "nodeName": "node-a"},
            "status": {"phase": "Running"}}


def client(api: FakeApiServer, timeout: float = 5.0) -> httpx.Client:
    """An httpx client authenticated to the fake."""
    return httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {api.token}"}, timeout=timeout,
                        verify=_SSL)


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    """Five ConfigMaps in argocd, two elsewhere, pods, a node and a namespace."""
    objects = [cm(f"cm-{i}", tier="a" if i % 2 else "b", index=str(i)) for i in range(5)]
    objects += [cm("other", "default", tier="a"), cm("x", "argocd-extra", tier="c")]
    objects += [pod("web-1", app="web"), pod("multi", containers=("app", "sidecar"), app="multi")]
    objects += [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}}]
    with FakeApiServer(objects) as server:
        yield server
        assert server.errors == []


def list_all(c: httpx.Client, path: str, limit: int) -> list[dict[str, Any]]:
    """Follow continue tokens; the pages, in order."""
    pages: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": limit}
    while True:
        r = c.get(path, params=params)
        assert r.status_code == 200, r.text
        pages.append(r.json())
        token = pages[-1]["metadata"].get("continue")
        if not token:
            return pages
        params = {"limit": limit, "continue": token}


# ---- discovery and plain reads


def test_version_and_discovery(api: FakeApiServer) -> None:
    """/version, /api, /apis and APIResourceLists, with the built-in kinds and the Argo CRDs."""
    with client(api) as c:
        assert c.get("/version").json()["gitVersion"] == "v1.29.4"
        assert c.get("/api").json()["versions"] == ["v1"]
        groups = {g["name"]: g for g in c.get("/apis").json()["groups"]}
        assert {"apps", "batch", "argoproj.io", "coordination.k8s.io", "events.k8s.io"} <= set(groups)
        assert groups["autoscaling"]["preferredVersion"]["version"] == "v2"
        core = {r["name"]: r for r in c.get("/api/v1").json()["resources"]}
        assert core["pods"]["namespaced"] and not core["nodes"]["namespaced"]
        assert core["pods/log"]["kind"] == "Pod" and "nodes/proxy" in core
        argo = c.get("/apis/argoproj.io/v1alpha1").json()
        assert argo["groupVersion"] == "argoproj.io/v1alpha1"
        kinds = {r["kind"]: r for r in argo["resources"]}
        assert kinds["Application"]["name"] == "applications" and kinds["Application"]["namespaced"]
        assert kinds["EventBus"]["name"] == "eventbus"
        assert c.get("/apis/nope.io/v1").status_code == 404


def test_crd_and_guessed_plurals() -> None:
    """A CRD names its resource; an unknown kind gets apimachinery's guessed plural."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Cluster",
                    "names": {"plural": "widgetz", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True}, {"name": "v1beta1", "served": True}]}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}}
    policy = {"apiVersion": "x.io/v1", "kind": "Policy", "metadata": {"name": "p", "namespace": "ns"}}
    with FakeApiServer([crd, widget, policy]) as api, client(api) as c:
        resources = {r["name"]: r for r in c.get("/apis/example.com/v1").json()["resources"]}
        assert resources["widgetz"]["namespaced"] is False
        assert c.get("/apis/example.com/v1beta1").status_code == 200
        assert [i["metadata"]["name"] for i in c.get("/apis/example.com/v1/widgetz").json()["items"]] == ["w1"]
        assert c.get("/apis/x.io/v1/namespaces/ns/policies/p").json()["kind"] == "Policy"
        assert "customresourcedefinitions" in c.get("/apis/apiextensions.k8s.io/v1").text


def test_list_items_lack_apiversion_and_kind(api: FakeApiServer) -> None:
    """As the real API: the list has kind/apiVersion, its items do not; a GET has them."""
    with client(api) as c:
        body = c.get("/api/v1/namespaces/argocd/configmaps").json()
        assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
        assert body["metadata"]["resourceVersion"] == api.resource_version
        assert all("apiVersion" not in i and "kind" not in i for i in body["items"])
        one = c.get("/api/v1/namespaces/argocd/configmaps/cm-3").json()
        assert (one["apiVersion"], one["kind"], one["data"]) == ("v1", "ConfigMap", {"k": "cm-3"})
        assert list(one)[:2] == ["kind", "apiVersion"]


def test_objects_sorted_as_etcd_keys(api: FakeApiServer) -> None:
    """All namespaces: sorted by `namespace/name` (so `argocd-extra/x` comes after `argocd/...`)."""
    with client(api) as c:
        items = c.get("/api/v1/configmaps").json()["items"]
        keys = [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items]
        assert keys == ["argocd-extra/x", "argocd/cm-0", "argocd/cm-1", "argocd/cm-2", "argocd/cm-3", "argocd/cm-4",
                        "default/other"]


def test_not_found_answers(api: FakeApiServer) -> None:
    """Unknown plural, missing object, cluster-scoped under a namespace: 404 Status JSON."""
    with client(api) as c:
        for path in ("/api/v1/namespaces/argocd/widgets", "/api/v1/namespaces/argocd/nodes", "/api/v1/pods/web-1",
                     "/apis/apps/v1/namespaces/argocd/deployments/nope/scale"):
            r = c.get(path)
            assert r.status_code == 404, path
            assert r.json()["reason"] == "NotFound" and r.json()["kind"] == "Status"
        r = c.get("/api/v1/namespaces/argocd/configmaps/nope")
        assert r.json()["message"] == 'configmaps "nope" not found'
        assert c.get("/apis/apps/v1/namespaces/argocd/deployments/nope").json()["message"] == \
            'deployments.apps "nope" not found'
        assert c.get("/api/v1/namespaces/argocd").json()["kind"] == "Namespace"
        assert c.get("/api/v1/nodes/node-a").json()["metadata"]["name"] == "node-a"


# ---- pagination


def test_pagination_limit_2_over_5(api: FakeApiServer) -> None:
    """limit=2 over 5 objects: 3 pages, the union is every object exactly once."""
    with client(api) as c:
        pages = list_all(c, "/api/v1/namespaces/argocd/configmaps", 2)
    assert [len(p["items"]) for p in pages] == [2, 2, 1]
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [3, 1, None]
    names = [i["metadata"]["name"] for p in pages for i in p["items"]]
    assert names == [f"cm-{i}" for i in range(5)]
    assert len({p["metadata"]["resourceVersion"] for p in pages}) == 1


def test_pagination_with_selector(api: FakeApiServer) -> None:
    """With a selector the limit counts matches, and remainingItemCount is left out."""
    with client(api) as c:
        r = c.get("/api/v1/configmaps", params={"limit": 2, "labelSelector": "tier=a"})
        assert [i["metadata"]["name"] for i in r.json()["items"]] == ["cm-1", "cm-3"]
        assert "remainingItemCount" not in r.json()["metadata"]
        r = c.get("/api/v1/configmaps", params={"limit": 2, "labelSelector": "tier=a",
                                                "continue": r.json()["metadata"]["continue"]})
        assert [i["metadata"]["name"] for i in r.json()["items"]] == ["other"]


def test_resource_version_0_ignores_limit(api: FakeApiServer) -> None:
    """resourceVersion=0 is served from the watch cache, which (before v1.31) ignores limit."""
    with client(api) as c:
        body = c.get("/api/v1/namespaces/argocd/configmaps", params={"limit": 2, "resourceVersion": "0"}).json()
    assert len(body["items"]) == 5 and "continue" not in body["metadata"]


def test_gone_fault_after_page_1(api: FakeApiServer) -> None:
    """410 Expired on page 2, with the real message and a continue token for an inconsistent remainder."""
    fault = api.fault(r"/configmaps", "gone", after_pages=1)
    with client(api) as c:
        first = c.get("/api/v1/namespaces/argocd/configmaps", params={"limit": 2})
        assert first.status_code == 200
        r = c.get("/api/v1/namespaces/argocd/configmaps",
                  params={"limit": 2, "continue": first.json()["metadata"]["continue"]})
        assert r.status_code == 410
        status = r.json()
        assert (status["reason"], status["code"], status["message"]) == ("Expired", 410, INCONSISTENT_CONTINUE)
        rest = c.get("/api/v1/namespaces/argocd/configmaps",
                     params={"limit": 10, "continue": status["metadata"]["continue"]})
        assert [i["metadata"]["name"] for i in rest.json()["items"]] == ["cm-2", "cm-3", "cm-4"]
        assert fault.fired == 1 and not fault.active
        assert len(list_all(c, "/api/v1/namespaces/argocd/configmaps", 2)) == 3  # restarted list succeeds


def test_stale_continue_token_after_change(api: FakeApiServer) -> None:
    """A change between pages gives a new resourceVersion and expires the older continue tokens."""
    with client(api) as c:
        first = c.get("/api/v1/namespaces/argocd/configmaps", params={"limit": 2}).json()
        api.add_object(cm("cm-9"))
        assert api.resource_version != first["metadata"]["resourceVersion"]
        token = first["metadata"]["continue"]
        r = c.get("/api/v1/namespaces/argocd/configmaps", params={"limit": 2, "continue": token})
        assert r.status_code == 410 and r.json()["reason"] == "Expired"
        api.remove_object("ConfigMap", "cm-0", "argocd")
        names = [i["metadata"]["name"] for p in list_all(c, "/api/v1/namespaces/argocd/configmaps", 2)
                 for i in p["items"]]
        assert names == ["cm-1", "cm-2", "cm-3", "cm-4", "cm-9"]
        assert c.get("/api/v1/namespaces/argocd/configmaps", params={"continue": "garbage!"}).status_code == 400


# ---- faults


def test_status_fault_with_retry_after(api: FakeApiServer) -> None:
    """A 429 with Retry-After, once; then normal answers."""
    api.fault(r"/configmaps\?", "status", status=429, retry_after=2)
    with client(api) as c:
        r = c.get("/api/v1/namespaces/argocd/configmaps", params={"limit": 1})
        assert r.status_code == 429 and r.headers["Retry-After"] == "2"
        assert r.json()["reason"] == "TooManyRequests" and r.json()["details"]["retryAfterSeconds"] == 2
        assert c.get("/api/v1/namespaces/argocd/configmaps", params={"limit": 1}).status_code == 200


def test_forbidden_faults(api: FakeApiServer) -> None:
    """403 forever, with kube-apiserver's RBAC sentences for a list and for pods/log."""
    api.fault(r"^/api/v1/namespaces/argocd/pods$", "status", status=403, times=-1)
    api.fault(r"/pods/[^/]+/log", "status", status=403, times=-1)
    with client(api) as c:
        for _ in range(3):
            r = c.get("/api/v1/namespaces/argocd/pods")
            assert r.status_code == 403
        assert r.json()["message"] == (f'pods is forbidden: User "{DEFAULT_USER}" cannot list resource "pods" in API '
                                       'group "" in the namespace "argocd"')
        assert r.json()["reason"] == "Forbidden"
        r = c.get("/api/v1/namespaces/argocd/pods/web-1/log")
        assert r.json()["message"] == (f'pods "web-1" is forbidden: User "{DEFAULT_USER}" cannot get resource '
                                       '"pods/log" in API group "" in the namespace "argocd"')
        assert c.get("/api/v1/namespaces/argocd/pods/web-1").status_code == 200
        assert c.get("/api/v1/pods").status_code == 200


def test_reset_fault(api: FakeApiServer) -> None:
    """The connection is closed without an answer; the request is still recorded; the next one works."""
    api.fault(r"/version", "reset")
    with client(api) as c:
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            c.get("/version")
        assert c.get("/version").status_code == 200
    assert [r.path for r in api.requests] == ["/version", "/version"]


def test_hang_fault_times_out(api: FakeApiServer) -> None:
    """The fake waits longer than the client's read timeout."""
    api.fault(r"/configmaps", "hang", seconds=5)
    started = time.monotonic()
    with client(api, timeout=0.2) as c, pytest.raises(httpx.TimeoutException):
        c.get("/api/v1/configmaps")
    assert time.monotonic() - started < 2


def test_html_fault(api: FakeApiServer) -> None:
    """A proxy's HTML page with status 200 (and an nginx error page when a status is given)."""
    api.fault(r"/api/v1/pods", "html")
    api.fault(r"/api/v1/nodes", "html", status=502)
    with client(api) as c:
        r = c.get("/api/v1/pods")
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
        with pytest.raises(json.JSONDecodeError):
            r.json()
        r = c.get("/api/v1/nodes")
        assert r.status_code == 502 and b"nginx" in r.content


def test_auth_and_methods(api: FakeApiServer) -> None:
    """No or a wrong bearer token: 401 Status; a write: 405 Status; both recorded."""
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = httpx.get(f"{api.url}/api/v1/pods", headers=headers)
        assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
    with client(api) as c:
        r = c.post("/api/v1/namespaces/argocd/configmaps", json=cm("new"))
        assert r.status_code == 405 and r.json()["reason"] == "MethodNotAllowed"
        r = c.head("/api/v1/namespaces/argocd/configmaps")
        assert r.status_code == 200 and r.content == b"" and int(r.headers["Content-Length"]) > 0
    assert [r.method for r in api.requests] == ["GET", "GET", "POST", "HEAD"]
    assert api.requests[2].body and api.requests[0].headers.get("authorization") is None


def test_requests_recorded_with_query(api: FakeApiServer) -> None:
    """Requests carry the decoded path and query; faults match the decoded `path?query`."""
    api.fault(r"labelSelector=app\.kubernetes\.io/name=web", "status", status=500)
    with client(api) as c:
        r = c.get("/api/v1/pods", params={"labelSelector": "app.kubernetes.io/name=web", "limit": "500"})
        assert r.status_code == 500 and r.json()["reason"] == "InternalError"
    request = api.requests[-1]
    assert request.path == "/api/v1/pods"
    assert request.query == {"labelSelector": "app.kubernetes.io/name=web", "limit": "500"}
    assert request.headers["authorization"] == f"Bearer {api.token}"
    assert api.requests_matching(r"labelSelector=app") == [request]


def test_keep_alive(api: FakeApiServer) -> None:
    """HTTP/1.1: several requests over one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
    try:
        for _ in range(3):
            conn.request("GET", "/version", headers={"Authorization": f"Bearer {api.token}"})
            response = conn.getresponse()
            assert response.status == 200 and json.loads(response.read())["major"] == "1"
            assert response.getheader("Date")
    finally:
        conn.close()


# ---- selectors


@pytest.mark.parametrize(("selector", "expected"), [
    ("tier=a", ["cm-1", "cm-3"]),
    ("tier==b", ["cm-0", "cm-2", "cm-4"]),
    ("tier!=a", ["cm-0", "cm-2", "cm-4"]),
    ("index", ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]),
    ("!index", []),
    ("index in (1, 4,9)", ["cm-1", "cm-4"]),
    ("index notin (1,4)", ["cm-0", "cm-2", "cm-3"]),
    ("tier=b,index notin (0)", ["cm-2", "cm-4"]),
    ("index>2", ["cm-3", "cm-4"]),
    ("", ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]),
])
def test_label_selectors(api: FakeApiServer, selector: str, expected: list[str]) -> None:
    """Equality, inequality, existence, set-based and combined requirements."""
    with client(api) as c:
        r = c.get("/api/v1/namespaces/argocd/configmaps", params={"labelSelector": selector})
    assert [i["metadata"]["name"] for i in r.json()["items"]] == expected


def test_bad_label_selector(api: FakeApiServer) -> None:
    """A selector that does not parse: 400."""
    with client(api) as c:
        r = c.get("/api/v1/configmaps", params={"labelSelector": "tier in a"})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"


def test_field_selectors(api: FakeApiServer) -> None:
    """metadata.name / metadata.namespace (and pod fields); anything else: 400."""
    with client(api) as c:
        r = c.get("/api/v1/configmaps", params={"fieldSelector": "metadata.name=cm-2"})
        assert [i["metadata"]["name"] for i in r.json()["items"]] == ["cm-2"]
        r = c.get("/api/v1/configmaps", params={"fieldSelector": "metadata.namespace!=argocd"})
        assert [i["metadata"]["name"] for i in r.json()["items"]] == ["x", "other"]
        r = c.get("/api/v1/pods", params={"fieldSelector": "spec.nodeName=node-a,status.phase=Running"})
        assert len(r.json()["items"]) == 2
        r = c.get("/api/v1/configmaps", params={"fieldSelector": "data.k=cm-2"})
        assert r.status_code == 400 and r.json()["message"] == "field label not supported: data.k"


# ---- logs


LOG = """2026-11-20T14:05:40.000000001Z first line
2026-11-20T14:05:41.500000000Z second line
2026-11-20T14:05:43.250000000Z third line
"""


@pytest.fixture
def logs_api() -> Iterator[FakeApiServer]:
    """A pod `web-1` with a current and a previous log, and a two-container pod `multi`."""
    logs = {("argocd", "web-1", "main", False): LOG,
            ("argocd", "web-1", "main", True): "2026-11-20T13:00:00.000000000Z crashed: boom\n",
            ("argocd", "multi", "app", False): "2026-11-20T14:00:00.000000000Z app\n"}
    with FakeApiServer([pod("web-1"), pod("multi", containers=("app", "sidecar"))], logs) as server:
        yield server


def get_log(api: FakeApiServer, pod_name: str = "web-1", **params: Any) -> httpx.Response:
    """GET the log of a pod in argocd."""
    with client(api) as c:
        return c.get(f"/api/v1/namespaces/argocd/pods/{pod_name}/log", params=params)


def test_logs_timestamps(logs_api: FakeApiServer) -> None:
    """timestamps=true keeps the prefix, false strips it; text/plain."""
    r = get_log(logs_api, timestamps="true")
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/plain"
    assert r.text == LOG
    assert get_log(logs_api).text == "first line\nsecond line\nthird line\n"
    assert logs_api.now == dt.datetime(2026, 11, 20, 14, 5, 44, 250000, tzinfo=dt.UTC)


def test_logs_since(logs_api: FakeApiServer) -> None:
    """sinceSeconds counts back from the fake's `now`; sinceTime is absolute."""
    assert get_log(logs_api, sinceSeconds=3).text == "second line\nthird line\n"
    assert get_log(logs_api, sinceSeconds=2).text == "third line\n"
    assert get_log(logs_api, sinceTime="2026-11-20T14:05:41Z").text == "second line\nthird line\n"
    r = get_log(logs_api, sinceSeconds=3, sinceTime="2026-11-20T14:05:41Z")
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"


def test_logs_limit_bytes_and_tail(logs_api: FakeApiServer) -> None:
    """limitBytes keeps the first bytes (as the kubelet); tailLines the last lines."""
    assert get_log(logs_api, limitBytes=15).text == "first line\nseco"
    assert get_log(logs_api, limitBytes=15, timestamps="true").text == LOG[:15]
    assert get_log(logs_api, tailLines=2).text == "second line\nthird line\n"
    assert get_log(logs_api, tailLines=0).text == ""
    assert get_log(logs_api, tailLines=-1).status_code == 422


def test_logs_previous_and_containers(logs_api: FakeApiServer) -> None:
    """previous=true; the real 400s for a missing previous instance, a missing or an unknown container name."""
    assert get_log(logs_api, previous="true").text == "crashed: boom\n"
    assert get_log(logs_api, container="main", previous="false").text.startswith("first line")
    r = get_log(logs_api, "multi", container="app", previous="true")
    assert r.status_code == 400
    assert r.json()["message"] == 'previous terminated container "app" in pod "multi" not found'
    r = get_log(logs_api, "multi")
    assert r.status_code == 400
    assert r.json()["message"] == "a container name must be specified for pod multi, choose one of: [app sidecar]"
    assert get_log(logs_api, "multi", container="nope").json()["message"] == "container nope is not valid for pod multi"
    assert get_log(logs_api, "multi", container="sidecar").text == ""
    assert get_log(logs_api, "ghost").status_code == 404


# ---- node proxy, metrics, Date


def test_node_proxy_date_offset() -> None:
    """The kubelet's Date is the real clock plus the node's offset; the API's own Date is the real clock."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}
    with FakeApiServer([node], node_clock_offsets={"node-a": -120.0, "node-b": 30.0}) as api, client(api) as c:
        r = c.get("/api/v1/nodes/node-a/proxy/healthz")
        assert (r.status_code, r.text) == (200, "ok")
        now = time.time()
        assert abs(parsedate_to_datetime(r.headers["Date"]).timestamp() - (now - 120)) <= 2
        r = c.get("/api/v1/nodes/node-b/proxy/healthz")
        assert abs(parsedate_to_datetime(r.headers["Date"]).timestamp() - (now + 30)) <= 2
        assert abs(parsedate_to_datetime(c.get("/version").headers["Date"]).timestamp() - now) <= 2
        assert c.get("/api/v1/nodes/node-z/proxy/healthz").status_code == 404


def test_metrics() -> None:
    """GET /metrics: the given Prometheus text."""
    text = 'apiserver_requested_deprecated_apis{group="extensions",resource="ingresses",version="v1beta1"} 1\n'
    with FakeApiServer([], metrics=text) as api, client(api) as c:
        r = c.get("/metrics")
    assert r.text == text and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")


# ---- bundles


def _bundles() -> list[Path]:
    found = [p.parent for p in (ROOT / "examples").rglob("bundle.yaml")]
    found += [p for p in (ROOT / "tests" / "bundles").iterdir() if p.is_dir()]
    return sorted({p for p in found if (p / "objects").is_dir()})


@pytest.mark.parametrize("bundle", _bundles(), ids=lambda p: p.name)
def test_load_bundle(bundle: Path) -> None:
    """Every bundle gives objects and logs; served with timestamps=false, logs are the original lines."""
    objects, logs = load_bundle(bundle)
    assert objects and all(o["metadata"]["name"] and o["kind"] and o["apiVersion"] for o in objects)
    assert logs or not (bundle / "logs").is_dir()
    for text in logs.values():
        assert all(PREFIX.match(line) for line in text.split("\n")[:-1])
    with FakeApiServer(objects, logs) as api, client(api) as c:
        for (namespace, pod_name, container, previous), _text in logs.items():
            file = bundle / "logs" / namespace / pod_name / f"{container}{'.previous' if previous else ''}.log"
            original = [BYTES_PREFIX.sub(b"", line, count=1) for line in file.read_bytes().split(b"\n")]
            expected = b"".join(line + b"\n" for line in (original[:-1] if original[-1] == b"" else original))
            r = c.get(f"/api/v1/namespaces/{namespace}/pods/{pod_name}/log",
                      params={"container": container, "previous": str(previous).lower()})
            assert r.status_code == 200, r.text
            assert r.content == expected
        assert c.get("/api/v1/pods").status_code == 200
        assert api.errors == []


def test_load_bad_input() -> None:
    """Bad files lose only themselves: the alias bomb is dropped, ISO-8859-1 and the good documents stay."""
    objects, logs = load_bundle(ROOT / "tests" / "bundles" / "bad-input")
    names = {o["metadata"]["name"] for o in objects}
    assert {"team-a-config", "team-c-config", "office-locations"} <= names
    assert "lol-bomb" not in names
    latin = next(o for o in objects if o["metadata"]["name"] == "office-locations")
    assert "Zürich" in json.dumps(latin, ensure_ascii=False)
    (text,) = logs.values()
    assert "2026-11-20T14:02:57.000000000Z time=\"2026-11-20T16:02:57+02:00\"" in text


# ---- kubeconfig and service account


def single(config: KubeConfig, name: str | None = None) -> SingleConfig:
    """One context of a kubeconfig (the current one by default)."""
    found = config.get(context_name=name)
    assert found is not None and found.user is not None
    return found


def test_kubeconfig_for_lightkube(tmp_path: Path) -> None:
    """The kubeconfig loads in lightkube, and a lightkube-built client reaches HTTP and HTTPS fakes."""
    with FakeApiServer([]) as plain, FakeApiServer([], tls=True) as secure:
        contexts: dict[str, FakeApiServer | str] = {"plain": plain, "secure": secure, "gone": "https://10.255.0.1:6443"}
        path = write_kubeconfig(tmp_path / "config", contexts, current="secure", namespace="argocd")
        config = KubeConfig.from_file(path)
        assert config.current_context == "secure"
        for name, server in (("plain", plain), ("secure", secure)):
            one = single(config, name)
            assert one.cluster.server == server.url and one.namespace == "argocd"
            assert one.user is not None and one.user.token == server.token and not one.cluster.insecure
            with Client(one, ConnectionParams()) as c:
                assert c.get("/version").json()["gitVersion"] == "v1.29.4"
        assert single(config, "secure").cluster.certificate_auth == str(secure.ca_file)
        assert single(config, "plain").cluster.certificate_auth is None
        assert single(config, "gone").cluster.server == "https://10.255.0.1:6443"


def test_service_account_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`KubeConfig.from_service_account(dir)` works against the TLS fake (IP SAN 127.0.0.1)."""
    with FakeApiServer([cm("a")], tls=True) as api:
        directory, env = service_account_dir(tmp_path, api)
        assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "namespace", "token"]
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        config = single(KubeConfig.from_service_account(directory))
        assert config.namespace == "argocd" and config.cluster.server == api.url
        with Client(config, ConnectionParams()) as c:
            assert c.get("/version").status_code == 200
            items = c.get("/api/v1/namespaces/argocd/configmaps").json()["items"]
            assert [i["metadata"]["name"] for i in items] == ["a"]
        with pytest.raises(httpx.ConnectError):  # the CA is not in the system store
            httpx.get(f"{api.url}/version")
    with FakeApiServer([]) as plain, pytest.raises(ValueError):
        service_account_dir(tmp_path, plain)


# ---- synthetic installation


def test_synthetic_installation() -> None:
    """Argo CD components, Applications with a Deployment and a Service each, pods spread with owners."""
    objects = list(synthetic_installation(applications=12, pods=60, namespaces=5))
    assert objects == list(synthetic_installation(applications=12, pods=60, namespaces=5))  # deterministic
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    assert len(by_kind["Application"]) == 12
    assert all([r["kind"] for r in a["status"]["resources"]] == ["Deployment", "Service"]
               for a in by_kind["Application"])
    argocd_pods = [p for p in by_kind["Pod"] if p["metadata"]["namespace"] == "argocd"]
    workload_pods = [p for p in by_kind["Pod"] if p["metadata"]["namespace"] != "argocd"]
    assert len(workload_pods) == 60 and len({p["metadata"]["namespace"] for p in workload_pods}) == 5
    assert "argocd-application-controller-0" in {p["metadata"]["name"] for p in argocd_pods}
    assert all(p["metadata"]["ownerReferences"] and p["metadata"]["managedFields"] for p in by_kind["Pod"])
    sizes = [len(json.dumps(p, separators=(",", ":"))) for p in by_kind["Pod"]]
    assert min(sizes) >= 2048 and max(sizes) <= 6144
    leases = by_kind["Lease"]
    assert leases and all(lease["metadata"]["managedFields"][0]["manager"] == "kubelet" for lease in leases)
    assert {lease["metadata"]["name"] for lease in leases} == {n["metadata"]["name"] for n in by_kind["Node"]}
    assert {o["metadata"]["name"] for o in by_kind["ConfigMap"]} >= {"argocd-cm"}
    assert "argocd-secret" in {o["metadata"]["name"] for o in by_kind["Secret"]}
    with FakeApiServer(objects) as api, client(api) as c:
        r = c.get("/api/v1/namespaces/argocd/pods", params={"labelSelector": "app.kubernetes.io/part-of=argocd"})
        names = {i["metadata"]["name"].rsplit("-", 2)[0] for i in r.json()["items"]}
        assert {"argocd-server", "argocd-repo-server", "argocd-redis", "argocd-dex-server"} <= names
        apps = list_all(c, "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications", 5)
        assert sum(len(p["items"]) for p in apps) == 12


# ---- writes (writable=True)


ROLLOUTS = "/apis/argoproj.io/v1alpha1/namespaces/shop/rollouts"
EVENTS = "/api/v1/namespaces/shop/events"
RESTART = {"metadata": {"resourceVersion": "123"}, "spec": {"restartAt": "2026-11-23T10:00:00Z"}}
MERGE = {"Content-Type": "application/merge-patch+json"}


def rollout(name: str, rv: str = "123", **spec: Any) -> dict[str, Any]:
    """A Rollout of namespace shop with a resourceVersion and a generation."""
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": name, "namespace": "shop", "resourceVersion": rv, "generation": 4,
                         "uid": f"uid-{name}", "creationTimestamp": "2026-11-01T00:00:00Z", "labels": {"app": name}},
            "spec": {"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {}}]}}, **spec},
            "status": {"phase": "Degraded", "currentPodHash": "6d4b9"}}


@pytest.fixture
def wapi() -> Iterator[FakeApiServer]:
    """A writable fake: an Application in argocd, Rollouts web and api in shop with a ReplicaSet, a Pod, an
    AnalysisRun and a Deployment."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
         "metadata": {"name": "shop", "namespace": "argocd"}, "status": {"health": {"status": "Degraded"}}},
        rollout("web"), rollout("api", rv="77"),
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": "web-6d4b9", "namespace": "shop",
                      "labels": {"app": "web", "rollouts-pod-template-hash": "6d4b9"}}},
        {**pod("web-6d4b9-abcde", "shop"),
         "metadata": {"name": "web-6d4b9-abcde", "namespace": "shop",
                      "labels": {"app": "web", "rollouts-pod-template-hash": "6d4b9"}}},
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
         "metadata": {"name": "web-6d4b9-2", "namespace": "shop", "labels": {"rollouts-pod-template-hash": "6d4b9"}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dep", "namespace": "shop"},
         "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}},
    ]
    with FakeApiServer(objects, writable=True) as server:
        yield server
        assert server.errors == []


def restart_event(name: str = "", generate: str = "web.") -> dict[str, Any]:
    """A core/v1 Event about Rollout shop/web, reason ArgoDoctorRestart."""
    meta = {"name": name} if name else {"generateName": generate}
    return {"apiVersion": "v1", "kind": "Event", "metadata": {**meta, "namespace": "shop"},
            "involvedObject": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "namespace": "shop",
                               "name": "web", "uid": "uid-web", "resourceVersion": "124"},
            "reason": "ArgoDoctorRestart", "message": "restarted: stuck after ProgressDeadlineExceeded",
            "type": "Normal", "source": {"component": "argo-doctor"}, "count": 1,
            "firstTimestamp": "2026-11-23T10:00:00Z", "lastTimestamp": "2026-11-23T10:00:00Z",
            "reportingComponent": "argo-doctor", "reportingInstance": "argo-doctor-0"}


def test_read_only_by_default() -> None:
    """Without writable=True a PATCH answers 405 and changes nothing; discovery lists no write verbs."""
    with FakeApiServer([rollout("web")]) as api, client(api) as c:
        r = c.patch(f"{ROLLOUTS}/web", content=json.dumps(RESTART), headers=MERGE)
        assert r.status_code == 405 and r.json()["reason"] == "MethodNotAllowed"
        assert "restartAt" not in c.get(f"{ROLLOUTS}/web").json()["spec"]
        verbs = {x["name"]: x["verbs"] for x in c.get("/apis/argoproj.io/v1alpha1").json()["resources"]}
        assert verbs["rollouts"] == ["get", "list", "watch"]


def test_remediation_flow(wapi: FakeApiServer) -> None:
    """The restart service's requests: reads, one merge patch with the resourceVersion, one Event; all recorded."""
    with client(wapi) as c:
        verbs = {x["name"]: x["verbs"] for x in c.get("/apis/argoproj.io/v1alpha1").json()["resources"]}
        assert {"create", "patch"} <= set(verbs["rollouts"])
        assert c.get("/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop").status_code == 200
        before = c.get(f"{ROLLOUTS}/web").json()
        assert before["metadata"]["resourceVersion"] == "123"
        selector = {"labelSelector": "rollouts-pod-template-hash=6d4b9"}
        assert len(c.get("/apis/apps/v1/namespaces/shop/replicasets", params=selector).json()["items"]) == 1
        assert len(c.get("/api/v1/namespaces/shop/pods", params=selector).json()["items"]) == 1
        assert len(c.get("/apis/argoproj.io/v1alpha1/namespaces/shop/analysisruns",
                         params=selector).json()["items"]) == 1
        list_rv = wapi.resource_version

        r = c.patch(f"{ROLLOUTS}/web", content=json.dumps(RESTART).encode(), headers=MERGE)
        assert r.status_code == 200, r.text
        after = r.json()
        assert after["spec"]["restartAt"] == "2026-11-23T10:00:00Z"
        assert after["spec"]["strategy"] == before["spec"]["strategy"] and after["status"] == before["status"]
        assert int(after["metadata"]["resourceVersion"]) == int(list_rv) + 1 == int(wapi.resource_version)
        assert after["metadata"]["generation"] == 5  # a spec change
        assert (after["metadata"]["uid"], after["metadata"]["creationTimestamp"]) == ("uid-web",
                                                                                       "2026-11-01T00:00:00Z")
        assert c.get(f"{ROLLOUTS}/web").json() == after
        assert wapi.get_object("Rollout", "web", "shop")["spec"]["restartAt"] == "2026-11-23T10:00:00Z"

        r = c.post(EVENTS, json=restart_event())
        assert r.status_code == 201, r.text
        event = r.json()
        assert (event["kind"], event["apiVersion"], event["reason"]) == ("Event", "v1", "ArgoDoctorRestart")
        meta = event["metadata"]
        assert re.fullmatch(r"web\.[bcdfghjklmnpqrstvwxz2456789]{5}", meta["name"]) and meta["namespace"] == "shop"
        assert meta["uid"] and int(meta["resourceVersion"]) == int(after["metadata"]["resourceVersion"]) + 1
        assert abs(dt.datetime.fromisoformat(meta["creationTimestamp"]).timestamp() - time.time()) < 5
        listed = c.get(EVENTS, params={"fieldSelector": "involvedObject.name=web,reason=ArgoDoctorRestart"}).json()
        assert [i["metadata"]["name"] for i in listed["items"]] == [meta["name"]]
        assert c.get(f"{EVENTS}/{meta['name']}").json() == event

    (patch,) = wapi.requests_matching(r"/rollouts/web$", method="PATCH")
    assert patch.path == f"{ROLLOUTS}/web" and patch.content_type == "application/merge-patch+json"
    assert patch.json() == RESTART and patch.body == json.dumps(RESTART).encode()
    (post,) = wapi.requests_matching(r"/events$", method="POST")
    assert post.json()["involvedObject"]["name"] == "web" and post.content_type == "application/json"
    assert [r.method for r in wapi.requests if r.method not in ("GET", "HEAD")] == ["PATCH", "POST"]


def test_patch_conflict(wapi: FakeApiServer) -> None:
    """A stale resourceVersion: the real 409 Conflict, nothing changes; without one the patch is unconditional."""
    with client(wapi) as c:
        r = c.patch(f"{ROLLOUTS}/api", content=json.dumps(RESTART), headers=MERGE)  # api is at 77
        assert r.status_code == 409
        assert r.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'Operation cannot be fulfilled on rollouts.argoproj.io "api": the object has been modified; '
                       "please apply your changes to the latest version and try again",
            "reason": "Conflict", "details": {"name": "api", "group": "argoproj.io", "kind": "rollouts"}, "code": 409}
        stored = c.get(f"{ROLLOUTS}/api").json()
        assert stored["metadata"]["resourceVersion"] == "77" and "restartAt" not in stored["spec"]
        r = c.patch(f"{ROLLOUTS}/api", json={"spec": {"paused": True}}, headers=MERGE)
        assert r.status_code == 200 and r.json()["spec"]["paused"] is True
        r = c.patch(f"{ROLLOUTS}/api", json={"metadata": {"resourceVersion": 77}}, headers=MERGE)
        assert r.status_code == 400  # a number is not a resourceVersion
        r = c.patch(f"{ROLLOUTS}/nope", json=RESTART, headers=MERGE)
        assert r.status_code == 404 and r.json()["message"] == 'rollouts.argoproj.io "nope" not found'


def test_merge_patch_semantics(wapi: FakeApiServer) -> None:
    """RFC 7386: objects merge, null deletes, lists and scalars replace; the RFC's own examples."""
    with client(wapi) as c:
        patch = {"metadata": {"labels": {"app": None, "team": "shop"}, "annotations": {"a": "1"}},
                 "spec": {"replicas": 5, "strategy": {"canary": {"steps": [{"setWeight": 50}]}}},
                 "status": {"phase": None}}
        r = c.patch(f"{ROLLOUTS}/web", content=json.dumps(patch), headers=MERGE)
        body = r.json()
        assert body["metadata"]["labels"] == {"team": "shop"} and body["metadata"]["annotations"] == {"a": "1"}
        assert body["spec"]["replicas"] == 5 and body["spec"]["strategy"]["canary"]["steps"] == [{"setWeight": 50}]
        assert body["status"] == {"currentPodHash": "6d4b9"}
        r = c.get(f"{ROLLOUTS}", params={"labelSelector": "team=shop"})  # labels are re-indexed
        assert [i["metadata"]["name"] for i in r.json()["items"]] == ["web"]
    examples = [({"a": "b"}, {"a": "c"}, {"a": "c"}), ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
                ({"a": "b"}, {"a": None}, {}), ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
                ({"a": ["b"]}, {"a": "c"}, {"a": "c"}), ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
                ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
                ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}), (["a", "b"], ["c", "d"], ["c", "d"]),
                ({"a": "b"}, ["c"], ["c"]), ({"a": "foo"}, None, None), ({"a": "foo"}, "bar", "bar"),
                ({"e": None}, {"a": 1}, {"e": None, "a": 1}), ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
                ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}})]
    for target, patch_, expected in examples:
        assert merge_patch(target, patch_) == expected, (target, patch_)


def test_patch_media_types(wapi: FakeApiServer) -> None:
    """application/json and apply patches: 415; strategic merge: built-in kinds only (415 for a Rollout, as the real
    API answers for custom resources); JSON patch with a `test` of the resourceVersion."""
    with client(wapi) as c:
        r = c.patch(f"{ROLLOUTS}/web", json=RESTART)
        assert r.status_code == 415 and r.json()["reason"] == "UnsupportedMediaType"
        assert r.json()["message"] == ("the body of the request was in an unknown format - accepted media types "
                                       "include: application/json-patch+json, application/merge-patch+json")
        r = c.patch(f"{ROLLOUTS}/web", json=RESTART, headers={"Content-Type": "application/strategic-merge-patch+json"})
        assert r.status_code == 415
        assert c.patch(f"{ROLLOUTS}/web", content=b"spec: {}",
                       headers={"Content-Type": "application/apply-patch+yaml"}).status_code == 415
        r = c.patch("/apis/apps/v1/namespaces/shop/deployments/dep", json={"spec": {"replicas": 0}},
                    headers={"Content-Type": "application/strategic-merge-patch+json; charset=utf-8"})
        assert r.status_code == 200 and r.json()["spec"]["replicas"] == 0
        assert r.json()["spec"]["template"]["spec"]["containers"][0]["image"] == "x"
        r = c.patch(f"{ROLLOUTS}/web", content=b"{not json", headers=MERGE)
        assert r.status_code == 400 and r.json()["reason"] == "BadRequest"

        jp = {"Content-Type": "application/json-patch+json"}
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "123"},
               {"op": "add", "path": "/spec/restartAt", "value": "2026-11-23T10:00:00Z"},
               {"op": "add", "path": "/spec/strategy/canary/steps/-", "value": {"setWeight": 100}},
               {"op": "remove", "path": "/spec/strategy/canary/steps/1"},
               {"op": "replace", "path": "/spec/replicas", "value": 2},
               {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/a~1b"},
               {"op": "move", "from": "/status/phase", "path": "/status/was"}]
        r = c.patch(f"{ROLLOUTS}/web", json=ops, headers=jp)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["spec"]["restartAt"] == "2026-11-23T10:00:00Z" and body["spec"]["replicas"] == 2
        assert body["spec"]["strategy"]["canary"]["steps"] == [{"setWeight": 20}, {"setWeight": 100}]
        assert body["metadata"]["labels"] == {"app": "web", "a/b": "web"}
        assert body["status"] == {"currentPodHash": "6d4b9", "was": "Degraded"}
        r = c.patch(f"{ROLLOUTS}/web", json=ops[:2], headers=jp)  # the resourceVersion moved on: the test fails
        assert r.status_code == 422 and r.json()["reason"] == "Invalid"
        assert "test failed" in r.json()["details"]["causes"][0]["message"]
        assert c.patch(f"{ROLLOUTS}/web", json=[{"op": "replace", "path": "/nope/x", "value": 1}],
                       headers=jp).status_code == 422
        stale = [{"op": "replace", "path": "/metadata/resourceVersion", "value": "1"},
                 {"op": "add", "path": "/spec/paused", "value": True}]
        assert c.patch(f"{ROLLOUTS}/web", json=stale, headers=jp).status_code == 409


def test_patch_identity_and_noop(wapi: FakeApiServer) -> None:
    """Renames and moves are 400s; uid is kept; a patch that changes nothing keeps the resourceVersion; PATCH on a
    list and on an unserved subresource: 405 and 404."""
    with client(wapi) as c:
        r = c.patch(f"{ROLLOUTS}/web", json={"metadata": {"name": "web2"}}, headers=MERGE)
        assert r.status_code == 400
        assert r.json()["message"] == "the name of the object (web2) does not match the name on the URL (web)"
        r = c.patch(f"{ROLLOUTS}/web", json={"metadata": {"namespace": "other"}}, headers=MERGE)
        assert r.status_code == 400 and "does not match the namespace" in r.json()["message"]
        assert c.patch(f"{ROLLOUTS}/web", json={"kind": "Deployment"}, headers=MERGE).status_code == 400
        r = c.patch(f"{ROLLOUTS}/web", json={"metadata": {"uid": "forged", "creationTimestamp": None}}, headers=MERGE)
        assert r.status_code == 200 and r.json()["metadata"]["uid"] == "uid-web"
        assert r.json()["metadata"]["resourceVersion"] == "123"  # nothing changed: no new resourceVersion
        rv = wapi.resource_version
        r = c.patch(f"{ROLLOUTS}/web", json={"spec": {"replicas": 3}}, headers=MERGE)
        assert r.json()["metadata"]["resourceVersion"] == "123" and wapi.resource_version == rv
        r = c.patch(f"{ROLLOUTS}/web", json={"status": {"phase": "Healthy"}}, headers=MERGE)
        assert r.json()["metadata"]["generation"] == 4  # a status change does not bump the generation
        assert c.patch(ROLLOUTS, json={}, headers=MERGE).status_code == 405
        assert c.patch(f"{ROLLOUTS}/web/status", json={}, headers=MERGE).status_code == 404
        assert c.put(f"{ROLLOUTS}/web", json=rollout("web")).status_code == 405
        assert c.delete(f"{ROLLOUTS}/web").status_code == 405
        r = c.patch(f"{ROLLOUTS}/web", params={"dryRun": "All"}, json={"spec": {"paused": True}}, headers=MERGE)
        assert r.status_code == 200 and r.json()["spec"]["paused"] is True
        assert "paused" not in c.get(f"{ROLLOUTS}/web").json()["spec"]
        assert c.patch(f"{ROLLOUTS}/web", params={"dryRun": "yes"}, json={}, headers=MERGE).status_code == 400


def test_write_expires_continue_tokens(wapi: FakeApiServer) -> None:
    """A write is a change like any other: older continue tokens answer 410 Expired."""
    with client(wapi) as c:
        first = c.get(ROLLOUTS, params={"limit": 1}).json()
        assert c.patch(f"{ROLLOUTS}/web", json={"spec": {"paused": True}}, headers=MERGE).status_code == 200
        r = c.get(ROLLOUTS, params={"limit": 1, "continue": first["metadata"]["continue"]})
        assert r.status_code == 410 and r.json()["reason"] == "Expired"
        assert first["metadata"]["resourceVersion"] != c.get(ROLLOUTS).json()["metadata"]["resourceVersion"]


def test_create_events(wapi: FakeApiServer) -> None:
    """POST core/v1 and events.k8s.io/v1 Events: names, duplicates, namespaces, validation, dry run."""
    with client(wapi) as c:
        r = c.post(EVENTS, json=restart_event("web.1879f3a2c1d0e5b7"))
        assert r.status_code == 201 and r.json()["metadata"]["name"] == "web.1879f3a2c1d0e5b7"
        r = c.post(EVENTS, json=restart_event("web.1879f3a2c1d0e5b7"))
        assert r.status_code == 409
        assert (r.json()["reason"], r.json()["message"]) == ("AlreadyExists",
                                                             'events "web.1879f3a2c1d0e5b7" already exists')
        assert r.json()["details"] == {"name": "web.1879f3a2c1d0e5b7", "kind": "events"}
        names = {c.post(EVENTS, json=restart_event()).json()["metadata"]["name"] for _ in range(5)}
        assert len(names) == 5
        no_meta = {k: v for k, v in restart_event().items() if k not in ("apiVersion", "kind", "metadata")}
        r = c.post(EVENTS, json={**no_meta, "metadata": {"name": "bare"}})  # kind and apiVersion from the path
        assert r.status_code == 201 and (r.json()["kind"], r.json()["metadata"]["namespace"]) == ("Event", "shop")

        r = c.post("/api/v1/namespaces/other/events", json=restart_event("x"))
        assert r.status_code == 400 and "does not match the namespace" in r.json()["message"]
        wrong = restart_event("y")
        wrong["metadata"]["namespace"] = "other"
        wrong["involvedObject"]["namespace"] = "elsewhere"
        r = c.post("/api/v1/namespaces/other/events", json=wrong)
        assert r.status_code == 422 and r.json()["reason"] == "Invalid"
        assert r.json()["message"] == ('Event "y" is invalid: involvedObject.namespace: Invalid value: "elsewhere": '
                                       "does not match event.namespace")
        r = c.post(EVENTS, json={"apiVersion": "v1", "kind": "Event", "metadata": {}})
        assert r.status_code == 422 and "name or generateName is required" in r.json()["message"]
        assert c.post(EVENTS, json={**restart_event("z"), "apiVersion": "events.k8s.io/v1"}).status_code == 400
        assert c.post(EVENTS, json={**restart_event("z"), "metadata": {"name": "z", "resourceVersion": "5"}}
                      ).status_code == 400
        assert c.post(EVENTS, content=b"[1]", headers={"Content-Type": "application/json"}).status_code == 400
        assert c.post("/api/v1/events", json=restart_event("all")).status_code == 405
        assert c.post(f"{EVENTS}/named", json=restart_event("named")).status_code == 405
        r = c.post(EVENTS, params={"dryRun": "All"}, json=restart_event("dry"))
        assert r.status_code == 201 and c.get(f"{EVENTS}/dry").status_code == 404

        new = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.new", "namespace": "shop"},
               "eventTime": "2026-11-23T10:00:00.000000Z", "reason": "ArgoDoctorRestart", "action": "Restart",
               "reportingController": "argo-doctor", "reportingInstance": "argo-doctor-0", "type": "Normal",
               "regarding": {"kind": "Rollout", "namespace": "shop", "name": "web"}, "note": "restarted"}
        r = c.post("/apis/events.k8s.io/v1/namespaces/shop/events", json=new)
        assert r.status_code == 201 and r.json()["apiVersion"] == "events.k8s.io/v1"
        items = c.get("/apis/events.k8s.io/v1/namespaces/shop/events").json()["items"]
        assert [i["metadata"]["name"] for i in items] == ["web.new"]
        core = c.get(EVENTS, params={"fieldSelector": "reason=ArgoDoctorRestart"}).json()["items"]
        assert len(core) == 7 and "web.new" not in {i["metadata"]["name"] for i in core}

        r = c.post("/api/v1/namespaces/shop/configmaps", content=b"apiVersion: v1\nkind: ConfigMap\n"
                   b"metadata: {name: from-yaml}\ndata: {a: b}\n", headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201 and r.json()["data"] == {"a": "b"}
        assert c.post("/api/v1/namespaces/shop/configmaps", content=b"x",
                      headers={"Content-Type": "text/plain"}).status_code == 415
        r = c.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}})
        assert r.status_code == 201 and "namespace" not in r.json()["metadata"]
        r = c.post("/apis/argoproj.io/v1alpha1/namespaces/shop/rollouts",
                   json={"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "new"}})
        assert r.status_code == 201 and r.json()["metadata"]["generation"] == 1
    assert wapi.get_object("ConfigMap", "from-yaml", "shop")["data"] == {"a": "b"}


def test_write_faults(wapi: FakeApiServer) -> None:
    """Faults filtered by method: a 409 once on the PATCH (GETs of the same path unaffected), a reset on the POST,
    a hang on the PATCH after which the write still lands."""
    conflict = wapi.fault(r"/rollouts/web$", "status", status=409, method="patch")
    with client(wapi) as c:
        assert c.get(f"{ROLLOUTS}/web").status_code == 200 and conflict.fired == 0
        r = c.patch(f"{ROLLOUTS}/web", json=RESTART, headers=MERGE)
        assert r.status_code == 409 and r.json()["reason"] == "Conflict"
        assert r.json()["message"].startswith('Operation cannot be fulfilled on rollouts.argoproj.io "web"')
        assert r.json()["details"] == {"name": "web", "group": "argoproj.io", "kind": "rollouts"}
        assert "restartAt" not in c.get(f"{ROLLOUTS}/web").json()["spec"]
        assert c.patch(f"{ROLLOUTS}/web", json=RESTART, headers=MERGE).status_code == 200

        wapi.fault(r"/events$", "reset", method="POST")
        with pytest.raises(httpx.TransportError):
            c.post(EVENTS, json=restart_event("lost"))
        assert c.get(f"{EVENTS}/lost").status_code == 404
        assert c.post(EVENTS, json=restart_event("kept")).status_code == 201

    wapi.fault(r"/rollouts/api$", "hang", seconds=0.6, method="PATCH")
    with client(wapi, timeout=0.2) as c, pytest.raises(httpx.ReadTimeout):
        c.patch(f"{ROLLOUTS}/api", json={"spec": {"paused": True}}, headers=MERGE)
    with client(wapi) as c:
        deadline = time.monotonic() + 5
        while "paused" not in c.get(f"{ROLLOUTS}/api").json()["spec"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert len(wapi.requests_matching(r"/rollouts/api$", method="PATCH")) == 1


def test_on_write_simulates_the_controller(wapi: FakeApiServer) -> None:
    """A callback answers a restart as the Rollouts controller would, after a delay, through set_status."""
    seen: list[tuple[str, str, str]] = []

    def controller(method: str, path: str, obj: dict[str, Any]) -> None:
        seen.append((method, path, obj["metadata"]["resourceVersion"]))
        restart_at = obj.get("spec", {}).get("restartAt")
        if obj["kind"] == "Rollout" and restart_at:
            status = {**obj["status"], "restartedAt": restart_at, "phase": "Progressing"}
            timer = threading.Timer(0.1, wapi.set_status, ("Rollout", obj["metadata"]["name"], "shop", status))
            timer.start()

    wapi.on_write(controller)
    with client(wapi) as c:
        r = c.patch(f"{ROLLOUTS}/web", json=RESTART, headers=MERGE)
        assert r.status_code == 200 and "restartedAt" not in r.json()["status"]  # the answer is the write itself
        rv = r.json()["metadata"]["resourceVersion"]
        assert seen == [("PATCH", f"{ROLLOUTS}/web", rv)]
        deadline = time.monotonic() + 5
        while (status := c.get(f"{ROLLOUTS}/web").json()["status"]).get("restartedAt") is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert status == {"phase": "Progressing", "currentPodHash": "6d4b9", "restartedAt": "2026-11-23T10:00:00Z"}
        assert int(c.get(f"{ROLLOUTS}/web").json()["metadata"]["resourceVersion"]) == int(rv) + 1
        assert c.post(EVENTS, json=restart_event("e1")).status_code == 201
        assert [s[:2] for s in seen] == [("PATCH", f"{ROLLOUTS}/web"), ("POST", EVENTS)]
        assert c.patch(f"{ROLLOUTS}/web", json=RESTART, headers=MERGE).status_code == 409  # stale now
        assert len(seen) == 2  # failed writes call nothing

    def broken(method: str, path: str, obj: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    wapi.on_write(broken)
    with client(wapi) as c:
        assert c.post(EVENTS, json=restart_event("e2")).status_code == 201
    assert len(wapi.errors) == 1 and "boom" in wapi.errors[0]
    wapi.errors.clear()
    assert wapi.set_status("Rollout", "web", "shop", None)["metadata"]["name"] == "web"
    assert "status" not in wapi.get_object("Rollout", "web", "shop")
    with pytest.raises(KeyError):
        wapi.set_status("Rollout", "nope", "shop", {})


def test_concurrent_patches_one_wins(wapi: FakeApiServer) -> None:
    """Two PATCHes with the same resourceVersion at once, many times: always exactly one 200 and one 409."""
    clients = [client(wapi), client(wapi)]
    try:
        for c in clients:
            assert c.get("/version").status_code == 200  # open the keep-alive connections first
        for i in range(100):
            rv = wapi.get_object("Rollout", "web", "shop")["metadata"]["resourceVersion"]
            barrier = threading.Barrier(2)
            codes: list[int] = []

            def fire(c: httpx.Client, k: int, rv: str = rv, barrier: threading.Barrier = barrier,
                     codes: list[int] = codes, i: int = i) -> None:
                body = {"metadata": {"resourceVersion": rv}, "spec": {"restartAt": f"2026-11-23T10:{i % 60:02d}:0{k}Z"}}
                barrier.wait()
                codes.append(c.patch(f"{ROLLOUTS}/web", json=body, headers=MERGE).status_code)

            threads = [threading.Thread(target=fire, args=(c, k)) for k, c in enumerate(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            assert sorted(codes) == [200, 409], (i, codes)
    finally:
        for c in clients:
            c.close()
    assert int(wapi.get_object("Rollout", "web", "shop")["metadata"]["resourceVersion"]) > 123
    assert len(wapi.requests_matching(r"/rollouts/web$", method="PATCH")) == 200


def test_chunked_body_recorded(wapi: FakeApiServer) -> None:
    """A chunked request body is read whole and recorded de-chunked; the connection stays usable."""
    conn = http.client.HTTPConnection("127.0.0.1", wapi.port, timeout=5)
    headers = {"Authorization": f"Bearer {wapi.token}", "Content-Type": "application/merge-patch+json",
               "Transfer-Encoding": "chunked"}
    try:
        chunks = iter([b'{"spec":', b'{"restartAt":"2026-11-23T10:00:00Z"}}'])
        conn.request("PATCH", f"{ROLLOUTS}/web", body=chunks, headers=headers, encode_chunked=True)
        response = conn.getresponse()
        assert response.status == 200 and json.loads(response.read())["spec"]["restartAt"]
        conn.request("GET", "/version", headers={"Authorization": f"Bearer {wapi.token}"})
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    (request,) = wapi.requests_matching("/rollouts/web", method="PATCH")
    assert request.json() == {"spec": {"restartAt": "2026-11-23T10:00:00Z"}}
