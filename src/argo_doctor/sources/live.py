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

A broken or hostile server cannot hold or flood the collection: every request has a deadline (a read timeout
alone restarts with each byte), the collection has one too, answers are streamed and counted as they arrive,
decompressed, against caps (a JSON answer, the pages of a list, a log, /metrics), and a list whose `continue`
token comes back is ended. Each of these is one failed read, recorded like the others; what was read stays. The
collection's threads are daemons: a signal ends the collection at once, however stuck its requests are, and no
file is written into the folder after that.
"""

from __future__ import annotations

import codecs
import email.utils
import math
import os
import queue
import random
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO, TypeVar
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
from argo_doctor.sources.files import decode_json, read_option_file
from argo_doctor.sources.metrics import MAX_METRICS_BYTES, MAX_METRICS_LINE
from argo_doctor.sources.objects import RawObject, as_int, as_list, mapping

PAGE_SIZE = 500
CONCURRENCY = 8
TIMEOUT = 30.0
"""Seconds one read of an answer may wait for data."""
REQUEST_DEADLINE = 120.0
"""Seconds one request may take, its retries and every read of its answer included: a server that sends a byte
now and then never trips the read timeout, and ends here."""
DEFAULT_DEADLINE = timedelta(minutes=15)
"""How long a whole collection may take (`--timeout`); the reads not done by then are recorded as not read."""
MAX_BODY_BYTES = 256 << 20
"""The largest JSON answer read, decompressed; a page of 500 objects is a few MiB."""
MAX_ERROR_BYTES = 64 << 10
"""What is read of an error answer, for its message."""
MAX_KUBECONFIG_BYTES = 16 << 20
"""The largest kubeconfig read (one with hundreds of clusters and embedded certificates is a few MiB)."""
MAX_PAGES = 10_000
"""Pages of one list (five million objects at 500 a page); a server that never ends a list is stopped here."""
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
KEPT_METRICS_BYTES = tuple(prefix.encode() for prefix in KEPT_METRICS)
T = TypeVar("T")
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
        self.until = math.inf
        """No request goes on past this time (`time.monotonic()`): the deadline of the collection."""
        self.late = ""
        """How `until` is named in errors."""
        self._lock = threading.Lock()
        self.context = ""
        """The kubeconfig context the cluster was chosen by (empty in a pod), to name it as kubectl users do."""

    @staticmethod
    def _only_get(request: httpx2.Request) -> None:
        if request.method not in ("GET", "HEAD"):
            raise ReadOnlyViolation(f"refused {request.method} {request.url.path}: argo-doctor only reads")

    def get(self, path: str, params: dict[str, str] | None = None, *,
            headers: dict[str, str] | None = None) -> Answer:
        """One GET whose answer has begun, its body left to stream (read it with `Answer.chunks`, or close it);
        retried on 429 (after `Retry-After`), 5xx and dropped connections; ApiError otherwise."""
        return self._get(path, params, headers, lambda answer: answer)

    def get_json(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """A GET whose answer must be a JSON object of at most MAX_BODY_BYTES, decompressed, nested at most
        `files.MAX_JSON_DEPTH` levels; a connection dropped while it arrives is retried as any other."""
        return self._get(path, params, None, _json_object)

    def _get(self, path: str, params: dict[str, str] | None, headers: dict[str, str] | None,
             take: Callable[[Answer], T]) -> T:
        shown = _shown(path, params)
        deadline = min(self.until, time.monotonic() + REQUEST_DEADLINE)
        for attempt in range(ATTEMPTS):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ApiError(shown, None, self._overdue(deadline))
            with self._lock:
                self.requests += 1
            timeout = _within(self._http.timeout, remaining)
            try:
                request = self._http.build_request("GET", path, params=params, headers=headers, timeout=timeout)
                answer = Answer(self._http.send(request, stream=True), shown, deadline, self._overdue(deadline))
                if answer.response.status_code in RETRIED_STATUS and attempt < ATTEMPTS - 1:
                    wait = _retry_after(answer.response.headers.get("retry-after"), attempt)
                    answer.close()
                    time.sleep(max(0.0, min(wait, deadline - time.monotonic())))
                    continue
                if answer.response.status_code >= 400:
                    raise ApiError(shown, answer.response.status_code, answer.error_reason())
                return take(answer)
            except httpx2.TimeoutException:
                if attempt >= 1:  # a server that hangs twice will hang again
                    raise ApiError(shown, None, f"no answer within {timeout.read or remaining:.0f} s (timeout)") \
                        from None
            except (httpx2.TransportError, httpx2.DecodingError) as exc:
                if attempt == ATTEMPTS - 1:
                    raise ApiError(shown, None, f"connection failed: {exc or type(exc).__name__}") from None
                time.sleep(_backoff(attempt))
        raise ApiError(shown, None, "no answer after retries")  # pragma: no cover - the loop returns or raises

    def _overdue(self, deadline: float) -> str:
        if deadline >= self.until and self.late:
            return f"not answered when the collection's deadline ({self.late}) passed"
        return f"not answered within {REQUEST_DEADLINE:.0f} s (the deadline of a request)"

    def close(self) -> None:
        """Close the connections."""
        self._http.close()


class Answer:
    """An answer whose body streams: read as it arrives, decompressed, until its request's deadline; closed once
    read."""

    def __init__(self, response: httpx2.Response, request: str, deadline: float, overdue: str) -> None:
        self.response = response
        self.request = request
        self.deadline = deadline
        self._overdue = overdue

    def chunks(self, limit: float = math.inf) -> Iterator[bytes]:
        """The body, decompressed, as it arrives; ApiError once the deadline has passed or past `limit` bytes.
        Transport errors pass through (the caller knows what was read)."""
        size = 0
        try:
            for chunk in self.response.iter_bytes():
                size += len(chunk)
                if size > limit:
                    encoded = self.response.headers.get("content-encoding", "identity") != "identity"
                    raise ApiError(self.request, self.response.status_code,
                                   f"answered more than {limit:,} bytes{' decompressed' if encoded else ''}")
                if time.monotonic() > self.deadline:
                    raise ApiError(self.request, None, self._overdue)
                yield chunk
        finally:
            self.close()

    def body(self, limit: int) -> bytes:
        """The whole body; ApiError when it is larger than `limit` bytes, decompressed."""
        return b"".join(self.chunks(limit))

    def error_reason(self) -> str:
        """`status_reason` of an error answer, from at most MAX_ERROR_BYTES of its body."""
        parts: list[bytes] = []
        size = 0
        try:
            for chunk in self.chunks():
                parts.append(chunk)
                size += len(chunk)
                if size >= MAX_ERROR_BYTES:
                    break
        except (ApiError, httpx2.TransportError, httpx2.DecodingError):
            pass
        finally:
            self.close()
        return status_reason(self.response, b"".join(parts)[:MAX_ERROR_BYTES])

    def close(self) -> None:
        """Release the connection (the rest of the body is not read)."""
        self.response.close()


def _json_object(answer: Answer) -> dict[str, Any]:
    """The JSON object of an answer (`ReadOnlyClient.get_json`)."""
    response = answer.response
    kind = response.headers.get("content-type", "")
    if "json" not in kind:
        answer.close()
        raise ApiError(answer.request, response.status_code,
                       f"answered {kind.split(';')[0] or 'no content type'}, not JSON (a proxy in the way?)")
    try:
        doc = decode_json(answer.body(MAX_BODY_BYTES))
    except msgspec.DecodeError as exc:
        raise ApiError(answer.request, response.status_code, f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ApiError(answer.request, response.status_code, "answered JSON that is not an object")
    return doc


def _within(timeout: httpx2.Timeout, remaining: float) -> httpx2.Timeout:
    """`timeout` with no wait longer than `remaining` seconds."""
    def cut(value: float | None) -> float:
        return remaining if value is None else min(value, remaining)
    return httpx2.Timeout(connect=cut(timeout.connect), read=cut(timeout.read), write=cut(timeout.write),
                          pool=cut(timeout.pool))


def _require_text(answer: Answer) -> None:
    """ApiError unless the answer is plain text (a log, metrics): a proxy's HTML page is not a log."""
    kind = answer.response.headers.get("content-type", "")
    if not kind.startswith("text/plain"):
        answer.close()
        raise ApiError(answer.request, answer.response.status_code,
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


def status_reason(response: httpx2.Response, body: bytes) -> str:
    """`403 Forbidden: <the API's message>`, from the Status object in `body` when there is one."""
    message = ""
    try:
        doc = decode_json(body)
        if isinstance(doc, dict):
            message = str(doc.get("message") or "")
    except msgspec.DecodeError:
        message = ""
    head = f"{response.status_code} {response.reason_phrase}".strip()
    return f"{head}: {message[:300]}" if message else head


def connect(kubeconfig: Path | None = None, context: str | None = None, *, timeout: float = TIMEOUT,
            service_account: Path = SERVICE_ACCOUNT) -> ReadOnlyClient:
    """A read-only client for the cluster of `--kubeconfig`/`--context` (see `kube_config`)."""
    single = kube_config(kubeconfig, context, service_account)
    client = ReadOnlyClient(*http_client_for(single, timeout))
    client.context = single.context_name
    return client


def http_client(kubeconfig: Path | None = None, context: str | None = None, *, timeout: float = TIMEOUT,
                service_account: Path = SERVICE_ACCOUNT) -> tuple[httpx2.Client, str]:
    """An HTTP client and the server URL for the cluster of `--kubeconfig`/`--context` (see `kube_config`).
    `connect` wraps it read-only; only `remediate` writes."""
    return http_client_for(kube_config(kubeconfig, context, service_account), timeout)


def kube_config(kubeconfig: Path | None = None, context: str | None = None,
                service_account: Path = SERVICE_ACCOUNT) -> SingleConfig:
    """The cluster, user and namespace of `--kubeconfig`/`--context`, as kubectl chooses them: the given file, else
    the files of `$KUBECONFIG` (the first that has the context), else `~/.kube/config`, else the in-cluster service
    account when running in a pod. ConfigError, one line, when there is none."""
    if kubeconfig is not None:
        candidates = [kubeconfig]
    else:
        listed = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        candidates = [p for p in listed or [Path("~/.kube/config").expanduser()] if p.is_file()]
    single = None
    reasons = []
    for path in candidates:
        try:  # read as inputs are: a FIFO or a device given as the kubeconfig is refused, never waited on
            conf = yaml.safe_load(read_option_file(path, MAX_KUBECONFIG_BYTES))
            single = KubeConfig.from_dict(conf, fname=path).get(context_name=context)
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
    return single


def http_client_for(single: SingleConfig, timeout: float = TIMEOUT) -> tuple[httpx2.Client, str]:
    """An HTTP client and the server URL for a chosen configuration."""
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
    text = str(exc.args[0]) if isinstance(exc, KeyError | LightkubeConfigError) and exc.args else \
        exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
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
    deadline: timedelta = DEFAULT_DEADLINE
    """How long the whole collection may take; what is not read by then is recorded as not read."""


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
        self._stopped = threading.Event()
        self._files = threading.Lock()
        """Held by every write into the folder: once `stop` has it, nothing more is written."""
        self._unstarted = 0

    # -- the phases ---------------------------------------------------------------------------
    def run(self) -> Collected:
        """Collect everything; never raises for a request that failed (it is recorded as skipped). Whatever ends it
        otherwise (a signal's SystemExit, Ctrl-C) stops it at once, without waiting for its requests."""
        self.client.until = time.monotonic() + self.options.deadline.total_seconds()
        self.client.late = _duration(self.options.deadline)
        try:
            with gc_paused():  # pages of JSON allocate millions of objects that live until written
                return self._run()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """End the collection: no job starts and no file is written after this returns (the threads still waiting
        on the API are daemons, left to the end of the process)."""
        with self._files:
            self._stopped.set()

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
        if self._unstarted:
            self._skip("reads not started", ApiError("the deadline of the collection", None, (
                f"{self.client.late} passed with {self._unstarted} list(s) or log(s) not read yet; give more time "
                "with --timeout")), "deadline")
        self._write_meta(started, version, namespaces, clock)
        self.tally.phase = "done"
        self.progress(self.tally)
        return Collected(self.root, self.tally, self.skipped, self.absent, self.client.requests)

    def _phase(self, name: str, jobs: list[tuple[Resource, str | None]]) -> None:
        self.tally.phase = name
        self.progress(self.tally)
        self._parallel(self._list, jobs)

    def _parallel(self, work: Callable[..., None], jobs: Sequence[tuple[Any, ...]]) -> None:
        """`work(*job)` for every job, on at most `concurrency` daemon threads (a thread waiting on a request
        never holds the process), and the first error of one raised here. Jobs not started by the deadline of the
        collection are counted, not run."""
        pending: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        for job in jobs:
            pending.put(job)
        errors: list[BaseException] = []

        def worker() -> None:
            while not self._stopped.is_set():
                try:
                    job = pending.get_nowait()
                except queue.Empty:
                    return
                if time.monotonic() >= self.client.until:
                    with self._lock:
                        self._unstarted += 1
                    continue
                try:
                    work(*job)
                except _Stopped:
                    return
                except BaseException as exc:  # raised in the main thread, as a pool's map does
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=worker, name="argo-doctor-collect", daemon=True)
                   for _ in range(min(len(jobs), self.options.concurrency))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

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
        """Every page of one list into `objects/`, restarting once the continue token expires (410). A list whose
        continue token comes back within one pass, or that runs past MAX_PAGES, is ended there: its pages read so far
        stay."""
        key = (resource.need, namespace or "")
        with self._lock:
            if key in self._listed:
                return
            self._listed.add(key)
            self.tally.kinds += 1
        folder = self.root / "objects" / f"{resource.plural}.{resource.group or 'core'}"
        self._mkdir(folder)
        prefix = f"{namespace}-" if namespace else ""
        seen: set[tuple[str, str]] = set()
        page = received = 0
        path = resource.path(namespace)
        first = {"limit": str(self.options.page_size)}
        for _restart in range(GONE_RESTARTS + 1):
            tokens: set[str] = set()  # of this pass: a list started again may be given the same ones
            try:
                doc = self.client.get_json(path, first)
                while True:
                    received += 1
                    token = str(mapping(doc.get("metadata")).get("continue") or "")
                    endless = _endless(token, tokens, received)
                    tokens.add(token)
                    following = _soon(self.client.get_json, path, {**first, "continue": token}) \
                        if token and not endless else None  # asked for while this page is written
                    items = [self._item(resource, i) for i in as_list(doc.get("items")) if isinstance(i, dict)]
                    fresh = [i for i in items if _key(i) not in seen]
                    seen.update(_key(i) for i in fresh)
                    if fresh:
                        page += 1
                        self._write_page(folder / f"{prefix}{page:04d}.json", resource, fresh)
                    if endless:
                        raise ApiError(_shown(path, first), None, endless)
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
        with self._files:
            if self._stopped.is_set():
                raise _Stopped
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
        self._parallel(self._log, jobs)

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
        what = f"logs of {pod.namespace}/{pod.name} {container}{' (previous)' if previous else ''}"
        try:
            answer = self.client.get(path, params)
            _require_text(answer)
        except ApiError as exc:
            if exc.status == 400 and previous:  # no previous instance after all
                return
            if exc.status in (401, 403):  # refused for one pod, refused for the namespace: one record
                self._skip(f"logs of pods in {pod.namespace}", exc, "logs")
            else:
                self._skip(what, exc, "logs")
            return
        limit = self.options.max_log_bytes
        written = 0
        cut: ApiError | None = None
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ending = "\n"
        try:
            self._mkdir(target.parent)
            with self._open(target) as out:
                for chunk in answer.chunks():
                    kept = chunk[:limit - written]
                    written += len(kept)
                    ending = self._append(out, text.decode(kept)) or ending
                    if len(kept) < len(chunk):  # the API server ignored limitBytes
                        cut = ApiError(answer.request, None, f"sent more than the {limit:,} bytes asked for; the "
                                       "rest was not read")
                        break
                ending = self._append(out, text.decode(b"", final=True)) or ending
                if not ending.endswith("\n"):
                    self._append(out, "\n")
        except ApiError as exc:
            cut = ApiError(exc.request, None, f"{exc.reason}; {written:,} bytes read")
        except (httpx2.TransportError, httpx2.DecodingError) as exc:
            cut = ApiError(answer.request, None, f"connection dropped after {written:,} bytes: {exc}")
        finally:
            answer.close()
        if cut is not None:
            self._skip(f"{what} (cut)", cut, "logs")
        with self._lock:
            self.tally.logs += 1
            self.tally.log_bytes += written
        self.progress(self.tally)

    def _mkdir(self, folder: Path) -> None:
        with self._files:
            if self._stopped.is_set():
                raise _Stopped
            folder.mkdir(parents=True, exist_ok=True)

    def _open(self, path: Path) -> TextIO:
        with self._files:
            if self._stopped.is_set():
                raise _Stopped
            return path.open("w", encoding="utf-8", newline="")

    def _append(self, out: TextIO, text: str) -> str:
        """Write `text` (unless the collection was stopped); return it."""
        with self._files:
            if self._stopped.is_set():
                raise _Stopped
            out.write(text)
        return text

    # -- metrics and clocks ----------------------------------------------------------------------------
    def _metrics(self) -> None:
        """The kept lines of the API server's /metrics, read as they arrive: at most MAX_METRICS_BYTES, lines
        longer than MAX_METRICS_LINE dropped unread."""
        try:
            answer = self.client.get("/metrics")
            _require_text(answer)
        except ApiError as exc:
            self._skip("API server metrics", exc, "metrics")
            return
        wanted: list[str] = []
        try:
            for line in _short_lines(answer.chunks(MAX_METRICS_BYTES), MAX_METRICS_LINE):
                if line.startswith(KEPT_METRICS_BYTES):
                    wanted.append(line.decode("utf-8", "replace").rstrip("\r"))
        except ApiError as exc:
            self._skip("API server metrics (cut)", exc, "metrics")
        except (httpx2.TransportError, httpx2.DecodingError) as exc:
            self._skip("API server metrics (cut)", ApiError(answer.request, None, f"connection dropped: {exc}"),
                       "metrics")
        finally:
            answer.close()
        (self.root / "metrics").mkdir(exist_ok=True)
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
            answer = self.client.get(path)
        except ApiError as exc:
            self._skip(f"clock probe {path}", exc, "node-proxy" if "/proxy/" in path else "version")
            return None
        received = datetime.now(UTC)
        answer.close()
        date = answer.response.headers.get("date")
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
            "cluster": {"name": self.client.server, "version": str(version.get("gitVersion") or ""),
                        **({"context": self.client.context} if self.client.context else {})},
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


class _Stopped(Exception):
    """The collection was stopped (`Collector.stop`): a thread that meets it ends."""


def _soon(call: Callable[..., T], *args: Any) -> Future[T]:
    """`call(*args)` on a daemon thread of its own (a request that hangs never holds the process)."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(call(*args))
        except BaseException as exc:  # the caller's `result()` raises it
            future.set_exception(exc)

    threading.Thread(target=run, name="argo-doctor-next-page", daemon=True).start()
    return future


def _endless(token: str, tokens: set[str], received: int) -> str:
    """Why a list must end at this page although the API gave a continue token, or ""."""
    if not token:
        return ""
    if token in tokens:
        return f"gave a continue token it had already given (page {received}): the list would never end; the rest " \
               "was not read"
    if received >= MAX_PAGES:
        return f"more than {MAX_PAGES:,} pages; the rest was not read"
    return ""


def _short_lines(chunks: Iterable[bytes], longest: int) -> Iterator[bytes]:
    """The lines of a streamed text without their line ending; a line longer than `longest` bytes is dropped
    without being held."""
    parts: list[bytes] = []  # the pieces of a line not ended yet: linear whatever the size of the chunks
    held = 0
    dropping = False
    for chunk in chunks:
        *ended, rest = chunk.split(b"\n")
        for piece in ended:
            if not dropping and held + len(piece) <= longest:
                yield b"".join((*parts, piece))
            parts, held, dropping = [], 0, False
        if not dropping and rest:
            parts.append(rest)
            held += len(rest)
            if held > longest:
                parts, held, dropping = [], 0, True
    if parts:
        yield b"".join(parts)


def _duration(span: timedelta) -> str:
    """`15m`, `90s`, `1h30m`: a duration as `--timeout` takes it."""
    seconds = int(span.total_seconds())
    hours, minutes, seconds = seconds // 3600, seconds // 60 % 60, seconds % 60
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (seconds, "s")) if n) or \
        f"{span.total_seconds():g}s"


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
