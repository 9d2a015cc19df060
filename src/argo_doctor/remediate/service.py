"""`argo-doctor serve`: the webhook receiver that Argo CD Notifications calls when an Application turns Degraded.

A Starlette app under uvicorn. `POST /v1/notifications/argocd` authenticates (a bearer token compared in constant
time, or an HMAC-SHA256 signature of the body), reads at most 1 MiB, and hands the notification to the
`Restarter`, which decides and acts within the request. The answer is 200 with every decision, 401, 400, 413, or
503 when the API or the audit store could not be reached and a retry may help: Notifications retries on 5xx, and
a retry of a decided case decides nothing new. `/healthz`, `/readyz` (API reachable, audit store writable) and
`/metrics`; one JSON log line per request on stderr; SIGTERM stops accepting, finishes what is in flight, exits 0.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from argo_doctor.errors import ArgoDoctorError
from argo_doctor.listen import QuietServer, bind, parse_listen
from argo_doctor.remediate.kube import KubeError
from argo_doctor.remediate.restarter import Notification, Restarter, Unavailable
from argo_doctor.remediate.store import AuditStore
from argo_doctor.sources.redact import clean
from argo_doctor.timeutil import format_time

MAX_BODY = 1024 * 1024
OUTCOMES = ("decided", "unauthorized", "bad_request", "too_large", "unavailable")
ACTIONS = ("restarted", "dry-run", "skipped", "failed")
PATH = "/v1/notifications/argocd"
SIGNATURE_HEADER = "x-argo-doctor-signature"
DEFAULT_APP_NAMESPACE = "argocd"
NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
NO_VALUE = "<no value>"
"""What Go's text/template renders for a missing field, as Notifications' templates do: taken as absent."""
FIELDS = ("app", "appNamespace", "project", "namespace", "health", "revision")
log = logging.getLogger("argo_doctor.serve")


class _Rejected(Exception):
    def __init__(self, status: int, outcome: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.outcome = outcome


@dataclass(frozen=True)
class Auth:
    """How callers prove who they are; both None only with --insecure-no-auth."""

    token: bytes | None = None
    hmac_secret: bytes | None = None

    @property
    def open(self) -> bool:
        """No authentication at all."""
        return self.token is None and self.hmac_secret is None

    def bearer(self, header: str | None) -> bool:
        """`Authorization: Bearer <token>`, compared in constant time."""
        if self.token is None or not header or header[:7].lower() != "bearer ":
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self.token)

    def signature(self, header: str | None, body: bytes) -> bool:
        """`X-Argo-Doctor-Signature: sha256=<hex HMAC-SHA256 of the body>`."""
        if self.hmac_secret is None or not header or not header.startswith("sha256="):
            return False
        expected = hmac.new(self.hmac_secret, body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(header[7:].strip().lower().encode(), expected.encode())


class Metrics:
    """The service's Prometheus metrics, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.notifications = Counter("argo_doctor_notifications", "Notifications received, by outcome.",
                                     ["outcome"], registry=self.registry)
        self.decisions = Counter("argo_doctor_decisions", "Rollout decisions, by action.", ["action"],
                                 registry=self.registry)
        self.restarts = Counter("argo_doctor_restarts", "Rollouts restarted.", registry=self.registry)
        self.latency = Histogram("argo_doctor_decision_seconds", "Time from a notification to its answer.",
                                 registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
        for outcome in OUTCOMES:  # every series exists from the start, so rate() and alerts see zeros
            self.notifications.labels(outcome)
        for action in ACTIONS:
            self.decisions.labels(action)


def create_app(restarter: Restarter, store: AuditStore, auth: Auth, *,
               api_ready: Callable[[], None] | None = None, metrics: Metrics | None = None) -> Starlette:
    """The webhook receiver. `api_ready` raises when the API cannot be reached (the readiness probe)."""
    metrics = metrics or Metrics()

    async def notify(request: Request) -> Response:
        started = time.perf_counter()
        client = request.client.host if request.client else None
        note: Notification | None = None
        try:
            note = await _notification(request, auth)
            result = await run_in_threadpool(restarter.notify, note)
        except _Rejected as exc:
            return _answer(metrics, started, exc.outcome, exc.status, {"error": str(exc)}, note, client)
        except Unavailable as exc:
            return _answer(metrics, started, "unavailable", 503, {"error": f"retry later: {exc}"}, note, client)
        for outcome in result.outcomes:
            metrics.decisions.labels(outcome.action).inc()
            if outcome.action == "restarted":
                metrics.restarts.inc()
        body: dict[str, Any] = {"decisions": [o.as_json() for o in result.outcomes]}
        if result.reason:
            body["reason"] = result.reason
        return _answer(metrics, started, "decided", 200, body, note, client)

    def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def readyz(request: Request) -> Response:
        try:
            await run_in_threadpool(_ready, store, api_ready)
        except (ArgoDoctorError, KubeError) as exc:
            log.warning("not ready", extra={"fields": {"reason": str(exc)}})
            return PlainTextResponse(f"not ready: {exc}\n", status_code=503)
        return PlainTextResponse("ok\n")

    def metrics_page(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[
        Route(PATH, notify, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
    ])


def _ready(store: AuditStore, api_ready: Callable[[], None] | None) -> None:
    store.check_writable()
    if api_ready is not None:
        api_ready()


async def _notification(request: Request, auth: Auth) -> Notification:
    """Authenticate, read at most MAX_BODY bytes, parse; _Rejected with the status to answer otherwise."""
    by_token = auth.bearer(request.headers.get("authorization"))
    signature = request.headers.get(SIGNATURE_HEADER)
    if not (auth.open or by_token or (auth.hmac_secret is not None and signature)):
        raise _Rejected(401, "unauthorized", "missing or invalid credentials")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY:
        raise _Rejected(413, "too_large", f"the body is over {MAX_BODY} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise _Rejected(413, "too_large", f"the body is over {MAX_BODY} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not (auth.open or by_token or auth.signature(signature, body)):
        raise _Rejected(401, "unauthorized", "missing or invalid credentials")
    return parse_notification(body)


def parse_notification(body: bytes) -> Notification:
    """The notification in a JSON body; unknown fields are ignored, a wrong type is a 400."""
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise _Rejected(400, "bad_request", f"the body is not JSON: {exc}") from None
    except RecursionError:  # a notification is a flat object; msgspec refuses deep nesting so
        raise _Rejected(400, "bad_request", "the body is JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise _Rejected(400, "bad_request", "the body must be a JSON object")
    values: dict[str, str | None] = {}
    for key in FIELDS:
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise _Rejected(400, "bad_request", f"{key} must be a string")
        text = value.strip() if isinstance(value, str) else ""
        values[key] = text if text and text != NO_VALUE else None
    app = values["app"]
    if app is None:
        raise _Rejected(400, "bad_request", "app (the Application's name) is required")
    for key in ("app", "appNamespace", "namespace"):
        value = values[key]
        if value is not None and not NAME.fullmatch(value):
            raise _Rejected(400, "bad_request", f"{key} is not a Kubernetes name (lower-case DNS subdomain, at most "
                                                "253 characters)")
    return Notification(app=app, app_namespace=values["appNamespace"] or DEFAULT_APP_NAMESPACE,
                        project=values["project"], namespace=values["namespace"], health=values["health"],
                        revision=values["revision"], raw={k: v for k, v in values.items() if v is not None})


def _answer(metrics: Metrics, started: float, outcome: str, status: int, body: dict[str, Any],
            note: Notification | None, client: str | None) -> Response:
    """The HTTP answer and its log line, redacted as every output is (an error may quote what the API answered)."""
    elapsed = time.perf_counter() - started
    body = clean(body)
    metrics.notifications.labels(outcome).inc()
    if outcome in ("decided", "unavailable"):
        metrics.latency.observe(elapsed)
    log.info("notification", extra={"fields": {
        "status": status, "outcome": outcome, "client": client,
        "app": f"{note.app_namespace}/{note.app}" if note else None,
        "decisions": body.get("decisions"), "reason": body.get("reason") or body.get("error"),
        "latency_ms": round(elapsed * 1000, 2)}})
    return JSONResponse(body, status_code=status)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, message and the record's `fields`."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": format_time(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname.lower(), "msg": record.getMessage(),
        }
        doc.update(getattr(record, "fields", {}))
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(clean(json.loads(json.dumps(doc, default=str))))


@contextmanager
def json_logging() -> Iterator[None]:
    """Route the service's and uvicorn's logs to stderr as JSON lines for the life of the block."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    loggers = [log, logging.getLogger("uvicorn"), logging.getLogger("uvicorn.error")]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
        lg.propagate = False
    try:
        yield
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate


def run(app: Starlette, listen: str, *, graceful_seconds: float = 25.0, insecure: bool = False) -> None:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight (at most `graceful_seconds`)."""
    host, port = parse_listen(listen, "--listen", "0.0.0.0")
    sock = bind(host, port, "--listen")
    config = uvicorn.Config(app, log_config=None, access_log=False,
                            timeout_graceful_shutdown=int(graceful_seconds), lifespan="off")
    with json_logging(), sock:
        log.info("listening", extra={"fields": {"listen": f"{host}:{port}", "path": PATH}})
        if insecure:
            log.warning("authentication is off (--insecure-no-auth): anyone who reaches this port can trigger "
                        "restarts", extra={"fields": {}})
        QuietServer(config).run(sockets=[sock])
        log.info("stopped", extra={"fields": {}})
