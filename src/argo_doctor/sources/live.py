"""The live source: read a cluster through the Kubernetes API, read-only, into a v1 bundle.

The collector writes what it reads, as the API gives it, into a bundle folder (objects as `kind: List` JSON
pages, logs in the bundle layout, `bundle.yaml`, `clock.yaml` when probed). `scan --live` collects into a
private temporary folder and loads it with the bundle loader, so that a live scan and the scan of a collected
bundle read the very same files and give the same findings; `collect` does the same, then writes the bundle
it shares through `rewrite.redact_bundle`, whose first pass learns every Secret value before anything is
written. Only what the selected rules need is read (`model.Needs`).

The client can only GET (`ReadOnlyClient`). Lists are paginated (`limit` + `continue`; a 410 Gone restarts the
list, and objects already written are not written twice), requests run a few at a time with a timeout each,
and 429 (with `Retry-After`), 5xx and dropped connections are retried with backoff. A 403 never stops the
collection: it is recorded in `bundle.yaml` under `skipped`, where the `collector-permission-missing` rule
reads it, as it reads any other request that failed.
"""

from __future__ import annotations

import email.utils
import os
import random
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import msgspec
import yaml
from lightkube import KubeConfig
from lightkube.config.client_adapter import Client as adapter_client
from lightkube.config.client_adapter import ConnectionParams, user_auth
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ConfigError as LightkubeConfigError

from argo_doctor import __version__
from argo_doctor.errors import ConfigError, InputError
from argo_doctor.knowledge.components import HOOK_ANNOTATIONS, by_containers
from argo_doctor.model import DEFAULT_MAX_LOG_BYTES, Needs
from argo_doctor.snapshot import Obj, Snapshot, gc_paused
from argo_doctor.sources.objects import RawObject, as_int, as_list, mapping

PAGE_SIZE = 500
CONCURRENCY = 8
TIMEOUT = 30.0
ATTEMPTS = 5
MAX_RETRY_AFTER = 30.0
GONE_RESTARTS = 3
DEFAULT_SINCE = timedelta(hours=24)
FAILING_POD_TAIL_LINES = 500
MAX_FAILING_PODS = 50
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
RETRIED_STATUS = {429, 500, 502, 503, 504}
KEPT_METRICS = ("apiserver_requested_deprecated_apis", "apiserver_request_total",
                "# HELP apiserver_requested_deprecated_apis", "# TYPE apiserver_requested_deprecated_apis")
"""The API server metrics the rules read; the rest of /metrics is not kept."""
SLIM_KINDS = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
              ("", "Pod"), ("argoproj.io", "Application")}
WEBHOOK_KINDS = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
NAMESPACE_KINDS = {("", "Secret"), ("", "ConfigMap")}
"""Kinds read only in the namespaces of interest (the Argo namespaces and those of webhook services), never
cluster-wide: the settings, and Secrets, which a scan must not read more of than it needs."""
VERSIONS = {"": "v1", "apps": "v1", "coordination.k8s.io": "v1", "discovery.k8s.io": "v1",
            "admissionregistration.k8s.io": "v1", "argoproj.io": "v1alpha1", "apiextensions.k8s.io": "v1",
            "rbac.authorization.k8s.io": "v1", "batch": "v1", "networking.k8s.io": "v1"}


class ApiError(InputError):
    """A request the API did not answer usefully; `status` is its HTTP status, None when there was no answer."""

    def __init__(self, request: str, status: int | None, reason: str) -> None:
        super().__init__(f"{request}: {reason}")
        self.request = request
        self.status = status
        self.reason = reason


class ReadOnlyViolation(RuntimeError):
    """Something tried to send a request other than GET through the live source's client."""


class ReadOnlyClient:
    """An API client that can only GET: the one way the live source reaches the cluster. Every request passes a
    hook that refuses any other method before it is sent, and the class itself offers no other verb."""

    def __init__(self, http: httpx2.Client, server: str) -> None:
        self._http = http
        self.server = server
        http.event_hooks = {"request": [self._only_get], "response": []}
        self.requests = 0
        self._lock = threading.Lock()

    @staticmethod
    def _only_get(request: httpx2.Request) -> None:
        if request.method not in ("GET", "HEAD"):
            raise ReadOnlyViolation(f"refused {request.method} {request.url.path}: argo-doctor only reads")

    def get(self, path: str, params: dict[str, str] | None = None, *, stream: bool = False,
            headers: dict[str, str] | None = None) -> httpx2.Response:
        """One GET, retried on 429 (after `Retry-After`), 5xx and dropped connections; ApiError otherwise."""
        shown = _shown(path, params)
        for attempt in range(ATTEMPTS):
            with self._lock:
                self.requests += 1
            try:
                request = self._http.build_request("GET", path, params=params, headers=headers)
                response = self._http.send(request, stream=stream)
            except httpx2.TimeoutException:
                if attempt >= 1:  # a server that hangs twice will hang again
                    raise ApiError(shown, None, f"no answer within {TIMEOUT:.0f} s (timeout)") from None
                continue
            except (httpx2.TransportError, httpx2.DecodingError) as exc:
                if attempt == ATTEMPTS - 1:
                    raise ApiError(shown, None, f"connection failed: {exc or type(exc).__name__}") from None
                time.sleep(_backoff(attempt))
                continue
            if response.status_code in RETRIED_STATUS and attempt < ATTEMPTS - 1:
                wait = _retry_after(response.headers.get("retry-after"), attempt)
                response.close()
                time.sleep(wait)
                continue
            if response.status_code >= 400:
                if stream:
                    response.read()
                raise ApiError(shown, response.status_code, status_reason(response))
            return response
        raise ApiError(shown, None, "no answer after retries")  # pragma: no cover - the loop returns or raises

    def get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """A GET whose answer must be a JSON object."""
        response = self.get(path, params)
        kind = response.headers.get("content-type", "")
        if "json" not in kind:
            raise ApiError(_shown(path, params), response.status_code,
                           f"answered {kind.split(';')[0] or 'no content type'}, not JSON (a proxy in the way?)")
        try:
            doc = msgspec.json.decode(response.content)
        except msgspec.DecodeError as exc:
            raise ApiError(_shown(path, params), response.status_code, f"invalid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise ApiError(_shown(path, params), response.status_code, "answered JSON that is not an object")
        return doc

    def close(self) -> None:
        """Close the connections."""
        self._http.close()


def _require_text(response: httpx2.Response, shown: str) -> None:
    """ApiError unless the answer is plain text (a log, metrics): a proxy's HTML page is not a log."""
    kind = response.headers.get("content-type", "")
    if not kind.startswith("text/plain"):
        response.close()
        raise ApiError(shown, response.status_code,
                       f"answered {kind.split(';')[0] or 'no content type'}, not text (a proxy in the way?)")


def _shown(path: str, params: dict[str, str] | None) -> str:
    query = "&".join(f"{k}={v}" for k, v in (params or {}).items() if k != "continue")
    return f"GET {path}{'?' + query if query else ''}"


def _backoff(attempt: int) -> float:
    return float(min(8.0, 0.25 * 2**attempt) * (0.5 + random.random() / 2))


def _retry_after(header: str | None, attempt: int) -> float:
    if header:
        try:
            return min(MAX_RETRY_AFTER, max(0.0, float(header)))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(header)
                return min(MAX_RETRY_AFTER, max(0.0, (when - datetime.now(UTC)).total_seconds()))
            except (TypeError, ValueError):
                pass
    return _backoff(attempt)


def status_reason(response: httpx2.Response) -> str:
    """`403 Forbidden: <the API's message>`, from a Status object when there is one."""
    message = ""
    try:
        doc = response.json()
        if isinstance(doc, dict):
            message = str(doc.get("message") or "")
    except ValueError:
        message = ""
    head = f"{response.status_code} {response.reason_phrase}".strip()
    return f"{head}: {message[:300]}" if message else head


def connect(kubeconfig: Path | None = None, context: str | None = None, *, timeout: float = TIMEOUT,
            service_account: Path = SERVICE_ACCOUNT) -> ReadOnlyClient:
    """A read-only client for the cluster of `--kubeconfig`/`--context` (see `http_client`)."""
    return ReadOnlyClient(*http_client(kubeconfig, context, timeout=timeout, service_account=service_account))


def http_client(kubeconfig: Path | None = None, context: str | None = None, *, timeout: float = TIMEOUT,
                service_account: Path = SERVICE_ACCOUNT) -> tuple[httpx2.Client, str]:
    """An HTTP client and the server URL for the cluster of `--kubeconfig`/`--context`, as kubectl chooses it: the
    given file, else the files of `$KUBECONFIG` (the first that has the context), else `~/.kube/config`, else the
    in-cluster service account when running in a pod. `connect` wraps it read-only; only `remediate` writes."""
    if kubeconfig is not None:
        candidates = [kubeconfig]
    else:
        listed = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        candidates = [p for p in listed or [Path("~/.kube/config").expanduser()] if p.is_file()]
    single = None
    reasons = []
    for path in candidates:
        try:
            single = KubeConfig.from_file(path).get(context_name=context)
        except (LightkubeConfigError, OSError, KeyError, ValueError, TypeError, AttributeError,
                yaml.YAMLError) as exc:
            reasons.append(f"{path}: {_one_line(exc)}")
            continue
        if single is not None:
            break
    if single is None and not candidates and os.environ.get("KUBERNETES_SERVICE_HOST") and \
            (service_account / "token").is_file():
        try:
            single = KubeConfig.from_service_account(service_account).get()
        except (LightkubeConfigError, OSError, KeyError, ValueError) as exc:
            reasons.append(f"in-cluster configuration: {_one_line(exc)}")
    if single is None:
        if not reasons:
            reasons.append("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not running in a pod; give --kubeconfig")
        raise ConfigError(f"cannot use the cluster configuration: {'; '.join(reasons)}")
    try:
        http = _plain_http(single, timeout) or adapter_client(single, ConnectionParams(timeout=httpx2.Timeout(timeout)))
    except (LightkubeConfigError, OSError, KeyError, ValueError, TypeError, AttributeError, AssertionError) as exc:
        raise ConfigError(f"cannot use the cluster configuration: {_one_line(exc)}") from None
    return http, single.cluster.server


def _plain_http(single: SingleConfig, timeout: float) -> httpx2.Client | None:
    """A client for a cluster served over plain HTTP (`kubectl proxy`, a local fake API), without the SSL context
    that lightkube's adapter fills with the CA bundle (building the client: 0.10 → 0.045 s). Its context trusts no
    certificate, so that TLS, which no request here uses, could never pass unverified. None for an HTTPS server, or
    when the environment sets a proxy for HTTP (one may speak TLS): the adapter then builds the client."""
    if urlsplit(single.cluster.server).scheme != "http" or {"http", "all"} & set(urllib.request.getproxies()):
        return None
    if not single.user:
        raise LightkubeConfigError("Missing user")  # what the adapter says
    return httpx2.Client(base_url=single.cluster.server, verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT),
                         auth=user_auth(single.user), timeout=httpx2.Timeout(timeout))


def _one_line(exc: BaseException) -> str:
    """The first line of an error (a YAML error spans several), without lightkube's KeyError quotes."""
    text = str(exc.args[0]) if isinstance(exc, KeyError | LightkubeConfigError) and exc.args else str(exc)
    return (text.strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class Resource:
    """A kind the API serves, as discovery tells it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """`group/version`, or `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def need(self) -> str:
        """The kind as rules declare it: `Kind` or `group/Kind`."""
        return f"{self.group}/{self.kind}" if self.group else self.kind

    def path(self, namespace: str | None = None) -> str:
        """The list path, cluster-wide or in one namespace."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/namespaces/{namespace}/{self.plural}" if namespace and self.namespaced else \
            f"{base}/{self.plural}"


@dataclass(frozen=True)
class LiveOptions:
    """How much to read, and how."""

    namespaces: tuple[str, ...] = ()
    """The Argo namespaces; empty: every namespace that holds an Argo component."""
    since: timedelta = DEFAULT_SINCE
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    previous: bool = True
    probe_node_clocks: bool = False
    metrics: bool = False
    """Read the API server's /metrics (when a rule needs it, or for `deprecations --live`)."""
    concurrency: int = CONCURRENCY
    page_size: int = PAGE_SIZE


@dataclass
class Tally:
    """What the collection did so far, for the progress display and the summary line."""

    kinds: int = 0
    pages: int = 0
    objects: int = 0
    logs: int = 0
    log_bytes: int = 0
    skipped: int = 0
    phase: str = ""


@dataclass
class Collected:
    """The result of a collection: where the bundle is, what it holds, and what could not be read."""

    root: Path
    tally: Tally
    skipped: list[dict[str, str]] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    requests: int = 0

    def summary(self) -> str:
        """One line: what was read, with how many requests, and how many reads failed."""
        tally = self.tally
        return (f"argo-doctor: read {tally.objects:,} objects in {tally.pages} pages of {tally.kinds} lists, "
                f"{tally.logs} logs ({tally.log_bytes:,} bytes), {self.requests} requests; {len(self.skipped)} "
                "read(s) refused or failed (listed in the report)")


Progress = Callable[[Tally], None]


class Collector:
    """Reads what `needs` asks for into a bundle folder `root`."""

    def __init__(self, client: ReadOnlyClient, root: Path, needs: Needs, options: LiveOptions,
                 progress: Progress | None = None, written: Callable[[Path], None] | None = None) -> None:
        self.client = client
        self.root = root
        self.needs = needs
        self.options = options
        self.progress = progress or (lambda tally: None)
        self.written = written or (lambda path: None)
        """Told of each object file once it is written (from the collection's threads)."""
        self.tally = Tally()
        self.skipped: list[dict[str, str]] = []
        self.absent: list[str] = []
        self.slim = Snapshot("live")
        """Workloads, pods and Applications, cut down to what decides which namespaces and logs to read."""
        self.nodes: set[str] = set()
        """The nodes the pods run on (the clock probes' targets)."""
        self.webhook_namespaces: set[str] = set()
        """The namespaces of the Services that webhook configurations call."""
        self._lock = threading.Lock()
        self._discovered: dict[str, dict[str, Resource] | None] = {}
        self._listed: set[tuple[str, str]] = set()

    # -- the phases ---------------------------------------------------------------------------
    def run(self) -> Collected:
        """Collect everything; never raises for a request that failed (it is recorded as skipped)."""
        with gc_paused():  # pages of JSON allocate millions of objects that live until written
            return self._run()

    def _run(self) -> Collected:
        (self.root / "objects").mkdir(parents=True, exist_ok=True)
        started = datetime.now(UTC)
        version = self._version()
        resources = self._resources(self.needs.kinds)
        wide = [r for r in resources if (r.group, r.kind) not in NAMESPACE_KINDS]
        if self.needs.events:
            events = self._resource("", "Event")
            if events is not None:
                wide.append(events)
        self._phase("objects", [(r, None) for r in wide])
        namespaces = self._namespaces_of_interest()
        scoped = [r for r in resources if (r.group, r.kind) in NAMESPACE_KINDS]
        self._phase("settings and secrets", [(r, ns) for r in scoped for ns in sorted(namespaces)])
        if self.needs.app_resources:
            self._phase("application resources", self._app_resource_lists())
        self._logs()
        if self.needs.metrics or self.options.metrics:
            self._metrics()
        clock = self._probe_clocks() if self.options.probe_node_clocks else None
        self._write_meta(started, version, namespaces, clock)
        self.tally.phase = "done"
        self.progress(self.tally)
        return Collected(self.root, self.tally, self.skipped, self.absent, self.client.requests)

    def _phase(self, name: str, jobs: list[tuple[Resource, str | None]]) -> None:
        self.tally.phase = name
        self.progress(self.tally)
        with ThreadPoolExecutor(max_workers=self.options.concurrency) as pool:
            list(pool.map(lambda job: self._list(*job), jobs))

    def _version(self) -> dict[str, Any]:
        """The API server's version; InputError when the API server does not answer at all."""
        try:
            return self.client.get_json("/version")
        except ApiError as exc:
            if exc.status is None:
                raise InputError(f"cannot reach the API server {self.client.server}: {exc.reason}") from None
            if exc.status == 401:
                raise InputError(f"the API server {self.client.server} rejected the credentials ({exc.reason}); "
                                 "log in again or check the kubeconfig's user") from None
            self._skip("cluster version", exc, "version")
            return {}

    # -- discovery ------------------------------------------------------------------------------
    def _resources(self, kinds: Iterable[str]) -> list[Resource]:
        found = []
        for need in sorted(kinds):
            group, _, kind = need.rpartition("/")
            resource = self._resource(group, kind)
            if resource is not None:
                found.append(resource)
        return found

    def _resource(self, group: str, kind: str, version: str | None = None) -> Resource | None:
        version = version or VERSIONS.get(group)
        if version is None:
            version = self._preferred_version(group)
            if version is None:
                return None
        api_version = f"{group}/{version}" if group else version
        if api_version not in self._discovered:
            path = f"/apis/{api_version}" if group else f"/api/{version}"
            try:
                doc = self.client.get_json(path)
                table: dict[str, Resource] = {}
                for item in as_list(doc.get("resources")):
                    item = mapping(item)
                    name = str(item.get("name") or "")
                    if name and "/" not in name and item.get("kind"):
                        table[str(item["kind"])] = Resource(group, version, str(item["kind"]), name,
                                                            bool(item.get("namespaced")))
                self._discovered[api_version] = table
            except ApiError as exc:
                served_nothing = exc.status == 404
                self._discovered[api_version] = {} if served_nothing else None
                if not served_nothing:
                    self._skip(f"discovery of {api_version}", exc, f"kind:{group}/{kind}" if group else f"kind:{kind}")
        served = self._discovered[api_version]
        if served is None:  # discovery failed: recorded as skipped, not as absent
            return None
        resource = served.get(kind)
        if resource is None:
            self.absent.append(f"{kind} ({api_version}): not served by this cluster")
        return resource

    def _preferred_version(self, group: str) -> str | None:
        try:
            doc = self.client.get_json(f"/apis/{group}")
        except ApiError as exc:
            if exc.status != 404:
                self._skip(f"discovery of {group}", exc, f"group:{group}")
            return None
        preferred = mapping(doc.get("preferredVersion")).get("version")
        return str(preferred) if preferred else None

    # -- lists ------------------------------------------------------------------------------------
    def _list(self, resource: Resource, namespace: str | None) -> None:
        """Every page of one list into `objects/`, restarting once the continue token expires (410)."""
        key = (resource.need, namespace or "")
        with self._lock:
            if key in self._listed:
                return
            self._listed.add(key)
            self.tally.kinds += 1
        folder = self.root / "objects" / f"{resource.plural}.{resource.group or 'core'}"
        folder.mkdir(parents=True, exist_ok=True)
        prefix = f"{namespace}-" if namespace else ""
        seen: set[tuple[str, str]] = set()
        page = 0
        path = resource.path(namespace)
        with ThreadPoolExecutor(max_workers=1) as ahead:  # the next page is asked for while this one is written
            for _restart in range(GONE_RESTARTS + 1):
                try:
                    doc = self.client.get_json(path, {"limit": str(self.options.page_size)})
                    while True:
                        token = str(mapping(doc.get("metadata")).get("continue") or "")
                        following = ahead.submit(self.client.get_json, path, {
                            "limit": str(self.options.page_size), "continue": token}) if token else None
                        items = [self._item(resource, i) for i in as_list(doc.get("items")) if isinstance(i, dict)]
                        fresh = [i for i in items if _key(i) not in seen]
                        seen.update(_key(i) for i in fresh)
                        if fresh:
                            page += 1
                            self._write_page(folder / f"{prefix}{page:04d}.json", resource, fresh)
                        if following is None:
                            return
                        doc = following.result()
                except ApiError as exc:
                    if exc.status == 410 and _restart < GONE_RESTARTS:
                        continue  # the list changed under us: start again, skipping what is already written
                    where = f" in {namespace}" if namespace else ""
                    self._skip(f"list {resource.plural}{where}", exc, f"kind:{resource.need}")
                    return

    def _item(self, resource: Resource, item: dict[str, Any]) -> dict[str, Any]:
        """A list item with the apiVersion and kind that list items leave out."""
        item.setdefault("apiVersion", resource.api_version)
        item.setdefault("kind", resource.kind)
        return item

    def _write_page(self, path: Path, resource: Resource, items: list[dict[str, Any]]) -> None:
        if resource.kind in WEBHOOK_KINDS:  # the namespaces of webhook Services, whose Secrets are read
            services = (mapping(mapping(mapping(hook).get("clientConfig")).get("service"))
                        for item in items for hook in as_list(item.get("webhooks")))
            namespaces = {str(svc["namespace"]) for svc in services if svc.get("namespace")}
            with self._lock:
                self.webhook_namespaces |= namespaces
        if (resource.group, resource.kind) in SLIM_KINDS:
            kept = [_slim(item) for item in items]
            if resource.kind == "Pod":  # a pod matters for its node, and if it is an Argo component's or crashes
                nodes = {str(mapping(i.get("spec")).get("nodeName") or "") for i in items} - {""}
                with self._lock:
                    self.nodes |= nodes
                kept = [slim for slim in kept if _failing_raw(slim) or self._component_pod(slim)]
            with self._lock:
                for slim in kept:
                    self.slim.add(RawObject(slim, "live"))
        body = msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": items})
        path.write_bytes(body)
        self.written(path)
        with self._lock:
            self.tally.pages += 1
            self.tally.objects += len(items)
        self.progress(self.tally)

    def _component_pod(self, slim: dict[str, Any]) -> bool:
        """Whether a pod runs an Argo component, or Redis or HAProxy that may serve Argo CD (its workload, among the
        others, tells)."""
        pod = Obj.from_raw(slim, "live")
        return self.slim.component_name(pod) is not None or by_containers(pod.containers, companions=True) is not None

    # -- scope --------------------------------------------------------------------------------------
    def argo_namespaces(self) -> set[str]:
        """The namespaces given with `--namespace`, else those holding an Argo component."""
        if self.options.namespaces:
            return set(self.options.namespaces)
        found = set()
        for component in self.slim.components:
            if component.workload is not None:
                found.add(component.workload.namespace)
            found.update(p.namespace for p in component.pods)
        return found

    def _namespaces_of_interest(self) -> set[str]:
        return self.argo_namespaces() | self.webhook_namespaces

    def _app_resource_lists(self) -> list[tuple[Resource, str | None]]:
        """One list per kind that Applications deploy and no rule listed already, in the namespaces they use."""
        wanted: dict[tuple[str, str, str], set[str]] = {}
        for app in self.slim.applications():
            for entry in as_list(app.status.get("resources")):
                entry = mapping(entry)
                kind, group = str(entry.get("kind") or ""), str(entry.get("group") or "")
                version = str(entry.get("version") or "") or VERSIONS.get(group, "")
                if kind and version:
                    wanted.setdefault((group, version, kind), set()).add(str(entry.get("namespace") or ""))
        jobs: list[tuple[Resource, str | None]] = []
        for (group, version, kind), namespaces in sorted(wanted.items()):
            need = f"{group}/{kind}" if group else kind
            if need in self.needs.kinds or (group, kind) in NAMESPACE_KINDS:
                continue
            resource = self._resource(group, kind, version)
            if resource is None:
                continue
            if not resource.namespaced or "" in namespaces:
                jobs.append((resource, None))
            else:
                jobs.extend((resource, ns) for ns in sorted(namespaces))
        return jobs

    # -- logs -----------------------------------------------------------------------------------------
    def _logs(self) -> None:
        jobs: list[tuple[Obj, str, bool, bool]] = []
        argo = self.argo_namespaces()
        wanted = self.needs.logs
        if wanted:
            for component in self.slim.components:
                if "*" not in wanted and component.name not in wanted:
                    continue
                for pod in component.pods:
                    if pod.namespace in argo:
                        jobs.extend(self._log_jobs(pod, tail=False))
        if self.needs.failing_pod_logs:
            jobs.extend(job for pod in self._failing_pods({(j[0].namespace, j[0].name) for j in jobs})
                        for job in self._log_jobs(pod, tail=True))
        self.tally.phase = "logs"
        self.progress(self.tally)
        with ThreadPoolExecutor(max_workers=self.options.concurrency) as pool:
            list(pool.map(lambda job: self._log(*job), jobs))

    def _failing_pods(self, done: set[tuple[str, str]]) -> list[Obj]:
        """Crashing pods in the namespaces Applications deploy to: one per owner (replicas crash alike), at most
        MAX_FAILING_PODS; those left out are recorded in bundle.yaml."""
        spots = {str(mapping(a.spec.get("destination")).get("namespace") or "") for a in self.slim.applications()}
        chosen: dict[tuple[str, str], Obj] = {}
        for pod in self.slim.of_kind("Pod", ""):
            if pod.namespace in spots and (pod.namespace, pod.name) not in done and _failing(pod):
                owner = pod.owners[0] if pod.owners else pod.name
                chosen.setdefault((pod.namespace, str(owner)), pod)
        pods = sorted(chosen.values(), key=lambda p: (p.namespace, p.name))
        if len(pods) > MAX_FAILING_PODS:
            self.absent.append(f"logs of {len(pods) - MAX_FAILING_PODS} more crashing pods: read only the first "
                               f"{MAX_FAILING_PODS} (one per owner)")
        return pods[:MAX_FAILING_PODS]

    def _log_jobs(self, pod: Obj, tail: bool) -> list[tuple[Obj, str, bool, bool]]:
        jobs = []
        for status in as_list(pod.status.get("containerStatuses")) + as_list(pod.status.get("initContainerStatuses")):
            status = mapping(status)
            name = str(status.get("name") or "")
            if not name:
                continue
            jobs.append((pod, name, False, tail))
            if self.options.previous and (as_int(status.get("restartCount")) > 0
                                          or mapping(status.get("lastState")).get("terminated")):
                jobs.append((pod, name, True, tail))
        return jobs

    def _log(self, pod: Obj, container: str, previous: bool, tail: bool) -> None:
        params = {"container": container, "timestamps": "true", "limitBytes": str(self.options.max_log_bytes)}
        if previous:
            params["previous"] = "true"
        else:
            params["sinceSeconds"] = str(max(1, int(self.options.since.total_seconds())))
        if tail:
            params["tailLines"] = str(FAILING_POD_TAIL_LINES)
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/log"
        target = self.root / "logs" / pod.namespace / pod.name / f"{container}{'.previous' if previous else ''}.log"
        try:
            response = self.client.get(path, params, stream=True)
            _require_text(response, _shown(path, params))
        except ApiError as exc:
            if exc.status == 400 and previous:  # no previous instance after all
                return
            if exc.status in (401, 403):  # refused for one pod, refused for the namespace: one record
                self._skip(f"logs of pods in {pod.namespace}", exc, "logs")
            else:
                self._skip(f"logs of {pod.namespace}/{pod.name} {container}{' (previous)' if previous else ''}",
                           exc, "logs")
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        try:
            with target.open("w", encoding="utf-8", errors="replace", newline="") as out:
                for line in _lines(response.iter_text()):
                    written += out.write(line)
        except (httpx2.TransportError, httpx2.DecodingError) as exc:
            self._skip(f"logs of {pod.namespace}/{pod.name} {container} (cut)", ApiError(
                _shown(path, params), None, f"connection dropped after {written:,} bytes: {exc}"), "logs")
        finally:
            response.close()
        with self._lock:
            self.tally.logs += 1
            self.tally.log_bytes += written
        self.progress(self.tally)

    # -- metrics and clocks ----------------------------------------------------------------------------
    def _metrics(self) -> None:
        try:
            response = self.client.get("/metrics")
            _require_text(response, "GET /metrics")
        except ApiError as exc:
            self._skip("API server metrics", exc, "metrics")
            return
        (self.root / "metrics").mkdir(exist_ok=True)
        wanted = [line for line in response.text.splitlines() if line.startswith(KEPT_METRICS)]
        (self.root / "metrics" / "apiserver.prom").write_text("\n".join(wanted) + "\n" if wanted else "")

    def _probe_clocks(self) -> dict[str, Any] | None:
        self.tally.phase = "clock probes"
        self.progress(self.tally)
        apiserver = self._probe("/version")
        if apiserver is None:
            return None
        probes = []
        for node in sorted(self.nodes):
            probe = self._probe(f"/api/v1/nodes/{node}/proxy/healthz")
            if probe is not None:
                probes.append({"node": node, **probe})
        return {"apiserver": apiserver, "probes": probes}

    def _probe(self, path: str) -> dict[str, str] | None:
        sent = datetime.now(UTC)
        try:
            response = self.client.get(path)
        except ApiError as exc:
            self._skip(f"clock probe {path}", exc, "node-proxy" if "/proxy/" in path else "version")
            return None
        received = datetime.now(UTC)
        date = response.headers.get("date")
        if not date:
            return None
        return {"date": date, "sent": sent.isoformat(), "received": received.isoformat()}

    # -- records --------------------------------------------------------------------------------------
    def _skip(self, what: str, exc: ApiError, need: str) -> None:
        """Record a read that failed; the same refusal of the same thing is recorded once."""
        with self._lock:
            status = str(exc.status or "")
            if any(s["what"] == what and s["status"] == status for s in self.skipped):
                return
            self.skipped.append({"what": what, "request": exc.request, "reason": exc.reason, "need": need,
                                 "status": status})
            self.tally.skipped += 1

    def _write_meta(self, started: datetime, version: dict[str, Any], namespaces: set[str],
                    clock: dict[str, Any] | None) -> None:
        components = sorted({(c.name, c.version or "") for c in self.slim.components})
        meta = {
            "collectedAt": started.isoformat().replace("+00:00", "Z"),
            "collectedBy": f"argo-doctor {__version__}",
            "cluster": {"name": self.client.server, "version": str(version.get("gitVersion") or "")},
            "components": [{"name": n, "version": v} for n, v in components],
            "namespaces": sorted(namespaces),
            "options": {"since": f"{int(self.options.since.total_seconds())}s",
                        "maxLogBytes": self.options.max_log_bytes, "previous": self.options.previous,
                        "probeNodeClocks": self.options.probe_node_clocks, "needs": sorted(self.needs.kinds)},
            "skipped": sorted(self.skipped, key=lambda s: (s["need"], s["what"])),
            "absent": sorted(set(self.absent)),
        }
        (self.root / "bundle.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, width=1000))
        if clock is not None:
            (self.root / "clock.yaml").write_text(yaml.safe_dump(clock, sort_keys=False))


def _lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of a streamed text, each with its line ending (the last one given one)."""
    partial: list[str] = []  # the pieces of a line not ended yet: linear even for a line of megabytes
    for chunk in chunks:
        if "\n" not in chunk:
            partial.append(chunk)
            continue
        first, *lines, last = chunk.split("\n")
        yield "".join((*partial, first, "\n"))
        yield from (line + "\n" for line in lines)
        partial = [last] if last else []
    if partial:
        yield "".join((*partial, "\n"))


def _key(item: dict[str, Any]) -> tuple[str, str]:
    meta = mapping(item.get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _slim(item: dict[str, Any]) -> dict[str, Any]:
    """The fields that tell components (labels, hook annotations, what the containers run), pods, their logs and
    Applications' namespaces."""
    meta = mapping(item.get("metadata"))
    spec = mapping(item.get("spec"))
    slim: dict[str, Any] = {"apiVersion": item.get("apiVersion"), "kind": item.get("kind"), "metadata": {
        k: meta[k] for k in ("name", "namespace", "uid", "labels", "ownerReferences") if k in meta}}
    hooks = _hook_annotations(meta)
    if hooks:
        slim["metadata"]["annotations"] = hooks
    if item.get("kind") == "Pod":
        slim["spec"] = {"nodeName": spec.get("nodeName"), "containers": _slim_containers(spec)}
        status = mapping(item.get("status"))
        slim["status"] = {k: status[k] for k in ("containerStatuses", "initContainerStatuses", "phase") if k in status}
    elif item.get("kind") == "Application":
        slim["spec"] = {"destination": spec.get("destination")}
        slim["status"] = {"resources": mapping(item.get("status")).get("resources")}
    else:
        template = mapping(spec.get("template"))
        template_meta = mapping(template.get("metadata"))
        slim_meta: dict[str, Any] = {"labels": template_meta.get("labels")}
        if hooks := _hook_annotations(template_meta):
            slim_meta["annotations"] = hooks
        slim["spec"] = {"selector": spec.get("selector"), "template": {
            "metadata": slim_meta, "spec": {"containers": _slim_containers(mapping(template.get("spec")))}}}
    return slim


def _slim_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: mapping(c)[k] for k in ("name", "image", "command", "args") if k in mapping(c)}
            for c in as_list(spec.get("containers"))]


def _hook_annotations(meta: dict[str, Any]) -> dict[str, Any]:
    annotations = mapping(meta.get("annotations"))
    return {k: annotations[k] for k in HOOK_ANNOTATIONS if k in annotations}


def _failing(pod: Obj) -> bool:
    """Whether a pod's container restarted, waits with a reason or ended in error."""
    return _failing_raw(pod.raw)


def _failing_raw(pod: dict[str, Any]) -> bool:
    """`_failing` of a pod as a dict."""
    for status in as_list(mapping(pod.get("status")).get("containerStatuses")):
        status = mapping(status)
        state = mapping(status.get("state"))
        if as_int(status.get("restartCount")) > 0 or mapping(state.get("waiting")).get("reason") or \
                mapping(state.get("terminated")).get("exitCode") not in (None, 0):
            return True
    return False


def collect(client: ReadOnlyClient, root: Path, needs: Needs, options: LiveOptions,
            progress: Progress | None = None, written: Callable[[Path], None] | None = None) -> Collected:
    """Read the cluster into the bundle folder `root` (created; it must not hold a bundle already); `written` is
    told of each object file as soon as it is complete."""
    if root.exists() and any(root.iterdir()):
        raise ConfigError(f"{root} is not empty; choose a new folder")
    root.mkdir(parents=True, exist_ok=True)
    return Collector(client, root, needs, options, progress, written).run()
