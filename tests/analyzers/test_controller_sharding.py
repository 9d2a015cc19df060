"""controller-sharding: shards computed as controller/sharding/sharding.go does, on cluster Secrets and a controller
StatefulSet as kubectl returns them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from argo_doctor.analyzers.controller_sharding import fnv32a
from tests.conftest import EXAMPLES, scan_json

RULE = "controller-sharding"
BUNDLE = EXAMPLES / "incidents" / "controller-sharding"


def _scan(tmp_path: Path, change: Any = None, log: str = "") -> list[dict[str, Any]]:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    path = bundle / "objects" / "argocd" / "argocd.yaml"
    doc = yaml.safe_load(path.read_text())
    if change is not None:
        change(doc["items"])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    if log:
        for index in range(3):
            folder = bundle / "logs" / "argocd" / f"argocd-application-controller-{index}"
            folder.mkdir(parents=True)
            (folder / "argocd-application-controller.log").write_text(log)
    return list(scan_json(bundle, "--rule", RULE)["findings"])


def _controller(items: list[dict[str, Any]]) -> dict[str, Any]:
    return next(i for i in items if i["kind"] == "StatefulSet")


def test_fnv32a_is_go_s() -> None:
    assert (fnv32a(""), fnv32a("a"), fnv32a("foobar")) == (0x811C9DC5, 0xE40C292C, 0xBF9CF968)


def test_the_busiest_shard_and_a_shard_out_of_range(tmp_path: Path) -> None:
    busy, out_of_range = _scan(tmp_path)
    assert busy["title"] == "Controller shard 0 carries 37 of 41 Applications"
    assert "shard 0: 37 Applications, 111 resources, 2 clusters; shard 1: 0 Applications, 0 resources, 0 clusters; " \
           "shard 2: 4 Applications, 12 resources, 1 cluster" in busy["summary"]
    assert "Its metrics: app_operation_processing_queue depth 6; app_reconciliation_queue depth 214; " \
           "reconciliations take 9.3 s on average (argocd_app_reconcile)." in busy["summary"]
    assert out_of_range["title"] == "Cluster Secret cluster-staging asks for shard 5 of 3"
    assert 'Argo CD puts the cluster on shard 0 ("Using shard 0")' in out_of_range["summary"]


def test_a_pinned_shard_moves_the_load_and_round_robin_spreads_it(tmp_path: Path) -> None:
    def pinned(items: list[dict[str, Any]]) -> None:
        secret = next(i for i in items if i["metadata"]["name"] == "cluster-staging")
        secret["data"]["shard"] = "MQ=="  # 1
    [busy] = _scan(tmp_path / "a", pinned)
    assert "shard 0: 34 Applications" in busy["summary"] and "shard 1: 3 Applications" in busy["summary"]

    def round_robin(items: list[dict[str, Any]]) -> None:
        pinned(items)
        next(i for i in items if i["kind"] == "ConfigMap")["data"]["controller.sharding.algorithm"] = "round-robin"
    [busy] = _scan(tmp_path / "b", round_robin)
    assert "round-robin" in busy["summary"]


def test_replicas_the_pods_are_not_told_and_a_cluster_nobody_handles(tmp_path: Path) -> None:
    def told_two(items: list[dict[str, Any]]) -> None:
        _controller(items)["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "2"
    findings = _scan(tmp_path / "a", told_two)
    assert findings[0]["title"] == "Controller shards disagree: 3 replicas, ARGOCD_CONTROLLER_REPLICAS=2"
    assert findings[0]["remediation"]["command"] == \
           "kubectl -n argocd set env statefulset/argocd-application-controller ARGOCD_CONTROLLER_REPLICAS=3"
    line = ('2026-11-30T14:01:02.000000001Z time="2026-11-30T14:01:02Z" level=info msg="Ignoring cluster '
            'https://prod-eu.k8s.globex.example:6443"\n')
    nobody = [f for f in _scan(tmp_path / "b", log=line) if f["title"].startswith("No controller shard")]
    assert [f["title"] for f in nobody] == ["No controller shard handles cluster https://prod-eu.k8s.globex.example:6443"]


def test_replicas_never_told_make_every_pod_process_every_cluster(tmp_path: Path) -> None:
    def untold(items: list[dict[str, Any]]) -> None:
        del _controller(items)["spec"]["template"]["spec"]["containers"][0]["env"][0]
    [finding] = _scan(tmp_path, untold)
    assert finding["severity"] == "high"
    assert finding["title"] == "3 controller replicas, none told to shard: each processes every cluster"


def test_round_robin_ranks_the_in_cluster_cluster_first(tmp_path: Path) -> None:
    def round_robin(items: list[dict[str, Any]]) -> None:
        next(i for i in items if i["kind"] == "ConfigMap")["data"]["controller.sharding.algorithm"] = "round-robin"
        secret = next(i for i in items if i["metadata"]["name"] == "cluster-staging")
        del secret["data"]["shard"]
    [busy] = _scan(tmp_path, round_robin)  # uids a2c…, b7d…, c1e… after in-cluster's "": ranks 1, 2, 3
    assert "shard 0: 3 Applications" in busy["summary"] and "shard 1: 34 Applications" in busy["summary"]


def test_without_the_cluster_secrets_or_with_skip_reconcile_nothing_is_guessed(tmp_path: Path) -> None:
    def no_secrets(items: list[dict[str, Any]]) -> None:
        items[:] = [i for i in items if i["kind"] != "Secret"]
    assert _scan(tmp_path / "a", no_secrets) == []

    def skipped(items: list[dict[str, Any]]) -> None:
        secret = next(i for i in items if i["metadata"]["name"] == "cluster-prod-eu")
        secret["metadata"]["annotations"] = {"argocd.argoproj.io/skip-reconcile": "true"}
    line = ('2026-11-30T14:01:02.000000001Z time="2026-11-30T14:01:02Z" level=info msg="Ignoring cluster '
            'https://prod-eu.k8s.globex.example:6443"\n')
    assert not [f for f in _scan(tmp_path / "b", skipped, log=line) if f["title"].startswith("No controller shard")]


def test_one_replica_is_silent(tmp_path: Path) -> None:
    def single(items: list[dict[str, Any]]) -> None:
        _controller(items)["spec"]["replicas"] = 1
        _controller(items)["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "1"
    assert _scan(tmp_path, single) == []
