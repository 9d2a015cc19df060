"""An in-process fake Kubernetes API server for the tests and benchmarks of the live source.

`FakeApiServer` serves a set of objects, pod logs and node proxy probes over HTTP/1.1 (optionally TLS), the way
kube-apiserver v1.29 does for what it serves: discovery, lists with `limit`/`continue` pagination, label and field
selectors, list items without `apiVersion`/`kind`, `Status` error bodies, bearer token auth, and a `Date` header on
every answer. It is read-only unless built with `writable=True`, which adds PATCH of any served object (merge,
JSON and, for built-in kinds, strategic merge patches; optimistic concurrency on `metadata.resourceVersion` with
the real 409 Conflict) and POST create of namespaced and cluster objects (Events in particular). Every request is
recorded with its body, and `fault()` injects failures into chosen requests (optionally of one method only):
a Status (403, 409, 429 with Retry-After, 500...), a 410 Expired on a later page of a list, a connection reset, a
hang, an HTML page from a "proxy", and the behaviours of a broken or hostile server: a body sent a byte at a time,
a canned body (a page too large, a gzip bomb, JSON nested too deep), a list whose continue token never ends, and a
log that ignores `limitBytes`. `on_write()` hooks a callback, e.g. a simulated controller, after each write;
`set_status()` writes an object's status as a controller would. Helpers build the objects and logs of a bundle
directory (`load_bundle`), a kubeconfig (`write_kubeconfig`), an in-cluster service account mount
(`service_account_dir`) and a large synthetic Argo CD installation (`synthetic_installation`).

Behaviour a client must cope with, as with the real API: list items carry no `apiVersion`/`kind` (take them from
the list: `PodList` → `Pod`); lists are in etcd key order (`namespace/name`); the fake compacts at once, so any
change (`add_object`, `remove_object`, `set_objects`, `set_status`, a PATCH or a POST) expires older continue tokens
with 410 Expired, whose Status carries a fresh `metadata.continue` for an inconsistent remainder;
`resourceVersion=0` without `continue` ignores `limit` (the v1.29 watch cache); watches are not served. Without
`writable=True` every write answers 405; with it, PUT and DELETE still do.

Writes, as the real API: a PATCH needs `Content-Type` `application/merge-patch+json` (RFC 7386),
`application/json-patch+json` (RFC 6902) or, for built-in kinds only, `application/strategic-merge-patch+json`
(applied as a merge patch: lists are replaced, not merged by key; a custom resource such as a Rollout answers 415
to it, as kube-apiserver does); anything else is 415. A `metadata.resourceVersion` in the patched object that is
not the stored one is a 409 Conflict; a patch that changes nothing keeps the resourceVersion; one that changes
anything outside `metadata` and `status` bumps a present `metadata.generation`; one that changes `metadata.name`,
`metadata.namespace`, `apiVersion` or `kind` is a 400 ("the name of the object (x) does not match the name on the
URL (y)"); `uid` and `creationTimestamp` are kept. `status` is patchable through the object itself (subresources
such as `/status` and `/scale` are not served). A create fills `metadata.namespace` from the path, the name from
`generateName`, `uid`, `resourceVersion` and `creationTimestamp` (and `generation: 1` for custom resources); an
existing name is a 409 AlreadyExists; a core/v1 Event whose `involvedObject.namespace` is not its own is a 422.
`dryRun=All` validates without storing. Not modelled: core/v1 and events.k8s.io/v1 Events are separate stores
(no conversion between them), and there is no admission, defaulting, managedFields or schema validation.

Why not kmock (0.8, installed): its `KubernetesEmulator._serve_list` answers every list with all stored objects and
`metadata.resourceVersion: "..."`, ignoring `limit`, `continue`, `labelSelector` and `fieldSelector`, so there is no
pagination, no continue token and no 410 to provoke; the list has no `kind`/`apiVersion` and items keep theirs.
Subresources are not modelled: `GET .../pods/x/log` is parsed as a fetch of the Pod and answers the Pod's JSON
(its object matcher ignores the subresource), there is no node proxy and no `/metrics`, and `/version` is a
hard-coded v1.26 k3s. It has neither TLS nor authentication, so kubeconfig and service-account loading and 401s
cannot be exercised, and it runs on aiohttp inside the test's own event loop (`async with`). Its DSL can script
canned answers and async callbacks per request, but it has no built-in connection reset or delay, and a canned
answer replaces the emulated one, so "the real page 1, then 410 on page 2" must be hand-written anyway.
"""

from __future__ import annotations

import base64
import bisect
import calendar
import contextlib
import dataclasses
import datetime as dt
import gc
import ipaddress
import json
import math
import random
import re
import secrets
import socket
import ssl
import struct
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

import msgspec
import yaml

__all__ = [
    "DEFAULT_USER",
    "DEFAULT_VERSION",
    "INCONSISTENT_CONTINUE",
    "FakeApiServer",
    "Fault",
    "LogKey",
    "Request",
    "format_timestamp",
    "json_patch",
    "load_bundle",
    "merge_patch",
    "parse_timestamp",
    "service_account_dir",
    "status_object",
    "synthetic_installation",
    "with_timestamps",
    "write_kubeconfig",
]

Obj = dict[str, Any]
LogKey = tuple[str, str, str, bool]
"""(namespace, pod, container, previous)."""
FaultKind = Literal["status", "gone", "reset", "hang", "html", "drip", "body", "loop", "nolimit"]
_FAULT_KINDS = get_args(FaultKind)
_MODIFIERS = ("hang", "drip", "nolimit")
"""Fault kinds that change how the normal answer is given rather than replace it."""

DEFAULT_VERSION: dict[str, str] = {
    "major": "1",
    "minor": "29",
    "gitVersion": "v1.29.4",
    "gitCommit": "55019c83b0fd51ef4ced8c29eec2c4847f896e74",
    "gitTreeState": "clean",
    "buildDate": "2024-04-16T15:03:10Z",
    "goVersion": "go1.21.9",
    "compiler": "gc",
    "platform": "linux/amd64",
}
DEFAULT_USER = "system:serviceaccount:argocd:argo-doctor"
NOT_FOUND = "the server could not find the requested resource"
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType",
    422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}
_MESSAGES = {
    401: "Unauthorized",
    404: NOT_FOUND,
    405: "the server does not allow this method on the requested resource",
    410: "too old resource version: 1000 (1001)",
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: etcdserver: request timed out",
    503: "the server is currently unable to handle the request",
    504: "Timeout: request did not complete within requested timeout - context deadline exceeded",
}
_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

# (group, version, kind, plural, namespaced, shortNames): what a v1.29 cluster serves whatever objects it holds.
_BUILTIN: tuple[tuple[str, str, str, str, bool, tuple[str, ...]], ...] = (
    ("", "v1", "Pod", "pods", True, ("po",)),
    ("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    ("", "v1", "Secret", "secrets", True, ()),
    ("", "v1", "Service", "services", True, ("svc",)),
    ("", "v1", "Endpoints", "endpoints", True, ("ep",)),
    ("", "v1", "Event", "events", True, ("ev",)),
    ("", "v1", "Node", "nodes", False, ("no",)),
    ("", "v1", "Namespace", "namespaces", False, ("ns",)),
    ("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",)),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",)),
    ("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",)),
    ("", "v1", "ReplicationController", "replicationcontrollers", True, ("rc",)),
    ("", "v1", "ResourceQuota", "resourcequotas", True, ("quota",)),
    ("", "v1", "LimitRange", "limitranges", True, ("limits",)),
    ("events.k8s.io", "v1", "Event", "events", True, ("ev",)),
    ("apps", "v1", "Deployment", "deployments", True, ("deploy",)),
    ("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",)),
    ("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",)),
    ("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",)),
    ("apps", "v1", "ControllerRevision", "controllerrevisions", True, ()),
    ("batch", "v1", "Job", "jobs", True, ()),
    ("batch", "v1", "CronJob", "cronjobs", True, ("cj",)),
    ("coordination.k8s.io", "v1", "Lease", "leases", True, ()),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
     False, ()),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
     False, ()),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, ("crd", "crds")),
    ("apiregistration.k8s.io", "v1", "APIService", "apiservices", False, ()),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", True, ()),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, ()),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, ()),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, ()),
    ("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",)),
    ("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False, ()),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    ("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True, ()),
    ("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ("hpa",)),
    ("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ("hpa",)),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",)),
    ("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    # The Argo projects' CRDs, served even when no CustomResourceDefinition object is given.
    ("argoproj.io", "v1alpha1", "Application", "applications", True, ("app", "apps")),
    ("argoproj.io", "v1alpha1", "ApplicationSet", "applicationsets", True, ("appset", "appsets")),
    ("argoproj.io", "v1alpha1", "AppProject", "appprojects", True, ("appproj", "appprojs")),
    ("argoproj.io", "v1alpha1", "Rollout", "rollouts", True, ("ro",)),
    ("argoproj.io", "v1alpha1", "AnalysisRun", "analysisruns", True, ("ar",)),
    ("argoproj.io", "v1alpha1", "AnalysisTemplate", "analysistemplates", True, ("at",)),
    ("argoproj.io", "v1alpha1", "ClusterAnalysisTemplate", "clusteranalysistemplates", False, ("cat",)),
    ("argoproj.io", "v1alpha1", "Experiment", "experiments", True, ("exp",)),
    ("argoproj.io", "v1alpha1", "Workflow", "workflows", True, ("wf",)),
    ("argoproj.io", "v1alpha1", "WorkflowTemplate", "workflowtemplates", True, ("wftmpl",)),
    ("argoproj.io", "v1alpha1", "ClusterWorkflowTemplate", "clusterworkflowtemplates", False, ("cwftmpl",)),
    ("argoproj.io", "v1alpha1", "CronWorkflow", "cronworkflows", True, ("cwf", "cronwf")),
    ("argoproj.io", "v1alpha1", "EventSource", "eventsources", True, ("es",)),
    ("argoproj.io", "v1alpha1", "Sensor", "sensors", True, ("sn",)),
    ("argoproj.io", "v1alpha1", "EventBus", "eventbus", True, ("eb",)),
)

# Field selectors the real server accepts beyond metadata.name / metadata.namespace.
_FIELDS: dict[tuple[str, str], frozenset[str]] = {
    ("", "Pod"): frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}),
    ("", "Event"): frozenset({"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                              "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                              "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}),
    ("", "Secret"): frozenset({"type"}),
    ("", "Node"): frozenset({"spec.unschedulable"}),
    ("", "Namespace"): frozenset({"status.phase"}),
    ("", "ReplicationController"): frozenset({"status.replicas"}),
    ("apps", "ReplicaSet"): frozenset({"status.replicas"}),
    ("batch", "Job"): frozenset({"status.successful"}),
}
_FIELD_ALIASES = {"source": "source.component"}


# --------------------------------------------------------------------------------------------------------------
# Timestamps


_TIME = re.compile(
    r"(\d{4})[-/](\d{2})[-/](\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?\s?(Z|z|UTC|[+-]\d{2}:?\d{2})?"
)
_PREFIX = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})) ")
_LOGRUS_TIME = re.compile(r'\btime="([^"]+)"')
_JSON_TIME = re.compile(r'"(?:time|ts)"\s*:\s*(?:"([^"]+)"|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?))')


def parse_timestamp(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time (also `YYYY/MM/DD hh:mm:ss` and a space for the `T`;
    no zone means UTC), or None."""
    m = _TIME.match(text.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(m[i]) for i in range(1, 7))
    try:
        dt.datetime(year, month, day, hour, minute, min(second, 59))
    except ValueError:
        return None
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    zone = m[8]
    if zone and zone not in ("Z", "z", "UTC"):
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    fraction = int((m[7] or "0")[:9].ljust(9, "0"))
    return seconds * 1_000_000_000 + fraction


def format_timestamp(ns: int) -> str:
    """RFC 3339 with nine fraction digits in UTC, as the kubelet's `--timestamps` prefix."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def _datetime_ns(when: dt.datetime) -> int:
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return calendar.timegm(when.utctimetuple()) * 1_000_000_000 + when.microsecond * 1000


def _ns_datetime(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns // 1_000_000_000, dt.UTC).replace(microsecond=ns % 1_000_000_000 // 1000)


def _content_time(line: str) -> int | None:
    """The time a log line states about itself: logrus `time="..."`, JSON `"time"`/`"ts"`, or a leading time."""
    m = _LOGRUS_TIME.search(line)
    if m is not None and (ns := parse_timestamp(m[1])) is not None:
        return ns
    m = _JSON_TIME.search(line)
    if m is not None:
        if m[1] is not None:
            if (ns := parse_timestamp(m[1])) is not None:
                return ns
        else:
            with contextlib.suppress(ValueError, OverflowError):
                return int(float(m[2]) * 1_000_000_000)
    if line[:1].isdigit():
        return parse_timestamp(line[:40])
    return None


def with_timestamps(text: str, now: dt.datetime) -> str:
    """Give every line of a log a `kubectl logs --timestamps` prefix, keeping the ones that already have one.

    The time comes from the line itself (logrus `time="..."`, JSON `"time"` or `"ts"`, a leading date and time),
    else from the previous line, else (for the first lines) from the next line that has one, else `now`.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    prefixed: list[bool] = []
    times: list[int | None] = []
    for line in lines:
        m = _PREFIX.match(line)
        prefixed.append(m is not None)
        times.append(parse_timestamp(m[1]) if m is not None else _content_time(line))
    previous = next((t for t in times if t is not None), None)
    if previous is None:
        previous = _datetime_ns(now)
    out = []
    for line, has_prefix, stated in zip(lines, prefixed, times, strict=True):
        if stated is not None:
            previous = stated
        out.append(line if has_prefix else f"{format_timestamp(previous)} {line}")
    return "".join(line + "\n" for line in out)


# --------------------------------------------------------------------------------------------------------------
# Requests, faults and responses


@dataclass(frozen=True)
class Request:
    """One request as the fake received it. `headers` has lower-case names; `target` is the raw request target;
    `body` is the request body as sent (a chunked body de-chunked)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    target: str = ""
    body: bytes = b""

    @property
    def content_type(self) -> str:
        """The media type of the body without parameters, lower case (`application/merge-patch+json`), or ""."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def json(self) -> Any:
        """The body decoded as JSON (ValueError when it is not)."""
        return json.loads(self.body)


@dataclass
class Fault:
    """A failure injected into the requests whose `path?query` matches `pattern` (and whose method is `method`,
    unless None), `times` times (-1: always)."""

    pattern: re.Pattern[str]
    kind: FaultKind
    times: int = 1
    status: int | None = None
    retry_after: float | None = None
    after_pages: int = 0
    seconds: float = 0.0
    message: str | None = None
    fired: int = 0
    method: str | None = None
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    token: str | None = None

    @property
    def active(self) -> bool:
        """Whether it will fire again."""
        return self.times < 0 or self.fired < self.times


@dataclass
class _Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    date: str | None = None
    drip: float = 0.0
    """Seconds between the bytes of the body (0: all at once)."""


_RESET = _Response(0, b"")


def status_object(code: int, message: str | None = None, *, reason: str | None = None,
                  details: Mapping[str, Any] | None = None, metadata: Mapping[str, Any] | None = None) -> Obj:
    """A `Status` body as kube-apiserver writes it for an error."""
    out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": dict(metadata or {}), "status": "Failure",
                "message": message if message is not None else _MESSAGES.get(code, _phrase(code)),
                "reason": reason or _REASONS.get(code, "Unknown")}
    if details:
        out["details"] = dict(details)
    out["code"] = code
    return out


def _phrase(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return ""


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return format_time_seconds(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def format_time_seconds(when: dt.datetime) -> str:
    """`2026-11-20T14:05:41Z` (metav1.Time)."""
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_json_default).encode(
        "utf-8", "replace")


def _json(code: int, value: Any, headers: Mapping[str, str] | None = None) -> _Response:
    return _Response(code, _dumps(value), headers=dict(headers or {}))


def _status(code: int, message: str | None = None, **kwargs: Any) -> _Response:
    return _json(code, status_object(code, message, **kwargs))


def _not_found() -> _Response:
    return _status(404, NOT_FOUND)


# --------------------------------------------------------------------------------------------------------------
# Objects and resources


@dataclass(frozen=True)
class _Res:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def ident(self) -> str:
        return f"{self.group}/{self.version}/{self.plural}"


class _Stored:
    """One object: a normalized private copy and its JSON, encoded once."""

    __slots__ = ("_item", "api_version", "group", "kind", "labels", "name", "namespace", "obj", "version")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self.api_version: str = obj["apiVersion"]
        self.kind: str = obj["kind"]
        group, _, version = self.api_version.rpartition("/")
        self.group, self.version = group, version
        meta = obj["metadata"]
        self.name: str = meta["name"]
        namespace = meta.get("namespace")
        self.namespace: str | None = namespace if isinstance(namespace, str) and namespace else None
        labels = meta.get("labels")
        self.labels: dict[str, str] = (
            {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {})
        self._item: bytes | None = None

    def item_json(self) -> bytes:
        """The object without apiVersion and kind, as a list item."""
        if self._item is None:
            self._item = msgspec.json.encode({k: v for k, v in self.obj.items() if k not in ("apiVersion", "kind")})
        return self._item

    def full_json(self) -> bytes:
        """The object with kind and apiVersion first, as a GET answers it."""
        head = _dumps({"kind": self.kind, "apiVersion": self.api_version})
        item = self.item_json()
        return head[:-1] + (b"," + item[1:] if item != b"{}" else b"}")


@dataclass(frozen=True)
class _State:
    rv: int
    resources: dict[tuple[str, str, str], _Res]
    buckets: dict[tuple[str, str, str], tuple[list[str], list[_Stored]]]
    groups: dict[str, list[str]]


def _guess_plural(kind: str) -> str:
    """apimachinery's UnsafeGuessKindToResource."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def _version_key(version: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (0, 0, 0)
    return ({None: 3, "beta": 2, "alpha": 1}[m[2]], int(m[1]), int(m[3] or 0))


def _sorted_versions(versions: Iterable[str]) -> list[str]:
    return sorted(sorted(set(versions)), key=_version_key, reverse=True)


def _build_state(stored: Iterable[_Stored], rv: int) -> _State:
    items = list(stored)
    known: dict[tuple[str, str], tuple[str, bool, tuple[str, ...], tuple[str, ...]]] = {}
    by_kind: dict[str, tuple[str, bool, tuple[str, ...]]] = {}
    for group, version, kind, plural, namespaced, short in _BUILTIN:
        versions = known[(group, kind)][3] if (group, kind) in known else ()
        known[(group, kind)] = (plural, namespaced, short, (*versions, version))
        by_kind.setdefault(kind, (plural, namespaced, short))
    for st in items:  # CustomResourceDefinitions define what they name, in every served version
        if st.kind != "CustomResourceDefinition" or st.group != "apiextensions.k8s.io":
            continue
        raw_spec = st.obj.get("spec")
        spec: Obj = raw_spec if isinstance(raw_spec, dict) else {}
        raw_names = spec.get("names")
        names: Obj = raw_names if isinstance(raw_names, dict) else {}
        crd_group, crd_plural, crd_kind = spec.get("group"), names.get("plural"), names.get("kind")
        if not (isinstance(crd_group, str) and isinstance(crd_plural, str) and isinstance(crd_kind, str)
                and crd_plural and crd_kind):
            continue
        versions = tuple(v["name"] for v in spec.get("versions") or []
                         if isinstance(v, dict) and isinstance(v.get("name"), str) and v.get("served", True))
        if not versions and isinstance(spec.get("version"), str):
            versions = (spec["version"],)
        short = tuple(s for s in names.get("shortNames") or [] if isinstance(s, str))
        known[(crd_group, crd_kind)] = (crd_plural, spec.get("scope", "Namespaced") != "Cluster", short, versions)
    namespaced_kinds = {(st.group, st.kind) for st in items if st.namespace is not None}

    resources: dict[tuple[str, str, str], _Res] = {}
    for (group, kind), (plural, namespaced, short, versions) in known.items():
        for version in versions:
            resources.setdefault((group, version, plural), _Res(group, version, kind, plural, namespaced, short))

    lists: dict[tuple[str, str, str], list[tuple[str, _Stored]]] = {}
    by_object: dict[tuple[str, str, str], _Res] = {}
    for st in items:
        gvk = (st.group, st.version, st.kind)
        res = by_object.get(gvk)
        if res is None:
            if (st.group, st.kind) in known:
                plural, namespaced, short, _versions = known[(st.group, st.kind)]
            elif st.kind in by_kind:
                plural, namespaced, short = by_kind[st.kind]
            else:
                plural, namespaced, short = _guess_plural(st.kind), (st.group, st.kind) in namespaced_kinds, ()
            res = resources.setdefault((st.group, st.version, plural),
                                       _Res(st.group, st.version, st.kind, plural, namespaced, short))
            by_object[gvk] = res
        if res.kind != st.kind:
            continue
        if res.namespaced:
            if st.namespace is None:
                st.namespace = "default"
                st.obj["metadata"]["namespace"] = "default"
            key = f"{st.namespace}/{st.name}"
        else:
            key = st.name
        lists.setdefault((res.group, res.version, res.plural), []).append((key, st))

    buckets: dict[tuple[str, str, str], tuple[list[str], list[_Stored]]] = {}
    for rkey, pairs in lists.items():
        pairs.sort(key=lambda pair: pair[0])
        deduped: dict[str, _Stored] = {}
        for key, st in pairs:
            deduped[key] = st
        keys = sorted(deduped)
        buckets[rkey] = (keys, [deduped[k] for k in keys])
    groups: dict[str, list[str]] = {}
    for group, version, _plural in resources:
        groups.setdefault(group, []).append(version)
    return _State(rv, resources, buckets, {g: _sorted_versions(v) for g, v in groups.items()})


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _private_copy(obj: Mapping[str, Any]) -> Obj | None:
    """A JSON-normalized copy of an object, or None when it is not a Kubernetes object."""
    try:
        encoded = msgspec.json.encode(obj, enc_hook=_json_default)
    except (TypeError, ValueError, msgspec.EncodeError):
        encoded = _dumps(obj)
    return _checked(msgspec.json.decode(encoded))


def _checked(obj: Any) -> Obj | None:
    """The object itself when it is a Kubernetes object (apiVersion, kind, metadata.name), else None."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    if not (isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str) and isinstance(meta, dict)
            and isinstance(meta.get("name"), str) and meta["name"]):
        return None
    return obj


def _flatten(objects: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for obj in objects:
        kind = obj.get("kind")
        items = obj.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            item_kind = kind[:-4] if kind != "List" else None
            for item in items:
                if isinstance(item, dict):
                    if item_kind and "kind" not in item:
                        item = {"apiVersion": obj.get("apiVersion"), "kind": item_kind, **item}
                    yield from _flatten([item])
        else:
            yield obj


# --------------------------------------------------------------------------------------------------------------
# Selectors and continue tokens


_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_REQ = re.compile(rf"({_KEY})\s+(in|notin)\s*\(([^()]*)\)")
_EQ_REQ = re.compile(rf"({_KEY})\s*(==|=|!=)\s*({_VALUE})")
_NUM_REQ = re.compile(rf"({_KEY})\s*(>|<)\s*(-?\d+)")
_EXISTS_REQ = re.compile(rf"(!?)\s*({_KEY})")
_FIELD_REQ = re.compile(r"([^!=,\s]+)\s*(==|=|!=)\s*([^,]*?)\s*")
Requirement = tuple[str, str, frozenset[str]]


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_label_selector(text: str) -> list[Requirement]:
    """Requirements `(op, key, values)` of a label selector; ValueError when it does not parse."""
    if not text.strip():
        return []
    out: list[Requirement] = []
    for raw in _split_top(text):
        part = raw.strip()
        if m := _SET_REQ.fullmatch(part):
            values = frozenset(v.strip() for v in m[3].split(","))
            if not m[3].strip() or any(not re.fullmatch(_VALUE, v) for v in values):
                raise ValueError(f"unable to parse requirement: invalid values in {part!r}")
            out.append((m[2], m[1], values))
        elif m := _EQ_REQ.fullmatch(part):
            out.append(("!=" if m[2] == "!=" else "=", m[1], frozenset({m[3]})))
        elif m := _NUM_REQ.fullmatch(part):
            out.append((m[2], m[1], frozenset({m[3]})))
        elif m := _EXISTS_REQ.fullmatch(part):
            out.append(("!" if m[1] else "exists", m[2], frozenset()))
        else:
            raise ValueError(f"unable to parse requirement: found {part!r}, expected: key, key=value, key!=value, "
                             "key in (values), key notin (values), !key")
    return out


def _labels_match(labels: Mapping[str, str], requirements: list[Requirement]) -> bool:
    for op, key, values in requirements:
        value = labels.get(key)
        if op == "=" or op == "in":
            ok = value is not None and value in values
        elif op == "!=" or op == "notin":
            ok = value is None or value not in values
        elif op == "exists":
            ok = value is not None
        elif op == "!":
            ok = value is None
        else:
            try:
                ok = value is not None and (int(value) > int(next(iter(values))) if op == ">"
                                            else int(value) < int(next(iter(values))))
            except ValueError:
                ok = False
        if not ok:
            return False
    return True


def _parse_field_selector(text: str, res: _Res) -> list[tuple[str, bool, str]]:
    if not text.strip():
        return []
    allowed = {"metadata.name", "metadata.namespace"} | _FIELDS.get((res.group, res.kind), frozenset())
    out = []
    for raw in text.split(","):
        m = _FIELD_REQ.fullmatch(raw.strip())
        if m is None:
            raise ValueError(f"invalid selector: '{text}'; can't understand '{raw}'")
        if m[1] not in allowed:
            raise ValueError(f"field label not supported: {m[1]}")
        out.append((m[1], m[2] == "!=", m[3]))
    return out


def _field_value(st: _Stored, path: str) -> str:
    if path == "metadata.namespace":
        return st.namespace or ""
    value: Any = st.obj
    for part in _FIELD_ALIASES.get(path, path).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class _Token:
    rv: int
    start: str
    page: int
    resource: str


def _encode_continue(token: _Token) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": token.rv, "start": token.start, "page": token.page,
                      "r": token.resource}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode("ascii").rstrip("=")


def _decode_continue(text: str) -> _Token:
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("continue key is not valid: incorrect encoded start resourceVersion "
                             "(version meta.k8s.io/v1)")
        return _Token(int(data["rv"]), str(data["start"]), int(data["page"]), str(data["r"]))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        message = str(exc) if str(exc).startswith("continue key") else f"continue key is not valid: {exc}"
        raise ValueError(message) from exc


# --------------------------------------------------------------------------------------------------------------
# Logs


@dataclass(frozen=True)
class _LogLine:
    ns: int
    stamp: str
    text: str


def _parse_log(text: str, fallback: int) -> list[_LogLine]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    previous = fallback
    for line in lines:
        m = _PREFIX.match(line)
        if m is not None and (ns := parse_timestamp(m[1])) is not None:
            previous = ns
            out.append(_LogLine(ns, m[1], line[m.end():]))
        else:  # tolerated: a line without the prefix gets the previous line's time
            out.append(_LogLine(previous, format_timestamp(previous), line))
    return out


def _bool_param(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name, "false").lower()
    if value in ("true", "1", "t"):
        return True
    if value in ("false", "0", "f", ""):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{query[name]}": invalid syntax')


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    if name not in query:
        return None
    try:
        return int(query[name])
    except ValueError:
        raise ValueError(f'strconv.ParseInt: parsing "{query[name]}": invalid syntax') from None


# --------------------------------------------------------------------------------------------------------------
# Writes: patches and the answers to failed writes


MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's names.SimpleNameGenerator alphabet
# Built-in resources accept strategic merge patches; custom resources (the Argo CRDs included) do not.
_BUILTIN_RESOURCES = frozenset((g, p) for g, _v, _k, p, _n, _s in _BUILTIN if g != "argoproj.io")
WriteHook = Callable[[str, str, Obj], None]
"""`on_write` callback: (method, request path, a copy of the object as stored)."""


class _PatchError(ValueError):
    pass


def _copy_json(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON Merge Patch: objects merge recursively, null deletes, anything else replaces.
    Modifies and returns `target` (copy it first when it must be kept)."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge_patch(target.get(key), value)
    return target


def _pointer(text: Any) -> list[str]:
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise _PatchError(f"invalid JSON pointer: {text!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")] if text else []


def _index(part: str, size: int, *, end: bool = False) -> int:
    if end and part == "-":
        return size
    if not re.fullmatch(r"0|[1-9][0-9]*", part) or int(part) > size or (int(part) == size and not end):
        raise _PatchError(f"index out of range or not an index: {part!r}")
    return int(part)


def _resolve(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list):
            node = node[_index(part, len(node))]
        else:
            raise _PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return node


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1])
    if isinstance(parent, dict):
        parent[parts[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parts[-1], len(parent), end=True), value)
    else:
        raise _PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise _PatchError("unable to remove the whole document")
    parent = _resolve(doc, parts[:-1])
    if isinstance(parent, dict) and parts[-1] in parent:
        del parent[parts[-1]]
    elif isinstance(parent, list):
        del parent[_index(parts[-1], len(parent))]
    else:
        raise _PatchError(f"unable to remove nonexistent key: {parts[-1]}: missing value")
    return doc


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 JSON Patch (add, remove, replace, move, copy, test); ValueError when an operation fails.
    Modifies and returns `doc`."""
    if not isinstance(operations, list):
        raise _PatchError("a JSON patch must be a list of operations")
    for op in operations:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise _PatchError(f"invalid operation: {op!r}")
        kind, parts = op["op"], _pointer(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise _PatchError(f"missing value for operation {kind} {op.get('path')}")
        if kind == "add":
            doc = _add(doc, parts, _copy_json(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, parts)
        elif kind == "replace":
            _resolve(doc, parts)
            doc = _add(_remove(doc, parts), parts, _copy_json(op["value"])) if parts else _copy_json(op["value"])
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from"))
            if kind == "move" and parts[:len(source)] == source and parts != source:
                raise _PatchError("a location cannot be moved into one of its children")
            value = _copy_json(_resolve(doc, source))
            if kind == "move":
                doc = _remove(doc, source)
            doc = _add(doc, parts, value)
        elif kind == "test":
            found = _resolve(doc, parts)
            if _dumps(found) != _dumps(op["value"]):
                raise _PatchError(f"testing value {op['path']} failed: test failed")
        else:
            raise _PatchError(f"Unexpected kind: {kind}")
    return doc


def _unsupported_media(accepted: Iterable[str]) -> _Response:
    return _status(415, "the body of the request was in an unknown format - accepted media types include: "
                        + ", ".join(accepted))


def _bad_request(message: str) -> _Response:
    return _status(400, message)


def _conflict_message(res: _Res, name: str) -> str:
    return (f'Operation cannot be fulfilled on {res.group_resource} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again")


def _conflict(res: _Res, name: str) -> _Response:
    details = {"name": name, "group": res.group, "kind": res.plural}
    return _status(409, _conflict_message(res, name), details={k: v for k, v in details.items() if v})


def _already_exists(res: _Res, name: str) -> _Response:
    details = {"name": name, "group": res.group, "kind": res.plural}
    return _status(409, f'{res.group_resource} "{name}" already exists', reason="AlreadyExists",
                   details={k: v for k, v in details.items() if v})


def _unprocessable(res: _Res, name: str, field_path: str, reason: str, detail: str) -> _Response:
    message = f'{res.kind} "{name}" is invalid: {field_path}: {detail}'
    details = {"name": name, "group": res.group, "kind": res.kind,
               "causes": [{"reason": reason, "message": detail, "field": field_path}]}
    return _status(422, message, details={k: v for k, v in details.items() if v})


# --------------------------------------------------------------------------------------------------------------
# Routing


@dataclass(frozen=True)
class _Route:
    kind: str
    res: _Res | None = None
    group: str = ""
    version: str = ""
    namespace: str | None = None
    name: str = ""
    sub: tuple[str, ...] = ()


def _route(state: _State, seg: list[str]) -> _Route:
    if not seg:
        return _Route("root")
    if len(seg) == 1 and seg[0] in ("version", "metrics", "healthz", "livez", "readyz", "api", "apis"):
        return _Route(seg[0])
    if seg[0] == "apis" and len(seg) == 2:
        return _Route("group", group=seg[1])
    if seg[0] == "api":
        group, version, rest = "", seg[1], seg[2:]
    elif seg[0] == "apis":
        group, version, rest = seg[1], seg[2], seg[3:]
    else:
        return _Route("notfound")
    if version not in state.groups.get(group, ()):
        return _Route("notfound")
    if not rest:
        return _Route("discovery", group=group, version=version)
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, plural, rest = rest[1], rest[2], rest[3:]
    else:
        plural, rest = rest[0], rest[1:]
    res = state.resources.get((group, version, plural))
    if res is None or (namespace is not None and not res.namespaced):
        return _Route("notfound")
    if not rest:
        return _Route("list", res, group, version, namespace)
    name, sub = rest[0], tuple(rest[1:])
    if res.namespaced and namespace is None:
        return _Route("notfound")
    if not sub:
        return _Route("get", res, group, version, namespace, name)
    if (group, plural) == ("", "pods") and sub == ("log",):
        return _Route("log", res, group, version, namespace, name, sub)
    if (group, plural) == ("", "nodes") and sub[0] == "proxy":
        return _Route("proxy", res, group, version, namespace, name, sub)
    return _Route("notfound")


# --------------------------------------------------------------------------------------------------------------
# The server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, owner: FakeApiServer, context: ssl.SSLContext | None) -> None:
        self.owner = owner
        self.context = context
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Wrap the connection in TLS inside the connection's own thread, and track it for close()."""
        sock: socket.socket = request
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.context is not None:
            sock.settimeout(10)
            try:
                sock = self.context.wrap_socket(sock, server_side=True)
            except (OSError, ValueError):
                return
        with self.connections_lock:
            self.connections.add(sock)
        try:
            _Handler(sock, client_address, self)
        except OSError:
            pass
        finally:
            with self.connections_lock:
                self.connections.discard(sock)
            if sock is not request:
                with contextlib.suppress(OSError):
                    sock.close()

    def close_connections(self) -> None:
        """Shut down every open connection (keep-alive ones included)."""
        with self.connections_lock:
            connections = list(self.connections)
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    timeout = 120
    server: _HTTPServer

    def _dispatch(self) -> None:
        self.server.owner._handle(self, self.command)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class FakeApiServer:
    """A kube-apiserver on 127.0.0.1 serving `objects` and pod `logs`; a context manager.

    logs: {(namespace, pod, container, previous): text}, every line starting with an RFC 3339 timestamp and a
    space (`kubectl logs --timestamps`). `now` (default: the newest log line + 1 s) is what `sinceSeconds` counts
    back from; the `Date` headers and the `creationTimestamp` of created objects use the real clock (plus
    `node_clock_offsets[node]` for a node proxy answer). Read-only (writes answer 405) unless `writable=True`:
    then PATCH and POST are served as the module docstring describes, atomically under one lock.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        logs: Mapping[LogKey, str] | None = None,
        *,
        tls: bool = False,
        node_clock_offsets: Mapping[str, float] | None = None,
        metrics: str = "",
        version: Mapping[str, str] | None = None,
        now: dt.datetime | None = None,
        token: str | None = None,
        user: str = DEFAULT_USER,
        copy_objects: bool = True,
        writable: bool = False,
    ) -> None:
        self.writable = writable
        self._on_write: list[WriteHook] = []
        self._lock = threading.RLock()
        self._requests: list[Request] = []
        self._faults: list[Fault] = []
        self._stored: dict[tuple[str, str, str, str], _Stored] = {}
        self._rv = 1000
        self._state = _build_state((), self._rv)
        self._logs: dict[LogKey, list[_LogLine]] = {}
        self._log_containers: dict[tuple[str, str], set[str]] = {}
        self._given_now = now
        self.now: dt.datetime = now or dt.datetime.now(dt.UTC)
        self.tls = tls
        self.node_clock_offsets: dict[str, float] = dict(node_clock_offsets or {})
        self.metrics = metrics
        self.version: dict[str, str] = dict(version) if version is not None else dict(DEFAULT_VERSION)
        self.token: str = token or secrets.token_urlsafe(32)
        self.user = user
        self.errors: list[str] = []
        """Tracebacks of exceptions inside the fake (answered as 500): a test can assert it stays empty."""
        self.ca_file: Path | None = None
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._stopping = threading.Event()
        self.set_objects(objects, copy=copy_objects)
        self.set_logs(logs or {})

    # ---- lifecycle

    def start(self) -> FakeApiServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the fake API server is already running")
        context = None
        if self.tls:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="fakeapi-")
            context, self.ca_file = _make_tls(Path(self._tmpdir.name))
        self._stopping.clear()
        self._server = _HTTPServer(self, context)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"fakeapi-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end hanging requests and close open connections."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the fake API server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` or `https://...` in TLS mode."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    # ---- state

    def set_objects(self, objects: Iterable[Mapping[str, Any]], *, copy: bool = True) -> None:
        """Replace every object (a `kind: List` is flattened). Objects keep their own resourceVersion.

        The fake serves private JSON-normalized copies. `copy=False` (for large benchmarks: ~5x faster) keeps the
        given dicts instead: they must be plain JSON values, and the fake may add `metadata.resourceVersion` and
        `metadata.namespace` to them; changing them afterwards changes what is served.
        """
        stored: dict[tuple[str, str, str, str], _Stored] = {}
        highest = 0
        with _gc_paused():  # copying many objects otherwise spends most of its time in the cyclic GC
            for obj in _flatten(objects):
                kept = _private_copy(obj) if copy else _checked(obj)
                if kept is None:
                    continue
                rv = kept["metadata"].get("resourceVersion")
                if isinstance(rv, str) and rv.isdigit():
                    highest = max(highest, int(rv))
                st = _Stored(kept)
                stored[(st.api_version, st.kind, st.namespace or "", st.name)] = st
        with self._lock:
            self._rv = max(self._rv, highest) + 1
            for st in stored.values():
                st.obj["metadata"].setdefault("resourceVersion", str(self._rv))
            self._stored = stored
            with _gc_paused():
                self._state = _build_state(stored.values(), self._rv)

    def add_object(self, obj: Mapping[str, Any]) -> None:
        """Add or replace one object; it gets a new resourceVersion, and so do lists."""
        copy = _private_copy(obj)
        if copy is None:
            raise ValueError("not a Kubernetes object (apiVersion, kind and metadata.name are needed)")
        with self._lock:
            self._rv += 1
            copy["metadata"]["resourceVersion"] = str(self._rv)
            st = _Stored(copy)
            self._stored[(st.api_version, st.kind, st.namespace or "", st.name)] = st
            with _gc_paused():
                self._state = _build_state(self._stored.values(), self._rv)

    def remove_object(self, kind: str, name: str, namespace: str | None = None, *,
                      api_version: str | None = None) -> Obj:
        """Remove one object (KeyError when there is none) and return it; lists get a new resourceVersion."""
        with self._lock:
            key, st = self._find(kind, name, namespace, api_version)
            del self._stored[key]
            self._rv += 1
            with _gc_paused():
                self._state = _build_state(self._stored.values(), self._rv)
            return st.obj

    def get_object(self, kind: str, name: str, namespace: str | None = None, *,
                   api_version: str | None = None) -> Obj:
        """A copy of one stored object as served now (KeyError when there is none)."""
        with self._lock:
            obj: Obj = _copy_json(self._find(kind, name, namespace, api_version)[1].obj)
        return obj

    def set_status(self, kind: str, name: str, namespace: str | None, status: Mapping[str, Any] | None, *,
                   api_version: str | None = None) -> Obj:
        """Replace the `status` of one object (None removes it), as a controller's status write: the object gets a
        new resourceVersion. Returns a copy of the object as now stored; KeyError when there is none.
        `on_write` callbacks are not called."""
        with self._lock:
            _key, st = self._find(kind, name, namespace, api_version)
            obj: Obj = _copy_json(st.obj)
            if status is None:
                obj.pop("status", None)
            else:
                obj["status"] = _copy_json(status)
            out: Obj = _copy_json(self._commit(st, obj, self._resource_of(st)).obj)
        return out

    def on_write(self, callback: WriteHook) -> None:
        """Call `callback(method, path, obj)` after each successful PATCH or POST (not dry run), in the request's
        thread, outside the server's lock and before the answer is sent; `obj` is a copy of the object as stored.
        A callback may call `set_status`/`add_object` (e.g. from a `threading.Timer`, to answer after a delay);
        an exception in it is recorded in `errors` and does not change the answer."""
        with self._lock:
            self._on_write.append(callback)

    def _find(self, kind: str, name: str, namespace: str | None,
              api_version: str | None) -> tuple[tuple[str, str, str, str], _Stored]:
        for key, st in self._stored.items():
            if (st.kind == kind and st.name == name and (st.namespace or None) == (namespace or None)
                    and api_version in (None, st.api_version)):
                return key, st
        raise KeyError((kind, namespace, name))

    def _resource_of(self, st: _Stored) -> _Res | None:
        state = self._state
        for res in state.resources.values():
            if ((res.group, res.version, res.kind) == (st.group, st.version, st.kind)
                    and self._lookup(state, res, st.namespace, st.name) is st):
                return res
        return None

    def _commit(self, old: _Stored | None, obj: Obj, res: _Res | None) -> _Stored:
        """Store `obj` (replacing `old`) with a new resourceVersion; under the lock. The served state is updated
        copy-on-write, so that requests being answered from the previous state keep a consistent snapshot."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        new = _Stored(obj)
        if old is not None:
            self._stored.pop((old.api_version, old.kind, old.namespace or "", old.name), None)
        self._stored[(new.api_version, new.kind, new.namespace or "", new.name)] = new
        state = self._state
        if res is None or new.kind == "CustomResourceDefinition" or (res.namespaced and new.namespace is None):
            with _gc_paused():
                self._state = _build_state(self._stored.values(), self._rv)
            return new
        rkey = (res.group, res.version, res.plural)
        keys, items = state.buckets.get(rkey, ([], []))
        keys, items = list(keys), list(items)
        key = f"{new.namespace}/{new.name}" if res.namespaced else new.name
        i = bisect.bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            items[i] = new
        else:
            keys.insert(i, key)
            items.insert(i, new)
        self._state = _State(self._rv, state.resources, {**state.buckets, rkey: (keys, items)}, state.groups)
        return new

    def objects(self) -> list[Obj]:
        """The objects as served (copies are not made: do not modify them)."""
        return [st.obj for st in self._stored.values()]

    @property
    def resource_version(self) -> str:
        """The current list resourceVersion."""
        return str(self._state.rv)

    def set_logs(self, logs: Mapping[LogKey, str]) -> None:
        """Replace the pod logs; `now` moves to the newest line + 1 s unless it was given."""
        fallback = _datetime_ns(self._given_now or dt.datetime.now(dt.UTC))
        parsed = {key: _parse_log(text, fallback) for key, text in logs.items()}
        containers: dict[tuple[str, str], set[str]] = {}
        for namespace, pod, container, _previous in parsed:
            containers.setdefault((namespace, pod), set()).add(container)
        newest = max((line.ns for lines in parsed.values() for line in lines), default=None)
        with self._lock:
            self._logs = parsed
            self._log_containers = containers
            if self._given_now is None:
                self.now = (_ns_datetime(newest + 1_000_000_000) if newest is not None
                            else dt.datetime.now(dt.UTC))

    # ---- recording and faults

    @property
    def requests(self) -> list[Request]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_matching(self, pattern: str, method: str | None = None) -> list[Request]:
        """The requests whose `path?query` (decoded or raw) matches `pattern` (re.search), of `method` if given."""
        regex = re.compile(pattern)
        return [r for r in self.requests if method in (None, r.method)
                and any(regex.search(t) for t in _match_texts(r))]

    def clear_requests(self) -> None:
        """Forget the requests recorded so far."""
        with self._lock:
            self._requests.clear()

    def fault(self, pattern: str, kind: FaultKind, *, times: int = 1, status: int | None = None,
              retry_after: float | None = None, after_pages: int = 0, seconds: float = 0.0,
              message: str | None = None, method: str | None = None, body: bytes = b"",
              content_type: str = "application/json", headers: Mapping[str, str] | None = None,
              token: str | None = None) -> Fault:
        """Inject a failure into the next `times` requests (-1: all) whose `path?query` matches `pattern` and, when
        `method` is given ("PATCH", "POST", "GET"...), whose method is that one.

        `pattern` is searched in the decoded `path?query` and in the raw request target. Kinds:
        "status" (default 500; `message` defaults to the real API's, e.g. the RBAC sentence for 403, the
        "Operation cannot be fulfilled" one for a 409 on an object; a failed write changes nothing),
        "gone" (410 Expired on list requests whose continue token is for a page > `after_pages`),
        "reset" (close the connection with a TCP RST, no answer; a write is not applied),
        "hang" (wait `seconds`, then answer normally: a write is applied after the wait, even when the client has
        given up by then, as a slow API server would),
        "html" (an HTML page with status 200 unless `status` is given, as a proxy in front of the API would),
        "drip" (answer normally, headers at once, then the body one byte every `seconds`: a read timeout never
        fires),
        "body" (answer `body` as it is, with `status` (200), `content_type` and `headers`, e.g. Content-Encoding),
        "loop" (a list's first page whose continue token is `token` every time, or a new one each time when None:
        the list never ends),
        "nolimit" (answer a log as if `limitBytes` had not been given).
        A "hang", "drip" or "nolimit" fault changes the answer another fault, or the server, gives.
        """
        if kind not in _FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}")
        fault = Fault(re.compile(pattern), kind, times, status, retry_after, after_pages, seconds, message,
                      method=method.upper() if method else None, body=body, content_type=content_type,
                      headers=dict(headers or {}), token=token)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove every fault."""
        with self._lock:
            self._faults.clear()

    # ---- request handling

    def _handle(self, handler: _Handler, method: str) -> None:
        try:
            response = self._respond(handler, method)
        except Exception:
            self.errors.append(traceback.format_exc())
            response = _status(500, "Internal error occurred: the fake API server failed, see api.errors")
        if response is _RESET:
            with contextlib.suppress(OSError):
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                handler.connection.close()
            handler.close_connection = True
            return
        try:
            _write(handler, response, head=method == "HEAD", stopping=self._stopping)
        except OSError:
            handler.close_connection = True

    def _respond(self, handler: _Handler, method: str) -> _Response:
        split = urlsplit(handler.path)
        segments = [unquote(s) for s in split.path.split("/") if s]
        path = "/" + "/".join(segments)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        body = _read_body(handler)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request = Request(method, path, query, headers, handler.path, body)
        with self._lock:
            self._requests.append(request)
        state = self._state
        route = _route(state, segments)

        modifiers, fault = self._take_faults(request, route)
        kinds = {m.kind: m for m in modifiers}
        for hang in (m for m in modifiers if m.kind == "hang"):
            self._stopping.wait(hang.seconds)
        if "nolimit" in kinds:
            request = dataclasses.replace(request, query={k: v for k, v in query.items() if k != "limitBytes"})
        response = self._answer(request, route, state, fault)
        if "drip" in kinds and response is not _RESET:
            response.drip = kinds["drip"].seconds
        return response

    def _answer(self, request: Request, route: _Route, state: _State, fault: Fault | None) -> _Response:
        if fault is not None:
            return self._fault_response(fault, request, route, state)
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return _status(401, "Unauthorized")
        if request.method not in ("GET", "HEAD"):
            if self.writable and request.method in ("PATCH", "POST"):
                return self._serve_write(request, route)
            return _status(405)
        return self._serve(request, route, state)

    def _serve_write(self, request: Request, route: _Route) -> _Response:
        res = route.res
        dry_run = request.query.get("dryRun")
        if dry_run is not None and dry_run != "All":
            return _bad_request(f'dryRun: Unsupported value: "{dry_run}": supported values: "All"')
        if request.method == "PATCH" and route.kind == "get" and res is not None:
            response, written = self._patch(request, route, res, dry_run is not None)
        elif (request.method == "POST" and route.kind == "list" and res is not None
              and (route.namespace is not None or not res.namespaced)):
            response, written = self._create(request, route, res, dry_run is not None)
        elif route.kind == "notfound":
            return _not_found()
        else:
            return _status(405)
        if written is not None:
            with self._lock:
                hooks = list(self._on_write)
            for hook in hooks:
                try:
                    hook(request.method, request.path, _copy_json(written))
                except Exception:
                    self.errors.append(traceback.format_exc())
        return response

    def _patch(self, request: Request, route: _Route, res: _Res, dry_run: bool) -> tuple[_Response, Obj | None]:
        media = request.content_type
        accepted = [JSON_PATCH, MERGE_PATCH]
        if (res.group, res.plural) in _BUILTIN_RESOURCES:
            accepted.append(STRATEGIC_MERGE_PATCH)
        if media == APPLY_PATCH:
            return _status(415, "server-side apply (application/apply-patch+yaml) is not supported by the fake API "
                                "server"), None
        if media not in accepted:
            return _unsupported_media(accepted), None
        try:
            patch = json.loads(request.body)
        except ValueError as exc:
            return _bad_request(f"error decoding patch: {exc}"), None
        with self._lock:
            st = self._lookup(self._state, res, route.namespace, route.name)
            if st is None:
                return _object_not_found(res, route.name), None
            old_meta = st.obj["metadata"]
            try:
                patched = (json_patch if media == JSON_PATCH else merge_patch)(_copy_json(st.obj), patch)
            except _PatchError as exc:
                return _status(422, "the server rejected our request due to an error in our request",
                               details={"causes": [{"message": str(exc)}]}), None
            problem = _check_patched(patched, st, route)
            if problem is not None:
                return _bad_request(problem), None
            meta = patched["metadata"]
            version = meta.get("resourceVersion")
            if not isinstance(version, str | None):
                return _bad_request("json: cannot unmarshal number into Go struct field ObjectMeta.metadata."
                                    "resourceVersion of type string"), None
            if version and version != old_meta.get("resourceVersion"):
                return _conflict(res, route.name), None
            for key in ("uid", "creationTimestamp", "resourceVersion"):
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
            if patched == st.obj:  # nothing changes: no write, the resourceVersion stays
                return _Response(200, st.full_json()), (None if dry_run else st.obj)
            generation = old_meta.get("generation")
            if isinstance(generation, int) and _spec_part(patched) != _spec_part(st.obj):
                meta["generation"] = generation + 1
            if dry_run:
                return _Response(200, _Stored(patched).full_json()), None
            stored = self._commit(st, patched, res)
            return _Response(200, stored.full_json()), stored.obj

    def _create(self, request: Request, route: _Route, res: _Res, dry_run: bool) -> tuple[_Response, Obj | None]:
        media = request.content_type
        try:
            if media in ("", "application/json"):
                obj = json.loads(request.body)
            elif media == "application/yaml":
                obj = yaml.safe_load(request.body)
            else:
                return _unsupported_media(["application/json", "application/yaml"]), None
        except (ValueError, yaml.YAMLError) as exc:
            return _bad_request(f"the object provided is unrecognized (must be of type {res.kind}): {exc}"), None
        if not isinstance(obj, dict) or not isinstance(obj.setdefault("metadata", {}), dict):
            return _bad_request(f"the object provided is unrecognized (must be of type {res.kind})"), None
        if obj.setdefault("apiVersion", res.group_version) != res.group_version:
            return _bad_request(f"the API version in the data ({obj['apiVersion']}) does not match the expected API "
                                f"version ({res.group_version})"), None
        if obj.setdefault("kind", res.kind) != res.kind:
            return _bad_request(f"the kind in the data ({obj['kind']}) does not match the expected kind "
                                f"({res.kind})"), None
        meta = obj["metadata"]
        if res.namespaced:
            if meta.get("namespace") not in (None, "", route.namespace):
                return _bad_request("the namespace of the provided object does not match the namespace sent on the "
                                    "request"), None
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            return _bad_request("resourceVersion should not be set on objects to be created"), None
        name, generate = meta.get("name"), meta.get("generateName")
        if not (isinstance(name, str) and name):
            if not (isinstance(generate, str) and generate):
                return _unprocessable(res, "", "metadata.name", "FieldValueRequired",
                                      "Required value: name or generateName is required"), None
            name = generate[:58] + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
            meta["name"] = name
        involved = obj.get("involvedObject")
        if (res.group, res.plural) == ("", "events") and isinstance(involved, dict) \
                and involved.get("namespace") not in (None, "", route.namespace):
            value = involved["namespace"]
            return _unprocessable(res, name, "involvedObject.namespace", "FieldValueInvalid",
                                  f'Invalid value: "{value}": does not match event.namespace'), None
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = format_time_seconds(dt.datetime.now(dt.UTC))
        if (res.group, res.plural) not in _BUILTIN_RESOURCES:
            meta["generation"] = 1
        copy = _private_copy(obj)
        if copy is None:
            return _bad_request(f"the object provided is unrecognized (must be of type {res.kind})"), None
        with self._lock:
            if self._lookup(self._state, res, route.namespace, name) is not None:
                return _already_exists(res, name), None
            if dry_run:
                return _Response(201, _Stored(copy).full_json()), None
            stored = self._commit(None, copy, res)
            return _Response(201, stored.full_json()), stored.obj

    def _take_faults(self, request: Request, route: _Route) -> tuple[list[Fault], Fault | None]:
        texts = _match_texts(request)
        modifiers = []
        with self._lock:
            for fault in self._faults:
                if (not fault.active or fault.method not in (None, request.method)
                        or not any(fault.pattern.search(t) for t in texts)):
                    continue
                if fault.kind == "gone":
                    page = None
                    if route.kind == "list" and request.query.get("continue"):
                        with contextlib.suppress(ValueError):
                            page = _decode_continue(request.query["continue"]).page
                    if page is None or page <= fault.after_pages:
                        continue
                fault.fired += 1
                if fault.kind in _MODIFIERS:
                    modifiers.append(fault)
                    continue
                return modifiers, fault
        return modifiers, None

    def _fault_response(self, fault: Fault, request: Request, route: _Route, state: _State) -> _Response:
        if fault.kind == "reset":
            return _RESET
        if fault.kind == "html":
            code = fault.status or 200
            return _Response(code, _html_page(code), "text/html; charset=utf-8", {"Server": "nginx"})
        if fault.kind == "body":
            return _Response(fault.status or 200, fault.body, fault.content_type, dict(fault.headers))
        if fault.kind == "loop":
            first = self._list(dataclasses.replace(request, query={
                k: v for k, v in request.query.items() if k != "continue"}), route, state)
            page = json.loads(first.body)
            page["metadata"]["continue"] = fault.token or secrets.token_urlsafe(12)
            return _json(200, page)
        if fault.kind == "gone":
            token = _decode_continue(request.query["continue"])
            fresh = _encode_continue(_Token(-1, token.start, token.page, token.resource))
            return _status(410, fault.message or INCONSISTENT_CONTINUE, metadata={"continue": fresh})
        code = fault.status or 500
        message, details = fault.message, None
        if code == 403:
            forbidden, details = self._forbidden(request, route)
            message = message or forbidden
        elif code == 404 and route.res is not None and route.name:
            message = message or f'{route.res.group_resource} "{route.name}" not found'
            details = {"name": route.name, "group": route.res.group, "kind": route.res.plural}
        elif code == 409 and route.res is not None and route.name:
            message = message or _conflict_message(route.res, route.name)
            details = {"name": route.name, "group": route.res.group, "kind": route.res.plural}
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = f"{fault.retry_after:g}"
            details = {**(details or {}), "retryAfterSeconds": max(1, math.ceil(fault.retry_after))}
        if details is not None:
            details = {k: v for k, v in details.items() if v != ""}
        return _json(code, status_object(code, message, details=details), headers)

    def _forbidden(self, request: Request, route: _Route) -> tuple[str, dict[str, Any]]:
        verb = _VERBS.get(request.method, request.method.lower())
        if route.kind == "list" and verb == "get":
            verb = "watch" if request.query.get("watch") in ("true", "1") else "list"
        res = route.res
        if res is None:
            return f'forbidden: User "{self.user}" cannot {verb} path "{request.path}"', {}
        resource = f"{res.plural}/{route.sub[0]}" if route.sub else res.plural
        subject = f'{res.group_resource} "{route.name}"' if route.name else res.group_resource
        scope = f'in the namespace "{route.namespace}"' if route.namespace else "at the cluster scope"
        message = (f'{subject} is forbidden: User "{self.user}" cannot {verb} resource "{resource}" '
                   f'in API group "{res.group}" {scope}')
        return message, {"name": route.name, "group": res.group, "kind": res.plural}

    def _serve(self, request: Request, route: _Route, state: _State) -> _Response:
        kind = route.kind
        if kind == "version":
            return _json(200, self.version)
        if kind in ("healthz", "livez", "readyz"):
            return _Response(200, b"ok", "text/plain; charset=utf-8")
        if kind == "metrics":
            return _Response(200, self.metrics.encode(), "text/plain; version=0.0.4; charset=utf-8")
        if kind == "root":
            return _json(200, {"paths": self._paths(state)})
        if kind == "api":
            return _json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]})
        if kind == "apis":
            return _json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                _api_group(g, v) for g, v in sorted(state.groups.items()) if g]})
        if kind == "group":
            if not route.group or route.group not in state.groups:
                return _not_found()
            return _json(200, {"kind": "APIGroup", "apiVersion": "v1",
                               **_api_group(route.group, state.groups[route.group])})
        if kind == "discovery":
            return _json(200, _resource_list(state, route.group, route.version, writable=self.writable))
        if kind == "list":
            return self._list(request, route, state)
        if kind == "get":
            return self._get(route, state)
        if kind == "log":
            return self._log(request, route, state)
        if kind == "proxy":
            return self._proxy(route, state)
        return _not_found()

    def _paths(self, state: _State) -> list[str]:
        paths = {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/metrics", "/version"}
        for group, versions in state.groups.items():
            if group:
                paths.add(f"/apis/{group}")
                paths.update(f"/apis/{group}/{v}" for v in versions)
        return sorted(paths)

    def _lookup(self, state: _State, res: _Res, namespace: str | None, name: str) -> _Stored | None:
        keys, items = state.buckets.get((res.group, res.version, res.plural), ([], []))
        key = f"{namespace}/{name}" if res.namespaced else name
        i = bisect.bisect_left(keys, key)
        return items[i] if i < len(keys) and keys[i] == key else None

    def _get(self, route: _Route, state: _State) -> _Response:
        assert route.res is not None
        st = self._lookup(state, route.res, route.namespace, route.name)
        if st is None:
            return _object_not_found(route.res, route.name)
        return _Response(200, st.full_json())

    def _list(self, request: Request, route: _Route, state: _State) -> _Response:
        res = route.res
        assert res is not None
        query = request.query
        if query.get("watch") in ("true", "1"):
            return _status(405, "watch is not supported by the fake API server")
        try:
            labels = parse_label_selector(query.get("labelSelector", ""))
            fields = _parse_field_selector(query.get("fieldSelector", ""), res)
            limit = _int_param(query, "limit") or 0
        except ValueError as exc:
            return _status(400, str(exc))
        keys, items = state.buckets.get((res.group, res.version, res.plural), ([], []))
        lo, hi = 0, len(keys)
        if route.namespace is not None:
            lo = bisect.bisect_left(keys, route.namespace + "/")
            hi = bisect.bisect_left(keys, route.namespace + "0")  # "0" sorts right after "/"
        page = 1
        continue_ = query.get("continue", "")
        if continue_:
            if query.get("resourceVersion"):
                return _status(400, "specifying resource version is not allowed when using continue")
            try:
                token = _decode_continue(continue_)
            except ValueError as exc:
                return _status(400, str(exc))
            if token.resource != res.ident:
                return _status(400, "continue key is not valid: the token is for another resource")
            if token.rv not in (-1, state.rv):  # the fake compacts at once: any change expires older tokens
                fresh = _encode_continue(_Token(-1, token.start, token.page, token.resource))
                return _status(410, INCONSISTENT_CONTINUE, metadata={"continue": fresh})
            lo = max(lo, bisect.bisect_left(keys, token.start, lo, hi))
            page = token.page
        elif query.get("resourceVersion") == "0":
            limit = 0  # served from the watch cache, which ignores limit before v1.31
        selected: list[_Stored] = []
        i = lo
        filtering = bool(labels or fields)
        while i < hi and not (limit > 0 and len(selected) >= limit):
            st = items[i]
            i += 1
            if labels and not _labels_match(st.labels, labels):
                continue
            if fields and not all((_field_value(st, f) == v) != neg for f, neg, v in fields):
                continue
            selected.append(st)
        meta: Obj = {"resourceVersion": str(state.rv)}
        if limit > 0 and len(selected) >= limit and i < hi:
            last = keys[i - 1]
            meta["continue"] = _encode_continue(_Token(state.rv, last + "\x00", page + 1, res.ident))
            if not filtering:
                meta["remainingItemCount"] = hi - i
        head = _dumps({"kind": f"{res.kind}List", "apiVersion": res.group_version, "metadata": meta})
        body = b"".join((head[:-1], b',"items":[', b",".join(st.item_json() for st in selected), b"]}"))
        return _Response(200, body)

    def _log(self, request: Request, route: _Route, state: _State) -> _Response:
        assert route.res is not None and route.namespace is not None
        namespace, pod, query = route.namespace, route.name, request.query
        try:
            previous = _bool_param(query, "previous")
            timestamps = _bool_param(query, "timestamps")
            tail = _int_param(query, "tailLines")
            limit_bytes = _int_param(query, "limitBytes")
            since_seconds = _int_param(query, "sinceSeconds")
            since_time = None
            if "sinceTime" in query:
                since_time = parse_timestamp(query["sinceTime"])
                if since_time is None:
                    raise ValueError(f'parsing time "{query["sinceTime"]}" as "2006-01-02T15:04:05Z07:00": '
                                     "cannot parse")
        except ValueError as exc:
            return _status(400, str(exc))
        for name, value, minimum in (("tailLines", tail, 0), ("limitBytes", limit_bytes, 1),
                                     ("sinceSeconds", since_seconds, 1)):
            if value is not None and value < minimum:
                relation = "greater than or equal to 0" if minimum == 0 else "greater than 0"
                return _invalid(pod, name, value, f"must be {relation}")
        if since_seconds is not None and since_time is not None:
            return _invalid(pod, "sinceSeconds", since_seconds,
                            "at most one of `sinceTime` or `sinceSeconds` may be specified")

        pod_obj = self._lookup(state, route.res, namespace, pod)
        logged = self._log_containers.get((namespace, pod), set())
        if pod_obj is None and not logged:
            return _object_not_found(route.res, pod)
        spec = pod_obj.obj.get("spec") if pod_obj is not None else None
        spec = spec if isinstance(spec, dict) else {}
        main = [c.get("name") for c in spec.get("containers") or [] if isinstance(c, dict)]
        others = [c.get("name") for key in ("initContainers", "ephemeralContainers")
                  for c in spec.get(key) or [] if isinstance(c, dict)]
        container = query.get("container", "")
        if not container:
            choices = main if pod_obj is not None else sorted(logged)
            if len(choices) != 1:
                return _status(400, f"a container name must be specified for pod {pod}, choose one of: "
                                    f"[{' '.join(str(c) for c in choices)}]")
            container = str(choices[0])
        elif pod_obj is not None and container not in main and container not in others and container not in logged:
            return _status(400, f"container {container} is not valid for pod {pod}")
        lines = self._logs.get((namespace, pod, container, previous))
        if lines is None:
            if previous:
                return _status(400, f'previous terminated container "{container}" in pod "{pod}" not found')
            lines = []
        if tail is not None:
            lines = lines[len(lines) - tail:] if tail else []
        if since_seconds is not None:
            since_time = _datetime_ns(self.now) - since_seconds * 1_000_000_000
        if since_time is not None:
            lines = [line for line in lines if line.ns >= since_time]
        text = "".join(f"{line.stamp} {line.text}\n" if timestamps else f"{line.text}\n" for line in lines)
        body = text.encode("utf-8", "surrogateescape")
        if limit_bytes is not None:
            body = body[:limit_bytes]
        return _Response(200, body, "text/plain")

    def _proxy(self, route: _Route, state: _State) -> _Response:
        assert route.res is not None
        node = route.name
        if node not in self.node_clock_offsets and self._lookup(state, route.res, None, node) is None:
            return _object_not_found(route.res, node)
        date = formatdate(time.time() + self.node_clock_offsets.get(node, 0.0), usegmt=True)
        if "/".join(route.sub[1:]) == "healthz":
            return _Response(200, b"ok", "text/plain; charset=utf-8", date=date)
        return _Response(404, b"404 page not found\n", "text/plain; charset=utf-8", date=date)


def _check_patched(patched: Any, st: _Stored, route: _Route) -> str | None:
    """Why a patched object cannot replace the stored one (the real API's 400 messages), or None."""
    if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
        return f"json: cannot unmarshal {type(patched).__name__} into Go value of type {st.kind}"
    meta = patched["metadata"]
    if patched.get("apiVersion") != st.api_version:
        return (f"the API version in the data ({patched.get('apiVersion')}) does not match the expected API version "
                f"({st.api_version})")
    if patched.get("kind") != st.kind:
        return f"the kind in the data ({patched.get('kind')}) does not match the expected kind ({st.kind})"
    if meta.get("name") != route.name:
        return f"the name of the object ({meta.get('name') or ''}) does not match the name on the URL ({route.name})"
    if (meta.get("namespace") or None) != (st.obj["metadata"].get("namespace") or None):
        return (f"the namespace of the object ({meta.get('namespace') or ''}) does not match the namespace on the "
                f"request ({route.namespace or ''})")
    return None


def _spec_part(obj: Obj) -> Obj:
    """What a change of bumps metadata.generation: all but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _read_body(handler: _Handler) -> bytes:
    """The request body: Content-Length bytes, or a chunked body de-chunked."""
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        chunks: list[bytes] = []
        while True:
            size = int(handler.rfile.readline(65537).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline(65537)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length > 0 else b""


def _match_texts(request: Request) -> tuple[str, ...]:
    raw_query = urlsplit(request.target).query
    decoded = f"{request.path}?{unquote_plus(raw_query)}" if raw_query else request.path
    return (decoded, request.target)


def _object_not_found(res: _Res, name: str) -> _Response:
    details = {"name": name, "group": res.group, "kind": res.plural}
    return _status(404, f'{res.group_resource} "{name}" not found',
                   details={k: v for k, v in details.items() if v})


def _invalid(pod: str, name: str, value: Any, detail: str) -> _Response:
    message = f'PodLogOptions "{pod}" is invalid: {name}: Invalid value: {value}: {detail}'
    return _status(422, message, details={"name": pod, "kind": "PodLogOptions", "causes": [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: {value}: {detail}", "field": name}]})


def _api_group(group: str, versions: list[str]) -> Obj:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def _resource_list(state: _State, group: str, version: str, *, writable: bool = False) -> Obj:
    resources = []
    verbs = ["create", "get", "list", "patch", "watch"] if writable else ["get", "list", "watch"]
    for (g, v, plural), res in sorted(state.resources.items()):
        if (g, v) != (group, version):
            continue
        entry: Obj = {"name": plural, "singularName": res.kind.lower(), "namespaced": res.namespaced,
                      "kind": res.kind, "verbs": verbs}
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        resources.append(entry)
        if (group, plural) == ("", "pods"):
            resources.append({"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
                              "verbs": ["get"]})
        elif (group, plural) == ("", "nodes"):
            resources.append({"name": "nodes/proxy", "singularName": "", "namespaced": False,
                              "kind": "NodeProxyOptions", "verbs": ["create", "delete", "get", "patch", "update"]})
    out: Obj = {"kind": "APIResourceList"}
    if group:
        out["apiVersion"] = "v1"
    out["groupVersion"] = f"{group}/{version}" if group else version
    out["resources"] = resources
    return out


def _html_page(code: int) -> bytes:
    if code == 200:
        return (b"<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Sign in - Corporate "
                b"Access Proxy</title></head>\n<body>\n<h1>Sign in</h1>\n<p>Your session has expired. Please sign "
                b"in to continue.</p>\n<form method=\"post\" action=\"/oauth2/start\"><button>Sign in with SSO"
                b"</button></form>\n</body>\n</html>\n")
    title = f"{code} {_phrase(code)}".encode()
    return (b"<html>\r\n<head><title>" + title + b"</title></head>\r\n<body>\r\n<center><h1>" + title
            + b"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


_FLOW_SCHEMA = str(uuid.uuid4())
_PRIORITY_LEVEL = str(uuid.uuid4())


def _write(handler: _Handler, response: _Response, *, head: bool, stopping: threading.Event) -> None:
    headers = [("Audit-Id", str(uuid.uuid4())), ("Cache-Control", "no-cache, private"),
               ("Content-Type", response.content_type), ("Date", response.date or formatdate(usegmt=True))]
    if response.content_type == "application/json":
        headers += [("X-Kubernetes-Pf-Flowschema-Uid", _FLOW_SCHEMA),
                    ("X-Kubernetes-Pf-Prioritylevel-Uid", _PRIORITY_LEVEL)]
    headers += list(response.headers.items())
    headers.append(("Content-Length", str(len(response.body))))
    if handler.close_connection:
        headers.append(("Connection", "close"))
    lines = [f"HTTP/1.1 {response.status} {_phrase(response.status)}\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in headers]
    lines.append("\r\n")
    if not response.drip or head:
        handler.wfile.write("".join(lines).encode("latin-1") + (b"" if head else response.body))
        handler.wfile.flush()
        return
    handler.wfile.write("".join(lines).encode("latin-1"))
    handler.wfile.flush()
    for at in range(len(response.body)):
        if stopping.wait(response.drip):
            return
        handler.wfile.write(response.body[at:at + 1])
        handler.wfile.flush()


def _make_tls(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A CA and a server certificate for 127.0.0.1 (IP SAN) and the in-cluster names; the server context."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kubernetes-ca")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    names += [x509.DNSName(n) for n in ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                        "kubernetes.default.svc.cluster.local")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = directory / "ca.crt"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_file, key_file = directory / "apiserver.crt", directory / "apiserver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context, ca_file


# --------------------------------------------------------------------------------------------------------------
# Bundles, kubeconfigs, service accounts


_DOC_START = re.compile(r"(?m)^---(?=[ \t]|\r?$)")
_MAX_NODES = 1_000_000


class _TooBig(Exception):
    pass


def _expanded_size(node: Any, budget: int) -> int:
    """Nodes of a parsed document with aliases expanded; _TooBig past `budget` or on a cycle."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(value: Any) -> int:
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            return 1
        ident = id(value)
        if ident in memo:
            return memo[ident]
        if ident in active:
            raise _TooBig
        active.add(ident)
        total = 1
        for child in children:
            total += size(child)
            if total > budget:
                raise _TooBig
        active.discard(ident)
        memo[ident] = total
        return total

    return size(node)


def _normalize(value: Any) -> Any:
    """YAML-only values made JSON: times as metav1.Time strings, dates as ISO dates, keys as strings."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: _normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, (dt.date, bytes, set)):
        return _json_default(value)
    return value


def _read_documents(path: Path) -> list[Any]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    text = text.removeprefix("\ufeff")
    if path.suffix == ".json":
        try:
            return [json.loads(text)]
        except ValueError:
            return []
    docs: list[Any] = []
    for chunk in _DOC_START.split(text):  # one bad document does not lose the others
        try:
            docs.extend(yaml.load_all(chunk, Loader=yaml.CSafeLoader))
        except (yaml.YAMLError, RecursionError, ValueError):
            continue
    return docs


def _bundle_objects(path: Path) -> list[Obj]:
    out: list[Obj] = []
    for doc in _read_documents(path):
        if not isinstance(doc, dict):
            continue
        try:
            _expanded_size(doc, _MAX_NODES)
            flat = list(_flatten([doc]))
        except (_TooBig, RecursionError):
            continue
        for obj in flat:
            copy = _private_copy(_normalize(obj))
            if copy is not None:
                out.append(copy)
    return out


def load_bundle(path: Path, *, now: dt.datetime | None = None) -> tuple[list[Obj], dict[LogKey, str]]:
    """Objects and logs of a bundle directory in layout v1 (`objects/`, `logs/<ns>/<pod>/<container>[.previous].log`).

    Files that do not parse are skipped (one bad YAML document only loses itself; alias bombs are dropped).
    Log lines without a `--timestamps` prefix get one (see `with_timestamps`); `now` defaults to the bundle's
    `collectedAt`, else the current time.
    """
    root = Path(path)
    objects_dir = root / "objects"
    if not objects_dir.is_dir():
        raise ValueError(f"{root} has no objects/ folder: not a v1 bundle")
    if now is None:
        with contextlib.suppress(OSError, yaml.YAMLError, AttributeError, TypeError):
            meta = yaml.load((root / "bundle.yaml").read_text(), Loader=yaml.CSafeLoader)
            collected = meta.get("collectedAt")
            stamp = collected if isinstance(collected, dt.datetime) else parse_timestamp(str(collected))
            if isinstance(stamp, dt.datetime):
                now = stamp
            elif stamp is not None:
                now = _ns_datetime(stamp)
    now = now or dt.datetime.now(dt.UTC)
    objects: list[Obj] = []
    for file in sorted(objects_dir.rglob("*")):
        if file.suffix in (".yaml", ".yml", ".json") and not file.name.startswith(".") and file.is_file():
            objects.extend(_bundle_objects(file))
    logs: dict[LogKey, str] = {}
    for file in sorted((root / "logs").glob("*/*/*.log")):
        if not file.is_file():
            continue
        previous = file.name.endswith(".previous.log")
        container = file.name.removesuffix(".previous.log") if previous else file.name.removesuffix(".log")
        text = file.read_bytes().decode("utf-8", "surrogateescape")
        logs[(file.parent.parent.name, file.parent.name, container, previous)] = with_timestamps(text, now)
    return objects, logs


_UNREACHABLE_TOKEN = "fake-token-for-an-unreachable-server"


def write_kubeconfig(path: Path, contexts: Mapping[str, FakeApiServer | str], current: str,
                     namespace: str | None = None) -> Path:
    """Write a kubeconfig with one cluster, user and context per entry (a str is a server URL with a dummy token).

    Token auth; `certificate-authority` for TLS servers; never `insecure-skip-tls-verify`.
    """
    if current not in contexts:
        raise ValueError(f"current context {current!r} is not among {sorted(contexts)}")
    clusters, users, ctxs = [], [], []
    for name, target in contexts.items():
        cluster: Obj
        if isinstance(target, FakeApiServer):
            cluster = {"server": target.url}
            if target.ca_file is not None:
                cluster["certificate-authority"] = str(target.ca_file)
            token = target.token
        else:
            cluster, token = {"server": target}, _UNREACHABLE_TOKEN
        clusters.append({"name": name, "cluster": cluster})
        users.append({"name": name, "user": {"token": token}})
        context: Obj = {"cluster": name, "user": name}
        if namespace is not None:
            context["namespace"] = namespace
        ctxs.append({"name": name, "context": context})
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": clusters, "users": users,
              "contexts": ctxs, "current-context": current}
    path = Path(path)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def service_account_dir(tmp: Path, api: FakeApiServer, namespace: str = "argocd") -> tuple[Path, dict[str, str]]:
    """A pod's service account mount (`token`, `ca.crt`, `namespace`) for a running TLS fake, and the
    KUBERNETES_SERVICE_* environment variables that point at it."""
    if not api.tls or api.ca_file is None:
        raise ValueError("the in-cluster configuration is HTTPS only: start the fake with tls=True")
    directory = Path(tmp) / "serviceaccount"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(api.token)
    (directory / "ca.crt").write_bytes(api.ca_file.read_bytes())
    (directory / "namespace").write_text(namespace)
    port = str(api.port)
    return directory, {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port,
                       "KUBERNETES_SERVICE_PORT_HTTPS": port}


# --------------------------------------------------------------------------------------------------------------
# Synthetic installation


_SYN_TIME = calendar.timegm((2026, 11, 20, 15, 0, 0, 0, 0, 0))
_ARGOCD_IMAGE = "quay.io/argoproj/argocd:v2.13.1"
_REPO = "https://github.com/acme-corp/gitops-prod.git"
_TEAMS = ("payments", "checkout", "search", "catalog", "identity", "billing", "shipping", "orders", "ledger",
          "platform", "data", "ml", "growth", "support", "media", "risk", "fraud", "notify", "reports", "edge")
_SERVICES = ("api", "worker", "gateway", "web", "consumer", "scheduler", "indexer", "cache-warmer", "exporter",
             "sync", "auth", "cron", "router", "renderer", "uploader", "batch")


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _iso_micro(t_us: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_us // 1_000_000)) + f".{t_us % 1_000_000:06d}Z"


class _Syn:
    """Deterministic random helpers of the synthetic installation."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rv = 40_000_000

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def hexid(self, n: int = 64) -> str:
        return f"{self.rng.getrandbits(n * 4):0{n}x}"

    def meta(self, name: str, namespace: str | None, created: float, labels: Mapping[str, str] | None = None,
             **extra: Any) -> Obj:
        self.rv += self.rng.randrange(1, 500)
        out: Obj = {"creationTimestamp": _iso(created), "name": name}
        if namespace is not None:
            out["namespace"] = namespace
        out["resourceVersion"] = str(self.rv)
        out["uid"] = self.uid()
        if labels:
            out["labels"] = dict(labels)
        out.update(extra)
        return out


def _managed(manager: str, api_version: str, when: float, fields: Obj, subresource: str | None = None,
             operation: str = "Update") -> Obj:
    entry: Obj = {"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
                  "operation": operation}
    if subresource:
        entry["subresource"] = subresource
    entry["time"] = _iso(when)
    return entry


def _field_set(keys: Iterable[str]) -> Obj:
    return {".": {}, **{f"f:{k}": {} for k in keys}}


def _syn_container(name: str, image: str, port: int, args: list[str] | None = None) -> Obj:
    container: Obj = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
    if args:
        container["args"] = args
    container.update({
        "env": [{"name": "LOG_LEVEL", "value": "info"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4317"}],
        "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
        "readinessProbe": {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                           "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
        "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "readOnlyRootFilesystem": True, "runAsNonRoot": True},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    })
    return container


def _syn_pod(s: _Syn, name: str, namespace: str, labels: Mapping[str, str], owner: Obj, containers: list[Obj],
             node: tuple[str, str], start: float, *, crashing: bool = False, service_account: str = "default",
             init_containers: list[Obj] | None = None) -> Obj:
    volume = f"kube-api-access-{s.suffix(5)}"
    containers = [dict(c, volumeMounts=[{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                         "name": volume, "readOnly": True}]) for c in containers]
    statuses = []
    for c in containers:
        image_id = f"{c['image'].rsplit(':', 1)[0]}@sha256:{s.hexid()}"
        status: Obj = {"containerID": f"containerd://{s.hexid()}", "image": c["image"], "imageID": image_id,
                       "name": c["name"]}
        if crashing:
            last = _SYN_TIME - s.rng.randrange(10, 280)
            status.update({
                "lastState": {"terminated": {"containerID": f"containerd://{s.hexid()}", "exitCode": 1,
                                             "finishedAt": _iso(last), "reason": "Error",
                                             "startedAt": _iso(last - s.rng.randrange(1, 9))}},
                "ready": False, "restartCount": s.rng.randrange(5, 90), "started": False,
                "state": {"waiting": {"message": f"back-off 5m0s restarting failed container={c['name']} pod={name}",
                                      "reason": "CrashLoopBackOff"}}})
        else:
            status.update({"lastState": {}, "ready": True, "restartCount": 0, "started": True,
                           "state": {"running": {"startedAt": _iso(start + 2)}}})
        statuses.append(status)
    ready = "False" if crashing else "True"
    conditions: list[Obj] = [
        {"lastProbeTime": None, "lastTransitionTime": _iso(start + 2), "status": "True",
         "type": "PodReadyToStartContainers"},
        {"lastProbeTime": None, "lastTransitionTime": _iso(start), "status": "True", "type": "Initialized"},
        {"lastProbeTime": None, "lastTransitionTime": _iso(start + 9), "status": ready, "type": "Ready"},
        {"lastProbeTime": None, "lastTransitionTime": _iso(start + 9), "status": ready, "type": "ContainersReady"},
        {"lastProbeTime": None, "lastTransitionTime": _iso(start - 1), "status": "True", "type": "PodScheduled"},
    ]
    if crashing:
        for condition in conditions[2:4]:
            names = " ".join(c["name"] for c in containers)
            condition.update(message=f"containers with unready status: [{names}]", reason="ContainersNotReady")
    pod_ip = f"10.244.{s.rng.randrange(0, 64)}.{s.rng.randrange(2, 254)}"
    container_fields: Obj = {f'k:{{"name":"{c["name"]}"}}': {
        ".": {}, "f:env": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {},
        "f:readinessProbe": {}, "f:resources": {}, "f:securityContext": {}, "f:terminationMessagePath": {},
        "f:terminationMessagePolicy": {}} for c in containers}
    managed = [
        _managed("kube-controller-manager", "v1", start - 2, {
            "f:metadata": {"f:generateName": {}, "f:labels": _field_set(labels),
                           "f:ownerReferences": {".": {}, f'k:{{"uid":"{owner["uid"]}"}}': {}}},
            "f:spec": {"f:containers": container_fields, "f:dnsPolicy": {}, "f:enableServiceLinks": {},
                       "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                       "f:serviceAccount": {}, "f:serviceAccountName": {}, "f:terminationGracePeriodSeconds": {}}}),
        _managed("kubelet", "v1", start + 9, {"f:status": {
            "f:conditions": {f'k:{{"type":"{c["type"]}"}}': {".": {}, "f:lastProbeTime": {},
                                                              "f:lastTransitionTime": {}, "f:status": {},
                                                              "f:type": {}} for c in conditions},
            "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {},
            "f:podIPs": {".": {}, f'k:{{"ip":"{pod_ip}"}}': {".": {}, "f:ip": {}}}, "f:startTime": {}}},
            subresource="status"),
    ]
    generate = name.rsplit("-", 1)[0] + "-"
    metadata = s.meta(name, namespace, start - 2, labels, managedFields=managed, ownerReferences=[owner])
    if owner["kind"] == "ReplicaSet":
        metadata["generateName"] = generate
    spec: Obj = {"containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True}
    if init_containers:
        spec["initContainers"] = init_containers
    spec.update({
        "nodeName": node[0], "preemptionPolicy": "PreemptLowerPriority", "priority": 0, "restartPolicy": "Always",
        "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccount": service_account,
        "serviceAccountName": service_account, "terminationGracePeriodSeconds": 30,
        "tolerations": [{"effect": "NoExecute", "key": k, "operator": "Exists", "tolerationSeconds": 300}
                        for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")],
        "volumes": [{"name": volume, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace"}]}}]}}],
    })
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
        "status": {"conditions": conditions, "containerStatuses": statuses, "hostIP": node[1],
                   "hostIPs": [{"ip": node[1]}], "phase": "Running", "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
                   "qosClass": "Burstable", "startTime": _iso(start)},
    }


def _owner_ref(obj: Obj) -> Obj:
    return {"apiVersion": obj["apiVersion"], "blockOwnerDeletion": True, "controller": True, "kind": obj["kind"],
            "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}


def _syn_workload(s: _Syn, kind: str, name: str, namespace: str, labels: Mapping[str, str], replicas: int,
                  containers: list[Obj], created: float, *, ready: int | None = None) -> Obj:
    ready = replicas if ready is None else ready
    selector = {"app.kubernetes.io/name": labels["app.kubernetes.io/name"]}
    spec: Obj = {"replicas": replicas, "revisionHistoryLimit": 3, "selector": {"matchLabels": selector},
                 "template": {"metadata": {"creationTimestamp": None, "labels": dict(labels)},
                              "spec": {"containers": containers, "dnsPolicy": "ClusterFirst",
                                       "restartPolicy": "Always", "serviceAccountName": name,
                                       "terminationGracePeriodSeconds": 30}}}
    status: Obj = {"observedGeneration": 3, "replicas": replicas, "readyReplicas": ready}
    if kind == "Deployment":
        spec["strategy"] = {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"}
        available = "True" if ready == replicas else "False"
        status.update({"availableReplicas": ready, "updatedReplicas": replicas, "conditions": [
            {"lastTransitionTime": _iso(created + 40), "lastUpdateTime": _iso(created + 40),
             "message": "Deployment has minimum availability." if available == "True"
             else "Deployment does not have minimum availability.",
             "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable",
             "status": available, "type": "Available"},
            {"lastTransitionTime": _iso(created), "lastUpdateTime": _iso(created + 40),
             "message": f'ReplicaSet "{name}" has successfully progressed.', "reason": "NewReplicaSetAvailable",
             "status": "True", "type": "Progressing"}]})
    else:
        spec.update(serviceName=name, podManagementPolicy="OrderedReady")
        status.update(currentReplicas=replicas, updatedReplicas=replicas, availableReplicas=ready)
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": s.meta(name, namespace, created, labels, generation=3,
                               annotations={"deployment.kubernetes.io/revision": "3"} if kind == "Deployment"
                               else {}),
            "spec": spec, "status": status}


def _syn_replicaset(s: _Syn, deployment: Obj, pod_hash: str) -> Obj:
    meta = deployment["metadata"]
    labels = {**meta["labels"], "pod-template-hash": pod_hash}
    replicas = deployment["spec"]["replicas"]
    template = json.loads(json.dumps(deployment["spec"]["template"]))
    template["metadata"]["labels"]["pod-template-hash"] = pod_hash
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": s.meta(f"{meta['name']}-{pod_hash}", meta["namespace"],
                               _SYN_TIME - s.rng.randrange(3600, 86400 * 30), labels, generation=1,
                               annotations={"deployment.kubernetes.io/desired-replicas": str(replicas),
                                            "deployment.kubernetes.io/revision": "3"},
                               ownerReferences=[_owner_ref(deployment)]),
            "spec": {"replicas": replicas, "selector": {"matchLabels": {
                **deployment["spec"]["selector"]["matchLabels"], "pod-template-hash": pod_hash}},
                "template": template},
            "status": {"availableReplicas": deployment["status"].get("availableReplicas", 0),
                       "fullyLabeledReplicas": replicas, "observedGeneration": 1,
                       "readyReplicas": deployment["status"].get("readyReplicas", 0), "replicas": replicas}}


def _syn_service(s: _Syn, name: str, namespace: str, labels: Mapping[str, str], port: int) -> Obj:
    ip = f"172.20.{s.rng.randrange(0, 255)}.{s.rng.randrange(1, 254)}"
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": s.meta(name, namespace, _SYN_TIME - 86400 * 200, labels),
            "spec": {"clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
                     "ipFamilyPolicy": "SingleStack",
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": port}],
                     "selector": {"app.kubernetes.io/name": labels["app.kubernetes.io/name"]},
                     "sessionAffinity": "None", "type": "ClusterIP"},
            "status": {"loadBalancer": {}}}


def _syn_node(s: _Syn, name: str, ip: str, index: int) -> Iterator[Obj]:
    heartbeat_us = (_SYN_TIME - s.rng.randrange(1, 30)) * 1_000_000
    beat = _iso(heartbeat_us / 1_000_000)
    conditions = [
        {"lastHeartbeatTime": beat, "lastTransitionTime": _iso(_SYN_TIME - 86400 * 9), "message": message,
         "reason": reason, "status": status, "type": kind}
        for kind, status, reason, message in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))]
    created = _SYN_TIME - 86400 * s.rng.randrange(10, 90)
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "node.kubernetes.io/instance-type": "m6i.2xlarge", "topology.kubernetes.io/region": "eu-west-1",
              "topology.kubernetes.io/zone": f"eu-west-1{'abc'[index % 3]}"}
    managed = [
        _managed("kubelet", "v1", created, {"f:metadata": {"f:labels": _field_set(labels)}}),
        _managed("kubelet", "v1", heartbeat_us / 1_000_000, {"f:status": {
            "f:conditions": {f'k:{{"type":"{c["type"]}"}}': {"f:lastHeartbeatTime": {}} for c in conditions},
            "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}, subresource="status"),
    ]
    node: Obj = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": s.meta(name, None, created, labels, managedFields=managed,
                           annotations={"node.alpha.kubernetes.io/ttl": "0",
                                        "volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
        "spec": {"podCIDR": f"10.244.{index % 256}.0/24",
                 "providerID": f"aws:///eu-west-1{'abc'[index % 3]}/i-0{s.hexid(16)}"},
        "status": {"addresses": [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
                   "allocatable": {"cpu": "7910m", "memory": "31003064Ki", "pods": "110"},
                   "capacity": {"cpu": "8", "memory": "32498680Ki", "pods": "110"},
                   "conditions": conditions, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                   "nodeInfo": {"architecture": "amd64", "bootID": s.uid(),
                                "containerRuntimeVersion": "containerd://1.7.22",
                                "kernelVersion": "6.1.112-122.189.amzn2023.x86_64", "kubeProxyVersion": "v1.29.4",
                                "kubeletVersion": "v1.29.4", "machineID": s.hexid(32), "operatingSystem": "linux",
                                "osImage": "Amazon Linux 2023", "systemUUID": s.uid()}},
    }
    yield node
    renew_us = (_SYN_TIME - s.rng.randrange(1, 10)) * 1_000_000 + s.rng.randrange(0, 1_000_000)
    yield {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": s.meta(name, "kube-node-lease", created, None, managedFields=[
            _managed("kubelet", "coordination.k8s.io/v1", renew_us // 1_000_000, {
                "f:metadata": {"f:ownerReferences": {".": {}, f'k:{{"uid":"{node["metadata"]["uid"]}"}}': {}}},
                "f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}, "f:renewTime": {}}})],
            ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": name,
                              "uid": node["metadata"]["uid"]}]),
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": _iso_micro(renew_us)},
    }


_ARGOCD_COMPONENTS: tuple[tuple[str, str, str, int, str, str, int, bool], ...] = (
    # name, component, kind, replicas, container, image, port, init copyutil
    ("argocd-server", "server", "Deployment", 1, "argocd-server", _ARGOCD_IMAGE, 8080, False),
    ("argocd-repo-server", "repo-server", "Deployment", 2, "argocd-repo-server", _ARGOCD_IMAGE, 8081, True),
    ("argocd-application-controller", "application-controller", "StatefulSet", 1, "argocd-application-controller",
     _ARGOCD_IMAGE, 8082, False),
    ("argocd-applicationset-controller", "applicationset-controller", "Deployment", 1,
     "argocd-applicationset-controller", _ARGOCD_IMAGE, 7000, False),
    ("argocd-redis", "redis", "Deployment", 1, "redis", "public.ecr.aws/docker/library/redis:7.0.15-alpine", 6379,
     False),
    ("argocd-dex-server", "dex-server", "Deployment", 1, "dex", "ghcr.io/dexidp/dex:v2.41.1", 5556, True),
)


def _syn_argocd(s: _Syn, nodes: list[tuple[str, str]]) -> Iterator[Obj]:
    created = _SYN_TIME - 86400 * 400
    yield {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": s.meta("argocd-cm", "argocd", created, {"app.kubernetes.io/name": "argocd-cm",
                                                                 "app.kubernetes.io/part-of": "argocd"}),
           "data": {"url": "https://argocd.acme.io", "timeout.reconciliation": "180s",
                    "application.instanceLabelKey": "argocd.argoproj.io/instance",
                    "resource.exclusions": "- apiGroups:\n  - cilium.io\n  kinds:\n  - CiliumIdentity\n"
                                           "  clusters:\n  - '*'\n",
                    "admin.enabled": "false"}}
    yield {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": s.meta("argocd-cmd-params-cm", "argocd", created,
                              {"app.kubernetes.io/name": "argocd-cmd-params-cm",
                               "app.kubernetes.io/part-of": "argocd"}),
           "data": {"controller.status.processors": "50", "controller.operation.processors": "25",
                    "reposerver.parallelism.limit": "10", "server.insecure": "true"}}
    yield {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": s.meta("argocd-secret", "argocd", created, {"app.kubernetes.io/name": "argocd-secret",
                                                                     "app.kubernetes.io/part-of": "argocd"}),
           "data": {"server.secretkey": base64.b64encode(s.hexid(32).encode()).decode(),
                    "webhook.github.secret": base64.b64encode(s.hexid(20).encode()).decode()}}
    for index, (name, component, kind, replicas, container, image, port, copyutil) in enumerate(_ARGOCD_COMPONENTS):
        labels = {"app.kubernetes.io/component": component, "app.kubernetes.io/name": name,
                  "app.kubernetes.io/part-of": "argocd"}
        containers = [_syn_container(container, image, port, [f"/usr/local/bin/{name}"] if "argocd" in image
                                     else None)]
        workload = _syn_workload(s, kind, name, "argocd", labels, replicas, containers, created + index)
        yield workload
        if kind == "StatefulSet":
            owner, names = workload, [f"{name}-{k}" for k in range(replicas)]
            pod_labels = {**labels, "statefulset.kubernetes.io/pod-name": names[0]}
        else:
            pod_hash = s.suffix(10)
            replicaset = _syn_replicaset(s, workload, pod_hash)
            yield replicaset
            owner, names = replicaset, [f"{name}-{pod_hash}-{s.suffix(5)}" for _ in range(replicas)]
            pod_labels = {**labels, "pod-template-hash": pod_hash}
        yield _syn_service(s, name, "argocd", labels, port)
        init = [{"name": "copyutil", "image": _ARGOCD_IMAGE, "command": ["/bin/cp", "-n", "/usr/local/bin/argocd",
                                                                         "/var/run/argocd/argocd-cmp-server"]}]
        for k, pod_name in enumerate(names):
            yield _syn_pod(s, pod_name, "argocd", pod_labels, _owner_ref(owner), containers,
                           nodes[(index + k) % len(nodes)], _SYN_TIME - 86400 * 3 - index * 60,
                           service_account=name, init_containers=init if copyutil else None)
    yield {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
           "metadata": s.meta("default", "argocd", created),
           "spec": {"clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                    "destinations": [{"namespace": "*", "server": "*"}], "sourceRepos": ["*"]}}


def _syn_application(s: _Syn, name: str, namespace: str, health: str, sync: str, images: list[str]) -> Obj:
    revision = s.hexid(40)
    source = {"path": f"apps/{name}/overlays/prod", "repoURL": _REPO, "targetRevision": "HEAD"}
    destination = {"namespace": namespace, "server": "https://kubernetes.default.svc"}
    deployed = _SYN_TIME - s.rng.randrange(600, 86400 * 5)
    dep_health: Obj = {"status": health}
    if health == "Degraded":
        dep_health["message"] = f'Deployment "{name}" exceeded its progress deadline'
    resources: list[Obj] = [
        {"group": "apps", "health": dep_health, "kind": "Deployment", "name": name, "namespace": namespace,
         "status": sync, "version": "v1"},
        {"health": {"status": "Healthy"}, "kind": "Service", "name": name, "namespace": namespace,
         "status": "Synced", "version": "v1"},
    ]
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": s.meta(name, "argocd", _SYN_TIME - 86400 * s.rng.randrange(30, 400),
                           {"team": namespace.split("-")[0]}, finalizers=["resources-finalizer.argocd.argoproj.io"],
                           generation=s.rng.randrange(100, 90_000)),
        "spec": {"destination": destination, "project": "default", "source": source,
                 "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                                "retry": {"backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"},
                                          "limit": 5},
                                "syncOptions": ["CreateNamespace=true"]}},
        "status": {
            "controllerNamespace": "argocd",
            "health": {"lastTransitionTime": _iso(deployed + 60), "status": health},
            "history": [{"deployStartedAt": _iso(deployed - 5), "deployedAt": _iso(deployed), "id": 0,
                         "initiatedBy": {"automated": True}, "revision": revision, "source": source}],
            "operationState": {
                "finishedAt": _iso(deployed), "message": "successfully synced (all tasks run)",
                "operation": {"initiatedBy": {"automated": True}, "retry": {"limit": 5},
                              "sync": {"revision": revision, "syncOptions": ["CreateNamespace=true"]}},
                "phase": "Succeeded", "startedAt": _iso(deployed - 5),
                "syncResult": {"resources": [
                    {"group": r.get("group", ""), "hookPhase": "Running", "kind": r["kind"],
                     "message": f"{r['kind'].lower()}/{name} configured", "name": name, "namespace": namespace,
                     "status": "Synced", "syncPhase": "Sync", "version": "v1"} for r in resources],
                    "revision": revision, "source": source}},
            "reconciledAt": _iso(_SYN_TIME - s.rng.randrange(1, 180)),
            "resources": resources,
            "sourceType": "Kustomize",
            "summary": {"images": images},
            "sync": {"comparedTo": {"destination": destination, "source": source},
                     "revision": revision if sync == "Synced" else s.hexid(40), "status": sync},
        },
    }


def synthetic_installation(applications: int, pods: int, namespaces: int = 20, *, seed: int = 1) -> Iterator[Obj]:
    """A realistic, deterministic cluster for benchmarks: Namespaces, Nodes and their Leases, an Argo CD install in
    `argocd`, `applications` Applications (each with a Deployment and a Service) and `pods` workload pods spread
    over `namespaces` namespaces (Deployment → ReplicaSet → Pod owner chain, managedFields included)."""
    s = _Syn(seed)
    ns_names = [_TEAMS[k % len(_TEAMS)] + (f"-{k // len(_TEAMS)}" if k >= len(_TEAMS) else "")
                for k in range(max(1, namespaces))]
    node_count = min(max(3, math.ceil(pods / 100)), 500)
    nodes = [(f"ip-10-0-{16 + i // 250}-{10 + i % 250}.eu-west-1.compute.internal",
              f"10.0.{16 + i // 250}.{10 + i % 250}") for i in range(node_count)]
    for name in ("argocd", "kube-node-lease", "kube-system", *ns_names):
        yield {"apiVersion": "v1", "kind": "Namespace",
               "metadata": s.meta(name, None, _SYN_TIME - 86400 * 500, {"kubernetes.io/metadata.name": name}),
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    for index, (name, ip) in enumerate(nodes):
        yield from _syn_node(s, name, ip, index)
    yield from _syn_argocd(s, nodes)

    workloads = applications if applications > 0 else (min(pods, len(ns_names)) if pods > 0 else 0)
    for k in range(workloads):
        namespace = ns_names[k % len(ns_names)]
        name = f"{namespace.split('-')[0]}-{_SERVICES[k % len(_SERVICES)]}-{k:04d}"
        replicas = pods // workloads + (1 if k < pods % workloads else 0)
        degraded, out_of_sync = k % 17 == 5, k % 11 == 3
        image = f"registry.acme.io/{namespace}/{_SERVICES[k % len(_SERVICES)]}:1.{k % 40}.{k % 7}"
        labels = {"app.kubernetes.io/instance": name, "app.kubernetes.io/name": name,
                  "app.kubernetes.io/part-of": namespace.split("-")[0]}
        containers = [_syn_container("app", image, 8080)]
        deployment = _syn_workload(s, "Deployment", name, namespace, labels, replicas, containers,
                                   _SYN_TIME - 86400 * s.rng.randrange(1, 300), ready=0 if degraded else replicas)
        pod_hash = s.suffix(10)
        replicaset = _syn_replicaset(s, deployment, pod_hash)
        yield deployment
        yield replicaset
        yield _syn_service(s, name, namespace, labels, 8080)
        pod_labels = {**labels, "pod-template-hash": pod_hash}
        for _ in range(replicas):
            yield _syn_pod(s, f"{name}-{pod_hash}-{s.suffix(5)}", namespace, pod_labels, _owner_ref(replicaset),
                           containers, nodes[s.rng.randrange(len(nodes))], _SYN_TIME - s.rng.randrange(600, 86400 * 20),
                           crashing=degraded, service_account="default")
        if k < applications:
            health = "Degraded" if degraded else "Healthy"
            yield _syn_application(s, name, namespace, health, "OutOfSync" if out_of_sync else "Synced", [image])

