"""events-sensor-not-triggering, events-eventsource-failing, events-eventbus-unhealthy: Argo Events objects, their
conditions as the reconcilers write them (pkg/reconciler), the sensor's and eventsource's zap JSON lines, the argo
CLI's stderr line and the Argo CD notifications controller's lines, on the events-pipeline example."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES, scan_json

BUNDLE = EXAMPLES / "incidents" / "events-pipeline"
RULES = ("events-sensor-not-triggering", "events-eventsource-failing", "events-eventbus-unhealthy")
EVENTS = Path("objects") / "argo-events" / "argo-events.yaml"
ARGOCD = Path("objects") / "argocd" / "argocd.yaml"
SENSOR_LOG = "restart-batch-sensor-b9v3n-7c9d5b8f4d-0e1f2"
Change = Callable[[dict[str, list[dict[str, Any]]], Path], None]


def _scan(tmp_path: Path, change: Change | None = None) -> list[dict[str, Any]]:
    """The three rules' findings on a copy of the example, `change({file: items}, bundle)` applied first."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    docs = {str(p): yaml.safe_load((bundle / p).read_text())["items"] for p in (EVENTS, ARGOCD)}
    if change is not None:
        change(docs, bundle)
    for path, items in docs.items():
        (bundle / path).write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    args = [a for rule in RULES for a in ("--rule", rule)]
    return list(scan_json(bundle, *args)["findings"])


def _obj(items: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(i for i in items if i["kind"] == kind and i["metadata"]["name"] == name)


def _log(bundle: Path, pod: str) -> Path:
    return next((bundle / "logs" / "argo-events" / pod).glob("*.log"))


def test_the_pipeline_breaks_at_the_sensor_s_trigger_refused_by_rbac(tmp_path: Path) -> None:
    findings = _scan(tmp_path)
    assert sorted(f["rule"] for f in findings) == ["events-eventsource-failing", "events-sensor-not-triggering"]
    [sensor] = [f for f in findings if f["rule"] == "events-sensor-not-triggering"]
    assert sensor["severity"] == "high"
    assert sensor["title"] == "Sensor restart-batch does not trigger: trigger submit-ledger-close fails"
    summary = sensor["summary"]
    assert ("Its 1 trigger submit-ledger-close fails: the sensor logged 1 failure, the last at 2026-12-01 09:12:04 "
            "UTC, and no success of it since") in summary
    assert "refuses ServiceAccount argo-events/events-sa to create workflows.argoproj.io in namespace batch" in summary
    assert ("It is bound to Role/batch/events-workflows, which grants only get, list, watch on workflows there"
            in summary)
    assert "the Sensor's trigger is where it breaks" in summary
    assert "The last Workflow it created is batch/ledger-close-8kq2d" in summary
    chain = [sensor["evidence"][link["evidence"]]["excerpt"] for link in sensor["chain"]]
    assert "Sending notification about condition" in chain[0] and "{batch-events }" in chain[0]
    assert "Succeeded to publish an event" in chain[1] and "Failed to execute a trigger" in chain[2]
    assert "kubectl auth can-i create workflows.argoproj.io -n batch --as system:serviceaccount:argo-events:events-sa" \
        in sensor["remediation"]["text"]
    assert sensor["remediation"]["text"].startswith("Add `create` on workflows to Role/batch/events-workflows")


def test_notifications_sent_with_the_default_get_to_a_post_route_are_refused(tmp_path: Path) -> None:
    [source] = [f for f in _scan(tmp_path) if f["rule"] == "events-eventsource-failing"]
    assert source["title"] == ("EventSource release-notes: Argo CD's webhook release-notes sends GET, route notes "
                               "accepts only POST")
    assert "route notes accepts only POST" in source["summary"] and "1 failed delivery" in source["summary"]
    assert "Set `method: POST` under webhook.release-notes" in source["remediation"]["text"]
    assert {o["name"] for o in source["objects"]} == {"release-notes", "argocd-notifications-cm"}


def test_a_template_that_sets_the_route_s_method_and_a_later_success_leave_only_history(tmp_path: Path) -> None:
    def mended(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        cm = _obj(docs[str(ARGOCD)], "ConfigMap", "argocd-notifications-cm")
        cm["data"]["template.app-deployed"] = cm["data"]["template.app-deployed"].replace(
            "  release-notes:\n", "  release-notes:\n    method: POST\n")
        notifications = next((bundle / "logs" / "argocd").glob("*/*.log"))
        notifications.write_text("".join(line for line in notifications.read_text().splitlines(keepends=True)
                                         if "Failed to notify" not in line))
        log = _log(bundle, SENSOR_LOG)
        log.write_text(log.read_text() + '2026-12-01T09:20:31.402660000Z {"level":"info","ts":"2026-12-01T09:20:31.4'
                       '02660Z","logger":"argo-events.sensor","caller":"sensors/listener.go:458","msg":"Successfully '
                       'processed trigger \'submit-ledger-close\'","sensorName":"restart-batch","triggerName":"submit-'
                       'ledger-close","triggerType":"ArgoWorkflow"}\n')
        notes = _log(bundle, "release-notes-eventsource-m4q8t-7c9d5b8f4d-9d0e1")
        notes.write_text(notes.read_text() + '2026-12-01T09:20:31.1Z {"level":"info","ts":"2026-12-01T09:20:31.1Z","lo'
                         'gger":"argo-events.eventsource","caller":"eventsources/eventing.go:605","msg":"Succeeded to '
                         'publish an event","eventSourceName":"release-notes","eventName":"notes"}\n')

    assert _scan(tmp_path, mended) == []


def test_a_sensor_without_its_event_bus_is_not_deployed(tmp_path: Path) -> None:
    def no_bus(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        sensor = _obj(docs[str(EVENTS)], "Sensor", "publish-notes")
        sensor["spec"]["eventBusName"] = "jetstream"
        sensor["status"]["conditions"] = [
            {"type": "DependenciesProvided", "status": "Unknown", "lastTransitionTime": "2026-12-01T09:00:00Z"},
            {"type": "Deployed", "status": "False", "reason": "EventBusNotFound", "message": "EventBus not found.",
             "lastTransitionTime": "2026-12-01T09:00:00Z"},
            {"type": "TriggersProvided", "status": "Unknown", "lastTransitionTime": "2026-12-01T09:00:00Z"}]

    [sensor] = [f for f in _scan(tmp_path, no_bus) if f["objects"][0]["name"] == "publish-notes"]
    assert sensor["title"] == "Sensor publish-notes does not trigger: EventBusNotFound"
    assert "its EventBus jetstream is not in namespace argo-events" in sensor["summary"]
    assert "Create EventBus jetstream in argo-events" in sensor["remediation"]["text"]


def test_a_bus_whose_servers_crash_shows_healthy_in_argo_cd_and_is_reported(tmp_path: Path) -> None:
    def crashing(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        pod = _obj(docs[str(EVENTS)], "Pod", "eventbus-default-js-2")
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        pod["status"]["containerStatuses"][0].update({
            "ready": False, "restartCount": 14,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}})
        log = _log(bundle, "argocd-sync-eventsource-x7k2p-7c9d5b8f4d-8c9d0")
        log.write_text(log.read_text() + '2026-12-01T09:25:03.200000000Z {"level":"error","ts":"2026-12-01T09:25:03'
                       '.2Z","logger":"argo-events.eventsource","caller":"base/jetstream.go:47","msg":"Failed to '
                       'create Stream","eventSourceName":"argocd-sync","error":"failed to add Jetstream stream '
                       '\\"default\\" '
                       'for connection &{}: nats: no suitable peers for placement"}\n')

    [bus] = [f for f in _scan(tmp_path, crashing) if f["rule"] == "events-eventbus-unhealthy"]
    assert bus["title"] == "EventBus default does not carry events: its servers are not up"
    assert "(2 of 3 ready)" in bus["summary"] and "Argo CD shows the EventBus Healthy all the same" in bus["summary"]
    assert "`no suitable peers for placement` ×1" in bus["summary"]
    assert "lower streamConfig replicas" in bus["remediation"]["text"]


def test_a_notification_url_that_misses_every_route(tmp_path: Path) -> None:
    def wrong_path(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        cm = _obj(docs[str(ARGOCD)], "ConfigMap", "argocd-notifications-cm")
        cm["data"]["service.webhook.batch-events"] = cm["data"]["service.webhook.batch-events"].replace(
            ":12000/argocd", ":12000/argo-cd")

    [source] = [f for f in _scan(tmp_path, wrong_path) if f["objects"][0]["name"] == "argocd-sync"]
    assert source["title"] == "EventSource argocd-sync: Argo CD's webhook batch-events calls a path it does not serve"
    assert "(/argocd on port 12000): the server answers 404" in source["summary"]


def test_upstream_objects_without_status_say_nothing(tmp_path: Path) -> None:
    """Argo Events' own example EventSource, Sensor and EventBus, as users apply them: no status, no finding."""
    bundle = tmp_path / "upstream"
    (bundle / "objects").mkdir(parents=True)
    (bundle / "objects" / "webhook.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "EventBus", "metadata": {"name": "default"},
         "spec": {"jetstream": {"version": "latest"}}},
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "EventSource", "metadata": {"name": "webhook"},
         "spec": {"service": {"ports": [{"port": 12000, "targetPort": 12000}]},
                  "webhook": {"example": {"port": "12000", "endpoint": "/example", "method": "POST"}}}},
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Sensor", "metadata": {"name": "webhook"},
         "spec": {"template": {"serviceAccountName": "operate-workflow-sa"},
                  "dependencies": [{"name": "test-dep", "eventSourceName": "webhook", "eventName": "example"}],
                  "triggers": [{"template": {"name": "webhook-workflow-trigger", "k8s": {"operation": "create"}}}]}}]))
    args = [a for rule in RULES for a in ("--rule", rule)]
    assert scan_json(bundle, *args)["findings"] == []


def test_the_example_validates_and_every_finding_names_its_objects() -> None:
    doc = scan_json(BUNDLE)
    assert json.dumps(doc)  # the contract's own checks run in scan_json
    assert all(f["objects"] for f in doc["findings"] if f["rule"] in RULES)


def _append(bundle: Path, pod: str, *lines: str) -> None:
    log = _log(bundle, pod)
    log.write_text(log.read_text() + "".join(f"{line}\n" for line in lines))


def test_a_bus_refused_once_at_start_then_carrying_events_is_history(tmp_path: Path) -> None:
    def early_refusal(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        log = _log(bundle, "argocd-sync-eventsource-x7k2p-7c9d5b8f4d-8c9d0")
        log.write_text('2026-11-28T06:10:03.000000000Z {"level":"error","ts":"2026-11-28T06:10:03Z","logger":"argo-'
                       'events.eventsource","msg":"failed to connect to eventbus","eventSourceName":"argocd-sync",'
                       '"error":"failed after retries: nats: no servers available for connection"}\n' + log.read_text())
        # the Sensor without events logs a failed connection at its start, then starts: no trigger failed
        folder = bundle / "logs" / "argo-events" / "publish-notes-sensor-w2c6r-7c9d5b8f4d-1f2a3"
        folder.mkdir()
        (folder / "main.log").write_text(
            '2026-11-28T06:10:03.000000000Z {"level":"fatal","ts":"2026-11-28T06:10:03Z","logger":"argo-events.sensor",'
            '"msg":"failed to connect to event bus","sensorName":"publish-notes","error":"failed after retries: nats: '
            'no servers available for connection"}\n2026-11-28T06:10:41.000000000Z {"level":"info",'
            '"ts":"2026-11-28T06:10:41Z","logger":"argo-events.sensor","msg":"Sensor started.","sensorName":'
            '"publish-notes"}\n')

    found = _scan(tmp_path, early_refusal)
    assert not any(f["rule"] == "events-eventbus-unhealthy" for f in found)
    assert not any(o["name"] == "publish-notes" for f in found for o in f["objects"])


def test_one_trigger_s_success_does_not_hide_another_s_failure(tmp_path: Path) -> None:
    def two_triggers(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        _append(bundle, SENSOR_LOG, '2026-12-01T09:12:05.000000000Z {"level":"info","ts":"2026-12-01T09:12:05Z",'
                '"logger":"argo-events.sensor","msg":"Successfully processed trigger \'notify-slack\'","sensorName":'
                '"restart-batch","triggerName":"notify-slack","triggerType":"HTTP"}')

    [sensor] = [f for f in _scan(tmp_path, two_triggers) if f["rule"] == "events-sensor-not-triggering"]
    assert sensor["title"] == "Sensor restart-batch does not trigger: trigger submit-ledger-close fails"


def test_a_template_path_completes_the_url_and_a_route_without_method_refuses_all(tmp_path: Path) -> None:
    def with_path(docs: dict[str, list[dict[str, Any]]], bundle: Path) -> None:
        cm = _obj(docs[str(ARGOCD)], "ConfigMap", "argocd-notifications-cm")
        cm["data"]["service.webhook.batch-events"] = "url: http://argocd-sync-eventsource-svc.argo-events.svc:12000\n"
        cm["data"]["template.sync-succeeded"] = cm["data"]["template.sync-succeeded"].replace(
            "    method: POST\n", "    method: POST\n    path: /argocd\n")
        source = _obj(docs[str(EVENTS)], "EventSource", "release-notes")
        del source["spec"]["webhook"]["notes"]["method"]

    found = _scan(tmp_path, with_path)
    assert not any(o["name"] == "argocd-sync" for f in found for o in f["objects"])
    [notes] = [f for f in found if f["objects"][0]["name"] == "release-notes"]
    assert notes["title"] == "EventSource release-notes: its route notes sets no method, so it refuses every request"
