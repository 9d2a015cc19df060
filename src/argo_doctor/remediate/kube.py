"""The remediation's Kubernetes client: the few reads it decides from and the two writes it may send.

It is the only writing client of argo-doctor, used by `fix --apply` and `serve` and nothing else. It shares the
kubeconfig handling of the live source (`sources.live.kube_config`) and keeps its own short timeouts, because a
webhook must be answered within the request. Reads are retried once on a dropped connection; writes are not
retried here: a restart patch carries the Rollout's resourceVersion, so the caller re-decides on a fresh read.
As in the live source, an answer is streamed within a deadline, its size capped (decompressed) and its JSON
depth bounded, so that a broken or hostile API server can neither hold a request nor exhaust the process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import msgspec

from argo_doctor.sources.files import JsonTooDeep, decode_json
from argo_doctor.sources.live import MAX_BODY_BYTES, Answer, ApiError, http_client_for, kube_config

TIMEOUT = 5.0
"""Seconds one read may wait."""
DEADLINE = 15.0
"""Seconds one request may take, every read of its answer included."""
ROLLOUTS = "/apis/argoproj.io/v1alpha1"
MERGE_PATCH = "application/merge-patch+json"


class KubeError(ApiError):
    """A request that failed; `retryable` when trying again later could help (no answer, 429, 5xx)."""

    @property
    def retryable(self) -> bool:
        """Whether the API was unreachable or overloaded, rather than refusing."""
        return self.status is None or self.status == 429 or self.status >= 500


class KubeClient:
    """GET, merge-PATCH and POST against one API server, JSON in and out."""

    def __init__(self, http: httpx2.Client, server: str, namespace: str = "default") -> None:
        self._http = http
        self.server = server
        self.namespace = namespace
        """The namespace of the kubeconfig context (or of the pod's service account): kubectl's default one."""

    @classmethod
    def connect(cls, kubeconfig: Path | None = None, context: str | None = None,
                timeout: float = TIMEOUT) -> KubeClient:
        """A client for the cluster of `--kubeconfig`/`--context`, chosen as kubectl chooses it."""
        single = kube_config(kubeconfig, context)
        return cls(*http_client_for(single, timeout), namespace=single.namespace)

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """One object or list; a dropped connection is retried once."""
        for attempt in (1, 2):
            try:
                return self._send("GET", path, params=params)
            except KubeError as exc:
                if exc.status is not None or attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386); sent once."""
        return self._send("PATCH", path, body=body, content_type=MERGE_PATCH)

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A POST creating one object; sent once."""
        return self._send("POST", path, body=body, content_type="application/json")

    def _send(self, method: str, path: str, *, params: dict[str, str] | None = None,
              body: dict[str, Any] | None = None, content_type: str | None = None) -> dict[str, Any]:
        shown = f"{method} {path}"
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        content = msgspec.json.encode(body) if body is not None else None
        deadline = time.monotonic() + DEADLINE
        try:
            request = self._http.build_request(method, path, params=params, content=content, headers=headers)
            answer = Answer(self._http.send(request, stream=True), shown, deadline,
                            f"not answered within {DEADLINE:.0f} s")
            if answer.response.status_code >= 400:
                raise KubeError(shown, answer.response.status_code, answer.error_reason())
            data = answer.body(MAX_BODY_BYTES)
        except httpx2.TimeoutException:
            raise KubeError(shown, None, f"no answer within {TIMEOUT:.0f} s") from None
        except (httpx2.TransportError, httpx2.DecodingError) as exc:
            raise KubeError(shown, None, f"connection failed: {exc or type(exc).__name__}") from None
        except KubeError:
            raise
        except ApiError as exc:  # too large, or too slow
            raise KubeError(exc.request, exc.status, exc.reason) from None
        status = answer.response.status_code
        try:
            doc = decode_json(data)
        except JsonTooDeep as exc:
            raise KubeError(shown, status, f"answered {exc}") from None
        except msgspec.DecodeError:
            raise KubeError(shown, status, "answered something that is not JSON") from None
        if not isinstance(doc, dict):
            raise KubeError(shown, status, "answered JSON that is not an object")
        return doc

    def close(self) -> None:
        """Close the connections."""
        self._http.close()


def rollout_path(namespace: str | None, name: str | None = None) -> str:
    """The API path of a Rollout, or of the Rollouts of a namespace (None: of every namespace)."""
    if namespace is None:
        return f"{ROLLOUTS}/rollouts"
    base = f"{ROLLOUTS}/namespaces/{quote(namespace, safe='')}/rollouts"
    return f"{base}/{quote(name, safe='')}" if name else base


def application_path(namespace: str, name: str) -> str:
    """The API path of an Argo CD Application."""
    return f"{ROLLOUTS}/namespaces/{quote(namespace, safe='')}/applications/{quote(name, safe='')}"


def related_paths(namespace: str) -> dict[str, str]:
    """The lists a Rollout's verdict reads: its ReplicaSets, Pods and AnalysisRuns."""
    ns = quote(namespace, safe="")
    return {
        "replicasets": f"/apis/apps/v1/namespaces/{ns}/replicasets",
        "pods": f"/api/v1/namespaces/{ns}/pods",
        "analysisruns": f"{ROLLOUTS}/namespaces/{ns}/analysisruns",
    }


def events_path(namespace: str) -> str:
    """Where core/v1 Events of a namespace are created."""
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/events"
