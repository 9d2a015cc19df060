"""The Snapshot's indexes and helpers, on the example installation."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from argo_doctor.snapshot import Snapshot, image_version
from argo_doctor.sources import bundle
from argo_doctor.sources.objects import RawObject
from tests.conftest import EXAMPLES


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return bundle.load([EXAMPLES / "argocd-basic"], None)


def test_components_and_versions(snap: Snapshot) -> None:
    found = {c.name: c for c in snap.components}
    assert {"application-controller", "repo-server", "server", "applicationset-controller",
            "notifications-controller", "dex-server", "redis"} <= set(found)
    repo = found["repo-server"]
    assert repo.version == "v2.10.9" and repo.workload is not None and repo.workload.kind == "Deployment"
    assert len(repo.pods) == 2 and len({snap.node_of(p).name for p in repo.pods}) == 2  # type: ignore[union-attr]
    controller = found["application-controller"]
    assert controller.workload is not None and controller.workload.kind == "StatefulSet"
    assert [p.name for p in controller.pods] == ["argocd-application-controller-0"]
    assert found["redis"].version == "7.0.15-alpine"
    assert snap.component_of_pod("argocd", "argocd-application-controller-0") == "application-controller"


def test_ownership_chain(snap: Snapshot) -> None:
    deployment = snap.get("Deployment", "payments-api", "payments", "apps")
    assert deployment is not None
    pods = snap.pods_of(deployment)
    assert "payments-api-7c9d8f6b5d-cpbcd" in {p.name for p in pods} and len(pods) == 4
    pod = next(p for p in pods if p.name == "payments-api-7c9d8f6b5d-cpbcd")
    assert snap.owner(pod).kind == "ReplicaSet"  # type: ignore[union-attr]
    assert snap.workload_of(pod) is deployment
    assert snap.node_of(pod).name == "worker-2"  # type: ignore[union-attr]
    job = snap.get("Job", "ledger-export-20261120", "batch", "batch")
    assert job is not None and [p.name for p in snap.pods_of(job)] == ["ledger-export-20261120-dlkw7"]


def test_application_resources_and_tracking(snap: Snapshot) -> None:
    app = snap.get("Application", "guestbook", "argocd", "argoproj.io")
    assert app is not None
    listed = {(entry["kind"], entry["name"]): live for entry, live in snap.app_resources(app)}
    assert set(listed) == {("Deployment", "guestbook-ui"), ("Service", "guestbook-ui")}
    assert all(live is not None for live in listed.values())
    tracked = {(o.kind, o.name) for o in snap.tracked_by(app)}
    assert {("Deployment", "guestbook-ui"), ("Service", "guestbook-ui")} <= tracked


def test_settings(snap: Snapshot) -> None:
    settings = snap.settings
    assert settings.namespace == "argocd" and settings.cm["timeout.reconciliation"] == "180s"
    assert "p, role:" in settings.rbac.get("policy.csv", "")
    assert any(k.startswith("trigger.") for k in settings.notifications)
    assert settings.instance_label_key == "app.kubernetes.io/instance"


def test_events_from_both_apis_in_utc_order(snap: Snapshot) -> None:
    events = snap.events
    times = [e.time for e in events if e.time is not None]
    assert times == sorted(times) and all(t.tzinfo is UTC for t in times)
    modern = [e for e in events if e.obj.api_version == "events.k8s.io/v1"]
    assert modern and modern[0].involved is not None and modern[0].involved.kind == "Pod"
    assert modern[0].message.startswith("Successfully assigned")
    backoff = [e for e in events if e.reason == "BackOff"]
    assert backoff and backoff[0].count > 1 and backoff[0].source_host


def test_audit_is_streamed(snap: Snapshot) -> None:
    stream = snap.audit()
    first = next(stream)
    assert first.verb == "patch" and first.user_agent and first.location.endswith("kube-apiserver-audit.log:1")
    assert first.received is not None and first.received.tzinfo is UTC
    assert 1 + sum(1 for _ in stream) == 13


def test_secrets_are_redacted_in_the_index(snap: Snapshot) -> None:
    secret = snap.get("Secret", "argocd-secret", "argocd", "")
    assert secret is not None
    assert all(str(v).startswith("<redacted sha256:") for v in secret.raw["data"].values())


def test_reference_time_and_objects_added_in_process(tmp_path: Path) -> None:
    snap = Snapshot("test", {"collectedAt": "2026-11-20T16:30:00+02:00"})
    assert snap.reference_time == datetime(2026, 11, 20, 14, 30, tzinfo=UTC)
    snap.add(RawObject({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                        "stringData": {"token": "abcdefgh-1234"}}, "x.yaml:1"))
    assert snap.scrubber.scrub("the token is abcdefgh-1234") == "the token is <redacted secret value>"


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("quay.io/argoproj/argocd:v2.10.9", "v2.10.9"),
        ("registry:5000/argoproj/argocd", None),
        ("quay.io/argoproj/argocd:v3.0.1@sha256:abc", "v3.0.1"),
        ("redis", None),
    ],
)
def test_image_version(image: str, version: str | None) -> None:
    assert image_version(image) == version
