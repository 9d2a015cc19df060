"""Argo Events as the snapshot shows it: EventBuses, EventSources and Sensors, the workloads the controller generates
for them, and the Argo CD notification webhooks that feed them.

From Argo Events' reconcilers (v1.9, pkg/reconciler): an EventSource's and a Sensor's Deployment and pods carry
`eventsource-name` / `sensor-name: <name>` (with `controller: eventsource-controller` / `sensor-controller`), an
EventSource's Service is `<name>-eventsource-svc`, a JetStream EventBus runs as the StatefulSet `eventbus-<name>-js`
(labels `controller: eventbus-controller`, `eventbus-name`), NATS streaming as `eventbus-<name>-stan`. `Deployed`
True only says the workload object was written, never that its pods are ready. An Argo CD webhook template's method
defaults to GET (notifications-engine's webhook service).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from argo_doctor.facts.installation import ARGOCD_NOTIFICATIONS, config_data, yaml_value
from argo_doctor.model import Evidence
from argo_doctor.snapshot import Obj, Snapshot
from argo_doctor.sources.objects import as_list, mapping

GROUP = "argoproj.io"
SOURCE_LABEL = "eventsource-name"
SENSOR_LABEL = "sensor-name"
BUS_LABEL = "eventbus-name"
WORKFLOW_SENSOR_LABEL = "events.argoproj.io/sensor"
"""The label Argo Events' argoWorkflow and k8s triggers put on what they create."""
DEFAULT_METHOD = "GET"
URL = re.compile(r"(?P<scheme>[A-Za-z][\w+.-]*)://(?:[^@/?#]*@)?(?P<host>[^/:?#]+)(?::(?P<port>\d+))?(?P<path>[^?#]*)")


@dataclass(frozen=True)
class Condition:
    """A condition of an Argo Events object that is not True, with where it sits."""

    index: int
    type: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.type} False ({self.reason}: {self.message})"


def condition_evidence(obj: Obj, conditions: list[Condition]) -> list[Evidence]:
    """Each failed condition as evidence at its place in the object."""
    return [Evidence("object", f"{obj.location} {obj.ref} .status.conditions[{c.index}]",
                     f"{c.type} False {c.reason}: {c.message}") for c in conditions]


@dataclass(frozen=True)
class Route:
    """One webhook event of an EventSource: its name, port, endpoint and method."""

    eventsource: Obj
    event: str
    port: str
    endpoint: str
    method: str


@dataclass(frozen=True)
class Notifier:
    """One way Argo CD notifications call a webhook service: a template's section for it, with the URL it calls
    (the service's url and the template's path), its method, the EventSource that URL reaches and the route it calls
    (None when no route answers it, or when the path is templated and cannot be known)."""

    service: str
    template: str
    url: str
    config: Obj
    method: str
    eventsource: Obj | None
    route: Route | None
    templated: bool


def failed_conditions(obj: Obj) -> list[Condition]:
    """The object's conditions whose status is False, in the order the controller wrote them."""
    found = []
    for index, raw in enumerate(as_list(obj.status.get("conditions"))):
        cond = mapping(raw)
        if cond.get("status") == "False":
            found.append(Condition(index, str(cond.get("type") or ""), str(cond.get("reason") or ""),
                                   str(cond.get("message") or "")))
    return found


def bus_of(snap: Snapshot, obj: Obj) -> tuple[str, Obj | None]:
    """The EventBus an EventSource or Sensor uses (`spec.eventBusName`, else `default`), by name, and the object."""
    name = str(obj.spec.get("eventBusName") or "default")
    return name, snap.get("EventBus", name, obj.namespace, GROUP)


def generated_pods(snap: Snapshot, obj: Obj, label: str) -> list[Obj]:
    """The pods the controller runs for an EventSource, Sensor or EventBus (by its label)."""
    return sorted((p for p in snap.of_kind("Pod", "", obj.namespace) if p.labels.get(label) == obj.name),
                  key=lambda p: p.name)


def bus_workload(snap: Snapshot, bus: Obj) -> Obj | None:
    """The StatefulSet that runs an EventBus (JetStream or NATS streaming); None for an exotic or Kafka bus."""
    for suffix in ("js", "stan"):
        found = snap.get("StatefulSet", f"eventbus-{bus.name}-{suffix}", bus.namespace, "apps")
        if found is not None:
            return found
    return None


def routes(eventsource: Obj) -> list[Route]:
    """The webhook routes of an EventSource (`spec.webhook`); a route without `method` has "" (it refuses every
    request: start.go compares the request's method with it, and nothing defaults it)."""
    return [Route(eventsource, str(event), str(mapping(config).get("port") or ""),
                  str(mapping(config).get("endpoint") or ""), str(mapping(config).get("method") or "").upper())
            for event, config in mapping(eventsource.spec.get("webhook")).items()]


def dependencies(sensor: Obj) -> list[tuple[str, str]]:
    """(eventSourceName, eventName) of each dependency of a Sensor."""
    return [(str(mapping(d).get("eventSourceName") or ""), str(mapping(d).get("eventName") or ""))
            for d in as_list(sensor.spec.get("dependencies"))]


def notifiers(snap: Snapshot) -> list[Notifier]:
    """Every template section of argocd-notifications-cm that calls a webhook service, with what its URL reaches."""
    found = []
    for cm in snap.of_kind("ConfigMap", ""):
        if cm.name != ARGOCD_NOTIFICATIONS:
            continue
        data = config_data(cm)
        templates = {k.split(".", 1)[1]: mapping(yaml_value(v)) for k, v in data.items() if k.startswith("template.")}
        for key, value in sorted(data.items()):
            if not key.startswith("service.webhook."):
                continue
            service = key.split(".", 2)[2]
            base = str(mapping(yaml_value(value)).get("url") or "")
            for name, template in sorted(templates.items()):
                section = mapping(template.get("webhook")).get(service)
                if section is None:
                    continue
                path = str(mapping(section).get("path") or "")
                url = base.rstrip("/") + "/" + path.lstrip("/") if path else base
                eventsource, route = route_for(snap, url)
                found.append(Notifier(service, name, url, cm,
                                      str(mapping(section).get("method") or DEFAULT_METHOD).upper(), eventsource,
                                      route, "{{" in url))
    return found


def route_for(snap: Snapshot, url: str) -> tuple[Obj | None, Route | None]:
    """The EventSource a URL reaches (its host names a Service of the input whose selector picks an EventSource's
    pods) and the route it calls (the Service's target port, when numeric, and the URL's path are the route's port
    and endpoint)."""
    parts = URL.match(url.strip())
    if parts is None:
        return None, None
    host = parts["host"].lower().split(".")
    for service in snap.of_kind("Service", ""):
        if service.name != host[0] or (len(host) > 1 and host[1] != service.namespace):
            continue
        source = mapping(service.spec.get("selector")).get(SOURCE_LABEL)
        eventsource = snap.get("EventSource", str(source), service.namespace, GROUP) if source else None
        if eventsource is None:
            continue
        port = int(parts["port"]) if parts["port"] else 443 if parts["scheme"].lower() == "https" else 80
        target = _target_port(service, port)
        route = next((r for r in routes(eventsource) if target in (None, r.port)
                      and r.endpoint.rstrip("/") == parts["path"].rstrip("/")), None)
        return eventsource, route
    return None, None


def _target_port(service: Obj, port: int) -> str | None:
    """The container port a Service port forwards to (the port itself when the Service does not map it; None for a
    named target port, which only the pods' container ports resolve)."""
    for entry in as_list(service.spec.get("ports")):
        entry = mapping(entry)
        if entry.get("port") == port:
            target = str(entry.get("targetPort") or port)
            return target if target.isdigit() else None
    return str(port)
