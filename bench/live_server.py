#!/usr/bin/env python3
"""Serve a synthetic Argo CD installation from the fake kube-apiserver of the tests, for ``bench/live.py``.

Runs in its own process so that the fake's memory is not counted in argo-doctor's. Builds
``synthetic_installation(apps, pods)`` (tests/live/fakeapi.py, objects kept as built: ``copy_objects=False``)
plus logrus text logs with ``kubectl logs --timestamps`` prefixes for the Argo CD server, repo-server and
application-controller pods, writes a kubeconfig, prints ``ready <stats-url>`` on stdout and serves until
SIGTERM or SIGINT.

The stats URL is a second, tiny HTTP server on 127.0.0.1 (not part of the fake): ``GET /stats`` answers
a JSON summary of the requests the fake received since the last reset, classified by kind of request, with
the number of objects behind every list path so that the page count of each list can be checked;
``GET /stats?reset=1`` also forgets them.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import resource
import signal
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.live.fakeapi import FakeApiServer, Request, synthetic_installation, write_kubeconfig  # noqa: E402

LOG_END = calendar.timegm((2026, 11, 20, 15, 0, 0, 0, 0, 0))
"""The synthetic installation's clock (its objects are stamped around this time); logs end here."""
LOG_SPAN = 6 * 3600
LOGGED = {"argocd-repo-server": 1.0, "argocd-application-controller": 1.25, "argocd-server": 0.5}
"""Which Argo CD workloads' pods get a log, and its size relative to `--log-mib`."""
MIB = 2**20
HOLE = "\x00"
"""Where a line's own time goes, filled in once the lines are spread over LOG_SPAN."""


# ---------------------------------------------------------------------------------------------------------------
# logs


def _stamp(ns: int) -> str:
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def _controller_line(rng: random.Random, app: str, when: str) -> str:
    roll = rng.random()
    if roll < 0.35:
        return (f'time="{when}" level=info msg="Refreshing app status (controller refresh requested), level (1)" '
                f"application=argocd/{app}")
    if roll < 0.6:
        return f'time="{when}" level=info msg="Comparing app state (cluster: https://kubernetes.default.svc, ' \
               f'namespace: {app.split("-")[0]})" application=argocd/{app}'
    if roll < 0.8:
        return (f'time="{when}" level=info msg="getRepoObjs stats" application=argocd/{app} build_options_ms=0 '
                f"helm_ms=0 plugins_ms=0 repo_ms=0 time_ms={rng.randrange(5, 900)} unmarshal_ms=0 version_ms=0")
    if roll < 0.97:
        return (f'time="{when}" level=info msg="Reconciliation completed" application=argocd/{app} '
                f"comparison-level=1 dedup_ms=0 dest-name= dest-namespace={app.split('-')[0]} "
                f"dest-server=https://kubernetes.default.svc diff_ms={rng.randrange(0, 40)} fields.level=1 "
                f"git_ms={rng.randrange(0, 200)} health_ms=0 live_ms=0 patch_ms=0 setop_ms=0 settings_ms=0 "
                f"sync_ms=0 time_ms={rng.randrange(10, 2000)}")
    if roll < 0.995:
        return (f'time="{when}" level=info msg="Skipping auto-sync: application status is Synced" '
                f"application=argocd/{app}")
    return (f'time="{when}" level=error msg="Failed to get cached managed resources for tree reconciliation, '
            f'fall back to full reconciliation" application=argocd/{app} error="cache: key is missing"')


def _repo_line(rng: random.Random, app: str, when: str) -> str:
    roll = rng.random()
    repo = "https://github.com/acme-corp/gitops-prod.git"
    if roll < 0.4:
        return (f'time="{when}" level=info msg="manifest cache hit: &ApplicationSource{{RepoURL:{repo},'
                f"Path:apps/{app}/overlays/prod,TargetRevision:HEAD,Helm:nil,Kustomize:nil,Directory:nil,"
                f'Plugin:nil,Chart:,Ref:,}}/{rng.getrandbits(160):040x}"')
    if roll < 0.75:
        return (f'time="{when}" level=info msg="finished unary call with code OK" grpc.code=OK '
                f"grpc.method=GenerateManifest grpc.service=repository.RepoServerService "
                f'grpc.start_time="{when}" grpc.time_ms={rng.uniform(0.2, 90):.3f} span.kind=server system=grpc')
    if roll < 0.95:
        return (f'time="{when}" level=info msg=Trace args="[git fetch origin --tags --force --prune]" '
                f'dir=/tmp/_argocd-repo/{rng.getrandbits(128):032x} operation_name="exec git" '
                f"time_ms={rng.uniform(50, 3000):.3f}")
    if roll < 0.998:
        return (f'time="{when}" level=info msg="manifest cache miss: &ApplicationSource{{RepoURL:{repo},'
                f'Path:apps/{app}/overlays/prod,TargetRevision:HEAD}}/{rng.getrandbits(160):040x}"')
    return (f'time="{when}" level=error msg="finished unary call with code Unknown" error="rpc error: code = '
            f'Unknown desc = Manifest generation error (cached): kustomize build apps/{app}/overlays/prod failed '
            f'exit status 1" grpc.code=Unknown grpc.method=GenerateManifest span.kind=server system=grpc')


def _server_line(rng: random.Random, app: str, when: str) -> str:
    if rng.random() < 0.8:
        return (f'time="{when}" level=info msg="finished unary call with code OK" grpc.code=OK '
                f'grpc.method=Get grpc.service=application.ApplicationService grpc.start_time="{when}" '
                f"grpc.time_ms={rng.uniform(0.5, 40):.3f} span.kind=server system=grpc")
    return (f'time="{when}" level=info msg="received unary call /application.ApplicationService/Get" '
            f'grpc.method=Get grpc.request.content="name:\\"{app}\\" " span.kind=server system=grpc')


def make_log(workload: str, apps: list[str], size: int, seed: str) -> str:
    """About `size` bytes of logrus text log with `--timestamps` prefixes, ending at LOG_END."""
    rng = random.Random(seed)
    line_of = {"argocd-repo-server": _repo_line, "argocd-application-controller": _controller_line,
               "argocd-server": _server_line}[workload]
    lines: list[str] = []
    written = 0
    while written < size:
        app = apps[rng.randrange(len(apps))] if apps else "guestbook"
        line = line_of(rng, app, HOLE)
        lines.append(line)
        written += len(line) + 31 + 19 * line.count(HOLE)  # the prefix, and the times filled in below
    start = (LOG_END - LOG_SPAN) * 1_000_000_000
    step = LOG_SPAN * 1_000_000_000 // max(1, len(lines))
    out = []
    for k, line in enumerate(lines):
        stamp = _stamp(start + k * step + rng.randrange(step or 1))
        out.append(f"{stamp} {line.replace(HOLE, stamp[:19] + 'Z')}\n")
    return "".join(out)


def make_logs(objects: Iterable[Mapping[str, Any]], per_file: int) -> dict[tuple[str, str, str, bool], str]:
    """The logs of the Argo CD pods named in LOGGED (one container each), keyed as the fake wants them."""
    apps = [str(o["metadata"]["name"]) for o in objects if o.get("kind") == "Application"]
    logs = {}
    for obj in objects:
        if obj.get("kind") != "Pod" or obj["metadata"].get("namespace") != "argocd":
            continue
        labels = obj["metadata"].get("labels") or {}
        workload = labels.get("app.kubernetes.io/name", "")
        if workload not in LOGGED:
            continue
        name = str(obj["metadata"]["name"])
        container = str(obj["spec"]["containers"][0]["name"])
        logs[("argocd", name, container, False)] = make_log(workload, apps, int(per_file * LOGGED[workload]), name)
    return logs


# ---------------------------------------------------------------------------------------------------------------
# request statistics


def discover(api: FakeApiServer) -> dict[str, tuple[str, str, bool]]:
    """`/api/v1` or `/apis/<group>/<version>` + `/<plural>` → (apiVersion, kind, namespaced), from the fake's
    own discovery; then every list once, so that every run finds the fake in the same state (the requests this
    makes are forgotten afterwards)."""

    def get(path: str, parse: bool = True) -> Any:
        request = urllib.request.Request(api.url + path, headers={"Authorization": f"Bearer {api.token}"})
        with urllib.request.urlopen(request, timeout=300) as response:
            if parse:
                return json.load(response)
            while response.read(1 << 20):
                pass
            return None

    versions = [("/api/v1", "v1")]
    for group in get("/apis").get("groups", []):
        versions += [(f"/apis/{v['groupVersion']}", v["groupVersion"]) for v in group.get("versions", [])]
    table = {}
    for base, group_version in versions:
        for res in get(base).get("resources", []):
            if "/" not in res["name"]:
                table[f"{base}/{res['name']}"] = (group_version, res["kind"], bool(res["namespaced"]))
    kinds = {(o["apiVersion"], o["kind"]) for o in api.objects()}
    for path, (group_version, kind, _) in table.items():
        if (group_version, kind) in kinds:
            get(path, parse=False)  # the fake serializes each object on its first list: not in a measured run
    api.clear_requests()
    return table


def classify(request: Request, table: Mapping[str, tuple[str, str, bool]]) -> tuple[str, str | None]:
    """The kind of a request (version, discovery, list, page, get, log, proxy, metrics, other) and, for lists
    and pages, the list path (`<base>/<plural>` or `<base>/namespaces/<ns>/<plural>`)."""
    seg = [s for s in request.path.split("/") if s]
    if request.path == "/version":
        return "version", None
    if request.path == "/metrics":
        return "metrics", None
    if seg[:1] == ["api"]:
        base, rest = "/" + "/".join(seg[:2]), seg[2:]
        if len(seg) <= 2:
            return "discovery", None
    elif seg[:1] == ["apis"]:
        base, rest = "/" + "/".join(seg[:3]), seg[3:]
        if len(seg) <= 3:
            return "discovery", None
    else:
        return "other", None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    if f"{base}/{plural}" not in table:
        return "other", None
    if len(rest) == 1:
        path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
        return ("page" if request.query.get("continue") else "list"), path
    if len(rest) == 3 and rest[2] == "log":
        return "log", None
    if len(rest) >= 3 and rest[2] == "proxy":
        return "proxy", None
    return "get", None


def stats(api: FakeApiServer, table: Mapping[str, tuple[str, str, bool]],
          counts: Mapping[tuple[str, str, str], int]) -> dict[str, Any]:
    """What the fake received: totals by kind, every list path with its requests and objects, the log requests;
    and the server process's peak RSS and CPU seconds so far."""
    by_kind: Counter[str] = Counter()
    lists: dict[str, dict[str, Any]] = {}
    logs: Counter[str] = Counter()
    for request in api.requests:
        kind, path = classify(request, table)
        by_kind[kind] += 1
        if path is not None:
            entry = lists.setdefault(path, {"requests": 0, "limit": None, "objects": None})
            entry["requests"] += 1
            if request.query.get("limit"):
                entry["limit"] = int(request.query["limit"])
        if kind == "log":
            where = "argocd" if request.path.split("/")[4] == "argocd" else "workloads"
            tail = "tail" if request.query.get("tailLines") else "full"
            logs[f"{where} {'previous' if request.query.get('previous') == 'true' else 'current'} {tail}"] += 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    for path, entry in lists.items():
        seg = path.split("/")
        namespace = None
        if "namespaces" in seg[:-1]:
            at = seg.index("namespaces", 2)
            base, namespace = "/".join(seg[:at]), seg[at + 1]
        else:
            base = "/".join(seg[:-1])
        api_version, kind, namespaced = table[f"{base}/{seg[-1]}"]
        entry["objects"] = sum(n for (v, k, ns), n in counts.items() if v == api_version and k == kind
                               and (namespace is None or ns == namespace))
        entry["namespaced"] = namespaced
    return {"total": sum(by_kind.values()), "by_kind": dict(by_kind), "lists": lists, "logs": dict(logs),
            "errors": len(api.errors), "server_maxrss_mib": usage.ru_maxrss / 1024,
            "server_cpu_s": usage.ru_utime + usage.ru_stime}


def stats_server(api: FakeApiServer, table: Mapping[str, tuple[str, str, bool]],
                 counts: Mapping[tuple[str, str, str], int]) -> ThreadingHTTPServer:
    """The `/stats` endpoint on a free port of 127.0.0.1, serving in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            split = urlsplit(self.path)
            if split.path != "/stats":
                self.send_error(404)
                return
            body = json.dumps(stats(api, table, counts)).encode()
            if parse_qs(split.query).get("reset"):
                api.clear_requests()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    """Build, serve, print `ready <stats-url>`, wait for a signal."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--apps", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--log-mib", type=float, default=4.0,
                    help="log size of a repo-server pod in MiB (controller 1.25x, server 0.5x; default 4)")
    ap.add_argument("--kubeconfig", type=Path, required=True, help="where to write the kubeconfig")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    objects = list(synthetic_installation(args.apps, args.pods, args.namespaces))
    logs = make_logs(objects, int(args.log_mib * MIB))
    counts = Counter((str(o["apiVersion"]), str(o["kind"]), str(o["metadata"].get("namespace") or ""))
                     for o in objects)
    api = FakeApiServer(objects, logs, copy_objects=False)
    del objects
    api.start()
    table = discover(api)
    write_kubeconfig(args.kubeconfig, {"bench": api}, "bench")
    stats_http = stats_server(api, table, counts)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"live_server: {api.url}: {sum(counts.values())} objects, {len(logs)} logs "
          f"({sum(map(len, logs.values())) / MIB:.1f} MiB), built in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr, flush=True)
    print(f"ready http://127.0.0.1:{stats_http.server_address[1]}/stats", flush=True)
    stop.wait()
    stats_http.shutdown()
    api.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
