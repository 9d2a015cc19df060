"""The live source against the fake API server: the same findings as a bundle, read-only, paginated, retried,
permission-aware, and a collected bundle that scans like the cluster."""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from argo_doctor.cli import main
from argo_doctor.engine import needs_for, run_scan, select_analyzers
from argo_doctor.facts.clock import estimate_clocks
from argo_doctor.sources import bundle, live
from tests.live.fakeapi import FakeApiServer, load_bundle, service_account_dir, write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent for p in (ROOT / "examples").rglob("bundle.yaml"))
# bundles without audit logs or a repo/ checkout: everything they hold is served by the API
API_ONLY = [ROOT / "examples" / "incidents" / "repo-flapping", ROOT / "tests" / "bundles" / "webhook-ca-mismatch",
            ROOT / "tests" / "bundles" / "engine-basic", ROOT / "tests" / "bundles" / "token-all-replicas"]


def _cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _ids(result: Result) -> list[str]:
    assert result.exit_code in (0, 1), result.output
    return sorted(f["id"] for f in json.loads(result.stdout)["findings"])


@pytest.fixture
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    """A fake API server holding a bundle's objects and logs, and a kubeconfig for it."""
    objects, logs = load_bundle(request.param)
    with FakeApiServer(objects, logs) as api:
        yield api, write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")


@pytest.mark.parametrize("served", EXAMPLES, ids=[p.name for p in EXAMPLES], indirect=True)
def test_collect_then_scan_equals_scan_live(served: tuple[FakeApiServer, Path], tmp_path: Path) -> None:
    api, kubeconfig = served
    collected = _cli("collect", "-o", tmp_path / "bundle.tar.gz", "--kubeconfig", kubeconfig, "-q")
    assert collected.exit_code == 0, collected.output
    from_bundle = _ids(_cli("scan", tmp_path / "bundle.tar.gz", "-o", "json", "--fail-on", "never"))
    from_live = _ids(_cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never"))
    assert from_live == from_bundle
    assert from_live, "every example has findings"
    assert {r.method for r in api.requests} == {"GET"}
    assert api.errors == []


@pytest.mark.parametrize("served", API_ONLY, ids=[p.name for p in API_ONLY], indirect=True)
def test_live_scan_finds_what_the_bundle_of_the_same_state_finds(served: tuple[FakeApiServer, Path],
                                                                 request: pytest.FixtureRequest) -> None:
    _api, kubeconfig = served
    original = request.node.callspec.params["served"]
    assert _ids(_cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never")) == \
        _ids(_cli("scan", original, "-o", "json", "--fail-on", "never"))


@pytest.mark.parametrize("served", [ROOT / "tests" / "bundles" / "webhook-ca-mismatch"], ids=["webhook-ca-mismatch"],
                         indirect=True)
def test_object_files_parsed_while_collecting_scan_as_those_parsed_after(
    served: tuple[FakeApiServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _api, kubeconfig = served
    taken: list[bool] = []
    real_take = bundle.EarlyLoads.take

    def take(self: bundle.EarlyLoads, job: Any) -> Any:
        found = real_take(self, job)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(bundle.EarlyLoads, "take", take)
    args = ("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never")
    early = json.loads(_cli(*args).stdout)
    assert len(taken) > 5 and all(taken)  # every object file came from the workers, parsed as it was written
    taken.clear()
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # no workers: each file parsed after the collection
    after = json.loads(_cli(*args).stdout)
    assert not taken
    for doc in (early, after):
        doc["source"].pop("collectedAt")
    assert early == after


def _collect(api: FakeApiServer, kubeconfig: Path, root: Path, **options: Any) -> live.Collected:
    client = live.connect(kubeconfig, None, timeout=options.pop("timeout", live.TIMEOUT))
    try:
        return live.collect(client, root, needs_for(select_analyzers()), live.LiveOptions(**options))
    finally:
        client.close()


def _items(root: Path, folder: str) -> list[dict[str, Any]]:
    return [item for page in sorted((root / "objects" / folder).glob("*.json"))
            for item in json.loads(page.read_text())["items"]]


REPO_FLAPPING = ROOT / "examples" / "incidents" / "repo-flapping"


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_lists_are_paginated_and_a_410_mid_way_restarts_the_list(served: tuple[FakeApiServer, Path],
                                                                 tmp_path: Path) -> None:
    api, kubeconfig = served
    pods = [o for o in api.objects() if o["kind"] == "Pod"]
    assert len(pods) >= 5
    api.fault(r"^/api/v1/pods\?", "gone", after_pages=1)
    result = _collect(api, kubeconfig, tmp_path / "b", page_size=2)
    listed = api.requests_matching(r"^/api/v1/pods\?")
    assert len(listed) >= 3 + 2  # pages before the 410, the 410 itself, then the restarted list
    assert any(r.query.get("continue") for r in listed)
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in _items(tmp_path / "b", "pods.core")]
    assert sorted(names) == sorted((p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods)
    assert all(item["apiVersion"] == "v1" and item["kind"] == "Pod" for item in _items(tmp_path / "b", "pods.core"))
    assert result.skipped == []


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_429_500_and_a_reset_are_retried(served: tuple[FakeApiServer, Path], tmp_path: Path) -> None:
    api, kubeconfig = served
    api.fault(r"^/apis/apps/v1/deployments", "status", status=429, retry_after=0.2)
    api.fault(r"^/api/v1/nodes\?", "status", status=500)
    api.fault(r"^/apis/coordination.k8s.io/v1/leases", "reset")
    result = _collect(api, kubeconfig, tmp_path / "b")
    assert result.skipped == []
    assert len(api.requests_matching(r"^/apis/apps/v1/deployments")) == 2
    assert len(api.requests_matching(r"^/api/v1/nodes\?")) == 2
    assert _items(tmp_path / "b", "leases.coordination.k8s.io")
    assert len(_items(tmp_path / "b", "nodes.core")) == len([o for o in api.objects() if o["kind"] == "Node"])


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_a_403_on_a_kind_and_on_logs_is_one_finding_and_the_scan_goes_on(served: tuple[FakeApiServer, Path]) -> None:
    api, kubeconfig = served
    api.fault(r"/secrets", "status", status=403, times=-1)
    api.fault(r"/log\?", "status", status=403, times=-1)
    result = _cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never")
    doc = json.loads(result.stdout)
    (missing,) = [f for f in doc["findings"] if f["rule"] == "collector-permission-missing"]
    assert missing["title"] == "The collector was refused 2 reads: list secrets in argocd, logs of pods in argocd"
    for rule in ("webhook-ca-mismatch", "github-app-token-clock", "replica-error-divergence", "sync-failed"):
        assert rule in missing["summary"]
    assert any(f["rule"] == "node-clock-skew" for f in doc["findings"]), "the rest of the scan went on"


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_html_and_a_hang_are_one_error_naming_the_request(served: tuple[FakeApiServer, Path], tmp_path: Path) -> None:
    api, kubeconfig = served
    api.fault(r"^/apis/apps/v1/statefulsets", "html", times=-1)
    api.fault(r"^/apis/discovery.k8s.io/v1/endpointslices", "hang", seconds=3, times=-1)
    api.fault(r"/pods/argocd-server-[^/]*/log", "html", times=-1)
    result = _collect(api, kubeconfig, tmp_path / "b", timeout=1.0)
    reasons = {s["request"]: s["reason"] for s in result.skipped}
    assert "not JSON" in reasons["GET /apis/apps/v1/statefulsets?limit=500"]
    assert "timeout" in reasons["GET /apis/discovery.k8s.io/v1/endpointslices?limit=500"]
    assert any("not text" in reason and "/log?" in request for request, reason in reasons.items())
    assert not list((tmp_path / "b" / "logs").rglob("argocd-server-*/*.log")), "a proxy's page is not a log"
    snap = bundle.load([tmp_path / "b"], tmp_path)
    shown = [f"{p.location}: {p.message}" for p in run_scan(snap, select_analyzers()).problems]
    assert any("GET /apis/apps/v1/statefulsets" in line and "text/html" in line for line in shown)
    assert _items(tmp_path / "b", "pods.core"), "the other lists were read"


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_node_clocks_are_probed_through_the_node_proxy(served: tuple[FakeApiServer, Path], tmp_path: Path) -> None:
    api, kubeconfig = served
    nodes = sorted({o["spec"].get("nodeName") for o in api.objects() if o["kind"] == "Pod"} - {None})
    api.node_clock_offsets[nodes[0]] = -300.0
    _collect(api, kubeconfig, tmp_path / "b", probe_node_clocks=True)
    assert api.requests_matching(rf"^/api/v1/nodes/{nodes[0]}/proxy/healthz")
    snap = bundle.load([tmp_path / "b"], tmp_path)
    probes = [p for p in snap.clock_probes()]
    assert probes and probes[0][1]["apiserver"]["date"]
    probed = [s for s in estimate_clocks(snap)[nodes[0]].samples if s.source == "probe"]
    assert len(probed) == 1 and abs(probed[0].offset + 300) < 2  # the kubelet's Date, against the API server's


def test_logs_are_read_with_timestamps_and_previous_instances(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "argocd-repo-server-7d9f-abcde", "namespace":
           "argocd", "labels": {"app.kubernetes.io/name": "argocd-repo-server"}}, "spec": {"containers": [
           {"name": "repo-server", "image": "quay.io/argoproj/argocd:v2.10.9"}]},
           "status": {"containerStatuses": [{"name": "repo-server", "restartCount": 2, "ready": True}]}}
    logs = {("argocd", pod["metadata"]["name"], "repo-server", False):
            '2026-11-20T14:05:41.000000001Z time="2026-11-20T14:05:41Z" level=info msg="now"\n',
            ("argocd", pod["metadata"]["name"], "repo-server", True):
            '2026-11-20T13:05:41.000000001Z time="2026-11-20T13:05:41Z" level=error msg="before"\n'}
    with FakeApiServer([pod], logs) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        _collect(api, kubeconfig, tmp_path / "b")
        _collect(api, kubeconfig, tmp_path / "c", previous=False)
    folder = tmp_path / "b" / "logs" / "argocd" / pod["metadata"]["name"]
    assert (folder / "repo-server.log").read_text().startswith("2026-11-20T14:05:41.000000001Z ")
    assert "before" in (folder / "repo-server.previous.log").read_text()
    assert not (tmp_path / "c" / "logs" / "argocd" / pod["metadata"]["name"] / "repo-server.previous.log").exists()
    log_requests = api.requests_matching(r"/log\?")
    assert all(r.query["timestamps"] == "true" and "limitBytes" in r.query for r in log_requests)


def test_context_picks_the_cluster_and_in_cluster_configuration_works(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeApiServer([]) as empty, FakeApiServer([], tls=True, version={"gitVersion": "v1.30.1"}) as other:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"a": empty, "b": other}, "a")
        client = live.connect(kubeconfig, "b")
        assert client.get_json("/version")["gitVersion"] == "v1.30.1"
        client.close()
        assert not empty.requests
        with pytest.raises(Exception, match="context"):
            live.connect(kubeconfig, "no-such-context")
        folder, env = service_account_dir(tmp_path, other)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        in_pod = live.connect(None, None, service_account=folder)
        assert in_pod.get_json("/version")["gitVersion"] == "v1.30.1"
        in_pod.close()


@pytest.mark.parametrize(("tls", "proxy", "adapter"), [(False, None, False), (True, None, True),
                                                      (False, "HTTP_PROXY", True), (False, "all_proxy", True)])
def test_a_plain_http_server_gets_a_client_without_the_ca_bundle(
    tls: bool, proxy: str | None, adapter: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kubectl proxy` or a local API over plain HTTP: no SSL context filled with the CA bundle, which lightkube's
    adapter builds (half of the 0.1 s the client took); its own trusts nothing, so that TLS could never pass
    unverified. HTTPS, or a proxy in the
    environment (which may speak TLS), goes through the adapter, with the cluster's CA."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    if proxy is not None:
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the requests below go straight to the fake
    built = []
    real = live.adapter_client
    monkeypatch.setattr(live, "adapter_client", lambda *a, **k: built.append(a) or real(*a, **k))
    with FakeApiServer([], tls=tls, version={"gitVersion": "v1.30.1"}) as api:
        http, _ = live.http_client(write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test"))
        with http:
            assert http.get("/version").json()["gitVersion"] == "v1.30.1"  # with the kubeconfig's token
            context = http._transport._pool._ssl_context  # type: ignore[attr-defined]
        assert bool(built) is adapter
        assert (context.cert_store_stats()["x509_ca"] > 0) is adapter and context.verify_mode == ssl.CERT_REQUIRED


def test_the_client_refuses_anything_but_get(tmp_path: Path) -> None:
    with FakeApiServer([]) as api:
        client = live.connect(write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test"), None)
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            with pytest.raises(live.ReadOnlyViolation):
                client._http.request(method, "/api/v1/namespaces/argocd/configmaps")
        client.close()
        assert api.requests == []
    assert not hasattr(client, "post") and not hasattr(client, "delete")


def test_an_unexpected_field_type_is_not_a_crash(tmp_path: Path) -> None:
    broken = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "argocd-server-x", "namespace": "argocd",
              "labels": {"app.kubernetes.io/name": "argocd-server"}}, "spec": "not a mapping", "status": "broken"}
    odd = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "argocd-repo-server-y", "namespace": "argocd",
           "labels": {"app.kubernetes.io/name": "argocd-repo-server"}}, "spec": {"containers": [{"name": "c"}]},
           "status": {"containerStatuses": [{"name": "c", "restartCount": "many", "state": "odd"}]}}
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "a", "namespace":
           "argocd"}, "spec": {"destination": "nowhere"}, "status": {"resources": "none", "sync": []}}
    with FakeApiServer([broken, odd, app]) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        result = _cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["schemaVersion"]


def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"gone": "http://127.0.0.1:9"}, "gone")
    result = CliRunner().invoke(main, ["scan", "--live", "--kubeconfig", str(kubeconfig), "-q"])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("argo-doctor: error: cannot reach the API server http://127.0.0.1:9")


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_a_rule_narrows_what_is_read(served: tuple[FakeApiServer, Path]) -> None:
    api, kubeconfig = served
    result = _cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "--rule", "node-clock-skew", "-o", "json",
                  "--fail-on", "never")
    assert {f["rule"] for f in json.loads(result.stdout)["findings"]} == {"node-clock-skew"}
    paths = {r.path for r in api.requests}
    assert "/api/v1/nodes" in paths and "/apis/coordination.k8s.io/v1/leases" in paths
    assert not any("secrets" in p or "applications" in p or "/log" in p for p in paths)


@pytest.mark.parametrize("served", [REPO_FLAPPING], ids=["repo-flapping"], indirect=True)
def test_progress_is_one_summary_line_off_a_terminal_and_nothing_with_quiet(served: tuple[FakeApiServer, Path]
                                                                            ) -> None:
    _api, kubeconfig = served
    loud = _cli("scan", "--live", "--kubeconfig", kubeconfig, "-o", "json", "--fail-on", "never")
    (line,) = [x for x in loud.stderr.splitlines() if x.startswith("argo-doctor: read ")]
    assert " objects in " in line and " requests" in line
    quiet = _cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "-o", "json", "--fail-on", "never")
    assert quiet.stderr == ""


DEPRECATED_CALLERS = ROOT / "examples" / "incidents" / "deprecated-callers"


def test_deprecations_live_reads_objects_and_the_api_server_metrics(tmp_path: Path) -> None:
    objects, logs = load_bundle(DEPRECATED_CALLERS)
    metrics = (DEPRECATED_CALLERS / "metrics" / "apiserver.prom").read_text()
    with FakeApiServer(objects, logs, metrics=metrics) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        result = _cli("deprecations", "--live", "--kubeconfig", kubeconfig, "-q", "--target-version", "1.22",
                      "-o", "json")
        assert api.requests_matching(r"^/metrics$")
    doc = json.loads(result.stdout)
    hows = {u["how"].split(" (")[0] for u in doc["uses"]}
    assert "requested from the API server" in hows
    assert any(h.startswith("written by manager") for h in hows)


@pytest.mark.slow
@pytest.mark.parametrize("served", API_ONLY, ids=[p.name for p in API_ONLY], indirect=True)
def test_each_rule_declares_everything_it_reads(served: tuple[FakeApiServer, Path],
                                                request: pytest.FixtureRequest) -> None:
    """Collecting only what one rule needs gives that rule the findings it has on the whole bundle."""
    _api, kubeconfig = served
    original = request.node.callspec.params["served"]
    whole = json.loads(_cli("scan", original, "-o", "json", "--fail-on", "never").stdout)["findings"]
    for rule in (a.id for a in select_analyzers()):
        alone = _ids(_cli("scan", "--live", "--kubeconfig", kubeconfig, "-q", "--rule", rule, "-o", "json",
                          "--fail-on", "never"))
        assert alone == sorted(f["id"] for f in whole if f["rule"] == rule), rule


def test_rejected_credentials_and_an_unwritable_output_stop_at_once(tmp_path: Path) -> None:
    with FakeApiServer([]) as api:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"test": api}, "test")
        api.token = "another-token"  # the kubeconfig's token is no longer accepted
        result = CliRunner().invoke(main, ["scan", "--live", "--kubeconfig", str(kubeconfig), "-q"])
        assert result.exit_code == 2
        assert "rejected the credentials" in result.output and len(result.output.strip().splitlines()) == 1
        api.clear_requests()
        result = CliRunner().invoke(main, ["collect", "-o", str(tmp_path / "no" / "such" / "b.tar.gz"),
                                           "--kubeconfig", str(kubeconfig), "-q"])
        assert result.exit_code == 2 and "cannot write into" in result.output
        assert api.requests == [], "nothing read before the output is known to be writable"


def test_kubeconfig_problems_are_one_line(tmp_path: Path) -> None:
    for text in ("", "- a list\n", "just a string\n", "apiVersion: v1\nclusters: [\n"):
        (tmp_path / "kubeconfig").write_text(text)
        result = CliRunner().invoke(main, ["scan", "--live", "--kubeconfig", str(tmp_path / "kubeconfig"), "-q"])
        assert result.exit_code == 2, (text, result.output)
        (line,) = result.output.strip().splitlines()
        assert line.startswith("argo-doctor: error: cannot use the cluster configuration: ")
        assert str(tmp_path / "kubeconfig") in line


@pytest.mark.parametrize("served", [ROOT / "examples" / "incidents" / "upgrade-readiness"], ids=["upgrade-readiness"],
                         indirect=True)
def test_upgrade_check_live_reads_what_its_rows_need(served: tuple[FakeApiServer, Path]) -> None:
    api, kubeconfig = served
    args = ("--to", "v3.0.12", "--to-workflows", "v4.0.0", "-o", "json")
    from_live = _cli("upgrade-check", "--live", "--kubeconfig", kubeconfig, "-q", *args)
    from_bundle = _cli("upgrade-check", ROOT / "examples" / "incidents" / "upgrade-readiness", *args)
    assert from_live.exit_code == from_bundle.exit_code == 1, from_live.output
    # the same changes apply; a live collection reads ConfigMaps only in the Argo namespaces, so the dashboard
    # ConfigMap of namespace monitoring is evidence of the bundle alone
    live, whole = (json.loads(r.stdout)["findings"] for r in (from_live, from_bundle))
    assert sorted(f["title"] for f in live) == sorted(f["title"] for f in whole)
    dashboards = [o for f in whole for o in f["objects"] if o["name"] == "grafana-dashboard-argocd"]
    assert dashboards and not any(o["name"] == "grafana-dashboard-argocd" for f in live for o in f["objects"])
    assert any("CronWorkflow/batch/ledger-nightly" in e["excerpt"] for f in json.loads(from_live.stdout)["findings"]
               for e in f["evidence"])
    assert {r.method for r in api.requests} == {"GET"}
