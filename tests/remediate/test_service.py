"""The webhook receiver end to end: a notification in, against the in-process fake API; patches, Events and the
audit trail out. Each test runs on SQLite and, where several instances share it, on a real PostgreSQL server."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from argo_doctor.errors import StoreError
from argo_doctor.remediate.kube import KubeClient, KubeError
from argo_doctor.remediate.policy import parse_policy
from argo_doctor.remediate.restarter import Notification, Restarter
from argo_doctor.remediate.service import Auth, create_app
from argo_doctor.remediate.store import open_store
from tests.live.fakeapi import FakeApiServer
from tests.remediate import cluster
from tests.remediate.cluster import installation

TOKEN = "t0ken-for-notifications-4e1f9a"
SECRET = b"hmac-key-2b7c"
ROLLOUTS = "/apis/argoproj.io/v1alpha1/namespaces/apps/rollouts"
POLICY = {"dryRun": False, "allow": {"namespaces": ["apps"], "applications": ["argocd/*"]}, "cooldown": "15m",
          "allowSingleReplica": False}


class Clock:
    """A settable clock for the decisions."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Service:
    """One instance of the service: its restarter, store and a test client."""

    def __init__(self, kubeconfig: Path, store_url: str, policy: dict[str, Any], clock: Clock,
                 instance: str = "argo-doctor-0", timeout: float = 5.0) -> None:
        self.kube = KubeClient.connect(kubeconfig, timeout=timeout)
        self.store = open_store(store_url)
        self.restarter = Restarter(self.kube, parse_policy(policy, "test-policy"), self.store, source="serve",
                                   instance=instance, clock=clock)
        app = create_app(self.restarter, self.store, Auth(TOKEN.encode(), SECRET),
                         api_ready=lambda: self.kube.get("/version") and None)
        self.http = TestClient(app)

    def notify(self, body: dict[str, Any] | None = None, **kw: Any) -> Any:
        headers = kw.pop("headers", {"Authorization": f"Bearer {TOKEN}"})
        return self.http.post("/v1/notifications/argocd", json=body or cluster.notification(), headers=headers, **kw)

    def close(self) -> None:
        self.http.close()
        self.kube.close()
        self.store.close()


@pytest.fixture
def make(kubeconfig: Path, tmp_path: Path) -> Iterator[Callable[..., Service]]:
    made: list[Service] = []

    def build(policy: dict[str, Any] | None = None, store_url: str | None = None, clock: Clock | None = None,
              instance: str = "argo-doctor-0", timeout: float = 5.0) -> Service:
        service = Service(kubeconfig, store_url or f"sqlite:///{tmp_path / 'audit.db'}", policy or POLICY,
                          clock or Clock(), instance, timeout)
        made.append(service)
        return service

    yield build
    for service in made:
        service.close()


def patches(api: FakeApiServer) -> list[Any]:
    return [r for r in api.requests if r.method == "PATCH"]


def events(api: FakeApiServer) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in api.requests if r.method == "POST" and r.path.endswith("/events")]


def decisions(response: Any) -> dict[str, tuple[str, str]]:
    assert response.status_code == 200, response.text
    return {d["rollout"]: (d["action"], d["reason"]) for d in response.json()["decisions"]}


def finish_restart(api: FakeApiServer, name: str) -> None:
    """Do what the Rollouts controller does once the pods are replaced: status.restartedAt = spec.restartAt."""
    obj = next(o for o in api.objects() if o["kind"] == "Rollout" and o["metadata"]["name"] == name)
    obj = json.loads(json.dumps(obj))
    obj["status"]["restartedAt"] = obj["spec"]["restartAt"]
    obj["status"]["observedGeneration"] = str(obj["metadata"]["generation"])
    api.add_object(obj)


def test_notification_restarts_only_the_stuck_rollout(api: FakeApiServer, make: Callable[..., Service]) -> None:
    service = make()
    got = decisions(service.notify())
    assert got["apps/checkout"][0] == "restarted"
    assert got["apps/payments"][0] == "skipped" and "degraded" in got["apps/payments"][1]
    assert "CrashLoopBackOff" in got["apps/payments"][1]
    assert got["apps/catalog"][0] == "skipped" and "not-degraded" in got["apps/catalog"][1]
    assert got["apps/solo"] == ("skipped", "1 replica: a restart means downtime, and allowSingleReplica is false")
    [patch] = patches(api)
    assert patch.path == f"{ROLLOUTS}/checkout"
    assert patch.headers["content-type"] == "application/merge-patch+json"
    body = json.loads(patch.body)
    assert body["spec"] == {"restartAt": "2026-11-23T09:00:00Z"}
    assert body["metadata"]["resourceVersion"]
    [event] = events(api)
    assert event["reason"] == "ArgoDoctorRestart" and event["involvedObject"]["name"] == "checkout"
    entries = service.store.entries()
    assert {(e.rollout, e.action) for e in entries} == {
        ("apps/checkout", "restarted"), ("apps/payments", "skipped"), ("apps/catalog", "skipped"),
        ("apps/solo", "skipped")}
    restarted = next(e for e in entries if e.action == "restarted")
    assert restarted.patch == body and restarted.verdict == "stuck" and restarted.instance == "argo-doctor-0"
    assert restarted.notification == cluster.notification() and "200 OK" in (restarted.api_answer or "")
    assert restarted.state is not None and restarted.state["desired"] == 3 and restarted.latency_ms > 0


@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
    {"X-Argo-Doctor-Signature": "sha256=" + "0" * 64}, {"Authorization": f"Bearer {TOKEN}x"},
])
def test_bad_credentials_get_401_and_touch_nothing(api: FakeApiServer, make: Callable[..., Service],
                                                   headers: dict[str, str]) -> None:
    response = make().notify(headers=headers)
    assert response.status_code == 401
    assert api.requests == []


def test_an_hmac_signature_of_the_body_authenticates(api: FakeApiServer, make: Callable[..., Service]) -> None:
    body = json.dumps(cluster.notification()).encode()
    signature = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    response = make().http.post("/v1/notifications/argocd", content=body,
                                headers={"X-Argo-Doctor-Signature": signature, "Content-Type": "text/plain"})
    assert decisions(response)["apps/checkout"][0] == "restarted"
    tampered = body.replace(b"shop", b"shoq")
    response = make().http.post("/v1/notifications/argocd", content=tampered,
                                headers={"X-Argo-Doctor-Signature": signature})
    assert response.status_code == 401


@pytest.mark.parametrize(("body", "status", "words"), [
    (b"{not json", 400, "not JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (b'{"appNamespace": "argocd"}', 400, "app"),
    (b'{"app": 7}', 400, "app must be a string"),
    (b'{"app": "shop/../x"}', 400, "app is not a Kubernetes name"),
    (b'{"app": "shop", "appNamespace": "' + b"a" * 300 + b'"}', 400, "appNamespace is not a Kubernetes name"),
    (b'{"app": "shop", "appNamespace": "argocd", "extra": {"ignored": true}, "namespace": null}', 200, ""),
    (b'{"app": "' + b"x" * (1024 * 1024) + b'"}', 413, "over"),
])
def test_bodies(api: FakeApiServer, make: Callable[..., Service], body: bytes, status: int, words: str) -> None:
    response = make().http.post("/v1/notifications/argocd", content=body,
                                headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "text/plain"})
    assert response.status_code == status, response.text
    if status != 200:
        assert words in response.json()["error"]
        assert patches(api) == []


def test_a_duplicate_delivery_decides_nothing_new(api: FakeApiServer, make: Callable[..., Service]) -> None:
    service = make()
    assert decisions(service.notify())["apps/checkout"][0] == "restarted"
    again = decisions(service.notify())
    assert again["apps/checkout"][0] == "skipped" and "already pending" in again["apps/checkout"][1]
    assert len(patches(api)) == 1


def test_cooldown_then_a_new_restart(api: FakeApiServer, make: Callable[..., Service]) -> None:
    clock = Clock()
    service = make(clock=clock)
    assert decisions(service.notify())["apps/checkout"][0] == "restarted"
    finish_restart(api, "checkout")  # done, but Degraded again: the bug came back
    clock.now += timedelta(minutes=10)
    got = decisions(service.notify())["apps/checkout"]
    assert got[0] == "skipped" and "cooldown" in got[1] and "09:15:00Z" in got[1]
    clock.now += timedelta(minutes=6)
    assert decisions(service.notify())["apps/checkout"][0] == "restarted"
    assert len(patches(api)) == 2


def test_cooldown_survives_a_restartAt_removed_by_a_sync(api: FakeApiServer, make: Callable[..., Service],
                                                          tmp_path: Path) -> None:
    """Argo CD's self-heal can drop spec.restartAt; the audit store still remembers, across service restarts."""
    clock = Clock()
    first = make(clock=clock)
    assert decisions(first.notify())["apps/checkout"][0] == "restarted"
    first.close()
    api.set_objects(installation())  # the Rollout as in git again: no restartAt
    clock.now += timedelta(minutes=5)
    second = make(clock=clock, instance="argo-doctor-1")
    got = decisions(second.notify())["apps/checkout"]
    assert got[0] == "skipped" and "cooldown" in got[1]
    assert [e.instance for e in second.store.entries() if e.action == "restarted"] == ["argo-doctor-0"]


def test_hourly_cap(api: FakeApiServer, make: Callable[..., Service]) -> None:
    api.set_objects([*installation(), *cluster.stuck("basket")])
    objects = [o for o in api.objects() if o["kind"] == "Rollout"]
    api.add_object(cluster.application("shop", objects))
    service = make({**POLICY, "maxRestartsPerHour": 1})
    got = decisions(service.notify())
    assert got["apps/basket"][0] == "restarted"
    assert got["apps/checkout"][0] == "skipped" and "hourly cap" in got["apps/checkout"][1]
    assert len(patches(api)) == 1


def test_allow_lists(api: FakeApiServer, make: Callable[..., Service]) -> None:
    refused = make({**POLICY, "allow": {"namespaces": ["apps"], "applications": ["other/*"]}}).notify()
    assert refused.status_code == 200 and refused.json()["decisions"] == []
    assert "allow.applications" in refused.json()["reason"]
    assert api.requests == []  # not even the Application was read
    outside = make({**POLICY, "allow": {"namespaces": ["prod-*"], "applications": ["argocd/shop"]}}).notify()
    assert {d["action"] for d in outside.json()["decisions"]} == {"skipped"}
    assert [r.path for r in api.requests] == ["/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop"]


def test_dry_run_sends_nothing(api: FakeApiServer, make: Callable[..., Service]) -> None:
    service = make({**POLICY, "dryRun": True})
    got = decisions(service.notify())
    assert got["apps/checkout"][0] == "dry-run"
    assert patches(api) == [] and events(api) == []
    [entry] = [e for e in service.store.entries() if e.rollout == "apps/checkout"]
    assert entry.action == "dry-run" and entry.patch is not None


def test_a_conflict_is_decided_again_never_restarted_twice(api: FakeApiServer,
                                                          make: Callable[..., Service]) -> None:
    api.fault(r"rollouts/checkout$", "status", status=409, method="PATCH")
    service = make()
    got = decisions(service.notify())
    assert got["apps/checkout"][0] == "restarted"
    sent = patches(api)
    assert len(sent) == 2  # the 409, then the patch of the new decision
    [entry] = [e for e in service.store.entries() if e.action == "restarted"]
    assert "409" in (entry.api_answer or "")


def test_a_rollout_that_changes_at_every_attempt_is_left_alone_after_three(api: FakeApiServer,
                                                                           make: Callable[..., Service]) -> None:
    api.fault(r"rollouts/checkout$", "status", status=409, method="PATCH", times=-1)
    service = make()
    got = decisions(service.notify())["apps/checkout"]
    assert got == ("skipped", "the Rollout changed on each of 3 attempts; left alone")
    assert len([p for p in patches(api) if p.path.endswith("/checkout")]) == 3
    assert [e.action for e in service.store.entries() if e.rollout == "apps/checkout"] == ["skipped"]


def test_an_application_that_manages_no_rollout_is_answered_so(api: FakeApiServer,
                                                               make: Callable[..., Service]) -> None:
    api.add_object(cluster.application("docs", []))
    response = make().notify(cluster.notification(app="docs"))
    assert response.status_code == 200, response.text
    assert response.json()["reason"] == "Application argocd/docs manages no Rollout", response.json()
    assert response.json()["decisions"] == [] and patches(api) == []


def test_a_change_before_the_patch_is_seen(api: FakeApiServer, make: Callable[..., Service]) -> None:
    """Another writer restarts the Rollout between our read and our patch: our patch is a 409, and the new
    decision sees the pending restart."""
    service = make()
    original = service.kube.get

    def racing_get(path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        doc = original(path, params)
        if path.endswith("/rollouts/checkout") and not getattr(racing_get, "done", False):
            racing_get.done = True  # type: ignore[attr-defined]
            other = json.loads(json.dumps(doc))
            other["spec"]["restartAt"] = "2026-11-23T08:59:59Z"
            api.add_object(other)
        return doc

    service.kube.get = racing_get  # type: ignore[method-assign]
    got = decisions(service.notify())["apps/checkout"]
    assert got[0] == "skipped" and "already pending" in got[1]
    assert patches(api) == []


def test_api_unreachable_is_a_503_so_notifications_retries(make: Callable[..., Service], api: FakeApiServer) -> None:
    service = make()
    api.close()
    response = service.notify()
    assert response.status_code == 503 and "retry later" in response.json()["error"]


def test_health_readiness_and_metrics(api: FakeApiServer, make: Callable[..., Service]) -> None:
    service = make()
    assert service.http.get("/healthz").status_code == 200
    assert service.http.get("/readyz").status_code == 200
    service.notify()
    service.notify(headers={})
    text = service.http.get("/metrics").text
    assert 'argo_doctor_notifications_total{outcome="decided"} 1.0' in text
    assert 'argo_doctor_notifications_total{outcome="unauthorized"} 1.0' in text
    assert "argo_doctor_restarts_total 1.0" in text
    assert "argo_doctor_decision_seconds_count 1.0" in text  # a 401 decides nothing
    assert 'argo_doctor_decisions_total{action="failed"} 0.0' in text
    api.close()
    assert service.http.get("/readyz").status_code == 503


def test_two_instances_sharing_postgresql_restart_once(api: FakeApiServer, make: Callable[..., Service],
                                                       pg_store_url: str) -> None:
    services = [make(store_url=pg_store_url, instance=f"argo-doctor-{i}") for i in range(2)]
    barrier = threading.Barrier(2)
    answers: list[Any] = [None, None]

    def deliver(index: int) -> None:
        barrier.wait()
        answers[index] = services[index].restarter.notify(Notification("shop", "argocd", raw=cluster.notification()))

    threads = [threading.Thread(target=deliver, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    actions = sorted(o.action for a in answers for o in a.outcomes if o.rollout == "apps/checkout")
    assert actions == ["restarted", "skipped"]
    assert len([r for r in patches(api)]) == 1
    entries = services[0].store.entries()
    assert {e.instance for e in entries if e.rollout == "apps/checkout"} == {"argo-doctor-0", "argo-doctor-1"}


def test_an_unanswered_patch_is_recorded_and_never_repeated(api: FakeApiServer,
                                                            make: Callable[..., Service]) -> None:
    """The PATCH times out, and the API applies it later: 503 (retry), a failed entry in the trail, and the
    retry finds the restart pending."""
    api.fault(r"rollouts/checkout$", "hang", seconds=1.0, method="PATCH")
    service = make(timeout=0.3)
    response = service.notify()
    assert response.status_code == 503
    [failed] = [e for e in service.store.entries() if e.rollout == "apps/checkout"]
    assert failed.action == "failed" and "no answer" in failed.reason
    time.sleep(1.2)  # the fake applies the write once its hang is over
    got = decisions(service.notify())["apps/checkout"]
    assert got[0] == "skipped" and "already pending" in got[1]


@pytest.mark.parametrize("applied", [True, False])
def test_a_patch_whose_answer_is_lost_is_read_back(api: FakeApiServer, make: Callable[..., Service],
                                                   applied: bool) -> None:
    """The connection drops after the PATCH was sent: the Rollout read again tells whether it landed."""
    service = make()
    original = service.kube.patch

    def dropped(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if applied:
            original(path, body)
        raise KubeError(f"PATCH {path}", None, "connection failed: Connection reset by peer")

    service.kube.patch = dropped  # type: ignore[method-assign]
    response = service.notify()
    if applied:
        assert decisions(response)["apps/checkout"][0] == "restarted"
        [entry] = [e for e in service.store.entries() if e.rollout == "apps/checkout"]
        assert "Connection reset by peer; a re-read shows the patch applied" in (entry.api_answer or "")
    else:
        assert response.status_code == 503
        [entry] = [e for e in service.store.entries() if e.rollout == "apps/checkout"]
        assert entry.action == "failed" and "Connection reset by peer" in entry.reason


def test_only_the_rollouts_an_application_lists_are_decided(api: FakeApiServer, make: Callable[..., Service]) -> None:
    """Its Deployments, and a kind named Rollout of another API group, are not Argo Rollouts."""
    app = next(o for o in api.objects() if o["kind"] == "Application")
    app = json.loads(json.dumps(app))
    app["status"]["resources"] += [
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "apps", "name": "frontend"},
        {"group": "rollouts.example.com", "version": "v1", "kind": "Rollout", "namespace": "apps", "name": "legacy"},
        {"group": "argoproj.io", "version": "v1alpha1", "kind": "AnalysisRun", "namespace": "apps", "name": "ar"}]
    api.add_object(app)
    got = decisions(make().notify())
    assert set(got) == {"apps/checkout", "apps/payments", "apps/catalog", "apps/solo"}


def test_a_rollout_the_application_still_lists_but_that_is_gone_is_skipped(api: FakeApiServer,
                                                                           make: Callable[..., Service]) -> None:
    app = json.loads(json.dumps(next(o for o in api.objects() if o["kind"] == "Application")))
    app["status"]["resources"].append({"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout",
                                       "namespace": "apps", "name": "deleted"})
    api.add_object(app)
    got = decisions(make().notify())
    assert got["apps/deleted"] == ("skipped", "the Rollout does not exist")
    assert got["apps/checkout"][0] == "restarted"


def test_an_audit_trail_that_fails_after_a_restart_is_said_and_never_retried(
        api: FakeApiServer, make: Callable[..., Service]) -> None:
    """The restart is done: a 503 would make Notifications send again. A skip not recorded is a 503 (retry)."""
    service = make()
    original = service.store.record
    failing_for = {"apps/checkout"}

    def failing(entry: Any) -> int:
        if entry.rollout in failing_for:
            raise StoreError("audit store sqlite:///x: cannot write: disk I/O error")
        return original(entry)

    service.store.record = failing  # type: ignore[method-assign]
    got = decisions(service.notify())["apps/checkout"]
    assert got[0] == "restarted" and got[1].endswith("(audit record failed: audit store sqlite:///x: cannot write: "
                                                     "disk I/O error)")
    assert len(patches(api)) == 1
    failing_for = {"apps/payments"}  # a crash-looping one: skipped, and that cannot be recorded
    assert service.notify().status_code == 503
    assert len(patches(api)) == 1


def test_only_degraded_rollouts_have_their_pods_read(api: FakeApiServer, make: Callable[..., Service]) -> None:
    make().notify()
    listed = {r.path.rsplit("/", 1)[-1] + "?" + r.query.get("labelSelector", "") for r in api.requests
              if r.method == "GET" and r.path.endswith(("/pods", "/replicasets", "/analysisruns"))}
    healthy_hash = next(o for o in api.objects() if o["metadata"]["name"] == "catalog")["status"]["currentPodHash"]
    assert not any(healthy_hash in item for item in listed)
    assert listed  # the Degraded ones were


def test_the_hourly_cap_is_a_rolling_hour(api: FakeApiServer, make: Callable[..., Service]) -> None:
    """One restart at 09:00 with maxRestartsPerHour 1: the next stuck Rollout waits until 10:00, not the top of
    the next clock hour, and not a minute more."""
    api.set_objects([*installation(), *cluster.stuck("basket")])
    objects = [o for o in api.objects() if o["kind"] == "Rollout"]
    api.add_object(cluster.application("shop", objects))
    clock = Clock()
    service = make({**POLICY, "maxRestartsPerHour": 1}, clock=clock)
    assert decisions(service.notify())["apps/basket"][0] == "restarted"
    clock.now += timedelta(minutes=59, seconds=59)
    got = decisions(service.notify())["apps/checkout"]
    assert got[0] == "skipped" and "1 restarts in the last hour" in got[1]
    clock.now += timedelta(seconds=2)
    assert decisions(service.notify())["apps/checkout"][0] == "restarted"


def test_a_signed_chunked_body_without_length_is_bounded(api: FakeApiServer, make: Callable[..., Service]) -> None:
    """A signature header lets the body be read before the caller is known: read no more than MAX_BODY of it."""

    def chunks() -> Iterator[bytes]:
        for _ in range(64):  # 4 MiB in all, sent chunked: no Content-Length to refuse it by
            yield b" " * (64 * 1024)

    response = make().http.post("/v1/notifications/argocd", content=chunks(),
                                headers={"X-Argo-Doctor-Signature": "sha256=" + "0" * 64})
    assert response.status_code == 413 and "over 1048576 bytes" in response.json()["error"]
    assert api.requests == []


def test_a_change_between_the_decision_and_the_patch_is_decided_again(api: FakeApiServer,
                                                                      make: Callable[..., Service]) -> None:
    """Another writer restarts the Rollout after the decision under the lock and before its re-read: the versions
    differ, the decision is taken again on the fresh Rollout, which sees the pending restart."""
    service = make()
    original = service.kube.get
    reads = {"count": 0}

    def racing_get(path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        doc = original(path, params)
        if path.endswith("/rollouts/checkout"):
            reads["count"] += 1
            if reads["count"] == 2:  # the locked look has decided on this read; the re-read comes next
                other = json.loads(json.dumps(doc))
                other["spec"]["restartAt"] = "2026-11-23T08:59:59Z"
                api.add_object(other)
        return doc

    service.kube.get = racing_get  # type: ignore[method-assign]
    got = decisions(service.notify())["apps/checkout"]
    assert got[0] == "skipped" and "already pending" in got[1]
    assert patches(api) == []
    [entry] = [e for e in service.store.entries() if e.rollout == "apps/checkout"]
    assert entry.api_answer is not None and entry.api_answer.startswith("changed between reads (")


def test_an_application_without_a_destination_namespace_is_handled(api: FakeApiServer,
                                                                   make: Callable[..., Service]) -> None:
    """Notifications renders `{{.app.spec.destination.namespace}}` of such an Application as `<no value>`: the
    Rollouts' own namespaces (status.resources) are used."""
    body = {**cluster.notification(), "namespace": "<no value>"}
    got = decisions(make().notify(body))
    assert got["apps/checkout"][0] == "restarted" and got["apps/payments"][0] == "skipped"


SECRETS = ("hunter2-basic-pw", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaSJ9.c2lnbmF0dXJlLXZhbHVl", "s3cr3t-db-pass")


def test_nothing_secret_leaves_the_service(api: FakeApiServer, make: Callable[..., Service],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A Rollout message quoting a URL with a password, a bearer token and a password field: the answer, the JSON
    log line, the audit row and the Event carry none of them."""
    objects = cluster.stuck()
    leaky = (f"ProgressDeadlineExceeded: ReplicaSet \"checkout-{cluster._hash('checkout')}\" has timed out "
             f"progressing. (probe https://ci:{SECRETS[0]}@registry.example.com, Authorization: Bearer {SECRETS[1]}, "
             f"password={SECRETS[2]})")
    objects[0]["status"]["message"] = leaky
    api.set_objects([*objects, cluster.application("shop", [objects[0]])])
    from argo_doctor.remediate.service import json_logging

    service = make()
    with json_logging():
        response = service.notify()
    assert decisions(response)["apps/checkout"][0] == "restarted"
    texts = [response.text, capsys.readouterr().err, json.dumps([e.__dict__ for e in service.store.entries()],
                                                                 default=str), json.dumps(events(api))]
    for text in texts:
        assert not any(secret in text for secret in SECRETS), text[:2000]
    assert "<redacted>" in texts[2]  # the audit row says what was there
