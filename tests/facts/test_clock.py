"""Node clock offsets from Leases, Node heartbeats, kubelet Events and clock.yaml probes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from argo_doctor.facts.clock import combine, estimate_clocks
from argo_doctor.snapshot import Snapshot
from argo_doctor.sources.objects import RawObject

SERVER = datetime(2026, 11, 21, 10, 14, 55, tzinfo=UTC)


def _z(moment: datetime, micro: bool = False) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S" + (".%fZ" if micro else "Z"))


def lease(node: str, offset: float, at: datetime = SERVER) -> dict[str, Any]:
    renew = at + timedelta(seconds=offset, microseconds=412387)
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {
            "name": node, "namespace": "kube-node-lease", "uid": f"lease-{node}",
            "managedFields": [{
                "manager": "kubelet", "operation": "Update", "apiVersion": "coordination.k8s.io/v1",
                "time": _z(at), "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}, "f:renewTime": {}}},
            }],
        },
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": _z(renew, micro=True)},
    }


def node(name: str, offset: float, at: datetime = SERVER - timedelta(seconds=40)) -> dict[str, Any]:
    beat = at + timedelta(seconds=offset)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "uid": f"node-{name}",
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": _z(at - timedelta(days=3)), "fieldsType": "FieldsV1", "fieldsV1": {}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": _z(at),
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "subresource": "status"},
            ],
        },
        "status": {"conditions": [
            {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": _z(beat),
             "lastTransitionTime": "2026-11-02T08:11:35Z"},
            {"type": "Ready", "status": "True", "lastHeartbeatTime": _z(beat),
             "lastTransitionTime": "2026-11-02T08:11:35Z", "reason": "KubeletReady"},
        ]},
    }


def kubelet_event(host: str, offset: float, index: int, delay: float = 0.3) -> dict[str, Any]:
    created = SERVER - timedelta(minutes=index)
    said = created + timedelta(seconds=offset - delay)
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"pod-{host}-{index}.18e9", "namespace": "shop", "creationTimestamp": _z(created),
                     "uid": f"ev-{host}-{index}"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": f"web-{index}", "namespace": "shop"},
        "reason": "Pulled", "type": "Normal", "message": "Container image already present on machine",
        "source": {"component": "kubelet", "host": host},
        "firstTimestamp": _z(said), "lastTimestamp": _z(said), "count": 1,
    }


def modern_event(host: str, offset: float) -> dict[str, Any]:
    created = SERVER - timedelta(seconds=90)
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"probe-{host}", "namespace": "shop", "creationTimestamp": _z(created),
                     "uid": f"mev-{host}"},
        "eventTime": _z(created + timedelta(seconds=offset, microseconds=200000), micro=True),
        "reportingController": "kubelet", "reportingInstance": host, "action": "Probe",
        "reason": "Unhealthy", "type": "Warning", "note": "Readiness probe failed",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "namespace": "shop"},
    }


def snapshot(objects: list[dict[str, Any]], root: Path | None = None) -> Snapshot:
    snap = Snapshot("test", {"collectedAt": "2026-11-21T10:15:00Z"})
    for index, obj in enumerate(objects):
        snap.add(RawObject(obj, f"objects/all.yaml:{index * 20 + 1}"))
    if root is not None:
        snap.roots.append(root)
    return snap


def cluster(offsets: dict[str, float], events: int = 4) -> list[dict[str, Any]]:
    objs = []
    for name, offset in offsets.items():
        objs += [node(name, offset), lease(name, offset), modern_event(name, offset)]
        objs += [kubelet_event(name, offset, i) for i in range(events)]
    return objs


@pytest.mark.parametrize("offset", [-187.0, 45.0, 612.0, 0.0])
def test_offsets_behind_ahead_and_in_sync(offset: float) -> None:
    clocks = estimate_clocks(snapshot(cluster({"node-a": 0.0, "node-c": offset})))
    estimate = clocks["node-c"]
    assert estimate.offset is not None and estimate.uncertainty is not None
    assert abs(estimate.offset - offset) <= estimate.uncertainty <= 1.0
    assert len(estimate.samples) == 7
    assert {s.source for s in estimate.samples} == {"lease", "node-status", "event"}
    assert abs(clocks["node-a"].offset or 0) <= 1.0


def test_a_node_with_only_its_lease_is_unknown_not_fine() -> None:
    clocks = estimate_clocks(snapshot([lease("node-b", -300.0), *cluster({"node-a": 0.0})]))
    assert not clocks["node-b"].known and clocks["node-b"].offset is None
    assert len(clocks["node-b"].samples) == 1 and "unknown (1 sample" in clocks["node-b"].describe()
    assert clocks["node-a"].known


def test_a_late_event_does_not_move_the_median() -> None:
    objs = cluster({"node-a": -187.0})
    objs.append(kubelet_event("node-a", -187.0, 9, delay=40.0))  # delivered 40 s late
    estimate = estimate_clocks(snapshot(objs))["node-a"]
    assert estimate.offset is not None and estimate.uncertainty is not None
    assert abs(estimate.offset + 187) <= estimate.uncertainty <= 1.0


def test_events_from_other_components_and_without_times_are_ignored() -> None:
    scheduler = kubelet_event("node-a", 0.0, 1)
    scheduler["source"] = {"component": "default-scheduler"}
    no_time = kubelet_event("node-a", 0.0, 2)
    del no_time["firstTimestamp"]
    assert estimate_clocks(snapshot([scheduler, no_time])) == {}


def test_probes_are_related_to_the_api_server(tmp_path: Path) -> None:
    collector_ahead = 2.0  # the collector's own clock is 2 s ahead of the API server

    def probe(offset: float) -> dict[str, str]:
        sent = SERVER + timedelta(seconds=collector_ahead)
        received = sent + timedelta(milliseconds=60)
        date = SERVER + timedelta(seconds=offset, milliseconds=30)
        return {"sent": _z(sent, micro=True), "received": _z(received, micro=True),
                "date": format_datetime(date.replace(microsecond=0), usegmt=True)}

    (tmp_path / "clock.yaml").write_text(yaml.safe_dump({
        "apiserver": probe(0.0),
        "probes": [{"node": "node-p", "via": "node-proxy", **probe(-187.0)}, {"node": "node-p", **probe(-187.0)}],
    }))
    estimate = estimate_clocks(snapshot([], tmp_path))["node-p"]
    assert [s.source for s in estimate.samples] == ["probe", "probe"]
    assert estimate.offset is not None and abs(estimate.offset + 187) <= estimate.uncertainty  # type: ignore[operator]


def test_probes_without_an_apiserver_probe_are_not_used(tmp_path: Path) -> None:
    (tmp_path / "clock.yaml").write_text("probes:\n- node: n\n  sent: x\n")
    snap = snapshot([], tmp_path)
    assert estimate_clocks(snap) == {}
    assert [p.location for p in snap.problems] == ["clock.yaml"]


def test_combine_reports_the_spread() -> None:
    from argo_doctor.facts.clock import ClockSample

    samples = [ClockSample("n", "event", o, 0.5, "x", None, "") for o in (-10.0, -20.0, -30.0, -20.0)]
    estimate = combine("n", samples)
    assert estimate.offset == -20.0 and estimate.uncertainty == pytest.approx(1.4826 * 5.0)


def test_repeated_events_use_their_last_write_not_their_creation() -> None:
    stale = kubelet_event("node-a", 0.0, 1)
    stale["count"] = 14  # the series began 45 minutes before this object was created
    stale["firstTimestamp"] = _z(SERVER - timedelta(minutes=46))
    assert estimate_clocks(snapshot([stale])) == {}
    patched = dict(stale)
    patched["lastTimestamp"] = _z(SERVER - timedelta(seconds=187))
    patched["metadata"] = {**stale["metadata"], "managedFields": [
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": _z(SERVER),
         "fieldsType": "FieldsV1", "fieldsV1": {"f:count": {}, "f:lastTimestamp": {}}},
    ]}
    (sample,) = estimate_clocks(snapshot([patched]), min_samples=1)["node-a"].samples
    assert sample.offset == -187.0 and ".lastTimestamp" in sample.location
